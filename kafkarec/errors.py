"""The kafkarec exception hierarchy: every error kafkarec raises is a
:class:`KafkaRecError` and keeps the builtin base a caller would catch without
knowing kafkarec (``ValueError`` for bad bytes or arguments, ``OSError`` for
storage, ``ImportError`` for a missing codec library or optional dependency).

Every decode failure is a :class:`DecodeError` (also a ``ValueError``) that
carries the byte position in the caller's buffer and a reason; nothing here
reuses broker error codes.  Log files (:mod:`kafkarec.log`) add
:class:`SideFileError` and its kinds, :class:`TransformedSegmentError`,
:class:`SelectionError` and :class:`StorageError`.
"""
from __future__ import annotations

__all__ = [
    "KafkaRecError",
    "DecodeError",
    "TruncatedError",
    "CorruptBatchError",
    "InvalidRecordError",
    "ChecksumError",
    "UnsupportedCodecError",
    "CodecUnavailableError",
    "MissingExtraError",
    "DecompressionError",
    "DecompressionLimitError",
    "EncodeError",
    "InternalRecordError",
    "UnknownRecordTypeError",
    "SideFileError",
    "CorruptIndexError",
    "CorruptSnapshotError",
    "CheckpointError",
    "TransformedSegmentError",
    "RemoteObjectError",
    "SelectionError",
    "StorageError",
    "PropertiesError",
    "AvroSchemaError",
    "SchemaResolutionError",
    "AvroDecodeError",
    "ProtobufSchemaError",
    "ProtobufDecodeError",
    "JsonSchemaError",
    "RegistryError",
    "ColumnOverflowError",
    "UsageError",
    "BackfillError",
    "LayoutError",
    "BrokerError",
    "RestoreError",
    "LogDirWriteError",
    "MalformedBatchError",
    "OffsetOrderError",
    "ConnectError",
    "KafkaRecWarning",
    "IndexWarning",
    "HandOffRefusedError",
    "HandOffOverlapError",
    "ConnectorFailedError",
]


class KafkaRecError(Exception):
    """Root of every error raised by kafkarec.

    ``retriable``: whether the same work may succeed when tried again unchanged (a coordinator
    loading, a broker or leader not available, a request timed out, an object store throttling or
    answering 5xx).  False unless the place that read the failure says so: Kafka's client errors
    in :mod:`kafkarec._client`, object stores' in :func:`kafkarec.log.storage.storage_error`."""
    retriable: bool = False


class DecodeError(KafkaRecError, ValueError):
    """Bytes that are not a valid Kafka record batch.

    ``position`` is the byte offset in the buffer given to the decoder (for a
    record inside a compressed batch: the batch's position, with
    ``decompressed_position`` the offset inside the decompressed payload).
    """

    def __init__(
        self,
        reason: str,
        position: int,
        *,
        batch_position: int | None = None,
        decompressed_position: int | None = None,
    ) -> None:
        self.reason = reason
        self.position = position
        self.batch_position = batch_position
        self.decompressed_position = decompressed_position
        where = f"at byte {position}"
        if decompressed_position is not None:
            where += f" (decompressed byte {decompressed_position})"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):  # keep errors picklable across Spark workers
        return (
            _rebuild,
            (type(self), self.reason, self.position, self.batch_position,
             self.decompressed_position, self.__dict__),
        )


def _rebuild(cls, reason, position, batch_position, decompressed_position, state):
    err = cls.__new__(cls)
    DecodeError.__init__(
        err, reason, position,
        batch_position=batch_position, decompressed_position=decompressed_position,
    )
    err.__dict__.update(state)
    return err


class TruncatedError(DecodeError):
    """The data ends before the structure it declares (a cut-off batch)."""


class CorruptBatchError(DecodeError):
    """A batch or message-set entry whose framing or header is invalid."""


class InvalidRecordError(DecodeError):
    """A record inside a batch is malformed (lengths, varints, counts)."""


class ChecksumError(CorruptBatchError):
    """The stored CRC does not match the bytes."""

    def __init__(self, reason: str, position: int, *, expected: int, actual: int,
                 **kw) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(reason, position, **kw)


