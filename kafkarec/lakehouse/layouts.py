"""The rows each live lakehouse writer produces from a Kafka record, by name.

A backfill has to write exactly what the live writer that continues after it writes: the same
column names, types, nullability, timestamp units and (Iceberg) partition spec, so that the
table holds one kind of row whoever wrote it.  Each layout below says where its facts come from
(the project's own source); kafkarec's rows (:func:`kafkarec.arrow_schema`: ``key``, ``value``,
``topic``, ``partition``, ``offset``, ``timestamp`` in ms, ``timestampType``, ``headers``) become
a layout's rows through :func:`to_layout`.

Values: a typed value (a struct column, as :func:`kafkarec.registry.typed.decode_table` and the
typed readers give it: Avro, Protobuf or JSON Schema) lays its fields out at the top level of the
row, as every one of these writers does with a schema'd value; a binary value (no schema) is one
binary column, as each target names it for raw values.

========================  ===================================================================
``iceberg-kafka-connect`` Apache Iceberg's Kafka Connect sink with ``KafkaMetadataTransform``
                          (not nested): value fields, then ``_kafka_metadata_topic`` string,
                          ``_kafka_metadata_partition`` int, ``_kafka_metadata_offset`` long
                          (required), ``_kafka_metadata_timestamp`` long (ms, optional);
                          unpartitioned (the sink's default ``iceberg.tables.default-partition-by``
                          is empty); tombstones are not written
``kafka-delta-ingest``    value fields plus ``meta`` {``kafka`` {offset long, partition int,
                          topic string, timestamp (us, UTC)}} (the README's
                          ``meta.kafka.*: kafka.*`` transforms); tombstones are not written
``redpanda``              Redpanda Iceberg Topics: ``redpanda`` {partition int, offset long,
                          timestamp timestamptz (us), headers list<{key string, value binary}>,
                          key binary, timestamp_type int} (all optional), then value fields
                          (``value_schema_id_prefix`` mode) or ``value`` binary (``key_value``
                          mode); spec ``hour(redpanda.timestamp)``
``automq``                AutoMQ Table Topic: value fields (or ``_kafka_value`` binary),
                          ``_kafka_header`` map<string, binary>, ``_kafka_key`` binary,
                          ``_kafka_metadata`` {partition int, offset long, timestamp long (ms)}
========================  ===================================================================
"""
from __future__ import annotations

from typing import Any, Iterable, NamedTuple, Optional, Tuple, Union

from kafkarec._extras import require
from kafkarec.errors import LayoutError, UsageError

__all__ = ["Layout", "LAYOUTS", "layout", "to_layout", "positions", "column_at", "PartitionField",
           "positions_schema"]

Path = Tuple[str, ...]


class PartitionField(NamedTuple):
    """One field of an Iceberg partition spec: the source column's path, the transform
    (``"hour"``, ``"identity"``...) and the partition field's name."""
    source: Path
    transform: str
    name: str


class Layout(NamedTuple):
    """A live writer's row layout.  ``topic`` is None where the writer keeps one topic per
    table (the rows do not name it); ``partition``, ``offset``, ``timestamp`` are column paths
    (a struct's fields by name); ``raw_value``: the binary column of a value without schema;
    ``skips_tombstones``: the writer writes no row for a null value; ``partition_spec``: the
    Iceberg spec the writer creates its table with (empty: unpartitioned)."""
    name: str
    topic: Optional[Path]
    partition: Path
    offset: Path
    timestamp: Path
    raw_value: str
    skips_tombstones: bool
    partition_spec: Tuple[PartitionField, ...]

    def schema(self, value_type: Any = None) -> Any:
        """The Arrow schema of this layout's rows for values of ``value_type`` (a struct type:
        its fields at the top level; default binary: the raw value column)."""
        pa = require("pyarrow")
        return _SCHEMAS[self.name](pa, _value_fields(pa, value_type, self.raw_value))

    def position_columns(self) -> Tuple[Path, ...]:
        """The column paths :func:`positions` reads (topic when the rows name it)."""
        return tuple(p for p in (self.topic, self.partition, self.offset) if p is not None)


