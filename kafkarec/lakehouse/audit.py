"""Hold a lakehouse table against the Kafka log it was written from.

:func:`audit` answers, per partition, whether every committed data record of a range of
offsets is in the table exactly once, and explains every offset the table does not hold
the way only a reader of the log can:

* ``control`` -- a transaction marker (COMMIT/ABORT control record): never a row;
* ``aborted`` -- a data record of a transaction that aborted: a ``read_committed``
  consumer never sees it;
* ``compaction`` -- an offset between the log start and the log end that no batch holds
  any more (the log cleaner removed the record, or its whole batch);
* ``log_start`` -- an offset below the partition's log start offset (retention deleted
  the segment, or ``Admin.deleteRecords`` moved the log start past it), counted from the
  table's first offset of the partition;
* ``tombstone`` -- a committed record with a null value, where the table's writer writes no
  row for one (the ``layout`` says: :attr:`kafkarec.lakehouse.layouts.Layout.skips_tombstones`).

Anything else missing is a **gap**.  Rows the log positively says are not committed
data are **unexpected** (``aborted`` records, ``control`` offsets: a table written without
the aborted-transaction filter has them); rows at offsets the log no longer holds
(below the log start, compacted away) are **unverifiable**, reported but no fault (a
table written before retention or the cleaner ran holds them rightly).  An offset whose
bytes the log cannot read (a segment cut short by corrupt bytes, offsets no tiered copy
holds) is **unverified** when the table lacks it: the audit cannot vouch for it and says
so.  A table is ``ok`` with no gap, no duplicate, no unexpected row and no unverified
hole.

Kafka's rules come from the log layer, read once per partition through the one reader: the
batches of :meth:`kafkarec.scan.LogScan.partition_walks` (every batch of the partition's log,
judged by the transaction rule, :func:`kafkarec.transactions.aborted_batches`), the log start of
:meth:`kafkarec.log.selection.Resolver.log_start`, the range's end from the hand-off
point (:func:`kafkarec.lakehouse.hand_off_points`: the last stable offset).

Memory: the log side is run-length ranges (one per stretch of one kind: a few per
transaction, not per record; a record at a time only where compaction left single
records), plus 30 bytes per batch of the audited range while the transaction rule runs.
The table side is int64 arrays: the rows grouped by partition (a key, an order and the
offsets, 24 bytes a row), then one partition's sorted unique offsets and their counts --
about 50 MB per million rows at the peak (measured: 992,379 rows of 3 partitions, +49 MB
RSS), on top of the positions table the caller holds (22 MB per million rows;
:func:`kafkarec.lakehouse.tables.read_positions` reads the position columns only).
"""
from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Mapping, Optional, Tuple, Union

from kafkarec._extras import require
from kafkarec.errors import UsageError
from kafkarec.log import selection

__all__ = ["audit", "AuditReport", "PartitionAudit", "OffsetRanges", "HOLE_REASONS"]

#: why the table may lack an offset, in the order reports list them
HOLE_REASONS = ("control", "aborted", "compaction", "log_start", "tombstone")

# kinds of the log's offsets (run-length ranges)
_DATA, _CONTROL, _ABORTED, _UNREADABLE, _TOMBSTONE = 0, 1, 2, 3, 4
# the walk's verdict on a batch (kafkarec.scan.PartitionWalk), as a kind of its offsets
_KIND_OF_BATCH = {"data": _DATA, "control": _CONTROL, "aborted": _ABORTED}
_KIND_NAMES = {_CONTROL: "control", _ABORTED: "aborted"}

TopicPartition = Tuple[str, int]
Offsets = Union[None, int, Mapping[TopicPartition, int]]