class UnsupportedCodecError(CorruptBatchError):
    """A compression id that Kafka does not define or allow here."""


class DecompressionError(CorruptBatchError):
    """A compressed payload that its codec cannot decode."""


class DecompressionLimitError(DecompressionError):
    """A payload that inflates past the decompression budget."""


class CodecUnavailableError(KafkaRecError, ImportError):
    """The library for a codec is not installed; the message names the package."""


class MissingExtraError(KafkaRecError, ImportError):
    """An optional dependency that is not installed (imported through :func:`kafkarec._extras.require`):
    one line naming it and the kafkarec extra that installs it, ``pip install 'kafkarec[arrow]'``.
    ``name`` is the missing module (as ModuleNotFoundError's), ``extra`` the extra.  Where kafkarec
    was imported from its wheel (``archive``: a bare Spark executor, ``python`` its interpreter) and
    no wheel of it was shipped beside that one, the line names that fix instead: its wheel in the
    wheelhouse, shipped with ``spark_udfs.ship(..., projects=...)``."""

    def __init__(self, name: str, distribution: str, extra: str, *, archive: "str | None" = None,
                 python: "str | None" = None, unfit: "str | None" = None) -> None:
        self.distribution = distribution
        self.extra = extra
        self.archive = archive
        self.python = python
        self.unfit = unfit
        if archive is None:
            text = f"{distribution} is not installed: pip install 'kafkarec[{extra}]'"
        else:
            shipped = (f"the wheel of it shipped beside that one does not fit ({unfit})" if unfit
                       else "no wheel of it was shipped beside that one")
            text = (f"{distribution} is not installed in {python or 'this Python'}, which imports kafkarec from "
                    f"its wheel ({archive}), and {shipped}: put its wheel for "
                    f"that Python in the wheelhouse (pip download --only-binary=:all: -d DIR {distribution}, "
                    f"or bash scripts/wheelhouse.sh DIR) and ship it: spark_udfs.ship(spark, wheelhouse=DIR, "
                    f"projects=['{distribution}'])")
        super().__init__(text, name=name)

    def __reduce__(self):      # picklable across Spark workers (ImportError's would lose the fields)
        return (_rebuild_missing_extra, (type(self), self.name, self.distribution, self.extra, self.archive,
                                         self.python, self.unfit))


def _rebuild_missing_extra(cls, name, distribution, extra, archive, python, unfit=None):
    return cls(name, distribution, extra, archive=archive, python=python, unfit=unfit)


class EncodeError(KafkaRecError, ValueError):
    """Invalid arguments for building a batch."""


class InternalRecordError(DecodeError):
    """A key or value of an internal topic (__consumer_offsets, __cluster_metadata, ...) that does not
    follow its schema: lengths, counts, varints, framing. ``position`` is the byte offset in that key/value."""


class UnknownRecordTypeError(InternalRecordError):
    """An internal-topic record whose type or version has no schema (raised in strict mode; by default
    such a record decodes as an "unknown" record with its raw bytes)."""


# --- log files, object stores, selection (kafkarec.log) --------------------------------

class SideFileError(KafkaRecError, ValueError):
    """A side file (index, snapshot, checkpoint, partition.metadata) that cannot be read as
    what its name says it is."""


class CorruptIndexError(SideFileError):
    """Kafka's CorruptIndexException: the broker would rebuild this index."""


class CorruptSnapshotError(SideFileError):
    """Kafka's CorruptSnapshotException for producer state snapshots."""


class CheckpointError(SideFileError):
    """A malformed text checkpoint (Kafka raises IOException for these)."""


class TransformedSegmentError(KafkaRecError, ValueError):
    """A remote segment that its storage plugin compressed or encrypted (not Kafka's bytes)."""


