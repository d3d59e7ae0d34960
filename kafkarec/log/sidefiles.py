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

The ``*Check`` classes compare an index with its log while the log is scanned
once (see :func:`kafkarec.cli.verify.check_partition`), so a 1 GB segment is
never held in memory to verify its indexes.
"""
from __future__ import annotations

import base64
import bisect
import os
import re
import struct
from typing import Iterable, List, NamedTuple, Optional

from kafkarec._core import crc32c

__all__ = [
    "LOG_SUFFIX", "INDEX_SUFFIX", "TIME_INDEX_SUFFIX", "TXN_INDEX_SUFFIX",
    "PRODUCER_SNAPSHOT_SUFFIX", "CHECKPOINT_SUFFIX", "LEADER_EPOCH_CHECKPOINT",
    "PARTITION_METADATA", "BOOTSTRAP_CHECKPOINT", "OFFSET_CHECKPOINTS",
    "SideFileError", "CorruptIndexError", "CorruptSnapshotError", "CheckpointError",
    "file_name", "offset_from_file_name", "file_kind",
    "SnapshotPath", "parse_snapshot_path", "snapshot_file_name",
    "IndexEntry", "TimeIndexEntry", "OffsetIndex", "TimeIndex",
    "AbortedTxn", "TransactionIndex",
    "ProducerStateEntry", "ProducerSnapshot", "read_producer_snapshot",
    "EpochEntry", "read_leader_epoch_checkpoint", "check_leader_epochs",
    "read_offset_checkpoint", "PartitionMetadata", "read_partition_metadata",
    "uuid_to_base64", "SideProblem",
    "OffsetIndexCheck", "TimeIndexCheck", "TxnIndexCheck", "LeaderEpochCheck",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"
CHECKPOINT_SUFFIX = ".checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
# Per-log-dir text checkpoints; same version/count/entries shape, 3 tokens a line.
OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
    "log-start-offset-checkpoint", "cleaner-offset-checkpoint",
)

_INT32_MAX = 2**31 - 1


class SideFileError(ValueError):
    """A side file that cannot be read as what its name says it is."""


class CorruptIndexError(SideFileError):
    """Kafka's CorruptIndexException: the broker would rebuild this index."""


class CorruptSnapshotError(SideFileError):
    """Kafka's CorruptSnapshotException for producer state snapshots."""


class CheckpointError(SideFileError):
    """A malformed text checkpoint (Kafka raises IOException for these)."""


# --- file names --------------------------------------------------------------

def file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for ``(42, ".log")``."""
    return f"{base_offset:020d}{suffix}"


def offset_from_file_name(name: str) -> int:
    """The offset a segment file is named after (Kafka: the digits before the first dot)."""
    base = os.path.basename(name)
    head = base.split(".", 1)[0]
    # Java's Long.parseLong: optional sign, ASCII digits only.
    if not re.fullmatch(r"[+-]?[0-9]+", head):
        raise SideFileError(f"cannot read a base offset from the file name {base!r} "
                            f"(expected 20 digits, e.g. 00000000000000000000{LOG_SUFFIX})")
    return int(head)


def file_kind(name: str) -> Optional[str]:
    """What a file in a partition directory is, from its name; None if Kafka has no such file."""
    base = os.path.basename(name)
    if base == LEADER_EPOCH_CHECKPOINT:
        return "leader-epoch-checkpoint"
    if base == PARTITION_METADATA:
        return "partition-metadata"
    if base in OFFSET_CHECKPOINTS:
        return "offset-checkpoint"
    if base == BOOTSTRAP_CHECKPOINT:
        return "checkpoint"
    for suffix, kind in ((LOG_SUFFIX, "log"), (INDEX_SUFFIX, "index"),
                         (TIME_INDEX_SUFFIX, "timeindex"), (TXN_INDEX_SUFFIX, "txnindex"),
                         (PRODUCER_SNAPSHOT_SUFFIX, "snapshot"), (CHECKPOINT_SUFFIX, "checkpoint")):
        if base.endswith(suffix):
            return kind
    return None


class SnapshotPath(NamedTuple):
    """A KRaft snapshot file name: ``%020d-%010d.checkpoint[.part|.deleted]``."""
    end_offset: int
    epoch: int
    partial: bool
    deleted: bool


def parse_snapshot_path(name: str) -> Optional[SnapshotPath]:
    """Kafka's Snapshots.parse: None if the name has no snapshot suffix."""
    base = os.path.basename(name)
    partial = base.endswith(CHECKPOINT_SUFFIX + ".part")
    deleted = base.endswith(CHECKPOINT_SUFFIX + ".deleted")
    if not (partial or deleted or base.endswith(CHECKPOINT_SUFFIX)):
        return None
    m = re.match(r"([0-9]{20})-([0-9]{10})", base)
    if not m:
        raise SideFileError(f"{base!r} is not a KRaft snapshot name "
                            f"(expected <20-digit end offset>-<10-digit epoch>{CHECKPOINT_SUFFIX})")
    return SnapshotPath(int(m.group(1)), int(m.group(2)), partial, deleted)