class OffsetRanges:
    """Runs of offsets ``[first, last]`` (inclusive) with a number each (the records a gap
    misses, the copies of a duplicated offset), as numpy arrays."""

    __slots__ = ("first", "last", "number")

    def __init__(self, first, last, number):
        np = require("numpy")
        self.first = np.asarray(first, dtype=np.int64)
        self.last = np.asarray(last, dtype=np.int64)
        self.number = np.asarray(number, dtype=np.int64)

    @classmethod
    def empty(cls) -> "OffsetRanges":
        return cls((), (), ())

    def __len__(self) -> int:
        return len(self.first)

    def __iter__(self) -> Iterator[Tuple[int, int, int]]:
        return zip(self.first.tolist(), self.last.tolist(), self.number.tolist())

    def total(self) -> int:
        return int(self.number.sum())

    def to_list(self) -> List[List[int]]:
        return [list(r) for r in self]

    def text(self, unit: str, units: str, limit: int = 10) -> str:
        """``17..19 (3 records), 40 (1 record), ... and 5 more``."""
        parts = []
        for first, last, n in zip(self.first[:limit].tolist(), self.last[:limit].tolist(),
                                  self.number[:limit].tolist()):
            where = f"{first}" if first == last else f"{first}..{last}"
            parts.append(f"{where} ({n} {unit if n == 1 else units})")
        if len(self) > limit:
            parts.append(f"... and {len(self) - limit} more")
        return ", ".join(parts)


@dataclass
class PartitionAudit:
    """One partition's finding.  ``start``/``end``: the audited range ``[start, end)``;
    ``log_start``/``log_end``: the log's.  Counts are records (offsets)."""
    topic: str
    partition: int
    start: int
    end: int
    log_start: int
    log_end: int
    expected: int = 0                 # committed data records in [start, end)
    present: int = 0                  # of them, in the table (at least once)
    #: holes explained, by reason (:data:`HOLE_REASONS`): offsets the table rightly lacks
    explained: Dict[str, int] = field(default_factory=dict)
    #: committed data records of the range the table lacks: (first, last, records missing);
    #: two runs are one gap when only explained holes lie between them
    gaps: OffsetRanges = field(default_factory=OffsetRanges.empty)
    #: offsets the table holds more than once: (first, last, copies of each)
    duplicates: OffsetRanges = field(default_factory=OffsetRanges.empty)
    #: rows the log says are not committed data, by reason (``aborted``, ``control``,
    #: ``no such partition``): (first, last, rows)
    unexpected: Dict[str, OffsetRanges] = field(default_factory=dict)
    #: rows at offsets the log no longer holds, by reason (``log_start``, ``compaction``,
    #: ``unreadable``): no fault
    unverifiable: Dict[str, int] = field(default_factory=dict)
    #: offsets the table lacks where the log's bytes cannot be read: (first, last, offsets)
    unverified: OffsetRanges = field(default_factory=OffsetRanges.empty)
    outside: int = 0                  # rows between the log start and start, or at end or past it

    @property
    def ok(self) -> bool:
        return not (len(self.gaps) or len(self.duplicates) or len(self.unverified)
                    or any(len(r) for r in self.unexpected.values()))

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def to_dict(self) -> dict:
        return {"type": "partition", "topic": self.topic, "partition": self.partition,
                "start": self.start, "end": self.end, "log_start": self.log_start, "log_end": self.log_end,
                "expected": self.expected, "present": self.present,
                "explained": {r: self.explained.get(r, 0) for r in HOLE_REASONS},
                "gaps": self.gaps.to_list(), "duplicates": self.duplicates.to_list(),
                "unexpected": {r: v.to_list() for r, v in self.unexpected.items()},
                "unverifiable": dict(self.unverifiable), "unverified": self.unverified.to_list(),
                "outside": self.outside, "ok": self.ok}

    def text(self) -> str:
        head = (f"{self.name}: [{self.start}, {self.end}) expected {self.expected}, present {self.present}: "
                + ("ok" if self.ok else "FAILED"))
        lines = [head]
        holes = ", ".join(f"{self.explained[r]} {r.replace('_', ' ')}" for r in HOLE_REASONS
                          if self.explained.get(r))
        if holes:
            lines.append(f"  explained holes: {holes}")
        if len(self.gaps):
            lines.append(f"  gaps ({self.gaps.total()} missing): {self.gaps.text('record', 'records')}")
        if len(self.duplicates):
            extra = int(((self.duplicates.number - 1) * (self.duplicates.last - self.duplicates.first + 1)).sum())
            lines.append(f"  duplicates ({extra} extra rows): {self.duplicates.text('copy', 'copies')}")
        for reason, ranges in self.unexpected.items():
            if len(ranges):
                lines.append(f"  unexpected {reason} rows ({ranges.total()}): {ranges.text('row', 'rows')}")
        if len(self.unverified):
            lines.append(f"  unverified (the log cannot be read there; the table lacks them): "
                         f"{self.unverified.text('offset', 'offsets')}")
        rows = ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in self.unverifiable.items() if n)
        if rows:
            lines.append(f"  rows the log no longer holds (not checked): {rows}")
        if self.outside:
            lines.append(f"  rows outside the range (not checked): {self.outside}")
        return "\n".join(lines)


