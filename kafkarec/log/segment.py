"""Log segments and log directories, read the way Kafka's FileRecords reads them.

A :class:`Segment` memory-maps a ``.log`` (or KRaft ``.checkpoint``) file
read-only and walks it with FileLogInputStream's framing rules:

* 17 bytes or fewer left -> stop (a 17-byte tail is ignored, as in Kafka);
* a size field below 14 -> ``CorruptBatchError`` ("Found record size ...");
* a batch that runs past the end -> stop (a truncated tail; ``trailing_bytes``);
* no magic range check while framing: magic < 2 is legacy, anything else is
  laid out as v2.

Batches are framed and parsed by :func:`kafkarec.iter_batches` with
``file_rules=True`` straight over the map (no copy), bounded by ``start`` and
``end``, so positions (also those of decode errors) are absolute file
positions.  Only headers are parsed until records are asked for.  Pages
behind the scan are released with ``madvise(MADV_DONTNEED)`` so a scan's
resident memory stays near the largest batch, not the file.

Log directories are walked by :mod:`kafkarec.log.directory` (its names are
re-exported here); file names are :mod:`kafkarec.log.names`'.  Verifying a
partition is :mod:`kafkarec.cli.verify`.
"""
from __future__ import annotations

import mmap
import os
import re
import struct
from typing import Iterator, NamedTuple, Optional

import kafkarec
from kafkarec.errors import CorruptBatchError, DecodeError, KafkaRecError
from kafkarec.log import names

__all__ = [
    "Segment", "FileBatch", "SegmentBatchIterator", "SkippedBatch", "SegmentScan", "SkippedRegion",
    "TrailingBytes", "base_offset_from_name", "SegmentOffsets", "segment_offsets", "order_problem",
]

# Framing sizes are the core's (one definition, kafkarec._core).
from kafkarec._core import (  # noqa: E402,F401
    HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, RECORD_OVERHEAD_V0, V2_HEADER_SIZE, ReadOptions,
    is_plausible_batch)

#: How segments are read unless told otherwise: Kafka's file framing, CRCs checked.
FILE_READ_OPTIONS = ReadOptions(file_rules=True)
#: What a scan frames with: the scan's readers judge each batch's CRC themselves.
SCAN_READ_OPTIONS = ReadOptions(file_rules=True, verify_crc=False)
# offset int64 | size int32 | (leader epoch or legacy crc) | magic int8
_FRAME = struct.Struct(">qi4xb")
# Release mapped pages behind the scan every this many bytes.
RELEASE_STEP = 16 * 1024 * 1024
_PAGE = mmap.PAGESIZE
_CAN_RELEASE = hasattr(mmap, "MADV_DONTNEED")


class SegmentOffsets(NamedTuple):
    """The offsets a segment's batches may hold, and what a batch outside them is.

    A segment holds offsets from its base offset (its file name) up to, not including, the
    next segment's base (Kafka rolls a segment at the offset the next one starts with).  A
    broker also keeps them within 2^31 - 1 of the base (``LogSegment.ensureOffsetInRange``), but
    Kafka's reader of a file accepts any long (a segment written by ``MemoryRecordsBuilder``
    may end at Long.MAX): the 2^31 rule holds only for a segment with an offset index, a broker's
    (``indexed``; its index could not name such offsets).  ``end``: the next segment's base (None: none);
    ``end_is_log``: the next segment is of the same log, so an offset at or past ``end`` is
    a damaged base offset; otherwise (an overlapping copy stitched from elsewhere) the next
    segment holds those offsets and this one's are left to it."""
    base: int
    end: Optional[int] = None
    end_is_log: bool = True
    indexed: bool = False

    @property
    def walk_until(self) -> Optional[int]:
        """Where a walk of the segment's batches in file order stops (a batch whose first offset
        is at or past it: :class:`kafkarec.log.storage.BatchWalk`'s ``until``): the next
        segment's base when that one is an overlapping copy (the offsets from there are the
        copy's to read), None when it is this log's own next segment.  There a batch at or past
        the next base is a batch of this log whose base offset -- outside its CRC -- is damaged:
        the read reports it and reads on, and the transaction rule judges it as any batch (its
        producer, transaction and control fields are under its CRC), so a walk of the log goes
        on past it too: every walk and every read of a segment frame the same batches."""
        return None if self.end_is_log else self.end

    def problem(self, first: int, last: int) -> Optional[str]:
        """Why a batch with offsets ``first..last`` cannot be in this segment (None: it can)."""
        if first < self.base:
            return f"offset {first} is below the segment's base offset {self.base}"
        if self.end is not None and self.end_is_log and last >= self.end:
            return f"offset {last} is at or past the next segment's base offset {self.end}"
        if self.indexed and last - self.base >= (1 << 31):
            return (f"offset {last} does not fit the segment's 32-bit relative offsets "
                    f"(base {self.base})")
        return None


