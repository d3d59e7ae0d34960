"""The session broker's topics whose log start offset ``Admin.deleteRecords`` moved (issue 40).

After ``deleteRecords`` the broker's segment files still hold the records below the new log
start offset until a whole segment lies below it (then the broker deletes that segment), and
Kafka's consumer never returns them.  One partition for each position the issue lists:

* ``deleted-in-segment`` -- one segment, the log start inside it (inside a batch, too);
* ``deleted-segments`` -- small segments, the log start past whole segments the broker then
  deleted, inside a later one;
* ``deleted-in-aborted`` -- two transactional producers, small segments, the log start inside
  an aborted transaction of each partition, past the segments that held the transaction's
  first records (:func:`_write_aborted`);
* ``deleted-to-end`` -- one segment, every record deleted (the log start at the high watermark).

They are written with the other topics (:func:`produce.produce_all`) but kept out of
``BrokerData.topics``: below the log start the files hold more than the consumer reads, which the
tests of today's data topics do not expect (``BrokerData.log_start_acked``,
``BrokerData.log_starts``).  :func:`wait_deleted` waits until the broker has deleted the
segments below each log start and checkpointed the log start offsets
(``log-start-offset-checkpoint``; ``log.flush.start.offset.checkpoint.interval.ms`` is short on
the test broker), so a read of the live log dir and a copy of it find them.
"""
from __future__ import annotations

import os
import time
from typing import Dict, List, Tuple

from support.brokers import produce

IN_SEGMENT = "deleted-in-segment"
PAST_SEGMENTS = "deleted-segments"
IN_ABORTED = "deleted-in-aborted"
TO_END = "deleted-to-end"
TOPICS = (IN_SEGMENT, PAST_SEGMENTS, IN_ABORTED, TO_END)
CHECKPOINT = "log-start-offset-checkpoint"


def topic_infos() -> List[produce.TopicInfo]:
    return [
        produce.TopicInfo(IN_SEGMENT, 1, {}, "confluent-kafka", "lz4",
                          note="deleteRecords inside the one segment, inside a batch"),
        produce.TopicInfo(PAST_SEGMENTS, 1, dict(produce.SMALL_SEGMENT), "confluent-kafka", "none",
                          note="deleteRecords past whole segments (deleted by the broker)"),
        produce.TopicInfo(IN_ABORTED, 2, dict(produce.SMALL_SEGMENT), "confluent-kafka", "zstd/none",
                          transactional=True, note="deleteRecords inside an aborted transaction"),
        produce.TopicInfo(TO_END, 1, {}, "confluent-kafka", "none",
                          note="deleteRecords up to the high watermark"),
    ]


def _write_aborted(bootstrap: str) -> Tuple[List[produce.Acked], Dict[int, int]]:
    """:data:`IN_ABORTED`: on each partition a transaction of producer ``a`` written in three
    flushed batches (each rolls a segment: the record timestamps are seconds apart and
    ``segment.ms`` is 100) around a transaction of producer ``b`` that commits, then ``a``
    aborts, then ``a`` commits one more.  Returns the acknowledged records and the cut per
    partition: inside ``a``'s aborted transaction, past the segments of its first batch
    (partition 0 inside a batch, partition 1 at a batch's first record)."""
    a = produce._cf_producer(bootstrap, **{"transactional.id": f"{IN_ABORTED}-a", "compression.type": "zstd"})
    b = produce._cf_producer(bootstrap, **{"transactional.id": f"{IN_ABORTED}-b", "compression.type": "none"})
    a.init_transactions(30)
    b.init_transactions(30)
    acked: List[produce.Acked] = []
    batches: Dict[int, List[List[produce.Acked]]] = {0: [], 1: []}
    i = 0

    def write(prod, name, n, committed):
        nonlocal i
        rep = produce._Reports(committed)
        for part in (0, 1):
            for _ in range(n):
                h = produce.headers_for(i) + [("from", name.encode())]
                prod.produce(IN_ABORTED, value=produce.value_for(i, IN_ABORTED), key=produce.key_for(i),
                             headers=h, partition=part, timestamp=produce.BASE_TS + 1000 * i,
                             on_delivery=rep.callback(h))
                i += 1
        produce._flush(prod)
        if rep.errors:
            raise RuntimeError(f"{IN_ABORTED}: {rep.errors[:3]}")
        acked.extend(rep.acked)
        return rep.acked

    a.begin_transaction()
    for k in range(3):
        for rec in sorted(write(a, "a", 8, False), key=lambda r: r.offset):
            if not batches[rec.partition] or len(batches[rec.partition][-1]) == 8:
                batches[rec.partition].append([])
            batches[rec.partition][-1].append(rec)
        if k == 1:
            b.begin_transaction()
            write(b, "b", 5, True)
            b.commit_transaction(30)
        time.sleep(0.15)
    a.abort_transaction(30)
    a.begin_transaction()
    write(a, "a", 8, True)
    a.commit_transaction(30)
    return acked, {0: batches[0][2][3].offset, 1: batches[1][1][0].offset}