@dataclass
class AuditReport:
    """Every audited partition (:class:`PartitionAudit`), by topic and partition."""
    partitions: List[PartitionAudit]

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.partitions)

    def totals(self) -> dict:
        ps = self.partitions
        return {"partitions": len(ps), "expected": sum(p.expected for p in ps),
                "present": sum(p.present for p in ps),
                "missing": sum(p.gaps.total() for p in ps),
                "duplicated_offsets": sum(int((p.duplicates.last - p.duplicates.first + 1).sum()) for p in ps),
                "unexpected": sum(r.total() for p in ps for r in p.unexpected.values()),
                "unverified": sum(p.unverified.total() for p in ps), "ok": self.ok}

    def text(self) -> str:
        t = self.totals()
        return "\n".join([p.text() for p in self.partitions] + [
            f"audited {t['partitions']} partition(s): {t['expected']} committed records expected, "
            f"{t['present']} present; {t['missing']} missing, {t['duplicated_offsets']} duplicated offset(s), "
            f"{t['unexpected']} unexpected row(s), {t['unverified']} unverified offset(s): "
            + ("ok" if t["ok"] else "FAILED")])

    def json_lines(self) -> Iterator[str]:
        for p in self.partitions:
            yield json.dumps(p.to_dict(), separators=(",", ":"))
        yield json.dumps({"type": "summary", **self.totals()}, separators=(",", ":"))

    def __str__(self) -> str:
        return self.text()


# --- the log side ---------------------------------------------------------------------------

class _Runs:
    """Run-length ranges ``[start, end)`` of one kind each, appended in offset order (a run
    continuing the last one of its kind is merged into it)."""

    def __init__(self):
        self.starts, self.ends, self.kinds = array("q"), array("q"), array("b")

    def add(self, start: int, end: int, kind: int) -> None:
        if start >= end:
            return
        if self.kinds and self.kinds[-1] == kind and self.ends[-1] == start:
            self.ends[-1] = end
            return
        self.starts.append(start)
        self.ends.append(end)
        self.kinds.append(kind)

    def arrays(self):
        np = require("numpy")
        return (np.frombuffer(self.starts, dtype=np.int64), np.frombuffer(self.ends, dtype=np.int64),
                np.frombuffer(self.kinds, dtype=np.int8))


class _LogSide:
    """What the log says of each offset of ``[start, end)`` of one partition: run-length
    ranges of data, control, aborted and unreadable offsets (sorted, disjoint); the offsets
    no run covers are compaction's."""

    def __init__(self, start: int, end: int, log_end: int, starts, ends, kinds):
        self.start, self.end, self.log_end = start, end, log_end
        self.starts, self.ends, self.kinds = starts, ends, kinds

    def of(self, kind: int):
        m = self.kinds == kind
        return self.starts[m], self.ends[m]

    def compacted(self):
        """The ranges of ``[start, end)`` no run covers (the log holds no record there)."""
        np = require("numpy")
        lo = np.concatenate(([self.start], self.ends))
        hi = np.concatenate((self.starts, [self.end]))
        keep = hi > lo
        return lo[keep], hi[keep]


