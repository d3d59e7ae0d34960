"""Indexes are evidence, not truth (issue 49, finding 4): a ``.timeindex`` that understates is not
allowed to hide records from a lower timestamp bound (it is checked at the cost of one batch and
one index interval, and a segment whose index is not believed is scanned, with an
:class:`~kafkarec.errors.IndexWarning`); offsets that go back give one answer whatever the
bounds, or an :class:`~kafkarec.errors.OffsetOrderError`."""
import os
import struct
import warnings

import pytest

from kafkarec.errors import IndexWarning, MalformedBatchError, OffsetOrderError
from kafkarec.scan import Bounds, LogScan

from support.logs.logdir import PartitionWriter, v2_batch, write_time_index

TIMEINDEX0 = "00000000000000000000.timeindex"


def _one(ts, value=b"v"):
    return v2_batch([(ts, b"k", value, [])])


def _issue_log(root):
    """Segment 0 (closed): offsets 0..3 at CreateTime 100, 150, 200, 300; segment 4: 4, 5 at
    120, 130; every batch indexed (interval 0), as a broker indexes large batches."""
    w = PartitionWriter(str(root), "t", 0, index_interval_bytes=0)
    for ts in (100, 150, 200, 300):
        w.append(_one(ts))
    w.roll()
    for ts in (120, 130):
        w.append(_one(ts))
    w.close()
    return os.path.join(str(root), "t-0")


def _offsets(scan):
    return scan.to_table().column("offset").to_pylist()


def _unbounded_filtered(root, lo):
    t = LogScan(str(root), columns=["offset", "timestamp"]).to_table()
    return [o for o, ts in zip(t.column("offset").to_pylist(), t.column("timestamp").to_pylist())
            if ts.timestamp() * 1000 >= lo]


def _bounded(root, lo):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _offsets(LogScan(str(root), columns=["offset"], bounds=Bounds.of(timestamps=(lo, None))))
    return got, [w for w in caught if issubclass(w.category, IndexWarning)]


def test_a_truthful_time_index_skips_its_segment_without_warning(tmp_path):
    _issue_log(tmp_path)
    got, warned = _bounded(tmp_path, 250)
    assert got == _unbounded_filtered(tmp_path, 250) == [3]
    assert warned == []


@pytest.mark.parametrize("entries, slots, lo, why", [
    # the issue's example: cut short by an unfinished write
    ([(150, 1), (200, 2)], 0, 250, "max timestamp 300"),
    # preallocated and never trimmed: all zeros (an active segment's index copied around a roll)
    ([], 8, 250, "names the batch at byte 0"),
    # cut short, its zero tail kept
    ([(150, 1), (200, 2)], 4, 250, "max timestamp 300"),
    # an entry naming a batch whose own max timestamp is larger
    ([(150, 1), (250, 3)], 0, 260, "max timestamp 300"),
])
def test_a_time_index_that_understates_hides_no_record(tmp_path, entries, slots, lo, why):
    d = _issue_log(tmp_path)
    write_time_index(os.path.join(d, TIMEINDEX0), 0, entries, preallocated_slots=slots)
    got, warned = _bounded(tmp_path, lo)
    assert got == _unbounded_filtered(tmp_path, lo) == [3]
    assert len(warned) == 1 and why in str(warned[0].message), [str(w.message) for w in warned]
    assert TIMEINDEX0 in str(warned[0].message)


