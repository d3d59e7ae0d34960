"""``--verify``: the target read back (a read_committed consumer) against the source's committed
records, record for record (key, value, headers, timestamp, and the target offset the map says; a
share group's dead letter with its source offset translated: :mod:`kafkarec.restore.deadletters`),
each applied group position against its translation, and each share group's state on the target
(its ``__share_group_state`` read back: :func:`kafkarec.restore.target.share_states`) against the
source's, record for record through the offset map: the records before the translated start offset
done with, and past it each record accepted, rejected or available as the source's group left it
(with ``--share-groups-acknowledge``; without it, a record the source's group had acknowledged may
still be available on the target: a start offset alone does not keep it from being delivered
again)."""
from __future__ import annotations

import bisect
from typing import Dict, List, NamedTuple, Optional, Tuple

from kafkarec._extras import require
from kafkarec.restore import source, target
from kafkarec.restore.groups import GroupPosition
from kafkarec.restore.offsets import OffsetMap, ranges
from kafkarec.restore.shares import SharePosition
from kafkarec.restore.source import SourcePlan
from kafkarec.restore.spec import RestoreSpec

__all__ = ["VerifyReport", "verify"]


class VerifyReport(NamedTuple):
    """``records`` compared, ``groups`` positions compared, every ``problems`` line (empty: the
    target holds the source's committed records exactly and every group and share group stands
    where it should), and ``shares``: share group positions compared."""
    records: int
    groups: int
    problems: List[str]
    shares: int = 0
    #: what was not checked and why (a share group whose start offset is not set on the target yet,
    #: in a run that did not acknowledge share groups): not problems
    notes: Tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


def _fields(r: source.Record):
    return (r.key, r.value, r.timestamp, [(k, v) for k, v in r.headers])


def verify(spec: RestoreSpec, plan: SourcePlan, omap: OffsetMap,
           positions: Optional[List[GroupPosition]] = None, shares: Optional[List[SharePosition]] = None, *,
           max_problems: int = 20) -> VerifyReport:
    """Compare (see the module docstring); ``positions``: the group positions applied, read back
    from the target's groups; ``shares``: the share groups' translated positions, expected set on the
    target (their start offsets by ``kafka-share-groups``; their acknowledgements too with
    ``spec.share_groups_acknowledge``)."""
    from kafkarec.restore.deadletters import Translation
    from kafkarec.restore.schemas import translation_for
    tr = translation_for(spec)      # the records as written: their schema ids translated
    problems: List[str] = []
    records = 0
    # a dead letter is compared as the restore wrote it: its source offset translated
    translation = Translation(plan, omap)

    def problem(text: str) -> None:
        if len(problems) < max_problems:
            problems.append(text)

    for part in plan.partitions:
        where = f"{part.topic}-{part.partition} -> {part.target_topic}-{part.partition}"
        expected = dict(omap.pairs(part.topic, part.partition))
        got = target.read_back(spec, part.target_topic, part.partition)
        # up to where the target's records reach (an earlier run's later end: the map's source end)
        upto = max(part.end, omap.ends.get(part.key, (part.end, 0))[0])
        for s in source.committed_records(spec, part.topic, part.partition, part.start, upto, plan.listing):
            t = next(got, None)
            records += 1
            if t is None:
                problem(f"{where}: source offset {s.offset} is missing on the target")
                break
            if expected.get(s.offset) != t.offset:
                problem(f"{where}: source offset {s.offset} is target offset {t.offset}, the map says "
                        f"{expected.get(s.offset)}")
            written = translation.record(s)
            if tr is not None:
                written = tr.rewrite(part.topic, part.partition, written)
            if _fields(written) != _fields(t):
                problem(f"{where}: source offset {s.offset} and target offset {t.offset} differ")
        extra = next(got, None)
        if extra is not None:
            problem(f"{where}: the target holds a record at offset {extra.offset} the source's range does not")
    checked = 0
    if positions:
        ck = require("confluent_kafka")
        asker = target.admin(spec)
        by_group: Dict[str, List[GroupPosition]] = {}
        for p in positions:
            by_group.setdefault(p.group, []).append(p)
        for group, ps in sorted(by_group.items()):
            request = [ck.ConsumerGroupTopicPartitions(group, [ck.TopicPartition(p.target_topic, p.partition)
                                                               for p in ps])]
            committed = target.retried(spec, "reading the group's offsets",
                                       lambda left, request=request, group=group: _committed(spec, asker, request,
                                                                                             group, left),
                                       group=group)
            for p in ps:
                checked += 1
                have = committed.get((p.target_topic, p.partition))
                if have != p.target_offset:
                    problem(f"group {group}: {p.target_topic}-{p.partition} stands at {have}, the translation of "
                            f"source position {p.source_offset} is {p.target_offset}")
                elif omap.target_offset(p.topic, p.partition, p.source_offset) != have:
                    problem(f"group {group}: {p.target_topic}-{p.partition} at {have} is not where source "
                            f"position {p.source_offset} points")
    if shares:
        notes = _check_shares(spec, omap, shares, problem)
    else:
        notes = []
    return VerifyReport(records, checked, problems, len(shares or ()) - len(notes), tuple(notes))


