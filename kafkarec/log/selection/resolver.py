"""Offsets for a selection's specs, found as Kafka finds them (:class:`Resolver`), and a partition's
log start offset (:func:`log_start_offset`).

Resolution uses the side files as Kafka does: whole segments are skipped by
their base offsets (file names) and by the largest timestamp in their
``.timeindex``; inside a segment, the ``.index`` entry at or below the start
offset gives the first byte to read and the first entry at or past the end
offset the last batch to read.  Side files are checked before use (Kafka's
sanity checks, entries inside the segment and increasing) and the entry used
is checked against the log when the batch it points at is read: a missing,
corrupt or stale side file costs a scan of that segment, never a wrong answer.
A closed segment is skipped by its ``.timeindex`` only once the batch its last
entry names and the segment's tail agree with it
(:meth:`Resolver._time_index_believed`; an index not believed is an
:class:`kafkarec.errors.IndexWarning` and a scan).
"""
from __future__ import annotations

import logging
import struct
import warnings
from typing import Dict, List, Optional, Tuple

import kafkarec
from kafkarec.errors import DecodeError, IndexWarning, KafkaRecError
from kafkarec.log import sidefiles as sf
from kafkarec.log.layout import PartitionLog, SegmentRef, held_offsets, open_segment, side_file, storage_of
from kafkarec.log.segment import SegmentOffsets, order_problem
from kafkarec.log.selection.options import _LONG_MAX
from kafkarec.log.storage import Storage, iter_remote_batches

__all__ = ["Resolver", "log_start_offset", "SCAN_OPTIONS"]

log = logging.getLogger("kafkarec")

# Bytes per request while resolving a timestamp by scanning, none read ahead: the record sought
# is within one index interval (log.index.interval.bytes, 4 KiB by default) and a batch of the
# time index entry the scan starts at, and a bounded read's cost is mostly these lookups.
SCAN_CHUNK = 16 << 10
# Headers and offsets only, while resolving a selection: no CRC, Kafka's file framing.
SCAN_OPTIONS = kafkarec.ReadOptions(file_rules=True, verify_crc=False)


