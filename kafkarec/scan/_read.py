"""Finding a read's pieces of work and reading them: what :class:`kafkarec.scan.LogScan` and the
Spark data source share.

A read's settings are one :class:`kafkarec.scan._config.ScanConfig` (every surface, the Spark
data source too, makes one).  What :mod:`kafkarec.log` finds depends on ``config.listed``: URIs,
selections, bounds, tiered storage are read over a listing (:mod:`kafkarec.log.layout` sorts it
into partitions and segments, :mod:`kafkarec.log.selection` resolves the selection through the
side files and cuts at offset-index positions, no segment byte read; ranges of whole batches,
small ranges read a few ahead in threads); otherwise local paths and globs are found by
:func:`kafkarec.log.directory.find_segment_files` and cut at batch starts into slices
memory-mapped at most :data:`kafkarec.log.local.READ_WINDOW_BYTES` at a time.  Every piece is
decoded by :func:`kafkarec.scan._decode.decode_range` with the same parse modes.
``read_committed`` leaves out the aborted batches' spans, judged over each topic-partition's
whole log.
"""
from __future__ import annotations

import collections
import functools
import logging
import os
from typing import Callable, List, NamedTuple, Optional

from kafkarec._extras import require
from kafkarec.errors import DecodeError, MalformedBatchError, OffsetOrderError, SelectionError
from kafkarec.scan._config import FileFinding, ScanConfig
from kafkarec.scan._decode import decode_range

__all__ = ["ScanConfig", "FileFinding", "ListedRange", "Found", "Errors", "Listing", "listings", "found_local",
           "found_listed",
           "range_bytes", "partition_key", "topic_key", "ranges_read", "decoded", "decoded_ahead", "READ_AHEAD_RANGES",
           "READ_AHEAD_MAX_BYTES"]

log = logging.getLogger("kafkarec")


class ListedRange(NamedTuple):
    """One listed range a task reads: the storage holding it (pyarrow file systems pickle
    with their configuration), the segment range (kafkarec.log.selection.SegmentRange) and,
    with readCommitted, the spans of that segment to leave out (``[(position, size)]``)."""
    storage: object
    range: object
    skip: tuple = ()
    share: int = 0      # which of the config's offset_ranges it reads (0 without them)


class Found(NamedTuple):
    """What :mod:`kafkarec.log` found for a read: its pieces in log order, how to measure, cut
    and group them, and a packed task's pieces as the task reads them."""
    pieces: list
    size: Callable
    split: Callable
    group: Callable
    as_read: Callable


class Errors(NamedTuple):
    """Batches of one piece that could not be decoded (``decode_range``'s error dicts)."""
    errors: list
    topic: object
    partition: object


def found_local(config) -> Found:
    """Local paths found (:func:`kafkarec.log.directory.find_segment_files`: globs,
    pathGlobFilter, recursiveFileLookup, duplicate partitions) as slices cut at batch starts
    and read in windows (:mod:`kafkarec.log.local`)."""
    from kafkarec.log import directory, local
    files = config.files
    segments, skipped = directory.find_segment_files(
        config.paths, pattern=files.glob_filter, recursive=files.recursive,
        allow_duplicate_partitions=files.allow_duplicates)
    for d in skipped:
        log.warning("kafkarec: skipped %s (a folder Kafka itself ignores)", d)
    spans: dict = {}   # each file's batches are walked once for cuts, windows and readCommitted
    aborted = local.aborted_batches(segments, spans) if config.read_committed else None
    return Found(local.slices(segments, aborted, local.log_starts(segments)), size=lambda sl: sl.end - sl.start,
                 split=lambda sl, max_bytes: local.split(sl, max_bytes, spans),
                 group=local.partition_key,
                 as_read=lambda task: [w for sl in task for w in local.windows(sl, spans)])


def splitter() -> Callable:
    """``split(range, max_bytes)``: a :class:`ListedRange` of more than ``max_bytes`` cut at
    offset-index positions about ``max_bytes`` apart (:func:`kafkarec.log.selection.split_ranges`),
    with a resolver for each of the last few storages: for pieces planned elsewhere (a task's, a
    worker's), without planning the read again."""
    from kafkarec.log import selection
    resolvers: dict = {}        # id(storage) -> (storage, its resolver): the storage kept, so the id stays its

    def split(rr: ListedRange, max_bytes: int) -> list:
        known = resolvers.get(id(rr.storage))
        if known is None or known[0] is not rr.storage:
            while len(resolvers) >= 8:
                del resolvers[next(iter(resolvers))]
            known = resolvers[id(rr.storage)] = (rr.storage, selection.Resolver(rr.storage))
        return [rr._replace(range=sr) for sr in selection.split_ranges([rr.range], known[1], max_bytes)]
    return split


