"""The source side of a restore: which partitions, from where to where, and their committed data
records -- every rule asked of the layer that owns it.

Each partition's range is the backfill's hand-off range (:func:`kafkarec.lakehouse.handoff.plan_hand_off`):
[log start, H), H the last stable offset at the chosen end (the log end or an end time), so a
restore is final (no transaction is still open inside it); with the running source's bootstrap
(``spec.bootstrap``) its broker's log start and LSO bound the range as they bound the backfill's.  The records are read through the one
reader, :class:`kafkarec.scan.LogScan`, ``read_committed`` (no control record, no aborted
transaction).  Partition counts and topic configs come from ``__cluster_metadata``
(:func:`kafkarec.cluster.replay`) where the source holds it (a log directory, local or a URI).
"""
from __future__ import annotations

import os
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from kafkarec.errors import UsageError
from kafkarec.restore.spec import RestoreSpec

__all__ = ["SourcePartition", "TopicDescription", "SourcePlan", "plan", "committed_records", "local_log_dir",
           "internal_source", "cluster_state", "log_ends_at", "NOT_COPIED_CONFIGS", "SET_CONFIGS"]

#: topic configs the target decides for itself: tiered storage and throttles name the source
#: cluster's own storage and broker ids
#: (``message.timestamp.type`` is set, not copied: :data:`SET_CONFIGS`)
NOT_COPIED_CONFIGS = frozenset({"message.timestamp.type", "remote.storage.enable", "local.retention.ms", "local.retention.bytes",
                                "remote.log.copy.disable", "remote.log.delete.on.disable",
                                "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"})


#: topic configs a created target topic always has: CreateTime, so the broker keeps the timestamps
#: produced (a source topic's LogAppendTime records carry their append times, restored as given)
SET_CONFIGS = {"message.timestamp.type": "CreateTime"}


class SourcePartition(NamedTuple):
    """A source partition restored: [``start``, ``end``) (its log start, H), ``log_end`` (the log's
    end: no group position can be past it) and the target topic it goes to (same partition)."""
    topic: str
    partition: int
    start: int
    end: int
    log_end: int
    target_topic: str

    @property
    def key(self) -> Tuple[str, int]:
        return (self.topic, self.partition)


class TopicDescription(NamedTuple):
    """A source topic as the target gets it: its partition count and configs (``{}`` when the
    source holds no ``__cluster_metadata``)."""
    partitions: int
    configs: Dict[str, str]


class SourcePlan(NamedTuple):
    partitions: List[SourcePartition]
    topics: Dict[str, TopicDescription]
    #: source topics whose records carry the broker's append times (``message.timestamp.type``
    #: LogAppendTime in the source's ``__cluster_metadata``): only there do record times tell
    #: where the log ended at a moment of the coordinators' clock
    append_time_topics: frozenset = frozenset()
    #: source topics whose ``cleanup.policy`` in the source's ``__cluster_metadata`` includes
    #: ``compact`` (where offset holes are the cleaner's); None where the source holds no
    #: ``__cluster_metadata`` (then no topic's policy is known)
    compacted_topics: Optional[frozenset] = None
    #: the one listing of the source the plan was made over (a :class:`kafkarec.scan.LogScan`
    #: listing, each partition's walk kept in it): the dry run's holes, the log ends at a time and
    #: the committed records are read over it, never listed or judged again; None (a plan made
    #: elsewhere, unpickled): each read lists for itself
    listing: object = None


def local_log_dir(spec: RestoreSpec) -> Optional[str]:
    """The source as a local log directory, or None for a URI (object stores)."""
    src = spec.source
    if src.startswith("file://"):
        src = src[len("file://"):]
    return src if "://" not in src and os.path.isdir(src) else None


