"""kafkarec: Apache Kafka's record format, decoded and built in Cython.

    >>> import kafkarec
    >>> for batch in kafkarec.iter_batches(data):
    ...     for record in batch:
    ...         print(record.offset, record.key, record.value)
"""
from __future__ import annotations

import importlib as _importlib
import sys as _sys
from types import ModuleType as _ModuleType

from kafkarec._boot import loader as _loader

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy and pyright know the name)

# Lazy (PEP 562, as scientific Python's SPEC 1): ``import kafkarec`` loads neither the compiled core
# nor the modules that need it; each name below is imported from its home on first use.  The one list
# of the public names: ``__all__`` and ``dir()`` are derived from it, and the TYPE_CHECKING block
# below repeats it as imports only because type checkers cannot read a table (tests/test_layout.py
# holds the two equal).
_HOMES = {
    "kafkarec._core": (
        "ArrowBatchIterator", "BatchIterator", "ReadOptions", "RecordBatchBuilder",
        "LegacyBatchBuilder", "build_batch", "restamp", "Record", "RecordBatch", "iter_batches",
        "scan_records", "arrow_schema", "crc32c", "snappy_compressor", "DEFAULT_MAX_DECOMPRESSED_BYTES",
    ),
    "kafkarec.convert": ("ConversionResult", "convert"),
    "kafkarec.enums": ("Compression", "ControlRecordType", "TimestampType"),
    "kafkarec.errors": (
        "BackfillError", "CheckpointError", "ChecksumError", "ConnectError", "CodecUnavailableError",
        "CorruptBatchError", "CorruptIndexError", "CorruptSnapshotError", "DecodeError",
        "DecompressionError", "DecompressionLimitError", "EncodeError", "InternalRecordError",
        "InvalidRecordError", "KafkaRecError", "MalformedBatchError", "MissingExtraError",
        "PropertiesError", "SelectionError", "SideFileError", "StorageError", "AvroSchemaError",
        "SchemaResolutionError", "AvroDecodeError", "ColumnOverflowError", "JsonSchemaError",
        "ProtobufDecodeError", "ProtobufSchemaError", "RegistryError", "TransformedSegmentError",
        "RemoteObjectError", "TruncatedError", "UnknownRecordTypeError", "UnsupportedCodecError",
        "UsageError", "OffsetOrderError", "KafkaRecWarning", "IndexWarning", "LayoutError", "BrokerError", "RestoreError", "HandOffRefusedError", "HandOffOverlapError", "ConnectorFailedError",
        "LogDirWriteError",
    ),
}
_LAZY = {name: home for home, names in _HOMES.items() for name in names}

