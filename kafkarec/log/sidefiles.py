"""The files that sit next to Kafka's log segments, parsed and checked.

Layouts and messages follow the broker (``storage/.../log``, ``checkpoint``):

* ``%020d.index`` offset index: N x ``int32 relativeOffset | int32 position``.
* ``%020d.timeindex`` time index: N x ``int64 timestamp | int32 relativeOffset``.
  Both are preallocated (zero-filled) while their segment is active and trimmed
  on roll or clean shutdown, so an untrimmed file ends in zero entries.
* ``%020d.txnindex`` aborted transactions: N x 34 bytes
  ``int16 version | int64 producerId | int64 firstOffset | int64 lastOffset |
  int64 lastStableOffset``.
* ``%020d.snapshot`` producer state: ``int16 version (1) | uint32 crc |
  int32 count | count x 46-byte entries``, CRC-32C over bytes ``[6, end)``.
* ``leader-epoch-checkpoint`` and the log-dir offset checkpoints: text,
  ``version`` line, ``count`` line, one entry per line.
* ``partition.metadata``: text, ``version: 0`` and ``topic_id: <base64 uuid>``.
* KRaft snapshots ``%020d-%010d.checkpoint`` (end offset, epoch) are plain
  record batches; only their names are parsed here.

File names are :mod:`kafkarec.log.names`'s (re-exported here); the errors are
:mod:`kafkarec.errors`'s; the checks of these files against their log are
:mod:`kafkarec.log.checks` (which imports this module, never the other way round).
"""
from __future__ import annotations

import base64
import bisect
import os
import re
import struct
from typing import List, NamedTuple, Optional

from kafkarec._core import crc32c, iter_batches
from kafkarec.errors import CheckpointError, CorruptIndexError, CorruptSnapshotError, SideFileError
from kafkarec.log.names import (  # noqa: F401  (file names: re-exported, their home is names)
    BOOTSTRAP_CHECKPOINT, CHECKPOINT_SUFFIX, INDEX_SUFFIX, LEADER_EPOCH_CHECKPOINT, LOG_SUFFIX,
    OFFSET_CHECKPOINTS, PARTITION_METADATA, PRODUCER_SNAPSHOT_SUFFIX, TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX, SnapshotPath, file_kind, file_name, offset_from_file_name,
    parse_snapshot_path, snapshot_file_name)

__all__ = [
    "LOG_SUFFIX", "INDEX_SUFFIX", "TIME_INDEX_SUFFIX", "TXN_INDEX_SUFFIX",
    "PRODUCER_SNAPSHOT_SUFFIX", "CHECKPOINT_SUFFIX", "LEADER_EPOCH_CHECKPOINT",
    "PARTITION_METADATA", "BOOTSTRAP_CHECKPOINT", "OFFSET_CHECKPOINTS",
    "SideFileError", "CorruptIndexError", "CorruptSnapshotError", "CheckpointError",
    "file_name", "offset_from_file_name", "file_kind",
    "SnapshotPath", "parse_snapshot_path", "snapshot_file_name",
    "IndexEntry", "TimeIndexEntry", "OffsetIndex", "TimeIndex",
    "AbortedTxn", "TransactionIndex", "RebuiltIndex", "walked_offset_index", "INDEX_INTERVAL_BYTES",
    "ProducerStateEntry", "ProducerSnapshot", "read_producer_snapshot",
    "EpochEntry", "read_leader_epoch_checkpoint",
    "read_offset_checkpoint", "PartitionMetadata", "read_partition_metadata",
    "uuid_to_base64",
]

_INT32_MAX = 2**31 - 1


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


# --- offset and time indexes -------------------------------------------------

class IndexEntry(NamedTuple):
    offset: int      # absolute (base offset + relative offset)
    position: int


class TimeIndexEntry(NamedTuple):
    timestamp: int
    offset: int      # absolute


