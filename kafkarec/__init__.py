"""kafkarec: Apache Kafka's record format, decoded and built in Cython.

    >>> import kafkarec
    >>> for batch in kafkarec.iter_batches(data):
    ...     for record in batch:
    ...         print(record.offset, record.key, record.value)
"""
from typing import Any as _Any

from kafkarec._loader import load_core as _load_core

_core = _load_core()

from kafkarec._core import (  # noqa: E402
    ArrowBatchIterator,
    BatchIterator,
    ReadOptions,
    RecordBatchBuilder,
    LegacyBatchBuilder,
    build_batch,
    restamp,
    Record,
    RecordBatch,
    iter_batches,
    scan_records,
    arrow_schema,
    crc32c,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
)
from kafkarec import control as _control  # noqa: E402,F401  (registers the control value codec with the core)
from kafkarec.convert import ConversionResult, convert  # noqa: E402
from kafkarec.enums import Compression, ControlRecordType, TimestampType  # noqa: E402
from kafkarec.errors import (  # noqa: E402
    BackfillError,
    CheckpointError,
    ChecksumError,
    ConnectError,
    ConnectorFailedError,
    CodecUnavailableError,
    CorruptBatchError,
    CorruptIndexError,
    CorruptSnapshotError,
    DecodeError,
    DecompressionError,
    DecompressionLimitError,
    EncodeError,
    HandOffRefusedError,
    InternalRecordError,
    InvalidRecordError,
    KafkaRecError,
    MalformedBatchError,
    MissingExtraError,
    PropertiesError,
    SelectionError,
    SideFileError,
    StorageError,
    AvroSchemaError,
    SchemaResolutionError,
    AvroDecodeError,
    ColumnOverflowError,
    JsonSchemaError,
    ProtobufDecodeError,
    ProtobufSchemaError,
    RegistryError,
    TransformedSegmentError,
    RemoteObjectError,
    TruncatedError,
    UnknownRecordTypeError,
    UnsupportedCodecError,
    UsageError,
)

__version__ = "0.1.0"


def to_arrow(data: _Any, /, options: "ReadOptions | None" = None, *, decode: "str | None" = None,
             **kwargs: _Any) -> _Any:
    """Records of `data` as a pyarrow Table, read with ``options`` (a :class:`ReadOptions`, or its fields
    as keywords), ``origin`` (the file position of ``data[0]`` when `data` is a piece of a file: positions
    reported are ``origin`` + offset in `data`), ``start``/``end`` (positions as reported, as
    :func:`iter_batches`) and the other
    options of ``kafkarec._core.to_arrow``; with ``decode="consumer_offsets" | "transaction_state" |
    "share_group_state" | "cluster_metadata" | "remote_log_metadata"`` also the decoded columns of that
    internal topic (kafkarec.internal.columns; ``strict_types`` there)."""
    if decode is None:
        return _core.to_arrow(data, options, **kwargs)
    from kafkarec.internal.columns import to_arrow as _decoded
    return _decoded(data, options, decode=decode, **kwargs)


def iter_arrow(data: _Any, /, options: "ReadOptions | None" = None, *, decode: "str | None" = None,
               **kwargs: _Any) -> _Any:
    """A stream of pyarrow RecordBatches of `data` (``kafkarec._core.iter_arrow``: the same options as
    :func:`to_arrow`, ``origin`` and ``start``/``end`` included); ``decode=`` adds an internal topic's decoded columns to
    every batch, as in :func:`to_arrow`."""
    if decode is None:
        return _core.iter_arrow(data, options, **kwargs)
    from kafkarec.internal.columns import iter_arrow as _decoded
    return _decoded(data, options, decode=decode, **kwargs)


__all__ = [
    "ArrowBatchIterator", "BatchIterator", "ReadOptions", "RecordBatchBuilder", "LegacyBatchBuilder", "build_batch", "restamp", "Record", "RecordBatch", "iter_batches", "scan_records", "iter_arrow", "to_arrow", "arrow_schema", "crc32c",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "Compression", "ControlRecordType", "TimestampType",
    "KafkaRecError", "DecodeError", "TruncatedError", "CorruptBatchError",
    "InvalidRecordError", "ChecksumError", "UnsupportedCodecError",
    "CodecUnavailableError", "MissingExtraError", "DecompressionError", "DecompressionLimitError",
    "EncodeError", "InternalRecordError", "UnknownRecordTypeError", "SideFileError", "CorruptIndexError",
    "CorruptSnapshotError", "CheckpointError", "TransformedSegmentError", "RemoteObjectError", "SelectionError", "StorageError",
    "PropertiesError",
    "AvroSchemaError", "SchemaResolutionError", "AvroDecodeError", "ProtobufSchemaError", "ProtobufDecodeError",
    "JsonSchemaError", "RegistryError", "ColumnOverflowError", "UsageError", "BackfillError",
    "ConnectError", "HandOffRefusedError", "ConnectorFailedError", "MalformedBatchError",
    "convert", "ConversionResult",
]
