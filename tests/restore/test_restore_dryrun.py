"""``kafkarec restore --dry-run`` without a cluster (issue 69 item 5), on log dirs written by
tests/support/logs/logdir.py: whole, a segment gone (missing), a batch damaged, a range an earlier run
half wrote (partial) or cut by --end-time; and (item 2) the partition lines said as each partition
finishes, and --bootstrap's offsets bounding the plan.  The broker side of --bootstrap is in
tests/broker/test_broker_restore.py."""
import json
import os

import kafkarec
import pytest

from kafkarec import internal
from kafkarec.cli.main import main
from kafkarec.restore import RestoreSpec, dry_run, plan
from support.logs.logdir import PartitionWriter, sample_records, v2_batch

TOPIC = "t"


def _log(root, *, compact=None, metadata=True):
    """``t-0``: six batches of 3 records, a segment each (offsets 0-17); a ``__cluster_metadata``
    naming the topic (its cleanup.policy ``compact`` when asked, else Kafka's default)."""
    w = PartitionWriter(str(root), TOPIC, 0, segment_bytes=300)
    appended = [w.append(v2_batch(sample_records(3, start_ts=1_700_000_000_000 + 10 * i))) for i in range(6)]
    w.close()
    if metadata:
        records = [internal.encode_record("__cluster_metadata", "TOPIC_RECORD", None,
                                          {"name": TOPIC, "topicId": "ioNpEorxLpqqSK7HcI_9ow"})]
        if compact:
            records.append(internal.encode_record("__cluster_metadata", "CONFIG_RECORD", None, {
                "resourceType": 2, "resourceName": TOPIC, "name": "cleanup.policy", "value": "compact"}))
        os.makedirs(os.path.join(str(root), "__cluster_metadata-0"))
        b = kafkarec.RecordBatchBuilder()
        for k, v in records:
            b.append(v, key=k, timestamp=1_700_000_000_000)
        with open(os.path.join(str(root), "__cluster_metadata-0", "%020d.log" % 0), "wb") as f:
            f.write(b.build())
    return w, appended


def _drop_segment(w, base):
    for name in os.listdir(w.dir):
        if name.startswith("%020d." % base):
            os.remove(os.path.join(w.dir, name))


def _cli(capfd, *args):
    code = main(["restore", *args])
    out, err = capfd.readouterr()
    return code, out, err


def test_a_whole_log_is_full_and_nothing_is_asked_of_a_target(tmp_path, capfd):
    _log(tmp_path)
    code, out, err = _cli(capfd, str(tmp_path), "--dry-run")
    assert (code, err) == (0, "")
    assert out == ("t-0 -> t-0 [0, 18) 18 records full\n"
                   "dry run: 1 partition(s), 18 record(s) would be written: 1 full, 0 partial, 0 done, 0 missing, "
                   "0 damaged, 0 refused\n")
    code, out, _ = _cli(capfd, str(tmp_path), "--dry-run", "--json", "--rename", "t=u")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True and doc["records"] == 18
    assert doc["partitions"] == [{"topic": "t", "partition": 0, "target_topic": "u", "start": 0, "end": 18,
                                  "first": 0, "records": 18, "status": "full", "missing": [], "holes": [],
                                  "damaged": None, "reason": None}]


def test_a_segment_gone_is_missing_unless_the_topic_is_compacted(tmp_path, capfd):
    w, _ = _log(tmp_path / "delete")
    _drop_segment(w, 6)         # offsets 6-8
    code, out, _ = _cli(capfd, str(tmp_path / "delete"), "--dry-run")
    assert code == 1
    assert out.splitlines()[0] == ("t-0 -> t-0 [0, 18) 15 records missing: offsets [6, 9) are in no copy of "
                                   "the log")
    assert out.splitlines()[1].endswith(" 0 full, 0 partial, 0 done, 1 missing, 0 damaged, 0 refused")
    # compacted: holes are the cleaner's
    w, _ = _log(tmp_path / "compact", compact=True)
    _drop_segment(w, 6)
    spec = RestoreSpec.of(str(tmp_path / "compact"), None)
    (p,) = dry_run(spec).partitions
    assert (p.status, p.records, p.missing, p.holes) == ("full", 15, (), ())
    # no __cluster_metadata: the policy is not known; the hole is named, not judged
    w, _ = _log(tmp_path / "unknown", metadata=False)
    _drop_segment(w, 6)
    (p,) = dry_run(RestoreSpec.of(str(tmp_path / "unknown"), None)).partitions
    assert (p.status, p.missing, p.holes) == ("full", (), ((6, 9),))
    assert "offset holes [6, 9) (the topic's cleanup.policy is not known" in p.line()


def test_a_damaged_batch_is_named_with_its_file_and_byte(tmp_path, capfd):
    w, appended = _log(tmp_path)
    where = w.corrupt(appended[4])
    code, out, _ = _cli(capfd, str(tmp_path), "--dry-run")
    first = out.splitlines()[0]
    # the records before it are what the restore would write before it stops there
    assert code == 1 and first.startswith("t-0 -> t-0 [0, 18) 12 records damaged: Malformed Kafka record batch")
    assert f"{w.log_path(12)}: byte 0: ChecksumError" in first
    (p,) = dry_run(RestoreSpec.of(str(tmp_path), None)).partitions
    assert (p.status, p.records, p.missing) == ("damaged", 12, ()) and where > 0


