"""Local segment files read in slices: cut where a batch starts, read through memory maps.

A read of local files (found by :func:`kafkarec.log.directory.find_segment_files`) is made of
:class:`Slice` s, byte ranges of one file.  A file starts as one slice (:func:`slices`); a
planner cuts a slice larger than it wants (:func:`split`) where a batch starts, found by
walking batch headers - the data in between is not read - and reads a slice in consecutive
windows of at most :data:`READ_WINDOW_BYTES` (:func:`windows`), each memory-mapped in turn
(:func:`iter_pieces`).  Slices cover each file completely and do not overlap, so no byte is
read twice or left out: what is not a whole batch (a framing error, a cut-off batch at the
end) stays inside a slice and is reported by the reader.

A slice knows the first offset a consumer may be given from it (``min_offset``: the
partition's log start offset, :func:`log_starts`, when ``deleteRecords`` moved it into the
file); a file wholly below it is not read.

Each file's batches are walked at most once per plan: the walk's ``(position, size)`` spans
are kept in a dict the caller passes along (``spans``), which the ``read_committed`` walk
(:func:`aborted_batches`) fills too.  Listings on any storage (object stores, tiered
copies, stitched histories) are :mod:`kafkarec.log.layout`'s and are read in ranges
(:mod:`kafkarec.log.selection`); this module is what a memory-mapped local read adds.
"""
from __future__ import annotations

import mmap
import os
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from kafkarec.errors import DecodeError
from kafkarec.log import committed
from kafkarec.log.directory import SegmentFile
from kafkarec.log.segment import Segment, SegmentOffsets, segment_offsets
from kafkarec.log.storage import HEADER_WALK_BYTES, Piece, count_read, count_window_map

__all__ = ["Slice", "READ_WINDOW_BYTES", "slices", "split", "windows", "iter_windows", "partition_key",
           "aborted_batches", "iter_pieces", "release", "log_starts"]

# A task maps at most this much of a file at once: a larger slice is read as consecutive
# slices of the same task (cut at batch starts), each mapped and unmapped in turn, so an
# executor's memory stays bounded whatever maxPartitionBytes is.
READ_WINDOW_BYTES = 64 << 20

#: a window's size as a read asks for it: bytes, or a function of the bytes the slice being cut has
#: left from the window's start (a pool's read near its end: kafkarec.scan._read.TailWindows)
WindowSize = Union[int, Callable[[int], int]]


def _size_at(max_bytes: WindowSize, left: int) -> int:
    """The bytes of a window that starts with ``left`` bytes of its slice from there on."""
    return max_bytes(left) if callable(max_bytes) else max_bytes


