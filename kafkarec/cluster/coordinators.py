"""What Kafka's coordinators keep in their topics -- the transaction coordinator's transactions, the
group coordinator's committed offsets, the share coordinator's share groups -- replayed at rest, and
what it says of the data partitions (transactions left open, consumer lag), from a broker's log
directory: local, on an object store (a URI with ``storage_options``, as every reader takes them),
or stitched with its tiered copies (``tiered_storage``).

* :func:`transaction_states`: the latest TransactionLogValue of every transactional id in ``__transaction_state``;
* :func:`open_transactions`: per data partition and producer, transactions whose markers never came (a
  transactional batch with no COMMIT/ABORT marker after it), judged against the coordinator's state — what
  ``kafka-transactions.sh find-hanging`` answers;
* :func:`committed_offsets` / :func:`consumer_lag`: the committed offsets in ``__consumer_offsets``
  (transactional offset commits count once their COMMIT marker is there) against each partition's log end;
* :func:`share_group_states`: the share groups' persisted state in ``__share_group_state``.

Every function takes ``source``: a log directory (or one partition's folder), local or a URI (with
``storage_options``), or stitched with its tiered copies (``tiered_storage``), walked through the one
reader (:meth:`kafkarec.scan.LogScan.partition_walks`: one listing, then only the segments of the topics
asked for, each read once in bounded pieces by :meth:`kafkarec.scan.PartitionWalk.batches`, CRCs checked).
"""
from __future__ import annotations

import os
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from kafkarec.enums import ControlRecordType
from kafkarec.errors import InternalRecordError
from kafkarec.internal import topics as _topics
from kafkarec.internal.topics import DEFAULT_SCHEMAS
from kafkarec.internal.dumplog import TRANSACTION_STATES, state_name

__all__ = ["transaction_states", "open_transactions", "committed_offsets", "consumer_lag", "log_end_offsets",
           "share_group_states", "replay_share_state", "OPEN_STATES", "SHARE_AVAILABLE", "SHARE_ACKNOWLEDGED",
           "SHARE_ARCHIVED"]

