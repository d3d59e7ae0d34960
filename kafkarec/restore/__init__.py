"""Restore a history into another cluster, exactly once, and every consumer group where it stood
(docs/restore.md).

* :class:`RestoreSpec` -- the options, read once (:meth:`RestoreSpec.of`);
* :func:`restore` -- the committed data records of each partition produced into the target by one
  transactional producer per partition, the progress committed with them (a re-run resumes; a
  finished restore writes nothing); returns the partitions' summaries and the :class:`OffsetMap`;
* :func:`restore_partition` -- one partition's restore, the unit :func:`restore` runs in turn;
* :func:`offset_map` -- the map rebuilt from the target's log and the source;
* :func:`translate_groups`, :func:`apply_groups`, :func:`write_groups_csv` -- the groups' positions
  as of a time, translated, applied on the target or written for ``kafka-consumer-groups``;
* :func:`translate_share_groups`, :func:`write_share_groups_csv` -- the share groups' start offsets
  as of a time, translated, naming the acknowledged records a start offset cannot keep from being
  delivered again, written for ``kafka-share-groups``;
* :func:`verify` -- the target read back against the source.

Needs ``pip install 'kafkarec[lakehouse]'`` (confluent-kafka, pyarrow).
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple

from kafkarec.restore.groups import GroupPosition
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.produce import PartitionSummary
from kafkarec.restore.shares import SharePosition
from kafkarec.restore.source import SourcePartition, SourcePlan
from kafkarec.restore.spec import RestoreSpec
from kafkarec.restore.check import VerifyReport

__all__ = ["RestoreSpec", "RestoreResult", "PartitionSummary", "OffsetMap", "GroupPosition", "SharePosition",
           "VerifyReport", "SourcePlan", "SourcePartition", "plan", "restore", "restore_partition", "offset_map",
           "translate_groups", "apply_groups", "write_groups_csv", "translate_share_groups",
           "write_share_groups_csv", "verify"]


class RestoreResult(NamedTuple):
    """What :func:`restore` did: the source plan, each partition's summary, the topics it created
    on the target and the offset map of every restored record."""
    plan: SourcePlan
    partitions: List[PartitionSummary]
    created_topics: List[str]
    offset_map: OffsetMap


def plan(spec: RestoreSpec) -> SourcePlan:
    """The source partitions a restore covers, with their ranges and topics."""
    from kafkarec.restore import source
    return source.plan(spec)


def restore(spec: RestoreSpec, *, source_plan: Optional[SourcePlan] = None) -> RestoreResult:
    """Restore ``spec``'s history into its target (see the module docstring)."""
    from kafkarec._extras import require
    from kafkarec.restore import produce, target
    require("confluent_kafka")
    require("pyarrow")
    p = source_plan if source_plan is not None else plan(spec)
    created = target.ensure_topics(spec, p)
    omap = OffsetMap()
    summaries = produce.restore_partitions(spec, p, omap)
    return RestoreResult(p, summaries, created, omap)


def restore_partition(spec: RestoreSpec, part: SourcePartition) -> Tuple[PartitionSummary, OffsetMap]:
    """Restore one source partition of a plan, whole and on its own (its own transactional producer,
    its progress in its transactions): what :func:`restore` runs for each partition in turn, and
    the unit to run in parallel elsewhere.  Create the target topics first (:func:`restore` does);
    returns its summary and its offset map (:meth:`OffsetMap.update` joins the maps)."""
    from kafkarec._extras import require
    from kafkarec.restore import produce
    require("confluent_kafka")
    require("pyarrow")
    return produce.restore_partition(spec, part)


def offset_map(spec: RestoreSpec, *, source_plan: Optional[SourcePlan] = None) -> OffsetMap:
    """The offset map of a finished (or partly finished) restore, rebuilt from the target's log and
    the source's committed records up to the restore's progress (after a crash, or elsewhere)."""
    from kafkarec.restore import produce, target
    p = source_plan if source_plan is not None else plan(spec)
    keys = [(s.target_topic, s.partition) for s in p.partitions]
    done, ends = target.progress(spec, keys), target.ends(spec, keys)
    omap = OffsetMap()
    for part in p.partitions:
        upto = done.get((part.target_topic, part.partition), part.start)
        # every record on the target, up to the recorded progress (an earlier run's end may be later)
        produce.rebuild_pairs(spec, part, upto, omap)
        omap.set_end(part.topic, part.partition, part.target_topic, max(part.end, upto),
                     ends[(part.target_topic, part.partition)])
    return omap


def translate_groups(spec: RestoreSpec, source_plan: SourcePlan, omap: OffsetMap) -> List[GroupPosition]:
    """Every consumer group's positions on the restored partitions as of ``spec.groups_as_of`` (None:
    the end of the history), translated through ``omap``."""
    from kafkarec.restore import groups
    return groups.translate(spec, source_plan, omap)


def apply_groups(spec: RestoreSpec, positions: List[GroupPosition]) -> List[str]:
    """Set ``positions`` on the target's groups (each must be empty; all checked before any is
    altered); returns the groups altered."""
    from kafkarec.restore import groups
    return groups.apply(spec, positions)


def write_groups_csv(positions: List[GroupPosition], path: str) -> None:
    """``positions`` as ``kafka-consumer-groups --reset-offsets --from-file`` CSV."""
    from kafkarec.restore import groups
    groups.write_csv(positions, path)


def translate_share_groups(spec: RestoreSpec, source_plan: SourcePlan, omap: OffsetMap) -> List[SharePosition]:
    """Every share group's start offset on the restored partitions as of ``spec.groups_as_of``, from the
    source's ``__share_group_state``, translated through ``omap``; each names the records acknowledged
    past its start offset, which the target will deliver again (``redelivered``)."""
    from kafkarec.restore import shares
    return shares.translate_shares(spec, source_plan, omap)


def write_share_groups_csv(positions: List[SharePosition], path: str) -> None:
    """``positions`` as ``kafka-share-groups --reset-offsets --group G --from-file`` CSV."""
    from kafkarec.restore import shares
    shares.write_share_csv(positions, path)


def verify(spec: RestoreSpec, source_plan: SourcePlan, omap: OffsetMap,
           positions: Optional[List[GroupPosition]] = None) -> VerifyReport:
    """The target read back against the source (and ``positions`` against the target's groups)."""
    from kafkarec.restore import check
    return check.verify(spec, source_plan, omap, positions)