class Slice(NamedTuple):
    """Bytes ``[start, end)`` of one local file."""
    path: str
    start: int
    end: int
    topic: Optional[str]
    partition: Optional[int]
    # (position, size) of batches left out of this slice (read_committed: aborted
    # transactions), sorted, inside [start, end).
    skip: tuple = ()
    min_offset: Optional[int] = None   # records below it are below the log start offset
    # the offsets the file may hold (kafkarec.log.segment.SegmentOffsets; None: its name has none)
    offsets: Optional[SegmentOffsets] = None
    # framed as a strict read frames (a batch header the format forbids ends the framing there):
    # windows are cut only where the read itself would go on
    strict: bool = False
    # the maps a registered source keeps open between its reads (:meth:`kept_in`: a
    # kafkarec.log.window_maps.MapUse, the read's), or None: mapped and closed as the read goes
    maps: object = None

    # --- a piece of a read (kafkarec.scan._plan.SegmentPiece) ------------------------------------
    @property
    def storage(self):
        """The storage holding it: the local file system's (:func:`kafkarec.log.storage.resolve`)."""
        from kafkarec.log.storage import resolve
        return resolve(self.path, tiered=False)[0]

    @property
    def range(self):
        """It as a segment range (:class:`kafkarec.log.selection.SegmentRange`: its file, bytes and
        the offsets kept), as a listed piece is one."""
        from kafkarec.log.layout import SegmentRef
        from kafkarec.log.names import parse_segment_name
        from kafkarec.log.selection import SegmentRange
        name = parse_segment_name(self.path)
        seg = SegmentRef(self.path, os.path.getsize(self.path), 0 if name is None else name.base_offset,
                         None, None, None, None, None)
        return SegmentRange(self.topic, self.partition, seg, self.start, self.end, self.min_offset,
                            offsets=self.offsets)

    @property
    def share(self) -> int:
        """Which of a config's offset ranges it reads: a local read has none (0)."""
        return 0

    @property
    def where(self) -> str:
        """What errors name: the file's path."""
        return self.path

    @property
    def size(self) -> int:
        """The bytes it reads."""
        return self.end - self.start

    def compressed(self) -> bool:
        """Whether its first batch is compressed (:func:`kafkarec._core.stored_codec` of its first
        bytes; False when they cannot be read)."""
        from kafkarec import _core
        try:
            with open(self.path, "rb") as fh:
                head = os.pread(fh.fileno(), _core.STORED_CODEC_BYTES, self.start)
        except OSError:
            return False
        return _core.stored_codec(head) > 0

    @property
    def kept(self) -> tuple:
        """``(lo, hi)`` of the offsets a consumer is given from it: from the log start on."""
        return (self.min_offset, None)

    @property
    def log_key(self) -> str:
        """The log its offsets grow in, which the offset-order rule is kept per: its folder."""
        return os.path.dirname(self.path)

    def windows(self, max_bytes: Optional[int] = None) -> Iterator["Slice"]:
        """The slices a read maps one after the other, cut as the read goes (:func:`iter_windows`;
        ``max_bytes``: its window size, None: :data:`READ_WINDOW_BYTES`)."""
        return iter_windows(self, max_bytes=max_bytes)

    def parts(self, split=None) -> tuple:
        """A window is read as it is, when its turn comes (``split`` cuts listed ranges only)."""
        return (self,)

    def windowed(self, split=None) -> bool:
        """Its :meth:`windows` are at most about :data:`READ_WINDOW_BYTES` each (cut at batch starts)."""
        return True

    def read_ahead(self, max_bytes: int) -> bool:
        """A map costs no round trip: never read ahead of its turn (nor mapped before it)."""
        return False

    def open(self) -> "_Mapped":
        """Its buffers (:func:`iter_pieces`), the map held until the returned reader is closed."""
        return _Mapped(iter_pieces(self))

    def kept_in(self, use) -> "Slice":
        """It mapped through ``use`` (a :class:`kafkarec.log.window_maps.MapUse`): its windows'
        maps kept open for the next read of the source."""
        return self._replace(maps=use)

    def release(self, piece) -> None:
        """A buffer of it decoded: its view of the map let go (:func:`release`), so the map can close."""
        release(piece.data)


def slices(files: List[SegmentFile], aborted: Optional[dict] = None,
           log_start: Optional[dict] = None, *, strict: bool = False) -> List[Slice]:
    """Each file as one slice, with the spans of ``aborted`` (:func:`aborted_batches`) in it
    and the log start offset of ``log_start`` (:func:`log_starts`) when it is inside the file;
    a file whose partition folder's next file begins at or below its log start is left out.
    ``strict``: the read frames strictly (:attr:`Slice.strict`)."""
    out = []
    for i, f in enumerate(files):
        folder = os.path.dirname(f.path)
        start = (log_start or {}).get(folder)
        after = files[i + 1] if i + 1 < len(files) else None
        # the next file of the same folder: copies of a partition elsewhere (allowDuplicatePartitions)
        # are logs of their own
        if (start is not None and after is not None and os.path.dirname(after.path) == folder
                and after.base_offset is not None and after.base_offset <= start):
            continue
        below = start is not None and f.base_offset is not None and start > f.base_offset
        # a broker's own segments (tiered copies, <offset>-<uuid>.log, may overlap)
        same_log = (after is not None and os.path.dirname(after.path) == folder
                    and f.segment_id is None and after.segment_id is None)
        held = segment_offsets(f.base_offset, after.base_offset if same_log else None,
                               indexed=f.path.endswith(".log") and os.path.exists(f.path[:-4] + ".index"))
        out.append(Slice(f.path, 0, f.size, f.topic, f.partition, tuple((aborted or {}).get(f.path, ())),
                         start if below else None, held, strict))
    return out


