"""convert, restamp and restamp_run, then decode: what they write decodes again (or they refuse
with a typed error and, for restamp, leave the buffer untouched); restamp_run (the same-offsets
writer's) re-stamps whole batches only, each with a good CRC and the records it had, and leaves
the bytes from the batch it refuses on untouched."""
import atheris
import crc32c

from _harness import EXPECTED, run

import kafkarec
from kafkarec._core import restamp_run

#: the writer's producer-id base (kafkarec.log.writer.PRODUCER_ID_BASE)
BASE = 1 << 62


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
    check_restamp_run(_crcs_made_good(body) if magic == 2 else body, offset & 0x7FFFFFFF)
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


def _crcs_made_good(body: bytes) -> bytes:
    """``body`` with each framed v2 batch's CRC set to its bytes' (so that a mutated batch is
    re-stamped, not refused at its CRC)."""
    out = bytearray(body)
    pos = 0
    while pos + 61 <= len(out):
        size = int.from_bytes(out[pos + 8:pos + 12], "big", signed=True) + 12
        if size < 61 or size > len(out) - pos or out[pos + 16] != 2:
            break
        out[pos + 17:pos + 21] = crc32c.crc32c(bytes(out[pos + 21:pos + size])).to_bytes(4, "big")
        pos += size
    return bytes(out)


def _records(data: bytes):
    return [[(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b]
            for b in kafkarec.iter_batches(data, verify_crc=True)]


def check_restamp_run(body: bytes, epoch: int) -> None:
    buf = bytearray(body)
    n, _, _, headers, _, error = restamp_run(buf, len(buf), epoch, BASE)
    done = error[0] if error is not None else len(buf)
    if len(headers) != 61 * n:
        raise AssertionError(f"{n} batches, {len(headers)} header bytes")
    if bytes(buf[done:]) != body[done:]:
        raise AssertionError("restamp_run wrote past the batch it refused")
    if done == 0:
        return
    # what it re-stamped: whole v2 batches with good CRCs (it checked them first), the same records
    written = bytes(buf[:done])
    try:
        before = _records(body[:done])
    except EXPECTED as e:   # a good CRC over records that do not parse: refused alike after
        try:
            _records(written)
        except EXPECTED as f:
            if type(f) is not type(e):
                raise AssertionError(f"restamp_run changed the error: {e!r} -> {f!r}")
            return
        raise AssertionError(f"restamp_run made records of a batch that did not parse: {e!r}")
    after = _records(written)
    if before != after:
        raise AssertionError("restamp_run changed a batch's records")
    for b in kafkarec.iter_batches(written, verify_crc=True):
        if b.partition_leader_epoch != epoch:
            raise AssertionError("restamp_run left a batch's leader epoch")
        if 0 <= b.producer_id < BASE:
            raise AssertionError("restamp_run left a producer id below its base")


if __name__ == "__main__":
    run(test_one_input)
