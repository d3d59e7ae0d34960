"""``kafkarec restore --same-offsets`` between two real KRaft brokers of their own: a source
written by Kafka's Java clients (idempotent and transactional producers: committed, aborted and one
open transaction; several segments; deleteRecords; a group's commit), stopped cleanly, and a fresh
target.  After prepare (target running), write (target stopped) and groups (target started again),
Kafka's own consumer and admin answers on the target are the source's at the source's offsets, the
open transaction is aborted (not served as committed, not holding the LSO), a group resumes where it
stood and commits, and new idempotent and transactional producers append at the next offset."""
import os
import re
import shutil
import subprocess
import sys
import time
from typing import NamedTuple

import pytest

pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.broker

TOPIC = "so-events"
GROUP = "so-group"
#: segments rolled often: several per partition
SEGMENTS = {"internal.segment.bytes": "16384", "segment.ms": "100"}


def _cli(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "kafkarec", "restore", *args], capture_output=True, text=True,
                          timeout=timeout)


def _records(bootstrap, partition, isolation, topic=TOPIC):
    """``[(offset, key, value)]`` a consumer of ``isolation`` reads from the partition's start to its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "so-reader", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "log_level": 0})
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        out, deadline = [], time.monotonic() + 60
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:        # _PARTITION_EOF
                    return out
                raise AssertionError(m.error())
            out.append((m.offset(), m.key(), m.value()))
        raise AssertionError("no end of partition within 60 s")
    finally:
        c.close()


def _offsets(bootstrap, partition, topic=TOPIC):
    """(earliest, latest, last stable offset) by ListOffsets (a leader moving meanwhile: asked again,
    within 60 s)."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    tp = TopicPartition(topic, partition)

    def ask(spec, iso):
        deadline = time.monotonic() + 60
        while True:
            try:
                f = a.list_offsets({tp: spec}, isolation_level=iso, request_timeout=30)
                return list(f.values())[0].result(timeout=40).offset
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
    return (ask(OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED),
            ask(OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED),
            ask(OffsetSpec.latest(), IsolationLevel.READ_COMMITTED))


def _write_source(broker):
    """The source's history; returns the open transaction's offsets."""
    from support.brokers.restore_history import JavaClients
    java = JavaClients(broker)
    try:
        java.create(TOPIC, 2, SEGMENTS)
        plain = java.producer("so-plain", **{"enable.idempotence": "true", "linger.ms": 20})
        tx = java.producer("so-tx", **{"transactional.id": "so-tx", "linger.ms": 20})
        for rnd in range(4):
            java.send(plain, [(TOPIC, p, None, f"k{rnd}-{i}".encode(), (f"v{rnd}-{i}-" + "x" * 200).encode(), None)
                              for p in (0, 1) for i in range(20)])
            java.flush(plain)
            java.transaction(tx, "begin")
            java.send(tx, [(TOPIC, p, None, f"t{rnd}".encode(), f"{'commit' if rnd % 2 else 'abort'} {rnd}".encode(),
                            None) for p in (0, 1) for _ in range(3)])
            java.flush(tx)
            java.transaction(tx, "commit" if rnd % 2 else "abort")
            time.sleep(0.15)            # segment.ms: the next round rolls a segment
        java.commit_offsets(GROUP, {(TOPIC, 0): 25, (TOPIC, 1): 30}, "classic")
        java.delete_records(TOPIC, 1, 7)
        # a transaction left open at the end (its producer never ends it; the timeout outlives the
        # test), then records of another producer past it
        late = java.producer("so-late", **{"transactional.id": "so-late", "transaction.timeout.ms": "900000"})
        java.transaction(late, "begin")
        java.send(late, [(TOPIC, 0, None, b"open", f"open {i}".encode(), None) for i in range(3)])
        open_offsets = java.flush(late)
        java.send(plain, [(TOPIC, 0, None, b"after", f"after {i}".encode(), None) for i in range(4)])
        java.flush(plain)
        # the JVM killed, as a crashed producer leaves its transaction: the Java producer's close()
        # would abort it ("Aborting incomplete transaction due to shutdown")
        java._jvm._proc.kill()
        java._jvm._proc.wait(30)
    finally:
        try:
            java.close()
        except Exception:
            pass
    return open_offsets