def snapshot_file_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}{CHECKPOINT_SUFFIX}"


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


def check_leader_epochs(entries: Iterable[EpochEntry]) -> List[str]:
    """What LeaderEpochFileCache would refuse: epochs and start offsets must increase."""
    problems = []
    prev = None
    for e in entries:
        if e.epoch < 0 or e.start_offset < 0:
            problems.append(f"negative epoch or start offset in entry {e.epoch} {e.start_offset}")
        if prev is not None and (e.epoch <= prev.epoch or e.start_offset < prev.start_offset):
            problems.append(f"entry {e.epoch} {e.start_offset} does not follow "
                            f"{prev.epoch} {prev.start_offset} (epochs and start offsets must increase)")
        prev = e
    return problems


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


# --- checks against the log ---------------------------------------------------
#
# Each check is fed every batch of its segment during ONE scan (see
# kafkarec.cli.verify.check_partition) and reports at the end.  Problems carry a
# severity: "error" fails `kafkarec verify`, "warning" and "note" do not.

class SideProblem(NamedTuple):
    path: str
    position: Optional[int]
    offset: Optional[int]
    reason: str
    severity: str = "error"


class _SideFileCheck:
    """What every check of a side file has: the file and the problems found in it."""

    def __init__(self, index):
        self.index = index
        self.problems: List[SideProblem] = []

    def _add(self, reason, position=None, offset=None, severity="error"):
        self.problems.append(SideProblem(self.index.path, position, offset, reason, severity))


class _IndexCheck(_SideFileCheck):
    """Rules the offset and the time index share: their preallocated tail, offsets in the segment."""

    KIND = "index"

    def _tail(self, n_entries: int, active: bool) -> None:
        idx = self.index
        if not idx.preallocated_slots:
            return
        if not idx.tail_is_zero():
            self._add(f"{idx.preallocated_slots} slots after the last entry are not zero "
                      "(not a preallocated tail)")
        elif not active:
            self._add(f"untrimmed {self.KIND}: {idx.preallocated_slots} preallocated zero slots after "
                      f"{n_entries} entries (the segment was not closed cleanly)", severity="note")

    def _check_offset(self, i: int, offset: int, position: Optional[int]) -> None:
        base = self.index.base_offset
        if offset < base or offset - base > _INT32_MAX:
            self._add(f"entry {i} offset {offset} is outside the segment", position, offset)