# the transaction states in which a transactional id holds partitions open (Kafka's TransactionState)
OPEN_STATES = {"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}


class _Partition(NamedTuple):
    """A partition of the log, as the walks below use it: ``topic_partition`` and its
    :class:`kafkarec.scan.PartitionWalk` (``walk.part.segments`` with their ``base_offset``)."""
    topic_partition: tuple
    walk: object

    @property
    def segments(self) -> list:
        return self.walk.part.segments


def _partitions(source, topics: Optional[Tuple[str, ...]] = None, *, storage_options: Optional[dict] = None,
                tiered_storage: Optional[str] = None) -> List[_Partition]:
    """The partitions under ``source`` (of ``topics`` when given: only theirs are walked), listed
    by the one reader (:meth:`kafkarec.scan.LogScan.partition_walks`), whatever the storage."""
    from kafkarec.log.names import TopicPartition
    from kafkarec.scan import LogScan, ScanConfig
    scan = LogScan(ScanConfig.of(os.fspath(source), storage_options=storage_options, tiered_storage=tiered_storage,
                                 topics=topics, threads=1))
    return [_Partition(TopicPartition(w.part.topic, w.part.partition), w) for w in scan.partition_walks()
            if w.part.topic is not None and w.part.partition is not None]


def _batches(pdir: _Partition) -> Iterator:
    # the partition's whole log, CRCs checked, a cut-off tail ignored, each segment to its
    # ``end_offset`` where a later copy holds the offsets from there
    return pdir.walk.batches()


def transaction_states(log_dir: str, *, schemas: str = DEFAULT_SCHEMAS,
                       storage_options: Optional[dict] = None, tiered_storage: Optional[str] = None) -> Dict[str, dict]:
    """transactionalId -> its latest state in ``__transaction_state`` (tombstones remove it):
    producer_id, producer_epoch, state (name), timeout_ms, partitions [(topic, partition)],
    last_update_ms, start_ms, and where it was read (partition, offset)."""
    out: Dict[str, dict] = {}
    for pdir in _partitions(log_dir, ("__transaction_state",),
                            storage_options=storage_options, tiered_storage=tiered_storage):
        if pdir.topic_partition.topic != "__transaction_state":
            continue
        for batch in _batches(pdir):
            if batch.is_control:
                continue
            for r in batch:
                rec = _topics.decode("__transaction_state", r.key, r.value, schemas=schemas)
                if rec.unknown:
                    continue
                tid = rec.key["transactionalId"]
                if rec.tombstone:
                    out.pop(tid, None)
                    continue
                v = rec.value
                out[tid] = {
                    "transactional_id": tid, "producer_id": v["producerId"], "producer_epoch": v["producerEpoch"],
                    "state": state_name(TRANSACTION_STATES, v["transactionStatus"]),
                    "timeout_ms": v["transactionTimeoutMs"],
                    "partitions": list(dict.fromkeys((e["topic"], p) for e in v["transactionPartitions"] or ()
                                                    for p in e["partitionIds"])),
                    "last_update_ms": v["transactionLastUpdateTimestampMs"],
                    "start_ms": v["transactionStartTimestampMs"],
                    "coordinator_partition": pdir.topic_partition.partition, "offset": r.offset,
                }
    return out


def log_end_offsets(log_dir: str, *, storage_options: Optional[dict] = None,
                    tiered_storage: Optional[str] = None) -> Dict[Tuple[str, int], int]:
    """(topic, partition) -> log end offset (the next offset after the last batch on disk)."""
    out = {}
    for pdir in _partitions(log_dir, storage_options=storage_options, tiered_storage=tiered_storage):
        leo = None
        for batch in _batches(pdir):
            leo = batch.next_offset
        if leo is None and pdir.segments:
            leo = pdir.segments[-1].base_offset
        if leo is not None:
            out[tuple(pdir.topic_partition)] = leo
    return out


def open_transactions(log_dir: str, *, now_ms: Optional[int] = None, schemas: str = DEFAULT_SCHEMAS,
                      storage_options: Optional[dict] = None, tiered_storage: Optional[str] = None) -> List[dict]:
    """Transactions still open in data partitions (a transactional batch with no marker after it).

    Each: topic, partition, producer_id, producer_epoch, first_offset, last_offset, last_timestamp,
    transactional_id and coordinator_state (if the coordinator knows that producer id), and ``hanging``:
    True when the coordinator has no open transaction of that producer including this partition, or the
    transaction is older than its timeout at ``now_ms`` (default: the newest timestamp in the logs)."""
    states = transaction_states(log_dir, schemas=schemas, storage_options=storage_options,
                                tiered_storage=tiered_storage)
    by_pid = {}
    for s in states.values():
        by_pid[s["producer_id"]] = s
    opened: Dict[Tuple[str, int, int], dict] = {}
    newest = 0
    for pdir in _partitions(log_dir, storage_options=storage_options, tiered_storage=tiered_storage):
        topic, partition = pdir.topic_partition
        if topic == "__transaction_state":
            continue
        for batch in _batches(pdir):
            newest = max(newest, batch.max_timestamp)
            if not batch.is_transactional:
                continue
            key = (topic, partition, batch.producer_id)
            if batch.is_control:
                opened.pop(key, None)
                continue
            o = opened.get(key)
            if o is None:
                opened[key] = o = {"topic": topic, "partition": partition, "producer_id": batch.producer_id,
                                   "producer_epoch": batch.producer_epoch, "first_offset": batch.base_offset}
            o["last_offset"] = batch.last_offset
            o["last_timestamp"] = batch.max_timestamp
    now = newest if now_ms is None else now_ms
    out = []
    for (topic, partition, pid), o in sorted(opened.items()):
        s = by_pid.get(pid)
        o["transactional_id"] = s["transactional_id"] if s else None
        o["coordinator_state"] = s["state"] if s else None
        if s is None or s["state"] not in OPEN_STATES or (topic, partition) not in s["partitions"]:
            o["hanging"] = True
        else:
            o["hanging"] = now - s["last_update_ms"] > s["timeout_ms"] and s["state"] == "Ongoing"
        out.append(o)
    return out


def committed_offsets(log_dir: str, *, schemas: str = DEFAULT_SCHEMAS, as_of: Optional[int] = None,
                      storage_options: Optional[dict] = None,
                      tiered_storage: Optional[str] = None) -> Dict[Tuple[str, str, int], dict]:
    """(group, topic, partition) -> the latest committed offset in ``__consumer_offsets``: offset,
    leader_epoch, metadata, commit_timestamp, (partition, offset) it was read at. Transactional offset
    commits count when their COMMIT marker follows; aborted ones are dropped; tombstones delete.
    Classic and consumer-protocol (KIP-848) groups commit the same records, so both are here.

    ``as_of`` (ms since the epoch): the positions at that moment -- only what the coordinator had
    written by then counts (a record's timestamp, which the coordinator stamps when it appends; a
    transactional commit by its COMMIT marker's)."""
    out: Dict[Tuple[str, str, int], dict] = {}
    commit_types = {t: rt for t, rt in _topics.record_types("__consumer_offsets", schemas).items()
                    if rt.name in ("OffsetCommit", "LegacyOffsetCommit")}
    for pdir in _partitions(log_dir, ("__consumer_offsets",),
                            storage_options=storage_options, tiered_storage=tiered_storage):
        if pdir.topic_partition.topic != "__consumer_offsets":
            continue
        pending: Dict[int, list] = {}
        for batch in _batches(pdir):
            if as_of is not None and batch.max_timestamp > as_of and \
                    (batch.is_control or batch.base_timestamp > as_of):
                # appended after T (a marker's one record, or every record: the batch's first is
                # the earliest the coordinator writes together)
                continue
            if batch.is_control:
                for r in batch:
                    commits = pending.pop(batch.producer_id, [])
                    if r.control_type_id == ControlRecordType.COMMIT:
                        for k, v in commits:
                            if v is None:
                                out.pop(k, None)
                            else:
                                out[k] = v
                continue
            for r in batch:
                if as_of is not None and r.timestamp > as_of:
                    continue
                key = r.key
                if key is None or len(key) < 2 or commit_types.get(int.from_bytes(key[:2], "big", signed=True)) is None:
                    continue           # only offset commits are read (other record types are not needed)
                rec = _topics.decode("__consumer_offsets", key, r.value, schemas=schemas)
                if rec.record_type not in ("OffsetCommit", "LegacyOffsetCommit") or rec.key is None or rec.unknown:
                    continue
                k = (rec.key["group"], rec.key["topic"], rec.key["partition"])
                v = None if rec.value is None else {
                    "offset": rec.value["offset"], "leader_epoch": rec.value.get("leaderEpoch", -1),
                    "metadata": rec.value["metadata"], "commit_timestamp": rec.value["commitTimestamp"],
                    "coordinator_partition": pdir.topic_partition.partition, "record_offset": r.offset}
                if batch.is_transactional:
                    pending.setdefault(batch.producer_id, []).append((k, v))
                elif v is None:
                    out.pop(k, None)
                else:
                    out[k] = v
    return out


def consumer_lag(log_dir: str, *, schemas: str = DEFAULT_SCHEMAS, storage_options: Optional[dict] = None,
                 tiered_storage: Optional[str] = None) -> List[dict]:
    """Per (group, topic, partition): committed offset, log end offset (None when that partition is not in
    this log directory) and lag = log end - committed."""
    leo = log_end_offsets(log_dir, storage_options=storage_options, tiered_storage=tiered_storage)
    out = []
    committed = committed_offsets(log_dir, schemas=schemas, storage_options=storage_options,
                                  tiered_storage=tiered_storage)
    for (group, topic, partition), c in sorted(committed.items()):
        end = leo.get((topic, partition))
        out.append({"group": group, "topic": topic, "partition": partition, "committed_offset": c["offset"],
                    "log_end_offset": end, "lag": None if end is None else max(0, end - c["offset"]),
                    "commit_timestamp": c["commit_timestamp"]})
    return out


#: ``deliveryState`` of a persisted share state batch (Kafka's RecordState): records accepted
#: (``ACKNOWLEDGED``) or rejected (``ARCHIVED``) are done with, ``AVAILABLE`` ones delivered again
SHARE_AVAILABLE, SHARE_ACKNOWLEDGED, SHARE_ARCHIVED = 0, 2, 4


def _overlay(batches: List[tuple], new: List[tuple], start: int) -> List[tuple]:
    """``batches`` and ``new`` combined into batches that do not overlap, cut below ``start`` -- the
    share coordinator's rule (PersisterStateBatchCombiner) for a ShareUpdate and for a new snapshot:
    where two overlap, the higher delivery count wins, then the later delivery state (ARCHIVED over
    AVAILABLE); contiguous batches of the same state and count join."""
    import heapq
    every = sorted((max(f, start), l, st, c) for f, l, st, c in list(batches) + list(new) if l >= start)
    cuts = sorted({f for f, _, _, _ in every} | {l + 1 for _, l, _, _ in every})
    out: List[tuple] = []
    # one sweep over the cuts (every batch starts and ends on one, so a batch covering a segment's
    # first offset covers all of it): the covering batches in a heap, the winner on top
    covering: List[tuple] = []
    i = 0
    for lo, hi in zip(cuts, cuts[1:]):
        while i < len(every) and every[i][0] <= lo:
            f, l, st, c = every[i]
            heapq.heappush(covering, (-c, -st, l))
            i += 1
        while covering and covering[0][2] < lo:
            heapq.heappop(covering)         # ended below this segment
        if not covering:
            continue
        c, st = -covering[0][0], -covering[0][1]
        if out and out[-1][1] == lo - 1 and out[-1][2:] == (st, c):
            out[-1] = (out[-1][0], hi - 1, st, c)
        else:
            out.append((lo, hi - 1, st, c))
    return out


def replay_share_state(out: Dict[Tuple[str, str, int], dict], key: Optional[bytes], value: Optional[bytes],
                       offset: int, timestamp: int, where: str, *, schemas: str = DEFAULT_SCHEMAS) -> None:
    """One record of ``__share_group_state`` (its key and value bytes, its ``offset`` and
    ``timestamp``; ``where`` names its partition in errors) replayed into ``out`` as
    :func:`share_group_states` replays the topic, wherever its records come from (a log directory
    there; a target cluster's consumer for ``kafkarec restore --verify``)."""
    if key is None:
        return
    rec = _topics.decode("__share_group_state", key, value, schemas=schemas)
    if rec.key is None or rec.unknown or rec.record_type not in ("ShareSnapshot", "ShareUpdate"):
        return
    k = (rec.key["groupId"], rec.key["topicId"], rec.key["partition"])
    if rec.value is None:
        out.pop(k, None)
        return
    v = rec.value
    batches = [(b["firstOffset"], b["lastOffset"], b["deliveryState"], b["deliveryCount"])
               for b in v["stateBatches"]]
    for f, l, _, _ in batches:
        if f < 0 or l < f:
            raise InternalRecordError(f"{where} offset {offset}: state batch [{f}, {l}] of group {k[0]} "
                                      "is not a range of offsets", 0)
    old = out.get(k)
    if rec.record_type == "ShareSnapshot" or old is None:
        start = v["startOffset"]
        state = {"start_offset": start, "state_batches": _overlay([], batches, start),
                 "state_epoch": v.get("stateEpoch", old["state_epoch"] if old else 0)}
    else:
        start = old["start_offset"] if v["startOffset"] == -1 else v["startOffset"]
        state = {"start_offset": start, "state_epoch": old["state_epoch"],
                 "state_batches": _overlay(old["state_batches"], batches, start)}
    state["record_offset"] = offset
    state["written_at"] = timestamp
    out[k] = state


def share_group_states(log_dir: str, *, schemas: str = DEFAULT_SCHEMAS, as_of: Optional[int] = None,
                       storage_options: Optional[dict] = None,
                       tiered_storage: Optional[str] = None) -> Dict[Tuple[str, str, int], dict]:
    """(group, topic id, partition) -> a share group's persisted state of that partition in
    ``__share_group_state``, replayed as the share coordinator replays it (a ShareSnapshot replaces
    the state; a ShareUpdate combines its batches with it and moves the start offset unless it is -1;
    a tombstone deletes): ``start_offset`` and ``state_batches`` [(first offset, last offset,
    delivery state, delivery count)], ``state_epoch``, ``record_offset`` and ``written_at`` (the
    offset and timestamp of the last record that shaped it).  ``as_of`` (ms since the epoch): only
    records the coordinator had appended by then (their timestamps)."""
    out: Dict[Tuple[str, str, int], dict] = {}
    for pdir in _partitions(log_dir, ("__share_group_state",),
                            storage_options=storage_options, tiered_storage=tiered_storage):
        if pdir.topic_partition.topic != "__share_group_state":
            continue
        for batch in _batches(pdir):
            if batch.is_control or (as_of is not None and batch.base_timestamp > as_of):
                continue
            for r in batch:
                if as_of is not None and r.timestamp > as_of:
                    continue
                replay_share_state(out, r.key, r.value, r.offset, r.timestamp,
                                   f"__share_group_state-{pdir.topic_partition.partition}", schemas=schemas)
    return out