class RemoteObjectError(TransformedSegmentError):
    """An object a tiered-storage plugin wrote that cannot be turned back into Kafka's bytes:
    a manifest that is not one, a chunk index that points past its object, a chunk that does
    not decrypt (wrong key, bad tag) or decompress, a missing or wrong key pair.  ``object``
    names the object (a URI), ``chunk`` the chunk (its index, or None), ``reason`` says why."""

    def __init__(self, object: str, reason: str, *, chunk: "int | None" = None) -> None:
        self.object = object
        self.chunk = chunk
        self.reason = reason
        where = object if chunk is None else f"{object}, chunk {chunk}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):
        # pickled across processes (a Spark task's error to its driver) as it was made
        return (_remote_object_error, (self.object, self.reason, self.chunk))


def _remote_object_error(object: str, reason: str, chunk: "int | None") -> "RemoteObjectError":
    return RemoteObjectError(object, reason, chunk=chunk)


class PropertiesError(KafkaRecError, ValueError):
    """Java properties text (the tiered-storage plugin's ``tieredStorageConfig``) that Java's
    ``Properties.load`` refuses: ``source`` names the text, ``line`` the line, ``reason`` says why."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        self.source = source
        self.line = line
        self.reason = reason
        super().__init__(f"{source}, line {line}: {reason}")

    def __reduce__(self):      # picklable across Spark workers with its fields
        return (type(self), (self.source, self.line, self.reason))


class SelectionError(KafkaRecError, ValueError):
    """Selection options (topics, starting/ending offsets or timestamps) that cannot be
    satisfied or parsed."""


class StorageError(KafkaRecError, OSError):
    """A path or URI that cannot be resolved, listed or read: one line naming the URI and
    the reason (unreachable endpoint, no such bucket, access denied, expired credentials...).
    ``uri`` is the path or URI concerned (None when the failure names none); ``retriable``: the
    store throttled, answered 5xx or timed out (:func:`kafkarec.log.storage.storage_error`)."""

    def __init__(self, message: str, uri: "str | None" = None, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.uri = uri
        self.retriable = retriable

    def __str__(self) -> str:   # OSError's str() of a one-argument error is that argument
        return self.args[0] if self.args else ""

    def __reduce__(self):      # picklable across Spark workers with its uri
        return (_rebuild_storage, (type(self), self.args[0] if self.args else "", self.uri, self.retriable))


def _rebuild_storage(cls, message, uri, retriable):
    return cls(message, uri, retriable=retriable)


# --- Avro (kafkarec.avro) ---------------------------------------------------

class AvroSchemaError(KafkaRecError, ValueError):
    """An Avro schema that is not valid (or is recursive, too deep or too large);
    the message names the path inside the schema."""


class SchemaResolutionError(KafkaRecError, ValueError):
    """A writer schema that cannot be resolved to the reader schema under Apache
    Avro's rules; the message names the path of the field and the reason."""


class AvroDecodeError(DecodeError):
    """An Avro body that does not decode with its writer schema: ``position`` is
    the byte offset inside the value, ``reason`` says what is wrong."""


# --- Protobuf, JSON Schema, the registry (kafkarec.protobuf, .jsonschema, .registry) ---

class ProtobufSchemaError(KafkaRecError, ValueError):
    """A .proto schema that does not compile, names no such message, or cannot be a column (recursive)."""


class ProtobufDecodeError(DecodeError):
    """A Protobuf payload that does not decode with its writer schema: ``position`` is
    the byte offset inside the value, ``reason`` says what is wrong."""


class JsonSchemaError(KafkaRecError, ValueError):
    """A JSON Schema that is not valid JSON, or has no Arrow type (the message names the path)."""


class RegistryError(KafkaRecError, ValueError):
    """A registry source that cannot be read, or a subject, version or id it does not hold."""


# --- Arrow output -------------------------------------------------------------

class ColumnOverflowError(KafkaRecError, OverflowError):
    """An Arrow column that would pass its offsets' limit (2 GiB of data or 2^31 items for
    32-bit offsets): read fewer rows per table."""


# --- lakehouse tables (kafkarec.lakehouse) --------------------------------------

