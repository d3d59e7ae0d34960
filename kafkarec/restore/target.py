"""The target cluster, through confluent-kafka (librdkafka in its wheels: transactions,
``send_offsets_to_transaction``, read_committed consumers and the admin API in one maintained
client, nothing to install beside it).

What is asked of the target: its topics (created when absent), the restore's progress (the
committed offsets of its progress group, :attr:`RestoreSpec.progress_group`), whether a partition
holds committed records, its partitions' ends, its records read back ``read_committed``, and its
share groups' persisted states (its ``__share_group_state`` read back, for ``--verify``).
Every client failure is a :class:`kafkarec.errors.RestoreError` naming the target, the partition
or group and librdkafka's reason, and saying whether it is retriable (:func:`kafkarec._client.retriable`:
the one rule of which Kafka failures pass when tried again).  Every request of the restore to the target
goes through :func:`retried` (:func:`kafkarec._client.retried`, the one place a retriable failure is
tried again, with Kafka's clients' backoff, within the spec's timeout), as Kafka's own clients retry
them; the shared admin client and ListOffsets are :mod:`kafkarec._client`'s too.
"""
from __future__ import annotations

import time
from typing import Callable, Dict, Iterable, Iterator, List, Tuple, TypeVar

from kafkarec import _client
# the one rule of which Kafka failures pass when tried again, and Kafka's backoff: kafkarec._client's
from kafkarec._client import RETRY_BACKOFF_MAX_S, RETRY_BACKOFF_S, backoff, must_abort, reason, retriable
from kafkarec._extras import require
from kafkarec.errors import RestoreError
from kafkarec.restore.source import Record, SourcePlan
from kafkarec.restore.spec import RestoreSpec

__all__ = ["admin", "client", "result", "reason", "retriable", "failure", "retried", "must_abort", "backoff",
           "ensure_topics", "progress", "list_offsets", "ends", "read_back", "holds_committed_records",
           "share_states", "SHARE_STATE_TOPIC", "RETRY_BACKOFF_S", "RETRY_BACKOFF_MAX_S"]

#: the internal topic the share coordinator keeps the share groups' states in
SHARE_STATE_TOPIC = "__share_group_state"

#: librdkafka's "no offset committed" (RD_KAFKA_OFFSET_INVALID)
NO_OFFSET = -1001

T = TypeVar("T")


def _fail(spec: RestoreSpec):
    """How :mod:`kafkarec._client` makes the restore's errors: a :class:`RestoreError` naming the target."""
    return lambda text, **where: RestoreError(spec.target, text, **where)


def retried(spec: RestoreSpec, what: str, call: Callable[[float], T], **where) -> T:
    """``call(seconds left)``'s answer, tried again after each retriable failure within
    ``spec.timeout`` seconds (:func:`kafkarec._client.retried`, the one retry loop); the failure a
    :class:`RestoreError` saying ``what`` was asked and ``where`` (topic, partition, group)."""
    return _client.retried(what, call, timeout=spec.timeout, fail=_fail(spec), own=RestoreError, **where)


def failure(spec: RestoreSpec, what: str, exc: BaseException, **where) -> RestoreError:
    """A client failure as the restore's error: what was asked, librdkafka's reason, whether it
    is :func:`retriable`; ``where``: topic, partition, group."""
    return _client.failure(_fail(spec), what, exc, **where)


def client(spec: RestoreSpec, kind: str, **extra):
    """A confluent-kafka client of the target (``kind``: ``"Producer"``, ``"Consumer"``), its
    configuration refused as a :class:`RestoreError` (a bad ``--target-property``)."""
    ck = require("confluent_kafka")
    try:
        return getattr(ck, kind)(spec.client_config(**extra))
    except (ck.KafkaException, ValueError, TypeError) as exc:
        raise RestoreError(spec.target, f"the {kind.lower()}'s configuration: {reason(exc)}") from None


def admin(spec: RestoreSpec):
    """The target's admin client, shared by every request of the restore (:func:`kafkarec._client.admin`)."""
    return _client.admin(spec.client_config(), _fail(spec))