def log_starts(files: List[SegmentFile]) -> Dict[str, int]:
    """``{partition folder: log start offset}`` of the partitions of ``files`` (in offset
    order), by :func:`kafkarec.log.selection.log_start_offset` from their first file and
    their log directory's ``log-start-offset-checkpoint`` (each read once)."""
    from kafkarec.log import layout, selection, storage
    checkpoints: dict = {}
    out: Dict[str, int] = {}
    for f in files:
        folder = os.path.dirname(f.path)
        if f.topic is None or f.base_offset is None or f.segment_id is not None or folder in out:
            continue
        log_dir = os.path.dirname(os.path.abspath(folder))
        if log_dir not in checkpoints:
            checkpoints[log_dir] = layout.log_start_checkpoint(storage.resolve(log_dir)[0], log_dir)
        entries, problem = checkpoints[log_dir]
        out[folder] = selection.log_start_offset(f.topic, f.partition, f.base_offset,
                                                 entries.get((f.topic, f.partition)), problem)
    return out


def partition_key(sl: Slice):
    """The topic-partition of a slice (its folder when the folder name has none)."""
    return (sl.topic, sl.partition) if sl.topic is not None else (None, os.path.dirname(sl.path))


def _batches(path: str, size: Optional[int] = None):
    """The whole batches of a file (of its first ``size`` bytes) as found (headers parsed,
    records not), in order, up to the first the reader (:func:`kafkarec.iter_batches`) would
    not frame: a decode error, or a magic outside 0..2, which
    :class:`kafkarec.log.segment.Segment` frames as Kafka's FileLogInputStream does.  The
    reader reports what is left.  A file deleted since it was listed has none here: its read
    reports it (:func:`iter_pieces`)."""
    try:
        seg = Segment(path)
    except FileNotFoundError:
        return
    with seg:
        try:
            for batch in seg.batches(0, size, verify_crc=False):
                if not 0 <= batch.magic <= 2:
                    return
                yield batch
        except DecodeError:
            return


def _framed_spans(path: str, strict: bool = False) -> list:
    """``(position, size)`` of the batches :func:`_batches` gives for the whole file, found by the
    core's one header walk (:meth:`kafkarec.BatchIterator.spans`: no object per batch); ``strict``:
    up to the first batch a strict read does not frame."""
    from kafkarec.log.segment import file_options
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if not size:
            return []
        return _mapped_walk(fh.fileno(), path, file_options(verify_crc=False, strict=strict), 0, size, 0)[0]


def _mapped_walk(fd: int, path: str, options, lo: int, hi: int, at: int, until: int = -1):
    """``(spans, stop)``: the walk of the batch headers of bytes ``[lo, hi)`` of the open file ``fd``
    (``path``) from file position ``at``, before a batch at ``until`` or later when given
    (:meth:`kafkarec.BatchIterator.spans`); ``spans``, its batches' ``(position, size)``, ``stop``,
    where and why it stopped: ``(position, exhausted, stop_reason, stop_error, next_batch_size)``
    (file positions).  Those bytes alone are mapped, and unmapped before it returns; the headers
    are counted as walked."""
    import kafkarec
    mm = mmap.mmap(fd, hi - lo, access=mmap.ACCESS_READ, offset=lo)
    try:
        # (positions in the map, as a walk of the whole file from its first byte)
        walk = kafkarec.iter_batches(mm, options, start=at - lo)
        spans = [(lo + pos, n) for pos, n in walk.spans(until - lo if until >= 0 else -1)]
        stop = (lo + walk.position, walk.exhausted, walk.stop_reason, walk.stop_error, walk.next_batch_size)
        del walk
    finally:
        try:
            mm.close()
        except BufferError:     # an error's traceback holds the iterator: the collector closes it
            pass
    # a walk of headers: each batch's header read (counted as the storage layer counts walks)
    count_read(sum(min(n, HEADER_WALK_BYTES) for _, n in spans), path, walk=True, mapped=True)
    return spans, stop


