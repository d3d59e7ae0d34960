"""Share groups (KIP-932), as of any time T: each share group's persisted state of each restored
partition in the source's ``__share_group_state``
(:func:`kafkarec.internal.analysis.share_group_states`) -- its start offset and its in-flight state
batches -- translated through the offset map, and written for Kafka's own tool.

The start offset translated is the persisted one moved past the acknowledged records at its head
(the coordinator moves it lazily).  What Kafka lets a client set on a share group is its **start
offset** alone (the Admin API's
AlterShareGroupOffsets, which ``kafka-share-groups --reset-offsets`` calls; confluent-kafka's
AdminClient has no share-group call): the target's share-partition starts at the translated start
offset with no in-flight state.  So the records past the start offset that the source's group had
already acknowledged (accepted: ``ACKNOWLEDGED``, rejected: ``ARCHIVED``) **are delivered again** on the target;
each :class:`SharePosition` names them (``redelivered``), and the command line prints them, so
nothing is lost silently.  Records still available in the window (released, or acquired and not
acknowledged) are delivered again, as they would have been on the source.
"""
from __future__ import annotations

import csv
import io
import os
from typing import Dict, List, NamedTuple, Tuple

from kafkarec.errors import RestoreError
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.source import SourcePlan, local_log_dir
from kafkarec.restore.spec import RestoreSpec

__all__ = ["SharePosition", "checked_share_positions", "translate_shares", "write_share_csv"]


class SharePosition(NamedTuple):
    """A share group's state of one partition: its start offset on the source and on the target,
    and the records acknowledged past the start offset (``redelivered``: ``(source offset, target
    offset)`` of each restored one), which a start offset alone cannot keep from being delivered
    again on the target."""
    group: str
    topic: str
    partition: int
    source_start: int
    target_topic: str
    target_start: int
    redelivered: Tuple[Tuple[int, int], ...] = ()


def _topic_names(log_dir: str) -> Dict[str, str]:
    """Topic id -> name, from the source's ``__cluster_metadata``."""
    from kafkarec.internal import replay
    if not any(n.startswith("__cluster_metadata-") for n in os.listdir(log_dir)):
        return {}
    return {str(t["topic_id"]): name for name, t in replay(log_dir).state()["topics"].items()}


def _states(spec: RestoreSpec) -> Dict[Tuple[str, str, int], dict]:
    from kafkarec.internal.analysis import share_group_states
    log_dir = local_log_dir(spec)
    if log_dir is None:
        return {}           # groups need a local log dir: checked (and said) by the consumer groups
    if not any(n.startswith("__share_group_state-") for n in os.listdir(log_dir)):
        return {}
    states = share_group_states(log_dir, as_of=spec.groups_as_of)
    names = _topic_names(log_dir) if states else {}
    out = {}
    for (group, topic_id, partition), state in states.items():
        name = names.get(str(topic_id))
        if name is not None:        # a topic deleted since: not restored
            out[(group, name, partition)] = state
    return out


def _first_not_acknowledged(state: dict) -> int:
    """The persisted start offset moved past the acknowledged batches at its head (the coordinator
    moves it lazily; records accepted or rejected there are done with)."""
    from kafkarec.internal.analysis import SHARE_ACKNOWLEDGED, SHARE_ARCHIVED
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
    persisted state; a start offset outside the source partition's log is a :class:`RestoreError`
    naming the group and partition -- asked before anything is written."""
    parts = {p.key: p for p in plan.partitions}
    out = []
    for (group, topic, partition), state in sorted(_states(spec).items()):
        part = parts.get((topic, partition))
        if part is None:
            continue
        start = _first_not_acknowledged(state)
        if start < 0:
            continue        # initialised, never delivered from: the target's own reset rule applies
        if start > part.log_end:
            raise RestoreError(spec.target, f"the share group's start offset {start} of {topic}-{partition} is "
                                            f"outside the history (its log ends at {part.log_end}): "
                                            "__share_group_state and the log disagree", group=group, topic=topic,
                               partition=partition)
        out.append((SharePosition(group, topic, partition, start, part.target_topic, -1), state))
    return out


def translate_shares(spec: RestoreSpec, plan: SourcePlan, omap: OffsetMap) -> List[SharePosition]:
    """:func:`checked_share_positions`, translated through ``omap``, each naming the acknowledged
    records past its start offset that will be delivered again."""
    from kafkarec.internal.analysis import SHARE_ACKNOWLEDGED, SHARE_ARCHIVED
    out = []
    for pos, state in checked_share_positions(spec, plan):
        again = []
        for first, last, delivery_state, _ in state["state_batches"]:
            if delivery_state not in (SHARE_ACKNOWLEDGED, SHARE_ARCHIVED):
                continue
            # only records restored can be delivered: a batch's holes are skipped through the map
            end = min(last + 1, omap.ends.get((pos.topic, pos.partition), (last + 1,))[0])
            for s, t in omap.pairs_between(pos.topic, pos.partition, max(first, pos.source_start), end):
                again.append((s, t))
        out.append(pos._replace(target_start=omap.target_offset(pos.topic, pos.partition, pos.source_start),
                                redelivered=tuple(again)))
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
