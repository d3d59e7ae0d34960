"""Spark and Arrow schemas of the decoded records, derived from kafkarec's own.

The columns are those of :func:`kafkarec.arrow_schema` (Spark's Kafka source
layout: key, value, topic, partition, offset, timestamp, timestampType,
headers; then, on request, the batch columns), each mapped to its Spark type,
plus one column of ours: ``timestampMs``, the record's timestamp as Kafka
stores it (milliseconds, a long).  Kafka accepts any millisecond value up to
``Long.MAX_VALUE``; Spark's timestamps (microseconds, documented range years
0001-9999) cannot hold them all.  A record whose timestamp is outside
0001-01-01..9999-12-31 UTC gets a null ``timestamp`` and keeps its value in
``timestampMs`` (modes PERMISSIVE and DROPMALFORMED); in mode FAILFAST it fails
the task naming the record.

The Arrow data handed to Spark must match Spark's own Arrow types exactly
(timestamp[us, tz=UTC], list element named ``element``): everything goes
through :func:`conform`, which takes every column by name from kafkarec's
output and refuses a column kafkarec did not produce.
"""
from __future__ import annotations

from pyspark.sql import types as T

__all__ = [
    "DEFAULT_CORRUPT_COLUMN", "RAW_TIMESTAMP", "MIN_TIMESTAMP_MS", "MAX_TIMESTAMP_MS",
    "spark_type", "batch_column_names", "read_schema", "kafka_schema", "record_struct", "arrow_schema_for",
    "conform", "handed_schema",
]

DEFAULT_CORRUPT_COLUMN = "_corrupt_record"
RAW_TIMESTAMP = "timestampMs"
# Spark's documented timestamp range (also Python's datetime's): 0001-01-01T00:00:00.000Z
# .. 9999-12-31T23:59:59.999Z, in Kafka's milliseconds.
MIN_TIMESTAMP_MS = -62135596800000
MAX_TIMESTAMP_MS = 253402300799999
# Columns of the input row rather than of the record bytes (the Kafka source's topic, partition).
NOT_IN_BYTES = ("topic", "partition")


def _core_schema(batch_columns: bool):
    from spark_udfs.ship.runtime import import_kafkarec
    return import_kafkarec().arrow_schema(batch_columns=batch_columns)


def spark_type(arrow_type) -> T.DataType:
    """The Spark type of one of kafkarec's Arrow types (a type this does not know
    is an error: the core and this mapping are out of step)."""
    import pyarrow as pa
    simple = [(pa.types.is_binary, T.BinaryType), (pa.types.is_string, T.StringType),
              (pa.types.is_int8, T.ByteType), (pa.types.is_int16, T.ShortType),
              (pa.types.is_int32, T.IntegerType), (pa.types.is_int64, T.LongType),
              (pa.types.is_boolean, T.BooleanType), (pa.types.is_timestamp, T.TimestampType)]
    for test, spark in simple:
        if test(arrow_type):
            return spark()
    if pa.types.is_dictionary(arrow_type):       # e.g. decoded record type names
        return spark_type(arrow_type.value_type)
    if pa.types.is_list(arrow_type):
        return T.ArrayType(spark_type(arrow_type.value_type))
    if pa.types.is_struct(arrow_type):
        return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in arrow_type])
    raise TypeError(f"kafkarec column type {arrow_type} has no Spark type in spark_udfs.read.schema")


def batch_column_names() -> list:
    """The columns kafkarec adds with ``batch_columns=True``."""
    base = set(_core_schema(False).names)
    return [n for n in _core_schema(True).names if n not in base]


def decoded_names(decode: str | None) -> list:
    """The columns the data source option ``decode`` adds (kafkarec.internal.columns)."""
    if not decode:
        return []
    from kafkarec.internal import columns
    return list(columns.decoded_schema(decode).names)


def read_schema(spec) -> T.StructType:
    """The columns of a read (a :class:`spark_udfs.read.spec.ReadSpec`) with binary keys and values:
    the one place a read's schema is built (typed reads replace key and value,
    :func:`spark_udfs.read.typed.typed_schema`)."""
    return kafka_schema(
        batch_columns=spec.config.batch_columns,
        corrupt_column=spec.config.corrupt_column if spec.config.mode == "PERMISSIVE" else None,
        decode=None if spec.config.listed else spec.columns.decode,
        include_headers=spec.columns.include_headers, cdc=spec.cdc is not None)


