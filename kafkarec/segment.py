"""Log segments and log directories, read the way Kafka's FileRecords reads them.

A :class:`Segment` memory-maps a ``.log`` (or KRaft ``.checkpoint``) file
read-only and walks it with FileLogInputStream's framing rules:

* fewer than 17 bytes left -> stop (a 17-byte tail is ignored, as in Kafka);
* a size field below 14 -> ``CorruptBatchError`` ("Found record size ...");
* a batch that runs past the end -> stop (a truncated tail; ``trailing_bytes``);
* no magic range check while framing: magic < 2 is legacy, anything else is
  laid out as v2.

Batches are parsed by :func:`kafkarec.iter_batches` over memoryviews of the
map (no copy): runs of ordinary batches by its C framing, and any spot where
the core and Kafka's file rules could differ (magic outside 0..2, a bad size,
the end of the file) one batch at a time with those rules in Python.  Only
headers are parsed until records are asked for.  Positions are absolute file
positions.  Pages behind the scan are released with ``madvise(MADV_DONTNEED)``
so a scan's resident memory stays near the largest batch, not the file.

Log directories: ``<topic>-<partition>/`` folders (the topic may contain
dashes; ``.<id>-delete``/``-future``/``-stray`` suffixes as Kafka writes
them) of ``%020d.log`` segments and their side files, see
:mod:`kafkarec.sidefiles`.  :func:`check_partition` verifies one partition
in a single pass over each segment.
"""
from __future__ import annotations

import mmap
import os
import re
import struct
from typing import Callable, Iterator, List, NamedTuple, Optional

import kafkarec
from kafkarec.errors import CorruptBatchError, DecodeError, KafkaRecError
from kafkarec import sidefiles as sf

__all__ = [
    "Segment", "FileBatch", "SegmentBatchIterator", "rebase_error",
    "TopicPartition", "parse_topic_partition", "SegmentFiles", "PartitionDir",
    "scan_partition_dir", "find_partition_dirs", "is_partition_dir",
    "Problem", "SegmentCheck", "check_partition",
]

LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_OVERHEAD_V0 = 14
V2_HEADER_SIZE = 61
_INT32_MAX = 2**31 - 1
# offset int64 | size int32 | (leader epoch or legacy crc) | magic int8
_FRAME = struct.Struct(">qi4xb")
# Release mapped pages behind the scan every this many bytes.
RELEASE_STEP = 16 * 1024 * 1024
_PAGE = mmap.PAGESIZE
_CAN_RELEASE = hasattr(mmap, "MADV_DONTNEED")


def rebase_error(err: DecodeError, base: int) -> DecodeError:
    """The same error with positions moved by ``base`` (a batch's file position).

    Batches are decoded from a slice of the file, so the core reports
    positions relative to the batch start.
    """
    fn, args = err.__reduce__()
    cls, reason, position, batch_position, decompressed_position, state = args
    position += base
    if batch_position is not None:
        batch_position += base
    state = dict(state, position=position, batch_position=batch_position)
    new = fn(cls, reason, position, batch_position, decompressed_position, state)
    new.__cause__ = err.__cause__
    return new


class FileBatch:
    """A batch at an absolute position of a segment file.

    Header fields (``base_offset``, ``crc_valid``, ``compression``...) come from
    the core :class:`kafkarec.RecordBatch` in ``.batch``; iterating yields its
    records, and decode errors name file positions.  ``magic`` is the byte in
    the file, also when it is outside 0..2 (Kafka lays such batches out as v2,
    and so does this class).
    """

    __slots__ = ("path", "position", "size_in_bytes", "magic", "batch", "_segment", "_origin")

    def __init__(self, segment, position, size, magic, batch, origin):
        self.path = segment.path
        self.position = position
        self.size_in_bytes = size
        self.magic = magic
        self.batch = batch
        self._segment = segment
        self._origin = origin      # where the buffer the core decoded from starts in the file

    def __getattr__(self, name):
        return getattr(self.batch, name)

    def raw(self) -> memoryview:
        """The batch's bytes: a read-only view of the file's map (no copy; not after close())."""
        return self._segment._buf[self.position:self.position + self.size_in_bytes]

    def __iter__(self) -> Iterator:
        try:
            yield from self.batch
        except DecodeError as e:
            raise rebase_error(e, self._origin) from None

    def records(self) -> list:
        return list(self)

    def __repr__(self):
        return (f"FileBatch(path={self.path!r}, position={self.position}, "
                f"size_in_bytes={self.size_in_bytes}, magic={self.magic}, batch={self.batch!r})")


