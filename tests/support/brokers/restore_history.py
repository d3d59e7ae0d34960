"""The source history of ``kafkarec restore``'s tests, written through the session's broker
(``kafka_broker``, cluster A) by Kafka's own Java clients: small topics of their own beside the
other broker tests' ones.  This module decides what is written; one JVM,
``tests/java/RestoreHistoryWriter.java`` (:class:`JavaClients`), does every write -- topics created,
records produced (idempotent and transactional producers, each codec), groups' commits as their
members (classic and consumer protocol), an admin's offsets, deleteRecords -- and answers the
offsets the broker gave, from which :class:`History` is filled.  Only the waits for what the broker
does on its own (transaction markers, the log cleaner, the log start's checkpoint) and the reading
back of rs-compacted are done here, through the helpers every broker test shares.

* ``rs-orders`` (3 partitions): plain records (null keys and values, headers, explicit
  timestamps), then per partition a committed transaction and an aborted one, then plain records;
* ``rs-compacted`` (1 partition, ``cleanup.policy=compact``, small segments): keys written in
  rounds with tombstones, cleaned by the broker up to its active segment (holes in the offsets);
* ``rs-codecs`` (5 partitions): partition i written by producers (idempotent and transactional)
  of codec :data:`CODECS` [i] -- gzip, snappy, lz4, zstd, none: plain records in batches of
  several, a committed transaction, an aborted one, plain records;
* ``rs-deleted`` (1 partition): 20 records, then deleteRecords moves its log start to
  :data:`DELETED_START` (8);
* ``rs-crash`` (1 partition): 100 records, restored by the crash tests;
* ``rs-bad`` (1 partition): a few records and group ``rs-bad-group`` whose commit is past the log end;
* ``rs-late`` (1 partition): 5 records, group ``rs-ahead``'s commit at 8 (past the log's end
  then), then 5 more records: at the end the log reaches past 8, at the commit it did not;
* ``rs-share`` (1 partition): :data:`SHARE_RECORDS` plain records, which the share-group test's
  group (Kafka's share consumer, ``tests/java/ShareGroupRestore.java``) reads on A.

Groups (``History.groups``: the topics each resumes on and its protocol; ``positions``: every
group's committed offsets at the end): ``rs-classic`` (the classic protocol) commits twice on
``rs-orders`` -- first, then after ``as_of`` (ms since the epoch), on an aborted record, a marker
and the end; ``rs-848`` (the consumer protocol, KIP-848) commits at the log start and mid-way;
``rs-codecs-group`` on each codec's partition: on an abort marker, on an aborted record, on a
commit marker, inside a compressed batch, at the end; ``rs-hole`` on a record the cleaner removed
from ``rs-compacted``; ``rs-below-start`` and ``rs-at-start`` on ``rs-deleted`` below and at the
log start deleteRecords moved (committed before it moved); ``rs-crash-g1``, ``rs-crash-g2`` on
``rs-crash`` (50 and 77).  Every group but ``rs-classic``'s first commit commits after ``as_of``.
:func:`consume_committed` reads what a read_committed consumer gets from a position, on any cluster.
"""
from __future__ import annotations

import base64
import os
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from support.brokers.produce import BASE_TS, SMALL_SEGMENT, active_segment_base, wait_cleaned, wait_stable

ORDERS, COMPACTED, CRASH, BAD = "rs-orders", "rs-compacted", "rs-crash", "rs-bad"
CODEC_TOPIC, DELETED, LATE, SHARE = "rs-codecs", "rs-deleted", "rs-late", "rs-share"
#: rs-codecs' partition i is written with codec CODECS[i] (the Java producer's compression.type)
CODECS = ("gzip", "snappy", "lz4", "zstd", "none")
#: where deleteRecords moves rs-deleted's log start
DELETED_START = 8
#: rs-share's records
SHARE_RECORDS = 20
#: the groups the end-to-end test resumes on the target (the topics of docs/restore.md's example)
GROUPS = ("rs-classic", "rs-848", "rs-codecs-group", "rs-hole", "rs-below-start", "rs-at-start")
CRASH_GROUPS = ("rs-crash-g1", "rs-crash-g2")
#: a request to the writer answered within (a transaction's commit, a group's join: each bounded
#: by 30 s in the JVM)
ANSWER_TIMEOUT = 120


