"""A partition checked as ``kafkarec verify`` checks it, in ONE scan of each segment.

:func:`check_partition` verifies one partition directory: every batch
(:class:`SegmentCheck`: framing, the core's strict header rules
(``RecordBatch.header_errors``), magic, CRC, offsets within and across segments;
with ``deep`` every record too) and, fed from the same scan, the segment's
``.index``, ``.timeindex`` and ``.txnindex``; then KRaft snapshots, producer
snapshots, the leader epoch checkpoint and ``partition.metadata``.

Each side-file ``*Check`` is built from a parsed side file
(:mod:`kafkarec.log.sidefiles`), is fed every batch of its segment while the
segment is scanned once, and reports :class:`Problem` s at the end, so a 1 GB
segment is never held in memory to verify its indexes.  Problems carry a
severity: ``"error"`` fails ``kafkarec verify``, ``"warning"`` and ``"note"`` do not.

With ``resync`` a corrupt region does not end a segment's scan: reading goes on
at the next plausible batch header (:meth:`Segment.find_next_batch`), and the
size of a batch with a bad CRC is trusted only if a plausible batch follows it.
"""
from __future__ import annotations

import bisect
from contextlib import ExitStack, nullcontext
from typing import Callable, ContextManager, Iterable, Iterator, List, NamedTuple, Optional

import kafkarec
from kafkarec.enums import ControlRecordType
from kafkarec.errors import DecodeError, KafkaRecError
from kafkarec.log import sidefiles as sf
from kafkarec.log.segment import (HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, FileBatch, Segment, SkippedBatch,
                                  SkippedRegion, TrailingBytes)
from kafkarec.log.directory import PartitionDir
from kafkarec.log.sidefiles import (AbortedTxn, CorruptIndexError, EpochEntry, OffsetIndex, SideFileError,
                                    TimeIndex, TransactionIndex)

__all__ = ["Problem", "SideProblem", "OffsetIndexCheck", "TimeIndexCheck", "TxnIndexCheck", "TransactionStarts", "LeaderEpochCheck",
           "check_leader_epochs", "SegmentCheck", "check_partition"]

_INT32_MAX = 2**31 - 1


def check_leader_epochs(entries: Iterable[EpochEntry]) -> List[str]:
    """What LeaderEpochFileCache would refuse: epochs and start offsets must increase."""
    problems = []
    prev = None
    for e in entries:
        if e.epoch < 0 or e.start_offset < 0:
            problems.append(f"negative epoch or start offset in entry {e.epoch} {e.start_offset}")
        if prev is not None and (e.epoch <= prev.epoch or e.start_offset < prev.start_offset):
            problems.append(f"entry {e.epoch} {e.start_offset} does not follow "
                            f"{prev.epoch} {prev.start_offset} (epochs and start offsets must increase)")
        prev = e
    return problems



class Problem(NamedTuple):
    """Something wrong (``error``), suspicious (``warning``) or worth knowing (``note``) in a file."""
    path: str
    position: Optional[int]
    offset: Optional[int]
    reason: str
    severity: str = "error"


SideProblem = Problem      # its name when only side files had problems


class _SideFileCheck:
    """What every check of a side file has: the file and the problems found in it."""

    def __init__(self, index):
        self.index = index
        self.problems: List[SideProblem] = []

    def _add(self, reason, position=None, offset=None, severity="error"):
        self.problems.append(SideProblem(self.index.path, position, offset, reason, severity))