class SegmentBatchIterator:
    """Batches of a segment from ``position`` to ``end``.

    A framing error (size < 14) ends the iteration with ``CorruptBatchError``.
    A batch whose header cannot be parsed (v2 smaller than 61 bytes, legacy
    magic < 0 ...) raises its error but the iterator stays usable: framing
    already told where the next batch starts, so ``next()`` goes on from there.

    Speed: runs of ordinary batches are framed by the core's C iterator over
    the map; whenever it objects (a magic outside 0..2, a bad size, the end)
    one batch is framed here in Python with FileLogInputStream's own rules,
    which decide, and the core takes over again after it.
    """

    def __init__(self, segment: "Segment", position: int, end: int, *, verify_crc: bool,
                 strict: bool, max_decompressed_bytes: int, release: bool):
        self.segment = segment
        self.position = position
        self.end = end
        self.trailing_bytes = 0
        self.exhausted = False
        self._opts = dict(verify_crc=verify_crc, strict=strict,
                          max_decompressed_bytes=max_decompressed_bytes)
        self._release = release and _CAN_RELEASE and segment._mmap is not None
        self._released = position - position % _PAGE
        self._core = None
        self._origin = position
        self._start_core()

    def _start_core(self) -> None:
        if self.end - self.position > HEADER_SIZE_UP_TO_MAGIC:
            self._origin = self.position
            self._core = kafkarec.iter_batches(self.segment._buf[self.position:self.end], **self._opts)
        else:
            self._core = None

    def __iter__(self):
        return self

    def __next__(self) -> FileBatch:
        if self.exhausted:
            raise StopIteration
        core = self._core
        if core is not None:
            try:
                b = next(core)
            except (StopIteration, DecodeError):
                self._core = None      # let Kafka's file rules below decide about this spot
            else:
                pos = self._origin + b.position
                total = b.size_in_bytes
                self.position = pos + total
                if self._release and pos - self._released >= RELEASE_STEP:
                    self._release_behind(pos)
                return FileBatch(self.segment, pos, total, b.magic, b, self._origin)
        fb = self._frame_one()
        self._start_core()
        return fb

    def _frame_one(self) -> FileBatch:
        """FileLogInputStream.nextBatch for the batch at ``self.position``."""
        seg = self.segment
        pos = self.position
        end = self.end
        if pos >= end - HEADER_SIZE_UP_TO_MAGIC:
            return self._stop()
        _, size, magic = _FRAME.unpack_from(seg._buf, pos)
        if size < RECORD_OVERHEAD_V0:
            self.exhausted = True
            raise CorruptBatchError(
                f"Found record size {size} smaller than minimum record overhead "
                f"({RECORD_OVERHEAD_V0}) in file {seg.path}.", pos)
        if pos > end - LOG_OVERHEAD - size:
            return self._stop()
        total = size + LOG_OVERHEAD
        self.position = pos + total
        if self._release and pos - self._released >= RELEASE_STEP:
            self._release_behind(pos)
        return seg._make_batch(pos, total, magic, self._opts)

    def _stop(self):
        self.exhausted = True
        self.trailing_bytes = max(0, self.end - self.position)
        raise StopIteration

    def _release_behind(self, pos: int) -> None:
        # Drop our page-table entries for what was scanned (the data stays in
        # the page cache; touching it again just faults it back in).
        upto = pos - pos % _PAGE
        try:
            self.segment._mmap.madvise(mmap.MADV_DONTNEED, self._released, upto - self._released)
        except (OSError, ValueError):
            self._release = False
        self._released = upto