def _log_side(walk, start: int, end: int, tombstones: bool) -> _LogSide:
    """One walk of the partition's batches (:meth:`kafkarec.scan.PartitionWalk.judge`): the
    transaction rule judges every batch; those of ``[start, end)`` are kept (30 bytes each, plus
    8 per record of a batch the cleaner thinned) until it has.  ``walk.lost``: ranges ``(start,
    end)`` no copy of the log holds (:func:`kafkarec.log.layout.scan_history`'s gaps).
    ``tombstones``: tell records with a null value apart (every data batch of the range is then
    read record by record, 8 bytes kept per such record)."""
    np = require("numpy")
    paths: List[str] = []
    path_ids, positions, bases, lasts = array("i"), array("q"), array("q"), array("q")
    controls, thinned = array("b"), array("b")
    # records of batches the cleaner thinned (fewer records than offsets; none, for an empty
    # batch kept for its producer's state): their offsets are thin_offsets[thin_from:thin_to]
    thin_offsets, thin_from, thin_to = array("q"), array("q"), array("q")
    nulls, null_from, null_to = array("q"), array("q"), array("q")     # the same, of null values
    reached: Dict[str, Tuple[int, int]] = {}      # segment -> (end of its last batch read, its last offset)
    part = walk.part
    log_end = [part.segments[0].base_offset if part.segments else 0]

    def visit(b):
        last = b.last_offset
        log_end[0] = last + 1
        reached[b.path] = (b.position + b.size_in_bytes, last)
        if last >= start and b.base_offset < end:
            if not paths or paths[-1] != b.path:
                paths.append(b.path)
            path_ids.append(len(paths) - 1)
            positions.append(b.position)
            bases.append(b.base_offset)
            lasts.append(last)
            controls.append(1 if b.is_control else 0)
            thin_from.append(len(thin_offsets))
            thin = not b.is_control and b.record_count != last - b.base_offset + 1
            thinned.append(thin)
            if thin:
                thin_offsets.extend(r.offset for r in b)
            thin_to.append(len(thin_offsets))
            null_from.append(len(nulls))
            if tombstones and not b.is_control:
                nulls.extend(r.offset for r in b if r.value_size < 0)
            null_to.append(len(nulls))

    verdict = walk.judge(visit)
    runs = _Runs()
    for i in range(len(bases)):
        kind = _KIND_OF_BATCH[verdict.kind(paths[path_ids[i]], positions[i], bool(controls[i]))]
        lo, hi = max(bases[i], start), min(lasts[i] + 1, end)
        if not thinned[i] and (kind != _DATA or null_to[i] == null_from[i]):
            runs.add(lo, hi, kind)
            continue
        gone = set(nulls[null_from[i]:null_to[i]]) if kind == _DATA else ()
        for o in (thin_offsets[thin_from[i]:thin_to[i]] if thinned[i] else range(lo, hi)):
            if start <= o < end:
                runs.add(o, o + 1, _TOMBSTONE if o in gone else kind)
    # a segment whose walk stopped before its last byte (bytes that do not frame as batches):
    # the offsets up to the next segment are unreadable, not compacted (a copy bounded by the
    # next one, ``end_offset``, stops early by design)
    unreadable = list(walk.lost)
    for i, seg in enumerate(part.segments[:-1]):
        done = reached.get(seg.path)
        if done is None or (done[0] < seg.size and seg.end_offset is None):
            unreadable.append((seg.base_offset if done is None else done[1] + 1, part.segments[i + 1].base_offset))
    for lo, hi in unreadable:
        runs.add(max(lo, start), min(hi, end), _UNREADABLE)
    starts, ends, kinds = runs.arrays()
    order = np.argsort(starts, kind="stable")
    return _LogSide(start, end, log_end[0], starts[order], ends[order], kinds[order])


# --- the comparison ---------------------------------------------------------------------------

def _runs_of(points, numbers=None) -> OffsetRanges:
    """Sorted unique ``points`` as runs of consecutive offsets (with the same ``numbers``
    when given); a run's number is its length, or the shared number."""
    np = require("numpy")
    if len(points) == 0:
        return OffsetRanges.empty()
    brk = np.diff(points) != 1
    if numbers is not None:
        brk |= np.diff(numbers) != 0
    starts = np.concatenate(([0], np.flatnonzero(brk) + 1))
    ends = np.concatenate((starts[1:], [len(points)]))
    return OffsetRanges(points[starts], points[ends - 1], ends - starts if numbers is None else numbers[starts])