class Resolver:
    """Offsets for specs, through side files read at most once per segment (cached)."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self._offset_idx: Dict[str, Optional[list]] = {}
        self._time_idx: Dict[str, Optional[list]] = {}
        self._time_believed: Dict[str, bool] = {}
        self._last: Dict[Tuple[str, int], Optional[int]] = {}    # (path, size) -> last offset
        self._rebuilt: Dict[str, Optional[list]] = {}   # path -> offset index a partition's walk rebuilt

    # side files, checked --------------------------------------------------------------
    def offset_entries(self, seg: SegmentRef) -> Optional[list]:
        """The ``.index`` entries ``[(offset, position)]`` or None (missing, corrupt)."""
        if seg.path in self._offset_idx:
            return self._offset_idx[seg.path]
        entries = None
        stored = self._stored_side_file(seg, "offset")
        if stored is not None:
            entries = self._offset_entries(seg, seg.path + " (.indexes)", stored)
        elif seg.offset_index is not None and seg.offset_index.size:
            try:
                data = storage_of(self.storage, seg).read_file(seg.offset_index.path, seg.offset_index.size)
                idx = sf.OffsetIndex(seg.offset_index.path, seg.base_offset, data=data)
                idx.sanity_check()
                entries = [tuple(e) for e in idx.entries()]
                if not _increasing(entries, seg.base_offset, seg.end_offset, seg.size):
                    raise sf.CorruptIndexError("entries out of order or outside the segment")
            except (sf.SideFileError, OSError) as exc:
                log.warning("kafkarec: ignoring %s (%s); scanning its segment instead",
                            self.storage.uri(seg.offset_index.path), exc)
                entries = None
        elif seg.offset_index is not None:
            entries = []
        if entries is None:
            entries = self._walked_entries(seg)
        self._offset_idx[seg.path] = entries
        return entries

    def _walked_entries(self, seg: SegmentRef) -> Optional[list]:
        """A local segment's offset index as Kafka rebuilds a missing or corrupt one, from one walk
        of its batch headers (:func:`kafkarec.log.sidefiles.walked_offset_index`): an offset bound then
        reads its batches only, not the whole segment.  None (the segment scanned whole) on other
        storage, where the walk would read every batch, and where the walk's offsets are not
        increasing inside the segment (a damaged log: the read judges it)."""
        if seg.rsm is not None or not storage_of(self.storage, seg).is_local:
            return None
        if seg.path in self._rebuilt:       # (a prefix of the file: what the walk framed of it)
            entries = self._rebuilt[seg.path]
        else:
            try:
                entries = sf.walked_offset_index(seg.path)
            except OSError:             # gone since it was listed: its read reports it
                return None
        if entries is None or not _increasing(entries, seg.base_offset, seg.end_offset, seg.size):
            return None
        return entries

    def time_entries(self, seg: SegmentRef) -> Optional[list]:
        """The ``.timeindex`` entries ``[(timestamp, offset)]`` or None (missing, corrupt)."""
        if seg.path in self._time_idx:
            return self._time_idx[seg.path]
        entries = None
        stored = self._stored_side_file(seg, "timestamp")
        if stored is not None:
            entries = self._time_entries(seg, seg.path + " (.indexes)", stored)
        elif seg.time_index is not None and seg.time_index.size:
            try:
                data = storage_of(self.storage, seg).read_file(seg.time_index.path, seg.time_index.size)
                idx = sf.TimeIndex(seg.time_index.path, seg.base_offset, data=data)
                es = [tuple(e) for e in idx.entries()]
                ok = all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(es, es[1:])) and all(
                    seg.base_offset <= o and (seg.end_offset is None or o < seg.end_offset) for _, o in es)
                if not ok:
                    raise sf.CorruptIndexError("entries out of order or outside the segment")
                entries = es
            except (sf.SideFileError, OSError) as exc:
                log.warning("kafkarec: ignoring %s (%s); scanning its segment instead",
                            self.storage.uri(seg.time_index.path), exc)
                entries = None
        self._time_idx[seg.path] = entries
        return entries

    def _stored_side_file(self, seg: SegmentRef, name: str) -> Optional[bytes]:
        """A plugin-stored segment's side file from its ``.indexes`` object (None: not such a
        segment, or unreadable: the segment is scanned instead)."""
        if seg.rsm is None:
            return None
        try:
            return side_file(self.storage, seg, name)
        except (KafkaRecError, OSError) as exc:
            log.warning("kafkarec: ignoring the %s index of %s (%s); scanning the segment instead",
                        name, self.storage.uri(seg.path), exc)
            return None

    def _offset_entries(self, seg: SegmentRef, name: str, data: bytes) -> Optional[list]:
        if not data:
            return []
        try:
            idx = sf.OffsetIndex(name, seg.base_offset, data=data)
            idx.sanity_check()
            entries = [tuple(e) for e in idx.entries()]
            if not _increasing(entries, seg.base_offset, seg.end_offset, seg.size):
                raise sf.CorruptIndexError("entries out of order or outside the segment")
            return entries
        except sf.SideFileError as exc:
            log.warning("kafkarec: ignoring %s (%s); scanning its segment instead", name, exc)
            return None

    def _time_entries(self, seg: SegmentRef, name: str, data: bytes) -> Optional[list]:
        if not data:
            return None
        try:
            es = [tuple(e) for e in sf.TimeIndex(name, seg.base_offset, data=data).entries()]
        except sf.SideFileError as exc:
            log.warning("kafkarec: ignoring %s (%s); scanning its segment instead", name, exc)
            return None
        ok = all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(es, es[1:])) and all(
            seg.base_offset <= o and (seg.end_offset is None or o < seg.end_offset) for _, o in es)
        return es if ok else None

    # offsets -> bytes -----------------------------------------------------------------
    def start_position(self, seg: SegmentRef, offset: int) -> Tuple[int, Optional[int]]:
        """``(position, check_last)``: where to start reading for ``offset`` (the index entry
        at or below it), and the last offset the batch there must have."""
        entries = self.offset_entries(seg)
        best = None
        for o, p in entries or ():
            if o <= offset:
                best = (p, o)
            else:
                break
        return best if best else (0, None)

    def end_position(self, seg: SegmentRef, offset: int) -> Optional[int]:
        """A position past which no batch holds an offset below ``offset`` (exclusive end):
        one byte past the first index entry at or after ``offset``; None if the index has none."""
        for o, p in self.offset_entries(seg) or ():
            if o >= offset:
                return p + 1
        return None

    # timestamps -> offsets ------------------------------------------------------------
    def offset_for_time(self, part: PartitionLog, ts: int, *, first_segment: int = 0,
                        log_start: int = 0) -> Optional[Tuple[int, int, int, int]]:
        """Kafka's offsetsForTimes in one partition: ``(offset, segment index, batch position,
        batch last offset)`` of the earliest record at or past ``log_start`` with timestamp >=
        ``ts``, or None (the broker searches from its log start offset too)."""
        segs = part.segments
        for i in range(first_segment, len(segs)):
            seg = segs[i]
            closed = i + 1 < len(segs)
            if closed and segs[i + 1].base_offset <= log_start:
                continue                     # wholly below the log start
            entries = self.time_entries(seg)
            start_pos, check = 0, None
            expect_ts = None
            if entries is not None:
                if closed and entries and entries[-1][0] < ts:
                    if self._time_index_believed(seg):
                        continue             # the segment's largest timestamp is below ts
                    entries = None           # not believed: scan the segment (warned)
            if entries is not None:
                if not entries and closed:
                    pass                     # no entry: scan it
                below = [e for e in entries if e[0] < ts]
                if below:
                    ets, eoff = below[-1]
                    start_pos, check = self.start_position(seg, eoff)
                    expect_ts = (ets, eoff)
            held = held_offsets(segs, i)
            hit = self._scan_for_time(seg, ts, start_pos, check, expect_ts, log_start, held)
            if hit == "stale":
                if expect_ts is not None:
                    self._not_believed(seg, f"its entry ({expect_ts[0]}, {expect_ts[1]}) does not "
                                            f"name a batch of offset {expect_ts[1]} and that max timestamp")
                hit = self._scan_for_time(seg, ts, 0, None, None, log_start, held)
            if hit is not None:
                return (hit[0], i, hit[1], hit[2])
        return None

    def _time_index_believed(self, seg: SegmentRef) -> bool:
        """Whether a closed segment's ``.timeindex`` may skip it: its last entry ``(T, o)`` claims
        that no record of the segment is later than T (Kafka appends the largest timestamp once
        more when it rolls the segment).  Checked at the cost of one batch and one index interval,
        batch headers only: the batch holding offset o must have max timestamp T (an all-zero,
        preallocated slot names the first batch with timestamp 0; an entry naming a batch whose
        own max timestamp is larger understates), and no batch from the last ``.index`` entry to
        the end of the segment (where Kafka finds its last batch) may be later than T (an index
        cut short).  Not believed: warned once, and the segment is scanned."""
        if seg.path in self._time_believed:
            return self._time_believed[seg.path]
        ets, eoff = self.time_entries(seg)[-1]
        why = None
        named_pos, named_check = self.start_position(seg, eoff)
        tail_pos, tail_check = self.start_position(seg, _LONG_MAX)
        with open_segment(self.storage, seg) as f:
            walks = [(tail_pos, tail_check, True)]
            if named_pos < tail_pos:
                walks.insert(0, (named_pos, named_check, False))
            named = False
            for pos, check, tail in walks:
                for at, base, last, max_ts in _batch_headers(f, pos, seg.size):
                    if check is not None and at == pos and pos > 0 and last != check:
                        why = f"the .index entry ({check}, {pos}) names no batch ending there"
                        break
                    if not named and last >= eoff:
                        named = True
                        if not base <= eoff <= last or max_ts != ets:
                            why = (f"its last entry ({ets}, {eoff}) names the batch at byte {at} "
                                   f"(offsets {base}..{last}, max timestamp {max_ts})")
                            break
                    if tail and max_ts > ets:
                        why = (f"its last entry says no record is later than {ets}, but the batch at "
                               f"byte {at} (offsets {base}..{last}) has max timestamp {max_ts}")
                        break
                    if not tail and named:
                        break
                if why is not None:
                    break
            if why is None and not named:
                why = f"its last entry ({ets}, {eoff}) names an offset no batch holds"
        if why is not None:
            self._not_believed(seg, why)
        self._time_believed[seg.path] = why is None
        return why is None

    def _not_believed(self, seg: SegmentRef, why: str) -> None:
        """Warn once that ``seg``'s time index is not believed; later lookups scan the segment."""
        if self._time_believed.get(seg.path) is False:
            return
        self._time_believed[seg.path] = False
        self._time_idx[seg.path] = None
        name = self.storage.uri(seg.time_index.path) if seg.time_index is not None else \
            self.storage.uri(seg.path) + " (.indexes)"
        warnings.warn(f"kafkarec: {name} is not believed: {why}; scanning {self.storage.uri(seg.path)} "
                      f"instead", IndexWarning, stacklevel=4)

    def _scan_for_time(self, seg: SegmentRef, ts: int, start: int, check: Optional[int], expect_ts,
                       log_start: int = 0, held: Optional[SegmentOffsets] = None):
        """The hit from byte ``start``: batches whose offsets go back or are not the segment's
        (``held``) hold no hit (the read reports them: :class:`kafkarec.scan._order.OffsetOrder`)."""
        checking = check is not None and start > 0
        prev = None         # the last batch of records read, whose last record the next follows
        with open_segment(self.storage, seg) as f:
            it = iter_remote_batches(f, start, None, SCAN_OPTIONS, chunk_size=SCAN_CHUNK, prefetch=False)
            while True:
                try:
                    pos, b = next(it)
                except StopIteration:
                    break
                except DecodeError:
                    if checking:
                        return "stale"
                    raise
                if checking:
                    if b.last_offset != check:
                        return "stale"
                    checking = False
                if expect_ts is not None and b.base_offset <= expect_ts[1] <= b.last_offset:
                    if b.magic >= 2 and b.max_timestamp != expect_ts[0]:
                        return "stale"      # the time index does not describe this log
                    expect_ts = None
                # headers first (a wrapper unopened); the records only where they say the batch
                # may go back, judged as the reader judges them
                first = b.base_offset if b.magic >= 2 else b.last_offset
                if (prev is not None and first <= prev.last_offset) or (
                        held is not None and held.problem(first, b.last_offset) is not None):
                    offsets = [r.offset for r in b]
                    after = None if prev is None else [r.offset for r in prev][-1]
                    if not offsets or order_problem(offsets, after, held) is not None:
                        continue
                if not b.is_control and (b.magic < 2 or b.record_count):
                    prev = b
                if b.last_offset >= log_start and (b.magic < 2 or b.max_timestamp >= ts):
                    for r in b:
                        if r.timestamp >= ts and r.offset >= log_start:
                            return (r.offset, pos, b.last_offset)
        return "stale" if checking else None

    # log ends -------------------------------------------------------------------------
    def log_end(self, part: PartitionLog) -> int:
        """The offset after the last whole batch of the partition (Kafka's log end offset; a
        partial batch still being written is not counted).  Reads from the last index entry
        of the last segment to its end."""
        for seg in reversed(part.segments):
            last = self.last_offset(seg)
            if last is not None:
                return last + 1
            if seg is part.segments[-1]:
                return seg.base_offset       # an empty active segment: the log ends at its base
        return 0

    def note_last_offsets(self, part: PartitionLog, ends: Dict[str, Optional[int]]) -> None:
        """What a walk of ``part``'s segments found their last offsets to be (``{path: last
        offset}``, the segments it walked to their end: :attr:`kafkarec.scan.LogFacts.ends`):
        :meth:`last_offset` answers from it, not reading the segment again."""
        for seg in part.segments:
            if seg.path in ends:
                self._last[(seg.path, seg.size)] = ends[seg.path]

    def note_rebuilt_index(self, part: PartitionLog, rebuilt: Dict[str, Optional[list]]) -> None:
        """The offset indexes a walk of ``part``'s batches rebuilt (``{path: entries or None}``,
        :class:`kafkarec.log.sidefiles.RebuiltIndex`): a segment without a usable ``.index`` takes its
        entries from there, not walking its headers again."""
        for seg in part.segments:
            if seg.path in rebuilt:
                self._rebuilt[seg.path] = rebuilt[seg.path]

    def last_offset(self, seg: SegmentRef) -> Optional[int]:
        """The last offset of the last whole batch of a segment, or None if it has none (read
        once per segment and size, or known from a walk: :meth:`note_last_offsets`)."""
        key = (seg.path, seg.size)
        if key not in self._last:
            self._last[key] = self._read_last_offset(seg)
        return self._last[key]

    def _read_last_offset(self, seg: SegmentRef) -> Optional[int]:
        pos, check = self.start_position(seg, 2**63 - 1)
        with open_segment(self.storage, seg) as f:
            last = None
            checking = check is not None and pos > 0
            try:
                for _, b in iter_remote_batches(f, pos, None, SCAN_OPTIONS):
                    if checking and b.last_offset != check:
                        break
                    checking = False
                    last = b.last_offset
            except DecodeError:
                if not checking:
                    raise
            if checking:                     # stale index: the whole segment
                last = None
                for _, b in iter_remote_batches(f, 0, None, SCAN_OPTIONS):
                    last = b.last_offset
        return last

    def log_start(self, part: PartitionLog, *, include_deleted_records: bool = False) -> int:
        """The partition's log start offset (:func:`log_start_offset`)."""
        return log_start_offset(part.topic, part.partition,
                                part.segments[0].base_offset if part.segments else 0,
                                part.checkpointed_log_start, part.log_start_problem,
                                include_deleted_records=include_deleted_records)


