"""Restore a history into another cluster, exactly once, and every consumer group where it stood
(docs/restore.md).

* :class:`RestoreSpec` -- the options, read once (:meth:`RestoreSpec.of`);
* :func:`restore` -- the committed data records of each partition produced into the target by one
  transactional producer per partition, the progress committed with them (a re-run resumes; a
  finished restore writes nothing); returns the partitions' summaries and the :class:`OffsetMap`;
* :func:`restore_partition` -- one partition's restore, the unit :func:`restore` runs in turn (or
  hands to ``run_partitions``: ``spark_udfs.restore`` runs one Spark task each);
* :func:`offset_map` -- the map rebuilt from the target's log and the source;
* :func:`translate_groups`, :func:`apply_groups`, :func:`write_groups_csv` -- the groups' positions
  as of a time, translated, applied on the target or written for ``kafka-consumer-groups``;
* :func:`translate_share_groups`, :func:`write_share_groups_csv` -- the share groups' start offsets
  as of a time, translated, naming the acknowledged records a start offset cannot keep from being
  delivered again, written for ``kafka-share-groups``; :func:`acknowledge_share_groups` -- once the
  start offsets are set, those records acknowledged on the target as the source's group had;
* :func:`check_groups` -- every group's and share group's source positions checked before anything
  is written; :func:`finish` -- after the records: the offset map file, the groups set or written,
  the share groups written and (``spec.share_groups_acknowledge``) acknowledged (what the command
  line and ``spark_udfs.restore`` do in the same way);
* :func:`verify` -- the target read back against the source: records, groups and share groups;
* :func:`dry_run` -- every selected segment read as the restore reads it, and per partition what
  would be written (full, partial, done, missing, damaged, refused), the target only read.

The evidence of a restore (``--evidence``: a spec with ``digest=True`` takes each partition's
content digest as it reads) and its check (``--check``) are :mod:`kafkarec.restore.evidence`'s
``document``, ``write``, ``read`` and ``check``.

Needs ``pip install 'kafkarec[restore]'`` (confluent-kafka, pyarrow).
"""
from __future__ import annotations

from typing import Callable, List, NamedTuple, Optional, Tuple

from kafkarec.errors import RestoreError
from kafkarec.restore.groups import GroupPosition
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.produce import PartitionSummary
from kafkarec.restore.shares import ShareAcknowledged, SharePosition
from kafkarec.restore.source import SourcePartition, SourcePlan
from kafkarec.restore.spec import RestoreSpec
from kafkarec.restore.check import VerifyReport
from kafkarec.restore.dryrun import DryRun, PartitionDryRun

__all__ = ["RestoreSpec", "RestoreResult", "PartitionSummary", "OffsetMap", "GroupPosition", "SharePosition",
           "ShareAcknowledged", "VerifyReport", "SourcePlan", "SourcePartition", "plan", "restore", "restore_partition",
           "offset_map", "translate_groups", "apply_groups", "write_groups_csv", "translate_share_groups",
           "write_share_groups_csv", "acknowledge_share_groups", "verify", "check_groups", "finish", "Finished",
           "PartitionRunner", "dry_run", "DryRun", "PartitionDryRun"]

#: what runs a plan's partitions: ``(spec, partitions)`` -> each partition's
#: :func:`restore_partition` answer, in the order given
PartitionRunner = Callable[[RestoreSpec, List[SourcePartition]], List[Tuple[PartitionSummary, OffsetMap]]]


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


def restore(spec: RestoreSpec, *, source_plan: Optional[SourcePlan] = None,
            run_partitions: Optional[PartitionRunner] = None,
            on_partition: Optional[Callable[[PartitionSummary], None]] = None) -> RestoreResult:
    """Restore ``spec``'s history into its target (see the module docstring): the target topics
    created first, here, once; then every partition's :func:`restore_partition`, one after another
    here, or by ``run_partitions`` (elsewhere, in parallel: ``spark_udfs.restore``), whose answers
    are joined here into one :class:`OffsetMap`.  ``on_partition`` is called with each partition's
    summary as soon as that partition is restored (here: before the next one starts; with
    ``run_partitions``: as its answers are joined), so that a run killed midway has said how far
    it got."""
    from kafkarec._extras import require
    from kafkarec.restore import produce, target
    require("confluent_kafka")
    require("pyarrow")
    from kafkarec.restore.schemas import translation_for
    translation_for(spec)       # a registry that cannot be read is refused before anything is written
    p = source_plan if source_plan is not None else plan(spec)
    created = target.ensure_topics(spec, p)
    omap = OffsetMap()
    if run_partitions is None:
        summaries = produce.restore_partitions(spec, p, omap, on_partition=on_partition)
    else:
        answers = run_partitions(spec, list(p.partitions))
        if len(answers) != len(p.partitions):
            raise RestoreError(spec.target, f"{len(answers)} partition answer(s) for {len(p.partitions)} partition(s)")
        summaries = []
        for summary, part_map in answers:
            omap.update(part_map)
            summaries.append(summary)
            if on_partition is not None:
                on_partition(summary)
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
        produce.rebuild_pairs(spec, part, upto, omap, listing=p.listing)
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


