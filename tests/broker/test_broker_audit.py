"""The audit (kafkarec.lakehouse.audit) on the session broker's topics, against what Kafka's own
consumer reads (issue 41, item 5).

A table's positions are built from librdkafka's reading of the live broker (read_committed: the
correct table; read_uncommitted: a table written without the aborted-transaction filter) or from
what the producers saw acknowledged (a table written before retention, deleteRecords or the log
cleaner ran), and held against the broker's log dir as a clean shutdown left it.  A correct table
passes with its holes explained by the log (markers, aborted transactions, compaction, the log
start); a deleted row is a gap named by its offset, a duplicated row a duplicate, aborted rows
unexpected.  Real Delta and Iceberg tables through the CLI are test_audit_tables.py's.
"""
from __future__ import annotations

import pytest

from support.brokers import deleted_records
from support.brokers import produce

pytestmark = [pytest.mark.broker, pytest.mark.slow]

pa = pytest.importorskip("pyarrow")

from kafkarec.lakehouse.audit import audit  # noqa: E402

TXN, COMPACTED, RETENTION = "txn", "compacted", "retention"
TOPICS = [TXN, COMPACTED, RETENTION, deleted_records.PAST_SEGMENTS, deleted_records.IN_ABORTED]


@pytest.fixture(scope="module")
def consumed(kafka_broker, broker_data):
    """``{isolation: [(topic, partition, offset)]}`` as Kafka's consumer reads the topics."""
    return {iso: [r[:3] for r in produce.consume(kafka_broker.bootstrap, TOPICS, iso)]
            for iso in ("read_committed", "read_uncommitted")}


def positions(rows):
    rows = list(rows)
    return pa.table({"topic": pa.array([r[0] for r in rows], pa.string()),
                     "partition": pa.array([r[1] for r in rows], pa.int32()),
                     "offset": pa.array([r[2] for r in rows], pa.int64())})


def by_name(report):
    return {(p.topic, p.partition): p for p in report.partitions}


def test_the_read_committed_consumers_records_pass_with_every_hole_explained(stopped_log_dir, consumed):
    rows = consumed["read_committed"]
    report = audit(stopped_log_dir, positions(rows), topics=TOPICS)
    assert report.ok, report.text()
    parts = by_name(report)
    assert sorted(parts) == sorted({r[:2] for r in rows} | {(TXN, p) for p in range(3)})
    for key, p in parts.items():
        want = sorted(o for t, q, o in rows if (t, q) == key)
        assert p.expected == p.present == len(want), key
        assert p.start == p.log_start <= want[0]
        assert not p.outside and not len(p.gaps) and not len(p.duplicates)
        # every offset of the range is a record or a hole the log explains
        assert p.expected + sum(p.explained[r] for r in ("control", "aborted", "compaction")) == p.end - p.start
    for q in range(3):
        assert parts[(TXN, q)].explained["control"] > 0 and parts[(TXN, q)].explained["aborted"] > 0
    assert parts[(COMPACTED, 0)].explained["compaction"] > 0
    assert parts[(deleted_records.IN_ABORTED, 0)].explained["aborted"] > 0
    assert "FAILED" not in report.text()


def test_a_deleted_row_is_a_gap_named_by_its_offset_and_a_duplicate_is_counted(stopped_log_dir, consumed):
    rows = [r for r in consumed["read_committed"] if r[0] == TXN]
    lost = [r for r in rows if r[1] == 1][5]
    twice = [r for r in rows if r[1] == 2][3]
    table = [r for r in rows if r != lost] + [twice]
    report = audit(stopped_log_dir, positions(table), topics=[TXN])
    assert not report.ok
    parts = by_name(report)
    assert parts[(TXN, 0)].ok
    assert parts[(TXN, 1)].gaps.to_list() == [[lost[2], lost[2], 1]]
    assert parts[(TXN, 1)].present == parts[(TXN, 1)].expected - 1
    assert parts[(TXN, 2)].duplicates.to_list() == [[twice[2], twice[2], 2]]
    text = report.text()
    assert "txn-1: " in text and f"gaps (1 missing): {lost[2]} (1 record)" in text
    assert f"{twice[2]} (2 copies)" in text
    # the whole partition missing: one gap over its first to last committed record, the
    # explained holes between them no break in it
    report = audit(stopped_log_dir, positions(r for r in rows if r[1] != 0), topics=[TXN])
    p = by_name(report)[(TXN, 0)]
    committed = sorted(r[2] for r in rows if r[1] == 0)
    assert p.gaps.to_list() == [[committed[0], committed[-1], len(committed)]]


