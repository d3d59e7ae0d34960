"""``kafkarec verify``: check log segments, their indexes and the partition's side files.

:func:`check_partition` verifies one partition directory in a single pass
over each segment: every batch (framing, header, magic, CRC, offsets within
and across segments; with ``deep`` every record too) and, fed from the same
scan, the segment's ``.index``, ``.timeindex`` and ``.txnindex`` checks of
:mod:`kafkarec.log.sidefiles`; then KRaft snapshots, producer snapshots, the
leader epoch checkpoint and ``partition.metadata``.

With ``resync`` a corrupt region does not end a segment's scan: reading goes
on at the next plausible batch header (:meth:`Segment.find_next_batch`), and
the size of a batch with a bad CRC is trusted only if a plausible batch
follows it.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable, ContextManager, Iterator, List, Optional

import kafkarec
from kafkarec.log import sidefiles as sf
from kafkarec.cli.common import (EXIT_OK, EXIT_PROBLEMS, Progress, human, jdump, problem_dict, problem_line,
                                 read_options)
from kafkarec.log.checks import Problem
from kafkarec.log.staging import Staging
from kafkarec.enums import ControlRecordType
from kafkarec.errors import DecodeError, KafkaRecError
from kafkarec.log.segment import (HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, FileBatch, PartitionDir, Segment,
                                  SkippedBatch, SkippedRegion, TrailingBytes)

__all__ = ["Problem", "SegmentCheck", "check_partition", "format_problem", "run"]

_INT32_MAX = 2**31 - 1


class SegmentCheck:
    """Checks one segment's batches in a single pass.

    Per batch: framing, header, magic, CRC, offsets (increasing, within the
    segment's 32-bit relative range, lastOffsetDelta vs count); with ``deep``
    every record is decoded too.  :meth:`run` feeds the batches to the side
    file checks.  With ``resync`` a corrupt region is skipped up to the next
    plausible batch header instead of ending the scan.
    """

    def __init__(self, segment: Segment, *, deep: bool = False, resync: bool = False,
                 prev_last_offset: Optional[int] = None, options: Optional[kafkarec.ReadOptions] = None):
        self.segment = segment
        self.deep = deep
        self.resync = resync
        self.options = options
        self.problems: List[Problem] = []
        self.batches = 0
        self.bad_batches = 0
        self.records = 0
        self.bytes_ok = 0
        self.skipped_bytes = 0
        self.first_offset: Optional[int] = None
        self.last_offset: Optional[int] = prev_last_offset
        # Where reading stopped at a corrupt region (no --resync): what follows was not checked.
        self.stopped_at: Optional[int] = None
        self._every = ()

    def _add(self, position, offset, reason, severity="error"):
        self.problems.append(Problem(self.segment.path, position, offset, reason, severity))

    def run(self, observers: tuple = (), progress: Optional[Callable[[int], None]] = None,
            every: tuple = ()) -> List[Problem]:
        """Scan the segment.  ``observers`` see each good batch, ``every`` each framed one
        (also those with a bad CRC: an index may point at them)."""
        self._every = every
        scan = self.segment.scan(resync=self.resync, prev_last_offset=self.last_offset,
                                 options=self.options)
        for item in scan:
            if isinstance(item, FileBatch):
                self._check_batch(item, observers)
                if progress is not None:
                    progress(scan.position)
            elif isinstance(item, SkippedBatch):
                e = item.error
                self.bad_batches += 1
                self._add(e.position, None, e.reason)
                if item.stopped and not self.resync:
                    rest = self.segment.size - e.position
                    self.stopped_at = e.position
                    self._add(e.position, None, f"stopped reading: the {rest} bytes from here on were "
                              "not checked (--resync looks for batches after a corrupt region)",
                              "warning")
            elif isinstance(item, TrailingBytes):
                self._tail(item)
            else:
                self._skipped(item)
        if progress is not None:
            progress(self.segment.size)
        return self.problems

    def _tail(self, t: TrailingBytes) -> None:
        """Report bytes after the last whole batch."""
        n, pos = t.size, t.position
        if n < HEADER_SIZE_UP_TO_MAGIC:
            self._add(pos, None, f"{n} trailing bytes after the last batch are too few for a batch header")
            return
        _, size, magic = self.segment.frame_at(pos)
        if 0 <= magic <= 2:
            self._add(pos, None, f"incomplete batch at the end of the segment: it declares "
                      f"{size + LOG_OVERHEAD} bytes but only {n} remain (a truncated write)")
        else:
            self._add(pos, None, f"the bytes here do not look like a batch (magic {magic}, a declared "
                      f"size of {size + LOG_OVERHEAD} bytes with only {n} left)")

    def _skipped(self, r: SkippedRegion) -> None:
        """A corrupt region the scan skipped (--resync)."""
        n = r.end - r.start
        self.skipped_bytes += n
        if r.found:
            self._add(r.start, None, f"resync: skipped {n} bytes to the next plausible batch "
                      f"at position {r.end}", "warning")
        else:
            self._add(r.start, None, f"resync: no plausible batch in the {n} bytes "
                      "from here to the end of the segment", "warning")

    def _check_batch(self, fb: FileBatch, observers) -> None:
        """Check one batch (whether a resync follows a bad one is the scan's: SegmentScan)."""
        self.batches += 1
        for observe in self._every:
            observe(fb)
        b = fb.batch
        pos = fb.position
        last = b.last_offset           # a legacy wrapper's own offset; no decompression
        offset_for_report = last if fb.magic < 2 else b.base_offset
        if fb.magic > 2:
            self.bad_batches += 1
            self._add(pos, offset_for_report, f"Invalid magic found in record: {fb.magic}")
            return
        if not b.crc_valid:
            self.bad_batches += 1
            self._add(pos, offset_for_report,
                      f"Record is corrupt (stored crc = {b.crc}, computed crc = {b.computed_crc})")
            return
        ok = True
        base = self.segment.base_offset
        first = b.base_offset if fb.magic >= 2 else last
        if fb.magic >= 2:
            if b.last_offset_delta < 0:
                ok = self._bad(pos, first, f"negative last offset delta {b.last_offset_delta}")
            if b.record_count < 0 or b.record_count > b.last_offset_delta + 1:
                ok = self._bad(pos, first, f"record count {b.record_count} does not fit the offset "
                               f"range {first}..{last}")
            try:
                b.compression
            except DecodeError as e:
                ok = self._bad(pos, first, e.reason)
        if base is not None:
            if first < base:
                ok = self._bad(pos, first, f"offset {first} is below the segment's base offset {base}")
            elif last - base > _INT32_MAX:
                ok = self._bad(pos, first, f"offset {last} does not fit the segment's 32-bit "
                               f"relative offsets (base {base})")
        if self.last_offset is not None and first <= self.last_offset:
            ok = self._bad(pos, first, f"offsets go backwards: batch starts at {first} after "
                           f"offset {self.last_offset}")
        if self.deep and ok:
            ok = self._check_records(fb, first, last)
        elif ok and fb.magic >= 2:
            self.records += b.record_count
        if self.first_offset is None:
            self.first_offset = first
        self.last_offset = last if self.last_offset is None else max(self.last_offset, last)
        if ok:
            self.bytes_ok += fb.size_in_bytes
            for observe in observers:
                observe(fb)
        else:
            self.bad_batches += 1
        return None

    def _bad(self, pos, offset, reason) -> bool:
        self._add(pos, offset, reason)
        return False

    def _check_records(self, fb: FileBatch, first: int, last: int) -> bool:
        prev = self.last_offset        # the previous batch's last offset: records must go on from it
        n = 0
        control = fb.batch.is_control
        try:
            for r in fb:
                n += 1
                off = r.offset
                if prev is not None and off <= prev:
                    return self._bad(fb.position, off, f"record offset {off} does not follow {prev}")
                if fb.magic >= 2 and not first <= off <= last:
                    return self._bad(fb.position, off, f"record offset {off} is outside the batch's "
                                     f"range {first}..{last}")
                if control:
                    r.control_value   # parses key and value; raises on malformed ones
                prev = off
        except (DecodeError, KafkaRecError) as e:
            reason = getattr(e, "reason", None) or str(e)
            return self._bad(getattr(e, "position", fb.position), first, reason)
        self.records += n
        return True


def _cannot_open(path: str, e: OSError) -> Problem:
    return Problem(path, None, None, f"cannot read: {e.strerror or e}")


def _open_side(cls, path, base, problems):
    if not path:
        return None
    try:
        return cls(path, base)
    except (OSError, sf.SideFileError) as e:
        problems.append(Problem(path, None, None, f"cannot read: {e}"))
        return None


def check_partition(pdir: PartitionDir, *, deep: bool = False, resync: bool = False,
                    observers_for: Optional[Callable[[Segment], tuple]] = None,
                    progress: Optional[Callable[[int], None]] = None,
                    options: Optional[kafkarec.ReadOptions] = None,
                    stage: Callable[[Optional[str]], ContextManager] = lambda path: nullcontext(),
                    ) -> Iterator[tuple]:
    """Verify a partition directory; yields ``(SegmentCheck or None, [Problem])`` per step.

    Segments are checked in offset order against each other (base offsets,
    offsets increasing across segments) and against their ``.index``,
    ``.timeindex`` and ``.txnindex``; then producer snapshots, the leader epoch
    checkpoint and ``partition.metadata``.  ``progress`` gets byte counts.
    ``stage(path)`` surrounds the reading of each segment and KRaft snapshot
    (:meth:`kafkarec.log.staging.Staging.stage` downloads one from a URI).
    """
    epoch_check = None
    problems: List[Problem] = []
    if pdir.leader_epoch_checkpoint:
        try:
            entries = sf.read_leader_epoch_checkpoint(pdir.leader_epoch_checkpoint)
            epoch_check = sf.LeaderEpochCheck(pdir.leader_epoch_checkpoint, entries)
        except (OSError, sf.SideFileError) as e:
            problems.append(Problem(pdir.leader_epoch_checkpoint, None, None, str(e)))
    if pdir.partition_metadata:
        try:
            sf.read_partition_metadata(pdir.partition_metadata)
        except (OSError, sf.SideFileError) as e:
            problems.append(Problem(pdir.partition_metadata, None, None, str(e)))
    if problems:
        yield None, problems
    prev_last = None
    log_start = pdir.segments[0].base_offset if pdir.segments else None
    done = 0
    for i, files in enumerate(pdir.segments):
        if files.log is None:
            yield None, [Problem(files.index or files.timeindex or files.txnindex, None, None,
                                 f"side file without its segment {sf.file_name(files.base_offset, '.log')}")]
            continue
        with stage(files.log):
            check, problems = _check_segment(
                files, prev_last, active=i == len(pdir.segments) - 1, deep=deep, resync=resync,
                observers_for=observers_for, options=options, log_start=log_start,
                epoch_check=epoch_check,
                progress=None if progress is None else (lambda n, b=done: progress(b + n)))
        if check is not None:
            done += check.segment.size
            if check.last_offset is not None:
                prev_last = check.last_offset
        yield check, problems
    for path in pdir.kraft_snapshots:
        with stage(path):
            result = _check_kraft_snapshot(path, deep=deep, resync=resync, options=options)
        yield result
    problems = []
    for path in pdir.producer_snapshots:
        problems.extend(_check_producer_snapshot(path))
    if epoch_check is not None:
        problems.extend(Problem(*p) for p in epoch_check.finish())
    if problems:
        yield None, problems


def _check_segment(files, prev_last: Optional[int], *, active: bool, deep: bool, resync: bool,
                   observers_for, options, log_start, epoch_check, progress) -> tuple:
    """One segment of :func:`check_partition`: ``(SegmentCheck or None, [Problem])``."""
    try:
        seg = Segment(files.log)
    except OSError as e:
        return None, [_cannot_open(files.log, e)]
    with seg:
        problems: List[Problem] = []
        every, observers, finishers = _side_checks(files, seg, problems, active=active,
                                                   log_start=log_start, epoch_check=epoch_check)
        if observers_for is not None:
            observers.extend(observers_for(seg))
        check = SegmentCheck(seg, deep=deep, resync=resync, prev_last_offset=prev_last,
                             options=options)
        check.run(tuple(observers), progress, every=tuple(every))
        problems.extend(check.problems)
        for finish in finishers:
            problems.extend(Problem(*p) for p in finish(check))
        if prev_last is not None and files.base_offset <= prev_last:
            problems.append(Problem(files.log, None, files.base_offset,
                                    f"segment base offset {files.base_offset} is not above the "
                                    f"previous segment's last offset {prev_last}"))
    return check, problems


def _side_checks(files, seg: Segment, problems: List[Problem], *, active: bool,
                 log_start: Optional[int], epoch_check) -> tuple:
    """The checks a segment's scan feeds: ``(every, observers, finishers)``.

    ``every`` sees each framed batch, ``observers`` each good one; each
    finisher takes the finished :class:`SegmentCheck` and returns problems.
    Side files that cannot be read are reported into ``problems``.
    """
    every, observers, finishers = [], [], []
    oi = _open_side(sf.OffsetIndex, files.index, files.base_offset, problems)
    if oi is not None:
        c = sf.OffsetIndexCheck(oi, seg.size, active=active)
        every.append(lambda fb, c=c: c.see_batch(fb.position, fb.batch.last_offset))
        finishers.append(lambda check, c=c: c.finish(unchecked_from=check.stopped_at))
    ti = _open_side(sf.TimeIndex, files.timeindex, files.base_offset, problems)
    if ti is not None:
        c = sf.TimeIndexCheck(ti, active=active)
        every.append(lambda fb, c=c: c.see_batch(fb.batch.last_offset, fb.batch.max_timestamp))
        finishers.append(lambda check, c=c: c.finish(complete=check.stopped_at is None))
    xi = _open_side(sf.TransactionIndex, files.txnindex, files.base_offset, problems)
    if xi is not None:
        c = sf.TxnIndexCheck(xi)
        observers.append(lambda fb, c=c: _see_txn(c, fb))
        finishers.append(lambda check, c=c: c.finish(log_start, complete=check.stopped_at is None))
    if epoch_check is not None:
        observers.append(lambda fb: fb.magic >= 2 and epoch_check.see_batch(
            fb.path, fb.position, fb.batch.base_offset, fb.batch.partition_leader_epoch))
    return every, observers, finishers


def _see_txn(check: sf.TxnIndexCheck, fb: FileBatch) -> None:
    b = fb.batch
    if fb.magic < 2 or not b.is_transactional:
        return
    if not b.is_control:
        check.see_data_batch(b.producer_id, b.base_offset)
        return
    try:
        for r in fb:
            ctype = r.control_type
            check.see_marker(r.offset, b.producer_id, ctype.name if ctype is not None else "UNKNOWN")
    except DecodeError:
        pass   # reported by the batch checks with --deep


def _check_producer_snapshot(path: str) -> List[Problem]:
    try:
        snap = sf.read_producer_snapshot(path)
    except (OSError, sf.SideFileError) as e:
        return [Problem(path, None, None, str(e))]
    out = []
    for e in snap.entries:
        if snap.offset >= 0 and e.last_offset >= snap.offset:
            out.append(Problem(path, None, e.last_offset,
                               f"producer {e.producer_id}: last offset {e.last_offset} is not below "
                               f"the snapshot offset {snap.offset}"))
        if snap.offset >= 0 and e.current_txn_first_offset >= snap.offset:
            out.append(Problem(path, None, e.current_txn_first_offset,
                               f"producer {e.producer_id}: ongoing transaction starts at "
                               f"{e.current_txn_first_offset}, not below the snapshot offset {snap.offset}"))
    return out


def _control_types(fb: FileBatch) -> list:
    if fb.magic < 2 or not fb.is_control:
        return []
    return [r.control_type for r in fb]


def _check_kraft_snapshot(path: str, *, deep: bool, resync: bool,
                          options: Optional[kafkarec.ReadOptions]) -> tuple:
    """A KRaft snapshot: batches, the first opening with SnapshotHeader, the last with SnapshotFooter."""
    try:
        seg = Segment(path)
    except OSError as e:
        return None, [_cannot_open(path, e)]
    with seg:
        last = []

        def remember(fb):
            last[:] = [fb.position]
        check = SegmentCheck(seg, deep=deep, resync=resync, options=options)
        check.run((remember,))
        problems = list(check.problems)
        if check.batches == 0:
            problems.append(Problem(path, 0, None, "snapshot holds no batches"))
            return check, problems
        try:
            first = seg.batch_at(0)
            types = _control_types(first) if first is not None else []
            if not types or types[0] != ControlRecordType.SNAPSHOT_HEADER:
                problems.append(Problem(path, 0, None, "the first batch does not start with a "
                                        "SnapshotHeader control record"))
            end = seg.batch_at(last[0]) if last else None
            if end is None or ControlRecordType.SNAPSHOT_FOOTER not in _control_types(end):
                problems.append(Problem(path, last[0] if last else None, None,
                                        "the last batch holds no SnapshotFooter control record"))
        except (DecodeError, KafkaRecError) as e:
            problems.append(Problem(path, getattr(e, "position", None), None, str(e)))
    return check, problems


# --- the command ------------------------------------------------------------------------

format_problem = problem_line   # its old name


def run(pdirs: List[PartitionDir], args, out, err, *,
        staging_of: Callable[[PartitionDir], Optional[Staging]] = lambda pdir: None) -> int:
    """``kafkarec verify``: problems on ``out`` as they are found, then a summary.
    ``staging_of(pdir)``: the :class:`kafkarec.log.staging.Staging` a partition folder was
    mirrored by (its files are staged one at a time and reported by their URIs), or None."""
    progress = Progress(sum(p.log_bytes() for p in pdirs), err, enabled=not args.no_progress,
                        label="verifying")
    counts = {"error": 0, "warning": 0, "note": 0}
    totals = {"partitions": 0, "segments": 0, "batches": 0, "records": 0, "bytes": 0, "skipped_bytes": 0}

    def show(problems, staging):
        for p in problems:
            if staging is not None:
                p = p._replace(path=staging.to_uri(p.path), reason=staging.rename(p.reason))
            counts[p.severity] += 1
            if p.severity == "note" and not args.verbose:
                continue
            progress.close()
            if args.json:
                out.write(jdump(problem_dict(p)) + "\n")
            else:
                out.write(problem_line(p) + "\n")

    done = 0
    try:
        for pdir in pdirs:
            totals["partitions"] += 1
            staging = staging_of(pdir)
            for check, problems in check_partition(
                    pdir, deep=args.deep, resync=args.resync,
                    options=read_options(args),
                    progress=lambda n, b=done: progress.update(b + n),
                    stage=staging.stage if staging is not None else (lambda path: nullcontext())):
                if check is not None:
                    totals["segments"] += 1
                    totals["batches"] += check.batches
                    totals["records"] += check.records
                    totals["bytes"] += check.segment.size
                    totals["skipped_bytes"] += check.skipped_bytes
                show(problems, staging)
            done += pdir.log_bytes()
    finally:
        progress.close()
    if args.json:
        out.write(jdump(dict(type="summary", errors=counts["error"], warnings=counts["warning"],
                             notes=counts["note"], **totals)) + "\n")
    else:
        out.write(f"checked {totals['partitions']} partition(s), {totals['segments']} segment(s), "
                  f"{totals['batches']} batches, " + (f"{totals['records']} records, " if args.deep else "")
                  + f"{human(totals['bytes'])}: {counts['error']} error(s), {counts['warning']} warning(s)\n")
    return EXIT_PROBLEMS if counts["error"] else EXIT_OK