def log_start_offset(topic: Optional[str], partition: Optional[int], first_base: int,
                     checkpointed: Optional[int], problem: Optional[str] = None, *,
                     include_deleted_records: bool = False) -> int:
    """A partition's log start offset as the broker's ``LogLoader`` sets it on load: its
    ``log-start-offset-checkpoint`` entry (``checkpointed``), at least the first segment's base
    offset (``first_base``; no entry: the base, as Kafka writes entries only past it).  With
    ``include_deleted_records`` the first segment's base (the records ``deleteRecords`` left in
    the files).  A checkpoint that could not be read (``problem`` says which file and why)
    leaves the base, with a warning."""
    if include_deleted_records:
        return first_base
    if problem is not None:
        warnings.warn(f"kafkarec: {problem}; {topic}-{partition} is read from its first "
                      f"segment's base offset {first_base}, records below its log start offset "
                      f"included if deleteRecords moved it", UserWarning, stacklevel=3)
    return first_base if checkpointed is None else max(first_base, checkpointed)


# A batch header up to its max timestamp: v2 (base offset 8, length 4, leader epoch 4, magic 1,
# crc 4, attributes 2, last offset delta 4, base timestamp 8, max timestamp 8); a v1 message's
# timestamp is at byte 18 (offset 8, size 4, crc 4, magic 1, attributes 1).
_HEADER_BYTES = 43
_V2_HEADER = struct.Struct(">qiibIhiqq")


