"""One API: to_arrow / iter_arrow take options= like every reader, start/end with absolute positions as
iter_batches does, and decode= wherever to_arrow is."""
import struct

import pytest

pa = pytest.importorskip("pyarrow")

import kafkarec
from kafkarec import ReadOptions


def _log():
    parts, offset = [], 0
    for n in (2, 3, 1):
        b = kafkarec.RecordBatchBuilder(base_offset=offset)
        for i in range(n):
            b.append(b"v%d" % (offset + i), key=b"k", timestamp=1700000000000 + offset + i)
        parts.append(b.build())
        offset += n
    return b"".join(parts), [len(p) for p in parts]


def test_to_arrow_takes_options_positionally_and_by_name():
    data, sizes = _log()
    bad = bytearray(data)
    bad[len(data) - sizes[2] + 17] ^= 0xFF      # the last batch's CRC field no longer matches
    with pytest.raises(kafkarec.ChecksumError):
        kafkarec.to_arrow(bytes(bad))
    for t in (kafkarec.to_arrow(bytes(bad), ReadOptions(verify_crc=False)),
              kafkarec.to_arrow(bytes(bad), options=ReadOptions(verify_crc=False)),
              kafkarec.to_arrow(bytes(bad), verify_crc=False)):
        assert t.column("offset").to_pylist() == list(range(6))
    assert kafkarec.iter_arrow(bytes(bad), options=ReadOptions(verify_crc=False)) is not None


def test_start_and_end_are_absolute_positions():
    data, sizes = _log()
    first, second = sizes[0], sizes[0] + sizes[1]
    t = kafkarec.to_arrow(data, start=first, end=second, batch_columns=True)
    assert t.column("offset").to_pylist() == [2, 3, 4]
    assert set(t.column("batchPosition").to_pylist()) == {first}      # absolute, not rebased
    chunks = kafkarec.iter_arrow(data, start=second)
    assert [r for rb in chunks for r in rb.column("offset").to_pylist()] == [5]
    assert chunks.position == len(data) and chunks.stop_reason == "end"
    # an error names its absolute position too
    bad = bytearray(data)
    bad[first + 17] ^= 0xFF                     # the second batch's CRC field
    with pytest.raises(kafkarec.ChecksumError) as ei:
        kafkarec.to_arrow(bytes(bad), start=first)
    assert ei.value.position == first
    with pytest.raises(ValueError):
        kafkarec.to_arrow(data, start=len(data) + 1)


def test_read_committed_within_a_region():
    data, sizes = _log()
    t = kafkarec.to_arrow(data, start=sizes[0], read_committed=True)
    assert t.column("offset").to_pylist() == [2, 3, 4, 5]


def test_decode_wherever_to_arrow_is():
    from kafkarec import internal
    key, value = internal.encode_record("__consumer_offsets", "OffsetCommit",
                                        {"group": "g", "topic": "t", "partition": 3},
                                        {"offset": 42, "leaderEpoch": 1, "metadata": "", "commitTimestamp": 5}, 3)
    data = kafkarec.build_batch([value, value], [key, key], [1, 2])
    t = kafkarec.to_arrow(data, ReadOptions(strict=True), decode="consumer_offsets")
    assert t.column("committedOffset").to_pylist() == [42, 42]
    chunks = kafkarec.iter_arrow(data, options=ReadOptions(), decode="consumer_offsets", max_rows=1)
    rows = [r for rb in chunks for r in rb.to_pylist()]
    assert [(r["group"], r["committedTopic"], r["committedPartition"]) for r in rows] == [("g", "t", 3)] * 2
    assert chunks.stop_reason == "end" and chunks.position == len(data)
    assert kafkarec.to_arrow(data, start=len(data), decode="consumer_offsets").num_rows == 0


def test_error_records_tell_framing_errors_from_batch_errors():
    # a legacy batch has no base offset of its own, yet its error is a batch's, not framing's
    b = kafkarec.LegacyBatchBuilder(magic=1)
    b.append(b"v", timestamp=1)
    legacy = bytearray(b.build())
    legacy[-1] ^= 0xFF                      # the message CRC fails
    sink = []
    list(kafkarec.iter_arrow(bytes(legacy) + struct.pack(">qi", 0, 1), errors="skip", error_sink=sink))
    assert [(e["error"], e["base_offset"], e["batch_position"]) for e in sink] == [
        ("ChecksumError", None, 0), ("CorruptBatchError", None, None)]
