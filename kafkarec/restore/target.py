"""The target cluster, through confluent-kafka (librdkafka in its wheels: transactions,
``send_offsets_to_transaction``, read_committed consumers and the admin API in one maintained
client, nothing to install beside it).

What is asked of the target: its topics (created when absent), the restore's progress (the
committed offsets of its progress group, :attr:`RestoreSpec.progress_group`), whether a partition
holds committed records, its partitions' ends, its records read back ``read_committed``, and its
share groups' persisted states (its ``__share_group_state`` read back, for ``--verify``).
Every client failure is a :class:`kafkarec.errors.RestoreError` naming the target, the partition
or group and librdkafka's reason, and saying whether it is retriable (:func:`retriable`: the one
rule of which Kafka failures pass when tried again).
"""
from __future__ import annotations

import concurrent.futures
import time
from typing import Dict, Iterable, Iterator, List, Tuple

from kafkarec._extras import require
from kafkarec.errors import RestoreError
from kafkarec.restore.source import Record, SourcePlan
from kafkarec.restore.spec import RestoreSpec

__all__ = ["admin", "client", "result", "reason", "retriable", "failure", "ensure_topics", "progress", "ends",
           "read_back", "holds_committed_records", "share_states", "SHARE_STATE_TOPIC"]

#: the internal topic the share coordinator keeps the share groups' states in
SHARE_STATE_TOPIC = "__share_group_state"

#: librdkafka's "no offset committed" (RD_KAFKA_OFFSET_INVALID)
NO_OFFSET = -1001


def reason(exc: BaseException) -> str:
    """librdkafka's error text of a client exception (or of its ``KafkaError``)."""
    err = exc if hasattr(exc, "str") else (exc.args[0] if getattr(exc, "args", None) else None)
    text = err.str() if hasattr(err, "str") else str(exc)
    return text or type(exc).__name__


# Kafka's errors whose exceptions are RetriableException in its Errors.java (a coordinator loading
# or moving, a topic's metadata not there yet, a leader not there, a request timed out, not enough
# replicas, a transaction's offsets pending), and librdkafka's own for a broker or coordinator not
# reached in time.  The client's KafkaError.retriable() is set for its transactional API's errors
# only: an admin future's or a delivery report's error carries its code alone.
_RETRIABLE_CODES = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
                    "UNKNOWN_TOPIC_OR_PART", "LEADER_NOT_AVAILABLE", "NOT_LEADER_FOR_PARTITION",
                    "PREFERRED_LEADER_NOT_AVAILABLE", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
                    "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "KAFKA_STORAGE_ERROR",
                    "NOT_CONTROLLER", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE",
                    "UNSTABLE_OFFSET_COMMIT", "CONCURRENT_TRANSACTIONS", "THROTTLING_QUOTA_EXCEEDED",
                    "_TRANSPORT", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "_MSG_TIMED_OUT", "_ALL_BROKERS_DOWN",
                    "_WAIT_COORD")


def retriable(exc: BaseException) -> bool:
    """Whether a client failure (a ``KafkaException``, a ``KafkaError``, a future's timeout) may pass
    when the same work is tried again: what :attr:`kafkarec.errors.KafkaRecError.retriable` of the
    restore's errors says."""
    # a future not answered in time: concurrent.futures' own TimeoutError before Python 3.11
    if isinstance(exc, (TimeoutError, concurrent.futures.TimeoutError)):
        return True
    ck = require("confluent_kafka")
    err = exc.args[0] if isinstance(exc, ck.KafkaException) and exc.args else exc
    if not isinstance(err, ck.KafkaError):
        return False
    return bool(err.retriable()) or err.code() in {getattr(ck.KafkaError, n) for n in _RETRIABLE_CODES
                                                     if hasattr(ck.KafkaError, n)}


def failure(spec: RestoreSpec, what: str, exc: BaseException, **where) -> RestoreError:
    """A client failure as the restore's error: what was asked, librdkafka's reason, whether it
    is :func:`retriable`; ``where``: topic, partition, group."""
    return RestoreError(spec.target, f"{what}: {reason(exc)}", retriable=retriable(exc), **where)