if TYPE_CHECKING:       # what type checkers read: the table above, as explicit re-exports (``X as X``);
    # tests/test_layout.py checks that these imports are the table's, name for name
    from typing import Any as _Any

    from kafkarec import _core
    from kafkarec._core import (
        ArrowBatchIterator as ArrowBatchIterator, BatchIterator as BatchIterator, ReadOptions as ReadOptions,
        RecordBatchBuilder as RecordBatchBuilder, LegacyBatchBuilder as LegacyBatchBuilder,
        build_batch as build_batch, restamp as restamp, Record as Record, RecordBatch as RecordBatch,
        iter_batches as iter_batches, scan_records as scan_records, arrow_schema as arrow_schema,
        crc32c as crc32c, snappy_compressor as snappy_compressor,
        DEFAULT_MAX_DECOMPRESSED_BYTES as DEFAULT_MAX_DECOMPRESSED_BYTES,
    )
    from kafkarec.convert import (
        ConversionResult as ConversionResult, convert as convert,
    )
    from kafkarec.enums import (
        Compression as Compression, ControlRecordType as ControlRecordType, TimestampType as TimestampType,
    )
    from kafkarec.errors import (
        BackfillError as BackfillError, CheckpointError as CheckpointError, ChecksumError as ChecksumError,
        ConnectError as ConnectError, CodecUnavailableError as CodecUnavailableError,
        CorruptBatchError as CorruptBatchError, CorruptIndexError as CorruptIndexError,
        CorruptSnapshotError as CorruptSnapshotError, DecodeError as DecodeError,
        DecompressionError as DecompressionError, DecompressionLimitError as DecompressionLimitError,
        EncodeError as EncodeError, InternalRecordError as InternalRecordError,
        InvalidRecordError as InvalidRecordError, KafkaRecError as KafkaRecError,
        MalformedBatchError as MalformedBatchError, MissingExtraError as MissingExtraError,
        PropertiesError as PropertiesError, SelectionError as SelectionError, SideFileError as SideFileError,
        StorageError as StorageError, AvroSchemaError as AvroSchemaError,
        SchemaResolutionError as SchemaResolutionError, AvroDecodeError as AvroDecodeError,
        ColumnOverflowError as ColumnOverflowError, JsonSchemaError as JsonSchemaError,
        ProtobufDecodeError as ProtobufDecodeError, ProtobufSchemaError as ProtobufSchemaError,
        RegistryError as RegistryError, TransformedSegmentError as TransformedSegmentError,
        RemoteObjectError as RemoteObjectError, TruncatedError as TruncatedError,
        UnknownRecordTypeError as UnknownRecordTypeError, UnsupportedCodecError as UnsupportedCodecError,
        UsageError as UsageError, OffsetOrderError as OffsetOrderError, KafkaRecWarning as KafkaRecWarning,
        IndexWarning as IndexWarning, LayoutError as LayoutError, BrokerError as BrokerError,
        RestoreError as RestoreError, HandOffRefusedError as HandOffRefusedError,
        HandOffOverlapError as HandOffOverlapError, ConnectorFailedError as ConnectorFailedError,
        LogDirWriteError as LogDirWriteError,
    )


def _core_loaded(core: _Any) -> None:
    """Part of the core's first load (:class:`kafkarec._boot.loader.CoreLoader` calls it, whichever
    import loads the core): give it the codec it asks for KRaft control values."""
    from kafkarec.control import _register
    _register(core)


_loader.install(_core_loaded)


def __getattr__(name: str) -> _Any:
    if name == "_core":         # kafkarec._core as an attribute: the core's first load
        return _importlib.import_module("kafkarec._core")
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'kafkarec' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value     # once: the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(_ModuleType):
    """kafkarec's module object.  The import system binds a submodule onto its package on the
    submodule's first import, now that ``import kafkarec`` no longer imports them all first:
    ``kafkarec.convert`` stays the function of its submodule (as it was), whichever comes first."""

    def __setattr__(self, name: str, value: _Any) -> None:
        if name in _LAZY and isinstance(value, _ModuleType):
            value = getattr(value, name)        # the submodule's own function of that name
        super().__setattr__(name, value)


# The module's class, as the language reference's "Customizing module attribute access" sets it.
_sys.modules[__name__].__class__ = _Package


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
        from kafkarec._core import to_arrow as _to_arrow
        return _to_arrow(data, options, **kwargs)
    from kafkarec.internal.columns import to_arrow as _decoded
    return _decoded(data, options, decode=decode, **kwargs)


def iter_arrow(data: _Any, /, options: "ReadOptions | None" = None, *, decode: "str | None" = None,
               **kwargs: _Any) -> _Any:
    """A stream of pyarrow RecordBatches of `data` (``kafkarec._core.iter_arrow``: the same options as
    :func:`to_arrow`, ``origin`` and ``start``/``end`` included); ``decode=`` adds an internal topic's decoded columns to
    every batch, as in :func:`to_arrow`."""
    if decode is None:
        from kafkarec._core import iter_arrow as _iter_arrow
        return _iter_arrow(data, options, **kwargs)
    from kafkarec.internal.columns import iter_arrow as _decoded
    return _decoded(data, options, decode=decode, **kwargs)


if not TYPE_CHECKING:    # derived from the table (type checkers take the ``X as X`` imports above instead)
    __all__ = [*_LAZY, "iter_arrow", "to_arrow"]