def test_partial_an_earlier_runs_prefix_done_and_refused_read_from_the_target(tmp_path, monkeypatch):
    from kafkarec.restore import target
    _log(tmp_path)
    asked = []

    def progress(spec, keys, **kw):
        asked.append(sorted(keys))
        return {("u", 0): answer}
    monkeypatch.setattr(target, "progress", progress)
    # anything that would write is not reached: no topic created, no producer
    monkeypatch.setattr(target, "client", lambda *a, **k: pytest.fail("a dry run made a client"))
    monkeypatch.setattr(target, "ensure_topics", lambda *a, **k: pytest.fail("a dry run created topics"))
    spec = RestoreSpec.of(str(tmp_path), "b:9092", rename=["t=u"])
    answer = 7
    (p,) = dry_run(spec).partitions
    assert asked == [[("u", 0)]]
    assert (p.status, p.first, p.records, p.reason) == ("partial", 7, 11,
                                                        "the target holds [0, 7) from an earlier run")
    answer = 18
    (p,) = dry_run(spec).partitions
    assert (p.status, p.first, p.records) == ("done", 18, 0)
    answer = 40
    result = dry_run(spec)
    assert result.partitions[0].status == "refused" and not result.ok
    assert "past the source's log end 18" in result.partitions[0].line()


def test_partial_when_the_end_time_cuts_the_range(tmp_path):
    _log(tmp_path)
    (p,) = dry_run(RestoreSpec.of(str(tmp_path), None, end_time=1_700_000_000_000 + 30)).partitions
    assert (p.status, p.start, p.end, p.records) == ("partial", 0, 9, 9)
    assert p.reason == "--end-time ends it before the log's end 18"


def test_without_dry_run_the_target_is_required_and_json_is_dry_runs(tmp_path, capfd):
    _log(tmp_path)
    code, _, err = _cli(capfd, str(tmp_path))
    assert code == 2 and "--target-bootstrap" in err and len(err.strip().splitlines()) == 1
    code, _, err = _cli(capfd, str(tmp_path), "--target-bootstrap", "b:1", "--json")
    assert code == 2 and "--json is --dry-run's" in err


def test_each_partition_line_is_said_when_it_finishes(tmp_path, monkeypatch, capfd):
    """A run that fails on its second partition has already printed the first's line."""
    from kafkarec.errors import RestoreError
    from kafkarec.restore import OffsetMap, PartitionSummary, produce, target
    _log(tmp_path)
    w = PartitionWriter(str(tmp_path), TOPIC, 1)
    w.append(v2_batch(sample_records(2)))
    w.close()
    monkeypatch.setattr(target, "ensure_topics", lambda spec, p: [])

    def one(spec, part, translation=None):
        if part.partition == 1:
            assert capfd.readouterr().out == "t-0 -> t-0 [0, 18) 18 records written\n"
            raise RestoreError(spec.target, "stopped", topic=part.target_topic, partition=1)
        return PartitionSummary(part.topic, part.partition, part.start, part.end, part.target_topic, 18,
                                "written"), OffsetMap()
    monkeypatch.setattr(produce, "restore_partition", one)
    code, out, err = _cli(capfd, str(tmp_path), "--target-bootstrap", "b:1", "--no-groups")
    assert code == 1 and out == "" and "stopped" in err


def test_bootstrap_bounds_each_range_by_the_brokers_offsets(tmp_path, monkeypatch):
    """--bootstrap: the broker's log start (past the checkpoint's after deleteRecords) and its LSO
    bound the range, through the backfill's one ListOffsets client."""
    from kafkarec.lakehouse import broker
    _log(tmp_path)
    asked = []

    def list_offsets(bootstrap, partitions, **kw):
        asked.append((bootstrap, sorted(partitions)))
        return {(TOPIC, 0): broker.LiveOffsets(4, 15)}
    monkeypatch.setattr(broker, "list_offsets", list_offsets)
    (p,) = plan(RestoreSpec.of(str(tmp_path), None, bootstrap="src:9092")).partitions
    assert asked == [("src:9092", [(TOPIC, 0)])] and (p.start, p.end, p.log_end) == (4, 15, 18)
    (d,) = dry_run(RestoreSpec.of(str(tmp_path), None, bootstrap="src:9092")).partitions
    assert (d.start, d.end, d.records, d.status) == (4, 15, 11, "full")


def test_groups_the_restore_would_refuse_fail_the_dry_run(tmp_path, capfd, monkeypatch):
    """The restore checks every group's source position before writing: the dry run does too."""
    import kafkarec.restore as R
    from kafkarec.errors import RestoreError
    _log(tmp_path)

    def refuse(spec, plan):
        raise RestoreError(spec.target, "the source position 99 of t-0 is outside the history", group="g",
                           topic="t", partition=0)
    monkeypatch.setattr(R, "check_groups", refuse)
    code, out, _ = _cli(capfd, str(tmp_path), "--dry-run")
    assert code == 1 and out.splitlines()[1] == ("groups refused (the restore would write nothing): group g, t-0: "
                                                 "the source position 99 of t-0 is outside the history")
    code, out, _ = _cli(capfd, str(tmp_path), "--dry-run", "--json")
    assert code == 1 and json.loads(out)["groups"].startswith("group g, t-0: the source position 99")
    assert _cli(capfd, str(tmp_path), "--dry-run", "--no-groups")[0] == 0