class _Index:
    """Shared by OffsetIndex and TimeIndex: a file of fixed-size big-endian entries."""

    ENTRY: struct.Struct

    def __init__(self, path: str, base_offset: Optional[int] = None, *, data: Optional[bytes] = None):
        self.path = path
        self.base_offset = offset_from_file_name(path) if base_offset is None else base_offset
        # Indexes are small (segment.index.bytes, 10 MiB by default): read them whole.
        self.data = _read(path) if data is None else bytes(data)
        self.length = len(self.data)
        # Kafka maps an existing index with floor(length / entry size) entries.
        self.slots = self.length // self.ENTRY.size
        self._entries = None

    def _raw(self, i: int):
        return self.ENTRY.unpack_from(self.data, i * self.ENTRY.size)

    def entries(self) -> list:
        """Entries up to the preallocated zero tail.

        DumpLogSegments stops at the first entry after the first whose offset
        equals the base offset ("since it is a sparse file, in the event of a
        crash there may be many zero entries"); so do we.
        """
        if self._entries is None:
            out = []
            for i in range(self.slots):
                e = self.entry(i)
                if i > 0 and e.offset == self.base_offset:
                    break
                out.append(e)
            self._entries = out
        return self._entries

    @property
    def preallocated_slots(self) -> int:
        """Slots after the last real entry (zero-filled while the segment is active)."""
        return self.slots - len(self.entries())

    def tail_is_zero(self) -> bool:
        start = len(self.entries()) * self.ENTRY.size
        return not any(self.data[start:])

    def __len__(self) -> int:
        return len(self.entries())

    def __iter__(self):
        return iter(self.entries())

    def _check_length(self, what: str) -> None:
        # The length rule of both sanity checks, with Kafka's message.
        if self.length % self.ENTRY.size != 0:
            raise CorruptIndexError(
                f"{what} {os.path.abspath(self.path)} is corrupt, found {self.length} bytes "
                f"which is neither positive nor a multiple of {self.ENTRY.size}")


class OffsetIndex(_Index):
    """A ``.index`` file: which file position holds the batch ending at an offset."""

    ENTRY = struct.Struct(">ii")

    def entry(self, i: int) -> IndexEntry:
        rel, pos = self._raw(i)
        return IndexEntry(self.base_offset + rel, pos)

    def last_entry(self) -> IndexEntry:
        # Kafka: the last of floor(length/8) slots, or (baseOffset, 0) if there are none.
        return self.entry(self.slots - 1) if self.slots else IndexEntry(self.base_offset, 0)

    def sanity_check(self) -> None:
        """OffsetIndex.sanityCheck, with Kafka's messages (run by brokers on startup)."""
        last = self.last_entry().offset
        if self.slots != 0 and last < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file {os.path.abspath(self.path)} has non-zero size "
                f"but the last offset is {last} which is less than the base offset {self.base_offset}")
        self._check_length("Index file")

    def lookup(self, offset: int) -> IndexEntry:
        """The entry with the largest offset <= ``offset``; (base offset, 0) if none."""
        entries = self.entries()
        i = bisect.bisect_right([e.offset for e in entries], offset) - 1
        return entries[i] if i >= 0 else IndexEntry(self.base_offset, 0)


class TimeIndex(_Index):
    """A ``.timeindex`` file: the largest timestamp so far and the offset of its batch."""

    ENTRY = struct.Struct(">qi")

    def entry(self, i: int) -> TimeIndexEntry:
        ts, rel = self._raw(i)
        return TimeIndexEntry(ts, self.base_offset + rel)

    def last_entry(self) -> TimeIndexEntry:
        # Kafka: the last slot, or (NO_TIMESTAMP, baseOffset) if there are none.
        return self.entry(self.slots - 1) if self.slots else TimeIndexEntry(-1, self.base_offset)

    def sanity_check(self) -> None:
        """TimeIndex.sanityCheck with Kafka's messages.

        It looks at the last *slot*, so an untrimmed (zero-tailed) time index
        fails it, as it does on a broker, which then rebuilds the index.
        """
        last = self.last_entry()
        if self.slots != 0:
            first_ts = self.entry(0).timestamp
            if last.timestamp < first_ts:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({os.path.abspath(self.path)}) has "
                    f"non-zero size but the last timestamp is {last.timestamp} which is less than "
                    f"the first timestamp {first_ts}")
            if last.offset < self.base_offset:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({os.path.abspath(self.path)}) has "
                    f"non-zero size but the last offset is {last.offset} which is less than the "
                    f"first offset {self.base_offset}")
        self._check_length("Time index file")


# --- transaction index -------------------------------------------------------

_ABORTED = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def java_repr(self) -> str:
        return (f"AbortedTxn(version={self.version}, producerId={self.producer_id}, "
                f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
                f"lastStableOffset={self.last_stable_offset})")