class OffsetIndexCheck(_IndexCheck):
    """Every index entry must point at the start of the batch whose last offset it names."""

    def __init__(self, index: OffsetIndex, log_size: int, *, active: bool = False):
        super().__init__(index)
        self.log_size = log_size
        self._pending = {}
        self._structure(active)

    def _structure(self, active: bool) -> None:
        idx = self.index
        try:
            idx.sanity_check()
        except CorruptIndexError as e:
            self._add(str(e))
        entries = idx.entries()
        self._tail(len(entries), active)
        prev = None
        for i, e in enumerate(entries):
            if prev is not None and (e.offset <= prev.offset or e.position <= prev.position):
                self._add(f"entry {i} (offset {e.offset}, position {e.position}) does not follow "
                          f"offset {prev.offset}, position {prev.position}", e.position, e.offset)
            self._check_offset(i, e.offset, e.position)
            if not 0 <= e.position < self.log_size:
                self._add(f"entry {i} position {e.position} is outside the log "
                          f"({self.log_size} bytes)", e.position, e.offset)
            else:
                self._pending[e.position] = e.offset
            prev = e

    def see_batch(self, position: int, last_offset: int) -> None:
        expected = self._pending.pop(position, None)
        if expected is not None and expected != last_offset:
            self._add(f"Index offset: {expected}, log offset: {last_offset} "
                      "(the batch at this position ends at another offset)", position, expected)

    def finish(self, unchecked_from: Optional[int] = None) -> List[SideProblem]:
        """Report entries no batch matched; those at or after ``unchecked_from`` (where
        reading the log stopped) could not be checked and are only noted."""
        for position, offset in sorted(self._pending.items()):
            if unchecked_from is not None and position >= unchecked_from:
                self._add(f"index entry offset {offset} at position {position} was not checked "
                          "(the log could not be read that far)", position, offset, severity="note")
            else:
                self._add(f"index entry offset {offset} points at position {position}, "
                          "where no batch starts", position, offset)
        self._pending.clear()
        return self.problems


class TimeIndexCheck(_IndexCheck):
    """Entries must increase and name a batch whose max timestamp they hold."""

    KIND = "time index"

    def __init__(self, index: TimeIndex, *, active: bool = False):
        super().__init__(index)
        self._pending = {}
        self._structure(active)

    def _structure(self, active: bool) -> None:
        idx = self.index
        entries = idx.entries()
        self._tail(len(entries), active)
        if idx.preallocated_slots == 0 or idx.length % idx.ENTRY.size:
            # Kafka's sanity check reads the last slot; with a zero tail it always
            # fails (reported above as a note), so run it only on trimmed files.
            try:
                idx.sanity_check()
            except CorruptIndexError as e:
                self._add(str(e))
        prev = None
        for i, e in enumerate(entries):
            if prev is not None and (e.timestamp <= prev.timestamp or e.offset < prev.offset):
                self._add(f"Index timestamp: {e.timestamp}, Previously indexed timestamp: "
                          f"{prev.timestamp} (entry {i} is out of order)", None, e.offset)
            self._check_offset(i, e.offset, None)
            self._pending.setdefault(e.offset, []).append(e.timestamp)
            prev = e

    def see_batch(self, last_offset: int, max_timestamp: int) -> None:
        stamps = self._pending.pop(last_offset, None)
        if stamps is not None:
            for ts in stamps:
                if ts != max_timestamp:
                    self._add(f"Index timestamp: {ts}, log timestamp: {max_timestamp}", None, last_offset)

    def finish(self, complete: bool = True) -> List[SideProblem]:
        """Report entries no batch matched (only noted if the log was not read to its end)."""
        for offset in sorted(self._pending):
            if complete:
                self._add(f"Indexed offset: {offset} is not the last offset of any batch", None, offset)
            else:
                self._add(f"indexed offset {offset} was not checked (the log could not be read "
                          "that far)", None, offset, severity="note")
        self._pending.clear()
        return self.problems


