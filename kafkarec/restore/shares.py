"""Share groups (KIP-932), as of any time T: each share group's persisted state of each restored
partition in the source's ``__share_group_state``
(:func:`kafkarec.cluster.coordinators.share_group_states`) -- its start offset and its in-flight state
batches -- translated through the offset map, written for Kafka's own tool, and (:func:`acknowledge`)
its in-flight state applied on the target.

The start offset translated is the persisted one moved past the acknowledged records at its head
(the coordinator moves it lazily).  What Kafka's Admin API lets a client set on a share group is its
**start offset** alone (AlterShareGroupOffsets, which ``kafka-share-groups --reset-offsets`` calls;
confluent-kafka's AdminClient has no share-group call): the CSV :func:`write_share_csv` writes is
for that tool.  The target's share-partition then starts at the translated start offset with no
in-flight state, so the records past it that the source's group had already acknowledged
(accepted: ``ACKNOWLEDGED``, rejected: ``ARCHIVED``) would be delivered again; each
:class:`SharePosition` names them (``redelivered``, ``rejected``).

:func:`acknowledge` applies them the one way Kafka lets a client change a record's state: as a
member of the share group.  Once the start offsets are set, it joins each share group on the target
with a share consumer in explicit acknowledgement mode and, partition by partition, acknowledges
each record it acquires as the source's group had -- ACCEPT the accepted, REJECT the rejected,
RELEASE every other (available on the source: available again on the target, its delivery count
one higher, as every acquisition makes it) -- until it has passed the last acknowledged record of
every partition, commits and leaves.  The broker never hands out an acknowledged record again, so
a re-run acquires (and releases) only the available ones.
"""
from __future__ import annotations

import csv
import io
import os
import time
from typing import Dict, List, NamedTuple, Set, Tuple

from kafkarec._extras import require
from kafkarec.errors import RestoreError
from kafkarec.restore import target
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.source import SourcePartition, SourcePlan, cluster_state, internal_source
from kafkarec.restore.spec import RestoreSpec

__all__ = ["SharePosition", "ShareAcknowledged", "checked_share_positions", "translate_shares", "write_share_csv",
           "acknowledge"]


class SharePosition(NamedTuple):
    """A share group's state of one partition: its start offset on the source and on the target,
    and the records acknowledged past the start offset (``redelivered``: ``(source offset, target
    offset)`` of each restored one; ``rejected``: the target offsets of those the source's group
    rejected, the others it accepted), which a start offset alone cannot keep from being delivered
    again on the target (:func:`acknowledge` does)."""
    group: str
    topic: str
    partition: int
    source_start: int
    target_topic: str
    target_start: int
    redelivered: Tuple[Tuple[int, int], ...] = ()
    rejected: Tuple[int, ...] = ()


def _topic_names(spec: RestoreSpec) -> Dict[str, str]:
    """Topic id -> name, from the source's ``__cluster_metadata``."""
    state = cluster_state(spec)
    return {} if state is None else {str(t["topic_id"]): name for name, t in state["topics"].items()}


def _states(spec: RestoreSpec) -> Dict[Tuple[str, str, int], dict]:
    from kafkarec.cluster.coordinators import share_group_states
    source, kw = internal_source(spec)
    if os.path.isdir(source) and not any(n.startswith("__share_group_state-") for n in os.listdir(source)):
        return {}
    states = share_group_states(source, as_of=spec.groups_as_of, **kw)
    names = _topic_names(spec) if states else {}
    out = {}
    for (group, topic_id, partition), state in states.items():
        name = names.get(str(topic_id))
        if name is not None:        # a topic deleted since: not restored
            out[(group, name, partition)] = state
    return out


def _first_not_acknowledged(state: dict) -> int:
    """The persisted start offset moved past the acknowledged batches at its head (the coordinator
    moves it lazily; records accepted or rejected there are done with)."""
    from kafkarec.cluster.coordinators import SHARE_ACKNOWLEDGED, SHARE_ARCHIVED
    start = state["start_offset"]
    if start < 0:
        return start
    for first, last, delivery_state, _ in state["state_batches"]:
        if first > start or delivery_state not in (SHARE_ACKNOWLEDGED, SHARE_ARCHIVED):
            break
        start = max(start, last + 1)
    return start