class Segment:
    """A memory-mapped, read-only segment file (``.log`` or KRaft ``.checkpoint``)."""

    def __init__(self, path: str, *, base_offset: Optional[int] = None):
        self.path = os.fspath(path)
        name = os.path.basename(self.path)
        if base_offset is None:
            try:
                base_offset = sf.offset_from_file_name(name)
            except sf.SideFileError:
                base_offset = None
        self.base_offset = base_offset
        self._mmap = None
        with open(self.path, "rb") as fh:
            self.size = os.fstat(fh.fileno()).st_size
            if self.size:
                self._mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        if self._mmap is not None:
            self._buf = memoryview(self._mmap)
            if hasattr(mmap, "MADV_SEQUENTIAL"):
                try:
                    self._mmap.madvise(mmap.MADV_SEQUENTIAL)
                except OSError:
                    pass
        else:
            self._buf = memoryview(b"")

    # --- life cycle -------------------------------------------------------
    def close(self) -> None:
        buf, self._buf = self._buf, memoryview(b"")
        buf.release()
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:
                # Batches or records still hold views into the map; it is
                # unmapped when the last of them goes away.
                pass
            self._mmap = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"Segment({self.path!r}, base_offset={self.base_offset}, size={self.size})"

    # --- batches ----------------------------------------------------------
    def batches(self, start: int = 0, end: Optional[int] = None, *, verify_crc: bool = True,
                strict: bool = False,
                max_decompressed_bytes: int = kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES,
                release: bool = True) -> SegmentBatchIterator:
        """Iterate the batches in ``[start, end)`` (end defaults to the file size)."""
        if not 0 <= start <= self.size:
            raise ValueError(f"position {start} is outside {self.path} ({self.size} bytes)")
        end = self.size if end is None else max(0, min(end, self.size))
        return SegmentBatchIterator(self, start, end, verify_crc=verify_crc, strict=strict,
                                    max_decompressed_bytes=max_decompressed_bytes, release=release)

    def __iter__(self):
        return self.batches()

    def records(self, **kw):
        for b in self.batches(**kw):
            yield from b

    def batch_at(self, position: int, *, limit: Optional[int] = None, verify_crc: bool = False) -> Optional[FileBatch]:
        """The batch starting at ``position`` (within ``limit`` bytes), or None if none fits."""
        end = self.size if limit is None else min(self.size, position + limit)
        it = self.batches(position, end, verify_crc=verify_crc, release=False)
        return next(it, None)

    def _make_batch(self, pos: int, total: int, magic: int, opts: dict) -> FileBatch:
        view = self._buf[pos:pos + total]
        data = view
        if magic > 2:
            # FileLogInputStream reads any magic >= 2 as a v2 batch; the core
            # refuses magic > 2, so parse a copy that says 2 (the magic byte is
            # outside the v2 CRC, which covers bytes 21..end).
            data = bytearray(view)
            data[16] = 2
        try:
            batch = next(kafkarec.iter_batches(data, **opts))
        except DecodeError as e:
            raise rebase_error(e, pos) from None
        return FileBatch(self, pos, total, magic, batch, pos)

    def plausible_at(self, pos: int, min_offset: Optional[int] = None,
                     max_offset: Optional[int] = None) -> bool:
        """Whether a batch that looks real starts at ``pos``.

        Plausible: a sane size that fits the file, magic 0..2, header fields a
        Kafka writer could have produced (codec id, counts, epochs; the offset
        within ``[min_offset, max_offset]`` when given), and a valid CRC
        (CRC-32C of bytes 21.. for v2, CRC-32 of bytes 16.. for legacy).  The
        cheap checks come first so random bytes rarely cost a CRC.
        """
        if pos < 0 or pos + HEADER_SIZE_UP_TO_MAGIC > self.size:
            return False
        buf = self._buf
        offset, size, magic = _FRAME.unpack_from(buf, pos)
        total = size + LOG_OVERHEAD
        if size < RECORD_OVERHEAD_V0 or not 0 <= magic <= 2 or pos + total > self.size:
            return False
        if (min_offset is not None and offset < min_offset) or (max_offset is not None and offset > max_offset):
            return False
        if magic == 2:
            if total < V2_HEADER_SIZE:
                return False
            attrs, delta = _V2_ATTRS.unpack_from(buf, pos + 21)
            epoch, seq, count = _V2_TAIL.unpack_from(buf, pos + 51)
            if (attrs & ~0x7F or (attrs & 7) > 4 or delta < 0 or count < 0 or count > delta + 1
                    or epoch < -1 or seq < -1):
                return False
        else:
            attrs = buf[pos + 17]
            # Legacy attributes: codec 0..3 (no zstd before magic 2), timestamp type bit on v1 only.
            if attrs & 0xF0 or (attrs & 7) > 3 or (magic == 0 and attrs & 0x08):
                return False
            if total < (26 if magic == 0 else 34):
                return False
        try:
            batch = next(kafkarec.iter_batches(buf[pos:pos + total], verify_crc=False))
        except (DecodeError, StopIteration):
            return False
        return batch.crc_valid

    def find_next_batch(self, start: int, end: Optional[int] = None, *,
                        min_offset: Optional[int] = None, max_offset: Optional[int] = None) -> int:
        """The first position in ``[start, end)`` where a plausible batch starts, or -1.

        Used to resynchronise after a corrupt region.  Windows of zeros (a
        preallocated or crashed tail) are skipped at memchr speed; elsewhere a
        regular expression pre-filters candidates (sane size, magic 0..2).
        """
        end = self.size if end is None else min(end, self.size)
        if self._mmap is None:
            return -1
        w = max(0, start)
        while w < end:
            wend = min(end, w + _WINDOW)
            reach = min(self.size, wend + HEADER_SIZE_UP_TO_MAGIC)
            chunk = self._mmap[w:reach]
            if not chunk.strip(b"\x00"):
                w = wend
                continue
            for m in _CANDIDATE.finditer(self._mmap, w, reach):
                pos = m.start()
                if pos >= wend:
                    break
                if self.plausible_at(pos, min_offset, max_offset):
                    return pos
            w = wend
        return -1