class TransactionIndex:
    """A ``.txnindex`` file: the transactions aborted in its segment, in marker order."""

    ENTRY_SIZE = _ABORTED.size  # 34

    def __init__(self, path: str, base_offset: Optional[int] = None, *, data: Optional[bytes] = None):
        self.path = path
        self.base_offset = offset_from_file_name(path) if base_offset is None else base_offset
        self.data = _read(path) if data is None else bytes(data)
        self.length = len(self.data)
        # Kafka reads whole 34-byte entries only and ignores a partial tail.
        self.trailing_bytes = self.length % self.ENTRY_SIZE

    def entries(self) -> List[AbortedTxn]:
        out = []
        for pos in range(0, self.length - self.ENTRY_SIZE + 1, self.ENTRY_SIZE):
            _, pid, first, last, lso = _ABORTED.unpack_from(self.data, pos)
            # AbortedTxn.version() reads ONE byte at offset 0 (the high byte of
            # the int16 written): mirror that rather than the written short.
            version = struct.unpack_from(">b", self.data, pos)[0]
            if version > 0:
                raise SideFileError(
                    f"Unexpected aborted transaction version {version} in transaction index "
                    f"{os.path.abspath(self.path)}, current version is 0")
            out.append(AbortedTxn(version, pid, first, last, lso))
        return out

    def __iter__(self):
        return iter(self.entries())

    def sanity_check(self) -> None:
        """TransactionIndex.sanityCheck: no entry may end before the segment starts."""
        for txn in self.entries():
            if txn.last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {txn.java_repr()} in index "
                    f"{os.path.abspath(self.path)} is less than start offset {self.base_offset}")


# --- producer state snapshots -----------------------------------------------

_SNAP_HEAD = struct.Struct(">hIi")
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")   # 46 bytes


def _decrement_sequence(sequence: int, decrement: int) -> int:
    # DefaultRecordBatch.decrementSequence (sequences wrap at INT32_MAX).
    if sequence < decrement:
        return _INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


class ProducerStateEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int          # -1: no batch metadata
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int   # -1: no ongoing transaction

    @property
    def has_batch_metadata(self) -> bool:
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int:
        return _decrement_sequence(self.last_sequence, self.offset_delta)


class ProducerSnapshot(NamedTuple):
    path: str
    offset: int               # from the file name: state as of (before) this offset
    version: int
    crc: int
    computed_crc: int
    entries: List[ProducerStateEntry]


def read_producer_snapshot(path: str, *, data: Optional[bytes] = None) -> ProducerSnapshot:
    """ProducerStateManager.readSnapshot, raising CorruptSnapshotError with Kafka's messages."""
    buf = _read(path) if data is None else bytes(data)
    try:
        offset = offset_from_file_name(path)
    except SideFileError:
        offset = -1
    # Kafka wraps every schema failure as "Snapshot failed schema validation: <msg>";
    # buffer underflows have a null message.
    if len(buf) < 2:
        raise CorruptSnapshotError("Snapshot failed schema validation: null")
    version = struct.unpack_from(">h", buf)[0]
    if version != 1:
        raise CorruptSnapshotError("Snapshot failed schema validation: "
                                   f"Snapshot contained an unknown file version {version}")
    if len(buf) < _SNAP_HEAD.size:
        raise CorruptSnapshotError("Snapshot failed schema validation: null")
    _, crc, count = _SNAP_HEAD.unpack_from(buf)
    remaining = len(buf) - _SNAP_HEAD.size
    if count < 0:
        raise CorruptSnapshotError("Snapshot failed schema validation: "
                                   "non-nullable field producerEntries was serialized as null")
    if count > remaining:
        raise CorruptSnapshotError(
            "Snapshot failed schema validation: Tried to allocate a collection of size "
            f"{count}, but there are only {remaining} bytes remaining.")
    if count * _SNAP_ENTRY.size > remaining:
        raise CorruptSnapshotError("Snapshot failed schema validation: null")
    computed = crc32c(memoryview(buf)[6:])
    if crc != computed:
        raise CorruptSnapshotError("Snapshot is corrupt (CRC is no longer valid). Stored crc: "
                                   f"{crc}. Computed crc: {computed}")
    entries = [ProducerStateEntry(*_SNAP_ENTRY.unpack_from(buf, _SNAP_HEAD.size + i * _SNAP_ENTRY.size))
               for i in range(count)]
    return ProducerSnapshot(path, offset, version, crc, computed, entries)


