"""``dump`` and ``stats`` over any storage and with a selection.

When a PATH is a URI (``s3://bucket/kafka``) or a selection flag is given
(``--topics``, ``--start-offset``, ``--end-offset``, ``--start-time``,
``--end-time``), the commands read through :mod:`kafkarec.log.storage` (one
listing, ranged reads), :mod:`kafkarec.log.layout` (broker and tiered-storage
layouts, copies read once) and :mod:`kafkarec.log.selection` (the offset and
time bounds resolved through the side files), and print what they print for
local files, restricted to the selected records.
"""
from __future__ import annotations

import sys

from typing import Iterator, List, Optional, Tuple

import kafkarec
from kafkarec.log import layout as _layout
from kafkarec.cli import selection_args
from kafkarec.errors import DecodeError
from kafkarec.log import layout, selection, storage
from kafkarec.log.segment import SCAN_READ_OPTIONS, SkippedBatch, file_options

__all__ = ["RangeBatch", "wants_ranges", "plan", "iter_range_batches"]


class RangeBatch:
    """A selected batch read by ranged reads, in the shape of :class:`kafkarec.log.segment.FileBatch`:
    ``position`` is the batch's position in its file (the core's, the piece read with its
    origin); iterating yields the selected records only."""

    __slots__ = ("path", "position", "size_in_bytes", "magic", "batch", "_lo", "_hi")

    def __init__(self, path: str, batch, lo: Optional[int], hi: Optional[int]):
        self.path = path
        self.position = batch.position
        self.size_in_bytes = batch.size_in_bytes
        self.magic = batch.magic
        self.batch = batch
        self._lo, self._hi = lo, hi

    def __getattr__(self, name):
        return getattr(self.batch, name)

    def raw(self) -> memoryview:
        return self.batch.raw()

    def __iter__(self) -> Iterator:
        lo, hi = self._lo, self._hi
        for r in self.batch:
            if (lo is None or r.offset >= lo) and (hi is None or r.offset < hi):
                yield r


def wants_ranges(args) -> bool:
    """Whether the command must read through storage/selection (a URI or a selection flag)."""
    return (any(storage.is_uri(p) for p in args.paths)
            or selection_args.selection_from_args(args) is not None
            or bool(getattr(args, "tiered_storage_config", None))
            or bool(getattr(args, "tiered_storage", None)))


def plan(args, *, files: bool = False) -> List[Tuple[storage.Storage, selection.SegmentRange]]:
    """The selected segment ranges under every PATH, in topic, partition and offset order:
    each partition from its log start offset, as a consumer reads it, or with ``files`` (a
    command that shows the files, ``dump``) from its first segment."""
    sel = selection_args.selection_from_args(args) or selection.parse_selection({})
    if files:
        sel = sel._replace(include_deleted_records=True)
    options = selection_args.storage_options_from_args(args)
    out = []
    for path in args.paths:
        lay, gaps = layout.scan_history(path, getattr(args, "tiered_storage", None), options)
        st = lay.storage
        for gap in gaps:
            sys.stderr.write(f"kafkarec: data loss: offsets {gap.start}..{gap.end - 1} of {gap.topic}-"
                             f"{gap.partition} are in neither the remote copies nor {path}\n")
        for uri, why in lay.not_live:
            sys.stderr.write(f"kafkarec: not read: {uri}: {why}\n")
        resolver = selection.Resolver(st)
        out.extend((st, sr) for sr in selection.plan(lay, sel, resolver))
    return out


def iter_range_batches(st: storage.Storage, sr: selection.SegmentRange,
                       options: kafkarec.ReadOptions = SCAN_READ_OPTIONS) -> Iterator:
    """The batches of one selected range that hold selected records (:class:`RangeBatch`),
    then, if framing failed, a :class:`SkippedBatch` (``stopped``) whose error names the file
    position (and nothing after), as :meth:`SegmentBatchIterator.skipping` reports it."""
    lo, hi = sr.min_offset, sr.end_offset
    where = _layout.segment_uri(st, sr.segment)
    for piece in selection.iter_range_pieces(st, sr):
        it = kafkarec.iter_batches(piece.data, file_options(options), origin=piece.position)
        while True:
            try:
                b = next(it)
            except StopIteration:
                break
            except DecodeError as e:
                yield SkippedBatch(e.position, e, True)
                return
            try:
                first, last = b.base_offset, b.last_offset
            except DecodeError as e:        # a legacy wrapper that cannot be opened
                yield RangeBatch(where, b, lo, hi)
                continue
            if hi is not None and first >= hi:
                return
            if lo is not None and last < lo:
                continue
            yield RangeBatch(where, b, lo, hi)
