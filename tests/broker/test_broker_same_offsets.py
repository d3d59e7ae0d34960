"""``kafkarec restore --same-offsets`` between two real KRaft brokers of their own: a source
written by Kafka's Java clients (idempotent and transactional producers: committed, aborted and one
open transaction; several segments; deleteRecords; a group's commit), stopped cleanly, and a fresh
target.  After prepare (target running), write (target stopped) and groups (target started again),
Kafka's own consumer and admin answers on the target are the source's at the source's offsets, the
open transaction is aborted (not served as committed, not holding the LSO), a group resumes where it
stood and commits, and new idempotent and transactional producers append at the next offset."""
import os
import subprocess
import sys
import time

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


def _records(bootstrap, partition, isolation):
    """``[(offset, key, value)]`` a consumer of ``isolation`` reads from the partition's start to its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "so-reader", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "log_level": 0})
    try:
        c.assign([TopicPartition(TOPIC, partition, OFFSET_BEGINNING)])
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


def _offsets(bootstrap, partition):
    """(earliest, latest, last stable offset) by ListOffsets."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    a = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    tp = TopicPartition(TOPIC, partition)

    def ask(spec, iso):
        f = a.list_offsets({tp: spec}, isolation_level=iso, request_timeout=30)
        return list(f.values())[0].result(timeout=40).offset
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


def _resume(bootstrap, partition):
    """A member of GROUP on the partition: its first record's offset, then its commit; then a
    second member resumes from that commit (its leader epoch validated): its first offset."""
    from confluent_kafka import Consumer, TopicPartition
    firsts = []
    for _ in range(2):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                      "isolation.level": "read_committed", "auto.offset.reset": "error", "log_level": 0})
        try:
            c.assign([TopicPartition(TOPIC, partition)])
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


def test_same_offsets_restore_serves_the_source_at_its_offsets(tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from support.brokers.kafka_broker import KafkaBroker
    with KafkaBroker(str(tmp_path / "source")) as src, KafkaBroker(str(tmp_path / "target")) as dst:
        open_offsets = _write_source(src)
        source = {p: {iso: _records(src.bootstrap, p, iso) for iso in ("read_committed", "read_uncommitted")}
                  for p in (0, 1)}
        source_offsets = {p: _offsets(src.bootstrap, p) for p in (0, 1)}
        src.stop()
        segments = [n for n in os.listdir(os.path.join(src.log_dir, f"{TOPIC}-0")) if n.endswith(".log")]
        assert len(segments) >= 3

        common = [src.log_dir, "--topics", TOPIC, "--target-log-dir", dst.log_dir]
        r = _cli(*common, "--same-offsets", "prepare", "--target-bootstrap", dst.bootstrap)
        assert r.returncode == 0, r.stderr
        r = _cli(*common, "--same-offsets", "write")
        assert r.returncode == 1 and "a broker is running on it" in r.stderr, r.stderr
        dst.stop()
        r = _cli(*common, "--same-offsets", "write")
        assert r.returncode == 0, r.stderr
        lines = {ln.split(" ")[0]: ln for ln in r.stdout.splitlines()}
        assert "abort markers at none" in lines[f"{TOPIC}-1"]
        assert f"abort markers at {source_offsets[0][1]} (producer " in lines[f"{TOPIC}-0"]
        assert "producer ids 0->4611686018427387904" in r.stdout
        assert not os.path.exists(os.path.join(dst.log_dir, ".kafka_cleanshutdown"))
        log_start = os.path.getsize(dst.server_log)
        dst.start()
        r = _cli(*common, "--same-offsets", "groups", "--target-bootstrap", dst.bootstrap)
        assert r.returncode == 0, r.stderr + r.stdout
        assert f"{GROUP} {TOPIC}-0 25 -> {TOPIC}-0 25" in r.stdout

        with open(dst.server_log, errors="replace") as fh:
            fh.seek(log_start)
            log = fh.read()
        for bad in ("marked stray", "Truncating", "caused truncation"):
            assert bad not in log, bad
        # recovered, its side files rebuilt from the batches, not trusted
        assert "since no clean shutdown file was found" in log
        assert f"Recovering unflushed segment 0. 0 recovered for {TOPIC}-0" in log

        # Kafka's consumer: the source's records at the source's offsets; the open transaction aborted
        for p in (0, 1):
            target = {iso: _records(dst.bootstrap, p, iso) for iso in ("read_committed", "read_uncommitted")}
            assert target["read_uncommitted"] == source[p]["read_uncommitted"]
            lso = source_offsets[p][2]
            expected = source[p]["read_committed"] + [
                r for r in source[p]["read_uncommitted"] if r[0] >= lso and r[0] not in (open_offsets if p == 0 else ())]
            assert target["read_committed"] == expected
            earliest, latest, _ = source_offsets[p]
            markers = 1 if p == 0 else 0
            assert _offsets(dst.bootstrap, p) == (earliest, latest + markers, latest + markers)
        assert source_offsets[1][0] == 7
        assert source_offsets[0][2] == open_offsets[0]      # the source's LSO held by the open transaction

        # the group resumes where it stood, commits, and resumes again from its own commit
        firsts = _resume(dst.bootstrap, 0)
        committed_source = [o for o, _, _ in source[0]["read_committed"] if o >= 25]
        assert firsts == [committed_source[0], committed_source[3]]

        # new producers of the target's own ids append at the next offset, read_committed
        end = _offsets(dst.bootstrap, 0)[1]
        idem = Producer({"bootstrap.servers": dst.bootstrap, "enable.idempotence": True, "log_level": 0})
        acked = []
        idem.produce(TOPIC, b"new idempotent", partition=0, on_delivery=lambda e, m: acked.append((e, m.offset())))
        idem.flush(30)
        assert acked == [(None, end)]
        tx = Producer({"bootstrap.servers": dst.bootstrap, "transactional.id": "so-tx", "log_level": 0})
        tx.init_transactions(30)
        tx.begin_transaction()
        tx.produce(TOPIC, b"new transactional", partition=0,
                   on_delivery=lambda e, m: acked.append((e, m.offset())))
        tx.commit_transaction(30)
        assert acked[1] == (None, end + 1)
        tail = _records(dst.bootstrap, 0, "read_committed")[-2:]
        assert [(o, v) for o, _, v in tail] == [(end, b"new idempotent"), (end + 1, b"new transactional")]