def range_bytes(rr: ListedRange) -> int:
    sr = rr.range
    return max(0, (sr.segment.size if sr.end is None else min(sr.end, sr.segment.size)) - sr.start)


def partition_key(rr: ListedRange):
    """The topic-partition of a range (its folder when the folder name has none)."""
    sr = rr.range
    if sr.topic is not None:
        return (rr.storage.prefix, sr.topic, sr.partition)
    return (rr.storage.prefix, None, sr.segment.path.rsplit("/", 1)[0])


def topic_key(partition_key):
    """The topic of a :func:`partition_key` (whichever log dir holds the partition); a folder
    whose name has no topic is one of its own."""
    topic = partition_key[1]
    return ("topic", topic) if topic is not None else partition_key


def found_listed(config, report: Optional[Callable] = None) -> Found:
    """Each path listed once (:func:`kafkarec.log.layout.scan_history`: local folders, object
    stores, tiered copies stitched with the log dirs), selected, bounded (``config.bounds``)
    and cut at offset-index positions (:mod:`kafkarec.log.selection`); no segment byte is read
    to plan except to find a timestamp's offset (readCommitted walks the selected partitions'
    logs).  What the listing met is reported by ``report(kind, path, storage, item)``
    (``"gap"``, ``"skipped"``, ``"not_live"``; default :func:`_report`: logged, a gap raised
    with ``fail_on_data_loss``)."""
    from kafkarec.log import selection
    report = report or functools.partial(_report, config)
    resolvers: dict = {}        # id(storage) -> (storage, its resolver): the storage kept, so the id stays its
    items: List[ListedRange] = []
    bounds = None if config.bounds.unbounded else config.bounds
    sel = config.selection if config.selection is not None else selection.parse_selection({})
    if config.every_record:
        sel = sel._replace(include_deleted_records=True)
    for listed in listings(config, report):
        lay, st, resolver = listed.layout, listed.layout.storage, listed.resolver
        resolvers[id(st)] = (st, resolver)
        if config.offset_ranges is None:
            shares = [(0, selection.plan(lay, sel, resolver, bounds=bounds))]
        else:       # each range planned apart, its pieces marked with its index (a stream's task)
            shares = [(i, selection.plan(lay, sel, resolver, offset_ranges=[r]))
                      for i, r in enumerate(config.offset_ranges)]
        ranges = [sr for _, share in shares for sr in share]
        skips = _read_committed_skips(st, lay, ranges) if config.read_committed else {}
        items += [ListedRange(st, sr, tuple(skips.get(sr.segment.path, ())), i)
                  for i, share in shares for sr in share]

    elsewhere = splitter()      # ranges planned elsewhere (unpickled)

    def split(rr: ListedRange, max_bytes: int) -> list:
        known = resolvers.get(id(rr.storage))
        if known is None or known[0] is not rr.storage:
            return elsewhere(rr, max_bytes)
        return [rr._replace(range=sr) for sr in selection.split_ranges([rr.range], known[1], max_bytes)]

    return Found(items, size=range_bytes, split=split, group=partition_key, as_read=list)


class Listing(NamedTuple):
    """One path of a read listed (:func:`listings`): its ``layout``
    (:class:`kafkarec.log.layout.Layout`), the ``gaps`` of its stitched history and a
    ``resolver`` (:class:`kafkarec.log.selection.Resolver`) of its storage."""
    source: str
    layout: object
    gaps: list
    resolver: object


def listings(config, report: Optional[Callable] = None):
    """Each of ``config.paths`` listed once, in order (:func:`kafkarec.log.layout.scan_history`:
    local folders, object stores, tiered copies stitched with the log dirs, by the config's
    storage and tiered options): what a read plans its pieces of work over and what
    :meth:`kafkarec.scan.LogScan.partition_walks` walks.  With a partitioner and a key bound, the
    partitions it names for none of the keys are left out before anything is reported (never
    opened).  ``report(kind, path, storage, item)``, when given, is told what the listing met
    (``"gap"``, ``"skipped"``, ``"not_live"``)."""
    from kafkarec.log import layout, selection
    listed = [(raw, *layout.scan_history(raw, config.tiered_storage, config.storage_options))
              for raw in config.paths]
    if config.partitioner is not None and config.bounds.keys is not None:
        listed = _by_partitioner(config, listed)
    for raw, lay, gaps in listed:
        st = lay.storage
        if report is not None:
            for gap in gaps:
                report("gap", raw, st, gap)
            for d in lay.skipped:
                report("skipped", raw, st, d)
            for item in lay.not_live:
                report("not_live", raw, st, item)
        yield Listing(raw, lay, gaps, selection.Resolver(st))