def _recorded(f: SegmentFile, spans: Optional[dict]):
    """:func:`_batches` of ``f``, noting each batch's span in ``spans``."""
    out = spans.setdefault(f.path, []) if spans is not None else None
    walked = 0
    try:
        for batch in _batches(f.path, f.size):
            if out is not None:
                out.append((batch.position, batch.size_in_bytes))
            # a walk of headers; the transaction rule reads a transactional batch whole (its CRC, its marker)
            walked += batch.size_in_bytes if batch.is_transactional else min(batch.size_in_bytes, HEADER_WALK_BYTES)
            yield batch
    finally:
        count_read(walked, f.path, walk=True, mapped=True)


def _spans(sl: Slice, spans: Optional[dict]) -> list:
    """``(position, size)`` of the whole batches of ``sl``'s file, framed as its read frames them
    (:attr:`Slice.strict`), walked once per plan (kept in ``spans``)."""
    if spans is not None and sl.path in spans:
        return spans[sl.path]
    found = _framed_spans(sl.path, sl.strict)
    if spans is not None:
        spans[sl.path] = found
    return found


def split(sl: Slice, max_bytes: WindowSize, spans: Optional[dict] = None) -> List[Slice]:
    """``sl`` cut where a batch starts, about ``max_bytes`` apart (one slice from where batches
    can no longer be framed), each keeping the skipped spans inside it."""
    cuts = [sl.start] + _cuts(_spans(sl, spans), sl.start, sl.end, max_bytes, sl.start) + [sl.end]
    return [sl._replace(start=a, end=b, skip=tuple((p, n) for p, n in sl.skip if a <= p < b))
            for a, b in zip(cuts, cuts[1:])]


def _cuts(spans, start: int, end: int, max_bytes: WindowSize, last: int) -> List[int]:
    """The batch starts of ``spans`` (``(position, size)`` in file order) inside ``[start, end)``
    where a window begun at ``last`` (then at each such start) would pass ``max_bytes`` (its size
    for the bytes left from there to ``end``): the one rule of :func:`split` and
    :func:`_walked_cuts`."""
    out = []
    limit = _size_at(max_bytes, end - last)
    for pos, size in spans:
        if start <= pos < end and pos > last and pos + size - last > limit:
            out.append(pos)
            last = pos
            limit = _size_at(max_bytes, end - last)
    return out


def windows(sl: Slice, spans: Optional[dict] = None) -> List[Slice]:
    """``sl`` as the slices a task maps one after the other, of about :data:`READ_WINDOW_BYTES`
    (itself when it is smaller): :func:`iter_windows`' whole."""
    return list(iter_windows(sl, spans))


def iter_windows(sl: Slice, spans: Optional[dict] = None, max_bytes: Optional[WindowSize] = None) -> Iterator[Slice]:
    """:func:`windows` as they are found: a file larger than a window is walked a window at a time
    (:func:`_walked_cuts`), so its first window decodes (a ``LIMIT``'s rows come) while the rest of
    a broker's 1 GiB segment is still unwalked (issue 80: ``LIMIT 5`` over one 435 MiB segment
    walked all of it first, ~10 ms, against ~1 ms over 64 MiB segments).  With the plan's ``spans``
    the cuts are those of its one walk.  A slice read through a source's kept maps
    (:attr:`Slice.maps`) takes the cuts the source kept of its file when it did not change, and
    gives them to the source once walked (:meth:`kafkarec.log.window_maps.MapUse.kept_cuts`): a
    registered table's next query walks no header.  A file deleted since it was listed is one
    slice, which its read reports (:func:`iter_pieces`).  ``max_bytes``: the windows' size (None:
    :data:`READ_WINDOW_BYTES`), or a function of the bytes left from a window's start to the
    slice's end (a pool's read cuts its last windows smaller as the read nears its end, so that its
    threads end together: :class:`kafkarec.scan._read.TailWindows`)."""
    size = READ_WINDOW_BYTES if max_bytes is None else max_bytes
    if sl.end - sl.start <= _size_at(size, sl.end - sl.start):
        yield sl
        return
    if spans is not None:
        try:
            found = split(sl, size, spans)
        except FileNotFoundError:
            found = [sl]
        yield from found
        return
    shape = (sl.strict, sl.start, sl.end, size)
    try:
        stamp, kept = sl.maps.kept_cuts(sl.path, shape) if sl.maps is not None else (None, None)
    except FileNotFoundError:
        yield sl
        return
    if kept is not None:
        yield from (_window(sl, a, b) for a, b in kept)
        return
    cuts = []
    try:
        for a, b in _walked_cuts(sl.path, sl.strict, sl.start, sl.end, size):
            cuts.append((a, b))
            yield _window(sl, a, b)
    except FileNotFoundError:       # (opened at the first window: nothing handed out yet)
        yield sl
        return
    if stamp is not None:
        sl.maps.keep_cuts(sl.path, stamp, cuts)