def result(spec: RestoreSpec, future, what: str, *, timeout: "float | None" = None, **where):
    """A client future's answer within ``timeout`` seconds (None: the spec's, and 5 s more for the
    client's own bound to answer first); its failure a :class:`RestoreError` saying what was asked
    (retriable or not: :func:`retried` decides whether to ask again)."""
    return _client.result(future, what, timeout=spec.timeout if timeout is None else timeout, fail=_fail(spec),
                          **where)


def _topics(spec: RestoreSpec, asker, what: str, *names: str):
    """The target's topic metadata (``names``: of those only), asked again while it fails retriably."""
    return retried(spec, what, lambda left: asker.list_topics(*names, timeout=left).topics)


def ensure_topics(spec: RestoreSpec, plan: SourcePlan) -> List[str]:
    """Create the target topics that are absent, with the source's partition counts and configs
    (the target's default replication factor), and wait until each of their partitions has a leader;
    refuse a present one with fewer partitions than the source restores into.  Returns the topics
    created."""
    admin_mod = require("confluent_kafka.admin")
    asker = admin(spec)
    present = _topics(spec, asker, "listing topics")
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
        _create(spec, asker, create)
        _wait_leaders(spec, asker, [t.topic for t in create])
    return [t.topic for t in create]


def _create(spec: RestoreSpec, asker, create) -> None:
    """CreateTopics for ``create``, asked again for those whose creation failed retriably; a topic
    found existing by a later try was created by an earlier one whose answer was lost."""
    ck = require("confluent_kafka")
    left_over = {t.topic: t for t in create}
    tried = [False]

    def once(left: float) -> None:
        futures = asker.create_topics(list(left_over.values()), request_timeout=left)
        failed = None
        for name, future in sorted(futures.items()):
            try:
                future.result(timeout=left + 5)
            except Exception as exc:     # KafkaException, or the future's own TimeoutError
                err = _client.kafka_error(exc)
                if not (tried[0] and err is not None and err.code() == ck.KafkaError.TOPIC_ALREADY_EXISTS):
                    failed = failed or failure(spec, "creating the topic", exc, topic=name)
                    continue
            del left_over[name]
        tried[0] = True
        if failed is not None:
            raise failed
    retried(spec, "creating the topic", once)


def _wait_leaders(spec: RestoreSpec, asker, names: Iterable[str]) -> None:
    """Until every partition of the created topics has a leader in the target's metadata (bounded by
    the timeout): a broker answers for a partition once it leads it, and a topic just created has
    none for a moment (LEADER_NOT_AVAILABLE; then its requests fail NOT_LEADER_OR_FOLLOWER until the
    leader has loaded it, which :func:`retried` covers)."""
    deadline = _client.clock() + spec.timeout
    names = list(names)
    tries = 0
    while True:
        topics = _topics(spec, asker, "reading the created topics' metadata")
        waiting = [n for n in names if n not in topics or topics[n].error is not None or not topics[n].partitions
                   or any(p.leader < 0 or p.error is not None for p in topics[n].partitions.values())]
        if not waiting:
            return
        tries += 1
        wait = backoff(tries)
        if _client.clock() + wait > deadline:
            raise RestoreError(spec.target, f"created topic(s) {', '.join(waiting)} have a partition without a "
                                            f"leader after {spec.timeout:g} s", retriable=True)
        _client.pause(wait)


def progress(spec: RestoreSpec, keys: Iterable[Tuple[str, int]], *, stable: bool = True) -> Dict[Tuple[str, int], int]:
    """``{(target topic, partition): next source offset}`` the progress group holds; partitions with
    none are absent.  ``stable``: wait (bounded by the timeout) while a transaction's offsets are
    pending (Kafka's ``require_stable``: a fenced run's are aborted within moments: its
    UNSTABLE_OFFSET_COMMIT is retriable); else the last committed ones."""
    ck = require("confluent_kafka")
    keys = sorted(set(keys))
    if not keys:
        return {}
    return retried(spec, "reading the restore's progress", lambda left: _progress(spec, ck, keys, stable, left),
                   group=spec.progress_group)