def _by_partitioner(config, listings) -> list:
    """The listings without the partitions the config's partitioner names for none of its keys
    (:meth:`kafkarec.scan.ScanConfig.key_partitions`): those are never opened.  A topic's N is
    counted over every path (log dirs of several brokers hold a topic's partitions between them)."""
    from kafkarec.log.layout import partition_counts
    listed = [part for _raw, lay, _gaps in listings for part in lay.partitions]
    counts = partition_counts(listed)
    named = {topic: config.key_partitions(topic, counts) for topic in {part.topic for part in listed}}

    def kept(part) -> bool:         # a PartitionLog, or a Gap of a stitched history
        wanted = named.get(part.topic)
        return wanted is None or part.partition in wanted
    return [(raw, lay._replace(partitions=[p for p in lay.partitions if kept(p)]), [g for g in gaps if kept(g)])
            for raw, lay, gaps in listings]


def _report(config, kind: str, raw: str, st, item) -> None:
    """What a listing met, logged (a gap in a stitched history raised with ``fail_on_data_loss``)."""
    if kind == "gap":
        msg = (f"kafkarec: offsets {item.start}..{item.end - 1} of {item.topic}-{item.partition} are in "
               f"neither the remote copies ({config.tiered_storage}) nor the log dir ({raw})")
        if config.fail_on_data_loss:
            raise SelectionError(msg + " (data loss; failOnDataLoss=false reads around it)")
        log.warning(msg)
    elif kind == "skipped":
        log.warning("kafkarec: skipped %s (a folder Kafka itself ignores)", st.uri(item))
    else:
        log.warning("kafkarec: not read: %s: %s", *item)


def _read_committed_skips(st, lay, ranges) -> dict:
    """The aborted spans of every partition the ranges read, each judged over its whole log."""
    from kafkarec.log import committed
    wanted = {(sr.topic, sr.partition) for sr in ranges}
    skips: dict = {}
    for part in lay.partitions:
        if part.key in wanted:
            skips.update(committed.read_committed_spans(st, part))
    return skips


# Batch headers and records' offsets only, to find the batches whose offsets go back.
_FRAMING_FIELDS = dict(file_rules=True, verify_crc=False)