def checked_share_positions(spec: RestoreSpec, plan: SourcePlan) -> List[Tuple[SharePosition, dict]]:
    """Every share group's state on the restored partitions (not yet translated), each with its
    persisted state -- asked before anything is written.  The share coordinator writes a start
    offset no further than the log's end as it stood then (no record past it was delivered): one
    past the log's end at the state's last write (:func:`source.log_ends_at`, the rule the groups'
    positions are held to) is a :class:`RestoreError` naming the group, the partition and both ends."""
    from kafkarec.restore import source
    parts = {p.key: p for p in plan.partitions}
    found = []
    for (group, topic, partition), state in sorted(_states(spec).items()):
        part = parts.get((topic, partition))
        if part is None:
            continue
        start = _first_not_acknowledged(state)
        if start < 0:
            continue        # initialised, never delivered from: the target's own reset rule applies
        found.append((group, part, start, state))
    asked: Dict[SourcePartition, List[int]] = {}
    for _, part, start, state in found:
        # as the groups' positions: held to the log's end then only where record times are the
        # brokers' (LogAppendTime); otherwise to the log's end
        if start > part.start and state.get("written_at") is not None and part.topic in plan.append_time_topics:
            asked.setdefault(part, []).append(state["written_at"])
    ends_then = source.log_ends_at(spec, asked, plan.listing)
    out = []
    for group, part, start, state in found:
        then = ends_then.get((part.topic, part.partition, state.get("written_at")), part.log_end)
        if start > then:
            raise RestoreError(spec.target, f"the share group's start offset {start} of {part.topic}-{part.partition} "
                                            f"is outside the history (its log ended at {then} when the state was "
                                            f"written; it ends at {part.log_end}): __share_group_state and the "
                                            "log disagree", group=group, topic=part.topic, partition=part.partition)
        out.append((SharePosition(group, part.topic, part.partition, start, part.target_topic, -1), state))
    return out


def translate_shares(spec: RestoreSpec, plan: SourcePlan, omap: OffsetMap) -> List[SharePosition]:
    """:func:`checked_share_positions`, translated through ``omap``, each naming the acknowledged
    records past its start offset that will be delivered again."""
    from kafkarec.cluster.coordinators import SHARE_ACKNOWLEDGED, SHARE_ARCHIVED
    out = []
    for pos, state in checked_share_positions(spec, plan):
        again, rejected = [], []
        for first, last, delivery_state, _ in state["state_batches"]:
            if delivery_state not in (SHARE_ACKNOWLEDGED, SHARE_ARCHIVED):
                continue
            # only records restored can be delivered: a batch's holes are skipped through the map
            end = min(last + 1, omap.ends.get((pos.topic, pos.partition), (last + 1,))[0])
            for s, t in omap.pairs_between(pos.topic, pos.partition, max(first, pos.source_start), end):
                again.append((s, t))
                if delivery_state == SHARE_ARCHIVED:
                    rejected.append(t)
        out.append(pos._replace(target_start=omap.target_offset(pos.topic, pos.partition, pos.source_start),
                                redelivered=tuple(again), rejected=tuple(rejected)))
    return out


def write_share_csv(positions: List[SharePosition], path: str) -> None:
    """The start offsets as ``kafka-share-groups --reset-offsets --group G --from-file FILE --execute``
    takes them: ``group,topic,partition,offset`` lines, no header (the tool resets one group a run,
    taking that group's lines)."""
    from kafkarec._boot.files import atomic_write
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for p in positions:
        w.writerow([p.group, p.target_topic, p.partition, p.target_start])
    atomic_write(os.fspath(path), buf.getvalue().encode(), mode=0o644)


#: records a poll of :func:`acknowledge`'s share consumer may bring (``max.poll.records``): a
#: partition's window past its start offset is at most the broker's in-flight limit
#: (``group.share.partition.max.record.locks``, 2000 by default), so one poll normally covers it
MAX_POLL_RECORDS = 10000
#: bytes a fetch may bring, in all and per partition (the window in one fetch)
MAX_FETCH_BYTES = 64 << 20