@dataclass
class History:
    bootstrap: str
    log_dir: str
    #: ms since the epoch between rs-classic's two commits
    as_of: int = 0
    #: (group, topic, partition) -> committed offset, at the end and as of ``as_of``
    positions: Dict[Tuple[str, str, int], int] = field(default_factory=dict)
    positions_as_of: Dict[Tuple[str, str, int], int] = field(default_factory=dict)
    #: (topic, partition) -> offsets of the records of aborted transactions
    aborted: Dict[Tuple[str, int], List[int]] = field(default_factory=dict)
    #: (topic, partition) -> offsets of the transaction markers (COMMIT and ABORT) written there
    markers: Dict[Tuple[str, int], List[int]] = field(default_factory=dict)
    #: group -> (the source topics it commits on, "classic" or "consumer")
    groups: Dict[str, Tuple[Tuple[str, ...], str]] = field(default_factory=dict)
    #: rs-compacted's offsets the cleaner removed (below its last record; its log start is 0)
    holes: List[int] = field(default_factory=list)


def _data(b: Optional[bytes]) -> str:
    return "-" if b is None else base64.b64encode(b).decode("ascii")


def _pairs(conf: Dict[str, object]) -> str:
    return ",".join(f"{k}={v}" for k, v in conf.items()) or "-"


class JavaClients:
    """Kafka's Java clients in one JVM (``tests/java/RestoreHistoryWriter.java``: its requests are
    listed there), asked one request a line; every write of the history goes through it."""

    def __init__(self, broker):
        from support.java import LineOracle, compiled
        from support.brokers.kafka_broker import QUIET_LOG4J_FLAG
        from support.paths import TESTS
        program = compiled(os.path.join(TESTS, "java", "RestoreHistoryWriter.java"), broker.classpath)
        self._jvm = LineOracle(program.command(broker.bootstrap, jvm_flags=[
            "-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", QUIET_LOG4J_FLAG]),
            "RestoreHistoryWriter")

    def ask(self, *requests: Sequence[object]) -> List[str]:
        """Each request (its fields) answered, in order: the answers' lines."""
        lines = ["\t".join(str(f) for f in r) for r in requests]
        return [a.rstrip("\n") for a in self._jvm.ask(lines, ANSWER_TIMEOUT)]

    def create(self, topic: str, partitions: int, config: Dict[str, str]) -> None:
        self.ask(("create", topic, partitions, _pairs(config)))

    def producer(self, pid: str, **conf) -> str:
        """A producer ``pid`` of ``conf`` (Java producer configs); transactional ones initialised."""
        self.ask(("producer", pid, _pairs(conf)))
        return pid

    def send(self, pid: str, records: Sequence[tuple]) -> None:
        """``records`` (topic, partition, timestamp or None, key, value, headers or None) sent."""
        self.ask(*[("send", pid, t, p, "-" if ts is None else ts, _data(k), _data(v),
                    ",".join(f"{_data(n.encode())}:{_data(hv)}" for n, hv in hs) if hs else "-")
                   for t, p, ts, k, v, hs in records])

    def flush(self, pid: str) -> List[int]:
        """Every record ``pid`` sent since its last flush acknowledged: their offsets, in send order."""
        answer = self.ask(("flush", pid))[0]
        return [int(o) for o in answer.split(",")] if answer else []

    def transaction(self, pid: str, step: str) -> None:
        """``step``: begin, commit or abort."""
        self.ask((step, pid))

    def close_producer(self, pid: str) -> None:
        self.ask(("close", pid))

    def commit_offsets(self, group: str, offsets: Dict[Tuple[str, int], int], protocol: str) -> None:
        """``group`` commits ``offsets`` as a member (subscribed to their topics, assigned, then commit)."""
        self.ask(("offsets", group, protocol, ",".join(f"{t}:{p}:{o}" for (t, p), o in offsets.items())))

    def alter(self, group: str, offsets: Dict[Tuple[str, int], int]) -> None:
        """``group``'s offsets set by an admin (Kafka takes any offset, past the log end too)."""
        self.ask(("alter", group, ",".join(f"{t}:{p}:{o}" for (t, p), o in offsets.items())))

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        """deleteRecords: the partition's new log start (its low watermark)."""
        return int(self.ask(("delete", topic, partition, before))[0])

    def close(self) -> None:
        self._jvm.close()


