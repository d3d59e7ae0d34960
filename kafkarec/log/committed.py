"""What a ``read_committed`` consumer sees of a partition's log, wherever the log is.

The rule itself (aborted transactions, and everything from the last stable offset on)
is :func:`kafkarec.transactions.aborted_batches`; this module feeds it one
partition's batches in offset order and says which byte spans of which segment file
to leave out:

* :func:`aborted_spans` - ``{segment path: [(position, size), ...]}`` from batches that
  know where they are (``path``, ``position``: a :class:`kafkarec.log.segment.FileBatch`
  of a local segment, or a :class:`LogBatch`);
* :func:`partition_batches` - the batches of a :class:`kafkarec.log.layout.PartitionLog`
  on any storage (``s3://``, local, ...), every segment walked once in bounded pieces;
* :func:`read_committed_spans` - both together, for one partition.

A transaction may begin in one segment and end in a later one, so a partition is judged
over its whole log, not over the part a selection reads.  The walk reads every byte of
the partition's segments (a data batch whose CRC fails opens no transaction, and only
its bytes tell), like a local read_committed plan does.
"""
from __future__ import annotations

from typing import Dict, Iterable, Iterator, List, Tuple

import kafkarec
from kafkarec import transactions
from kafkarec.errors import DecodeError
from kafkarec.log.layout import PartitionLog, open_segment
from kafkarec.log.storage import Storage, iter_pieces

__all__ = ["LogBatch", "aborted_spans", "partition_batches", "snapshot_batches", "partition_records",
           "read_committed_spans"]

# Headers only, Kafka's file framing: the rule reads CRCs and control records on demand.
_WALK_OPTIONS = kafkarec.ReadOptions(file_rules=True, verify_crc=False)

Spans = Dict[str, List[Tuple[int, int]]]


class LogBatch:
    """A :class:`kafkarec.RecordBatch` and where it is in the log: ``path`` (the segment
    file as its storage names it) and ``position`` (in that file).  Other attributes and
    iteration are the batch's."""

    __slots__ = ("path", "position", "batch")

    def __init__(self, path: str, position: int, batch):
        self.path = path
        self.position = position
        self.batch = batch

    def __getattr__(self, name):
        return getattr(self.batch, name)

    def __iter__(self):
        return iter(self.batch)


def aborted_spans(batches: Iterable) -> Spans:
    """``{path: [(position, size), ...]}`` (sorted) of the batches, among one partition's
    ``batches`` in offset order, that a read_committed consumer does not see.  A data batch
    failing its CRC opens and joins no transaction (the read reports it)."""
    out: Spans = {}
    for path, position, size in transactions.aborted_batches(
            batches, key=lambda b: (b.path, b.position, b.size_in_bytes),
            trusted=lambda b: b.crc_valid):
        out.setdefault(path, []).append((position, size))
    for spans in out.values():
        spans.sort()
    return out


def partition_batches(storage: Storage, part: PartitionLog, options=None) -> Iterator[LogBatch]:
    """The whole batches of one partition in offset order, as :class:`LogBatch` es.

    Each segment is read once, in pieces of whole batches (memory bounded by a piece), to the
    segment's ``end_offset`` when a later copy holds the offsets from there
    (:func:`kafkarec.log.layout.scan` de-duplication).  ``options`` None: the transaction
    rule's walk, headers only (the rule asks ``crc_valid`` itself), a segment's walk ending
    where framing does (a decode error, a magic outside 0..2: the reader reports those
    bytes).  ``options`` a :class:`kafkarec.ReadOptions` (with Kafka's file framing:
    :func:`kafkarec.log.segment.file_options`): a replay's walk, read with them (CRCs checked
    unless they say not), a batch that cannot be read raising its
    :class:`kafkarec.DecodeError` at its file position, as a segment read on disk does."""
    for seg in part.segments:
        with open_segment(storage, seg) as f:
            if options is None:
                yield from _segment_batches(f, seg.path, seg.end_offset)
            else:
                yield from _checked_batches(f, seg.path, seg.end_offset, options)


def partition_records(storage: Storage, part: PartitionLog, options, *, start=None, snapshot=None) -> Iterator:
    """The records of the data batches of :func:`partition_batches` read with ``options`` (a
    control batch's marker is no record of its topic), in offset order from offset ``start``
    (None: every record the log holds), or of a KRaft ``snapshot`` of the partition
    (:func:`snapshot_batches`): what a replay of the log's own records applies one by one
    (:meth:`kafkarec.scan.PartitionWalk.records`; the registry's ``_schemas``, below the scan)."""
    batches = (partition_batches(storage, part, options) if snapshot is None
               else snapshot_batches(storage, snapshot, options))
    for b in batches:
        if b.is_control or (start is not None and b.last_offset < start):
            continue
        for r in b:
            if start is None or r.offset >= start:
                yield r


def snapshot_batches(storage: Storage, snapshot, options) -> Iterator[LogBatch]:
    """The batches of one KRaft snapshot of a partition (a
    :attr:`kafkarec.log.layout.PartitionLog.snapshots` entry: batches as a segment's, of the
    state as of its end offset), read as :func:`partition_batches` reads a segment with
    ``options``."""
    with storage.open(snapshot.path, snapshot.size) as f:
        yield from _checked_batches(f, snapshot.path, None, options)


def _checked_batches(f, path: str, end_offset, options) -> Iterator[LogBatch]:
    for piece in iter_pieces(f, 0, None):
        for b in kafkarec.iter_batches(piece.data, options, origin=piece.position):
            if end_offset is not None and b.base_offset >= end_offset:
                return
            yield LogBatch(path, b.position, b)


def _segment_batches(f, path: str, end_offset) -> Iterator[LogBatch]:
    for piece in iter_pieces(f, 0, None):
        try:
            for b in kafkarec.iter_batches(piece.data, _WALK_OPTIONS, origin=piece.position):
                if not 0 <= b.magic <= 2:
                    return
                # the batch's first offset as Kafka's baseOffset() (a legacy wrapper is opened
                # only here, where a later copy's end has to be compared)
                if end_offset is not None and b.base_offset >= end_offset:
                    return
                yield LogBatch(path, b.position, b)
        except DecodeError:
            return
        if piece.stopped:
            return


def read_committed_spans(storage: Storage, part: PartitionLog) -> Spans:
    """:func:`aborted_spans` of :func:`partition_batches`: the byte spans of one partition's
    segments that a read_committed consumer does not see."""
    return aborted_spans(partition_batches(storage, part))
