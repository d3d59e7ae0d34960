"""The meta-only walker (``iter_arrow(columns=["offset", "timestamp"])``, issue 52) against the full
read of the same bytes.  The input is a records section as the fuzzer mutates it, behind four bytes
choosing the batch around it (declared record count, last offset delta, codec, timestamp type,
strict or lenient); the batch gets a valid CRC, so the records themselves are what is judged, and a
good batch before and after it checks that the walk resumes and stops where the full read does.
Offsets, timestamps, the error raised (class, position, reason) and, with ``errors="skip"``, the
error sink and where framing stopped must be equal.  And the read in microseconds
(``timestamp_unit="us"``, the core writing the unit, issue 80) must give each chunk of the read in
milliseconds as pyarrow's safe cast makes it, or, where that cast refuses the chunk, the chunk in
milliseconds as it is (for the same cast to refuse)."""
import gzip
import struct

from _harness import EXPECTED, run

import crc32c
import kafkarec

META = ["offset", "timestamp"]
HEADER = struct.Struct(">qiibIhiqqqhii")     # a v2 batch header, Kafka's field order
HEADER_SIZE = HEADER.size                     # 61


def batch(section: bytes, *, count: int, last_delta: int, codec: int, log_append: bool,
          base_offset: int) -> bytes:
    payload = gzip.compress(section, mtime=0) if codec else section
    attributes = codec | (0x08 if log_append else 0)
    header = HEADER.pack(base_offset, HEADER_SIZE - 12 + len(payload), -1, 2, 0, attributes, last_delta,
                         1_700_000_000_000, 1_700_000_000_999, -1, -1, -1, count)
    raw = bytearray(header + payload)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    return bytes(raw)


GOOD = bytes([0x10, 0x00, 0x02, 0x00, 0x02, ord("k"), 0x02, ord("v"), 0x00])    # one 8-byte record


def log_of(data: bytes):
    """The batches the input describes, and whether it asks for a strict read."""
    if len(data) < 4:
        return None, False
    count, last_delta, flags = struct.unpack_from(">bbH", data)
    section = data[4:]
    middle = batch(section, count=count, last_delta=last_delta, codec=flags & 1,
                   log_append=bool(flags & 2), base_offset=1000 + (flags >> 8))
    before = batch(GOOD, count=1, last_delta=0, codec=0, log_append=False, base_offset=10)
    after = batch(GOOD, count=1, last_delta=0, codec=0, log_append=False, base_offset=100_000)
    return before + middle + after + (b"\x00" * (flags >> 12 & 3)), bool(flags & 4)


def raised(data: bytes, columns, strict: bool):
    try:
        offsets, timestamps = [], []
        for rb in kafkarec.iter_arrow(data, columns=columns, strict=strict, max_decompressed_bytes=1 << 20):
            offsets += rb.column("offset").to_pylist()
            timestamps += rb.column("timestamp").cast("int64").to_pylist()
        return ("rows", offsets, timestamps)
    except EXPECTED as e:
        return ("error", type(e).__name__, getattr(e, "position", None), getattr(e, "reason", None),
                getattr(e, "decompressed_position", None))


def skipped(data: bytes, columns, strict: bool):
    sink, offsets, timestamps = [], [], []
    it = kafkarec.iter_arrow(data, columns=columns, strict=strict, errors="skip", error_sink=sink,
                             max_rows=5, max_decompressed_bytes=1 << 20)
    for rb in it:
        offsets += rb.column("offset").to_pylist()
        timestamps += rb.column("timestamp").cast("int64").to_pylist()
    return offsets, timestamps, sink, it.position, it.stop_reason, it.trailing_bytes


def chunks(data: bytes, columns, strict: bool, unit: str):
    sink: list = []
    out = list(kafkarec.iter_arrow(data, columns=columns, strict=strict, errors="skip", error_sink=sink,
                                   max_rows=5, max_decompressed_bytes=1 << 20, timestamp_unit=unit))
    return out, sink


def as_the_cast(data: bytes, columns, strict: bool) -> None:
    import pyarrow as pa
    (old, old_sink), (new, new_sink) = chunks(data, columns, strict, "ms"), chunks(data, columns, strict, "us")
    if new_sink != old_sink or len(new) != len(old):
        raise AssertionError(f"in us: {new_sink!r:.300} / {len(new)} chunks, in ms {old_sink!r:.300} / {len(old)}")
    for a, b in zip(old, new):
        i = a.schema.get_field_index("timestamp")
        try:
            want = a.set_column(i, pa.field("timestamp", pa.timestamp("us")), a.column(i).cast(pa.timestamp("us")))
        except pa.ArrowInvalid:
            want = a
        if not b.equals(want):
            raise AssertionError(f"in us: {b.column(i)!r:.300} != the ms read cast {want.column(i)!r:.300}")


def test_one_input(data: bytes) -> None:
    log, strict = log_of(data)
    if log is None:
        return
    full, meta = raised(log, None, strict), raised(log, META, strict)
    if full != meta:
        raise AssertionError(f"walker {meta!r:.400} != the full read {full!r:.400}")
    full, meta = skipped(log, None, strict), skipped(log, META, strict)
    if full != meta:
        raise AssertionError(f"walker (skip) {meta!r:.400} != the full read {full!r:.400}")
    as_the_cast(log, META, strict)
    as_the_cast(log, None, strict)


if __name__ == "__main__":
    run(test_one_input)
