"""convert and restamp, then decode: what they write decodes again (or they refuse
with a typed error and, for restamp, leave the buffer untouched)."""
import atheris

from _harness import EXPECTED, run

import kafkarec


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    magic = fdp.ConsumeIntInRange(0, 2)
    offset = fdp.ConsumeIntInRange(-2**63, 2**63 - 1) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(0, 10**6)
    body = fdp.ConsumeBytes(fdp.remaining_bytes())
    try:
        result = kafkarec.convert(body, magic)
    except EXPECTED:
        pass
    else:
        for b in kafkarec.iter_batches(result.data):
            list(b)
    buf = bytearray(body)
    try:
        kafkarec.restamp(buf, 0, base_offset=offset)
    except (EXPECTED + (OverflowError,)) as e:
        if isinstance(e, OverflowError) and -2**63 <= offset < 2**63:
            raise
        if bytes(buf) != body:
            raise AssertionError("a refused restamp wrote to the buffer")
        return
    try:
        before = [[r.offset for r in b] for b in kafkarec.iter_batches(body, verify_crc=False)][:1]
    except EXPECTED:
        return
    after = [[r.offset for r in b] for b in kafkarec.iter_batches(bytes(buf), verify_crc=False)][:1]
    if before and not after:
        raise AssertionError("restamp left no batch where there was one")


if __name__ == "__main__":
    run(test_one_input)
