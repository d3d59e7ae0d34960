"""A read's pieces of work: what :mod:`kafkarec.log` finds for a :class:`kafkarec.scan.ScanConfig`,
and how a piece is described to the read loop (:mod:`kafkarec.scan._read`).

What is found depends on ``config.listed``: URIs, selections, bounds, tiered storage are read
over a listing (:mod:`kafkarec.log.layout` sorts it into partitions and segments,
:mod:`kafkarec.log.selection` resolves the selection through the side files and cuts at
offset-index positions, no segment byte read); otherwise local paths and globs are found by
:func:`kafkarec.log.directory.find_segment_files` and cut at batch starts into slices
memory-mapped at most :data:`kafkarec.log.local.READ_WINDOW_BYTES` at a time.  A piece is a
local slice (:class:`kafkarec.log.local.Slice`) or a :class:`ListedRange`, each a
:class:`SegmentPiece`: the read asks the piece, never which kind it is.  ``read_committed``
leaves out the aborted batches' spans (each piece's ``skip``), judged over each
topic-partition's whole log.
"""
from __future__ import annotations

import functools
import logging
from typing import Callable, Iterable, Iterator, List, NamedTuple, Optional, Protocol

from kafkarec.errors import SelectionError

__all__ = ["SegmentPiece", "ListedRange", "Found", "Listing", "listings", "found_local", "found_listed", "splitter",
           "range_bytes", "partition_key", "topic_key", "without_skips"]

log = logging.getLogger("kafkarec")


class _Buffers(Protocol):
    """What :meth:`SegmentPiece.open` gives: the buffers, then closed."""
    def __iter__(self) -> Iterator: ...
    def close(self) -> None: ...


class SegmentPiece(Protocol):
    """A read's unit of work, a byte range of one segment: a local slice
    (:class:`kafkarec.log.local.Slice`, memory-mapped) or a :class:`ListedRange` (a listed
    segment's range, read in bounded pieces), what the read loop, the pool and a
    :class:`kafkarec.scan.ScanPiece` ask of either."""
    @property
    def topic(self) -> Optional[str]:
        """Its topic (None: its folder's name has none)."""

    @property
    def partition(self) -> Optional[int]:
        """Its partition (None: its folder's name has none)."""

    @property
    def skip(self) -> tuple:
        """``(position, size)`` of the batches left out (read_committed: aborted transactions)."""

    @property
    def path(self) -> str:
        """The segment file, as its storage names it."""

    @property
    def storage(self):
        """The storage holding it (:class:`kafkarec.log.storage.Storage`)."""

    @property
    def range(self):
        """It as a :class:`kafkarec.log.selection.SegmentRange` (its segment, bytes and offsets)."""

    @property
    def share(self) -> int:
        """Which of the config's ``offset_ranges`` it reads (0 without them)."""

    @property
    def where(self) -> str:
        """What errors name: a local path, or its storage's URI."""

    @property
    def size(self) -> int:
        """The bytes it reads (what a planner weighs, and whether a read needs a pool)."""

    def compressed(self) -> bool:
        """Whether its first batch is compressed (a map's first bytes; a listed range: not known
        before it is read, False): how a read weighs its bytes when it decides on a pool."""

    @property
    def kept(self) -> tuple:
        """``(lo, hi)`` of the offsets kept of its records (None: unbounded)."""

    @property
    def offsets(self):
        """The offsets its segment may hold (:class:`kafkarec.log.segment.SegmentOffsets`, or None)."""

    @property
    def log_key(self):
        """The log its offsets grow in, which the offset-order rule is kept per."""

    def windows(self, max_bytes: Optional[int] = None) -> Iterable:
        """The pieces it is read as, in order: a local slice's cut at batch starts as they are found
        (its file's headers walked a window at a time, :func:`kafkarec.log.local.iter_windows`,
        windows of ``max_bytes``, None: a window's); a listed range as it is, cut when its turn
        comes."""

    def parts(self, split: Optional[Callable] = None) -> Iterable:
        """The pieces it is read as when its turn comes: a listed range cut by ``split(range,
        max_bytes)`` about a window apart (None: whole), a local window as it is."""

    def windowed(self, split: Optional[Callable] = None) -> bool:
        """Whether :meth:`windows` and :meth:`parts` read it in pieces of about a window (what the
        pool decodes ahead): a local slice always, a listed range when ``split`` cuts it."""

    def read_ahead(self, max_bytes: int) -> bool:
        """Whether reading it whole ahead of its turn pays (a listed range of at most
        ``max_bytes``: a round trip saved; a map, never)."""

    def open(self) -> _Buffers:
        """Its buffers to decode, in order (:class:`kafkarec.log.storage.Piece` s, and an error
        dict where a local file shrank after the read was planned), each valid until the
        returned reader is closed (a map stays open until then)."""

    def release(self, piece) -> None:
        """``piece``, one of its buffers, decoded: let go (a map's view released, so the map can close)."""

    def kept_in(self, use) -> "SegmentPiece":
        """It read through ``use``, a read's :class:`kafkarec.log.window_maps.MapUse`: a local
        slice's windows take their maps from those its source kept open; a listed range as it is."""