def decoded(config, kafkarec, options, ranges, need_batch_columns: bool, hint: str, columns=None,
            split: Optional[Callable] = None):
    """``(where, item)`` for each range read in log order (local slices or
    :class:`ListedRange` s): items are Arrow batches of the log view (offset bounds applied,
    not yet conformed) and :class:`Errors`.  ``options``: the :class:`kafkarec.ReadOptions`;
    ``hint``: what a FAILFAST error adds (the caller's option names); ``columns``: the
    columns decoded (None: all; ``offset`` among them, the bounds are applied to it).  A local
    slice larger than a window is read in windows (:func:`kafkarec.log.local.windows`): cut
    before the first is read in the consumer's thread, or, decoding on a pool, each file cut by
    the pool's planner thread as the windows before it decode (:func:`decoded_ahead`).  With
    ``split(range, max_bytes)`` (the :class:`Found`'s), listed ranges are cut at offset-index
    positions about a window apart, by the pool's planner thread or up front, and decode on the
    pool too (None: whole ranges, in the consumer's thread).

    Offsets only grow in a partition: a batch whose offsets go back (at or below an offset read
    before it, bounds or not) or fall outside its segment's
    (:class:`kafkarec.log.segment.SegmentOffsets`) is malformed, whatever the bounds keep of
    it: FAILFAST raises :class:`kafkarec.errors.OffsetOrderError`, the other modes leave it out
    with an error (:class:`OffsetOrder`).  Under a key bound the rule sees only the kept keys'
    offsets (the core builds no other row): a batch going back is found when its kept rows go
    back past the last kept offset, not always (a known gap: a damaged log's order is
    ``kafkarec verify``'s to judge whole)."""
    from kafkarec.log import local
    from kafkarec.log.selection import filter_offsets
    quarantine = None
    if config.bad_records_path:
        from kafkarec.log.quarantine import Quarantine
        quarantine = Quarantine(config.bad_records_path, storage_options=config.storage_options)
    # control rows, where the read keeps them, are told apart by their isControl column: the
    # rule is the data batches' whatever the view (LogScan asks for that column with them)
    control_column = config.include_control and need_batch_columns and (columns is None or "isControl" in columns)
    order = OffsetOrder(kafkarec, options, config.include_control and not control_column, config.mode)
    max_rows = config.rows_per_batch(kafkarec._core.meta_walk(columns, batch_columns=need_batch_columns))

    def decode(piece, where, topic, partition):
        return decode_range(
            kafkarec, piece.data, options, base=piece.position,
            topic=topic, partition=partition, include_control=config.include_control,
            batch_columns=need_batch_columns,
            max_rows=max_rows, mode=config.mode, where=where,
            quarantine=quarantine, columns=columns, core_errors=config.core_errors,
            keys=config.bounds.keys)

    # a pool pays where decoding runs without the GIL: the meta-only walk and the full decode's
    # record loop; the batch columns' rows and a key bound's test hold it, record by record
    # (a row limit reads in the consumer's thread: the pool would map and decode windows past it)
    # (a read of no more than one window's bytes has nothing to decode side by side: no pool)
    sizes = sum((rr.end - rr.start) if isinstance(rr, local.Slice) else range_bytes(rr) for rr in ranges)
    on_pool = (config.threads > 1 and config.limit is None and quarantine is None and ranges
               and sizes > local.READ_WINDOW_BYTES
               and kafkarec._core.decodes_without_gil(columns, batch_columns=need_batch_columns,
                                                      keys=config.bounds.keys, strict=options is not None and options.strict))
    if on_pool and all(isinstance(rr, local.Slice) for rr in ranges):
        read = decoded_ahead(ranges, decode, config.threads, cut=local.windows)
    elif on_pool and split is not None and all(isinstance(rr, ListedRange) for rr in ranges):
        read = decoded_ahead(ranges, decode, config.threads, cut=lambda rr: split(rr, local.READ_WINDOW_BYTES))
    else:       # one piece after the other, decoded as the consumer asks
        # (listed ranges cut as the pool's planner cuts them, each when its turn comes: the same
        # pieces, so the same batches, and no index read before the first row)
        ranges = [w for rr in ranges for w in (local.windows(rr) if isinstance(rr, local.Slice) else (rr,))]
        cut = None if split is None else lambda rr: split(rr, local.READ_WINDOW_BYTES)
        read = ((rr, where, topic, partition, mapped, ((part, None) for part in _without_skips(rr, pieces)))
                for rr, where, topic, partition, mapped, pieces in ranges_read(ranges, cut))
    try:
        for rr, where, topic, partition, mapped, pieces in read:
            # offsets kept: a local slice's from the log start on, a listed range's as selected
            lo, hi = (rr.min_offset, None) if mapped else (rr.range.min_offset, rr.range.end_offset)
            held = rr.offsets if mapped else rr.range.offsets
            log_key = os.path.dirname(rr.path) if mapped else partition_key(rr)
            for piece, ready in pieces:
                if isinstance(piece, dict):     # the local file shrank after the read was planned
                    yield where, Errors([piece], topic, partition)
                    continue
                errs = []
                try:
                    items = decode(piece, where, topic, partition) if ready is None else ready
                    checked = order.check(items, piece, held, log_key, where, topic, partition,
                                          lambda cut: decode(cut, where, topic, partition))
                    for kind, item in checked:
                        if kind != "batch":
                            errs.append(item)
                            continue
                        if lo is not None or hi is not None:
                            item = filter_offsets(item, lo, hi)
                            if not item.num_rows:
                                continue
                        if errs:
                            yield where, Errors(errs, topic, partition)
                            errs = []
                        yield where, item
                except MalformedBatchError as exc:
                    raise type(exc)(f"{exc} {hint}") from None
                except DecodeError as exc:      # core_errors: positions are that file's
                    exc.file = where
                    raise
                finally:
                    if mapped:        # so that the map can close
                        local.release(piece.data)
                if errs:
                    yield where, Errors(errs, topic, partition)
    finally:
        read.close()        # a consumer gone: the threads stop, the maps close


def _without_skips(rr, pieces):
    """``pieces`` of ``rr`` without its skipped spans (read_committed: aborted batches)."""
    from kafkarec.log.storage import without_spans
    if not rr.skip:
        return pieces
    return (part for piece in pieces
            for part in ((piece,) if isinstance(piece, dict) else without_spans(piece, rr.skip)))


def _replay(items, failure):
    """``items`` decoded ahead, then ``failure`` raised if decoding raised it (a generator, as
    :func:`kafkarec.scan._decode.decode_range`'s: what :class:`OffsetOrder` takes)."""
    yield from items
    if failure is not None:
        raise failure


class _Uncut(NamedTuple):
    """A slice the planner could not cut into windows (:func:`decoded_ahead`), and why."""
    slice: object
    error: BaseException