class ShareAcknowledged(NamedTuple):
    """What :func:`acknowledge` did on one target partition of a share group: the records it
    ``accepted`` and ``rejected`` there (target offsets), how many it ``released`` (acquired and made
    available again, each delivery count one higher), and ``status``: ``done`` (the walk passed the
    partition's last acknowledged record) or ``none left`` (the broker had none of the records left
    to acknowledge: an earlier run acknowledged them)."""
    group: str
    target_topic: str
    partition: int
    accepted: Tuple[int, ...]
    rejected: Tuple[int, ...]
    released: int
    missing: Tuple[int, ...]
    status: str


def acknowledge(spec: RestoreSpec, positions: List[SharePosition]) -> List[ShareAcknowledged]:
    """Apply each share group's in-flight state on the target (see the module docstring): the
    records the source's group had acknowledged past its start offset acknowledged the same way,
    the others released.  Run it once the start offsets are set on the target, while the groups
    have no members: confluent-kafka cannot describe a share group (its admin calls do not see
    one), so this cannot check it -- records another member holds are not acquired here and stay
    as that member leaves them.  Each walk is bounded by ``spec.timeout`` seconds without a
    record.  Returns one :class:`ShareAcknowledged` per partition of each group walked."""
    by_group: Dict[str, List[SharePosition]] = {}
    for p in positions:
        by_group.setdefault(p.group, []).append(p)
    work = sorted(g for g, ps in by_group.items() if any(p.redelivered for p in ps))
    if not work:
        return []
    out: List[ShareAcknowledged] = []
    for group in work:
        out.extend(_walk(spec, group, by_group[group]))
    return out