def internal_source(spec: RestoreSpec) -> Tuple[str, dict]:
    """``(source, keywords)`` for :mod:`kafkarec.cluster.coordinators` and
    :func:`kafkarec.cluster.replay`: the source's internal topics read where its records are (a local
    log directory on disk; a URI with the spec's storage options; with its tiered-storage root)."""
    local = local_log_dir(spec)
    return (local if local is not None else spec.source), {"storage_options": spec.storage_options,
                                                            "tiered_storage": spec.tiered_storage}


def cluster_state(spec: RestoreSpec, listing=None) -> Optional[dict]:
    """The source's ``__cluster_metadata`` replayed (:func:`kafkarec.cluster.replay`, a local log
    directory or a URI), or None when the source holds none; over ``listing`` (the plan's listing
    of the source) when given, not listed again."""
    from kafkarec.cluster import replay
    source, kw = internal_source(spec)
    if listing is not None:
        if not any(part.topic == "__cluster_metadata" for part in listing.layout.partitions):
            return None
        return replay(source, storage_options=kw["storage_options"], listing=listing).state()
    if os.path.isdir(source):
        if not any(n.startswith("__cluster_metadata-") for n in os.listdir(source)):
            return None
        return replay(source).state()
    try:
        return replay(source, storage_options=kw["storage_options"]).state()
    except FileNotFoundError:
        return None


def plan(spec: RestoreSpec) -> SourcePlan:
    """The partitions to restore and their topics' descriptions."""
    from kafkarec.lakehouse.handoff import plan_hand_off
    from kafkarec.log.selection import Resolver
    # with the running source's bootstrap, its broker's log start and LSO bound each range (the
    # checkpoint lags a deleteRecords): the backfill's rule, asked through its one ListOffsets client
    hand_off = plan_hand_off(spec.source, topics=spec.topics, end_time=spec.end_time,
                             storage_options=spec.storage_options, tiered_storage=spec.tiered_storage,
                             bootstrap=spec.bootstrap)
    resolver = hand_off.listing.resolver if hand_off.listing is not None else Resolver(hand_off.storage)
    parts = sorted((SourcePartition(p.part.topic, p.part.partition, p.start, p.end, resolver.log_end(p.part),
                                    spec.target_topic(p.part.topic)) for p in hand_off.partitions),
                   key=lambda s: s.key)
    if not parts:
        raise UsageError(f"restore: no topic to restore under {spec.source}")
    # one target partition, one source: two would share its producer's transactional id and
    # progress (a rename onto a topic also restored under its own name)
    into: Dict[Tuple[str, int], str] = {}
    for p in parts:
        other = into.setdefault((p.target_topic, p.partition), p.topic)
        if other != p.topic:
            raise UsageError(f"rename: {other} and {p.topic} would both be restored into "
                             f"{p.target_topic}-{p.partition}")
    state = cluster_state(spec, hand_off.listing)
    append_time = frozenset(name for name, configs in (state or {}).get("configs", {}).get("TOPIC", {}).items()
                            if configs.get("message.timestamp.type") == "LogAppendTime")
    compacted = None if state is None else frozenset(
        name for name, configs in state.get("configs", {}).get("TOPIC", {}).items()
        if "compact" in (configs.get("cleanup.policy") or ""))
    # share groups' DLQ topics last: their dead letters' source offsets are translated through the
    # offset maps of the partitions they name (kafkarec/restore/deadletters.py), restored before them
    from kafkarec.dlq import DLQ_ENABLE_CONFIG
    dlq = {name for name, configs in (state or {}).get("configs", {}).get("TOPIC", {}).items()
           if (configs.get(DLQ_ENABLE_CONFIG) or "").lower() == "true"}
    parts.sort(key=lambda s: (s.topic in dlq, s.key))
    return SourcePlan(parts, _descriptions(spec, parts, state), append_time, compacted, hand_off.listing)


