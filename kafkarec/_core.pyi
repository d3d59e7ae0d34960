"""Type stubs for the compiled core (kafkarec/_core.pyx)."""
from __future__ import annotations

import enum
from typing import Any, Callable, Hashable, Iterable, Iterator, Literal, Sequence

from kafkarec.enums import Compression, ControlRecordType, TimestampType
from kafkarec.errors import DecodeError

COMPILED: bool
CRC32C_HARDWARE: bool
CRC32C_NOGIL: bool
CRC32C_STATE_RELEASES: tuple[tuple[int, int], tuple[int, int]]
STORED_CODEC_BYTES: int
DEFAULT_MAX_DECOMPRESSED_BYTES: int

_Buffer = bytes | bytearray | memoryview | Any  # any object with the buffer protocol

def crc32c(data: _Buffer, /) -> int: ...

class Record:
    offset: int
    timestamp: int
    sequence: int
    attributes: int
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...
    @property
    def timestamp_type(self) -> TimestampType: ...
    @property
    def magic(self) -> int: ...
    @property
    def checksum(self) -> int | None: ...
    @property
    def crc_valid(self) -> bool | None:
        """A magic 0/1 message's own CRC-32 matches (LegacyRecord.isValid); None for v2."""
        ...
    @property
    def key_size(self) -> int: ...
    @property
    def value_size(self) -> int: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def control_type(self) -> ControlRecordType | None: ...
    @property
    def control_type_id(self) -> int | None: ...
    @property
    def control_key_version(self) -> int | None: ...
    @property
    def coordinator_epoch(self) -> int | None: ...
    @property
    def control_value(self) -> dict[str, Any] | None:
        """A control record's value with the field names of Kafka's JSON converters (as kafka-dump-log
        prints them): ``{"version": 0, "coordinatorEpoch": 5}`` for ABORT/COMMIT; KRaft values as their
        message's fields (``{"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": [...]}``,
        ``{"version": 0, "lastContainedLogTimestamp": ...}``, ``{"version": 0, "kRaftVersion": 1}``, voters with
        ``voterDirectoryId`` as Kafka's base64 UUID text); None for data records (see kafkarec.control)."""
        ...