def write(bootstrap: str) -> Tuple[List[produce.Acked], Dict[Tuple[str, int], int]]:
    """Write the topics and move their log start offsets; returns the acknowledged records and
    the log start offset ``deleteRecords`` set per topic-partition."""
    from confluent_kafka import OFFSET_END, TopicPartition
    acked = produce.produce_confluent(bootstrap, IN_SEGMENT, 240, rounds=1, pause=0,
                                      **{"compression.type": "lz4", "batch.size": 16384})
    acked += produce.produce_confluent(bootstrap, PAST_SEGMENTS, 240, rounds=3, pause=0.15)
    txn, aborted_cuts = _write_aborted(bootstrap)
    acked += txn
    acked += produce.produce_confluent(bootstrap, TO_END, 100, rounds=1, pause=0)
    cuts = {(IN_SEGMENT, 0): 101, (PAST_SEGMENTS, 0): 170,
            (IN_ABORTED, 0): aborted_cuts[0], (IN_ABORTED, 1): aborted_cuts[1],
            (TO_END, 0): OFFSET_END}
    admin = produce._admin(bootstrap)
    futures = admin.delete_records([TopicPartition(t, p, o) for (t, p), o in cuts.items()],
                                   operation_timeout=30, request_timeout=30)
    starts = {}
    for tp, future in futures.items():
        starts[(tp.topic, tp.partition)] = future.result(timeout=30).low_watermark
    assert starts[(TO_END, 0)] == 100 and starts[(IN_SEGMENT, 0)] == 101, starts
    return acked, starts


def _bases(log_dir: str, topic: str, partition: int) -> List[int]:
    d = os.path.join(log_dir, f"{topic}-{partition}")
    return sorted(int(n[:-4]) for n in os.listdir(d) if n.endswith(".log"))


def wait_deleted(log_dir: str, starts: Dict[Tuple[str, int], int], timeout: float = 60) -> None:
    """Until the broker has deleted every segment that lies wholly below a log start of
    ``starts`` (Kafka deletes a segment once the next one starts at or below the log start) and
    ``log-start-offset-checkpoint`` holds every log start past its partition's first segment's
    base offset (Kafka writes no entry for the others); bounded."""
    deadline = time.monotonic() + timeout
    while True:
        written = produce._checkpoint(os.path.join(log_dir, CHECKPOINT))
        bases = {tp: _bases(log_dir, *tp) for tp in starts}
        below = {tp: [b for b in bases[tp][1:] if b <= start] for tp, start in starts.items()}
        if (not any(below.values()) and all(written.get(tp) == start or bases[tp][0] == start
                                            for tp, start in starts.items())):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the broker did not checkpoint the log starts {starts} and delete the "
                               f"segments below them within {timeout} s: checkpoint {written}, "
                               f"segments starting at or below them after the first {below}")
        time.sleep(0.3)


def stale_checkpoint_dir(kafka_broker, dest: str, topic: str) -> str:
    """``topic`` (one partition, 60 records) written through the live broker, ``deleteRecords`` to
    offset 25, and the log dir as it stands until the broker next rewrites
    ``log-start-offset-checkpoint`` (every
    log.flush.start.offset.checkpoint.interval.ms: 60 s by default, 1 s on the session broker, which
    other tests need): the partition's files after the call, the checkpoint from before it.  The
    copy fixes that window, so the test does not race the broker's scheduler."""
    import shutil
    from support.brokers.kafka_broker import copy_live_dir
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import NewTopic
    admin = produce._admin(kafka_broker.bootstrap)
    for f in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30, request_timeout=30).values():
        f.result(timeout=30)
    produce.produce_confluent(kafka_broker.bootstrap, topic, 60, rounds=1, pause=0)
    os.makedirs(dest)
    checkpoint = os.path.join(kafka_broker.log_dir, CHECKPOINT)
    shutil.copy(checkpoint, dest)                          # before the deleteRecords
    shutil.copy(os.path.join(kafka_broker.log_dir, "meta.properties"), dest)
    future, = admin.delete_records([TopicPartition(topic, 0, 25)], operation_timeout=30,
                                   request_timeout=30).values()
    assert future.result(timeout=30).low_watermark == 25
    copy_live_dir(kafka_broker.partition_dir(topic, 0), os.path.join(dest, f"{topic}-0"))
    assert (topic, 0) not in produce._checkpoint(os.path.join(dest, CHECKPOINT))
    return dest
