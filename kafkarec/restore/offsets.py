"""The offset map of a restore: for every restored record, its source offset and its target offset.

Kept as runs (``source_offset``, ``target_offset``, ``length``: source ``s + i`` is target ``t + i``
for ``i < length``), per source partition, with each partition's ends: the source's H and the
target partition's end.  A source position (a group's committed offset: the next record to read)
maps to the target offset of the first restored record at or after it, so a position on a hole
(a compacted or aborted record, a marker, below the log start) goes to the next restored record's
offset, and a position past the last restored record to the target's end.

The file (:meth:`OffsetMap.write`) is CSV with a header line
``source_topic,partition,source_offset,target_topic,target_offset,count``: one line per run, and
per partition one last line with ``count`` 0 whose offsets are the source's H and the target's end.
"""
from __future__ import annotations

import bisect
import csv
import io
import zlib
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from kafkarec._extras import require
from kafkarec.errors import UsageError
from kafkarec.runs import ranges  # noqa: F401  (its home is below the restore, where dlq.py uses it too)

__all__ = ["OffsetMap", "Run", "HEADER", "CHUNK_RUNS", "ranges"]

HEADER = ["source_topic", "partition", "source_offset", "target_topic", "target_offset", "count"]
#: runs per chunk of :meth:`OffsetMap.pack`: at most 1.5 MiB each before zlib, a cell Spark carries
#: whole whatever the partition's size
CHUNK_RUNS = 1 << 16
#: Kafka's offsets are signed 64-bit: no run of a map ends past the largest.
_OFFSET_LIMIT = 2 ** 63 - 1
#: Kafka's partitions are numbered by a signed 32-bit int
_PARTITION_LIMIT = 2 ** 31 - 1


class Run(NamedTuple):
    source_offset: int
    target_offset: int
    length: int


