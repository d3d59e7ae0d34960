"""The source history of ``kafkarec restore``'s tests, written through the session's broker
(``kafka_broker``, cluster A) with confluent-kafka: small topics of their own beside the other
broker tests' ones.

* ``rs-orders`` (3 partitions): plain records (null keys and values, headers, explicit
  timestamps), then per partition a committed transaction and an aborted one, then plain records;
* ``rs-compacted`` (1 partition, ``cleanup.policy=compact``, small segments): keys written in
  rounds with tombstones, cleaned by the broker up to its active segment (holes in the offsets);
* ``rs-codecs`` (5 partitions): partition i written by producers (idempotent and transactional)
  of codec :data:`CODECS` [i] -- gzip, snappy, lz4, zstd, none: plain records in batches of
  several, a committed transaction, an aborted one, plain records;
* ``rs-deleted`` (1 partition): 20 records, then ``AdminClient.delete_records`` moves its log
  start to :data:`DELETED_START` (8);
* ``rs-crash`` (1 partition): 100 records, restored by the crash tests;
* ``rs-bad`` (1 partition): a few records and group ``rs-bad-group`` whose commit is past the log end;
* ``rs-late`` (1 partition): 5 records, group ``rs-ahead``'s commit at 8 (past the log's end
  then), then 5 more records: at the end the log reaches past 8, at the commit it did not.

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

import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from support.produce import (BASE_TS, SMALL_SEGMENT, TopicInfo, active_segment_base, create_topics, wait_cleaned,
                             wait_stable)

ORDERS, COMPACTED, CRASH, BAD = "rs-orders", "rs-compacted", "rs-crash", "rs-bad"
CODEC_TOPIC, DELETED, LATE = "rs-codecs", "rs-deleted", "rs-late"
#: rs-codecs' partition i is written with codec CODECS[i] (librdkafka's compression.type)
CODECS = ("gzip", "snappy", "lz4", "zstd", "none")
#: where deleteRecords moves rs-deleted's log start
DELETED_START = 8
#: the groups the end-to-end test resumes on the target (the topics of docs/restore.md's example)
GROUPS = ("rs-classic", "rs-848", "rs-codecs-group", "rs-hole", "rs-below-start", "rs-at-start")
CRASH_GROUPS = ("rs-crash-g1", "rs-crash-g2")


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


def _producer(bootstrap: str, **conf):
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "log_level": 0, **conf})


def _flush(p) -> None:
    if p.flush(60):
        raise RuntimeError("records not delivered within 60 s")


def _plain(p, topic: str, partition: int, first: int, n: int, offsets: Optional[list] = None) -> None:
    for i in range(first, first + n):
        key = None if i % 7 == 3 else f"k{i % 5}".encode()
        value = None if i % 11 == 6 else f"{topic} {partition} {i}".encode()
        headers = [("seq", str(i).encode()), ("none", None)] if i % 3 == 0 else None
        cb = None if offsets is None else (lambda err, msg: offsets.append(msg.offset()))
        p.produce(topic, key=key, value=value, partition=partition, headers=headers,
                  timestamp=BASE_TS + 1000 * i, on_delivery=cb)


def _write_codecs(h: History) -> None:
    """rs-codecs: per partition its codec's producers (see the module docstring); the markers'
    offsets are the gaps the transactions leave."""
    for part, codec in enumerate(CODECS):
        p = _producer(h.bootstrap, **{"enable.idempotence": True, "compression.type": codec, "linger.ms": 50})
        _plain(p, CODEC_TOPIC, part, 0, 8)             # one batch of 8 (linger), compressed
        _flush(p)
        tx = _producer(h.bootstrap, **{"transactional.id": f"rs-codec-{codec}", "compression.type": codec,
                                       "linger.ms": 50})
        tx.init_transactions(30)
        for commit in (True, False):
            got: List[int] = []
            tx.begin_transaction()
            _plain(tx, CODEC_TOPIC, part, 100 if commit else 200, 4 if commit else 3, got)
            tx.flush(30)
            (tx.commit_transaction if commit else tx.abort_transaction)(30)
            wait_stable(h.bootstrap, CODEC_TOPIC, [part])
            if not commit:
                h.aborted[(CODEC_TOPIC, part)] = sorted(got)
            h.markers.setdefault((CODEC_TOPIC, part), []).append(max(got) + 1)
        _plain(p, CODEC_TOPIC, part, 300, 5)
        _flush(p)


def _write_deleted(h: History) -> None:
    """rs-deleted: 20 records, groups below and at the log start to come, then deleteRecords."""
    from confluent_kafka import TopicPartition
    from support import deleted_records
    from support.produce import _admin
    p = _producer(h.bootstrap)
    _plain(p, DELETED, 0, 0, 20)
    _flush(p)
    _commit_group(h, "rs-below-start", {(DELETED, 0): 3})
    _commit_group(h, "rs-at-start", {(DELETED, 0): DELETED_START})
    admin = _admin(h.bootstrap)
    for f in admin.delete_records([TopicPartition(DELETED, 0, DELETED_START)], operation_timeout=30,
                                  request_timeout=30).values():
        assert f.result(timeout=30).low_watermark == DELETED_START
    # the log dir says so (log-start-offset-checkpoint), as the reader takes it
    deleted_records.wait_deleted(h.log_dir, {(DELETED, 0): DELETED_START})


def _write_late(h: History) -> None:
    """rs-late: rs-ahead commits 8 while the log ends at 5, then the log grows past 8."""
    p = _producer(h.bootstrap)
    _plain_now(p, LATE, 0, 5)
    _flush(p)
    _alter(h.bootstrap, "rs-ahead", {(LATE, 0): 8})
    time.sleep(0.01)            # the next records' CreateTime is after the commit's time
    _plain_now(p, LATE, 0, 5)
    _flush(p)


def _plain_now(p, topic: str, partition: int, n: int) -> None:
    for i in range(n):
        p.produce(topic, key=f"late{i}".encode(), value=b"now", partition=partition)


def write(broker) -> History:
    """Write the history on ``broker`` (see the module docstring)."""
    h = History(broker.bootstrap, broker.log_dir)
    create_topics(broker.bootstrap, [
        TopicInfo(ORDERS, 3, {}, "confluent-kafka"),
        # LogAppendTime: its records carry the broker's append times, which the restore keeps
        TopicInfo(COMPACTED, 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                 "min.compaction.lag.ms": "0", "message.timestamp.type": "LogAppendTime",
                                 **SMALL_SEGMENT}, "confluent-kafka"),
        TopicInfo(CRASH, 1, {}, "confluent-kafka"),
        TopicInfo(BAD, 1, {}, "confluent-kafka"),
        TopicInfo(CODEC_TOPIC, len(CODECS), {}, "confluent-kafka"),
        TopicInfo(DELETED, 1, {}, "confluent-kafka"),
        # LogAppendTime: record times are the broker's, so the log's end at the commit is known
        TopicInfo(LATE, 1, {"message.timestamp.type": "LogAppendTime"}, "confluent-kafka")])
    p = _producer(broker.bootstrap, **{"enable.idempotence": True})
    for part in range(3):
        _plain(p, ORDERS, part, 0, 6)
    _flush(p)
    tx = _producer(broker.bootstrap, **{"transactional.id": "rs-writer"})
    tx.init_transactions(30)
    for commit in (True, False):
        tx.begin_transaction()
        for part in range(3):
            offsets = h.aborted.setdefault((ORDERS, part), []) if not commit else None
            _plain(tx, ORDERS, part, 100 if commit else 200, 3 + part, offsets)
        tx.flush(30)
        (tx.commit_transaction if commit else tx.abort_transaction)(30)
        # the markers are written after the call returns: wait for them, so the next records follow them
        wait_stable(broker.bootstrap, ORDERS, range(3))
    for part in range(3):
        _plain(p, ORDERS, part, 300, 4)
    _plain(p, CRASH, 0, 0, 100)
    _plain(p, BAD, 0, 0, 3)
    _flush(p)
    # compacted: 3 rounds over 6 keys, tombstones for two of them in the last, segments rolled by
    # segment.ms between rounds (the cleaner never cleans the active one)
    for rnd in range(3):
        for i in range(12):
            k = f"ck-{i % 6}".encode()
            v = None if (rnd == 2 and i % 6 in (1, 4)) else f"round {rnd} {i}".encode()
            p.produce(COMPACTED, key=k, value=v, timestamp=BASE_TS + 1000 * (rnd * 12 + i))
        _flush(p)
        time.sleep(0.2)       # past segment.ms (100 ms): the next round's first record rolls the segment
    p.produce(COMPACTED, key=b"last", value=b"rolls the segment before it", timestamp=BASE_TS + 99_000)
    _flush(p)
    wait_cleaned(broker.log_dir, COMPACTED, through={0: active_segment_base(broker.log_dir, COMPACTED)})
    kept = [r[0] for r in consume_committed(broker.bootstrap, COMPACTED, [0])[0]]
    h.holes = sorted(set(range(kept[-1])) - set(kept))      # its log start stays 0
    assert h.holes, "the cleaner removed no record of rs-compacted"
    _groups(h)
    _write_codecs(h)
    _write_deleted(h)
    _write_late(h)
    _more_groups(h)
    return h


def _commit(bootstrap: str, group: str, offsets: Dict[Tuple[str, int], int], protocol: str = "classic") -> None:
    """``group`` commits ``offsets`` as a member (subscribed to their topics, assigned, then commit)."""
    from confluent_kafka import Consumer, TopicPartition
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "log_level": 0,
            "auto.offset.reset": "earliest"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["session.timeout.ms"] = 6000
    c = Consumer(conf)
    try:
        c.subscribe(sorted({t for t, _ in offsets}))
        deadline = time.monotonic() + 30
        while len(c.assignment()) < len(offsets):
            if time.monotonic() > deadline:
                raise RuntimeError(f"group {group} got no assignment of {sorted(offsets)} within 30 s")
            c.poll(0.2)
        c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def _commit_group(h: History, group: str, offsets: Dict[Tuple[str, int], int], protocol: str = "classic") -> None:
    """``group`` commits ``offsets`` (:func:`_commit`), noted in ``h`` as its last positions."""
    _commit(h.bootstrap, group, offsets, protocol)
    h.groups[group] = (tuple(sorted({t for t, _ in offsets})), protocol)
    for (t, p), o in offsets.items():
        h.positions[(group, t, p)] = o


def _alter(bootstrap: str, group: str, offsets: Dict[Tuple[str, int], int]) -> None:
    """``group``'s offsets set by an admin (Kafka takes any offset, past the log end too)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
    for f in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)]).values():
        f.result(30)