def _inside(points, starts, ends):
    """Mask of the sorted ``points`` that fall in one of the sorted disjoint ranges ``[starts, ends)``."""
    np = require("numpy")
    if len(starts) == 0:
        return np.zeros(len(points), dtype=bool)
    i = np.searchsorted(starts, points, side="right") - 1
    return (i >= 0) & (points < ends[np.maximum(i, 0)])


def _count_inside(points, starts, ends):
    """Per range ``[starts, ends)``, how many of the sorted unique ``points`` it holds."""
    np = require("numpy")
    return np.searchsorted(points, ends) - np.searchsorted(points, starts)


def _missing(points, starts, ends) -> OffsetRanges:
    """The offsets of the ranges ``[starts, ends)`` that are not among the sorted unique
    ``points``, as gaps; two gaps with no point between them are one (only offsets the table
    rightly lacks lie between), numbered by the offsets they miss."""
    np = require("numpy")
    held = _count_inside(points, starts, ends)
    firsts, lasts, numbers = [], [], []
    for s, e, a in zip(starts[held < ends - starts].tolist(), ends[held < ends - starts].tolist(),
                       np.searchsorted(points, starts[held < ends - starts]).tolist()):
        b = int(np.searchsorted(points, e))
        inner = points[a:b]
        prev = np.concatenate(([s - 1], inner))
        nxt = np.concatenate((inner, [e]))
        m = nxt - prev > 1
        firsts.append(prev[m] + 1)
        lasts.append(nxt[m] - 1)
    if not firsts:
        return OffsetRanges.empty()
    firsts, lasts = np.concatenate(firsts), np.concatenate(lasts)
    numbers = lasts - firsts + 1
    # merge across what lies between two gaps when the table holds none of it
    between = np.searchsorted(points, firsts[1:]) - np.searchsorted(points, lasts[:-1] + 1)
    starts_of = np.concatenate(([0], np.flatnonzero(between > 0) + 1))
    return OffsetRanges(firsts[starts_of], lasts[np.concatenate((starts_of[1:], [len(firsts)])) - 1],
                        np.add.reduceat(numbers, starts_of))


def _compare(topic: str, partition: int, log: Optional[_LogSide], log_start: int, offsets) -> PartitionAudit:
    """One partition's :class:`PartitionAudit` from what the log says (``log``; None: the log
    has no such partition) and the table's ``offsets`` (an int64 array, any order)."""
    np = require("numpy")
    offsets = np.sort(np.asarray(offsets, dtype=np.int64))
    points, copies = np.unique(offsets, return_counts=True)
    dup = copies > 1
    duplicates = _runs_of(points[dup], copies[dup])
    if log is None:
        return PartitionAudit(topic, partition, 0, 0, 0, 0, duplicates=duplicates,
                              unexpected={"no such partition": _runs_of(points)})
    out = PartitionAudit(topic, partition, log.start, log.end, log_start, log.log_end, duplicates=duplicates)
    data_s, data_e = log.of(_DATA)
    out.expected = int((data_e - data_s).sum())
    held = int(_count_inside(points, data_s, data_e).sum())
    out.present = held
    out.gaps = _missing(points, data_s, data_e)
    explained = {}
    for kind in (_CONTROL, _ABORTED):
        s, e = log.of(kind)
        inside = points[_inside(points, s, e)]
        explained[_KIND_NAMES[kind]] = int((e - s).sum()) - len(inside)
        out.unexpected[_KIND_NAMES[kind]] = _runs_of(inside)
    tomb_s, tomb_e = log.of(_TOMBSTONE)
    explained["tombstone"] = int((tomb_e - tomb_s).sum() - _count_inside(points, tomb_s, tomb_e).sum())
    comp_s, comp_e = log.compacted()
    in_compacted = int(_count_inside(points, comp_s, comp_e).sum())
    explained["compaction"] = int((comp_e - comp_s).sum()) - in_compacted
    below = points[points < log_start]
    # below the log start: from the table's first offset of the partition on
    explained["log_start"] = int(log_start - below[0]) - len(below) if len(below) else 0
    out.explained = explained
    un_s, un_e = log.of(_UNREADABLE)
    in_unreadable = _count_inside(points, un_s, un_e)
    out.unverified = _missing(points, un_s, un_e)
    out.unverifiable = {"log_start": len(below), "compaction": in_compacted,
                        "unreadable": int(in_unreadable.sum())}
    in_range = int(((points >= log.start) & (points < log.end)).sum())
    out.outside = len(points) - in_range - len(below)
    return out