class BackfillError(KafkaRecError, ValueError):
    """A backfill that cannot be written without a gap or a duplicate: ``table`` names the table
    (a Delta path, an Iceberg identifier), ``topic`` and ``partition`` the partition concerned (None
    when the failure is the table's), ``reason`` says what the table holds and what was asked."""

    def __init__(self, table: str, reason: str, *, topic: "str | None" = None,
                 partition: "int | None" = None) -> None:
        self.table = table
        self.topic = topic
        self.partition = partition
        self.reason = reason
        where = table if topic is None else f"{table}, {topic}-{partition}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):      # picklable across Spark workers with its fields
        return (_rebuild_backfill, (type(self), self.table, self.reason, self.topic, self.partition))


def _rebuild_backfill(cls, table, reason, topic, partition):
    return cls(table, reason, topic=topic, partition=partition)


class LayoutError(KafkaRecError, ValueError):
    """A record that a live writer's row layout cannot hold as that writer means it (a timestamp
    whose microseconds pass a long): ``layout`` names the layout, ``topic``, ``partition`` and
    ``offset`` the record, ``reason`` says what does not fit."""

    def __init__(self, layout: str, reason: str, *, topic: "str | None" = None,
                 partition: "int | None" = None, offset: "int | None" = None) -> None:
        self.layout = layout
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.reason = reason
        super().__init__(f"{topic}-{partition} offset {offset}: {reason} (layout {layout})")

    def __reduce__(self):      # picklable across Spark workers with its fields
        return (_rebuild_layout, (type(self), self.layout, self.reason, self.topic, self.partition,
                                  self.offset))


def _rebuild_layout(cls, layout, reason, topic, partition, offset):
    return cls(layout, reason, topic=topic, partition=partition, offset=offset)


class BrokerError(KafkaRecError, OSError):
    """A broker asked for its partitions' offsets (``bootstrap``: the log start and the last stable
    offset, Kafka's ListOffsets) that did not answer, or answered with an error: ``bootstrap``
    names the cluster, ``topic`` and ``partition`` the partition (None when the failure is the
    request's), ``reason`` says why; ``retriable``: asking again may pass
    (:func:`kafkarec._client.retriable`)."""

    def __init__(self, bootstrap: str, reason: str, *, topic: "str | None" = None,
                 partition: "int | None" = None, retriable: bool = False) -> None:
        super().__init__(f"broker {bootstrap}: {reason}")
        self.bootstrap = bootstrap
        self.topic = topic
        self.partition = partition
        self.reason = reason
        self.retriable = retriable

    def __str__(self) -> str:   # OSError's str() of a one-argument error is that argument
        return self.args[0] if self.args else ""

    def __reduce__(self):      # picklable across Spark workers with its fields
        return (_rebuild_broker, (type(self), self.bootstrap, self.reason, self.topic, self.partition,
                                  self.retriable))


def _rebuild_broker(cls, bootstrap, reason, topic, partition, retriable=False):
    return cls(bootstrap, reason, topic=topic, partition=partition, retriable=retriable)


# --- restores into another cluster (kafkarec.restore) ----------------------------

class RestoreError(KafkaRecError, ValueError):
    """A restore (or its group translation or check) that cannot go on without a gap, a duplicate or
    a half-applied change: ``target`` names the target cluster (its bootstrap servers), ``topic`` and
    ``partition`` the partition concerned, ``group`` the consumer group (each None when the failure is
    not theirs), ``reason`` says what was found and where; ``retriable``: the same work may pass when
    tried again (:func:`kafkarec._client.retriable`: a coordinator loading, a timeout...)."""

    def __init__(self, target: str, reason: str, *, topic: "str | None" = None,
                 partition: "int | None" = None, group: "str | None" = None, retriable: bool = False) -> None:
        self.target = target
        self.retriable = retriable
        self.topic = topic
        self.partition = partition
        self.group = group
        self.reason = reason
        where = [f"target {target}"]
        if group is not None:
            where.append(f"group {group}")
        if topic is not None:
            where.append(f"{topic}-{partition}" if partition is not None else topic)
        super().__init__(f"{', '.join(where)}: {reason}")

    def __reduce__(self):      # picklable across Spark workers with its fields
        return (_rebuild_restore, (type(self), self.target, self.reason, self.topic, self.partition, self.group,
                                   self.retriable))


