"""Side files checked against their log, fed from ONE scan of each segment.

Each ``*Check`` is built from a parsed side file (:mod:`kafkarec.log.sidefiles`),
is fed every batch of its segment while :func:`kafkarec.cli.verify.check_partition`
scans the segment once, and reports :class:`SideProblem` s at the end, so a
1 GB segment is never held in memory to verify its indexes.  Problems carry a
severity: ``"error"`` fails ``kafkarec verify``, ``"warning"`` and ``"note"`` do not.
"""
from __future__ import annotations

import bisect
from typing import Iterable, List, NamedTuple, Optional

from kafkarec.log.sidefiles import (AbortedTxn, CorruptIndexError, EpochEntry, OffsetIndex, SideFileError,
                                    TimeIndex, TransactionIndex)

__all__ = ["Problem", "SideProblem", "OffsetIndexCheck", "TimeIndexCheck", "TxnIndexCheck", "LeaderEpochCheck",
           "check_leader_epochs"]

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
        self._structure(active)

    def _structure(self, active: bool) -> None:
        idx = self.index
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
        stamps = self._pending.pop(last_offset, None)
        if stamps is not None:
            for ts in stamps:
                if ts != max_timestamp:
                    self._add(f"Index timestamp: {ts}, log timestamp: {max_timestamp}", None, last_offset)

    def finish(self, complete: bool = True) -> List[SideProblem]:
        """Report entries no batch matched (only noted if the log was not read to its end)."""
        for offset in sorted(self._pending):
            if complete:
                self._add(f"Indexed offset: {offset} is not the last offset of any batch", None, offset)
            else:
                self._add(f"indexed offset {offset} was not checked (the log could not be read "
                          "that far)", None, offset, severity="note")
        self._pending.clear()
        return self.problems


class TxnIndexCheck(_SideFileCheck):
    """Each aborted transaction must end at an ABORT marker of its producer in this segment."""

    def __init__(self, index: TransactionIndex):
        super().__init__(index)
        self.entries: List[AbortedTxn] = []
        self._by_last = {}
        self._first_batches = {}
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

    def see_marker(self, offset: int, producer_id: int, control_type: str) -> None:
        t = self._by_last.pop(offset, None)
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
