"""The audit (kafkarec.lakehouse.audit) on logs written as a broker writes them, against a plain model
of read_committed (tests/support/logs/lakehouse_logs.py): the committed records pass with every hole
explained; a missing row is a gap, a second copy a duplicate, an aborted row unexpected, each
named by its offset; compaction (thinned batches, an empty batch, batches gone), the log start
and bytes the log cannot frame are told apart.  The session broker's topics and real tables are
tests/broker/test_broker_audit*.py's."""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pa = pytest.importorskip("pyarrow")

from kafkarec.errors import UsageError  # noqa: E402
from kafkarec.lakehouse.audit import audit  # noqa: E402
from support.logs.logdir import PartitionWriter, empty_batch, v2_batch  # noqa: E402
from support.logs.lakehouse_logs import T0, ops_strategy, write_partition  # noqa: E402

OPS = ops_strategy()


def positions(offsets, topic="t", partition=0):
    offsets = list(offsets)
    return pa.table({"topic": pa.array([topic] * len(offsets), pa.string()),
                     "partition": pa.array([partition] * len(offsets), pa.int32()),
                     "offset": pa.array(offsets, pa.int64())})


def expanded(ranges):
    return [o for first, last, _ in ranges for o in range(first, last + 1)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, data=st.data())
def test_the_audit_matches_a_model_of_read_committed(ops, data):
    with tempfile.TemporaryDirectory() as root:
        m = write_partition(root, "t", 0, ops, segment_bytes=300)
        h = m.lso()
        committed = m.read_committed(0, h)
        aborted = sorted(o for o in m.values if o < h and o not in m.committed)
        p, = audit(root, positions(committed), topics="t").partitions
        assert (p.start, p.end, p.expected, p.present) == (0, h, len(committed), len(committed))
        assert p.ok and not len(p.gaps) and not len(p.duplicates)
        assert p.explained["aborted"] == len(aborted)
        assert p.explained["control"] == h - len(committed) - len(aborted)
        assert p.explained["compaction"] == p.explained["log_start"] == 0
        if not committed:
            return
        lost = data.draw(st.sets(st.sampled_from(committed)))
        kept = [o for o in committed if o not in lost]
        twice = data.draw(st.sets(st.sampled_from(kept))) if kept else set()
        with_aborted = data.draw(st.sets(st.sampled_from(aborted))) if aborted else set()
        table = kept + sorted(twice) + sorted(with_aborted)
        p, = audit(root, positions(table), topics="t").partitions
        # a gap runs from a missing record to a missing record; only holes the log explains lie
        # between them
        assert sorted(o for o in expanded(p.gaps) if o in m.committed) == sorted(lost)
        assert all(first in lost and last in lost for first, last, _ in p.gaps)
        assert p.gaps.total() == len(lost) and p.present == len(committed) - len(lost)
        assert expanded(p.duplicates) == sorted(twice) and set(p.duplicates.number.tolist()) <= {2}
        assert expanded(p.unexpected["aborted"]) == sorted(with_aborted)
        assert p.ok == (not lost and not twice and not with_aborted)
        # rows past H (an open transaction's) are outside the range, not judged
        past = [o for o in m.values if o >= h]
        p, = audit(root, positions(committed + past), topics="t").partitions
        assert p.ok and p.outside == len(past)


def _records(n, first=0):
    return [(T0 + first + i, b"k%d" % (first + i), b"v%d" % (first + i), []) for i in range(n)]