def _more_groups(h: History) -> None:
    """The groups committed after ``as_of`` on codecs, holes and the crash topic (the log start's
    are committed in :func:`_write_deleted`, before deleteRecords)."""
    aborted = {p: h.aborted[(CODEC_TOPIC, p)] for p in range(len(CODECS))}
    markers = {p: h.markers[(CODEC_TOPIC, p)] for p in range(len(CODECS))}      # [COMMIT, ABORT]
    _commit_group(h, "rs-codecs-group", {
        (CODEC_TOPIC, 0): markers[0][1],           # gzip: on the ABORT marker
        (CODEC_TOPIC, 1): aborted[1][1],           # snappy: on an aborted record
        (CODEC_TOPIC, 2): markers[2][0],           # lz4: on the COMMIT marker
        (CODEC_TOPIC, 3): 3,                       # zstd: inside the first compressed batch
        (CODEC_TOPIC, 4): markers[4][1] + 6})      # none: the end of the partition
    _commit_group(h, "rs-hole", {(COMPACTED, 0): h.holes[len(h.holes) // 2]})
    _commit_group(h, "rs-crash-g1", {(CRASH, 0): 50})
    _commit_group(h, "rs-crash-g2", {(CRASH, 0): 77}, protocol="consumer")


def _groups(h: History) -> None:
    markers = {}
    for part in range(3):
        aborted = h.aborted[(ORDERS, part)]
        markers[part] = aborted[-1] + 1         # the ABORT marker after the aborted records
    first = {(ORDERS, 0): 2, (ORDERS, 1): 4, (ORDERS, 2): 0}
    _commit(h.bootstrap, "rs-classic", first)
    time.sleep(0.01)                             # the second commit's timestamp is later than as_of
    h.as_of = int(time.time() * 1000)
    time.sleep(0.01)
    second = {(ORDERS, 0): h.aborted[(ORDERS, 0)][1],        # on an aborted record
              (ORDERS, 1): markers[1],                       # on a transaction marker
              (ORDERS, 2): markers[2] + 5}                   # the end of the partition
    _commit(h.bootstrap, "rs-classic", second)
    _commit(h.bootstrap, "rs-848", {(ORDERS, 0): 0, (ORDERS, 1): 7, (ORDERS, 2): 9}, protocol="consumer")
    for (t, p), o in first.items():
        h.positions_as_of[("rs-classic", t, p)] = o
    for (t, p), o in second.items():
        h.positions[("rs-classic", t, p)] = o
    for (t, p), o in {(ORDERS, 0): 0, (ORDERS, 1): 7, (ORDERS, 2): 9}.items():
        h.positions[("rs-848", t, p)] = h.positions_as_of[("rs-848", t, p)] = o
    h.groups["rs-classic"] = ((ORDERS,), "classic")
    h.groups["rs-848"] = ((ORDERS,), "consumer")
    # rs-bad-group: a commit past rs-bad's log end (3), which the broker takes without a look
    _alter(h.bootstrap, "rs-bad-group", {(BAD, 0): 40})


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