def decoded_ahead(slices, decode, threads: int, cut: Optional[Callable] = None):
    """:func:`ranges_read`'s tuples for local ``slices`` (windows: one map each) or
    :class:`ListedRange` s (each read in its pieces by the thread that decodes it), each piece paired
    with its items already decoded (``decode(piece, where, topic, partition)``, a
    :func:`kafkarec.scan._decode.decode_range`) on ``threads`` threads, ahead of the consumer.
    ``cut(slice)``: the windows of a slice (:func:`kafkarec.log.local.windows`; None: the slices
    are windows already), called on a planner thread of the pool's own, file after file and a few
    files ahead of the decoding: the first window decodes while later files are walked, and the
    consumer's thread walks none.

    The consumer gets the windows in order, and each one's items as one thread decoded them,
    an error where decoding raised it (nothing after it), so what it sees is what decoding one
    after the other gives (a slice that could not be cut: its error when its turn comes, nothing
    after it).  At most ``threads`` windows are mapped and decoded ahead of the one the consumer
    holds (memory: ``threads + 1`` windows and their rows).  A window's map is closed on the
    pool once the consumer is done with it: by the thread that takes the next window, before it
    maps that one (so the count holds), or past the last window by a task of its own.  A consumer
    that stops (the generator closed) stops the threads after the Arrow batch each is building (and
    the planner after the file it is walking) and closes every map before the close returns, an
    interrupt in any of its waits included."""
    import collections
    import inspect
    import itertools
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from kafkarec.log import local
    stop = threading.Event()

    def decode_parts(parts, where, topic, partition, entries):
        """Each part with its items decoded into ``entries``; a part whose decoding raised keeps
        its items and the error (raised to the consumer where it was met), and ends the parts."""
        for part in parts:
            items, failure = [], None
            try:
                for item in decode(part, where, topic, partition):
                    items.append(item)
                    if stop.is_set():
                        break
            except Exception as exc:
                failure = exc
            entries.append((part, _replay(items, failure)))
            if failure is not None or stop.is_set():
                break

    def work(sl, closing):
        """``closing`` (a window the consumer is done with) unmapped, then the slice mapped and
        decoded: ``(entries, mapped)``; ``mapped`` (the map's generator,
        :func:`kafkarec.log.local.iter_pieces`) is left open until the consumer is done with it.
        A listed range is read in its pieces and decoded whole (``mapped`` None)."""
        if closing is not None:
            closing.close()
        if isinstance(sl, _Uncut):
            return [(sl.error, None)], None
        if isinstance(sl, ListedRange):
            return read_listed(sl), None
        mapped = local.iter_pieces(sl)
        entries = []
        try:
            piece = None
            for p in mapped:        # an error first when the file shrank, then the one piece
                if isinstance(p, dict):
                    entries.append((p, None))
                    continue
                piece = p
                break               # not past it: that would close the map
            parts = () if piece is None else _without_skips(sl, (piece,))
            decode_parts(parts, sl.path, sl.topic, sl.partition, entries)
        except Exception as exc:
            entries.append((exc, None))
        except BaseException:       # (an interrupt): nobody will be handed this map
            mapped.close()
            raise
        return entries, mapped

    def read_listed(rr):
        """The entries of a listed range: each of its pieces with its items, an error where
        reading or decoding raised it (nothing after it)."""
        from kafkarec.log import selection
        entries = []
        pieces = selection.iter_range_pieces(rr.storage, rr.range)
        try:
            decode_parts(_without_skips(rr, pieces), rr.storage.uri(rr.range.segment.path), rr.range.topic,
                         rr.range.partition, entries)
        except Exception as exc:
            entries.append((exc, None))
        finally:
            pieces.close()      # (its segment's file, when it stopped early)
        return entries

    done = collections.deque()      # maps the consumer is done with, for the pool to close
    over = []                       # set once the pool is shut down

    def handed(entries, mapped):
        try:
            for piece, ready in entries:
                if isinstance(piece, BaseException):
                    raise piece
                yield piece, ready
        finally:
            if mapped is not None:
                if over:            # the window a closed consumer held, let go after the pool stopped
                    mapped.close()
                else:
                    done.append(mapped)

    pool = ThreadPoolExecutor(threads, thread_name_prefix="kafkarec-decode")
    planner = None if cut is None else ThreadPoolExecutor(1, thread_name_prefix="kafkarec-decode-plan")
    planned = collections.deque()   # (slice, its windows' future), in order

    def windows():
        """The windows in order: each slice cut on the planner thread, ``threads + 1`` slices
        ahead of the one whose windows are being handed out."""
        todo = iter(slices)
        while True:
            for sl in itertools.islice(todo, max(0, threads + 1 - len(planned))):
                planned.append((sl, planner.submit(cut, sl)))
            if not planned:
                return
            sl, future = planned[0]
            try:
                cut_windows = future.result()
            except Exception as exc:        # raised to the consumer when its turn comes
                planned.popleft()
                yield _Uncut(sl, exc)
                return
            planned.popleft()
            yield from cut_windows

    ahead = collections.deque()     # (window, future, the map its task closes first)
    held = None                     # (the items handed out last, its map)
    closers = []                    # (future, map) of the maps closed past the last window
    todo = iter(slices) if cut is None else windows()

    # Every map is on one of the deques until a task that closes it is submitted, or until the
    # consumer has its window's items: an interrupt in any wait leaves none for the collector.
    def submit(sl):
        closing = done[0] if done else None
        future = pool.submit(work, sl, closing)
        if closing is not None:
            done.popleft()
        ahead.append((sl, future, closing))

    def close_done():
        while done:             # no window left to close it before: a task of its own
            mapped = done[0]
            try:
                closers.append((pool.submit(mapped.close), mapped))
            except RuntimeError:        # the pool takes no work (the interpreter is exiting)
                mapped.close()
            done.popleft()
    try:
        for sl in itertools.islice(todo, threads):
            submit(sl)
        while ahead:
            sl, future, _closing = ahead[0]
            for later in itertools.islice(todo, 1):     # the pool keeps `threads` windows ahead
                submit(later)
            close_done()
            entries, mapped = future.result()
            ahead.popleft()
            sl = sl.slice if isinstance(sl, _Uncut) else sl
            held = (handed(entries, mapped), mapped)
            if isinstance(sl, ListedRange):
                yield (sl, sl.storage.uri(sl.range.segment.path), sl.range.topic, sl.range.partition, False,
                       held[0])
            else:
                yield sl, sl.path, sl.topic, sl.partition, True, held[0]
    finally:
        stop.set()
        try:
            for _sl, f, _closing in ahead:
                f.cancel()
            close_done()        # the last window's (or the one a closed consumer held)
            if planner is not None:
                for _sl, f in planned:
                    f.cancel()
                planner.shutdown(wait=True)
        finally:
            try:
                pool.shutdown(wait=True)
            finally:
                # (a task still running, after a second interrupt, keeps its maps for the collector)
                for _sl, f, closing in ahead:
                    if f.cancelled():
                        if closing is not None:
                            closing.close()
                    elif f.done() and f.exception() is None and f.result()[1] is not None:
                        f.result()[1].close()
                for f, mapped in closers:
                    if f.cancelled():
                        mapped.close()
                while done:
                    done.popleft().close()
                # a window handed out but never read: its finally (which lets the map go) never runs
                if held is not None and held[1] is not None and \
                        inspect.getgeneratorstate(held[0]) == inspect.GEN_CREATED:
                    held[1].close()
                over.append(True)