def acknowledge_share_groups(spec: RestoreSpec, positions: List[SharePosition]) -> List[ShareAcknowledged]:
    """Once the share groups' start offsets are set on the target (``kafka-share-groups
    --reset-offsets`` from :func:`write_share_groups_csv`'s file): each group joined on the target,
    the records its source group had acknowledged past the start offset acknowledged the same way
    (accepted, rejected), the others released, so that the first are not delivered again and the
    others are (:func:`kafkarec.restore.shares.acknowledge`).  Each group must have no members
    (which confluent-kafka cannot check: its admin calls do not see share groups)."""
    from kafkarec.restore import shares
    return shares.acknowledge(spec, positions)


def check_groups(spec: RestoreSpec, source_plan: SourcePlan) -> None:
    """Every consumer group's and share group's source position on the restored partitions read and
    checked (:class:`RestoreError` for one outside the history): asked before anything is written."""
    from kafkarec.restore.groups import checked_positions
    from kafkarec.restore.shares import checked_share_positions
    checked_positions(spec, source_plan)
    checked_share_positions(spec, source_plan)


class Finished(NamedTuple):
    """What :func:`finish` did with the groups: the positions translated (set on the target, or
    written to ``groups_csv``), the share groups' (None for each with ``groups=False``) and, with
    ``spec.share_groups_acknowledge``, what :func:`acknowledge_share_groups` did (else None)."""
    groups: Optional[List[GroupPosition]]
    share_groups: Optional[List[SharePosition]]
    share_acknowledged: Optional[List[ShareAcknowledged]] = None


def finish(spec: RestoreSpec, result: RestoreResult, *, offset_map: Optional[str] = None, groups: bool = True,
           groups_csv: Optional[str] = None, share_groups_csv: Optional[str] = None) -> Finished:
    """After the records: the offset map written to ``offset_map`` (a path), then (``groups``) every
    group's positions translated and set on the target (or written to ``groups_csv``), and every
    share group's translated (and written to ``share_groups_csv``; with
    ``spec.share_groups_acknowledge``, acknowledged on the target).  The command line's outputs,
    for every way of running a restore."""
    if offset_map:
        result.offset_map.write(offset_map)
    if not groups:
        return Finished(None, None)
    positions = translate_groups(spec, result.plan, result.offset_map)
    from kafkarec.restore.steps import step
    step("groups-translated")               # a named step (steps.py)
    if groups_csv:
        write_groups_csv(positions, groups_csv)
    else:
        apply_groups(spec, positions)
    shares = translate_share_groups(spec, result.plan, result.offset_map)
    if share_groups_csv:
        write_share_groups_csv(shares, share_groups_csv)
    acknowledged = acknowledge_share_groups(spec, shares) if spec.share_groups_acknowledge else None
    return Finished(positions, shares, acknowledged)


def verify(spec: RestoreSpec, source_plan: SourcePlan, omap: OffsetMap,
           positions: Optional[List[GroupPosition]] = None,
           share_positions: Optional[List[SharePosition]] = None) -> VerifyReport:
    """The target read back against the source (``positions`` against the target's groups, and
    ``share_positions`` against its share groups' persisted states)."""
    from kafkarec.restore import check
    return check.verify(spec, source_plan, omap, positions, share_positions)


def dry_run(spec: RestoreSpec, *, source_plan: Optional[SourcePlan] = None,
            on_partition: Optional[Callable[[PartitionDryRun], None]] = None) -> DryRun:
    """What a restore of ``spec`` would write, per partition, every selected segment read as the
    restore reads it and nothing written (:mod:`kafkarec.restore.dryrun`): ``spec.target`` may be
    None (no target read), else the restore's progress there is read to know what an earlier run
    left.  ``on_partition`` is called with each partition's answer as it is judged."""
    from kafkarec.restore import dryrun
    p = source_plan if source_plan is not None else plan(spec)
    return dryrun.dry_run(spec, p, on_partition=on_partition)