def test_compaction_holes_are_explained_and_rows_the_cleaner_removed_are_unverifiable(tmp_path):
    root = str(tmp_path)
    w = PartitionWriter(root, "t", 0, segment_bytes=1 << 20)
    w.append(v2_batch(_records(3)))                                    # 0..2
    # the cleaner kept 3 records of 3..9 (the batch keeps its offsets' span)
    w.append(v2_batch(_records(3, 3), offset_deltas=[0, 2, 6]))        # 3, 5, 9 (span 3..9)
    w.append(v2_batch(_records(2)), skip_offsets=5)                    # 10..14 gone with their batches
    w.append(empty_batch(4, max_timestamp=T0, producer_id=5, producer_epoch=0))   # 17..20: none left
    w.append(v2_batch(_records(2)))                                    # 21, 22
    w.close()
    kept = [0, 1, 2, 3, 5, 9, 15, 16, 21, 22]
    p, = audit(root, positions(kept)).partitions
    assert p.ok and (p.end, p.expected, p.present) == (23, 10, 10)
    assert p.explained["compaction"] == 23 - 10 and not len(p.gaps)
    # a table written before the cleaner ran holds every record: no fault, said so
    p, = audit(root, positions(range(23))).partitions
    assert p.ok and p.unverifiable["compaction"] == 13
    p, = audit(root, positions([o for o in kept if o != 5])).partitions
    assert p.gaps.to_list() == [[5, 5, 1]]


def test_tombstones_are_explained_where_the_layout_writes_no_row_for_them(tmp_path):
    root = str(tmp_path)
    w = PartitionWriter(root, "t", 0, segment_bytes=1 << 20)
    w.append(v2_batch([(T0 + i, b"k", None if i in (1, 2, 4) else b"v", []) for i in range(6)], codec="gzip"))
    w.close()
    rows = positions([0, 3, 5])
    p, = audit(root, rows, layout="kafka-delta-ingest").partitions
    assert p.ok and (p.expected, p.present, p.explained["tombstone"]) == (3, 3, 3)
    p, = audit(root, positions(range(6)), layout="iceberg-kafka-connect").partitions
    assert p.ok and p.explained["tombstone"] == 0
    # Redpanda writes a row for every record: a tombstone's missing row is a gap
    p, = audit(root, rows, layout="redpanda").partitions
    assert not p.ok and p.gaps.to_list() == [[1, 2, 2], [4, 4, 1]]


def test_the_log_start_explains_holes_below_it(tmp_path):
    root = str(tmp_path)
    w = PartitionWriter(root, "t", 0, segment_bytes=1 << 20)
    w.append(v2_batch(_records(20)))
    w.close()
    # deleteRecords moved the log start to 12 (the broker's checkpoint, as it writes it)
    with open(os.path.join(root, "log-start-offset-checkpoint"), "w") as fh:
        fh.write("0\n1\nt 0 12\n")
    table = [o for o in range(20) if not 3 <= o < 7]
    p, = audit(root, positions(table), topics="t").partitions
    assert p.ok and (p.log_start, p.start, p.expected, p.present) == (12, 12, 8, 8)
    assert p.explained["log_start"] == 4 and p.unverifiable["log_start"] == 8
    # a start of one's own: rows between the log start and it are outside the range
    p, = audit(root, positions(table), start_offsets={("t", 0): 15}).partitions
    assert p.ok and (p.start, p.expected, p.outside) == (15, 5, 3)
    p, = audit(root, positions(table), start_offsets=14, end_offsets=18).partitions
    assert p.ok and (p.start, p.end, p.expected, p.outside) == (14, 18, 4, 4)


def test_offsets_the_log_cannot_frame_are_unverified_not_compaction(tmp_path):
    root = str(tmp_path)
    w = PartitionWriter(root, "t", 0, segment_bytes=200)
    for i in range(6):
        w.append(v2_batch(_records(3, 3 * i)))
    w.close()
    logs = sorted(n for n in os.listdir(os.path.join(root, "t-0")) if n.endswith(".log"))
    assert len(logs) >= 3
    second = os.path.join(root, "t-0", logs[1])
    first_offset = int(logs[1][:-4])
    with open(second, "r+b") as fh:            # the batch length of its first batch: no frame
        fh.seek(8)
        fh.write(b"\xff\xff\xff\xff")
    next_base = int(logs[2][:-4])
    p, = audit(root, positions(o for o in range(18) if not first_offset <= o < next_base)).partitions
    assert not p.ok and p.unverified.to_list() == [[first_offset, next_base - 1, next_base - first_offset]]
    assert p.explained["compaction"] == 0 and not len(p.gaps)
    p, = audit(root, positions(range(18))).partitions
    assert p.ok and p.unverifiable["unreadable"] == next_base - first_offset