def _progress(spec: RestoreSpec, ck, keys, stable: bool, left: float):
    request = [ck.ConsumerGroupTopicPartitions(spec.progress_group, [ck.TopicPartition(t, p) for t, p in keys])]
    asker = admin(spec)
    futures = asker.list_consumer_group_offsets(request, require_stable=stable, request_timeout=left)
    out = {}
    for group, future in futures.items():
        answer = result(spec, future, "reading the restore's progress", timeout=left, group=group)
        for tp in answer.topic_partitions:
            if tp.error is not None:
                raise failure(spec, "reading the restore's progress", tp.error, group=group, topic=tp.topic,
                              partition=tp.partition)
            if tp.offset != NO_OFFSET and tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
    return out


def list_offsets(spec: RestoreSpec, keys: Iterable[Tuple[str, int]], which: str = "latest", *,
                 committed: bool = True) -> Dict[Tuple[str, int], int]:
    """``{(target topic, partition): offset}``: ListOffsets ``which`` (``"latest"``, ``"earliest"``),
    ``committed``: under read_committed (the last stable offset for ``latest``); asked again while a
    partition's answer fails retriably (:func:`kafkarec._client.list_offsets`, the one client of it)."""
    keys = sorted(set(keys))
    if not keys:
        return {}
    return _client.list_offsets(admin(spec), keys, which, committed=committed, timeout=spec.timeout,
                                fail=_fail(spec), own=RestoreError)


def ends(spec: RestoreSpec, keys: Iterable[Tuple[str, int]]) -> Dict[Tuple[str, int], int]:
    """``{(target topic, partition): its end}``: ListOffsets ``LATEST`` under read_committed (the
    last stable offset: where a consumer placed at the end reads the next record)."""
    return list_offsets(spec, keys, "latest")


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
        passing = None          # the last retriable error the consumer reported (it retries them itself)
        while left:
            msg = consumer.poll(0.1)
            err = None if msg is None else msg.error()
            if msg is None or (err is not None and err.code() != ck.KafkaError._PARTITION_EOF and retriable(err)):
                passing = err or passing
                if time.monotonic() > deadline:
                    raise RestoreError(spec.target, f"reading back: no record and no end of the partition "
                                                    f"within {spec.timeout:g} s"
                                       + (f" (last: {reason(passing)})" if passing is not None else ""),
                                       topic=topic, partition=min(left), retriable=True)
                continue
            deadline = time.monotonic() + spec.timeout
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
    key = (topic, partition)
    marks = [list_offsets(spec, [key], which, committed=False)[key] for which in ("earliest", "latest")]
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
    (:func:`kafkarec.cluster.coordinators.replay_share_state`), each state's topic id named through the
    target's metadata.  A target without the topic has no share-group state."""
    from kafkarec.cluster.coordinators import replay_share_state
    ck = require("confluent_kafka")
    asker = admin(spec)
    listed = _topics(spec, asker, f"listing {SHARE_STATE_TOPIC}", SHARE_STATE_TOPIC).get(SHARE_STATE_TOPIC)
    if listed is None or listed.error is not None or not listed.partitions:
        return {}
    names = sorted(set(topics))
    ids: Dict[str, str] = {}
    if names:
        def described(left: float) -> Dict[str, str]:
            futures = asker.describe_topics(ck.TopicCollection(names), request_timeout=left)
            return {_uuid(result(spec, future, "describing the topic", timeout=left, topic=name).topic_id): name
                    for name, future in futures.items()}
        ids = retried(spec, "describing the topics", described)
    states: Dict[Tuple[str, str, int], dict] = {}
    # one consumer for every partition (the topic has 50 by default); a state's records all lie in
    # one partition (the coordinator's, by its key), in order
    for partition, r in _read_back(spec, SHARE_STATE_TOPIC, sorted(listed.partitions)):
        replay_share_state(states, r.key, r.value, r.offset, r.timestamp, f"{SHARE_STATE_TOPIC}-{partition}")
    return {(group, ids[topic_id], partition): state for (group, topic_id, partition), state in states.items()
            if topic_id in ids}