def _resume(bootstrap, partition, topic=TOPIC):
    """A member of GROUP on the partition: its first record's offset, then its commit; then a
    second member resumes from that commit (its leader epoch validated): its first offset."""
    from confluent_kafka import Consumer, TopicPartition
    firsts = []
    for _ in range(2):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                      "isolation.level": "read_committed", "auto.offset.reset": "error", "log_level": 0})
        try:
            c.assign([TopicPartition(topic, partition)])
            deadline = time.monotonic() + 60
            got = []
            while len(got) < 3 and time.monotonic() < deadline:
                m = c.poll(1.0)
                if m is None:
                    continue
                assert not m.error(), m.error()
                got.append(m)
            assert len(got) == 3
            firsts.append(got[0].offset())
            c.commit(message=got[-1], asynchronous=False)
        finally:
            c.close()
    return firsts


class Source(NamedTuple):
    """The source broker's history, stopped: its log dir, the open transaction's offsets, what its
    consumers read (partition -> isolation -> records) and ListOffsets answered."""
    log_dir: str
    open_offsets: list
    records: dict
    offsets: dict


@pytest.fixture(scope="module")
def so_source(tmp_path_factory):
    """One source for the module's restores: written, read, stopped cleanly (no JVM left)."""
    from support.brokers.kafka_broker import KafkaBroker
    t0 = time.monotonic()
    with KafkaBroker(str(tmp_path_factory.mktemp("so-source"))) as src:
        open_offsets = _write_source(src)
        records = {p: {iso: _records(src.bootstrap, p, iso) for iso in ("read_committed", "read_uncommitted")}
                   for p in (0, 1)}
        offsets = {p: _offsets(src.bootstrap, p) for p in (0, 1)}
        src.stop()
    segments = [n for n in os.listdir(os.path.join(src.log_dir, f"{TOPIC}-0")) if n.endswith(".log")]
    assert len(segments) >= 3
    assert offsets[1][0] == 7
    assert offsets[0][2] == open_offsets[0]      # the source's LSO held by the open transaction
    print(f"so_source: {time.monotonic() - t0:.1f} s")
    return Source(src.log_dir, open_offsets, records, offsets)


def _served_as_the_source(source, bootstrap, topic):
    """Kafka's consumer reads the source's records at the source's offsets, the open transaction
    aborted (read_committed never sees it, the LSO is the log end); ListOffsets says so."""
    for p in (0, 1):
        target = {iso: _records(bootstrap, p, iso, topic) for iso in ("read_committed", "read_uncommitted")}
        assert target["read_uncommitted"] == source.records[p]["read_uncommitted"]
        lso = source.offsets[p][2]
        opened = source.open_offsets if p == 0 else ()
        expected = source.records[p]["read_committed"] + [
            r for r in source.records[p]["read_uncommitted"] if r[0] >= lso and r[0] not in opened]
        assert target["read_committed"] == expected
        earliest, latest, _ = source.offsets[p]
        markers = 1 if p == 0 else 0
        assert _offsets(bootstrap, p, topic) == (earliest, latest + markers, latest + markers)


def _appends(bootstrap, topic):
    """New idempotent and transactional producers of the target's own ids append at the next
    offset, read_committed."""
    from confluent_kafka import Producer
    end = _offsets(bootstrap, 0, topic)[1]
    idem = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0})
    acked = []
    idem.produce(topic, b"new idempotent", partition=0, on_delivery=lambda e, m: acked.append((e, m.offset())))
    idem.flush(30)
    assert acked == [(None, end)]
    tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx", "log_level": 0})
    tx.init_transactions(60)
    tx.begin_transaction()
    tx.produce(topic, b"new transactional", partition=0, on_delivery=lambda e, m: acked.append((e, m.offset())))
    tx.commit_transaction(60)
    assert acked[1] == (None, end + 1)
    tail = _records(bootstrap, 0, "read_committed", topic)[-2:]
    assert [(o, v) for o, _, v in tail] == [(end, b"new idempotent"), (end + 1, b"new transactional")]