def order_problem(offsets: list, after: Optional[int], held: Optional[SegmentOffsets]) -> Optional[str]:
    """Why a batch whose records have ``offsets`` (in file order, at least one) cannot come
    after offset ``after`` (the last record read before it in its log; None: none) in a segment
    holding ``held`` (None: unknown); None if it can.  The one rule of offsets that go back,
    which the reader (:class:`kafkarec.scan._order.OffsetOrder`) and the timestamp lookup
    (:meth:`kafkarec.log.selection.Resolver.offset_for_time`) both apply."""
    if any(b <= a for a, b in zip(offsets, offsets[1:])):
        return f"its records' offsets {offsets[0]}..{offsets[-1]} do not increase"
    if after is not None and offsets[0] <= after:
        return f"offsets go back: it starts at {offsets[0]} after offset {after}"
    return held.problem(offsets[0], offsets[-1]) if held is not None else None


def segment_offsets(base: Optional[int], next_base: Optional[int], *, next_is_log: bool = True,
                    indexed: bool = False) -> Optional[SegmentOffsets]:
    """The :class:`SegmentOffsets` of a segment of base offset ``base`` (None: its file name
    has none, nothing is known) followed by one of ``next_base``."""
    if base is None:
        return None
    return SegmentOffsets(base, next_base, next_is_log, indexed)


class FileBatch:
    """A batch at an absolute position of a segment file.

    Header fields (``base_offset``, ``crc_valid``, ``compression``...) come from
    the core :class:`kafkarec.RecordBatch` in ``.batch``; iterating yields its
    records, and decode errors name file positions.  ``magic`` is the byte in
    the file, also when it is outside 0..2 (Kafka lays such batches out as v2,
    and so does the core with ``file_rules``).
    """

    __slots__ = ("path", "position", "size_in_bytes", "magic", "batch", "_segment")

    def __init__(self, segment: "Segment", batch):
        self.path = segment.path
        self.position = batch.position
        self.size_in_bytes = batch.size_in_bytes
        self.magic = batch.magic
        self.batch = batch
        self._segment = segment

    def __getattr__(self, name):
        return getattr(self.batch, name)

    def raw(self) -> memoryview:
        """The batch's bytes: a read-only view of the file's map (no copy; not after close())."""
        return self._segment._buf[self.position:self.position + self.size_in_bytes]

    def __iter__(self) -> Iterator:
        yield from self.batch

    def records(self) -> list:
        return list(self)

    def __repr__(self):
        return (f"FileBatch(path={self.path!r}, position={self.position}, "
                f"size_in_bytes={self.size_in_bytes}, magic={self.magic}, batch={self.batch!r})")


class SkippedBatch(NamedTuple):
    """What :meth:`SegmentBatchIterator.skipping` yields for a batch it could not read.

    ``stopped`` False: only the header was bad (framing says where the next batch
    starts, and reading went on there); True: framing itself ended here (a size
    field below 14), nothing after ``position`` was read.
    """
    position: int
    error: DecodeError
    stopped: bool


class TrailingBytes(NamedTuple):
    """Bytes after the last whole batch (a torn write, or not a batch at all)."""
    position: int
    size: int


class SkippedRegion(NamedTuple):
    """A corrupt region a resync skipped: ``[start, end)``; ``found`` False when no
    plausible batch follows (``end`` is then the end of the file)."""
    start: int
    end: int
    found: bool


def file_options(options: Optional[ReadOptions] = None, **fields) -> ReadOptions:
    """``options`` (default: :data:`FILE_READ_OPTIONS`) with ``fields`` that are not None
    on top, and always Kafka's file framing (``file_rules``)."""
    base = FILE_READ_OPTIONS if options is None else options
    changes = {k: v for k, v in fields.items() if v is not None}
    if not base.file_rules:
        changes["file_rules"] = True
    return base.replace(**changes) if changes else base


