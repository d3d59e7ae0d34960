"""The hand-off point: per partition, the offset H where a backfill stops and the live writer
goes on.

H is the last stable offset (LSO) at the chosen end of the log: the default end is the end of
what is readable (the log end offset); given end offsets or an end time (the first offset whose
record's timestamp is at or after it, Kafka's ``offsetsForTimes``) stop it earlier.  A
transaction still open at that end holds H at its first offset, as it holds a ``read_committed``
consumer: every record below H is decided (committed or aborted), so the backfill of [start, H)
is final and the live writer, resuming at H, reads each later record once.  ``start`` is the
partition's log start offset (what a consumer's ``earliest`` is); where a running broker is
reachable (``bootstrap``) it is asked too (:mod:`kafkarec.lakehouse.broker`: the log directory's
checkpoint lags it), and the later start and the earlier end hold.

Every rule here is the log layer's: the log start (:meth:`kafkarec.log.selection.Resolver.log_start`),
the log end and time lookups (:class:`~kafkarec.log.selection.Resolver`), and which batches a
``read_committed`` consumer does not see and where the LSO is, both read off one walk of the
partition by the transaction rule (:meth:`kafkarec.scan.PartitionWalk.committed_view`).
"""
from __future__ import annotations

import logging
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

from kafkarec.errors import SelectionError, UsageError
from kafkarec.lakehouse import broker
from kafkarec.log import selection
from kafkarec.log.layout import PartitionLog

__all__ = ["HandOff", "PartitionHandOff", "HandOffPlan", "hand_off_points", "plan_hand_off"]

log = logging.getLogger("kafkarec")


class HandOff(NamedTuple):
    """One partition's hand-off: ``start`` (its log start offset) and ``end`` (H: the last stable
    offset at the chosen end; the live writer resumes here)."""
    start: int
    end: int


class PartitionHandOff(NamedTuple):
    """A partition to backfill: its log and [``start``, ``end``).  What a ``read_committed``
    consumer does not see of it is its plan's listing's (:attr:`HandOffPlan.listing`), judged
    once there and asked by the read."""
    part: PartitionLog
    start: int
    end: int

    @property
    def key(self) -> Tuple[str, int]:
        return (self.part.topic, self.part.partition)


class HandOffPlan(NamedTuple):
    """The partitions to backfill, with the one listing they were planned over (a
    :class:`kafkarec.scan.LogScan` listing whose walks hold each partition's transaction verdict):
    a read given it (``LogScan.pieces(listed=[plan.listing])``) neither lists nor judges again.
    None: planned elsewhere (the read lists for itself)."""
    storage: object
    partitions: List[PartitionHandOff]
    listing: object = None

    def points(self) -> Dict[Tuple[str, int], HandOff]:
        return {p.key: HandOff(p.start, p.end) for p in self.partitions}


def _topic_names(topics) -> Optional[frozenset]:
    if topics is None:
        return None
    names = topics.split(",") if isinstance(topics, str) else topics
    out = frozenset(t.strip() for t in names if t and t.strip())
    if not out:
        raise UsageError("topics: no topic named")
    return out


def _end_offset_of(end_offsets, topic: str, partition: int) -> Optional[int]:
    if end_offsets is None:
        return None
    v = end_offsets.get((topic, partition))
    if v is None and isinstance(end_offsets.get(topic), dict):
        by_partition = end_offsets[topic]
        v = by_partition.get(partition, by_partition.get(str(partition)))
    if v is not None and int(v) < 0:
        raise SelectionError(f"end offset {v} for {topic}-{partition}: offsets are 0 or more")
    return None if v is None else int(v)