def test_a_table_written_without_the_aborted_transaction_filter_has_unexpected_rows(
        stopped_log_dir, consumed, broker_data):
    rows = [r for r in consumed["read_uncommitted"] if r[0] == TXN]
    report = audit(stopped_log_dir, positions(rows), topics=TXN)
    assert not report.ok
    aborted = {(a.partition, a.offset) for a in broker_data.acked if a.topic == TXN and not a.committed}
    for (topic, q), p in by_name(report).items():
        got = {(q, o) for first, last, _ in p.unexpected["aborted"] for o in range(first, last + 1)}
        assert got == {x for x in aborted if x[0] == q}
        assert not len(p.gaps) and p.explained["aborted"] == 0
    assert "unexpected aborted rows" in report.text()


def test_holes_below_the_log_start_and_compacted_rows_are_explained_not_gaps(stopped_log_dir, broker_data):
    """A table written before retention, deleteRecords and the cleaner ran holds what the log no
    longer does: those rows are unverifiable, not faults; the holes a table has there (records
    it never got) are explained by the log start."""
    acked = broker_data.acked + broker_data.log_start_acked
    topics = [RETENTION, COMPACTED, deleted_records.PAST_SEGMENTS]
    rows = sorted((a.topic, a.partition, a.offset) for a in acked if a.topic in topics and a.committed)
    # a hole of the table below the log start of each
    table = [r for r in rows if not (r[0] in (RETENTION, deleted_records.PAST_SEGMENTS) and 10 <= r[2] < 15)]
    report = audit(stopped_log_dir, positions(table), topics=topics)
    assert report.ok, report.text()
    parts = by_name(report)
    for topic in (RETENTION, deleted_records.PAST_SEGMENTS):
        p = parts[(topic, 0)]
        assert p.log_start > 15 and p.start == p.log_start
        assert p.explained["log_start"] == 5
        assert p.unverifiable["log_start"] == p.log_start - 5
    assert parts[(deleted_records.PAST_SEGMENTS, 0)].log_start == broker_data.log_starts[
        (deleted_records.PAST_SEGMENTS, 0)]
    p = parts[(COMPACTED, 0)]
    assert p.unverifiable["compaction"] > 0 and p.explained["compaction"] == 0


def test_offsets_no_copy_of_a_tiered_log_holds_are_unverified(stopped_broker, tmp_path):
    """The tiered topic read with its remote copies: a table of every record passes; with the
    files of a live remote segment gone (data loss in the log itself) the offsets it held are
    ones the audit cannot vouch for: the table's rows there are not checked, and a table that
    lacks them fails as unverified, not as a gap or as compaction."""
    from support.brokers import tiered_topic
    log_dir = stopped_broker.log_dir
    rows = [(tiered_topic.TOPIC, 0, o) for o in range(tiered_topic.RECORDS)]
    report = audit(log_dir, positions(rows), tiered_storage=stopped_broker.remote_dir)
    assert report.ok and report.partitions[0].expected == tiered_topic.RECORDS, report.text()
    victim = tiered_topic.copy_with_gap(log_dir, stopped_broker.remote_dir, str(tmp_path / "remote"))
    lost = range(victim.start_offset, victim.end_offset + 1)
    p, = audit(log_dir, positions(rows), tiered_storage=str(tmp_path / "remote")).partitions
    assert p.ok and p.unverifiable["unreadable"] == len(lost)
    p, = audit(log_dir, positions(r for r in rows if r[2] not in lost),
               tiered_storage=str(tmp_path / "remote")).partitions
    assert not p.ok and p.unverified.to_list() == [[lost[0], lost[-1], len(lost)]]
    assert not len(p.gaps) and p.explained["compaction"] == 0
