"""kafkarec reads a partition from its log start offset, as Kafka's consumer does (issue 40).

``Admin.deleteRecords`` moved the log start offsets of the session broker's
:mod:`deleted_records` topics: inside a segment (inside a batch), inside an aborted
transaction, past whole segments the broker then deleted, and up to the high watermark.  The
segment files still hold the records below each log start; Kafka's consumer (librdkafka, both
isolation levels) never returns them, and neither may kafkarec: the log layer
(tests/support/brokers/readers.py), a selection read by ``LogScan``, ``table.latest`` and the CLI's ``table``, on the
live broker's log dir and on the copy a clean shutdown left.  The option to include deleted
records returns every record of the files.  Spark's readings of the same topics are
tests/broker/test_spark_kafka_parity.py's.
"""
import base64
import json
import os
import subprocess
import sys

import pytest

from support.brokers import deleted_records
from support.brokers import produce
from support.brokers.readers import kafkarec_rows

pytestmark = [pytest.mark.broker, pytest.mark.slow]

TOPICS = set(deleted_records.TOPICS)
ISOLATIONS = ("read_uncommitted", "read_committed")


@pytest.fixture(scope="module")
def consumer_rows(kafka_broker, broker_data):
    """What Kafka's consumer reads of the topics, by isolation level."""
    return {iso: produce.consume(kafka_broker.bootstrap, sorted(TOPICS), iso) for iso in ISOLATIONS}


@pytest.fixture(params=["live", "stopped"])
def log_dir(request, kafka_broker, broker_data, stopped_log_dir):
    return kafka_broker.log_dir if request.param == "live" else stopped_log_dir


def _partitions(rows):
    out: dict = {}
    for r in rows:
        out.setdefault((r[0], r[1]), []).append(r)
    return out


def _assert_same_rows(got, want, log_starts):
    """Per partition, the rows in order; a difference names the partition and its log start."""
    got_by, want_by = _partitions(got), _partitions(want)
    wrong = []
    for tp in sorted(set(got_by) | set(want_by)):
        g, w = got_by.get(tp, []), want_by.get(tp, [])
        if g != w:
            first = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
            wrong.append(f"{tp[0]}-{tp[1]} (log start {log_starts.get(tp)}): kafkarec {len(g)} rows, offsets "
                         f"{[r[2] for r in g[first:first + 3]]}... where the consumer has {len(w)}, "
                         f"{[r[2] for r in w[first:first + 3]]}...")
    if wrong:
        pytest.fail("\n".join(wrong), pytrace=False)


def _state(rows):
    """``{(topic, partition): {key: (offset, value)}}``: each key's last record, tombstones and
    null keys left out (what a keyed table of the rows holds)."""
    out: dict = {}
    for r in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        part = out.setdefault((r[0], r[1]), {})
        if r[3] is None:
            continue
        if r[4] is None:
            part.pop(r[3], None)
        else:
            part[r[3]] = (r[2], r[4])
    return {tp: keys for tp, keys in out.items() if keys}


def _assert_same_state(got, want):
    wrong = [f"{tp[0]}-{tp[1]}: kafkarec's state has {len(got.get(tp, {}))} keys (offsets "
             f"{sorted(o for o, _ in got.get(tp, {}).values())[:5]}...), the consumer's records' "
             f"{len(want.get(tp, {}))} ({sorted(o for o, _ in want.get(tp, {}).values())[:5]}...)"
             for tp in sorted(set(got) | set(want)) if got.get(tp, {}) != want.get(tp, {})]
    if wrong:
        pytest.fail("\n".join(wrong), pytrace=False)


def _selected_rows(log_dir, options):
    from kafkarec.log.selection import parse_selection
    from kafkarec.scan import LogScan
    from support.brokers.readers import arrow_rows
    sel = parse_selection({"topics": ",".join(sorted(TOPICS)), **options})
    return arrow_rows(LogScan(log_dir, selection=sel, threads=1).to_table())


def _table_state(result):
    out: dict = {}
    for r in result.table.select(["topic", "partition", "key", "value", "offset"]).to_pylist():
        out.setdefault((r["topic"], r["partition"]), {})[r["key"]] = (r["offset"], r["value"])
    return out