_WINDOW = 1 << 20
_V2_ATTRS = struct.Struct(">hi")      # attributes, lastOffsetDelta at byte 21
_V2_TAIL = struct.Struct(">hii")      # producerEpoch, baseSequence, recordsCount at byte 51


# A size field of at least 14 (big-endian, positive) followed by 4 bytes and a
# magic byte 0..2: the cheap pre-filter before the CRC check in find_next_batch.
_CANDIDATE = re.compile(
    rb"(?s)(?=.{8}(?:[\x01-\x7f].{3}|\x00[\x01-\xff].{2}|\x00\x00[\x01-\xff].|\x00\x00\x00[\x0e-\xff])"
    rb".{4}[\x00-\x02])")


# --- log directories ---------------------------------------------------------

class TopicPartition(NamedTuple):
    topic: str
    partition: int


_DIR_SUFFIXES = ("-delete", "-future", "-stray")


def parse_topic_partition(dir_name: str) -> Optional[TopicPartition]:
    """LocalLog.parseTopicPartitionName: ``topic-N`` (topic may contain dashes), or None."""
    name = os.path.basename(os.path.normpath(dir_name))
    if not name or "-" not in name:
        return None
    for suffix in _DIR_SUFFIXES:
        if name.endswith(suffix):
            if not re.fullmatch(rf"(\S+)-(\S+)\.(\S+){re.escape(suffix)}", name):
                return None
            name = name[:name.rindex(".")]
            break
    topic, _, partition = name.rpartition("-")
    if not topic or not re.fullmatch(r"[+-]?[0-9]+", partition) or not -2**31 <= int(partition) < 2**31:
        return None
    return TopicPartition(topic, int(partition))


class SegmentFiles(NamedTuple):
    base_offset: int
    log: Optional[str]
    index: Optional[str]
    timeindex: Optional[str]
    txnindex: Optional[str]


class PartitionDir(NamedTuple):
    path: str
    topic_partition: Optional[TopicPartition]
    segments: List[SegmentFiles]
    producer_snapshots: List[str]
    kraft_snapshots: List[str]
    leader_epoch_checkpoint: Optional[str]
    partition_metadata: Optional[str]
    other: List[str]

    @property
    def name(self) -> str:
        tp = self.topic_partition
        return f"{tp.topic}-{tp.partition}" if tp else os.path.basename(self.path)