def plan_hand_off(uri: str, *, topics: Union[str, Iterable[str], None] = None, end_offsets=None,
                  end_time=None, storage_options=None, tiered_storage: Optional[str] = None,
                  bootstrap: Optional[str] = None) -> HandOffPlan:
    """:func:`hand_off_points` with what a backfill reads besides: the storage, each partition's
    log and the spans a read_committed consumer does not see."""
    from kafkarec.scan import LogScan, ScanConfig
    # the log as the one reader lists and walks it (its storage and tiered options)
    scan = LogScan(ScanConfig.of(uri, storage_options=storage_options, tiered_storage=tiered_storage,
                                 isolation_level="read_committed"))
    listed = scan.listing()
    names = _topic_names(topics)
    end_ms = None if end_time is None else selection.parse_time(end_time)
    # Kafka's internal topics (__consumer_offsets, __transaction_state...) are no table's data
    walks = [w for w in scan.partition_walks([listed]) if w.part.topic is not None and w.part.partition is not None
             and ((w.part.topic in names) if names is not None else not w.part.topic.startswith("__"))]
    resolver = listed.resolver
    live = {} if bootstrap is None else broker.list_offsets(bootstrap, [w.key for w in walks])
    out = []
    for walk in walks:
        part = walk.part
        start = resolver.log_start(part)
        asked = live.get(part.key)
        if asked is not None:
            # the checkpoint lags a running broker's deleteRecords and retention: the later start holds
            start = max(start, asked.earliest)
        end = _end_offset_of(end_offsets, part.topic, part.partition)
        if end is None and end_ms is not None:
            hit = resolver.offset_for_time(part, end_ms, log_start=start)
            end = None if hit is None else hit[0]
        walk.facts()        # the one walk: the log end below is read off it (its segments' last offsets)
        log_end = resolver.log_end(part)
        if asked is not None:
            # above the broker's last stable offset (its high watermark at most) nothing is decided
            log_end = min(log_end, asked.stable)
        end = log_end if end is None else min(end, log_end)
        view = walk.committed_view(end)
        h = max(start, end if view.stable_end is None else view.stable_end)
        for lost_start, lost_end in walk.lost:
            if lost_start < h and lost_end > start:
                log.warning("kafkarec: offsets [%d, %d) of %s-%d are in no copy of the log; the "
                            "backfill cannot hold them", lost_start, lost_end, part.topic, part.partition)
        out.append(PartitionHandOff(part, start, h))
    if names is not None:
        missing = sorted(names - {p.part.topic for p in out})
        if missing:
            raise SelectionError(f"topic(s) {', '.join(missing)} not found under {uri}")
    return HandOffPlan(listed.layout.storage, out, listed)


def hand_off_points(uri: str, *, topics: Union[str, Iterable[str], None] = None, end_offsets=None,
                    end_time=None, storage_options=None, tiered_storage: Optional[str] = None,
                    bootstrap: Optional[str] = None) -> Dict[Tuple[str, int], HandOff]:
    """``{(topic, partition): HandOff(start, end)}`` for the log under ``uri`` (a log directory,
    local or on an object store, ``storage_options`` as everywhere): ``end`` is H, the last
    stable offset at the chosen end, ``start`` the log start offset.

    ``topics``: names (a list or ``"a,b"``; default every topic but Kafka's internal ``__*``
    ones); ``end_offsets``: ``{(topic, partition): offset}`` or ``{topic: {partition: offset}}``
    (partitions not named end at the log end); ``end_time``: ms since the epoch or ISO 8601, the
    end at the first record at or after it; ``tiered_storage``: the remote root whose copies
    complete the log (as ``kafkarec dump --tiered-storage``).

    ``bootstrap``: the running broker's cluster (``host:port``), asked through Kafka's ListOffsets
    (:mod:`kafkarec.lakehouse.broker`) for each partition's log start and last stable offset:
    ``start`` is the later of its and the log directory's, ``end`` at most its LSO.  Without it
    ``start`` is ``log-start-offset-checkpoint``'s, which a running broker rewrites only every
    ``log.flush.start.offset.checkpoint.interval.ms`` (60 s by default): on a live broker it can
    lag a ``deleteRecords`` by that long."""
    return plan_hand_off(uri, topics=topics, end_offsets=end_offsets, end_time=end_time,
                         storage_options=storage_options, tiered_storage=tiered_storage,
                         bootstrap=bootstrap).points()