def _rebuild_restore(cls, target, reason, topic, partition, group, retriable=False):
    return cls(target, reason, topic=topic, partition=partition, group=group, retriable=retriable)


class LogDirWriteError(KafkaRecError, ValueError):
    """A broker's log dir that cannot be written as asked (``kafkarec restore --same-offsets``:
    :mod:`kafkarec.log.writer`): a broker holds it, it is another cluster's, a partition already holds
    records, a source segment that cannot be written as it is.  ``log_dir`` names the folder (None where
    the reason names the file), ``reason`` says what was found."""

    def __init__(self, log_dir: "str | None", reason: str) -> None:
        self.log_dir = log_dir
        self.reason = reason
        super().__init__(f"{log_dir}: {reason}" if log_dir else reason)

    def __reduce__(self):
        return (type(self), (self.log_dir, self.reason))


# --- the log reader (kafkarec.scan) -------------------------------------------

class MalformedBatchError(KafkaRecError, ValueError):
    """A Kafka record batch that cannot be decoded, in parse mode FAILFAST; the message names
    the file, the byte position, the batch's base offset and the reason."""


class OffsetOrderError(MalformedBatchError):
    """A batch whose offsets go back (at or below an offset read before it in its partition) or
    fall outside its segment's offsets (below its base, at or past the next segment's base): a
    base offset is outside the batch's CRC, so a damaged one still reads as a valid batch.  The
    message names the partition, the file, the byte position and the offsets."""


# --- warnings ---------------------------------------------------------------------

class KafkaRecWarning(UserWarning):
    """What kafkarec warns about through Python's :mod:`warnings` (the CLI prints it on stderr)."""


class IndexWarning(KafkaRecWarning):
    """A side file (``.index``, ``.timeindex``) that its log contradicts was not believed: its
    segment was scanned instead.  The rows are the same; the read cost more."""


# --- the command line ---------------------------------------------------------

class UsageError(KafkaRecError, ValueError):
    """Bad input that is not about Kafka data: missing paths, nothing Kafka found."""


# --- the lakehouse hand-off (kafkarec.lakehouse.connect) ---------------------

class ConnectError(KafkaRecError, RuntimeError):
    """A Kafka Connect REST call of the hand-off that failed or did not settle in time: ``connector``
    names the connector, ``request`` the call (``"PATCH /connectors/NAME/offsets"``), ``status`` the
    HTTP status (None when there was no answer) and ``body`` the worker's answer, ``reason`` says why."""

    def __init__(self, connector: str, request: str, reason: str, status: "int | None" = None,
                 body: str = "") -> None:
        self.connector = connector
        self.request = request
        self.reason = reason
        self.status = status
        self.body = body
        answer = "no answer" if status is None else f"HTTP {status}"
        super().__init__(f"connector {connector}: {request}: {reason} ({answer}){': ' + body if body else ''}")

    def __reduce__(self):
        return (type(self), (self.connector, self.request, self.reason, self.status, self.body))


class HandOffRefusedError(ConnectError):
    """The hand-off refused: the connector's consumer group is already past H (the sink has run from
    the hand-off point, and setting it back would make it write those rows again).  Its offsets
    were left as they were and it was resumed."""


class HandOffOverlapError(ConnectError):
    """The hand-off refused: an existing connector's consumer group is inside a backfilled range,
    above its start and below H.  Its sink has already read records below H, which the backfill
    wrote too: they are in its table, or in its control topic's ``DataWritten`` events (committed
    with those offsets), which its coordinator commits to the table once it runs again.  Setting
    the group to H would not take them back.  The connector was left STOPPED, its offsets as
    they were."""


class ConnectorFailedError(ConnectError):
    """The hand-off set the offsets and resumed the connector, but the connector or a task FAILED
    (``body``: its trace, from the Connect status API) or was not RUNNING in time."""