def test_partitions_topics_and_positions(tmp_path):
    root = str(tmp_path)
    write_partition(root, "t", 0, [("plain", 3)])
    write_partition(root, "t", 1, [("plain", 2)])
    write_partition(root, "u", 0, [("plain", 2)])
    rows = pa.table({"topic": ["t", "t", "t", "t", "t", "t", None],
                     "partition": [0, 0, 0, 1, 1, 5, 0], "offset": [0, 1, 2, 0, 1, 0, 9]})
    with pytest.raises(UsageError, match="name no topic"):
        audit(root, rows)
    # one topic per table (Redpanda, AutoMQ): its rows name none
    report = audit(root, rows.filter(pa.array([False] * 6 + [True])), topics="u")
    assert [(p.topic, p.partition) for p in report.partitions] == [("u", 0)]
    assert not report.ok and report.partitions[0].gaps.to_list() == [[0, 1, 2]]
    report = audit(root, rows.slice(0, 6))
    parts = {(p.topic, p.partition): p for p in report.partitions}
    assert sorted(parts) == [("t", 0), ("t", 1), ("t", 5)]      # the table's topics; u is not audited
    assert parts[("t", 0)].ok and parts[("t", 1)].ok
    assert parts[("t", 5)].unexpected["no such partition"].to_list() == [[0, 0, 1]]
    assert "t-5" in report.text() and "unexpected no such partition rows (1)" in report.text()
    with pytest.raises(UsageError, match="no 'offset' column"):
        audit(root, rows.select(["topic", "partition"]))


@pytest.mark.parametrize("columns, message", [
    # a partition past a Java int would alias another partition's key (2**40 read as partition 0)
    ({"partition": pa.array([2 ** 40], pa.int64())}, r"1 row\(s\) of the table have a partition outside "
                                                     r"0\.\.2147483647 \(the first: 1099511627776\)"),
    ({"partition": pa.array([-1], pa.int32())}, r"a partition outside 0\.\.2147483647 \(the first: -1\)"),
    ({"partition": pa.array([2 ** 32 - 1], pa.uint32())}, r"the first: 4294967295"),
    ({"offset": pa.array([-5], pa.int64())}, r"an offset outside 0\.\.9223372036854775807 \(the first: -5\)"),
    ({"offset": pa.array([2 ** 64 - 1], pa.uint64())}, r"the first: 18446744073709551615"),
    ({"offset": pa.array([1.5])}, r"offset column is double, not an integer"),
    ({"partition": pa.array(["0"])}, r"partition column is string, not an integer"),
    ({"topic": pa.array([1])}, r"topic column is int64, not text"),
])
def test_positions_no_kafka_writer_wrote_are_refused_before_use(tmp_path, columns, message):
    """A table the audit did not write: its types and values are checked before they are used."""
    root = str(tmp_path)
    write_partition(root, "t", 0, [("plain", 3)])
    row = {"topic": pa.array(["t"]), "partition": pa.array([0], pa.int32()), "offset": pa.array([0], pa.int64())}
    row.update(columns)
    with pytest.raises(UsageError, match=message):
        audit(root, pa.table(row), topics="t")


@pytest.mark.parametrize("names", [
    ["topic", "partition", "offset", "topic"],          # select("*", "topic"), a join on topic
    ["topic", "partition", "offset", "offset"],
    ["partition", "topic", "partition", "offset"],
])
def test_positions_are_validated_by_name_and_count(tmp_path, names):
    """A positions table naming a column twice (a join's or ``select("*", "topic")``'s): one
    UsageError naming the column, not pyarrow's KeyError."""
    root = str(tmp_path)
    write_partition(root, "t", 0, [("plain", 3)])
    values = {"topic": pa.array(["t"]), "partition": pa.array([0], pa.int32()), "offset": pa.array([0], pa.int64())}
    table = pa.Table.from_arrays([values[n] for n in names], names=names)
    twice = next(n for n in names if names.count(n) == 2)
    with pytest.raises(UsageError, match=f"have 2 '{twice}' columns .*expected one each of topic, partition "
                                         f"and offset"):
        audit(root, table, topics="t")
    with pytest.raises(UsageError, match=f"have 2 '{twice}' columns"):
        audit(root, table.to_batches()[0])