def _plain(topic: str, partition: int, first: int, n: int) -> List[tuple]:
    """Records ``first`` to ``first + n - 1`` of a partition: null keys and values among them, headers
    (one of them null) on every third, timestamps from BASE_TS a second apart."""
    out = []
    for i in range(first, first + n):
        key = None if i % 7 == 3 else f"k{i % 5}".encode()
        value = None if i % 11 == 6 else f"{topic} {partition} {i}".encode()
        headers = [("seq", str(i).encode()), ("none", None)] if i % 3 == 0 else None
        out.append((topic, partition, BASE_TS + 1000 * i, key, value, headers))
    return out


def _write_codecs(h: History, java: JavaClients) -> None:
    """rs-codecs: per partition its codec's producers (see the module docstring); the markers'
    offsets are the gaps the transactions leave."""
    for part, codec in enumerate(CODECS):
        p = java.producer(f"codec-{codec}", **{"enable.idempotence": "true", "compression.type": codec,
                                               "linger.ms": 50})
        java.send(p, _plain(CODEC_TOPIC, part, 0, 8))      # one batch of 8 (linger), compressed
        java.flush(p)
        tx = java.producer(f"codec-{codec}-tx", **{"transactional.id": f"rs-codec-{codec}",
                                                   "compression.type": codec, "linger.ms": 50})
        for commit in (True, False):
            java.transaction(tx, "begin")
            java.send(tx, _plain(CODEC_TOPIC, part, 100 if commit else 200, 4 if commit else 3))
            got = java.flush(tx)
            java.transaction(tx, "commit" if commit else "abort")
            wait_stable(h.bootstrap, CODEC_TOPIC, [part])
            if not commit:
                h.aborted[(CODEC_TOPIC, part)] = sorted(got)
            h.markers.setdefault((CODEC_TOPIC, part), []).append(max(got) + 1)
        java.close_producer(tx)
        java.send(p, _plain(CODEC_TOPIC, part, 300, 5))
        java.flush(p)
        java.close_producer(p)


def _write_deleted(h: History, java: JavaClients) -> None:
    """rs-deleted: 20 records, groups below and at the log start to come, then deleteRecords."""
    from support.brokers import deleted_records
    p = java.producer("deleted", **{"enable.idempotence": "false"})
    java.send(p, _plain(DELETED, 0, 0, 20))
    java.flush(p)
    _commit_group(h, java, "rs-below-start", {(DELETED, 0): 3})
    _commit_group(h, java, "rs-at-start", {(DELETED, 0): DELETED_START})
    assert java.delete_records(DELETED, 0, DELETED_START) == DELETED_START
    # the log dir says so (log-start-offset-checkpoint), as the reader takes it
    deleted_records.wait_deleted(h.log_dir, {(DELETED, 0): DELETED_START})


def _write_late(h: History, java: JavaClients) -> None:
    """rs-late: rs-ahead commits 8 while the log ends at 5, then the log grows past 8."""
    p = java.producer("late", **{"enable.idempotence": "false"})
    now = [(LATE, 0, None, f"late{i}".encode(), b"now", None) for i in range(5)]
    java.send(p, now)
    java.flush(p)
    java.alter("rs-ahead", {(LATE, 0): 8})
    time.sleep(0.01)            # the next records' append time is after the commit's time
    java.send(p, now)
    java.flush(p)


def write(broker) -> History:
    """Write the history on ``broker`` (see the module docstring)."""
    h = History(broker.bootstrap, broker.log_dir)
    java = JavaClients(broker)
    try:
        _write(h, java)
    finally:
        java.close()
    return h


