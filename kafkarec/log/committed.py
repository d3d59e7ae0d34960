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
over its whole log, not over the part a selection reads.  The walk is a walk of batch
headers, counted apart from record reads (:func:`kafkarec.log.storage.process_walk_bytes`):
on a local file it seeks from header to header, reading a batch's 61 header bytes, and a
transactional batch whole (a data batch whose CRC fails opens no transaction, and only its
bytes tell; a control batch's marker is its record) as a legacy message or any batch the
header alone does not frame; on an object store it reads the segments whole in large
requests (a request per header would cost more than the bytes it saves) and keeps them for the
read that follows (:class:`kafkarec.log.storage.HeldSegments`), so that on an object store too
each byte is read once.
"""
from __future__ import annotations

import struct
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import kafkarec
from kafkarec import transactions
from kafkarec.errors import DecodeError
from kafkarec.log.layout import PartitionLog, held_offsets, open_segment, storage_of
from kafkarec.log.storage import HEADER_WALK_BYTES, BatchWalk, Piece, RangeFile, Storage, iter_pieces

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


class HeaderBatch:
    """What the transaction rule and a walk read of a v2 data batch that is not transactional,
    from its header alone (the batch's bytes are not read): where it is, its size, offsets,
    magic and attributes."""

    __slots__ = ("path", "position", "size_in_bytes", "base_offset", "last_offset", "producer_id")
    magic = 2
    is_transactional = False
    is_control = False
    crc_valid = True        # (never asked: the rule asks only transactional batches)

    def __init__(self, path: str, position: int, size: int, base_offset: int, last_offset: int, producer_id: int):
        self.path = path
        self.position = position
        self.size_in_bytes = size
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.producer_id = producer_id


def partition_batches(storage: Storage, part: PartitionLog, options=None, *, headers: bool = True,
                      ends: Optional[dict] = None) -> Iterator[LogBatch]:
    """The whole batches of one partition in offset order, as :class:`LogBatch` es.

    Each segment is read once, in pieces of whole batches (memory bounded by a piece), to the
    next segment's base offset when that one is a later copy holding the offsets from there
    (:func:`kafkarec.log.layout.scan` de-duplication; :attr:`kafkarec.log.segment.SegmentOffsets.walk_until`:
    this log's own next segment ends no walk, as it ends no read).  ``options`` None: the transaction
    rule's walk, headers only (the rule asks ``crc_valid`` itself), a segment's walk ending
    where framing does (a decode error, a magic outside 0..2: the reader reports those
    bytes).  ``options`` a :class:`kafkarec.ReadOptions` (with Kafka's file framing:
    :func:`kafkarec.log.segment.file_options`): a replay's walk, read with them (CRCs checked
    unless they say not), a batch that cannot be read raising its
    :class:`kafkarec.DecodeError` at its file position, as a segment read on disk does.

    The rule's walk (``options`` None) reads headers (see the module doc): a v2 data batch that
    is not transactional is a :class:`HeaderBatch`, not its bytes (``headers`` False: every
    batch whole, for a walker that reads records).  ``ends``, when given, gets
    ``{segment path: the last offset of its last whole batch (None: none)}`` for each segment
    walked to its end (no framing error, no later copy's cut): the log end a resolver would
    read again (:meth:`kafkarec.log.selection.Resolver.last_offset`)."""
    if options is None:
        _hold_ahead(storage, part)
    for i, seg in enumerate(part.segments):
        # where the segment's walk stops: the one rule of what a segment holds (a later copy's
        # base; not this log's own next segment's, which the read reads past too)
        until = held_offsets(part.segments, i).walk_until
        with open_segment(storage, seg) as f:
            if options is None:
                if isinstance(f, RangeFile):
                    f.walk = True
                if headers and isinstance(f, RangeFile) and storage_of(storage, seg).is_local:
                    yield from _segment_headers(f, seg.path, until, ends)
                else:
                    if isinstance(f, RangeFile):
                        # an object store's segment, read whole in one request: kept for the
                        # command's read, which then requests none of it again (within the
                        # storage's budget: kafkarec.log.storage.HeldSegments)
                        f.hold()
                    yield from _segment_batches(f, seg.path, until, ends)
            else:
                yield from _checked_batches(f, seg.path, until, options)


#: segments of one partition an object store's walk reads at once (a request's latency, not its
#: bytes, is what a walk of small segments waits on)
HOLD_THREADS = 8


def _hold_ahead(storage: Storage, part: PartitionLog) -> None:
    """Read the partition's object-store segments whole, several at once, and hold them
    (:meth:`kafkarec.log.storage.RangeFile.hold`, within the storage's budget) before the walk
    takes them in offset order: the walk then waits on one round of requests, not one a segment."""
    segs = [seg for seg in part.segments if seg.rsm is None and seg.manifest is None
            and storage_of(storage, seg).held is not None]
    if len(segs) < 2 or HOLD_THREADS < 2:
        return
    from concurrent.futures import ThreadPoolExecutor

    def hold(seg) -> None:
        with storage_of(storage, seg).open(seg.path, seg.size) as f:
            f.walk = True
            f.hold()
    with ThreadPoolExecutor(min(HOLD_THREADS, len(segs)), thread_name_prefix="kafkarec-hold") as pool:
        for _ in pool.map(hold, segs):
            pass


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
    for b in BatchWalk(iter_pieces(f, 0, None), options, until=end_offset):
        yield LogBatch(path, b.position, b)


def _segment_batches(f, path: str, end_offset, ends: Optional[dict] = None) -> Iterator[LogBatch]:
    last = None
    walk = BatchWalk(iter_pieces(f, 0, None), _WALK_OPTIONS, until=end_offset, errors="stop")
    try:
        for b in walk:
            if not 0 <= b.magic <= 2:
                return
            last = b.last_offset
            yield LogBatch(path, b.position, b)
    except DecodeError:         # (a legacy wrapper's last offset): the walk ends there
        return
    # walked to the segment's end, or to a batch cut off by the file's end (not counted: the log
    # end's rule); a framing error, or a later copy's cut, gives no log end
    if ends is not None and walk.stop_reason in ("end", "truncated"):
        ends[path] = last


# a v2 header up to the records count: base offset, length, leader epoch, magic, CRC, attributes,
# last offset delta, base and max timestamps, producer id
_V2_HEAD = struct.Struct(">qiibIhiqqq")
_TRANSACTIONAL, _CONTROL = 0x10, 0x20
#: the least a v2 batch's length can be (its header less the offset and length fields)
_V2_MIN_LENGTH = HEADER_WALK_BYTES - 12


def _segment_headers(f: RangeFile, path: str, end_offset, ends: Optional[dict] = None) -> Iterator[LogBatch]:
    """:func:`_segment_batches` seeking from header to header (a local file): a v2 data batch
    that is not transactional and whose header frames it (its size within the file) is a
    :class:`HeaderBatch` of its 61 header bytes; any other batch (transactional, control, legacy,
    or a header the core must judge) is read whole and framed by the core as before, so the walk
    stops where that walk stopped."""
    size = f.size
    pos = 0
    last = None
    while pos < size:
        head = f.read_at(pos, HEADER_WALK_BYTES)
        if len(head) == HEADER_WALK_BYTES and head[16] == 2:
            base, length, _epoch, _magic, _crc, attrs, delta, _t0, _t1, pid = _V2_HEAD.unpack_from(head)
            if (not attrs & (_TRANSACTIONAL | _CONTROL) and length >= _V2_MIN_LENGTH
                    and pos + 12 + length <= size):
                if end_offset is not None and base >= end_offset:
                    return
                last = base + delta
                yield LogBatch(path, pos, HeaderBatch(path, pos, 12 + length, base, last, pid))
                pos += 12 + length
                continue
        # the core frames this one from its whole bytes (to the file's end if its size is not known)
        whole = size - pos
        if len(head) >= 12:
            length = struct.unpack_from(">i", head, 8)[0]
            if 0 <= length and pos + 12 + length <= size:
                whole = 12 + length
        # (the header read already is not read again: the rest of the batch joins it)
        data = head if whole <= len(head) else head + f.read_at(pos + len(head), whole - len(head))
        # (a stopped piece: the walk's last, its batch maybe cut off by the file's end)
        walk = BatchWalk([Piece(pos, memoryview(data)[:whole], True)], _WALK_OPTIONS, errors="stop")
        b = next(iter(walk), None)
        if b is None:
            # cut off by the file's end: not counted in the log end
            if ends is not None and walk.stop_reason == "truncated":
                ends[path] = last
            return
        try:
            if not 0 <= b.magic <= 2:
                return
            if end_offset is not None and b.base_offset >= end_offset:
                return
            last = b.last_offset
        except DecodeError:
            return
        yield LogBatch(path, pos, b)
        pos += b.size_in_bytes
    if ends is not None:
        ends[path] = last


def read_committed_spans(storage: Storage, part: PartitionLog) -> Spans:
    """:func:`aborted_spans` of :func:`partition_batches`: the byte spans of one partition's
    segments that a read_committed consumer does not see."""
    return aborted_spans(partition_batches(storage, part))