class ListedRange(NamedTuple):
    """One listed range a task reads (a :class:`SegmentPiece`): the storage holding it (pyarrow
    file systems pickle with their configuration), the segment range
    (kafkarec.log.selection.SegmentRange) and, with readCommitted, the spans of that segment to
    leave out (``[(position, size)]``)."""
    storage: object
    range: object
    skip: tuple = ()
    share: int = 0      # which of the config's offset_ranges it reads (0 without them)

    @property
    def topic(self) -> Optional[str]:
        return self.range.topic

    @property
    def partition(self) -> Optional[int]:
        return self.range.partition

    @property
    def path(self) -> str:
        return self.range.segment.path

    @property
    def where(self) -> str:
        return self.storage.uri(self.range.segment.path)

    @property
    def size(self) -> int:
        return range_bytes(self)

    def compressed(self) -> bool:
        """Not known before the range is read (a request): False."""
        return False

    @property
    def kept(self) -> tuple:
        """The offsets as selected."""
        return (self.range.min_offset, self.range.end_offset)

    @property
    def offsets(self):
        return self.range.offsets

    @property
    def log_key(self):
        """Its :func:`partition_key`."""
        return partition_key(self)

    def windows(self, max_bytes: Optional[int] = None) -> list:
        return [self]

    def parts(self, split: Optional[Callable] = None) -> Iterable:
        """Cut at offset-index positions (:func:`splitter`) about a window apart, when ``split`` is given."""
        from kafkarec.log import local
        return (self,) if split is None else split(self, local.READ_WINDOW_BYTES)

    def windowed(self, split: Optional[Callable] = None) -> bool:
        return split is not None

    def read_ahead(self, max_bytes: int) -> bool:
        return range_bytes(self) <= max_bytes

    def open(self) -> Iterator:
        """Its pieces walked (:func:`kafkarec.log.selection.iter_range_pieces`: bytes read, not
        mapped, so each stays valid after the walk moves on; closing closes the segment's file)."""
        from kafkarec.log import selection
        return selection.iter_range_pieces(self.storage, self.range)

    def release(self, piece) -> None:
        """Bytes read: nothing to let go."""

    def kept_in(self, use) -> "ListedRange":
        """Its bytes are read, not mapped (:meth:`open`): nothing to keep."""
        return self


