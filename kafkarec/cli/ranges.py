"""``dump`` and ``stats`` over any storage and with a selection.

When a PATH is a URI (``s3://bucket/kafka``) or a selection flag is given
(``--topics``, ``--start-offset``, ``--end-offset``, ``--start-time``,
``--end-time``), the commands read through :mod:`kafkarec.log.storage` (one
listing, ranged reads), :mod:`kafkarec.log.layout` (broker and tiered-storage
layouts, copies read once) and :mod:`kafkarec.log.selection` (the offset and
time bounds resolved through the side files), all through kafkarec's one reader
(:class:`kafkarec.scan.LogScan`: its pieces, framed by :meth:`~kafkarec.scan.LogScan.framed`),
and print what they print for local files, restricted to the selected records.
"""
from __future__ import annotations

import sys

from typing import Iterator, List, NamedTuple, Optional

import kafkarec
from kafkarec.log import layout as _layout
from kafkarec.cli import selection_args
from kafkarec.errors import DecodeError
from kafkarec.log import selection, storage
from kafkarec.log.segment import SCAN_READ_OPTIONS, SkippedBatch

__all__ = ["RangeBatch", "RangePlan", "wants_ranges", "plan", "iter_range_batches"]


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


class RangePlan(NamedTuple):
    """One selected segment range: its ``storage`` and ``range``
    (:class:`kafkarec.log.selection.SegmentRange`), the reader's ``piece`` of it and the ``scan``."""
    storage: storage.Storage
    range: selection.SegmentRange
    piece: object
    scan: object


def wants_ranges(args) -> bool:
    """Whether the command must read through storage/selection (a URI or a selection flag)."""
    return (any(storage.is_uri(p) for p in args.paths)
            or selection_args.selection_from_args(args) is not None
            or bool(getattr(args, "tiered_storage_config", None))
            or bool(getattr(args, "tiered_storage", None)))


def _report(kind: str, path: str, st, item) -> None:
    """What the listing met, on stderr (a folder Kafka ignores is not read, quietly)."""
    if kind == "gap":
        sys.stderr.write(f"kafkarec: data loss: offsets {item.start}..{item.end - 1} of {item.topic}-"
                         f"{item.partition} are in neither the remote copies nor {path}\n")
    elif kind == "not_live":
        sys.stderr.write(f"kafkarec: not read: {item[0]}: {item[1]}\n")


def plan(args, *, files: bool = False) -> List[RangePlan]:
    """The selected segment ranges under every PATH, in topic, partition and offset order:
    each partition from its log start offset, as a consumer reads it, or with ``files`` (a
    command that shows the files, ``dump``) from its first segment (``every_record``)."""
    from kafkarec.scan import LogScan, ScanConfig
    config = ScanConfig(tuple(args.paths), selection=selection_args.selection_from_args(args),
                        tiered_storage=getattr(args, "tiered_storage", None),
                        storage_options=selection_args.storage_options_from_args(args),
                        fail_on_data_loss=False, listing=True, every_record=files)
    scan = LogScan(config)
    return [RangePlan(p.storage, p.range, p, scan) for p in scan.pieces(_report)]


def iter_range_batches(rp: RangePlan, options: kafkarec.ReadOptions = SCAN_READ_OPTIONS) -> Iterator:
    """The batches of one selected range that hold selected records (:class:`RangeBatch`),
    then, if framing failed, a :class:`SkippedBatch` (``stopped``) whose error names the file
    position (and nothing after), as :meth:`SegmentBatchIterator.skipping` reports it."""
    sr = rp.range
    where = _layout.segment_uri(rp.storage, sr.segment)
    for b in rp.scan.framed(rp.piece, options):
        if isinstance(b, DecodeError):
            yield SkippedBatch(b.position, b, True)
            return
        yield RangeBatch(where, b, sr.min_offset, sr.end_offset)
