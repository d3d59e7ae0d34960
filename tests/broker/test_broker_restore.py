"""``kafkarec restore`` between two real KRaft brokers: the session's broker (A, the source:
``support.restore_history`` writes its history, its log dir is read) and a second one
(``restore_target_broker``, B).  Records, groups resumed on B by real consumers (0 duplicates,
0 missing), re-runs, a SIGKILL mid-restore, and the refusals."""
import os
import signal
import subprocess
import sys
import time

import pytest

from support import restore_history as RH

pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def history(kafka_broker):
    return RH.write(kafka_broker)


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "kafkarec", "restore", *args], capture_output=True, text=True,
                          timeout=timeout)


def _committed(bootstrap, topic, partition, start=0):
    return [r[1:] for r in RH.consume_committed(bootstrap, topic, partition, start)]


def test_restore_records_groups_and_rerun(history, restore_target_broker, tmp_path):
    a, b = history, restore_target_broker.bootstrap
    omap_file = tmp_path / "map.csv"
    run = _cli(a.log_dir, "--target-bootstrap", b, "--topics", f"{RH.ORDERS},{RH.COMPACTED}",
               "--rename", f"{RH.COMPACTED}=rs-compacted-b", "--restore-id", "e2e", "--offset-map", str(omap_file),
               "--verify")
    assert run.returncode == 0, run.stderr + run.stdout
    assert "verified:" in run.stdout and " 0 problem(s)" in run.stdout, run.stdout
    # every committed record, in order, keys, values, headers, timestamps kept; nothing aborted
    for topic, target, parts in ((RH.ORDERS, RH.ORDERS, 3), (RH.COMPACTED, "rs-compacted-b", 1)):
        for p in range(parts):
            src = _committed(a.bootstrap, topic, p)
            assert src and _committed(b, target, p) == src, (topic, p)
    # the topics were created with the source's partition counts and configs
    from confluent_kafka.admin import AdminClient, ConfigResource
    admin = AdminClient({"bootstrap.servers": b, "log_level": 0})
    assert len(admin.list_topics(timeout=30).topics["rs-compacted-b"].partitions) == 1
    assert len(admin.list_topics(timeout=30).topics[RH.ORDERS].partitions) == 3
    res = ConfigResource(ConfigResource.Type.TOPIC, "rs-compacted-b")
    configs = list(admin.describe_configs([res]).values())[0].result(30)
    assert configs["cleanup.policy"].value == "compact"
    # the offset map file: a hole (an aborted record) maps to the next restored record
    from kafkarec.restore import OffsetMap
    omap = OffsetMap.read(str(omap_file))
    aborted0 = a.aborted[(RH.ORDERS, 0)]
    after = omap.target_offset(RH.ORDERS, 0, aborted0[-1] + 2)       # past the abort marker
    assert omap.target_offset(RH.ORDERS, 0, aborted0[0]) == after
    # each group resumes on B: what it reads there is A's committed records after its position
    for group in RH.GROUPS:
        got = RH.resume_group(b, group, [RH.ORDERS], expected=0,
                              protocol="consumer" if group == "rs-848" else "classic")
        want = []
        for p in range(3):
            want += [(RH.ORDERS, p, k, v) for _, k, v, _, _ in
                     RH.consume_committed(a.bootstrap, RH.ORDERS, p, a.positions[(group, RH.ORDERS, p)])]
        assert sorted(got, key=repr) == sorted(want, key=repr), group      # 0 duplicates, 0 missing
    # a re-run of the finished restore writes nothing
    ends = {p: _committed(b, RH.ORDERS, p) for p in range(3)}
    again = _cli(a.log_dir, "--target-bootstrap", b, "--topics", f"{RH.ORDERS},{RH.COMPACTED}",
                 "--rename", f"{RH.COMPACTED}=rs-compacted-b", "--restore-id", "e2e", "--no-groups")
    assert again.returncode == 0, again.stderr
    assert all(line.endswith("0 records done") for line in again.stdout.splitlines()), again.stdout
    assert {p: _committed(b, RH.ORDERS, p) for p in range(3)} == ends


