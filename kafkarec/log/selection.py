"""Selecting records by topic, offset and time, with the options of Spark's Kafka source.

Options (same names and meaning as ``spark.read.format("kafka")``; start
inclusive, end exclusive; case-insensitive):

==============================  ==============================================================
``topics``                      comma-separated topic names (Kafka source: ``subscribe``/``assign``)
``topicPattern``                a regular expression a whole topic name must match
                                (``subscribePattern``)
``startingOffsets``             ``earliest`` (default), ``latest``, or JSON
                                ``{"orders":{"0":23,"1":-2}}`` (-2 earliest, -1 latest)
``endingOffsets``               ``latest`` (default), or JSON (-1 latest); batch reads only
``startingTimestamp``           ms since the epoch, for every partition
``endingTimestamp``             ms since the epoch, for every partition
``startingOffsetsByTimestamp``  JSON ``{"orders":{"0":1700000000000}}``
``endingOffsetsByTimestamp``    JSON, as above
``startingOffsetsByTimestampStrategy``  ``error`` (default) or ``latest``: what a starting
                                timestamp that no record reaches means
``includeDeletedRecords``       ``true``: read from each partition's first segment, records
                                below its log start offset too (forensics; default ``false``)
==============================  ==============================================================

Every partition is read from its log start offset at the earliest (:func:`log_start_offset`:
what a consumer's ``earliest`` is, after ``Admin.deleteRecords`` past its first segment's base
offset), whatever the starting offsets, timestamps or ``-2`` say; offsets below it are
records a consumer is never given, though its files still hold them.

Precedence as in Spark: ``*Timestamp`` over ``*OffsetsByTimestamp`` over
``*Offsets``.  A timestamp selects, per partition, the earliest offset whose
record timestamp is at or after it (Kafka's ``offsetsForTimes``); every record
from that offset on is selected, whatever its own timestamp.  An ending
timestamp that no record reaches means ``latest``.  Where Spark needs every
partition of a topic named in an offsets JSON, so do we (for the topics the
JSON names); topics it does not name use the default.

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

import datetime
import logging
import posixpath
import re
import struct
import warnings
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import kafkarec
from kafkarec._extras import require
from kafkarec._option_text import option_json, text_bool
from kafkarec.errors import DecodeError, IndexWarning, KafkaRecError, SelectionError
from kafkarec.log import sidefiles as sf
from kafkarec.log.segment import SegmentOffsets, order_problem, segment_offsets
from kafkarec.log.layout import (Layout, PartitionLog, SegmentRef, open_segment, segment_uri, side_file,
                                 storage_of)
from kafkarec.log.storage import Storage, iter_pieces, iter_remote_batches

__all__ = ["EARLIEST", "LATEST", "OffsetSpec", "Selection", "SelectionError", "parse_selection",
           "SegmentRange", "Resolver", "plan", "select_partitions",
           "filter_offsets", "filter_range", "iter_range_pieces", "split_ranges", "plan_partition",
           "SELECTION_OPTIONS", "parse_time", "cli_selection", "log_start_offset",
           "partition_start", "partition_end"]

log = logging.getLogger("kafkarec")

EARLIEST = -2
LATEST = -1
# the range of the Long that Spark's Kafka source reads an offsets JSON's numbers into
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
# Bytes per request while resolving a timestamp by scanning, none read ahead: the record sought
# is within one index interval (log.index.interval.bytes, 4 KiB by default) and a batch of the
# time index entry the scan starts at, and a bounded read's cost is mostly these lookups.
SCAN_CHUNK = 16 << 10
# Headers and offsets only, while resolving a selection: no CRC, Kafka's file framing.
SCAN_OPTIONS = kafkarec.ReadOptions(file_rules=True, verify_crc=False)

SELECTION_OPTIONS = ("topics", "topicpattern", "assign", "startingoffsets", "endingoffsets",
                     "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp",
                     "endingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy",
                     "includedeletedrecords")


class OffsetSpec(NamedTuple):
    kind: str            # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps" | "offset"
    value: Any = None     # {topic: {partition: int}}, or one int (a timestamp, an offset)


class Selection(NamedTuple):
    topics: Optional[frozenset]
    pattern: Optional[str]
    start: OffsetSpec
    end: OffsetSpec
    no_match_strategy: str = "error"
    # ``assign``: {topic: frozenset of partitions}; None: every partition of the topics
    assigned: Optional[Dict[str, frozenset]] = None
    include_deleted_records: bool = False     # start at the first segment, not the log start
    # ``--partition``: these partition numbers, in every selected topic; None: every partition
    partitions: Optional[frozenset] = None

    def wants_topic(self, topic: Optional[str]) -> bool:
        if topic is None:
            return self.topics is None and self.pattern is None
        if self.topics is not None and topic not in self.topics:
            return False
        return self.pattern is None or re.fullmatch(self.pattern, topic) is not None

    def wants_partition(self, topic: Optional[str], partition: Optional[int]) -> bool:
        if not self.wants_topic(topic):
            return False
        if self.partitions is not None and partition not in self.partitions:
            return False
        return self.assigned is None or partition in self.assigned.get(topic, ())


def _json_offsets(text: str, what: str) -> Dict[str, Dict[int, int]]:
    """``{"topic":{"partition":number}}`` of ``what`` ("option startingOffsets"), numbers as Spark
    reads them into a Long."""
    raw = option_json(what, text, '{"topic":{"0":23}}', SelectionError)
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise SelectionError(f"{what}: expected {{\"topic\":{{\"partition\":number}}}}, got {text!r}")
    out: Dict[str, Dict[int, int]] = {}
    for topic, parts in raw.items():
        out[topic] = {}
        for p, v in parts.items():
            try:
                partition, number = int(p), int(v)
            except (TypeError, ValueError):
                number = None
            if number is None or isinstance(v, bool):
                raise SelectionError(f"{what}: {topic!r} partition {p!r} -> {v!r} is not a number")
            if not _LONG_MIN <= number <= _LONG_MAX:
                raise SelectionError(f"{what}: {topic!r} partition {p!r} -> {v!r} is out of a 64-bit "
                                     f"number's range")
            out[topic][partition] = number
    return out


def parse_selection(options: Optional[dict], *, streaming: bool = False) -> Selection:
    """A :class:`Selection` from Spark Kafka-source option names (others are ignored)."""
    o = {str(k).lower(): v for k, v in dict(options or {}).items() if v is not None and v != ""}
    topics = None
    if "topics" in o:
        topics = frozenset(t.strip() for t in str(o["topics"]).split(",") if t.strip())
        if not topics:
            raise SelectionError("option topics: no topic named")
    assigned = None
    if "assign" in o:
        # the Kafka source's assign: {"orders":[0,1]}
        raw = option_json("option assign", o["assign"], '{"orders":[0,1]}', SelectionError)
        if (not isinstance(raw, dict) or not raw
                or not all(isinstance(v, list)
                           and all(isinstance(p, int) and not isinstance(p, bool) for p in v)
                           for v in raw.values())):
            raise SelectionError(f"option assign: expected {{\"topic\":[partition, ...]}}, got {o['assign']!r}")
        if topics is not None:
            raise SelectionError("options topics and assign: give one of them")
        assigned = {t: frozenset(ps) for t, ps in raw.items()}
        topics = frozenset(assigned)
    pattern = o.get("topicpattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SelectionError(f"option topicPattern: {exc}") from None

    def spec(prefix: str, default: str) -> OffsetSpec:
        if f"{prefix}timestamp" in o:
            try:
                return OffsetSpec("timestamp", int(o[f"{prefix}timestamp"]))
            except (ValueError, OverflowError):       # OverflowError: a float infinity
                raise SelectionError(f"option {prefix}Timestamp must be ms since the epoch") from None
        if f"{prefix}offsetsbytimestamp" in o:
            return OffsetSpec("timestamps", _json_offsets(o[f"{prefix}offsetsbytimestamp"],
                                                          f"option {prefix}OffsetsByTimestamp"))
        raw = o.get(f"{prefix}offsets", default)
        s = str(raw).strip()
        if s.lower() in ("earliest", "latest"):
            return OffsetSpec(s.lower())
        return OffsetSpec("offsets", _json_offsets(s, f"option {prefix}Offsets"))

    start = spec("starting", "earliest")
    end = spec("ending", "latest")
    if streaming and any(k.startswith("ending") for k in o):
        raise SelectionError("ending offsets/timestamps are for batch reads; a stream has no end")
    if not streaming:
        # Spark's rules for batch queries.
        if start.kind == "latest":
            raise SelectionError("startingOffsets=latest is for streaming queries, not batch reads")
        if end.kind == "earliest":
            raise SelectionError("endingOffsets=earliest is for streaming queries, not batch reads")
        if start.kind == "offsets" and any(v == LATEST for ps in start.value.values() for v in ps.values()):
            raise SelectionError("startingOffsets: -1 (latest) is for streaming queries, not batch reads")
        if end.kind == "offsets" and any(v == EARLIEST for ps in end.value.values() for v in ps.values()):
            raise SelectionError("endingOffsets: -2 (earliest) is for streaming queries, not batch reads")
    strategy = str(o.get("startingoffsetsbytimestampstrategy", "error")).lower()
    if strategy not in ("error", "latest"):
        raise SelectionError("option startingOffsetsByTimestampStrategy must be error or latest")
    include_deleted = text_bool("includeDeletedRecords", o.get("includedeletedrecords", False), SelectionError)
    if assigned is not None:
        # as in Spark: with assign, specific offsets name exactly the assigned partitions
        want = {(t, p) for t, ps in assigned.items() for p in ps}
        for s in (start, end):
            if s.kind in ("offsets", "timestamps"):
                named = {(t, p) for t, ps in s.value.items() for p in ps}
                if named != want:
                    raise SelectionError(
                        f"offsets name partitions {sorted(named)} but assign names "
                        f"{sorted(want)}; as in Spark, name exactly the assigned partitions")
    return Selection(topics, pattern, start, end, strategy, assigned, include_deleted)


def select_partitions(layout: Layout, sel: Selection) -> List[PartitionLog]:
    """The partitions of ``layout`` whose topic the selection wants."""
    parts = [p for p in layout.partitions if sel.wants_partition(p.topic, p.partition)]
    if sel.topics is not None:
        missing = sorted(sel.topics - {p.topic for p in layout.partitions if sel.wants_topic(p.topic)})
        if missing:
            log.warning("kafkarec: topic(s) %s not found under %s", missing, layout.storage.uri(layout.root))
    if sel.partitions is not None:
        present = {p.partition for p in layout.partitions if sel.wants_topic(p.topic)}
        absent = sorted(sel.partitions - present)
        if absent:
            log.warning("kafkarec: partition(s) %s of the selected topics not found under %s", absent,
                        layout.storage.uri(layout.root))
    for s in (sel.start, sel.end):
        if s.kind in ("offsets", "timestamps"):
            present: Dict[Optional[str], set] = {}
            for p in parts:
                present.setdefault(p.topic, set()).add(p.partition)
            if sel.assigned is not None:
                continue            # checked against the assignment by parse_selection
            for topic, ps in s.value.items():
                if topic in present and set(ps) != present[topic]:
                    raise SelectionError(
                        f"offsets for topic {topic} name partitions {sorted(ps)} but the log has "
                        f"{sorted(present[topic])}; as in Spark, name every partition of the topic")
    return parts


# --- reading a range of a segment ----------------------------------------------------------

class SegmentRange(NamedTuple):
    """One segment to read: bytes ``[start, end)`` (``end`` None: to the end of the file;
    a batch starting before ``end`` is read whole), records with offsets in
    ``[min_offset, end_offset)`` (None: unbounded).  ``check_last``: the last offset the
    batch at ``start`` must have (the index entry used); if it does not, the index was
    stale and the segment is read from its start instead (a range that starts at a cut
    between tasks, ``split_start``, then keeps to the batches that start inside it, so
    neighbouring ranges still read each batch once)."""
    topic: Optional[str]
    partition: Optional[int]
    segment: SegmentRef
    start: int = 0
    end: Optional[int] = None
    min_offset: Optional[int] = None
    end_offset: Optional[int] = None
    check_last: Optional[int] = None
    split_start: bool = False        # ``start`` is a cut between tasks (see split_ranges)
    split_end: bool = False          # ``end`` is a cut between tasks
    offsets: Optional[SegmentOffsets] = None   # the offsets the segment may hold


def filter_offsets(rb, lo: Optional[int], hi: Optional[int]):
    """The rows of an Arrow batch with ``lo <= offset < hi`` (the batch itself if all are)."""
    return filter_range(rb, "offset", lo, hi)


def filter_range(rb, column: str, lo: Optional[int], hi: Optional[int]):
    """The rows of an Arrow batch with ``lo <= column < hi`` (the batch itself if all are); a
    timestamp column compares as its milliseconds."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    if rb.num_rows == 0 or (lo is None and hi is None):
        return rb
    off = rb.column(rb.schema.get_field_index(column))
    if pa.types.is_timestamp(off.type):
        off = off.cast(pa.int64())
    mn, mx = pc.min_max(off).values()
    if (lo is None or mn.as_py() >= lo) and (hi is None or mx.as_py() < hi):
        return rb
    mask = None
    if lo is not None:
        mask = pc.greater_equal(off, lo)
    if hi is not None:
        m2 = pc.less(off, hi)
        mask = m2 if mask is None else pc.and_(mask, m2)
    return rb.filter(mask)