# --- text checkpoints ---------------------------------------------------------

def _lines(path: str, data: Optional[bytes]) -> List[str]:
    text = (_read(path) if data is None else data).decode("utf-8", "replace")
    # BufferedReader.readLine: \n, \r or \r\n end a line; no empty line after the last.
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _num(token: str, bits: int) -> Optional[int]:
    """Java's Integer/Long.parseInt: optional sign, ASCII digits, in range; else None.

    Leading zeros are allowed, as in Java; the significant digits are
    bounded before converting (Python refuses decimal strings of more than
    4,300 digits with a ValueError)."""
    m = re.fullmatch(r"([+-]?)0*([0-9]{0,19})", token)
    if m is None or not any(c.isdigit() for c in token):
        return None
    value = int(m.group(1) + (m.group(2) or "0"))
    return value if -(2**(bits - 1)) <= value < 2**(bits - 1) else None


def _java_int(line: str, path: str, bits: int = 32) -> int:
    value = _num(line, bits)
    if value is None:
        raise CheckpointError(f"Malformed line in checkpoint file [{os.path.abspath(path)}]: {line}")
    return value


def _read_checkpoint(path: str, data: Optional[bytes], parse_entry) -> list:
    """CheckpointFile.CheckpointReadBuffer.read for version-0 checkpoints."""
    lines = _lines(path, data)
    if not lines:
        return []
    version = _java_int(lines[0], path)
    if version != 0:
        raise CheckpointError(f"Unrecognised version:{version}, expected version: 0 "
                              f"in checkpoint file at: {os.path.abspath(path)}")
    if len(lines) < 2:
        return []
    expected = _java_int(lines[1], path)
    entries = []
    for line in lines[2:]:
        tokens = re.split(r"\s+", line)
        while tokens and tokens[-1] == "":   # Java's split drops trailing empty strings
            tokens.pop()
        entry = parse_entry(tokens)
        if entry is None:
            raise CheckpointError(f"Malformed line in checkpoint file [{os.path.abspath(path)}]: {line}")
        entries.append(entry)
    if len(entries) != expected:
        raise CheckpointError(f"Expected [{expected}] entries in checkpoint file "
                              f"[{os.path.abspath(path)}], but found only [{len(entries)}]")
    return entries




class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def read_leader_epoch_checkpoint(path: str, *, data: Optional[bytes] = None) -> List[EpochEntry]:
    """``leader-epoch-checkpoint``: ``0``, count, then ``epoch startOffset`` lines."""
    def entry(tokens):
        if len(tokens) != 2:
            return None
        epoch, start = _num(tokens[0], 32), _num(tokens[1], 64)
        return None if epoch is None or start is None else EpochEntry(epoch, start)
    return _read_checkpoint(path, data, entry)


def read_offset_checkpoint(path: str, *, data: Optional[bytes] = None) -> List[tuple]:
    """A log-dir offset checkpoint: ``0``, count, then ``topic partition offset`` lines."""
    def entry(tokens):
        if len(tokens) != 3:
            return None
        partition, offset = _num(tokens[1], 32), _num(tokens[2], 64)
        return None if partition is None or offset is None else (tokens[0], partition, offset)
    return _read_checkpoint(path, data, entry)


class PartitionMetadata(NamedTuple):
    version: int
    topic_id: str       # Kafka's base64url form, as in the file


def uuid_to_base64(raw16: bytes) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw16).rstrip(b"=").decode("ascii")


def read_partition_metadata(path: str, *, data: Optional[bytes] = None) -> PartitionMetadata:
    """PartitionMetadataReadBuffer.read: ``version: N`` then ``topic_id: <uuid>``."""
    lines = _lines(path, data)
    where = os.path.abspath(path)

    def malformed(line):
        return CheckpointError(f"Malformed line in checkpoint file [{where}]: {line}")

    line = lines[0] if lines else None
    parts = re.split(r":\s+", line) if line is not None else []
    if len(parts) != 2:
        raise malformed(line)
    version = _num(parts[1], 32)
    if version is None:
        raise malformed(line)
    if version < 0:
        raise CheckpointError(f"Unrecognized version of partition metadata file + ({where}): {version}")
    line = lines[1] if len(lines) > 1 else None
    parts = re.split(r":\s+", line) if line is not None else []
    if len(parts) != 2:
        raise malformed(line)
    topic_id = parts[1]
    if len(topic_id) > 24:
        raise CheckpointError(f"Input string with prefix `{topic_id[:24]}` is too long to be "
                              "decoded as a base64 UUID")
    try:
        raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    except ValueError:
        raw = b""
    if len(raw) != 16:
        raise CheckpointError(f"Input string `{topic_id}` decoded as {len(raw)} bytes, which is not "
                              "equal to the expected 16 bytes of a base64-encoded UUID")
    if raw == bytes(16):
        raise CheckpointError(f"Invalid topic ID in partition metadata file ({where})")
    return PartitionMetadata(version, topic_id)