def client(spec: RestoreSpec, kind: str, **extra):
    """A confluent-kafka client of the target (``kind``: ``"Producer"``, ``"Consumer"``), its
    configuration refused as a :class:`RestoreError` (a bad ``--target-property``)."""
    ck = require("confluent_kafka")
    try:
        return getattr(ck, kind)(spec.client_config(**extra))
    except (ck.KafkaException, ValueError, TypeError) as exc:
        raise RestoreError(spec.target, f"the {kind.lower()}'s configuration: {reason(exc)}") from None


def admin(spec: RestoreSpec):
    ck = require("confluent_kafka")
    try:
        return require("confluent_kafka.admin").AdminClient(spec.client_config())
    except (ck.KafkaException, ValueError, TypeError) as exc:
        raise RestoreError(spec.target, f"the admin client's configuration: {reason(exc)}") from None


def result(spec: RestoreSpec, future, what: str, **where):
    """A client future's answer; its failure a :class:`RestoreError` saying what was asked."""
    return _result(spec, future, what, **where)


def _result(spec: RestoreSpec, future, what: str, **where):
    try:
        return future.result(timeout=spec.timeout + 5)
    except Exception as exc:     # KafkaException, or the future's own TimeoutError
        raise failure(spec, what, exc, **where) from None


def ensure_topics(spec: RestoreSpec, plan: SourcePlan) -> List[str]:
    """Create the target topics that are absent, with the source's partition counts and configs
    (the target's default replication factor); refuse a present one with fewer partitions than the
    source restores into.  Returns the topics created."""
    admin_mod = require("confluent_kafka.admin")
    asker = admin(spec)
    try:
        present = asker.list_topics(timeout=spec.timeout).topics
    except Exception as exc:
        raise failure(spec, "listing topics", exc) from None
    needed: Dict[str, Tuple[str, int]] = {}
    for p in plan.partitions:
        src, count = needed.get(p.target_topic, (p.topic, 0))
        needed[p.target_topic] = (p.topic, max(count, p.partition + 1))
    create = []
    for tt, (src, count) in sorted(needed.items()):
        if tt in present:
            have = len(present[tt].partitions)
            if have < count:
                raise RestoreError(spec.target, f"has {have} partition(s), the source restores into {count}",
                                   topic=tt)
            continue
        desc = plan.topics[src]
        create.append(admin_mod.NewTopic(tt, num_partitions=max(desc.partitions, count), replication_factor=-1,
                                         config=dict(desc.configs)))
    if create:
        for name, future in asker.create_topics(create, request_timeout=spec.timeout).items():
            _result(spec, future, "creating the topic", topic=name)
        _wait_leaders(spec, asker, [t.topic for t in create])
    return [t.topic for t in create]


def _wait_leaders(spec: RestoreSpec, asker, names: Iterable[str]) -> None:
    """Until every partition of the created topics has a leader (bounded by the timeout)."""
    deadline = time.monotonic() + spec.timeout
    names = list(names)
    while True:
        topics = asker.list_topics(timeout=spec.timeout).topics
        if all(n in topics and topics[n].partitions and all(p.leader >= 0 for p in topics[n].partitions.values())
               for n in names):
            return
        if time.monotonic() > deadline:
            raise RestoreError(spec.target, f"created topics {', '.join(names)} have no leader after "
                                            f"{spec.timeout:.0f} s", retriable=True)
        time.sleep(0.1)


def progress(spec: RestoreSpec, keys: Iterable[Tuple[str, int]], *, stable: bool = True) -> Dict[Tuple[str, int], int]:
    """``{(target topic, partition): next source offset}`` the progress group holds; partitions with
    none are absent.  ``stable``: wait (bounded by the timeout) while a transaction's offsets are
    pending (Kafka's ``require_stable``: a fenced run's are aborted within moments); else the last
    committed ones."""
    ck = require("confluent_kafka")
    keys = sorted(set(keys))
    if not keys:
        return {}
    deadline = time.monotonic() + spec.timeout
    while True:
        out, unstable = _progress(spec, ck, keys, stable)
        if not unstable:
            return out
        if time.monotonic() > deadline:
            raise RestoreError(spec.target, f"the restore's progress stayed pending (an open transaction) for "
                                            f"{spec.timeout:.0f} s", group=spec.progress_group, retriable=True)
        time.sleep(0.1)