def framed(kafkarec, options, rr: ListedRange):
    """The batches of one listed range framed one by one (:func:`kafkarec.iter_batches`, with
    the log files' rules: :func:`kafkarec.log.segment.file_options`), the same pieces and skips
    as :func:`decoded` walks: each batch holding an offset of the range, then, if framing
    failed, the :class:`kafkarec.DecodeError` that stopped it (nothing after it is read)."""
    from kafkarec.log.segment import file_options
    from kafkarec.log.storage import without_spans
    options = file_options(options)
    for rr, _where, _topic, _partition, _mapped, pieces in ranges_read([rr]):
        lo, hi = rr.range.min_offset, rr.range.end_offset
        if rr.skip:
            pieces = (part for piece in pieces for part in without_spans(piece, rr.skip))
        for piece in pieces:
            it = kafkarec.iter_batches(piece.data, options, origin=piece.position)
            while True:
                try:
                    b = next(it)
                except StopIteration:
                    break
                except DecodeError as e:
                    yield e
                    return
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


class OffsetOrder:
    """Offsets only grow in a partition (Kafka's log recovery and ``kafkarec verify`` refuse a
    batch that goes back), and a segment holds only its own offsets; a batch's base offset is
    outside its CRC, so a damaged one still reads as a valid batch.  Kept per log while a read
    goes through its pieces in log order: the last offset read (before any bound is applied,
    so that every read of the same bytes judges a batch alike).

    Checked on the decoded rows (one vectorized comparison per Arrow batch); only when a row
    breaks the rule is its piece framed batch by batch to find the batches that do, which
    are reported (FAILFAST: :class:`kafkarec.errors.OffsetOrderError`; otherwise an error
    per batch, ``OffsetOrderError``) and left out: the piece is decoded again without them."""

    def __init__(self, kafkarec, options, control_rows_judged: bool, mode: str):
        self.kafkarec = kafkarec
        self.options = options
        # a control batch takes no part in the rule (the consumer skips it, and the timestamp
        # lookup passes over it), unless its rows cannot be told apart from the data rows (a
        # read of control rows without their isControl column)
        self.control_rows_judged = control_rows_judged
        self.failfast = mode == "FAILFAST"
        self.last: dict = {}        # log -> the last offset read

    def check(self, items, piece, held, log_key, where, topic, partition, redecode):
        """``items`` (``decode_range``'s, of ``piece``) with the batches breaking the rule left
        out and reported; ``redecode(piece)`` decodes a part of the piece again."""
        pc = require("pyarrow.compute")
        start_last = self.last.get(log_key)     # what the piece's first batch must follow
        yielded = set()     # error positions already handed on
        done = None         # the largest offset handed on from this piece
        try:
            for kind, item in items:
                if kind != "batch":
                    yielded.add((item.get("position"), item.get("error")))
                    yield kind, item
                    continue
                off = self._data_offsets(pc, item)
                if self._fits(pc, off, held, self.last.get(log_key)):
                    self._advance(pc, off, held, log_key)
                    if item.num_rows:       # rows handed on, whatever the rule judges of them
                        top = pc.max(item.column("offset")).as_py()
                        done = top if done is None else max(done, top)
                    yield kind, item
                    continue
                items.close()
                yield from self._slow(piece, held, log_key, where, topic, partition, redecode, start_last,
                                      done, yielded)
                return
        except (DecodeError, MalformedBatchError) as exc:
            # FAILFAST: decoding raised at a byte past a batch whose offsets go back, whose rows it
            # held in a chunk not yet handed on: the earlier batch fails the read, as it does when
            # its chunk is handed on first (a smaller window)
            at = exc.position if isinstance(exc, DecodeError) else getattr(exc.__cause__, "position", None)
            if self.failfast and at is not None and not isinstance(exc, OffsetOrderError):
                _bad, errors = self._violations(piece, held, where, topic, partition, start_last)
                earlier = [e for e in errors if e["position"] < at]
                if earlier:
                    raise OffsetOrderError("Malformed Kafka record batch (mode FAILFAST): "
                                           + earlier[0]["message"]) from None
            raise

    def _data_offsets(self, pc, item):
        """The offsets of ``item``'s rows the rule judges: its data rows'."""
        off = item.column("offset")
        i = item.schema.get_field_index("isControl")
        if i < 0 or self.control_rows_judged:
            return off
        control = item.column(i)
        return off if not pc.any(control).as_py() else pc.filter(off, pc.invert(control))

    def _fits(self, pc, off, held, last) -> bool:
        n = len(off)
        if n == 0:
            return True
        # numpy over the column's data buffer (the core's offset column has no nulls), no array
        # made per comparison as pyarrow.compute's subtract would; not Array.to_numpy, which
        # imports pandas (~0.5 CPU-s in each of Spark's Python workers)
        values = require("numpy").frombuffer(off.buffers()[1], dtype="<i8", count=n, offset=off.offset * 8)
        first = int(values[0])
        if last is not None and first <= last:
            return False
        if n > 1 and not (values[1:] > values[:-1]).all():
            return False
        return held is None or held.problem(first, int(values[n - 1])) is None

    def _advance(self, pc, off, held, log_key):
        n = len(off)
        if n:
            last = off[n - 1].as_py()
            # offsets an overlapping copy's next segment holds are left to it
            if held is not None and held.end is not None and last >= held.end:
                kept = pc.filter(off, pc.less(off, held.end))
                last = kept[len(kept) - 1].as_py() if len(kept) else None
            if last is not None:
                self.last[log_key] = last
        return self.last.get(log_key)

    def _slow(self, piece, held, log_key, where, topic, partition, redecode, start_last, done, yielded):
        """The piece framed batch by batch from its start: the batches breaking the rule
        reported, the rest decoded again (rows up to ``done`` were handed on already)."""
        from kafkarec.log.storage import without_spans
        pc = require("pyarrow.compute")
        bad, errors = self._violations(piece, held, where, topic, partition, start_last)
        if not bad:     # rows broke the rule where no whole batch does: refuse rather than guess
            raise OffsetOrderError(f"Malformed Kafka record batch: {where}: offsets go back in "
                                   f"{topic}-{partition} from byte {piece.position}")
        if self.failfast:
            raise OffsetOrderError("Malformed Kafka record batch (mode FAILFAST): " + errors[0]["message"])
        pending = collections.deque(errors)        # in log order, each before the rows after it
        for part in without_spans(piece, sorted(bad)):
            while pending and pending[0]["position"] < part.position:
                yield "error", pending.popleft()
            for kind, item in redecode(part):
                if kind != "batch":
                    if (item.get("position"), item.get("error")) not in yielded:
                        yield kind, item
                    continue
                off = item.column("offset")
                if done is not None:
                    item = item.filter(pc.greater(off, done))
                if item.num_rows:
                    self._advance(pc, self._data_offsets(pc, item), held, log_key)
                    yield kind, item
        while pending:
            yield "error", pending.popleft()

    def _violations(self, piece, held, where, topic, partition, start_last):
        """``(spans, errors)`` of the piece's batches breaking the rule, framed batch by batch
        from its start after ``start_last`` (up to where framing stops: decode_range reports that)."""
        from kafkarec.log.segment import order_problem
        from kafkarec.scan._decode import format_error
        k = self.kafkarec
        verify = self.options is None or self.options.verify_crc
        bad, errors = [], []
        running = start_last
        try:
            for b in k.iter_batches(piece.data, k.ReadOptions(**_FRAMING_FIELDS), origin=piece.position):
                if (b.is_control and not self.control_rows_judged) or (verify and not b.crc_valid):
                    continue            # no rows of it (a bad CRC is decode_range's to report)
                try:
                    offs = [r.offset for r in b]
                except DecodeError:
                    continue            # decode_range's to report
                if not offs:
                    continue
                why = order_problem(offs, running, held)
                if why is None:
                    mine = [o for o in offs if held is None or held.end is None or o < held.end]
                    if mine:
                        running = mine[-1]
                    continue
                size = b.size_in_bytes
                bad.append((b.position, size))
                reason = (f"{topic}-{partition}: the batch at byte {b.position} (offsets "
                          f"{b.base_offset}..{b.last_offset}): {why}")
                errors.append({"position": b.position, "base_offset": b.base_offset,
                               "error": "OffsetOrderError", "reason": reason,
                               "batch_position": b.position, "batch_size": size})
        except DecodeError:
            pass                        # framing stops here: decode_range reports it
        for e in errors:
            e["message"] = format_error(e, where)
        return bad, errors