class SegmentBatchIterator:
    """Batches of a segment from ``position`` to ``end``.

    A framing error (size < 14) ends the iteration with ``CorruptBatchError``.
    A batch whose header cannot be parsed (v2 smaller than 61 bytes, legacy
    magic < 0 ...) raises its error but the iterator stays usable: framing
    already told where the next batch starts, so ``next()`` goes on from there
    (the core's :meth:`kafkarec.BatchIterator.resume`).
    """

    def __init__(self, segment: "Segment", position: int, end: int, *, options: ReadOptions,
                 release: bool):
        self.segment = segment
        self.end = end
        self.trailing_bytes = 0
        self.exhausted = False
        self.options = options
        self._release = release and _CAN_RELEASE and segment._mmap is not None
        self._released = position - position % _PAGE
        self._core = kafkarec.iter_batches(segment._data, options, start=position, end=end)

    @property
    def position(self) -> int:
        """Where the next batch starts (where reading stopped, once exhausted)."""
        return self._core.position

    def __iter__(self):
        return self

    def __next__(self) -> FileBatch:
        if self.exhausted:
            raise StopIteration
        try:
            b = next(self._core)
        except StopIteration:
            return self._stop()
        except DecodeError as e:
            return self._after_error(e)
        pos = b.position
        if self._release and pos - self._released >= RELEASE_STEP:
            self._release_behind(pos)
        return FileBatch(self.segment, b)

    def skipping(self) -> Iterator["FileBatch | SkippedBatch"]:
        """The batches, and a :class:`SkippedBatch` for each one whose header could not be
        read (reading goes on after it); ends after a ``stopped`` one.  The one loop
        "continue past a bad header" of every reader of segments (dump, verify, stats)."""
        while True:
            try:
                fb = next(self)
            except StopIteration:
                return
            except DecodeError as e:
                yield SkippedBatch(e.position, e, self.exhausted)
                if self.exhausted:
                    return
                continue
            yield fb

    def _after_error(self, err: DecodeError):
        """What the core's error means for a file (the core reports why it stopped)."""
        core = self._core
        if core.stop_reason == "truncated":
            return self._stop()        # strict=True objects to a short tail; Kafka ignores it
        if core.resumable:
            core.resume()              # only the header was bad: go on after this batch
            raise err
        self.exhausted = True
        raise CorruptBatchError(f"{err.reason} in file {self.segment.path}.", err.position) from None

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


class SegmentScan:
    """One pass over a segment: its batches, what could not be read and, with ``resync``,
    the corrupt regions skipped to the next plausible batch header.

    Yields :class:`FileBatch`, :class:`SkippedBatch`, :class:`TrailingBytes` and (with
    ``resync``) :class:`SkippedRegion`.  Without ``resync`` reading ends where framing
    ends.  With it, reading goes on at the next plausible batch
    (:meth:`Segment.find_next_batch`, offsets after the last good batch and within the
    segment's 32-bit relative range) after a framing error or a torn tail of at least
    17 bytes; and the size of a batch with a bad CRC or an unknown magic is trusted only
    if a plausible batch (or the end of the file) follows it.
    """

    def __init__(self, segment: "Segment", *, resync: bool = False, prev_last_offset: Optional[int] = None,
                 options: Optional[ReadOptions] = None, release: bool = True):
        self.segment = segment
        self.resync = resync
        #: The last offset of the last batch whose header and CRC were good.
        self.last_offset = prev_last_offset
        #: Where reading is (the end of the last batch yielded).
        self.position = 0
        self._opts = dict(options=SCAN_READ_OPTIONS if options is None else file_options(options),
                          release=release)

    def offset_bounds(self) -> tuple:
        """Offsets the next good batch can have: past the last good one, inside the segment."""
        base = self.segment.base_offset
        lo = self.last_offset + 1 if self.last_offset is not None else base
        hi = None if base is None else base + 2**31 - 1
        return lo, hi

    def __iter__(self):
        pos: Optional[int] = 0
        while pos is not None:
            pos = yield from self._from(pos)

    def _from(self, pos: int):
        seg = self.segment
        it = seg.batches(pos, **self._opts)
        for item in it.skipping():
            if isinstance(item, SkippedBatch):
                yield item
                if item.stopped and self.resync:
                    return (yield from self._skip(item.position))
                continue
            self.position = it.position
            yield item
            if item.magic > 2 or not item.crc_valid:
                nxt = item.position + item.size_in_bytes
                if self.resync and nxt != seg.size and not seg.plausible_at(nxt, *self.offset_bounds()):
                    return (yield from self._skip(item.position))
            else:
                last = item.last_offset
                self.last_offset = last if self.last_offset is None else max(self.last_offset, last)
        if it.trailing_bytes:
            yield TrailingBytes(it.position, it.trailing_bytes)
            if self.resync and it.trailing_bytes >= HEADER_SIZE_UP_TO_MAGIC:
                return (yield from self._skip(it.position))
        return None

    def _skip(self, bad: int):
        lo, hi = self.offset_bounds()
        nxt = self.segment.find_next_batch(bad + 1, min_offset=lo, max_offset=hi)
        if nxt < 0:
            yield SkippedRegion(bad, self.segment.size, False)
            return None
        yield SkippedRegion(bad, nxt, True)
        return nxt


