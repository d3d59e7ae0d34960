"""kafkarec restore against MirrorMaker 2 on the same history, one run (issue 51, "side by side").

    .venv/bin/python benchmarks/bench_restore_mm2.py                         # 60k records
    .venv/bin/python benchmarks/bench_restore_mm2.py --records 200000 --json out/bench_restore_mm2.json

Three Kafka KRaft brokers of jvm/kafka/pom.xml (tests/support/brokers/kafka_broker.py), each in a temp folder,
never more than two at once: the source **A**, **B1** (MirrorMaker 2's target) and **B2** (kafkarec's
target).  Each tool writes into a broker of its own, started the same way and empty but for the target
topics, created alike on both beforehand (same names and partitions, ``cleanup.policy=delete``,
``retention.ms=-1``: neither target's cleaner removes a record before the groups resume, and MM2's
``IdentityReplicationPolicy`` and kafkarec's restore both write the source's topic names).

1. A's history, written in rounds through librdkafka (confluent-kafka), ``--records`` in all over three
   topics of four partitions: ``mm-events`` (each round through another codec: none, gzip, snappy, lz4,
   zstd), ``mm-tx`` (zstd, transactions, one in three aborted), ``mm-compacted`` (gzip,
   ``cleanup.policy=compact`` with small segments, a small key space and tombstones; cleaned by A's
   cleaner while written, and waited for until cleaned up to the active segments).  After each round the
   groups commit (confluent-kafka consumers committing positions near the partitions' ends): six classic
   groups, some of which stop committing after an early round (idle long before any copy), and one
   consumer-protocol (KIP-848) group.  What each group should read is then known from A itself: A's
   committed records (a read_committed consumer) at or after the group's committed position.
2. **MirrorMaker 2** (``org.apache.kafka.connect.mirror.MirrorMaker``, dedicated mode, connect-mirror of
   jvm/mirror/pom.xml) mirrors A to B1: ``IdentityReplicationPolicy``, group offsets synced, checkpoints
   and syncs every second, A's consumer ``read_committed`` (otherwise MM2 copies aborted records as if
   committed: the comparison is about positions), ``offset.lag.max`` at its default (100).  Copy time:
   from the JVM's start until B1 holds every committed record of A (bounded); then the wait (bounded)
   until the groups' offsets on B1 have not changed for a while; MM2 is stopped.
3. A is stopped (its log dir is final) and **kafkarec restore** (the command line, defaults but
   ``--restore-id``) restores it into B2, translating every group as of the end of the history.
4. For every group and each target: a consumer of that group (read_committed) resumes from the group's
   committed positions on the target (no committed position: ``auto.offset.reset=latest``, Kafka's default)
   and reads to the end.  Records are compared with what it should read by (topic, partition, timestamp,
   key, value), unique in the history: **duplicates** (read again, or twice), **missing**, and **foreign**
   (records that are not committed records of A at all).
5. Speed: rows/s over the copy's wall time, the copier's CPU-seconds (MM2: its JVM's utime+stime from
   /proc; kafkarec: the restore process's) and the target broker's CPU-seconds during the copy.  The machine
   is shared: the load average is printed, and the figures are loaded-machine figures.

Every broker and the MM2 JVM are stopped at the end, whatever happens (try/finally; the brokers are
also killed when this process dies).  kafkarec showing any duplicate or missing record exits 1.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

MIRROR_MODULE = "jvm/mirror"
MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
PARTITIONS = 4
EVENTS, TX, COMPACTED = "mm-events", "mm-tx", "mm-compacted"
TOPICS = (EVENTS, TX, COMPACTED)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ROUNDS = 10
#: (group, protocol, topics, the last round it commits after): some go idle early
GROUPS = (
    ("g-early", "classic", TOPICS, 1),
    ("g-mid", "classic", TOPICS, 4),
    ("g-late", "classic", TOPICS, ROUNDS - 1),
    ("g-events", "classic", (EVENTS,), ROUNDS - 1),
    ("g-tx", "classic", (TX,), 6),
    ("g-compacted", "classic", (COMPACTED,), ROUNDS - 1),
    ("g-848", "consumer", (EVENTS, TX), ROUNDS - 1),
)
#: the rounds after which the consumer-protocol group commits (each commit is a join of the group)
CONSUMER_PROTOCOL_ROUNDS = (2, 5, ROUNDS - 1)
BASE_TS = (int(time.time()) - 3600) * 1000       # within the default 7-day retention

Key = Tuple[str, int, int, Optional[bytes], Optional[bytes]]     # topic, partition, timestamp, key, value


class BenchError(RuntimeError):
    """A step did not finish within its bound, or a component failed; the message says which."""


# --- A's history -------------------------------------------------------------------------------------

def _producer(bootstrap: str, **conf):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all", "log_level": 0,
                     "queue.buffering.max.messages": 1_000_000, **conf})


def _produce(p, topic: str, i: int, key: Optional[bytes], value: Optional[bytes]) -> None:
    while True:
        try:
            p.produce(topic, key=key, value=value, partition=i % PARTITIONS, timestamp=BASE_TS + i)
            return
        except BufferError:
            p.poll(0.05)


def _flush(p, what: str) -> None:
    if p.flush(120):
        raise BenchError(f"{what}: records not delivered within 120 s")


def _value(topic: str, i: int) -> bytes:
    return (f"{topic} record {i} ".encode() * 8)[:100]


def _ends(consumer, topics: Sequence[str], timeout: float = 60) -> Dict[Tuple[str, int], int]:
    """Each partition's high watermark; a partition whose leader is not known yet (a topic just
    created) is asked again, within ``timeout`` s."""
    from confluent_kafka import KafkaException, TopicPartition
    deadline = time.monotonic() + timeout
    out: Dict[Tuple[str, int], int] = {}
    for t in topics:
        for p in range(PARTITIONS):
            while (t, p) not in out:
                try:
                    out[(t, p)] = consumer.get_watermark_offsets(TopicPartition(t, p), timeout=30, cached=False)[1]
                except KafkaException as e:
                    if time.monotonic() > deadline:
                        raise BenchError(f"{t}-{p}: no high watermark within {timeout:.0f} s ({e})") from None
                    time.sleep(0.2)
    return out


def _commit(bootstrap: str, group: str, protocol: str, offsets: Dict[Tuple[str, int], int]) -> None:
    """``group`` commits ``offsets``: a classic group through a consumer that commits positions it was
    assigned (as a consumer that manages its partitions itself does); the consumer-protocol group as a
    member of the group (subscribed, assigned, then commit)."""
    from confluent_kafka import Consumer, TopicPartition
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "log_level": 0}
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)
    try:
        if protocol == "consumer":
            c.subscribe(sorted({t for t, _ in offsets}))
            deadline = time.monotonic() + 60
            while len(c.assignment()) < len(offsets):
                if time.monotonic() > deadline:
                    raise BenchError(f"group {group} got no assignment of {len(offsets)} partitions within 60 s")
                c.poll(0.2)
        else:
            c.assign(tps)
        c.commit(offsets=tps, asynchronous=False)
    finally:
        c.close()


def write_history(broker, records: int, seed: int) -> None:
    from confluent_kafka import Consumer
    from support.brokers.produce import SMALL_SEGMENT, TopicInfo, active_segment_base, create_topics, wait_cleaned, \
        wait_stable
    create_topics(broker.bootstrap, [
        TopicInfo(EVENTS, PARTITIONS, {}, "confluent-kafka"),
        TopicInfo(TX, PARTITIONS, {}, "confluent-kafka"),
        TopicInfo(COMPACTED, PARTITIONS, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                          "min.compaction.lag.ms": "0", **SMALL_SEGMENT}, "confluent-kafka")])
    per_topic = max(records // len(TOPICS), ROUNDS * PARTITIONS * 4)
    per_round = per_topic // ROUNDS
    keyspace = max(40, per_topic // 8)
    rng = random.Random(seed)
    plain = {codec: _producer(broker.bootstrap, **{"compression.type": codec}) for codec in CODECS}
    compacted = _producer(broker.bootstrap, **{"compression.type": "gzip"})
    tx = _producer(broker.bootstrap, **{"transactional.id": "mm-bench-writer", "compression.type": "zstd"})
    tx.init_transactions(60)
    watch = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "mm-bench-watch", "log_level": 0})
    n_tx = 0
    try:
        for rnd in range(ROUNDS):
            first, last = rnd * per_round, (rnd + 1) * per_round
            p = plain[CODECS[rnd % len(CODECS)]]
            for i in range(first, last):
                _produce(p, EVENTS, i, b"ek-%d" % i, _value(EVENTS, i))
            for chunk in range(4):       # four transactions a round
                tx.begin_transaction()
                for i in range(first + chunk * per_round // 4, first + (chunk + 1) * per_round // 4):
                    _produce(tx, TX, i, b"tk-%d" % i, _value(TX, i))
                tx.flush(120)
                (tx.abort_transaction if n_tx % 3 == 2 else tx.commit_transaction)(60)
                n_tx += 1
            for i in range(first, last):
                key = b"ck-%d" % (i % keyspace)
                _produce(compacted, COMPACTED, i, key, None if i % 13 == 0 else _value(COMPACTED, i))
            _flush(p, EVENTS)
            _flush(compacted, COMPACTED)
            ends = _ends(watch, TOPICS)
            lag = 2 * per_round // PARTITIONS
            for group, protocol, topics, last_round in GROUPS:
                if rnd > last_round or (protocol == "consumer" and rnd not in CONSUMER_PROTOCOL_ROUNDS):
                    continue
                _commit(broker.bootstrap, group, protocol,
                        {(t, q): rng.randint(max(0, ends[(t, q)] - lag), ends[(t, q)])
                         for t in topics for q in range(PARTITIONS)})
        wait_stable(broker.bootstrap, TX, range(PARTITIONS))
        wait_cleaned(broker.log_dir, COMPACTED, timeout=120, partitions=range(PARTITIONS),
                     through={q: active_segment_base(broker.log_dir, COMPACTED, q) for q in range(PARTITIONS)})
    finally:
        watch.close()


def committed_records(bootstrap: str) -> Dict[Tuple[str, int], List[Tuple[int, Key]]]:
    """A's committed records per partition: ``(offset, identity)`` in offset order."""
    from support.brokers.restore_history import consume_committed
    out: Dict[Tuple[str, int], List[Tuple[int, Key]]] = {}
    for topic in TOPICS:
        for part, rows in consume_committed(bootstrap, topic, range(PARTITIONS), timeout=300).items():
            out[(topic, part)] = [(off, (topic, part, ts, key, value)) for off, key, value, ts, _ in rows]
    return out