def _write(h: History, java: JavaClients) -> None:
    for topic, partitions, config in [
            (ORDERS, 3, {}),
            # LogAppendTime: its records carry the broker's append times, which the restore keeps
            (COMPACTED, 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                            "min.compaction.lag.ms": "0", "message.timestamp.type": "LogAppendTime",
                            **SMALL_SEGMENT}),
            (CRASH, 1, {}), (BAD, 1, {}), (CODEC_TOPIC, len(CODECS), {}), (DELETED, 1, {}),
            # LogAppendTime: record times are the broker's, so the log's end at the commit is known
            (LATE, 1, {"message.timestamp.type": "LogAppendTime"}),
            (SHARE, 1, {})]:
        java.create(topic, partitions, config)
    # compacted first, so the cleaner works while the rest is written: 3 rounds over 6 keys,
    # tombstones for two of them in the last, segments rolled by segment.ms between rounds (the
    # cleaner never cleans the active one)
    p = java.producer("plain", **{"enable.idempotence": "true"})
    for rnd in range(3):
        java.send(p, [(COMPACTED, 0, BASE_TS + 1000 * (rnd * 12 + i), f"ck-{i % 6}".encode(),
                       None if (rnd == 2 and i % 6 in (1, 4)) else f"round {rnd} {i}".encode(), None)
                      for i in range(12)])
        java.flush(p)
        time.sleep(0.2)       # past segment.ms (100 ms): the next round's first record rolls the segment
    java.send(p, [(COMPACTED, 0, BASE_TS + 99_000, b"last", b"rolls the segment before it", None)])
    java.flush(p)
    java.send(p, [r for part in range(3) for r in _plain(ORDERS, part, 0, 6)])
    java.flush(p)
    tx = java.producer("orders-tx", **{"transactional.id": "rs-writer"})
    for commit in (True, False):
        java.transaction(tx, "begin")
        for part in range(3):
            java.send(tx, _plain(ORDERS, part, 100 if commit else 200, 3 + part))
        got = java.flush(tx)
        java.transaction(tx, "commit" if commit else "abort")
        if not commit:      # in send order: partition 0's 3 records, 1's 4, 2's 5
            for part in range(3):
                h.aborted[(ORDERS, part)] = got[sum(3 + q for q in range(part)):][:3 + part]
        # the markers are written after the call returns: wait for them, so the next records follow them
        wait_stable(h.bootstrap, ORDERS, range(3))
    java.close_producer(tx)
    java.send(p, [r for part in range(3) for r in _plain(ORDERS, part, 300, 4)] + _plain(CRASH, 0, 0, 100)
              + _plain(BAD, 0, 0, 3) + _plain(SHARE, 0, 0, SHARE_RECORDS))
    java.flush(p)
    _groups(h, java)
    _write_codecs(h, java)
    _write_deleted(h, java)
    _write_late(h, java)
    wait_cleaned(h.log_dir, COMPACTED, through={0: active_segment_base(h.log_dir, COMPACTED)})
    kept = [r[0] for r in consume_committed(h.bootstrap, COMPACTED, [0])[0]]
    h.holes = sorted(set(range(kept[-1])) - set(kept))      # its log start stays 0
    assert h.holes, "the cleaner removed no record of rs-compacted"
    _more_groups(h, java)


def _commit_group(h: History, java: JavaClients, group: str, offsets: Dict[Tuple[str, int], int],
                  protocol: str = "classic") -> None:
    """``group`` commits ``offsets`` as a member, noted in ``h`` as its last positions."""
    java.commit_offsets(group, offsets, protocol)
    h.groups[group] = (tuple(sorted({t for t, _ in offsets})), protocol)
    for (t, p), o in offsets.items():
        h.positions[(group, t, p)] = o