# Small ranges (whole small segments: many small partitions) are read ahead, this many at a
# time, while the task decodes the current one: on an object store each costs a metadata and a
# ranged request, a round trip each, which would otherwise add up one after the other.
READ_AHEAD_RANGES = 4
READ_AHEAD_MAX_BYTES = 8 << 20      # one request's worth (kafkarec.log.storage.DEFAULT_CHUNK)


def ranges_read(ranges, cut: Optional[Callable] = None):
    """``(range, where, topic, partition, mapped, pieces)`` for each of ``ranges`` in order.  A
    local slice (``mapped``) is memory-mapped when its turn comes
    (:func:`kafkarec.log.local.iter_pieces`).  A listed range of at most
    :data:`READ_AHEAD_MAX_BYTES` is read whole in a background thread up to
    :data:`READ_AHEAD_RANGES` ranges ahead (memory: that many small ranges), a larger one is
    walked in bounded pieces when its turn comes (:func:`kafkarec.log.selection.iter_range_pieces`),
    each of its parts in turn with ``cut(range)`` (the parts it is cut into, when its turn comes)."""
    from kafkarec.log import local, selection
    mapped = [isinstance(rr, local.Slice) for rr in ranges]

    def whole(rr):
        return [(part, list(selection.iter_range_pieces(part.storage, part.range)))
                for part in ((rr,) if cut is None else cut(rr))]

    def described(rr, pieces):
        if isinstance(rr, local.Slice):
            return rr, rr.path, rr.topic, rr.partition, True, pieces
        return rr, rr.storage.uri(rr.range.segment.path), rr.range.topic, rr.range.partition, False, pieces

    def later(i):
        rr = ranges[i]
        if mapped[i]:
            yield described(rr, local.iter_pieces(rr))
            return
        for part in ((rr,) if cut is None else cut(rr)):
            yield described(part, selection.iter_range_pieces(part.storage, part.range))
    small = [len(ranges) > 1 and not m and range_bytes(rr) <= READ_AHEAD_MAX_BYTES
             for rr, m in zip(ranges, mapped)]
    if sum(small) < 2:
        for i in range(len(ranges)):
            yield from later(i)
        return
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(READ_AHEAD_RANGES, thread_name_prefix="kafkarec-ranges")
    ahead: dict = {}
    try:
        for i in range(len(ranges)):
            for j in range(i, min(len(ranges), i + READ_AHEAD_RANGES)):
                if small[j] and j not in ahead:
                    ahead[j] = pool.submit(whole, ranges[j])
            if i in ahead:
                for part, pieces in ahead.pop(i).result():
                    yield described(part, pieces)
            else:
                yield from later(i)
    finally:
        for f in ahead.values():
            f.cancel()
        pool.shutdown(wait=True)