#: what a share group's state says of a record: done with before its start offset, or past it
#: ACKNOWLEDGED (accepted), ARCHIVED (rejected), else available (to be delivered)
BELOW, ACCEPTED, REJECTED, AVAILABLE = "below the start offset", "accepted", "rejected", "available"


def _share_state_of(state: dict, firsts: List[int], offset: int) -> str:
    """``offset``'s state in ``state`` (``firsts``: its state batches' first offsets, in order)."""
    from kafkarec.cluster.coordinators import SHARE_ACKNOWLEDGED, SHARE_ARCHIVED
    if offset < state["start_offset"]:
        return BELOW
    i = bisect.bisect_right(firsts, offset) - 1
    if i >= 0:
        _, last, delivery_state, _ = state["state_batches"][i]
        if offset <= last:
            return {SHARE_ACKNOWLEDGED: ACCEPTED, SHARE_ARCHIVED: REJECTED}.get(delivery_state, AVAILABLE)
    return AVAILABLE


def _check_shares(spec: RestoreSpec, omap: OffsetMap, shares: List[SharePosition], problem) -> List[str]:
    """Each share group's state on the target, record by restored record (see the module
    docstring); mismatches of one kind in a partition are one problem, naming the offsets in runs.
    Returns the notes of positions not checked: without ``spec.share_groups_acknowledge`` a share
    group the target holds no state for has not been set there yet (no Python client can; Kafka's
    tool does, from the CSV), which is the user's next step, not a fault of the target; with it, the
    run was told the start offsets were set, and their absence is a problem."""
    have = target.share_states(spec, {s.target_topic for s in shares})
    notes: List[str] = []
    for s in shares:
        where = f"share group {s.group}: {s.target_topic}-{s.partition}"
        state = have.get((s.group, s.target_topic, s.partition))
        if state is None:
            unset = (f"{where} has no state on the target (its start offset is not set there: "
                     "kafka-share-groups --reset-offsets --from-file with the --share-groups-csv file)")
            if spec.share_groups_acknowledge:
                problem(unset)
            else:
                notes.append(f"{unset}: not checked")
            continue
        acknowledged = {t: (REJECTED if t in s.rejected else ACCEPTED) for _, t in s.redelivered}
        firsts = [b[0] for b in state["state_batches"]]
        # past the translated start offset, the last state batch and the last acknowledged record,
        # every record is available on both sides: the walk stops there
        horizon = max([s.target_start, state["start_offset"] - 1, *acknowledged,
                       *(b[1] for b in state["state_batches"])])
        wrong: Dict[Tuple[str, str], List[Tuple[int, int]]] = {}
        for src, t in omap.pairs(s.topic, s.partition):
            if t > horizon:
                break
            on_target = _share_state_of(state, firsts, t)
            if t < s.target_start:
                # done with on the source (below its start offset, or acknowledged at its head):
                # below the start offset on the target, or acknowledged there
                want, fine = "done with", on_target != AVAILABLE
            else:
                want = acknowledged.get(t, AVAILABLE)
                # a start offset alone leaves the acknowledged records past it available (the restore
                # named them): only --share-groups-acknowledge acknowledges them
                fine = on_target == want or (on_target == AVAILABLE and not spec.share_groups_acknowledge) \
                    or (on_target == BELOW and want != AVAILABLE)     # the start offset moved past it, done with
            if not fine:
                wrong.setdefault((on_target, want), []).append((src, t))
        for (on_target, want), pairs in sorted(wrong.items(), key=lambda x: x[1][0][1]):
            if on_target == BELOW:
                on_target = f"below its start offset {state['start_offset']}"
            problem(f"{where}: target offset(s) {ranges(t for _, t in pairs)} (source offset(s) "
                    f"{ranges(o for o, _ in pairs)}) are {on_target} on the target, {want} on the source (its "
                    f"start offset {s.source_start} translates to {s.target_start})")
    return notes


def _committed(spec: RestoreSpec, asker, request, group: str, left: float) -> Dict[Tuple[str, int], int]:
    """One OffsetFetch of ``group``'s partitions in ``request``: ``{(topic, partition): offset}``."""
    future = list(asker.list_consumer_group_offsets(request, request_timeout=left).values())[0]
    return {(tp.topic, tp.partition): tp.offset
            for tp in target.result(spec, future, "reading the group's offsets", timeout=left,
                                    group=group).topic_partitions}