def test_groups_as_of_an_earlier_time_as_csv(history, restore_target_broker, tmp_path):
    from kafkarec import restore as R
    spec = R.RestoreSpec.of(history.log_dir, restore_target_broker.bootstrap, topics=[RH.ORDERS],
                            rename={RH.ORDERS: "rs-orders-asof"}, restore_id="asof")
    result = R.restore(spec)
    positions = R.translate_groups(spec, result.plan, result.offset_map, as_of=history.as_of)
    found = {(g.group, g.topic, g.partition): g.source_offset for g in positions}
    assert {k: v for k, v in found.items() if k[0] == "rs-classic"} == \
        {k: v for k, v in history.positions_as_of.items() if k[0] == "rs-classic"}
    R.write_groups_csv(positions, str(tmp_path / "groups.csv"))
    lines = (tmp_path / "groups.csv").read_text().splitlines()
    assert f"rs-classic,rs-orders-asof,0,{result.offset_map.target_offset(RH.ORDERS, 0, 2)}" in lines


def test_sigkill_mid_restore_then_rerun_exactly_once(history, restore_target_broker):
    b = restore_target_broker.bootstrap
    args = [history.log_dir, "--target-bootstrap", b, "--topics", RH.CRASH, "--rename", f"{RH.CRASH}=rs-crash-b",
            "--restore-id", "crash", "--transaction-records", "1", "--no-groups"]
    proc = subprocess.Popen([sys.executable, "-m", "kafkarec", "restore", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    from kafkarec import restore as R
    spec = R.RestoreSpec.of(history.log_dir, b, topics=[RH.CRASH], rename={RH.CRASH: "rs-crash-b"},
                            restore_id="crash")
    from kafkarec.restore import target
    deadline = time.monotonic() + 60
    try:
        while True:     # until some transactions are committed (the restore's own progress says so)
            assert proc.poll() is None, "the restore ended before it was killed: " + proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no progress committed within 60 s"
            done = target.progress(spec, [("rs-crash-b", 0)]).get(("rs-crash-b", 0), 0) if \
                "rs-crash-b" in target.admin(spec).list_topics(timeout=30).topics else 0
            if done >= 20:
                break
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert done < 150
    rerun = _cli(*args, "--verify")
    assert rerun.returncode == 0, rerun.stderr + rerun.stdout
    assert "rs-crash-0 -> rs-crash-b-0 [0, 150)" in rerun.stdout and "resumed" in rerun.stdout, rerun.stdout
    src, dst = _committed(history.bootstrap, RH.CRASH, 0), _committed(b, "rs-crash-b", 0)
    assert dst == src and len(dst) == 150          # each record once
    # the offset map rebuilt from the target's log equals the one the rerun made
    assert R.offset_map(spec).records(RH.CRASH, 0) == 150


def test_refuses_a_target_partition_holding_other_records(history, restore_target_broker):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    b = restore_target_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": b, "log_level": 0})
    for f in admin.create_topics([NewTopic("rs-occupied", 1, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": b, "log_level": 0})
    p.produce("rs-occupied", value=b"someone else's")
    assert p.flush(30) == 0
    run = _cli(history.log_dir, "--target-bootstrap", b, "--topics", RH.BAD, "--rename", f"{RH.BAD}=rs-occupied",
               "--restore-id", "occupied", "--no-groups")
    assert run.returncode == 1, run.stderr
    assert "rs-occupied-0: holds records and no progress of restore 'occupied'" in run.stderr, run.stderr


def test_refuses_a_group_position_past_the_history_before_writing(history, restore_target_broker):
    b = restore_target_broker.bootstrap
    run = _cli(history.log_dir, "--target-bootstrap", b, "--topics", RH.BAD, "--rename", f"{RH.BAD}=rs-bad-b",
               "--restore-id", "bad")
    assert run.returncode == 1, run.stderr
    assert "group rs-bad-group, rs-bad-0: the source position 40 of rs-bad-0 is outside the history " \
           "(its log ends at 3)" in run.stderr, run.stderr
    from confluent_kafka.admin import AdminClient
    topics = AdminClient({"bootstrap.servers": b, "log_level": 0}).list_topics(timeout=30).topics
    assert "rs-bad-b" not in topics          # nothing written, nothing created