def _batch_spans(data) -> list:
    """``(position, last offset)`` of the whole batches framed in ``data`` (headers only)."""
    out = []
    try:
        for b in kafkarec.iter_batches(data, SCAN_OPTIONS):
            out.append((b.position, b.last_offset))
    except DecodeError:
        pass
    return out


def iter_range_pieces(storage: Storage, sr: SegmentRange, *, chunk_size: int = 8 << 20):
    """The pieces (:class:`kafkarec.log.storage.Piece`) to decode for one range, checked:
    the index entry the range starts at must match the first batch (no extra read: it is
    the first piece); if it does not, the segment is walked from its start.  If the range
    ends at an index position for ``end_offset`` and the batches there end before that
    offset (a stale index), reading goes on.  Decode each piece (``iter_arrow``, or the data
    source's ``decode_range(piece.data, base=piece.position)``) and keep the rows
    :func:`filter_offsets` keeps."""
    seg = sr.segment
    with open_segment(storage, seg) as f:
        walked = [None]                  # the last piece walked (before any trimming)

        def walk(start):
            for piece in iter_pieces(f, start, sr.end, chunk_size=chunk_size):
                walked[0] = piece
                yield piece

        pieces = walk(sr.start)
        if sr.check_last is not None and sr.start > 0:
            first = next(pieces, None)
            spans = _batch_spans(first.data) if first is not None else []
            if not spans or spans[0][1] != sr.check_last:
                log.warning("kafkarec: stale index for %s (no batch ending at offset %d at byte "
                            "%d); reading the segment from its start", segment_uri(storage, seg),
                            sr.check_last, sr.start)
                pieces.close()
                walked[0] = None
                pieces = walk(0)
                if sr.split_start:
                    pieces = (t for t in (_trim_before(p, sr.start) for p in pieces) if t is not None)
            else:
                yield first
        for piece in pieces:
            yield piece
        if sr.end is None or sr.end_offset is None or sr.split_end:
            return
        last_piece = walked[0]
        if last_piece is None or last_piece.stopped:
            return
        end_pos = last_piece.position + len(last_piece.data)
        spans = _batch_spans(last_piece.data)
        if end_pos < seg.size and (not spans or spans[-1][1] < sr.end_offset - 1):
            # The index promised the end offset by ``end``: it was stale; read on.
            for piece in iter_pieces(f, end_pos, None, chunk_size=chunk_size):
                yield piece
                spans = _batch_spans(piece.data)
                if spans and spans[-1][1] >= sr.end_offset - 1:
                    return