def _more_groups(h: History, java: JavaClients) -> None:
    """The groups committed after ``as_of`` on codecs, holes and the crash topic (the log start's
    are committed in :func:`_write_deleted`, before deleteRecords)."""
    aborted = {p: h.aborted[(CODEC_TOPIC, p)] for p in range(len(CODECS))}
    markers = {p: h.markers[(CODEC_TOPIC, p)] for p in range(len(CODECS))}      # [COMMIT, ABORT]
    _commit_group(h, java, "rs-codecs-group", {
        (CODEC_TOPIC, 0): markers[0][1],           # gzip: on the ABORT marker
        (CODEC_TOPIC, 1): aborted[1][1],           # snappy: on an aborted record
        (CODEC_TOPIC, 2): markers[2][0],           # lz4: on the COMMIT marker
        (CODEC_TOPIC, 3): 3,                       # zstd: inside the first compressed batch
        (CODEC_TOPIC, 4): markers[4][1] + 6})      # none: the end of the partition
    _commit_group(h, java, "rs-hole", {(COMPACTED, 0): h.holes[len(h.holes) // 2]})
    _commit_group(h, java, "rs-crash-g1", {(CRASH, 0): 50})
    _commit_group(h, java, "rs-crash-g2", {(CRASH, 0): 77}, protocol="consumer")


def _groups(h: History, java: JavaClients) -> None:
    markers = {}
    for part in range(3):
        aborted = h.aborted[(ORDERS, part)]
        markers[part] = aborted[-1] + 1         # the ABORT marker after the aborted records
    first = {(ORDERS, 0): 2, (ORDERS, 1): 4, (ORDERS, 2): 0}
    java.commit_offsets("rs-classic", first, "classic")
    time.sleep(0.01)                             # the second commit's timestamp is later than as_of
    h.as_of = int(time.time() * 1000)
    time.sleep(0.01)
    second = {(ORDERS, 0): h.aborted[(ORDERS, 0)][1],        # on an aborted record
              (ORDERS, 1): markers[1],                       # on a transaction marker
              (ORDERS, 2): markers[2] + 5}                   # the end of the partition
    java.commit_offsets("rs-classic", second, "classic")
    java.commit_offsets("rs-848", {(ORDERS, 0): 0, (ORDERS, 1): 7, (ORDERS, 2): 9}, "consumer")
    for (t, p), o in first.items():
        h.positions_as_of[("rs-classic", t, p)] = o
    for (t, p), o in second.items():
        h.positions[("rs-classic", t, p)] = o
    for (t, p), o in {(ORDERS, 0): 0, (ORDERS, 1): 7, (ORDERS, 2): 9}.items():
        h.positions[("rs-848", t, p)] = h.positions_as_of[("rs-848", t, p)] = o
    h.groups["rs-classic"] = ((ORDERS,), "classic")
    h.groups["rs-848"] = ((ORDERS,), "consumer")
    # rs-bad-group: a commit past rs-bad's log end (3), which the broker takes without a look
    java.alter("rs-bad-group", {(BAD, 0): 40})


def consume_committed(bootstrap: str, topic: str, partitions: Sequence[int], *,
                      timeout: float = 30) -> Dict[int, List[Tuple[int, Optional[bytes], Optional[bytes], int, tuple]]]:
    """``{partition: [(offset, key, value, timestamp, headers)]}``: what one read_committed consumer
    gets from the start of each of ``partitions`` to its end."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rs-reader", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.partition.eof": True, "log_level": 0,
                  "fetch.wait.max.ms": 10})
    out: Dict[int, list] = {p: [] for p in partitions}
    ended = set()
    try:
        # offset 0 (the log start where it is past 0: auto.offset.reset), not OFFSET_BEGINNING,
        # which librdkafka looks up first (0.5 s)
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        deadline = time.monotonic() + timeout
        while ended != set(partitions):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{topic}: no end of partitions {sorted(set(partitions) - ended)} within "
                                   f"{timeout} s")
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    ended.add(msg.partition())
                    continue
                raise RuntimeError(str(msg.error()))
            out[msg.partition()].append((msg.offset(), msg.key(), msg.value(), msg.timestamp()[1],
                                         tuple(msg.headers() or ())))
        return out
    finally:
        c.close()


def resume_groups(bootstrap: str, groups: Sequence[Tuple[str, Sequence[str], int, str]], *,
                  timeout: float = 30) -> Dict[str, List[Tuple[str, int, Optional[bytes], Optional[bytes]]]]:
    """What each group reads when Kafka's own Java consumer resumes it on ``bootstrap``
    (``tests/java/GroupResume.java``; ``groups``: ``(group, topics, expected, protocol)``, protocol
    ``classic`` or ``consumer``): subscribed, read_committed, from its committed positions (none
    there fails, never a silent reset), until it has ``expected`` records and every partition's
    end: ``{group: [(topic, partition, key, value)]}`` in arrival order."""
    import base64
    import os
    import subprocess

    from support.java import compiled
    from support.jvm import classpath
    from support.paths import ROOT
    program = compiled(os.path.join(ROOT, "tests", "java", "GroupResume.java"), classpath("jvm/kafka"))
    args = [bootstrap, str(int(timeout * 1000))]
    for group, topics, expected, protocol in groups:
        args += [group, protocol, str(expected), ",".join(topics)]
    run = subprocess.run(program.command(*args, jvm_flags=["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                                           "-Xmx512m"]),
                         capture_output=True, timeout=timeout * len(groups) + 60)
    if run.returncode != 0:
        raise RuntimeError(f"GroupResume failed ({run.returncode}):\n{run.stderr.decode(errors='replace')[-4000:]}")

    def data(field: str) -> Optional[bytes]:
        return None if field == "-" else base64.b64decode(field)

    out: Dict[str, list] = {group: [] for group, *_ in groups}
    for line in run.stdout.decode("ascii").splitlines():
        group, topic, partition, _, key, value = line.split("\t")
        out[group].append((topic, int(partition), data(key), data(value)))
    return out