def _walk(spec: RestoreSpec, group: str, positions: List[SharePosition]) -> List[ShareAcknowledged]:
    """One share group's walk: poll from the start offsets, acknowledge each record acquired,
    commit after each poll, until every partition's last acknowledged record is passed."""
    ck = require("confluent_kafka")
    accept, reject, release = ck.AcknowledgeType.ACCEPT, ck.AcknowledgeType.REJECT, ck.AcknowledgeType.RELEASE
    todo: Dict[Tuple[str, int], Dict[int, object]] = {}
    start: Dict[Tuple[str, int], int] = {}
    for p in positions:
        key = (p.target_topic, p.partition)
        no = set(p.rejected)
        todo[key] = {t: reject if t in no else accept for _, t in p.redelivered}
        start[key] = p.target_start
    last = {k: max(v) for k, v in todo.items() if v}
    pending: Set[Tuple[str, int]] = set(last)
    applied: Dict[Tuple[str, int], Dict[int, object]] = {k: {} for k in todo}
    released = {k: 0 for k in todo}
    seen: Dict[Tuple[str, int], Set[int]] = {k: set() for k in todo}
    acquired: Dict[Tuple[str, int, int], int] = {}
    consumer = target.client(spec, "ShareConsumer", **{
        "group.id": group, "share.acknowledgement.mode": "explicit", "max.poll.records": MAX_POLL_RECORDS,
        "fetch.max.bytes": MAX_FETCH_BYTES, "max.partition.fetch.bytes": MAX_FETCH_BYTES})
    closed = False
    try:
        consumer.subscribe(sorted({k[0] for k in todo}))
        deadline = time.monotonic() + spec.timeout
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                _timed_out(spec, group, pending, seen, last)
                break
            try:
                batch = consumer.poll(min(1.0, left))
            except ck.KafkaException as exc:
                if target.retriable(exc):       # polled again until the deadline, as after an empty poll
                    continue
                raise target.failure(spec, "polling the share group", exc, group=group) from None
            if not batch:
                continue
            for m in batch:
                if m.error() is not None and not target.retriable(m.error()):
                    raise RestoreError(spec.target, f"polling the share group: {m.error().str()}", group=group,
                                       topic=m.topic(), partition=m.partition())
            # a retriable error (the consumer fetches again itself) is no record
            batch = [m for m in batch if m.error() is None]
            if not batch:
                continue
            # a record before its start offset: the start offset is not set; the poll all released
            below = next((((m.topic(), m.partition()), m.offset()) for m in batch
                          if m.offset() < start.get((m.topic(), m.partition()), -1)), None)
            # judged over the partitions still walked only: the subscription brings the topics' other
            # partitions too (released as they come), which say nothing of this walk's progress
            walked, again, twice, progressed = False, True, None, False
            for m in batch:
                key, o = (m.topic(), m.partition()), m.offset()
                n = acquired[key + (o,)] = acquired.get(key + (o,), 0) + 1
                how = release if below is not None else todo.get(key, {}).get(o, release)
                if key in pending:
                    walked = True
                    again = again and n > 1
                    progressed = progressed or n == 1
                    if n > 2:
                        twice = twice or (key, o)
                consumer.acknowledge(m, how)
                if key in todo:
                    seen[key].add(o)
                    if how == release:
                        released[key] += 1
                    else:
                        applied[key][o] = how
                if key in pending and o >= last[key]:
                    pending.discard(key)
            _commit(spec, consumer, group)
            if progressed:
                deadline = time.monotonic() + spec.timeout      # progress: the bound starts again
            if below is not None:
                (t, p), o = below
                raise RestoreError(spec.target, f"the share group delivered offset {o}, before the translated start "
                                                f"offset {start[(t, p)]}: its start offset is not set there (set it "
                                                "first, kafka-share-groups --reset-offsets --from-file); the records "
                                                "of that poll were released", group=group, topic=t, partition=p)
            if twice is not None:
                (t, p), o = twice
                raise RestoreError(spec.target, f"offset {o} was acquired a third time: the records past the start "
                                                f"offset did not come in two fetches, and every fetch acquires the "
                                                "released ones again (raising their delivery counts); the records "
                                                "acknowledged so far stay so, a re-run goes on from there",
                                   group=group, topic=t, partition=p)
            if walked and again:
                break           # the broker had nothing this walk had not released: nothing left to acknowledge
        closed = True
        consumer.close()
    finally:
        if not closed:
            try:
                consumer.close()
            except Exception:       # the error being raised says more
                pass
    return [ShareAcknowledged(group, t, p,
                              tuple(sorted(o for o, h in applied[(t, p)].items() if h == accept)),
                              tuple(sorted(o for o, h in applied[(t, p)].items() if h == reject)),
                              released[(t, p)], tuple(sorted(set(todo[(t, p)]) - set(applied[(t, p)]))),
                              "none left" if (t, p) in pending else "done")
            for t, p in sorted(todo)]


def _commit(spec: RestoreSpec, consumer, group: str) -> None:
    # a commit that failed as a whole (no answer: a coordinator moving or loading) is asked again
    answer = target.retried(spec, "committing the acknowledgements", consumer.commit_sync, group=group)
    for tp, exc in sorted((answer or {}).items(), key=lambda x: (x[0].topic, x[0].partition)):
        if exc is not None:
            raise RestoreError(spec.target, f"committing the acknowledgements: {target.reason(exc)}", group=group,
                               topic=tp.topic, partition=tp.partition)


def _timed_out(spec: RestoreSpec, group: str, pending: Set[Tuple[str, int]], seen, last) -> None:
    """No record for ``spec.timeout`` seconds while partitions were not passed: a partition whose
    last acknowledged record is its last record and from which nothing came has none left (an
    earlier run acknowledged them, or the start offset is past them); any other is a
    :class:`RestoreError`."""
    ends = target.ends(spec, pending)
    for key in sorted(pending):
        if seen[key] or ends[key] > last[key] + 1:
            t, p = key
            raise RestoreError(spec.target, f"no record past offset {max(seen[key], default=None)} came within "
                                            f"{spec.timeout:g} s, and the last acknowledged record is {last[key]} "
                                            "(is the share group's start offset set there, and the group without "
                                            "members?); the records acknowledged so far stay so, a re-run goes on "
                                            "from there",
                               group=group, topic=t, partition=p, retriable=True)
