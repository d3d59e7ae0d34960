"""Finding a read's pieces of work and reading them: what :class:`kafkarec.scan.LogScan` and the
Spark data source share.

A read's settings (``config``) are an object with the attributes :class:`ScanConfig` has (the
Spark data source passes its :class:`spark_udfs._datasource.BatchReadConfig`, which has them
under the same names).  What :mod:`kafkarec.log` finds depends on ``config.listed``: URIs,
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

import logging
from typing import Callable, List, NamedTuple, Optional

from kafkarec.errors import MalformedBatchError, SelectionError
from kafkarec.scan._decode import decode_range

__all__ = ["ScanConfig", "FileFinding", "ListedRange", "Found", "Errors", "found_local", "found_listed",
           "range_bytes", "partition_key", "topic_key", "ranges_read", "decoded", "READ_AHEAD_RANGES",
           "READ_AHEAD_MAX_BYTES"]

log = logging.getLogger("kafkarec")


class FileFinding(NamedTuple):
    """How a local read finds segment files (Spark's file-source options ``pathGlobFilter``,
    ``recursiveFileLookup``, ``allowDuplicatePartitions``)."""
    glob_filter: str = "*.log"
    recursive: bool = False
    allow_duplicates: bool = False


class ScanConfig:
    """A read's settings, plain values (pickled to workers before kafkarec is loaded there).

    ``read_fields``: :class:`kafkarec.ReadOptions` fields (``verify_crc``, ``strict``,
    ``max_decompressed_bytes``); ``selection``: a :class:`kafkarec.log.selection.Selection`
    (the Kafka source's options); ``bounds``: a :class:`kafkarec.scan.Bounds` or None.  The
    Spark data source's :class:`spark_udfs._datasource.BatchReadConfig` has the same attributes."""

    def __init__(self, paths, *, listed: bool, files: FileFinding = FileFinding(), selection=None,
                 bounds=None, tiered_storage=None, storage_options=None, fail_on_data_loss: bool = True,
                 read_committed: bool = False, mode: str = "FAILFAST", corrupt_column: Optional[str] = None,
                 bad_records_path=None, include_control: bool = False, max_rows: int = 65536,
                 min_partitions: Optional[int] = None, default_parallelism: int = 1,
                 read_fields: Optional[dict] = None):
        self.paths = list(paths)
        self.listed = listed
        self.files = files
        self.selection = selection
        self.bounds = bounds
        self.tiered_storage = tiered_storage
        self.storage_options = storage_options
        self.fail_on_data_loss = fail_on_data_loss
        self.read_committed = read_committed
        self.mode = mode
        self.corrupt_column = corrupt_column
        self.bad_records_path = bad_records_path
        self.include_control = include_control
        self.max_rows = max_rows
        self.min_partitions = min_partitions
        self.default_parallelism = default_parallelism
        self.read = ReadFields(read_fields or {})


class ReadFields:
    """:class:`kafkarec.ReadOptions` fields as plain values (picklable), made into the core's
    object where decoding happens (:meth:`options`), as the Spark source's settings are."""

    def __init__(self, fields: dict):
        self.fields = dict(fields)

    def options(self, kafkarec):
        return kafkarec.ReadOptions(**self.fields)


class ListedRange(NamedTuple):
    """One listed range a task reads: the storage holding it (pyarrow file systems pickle
    with their configuration), the segment range (kafkarec.log.selection.SegmentRange) and,
    with readCommitted, the spans of that segment to leave out (``[(position, size)]``)."""
    storage: object
    range: object
    skip: tuple = ()


class Found(NamedTuple):
    """What :mod:`kafkarec.log` found for a read: its pieces in log order, how to measure, cut
    and group them, the ``minPartitions`` a planner aims at, and a packed task's pieces as
    the task reads them."""
    pieces: list
    size: Callable
    split: Callable
    group: Callable
    min_partitions: Optional[int]
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
    # a local read aims at minPartitions, else the cluster's cores, in the Kafka source's meaning
    return Found(local.slices(segments, aborted, local.log_starts(segments)), size=lambda sl: sl.end - sl.start,
                 split=lambda sl, max_bytes: local.split(sl, max_bytes, spans),
                 group=local.partition_key,
                 min_partitions=config.min_partitions or config.default_parallelism,
                 as_read=lambda task: [w for sl in task for w in local.windows(sl, spans)])


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


def found_listed(config) -> Found:
    """Each path listed once (:func:`kafkarec.log.layout.scan_history`: local folders, object
    stores, tiered copies stitched with the log dirs), selected, bounded (``config.bounds``)
    and cut at offset-index positions (:mod:`kafkarec.log.selection`); no segment byte is read
    to plan except to find a timestamp's offset (readCommitted walks the selected partitions'
    logs)."""
    from kafkarec.log import layout, selection
    resolvers: dict = {}
    items: List[ListedRange] = []
    bounds = getattr(config, "bounds", None)
    for raw in config.paths:
        lay, gaps = layout.scan_history(raw, config.tiered_storage, config.storage_options)
        st = lay.storage
        for gap in gaps:
            msg = (f"kafkarec: offsets {gap.start}..{gap.end - 1} of {gap.topic}-{gap.partition} are in neither "
                   f"the remote copies ({config.tiered_storage}) nor the log dir ({raw})")
            if config.fail_on_data_loss:
                raise SelectionError(msg + " (data loss; failOnDataLoss=false reads around it)")
            log.warning(msg)
        for d in lay.skipped:
            log.warning("kafkarec: skipped %s (a folder Kafka itself ignores)", st.uri(d))
        for uri, why in lay.not_live:
            log.warning("kafkarec: not read: %s: %s", uri, why)
        resolver = resolvers[id(st)] = selection.Resolver(st)
        ranges = _planned(lay, config.selection, bounds, resolver)
        skips = _read_committed_skips(st, lay, ranges) if config.read_committed else {}
        items += [ListedRange(st, sr, tuple(skips.get(sr.segment.path, ()))) for sr in ranges]

    def split(rr: ListedRange, max_bytes: int) -> list:
        return [rr._replace(range=sr)
                for sr in selection.split_ranges([rr.range], resolvers[id(rr.storage)], max_bytes)]

    return Found(items, size=range_bytes, split=split, group=partition_key,
                 min_partitions=config.min_partitions, as_read=list)


def _planned(lay, sel, bounds, resolver) -> list:
    """The segment ranges of the selection (:func:`kafkarec.log.selection.plan`) narrowed by
    ``bounds``: topics and partitions, the offset range, and the start of the timestamp range
    through the time indexes (the earliest offset at or past the start whose record has a
    timestamp at or past the lower bound: every record before it has an earlier timestamp).
    An upper timestamp bound does not prune (CreateTime timestamps are not ordered): the
    reader filters it row by row."""
    from kafkarec.log import selection
    if bounds is None:
        return selection.plan(lay, sel, resolver)
    out = []
    for part in selection.select_partitions(lay, sel):
        if not bounds.admits(part.topic, part.partition):
            continue
        log_start = resolver.log_start(part, include_deleted_records=sel.include_deleted_records)
        start, hit = selection.partition_start(sel, part, resolver, log_start)
        end = selection.partition_end(sel, part, resolver, log_start)
        lo, hi = bounds.offsets
        if lo is not None and lo > start:
            start, hit = lo, None
        if hi is not None and (end is None or hi < end):
            end = hi
        if end is not None and end <= start:
            continue
        if bounds.timestamps[0] is not None:
            found = resolver.offset_for_time(part, bounds.timestamps[0], log_start=start)
            if found is None or (end is not None and found[0] >= end):
                continue            # no record from the start on is that late
            if found[0] > start:
                start, hit = found[0], found
        out += selection.plan_partition(part, start, end, resolver, time_hit=hit)
    return out


def _read_committed_skips(st, lay, ranges) -> dict:
    """The aborted spans of every partition the ranges read, each judged over its whole log."""
    from kafkarec.log import committed
    wanted = {(sr.topic, sr.partition) for sr in ranges}
    skips: dict = {}
    for part in lay.partitions:
        if part.key in wanted:
            skips.update(committed.read_committed_spans(st, part))
    return skips


def decoded(config, kafkarec, options, ranges, need_batch_columns: bool, hint: str):
    """``(where, item)`` for each range read in log order (local slices or
    :class:`ListedRange` s): items are Arrow batches of the log view (offset bounds applied,
    not yet conformed) and :class:`Errors`.  ``options``: the :class:`kafkarec.ReadOptions`;
    ``hint``: what a FAILFAST error adds (the caller's option names)."""
    from kafkarec.log import local
    from kafkarec.log.selection import filter_offsets
    from kafkarec.log.storage import without_spans
    quarantine = None
    if config.bad_records_path:
        from kafkarec.log.quarantine import Quarantine
        quarantine = Quarantine(config.bad_records_path, storage_options=config.storage_options)
    for rr, where, topic, partition, mapped, pieces in ranges_read(ranges):
        # offsets kept: a local slice's from the log start on, a listed range's as selected
        lo, hi = (rr.min_offset, None) if mapped else (rr.range.min_offset, rr.range.end_offset)
        if rr.skip:       # read_committed: the aborted batches' spans are left out
            pieces = (part for piece in pieces
                      for part in ((piece,) if isinstance(piece, dict) else without_spans(piece, rr.skip)))
        for piece in pieces:
            if isinstance(piece, dict):     # the local file shrank after the read was planned
                yield where, Errors([piece], topic, partition)
                continue
            errs = []
            try:
                for kind, item in decode_range(
                        kafkarec, piece.data, options, base=piece.position,
                        topic=topic, partition=partition, include_control=config.include_control,
                        batch_columns=need_batch_columns,
                        max_rows=config.max_rows, mode=config.mode, where=where,
                        quarantine=quarantine):
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
                raise MalformedBatchError(f"{exc} {hint}") from None
            finally:
                if mapped:        # so that the map can close
                    local.release(piece.data)
            if errs:
                yield where, Errors(errs, topic, partition)


# Small ranges (whole small segments: many small partitions) are read ahead, this many at a
# time, while the task decodes the current one: on an object store each costs a metadata and a
# ranged request, a round trip each, which would otherwise add up one after the other.
READ_AHEAD_RANGES = 4
READ_AHEAD_MAX_BYTES = 8 << 20      # one request's worth (kafkarec.log.storage.DEFAULT_CHUNK)


def ranges_read(ranges):
    """``(range, where, topic, partition, mapped, pieces)`` for each of ``ranges`` in order.  A
    local slice (``mapped``) is memory-mapped when its turn comes
    (:func:`kafkarec.log.local.iter_pieces`).  A listed range of at most
    :data:`READ_AHEAD_MAX_BYTES` is read whole in a background thread up to
    :data:`READ_AHEAD_RANGES` ranges ahead (memory: that many small ranges), a larger one is
    walked in bounded pieces when its turn comes (:func:`kafkarec.log.selection.iter_range_pieces`)."""
    from kafkarec.log import local, selection
    mapped = [isinstance(rr, local.Slice) for rr in ranges]

    def whole(rr):
        return list(selection.iter_range_pieces(rr.storage, rr.range))

    def described(i, pieces):
        rr = ranges[i]
        if mapped[i]:
            return rr, rr.path, rr.topic, rr.partition, True, pieces
        return rr, rr.storage.uri(rr.range.segment.path), rr.range.topic, rr.range.partition, False, pieces

    def later(i):
        rr = ranges[i]
        return local.iter_pieces(rr) if mapped[i] else selection.iter_range_pieces(rr.storage, rr.range)
    small = [len(ranges) > 1 and not m and range_bytes(rr) <= READ_AHEAD_MAX_BYTES
             for rr, m in zip(ranges, mapped)]
    if sum(small) < 2:
        for i in range(len(ranges)):
            yield described(i, later(i))
        return
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(READ_AHEAD_RANGES, thread_name_prefix="kafkarec-ranges")
    ahead: dict = {}
    try:
        for i in range(len(ranges)):
            for j in range(i, min(len(ranges), i + READ_AHEAD_RANGES)):
                if small[j] and j not in ahead:
                    ahead[j] = pool.submit(whole, ranges[j])
            yield described(i, ahead.pop(i).result() if i in ahead else later(i))
    finally:
        for f in ahead.values():
            f.cancel()
        pool.shutdown(wait=True)