def _window(sl: Slice, a: int, b: int) -> Slice:
    """Bytes ``[a, b)`` of ``sl``, with the skipped spans inside them."""
    return sl._replace(start=a, end=b, skip=tuple((p, n) for p, n in sl.skip if a <= p < b))


#: what a step of :func:`_walked_cuts` maps past the bytes it must walk: room for the batch that
#: ends its window (a larger one is mapped whole at the next step)
WALK_STEP_SLACK = 1 << 20


def _walked_cuts(path: str, strict: bool, start: int, end: int, max_bytes: WindowSize) -> Iterator[Tuple[int, int]]:
    """:func:`split`'s cuts ``(a, b)`` of bytes ``[start, end)`` of the file, each given as soon as
    the walk of its batch headers has passed the batch that ends it: the walk of
    :func:`_framed_spans` (framed as strictly, stopped where it stops, none past ``end``) in steps of
    about ``max_bytes`` (:meth:`kafkarec.BatchIterator.spans`' ``until``).  Each step maps only the
    bytes it walks, within the file's size as ``fstat`` finds it then, and unmaps them before the
    step's cuts are given: nothing stays mapped while the caller reads the windows (a file cut
    shorter under a map kills the reader with SIGBUS when the map is touched past the new end; a
    file cut shorter since is walked as it is now, its read reports the change).  The file is
    opened when the first cut is asked for."""
    from kafkarec.errors import TruncatedError
    from kafkarec.log.segment import file_options
    options = file_options(verify_crc=False, strict=strict)
    last = start        # where the window being cut starts
    at = 0              # where the walk is: the next batch's start
    need = 0            # the bytes the batch at `at` needs mapped, when one step's map cut it
    with open(path, "rb") as fh:
        fd = fh.fileno()
        while True:
            size = os.fstat(fd).st_size
            if at >= size or at >= end:
                break
            until = max(last + _size_at(max_bytes, end - last) + 1, at + 1)
            lo = at - at % mmap.ALLOCATIONGRANULARITY
            hi = min(size, max(until, at + need) + WALK_STEP_SLACK)
            found, (after, exhausted, reason, error, wanted) = _mapped_walk(fd, path, options, lo, hi, at, until)
            for pos in _cuts(found, start, end, max_bytes, last):
                yield (last, pos)
                last = pos
            if found:
                at = found[-1][0] + found[-1][1]
            need = 0
            if not exhausted:
                # on where spans() stopped for `until`, right after the last batch it gave; else it
                # passed over a magic outside 0..2, where the walk of the whole file stops too
                if after == at and after >= until:
                    continue
                break
            if hi < size and after == at and (reason in ("end", "truncated") or isinstance(error, TruncatedError)):
                need = max(wanted, HEADER_WALK_BYTES)     # the map's end, not the file's: map on
                continue
            break
    yield (last, end)


def aborted_batches(files: List[SegmentFile], spans: Optional[dict] = None) -> Dict[str, list]:
    """``{path: [(position, size), ...]}`` of the batches a ``read_committed`` consumer leaves
    out (:func:`kafkarec.log.committed.aborted_spans`), judged over each topic-partition's
    whole log: ``files`` (from :func:`kafkarec.log.directory.find_segment_files`) are in
    offset order and a transaction may end in a later file.  ``spans`` (a dict) receives each
    file's batch spans, so cutting does not walk them again."""
    by_partition: dict = {}
    for f in files:
        by_partition.setdefault((f.topic, f.partition, os.path.dirname(f.path)
                                 if f.topic is None else ""), []).append(f)
    out: dict = {}
    for group in by_partition.values():
        out.update(committed.aborted_spans(batch for f in group for batch in _recorded(f, spans)))
    return out