def _value_fields(pa, value_type, raw_name: str) -> list:
    if value_type is None or pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type):
        return [pa.field(raw_name, pa.binary())]
    if not pa.types.is_struct(value_type):
        raise UsageError(f"a value of type {value_type} has no fields to lay out: a struct (a typed "
                         f"record value) or binary (no schema)")
    return [value_type.field(i) for i in range(value_type.num_fields)]


def _iceberg_kafka_connect(pa, value_fields):
    # apache/iceberg kafka-connect/kafka-connect-transforms/.../KafkaMetadataTransform.java (not nested,
    # field_name default "_kafka_metadata"): topic Schema.STRING_SCHEMA, partition INT32_SCHEMA, offset
    # INT64_SCHEMA (required), timestamp OPTIONAL_INT64_SCHEMA (the record's ms, no Timestamp logical
    # type), appended after the value's fields (makeUpdatedSchema).  The sink maps them through
    # SchemaUtils.SchemaGenerator.toIcebergType: STRING -> string, INT32 -> int, INT64 -> long,
    # required unless the Connect schema is optional.
    return pa.schema(value_fields + [
        pa.field("_kafka_metadata_topic", pa.string(), nullable=False),
        pa.field("_kafka_metadata_partition", pa.int32(), nullable=False),
        pa.field("_kafka_metadata_offset", pa.int64(), nullable=False),
        pa.field("_kafka_metadata_timestamp", pa.int64()),
    ])


def _kafka_delta_ingest(pa, value_fields):
    # delta-io/kafka-delta-ingest README.adoc: --transform 'meta.kafka.offset: kafka.offset' (partition,
    # topic likewise) and src/transforms.rs apply_kafka_meta_transform: offset i64, partition i32, topic
    # string, timestamp_value_from_kafka: ms * 1000 ("microseconds for delta format"), null when the
    # record has none.  The Delta table is the user's; its usual types are these (nullable, as Delta
    # columns are unless declared otherwise).
    kafka = pa.struct([pa.field("offset", pa.int64()), pa.field("partition", pa.int32()),
                       pa.field("topic", pa.string()),
                       pa.field("timestamp", pa.timestamp("us", tz="UTC"))])
    return pa.schema(value_fields + [pa.field("meta", pa.struct([pa.field("kafka", kafka)]))])


def _redpanda_struct(pa):
    # redpanda-data/redpanda src/v/datalake/table_definition.h rp_desc (partition int_type, offset
    # long_type, timestamp timestamptz_type, headers list<header_kv_desc {key string, value binary}>,
    # key binary_type, timestamp_type int_type); schema_descriptor.h builds every field and list
    # element field_required::no; table_definition.cc build_rp_struct: timestamp ms * 1000 (us), headers
    # null when the record has none.
    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    return pa.struct([
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("headers", pa.list_(pa.field("element", header))),
        pa.field("key", pa.binary()),
        pa.field("timestamp_type", pa.int32()),
    ])


def _redpanda(pa, value_fields):
    # the redpanda struct first (schemaless_desc; translators add their fields after it)
    return pa.schema([pa.field("redpanda", _redpanda_struct(pa))] + value_fields)


def _automq(pa, value_fields):
    # AutoMQ/automq core/src/main/java/kafka/automq/table/process/RecordAssembler.java: the value's
    # fields, then _kafka_header (DefaultRecordProcessor.HEADER_SCHEMA: map of bytes), _kafka_key, then
    # _kafka_metadata (METADATA_SCHEMA: partition int, offset long, timestamp long, no defaults), each
    # made optional (ensureOptional).  A raw value is wrapped as _kafka_value (KAFKA_VALUE_FIELD).
    metadata = pa.struct([pa.field("partition", pa.int32(), nullable=False),
                          pa.field("offset", pa.int64(), nullable=False),
                          pa.field("timestamp", pa.int64(), nullable=False)])
    return pa.schema(value_fields + [
        pa.field("_kafka_header", pa.map_(pa.string(), pa.binary())),
        pa.field("_kafka_key", pa.binary()),
        pa.field("_kafka_metadata", metadata),
    ])


