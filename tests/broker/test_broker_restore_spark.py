"""``spark_udfs.restore`` on bare executors (``spark-submit --py-files <kafkarec wheel>``, the broker
tests' one Spark application, tests/support/spark/spark_app.py): the restore tests' history
(``restore_history``, on the session's broker A) into the second broker (``restore_target_broker``,
B), a Spark task per partition, held against the command line's restore of the same history with
the same options: the same records at the same target offsets, the same offset map and groups'
CSV; the target read back against the source by ``kafkarec.restore.verify``; a partition an
earlier run left half-written resumed; a second run writes nothing."""
import csv
import json
import subprocess
import sys
import time

import pytest

from support.brokers import restore_history as RH
from support.spark.spark_app import RESTORED_TOPICS, restore_options

pytest.importorskip("confluent_kafka")
pytestmark = [pytest.mark.broker, pytest.mark.spark]


@pytest.fixture(scope="module")
def runs(broker_spark):
    folder = broker_spark / "restore"
    error = folder / "error.txt"
    assert not error.exists(), f"the Spark restore raised in the job:\n{error.read_text()}"
    return folder, json.loads((folder / "runs.json").read_text())


@pytest.fixture(scope="module")
def command(restore_history, restore_target_broker, tmp_path_factory):
    """The command line's restore of the same history with the same options (into ``<topic>-cli``):
    its folder (map.csv, groups.csv, shares.csv), stdout, and its wall and CPU seconds."""
    work = tmp_path_factory.mktemp("restore-cli")
    opts = restore_options(restore_history, "-cli", "spark-cli")
    args = [restore_history.log_dir, "--target-bootstrap", restore_target_broker.bootstrap,
            "--topics", ",".join(opts["topics"]), "--restore-id", opts["restore_id"],
            "--transaction-records", str(opts["transaction_records"]), "--groups-as-of", str(opts["groups_as_of"]),
            "--offset-map", str(work / "map.csv"), "--groups-csv", str(work / "groups.csv"),
            "--share-groups-csv", str(work / "shares.csv"), "--verify"]
    for source, target in opts["rename"].items():
        args += ["--rename", f"{source}={target}"]
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "kafkarec", "restore", *args], capture_output=True, text=True,
                         timeout=300)
    seconds = time.monotonic() - started
    assert run.returncode == 0, run.stderr + run.stdout
    return work, run.stdout, seconds


def _csv_rows(path, suffix):
    """A CSV file's rows, the target topics' ``suffix`` taken off (the two restores' target topics
    differ by it alone)."""
    with open(path, newline="") as fh:
        return [[cell[:-len(suffix)] if cell.endswith(suffix) else cell for cell in row] for row in csv.reader(fh)]


def test_the_target_holds_what_the_command_writes_offset_for_offset(runs, command, restore_history,
                                                                    restore_target_broker):
    b = restore_target_broker.bootstrap
    counts = {}
    for topic in RESTORED_TOPICS:
        parts = range(3) if topic == RH.ORDERS else [0]
        source = RH.consume_committed(restore_history.bootstrap, topic, parts)
        spark = RH.consume_committed(b, topic + "-spark", parts)
        cli = RH.consume_committed(b, topic + "-cli", parts)
        assert all(source[p] for p in parts), topic
        assert spark == cli, topic                      # offsets, keys, values, timestamps, headers
        assert {p: [r[1:] for r in rs] for p, rs in spark.items()} == \
            {p: [r[1:] for r in rs] for p, rs in source.items()}, topic
        counts[topic] = sum(len(rs) for rs in source.values())
    folder, done = runs
    first = {(s["topic"], s["partition"]): s for s in done[0]["partitions"]}
    assert sorted(first) == sorted([(RH.ORDERS, p) for p in range(3)] + [(RH.COMPACTED, 0), (RH.CRASH, 0)])
    # rs-crash: the earlier part-way run wrote [0, 40) under the same restore id; the Spark task resumed
    assert (first[(RH.CRASH, 0)]["status"], first[(RH.CRASH, 0)]["records"]) == ("resumed", 60)
    assert all(s["status"] == "written" for k, s in first.items() if k[0] != RH.CRASH)
    assert sum(s["records"] for s in first.values()) == sum(counts.values()) - 40
    assert sorted(done[0]["created"]) == sorted(t + "-spark" for t in RESTORED_TOPICS if t != RH.CRASH)
    # the command's lines say the same partitions and ranges
    _, stdout, _ = command
    for s in first.values():
        assert f"{s['topic']}-{s['partition']} -> {s['topic']}-cli-{s['partition']} [{s['start']}, {s['end']}) " \
               in stdout, (s, stdout)
    assert f"verified: {sum(counts.values())} records, 0 group positions, 0 share group positions, 0 problem(s)" \
        in stdout


def test_the_offset_map_and_the_groups_are_the_commands(runs, command, restore_history):
    folder, done = runs
    work, _, _ = command
    for name in ("map.csv", "groups.csv", "shares.csv"):
        spark = _csv_rows(folder / "run-0" / name, "-spark")
        assert spark == _csv_rows(work / name, "-cli"), name
        # the re-run rebuilt the same map from the target, and wrote the same groups
        assert _csv_rows(folder / "run-1" / name, "-spark") == spark, name
    # as of the history's as_of: rs-classic's first commit (rs-848 committed later)
    groups = _csv_rows(folder / "run-0" / "groups.csv", "-spark")
    assert {(g, t, int(p)) for g, t, p, _ in groups} == \
        {k for k in restore_history.positions_as_of if k[0] == "rs-classic"}
    assert done[0]["groups"] == len(groups)


def test_the_target_checks_against_the_source(runs, restore_history, restore_target_broker):
    from kafkarec import restore as R
    folder, _ = runs
    spec = R.RestoreSpec.of(restore_history.log_dir, restore_target_broker.bootstrap,
                            **restore_options(restore_history, "-spark", "spark"))
    omap = R.OffsetMap.read(str(folder / "run-0" / "map.csv"))
    report = R.verify(spec, R.plan(spec), omap)
    assert report.ok and report.records > 0, report.problems


def test_a_second_run_writes_nothing(runs):
    _, done = runs
    again = done[1]
    assert again["created"] == []
    assert [(s["status"], s["records"]) for s in again["partitions"]] == [("done", 0)] * 5