def _batch_headers(f, start: int, size: int):
    """``(position, base offset, last offset, max timestamp)`` of the batches from ``start`` to
    ``size``, headers only (one small read each, no CRC: evidence about an index, not records);
    stops where framing does.  A legacy message's last offset is its own (a compressed wrapper's
    is its last inner message's), its max timestamp its (wrapper's) timestamp, -1 for v0."""
    pos = start
    while pos + 17 <= size:
        head = f.read_at(pos, _HEADER_BYTES)
        if len(head) < 17:
            return
        base, length = struct.unpack_from(">qi", head)
        magic = head[16]
        end = pos + 12 + length
        if length < 14 or end > size or magic > 2:
            return
        if magic == 2:
            if len(head) < _HEADER_BYTES:
                return
            last = base + _V2_HEADER.unpack_from(head)[6]
            max_ts = _V2_HEADER.unpack_from(head)[8]
        else:
            last = base
            max_ts = struct.unpack_from(">q", head, 18)[0] if magic == 1 and len(head) >= 26 else -1
        yield pos, base, last, max_ts
        pos = end


def _increasing(entries, base, end_offset, size) -> bool:
    prev_o, prev_p = base - 1, -1
    for o, p in entries:
        if o <= prev_o or p <= prev_p or p >= size or (end_offset is not None and o >= end_offset):
            return False
        prev_o, prev_p = o, p
    return True