# --- an offset index rebuilt from the log ---------------------------------------------

#: bytes of log between two entries of an offset index a walk makes (:func:`walked_offset_index`):
#: Kafka's ``log.index.interval.bytes`` default, which its own rebuild of an index keeps to
INDEX_INTERVAL_BYTES = 4096


def walked_offset_index(path: str) -> Optional[list]:
    """``[(offset, position)]`` of a local segment file as Kafka's ``.index`` holds them (a batch's
    last offset and its position, a batch once more than :data:`INDEX_INTERVAL_BYTES` were
    appended since the last entry), found by one walk of its batch headers (the core's, counted as
    a walk): what Kafka rebuilds when a segment's index is missing or corrupt (``LogSegment.recover``),
    for the resolver to find an offset bound's bytes without decoding the segment.  Up to where
    framing stops, as the read frames the file; None where a batch's offsets do not rise past the
    one before it (a damaged log: every batch is the read's to judge, so none is skipped)."""
    import mmap
    from kafkarec.log.segment import file_options
    from kafkarec.log.storage import HEADER_WALK_BYTES, count_read
    with open(path, "rb") as fh:
        if not os.fstat(fh.fileno()).st_size:
            return []
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        spans = iter_batches(mm, file_options(verify_crc=False)).spans()
        count_read(sum(min(size, HEADER_WALK_BYTES) for _, size in spans), path, walk=True, mapped=True)
        return _index_entries(mm, spans)
    finally:
        try:
            mm.close()
        except BufferError:     # an error's traceback holds the iterator: the collector closes it
            pass


_OFFSET = struct.Struct(">q")
_LAST_DELTA = struct.Struct(">i")


def _index_entries(data, spans) -> Optional[list]:
    """:func:`walked_offset_index`'s entries of the batches at ``spans`` in ``data``."""
    index = RebuiltIndex()
    for pos, size in spans:
        offset = _OFFSET.unpack_from(data, pos)[0]
        if data[pos + 16] == 2:     # a v2 batch: base offset, last offset delta
            index.add(pos, size, offset, offset + _LAST_DELTA.unpack_from(data, pos + 23)[0])
        else:                       # a legacy message (a compressed wrapper's: its last inner offset)
            index.add(pos, size, offset, offset)
    return index.entries()


class RebuiltIndex:
    """A segment's offset index rebuilt batch by batch, in file order, as Kafka rebuilds one
    (``LogSegment.recover``) and appends to it (``LogSegment.append``): an entry ``(the batch's
    last offset, its position)`` for a batch once more than :data:`INDEX_INTERVAL_BYTES` were
    appended since the last entry.  :meth:`entries` is None once a batch's offsets did not rise
    past the one before it (a damaged log: no batch of it may be skipped, the read judges every
    one).  Fed by a walk of the file's headers (:func:`walked_offset_index`) or by a partition's
    walk (:class:`kafkarec.scan._walk.PartitionWalk`: the walk a ``read_committed`` read makes
    anyway)."""
    __slots__ = ("_entries", "_since", "_prev", "_broken")

    def __init__(self):
        self._entries: list = []
        self._since = 0
        self._prev = -1
        self._broken = False

    def add(self, position: int, size: int, first: int, last: int) -> None:
        """The next batch: at ``position``, ``size`` bytes, offsets ``first`` to ``last``."""
        if self._broken or first <= self._prev or last < first:
            self._broken = True
            return
        self._prev = last
        if self._since > INDEX_INTERVAL_BYTES:
            self._entries.append((last, position))
            self._since = 0
        self._since += size

    def entries(self) -> Optional[list]:
        return None if self._broken else list(self._entries)