def test_the_command_line_selection_and_the_warning_on_stderr(tmp_path):
    import subprocess
    import sys
    d = _issue_log(tmp_path)
    write_time_index(os.path.join(d, TIMEINDEX0), 0, [(150, 1), (200, 2)])
    out = subprocess.run([sys.executable, "-m", "kafkarec", "dump", str(tmp_path), "--start-time", "250"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "baseOffset: 3 " in out.stdout, out.stdout
    assert "IndexWarning" in out.stderr and TIMEINDEX0 in out.stderr


# --- offsets that go back ---------------------------------------------------------------------

def _rebase(data: bytes, base: int) -> bytes:
    """A v2 batch with another base offset: outside its CRC, so it still reads as valid."""
    return struct.pack(">q", base) + data[8:]


def _going_back_in_a_segment(root):
    """The issue's first example: one segment holding a batch at base 4294967297 (timestamp
    2000, two records) then offsets 3, 4, 5 (2000..2002)."""
    w = PartitionWriter(str(root), "t", 0)
    first = w.append(v2_batch([(2000, b"k", b"a", []), (2000, b"k", b"b", [])]))
    w.append(_one(2000), skip_offsets=1)
    w.append(_one(2001))
    w.append(_one(2002))
    w.close()
    path = os.path.join(str(root), "t-0", "00000000000000000000.log")
    data = bytearray(open(path, "rb").read())
    data[first.position:first.position + 8] = struct.pack(">q", 4294967297)
    open(path, "wb").write(bytes(data))
    return path


def _past_the_next_segment(root):
    """The issue's second example: segments 0 and 2, segment 0 holding offsets 0, 1 and a
    batch at base 1000."""
    w = PartitionWriter(str(root), "t", 0)
    w.append(_one(10))
    w.append(_one(11))
    w.roll()
    w.append(_one(12))
    w.append(_one(13))
    w.close()
    path = os.path.join(str(root), "t-0", "00000000000000000000.log")
    data = open(path, "rb").read()
    open(path, "ab").write(_rebase(data[:len(data) // 2], 1000))
    return path, len(data)


def _data_rows(table):
    if "_corrupt_record" not in table.column_names:
        return table.column("offset").to_pylist(), []
    ok = table.filter(table.column("_corrupt_record").is_null())
    bad = table.filter(table.column("_corrupt_record").is_valid())
    return ok.column("offset").to_pylist(), bad.column("_corrupt_record").to_pylist()


@pytest.mark.parametrize("bounds", [None, Bounds.of(timestamps=(1000, None)), Bounds.of(partitions=[0]),
                                    Bounds.of(offsets=(3, None)), Bounds.of(offsets=(0, 5))])
def test_offsets_that_go_back_in_a_segment_give_one_answer(tmp_path, bounds):
    path = _going_back_in_a_segment(tmp_path)
    want = [o for o in (3, 4, 5) if bounds is None or bounds.offsets[0] is None or bounds.offsets[0] <= o
            < (bounds.offsets[1] or 1 << 62)]
    rows, errors = _data_rows(LogScan(str(tmp_path), bounds=bounds, mode="PERMISSIVE").to_table())
    assert rows == want
    assert all("OffsetOrderError" in e and "4294967297" in e and "t-0" in e for e in errors), errors
    # a read that starts at the time lookup's hit (offset 3) does not read the damaged batch
    assert len(errors) == (0 if bounds is not None and bounds.timestamps[0] is not None else 1), errors
    if bounds is None:
        assert len(errors) == 1 and path in errors[0] and "byte 0" in errors[0]
        with pytest.raises(OffsetOrderError, match=r"t-0.*the batch at byte 0 \(offsets "
                                                   r"4294967297\.\.4294967298\).*32-bit"):
            LogScan(str(tmp_path)).to_table()
        assert LogScan(str(tmp_path), mode="DROPMALFORMED").to_table().column("offset").to_pylist() == want


@pytest.mark.parametrize("bounds", [None, Bounds.of(partitions=[0]), Bounds.of(offsets=(0, None)),
                                    Bounds.of(timestamps=(0, None)), Bounds.of(offsets=(1, 3))])
def test_a_batch_past_the_next_segments_base_gives_one_answer(tmp_path, bounds):
    path, at = _past_the_next_segment(tmp_path)
    want = [o for o in (0, 1, 2, 3) if bounds is None or bounds.offsets[0] is None or bounds.offsets[0] <= o
            < (bounds.offsets[1] or 1 << 62)]
    rows, errors = _data_rows(LogScan(str(tmp_path), bounds=bounds, mode="PERMISSIVE").to_table())
    assert rows == want
    assert len(errors) == 1, errors
    assert path in errors[0] and f"byte {at}" in errors[0] and "next segment's base offset 2" in errors[0]
    with pytest.raises(OffsetOrderError, match=rf"t-0: the batch at byte {at} \(offsets 1000\.\.1000\): "
                                               r"offset 1000 is at or past the next segment's base offset 2"):
        LogScan(str(tmp_path), bounds=bounds).to_table()
    assert issubclass(OffsetOrderError, MalformedBatchError)


@pytest.mark.parametrize("bounds", [None, Bounds.of(timestamps=(1000, None)), Bounds.of(offsets=(3, None)),
                                    Bounds.of(offsets=(0, 1001))])
def test_a_batch_that_goes_back_is_the_one_reported(tmp_path, bounds):
    """A damaged base offset that still fits the segment (1000, then 3, 4, 5): the batches that
    go back after it are reported, as ``kafkarec verify`` reports them and as Kafka's consumer,
    past 1001, never returns them."""
    path = _going_back_in_a_segment(tmp_path)
    data = open(path, "rb").read()
    open(path, "wb").write(_rebase(data, 1000))
    want = [o for o in (1000, 1001) if bounds is None or bounds.offsets == (None, None)
            or bounds.offsets[0] <= o < (bounds.offsets[1] or 1 << 62)]
    rows, errors = _data_rows(LogScan(str(tmp_path), bounds=bounds, mode="PERMISSIVE").to_table())
    assert rows == want
    assert [e.split("offsets go back: ")[1] for e in errors] == [
        "it starts at 3 after offset 1001", "it starts at 4 after offset 1001", "it starts at 5 after offset 1001"]
    with pytest.raises(OffsetOrderError, match="it starts at 3 after offset 1001"):
        LogScan(str(tmp_path), bounds=bounds).to_table()


@pytest.mark.parametrize("bounds", [None, Bounds.of(partitions=[0]), Bounds.of(timestamps=(0, None))])
def test_offsets_far_past_the_segments_base_are_no_error(tmp_path, bounds):
    """Kafka's reader of a file takes any long offset: a segment MemoryRecordsBuilder wrote from
    base 0 up to Long.MAX - 1 (tests/spark/test_spark_extremes.py) is read whole, without an error
    row, whatever the bounds (a broker's 2^31 rule is its own, not a reader's)."""
    import kafkarec
    long_max = (1 << 63) - 1
    first = kafkarec.RecordBatchBuilder(base_offset=0)
    first.append(b"a", timestamp=1)
    far = kafkarec.RecordBatchBuilder(base_offset=long_max - 7)
    far.append(b"b", timestamp=2)
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(first.build() + far.build())
    for mode in ("PERMISSIVE", "FAILFAST"):
        table = LogScan(str(tmp_path), bounds=bounds, mode=mode).to_table()
        assert table.column("offset").to_pylist() == [0, long_max - 7], mode
        if "_corrupt_record" in table.column_names:
            assert table.column("_corrupt_record").null_count == table.num_rows