class RecordBatch:
    options: ReadOptions
    position: int
    """Where the batch starts in the file: the read's ``origin`` plus its offset in the buffer."""
    size_in_bytes: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    trailing_bytes: int
    @property
    def base_offset(self) -> int:
        """The batch's first offset as Kafka's ``RecordBatch.baseOffset()``: v2, the header
        field (the first offset before compaction); v0/v1, the first inner message's offset
        (a compressed wrapper is opened, as ``AbstractLegacyRecordBatch.baseOffset()`` does)."""
        ...
    @property
    def header_errors(self) -> list[DecodeError]:
        """The strict header rules this batch breaks (unraised; empty if none, and for v0/v1)."""
        ...
    @property
    def last_offset_delta(self) -> int: ...
    @property
    def record_count(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def next_offset(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def compression(self) -> Compression: ...
    @property
    def timestamp_type(self) -> TimestampType: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def delete_horizon_ms(self) -> int | None: ...
    @property
    def crc_valid(self) -> bool: ...
    @property
    def computed_crc(self) -> int: ...
    def raw(self) -> memoryview: ...
    def payload(self) -> memoryview: ...
    def ensure_valid(self) -> None: ...
    def records(self) -> list[Record]: ...
    def __iter__(self) -> Iterator[Record]: ...

class ReadOptions:
    """How bytes are read, one object through every layer (core, log files, CLI, Spark)."""
    verify_crc: bool
    strict: bool
    max_decompressed_bytes: int
    file_rules: bool
    def __init__(self, *, verify_crc: bool = ..., strict: bool = ...,
                 max_decompressed_bytes: int = ..., file_rules: bool = ...) -> None: ...
    def replace(self, *, verify_crc: bool = ..., strict: bool = ..., max_decompressed_bytes: int = ...,
                file_rules: bool = ...) -> ReadOptions: ...

class BatchIterator(Iterator[RecordBatch]):
    options: ReadOptions
    origin: int
    """The file position of the buffer's byte 0 (``iter_batches(origin=...)``)."""
    @property
    def position(self) -> int:
        """Where the next batch would start (file position: ``origin`` + offset in the buffer)."""
        ...
    trailing_bytes: int
    exhausted: bool
    stop_reason: Literal["end", "truncated", "error"] | None
    stop_error: BaseException | None
    next_batch_size: int
    @property
    def resumable(self) -> bool: ...
    def resume(self) -> None: ...
    def spans(self, until: int = -1) -> list[tuple[int, int]]:
        """``(position, size)`` of the batches ``next()`` would yield, up to where it stops (not
        raised) or to a batch whose magic is outside 0..2."""
        ...
    def __iter__(self) -> BatchIterator: ...
    def __next__(self) -> RecordBatch: ...

def iter_batches(data: _Buffer, /, options: ReadOptions | None = ..., *, verify_crc: bool | None = ...,
                 strict: bool | None = ..., max_decompressed_bytes: int | None = ...,
                 start: int | None = ..., end: int | None = ..., file_rules: bool | None = ...,
                 origin: int = ...) -> BatchIterator:
    """The batches of ``data``.  ``origin`` is the file position of ``data[0]`` (``data`` a piece of a
    file): every position taken or reported (``start``/``end``, ``RecordBatch.position``, the iterator's
    ``position``, ``DecodeError.position``/``batch_position``) is ``origin`` + the offset in ``data``."""
    ...

LOG_OVERHEAD: int
HEADER_SIZE_UP_TO_MAGIC: int
RECORD_OVERHEAD_V0: int
V2_HEADER_SIZE: int

def stored_codec(data: _Buffer, /) -> int: ...
def is_plausible_batch(data: _Buffer, /, position: int, end: int | None = ...) -> bool:
    """Whether a whole batch a Kafka writer could have produced (strict header checks, CRC) starts at position."""
    ...

def scan_records(batch: RecordBatch, /) -> tuple[int, int]:
    """(record count, uncompressed records-section bytes); every record validated as iteration does."""
    ...

def java_utf8_decode(data: _Buffer, /) -> str:
    """``new String(data, UTF_8)`` as Java computes it (invalid sequences -> U+FFFD by Java's rules)."""
    ...

class RecordBatchBuilder:
    record_count: int
    def __init__(self, *, compression: Compression | int = ..., compression_level: int | None = ...,
                 base_offset: int = ..., timestamp_type: TimestampType | int = ...,
                 log_append_time: int | None = ..., producer_id: int = ..., producer_epoch: int = ...,
                 base_sequence: int = ..., is_transactional: bool = ..., is_control: bool = ...,
                 partition_leader_epoch: int = ..., delete_horizon_ms: int | None = ...,
                 max_batch_size: int | None = ..., snappy_framing: str = ...,
                 estimated_compression_ratio: float = ...) -> None: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def size_in_bytes(self) -> int: ...
    def has_room_for(self, value: _Buffer | None, key: _Buffer | None = ..., *,
                     timestamp: int | None = ..., headers: Iterable[tuple[str | bytes, bytes | None]] = ...) -> bool: ...
    def append(self, value: _Buffer | None, key: _Buffer | None = ..., *, timestamp: int | None = ...,
               headers: Iterable[tuple[str | bytes, bytes | None]] = ..., offset: int | None = ...) -> int: ...
    def append_control(self, control_type: ControlRecordType | int, value: dict[str, Any] | None = ..., *,
                       timestamp: int | None = ..., offset: int | None = ..., key_version: int = ...) -> int: ...
    def extend(self, values: Sequence[Any] | Any, keys: Sequence[Any] | Any | None = ...,
               timestamps: Sequence[int] | Any | None = ..., headers: Sequence[Any] | None = ...,
               offsets: Sequence[int] | Any | None = ...) -> RecordBatchBuilder: ...
    def build(self) -> bytes: ...

def build_batch(values: Sequence[Any] | Any, keys: Sequence[Any] | Any | None = ...,
                timestamps: Sequence[int] | Any | None = ..., headers: Sequence[Any] | None = ...,
                offsets: Sequence[int] | Any | None = ..., **options: Any) -> bytes: ...

class LegacyBatchBuilder:
    def __init__(self, *, magic: int = ..., compression: Compression | int = ...,
                 compression_level: int | None = ..., base_offset: int = ...,
                 timestamp_type: TimestampType | int | None = ..., log_append_time: int | None = ...,
                 wrapper_offset: str = ...) -> None: ...
    @property
    def record_count(self) -> int: ...
    def append(self, value: _Buffer | None, key: _Buffer | None = ..., *, timestamp: int | None = ...,
               headers: Iterable[Any] = ..., offset: int | None = ...) -> int: ...
    def build(self) -> bytes: ...

def restamp(buffer: bytearray | memoryview | Any, /, position: int = ..., *, base_offset: int | None = ...,
            partition_leader_epoch: int | None = ..., log_append_time: int | None = ...) -> int: ...
def restamp_run(buffer: bytearray | memoryview | Any, /, end: int, partition_leader_epoch: int,
                producer_id_base: int) -> tuple[int, int, int, bytes, list[tuple[int, int, int, int, int]],
                                                tuple[int, str] | None]: ...

def arrow_schema(*, batch_columns: bool = ..., timestamp_unit: str = ...,
                 value_layout: Literal["copy", "view"] = ...) -> Any: ...
class SpareBuffers:
    """Column buffers an engine let go of, kept (up to ``limit`` bytes) for the next chunks' columns
    (``iter_arrow``'s ``spare``)."""
    limit: int
    held: int
    min_bytes: int
    def __init__(self, limit: int, *, min_bytes: int = ...) -> None: ...
    def __len__(self) -> int: ...
    def clear(self) -> None: ...
    def close(self) -> None: ...
class ArrowBatchIterator(Iterator[Any]):
    """pyarrow.RecordBatch chunks; once ended, where framing stopped and why (as BatchIterator)."""
    options: ReadOptions
    origin: int
    position: int
    trailing_bytes: int
    stop_reason: Literal["end", "truncated", "error"] | None
    stop_error: BaseException | None
    def __iter__(self) -> ArrowBatchIterator: ...
    def __next__(self) -> Any: ...

def iter_arrow(data: _Buffer, /, options: ReadOptions | None = ..., *, topic: str | None = ...,
               partition: int | None = ..., include_control: bool = ..., batch_columns: bool = ...,
               read_committed: bool = ..., verify_crc: bool | None = ..., strict: bool | None = ...,
               max_decompressed_bytes: int | None = ..., max_rows: int = ..., max_bytes: int = ...,
               errors: str = ..., error_sink: list[dict[str, Any]] | None = ..., start: int | None = ...,
               end: int | None = ..., origin: int = ...,
               columns: Sequence[str] | None = ..., keys: Iterable[bytes] | None = ...,
               timestamp_unit: str = ..., value_layout: Literal["copy", "view"] = ...,
               spare: SpareBuffers | None = ...) -> ArrowBatchIterator:
    """Arrow batches of ``data``; ``origin`` (file position of ``data[0]``) as in ``iter_batches``: errors,
    ``error_sink`` entries, ``batchPosition`` and the iterator's ``position`` are file positions;
    ``columns``: the columns returned (without key, value and headers none of them is built);
    ``keys``: only the records with one of these keys (the others never built); ``timestamp_unit``:
    ``"ms"`` (Kafka's), ``"us"`` or ``"ns"``, written by the record loops (a chunk with a timestamp
    out of the unit's range comes in ``"ms"``)."""
    ...
def offsets_rise(data: _Buffer, /, start: int, count: int) -> bool:
    """Whether the int64 values ``start`` to ``start + count`` of ``data`` strictly increase."""
    ...
def record_walks(on: bool | None = ..., /) -> bool: ...
def meta_walk(columns: Sequence[str] | None, /, *, batch_columns: bool = ...,
              keys: Iterable[bytes] | None = ...) -> bool:
    """Whether ``iter_arrow`` with these reads v2 records by the meta-only walk."""
    ...
def error_record(exc: BaseException, batch: RecordBatch | None = ..., /) -> dict[str, Any]:
    """What iter_arrow(errors="skip") puts in error_sink for a DecodeError."""
    ...
def to_arrow(data: _Buffer, /, options: ReadOptions | None = ..., *, topic: str | None = ...,
             partition: int | None = ..., include_control: bool = ..., batch_columns: bool = ...,
             read_committed: bool = ..., verify_crc: bool | None = ..., strict: bool | None = ...,
             max_decompressed_bytes: int | None = ..., errors: str = ...,
             error_sink: list[dict[str, Any]] | None = ..., start: int | None = ..., end: int | None = ...,
             origin: int = ..., value_layout: Literal["copy", "view"] = ...) -> Any:
    """One pyarrow Table of ``data``; ``origin``, ``start``/``end`` as in ``iter_arrow``."""
    ...

# Kafka's message protocol (internal topics), _core_src/_kmsg.pxi; plans are built by kafkarec.internal.schema
class _KField:
    name: str
    kind: int
    nullable: bool
    elem_kind: int
    struct: _KStruct | None
    tag: int
    default: Any
    has_default: bool
    def __init__(self, name: str, kind: int, nullable: bool, elem_kind: int, struct: _KStruct | None,
                 tag: int, default: Any, has_default: bool) -> None: ...

class _KStruct:
    name: str
    version: int
    flexible: bool
    fields: tuple[_KField, ...]
    tagged_fields: tuple[_KField, ...]
    tagged: dict[int, _KField]
    min_size: int
    order: tuple[str, ...]
    def __init__(self, name: str, version: int, flexible: bool) -> None: ...
    def set_fields(self, fields: tuple[_KField, ...], tagged_fields: tuple[_KField, ...],
                   order: tuple[str, ...]) -> None: ...

def kmsg_decode(plan: _KStruct, data: _Buffer, start: int = ..., end: int = ..., *, json: bool = ...,
                strict: bool = ..., position: int = ..., exact: bool = ...) -> tuple[dict[str, Any], int]: ...
def kmsg_uvarint(data: _Buffer, start: int = ..., position: int = ..., *, strict: bool = ...) -> tuple[int, int]: ...
def kmsg_encode_uvarint(n: int) -> bytes: ...
def encode_varlong(value: int) -> bytes: ...
KMSG_KINDS: dict[str, int]

class _KSink:
    """Typed Arrow columns filled by plan walks (kafkarec.internal.columns)."""
    rows: int
    def __init__(self, kinds: tuple[int, ...]) -> None: ...
    def finish(self) -> list[Any]: ...

def coordinator_columns(key_arr: Any, value_arr: Any, offsets: Any, sink: _KSink, key_plans: list[Any],
                        value_plans: list[Any], col_type: int, col_version: int, col_known: int,
                        col_tombstone: int, strict: bool, strict_types: bool, topic: str) -> None:
    """Coordinator-topic keys/values (Arrow binary arrays) into `sink` by the schema plans."""
    ...

def read_options(options: ReadOptions | None = ..., /, *, verify_crc: bool | None = ..., strict: bool | None = ...,
                 max_decompressed_bytes: int | None = ..., file_rules: bool | None = ...) -> ReadOptions: ...

# Control records (_core_src/_control.pxi): dicts with Kafka's JSON field names (see kafkarec.control)
def set_control_codec(codec: Any, /) -> None: ...
def parse_control_key(key: _Buffer | None, /, position: int = ..., strict: bool = ...) -> tuple[int, int]: ...
def parse_end_txn_marker(value: _Buffer | None, /, position: int = ..., strict: bool = ...) -> tuple[int, int]: ...
def parse_control_value(type_id: int, value: _Buffer | None, /, position: int = ...,
                        strict: bool = ...) -> dict[str, Any] | None: ...
def encode_control_key(control_type: ControlRecordType | int, /, version: int = ...) -> bytes: ...
def encode_control_value(control_type: ControlRecordType | int, value: dict[str, Any], /) -> bytes: ...

# read_committed (_core_src/_transactions.pxi; public home kafkarec.transactions)
def aborted_batches(batches: Iterable[Any], key: Callable[[Any], Hashable] | None = ...,
                    trusted: Callable[[Any], bool] | None = ...) -> set[Any]: ...

# --- The one Arrow column builder (_core_src/_column.pxi); typed values into it (_typed_rows.pxi) ---
class ColumnKind(enum.IntEnum):
    """Arrow layouts of the one column builder (kafkarec/avro/program.py emits them)."""
    CK_NULL = 0
    CK_BOOL = 1
    CK_I32 = 2
    CK_I64 = 3
    CK_F32 = 4
    CK_F64 = 5
    CK_BIN = 6
    CK_DEC16 = 7
    CK_DEC32 = 8
    CK_STRUCT = 9
    CK_LIST = 10
    CK_I8 = 11
    CK_I16 = 12

class _Column:
    kind: int
    role: int
    arrow_type: Any
    def __len__(self) -> int: ...
    def to_arrow(self) -> Any: ...

def typed_column(kind: int, arrow_type: Any, nullable: bool = ..., children: list[_Column] | None = ...,
                 role: int = ...) -> _Column: ...

# --- Protobuf payloads to Arrow (_core_src/_protobuf.pxi; plans made by kafkarec/protobuf.py) ---
PB_COLUMN_KINDS: dict[str, int]

def pb_column(kind: int, arrow_type: Any, children: list[_Column] | None = ...) -> _Column: ...

class _PbLayout:
    """A decoder's column tree numbered in pre-order; each decode builds fresh columns of it."""
    def __init__(self, root: _Column) -> None: ...
    def number(self, col: _Column) -> int: ...

class _PbMsgPlan:
    def __init__(self, layout: _PbLayout, target: _Column, fields: list[tuple[Any, ...]], emit_defaults: bool = ...,
                 slot_defaults: list[Any] | None = ..., required: Sequence[int] = ...) -> None: ...

class _PbTimeLayout:
    def __init__(self, seconds_number: int, seconds_type: int, seconds_default: int,
                 nanos_number: int, nanos_type: int, nanos_default: int) -> None: ...

class _PbNode:
    name: str
    plan: _PbMsgPlan | None
    nested: list[_PbNode]
    def __init__(self, name: str, plan: _PbMsgPlan | None, nested: list[_PbNode]) -> None: ...

class _PbWriter:
    """A writer schema's top-level messages as a decode reads them."""
    root: _PbNode
    def __init__(self, top: list[_PbNode]) -> None: ...

def pb_decode_column(layout: _PbLayout, writers: dict[int, _PbWriter], values: Any, writer_ids: Any,
                     body_offsets: Any) -> tuple[Any, Any]:
    """Protobuf payloads -> (struct array, string array of per-row errors); see kafkarec.protobuf."""
    ...

# Avro bodies to Arrow (_core_src/_avro.pxi); programs are compiled by kafkarec.avro
class _AvroProgram:
    def __init__(self, ops: list[list[int]], kids: list[int], aux: list[int], blobs: list[bytes],
                 errors: list[str], root: int, raw_bytes: bool) -> None: ...

class _AvroRunner:
    def __init__(self, specs: list[tuple[int, list[int], bool]], types: list[Any], max_items: int,
                 root_col: int = ...) -> None: ...
    def set_program(self, writer_id: int, program: _AvroProgram) -> None: ...
    def decode(self, values: Any, writer_ids: Any | None, body_offsets: Any | None) -> tuple[Any, Any]:
        """Row i: values[i][body_offsets[i]:] with writer_ids[i]'s program -> (reader column, error strings)."""
        ...

def value_problem(position: int, reason: str) -> str:
    """The one wording of a typed row's error (Avro, Protobuf, JSON Schema, the registry):
    where in the record's value bytes (framing included) and why."""
    ...

def json_value_problems(bodies: Any) -> list[tuple[int, int, str]]:
    """(row, byte position in the payload, reason) for each payload of a large_binary array that is not
    exactly one JSON value (null rows skipped)."""
    ...

# Keyed state (_core_src/_keymap.pxi), used by kafkarec.table
KEY_MAP_SLOT_BYTES: int
KEY_MAP_LOAD_FACTOR: float
KEY_MAP_MIN_BYTES: int
KEY_MAP_START_BYTES: int
KEY_MAP_MAX_LEVEL: int

class KeyOffsetMap:
    """Each key's 128-bit digest -> the offset of its last record; a fixed budget of bytes."""
    capacity: int
    max_capacity: int
    max_entries: int
    entries: int
    level: int
    bucket: int
    def __init__(self, size_bytes: int, seed: int = ...) -> None: ...
    def start(self, level: int = ..., bucket: int = ...) -> None: ...
    def digest(self, key: bytes) -> bytes: ...
    def put(self, keys: Any, offsets: Any) -> bool: ...
    def latest(self, keys: Any, values: Any, offsets: Any) -> Any: ...

# The Avro interpreter's numbering (kafkarec/avro/program.py emits these; defined in _avro.pxi only).
class AvroNumericKind(enum.IntEnum):
    NK_INT = 0
    NK_LONG = 1
    NK_FLOAT = 2
    NK_DOUBLE = 3

class AvroOp(enum.IntEnum):
    OP_NULL_COL = 0
    OP_SET_NULL = 1
    OP_BOOL = 2
    OP_INT = 3
    OP_LONG = 4
    OP_NUM = 5
    OP_STR = 6
    OP_BYTES = 7
    OP_FIXED = 8
    OP_DEC_BYTES = 9
    OP_DEC_FIXED = 10
    OP_ENUM = 11
    OP_RECORD = 12
    OP_ARRAY = 13
    OP_MAP = 14
    OP_WUNION = 15
    OP_MEMBER = 16
    OP_ERROR = 17
    OP_DEFAULT = 18
    OP_SKIP_BOOL = 19
    OP_SKIP_INT = 20
    OP_SKIP_LONG = 21
    OP_SKIP_N = 22
    OP_SKIP_BYTES = 23
    OP_SKIP_RECORD = 24
    OP_SKIP_ARRAY = 25
    OP_SKIP_MAP = 26
    OP_SKIP_UNION = 27
    OP_NOP = 28

# the keys a read keeps, _core_src/_key_table.pxi
def checked_keys(keys: Iterable[bytes | bytearray | memoryview], where: str = "iter_arrow") -> frozenset[bytes]:
    """``keys`` as a frozenset of bytes; one key given bare, a key that is not bytes or no iterable
    is a ``UsageError`` naming ``where``."""
    ...

# Kafka's default partitioner, _core_src/_partitioner.pxi
def murmur2(key: _Buffer, /) -> int:
    """Kafka's ``Utils.murmur2(key)``: a signed 32-bit int, as Java returns it."""
    ...
def partition_for_key(key: _Buffer, num_partitions: int, /) -> int:
    """The partition Kafka's default partitioner names for a non-null key."""
    ...
def snappy_compressor() -> str: ...
class _ZstdContext:
    level: int
    compressor: Any
def zstd_context(level: int | None = ...) -> _ZstdContext:
    """Keep this thread's zstd compressor for ``level`` while the returned object lives."""
    ...
def zstd_contexts_held() -> dict[int, int]: ...
ZSTD_KEPT_CONTEXT_BYTES: int
def misplaced_keys(keys: Any, num_partitions: int, partition: int, /) -> int: ...

def evidence_encoding(keys: Sequence[bytes | None], values: Sequence[bytes | None], timestamps: Sequence[int],
                      headers: Sequence[Sequence[tuple[str | bytes, bytes | None]]]) -> bytes:
    """The restore evidence's "kafkarec-record-v1" encodings of records, one after another
    (kafkarec.restore.evidence)."""