class _IndexCheck(_SideFileCheck):
    """Rules the offset and the time index share: their preallocated tail, offsets in the segment."""

    KIND = "index"

    def _tail(self, n_entries: int, active: bool) -> None:
        idx = self.index
        if not idx.preallocated_slots:
            return
        if not idx.tail_is_zero():
            self._add(f"{idx.preallocated_slots} slots after the last entry are not zero "
                      "(not a preallocated tail)")
        elif not active:
            self._add(f"untrimmed {self.KIND}: {idx.preallocated_slots} preallocated zero slots after "
                      f"{n_entries} entries (the segment was not closed cleanly)", severity="note")

    def _unwritten(self, active: bool) -> bool:
        """An active segment's index that is all zeros holds no entry yet: the broker
        preallocates the file and writes its first entry only after ``index.interval.bytes``
        of the segment, so that entry never points at position 0 (a live broker's log dir
        has such a file for every active segment still below that size).  Kafka's dump
        shows slot 0 as an entry (kafkarec dump too); the check does not hold it to the log."""
        idx = self.index
        return active and idx.length > 0 and not any(idx.data)

    def _check_offset(self, i: int, offset: int, position: Optional[int]) -> None:
        base = self.index.base_offset
        if offset < base or offset - base > _INT32_MAX:
            self._add(f"entry {i} offset {offset} is outside the segment", position, offset)


class OffsetIndexCheck(_IndexCheck):
    """Every index entry must point at the start of the batch whose last offset it names."""

    def __init__(self, index: OffsetIndex, log_size: int, *, active: bool = False):
        super().__init__(index)
        self.log_size = log_size
        self._pending = {}
        self._structure(active)

    def _structure(self, active: bool) -> None:
        idx = self.index
        if self._unwritten(active):
            return
        try:
            idx.sanity_check()
        except CorruptIndexError as e:
            self._add(str(e))
        entries = idx.entries()
        self._tail(len(entries), active)
        prev = None
        for i, e in enumerate(entries):
            if prev is not None and (e.offset <= prev.offset or e.position <= prev.position):
                self._add(f"entry {i} (offset {e.offset}, position {e.position}) does not follow "
                          f"offset {prev.offset}, position {prev.position}", e.position, e.offset)
            self._check_offset(i, e.offset, e.position)
            if not 0 <= e.position < self.log_size:
                self._add(f"entry {i} position {e.position} is outside the log "
                          f"({self.log_size} bytes)", e.position, e.offset)
            else:
                self._pending[e.position] = e.offset
            prev = e

    def see_batch(self, position: int, last_offset: int) -> None:
        expected = self._pending.pop(position, None)
        if expected is not None and expected != last_offset:
            self._add(f"Index offset: {expected}, log offset: {last_offset} "
                      "(the batch at this position ends at another offset)", position, expected)

    def finish(self, unchecked_from: Optional[int] = None) -> List[SideProblem]:
        """Report entries no batch matched; those at or after ``unchecked_from`` (where
        reading the log stopped) could not be checked and are only noted."""
        for position, offset in sorted(self._pending.items()):
            if unchecked_from is not None and position >= unchecked_from:
                self._add(f"index entry offset {offset} at position {position} was not checked "
                          "(the log could not be read that far)", position, offset, severity="note")
            else:
                self._add(f"index entry offset {offset} points at position {position}, "
                          "where no batch starts", position, offset)
        self._pending.clear()
        return self.problems


