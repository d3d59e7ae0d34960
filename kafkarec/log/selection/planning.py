"""A selection planned over a layout: the segment ranges it reads (:class:`SegmentRange`,
:func:`plan`), cut at offset-index positions for tasks (:func:`split_ranges`), and the pieces of
one range to decode (:func:`iter_range_pieces`).  No reader of its own: the ranges are read by
:mod:`kafkarec.scan`.

Every partition is read from its log start offset at the earliest
(:func:`~kafkarec.log.selection.resolver.log_start_offset`: what a consumer's ``earliest`` is,
after ``Admin.deleteRecords`` past its first segment's base offset), whatever the starting offsets, timestamps or ``-2`` say; offsets below it are
records a consumer is never given, though its files still hold them.
"""
from __future__ import annotations

import logging
from typing import Dict, List, NamedTuple, Optional, Tuple

import kafkarec
from kafkarec.errors import DecodeError, SelectionError
from kafkarec.log.layout import (Layout, PartitionLog, SegmentRef, held_offsets, open_segment, partition_index,
                                 segment_uri)
from kafkarec.log.segment import SegmentOffsets
from kafkarec.log.selection.options import EARLIEST, LATEST, OffsetSpec, Selection
from kafkarec.log.selection.resolver import SCAN_OPTIONS, Resolver
from kafkarec.log.storage import Storage, iter_pieces

__all__ = ["SegmentRange", "plan", "select_partitions", "iter_range_pieces", "split_ranges", "plan_partition",
           "partition_start", "partition_end", "spec_offset"]

log = logging.getLogger("kafkarec")


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


# --- planning -----------------------------------------------------------------------------

def spec_offset(spec: OffsetSpec, part: PartitionLog, resolver: Resolver, *, starting: bool,
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
                                offsets=held_offsets(segs, i)))
    return out



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
    start, hit = spec_offset(sel.start, part, resolver, starting=True, strategy=sel.no_match_strategy,
                              log_start=log_start)
    if start is None or start < log_start:
        return log_start, None
    return start, hit


def partition_end(sel: Selection, part: PartitionLog, resolver: Resolver, log_start: int) -> Optional[int]:
    """Where the selection stops reading a partition (exclusive; None: at its end)."""
    end, _ = spec_offset(sel.end, part, resolver, starting=False, strategy=sel.no_match_strategy,
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
        parts = partition_index(layout)
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
