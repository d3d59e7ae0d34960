"""The kafkarec exception hierarchy.

Every decode failure is a :class:`DecodeError` (also a ``ValueError``) that
carries the byte position in the caller's buffer and a reason; nothing here
reuses broker error codes.
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
    "DecompressionError",
    "DecompressionLimitError",
    "EncodeError",
    "InternalRecordError",
    "UnknownRecordTypeError",
]


class KafkaRecError(Exception):
    """Root of every error raised by kafkarec."""


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


class EncodeError(KafkaRecError, ValueError):
    """Invalid arguments for building a batch."""


class InternalRecordError(DecodeError):
    """A key or value of an internal topic (__consumer_offsets, __cluster_metadata, ...) that does not
    follow its schema: lengths, counts, varints, framing. ``position`` is the byte offset in that key/value."""


class UnknownRecordTypeError(InternalRecordError):
    """An internal-topic record whose type or version has no schema (raised in strict mode; by default
    such a record decodes as an "unknown" record with its raw bytes)."""


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


__all__ += ["AvroSchemaError", "SchemaResolutionError", "AvroDecodeError"]