class TimeIndexCheck(_IndexCheck):
    """Entries must increase and name a batch whose max timestamp they hold."""

    KIND = "time index"

    def __init__(self, index: TimeIndex, *, active: bool = False):
        super().__init__(index)
        self._pending = {}
        self._active = active
        self._last_read: Optional[int] = None      # the last offset of the last batch read
        self._structure(active)

    def _structure(self, active: bool) -> None:
        idx = self.index
        if self._unwritten(active):
            return
        entries = idx.entries()
        self._tail(len(entries), active)
        if idx.preallocated_slots == 0 or idx.length % idx.ENTRY.size:
            # Kafka's sanity check reads the last slot; with a zero tail it always
            # fails (reported above as a note), so run it only on trimmed files.
            try:
                idx.sanity_check()
            except CorruptIndexError as e:
                self._add(str(e))
        prev = None
        for i, e in enumerate(entries):
            if prev is not None and (e.timestamp <= prev.timestamp or e.offset < prev.offset):
                self._add(f"Index timestamp: {e.timestamp}, Previously indexed timestamp: "
                          f"{prev.timestamp} (entry {i} is out of order)", None, e.offset)
            self._check_offset(i, e.offset, None)
            self._pending.setdefault(e.offset, []).append(e.timestamp)
            prev = e

    def see_batch(self, last_offset: int, max_timestamp: int) -> None:
        if self._last_read is None or last_offset > self._last_read:
            self._last_read = last_offset
        stamps = self._pending.pop(last_offset, None)
        if stamps is not None:
            for ts in stamps:
                if ts != max_timestamp:
                    self._add(f"Index timestamp: {ts}, log timestamp: {max_timestamp}", None, last_offset)

    def finish(self, complete: bool = True) -> List[SideProblem]:
        """Report entries no batch matched (only noted if the log was not read to its end)."""
        for offset in sorted(self._pending):
            if complete and self._active and (self._last_read is None or offset > self._last_read):
                # a live broker appends the batch, then its time index entry: an index read after the
                # log (as listed) may name batches appended since, past the last one read
                self._add(f"indexed offset {offset} lies past the last batch read (the active segment grew "
                          "while it was read)", None, offset, severity="note")
            elif complete:
                self._add(f"Indexed offset: {offset} is not the last offset of any batch", None, offset)
            else:
                self._add(f"indexed offset {offset} was not checked (the log could not be read "
                          "that far)", None, offset, severity="note")
        self._pending.clear()
        return self.problems


class TransactionStarts:
    """Where each producer's open transaction began, over a partition's segments in order.

    A transaction's first offset is the first transactional data batch of its producer
    after the producer's previous marker (Kafka's ProducerAppendInfo keeps it the same
    way); a broker writes the aborted transaction's ``.txnindex`` entry in the segment of
    its ABORT marker, which may be a later segment than the one the transaction began
    in.  Memory: one entry per producer with a transaction open."""

    def __init__(self):
        self._open: dict = {}

    def see_data_batch(self, producer_id: int, base_offset: int) -> None:
        self._open.setdefault(producer_id, base_offset)

    def see_marker(self, producer_id: int) -> Optional[int]:
        """The first offset of the transaction this producer's marker ends (None when it
        began before the scanned log)."""
        return self._open.pop(producer_id, None)


class TxnIndexCheck(_SideFileCheck):
    """Each aborted transaction must end at an ABORT marker of its producer in this segment."""

    def __init__(self, index: TransactionIndex):
        super().__init__(index)
        self.entries: List[AbortedTxn] = []
        self._by_last = {}
        self._first_batches = {}
        self._began = {}      # entry's last offset -> where its transaction began (TransactionStarts)
        try:
            self.entries = index.entries()
            index.sanity_check()
        except SideFileError as e:
            self._add(str(e))
        if index.trailing_bytes:
            self._add(f"{index.trailing_bytes} bytes after the last whole 34-byte entry")
        prev = None
        for t in self.entries:
            if t.first_offset > t.last_offset:
                self._add(f"first offset {t.first_offset} is after last offset {t.last_offset}",
                          None, t.last_offset)
            if prev is not None and t.last_offset <= prev.last_offset:
                self._add(f"last offset {t.last_offset} is not greater than the previous entry's "
                          f"{prev.last_offset}", None, t.last_offset)
            self._by_last[t.last_offset] = t
            prev = t

    @property
    def wants_markers(self) -> bool:
        return bool(self._by_last)

    def see_data_batch(self, producer_id: int, base_offset: int) -> None:
        """Remember where transactional batches start, to check first offsets."""
        self._first_batches.setdefault(producer_id, set()).add(base_offset)

    def see_marker(self, offset: int, producer_id: int, control_type: str,
                   began: Optional[int] = None) -> None:
        """A marker at ``offset``; ``began``: where the transaction it ends began, when the
        partition's scan saw it (:class:`TransactionStarts`), else None."""
        t = self._by_last.pop(offset, None)
        if t is not None and began is not None and producer_id == t.producer_id:
            self._began[offset] = began
        if t is None:
            if control_type == "ABORT":
                self._add(f"ABORT marker of producer {producer_id} at offset {offset} has no "
                          "entry in the transaction index", None, offset, severity="warning")
            return
        if control_type != "ABORT" or producer_id != t.producer_id:
            self._add(f"entry for producer {t.producer_id} ends at offset {offset}, which holds a "
                      f"{control_type} marker of producer {producer_id}", None, offset)

    def finish(self, log_start: Optional[int] = None, complete: bool = True) -> List[SideProblem]:
        for offset, t in sorted(self._by_last.items()):
            if complete:
                self._add(f"entry for producer {t.producer_id} ends at offset {offset}, where the log "
                          "has no control marker", None, offset)
            else:
                self._add(f"entry for producer {t.producer_id} ending at offset {offset} was not "
                          "checked (the log could not be read that far)", None, offset, severity="note")
        for t in self.entries:
            began = self._began.get(t.last_offset)
            if began is not None:
                # the partition's scan saw the transaction's first batch still in the log (in this
                # or an earlier segment); one that began in a segment since deleted (deleteRecords,
                # retention) is first seen later than the index's first offset, which is right
                if began != t.first_offset and (log_start is None or t.first_offset >= log_start):
                    self._add(f"first offset {t.first_offset} of producer {t.producer_id}'s aborted "
                              f"transaction is not where it began (offset {began})", None, t.first_offset)
                continue
            starts = self._first_batches.get(t.producer_id, ())
            # The transaction may have begun in an earlier (possibly deleted) segment.
            if log_start is not None and t.first_offset >= log_start and t.first_offset not in starts:
                self._add(f"first offset {t.first_offset} of producer {t.producer_id}'s aborted "
                          "transaction is not the start of one of its batches", None, t.first_offset)
        self._by_last.clear()
        return self.problems