def base_offset_from_name(path: str) -> Optional[int]:
    """The base offset a segment file is named after (``00000000000000000042.log`` -> 42), or None."""
    try:
        return names.offset_from_file_name(path)
    except names.SideFileError:
        return None


class Segment:
    """A memory-mapped, read-only segment file (``.log`` or KRaft ``.checkpoint``)."""

    def __init__(self, path: str, *, base_offset: Optional[int] = None):
        self.path = os.fspath(path)
        named = base_offset_from_name(self.path) if base_offset is None else base_offset
        #: Where ``base_offset`` came from: "name" (Kafka's rule), "given", or
        #: "first batch" for a renamed or backed-up file (``backup.log``).
        self.base_offset_source = "given" if base_offset is not None else "name"
        self.base_offset = named
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
        # What the core reads.  Not self._buf: the core holds a buffer export,
        # and an exported memoryview could not be released by close().
        self._data = self._mmap if self._mmap is not None else b""
        if self.base_offset is None:
            self.base_offset = self._first_batch_offset()
            self.base_offset_source = "first batch" if self.base_offset is not None else "none"

    def _first_batch_offset(self) -> Optional[int]:
        """The first batch's base offset (the core's reading of it), or None if none can be read."""
        try:
            fb = self.batch_at(0, verify_crc=False)
            return None if fb is None else fb.batch.base_offset
        except KafkaRecError:
            return None

    # --- life cycle -------------------------------------------------------
    def close(self) -> None:
        buf, self._buf = self._buf, memoryview(b"")
        buf.release()
        self._data = b""
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
    def batches(self, start: int = 0, end: Optional[int] = None, *, options: Optional[ReadOptions] = None,
                verify_crc: Optional[bool] = None, strict: Optional[bool] = None,
                max_decompressed_bytes: Optional[int] = None,
                release: bool = True) -> SegmentBatchIterator:
        """Iterate the batches in ``[start, end)`` (end defaults to the file size), read with
        ``options`` (a :class:`kafkarec.ReadOptions`; CRCs checked by default) or its fields as
        keywords, always with Kafka's file framing."""
        if not 0 <= start <= self.size:
            raise ValueError(f"position {start} is outside {self.path} ({self.size} bytes)")
        end = self.size if end is None else max(start, min(end, self.size))
        opts = file_options(options, verify_crc=verify_crc, strict=strict,
                            max_decompressed_bytes=max_decompressed_bytes)
        return SegmentBatchIterator(self, start, end, options=opts, release=release)

    def __iter__(self):
        return self.batches()

    def scan(self, *, resync: bool = False, prev_last_offset: Optional[int] = None,
             options: Optional[ReadOptions] = None, release: bool = True) -> SegmentScan:
        """One pass over the whole file that goes on past what it cannot read (:class:`SegmentScan`);
        ``options`` default to CRCs not checked while framing (the scan's readers ask ``crc_valid``)."""
        return SegmentScan(self, resync=resync, prev_last_offset=prev_last_offset, options=options,
                           release=release)

    def records(self, **kw):
        for b in self.batches(**kw):
            yield from b

    def frame_at(self, pos: int) -> tuple:
        """``(offset, size field, magic)``: the first 17 bytes of a batch at ``pos``."""
        return _FRAME.unpack_from(self._buf, pos)

    def batch_at(self, position: int, *, limit: Optional[int] = None, verify_crc: bool = False) -> Optional[FileBatch]:
        """The batch starting at ``position`` (within ``limit`` bytes), or None if none fits."""
        end = self.size if limit is None else min(self.size, position + limit)
        it = self.batches(position, end, verify_crc=verify_crc, release=False)
        return next(it, None)

    def plausible_at(self, pos: int, min_offset: Optional[int] = None,
                     max_offset: Optional[int] = None) -> bool:
        """Whether a batch that looks real starts at ``pos``: the core's
        :func:`kafkarec._core.is_plausible_batch` (frames, passes the strict header
        checks, CRC matches), with its offset within ``[min_offset, max_offset]`` when given."""
        if pos < 0 or pos + HEADER_SIZE_UP_TO_MAGIC > self.size:
            return False
        offset = self.frame_at(pos)[0]
        if (min_offset is not None and offset < min_offset) or (max_offset is not None and offset > max_offset):
            return False
        return is_plausible_batch(self._data, pos)

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


# A size field of at least 14 (big-endian, positive) followed by 4 bytes and a
# magic byte 0..2: the cheap pre-filter before the CRC check in find_next_batch.
_CANDIDATE = re.compile(
    rb"(?s)(?=.{8}(?:[\x01-\x7f].{3}|\x00[\x01-\xff].{2}|\x00\x00[\x01-\xff].|\x00\x00\x00[\x0e-\xff])"
    rb".{4}[\x00-\x02])")