def _cli_table_state(log_dir, *flags):
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "table", log_dir, "--topics", ",".join(sorted(TOPICS)),
                           *flags], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict = {}
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        out.setdefault((r["topic"], r["partition"]), {})[base64.b64decode(r["key"])] = (
            r["offset"], base64.b64decode(r["value"]))
    return out


def test_the_broker_moved_the_log_starts(broker_data, stopped_log_dir, consumer_rows):
    """The data is what the tests claim: every position the issue lists, records below each log
    start still in the files, none of them given by the consumer."""
    starts = broker_data.log_starts
    checkpoint = produce._checkpoint(os.path.join(stopped_log_dir, deleted_records.CHECKPOINT))
    files = _partitions(kafkarec_rows(stopped_log_dir, TOPICS, False, include_deleted_records=True))
    for tp, start in starts.items():
        first = int(min(n for n in os.listdir(os.path.join(stopped_log_dir, f"{tp[0]}-{tp[1]}"))
                        if n.endswith(".log"))[:20])
        assert checkpoint.get(tp, first) == start, tp
        assert all(r[2] >= start for r in _partitions(consumer_rows["read_uncommitted"]).get(tp, [])), tp
        if tp != (deleted_records.IN_ABORTED, 1):        # that cut is where a deleted segment ended
            assert min(r[2] for r in files[tp]) < start, tp
    assert starts[(deleted_records.TO_END, 0)] == 100 and len(files[(deleted_records.TO_END, 0)]) == 100
    # past whole segments: the broker deleted the first ones
    assert 0 < min(r[2] for r in files[(deleted_records.PAST_SEGMENTS, 0)]) < starts[(deleted_records.PAST_SEGMENTS, 0)]
    # inside an aborted transaction whose first records were in deleted segments
    aborted = [a for a in broker_data.log_start_acked
               if a.topic == deleted_records.IN_ABORTED and a.partition == 0 and not a.committed]
    start = starts[(deleted_records.IN_ABORTED, 0)]
    assert min(a.offset for a in aborted) < min(r[2] for r in files[(deleted_records.IN_ABORTED, 0)])
    assert any(a.offset < start for a in aborted) and any(a.offset >= start for a in aborted)


@pytest.mark.parametrize("iso", ISOLATIONS)
def test_log_layer_reads_as_the_consumer_reads(broker_data, log_dir, consumer_rows, iso):
    got = kafkarec_rows(log_dir, TOPICS, iso == "read_committed")
    _assert_same_rows(got, consumer_rows[iso], broker_data.log_starts)


def test_a_selection_reads_as_the_consumer_reads(broker_data, log_dir, consumer_rows):
    _assert_same_rows(_selected_rows(log_dir, {}), consumer_rows["read_uncommitted"], broker_data.log_starts)


@pytest.mark.parametrize("iso", ISOLATIONS)
def test_table_latest_is_the_state_of_the_consumers_records(log_dir, consumer_rows, iso):
    from kafkarec import table
    got = _table_state(table.latest(log_dir, topics=sorted(TOPICS), read_committed=iso == "read_committed"))
    _assert_same_state(got, _state(consumer_rows[iso]))


@pytest.mark.parametrize("iso", ISOLATIONS)
def test_cli_table_is_the_state_of_the_consumers_records(stopped_log_dir, consumer_rows, iso):
    flags = ["--read-committed"] if iso == "read_committed" else []
    _assert_same_state(_cli_table_state(stopped_log_dir, *flags), _state(consumer_rows[iso]))


def test_include_deleted_records_reads_the_files(broker_data, log_dir):
    """The forensic option gives every record the files hold, those below the log start too:
    ``includeDeletedRecords`` of the selection, ``include_deleted_records=`` of
    ``table.latest`` and ``--include-deleted-records`` of the CLI."""
    from kafkarec import table
    files = kafkarec_rows(log_dir, TOPICS, False, include_deleted_records=True)
    _assert_same_rows(_selected_rows(log_dir, {"includeDeletedRecords": "true"}), files, broker_data.log_starts)
    got = _table_state(table.latest(log_dir, topics=sorted(TOPICS), include_deleted_records=True))
    _assert_same_state(got, _state(files))
    _assert_same_state(_cli_table_state(log_dir, "--include-deleted-records"), _state(files))