def _descriptions(spec: RestoreSpec, parts: List[SourcePartition], state: Optional[dict]
                  ) -> Dict[str, TopicDescription]:
    counts: Dict[str, int] = {}
    for p in parts:
        counts[p.topic] = max(counts.get(p.topic, 0), p.partition + 1)
    configs: Dict[str, Dict[str, str]] = {}
    if state is not None:
        for name in counts:
            topic = state["topics"].get(name)
            if topic is not None:       # the cluster's count: partitions with no folder here count too
                counts[name] = max(counts[name], len(topic["partitions"]))
            configs[name] = {k: v for k, v in state["configs"].get("TOPIC", {}).get(name, {}).items()
                             if k not in NOT_COPIED_CONFIGS}
    return {name: TopicDescription(n, {**configs.get(name, {}), **SET_CONFIGS})
            for name, n in sorted(counts.items())}


def log_ends_at(spec: RestoreSpec, asked: Dict[SourcePartition, List[int]],
                listing=None) -> Dict[Tuple[str, int, int], int]:
    """``{(topic, partition, t): the partition's log end at time t}`` for each ``t`` (ms) asked of a
    partition of the plan: the first offset, at or past its log start, of a record appended after
    t -- Kafka's offsetsForTimes for t + 1, the rule ``--end-time`` cuts the history by -- or, where
    every record is at or before t, the log's end.  Record timestamps stand for append times (exact
    for LogAppendTime topics; for CreateTime, the producers' clocks).  Read from the log's time
    indexes (over ``listing``, the plan's :attr:`SourcePlan.listing`; None: the storage listed once
    more; no batch walked but where an index is not believed)."""
    asked = {p: ts for p, ts in asked.items() if ts}
    if not asked:
        return {}
    from kafkarec.scan import LogScan, ScanConfig
    listed = listing if listing is not None else LogScan(ScanConfig.of(
        spec.source, storage_options=spec.storage_options, tiered_storage=spec.tiered_storage)).listing()
    resolver = listed.resolver
    logs = {log.key: log for log in listed.layout.partitions}
    out: Dict[Tuple[str, int, int], int] = {}
    for part, times in asked.items():
        log = logs.get(part.key)
        if log is None:
            raise UsageError(f"restore: {part.topic}-{part.partition} is no longer under {spec.source}")
        for t in sorted(set(times)):
            hit = resolver.offset_for_time(log, t + 1, log_start=part.start)
            out[(part.topic, part.partition, t)] = part.log_end if hit is None else min(hit[0], part.log_end)
    return out


class Record(NamedTuple):
    """A committed data record as the restore produces it (``timestamp`` in ms)."""
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    timestamp: int
    headers: List[Tuple[str, Optional[bytes]]]


def committed_records(spec: RestoreSpec, topic: str, partition: int, start: int, end: int,
                      listing=None) -> Iterator[Record]:
    """The committed data records of ``topic-partition`` in [``start``, ``end``), in offset order,
    through the one reader (FAILFAST: a batch that cannot be read stops the restore, naming its file
    and byte); planned over ``listing`` (the plan's :attr:`SourcePlan.listing`: neither listed nor
    judged again; None: the source listed for this read)."""
    if start >= end:
        return
    from kafkarec._extras import require
    from kafkarec.scan import LogScan, ScanConfig
    pa = require("pyarrow")
    # threads=1: decoded in the consumer's thread, batch by batch as the restore's producer sends
    # them (the writer, not the decoding, paces this read)
    config = ScanConfig((spec.source,), offset_ranges=((topic, partition, start, end),), read_committed=True,
                        storage_options=spec.storage_options, tiered_storage=spec.tiered_storage,
                        columns=("key", "value", "offset", "timestamp", "headers"), threads=1)
    scan = LogScan(config)
    for rb in scan.read_pieces(scan.pieces(listed=None if listing is None else [listing])):
        offsets = rb.column("offset").to_pylist()
        keys = rb.column("key").to_pylist()
        values = rb.column("value").to_pylist()
        stamps = rb.column("timestamp").cast(pa.int64()).to_pylist()
        headers = rb.column("headers").to_pylist()
        for o, k, v, t, h in zip(offsets, keys, values, stamps, headers):
            yield Record(o, k, v, t, [(x["key"], x["value"]) for x in h or ()])