def _log_from(path, start):
    with open(path, errors="replace") as fh:
        fh.seek(start)
        return fh.read()


def _no_lost_records(log, topic, ends):
    """A broker's log lines since a start: no folder marked stray, no truncation below the high
    watermark or caused by a leader change, and a follower truncates only to the written end."""
    for bad in ("marked stray", "caused truncation"):
        assert bad not in log, bad
    assert not re.search(r"Truncating .* below high watermark", log)
    for part, offset in re.findall(rf"Truncating partition {re.escape(topic)}-(\d+) with TruncationState\(offset="
                                   r"(\d+)", log):
        assert int(offset) >= ends[int(part)], (part, offset)
    for part, offset in re.findall(rf"UnifiedLog partition={re.escape(topic)}-(\d+), .*\] Truncating to (\d+) "
                                   r"(?!has no effect)", log):
        assert int(offset) >= ends[int(part)], (part, offset)


def test_same_offsets_restore_serves_the_source_at_its_offsets(so_source, tmp_path):
    from support.brokers.kafka_broker import KafkaBroker
    t0 = time.monotonic()
    source = so_source
    with KafkaBroker(str(tmp_path / "target")) as dst:
        common = [source.log_dir, "--topics", TOPIC, "--target-log-dir", dst.log_dir]
        r = _cli(*common, "--same-offsets", "prepare", "--target-bootstrap", dst.bootstrap)
        assert r.returncode == 0, r.stderr
        r = _cli(*common, "--same-offsets", "write")
        assert r.returncode == 1 and "a broker is running on it" in r.stderr, r.stderr
        dst.stop()
        r = _cli(*common, "--same-offsets", "write")
        assert r.returncode == 0, r.stderr
        lines = {ln.split(" ")[0]: ln for ln in r.stdout.splitlines()}
        assert "abort markers at none" in lines[f"{TOPIC}-1"]
        assert f"abort markers at {source.offsets[0][1]} (producer " in lines[f"{TOPIC}-0"]
        assert "producer ids 0->4611686018427387904" in r.stdout
        assert not os.path.exists(os.path.join(dst.log_dir, ".kafka_cleanshutdown"))
        log_start = os.path.getsize(dst.server_log)
        dst.start()
        r = _cli(*common, "--same-offsets", "groups", "--target-bootstrap", dst.bootstrap)
        assert r.returncode == 0, r.stderr + r.stdout
        assert f"{GROUP} {TOPIC}-0 25 -> {TOPIC}-0 25" in r.stdout

        log = _log_from(dst.server_log, log_start)
        _no_lost_records(log, TOPIC, {0: source.offsets[0][1] + 1, 1: source.offsets[1][1]})
        assert "Truncating" not in log
        # recovered, its side files rebuilt from the batches, not trusted
        assert "since no clean shutdown file was found" in log
        assert f"Recovering unflushed segment 0. 0 recovered for {TOPIC}-0" in log

        _served_as_the_source(source, dst.bootstrap, TOPIC)
        # the group resumes where it stood, commits, and resumes again from its own commit
        firsts = _resume(dst.bootstrap, 0)
        committed_source = [o for o, _, _ in source.records[0]["read_committed"] if o >= 25]
        assert firsts == [committed_source[0], committed_source[3]]

        # after a restart (a clean stop this time, its side files now the broker's own) the same
        # holds: the source's records at its offsets, nothing truncated or marked stray, and the group
        # resumes from its last commit
        dst.stop()
        log_start = os.path.getsize(dst.server_log)
        dst.start()
        _served_as_the_source(source, dst.bootstrap, TOPIC)
        log = _log_from(dst.server_log, log_start)
        _no_lost_records(log, TOPIC, {0: source.offsets[0][1] + 1, 1: source.offsets[1][1]})
        assert "Truncating" not in log and "marked stray" not in log
        assert _resume(dst.bootstrap, 0) == [committed_source[6], committed_source[9]]
        _appends(dst.bootstrap, TOPIC)
    print(f"one broker: {time.monotonic() - t0:.1f} s")


