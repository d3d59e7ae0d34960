"""Indexes are evidence, not truth (issue 49, finding 4): a ``.timeindex`` that understates is not
allowed to hide records from a lower timestamp bound (it is checked at the cost of one batch and
one index interval, and a segment whose index is not believed is scanned, with an
:class:`~kafkarec.errors.IndexWarning`); offsets that go back give one answer whatever the
bounds, or an :class:`~kafkarec.errors.OffsetOrderError`."""
import os
import warnings

import pytest

from kafkarec.errors import IndexWarning, MalformedBatchError, OffsetOrderError
from kafkarec.scan import Bounds, LogScan

from logdir import PartitionWriter, v2_batch, write_time_index

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