class TxnIndexCheck(_SideFileCheck):
    """Each aborted transaction must end at an ABORT marker of its producer in this segment."""

    def __init__(self, index: TransactionIndex):
        super().__init__(index)
        self.entries: List[AbortedTxn] = []
        self._by_last = {}
        self._first_batches = {}
        try:
            self.entries = index.entries()
            index.sanity_check()
        except SideFileError as e:
            self._add(str(e))
        if index.trailing_bytes:
            self._add(f"{index.trailing_bytes} bytes after the last whole 34-byte entry")
        prev = None
        for t in self.entries:
            if t.first_offset > t.last_offset:
                self._add(f"first offset {t.first_offset} is after last offset {t.last_offset}",
                          None, t.last_offset)
            if prev is not None and t.last_offset <= prev.last_offset:
                self._add(f"last offset {t.last_offset} is not greater than the previous entry's "
                          f"{prev.last_offset}", None, t.last_offset)
            self._by_last[t.last_offset] = t
            prev = t

    @property
    def wants_markers(self) -> bool:
        return bool(self._by_last)

    def see_data_batch(self, producer_id: int, base_offset: int) -> None:
        """Remember where transactional batches start, to check first offsets."""
        self._first_batches.setdefault(producer_id, set()).add(base_offset)

    def see_marker(self, offset: int, producer_id: int, control_type: str) -> None:
        t = self._by_last.pop(offset, None)
        if t is None:
            if control_type == "ABORT":
                self._add(f"ABORT marker of producer {producer_id} at offset {offset} has no "
                          "entry in the transaction index", None, offset, severity="warning")
            return
        if control_type != "ABORT" or producer_id != t.producer_id:
            self._add(f"entry for producer {t.producer_id} ends at offset {offset}, which holds a "
                      f"{control_type} marker of producer {producer_id}", None, offset)

    def finish(self, log_start: Optional[int] = None, complete: bool = True) -> List[SideProblem]:
        for offset, t in sorted(self._by_last.items()):
            if complete:
                self._add(f"entry for producer {t.producer_id} ends at offset {offset}, where the log "
                          "has no control marker", None, offset)
            else:
                self._add(f"entry for producer {t.producer_id} ending at offset {offset} was not "
                          "checked (the log could not be read that far)", None, offset, severity="note")
        for t in self.entries:
            starts = self._first_batches.get(t.producer_id, ())
            # The transaction may have begun in an earlier (possibly deleted) segment.
            if log_start is not None and t.first_offset >= log_start and t.first_offset not in starts:
                self._add(f"first offset {t.first_offset} of producer {t.producer_id}'s aborted "
                          "transaction is not the start of one of its batches", None, t.first_offset)
        self._by_last.clear()
        return self.problems


class LeaderEpochCheck:
    """Batches must carry the epoch the checkpoint assigns to their base offset."""

    MAX_EXAMPLES = 5

    def __init__(self, path: str, entries: List[EpochEntry]):
        self.path = path
        self.entries = entries
        self._starts = [e.start_offset for e in entries]
        self.problems: List[SideProblem] = []
        self.mismatches = 0
        for reason in check_leader_epochs(entries):
            self.problems.append(SideProblem(path, None, None, reason))

    def expected_epoch(self, offset: int) -> Optional[int]:
        i = bisect.bisect_right(self._starts, offset) - 1
        return self.entries[i].epoch if i >= 0 else None

    def see_batch(self, log_path: str, position: int, base_offset: int, epoch: int) -> None:
        if epoch < 0 or not self.entries:
            return
        expected = self.expected_epoch(base_offset)
        if expected is not None and expected == epoch:
            return
        self.mismatches += 1
        if self.mismatches <= self.MAX_EXAMPLES:
            self.problems.append(SideProblem(
                log_path, position, base_offset,
                f"batch has partition leader epoch {epoch} but {self.path} assigns "
                f"{'no epoch' if expected is None else f'epoch {expected}'} to this offset",
                "warning"))

    def finish(self) -> List[SideProblem]:
        if self.mismatches > self.MAX_EXAMPLES:
            self.problems.append(SideProblem(
                self.path, None, None,
                f"{self.mismatches} batches in all disagree with the leader epoch checkpoint",
                "warning"))
        return self.problems