def _folders(dirs, name):
    return [os.path.join(d, name) for d in dirs if os.path.isdir(os.path.join(d, name))]


def _segments(folder):
    return {n: open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder)) if n.endswith(".log")}


def test_same_offsets_into_three_brokers_every_replica_written(so_source, kafka_cluster, tmp_path):
    """Replication factor 3, node 3 with two log dirs (JBOD): every replica gets the same bytes, no
    broker truncates or marks a folder stray after the start, the consumers read the source's
    records at its offsets, and still do with the partition's leader stopped; --check proves the
    stopped target's replicas against the source and names a tampered byte."""
    from confluent_kafka.admin import AdminClient
    t0 = time.monotonic()
    source, c = so_source, kafka_cluster
    c.start()
    topic = TOPIC + "-rf3"
    dirs = c.log_dirs
    assert len(dirs) == 4
    base = [source.log_dir, "--topics", TOPIC, "--rename", f"{TOPIC}={topic}"]
    common = base + [a for d in dirs for a in ("--target-log-dir", d)]
    admin = AdminClient({"bootstrap.servers": c.bootstrap, "log_level": 0})

    # refused before any topic is created: a broker's log dirs left out; a log dir of another cluster
    node3 = set(c.node(3).log_dirs)
    r = _cli(*base, *[a for d in dirs if d not in node3 for a in ("--target-log-dir", d)], "--same-offsets",
             "prepare", "--target-bootstrap", c.bootstrap)
    assert r.returncode == 1 and "no --target-log-dir of broker 3 (brokers [1, 2, 3])" in r.stderr, r.stderr
    r = _cli(*common, "--target-log-dir", source.log_dir, "--same-offsets", "prepare", "--target-bootstrap",
             c.bootstrap)
    assert r.returncode == 1 and "not one target's log dirs" in r.stderr, r.stderr
    assert topic not in admin.list_topics(timeout=30).topics

    r = _cli(*common, "--same-offsets", "prepare", "--target-bootstrap", c.bootstrap)
    assert r.returncode == 0, r.stderr
    r = _cli(*common, "--same-offsets", "write")
    assert r.returncode == 1 and "a broker is running on it" in r.stderr, r.stderr
    c.stop()                                    # all at once
    r = _cli(*common, "--same-offsets", "write", "--evidence", str(tmp_path / "evidence.json"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("in 3 replica(s)") == 2, r.stdout
    ends = {0: source.offsets[0][1] + 1, 1: source.offsets[1][1]}
    for p in (0, 1):
        folders = _folders(dirs, f"{topic}-{p}")
        assert len({os.path.basename(os.path.dirname(os.path.dirname(f))) for f in folders}) == 3
        copies = [_segments(f) for f in folders]
        assert copies[0] and copies[0] == copies[1] == copies[2]
        epochs = [open(os.path.join(f, "leader-epoch-checkpoint"), "rb").read() for f in folders]
        assert epochs[0] == epochs[1] == epochs[2]
    # node 3's replicas in the log dir the metadata names (KIP-858): both of its dirs hold one
    assert all(_folders(c.node(3).log_dirs, f"{topic}-{p}") for p in (0, 1))

    # --check, offline against the stopped target; then against a copy with one byte changed
    given = ",".join(dirs)
    r = _cli("--check", str(tmp_path / "evidence.json"), source.log_dir, given)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^checked: 2 partition\(s\), 6 replica\(s\), \d+ batches, 0 difference\(s\)$", r.stdout, re.M)
    copy = [str(tmp_path / "copy" / str(i)) for i in range(len(dirs))]
    for d, to in zip(dirs, copy):
        shutil.copytree(d, to, ignore=shutil.ignore_patterns("__cluster_metadata-0"))
    folder = _folders(copy, f"{topic}-1")[1]
    seg = os.path.join(folder, sorted(_segments(folder))[0])
    data = bytearray(open(seg, "rb").read())
    data[100] ^= 1
    open(seg, "wb").write(data)
    r = _cli("--check", str(tmp_path / "evidence.json"), source.log_dir, ",".join(copy))
    assert r.returncode == 1
    diffs = [ln for ln in r.stdout.splitlines() if ln.startswith("difference: ")]
    assert len(diffs) == 1 and diffs[0].startswith(f"difference: {topic}-1 on broker ") and \
        f"({os.path.dirname(folder)}): {os.path.basename(seg)} byte " in diffs[0], r.stdout

    starts = {n.config["node.id"]: os.path.getsize(n.server_log) for n in c.nodes}
    c.start()
    r = _cli(*common, "--same-offsets", "groups", "--target-bootstrap", c.bootstrap)
    assert r.returncode == 0, r.stderr + r.stdout
    assert f"{GROUP} {TOPIC}-0 25 -> {topic}-0 25" in r.stdout
    _served_as_the_source(source, c.bootstrap, topic)
    for n in c.nodes:
        _no_lost_records(_log_from(n.server_log, starts[n.config["node.id"]]), topic, ends)

    # the leader of partition 0 stopped: another replica serves the same
    leader = admin.list_topics(topic, timeout=30).topics[topic].partitions[0].leader
    starts = {n.config["node.id"]: os.path.getsize(n.server_log) for n in c.nodes}
    c.stop(c.node(leader))
    _served_as_the_source(source, c.bootstrap, topic)
    assert admin.list_topics(topic, timeout=30).topics[topic].partitions[0].leader != leader
    c.start()
    for n in c.nodes:
        _no_lost_records(_log_from(n.server_log, starts[n.config["node.id"]]), topic, ends)
    firsts = _resume(c.bootstrap, 0, topic)
    committed_source = [o for o, _, _ in source.records[0]["read_committed"] if o >= 25]
    assert firsts == [committed_source[0], committed_source[3]]
    _appends(c.bootstrap, topic)
    print(f"three brokers: {time.monotonic() - t0:.1f} s")


def test_same_offsets_from_an_object_store_copy_and_what_prepare_refuses(so_source, s3, tmp_path):
    """The source's log dir copied to an object store (SeaweedFS): the restore reads it through the
    URI, and the target serves the source's records at its offsets; --check reads the same URI.
    Before that, prepare refuses (exit 1, one line, no journal written) a target topic with another
    partition count, one holding records, and a log dir that is not the target's."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafkarec.restore.same_offsets import JOURNAL
    from support.brokers.kafka_broker import KafkaBroker
    t0 = time.monotonic()
    source = so_source
    s3.upload_dir(source.log_dir, "so-source", "broker-1")
    uri = "s3://so-source/broker-1"
    opts = [a for k, v in s3.options().items() for a in ("--storage-option", f"{k}={v}")]
    with KafkaBroker(str(tmp_path / "target")) as dst:
        admin = AdminClient({"bootstrap.servers": dst.bootstrap, "log_level": 0})
        for f in admin.create_topics([NewTopic("so-three", 3, 1), NewTopic("so-full", 2, 1)]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": dst.bootstrap, "log_level": 0})
        p.produce("so-full", b"there already", partition=1)
        p.flush(30)
        for args, said in [
                (("--rename", f"{TOPIC}=so-three", "--target-log-dir", dst.log_dir),
                 "so-three: has 3 partition(s), the source 2"),
                (("--rename", f"{TOPIC}=so-full", "--target-log-dir", dst.log_dir),
                 "already holds records (its log end is 1)"),
                (("--target-log-dir", source.log_dir), "not the target's log dir")]:
            r = _cli(uri, *opts, "--topics", TOPIC, *args, "--same-offsets", "prepare", "--target-bootstrap",
                     dst.bootstrap)
            assert r.returncode == 1 and said in r.stderr and len(r.stderr.splitlines()) == 1, (args, r.stderr)
            assert not os.path.exists(os.path.join(dst.log_dir, JOURNAL))
            assert not os.path.exists(os.path.join(source.log_dir, JOURNAL))
        assert TOPIC not in admin.list_topics(timeout=30).topics

        common = [uri, *opts, "--topics", TOPIC, "--target-log-dir", dst.log_dir]
        r = _cli(*common, "--same-offsets", "prepare", "--target-bootstrap", dst.bootstrap)
        assert r.returncode == 0, r.stderr
        dst.stop()
        r = _cli(*common, "--same-offsets", "write", "--evidence", str(tmp_path / "evidence.json"))
        assert r.returncode == 0, r.stderr
        r = _cli("--check", str(tmp_path / "evidence.json"), uri, dst.log_dir, *opts)
        assert r.returncode == 0 and r.stdout.rstrip().endswith(", 0 difference(s)"), r.stdout + r.stderr
        log_start = os.path.getsize(dst.server_log)
        dst.start()
        r = _cli(*common, "--same-offsets", "groups", "--target-bootstrap", dst.bootstrap)
        assert r.returncode == 0, r.stderr + r.stdout
        assert f"{GROUP} {TOPIC}-0 25 -> {TOPIC}-0 25" in r.stdout
        _no_lost_records(_log_from(dst.server_log, log_start), TOPIC, {0: source.offsets[0][1] + 1,
                                                                       1: source.offsets[1][1]})
        _served_as_the_source(source, dst.bootstrap, TOPIC)
    print(f"object store: {time.monotonic() - t0:.1f} s")


def test_same_offsets_from_a_tiered_source_makes_remote_segments_local(tmp_path):
    """A source broker with Kafka's LocalTieredStorage whose first segments are remote only
    (``__remote_log_metadata`` says where): restored with ``--tiered-storage``, every offset from 0
    is a local segment on the target, which serves the source's records at their offsets."""
    from support.brokers import tiered_topic
    from support.brokers.kafka_broker import KafkaBroker
    t0 = time.monotonic()
    topic = tiered_topic.TOPIC
    with KafkaBroker(str(tmp_path / "source"), tiered_storage=True) as src:
        from support.brokers.restore_history import JavaClients
        java = JavaClients(src)
        try:
            java.create(topic, 1, dict(tiered_topic.CONFIG))
        finally:
            java.close()
        tiered_topic.write(src.bootstrap)
        tiered_topic.wait_tiered(src)
        records = _records(src.bootstrap, 0, "read_uncommitted", topic)
        offsets = _offsets(src.bootstrap, 0, topic)
        src.stop()
    local = sorted(n for n in os.listdir(src.partition_dir(topic)) if n.endswith(".log"))
    assert int(local[0][:20]) > 0 and offsets[0] == 0 and records[0][0] == 0
    with KafkaBroker(str(tmp_path / "target")) as dst:
        common = [src.log_dir, "--tiered-storage", src.remote_dir, "--topics", topic, "--target-log-dir",
                  dst.log_dir]
        r = _cli(*common, "--same-offsets", "prepare", "--target-bootstrap", dst.bootstrap)
        assert r.returncode == 0, r.stderr
        dst.stop()
        r = _cli(*common, "--same-offsets", "write", "--evidence", str(tmp_path / "evidence.json"))
        assert r.returncode == 0, r.stderr
        written = sorted(n for n in os.listdir(dst.partition_dir(topic)) if n.endswith(".log"))
        assert written[0] == f"{0:020d}.log" and set(local) <= set(written) and len(written) > len(local)
        r = _cli("--check", str(tmp_path / "evidence.json"), src.log_dir, dst.log_dir, "--tiered-storage",
                 src.remote_dir)
        assert r.returncode == 0 and r.stdout.rstrip().endswith(" 0 difference(s)"), r.stdout + r.stderr
        log_start = os.path.getsize(dst.server_log)
        dst.start()
        r = _cli(*common, "--same-offsets", "groups", "--target-bootstrap", dst.bootstrap, "--no-groups")
        assert r.returncode == 0, r.stderr + r.stdout
        _no_lost_records(_log_from(dst.server_log, log_start), topic, {0: offsets[1]})
        assert _records(dst.bootstrap, 0, "read_uncommitted", topic) == records
        assert _offsets(dst.bootstrap, 0, topic) == offsets
    print(f"tiered source: {time.monotonic() - t0:.1f} s")