def kafka_schema(*, batch_columns: bool = False, corrupt_column: str | None = None,
                 with_topic_partition: bool = True, decode: str | None = None,
                 include_headers: bool = True, cdc: bool = False) -> T.StructType:
    """kafkarec's columns as Spark fields (``timestampMs`` after the Kafka
    source's, then the batch columns), and ``corrupt_column`` if given;
    ``headers`` only with ``include_headers`` (the Kafka source's includeHeaders);
    with ``cdc`` the change-event columns of :data:`kafkarec.cdc.CDC_FIELDS`."""
    base = _core_schema(False)
    core = _core_schema(batch_columns)
    fields = []
    for i, f in enumerate(core):
        if f.name in NOT_IN_BYTES and not with_topic_partition:
            pass
        elif f.name == "headers" and not include_headers:
            pass
        else:
            fields.append(T.StructField(f.name, spark_type(f.type), True))
        if i == len(base) - 1:
            fields.append(T.StructField(RAW_TIMESTAMP, T.LongType(), True))
    if decode:
        from kafkarec.internal import columns
        fields += [T.StructField(f.name, spark_type(f.type), True)
                   for f in columns.decoded_schema(decode)]
    if cdc:
        import pyarrow as pa
        from kafkarec.cdc import CDC_FIELDS
        fields += [T.StructField(name, spark_type(getattr(pa, type_name)()), True)
                   for name, type_name in CDC_FIELDS]
    if corrupt_column:
        fields.append(T.StructField(corrupt_column, T.StringType(), True))
    return T.StructType(fields)


def record_struct(*, batch_columns: bool = False) -> T.StructType:
    """The struct of one record returned by kafkarec_decode (no topic/partition)."""
    return kafka_schema(batch_columns=batch_columns, with_topic_partition=False)


class HandedSchema(T.StructType):
    """A read's schema as the server handed it to ``DataSource.reader()`` in Arrow (Sail: a
    ``pyarrow.Schema`` where PySpark hands a ``StructType``): Spark's fields, for every check by
    name and type, and the Arrow schema itself (:attr:`arrow`), what the server compares each
    batch with, types and time zones as it wrote them."""

    def __init__(self, arrow):
        from pyspark.sql.pandas.types import from_arrow_schema
        super().__init__(from_arrow_schema(arrow).fields)
        self.arrow = arrow


def handed_schema(schema) -> T.StructType:
    """The schema a server handed ``DataSource.reader()``/``streamReader()`` as a ``StructType``:
    the one place a ``pyarrow.Schema`` (Sail's) is converted (a :class:`HandedSchema`, which keeps
    it); a ``StructType`` (PySpark's) as it is."""
    import pyarrow as pa
    return HandedSchema(schema) if isinstance(schema, pa.Schema) else schema


def arrow_schema_for(schema: T.StructType):
    """The Arrow schema Spark expects for ``schema`` (timestamps as UTC micros); a schema the
    server handed in Arrow, that one: Sail compares each batch's types with it exactly, a
    timestamp's time zone name too (:class:`HandedSchema`)."""
    handed = getattr(schema, "arrow", None)
    if handed is not None:
        return handed
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(schema, **_utc(to_arrow_schema))


def arrow_type_for(spark_type: T.DataType):
    """The Arrow type Spark exchanges for ``spark_type`` (timestamps as UTC micros)."""
    from pyspark.sql.pandas.types import to_arrow_type
    return to_arrow_type(spark_type, **_utc(to_arrow_type))


def _utc(convert) -> dict:
    """UTC timestamps from pyspark's Spark-to-Arrow ``convert``: pyspark 4.3 takes the zone as
    ``timezone=`` and requires it for timestamps; pyspark 4.1 (the lakehouse runtimes' Spark) has
    no such argument and gives UTC (its ``timestamp_utc=True``)."""
    import inspect
    return {"timezone": "UTC"} if "timezone" in inspect.signature(convert).parameters else {}