class Found(NamedTuple):
    """What :mod:`kafkarec.log` found for a read: its pieces (:class:`SegmentPiece` s) in log
    order, how to cut and group them, and a packed task's pieces as the task reads them."""
    pieces: list
    split: Callable
    group: Callable
    as_read: Callable


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
    # (a strict read's cuts stop where its framing stops: readCommitted's walk frames as Kafka does)
    aborted = local.aborted_batches(segments, None if config.strict else spans) if config.read_committed else None
    return Found(local.slices(segments, aborted, local.log_starts(segments), strict=bool(config.strict)),
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


def found_listed(config, report: Optional[Callable] = None, listed: Optional[list] = None) -> Found:
    """Each path listed once (:func:`kafkarec.log.layout.scan_history`: local folders, object
    stores, tiered copies stitched with the log dirs), selected, bounded (``config.bounds``)
    and cut at offset-index positions (:mod:`kafkarec.log.selection`); no segment byte is read
    to plan except to find a timestamp's offset (readCommitted walks the selected partitions'
    logs).  What the listing met is reported by ``report(kind, path, storage, item)``
    (``"gap"``, ``"skipped"``, ``"not_live"``; default :func:`_report`: logged, a gap raised
    with ``fail_on_data_loss``).  ``listed``: the :class:`Listing` s of the config's paths, made
    already by :func:`listings` (a stream plans a trigger's ranges over the listing that found its
    ends: one listing a trigger), reported here as a listing of this plan would be."""
    from kafkarec.log import selection
    report = report or functools.partial(_report, config)
    if listed is not None:
        for one in listed:
            _report_listing(one, report)
    resolvers: dict = {}        # id(storage) -> (storage, its resolver): the storage kept, so the id stays its
    items: List[ListedRange] = []
    bounds = None if config.bounds.unbounded else config.bounds
    sel = config.selection if config.selection is not None else selection.parse_selection({})
    if config.every_record:
        sel = sel._replace(include_deleted_records=True)
    for one in (listings(config, report) if listed is None else listed):
        lay, st, resolver = one.layout, one.layout.storage, one.resolver
        resolvers[id(st)] = (st, resolver)
        if config.offset_ranges is None:
            shares = [(0, selection.plan(lay, sel, resolver, bounds=bounds))]
        else:       # each range planned apart, its pieces marked with its index (a stream's task)
            shares = [(i, selection.plan(lay, sel, resolver, offset_ranges=[r]))
                      for i, r in enumerate(config.offset_ranges)]
        ranges = [sr for _, share in shares for sr in share]
        skips = _read_committed_skips(one, ranges) if config.read_committed else {}
        items += [ListedRange(st, sr, tuple(skips.get(sr.segment.path, ())), i)
                  for i, share in shares for sr in share]

    elsewhere = splitter()      # ranges planned elsewhere (unpickled)

    def split(rr: ListedRange, max_bytes: int) -> list:
        known = resolvers.get(id(rr.storage))
        if known is None or known[0] is not rr.storage:
            return elsewhere(rr, max_bytes)
        return [rr._replace(range=sr) for sr in selection.split_ranges([rr.range], known[1], max_bytes)]

    return Found(items, split=split, group=partition_key, as_read=list)


class Listing(NamedTuple):
    """One path of a read listed (:func:`listings`): its ``layout``
    (:class:`kafkarec.log.layout.Layout`), the ``gaps`` of its stitched history, a
    ``resolver`` (:class:`kafkarec.log.selection.Resolver`) of its storage and ``walked``: what
    each partition's whole log was found to hold when it was first walked
    (:class:`kafkarec.scan.LogFacts`, by :meth:`kafkarec.scan.PartitionWalk.facts`), so that
    everything planned over this listing -- a hand-off point, a dry run's holes, a
    ``read_committed`` read's skipped spans -- walks each partition once.  A listing is a
    snapshot of the log: a command that must see the log grow lists again."""
    source: str
    layout: object
    gaps: list
    resolver: object
    walked: Optional[dict] = None

    def walks(self, keys=None) -> dict:
        """``{(topic, partition): PartitionWalk}`` of its partitions (those of ``keys`` when
        given), each keeping its walk's facts in this listing."""
        from kafkarec.log.layout import partition_index
        from kafkarec.scan._walk import PartitionWalk
        st = self.layout.storage
        if keys is None or len(keys) > 16:
            parts = [part for part in self.layout.partitions if keys is None or part.key in keys]
        else:       # a few partitions among many (a restore's read of one): looked up, not walked through
            index = partition_index(self.layout)
            parts = [index[k] for k in keys if k in index]
        return {part.key: PartitionWalk(st, part, _lost(self, part), self.resolver, self.walked) for part in parts}


def _lost(listed: "Listing", part) -> tuple:
    """The offset ranges of ``part`` that no copy of the listing's history holds."""
    return tuple((g.start, g.end) for g in listed.gaps if (g.topic, g.partition) == part.key)


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
        one = Listing(raw, lay, gaps, selection.Resolver(lay.storage), {})
        if report is not None:
            _report_listing(one, report)
        yield one


def _report_listing(listed: Listing, report: Callable) -> None:
    """What a listing met, told to ``report(kind, path, storage, item)``."""
    st = listed.layout.storage
    for gap in listed.gaps:
        report("gap", listed.source, st, gap)
    for d in listed.layout.skipped:
        report("skipped", listed.source, st, d)
    for item in listed.layout.not_live:
        report("not_live", listed.source, st, item)


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


def _read_committed_skips(listed: Listing, ranges) -> dict:
    """The aborted spans of every partition the ranges read, each judged over its whole log
    once per listing (:meth:`kafkarec.scan.PartitionWalk.judge`: a verdict the listing holds
    already is not walked again)."""
    wanted = {(sr.topic, sr.partition) for sr in ranges}
    skips: dict = {}
    for walk in listed.walks(wanted).values():
        skips.update(walk.judge().spans)
    return skips


def without_skips(rr, pieces):
    """``pieces`` of ``rr`` without its skipped spans (read_committed: aborted batches)."""
    from kafkarec.log.storage import without_spans
    if not rr.skip:
        return pieces
    return (part for piece in pieces
            for part in ((piece,) if isinstance(piece, dict) else without_spans(piece, rr.skip)))