_SCHEMAS = {"iceberg-kafka-connect": _iceberg_kafka_connect, "kafka-delta-ingest": _kafka_delta_ingest,
            "redpanda": _redpanda, "automq": _automq}

LAYOUTS = {
    "iceberg-kafka-connect": Layout(
        "iceberg-kafka-connect", ("_kafka_metadata_topic",), ("_kafka_metadata_partition",),
        ("_kafka_metadata_offset",), ("_kafka_metadata_timestamp",), "value",
        # IcebergWriter.write: "ignore tombstones..." (record.value() != null)
        True, ()),
    "kafka-delta-ingest": Layout(
        "kafka-delta-ingest", ("meta", "kafka", "topic"), ("meta", "kafka", "partition"),
        ("meta", "kafka", "offset"), ("meta", "kafka", "timestamp"), "value",
        # src/lib.rs: a message without payload is MessageDeserializationError::EmptyPayload, logged
        # and skipped
        True, ()),
    "redpanda": Layout(
        "redpanda", None, ("redpanda", "partition"), ("redpanda", "offset"), ("redpanda", "timestamp"),
        "value", False,
        # Redpanda's default partition spec for Iceberg topics (redpanda.iceberg.partition.spec default
        # "(hour(redpanda.timestamp))")
        (PartitionField(("redpanda", "timestamp"), "hour", "redpanda.timestamp_hour"),)),
    "automq": Layout(
        "automq", None, ("_kafka_metadata", "partition"), ("_kafka_metadata", "offset"),
        ("_kafka_metadata", "timestamp"), "_kafka_value", False, ()),
}


def layout(name: Union[str, Layout]) -> Layout:
    """The :class:`Layout` called ``name`` (one of :data:`LAYOUTS`; a Layout is returned as is)."""
    if isinstance(name, Layout):
        return name
    found = LAYOUTS.get(str(name).strip().lower())
    if found is None:
        raise UsageError(f"unknown layout {name!r}: one of {', '.join(LAYOUTS)}")
    return found


# --- rows -------------------------------------------------------------------------------------

