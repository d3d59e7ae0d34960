"""The one reader's batch-level walk (kafkarec.scan.PartitionWalk through LogScan.partition_walks):
every batch of a partition's whole log, control and aborted ones too, judged by the transaction rule
and listed through the scan's config (paths, bounds), against a plain model of read_committed
(tests/support/logs/lakehouse_logs.py).  The audit, the hand-off point and a stream's committed view read
the log this way."""
from __future__ import annotations

import pytest

pytest.importorskip("pyarrow")

from kafkarec.scan import ABORTED, CONTROL, DATA, Bounds, LogScan  # noqa: E402
from support.logs.lakehouse_logs import write_partition  # noqa: E402

# producer 7 commits across segments, 8 aborts, 9 is still open at the end (it holds the LSO)
OPS = [("plain", 2), ("data", 7, 3), ("data", 8, 2), ("plain", 1), ("commit", 7), ("abort", 8),
       ("data", 9, 2), ("plain", 2), ("data", 7, 1), ("commit", 7)]


def _kinds(walk):
    seen = []
    verdict = walk.judge(lambda b: seen.append((b.path, b.position, b.base_offset, b.last_offset, b.is_control)))
    out = {}
    for path, position, first, last, control in seen:
        for o in range(first, last + 1):
            out[o] = verdict.kind(path, position, control)
    return out, verdict


def test_every_batch_of_the_log_is_classified_as_read_committed_sees_it(tmp_path):
    m = write_partition(str(tmp_path), "t", 0, OPS, segment_bytes=200)
    walk, = LogScan(str(tmp_path), isolation_level="read_committed").partition_walks()
    assert walk.key == ("t", 0) and len(walk.part.segments) > 1 and walk.lost == ()
    kinds, verdict = _kinds(walk)
    lso = m.lso()
    assert lso < m.end              # producer 9's transaction is open
    assert sorted(kinds) == list(range(m.end))
    assert sorted(o for o, k in kinds.items() if k == DATA) == m.read_committed(0, lso)
    markers = sorted(o for o, k in kinds.items() if k == CONTROL)
    assert markers == sorted(at for _, at in m.txns if at is not None)
    # left out: the aborted transaction's records, and every data batch from the LSO on
    assert sorted(o for o, k in kinds.items() if k == ABORTED) == sorted(
        o for o in m.values if o not in m.committed or o >= lso)
    assert all(spans == sorted(spans) for spans in verdict.spans.values())
    assert sum(len(s) for s in verdict.spans.values()) == len(verdict.left_out)


def test_the_committed_view_ends_at_the_last_stable_offset(tmp_path):
    m = write_partition(str(tmp_path), "t", 0, OPS, segment_bytes=200)
    walk, = LogScan(str(tmp_path)).partition_walks()
    view = walk.committed_view()
    assert view.stable_end == m.lso()
    assert view.skips == walk.judge().spans


def test_the_last_stable_offset_is_the_open_transactions_not_an_aborted_batch_below_it(tmp_path):
    # producer 8's aborted batch sits just below producer 9's open one, its marker after both: every
    # batch from offset 2 on is left out, yet the LSO is 9's first offset (the one rule, also the
    # hand-off point's, at any cut of the log)
    m = write_partition(str(tmp_path), "t", 0, [("plain", 2), ("data", 8, 2), ("data", 9, 2), ("abort", 8)])
    walk, = LogScan(str(tmp_path)).partition_walks()
    assert (m.lso(), walk.committed_view().stable_end) == (4, 4)
    assert [walk.committed_view(end).stable_end for end in (2, 3, 4, 6, 7)] == [None, 2, 2, 2, 4]


def test_the_walks_are_the_scans_partitions(tmp_path):
    for topic, partition in (("t", 0), ("t", 1), ("u", 0)):
        write_partition(str(tmp_path), topic, partition, [("plain", 3)])
    keys = [w.key for w in LogScan(str(tmp_path)).partition_walks()]
    assert sorted(keys) == [("t", 0), ("t", 1), ("u", 0)]
    assert [w.key for w in LogScan(str(tmp_path), topics=["t"], partitions=[1]).partition_walks()] == [("t", 1)]
    assert [w.key for w in LogScan(str(tmp_path), bounds=Bounds(topics=["u"])).partition_walks()] == [("u", 0)]
    assert [w.key for w in LogScan(str(tmp_path), selection={"topics": "u"}).partition_walks()] == [("u", 0)]
    listed = LogScan(str(tmp_path)).listing()
    assert sorted(w.key for w in LogScan(str(tmp_path)).partition_walks([listed])) == sorted(keys)