def _spark_timestamps(column, mode: str, batch, where: str, unit=None):
    """kafkarec's timestamp[ms] column for Spark: (timestamp, raw int64 ms); a value
    outside Spark's range is null (FAILFAST: raises, naming the record).  ``unit``: the timestamp
    type Spark takes (``timestamp[us, UTC]``); given, a column without nulls whose values are all
    in range comes back in it already (see :func:`_in_range_as`)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if unit is not None:
        fast = _in_range_as(column, unit)
        if fast is not None:
            return fast
    raw = column.cast(pa.int64())
    # Bounds first, from arrays alone: comparing with a Python int makes pyarrow import pandas
    # to rule out a pandas scalar, ~0.5 CPU-s in each fresh Spark Python worker, for a check
    # that almost never finds a record outside Spark's range.
    bounds = pc.min_max(raw).as_py()
    if bounds["min"] is None or (bounds["min"] >= MIN_TIMESTAMP_MS and bounds["max"] <= MAX_TIMESTAMP_MS):
        return column, raw
    outside = pc.or_(pc.less(raw, MIN_TIMESTAMP_MS), pc.greater(raw, MAX_TIMESTAMP_MS))
    if pc.any(outside).as_py():
        if mode == "FAILFAST":
            from kafkarec.errors import MalformedBatchError
            i = pc.index(outside, True).as_py()
            offset = batch.column("offset")[i].as_py() if "offset" in batch.schema.names else None
            at = f"{where}: " if where else ""
            raise MalformedBatchError(
                f"{at}record at offset {offset} has timestamp {raw[i].as_py()} ms, outside Spark's "
                f"timestamp range ({MIN_TIMESTAMP_MS}..{MAX_TIMESTAMP_MS} ms, years 0001-9999 UTC) "
                f"(mode FAILFAST; modes PERMISSIVE and DROPMALFORMED give it a null timestamp and "
                f"its milliseconds in {RAW_TIMESTAMP})")
        column = pc.if_else(outside, pa.scalar(None, column.type), column)
    return column, raw


def _in_range_as(column, unit):
    """(``column`` in ``unit``, its raw int64 ms) when it has no nulls and every value is in
    Spark's range, else None.  This is every batch but a damaged one, and the conversion runs on
    each: over a 16,384-row batch, the bounds and the x1000 over a NumPy view of the values take
    about half of what pyarrow's checked ``cast`` to int64, ``min_max`` and the checked cast to
    micros took (the ms values already in range cannot overflow, so no check is needed)."""
    import pyarrow as pa
    if (column.null_count or not pa.types.is_timestamp(unit) or unit.unit != "us"
            or not pa.types.is_timestamp(column.type) or column.type.unit != "ms"):
        return None
    import numpy as np
    n = len(column)
    ms = np.frombuffer(column.buffers()[1], dtype=np.int64, count=n, offset=column.offset * 8)
    if n and (int(ms.min()) < MIN_TIMESTAMP_MS or int(ms.max()) > MAX_TIMESTAMP_MS):
        return None
    us = np.multiply(ms, 1000)
    return pa.Array.from_buffers(unit, n, [None, pa.py_buffer(us)]), column.view(pa.int64())


def conform(batch, target, extra=None, *, corrupt: str | None = None, mode: str = "PERMISSIVE",
            where: str = ""):
    """Project/convert a kafkarec Arrow batch to the Arrow schema ``target``.

    Columns of ``target`` are taken from ``extra`` (a dict name -> Array of the
    same length), then from ``batch`` by name; ``timestampMs`` is the raw
    ``timestamp``; the ``corrupt`` column is null.  Any other column is an
    error.  Types are cast where they differ (timestamp[ms] -> timestamp[us,
    UTC], list field names).
    """
    import pyarrow as pa
    n = batch.num_rows
    names = batch.schema.names
    arrays = []
    ts = raw = None
    for field in target:
        if extra is not None and field.name in extra:
            arr = extra[field.name]
        elif field.name == corrupt:
            arr = pa.nulls(n, field.type)
        elif field.name in ("timestamp", RAW_TIMESTAMP) and "timestamp" in names:
            if ts is None:
                unit = target.field("timestamp").type if "timestamp" in target.names else None
                ts, raw = _spark_timestamps(batch.column("timestamp"), mode, batch, where, unit)
            arr = ts if field.name == "timestamp" else raw
        elif field.name in names:
            arr = batch.column(field.name)
        else:
            from kafkarec.errors import UsageError
            raise UsageError(f"column {field.name!r} is not produced by kafkarec's decoder (it "
                             f"produced {names}); spark_udfs and kafkarec are out of step")
        if arr.type != field.type:
            arr = arr.cast(field.type)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=target)
