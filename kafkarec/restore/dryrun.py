"""A restore's dry run: every selected segment read as the restore would read it, and per
partition what would be written, without writing anything to the target (docs/restore.md, "Dry
run").

Each partition of the plan is judged, in this order (the first that applies):

* ``damaged``: a batch of the range fails to decode (the reader's FAILFAST error, naming the file
  and the byte): the restore would stop there; ``records`` counts those before it;
* ``missing``: offsets of the range are in no copy of the log -- a tiered history's gap, or, in a
  topic that is not compacted (its ``cleanup.policy`` in the source's ``__cluster_metadata``), a
  hole between two batches (or before the first), where Kafka's log has none: a segment absent;
* ``refused``: the target's progress for this restore id is one the restore refuses (below the
  source's log start, past its log end);
* ``done``: the target's progress is at or past the range's end: nothing would be written;
* ``partial``: the target already holds a prefix of the range from an earlier run (the restore
  resumes at its progress), or ``--end-time`` ends the range before the log's end;
* ``full``: every committed record of [start, end) decodes and would be written.

The target is only read, and only when the spec names one: the restore's progress group's
committed offsets (no topic is created, nothing is produced or committed).
"""
from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

from kafkarec.errors import DecodeError, MalformedBatchError, SideFileError, StorageError
from kafkarec.restore import source
from kafkarec.restore.source import SourcePartition, SourcePlan
from kafkarec.restore.spec import RestoreSpec

__all__ = ["PartitionDryRun", "DryRun", "dry_run", "FULL", "PARTIAL", "DONE", "MISSING", "DAMAGED", "REFUSED",
           "WHOLE"]

FULL, PARTIAL, DONE, MISSING, DAMAGED, REFUSED = "full", "partial", "done", "missing", "damaged", "refused"
#: the statuses of a partition that would be restored whole (the command exits 0 when all are)
WHOLE = frozenset({FULL, PARTIAL, DONE})

#: what a read of the source raises on bytes it cannot take (each names its file and byte)
_UNREADABLE = (DecodeError, MalformedBatchError, SideFileError, StorageError)

Ranges = Tuple[Tuple[int, int], ...]


class PartitionDryRun(NamedTuple):
    """One partition's dry run: source ``topic-partition`` [``start``, ``end``) into
    ``target_topic``; ``first``, where this run would begin writing (``start``, or the target's
    progress); ``records``, the committed records it would write (up to a damaged batch);
    ``status`` (the module docstring); ``missing``, the offset ranges ``[a, b)`` in no copy of the
    log; ``holes``, offset holes in a topic whose cleanup policy is not known (compaction's, or
    missing: not judged); ``damaged``, the reader's error; ``reason``, a sentence for ``partial``,
    ``done`` and ``refused``."""
    topic: str
    partition: int
    target_topic: str
    start: int
    end: int
    first: int
    records: int
    status: str
    missing: Ranges = ()
    holes: Ranges = ()
    damaged: Optional[str] = None
    reason: Optional[str] = None

    def line(self) -> str:
        """``topic-p -> target-p [start, end) N records STATUS``, and what makes it so."""
        text = (f"{self.topic}-{self.partition} -> {self.target_topic}-{self.partition} [{self.start}, {self.end}) "
                f"{self.records} records {self.status}")
        notes = []
        if self.damaged:
            notes.append(self.damaged)
        if self.missing:
            notes.append(f"offsets {_text(self.missing)} are in no copy of the log")
        if self.reason:
            notes.append(self.reason)
        if self.holes:
            notes.append(f"offset holes {_text(self.holes)} (the topic's cleanup.policy is not known: compaction's "
                         "or missing segments)")
        return text + (": " + "; ".join(notes) if notes else "")

    def as_dict(self) -> dict:
        out = self._asdict()
        out["missing"] = [list(r) for r in self.missing]
        out["holes"] = [list(r) for r in self.holes]
        return out


class DryRun(NamedTuple):
    """Every partition's :class:`PartitionDryRun`, in the plan's order."""
    partitions: List[PartitionDryRun]

    @property
    def ok(self) -> bool:
        """Whether every partition would be restored whole (none damaged, missing or refused)."""
        return all(p.status in WHOLE for p in self.partitions)

    def counts(self) -> Dict[str, int]:
        out = {s: 0 for s in (FULL, PARTIAL, DONE, MISSING, DAMAGED, REFUSED)}
        for p in self.partitions:
            out[p.status] += 1
        return out

    def summary(self) -> str:
        counts = self.counts()
        return (f"dry run: {len(self.partitions)} partition(s), {sum(p.records for p in self.partitions)} "
                f"record(s) would be written: " + ", ".join(f"{n} {s}" for s, n in counts.items()))