def is_partition_dir(path: str) -> bool:
    """A directory holding one partition's files (not a log dir root, which holds such directories)."""
    if not os.path.isdir(path):
        return False
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if "meta.properties" in names:          # written at the root of every Kafka log dir
        return False
    if any(sf.file_kind(n) in _SEGMENT_KINDS and os.path.isfile(os.path.join(path, n)) for n in names):
        return True
    if parse_topic_partition(path) is None:
        return False
    # An empty partition, unless it is a root whose own name happens to look like one (data-1/).
    return not any(parse_topic_partition(n) and os.path.isdir(os.path.join(path, n)) for n in names)


_SEGMENT_KINDS = ("log", "index", "timeindex", "txnindex", "snapshot", "checkpoint")


def scan_partition_dir(path: str) -> PartitionDir:
    """The files of one partition directory, segments in offset order."""
    segs = {}
    snapshots, kraft, other = [], [], []
    epoch_ckpt = metadata = None
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if not os.path.isfile(full):
            continue
        kind = sf.file_kind(name)
        if kind in ("log", "index", "timeindex", "txnindex"):
            try:
                base = sf.offset_from_file_name(name)
            except sf.SideFileError:
                other.append(full)
                continue
            segs.setdefault(base, {})[kind] = full
        elif kind == "snapshot":
            snapshots.append(full)
        elif kind == "checkpoint":
            kraft.append(full)
        elif kind == "leader-epoch-checkpoint":
            epoch_ckpt = full
        elif kind == "partition-metadata":
            metadata = full
        else:
            other.append(full)   # .deleted, .cleaned, .swap, quorum-state, ...

    def by_offset(p):
        try:
            return (sf.offset_from_file_name(p), p)
        except sf.SideFileError:
            return (-1, p)

    segments = [SegmentFiles(b, f.get("log"), f.get("index"), f.get("timeindex"), f.get("txnindex"))
                for b, f in sorted(segs.items())]
    return PartitionDir(path, parse_topic_partition(path), segments, sorted(snapshots, key=by_offset),
                        sorted(kraft), epoch_ckpt, metadata, sorted(other))


def find_partition_dirs(root: str) -> List[PartitionDir]:
    """Partition directories directly under a log directory root, by topic then partition."""
    found = []
    for name in os.listdir(root):
        full = os.path.join(root, name)
        if is_partition_dir(full):
            found.append(scan_partition_dir(full))

    def key(p):
        tp = p.topic_partition
        return (tp.topic, tp.partition) if tp else (p.name, -1)
    return sorted(found, key=key)


# --- verification ------------------------------------------------------------

class Problem(NamedTuple):
    """Something wrong (``error``), suspicious (``warning``) or worth knowing (``note``)."""
    path: str
    position: Optional[int]
    offset: Optional[int]
    reason: str
    severity: str = "error"