def _by_partition(positions, topics: Optional[frozenset]):
    """``{(topic, partition): int64 offsets}`` of a positions table (columns topic, partition,
    offset).  A table that keeps one topic (its topic column null) is the one topic ``topics``
    names."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    np = require("numpy")
    if isinstance(positions, pa.RecordBatch):
        positions = pa.Table.from_batches([positions])
    for name in ("topic", "partition", "offset"):
        # by name and count: a join or select("*", "topic") names a column twice, and which of the
        # two holds the positions is not for the audit to guess
        count = positions.column_names.count(name)
        if count != 1:
            raise UsageError(f"the table's positions have {'no' if count == 0 else count} {name!r} column"
                             f"{'' if count == 0 else 's'} (columns: {positions.column_names}); expected "
                             f"one each of topic, partition and offset")
    topic = positions.column("topic")
    if topic.null_count:
        if topics is None or len(topics) != 1:
            raise UsageError(f"{topic.null_count} row(s) of the table name no topic (a table of one topic): "
                             f"name that topic with topics=")
        topic = pc.fill_null(topic.cast(pa.string()), next(iter(topics)))
    if not (pa.types.is_string(topic.type) or pa.types.is_large_string(topic.type)
            or pa.types.is_null(topic.type) or pa.types.is_dictionary(topic.type)):
        raise UsageError(f"the table's topic column is {topic.type}, not text: not rows a Kafka writer wrote")
    # a table the audit did not write is checked before its values are used: Kafka's partitions are
    # Java ints from 0, its offsets longs from 0 (an out-of-range partition would alias another's key)
    checked = {}
    for name, low, high in (("partition", 0, (1 << 31) - 1), ("offset", 0, (1 << 63) - 1)):
        column = positions.column(name)
        if not pa.types.is_integer(column.type):
            raise UsageError(f"the table's {name} column is {column.type}, not an integer: "
                             f"not rows a Kafka writer wrote")
        if column.null_count:
            raise UsageError(f"{column.null_count} row(s) of the table have no {name}: "
                             f"not rows a Kafka writer wrote")
        values = column.cast(pa.int64(), safe=False).to_numpy() if len(column) else np.zeros(0, np.int64)
        bad = (values < low) | (values > high)     # a uint64 past the int64 range wraps below 0
        if bad.any():
            article = "an" if name == "offset" else "a"
            raise UsageError(f"{int(bad.sum())} row(s) of the table have {article} {name} outside {low}..{high} "
                             f"(the first: {column[int(np.flatnonzero(bad)[0])].as_py()}): "
                             f"not rows a Kafka writer wrote")
        checked[name] = values
    enc = pc.dictionary_encode(topic.cast(pa.string()).combine_chunks())
    names = enc.dictionary.to_pylist()
    # one int64 key per row (topic number, partition): the rows of a partition sorted together
    key = enc.indices.to_numpy().astype(np.int64) << 32
    key |= checked.pop("partition")
    order = np.argsort(key, kind="stable")
    key = key[order]
    offsets = checked.pop("offset")[order]
    del order
    out = {}
    change = np.flatnonzero(key[1:] != key[:-1]) + 1
    for a, b in zip(np.concatenate(([0], change)).tolist(), np.concatenate((change, [len(key)])).tolist()):
        if a == b:
            continue
        name, part = names[int(key[a] >> 32)], int(key[a] & 0xFFFFFFFF)
        if topics is None or name in topics:
            out[(name, part)] = offsets[a:b]
    return out


# --- the audit ----------------------------------------------------------------------------------

def _start_spec(start_offsets: Offsets, start_time) -> selection.OffsetSpec:
    if start_time is not None:
        return selection.OffsetSpec("timestamp", selection.parse_time(start_time))
    if start_offsets is None:
        return selection.OffsetSpec("earliest")
    if isinstance(start_offsets, int):
        return selection.OffsetSpec("offset", start_offsets)
    by_topic: Dict[str, Dict[int, int]] = {}
    for (topic, partition), offset in start_offsets.items():
        by_topic.setdefault(topic, {})[partition] = offset
    return selection.OffsetSpec("offsets", by_topic)


def audit(log_uri: str, table_positions, *, topics=None, start_offsets: Offsets = None,
          end_offsets: Offsets = None, start_time=None, end_time=None, layout=None, storage_options=None,
          tiered_storage: Optional[str] = None, bootstrap: Optional[str] = None) -> AuditReport:
    """Hold a table's positions against the log under ``log_uri`` (a log directory, local or a
    URI; ``tiered_storage``: a tiered-storage root holding remote copies of its segments).

    ``table_positions``: a ``pyarrow.Table`` (or RecordBatch) with columns ``topic``,
    ``partition``, ``offset``, one row per table row
    (:func:`kafkarec.lakehouse.tables.read_positions`); a table that keeps one topic may leave
    ``topic`` null and name it in ``topics``.  ``topics`` (names, or ``"a,b"``): the topics to
    audit, default those the table holds.

    The range per partition is ``[start, end)``: ``start`` the log start offset, or
    ``start_offsets`` (one offset for every partition or ``{(topic, partition): offset}``) or
    ``start_time`` (the first record at or after it), never below the log start; ``end`` the
    hand-off point (:func:`kafkarec.lakehouse.hand_off_points`: the last stable offset, or
    ``end_offsets``/``end_time`` bounded by it), what a ``read_committed`` consumer reads.
    ``layout``: the table's layout (a name or :class:`kafkarec.lakehouse.layouts.Layout`),
    when its writer writes no row for a tombstone (kafka-delta-ingest, the Iceberg sink).
    ``bootstrap``: the running broker whose log directory this is, asked for each partition's log
    start and last stable offset (:func:`kafkarec.lakehouse.hand_off_points`): the log
    directory's checkpoint lags it, and rows below the broker's log start are reported as such.
    """
    from kafkarec.lakehouse.handoff import hand_off_points
    from kafkarec.lakehouse.layouts import layout as layout_of
    tombstones = layout is not None and layout_of(layout).skips_tombstones
    if isinstance(topics, str):
        topics = [t.strip() for t in topics.split(",") if t.strip()]
    wanted = frozenset(topics) if topics else None
    by_part = _by_partition(table_positions, wanted)
    if wanted is None:
        wanted = frozenset(t for t, _ in by_part)
        if not wanted:
            raise UsageError("the table has no rows: name the topics it should hold (topics=)")
    report: List[PartitionAudit] = []
    from kafkarec.scan import LogScan, ScanConfig
    sel = selection.Selection(wanted, None, _start_spec(start_offsets, start_time), selection.OffsetSpec("latest"),
                              "latest")
    # the log as the one reader lists and walks it: every batch, aborted and control ones too
    walks = list(LogScan(ScanConfig.of(log_uri, selection=sel, storage_options=storage_options,
                                       tiered_storage=tiered_storage, isolation_level="read_committed"))
                 .partition_walks())
    if isinstance(end_offsets, int):
        end_offsets = {w.key: end_offsets for w in walks}
    points = hand_off_points(log_uri, topics=sorted(wanted), end_offsets=end_offsets, end_time=end_time,
                             storage_options=storage_options, tiered_storage=tiered_storage, bootstrap=bootstrap)
    seen = set()
    for walk in walks:
        part, key = walk.part, walk.key
        seen.add(key)
        log_start = points[key].start         # the checkpoint's, or the later broker's (bootstrap)
        start, _ = selection.partition_start(sel, part, walk.resolver, log_start)
        end = points[key].end
        log = _log_side(walk, start, max(start, end), tombstones)
        report.append(_compare(part.topic, part.partition, log, log_start, by_part.get(key, ())))
    for key in sorted(set(by_part) - seen):
        report.append(_compare(key[0], key[1], None, 0, by_part[key]))
    report.sort(key=lambda p: (p.topic, p.partition))
    return AuditReport(report)
