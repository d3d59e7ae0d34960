"""The keyed state (kafkarec.table.latest_batches over the core's KeyOffsetMap) and Debezium's
envelope reader (kafkarec.cdc) on arbitrary input.

From the input: a partition's rows (keys from a small alphabet or null, values or tombstones,
increasing offsets with gaps), cut into batches anywhere, and a key map from its smallest
size up (so keys split into buckets, more passes).  The state must equal a dict replaying the
rows in order, each live key once; a wrong row, a lost or repeated one is a finding.  Then the
rest of the input as a change event's value: an envelope or a reason, never an exception.
"""
import atheris

from _harness import run

import pyarrow as pa

from kafkarec import cdc, table
from kafkarec._core import KEY_MAP_MIN_BYTES

SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("offset", pa.int64())])


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    n = fdp.ConsumeIntInRange(0, 300)
    alphabet = fdp.ConsumeIntInRange(1, 120)
    keys, values, offsets = [], [], []
    offset = fdp.ConsumeIntInRange(0, 1 << 40)
    for _ in range(n):
        k = fdp.ConsumeIntInRange(-1, alphabet)
        keys.append(None if k < 0 else b"k%d" % k)
        values.append(None if fdp.ConsumeIntInRange(0, 4) == 0 else fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 6)))
        offsets.append(offset)
        offset += fdp.ConsumeIntInRange(1, 3)
    cuts = sorted({fdp.ConsumeIntInRange(0, n) for _ in range(fdp.ConsumeIntInRange(0, 5))} | {0, n})
    buffer_bytes = KEY_MAP_MIN_BYTES * fdp.ConsumeIntInRange(1, 4)
    rb = pa.record_batch([pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                          pa.array(offsets, pa.int64())], schema=SCHEMA)
    batches = [rb.slice(a, b - a) for a, b in zip(cuts, cuts[1:])]

    want = {}
    for k, v, o in zip(keys, values, offsets):
        if k is None:
            continue
        if v is None:
            want.pop(k, None)
        else:
            want[k] = (o, v)
    stats = table.LatestStats()
    got = {}
    for out in table.latest_batches(lambda: iter(batches), buffer_bytes=buffer_bytes, stats=stats):
        for r in out.to_pylist():
            assert r["key"] not in got, ("a key twice", r)
            got[r["key"]] = (r["offset"], r["value"])
    assert got == want, (got, want)
    assert stats.records == n and stats.null_keys == keys.count(None)

    doc, reason = cdc.envelope(fdp.ConsumeBytes(fdp.remaining_bytes()))
    assert (doc is None) != (reason is None)
    if doc is not None:
        assert doc["op"] in cdc.OPS


if __name__ == "__main__":
    run(test_one_input)