def column_at(data: Any, path: Path) -> Any:
    """The column at ``path`` (a struct's fields by name) of a pyarrow Table or RecordBatch; a
    null struct makes its fields null."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    names = data.schema.names
    if path[0] not in names:
        raise UsageError(f"no column {'.'.join(path)}: the rows have {', '.join(names)}")
    col = data.column(path[0])
    for name in path[1:]:
        t = col.type
        if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
            raise UsageError(f"no column {'.'.join(path)} in the rows")
        col = pc.struct_field(col, [t.get_field_index(name)])
    return col


def _record_batches(data) -> list:
    pa = require("pyarrow")
    if isinstance(data, pa.Table):
        return data.to_batches()
    if isinstance(data, pa.RecordBatch):
        return [data]
    return list(data)


def to_layout(batch: Any, layout_name: Union[str, Layout], *, value_type: Any = None) -> Any:
    """kafkarec's Arrow rows (a RecordBatch or Table of :func:`kafkarec.arrow_schema`'s columns,
    ``value`` typed or binary) as a RecordBatch in the layout ``layout_name``.  Columns other
    than those of a record (``value_schema_id``, ``_corrupt_record``...) are not written; rows
    with a null value are left out where the writer writes none (``skips_tombstones``).
    ``value_type``: the value's type in the table when this batch's differs (a schema shared by
    every batch of a write)."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    lay = layout(layout_name)
    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks()
        batch = (batch.to_batches() or [pa.RecordBatch.from_pylist([], schema=batch.schema)])[0]
    value = batch.column("value")
    if lay.skips_tombstones and value.null_count:
        batch = batch.filter(value.is_valid())
        value = batch.column("value")
    vtype = value.type if value_type is None else value_type
    schema = lay.schema(vtype)
    if pa.types.is_struct(vtype):
        value = value.cast(vtype) if value.type != vtype else value
        values = {vtype.field(i).name: pc.struct_field(value, [i]) for i in range(vtype.num_fields)}
    else:
        values = {lay.raw_value: value.cast(pa.binary())}
    ts_ms = batch.column("timestamp").cast(pa.int64())
    ts_us = _micros(pa, pc, batch, ts_ms, lay) if lay.name in ("kafka-delta-ingest", "redpanda") else None
    cols = dict(values)
    if lay.name == "iceberg-kafka-connect":
        cols.update({"_kafka_metadata_topic": batch.column("topic"),
                     "_kafka_metadata_partition": batch.column("partition"),
                     "_kafka_metadata_offset": batch.column("offset"),
                     "_kafka_metadata_timestamp": ts_ms})
    elif lay.name == "kafka-delta-ingest":
        kafka_type = schema.field("meta").type.field("kafka").type
        kafka = pa.StructArray.from_arrays(
            [batch.column("offset"), batch.column("partition"), batch.column("topic"), ts_us],
            fields=list(kafka_type))
        cols["meta"] = pa.StructArray.from_arrays([kafka], fields=[schema.field("meta").type.field(0)])
    elif lay.name == "redpanda":
        rp_type = schema.field("redpanda").type
        headers = batch.column("headers")
        # Redpanda writes no list for a record without headers (build_headers_value: nullopt)
        no_headers = pc.equal(pc.list_value_length(headers), 0)
        headers = pc.if_else(pc.or_kleene(no_headers, headers.is_null()),
                             pa.scalar(None, headers.type), headers).cast(rp_type.field("headers").type)
        cols["redpanda"] = pa.StructArray.from_arrays(
            [batch.column("partition"), batch.column("offset"), ts_us, headers,
             batch.column("key").cast(pa.binary()), batch.column("timestampType")],
            fields=list(rp_type))
    else:  # automq
        md_type = schema.field("_kafka_metadata").type
        cols["_kafka_header"] = _header_map(pa, pc, batch.column("headers"))
        cols["_kafka_key"] = batch.column("key").cast(pa.binary())
        cols["_kafka_metadata"] = pa.StructArray.from_arrays(
            [batch.column("partition"), batch.column("offset"), ts_ms], fields=list(md_type))
    arrays = [cols[f.name] for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


#: the largest CreateTime (ms; and its negative the smallest) whose microseconds fit a long
MAX_MICROS_MS = ((1 << 63) - 1) // 1000
#: the CreateTimes (ms) whose hour (Iceberg's ``hour`` transform: hours since the epoch, an int)
#: fits an int; Iceberg's Java (DateTimeUtil.microsToHours) and pyiceberg's Arrow transform cast a
#: larger one to an int, a wrong hour partition
HOUR_MS = (-(1 << 31) * 3_600_000, ((1 << 31) - 1) * 3_600_000 + 3_599_999)


def _micros(pa, pc, batch, ts_ms, lay: Layout):
    """The records' timestamps in microseconds, as kafka-delta-ingest (src/transforms.rs
    timestamp_value_from_kafka: ``ms * 1000`` on an i64) and Redpanda (table_definition.cc
    build_rp_struct: ``ts.value() * 1000`` on an int64) compute them, with the multiply checked.
    Kafka takes any CreateTime long, and past |ms| = :data:`MAX_MICROS_MS` neither writer has a
    value: the Rust release build wraps, a debug build panics, the C++ multiply is undefined and
    wraps in practice -- another instant.  Where the layout's spec partitions by the hour of
    that timestamp (Redpanda), the hour must fit an int too (:data:`HOUR_MS`).  The backfill
    writes no other instant and no other hour: such a record is a
    :class:`~kafkarec.errors.LayoutError` naming it."""
    try:
        us = pc.multiply_checked(ts_ms, 1000).cast(pa.timestamp("us", tz="UTC"))
    except pa.ArrowInvalid:             # "overflow"
        us = None
    if us is None:
        _refuse(pc, batch, ts_ms, lay, (-MAX_MICROS_MS, MAX_MICROS_MS),
                f"has no microseconds in a long (|ms| at most {MAX_MICROS_MS}): the live writer would write "
                f"another instant")
    if any(f.transform == "hour" and f.source == lay.timestamp for f in lay.partition_spec):
        bounds = pc.min_max(ts_ms)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is not None and not (HOUR_MS[0] <= low and high <= HOUR_MS[1]):
            _refuse(pc, batch, ts_ms, lay, HOUR_MS,
                    f"has an hour since the epoch past an int (ms {HOUR_MS[0]}..{HOUR_MS[1]}): the table's "
                    f"partition hour({'.'.join(lay.timestamp)}) would file it under another hour")
    return us


def _refuse(pc, batch, ts_ms, lay: Layout, bounds: Tuple[int, int], why: str) -> None:
    """The LayoutError naming the first record whose timestamp is outside ``bounds``."""
    i = pc.index(pc.or_(pc.less(ts_ms, bounds[0]), pc.greater(ts_ms, bounds[1])), True).as_py()
    raise LayoutError(lay.name, f"timestamp {ts_ms[i].as_py()} ms {why}", topic=batch.column("topic")[i].as_py(),
                      partition=batch.column("partition")[i].as_py(), offset=batch.column("offset")[i].as_py())


def _header_map(pa, pc, headers):
    """kafkarec's headers (a list of {key, value} per record) as AutoMQ's map<string, bytes>: a
    Java map filled in header order, so a repeated key keeps its last value."""
    flat = headers.flatten()
    keys, vals = flat.field("key"), flat.field("value")
    offsets = headers.offsets
    parents = pc.list_parent_indices(headers)
    if len(flat):
        pairs = pa.table({"row": parents, "key": keys})
        counts = pairs.group_by(["row", "key"]).aggregate([([], "count_all")])
        if pc.max(counts.column("count_all")).as_py() > 1:
            rows = [None if h is None else list({k: v for k, v in ((e["key"], e["value"]) for e in h)}.items())
                    for h in headers.to_pylist()]
            return pa.array(rows, pa.map_(pa.string(), pa.binary()))
    return pa.MapArray.from_arrays(offsets, keys, vals.cast(pa.binary()),
                                   type=pa.map_(pa.string(), pa.binary()))


def positions(table_or_batches: Any, layout_name: Union[str, Layout], *, topic: Optional[str] = None) -> Any:
    """``(topic, partition, offset)`` of every row of ``table_or_batches`` (a Table, a RecordBatch
    or an iterable of RecordBatches in the layout), as a pyarrow Table for the audit.  Where the
    layout keeps one topic per table the rows do not name it: ``topic`` fills the column (null
    when not given)."""
    pa = require("pyarrow")
    lay = layout(layout_name)
    out = []
    for rb in _record_batches(table_or_batches):
        n = rb.num_rows
        t = (column_at(rb, lay.topic) if lay.topic is not None
             else pa.array([topic] * n, pa.string()) if topic is not None else pa.nulls(n, pa.string()))
        out.append(pa.RecordBatch.from_arrays(
            [t.cast(pa.string()), column_at(rb, lay.partition).cast(pa.int32()),
             column_at(rb, lay.offset).cast(pa.int64())],
            schema=positions_schema()))
    return pa.Table.from_batches(out, schema=positions_schema())


def positions_schema() -> Any:
    """The schema of :func:`positions`' tables: topic string, partition int32, offset int64."""
    pa = require("pyarrow")
    return pa.schema([pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                      pa.field("offset", pa.int64())])