def _progress(spec: RestoreSpec, ck, keys, stable: bool):
    request = [ck.ConsumerGroupTopicPartitions(spec.progress_group, [ck.TopicPartition(t, p) for t, p in keys])]
    asker = admin(spec)         # alive until its futures are done
    futures = asker.list_consumer_group_offsets(request, require_stable=stable, request_timeout=spec.timeout)
    out = {}
    for group, future in futures.items():
        try:
            answer = future.result(timeout=spec.timeout + 5)
        except ck.KafkaException as exc:
            if exc.args and exc.args[0].code() == ck.KafkaError.UNSTABLE_OFFSET_COMMIT:
                return {}, True
            raise failure(spec, "reading the restore's progress", exc, group=group) from None
        except Exception as exc:
            raise failure(spec, "reading the restore's progress", exc, group=group) from None
        for tp in answer.topic_partitions:
            if tp.error is not None:
                if tp.error.code() == ck.KafkaError.UNSTABLE_OFFSET_COMMIT:
                    return {}, True
                raise failure(spec, "reading the restore's progress", tp.error, group=group, topic=tp.topic,
                              partition=tp.partition)
            if tp.offset != NO_OFFSET and tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
    return out, False


def ends(spec: RestoreSpec, keys: Iterable[Tuple[str, int]]) -> Dict[Tuple[str, int], int]:
    """``{(target topic, partition): its end}``: ListOffsets ``LATEST`` under read_committed (the
    last stable offset: where a consumer placed at the end reads the next record)."""
    ck = require("confluent_kafka")
    admin_mod = require("confluent_kafka.admin")
    keys = sorted(set(keys))
    if not keys:
        return {}
    asker = admin(spec)         # alive until its futures are done
    futures = asker.list_offsets({ck.TopicPartition(t, p): admin_mod.OffsetSpec.latest() for t, p in keys},
                                  isolation_level=ck.IsolationLevel.READ_COMMITTED, request_timeout=spec.timeout)
    return {(tp.topic, tp.partition): _result(spec, f, "ListOffsets LATEST", topic=tp.topic,
                                              partition=tp.partition).offset
            for tp, f in futures.items()}


def _consumer(spec: RestoreSpec):
    return client(spec, "Consumer", **{
        "group.id": spec.progress_group + ".reader", "enable.auto.commit": False, "isolation.level": "read_committed",
        "enable.partition.eof": True, "auto.offset.reset": "earliest",
        # the end shows as a fetch that answers nothing: answered at once, not after Kafka's 500 ms
        # wait for more (records that are there are answered at once either way)
        "fetch.wait.max.ms": 10})


def read_back(spec: RestoreSpec, topic: str, partition: int, *, first_only: bool = False) -> Iterator[Record]:
    """The target partition's committed records from its start to its last stable offset, in order
    (``first_only``: at most the first).  Each wait is bounded by the timeout."""
    records = _read_back(spec, topic, [partition])
    try:
        for _, record in records:
            yield record
            if first_only:
                return
    finally:
        records.close()         # its consumer closed now, not when collected