class OffsetMap:
    """Source offset -> target offset, per source partition (see the module docstring)."""

    def __init__(self) -> None:
        self._runs: Dict[Tuple[str, int], List[Run]] = {}
        self._starts: Dict[Tuple[str, int], List[int]] = {}
        self.target_topics: Dict[Tuple[str, int], str] = {}
        #: per source partition: (the source's H, the target partition's end)
        self.ends: Dict[Tuple[str, int], Tuple[int, int]] = {}

    def partitions(self) -> List[Tuple[str, int]]:
        return sorted(set(self._runs) | set(self.ends))

    def add(self, topic: str, partition: int, target_topic: str, source_offset: int, target_offset: int,
            count: int = 1) -> None:
        """One restored record (or ``count`` records of consecutive offsets on both sides); records
        of a partition are added in offset order."""
        key = (topic, partition)
        self.target_topics[key] = target_topic
        runs = self._runs.setdefault(key, [])
        if runs:
            last = runs[-1]
            if source_offset < last.source_offset + last.length or target_offset < last.target_offset + last.length:
                raise ValueError(f"{topic}-{partition}: offsets {source_offset} -> {target_offset} not after "
                                 f"the last one added")
            if source_offset == last.source_offset + last.length and target_offset == last.target_offset + last.length:
                runs[-1] = last._replace(length=last.length + count)
                return
        runs.append(Run(source_offset, target_offset, count))
        self._starts.setdefault(key, []).append(source_offset)

    def update(self, other: "OffsetMap") -> None:
        """Take ``other``'s partitions (partitions restored apart, each by its own
        :func:`restore_partition`); a partition both hold is a :class:`UsageError`."""
        both = set(self.partitions()) & set(other.partitions())
        if both:
            raise UsageError(f"offset maps overlap on {', '.join(f'{t}-{p}' for t, p in sorted(both))}")
        for key in other.partitions():
            if key in other._runs:
                self._runs[key] = list(other._runs[key])
                self._starts[key] = list(other._starts[key])
            self.target_topics[key] = other.target_topics[key]
            if key in other.ends:
                self.ends[key] = other.ends[key]

    def set_end(self, topic: str, partition: int, target_topic: str, source_end: int, target_end: int) -> None:
        """The partition's ends: the source's H and the target partition's end after the restore."""
        self.target_topics[(topic, partition)] = target_topic
        self.ends[(topic, partition)] = (source_end, target_end)

    def pairs(self, topic: str, partition: int) -> Iterator[Tuple[int, int]]:
        """``(source offset, target offset)`` of every restored record, in order."""
        for r in self._runs.get((topic, partition), ()):
            for i in range(r.length):
                yield r.source_offset + i, r.target_offset + i

    def runs(self, topic: str, partition: int) -> Iterator[Run]:
        """The partition's runs in order, runs that continue each other joined (a map read back
        from chunks or a file whose runs were cut is the same map)."""
        last = None
        for r in self._runs.get((topic, partition), ()):
            if last is not None and r.source_offset == last.source_offset + last.length \
                    and r.target_offset == last.target_offset + last.length:
                last = last._replace(length=last.length + r.length)
                continue
            if last is not None:
                yield last
            last = r
        if last is not None:
            yield last

    def digest(self, topic: str, partition: int) -> str:
        """The partition's map in its canonical form, hashed (SHA-256, hex): each of :meth:`runs`
        as three big-endian signed 64-bit integers (source offset, target offset, length), then its
        ends (the source's end, the target's end; -1 each where not set) as two more.  The same
        pairs and ends give the same digest however the map was built."""
        import hashlib
        import struct
        h = hashlib.sha256()
        pack = struct.Struct(">qqq").pack
        for r in self.runs(topic, partition):
            h.update(pack(*r))
        h.update(struct.pack(">qq", *self.ends.get((topic, partition), (-1, -1))))
        return h.hexdigest()

    def last_target_offset(self, topic: str, partition: int) -> Optional[int]:
        """The target offset of the partition's last restored record (None: none)."""
        runs = self._runs.get((topic, partition))
        return runs[-1].target_offset + runs[-1].length - 1 if runs else None

    def records(self, topic: str, partition: int) -> int:
        return sum(r.length for r in self._runs.get((topic, partition), ()))

    def target_offset(self, topic: str, partition: int, position: int) -> int:
        """The target offset of source position ``position`` (see the module docstring)."""
        key = (topic, partition)
        if key not in self.ends:
            raise UsageError(f"{topic}-{partition} is not in the offset map")
        runs, starts = self._runs.get(key, []), self._starts.get(key, [])
        i = bisect.bisect_right(starts, position) - 1
        if i >= 0 and position < runs[i].source_offset + runs[i].length:
            return runs[i].target_offset + (position - runs[i].source_offset)
        if i + 1 < len(runs):
            return runs[i + 1].target_offset
        return self.ends[key][1]

    def pairs_between(self, topic: str, partition: int, start: int, end: int) -> Iterator[Tuple[int, int]]:
        """``(source offset, target offset)`` of the restored records whose source offsets are in
        [``start``, ``end``), in order (the holes between them have none)."""
        runs, starts = self._runs.get((topic, partition), []), self._starts.get((topic, partition), [])
        i = max(bisect.bisect_right(starts, start) - 1, 0)
        for r in runs[i:]:
            if r.source_offset >= end:
                return
            for s in range(max(start, r.source_offset), min(end, r.source_offset + r.length)):
                yield s, r.target_offset + (s - r.source_offset)

    # --- packed runs: a partition's map across processes (a Spark task to its driver) ---------
    def pack(self, topic: str, partition: int, runs_per_chunk: int = CHUNK_RUNS) -> Iterator[bytes]:
        """The partition's runs in chunks of at most ``runs_per_chunk`` runs, each chunk on its own:
        zlib over little-endian int64 triples (the gap from the previous run's end in source
        offsets, the same in target offsets, the length), so a chunk's bytes grow with its runs, a
        few bytes each, and never with the records; :meth:`add_packed` takes them back in order."""
        if not 1 <= runs_per_chunk <= CHUNK_RUNS:
            raise UsageError(f"runs_per_chunk {runs_per_chunk}: from 1 to {CHUNK_RUNS} (what add_packed takes)")
        np = require("numpy")
        runs = self._runs.get((topic, partition), [])
        for first in range(0, len(runs), runs_per_chunk):
            a = np.array(runs[first:first + runs_per_chunk], dtype="<i8").reshape(-1, 3)
            ends = a[:, :2] + a[:, 2:3]
            a[1:, :2] -= ends[:-1]          # the first run of a chunk keeps its offsets whole
            yield zlib.compress(a.tobytes(), 1)

    def add_packed(self, topic: str, partition: int, target_topic: str, chunk: bytes) -> None:
        """Add one chunk of :meth:`pack` (chunks of a partition in the order made); a chunk that is
        not one, or out of order with the runs held, is a :class:`UsageError`."""
        np = require("numpy")
        where = f"{topic}-{partition}: a packed offset map chunk"
        inflate = zlib.decompressobj()
        try:
            raw = inflate.decompress(chunk, 24 * CHUNK_RUNS + 1)
        except zlib.error as e:
            raise UsageError(f"{where} does not decompress ({e})") from None
        # a cut stream decompresses without error; bytes after it would be ignored: neither is a chunk
        if not inflate.eof or inflate.unused_data or inflate.unconsumed_tail:
            raise UsageError(f"{where} is not one whole zlib stream (cut short, too long or followed by bytes)")
        if not raw or len(raw) % 24 or len(raw) > 24 * CHUNK_RUNS:
            raise UsageError(f"{where} holds {len(raw)} bytes, not whole runs of 24 bytes (at most {CHUNK_RUNS})")
        a = np.frombuffer(raw, dtype="<i8").reshape(-1, 3)
        if (a[:, 2] < 1).any() or (a[1:, :2] < 0).any() or (a[0, :2] < 0).any():
            raise UsageError(f"{where} holds an empty run or offsets that go back")
        # Python's integers, not numpy's cumsum, which wraps past 2**63 without a word
        new, source_end, target_end = [], 0, 0
        for i, (source_gap, target_gap, length) in enumerate(a.tolist()):
            source = source_gap if i == 0 else source_end + source_gap
            target = target_gap if i == 0 else target_end + target_gap
            source_end, target_end = source + length, target + length
            if source_end > _OFFSET_LIMIT or target_end > _OFFSET_LIMIT:
                raise UsageError(f"{where} holds a run past the largest offset (run {i}: source {source}, "
                                 f"target {target}, length {length})")
            new.append(Run(source, target, length))
        key = (topic, partition)
        runs = self._runs.setdefault(key, [])
        if runs and (new[0].source_offset < runs[-1].source_offset + runs[-1].length
                     or new[0].target_offset < runs[-1].target_offset + runs[-1].length):
            raise UsageError(f"{where} starts before the runs held end")
        self.target_topics[key] = target_topic
        runs += new
        self._starts.setdefault(key, []).extend(r.source_offset for r in new)

    # --- the file ---------------------------------------------------------------------------
    def write(self, path: str) -> None:
        """The map as CSV at ``path`` (written whole: a crash leaves the old file or the new)."""
        from kafkarec._boot.files import atomic_write
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(HEADER)
        for key in self.partitions():
            tt = self.target_topics[key]
            for r in self._runs.get(key, ()):
                w.writerow([key[0], key[1], r.source_offset, tt, r.target_offset, r.length])
            if key in self.ends:
                w.writerow([key[0], key[1], self.ends[key][0], tt, self.ends[key][1], 0])
        atomic_write(path, buf.getvalue().encode(), mode=0o644)

    @classmethod
    def read(cls, path: str) -> "OffsetMap":
        """A map :meth:`write` wrote; a line that is not one is a :class:`UsageError` naming it, its
        field and why: every number is checked against Kafka's ranges (partitions 0 to 2^31-1,
        offsets 0 to 2^63-1, a run ending at the largest offset at most, as :meth:`add_packed`'s)
        before it is used, so a few bytes cannot stand for more records than a log can hold."""
        out = cls()
        try:
            with open(path, newline="", encoding="utf-8") as fh:
                rows = csv.reader(fh)
                try:
                    if next(rows, None) != HEADER:
                        raise UsageError(f"offset map {path}: the first line is not {','.join(HEADER)}")
                    for row in rows:
                        out._read_row(row, f"offset map {path}, line {rows.line_num}")
                except csv.Error as e:      # a field past csv's limit, a NUL byte, an open quote
                    raise UsageError(f"offset map {path}, line {rows.line_num}: not CSV ({e})") from None
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"offset map {path}: {e}") from None
        return out

    def _read_row(self, row: List[str], where: str) -> None:
        """One line of the file (see :meth:`read`)."""
        if len(row) != len(HEADER):
            raise UsageError(f"{where}: {len(row)} field(s), expected {len(HEADER)} ({','.join(HEADER)})")
        topic, _, _, tt, _, _ = row
        p, s, t, n = (_field(row[i], HEADER[i], where, high)
                      for i, high in ((1, _PARTITION_LIMIT), (2, _OFFSET_LIMIT), (4, _OFFSET_LIMIT),
                                      (5, _OFFSET_LIMIT)))
        if s + n > _OFFSET_LIMIT or t + n > _OFFSET_LIMIT:
            raise UsageError(f"{where}: a run past the largest offset ({_OFFSET_LIMIT}): source offset {s}, "
                             f"target offset {t}, count {n}")
        try:
            if n == 0:
                self.set_end(topic, p, tt, s, t)
            else:
                self.add(topic, p, tt, s, t, n)
        except ValueError as e:
            raise UsageError(f"{where}: {e}") from None

    def __eq__(self, other) -> bool:
        return isinstance(other, OffsetMap) and (self._runs, self.ends, self.target_topics) == \
            (other._runs, other.ends, other.target_topics)

    def __repr__(self) -> str:
        return f"OffsetMap({len(self.ends)} partition(s), {sum(map(len, self._runs.values()))} run(s))"


def _field(text: str, name: str, where: str, high: int) -> int:
    """A number field of the file: decimal digits (at most those of ``high``), from 0 to ``high``."""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(high)) or int(text) > high:
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
        raise UsageError(f"{where}: {name} {shown!r} is not a number from 0 to {high}")
    return int(text)
