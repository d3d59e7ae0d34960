"""Reading a read's pieces of work (:mod:`kafkarec.scan._plan` finds them): what
:class:`kafkarec.scan.LogScan` and the Spark data source share.

Every piece is decoded by :func:`kafkarec.scan.decode.decode_range` with the same parse modes
(:class:`Read`), one after the other in the consumer's thread or on the decode pool
(:mod:`kafkarec.scan._pool`),
and judged by the offset-order rule (:mod:`kafkarec.scan._order`); small listed ranges are read
ahead (:func:`ranges_read`).
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Iterator, NamedTuple, Optional

from kafkarec.errors import DecodeError, MalformedBatchError
from kafkarec.scan.decode import Errors, decode_range
from kafkarec.scan._order import OffsetOrder
from kafkarec.scan._plan import ListedRange, without_skips
from kafkarec.scan._pool import DecodePool

#: the least work a read of several pieces takes to the pool (a read past a window's bytes always
#: does), in bytes of uncompressed batches; below it the threads cost about what they save.  Four
#: partitions of 1,000-record uncompressed batches (benchmarks/bench_cores.py's shape), whole rows,
#: best of 15 at 1 thread and on 2 threads' pool: 18 MB 6.4 against 7.2 ms, 35 MB 12.0 against
#: 9.7 ms; of zstd batches: 4.2 MB 22.1 against 15.5 ms, 8.3 MB 40.5 against 24.7 ms
POOL_MIN_WORK = 24 << 20
#: the least rows a batch of a limited read's first window holds (the limit's rows when more, at
#: most the read's): a small limit builds about one batch of records, and a limit its first
#: window does not meet (bounds or the offset-order rule leaving rows out) pays for a batch every
#: thousand rows in that window only
FIRST_ROWS = 1024
#: a compressed piece's bytes weigh this many uncompressed ones (decompressed and decoded: the
#: zstd pieces above take 5 ms a MB, the uncompressed ones 0.34)
COMPRESSED_WORK = 8
#: a pool's read cuts its tail (Read.cut, TailWindows) in windows of at least a window's this share
TAIL_WINDOW_MIN_SHARE = 8


class TailWindows(NamedTuple):
    """The size of a window of a pool's read for the bytes its slice has left from the window's
    start (:func:`kafkarec.log.local.iter_windows`' ``max_bytes``): a whole window (``full``) while
    the read has more than a window for every thread but one left, then the bytes left shared among
    the threads, at least ``least``.  Guided self-scheduling: each window a thread takes is its
    share of what is left, so the windows shrink as the read nears its end and its threads end
    together.

    Of whole windows, a read ends on one thread while the others have nothing left: four
    partitions of a 64 MiB and a 4 MiB segment on two threads, one thread idle 0.6-18.8 ms of a 60
    ms read (``benchmarks/cores_timeline.py``); on 16 threads the last 64 MiB window alone takes
    longer than a thread's share of the whole 285 MiB read (``benchmarks/window_schedule.py``, a
    model).  Cut from a window a thread left, two threads read 2.6-3.7% slower: each window more
    and each walk to cut a file cost about what the balance saved (``benchmarks/bench_tail.py``).
    A NamedTuple: the shape a source's kept cuts are kept under
    (:meth:`kafkarec.log.window_maps.MapUse.kept_cuts`)."""
    after: int          # the read's bytes after the slice being cut
    threads: int
    full: int
    least: int

    def __call__(self, left: int) -> int:
        rest = left + self.after
        if rest > (self.threads - 1) * self.full:
            return self.full
        return max(self.least, -(-rest // self.threads))


def tail_cut(size: int, after: Optional[int], threads: int) -> Optional[TailWindows]:
    """How a pool's read on ``threads`` threads cuts a piece of ``size`` bytes with ``after`` bytes
    of the read after it (None: not known): a :func:`kafkarec.log.local.iter_windows` window size,
    None for whole windows.

    :class:`TailWindows` where the read has ``threads - 1`` windows or less left from somewhere in
    the piece.  A piece under its share and the least window is read whole: cutting it costs a walk
    of its file's headers (about half of what mapping the file costs, in page faults) and a window,
    and balances nothing (docs/performance.md, "The read's tail cut for its threads")."""
    from kafkarec.log import local
    full = local.READ_WINDOW_BYTES
    least = full // TAIL_WINDOW_MIN_SHARE
    if threads < 2 or after is None or after >= (threads - 1) * full:
        return None
    tail = TailWindows(after, threads, full, least)
    return None if size < tail(size) + least and size <= full else tail


def _worth_a_pool(ranges, sizes: int) -> bool:
    """Whether decoding ``ranges`` (``sizes`` bytes) is worth :data:`POOL_MIN_WORK` bytes of
    uncompressed batches, each piece weighed by its first batch (asked of the pieces only until the
    answer is known)."""
    if sizes * COMPRESSED_WORK < POOL_MIN_WORK:
        return False
    work = 0
    for rr in ranges:
        work += rr.size * (COMPRESSED_WORK if rr.compressed() else 1)
        if work >= POOL_MIN_WORK:
            return True
    return False

__all__ = ["Read", "framed", "header_count", "ranges_read", "READ_AHEAD_RANGES", "READ_AHEAD_MAX_BYTES"]


class Read:
    """One read of pieces in log order (:class:`kafkarec.scan._plan.SegmentPiece` s: local slices or
    :class:`ListedRange` s): :meth:`items` gives ``(where, item)``, items being Arrow batches of the
    log view (offset bounds applied, not yet conformed) and :class:`Errors`.  ``options``: the
    :class:`kafkarec.ReadOptions`; ``hint``: what a FAILFAST error adds (the caller's option
    names); ``columns``: the columns decoded (None: all; ``offset`` among them, the bounds are
    applied to it).  A local slice larger than a window is read in windows
    (:func:`kafkarec.log.local.windows`): cut before the first is read in the consumer's thread,
    or, decoding on a pool, each file cut by the pool's planner thread as the windows before it
    decode (:class:`kafkarec.scan._pool.DecodePool`, which asks this read :meth:`cut`,
    :meth:`decode_ahead` and :meth:`depth`).  With ``split(range, max_bytes)`` (the
    :class:`Found`'s), listed ranges are cut at offset-index positions about a window apart, by the
    pool's planner thread or up front, and decode on the pool too (None: whole ranges, in the
    consumer's thread).  ``typed(batch)`` (:meth:`kafkarec.scan.typed.TypedRows.typed_batch`): run
    on each batch the pool's threads decode, next to the record decode (the batches decoded in the
    consumer's thread are handed on as they are).  ``timestamp_unit``: the unit the core writes the
    ``timestamp`` column in (:func:`kafkarec.iter_arrow`'s; every decode of the read, the pool's and
    the consumer's, the offset-order rule's again).  ``maps``: the
    :class:`kafkarec.log.window_maps.WindowMaps` of the scan's source, whose maps the read's local
    windows take and leave open (the copy layout's: a view read maps nothing), and which closes, as
    the read ends, those it let go of (:meth:`kafkarec.log.window_maps.MapUse.done`; None: each
    map closed once decoded).  ``spare``: the scan's kept column buffers
    (:class:`kafkarec._core.SpareBuffers`: ``buffer_cache_bytes``), which every decode of the read
    builds its columns in (None: Arrow's memory pool alone).

    Offsets only grow in a partition: a batch whose offsets go back (at or below an offset read
    before it, bounds or not) or fall outside its segment's
    (:class:`kafkarec.log.segment.SegmentOffsets`) is malformed, whatever the bounds keep of
    it: FAILFAST raises :class:`kafkarec.errors.OffsetOrderError`, the other modes leave it out
    with an error (:class:`OffsetOrder`).  Under a key bound the rule sees only the kept keys'
    offsets (the core builds no other row): a batch going back is found when its kept rows go
    back past the last kept offset, not always (a known gap: a damaged log's order is
    ``kafkarec verify``'s to judge whole)."""

    def __init__(self, config, options, need_batch_columns: bool, hint: str, columns=None,
                 split: Optional[Callable] = None, typed: Optional[Callable] = None, timestamp_unit: str = "ms",
                 maps=None, spare=None):
        from kafkarec._core import meta_walk
        self.config, self.options, self.hint, self.columns = config, options, hint, columns
        self.timestamp_unit = timestamp_unit
        self.batch_columns = need_batch_columns
        self.split, self.typed = split, typed
        self.maps = maps
        self.spare = spare      # the scan's kept column buffers (kafkarec._core.SpareBuffers), or None
        self.quarantine = None
        if config.bad_records_path:
            from kafkarec.log.quarantine import Quarantine
            self.quarantine = Quarantine(config.bad_records_path, storage_options=config.storage_options)
        # control rows, where the read keeps them, are told apart by their isControl column: the
        # rule is the data batches' whatever the view (LogScan asks for that column with them)
        control_column = config.include_control and need_batch_columns and (columns is None or "isControl" in columns)
        self.order = OffsetOrder(options, config.include_control and not control_column, config.mode)
        self.max_rows = config.rows_per_batch(meta_walk(columns, batch_columns=need_batch_columns))
        # the view layout where key or value is decoded (a local window's keys and values copied
        # into the chunk's own bytes and viewed there: the batches never point into a map)
        self.value_layout = "view" if config.views and (columns is None or {"key", "value"} & set(columns)) else "copy"
        self.windows_done = 0       # windows the consumer is done with
        self.rows_handed = 0        # and the rows of their batches
        self.stopped: Optional[_Stopped] = None

    # --- decoding a piece (in the consumer's thread, or on the pool's) -----------------------
    def decode(self, piece, where, topic, partition, max_rows: Optional[int] = None):
        """The items of one piece, as :func:`kafkarec.scan.decode.decode_range` gives them, in
        batches of ``max_rows`` (None: the read's).
        badRecordsPath: what decoding keeps goes with the error it is kept for (_Kept), and is
        written when the consumer takes that error (_write_kept): in log order whichever thread
        decoded it, and only for the errors the read reports."""
        if self.quarantine is None:
            return self._decode_into(piece, where, topic, partition, None, max_rows)
        return self._decode_kept(piece, where, topic, partition, max_rows)

    def _decode_kept(self, piece, where, topic, partition, max_rows):
        kept = _Kept()
        for kind, item in self._decode_into(piece, where, topic, partition, kept, max_rows):
            if kind != "batch" and kept.entries:
                item = dict(item, **{_KEPT: kept.take()})
            yield kind, item

    def _decode_into(self, piece, where, topic, partition, keep_to, max_rows=None):
        config = self.config
        return decode_range(
            piece.data, self.options, base=piece.position,
            topic=topic, partition=partition, include_control=config.include_control,
            batch_columns=self.batch_columns,
            max_rows=self.max_rows if max_rows is None else max_rows, mode=config.mode, where=where,
            quarantine=keep_to, columns=self.columns, core_errors=config.core_errors,
            keys=config.bounds.keys, timestamp_unit=self.timestamp_unit, value_layout=self.value_layout,
            spare=self.spare)

    # --- what the pool asks (kafkarec.scan._pool.Decodes) ------------------------------------
    def cut(self, piece, after: Optional[int] = None) -> Iterator:
        """The windows of a piece as the pool's planner thread cuts them, each as it is found.
        ``after``: the read's bytes after the piece (None: not known).  Near the read's end its
        windows are cut smaller for its threads (:func:`tail_cut`): a read of whole windows ended on
        one thread while the others had nothing left (one partition of 64 MiB segments, DuckDB on two
        threads: one thread idle a median 13 ms of a 95 ms query)."""
        max_bytes = tail_cut(piece.size, after, self.config.threads)
        return (part for w in piece.windows(max_bytes) for part in w.parts(self.split))

    def decode_ahead(self, part, where, topic, partition):
        """:meth:`decode` on a pool thread, each batch typed there too (``typed``: the offset-order
        rule and the bounds then drop rows of the typed batch in the consumer's thread, before it
        settles them) and with what the offset-order rule needs of its rows
        (:meth:`OffsetOrder.seen`): found there, so that the consumer's thread does no per-row work."""
        for kind, item in self.decode(part, where, topic, partition):
            if kind != "batch":
                yield kind, item
                continue
            if self.typed is not None:
                item = self.typed(item)
            yield kind, item, self.order.seen(item)

    def depth(self) -> int:
        """The windows the pool keeps ahead: its threads' worth; with a row limit no more than the
        rows still wanted need by the rows per window so far (the rows the engine keeps are at most
        those, so the estimate errs towards fewer windows ahead, never more than the limit needs
        and one)."""
        limit = self.config.limit
        if limit is None:
            return self.config.threads
        per = max(self.rows_handed / max(self.windows_done, 1), 1.0)
        return math.ceil(max(limit - self.rows_handed, 1) / per)

    # --- the read -------------------------------------------------------------------------
    def on_pool(self, ranges) -> bool:
        """Whether ``ranges`` decode on the pool.  Every read's record loops run without the GIL
        (the meta-only walk, the scanner's loop of a strict or key-bound read of offsets and
        timestamps, the full decode's, the batch columns' rows), so a pool pays for each read of
        more than one window: a read past a window's bytes, or of several pieces (segments,
        partitions) with enough work between them (_worth_a_pool: a compressed piece holds several
        times its bytes in rows; four partitions of zstd batches, 54 MB, were read on one core).  A
        read of one window has nothing to decode side by side: no pool."""
        from kafkarec.log import local
        sizes = sum(rr.size for rr in ranges)
        return bool(self.config.threads > 1 and ranges
                    and (sizes > local.READ_WINDOW_BYTES or (len(ranges) > 1 and _worth_a_pool(ranges, sizes)))
                    # only windows reach the pool (a listed range read whole would hold all its
                    # rows, threads + 1 times over)
                    and all(rr.windowed(self.split) for rr in ranges))

    def readings(self, ranges, use=None):
        """``(window, its buffers)`` of ``ranges`` in log order, each buffer with its items decoded
        on the pool (or None: decoded as the consumer asks); ``use``: the read's use of the
        source's kept maps (:meth:`kafkarec.log.window_maps.WindowMaps.begin`)."""
        if use is not None:
            ranges = [rr.kept_in(use) for rr in ranges]
        if self.on_pool(ranges):
            if self.config.limit is None:
                return DecodePool(self, self.config.threads).readings(ranges)
            return self._limited_ahead(ranges)
        # one piece after the other, decoded as the consumer asks (local slices cut into windows,
        # listed ranges into parts, as the pool's planner cuts them, each when its turn comes: the
        # same pieces, so the same batches, but near the end of the read, whose windows the pool
        # cuts smaller for its threads (TailWindows); and no header walked or index read past what
        # the consumer takes)
        windows = (w for rr in ranges for w in rr.windows())
        if any(rr.read_ahead(READ_AHEAD_MAX_BYTES) for rr in ranges):   # (listed ranges read ahead)
            return self._as_asked(ranges_read(list(windows), self.split))
        return self._as_asked(part for rr in windows for part in _parts_read(rr, self.split))

    def _limited_ahead(self, ranges):
        """The readings of a read with a row limit: the first window in the consumer's thread, as
        one after the other reads it, so a limit met there starts no thread and reads nothing past
        that window; the windows after it on the pool, which keeps :meth:`depth` of them ahead."""
        cuts = self.cut(ranges[0])
        first = next(cuts, None)
        if first is not None:       # (a range cut into nothing has nothing to read)
            yield from self._as_asked(ranges_read([first]))
        # (the first piece's later windows cut as the pool takes them: a limit met in the first
        # walks no further)
        yield from DecodePool(self, self.config.threads).readings(itertools.chain(cuts, ranges[1:]))

    def _as_asked(self, readings):
        """``readings`` (``(window, its pieces)``) each piece decoded as the consumer asks; a read
        with a row limit decodes its first window in batches of about the limit's rows (at least
        :data:`FIRST_ROWS`, at most the read's): a ``head(5)`` builds one batch of records, not
        65,536 rows."""
        rows = None if self.config.limit is None else min(self.max_rows, max(self.config.limit, FIRST_ROWS))
        for rr, pieces in readings:
            yield rr, self._pieces_asked(rr, pieces, rows)
            rows = None

    def _pieces_asked(self, rr, pieces, rows: Optional[int]):
        """``(piece, None)`` (decoded by the consumer when it takes it), or with ``rows`` the
        piece's items decoded in batches of that many rows, as the consumer takes them."""
        for part in without_skips(rr, pieces):
            yield part, (None if rows is None or isinstance(part, dict) else
                         self.decode(part, rr.where, rr.topic, rr.partition, rows))

    def items(self, ranges):
        """``(where, item)`` for each of ``ranges`` read in log order (see the class).

        A strict read frames a segment up to the first batch header the format forbids and reports
        the rest as not decoded, as reading the segment in one piece does: the pieces of the same
        segment after it (a listed range's parts, cut at offset-index positions, where framing as
        Kafka does would go on; the pieces around a readCommitted skip) are folded into that report
        (_Stopped), not decoded."""
        use = None if self.maps is None else self.maps.begin()
        read = self.readings(ranges, use)
        try:
            for rr, pieces in read:
                for piece, ready in pieces:
                    stopped = self.stopped
                    if stopped is not None:
                        if stopped.where == rr.where and not isinstance(piece, dict):
                            stopped.fold(piece)
                            rr.release(piece)
                            continue
                        yield stopped.where, stopped.report(self.quarantine)
                        self.stopped = None
                    if isinstance(piece, dict):     # the local file shrank after the read was planned
                        yield rr.where, Errors([piece], rr.topic, rr.partition)
                        continue
                    yield from self._piece_items(rr, piece, ready)
                self.windows_done += 1
            if self.stopped is not None:
                yield self.stopped.where, self.stopped.report(self.quarantine)
        finally:
            read.close()        # a consumer gone: the threads stop, the maps close (or are let go)
            if use is not None:     # the kept maps this read let go of closed
                use.done(rr.path for rr in ranges)

    def _piece_items(self, rr, piece, ready):
        """``(where, item)`` of one piece of ``rr``: decoded (or ``ready``, decoded on the pool),
        judged by the offset-order rule, the bounds applied, its errors reported after the batches
        before them; a strict read's framing stop held (:attr:`stopped`)."""
        from kafkarec.log.selection import filter_offsets
        where, topic, partition = rr.where, rr.topic, rr.partition
        lo, hi = rr.kept
        errs: list = []
        try:
            items = self.decode(piece, where, topic, partition) if ready is None else ready
            checked = self.order.check(items, piece, rr.offsets, rr.log_key, where, topic, partition,
                                       lambda cut: self.decode(cut, where, topic, partition))
            for kind, item in checked:
                if kind != "batch":
                    if self.config.strict and item.get("not_decoded"):
                        self.stopped = _Stopped(item, where, topic, partition)
                        continue        # (framing's stop: the piece's last item)
                    errs.append(_write_kept(self.quarantine, item))
                    continue
                if lo is not None or hi is not None:
                    item = filter_offsets(item, lo, hi)
                    if not item.num_rows:
                        continue
                if errs:
                    yield where, Errors(errs, topic, partition)
                    errs = []
                self.rows_handed += item.num_rows
                yield where, item
        except MalformedBatchError as exc:
            raise type(exc)(f"{exc} {self.hint}") from None
        except DecodeError as exc:      # core_errors: positions are that file's
            exc.file = where
            raise
        finally:
            rr.release(piece)       # (a map's view: so that the map can close)
        if errs:
            yield where, Errors(errs, topic, partition)


def framed(options, rr):
    """The batches of one piece (a :class:`kafkarec.scan._plan.SegmentPiece`: a listed range or a
    local slice) framed one by one (:class:`kafkarec.log.storage.BatchWalk`, with the log files' rules:
    :func:`kafkarec.log.segment.file_options`), the same pieces and skips as :func:`decoded`
    walks: each batch holding an offset of the range, then, if framing failed (or a local file
    shrank since it was planned), the :class:`kafkarec.DecodeError` that stopped it (nothing
    after it is read)."""
    from kafkarec.log.segment import file_options
    from kafkarec.log.storage import BatchWalk
    options = file_options(options)
    for part, pieces in ranges_read([rr]):
        lo, hi = part.kept
        for piece in without_skips(part, pieces):
            if isinstance(piece, dict):
                yield DecodeError(piece["message"], piece["position"])
                return
            walk = BatchWalk([piece], options, errors="stop")
            for b in walk:
                try:
                    first, last = b.base_offset, b.last_offset
                except DecodeError:         # a legacy wrapper that cannot be opened: shown as it is
                    yield b
                    continue
                if hi is not None and first >= hi:
                    return
                if lo is not None and last < lo:
                    continue
                yield b
            if walk.error is not None:
                yield walk.error
                return


def header_count(options, ranges) -> Optional[int]:
    """The rows a read of ``ranges`` (one log's :class:`kafkarec.scan._plan.SegmentPiece` s, in log
    order: a read_uncommitted read without control rows, typed values, time or key bounds) gives,
    counted from the batch headers, no record built; None where a header cannot say it exactly,
    and the read must count its rows.

    A v2 batch's ``recordCount`` is the records it holds (compaction leaves holes in its offset
    span, not in its count) and a control batch is no row, so a batch counts its ``recordCount``
    when the read keeps every record of it as the batch says: its CRC holds (the records are as
    their writer built them: the header count trusts a batch a broker validated on append
    (``LogValidator``), where a read would still report records that do not parse under a valid
    CRC), it breaks no strict header rule, its offsets lie wholly inside the offsets kept (the
    bounds' and the log start's: an edge batch cut inside is the read's to count) and inside its
    segment's, after the offsets before it (:class:`kafkarec.scan._order.OffsetOrder`'s rule on
    the header's span, for every batch the read decodes: those the bounds leave out too).  None for anything else: a v0/v1 message (a compressed wrapper holds
    several records), a framing error, a truncated tail, a file that shrank, a readCommitted skip."""
    from kafkarec.log.segment import file_options
    from kafkarec.log.storage import BatchWalk
    options = file_options(options).replace(verify_crc=False)   # (the CRC is judged below: no raise)
    count = 0
    after = None        # the last offset of the batches counted so far
    for part, pieces in ranges_read(ranges):
        if part.skip:
            return None
        lo, hi = part.kept
        held = part.offsets
        for piece in pieces:
            if isinstance(piece, dict):     # the local file shrank after the read was planned
                return None
            walk = BatchWalk([piece], options, errors="stop")
            try:
                for b in walk:
                    if b.magic < 2 or not b.crc_valid or b.header_errors:
                        return None
                    first, last = b.base_offset, b.last_offset
                    # every batch the read decodes is judged, the ones the bounds leave out too
                    if ((after is not None and first <= after)
                            or (held is not None and held.problem(first, last) is not None)):
                        return None
                    after = last
                    if (lo is not None and last < lo) or (hi is not None and first >= hi) or b.is_control:
                        continue
                    if (lo is not None and first < lo) or (hi is not None and last >= hi):
                        return None
                    count += b.record_count
            except DecodeError:
                return None
            finally:
                part.release(piece)
            stop_reason, trailing = walk.tail
            if walk.error is not None or stop_reason not in (None, "end") or trailing:
                return None
    return count


# Small ranges (whole small segments: many small partitions) are read ahead, this many at a
# time, while the task decodes the current one: on an object store each costs a metadata and a
# ranged request, a round trip each, which would otherwise add up one after the other.
READ_AHEAD_RANGES = 4
READ_AHEAD_MAX_BYTES = 8 << 20      # one request's worth (kafkarec.log.storage.DEFAULT_CHUNK)


def ranges_read(ranges, split: Optional[Callable] = None):
    """``(part, its buffers)`` of each of ``ranges`` (:class:`kafkarec.scan._plan.SegmentPiece` s)
    in order, each in the parts it is cut into when its turn comes
    (:meth:`~kafkarec.scan._plan.SegmentPiece.parts`: a listed range by ``split``), each part
    opened when its buffers are first asked for (a local slice memory-mapped) and closed once
    they are walked.  A piece that says reading it ahead pays (a listed range of at most
    :data:`READ_AHEAD_MAX_BYTES`) is read whole in a background thread up to
    :data:`READ_AHEAD_RANGES` ranges ahead (memory: that many small ranges); a larger one is
    walked in bounded pieces when its turn comes (:func:`kafkarec.log.selection.iter_range_pieces`)."""
    small = [len(ranges) > 1 and rr.read_ahead(READ_AHEAD_MAX_BYTES) for rr in ranges]
    if sum(small) < 2:
        for rr in ranges:
            yield from _parts_read(rr, split)
        return
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(READ_AHEAD_RANGES, thread_name_prefix="kafkarec-ranges")
    ahead: dict = {}
    try:
        for i in range(len(ranges)):
            for j in range(i, min(len(ranges), i + READ_AHEAD_RANGES)):
                if small[j] and j not in ahead:
                    ahead[j] = pool.submit(_read_whole, ranges[j], split)
            if i in ahead:
                yield from ahead.pop(i).result()
            else:
                yield from _parts_read(ranges[i], split)
    finally:
        for f in ahead.values():
            f.cancel()
        pool.shutdown(wait=True)


def _opened(part):
    """The buffers of one part, opened when first asked for and closed once walked."""
    opened = part.open()
    try:
        yield from opened
    finally:
        opened.close()


def _parts_read(rr, split):
    """``(part, its buffers)`` of one range, cut into its parts when its turn comes."""
    for part in rr.parts(split):
        yield part, _opened(part)


def _read_whole(rr, split) -> list:
    """``(part, its buffers)`` of one range, read whole (on the read-ahead thread)."""
    return [(part, list(_opened(part))) for part in rr.parts(split)]


class _Stopped:
    """A strict read's framing stop in a segment (:func:`decoded`), its report held while the
    pieces of the same segment after it are folded in: its ``not_decoded`` bytes run to the end of
    the last of them, and what badRecordsPath keeps for it grows by their bytes."""
    __slots__ = ("err", "where", "topic", "partition")

    def __init__(self, err: dict, where: str, topic, partition):
        self.err, self.where, self.topic, self.partition = dict(err), where, topic, partition

    def fold(self, piece) -> None:
        err = self.err
        end = err["position"] + err["not_decoded"]
        entries = err.get(_KEPT) or []
        last = entries[-1] if entries else None
        if last is not None and last[0][2] == err["position"] and end == piece.position:
            args, kwargs = last
            entries[-1] = ((*args[:3], bytes(args[3]) + bytes(piece.data), *args[4:]), kwargs)
        elif last is not None:      # (past a readCommitted skip: the piece's own entry)
            entries.append(((*last[0][:2], piece.position, bytes(piece.data), *last[0][4:]), dict(last[1])))
        err["not_decoded"] = piece.position + len(piece.data) - err["position"]

    def report(self, quarantine) -> Errors:
        from kafkarec.scan.decode import format_error
        err = self.err
        err["message"] = format_error(err, self.where)
        for _args, kwargs in err.get(_KEPT) or []:
            kwargs["reason"] = err["message"]
        return Errors([_write_kept(quarantine, err)], self.topic, self.partition)


_KEPT = "_kept"     # an error's entry: what badRecordsPath keeps for it, not yet written


class _Kept:
    """A quarantine's stand-in while decoding (:func:`kafkarec.scan.decode.decode_range`'s ``quarantine``):
    each batch it would keep, recorded for the error it is kept for."""
    __slots__ = ("entries",)

    def __init__(self):
        self.entries: list = []

    def add_undecodable(self, *args, **kwargs) -> None:
        self.entries.append((args, kwargs))

    def take(self) -> list:
        out, self.entries = self.entries, []
        return out


def _write_kept(quarantine, err: dict) -> dict:
    """``err`` without its kept batches, which go to ``quarantine`` now."""
    entries = err.pop(_KEPT, None) if isinstance(err, dict) else None
    for args, kwargs in entries or ():
        quarantine.add_undecodable(*args, **kwargs)
    return err