class LeaderEpochCheck:
    """Batches must carry the epoch the checkpoint assigns to their base offset."""

    MAX_EXAMPLES = 5

    def __init__(self, path: str, entries: List[EpochEntry]):
        self.path = path
        self.entries = entries
        self._starts = [e.start_offset for e in entries]
        self.problems: List[SideProblem] = []
        self.mismatches = 0
        for reason in check_leader_epochs(entries):
            self.problems.append(SideProblem(path, None, None, reason))

    def expected_epoch(self, offset: int) -> Optional[int]:
        i = bisect.bisect_right(self._starts, offset) - 1
        return self.entries[i].epoch if i >= 0 else None

    def see_batch(self, log_path: str, position: int, base_offset: int, epoch: int) -> None:
        if epoch < 0 or not self.entries:
            return
        expected = self.expected_epoch(base_offset)
        if expected is not None and expected == epoch:
            return
        self.mismatches += 1
        if self.mismatches <= self.MAX_EXAMPLES:
            self.problems.append(SideProblem(
                log_path, position, base_offset,
                f"batch has partition leader epoch {epoch} but {self.path} assigns "
                f"{'no epoch' if expected is None else f'epoch {expected}'} to this offset",
                "warning"))

    def finish(self) -> List[SideProblem]:
        if self.mismatches > self.MAX_EXAMPLES:
            self.problems.append(SideProblem(
                self.path, None, None,
                f"{self.mismatches} batches in all disagree with the leader epoch checkpoint",
                "warning"))
        return self.problems