def release(view) -> None:
    """Release a memoryview of a map (still exported views leave it to the garbage collector)."""
    try:
        view.release()
    except BufferError:
        pass


def _map_window(fileno: int, start: int, end: int, path: str = ""):
    """``(map, its first byte's file position)``: bytes ``[start, end)`` of the file mapped read-only,
    from the page holding ``start`` (the rest of the file not mapped: a window of a large file maps
    only itself).  Faulted in as the decode reads it, not populated: ``MAP_POPULATE`` saves a thread
    2-3% of its CPU but holds the process's map lock while it fills 64 MiB of page tables, and the
    pool's other threads' ``mmap`` and ``munmap`` wait for it (whole rows on 2 threads 1.49x-1.62x the
    one-thread rate populated, 1.77x-1.78x faulted; docs/performance.md)."""
    at = start - start % mmap.ALLOCATIONGRANULARITY
    mm = mmap.mmap(fileno, end - at, access=mmap.ACCESS_READ, offset=at)
    count_window_map(end - at, path)
    return mm, at


class _Mapped:
    """A slice's map held open (:meth:`Slice.open`): iterating gives its buffers (an error first when
    the file shrank, then the one piece) without walking past the piece, which would close the map;
    :meth:`close` closes it."""
    __slots__ = ("_pieces",)

    def __init__(self, pieces: Iterator):
        self._pieces = pieces

    def __iter__(self) -> Iterator:
        for piece in self._pieces:
            yield piece
            if not isinstance(piece, dict):
                return

    def close(self) -> None:
        self._pieces.close()


def _shrank(sl: Slice, size: Optional[int]) -> dict:
    """The error of a file that shrank after the read was planned (:func:`iter_pieces`), or that
    was deleted (``size`` None: a broker's retention, a cleaner's swap; nothing of it is read)."""
    if size is None:
        return {"position": sl.start, "base_offset": None, "error": "FileChangedError",
                "reason": f"the file was deleted after the read was planned ({sl.end} bytes then)",
                "message": f"{sl.path}: the file was deleted after the read was planned"}
    return {"position": size, "base_offset": None, "error": "FileChangedError",
            "reason": f"the file is {size} bytes now, {sl.end} when the read was planned",
            "message": f"{sl.path}: the file shrank from {sl.end} to {size} bytes "
                       f"after the read was planned"}


def iter_pieces(sl: Slice) -> Iterator:
    """The pieces of a slice: itself, memory-mapped (:class:`kafkarec.log.storage.Piece`).  When
    the file shrank (or was deleted) after the read was planned, an error first (a dict: ``position``,
    ``base_offset``, ``error``, ``reason``, ``message``, as the reader's error rows) and what is
    left of the slice.  The caller releases each piece's data when done with it, so that the
    map can close.  A slice with :attr:`Slice.maps` takes its map from the maps
    its source kept open, and leaves it there (:mod:`kafkarec.log.window_maps`: the same inode, at
    least as long as the window, else mapped anew)."""
    if sl.end <= sl.start:
        return
    end = sl.end
    try:
        fh = open(sl.path, "rb")
    except FileNotFoundError:       # deleted since it was listed: reported as a file that shrank
        yield _shrank(sl, None)
        return
    with fh:
        st = os.fstat(fh.fileno())
        size = st.st_size
        if size < sl.end:
            if sl.maps is not None:
                sl.maps.shrank(st, size)
            yield _shrank(sl, size)
            if size <= sl.start:
                return
            end = size
        if sl.maps is not None and end == sl.end:
            mm, at, let_go = sl.maps.window(fh.fileno(), st, sl.start, end, sl.path, _map_window)
        else:       # (what is left of a file that shrank: mapped for this read only)
            mm, at = _map_window(fh.fileno(), sl.start, end, sl.path)
            let_go = None
        mv = memoryview(mm)
        whole = mv[sl.start - at:end - at]
        count_read(end - sl.start, sl.path)    # the window is decoded whole: every byte read
        try:
            yield Piece(sl.start, whole)
        finally:
            release(whole)
            release(mv)
            if let_go is not None:
                let_go()
            else:
                try:
                    mm.close()
                except BufferError:
                    pass