class SegmentCheck:
    """Checks one segment's batches in a single pass.

    Per batch: framing, header, magic, CRC, offsets (increasing, within the
    segment's 32-bit relative range, lastOffsetDelta vs count); with ``deep``
    every record is decoded too.  :meth:`run` feeds the batches to the side
    file checks.  With ``resync`` a corrupt region is skipped up to the next
    plausible batch header instead of ending the scan.
    """

    def __init__(self, segment: Segment, *, deep: bool = False, resync: bool = False,
                 prev_last_offset: Optional[int] = None,
                 max_decompressed_bytes: int = kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES):
        self.segment = segment
        self.deep = deep
        self.resync = resync
        self.max_decompressed_bytes = max_decompressed_bytes
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
        pos = 0
        while pos is not None:
            pos = self._scan_from(pos, observers, progress)
        if progress is not None:
            progress(self.segment.size)
        return self.problems

    def _scan_from(self, pos: int, observers, progress) -> Optional[int]:
        """Scan from ``pos``; returns where to resume after a corrupt region, or None when done."""
        it = self.segment.batches(pos, verify_crc=False,
                                  max_decompressed_bytes=self.max_decompressed_bytes)
        while True:
            try:
                fb = next(it)
            except StopIteration:
                if it.trailing_bytes and self._tail(it):
                    return self._skip(it.position, it.position + 1)
                return None
            except DecodeError as e:
                self.bad_batches += 1
                self._add(e.position, None, e.reason)
                if not it.exhausted:
                    continue   # a header that does not parse; framing is intact
                if not self.resync:
                    rest = self.segment.size - e.position
                    self.stopped_at = e.position
                    self._add(e.position, None, f"stopped reading: the {rest} bytes from here on were "
                              "not checked (--resync looks for batches after a corrupt region)",
                              "warning")
                    return None
                return self._skip(e.position, e.position + 1)
            bad_from = self._check_batch(fb, observers)
            if progress is not None:
                progress(it.position)
            if bad_from is not None:
                return self._skip(bad_from, bad_from + 1)

    def _tail(self, it: SegmentBatchIterator) -> bool:
        """Report bytes after the last whole batch; True to resync into them."""
        n = it.trailing_bytes
        pos = it.position
        if n < HEADER_SIZE_UP_TO_MAGIC:
            self._add(pos, None, f"{n} trailing bytes after the last batch are too few for a batch header")
            return False
        _, size, magic = _FRAME.unpack_from(self.segment._buf, pos)
        if 0 <= magic <= 2:
            self._add(pos, None, f"incomplete batch at the end of the segment: it declares "
                      f"{size + LOG_OVERHEAD} bytes but only {n} remain (a truncated write)")
        else:
            self._add(pos, None, f"the bytes here do not look like a batch (magic {magic}, a declared "
                      f"size of {size + LOG_OVERHEAD} bytes with only {n} left)")
        return self.resync

    def _skip(self, bad: int, start: int) -> Optional[int]:
        """Find the next plausible batch after a corrupt region starting at ``bad``."""
        seg = self.segment
        lo, hi = self._offset_bounds()
        nxt = seg.find_next_batch(start, min_offset=lo, max_offset=hi)
        if nxt < 0:
            self.skipped_bytes += self.segment.size - bad
            self._add(bad, None, f"resync: no plausible batch in the {self.segment.size - bad} bytes "
                      "from here to the end of the segment", "warning")
            return None
        self.skipped_bytes += nxt - bad
        self._add(bad, None, f"resync: skipped {nxt - bad} bytes to the next plausible batch "
                  f"at position {nxt}", "warning")
        return nxt

    def _check_batch(self, fb: FileBatch, observers) -> Optional[int]:
        """Check one batch; returns a position to resync from, or None to go on."""
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
            return self._maybe_resync(fb)
        if not b.crc_valid:
            self.bad_batches += 1
            self._add(pos, offset_for_report,
                      f"Record is corrupt (stored crc = {b.crc}, computed crc = {b.computed_crc})")
            return self._maybe_resync(fb)
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

    def _offset_bounds(self) -> tuple:
        """Offsets the next good batch can have: past the last good one, inside the segment."""
        base = self.segment.base_offset
        lo = self.last_offset + 1 if self.last_offset is not None else base
        hi = None if base is None else base + _INT32_MAX
        return lo, hi

    def _maybe_resync(self, fb: FileBatch) -> Optional[int]:
        """After a bad batch: trust its size only if a plausible batch (or the end) follows.

        Returns the bad batch's position when its size field cannot be
        trusted, so the scan resynchronises from the byte after it.
        """
        if not self.resync:
            return None
        nxt = fb.position + fb.size_in_bytes
        if nxt == self.segment.size or self.segment.plausible_at(nxt, *self._offset_bounds()):
            return None
        return fb.position


def _open_side(cls, path, base, problems, **kw):
    try:
        return cls(path, base, **kw)
    except (OSError, sf.SideFileError) as e:
        problems.append(Problem(path, None, None, f"cannot read: {e}"))
        return None