def group_offsets(bootstrap: str) -> Dict[str, Dict[Tuple[str, int], int]]:
    """Each group's committed positions on a cluster (partitions without one left out)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    out: Dict[str, Dict[Tuple[str, int], int]] = {}
    for group, *_ in GROUPS:
        f = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=30)[group]
        out[group] = {(tp.topic, tp.partition): tp.offset for tp in f.result(60).topic_partitions
                      if tp.offset >= 0 and tp.topic in TOPICS}
    return out


# --- the targets ---------------------------------------------------------------------------------------

def create_target_topics(bootstrap: str) -> None:
    from support.brokers.produce import TopicInfo, create_topics
    create_topics(bootstrap, [TopicInfo(t, PARTITIONS, {"cleanup.policy": "delete", "retention.ms": "-1"},
                                        "confluent-kafka") for t in TOPICS])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads) so far, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mm2_properties(path: str, source: str, target: str) -> None:
    props = {
        "clusters": "A, B",
        "A.bootstrap.servers": source,
        "B.bootstrap.servers": target,
        "A->B.enabled": "true",
        "B->A.enabled": "false",
        "A->B.topics": "mm-.*",
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1",
        "refresh.topics.interval.seconds": "2",
        "refresh.groups.interval.seconds": "2",
        # the target topics are created beforehand, alike for both tools (see the module docstring)
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        "A.consumer.isolation.level": "read_committed",
        "tasks.max": "2",
        "replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
    }
    with open(path, "w") as fh:
        fh.writelines(f"{k} = {v}\n" for k, v in props.items())


def target_counts(bootstrap: str) -> Dict[Tuple[str, int], int]:
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "mm-bench-watch", "log_level": 0})
    try:
        return _ends(c, TOPICS)
    finally:
        c.close()


def run_mm2(work: str, source: str, target_broker, expected: Dict[Tuple[str, int], int],
            copy_timeout: float, sync_timeout: float) -> dict:
    """MM2 from its JVM's start until B1 holds ``expected`` records per partition, then until the groups'
    offsets on B1 settle; stopped in any case."""
    from support import jvm
    from support.brokers.kafka_broker import BROKER_JVM_FLAGS, die_with_parent, file_tail, write_log4j2
    from support.procs import kill_group, stop_group
    cp = jvm.classpath(MIRROR_MODULE)
    props = os.path.join(work, "mm2.properties")
    mm2_properties(props, source, target_broker.bootstrap)
    log = os.path.join(work, "mm2.log")
    write_log4j2(os.path.join(work, "mm2-log4j2.properties"), log, {"org.apache.kafka": "WARN",
                                                                    "org.apache.kafka.connect.mirror": "INFO"})
    flags = [f for f in BROKER_JVM_FLAGS if not f.startswith("-XX:TieredStopAtLevel")]     # a long copy: C2 too
    b_cpu0 = cpu_seconds(target_broker.proc.pid)
    t0 = time.perf_counter()
    out = open(os.path.join(work, "mm2.stdout"), "wb")
    proc = subprocess.Popen(["java", *flags, f"-Dlog4j2.configurationFile={work}/mm2-log4j2.properties",
                             "-cp", cp, MM2_MAIN, props, "--clusters", "B"],
                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=die_with_parent)
    out.close()
    try:
        first_record = None
        deadline = time.monotonic() + copy_timeout
        while True:
            if proc.poll() is not None:
                raise BenchError(f"MirrorMaker 2 exited with {proc.returncode}:\n{file_tail(log)}")
            counts = target_counts(target_broker.bootstrap)
            if first_record is None and any(counts.values()):
                first_record = time.perf_counter() - t0
            if all(counts[k] >= n for k, n in expected.items()):
                break
            if time.monotonic() > deadline:
                raise BenchError(f"MirrorMaker 2 did not copy A's committed records to B1 within {copy_timeout:.0f} s "
                                 f"(B1 {sum(counts.values())} of {sum(expected.values())}):\n{file_tail(log)}")
            time.sleep(0.5)
        wall = time.perf_counter() - t0
        cpu_copy = cpu_seconds(proc.pid)
        b_cpu = cpu_seconds(target_broker.proc.pid) - b_cpu0
        # the groups' offsets: synced every second; settled when unchanged for 10 s (bounded)
        settle0 = time.perf_counter()
        deadline = time.monotonic() + sync_timeout
        last, since = None, time.monotonic()
        while True:
            now = group_offsets(target_broker.bootstrap)
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= 10:
                break
            if time.monotonic() > deadline:
                print(f"  MM2's group offsets still changing after {sync_timeout:.0f} s: taken as they are",
                      flush=True)
                break
            time.sleep(1)
        return {"rows": sum(counts.values()), "wall_s": wall, "first_record_s": first_record,
                "cpu_s": cpu_copy, "cpu_s_total": cpu_seconds(proc.pid), "target_cpu_s": b_cpu,
                "groups_settled_s": time.perf_counter() - settle0, "counts": counts}
    finally:
        stop_group(proc, grace=30)
        if proc.poll() is None:
            kill_group(proc)


def run_restore(source_log_dir: str, target: str) -> dict:
    """``kafkarec restore`` as a user runs it; wall time and the process's CPU-seconds."""
    cmd = [sys.executable, "-m", "kafkarec", "restore", source_log_dir, "--target-bootstrap", target,
           "--topics", ",".join(TOPICS), "--restore-id", "bench"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise BenchError(f"kafkarec restore failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    # a partition's line: "topic-p -> target-topic-p [start, H) N records written"
    rows = sum(int(m.group(1)) for m in re.finditer(r"\) (\d+) records (?:written|resumed|done)$", proc.stdout,
                                                     re.MULTILINE))
    return {"rows": rows, "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "stdout": proc.stdout, "stderr": proc.stderr}


# --- the groups resumed --------------------------------------------------------------------------------

def resume(bootstrap: str, group: str, topics: Sequence[str], timeout: float) -> Tuple[List[Key], List[str]]:
    """What a consumer of ``group`` (read_committed) reads on ``bootstrap`` from the group's committed
    positions to the end (no committed position: Kafka's default reset, latest); and the group's
    partitions without a committed position there."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": "read_committed", "log_level": 0})
    out: List[Key] = []
    try:
        tps = [TopicPartition(t, q) for t in topics for q in range(PARTITIONS)]
        committed = c.committed(tps, timeout=30)
        start, ends, unpositioned = [], {}, []
        for tp in committed:
            end = c.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=30, cached=False)[1]
            if tp.offset < 0:
                unpositioned.append(f"{tp.topic}-{tp.partition}")
            pos = tp.offset if tp.offset >= 0 else end
            if pos < end:
                start.append(TopicPartition(tp.topic, tp.partition, pos))
                ends[(tp.topic, tp.partition)] = end
        if not start:
            return out, unpositioned
        c.assign(start)
        deadline = time.monotonic() + timeout
        while ends:
            if time.monotonic() > deadline:
                raise BenchError(f"group {group} on {bootstrap}: partitions {sorted(ends)} not read to their "
                                 f"ends within {timeout:.0f} s")
            for msg in c.consume(10_000, 0.5):
                if msg.error():
                    raise BenchError(f"group {group} on {bootstrap}: {msg.error()}")
                tp = (msg.topic(), msg.partition())
                out.append((msg.topic(), msg.partition(), msg.timestamp()[1], msg.key(), msg.value()))
            for tp in list(ends):
                position = c.position([TopicPartition(*tp)])[0].offset
                if position >= ends[tp]:
                    del ends[tp]
        return out, unpositioned
    finally:
        c.close()


def compare(history: Dict[Tuple[str, int], List[Tuple[int, Key]]], positions: Dict[Tuple[str, int], int],
            got: List[Key]) -> dict:
    """Duplicates, missing and foreign records of one group's read against what it should read: A's
    committed records at or after its committed positions."""
    everything = {k for rows in history.values() for _, k in rows}
    expected = collections.Counter(k for tp, pos in positions.items() for off, k in history[tp] if off >= pos)
    read = collections.Counter(got)
    extra = read - expected
    foreign = sum(n for k, n in extra.items() if k not in everything)
    return {"expected": sum(expected.values()), "read": len(got), "duplicates": sum(extra.values()) - foreign,
            "missing": sum((expected - read).values()), "foreign": foreign}


def groups_side(bootstrap: str, history, positions, timeout: float) -> Dict[str, dict]:
    out = {}
    for group, _, topics, _ in GROUPS:
        got, unpositioned = resume(bootstrap, group, topics, timeout)
        out[group] = dict(compare(history, positions[group], got), partitions=len(positions[group]),
                          positioned=len(topics) * PARTITIONS - len(unpositioned), unpositioned=unpositioned)
    return out


# --- the run -------------------------------------------------------------------------------------------

def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def table(results: dict) -> str:
    lines = ["| group | protocol | partitions | should read | MM2 positioned | MM2 duplicates | MM2 missing "
             "| MM2 foreign | kafkarec positioned | kafkarec duplicates | kafkarec missing | kafkarec foreign |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for group, protocol, _, _ in GROUPS:
        m, k = results["groups"]["mm2"][group], results["groups"]["kafkarec"][group]
        lines.append(f"| {group} | {protocol} | {m['partitions']} | {m['expected']} | {m['positioned']} | "
                     f"{m['duplicates']} | {m['missing']} | {m['foreign']} | {k['positioned']} | "
                     f"{k['duplicates']} | {k['missing']} | {k['foreign']} |")
    lines += ["", "| copier | records | wall s | rows/s | rows/s from the first record | copier CPU s "
              "| rows per CPU s | target broker CPU s |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in ("mm2", "kafkarec"):
        s = results["speed"][name]
        # MM2's JVM and connectors take a while to start: its rate once records flow, beside the whole
        steady = f"{s['rows'] / (s['wall_s'] - s['first_record_s']):,.0f}" if s.get("first_record_s") else "-"
        lines.append(f"| {'MirrorMaker 2' if name == 'mm2' else 'kafkarec restore'} | {s['rows']} | "
                     f"{s['wall_s']:.1f} | {s['rows'] / s['wall_s']:,.0f} | {steady} | {s['cpu_s']:.1f} | "
                     f"{s['rows'] / s['cpu_s']:,.0f} | {s['target_cpu_s']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=60_000, help="records written to A in all (default 60000)")
    ap.add_argument("--seed", type=int, default=51, help="the groups' positions (default 51)")
    ap.add_argument("--copy-timeout", type=float, default=900, help="seconds MM2 may take to copy (default 900)")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)

    from support import jvm
    from support.brokers.kafka_broker import KafkaBroker
    missing = jvm.missing_tools()
    if missing:
        raise BenchError(f"{' and '.join(missing)} not installed: the brokers and MirrorMaker 2 cannot run")
    results: dict = {"records": args.records, "loads": {}}
    with tempfile.TemporaryDirectory(prefix="kafkarec-bench-mm2-") as tmp:
        a = KafkaBroker(os.path.join(tmp, "A"))
        b1 = KafkaBroker(os.path.join(tmp, "B1"))
        b2 = KafkaBroker(os.path.join(tmp, "B2"))
        try:
            a.start()
            results["loads"]["start"] = load()
            print(f"A {a.bootstrap}: writing the history ({args.records} records, {load()})", flush=True)
            t0 = time.perf_counter()
            write_history(a, args.records, args.seed)
            history = committed_records(a.bootstrap)
            positions = group_offsets(a.bootstrap)
            expected_counts = {tp: len(rows) for tp, rows in history.items()}
            committed = sum(expected_counts.values())
            results["committed_records"] = committed
            print(f"  {committed} committed records on A in {time.perf_counter() - t0:.1f} s; groups: "
                  + ", ".join(f"{g} {len(p)} partitions" for g, p in positions.items()), flush=True)

            b1.start()
            create_target_topics(b1.bootstrap)
            results["loads"]["mm2"] = load()
            print(f"MirrorMaker 2: A -> B1 {b1.bootstrap} ({load()})", flush=True)
            mm2 = run_mm2(tmp, a.bootstrap, b1, expected_counts, args.copy_timeout, sync_timeout=120)
            print(f"  copied {mm2['rows']} records in {mm2['wall_s']:.1f} s (first on B1 after "
                  f"{mm2['first_record_s']:.1f} s), {mm2['cpu_s']:.1f} CPU s; group offsets settled in "
                  f"{mm2['groups_settled_s']:.1f} s more", flush=True)
            mm2_groups = groups_side(b1.bootstrap, history, positions, timeout=300)
            b1.close()

            a.stop()
            b2.start()
            create_target_topics(b2.bootstrap)
            results["loads"]["kafkarec"] = load()
            print(f"kafkarec restore: A's log dir -> B2 {b2.bootstrap} ({load()})", flush=True)
            b_cpu0 = cpu_seconds(b2.proc.pid)
            kr = run_restore(a.log_dir, b2.bootstrap)
            kr["target_cpu_s"] = cpu_seconds(b2.proc.pid) - b_cpu0
            print(f"  restored {kr['rows']} records in {kr['wall_s']:.1f} s, {kr['cpu_s']:.1f} CPU s", flush=True)
            kr_groups = groups_side(b2.bootstrap, history, positions, timeout=300)
        finally:
            for broker in (b2, b1, a):
                broker.close()
    results["loads"]["end"] = load()
    results["speed"] = {"mm2": {k: v for k, v in mm2.items() if k != "counts"},
                        "kafkarec": {k: v for k, v in kr.items() if k not in ("stdout", "stderr")}}
    results["groups"] = {"mm2": mm2_groups, "kafkarec": kr_groups}
    print()
    print(table(results))
    print(f"\n{args.records} records written, {committed} committed; loads: "
          + "; ".join(f"{k}: {v}" for k, v in results["loads"].items())
          + " (2 cores shared with other work: loaded-machine figures)")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    bad = {g: r for g, r in kr_groups.items() if r["duplicates"] or r["missing"] or r["foreign"]}
    if bad or kr["rows"] != committed:
        print(f"kafkarec: NOT exact: {kr['rows']} records restored of {committed}; groups {sorted(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