def _read_back(spec: RestoreSpec, topic: str, partitions: List[int]) -> Iterator[Tuple[int, Record]]:
    """``(partition, record)``: the committed records of ``partitions`` of the target's ``topic``,
    each partition's from its start to its last stable offset, in order, by one consumer."""
    ck = require("confluent_kafka")
    consumer = _consumer(spec)
    left = set(partitions)
    try:
        # offset 0, not OFFSET_BEGINNING: librdkafka asks a logical offset's position first (seen:
        # 0.5 s a partition); a log starting past 0 answers out of range, and auto.offset.reset
        # (earliest) starts at its start then
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in sorted(left)])
        deadline = time.monotonic() + spec.timeout
        while left:
            msg = consumer.poll(0.1)
            if msg is None:
                if time.monotonic() > deadline:
                    raise RestoreError(spec.target, f"reading back: no record and no end of the partition "
                                                    f"within {spec.timeout:.0f} s", topic=topic, partition=min(left),
                                       retriable=True)
                continue
            deadline = time.monotonic() + spec.timeout
            err = msg.error()
            if err is not None:
                if err.code() == ck.KafkaError._PARTITION_EOF:
                    left.discard(msg.partition())
                    continue
                raise failure(spec, "reading back", err, topic=topic, partition=msg.partition())
            ts_type, ts = msg.timestamp()
            yield msg.partition(), Record(msg.offset(), msg.key(), msg.value(), ts, list(msg.headers() or ()))
    finally:
        consumer.close()


def holds_committed_records(spec: RestoreSpec, topic: str, partition: int) -> bool:
    """Whether the target partition holds a committed record (aborted ones, such as a killed
    restore's open transaction, do not count): an empty log (its start at its high watermark)
    holds none; otherwise a read_committed consumer answers."""
    ck = require("confluent_kafka")
    admin_mod = require("confluent_kafka.admin")
    asker = admin(spec)
    tp = ck.TopicPartition(topic, partition)
    marks = []
    for offset_spec in (admin_mod.OffsetSpec.earliest(), admin_mod.OffsetSpec.latest()):
        future = asker.list_offsets({tp: offset_spec}, request_timeout=spec.timeout)[tp]
        marks.append(_result(spec, future, "ListOffsets", topic=topic, partition=partition).offset)
    if marks[0] >= marks[1]:
        return False
    return any(True for _ in read_back(spec, topic, partition, first_only=True))


def _uuid(u) -> str:
    """A confluent-kafka ``Uuid`` as Kafka writes a topic id (URL-safe base64, no padding), as
    kafkarec's reader of the internal topics gives it."""
    import base64
    raw = (u.get_most_significant_bits() & (1 << 64) - 1).to_bytes(8, "big") + \
        (u.get_least_significant_bits() & (1 << 64) - 1).to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def share_states(spec: RestoreSpec, topics: Iterable[str]) -> Dict[Tuple[str, str, int], dict]:
    """``{(share group, topic, partition): state}`` of ``topics`` on the target, as its share
    coordinator persisted them: the target's ``__share_group_state`` read back from its start to its
    end (a consumer may read an internal topic; no client of Python's asks a share group's offsets)
    and replayed by the rule that reads a source's
    (:func:`kafkarec.internal.analysis.replay_share_state`), each state's topic id named through the
    target's metadata.  A target without the topic has no share-group state."""
    from kafkarec.internal.analysis import replay_share_state
    ck = require("confluent_kafka")
    asker = admin(spec)
    try:
        listed = asker.list_topics(SHARE_STATE_TOPIC, timeout=spec.timeout).topics.get(SHARE_STATE_TOPIC)
    except ck.KafkaException as exc:
        raise failure(spec, f"listing {SHARE_STATE_TOPIC}", exc) from None
    if listed is None or listed.error is not None or not listed.partitions:
        return {}
    names = sorted(set(topics))
    ids: Dict[str, str] = {}
    if names:
        futures = asker.describe_topics(ck.TopicCollection(names), request_timeout=spec.timeout)
        for name, future in futures.items():
            ids[_uuid(_result(spec, future, "describing the topic", topic=name).topic_id)] = name
    states: Dict[Tuple[str, str, int], dict] = {}
    # one consumer for every partition (the topic has 50 by default); a state's records all lie in
    # one partition (the coordinator's, by its key), in order
    for partition, r in _read_back(spec, SHARE_STATE_TOPIC, sorted(listed.partitions)):
        replay_share_state(states, r.key, r.value, r.offset, r.timestamp, f"{SHARE_STATE_TOPIC}-{partition}")
    return {(group, ids[topic_id], partition): state for (group, topic_id, partition), state in states.items()
            if topic_id in ids}