def check_partition(pdir: PartitionDir, *, deep: bool = False, resync: bool = False,
                    observers_for: Optional[Callable[[Segment], tuple]] = None,
                    progress: Optional[Callable[[int], None]] = None,
                    max_decompressed_bytes: int = kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES,
                    ) -> Iterator[tuple]:
    """Verify a partition directory; yields ``(SegmentCheck or None, [Problem])`` per step.

    Segments are checked in offset order against each other (base offsets,
    offsets increasing across segments) and against their ``.index``,
    ``.timeindex`` and ``.txnindex``; then producer snapshots, the leader epoch
    checkpoint and ``partition.metadata``.  ``progress`` gets byte counts.
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
        problems = []
        active = i == len(pdir.segments) - 1
        if files.log is None:
            problems.append(Problem(files.index or files.timeindex or files.txnindex, None, None,
                                    f"side file without its segment {sf.file_name(files.base_offset, '.log')}"))
            yield None, problems
            continue
        try:
            seg = Segment(files.log)
        except OSError as e:
            yield None, [Problem(files.log, None, None, f"cannot read: {e.strerror or e}")]
            continue
        with seg:
            checks = []
            observers = []
            every = []
            oi = _open_side(sf.OffsetIndex, files.index, files.base_offset, problems) if files.index else None
            if oi is not None:
                c = sf.OffsetIndexCheck(oi, seg.size, active=active)
                checks.append(c)
                every.append(lambda fb, c=c: c.see_batch(fb.position, fb.batch.last_offset))
            ti = _open_side(sf.TimeIndex, files.timeindex, files.base_offset, problems) if files.timeindex else None
            if ti is not None:
                c = sf.TimeIndexCheck(ti, active=active)
                checks.append(c)
                every.append(lambda fb, c=c: c.see_batch(fb.batch.last_offset, fb.batch.max_timestamp))
            xi = _open_side(sf.TransactionIndex, files.txnindex, files.base_offset, problems) if files.txnindex else None
            if xi is not None:
                c = sf.TxnIndexCheck(xi)
                checks.append(c)
                observers.append(lambda fb, c=c: _see_txn(c, fb))
            if epoch_check is not None:
                observers.append(lambda fb: fb.magic >= 2 and epoch_check.see_batch(
                    fb.path, fb.position, fb.batch.base_offset, fb.batch.partition_leader_epoch))
            if observers_for is not None:
                observers.extend(observers_for(seg))
            check = SegmentCheck(seg, deep=deep, resync=resync, prev_last_offset=prev_last,
                                 max_decompressed_bytes=max_decompressed_bytes)
            base_progress = done
            check.run(tuple(observers),
                      None if progress is None else (lambda n, b=base_progress: progress(b + n)),
                      every=tuple(every))
            done += seg.size
            problems.extend(check.problems)
            for c in checks:
                if isinstance(c, sf.OffsetIndexCheck):
                    found = c.finish(unchecked_from=check.stopped_at)
                elif isinstance(c, sf.TxnIndexCheck):
                    found = c.finish(log_start, complete=check.stopped_at is None)
                else:
                    found = c.finish(complete=check.stopped_at is None)
                problems.extend(Problem(*p) for p in found)
            if prev_last is not None and files.base_offset <= prev_last:
                problems.append(Problem(files.log, None, files.base_offset,
                                        f"segment base offset {files.base_offset} is not above the "
                                        f"previous segment's last offset {prev_last}"))
            if check.last_offset is not None:
                prev_last = check.last_offset
        yield check, problems
    for path in pdir.kraft_snapshots:
        yield _check_kraft_snapshot(path, deep=deep, resync=resync,
                                    max_decompressed_bytes=max_decompressed_bytes)
    problems = []
    for path in pdir.producer_snapshots:
        problems.extend(_check_producer_snapshot(path))
    if epoch_check is not None:
        problems.extend(Problem(*p) for p in epoch_check.finish())
    if problems:
        yield None, problems


def _see_txn(check: "sf.TxnIndexCheck", fb: FileBatch) -> None:
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
                          max_decompressed_bytes: int) -> tuple:
    """A KRaft snapshot: batches, the first opening with SnapshotHeader, the last with SnapshotFooter."""
    from kafkarec.enums import ControlRecordType
    try:
        seg = Segment(path)
    except OSError as e:
        return None, [Problem(path, None, None, f"cannot read: {e.strerror or e}")]
    with seg:
        last = []

        def remember(fb):
            last[:] = [fb.position]
        check = SegmentCheck(seg, deep=deep, resync=resync, max_decompressed_bytes=max_decompressed_bytes)
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