def _text(ranges: Ranges) -> str:
    return ",".join(f"[{a}, {b})" for a, b in ranges)


def dry_run(spec: RestoreSpec, plan: SourcePlan, *,
            on_partition: Optional[Callable[[PartitionDryRun], None]] = None) -> DryRun:
    """Judge every partition of ``plan`` (the module docstring); ``on_partition`` as each is done.
    The target (when ``spec.target`` names one) is asked for the restore's progress only."""
    from kafkarec.scan import LogScan, ScanConfig
    done: Dict[Tuple[str, int], int] = {}
    if spec.target is not None:
        from kafkarec._extras import require
        from kafkarec.restore import target
        require("confluent_kafka")
        done = target.progress(spec, [(p.target_topic, p.partition) for p in plan.partitions])
    wanted = {p.key for p in plan.partitions}
    # the plan's own listing: each partition walked once, when its hand-off point was found
    if plan.listing is not None:
        walks = plan.listing.walks(wanted)
    else:
        scan = LogScan(ScanConfig.of(spec.source, storage_options=spec.storage_options,
                                     tiered_storage=spec.tiered_storage))
        walks = {w.key: w for w in scan.partition_walks() if w.key in wanted}
    out = []
    for part in plan.partitions:
        compacted = None if plan.compacted_topics is None else part.topic in plan.compacted_topics
        judged = _judge(spec, part, walks.get(part.key), compacted, done.get((part.target_topic, part.partition)),
                        plan.listing)
        out.append(judged)
        if on_partition is not None:
            on_partition(judged)
    return DryRun(out)


def _judge(spec: RestoreSpec, part: SourcePartition, walk, compacted: Optional[bool],
           progress: Optional[int], listing=None) -> PartitionDryRun:
    first, reason, status = part.start, None, None
    if progress is not None:
        if progress < part.start or progress > part.log_end:
            status = REFUSED
            reason = (f"the target's progress {progress} of restore {spec.restore_id!r} is "
                      + (f"below the source's log start {part.start}" if progress < part.start
                         else f"past the source's log end {part.log_end}") + ": the restore refuses it")
        elif progress >= part.end:
            status, first = DONE, part.end
            reason = f"the target holds [{part.start}, {progress}) from an earlier run"
        else:
            status, first = PARTIAL, progress
            reason = f"the target holds [{part.start}, {progress}) from an earlier run"
    if status is None and spec.end_time is not None and part.end < part.log_end:
        status, reason = PARTIAL, f"--end-time ends it before the log's end {part.log_end}"
    # the holes of the range still to write: every batch of the log walked (control and aborted too)
    gaps, damaged = [], None
    if first < part.end:
        try:
            gaps = _holes(walk, first, part.end)
        except _UNREADABLE as exc:
            damaged = str(exc)
    lost = sorted(r for r in (walk.lost if walk is not None else ())
                  if r[0] < part.end and r[1] > first)
    missing = tuple((max(a, first), min(b, part.end)) for a, b in lost)
    if compacted is False:
        missing = tuple(sorted(set(missing) | set(gaps)))
    holes = tuple(g for g in gaps if g not in missing) if compacted is None else ()
    records = 0
    if status != REFUSED and first < part.end:
        try:
            for _ in source.committed_records(spec, part.topic, part.partition, first, part.end, listing):
                records += 1
        except _UNREADABLE as exc:
            damaged = damaged or str(exc)
    if damaged:
        status = DAMAGED
    elif missing and status != REFUSED:
        status = MISSING
    elif status is None:
        status = FULL
    return PartitionDryRun(part.topic, part.partition, part.target_topic, part.start, part.end, first, records,
                           status, missing, holes, damaged, reason)


def _holes(walk, start: int, end: int) -> List[Tuple[int, int]]:
    """The offset ranges within [start, end) that no batch of the partition's log covers
    (:meth:`kafkarec.scan.PartitionWalk.holes`: read off its one walk)."""
    if walk is None:
        return [(start, end)]
    return walk.holes(start, end)