LAG_TOPIC = "log-start-lag"


def test_with_bootstrap_the_backfill_starts_at_the_brokers_earliest_and_the_audit_flags_rows_below_it(
        kafka_broker, tmp_path, capfd):
    """Issue 49 finding 12: 3 s after a deleteRecords the checkpoint still said 0, the backfill wrote
    records no consumer returns and the audit said ok.  Asked (bootstrap=, --bootstrap), the broker's
    ListOffsets EARLIEST is the start: the backfill holds what a read_committed consumer reads, and
    the audit of a table written from the stale checkpoint reports its rows below the log start."""
    from kafkarec.cli.main import main
    from kafkarec.lakehouse import DeltaTarget, backfill, hand_off_points, read_positions
    from kafkarec.lakehouse.audit import audit
    log = deleted_records.stale_checkpoint_dir(kafka_broker, str(tmp_path / "log"), LAG_TOPIC)
    bootstrap = kafka_broker.bootstrap
    assert hand_off_points(log, topics=LAG_TOPIC)[(LAG_TOPIC, 0)] == (0, 60)          # the lag
    assert hand_off_points(log, topics=LAG_TOPIC, bootstrap=bootstrap)[(LAG_TOPIC, 0)] == (25, 60)
    consumer = [r[2] for r in produce.consume(bootstrap, [LAG_TOPIC], "read_committed") if r[4] is not None]
    assert consumer[0] >= 25

    asked = DeltaTarget(str(tmp_path / "asked"))
    s = backfill(log, asked, layout="kafka-delta-ingest", app_id="lag", topics=LAG_TOPIC, bootstrap=bootstrap)
    assert (s[(LAG_TOPIC, 0)].start, s[(LAG_TOPIC, 0)].end) == (25, 60)
    assert sorted(read_positions(asked, "kafka-delta-ingest").column("offset").to_pylist()) == consumer

    stale = str(tmp_path / "stale")
    assert main(["backfill", log, "--delta", stale, "--layout", "kafka-delta-ingest", "--app-id", "lag",
                 "--topics", LAG_TOPIC]) == 0
    out, err = capfd.readouterr()
    assert out.startswith(f"{LAG_TOPIC}-0 [0, 60) ") and "log.flush.start.offset.checkpoint.interval.ms" in err
    positions = read_positions(DeltaTarget(stale), "kafka-delta-ingest")
    blind = audit(log, positions, layout="kafka-delta-ingest")
    assert blind.ok and blind.partitions[0].unverifiable["log_start"] == 0        # what the issue saw
    below = len([o for o in positions.column("offset").to_pylist() if o < 25])
    assert below > 20
    p, = audit(log, positions, layout="kafka-delta-ingest", bootstrap=bootstrap).partitions
    assert (p.start, p.end, p.log_start) == (25, 60, 25)
    assert p.unverifiable["log_start"] == below and p.present == len(consumer)
    assert f"rows the log no longer holds (not checked): {below} log start" in p.text()
    assert main(["audit", log, "--delta", stale, "--layout", "kafka-delta-ingest", "--bootstrap", bootstrap]) == 0
    out, err = capfd.readouterr()
    assert f"{LAG_TOPIC}-0: [25, 60)" in out and f"{below} log start" in out and "checkpoint" not in err
    assert main(["backfill", log, "--delta", str(tmp_path / "cli"), "--layout", "kafka-delta-ingest",
                 "--app-id", "lag", "--topics", LAG_TOPIC, "--bootstrap", bootstrap]) == 0
    out, err = capfd.readouterr()
    assert out.startswith(f"{LAG_TOPIC}-0 [25, 60) {len(consumer)} rows written") and "checkpoint" not in err
    assert main(["audit", log, "--delta", stale, "--layout", "kafka-delta-ingest",
                 "--bootstrap", "127.0.0.1:1"]) == 1
    assert "broker 127.0.0.1:1: ListOffsets EARLIEST" in capfd.readouterr().err