# --- segments and partitions ------------------------------------------------------------

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
        if (self.options is None or self.options.verify_crc) and not b.crc_valid:
            self.bad_batches += 1
            self._add(pos, offset_for_report,
                      f"Record is corrupt (stored crc = {b.crc}, computed crc = {b.computed_crc})")
            return
        ok = True
        base = self.segment.base_offset
        try:
            first = b.base_offset      # Kafka's baseOffset(): a compressed legacy wrapper is opened
        except DecodeError as e:
            self.bad_batches += 1
            self._add(e.position, offset_for_report, e.reason)
            return
        for problem in b.header_errors:      # the core's strict header rules (empty for v0/v1)
            ok = self._bad(pos, first, problem.reason)
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
            epoch_check = LeaderEpochCheck(pdir.leader_epoch_checkpoint, entries)
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
    txn_starts = TransactionStarts()      # transactions span segments
    done = 0
    for i, files in enumerate(pdir.segments):
        if files.log is None:
            yield None, [Problem(files.index or files.timeindex or files.txnindex, None, None,
                                 f"side file without its segment {sf.file_name(files.base_offset, '.log')}")]
            continue
        with ExitStack() as staged:
            try:
                staged.enter_context(stage(files.log))
            except (OSError, KafkaRecError) as e:
                # a staged copy that cannot be made (a remote object that fails to read, decrypt ...)
                yield None, [Problem(files.log, None, None, f"the segment could not be read: {e}")]
                continue
            check, problems = _check_segment(
                files, prev_last, active=i == len(pdir.segments) - 1, deep=deep, resync=resync,
                observers_for=observers_for, options=options, log_start=log_start,
                epoch_check=epoch_check, txn_starts=txn_starts,
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
                   observers_for, options, log_start, epoch_check, progress,
                   txn_starts: Optional[TransactionStarts] = None) -> tuple:
    """One segment of :func:`check_partition`: ``(SegmentCheck or None, [Problem])``."""
    try:
        seg = Segment(files.log)
    except OSError as e:
        return None, [_cannot_open(files.log, e)]
    with seg:
        problems: List[Problem] = []
        every, observers, finishers = _side_checks(files, seg, problems, active=active,
                                                   log_start=log_start, epoch_check=epoch_check,
                                                   txn_starts=txn_starts)
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
                 log_start: Optional[int], epoch_check,
                 txn_starts: Optional[TransactionStarts] = None) -> tuple:
    """The checks a segment's scan feeds: ``(every, observers, finishers)``.

    ``every`` sees each framed batch, ``observers`` each good one; each
    finisher takes the finished :class:`SegmentCheck` and returns problems.
    Side files that cannot be read are reported into ``problems``.
    """
    every, observers, finishers = [], [], []
    oi = _open_side(sf.OffsetIndex, files.index, files.base_offset, problems)
    if oi is not None:
        c = OffsetIndexCheck(oi, seg.size, active=active)
        every.append(lambda fb, c=c: c.see_batch(fb.position, fb.batch.last_offset))
        finishers.append(lambda check, c=c: c.finish(unchecked_from=check.stopped_at))
    ti = _open_side(sf.TimeIndex, files.timeindex, files.base_offset, problems)
    if ti is not None:
        c = TimeIndexCheck(ti, active=active)
        every.append(lambda fb, c=c: c.see_batch(fb.batch.last_offset, fb.batch.max_timestamp))
        finishers.append(lambda check, c=c: c.finish(complete=check.stopped_at is None))
    xi = _open_side(sf.TransactionIndex, files.txnindex, files.base_offset, problems)
    if xi is not None:
        c = TxnIndexCheck(xi)
        observers.append(lambda fb, c=c: _see_txn(c, fb, txn_starts))
        finishers.append(lambda check, c=c: c.finish(log_start, complete=check.stopped_at is None))
    elif txn_starts is not None:
        observers.append(lambda fb: _see_txn(None, fb, txn_starts))
    if epoch_check is not None:
        observers.append(lambda fb: fb.magic >= 2 and epoch_check.see_batch(
            fb.path, fb.position, fb.batch.base_offset, fb.batch.partition_leader_epoch))
    return every, observers, finishers


def _see_txn(check: Optional[TxnIndexCheck], fb: FileBatch,
             txn_starts: Optional[TransactionStarts] = None) -> None:
    b = fb.batch
    if fb.magic < 2 or not b.is_transactional:
        return
    if not b.is_control:
        if txn_starts is not None:
            txn_starts.see_data_batch(b.producer_id, b.base_offset)
        if check is not None:
            check.see_data_batch(b.producer_id, b.base_offset)
        return
    # a control batch ends its producer's open transaction
    began = txn_starts.see_marker(b.producer_id) if txn_starts is not None else None
    if check is None:
        return
    try:
        for r in fb:
            ctype = r.control_type
            check.see_marker(r.offset, b.producer_id, ctype.name if ctype is not None else "UNKNOWN",
                             began)
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