def _trim_before(piece, start: int):
    """The part of a piece from the first batch that starts at or after ``start`` (None if none)."""
    from kafkarec.log.storage import Piece
    if piece.position >= start:
        return piece
    for pos, _ in _batch_spans(piece.data):
        if piece.position + pos >= start:
            return Piece(piece.position + pos, piece.data[pos:], piece.stopped)
    return None


# --- index lookups -------------------------------------------------------------------------

class Resolver:
    """Offsets for specs, through side files read at most once per segment (cached)."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self._offset_idx: Dict[str, Optional[list]] = {}
        self._time_idx: Dict[str, Optional[list]] = {}
        self._time_believed: Dict[str, bool] = {}

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
        self._offset_idx[seg.path] = entries
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
            held = _segment_offsets(segs, i)
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

    def last_offset(self, seg: SegmentRef) -> Optional[int]:
        """The last offset of the last whole batch of a segment, or None if it has none."""
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


# --- planning -----------------------------------------------------------------------------

def _spec_offset(spec: OffsetSpec, part: PartitionLog, resolver: Resolver, *, starting: bool,
                 strategy: str, log_start: int) -> Tuple[Optional[int], Optional[tuple]]:
    """``(offset or None for the log's end/start, time hit)`` for a partition."""
    kind = spec.kind
    if kind == "earliest":
        return (None if starting else log_start), None
    if kind == "latest":
        return (resolver.log_end(part) if starting else None), None
    if kind == "offsets":
        v = spec.value.get(part.topic, {}).get(part.partition)
        if v is None:
            return (None, None)
        if v == EARLIEST:
            return (None if starting else log_start), None
        if v == LATEST:
            return (resolver.log_end(part) if starting else None), None
        if v < 0:
            raise SelectionError(f"offset {v} for {part.topic}-{part.partition}: only -2 (earliest) "
                                 f"and -1 (latest) may be negative")
        return v, None
    if kind == "offset":                  # one offset for every partition (the CLI's flags)
        return spec.value, None
    if kind == "timestamp":
        ts = spec.value
    else:
        ts = spec.value.get(part.topic, {}).get(part.partition)
        if ts is None:
            return None, None
    hit = resolver.offset_for_time(part, ts, log_start=log_start)
    if hit is None:
        if starting and strategy == "error":
            raise SelectionError(
                f"no record of {part.topic}-{part.partition} has a timestamp at or after {ts} "
                f"(option startingOffsetsByTimestampStrategy=latest starts at the end instead)")
        return (resolver.log_end(part) if starting else None), None
    return hit[0], hit


def plan_partition(part: PartitionLog, start: Optional[int], end: Optional[int],
                   resolver: Resolver, *, time_hit: Optional[tuple] = None) -> List[SegmentRange]:
    """The segment ranges holding offsets ``[start, end)`` of one partition (None: unbounded)."""
    out = []
    segs = part.segments
    for i, seg in enumerate(segs):
        seg_end = seg.end_offset if seg.end_offset is not None else (
            segs[i + 1].base_offset if i + 1 < len(segs) else None)
        if start is not None and seg_end is not None and seg_end <= start:
            continue                       # wholly before the start
        if end is not None and seg.base_offset >= end:
            break                          # wholly after the end
        lo = start if start is not None and start > seg.base_offset else None
        hi_candidates = [x for x in (end, seg.end_offset) if x is not None]
        hi = min(hi_candidates) if hi_candidates else None
        pos, check = 0, None
        if time_hit is not None and time_hit[1] == i:
            pos, check = time_hit[2], time_hit[3]
        elif lo is not None:
            pos, check = resolver.start_position(seg, lo)
        end_pos = resolver.end_position(seg, end) if (end is not None and (
            seg_end is None or end < seg_end)) else None
        if end_pos is not None and end_pos <= pos:
            end_pos = pos + 1
        out.append(SegmentRange(part.topic, part.partition, seg, pos, end_pos, lo, hi, check,
                                offsets=_segment_offsets(segs, i)))
    return out


def _segment_offsets(segs: List[SegmentRef], i: int) -> SegmentOffsets:
    """The offsets segment ``i`` of a partition may hold: up to the next segment's base, which
    is an error to reach when both are the broker's files of one folder (a stitched history's
    copies from elsewhere may overlap: :func:`kafkarec.log.layout.stitch`)."""
    seg = segs[i]
    after = segs[i + 1] if i + 1 < len(segs) else None
    indexed = seg.offset_index is not None
    if after is None:
        return segment_offsets(seg.base_offset, None, indexed=indexed)
    same_log = (not seg.remote and not after.remote and seg.storage is after.storage
                and posixpath.dirname(seg.path) == posixpath.dirname(after.path))
    return segment_offsets(seg.base_offset, after.base_offset, next_is_log=same_log, indexed=indexed)


def split_ranges(ranges: List[SegmentRange], resolver: Resolver, max_bytes: int) -> List[SegmentRange]:
    """Ranges of more than ``max_bytes`` cut at offset-index positions about ``max_bytes``
    apart (batch starts, known without reading the log: on an object store the planner
    reads no segment bytes).  Each part yields the batches that start inside it; a part
    whose index position turns out stale walks from the segment start and keeps to its own
    batches, so parts never overlap.  Segments without a usable index stay whole."""
    out = []
    for sr in ranges:
        end = sr.segment.size if sr.end is None else min(sr.end, sr.segment.size)
        if end - sr.start <= max_bytes:
            out.append(sr)
            continue
        cuts = []
        last_cut = sr.start
        for o, p in resolver.offset_entries(sr.segment) or ():
            if p - last_cut >= max_bytes and p < end:
                cuts.append((p, o))
                last_cut = p
        if not cuts:
            out.append(sr)
            continue
        prev_start, prev_check, prev_split = sr.start, sr.check_last, sr.split_start
        for p, o in cuts:
            out.append(sr._replace(start=prev_start, end=p, check_last=prev_check,
                                   split_start=prev_split, split_end=True))
            prev_start, prev_check, prev_split = p, o, True
        out.append(sr._replace(start=prev_start, check_last=prev_check, split_start=True))
    return out


def partition_start(sel: Selection, part: PartitionLog, resolver: Resolver,
                    log_start: Optional[int] = None) -> Tuple[int, Optional[tuple]]:
    """``(offset, time hit)``: where the selection starts reading a partition, never below its
    log start offset (``log_start`` if known; a consumer asking for less is reset to it)."""
    if log_start is None:
        log_start = resolver.log_start(part, include_deleted_records=sel.include_deleted_records)
    start, hit = _spec_offset(sel.start, part, resolver, starting=True, strategy=sel.no_match_strategy,
                              log_start=log_start)
    if start is None or start < log_start:
        return log_start, None
    return start, hit


def partition_end(sel: Selection, part: PartitionLog, resolver: Resolver, log_start: int) -> Optional[int]:
    """Where the selection stops reading a partition (exclusive; None: at its end)."""
    end, _ = _spec_offset(sel.end, part, resolver, starting=False, strategy=sel.no_match_strategy,
                          log_start=log_start)
    return end


def plan(layout: Layout, sel: Selection, resolver: Optional[Resolver] = None, *, bounds=None,
         offset_ranges=None) -> List[SegmentRange]:
    """Every segment range the selection needs, by topic, partition and offset, each
    partition from :func:`partition_start` on, narrowed by ``bounds`` (a
    :class:`kafkarec.scan.Bounds` or None): topics and partitions, the offset range, and the
    start of the timestamp range through the time indexes (the earliest offset at or past the
    start whose record has a timestamp at or past the lower bound: every record before it has
    an earlier timestamp).  An upper timestamp bound does not prune (CreateTime timestamps are
    not ordered): the reader filters it row by row.

    ``offset_ranges`` (``[(topic, partition, start, end), ...]``, a stream's micro-batch or a
    backfill's [start, H)): exactly those ranges instead of the selection's, in that order
    (a partition not in the log has none)."""
    resolver = resolver or Resolver(layout.storage)
    if offset_ranges is not None:
        parts = {p.key: p for p in layout.partitions}
        out = []
        for topic, partition, start, end in offset_ranges:
            part = parts.get((topic, partition))
            if part is not None and part.segments and (end is None or start < end):
                out += plan_partition(part, start, end, resolver)
        return out
    out = []
    for part in select_partitions(layout, sel):
        if bounds is not None and not bounds.admits(part.topic, part.partition):
            continue
        log_start = resolver.log_start(part, include_deleted_records=sel.include_deleted_records)
        start, hit = partition_start(sel, part, resolver, log_start)
        end = partition_end(sel, part, resolver, log_start)
        if bounds is not None:
            lo, hi = bounds.offsets
            if lo is not None and lo > start:
                start, hit = lo, None
            if hi is not None and (end is None or hi < end):
                end = hi
        if end is not None and end <= start:
            continue
        if bounds is not None and bounds.timestamps[0] is not None:
            found = resolver.offset_for_time(part, bounds.timestamps[0], log_start=start)
            if found is None or (end is not None and found[0] >= end):
                continue            # no record from the start on is that late
            if found[0] > start:
                start, hit = found[0], found
        out += plan_partition(part, start, end, resolver, time_hit=hit)
    return out


# --- the command line's flags and a one-call reader ------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def parse_time(text) -> int:
    """Milliseconds since the epoch from ``1700000000000`` (a long, as Java's ``Long.parseLong``
    reads it) or ISO 8601 (``2023-11-14T22:13:20Z``, ``2023-11-14 22:13:20+01:00``; UTC when no
    zone is given); anything else is a :class:`SelectionError`."""
    s = str(text).strip()
    shown = repr(s) if len(s) <= 40 else f"{s[:30]!r}... ({len(s)} characters)"
    if re.fullmatch(r"[+-]?[0-9]+", s):
        # as Java's Long.parseLong: a sign, then digits of a long (leading zeros allowed); the
        # digits are counted before int() is asked, which refuses past 4,300 with a ValueError
        if len(s.lstrip("+-").lstrip("0")) > 19 or not _LONG_MIN <= int(s) <= _LONG_MAX:
            raise SelectionError(f"{shown}: milliseconds since the epoch out of a 64-bit number's "
                                 f"range ({_LONG_MIN} to {_LONG_MAX})")
        return int(s)
    try:
        dt = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise SelectionError(f"{shown} is neither milliseconds since the epoch nor an ISO 8601 "
                             f"time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    # timedelta arithmetic is whole days, seconds and microseconds: exact where the float of
    # dt.timestamp() * 1000 lands a millisecond early (past 2038, before 1970); floored, as Java's
    # Instant.toEpochMilli
    return (dt - _EPOCH) // datetime.timedelta(milliseconds=1)


def cli_selection(*, topics=None, start_offset=None, end_offset=None, start_time=None,
                  end_time=None, include_deleted_records: bool = False, partitions=None) -> Selection:
    """The selection of ``--topics a,b --partition 0,2 --start-offset N --end-offset M
    --start-time T --end-time T --include-deleted-records`` (offsets for every partition; a time
    wins over an offset, as in Spark).  A start time no record reaches selects nothing (strategy
    ``latest``)."""
    names = None
    if topics:
        names = frozenset(t.strip() for t in (topics.split(",") if isinstance(topics, str) else topics)
                          if t.strip())

    def spec(offset, time, default):
        if time is not None:
            return OffsetSpec("timestamp", parse_time(time))
        if offset is not None:
            if int(offset) < 0:
                raise SelectionError("offsets given on the command line must be 0 or more")
            return OffsetSpec("offset", int(offset))
        return OffsetSpec(default)

    return Selection(names, None, spec(start_offset, start_time, "earliest"),
                     spec(end_offset, end_time, "latest"), "latest",
                     include_deleted_records=include_deleted_records,
                     partitions=None if partitions is None else _partition_numbers(partitions))


def _partition_numbers(text) -> frozenset:
    """``"0,2"`` (or numbers) as partition numbers, each in ``[0, 2^31)``, as Kafka numbers them."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out = set()
    for item in items:
        item = item.strip() if isinstance(item, str) else item
        if item == "":
            continue
        try:
            number = int(item)
        except (TypeError, ValueError):
            raise SelectionError(f"partition {item!r}: expected a partition number (0, 1, ...)") from None
        if not 0 <= number < 2 ** 31:
            raise SelectionError(f"partition {number}: partition numbers are 0 to 2^31-1")
        out.add(number)
    if not out:
        raise SelectionError(f"--partition {text!r}: no partition number given")
    return frozenset(out)
