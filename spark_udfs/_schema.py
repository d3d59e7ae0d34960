"""Spark and Arrow schemas of the decoded records (Spark's Kafka source layout).

Spark's Kafka source:  key binary, value binary, topic string, partition int,
offset long, timestamp timestamp, timestampType int,
headers array<struct<key:string,value:binary>> (null when a record has none).
kafkarec adds batch-level columns on request.  The Arrow data handed to Spark
must match Spark's own Arrow types exactly (timestamp[us, tz=UTC], list
element named ``element``), so everything goes through :func:`conform`.
"""
from __future__ import annotations

from pyspark.sql import types as T

__all__ = [
    "KAFKA_FIELDS", "BATCH_FIELDS", "RECORD_FIELDS", "DEFAULT_CORRUPT_COLUMN",
    "headers_type", "kafka_schema", "record_struct", "arrow_schema_for", "conform",
    "error_rows",
]

DEFAULT_CORRUPT_COLUMN = "_corrupt_record"


def headers_type() -> T.ArrayType:
    return T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                     T.StructField("value", T.BinaryType())]))


KAFKA_FIELDS = (
    ("key", T.BinaryType()), ("value", T.BinaryType()), ("topic", T.StringType()),
    ("partition", T.IntegerType()), ("offset", T.LongType()), ("timestamp", T.TimestampType()),
    ("timestampType", T.IntegerType()), ("headers", headers_type()),
)
BATCH_FIELDS = (
    ("producerId", T.LongType()), ("producerEpoch", T.ShortType()), ("sequence", T.IntegerType()),
    ("isTransactional", T.BooleanType()), ("isControl", T.BooleanType()),
    ("compression", T.StringType()), ("batchPosition", T.LongType()),
    ("batchBaseOffset", T.LongType()), ("partitionLeaderEpoch", T.IntegerType()),
    ("magic", T.ByteType()),
)
# What one record decoded from a binary column carries: topic and partition are
# not in the bytes (they are columns of the input row, e.g. the Kafka source's).
RECORD_FIELDS = tuple(f for f in KAFKA_FIELDS if f[0] not in ("topic", "partition"))


def kafka_schema(*, batch_columns: bool = False, corrupt_column: str | None = None,
                 with_topic_partition: bool = True) -> T.StructType:
    base = KAFKA_FIELDS if with_topic_partition else RECORD_FIELDS
    fields = [T.StructField(n, t, True) for n, t in base]
    if batch_columns:
        fields += [T.StructField(n, t, True) for n, t in BATCH_FIELDS]
    if corrupt_column:
        fields.append(T.StructField(corrupt_column, T.StringType(), True))
    return T.StructType(fields)


def record_struct(*, batch_columns: bool = False) -> T.StructType:
    """The struct of one record returned by kafkarec_decode (no topic/partition)."""
    return kafka_schema(batch_columns=batch_columns, with_topic_partition=False)


def arrow_schema_for(schema: T.StructType):
    """The Arrow schema Spark expects for ``schema`` (timestamps as UTC micros)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(schema, timezone="UTC")


def conform(batch, target, extra=None):
    """Project/convert a kafkarec Arrow batch to the Arrow schema ``target``.

    Columns of ``target`` are taken from ``batch`` by name, then from ``extra``
    (a dict name -> Array of the same length); any other column of ``target``
    becomes nulls.  Types are cast where they differ (timestamp[ms] ->
    timestamp[us, UTC], list field names).
    """
    import pyarrow as pa
    n = batch.num_rows
    names = batch.schema.names
    arrays = []
    for field in target:
        if extra is not None and field.name in extra:
            arr = extra[field.name]
        elif field.name in names:
            arr = batch.column(field.name)
        else:
            arr = pa.nulls(n, field.type)
        if arr.type != field.type:
            arr = arr.cast(field.type)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def error_rows(target, messages, fixed=None):
    """A batch of error rows: ``fixed`` columns (name -> scalar or list), the
    corrupt-record column (the one named by the single key of ``messages``),
    everything else null."""
    import pyarrow as pa
    (corrupt_name, texts), = messages.items()
    n = len(texts)
    arrays = []
    for field in target:
        if field.name == corrupt_name:
            arrays.append(pa.array(texts, field.type))
        elif fixed and field.name in fixed:
            value = fixed[field.name]
            if isinstance(value, list):
                arrays.append(pa.array(value, field.type))
            else:
                arrays.append(pa.array([value] * n, field.type))
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)
