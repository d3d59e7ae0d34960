"""Builder round trips for every codec and magic: records in, the same records out."""
import atheris

from _harness import run

import kafkarec
from kafkarec import Compression


# a record's timestamp: an ordinary one, or one at the ends of the long range (-1 then Long.MAX in one
# batch makes a delta past the long range, which Java's long arithmetic wraps: the instrumented build's
# UBSan reports any signed overflow on the way)
EDGE_TIMESTAMPS = (-1, 0, 2**63 - 1)


def draw(fdp):
    """(magic, codec, base offset, records) drawn from the input."""
    magic = fdp.ConsumeIntInRange(0, 2)
    codecs = list(Compression) if magic == 2 else [c for c in Compression if c is not Compression.ZSTD]
    codec = codecs[fdp.ConsumeIntInRange(0, len(codecs) - 1)]
    base = fdp.ConsumeIntInRange(0, 2**40)
    n = fdp.ConsumeIntInRange(1, 20)
    records = []
    for i in range(n):
        key = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40)) if fdp.ConsumeBool() else None
        value = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 300)) if fdp.ConsumeBool() else None
        headers = [(fdp.ConsumeUnicodeNoSurrogates(8), fdp.ConsumeBytes(8) if fdp.ConsumeBool() else None)
                   for _ in range(fdp.ConsumeIntInRange(0, 3))] if magic == 2 else []
        pick = fdp.ConsumeIntInRange(0, len(EDGE_TIMESTAMPS)) if magic else len(EDGE_TIMESTAMPS)
        records.append((key, value, headers,
                        EDGE_TIMESTAMPS[pick] if pick < len(EDGE_TIMESTAMPS) else 1_700_000_000_000 + i))
    return magic, codec, base, records


def test_one_input(data: bytes) -> None:
    magic, codec, base, records = draw(atheris.FuzzedDataProvider(data))
    if magic == 2:
        b = kafkarec.RecordBatchBuilder(compression=codec, base_offset=base)
    else:
        b = kafkarec.LegacyBatchBuilder(magic=magic, compression=codec, base_offset=base)
    for key, value, headers, ts in records:
        b.append(value, key, timestamp=None if magic == 0 else ts, headers=headers)
    data = b.build()
    got = [(r.key, r.value, r.headers if magic == 2 else [], r.timestamp if magic else ts, r.offset)
           for batch in kafkarec.iter_batches(data, strict=magic == 2) for r in batch]
    want = [(k, v, h, t if magic else records[i][3], base + i) for i, (k, v, h, t) in enumerate(records)]
    if [g[:3] + g[4:] for g in got] != [w[:3] + w[4:] for w in want]:
        raise AssertionError(f"round trip differs: {got[:2]!r:.300} != {want[:2]!r:.300}")
    if magic >= 1 and [g[3] for g in got] != [w[3] for w in want]:
        raise AssertionError("timestamps differ after a round trip")


if __name__ == "__main__":
    run(test_one_input)
