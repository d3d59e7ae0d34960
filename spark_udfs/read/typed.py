"""Typed keys and values in Spark: the data source's ``valueFormat``/``keyFormat`` options and
:func:`from_registry`, over :class:`kafkarec.registry.TypedColumn`.

Data source options (case-insensitive)::

    valueFormat / keyFormat     registry | avro | protobuf | json  (unset: binary, as before)
    registry                    a log directory holding _schemas-0 (or that folder), a folder
                                of schema files, or a registry URL (read once, on the driver)
    valueSubject / keySubject   default <topic>-value / <topic>-key (TopicNameStrategy)
    subjectNameStrategy         topic (default) | record | topic_record, with recordName
    recordName                  the record's full name (record strategies)
    valueSchemaVersion / keySchemaVersion   reader version (default: latest live one)
    valueReaderSchema / keyReaderSchema     reader schema text (the schema for avro|protobuf|json)
    valueMessage / keyMessage   Protobuf message (full name) that types the column
    registryAsOfOffset          _schemas only: the registry once that offset was applied
    registryIdFormat            confluent (default) | apicurio (8-byte ids)

The ``value`` (``key``) column becomes the reader schema's Spark type (Spark's ``from_avro`` /
``from_protobuf`` mapping); ``valueSchemaId`` (``keySchemaId``) gives each record's writer
schema id.  PERMISSIVE: a record that cannot be decoded keeps its coordinates, its value is
null and ``_corrupt_record`` says why; DROPMALFORMED leaves it out; FAILFAST fails the task
naming topic, partition, offset and reason.  A tombstone is a null value, not an error.

The registry is read on the driver when the query is planned and shipped to executors as plain
data (a pickled :class:`kafkarec.registry.Registry`); executors never call a registry.  Decoders
are rebuilt on each executor from the schema texts.
"""
from __future__ import annotations

import logging
import threading
from typing import Dict, Optional

from pyspark.sql.datasource import DataSourceReader

from kafkarec._option_text import lower_keys
from kafkarec.errors import UsageError
from kafkarec.scan.typed import TypedRows, TypedSide as _TypedSide, decode_sides
from spark_udfs.read import schema as _schema
from spark_udfs.read.spec import VALUE_FORMATS

__all__ = ["typed_schema", "TypedReader", "TypedBatches", "from_registry",
           "spark_type_of", "TypedSide", "load_registry", "registry_state"]

log = logging.getLogger("spark_udfs")

SCHEMA_ID_COLUMN = {"value": "valueSchemaId", "key": "keySchemaId"}

_REGISTRIES: Dict[tuple, object] = {}
_LOCK = threading.Lock()


def registry_state(source, storage_options=None):
    """What says whether a registry source changed: for a log directory holding ``_schemas``
    (or that partition folder) its segments' names and sizes, which only grow as the
    registry's topic is appended to; ``None`` for a URL (fetched once per query) or a schema
    folder (read again on each call that asks)."""
    from kafkarec import registry as kr
    if source is None or isinstance(source, kr.Registry):
        return ("object", id(source))
    src = str(source)
    if src.lower().startswith(("http://", "https://")):
        return ("url", src)
    from kafkarec.scan import ScanConfig, listings
    try:        # listed as a read of it lists it (kafkarec.scan's one listing)
        lay = next(listings(ScanConfig((src,), storage_options=storage_options))).layout
    except (OSError, ValueError):
        return None
    segs = tuple((s.path, s.size) for p in lay.partitions if p.topic == "_schemas"
                 for s in p.segments)
    return ("schemas", segs) if segs else None


def load_registry(source, *, as_of_offset=None, bearer_token=None, storage_options=None):
    """The registry of ``source``, read once per process (planning calls this twice) and read
    again when its ``_schemas`` log grew (:func:`registry_state`): Python workers are reused
    across queries, and a stream started later must see the schemas registered meanwhile."""
    from kafkarec import registry as kr
    if source is None or isinstance(source, kr.Registry):
        return source
    pinned = as_of_offset not in (None, "")
    state = None if pinned else registry_state(source, storage_options)
    key = (str(source), as_of_offset, bearer_token)
    with _LOCK:
        hit = _REGISTRIES.get(key)
    if hit is not None and (pinned or (state is not None and hit[0] == state)):
        return hit[1]
    reg = kr.load(source, as_of_offset=int(as_of_offset) if pinned else None,
                  bearer_token=bearer_token, storage_options=storage_options)
    with _LOCK:
        _REGISTRIES[key] = (state, reg)
    return reg


# --- Arrow -> Spark types ------------------------------------------------------------------

def spark_type_of(t):
    """The Spark type of a decoder's Arrow type (Spark's from_avro/from_protobuf mapping)."""
    import pyarrow as pa
    from pyspark.sql import types as T
    if pa.types.is_dictionary(t):
        return spark_type_of(t.value_type)
    if pa.types.is_null(t):
        return T.NullType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_int8(t):
        return T.ByteType()
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return T.ShortType()
    if pa.types.is_int32(t) or pa.types.is_uint16(t) or pa.types.is_time32(t):
        return T.IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return T.LongType()
    if pa.types.is_uint64(t):
        return T.DecimalType(20, 0)
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return T.FloatType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t)):
        return T.BinaryType()
    if pa.types.is_decimal(t):
        if t.precision <= 38:
            return T.DecimalType(t.precision, t.scale)
        return T.StringType()          # wider than Spark's decimals: exact digits as text
    if pa.types.is_date(t):
        return T.DateType()
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_map(t):
        return T.MapType(spark_type_of(t.key_type), spark_type_of(t.item_type), True)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return T.ArrayType(spark_type_of(t.value_type), True)
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, spark_type_of(f.type), True) for f in t])
    raise TypeError(f"decoded type {t} has no Spark type")


def _spark_arrow(spark_type):
    return _schema.arrow_type_for(spark_type)


def _cast(arr, target):
    """A decoder's array in the exact Arrow type Spark expects (names, units, widths)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if arr.type == target:
        return arr
    src = arr.type
    if pa.types.is_dictionary(src):
        return _cast(arr.dictionary_decode(), target)
    if pa.types.is_struct(src) and pa.types.is_struct(target):
        kids = [_cast(arr.field(i), target.field(i).type) for i in range(src.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(target), mask=arr.is_null()
                                          if arr.null_count else None)
    if (pa.types.is_list(src) or pa.types.is_large_list(src)) and pa.types.is_list(target):
        inner = _cast(arr.values if arr.offset == 0 else arr.flatten(), target.value_type)
        offsets = pc.subtract(arr.offsets, arr.offsets[0]).cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, inner, type=target,
                                        mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_map(src) and pa.types.is_map(target):
        keys = _cast(arr.keys, target.key_type)
        items = _cast(arr.items, target.item_type)
        offsets = pc.subtract(arr.offsets, arr.offsets[0]).cast(pa.int32())
        return pa.MapArray.from_arrays(offsets, keys, items, type=target,
                                       mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_decimal(src) and pa.types.is_string(target):
        return arr.cast(pa.string())
    if pa.types.is_uint64(src):
        return arr.cast(target)
    return arr.cast(target, safe=False)


# --- one side (key or value) --------------------------------------------------------------

class TypedSide(_TypedSide):
    """kafkarec's one typed side (:class:`kafkarec.scan.typed.TypedSide`) in Spark's types: the
    format and registry checked by the data source's option names, the column's Spark type
    (``spark_type``) and the Arrow type Spark expects of it (``arrow_type``), every decoded array
    cast to it."""

    def __init__(self, side: str, fmt: str, registry, **kw) -> None:
        from kafkarec._option_text import text_choice
        fmt = text_choice(f"option {side}Format", fmt, VALUE_FORMATS,
                          template="{name}: one of {accepted}, not {value!r}")
        if fmt == "registry" and registry is None:
            raise UsageError(f"option {side}Format=registry needs option registry (a log directory "
                             f"holding _schemas-0, a schema folder or a registry URL)")
        if fmt != "registry" and registry is None and kw.get("reader_schema") is None:
            raise UsageError(f"option {side}Format={fmt} needs {side}ReaderSchema (or a registry "
                             f"and {side}Subject)")
        super().__init__(side, fmt, registry, **kw)
        self._fits: dict = {}
        self.spark_type = spark_type_of(self.column(self.topic).arrow_type)
        self.arrow_type = _spark_arrow(self.spark_type)

    def __getstate__(self):
        state = super().__getstate__()
        state["_fits"] = {}
        return state

    def pin(self, topic, spark_type=None):
        """:meth:`kafkarec.scan.typed.TypedSide.pin`; ``spark_type``: the query's type of this
        side (settled earlier and maybe in another process): the newest version of that type."""
        want = None if spark_type is None else spark_type.simpleString()
        fits = None if want is None else (lambda t: spark_type_of(t).simpleString() == want)
        if not super().pin(topic, fits):
            raise ValueError(f"kafkarec stream: no version of subject {self.column(topic).subject!r} has "
                             f"the query's {self.side} type {want}")

    def decode(self, values, headers=None, topic=None):
        """(typed array in Spark's Arrow type, schema ids, errors)."""
        import pyarrow as pa
        typed, ids, errs = super().decode(values, headers, topic)
        fits = self._fits.get(typed.type)
        if fits is None:        # once per decoded type, not per batch
            fits = self._fits[typed.type] = _spark_arrow(spark_type_of(typed.type)) == self.arrow_type
        if not fits:
            # Another topic's subject with another type: its rows cannot share this column.
            subject = self.column(topic if topic is not None else self.topic).subject
            return (pa.nulls(len(typed), self.arrow_type), ids,
                    pa.array([f"{subject!r} is not of this column's type" if v else None
                              for v in values.is_valid().to_pylist()], pa.string()))
        return _cast(typed, self.arrow_type), ids, errs


def _sides(spec, topic) -> list:
    """The typed sides of a read (its :class:`spark_udfs.read.spec.TypedOptions`)."""
    t = spec.typed
    registry = load_registry(t.registry, as_of_offset=t.as_of_offset, bearer_token=t.bearer_token)
    return [TypedSide(side, t.formats[side], registry, subject=t.subjects.get(side), topic=topic,
                      strategy=t.strategy, record_name=t.record_name, version=t.versions.get(side),
                      reader_schema=t.reader_schemas.get(side), message=t.messages.get(side),
                      id_format=t.id_format, options=t.format_options, time_zone=t.time_zone)
            for side in ("key", "value") if side in t.formats]


def _topic_of(spec) -> Optional[str]:
    """The one topic the read decodes (TopicNameStrategy): option subscribe (topics) or
    assign, or the one topic under the paths other than the registry's own ``_schemas``."""
    sel = spec.selection
    if sel.get("topics"):
        names = [t.strip() for t in str(sel["topics"]).split(",") if t.strip()]
        return names[0] if len(names) == 1 else None
    if sel.get("assign"):
        from kafkarec.log import selection
        names = selection.parse_selection({"assign": sel["assign"]}).topics
        return next(iter(names)) if len(names) == 1 else None
    from kafkarec.scan import ScanConfig, listings
    topics = set()
    for raw in spec.config.paths:       # listed as the read lists them (kafkarec.scan's one listing)
        try:
            lay = next(listings(ScanConfig((raw,), storage_options=spec.config.storage_options))).layout
        except (OSError, ValueError):
            continue
        topics |= {p.topic for p in lay.partitions if p.topic and p.topic != "_schemas"}
    return next(iter(topics)) if len(topics) == 1 else None


def _cdc_fields(value_side) -> list:
    """Spark fields of the change-event columns for a typed value side (Debezium envelopes):
    op, before, after, source (the envelope's own types), ts_ms, cdcError."""
    from pyspark.sql import types as T
    from kafkarec.cdc import envelope_type_problem, typed_change_types
    if value_side is None:
        raise UsageError("kafkarec data source: option cdc with keyFormat needs valueFormat too "
                         "(the change events are the values)")
    arrow_type = value_side.column(value_side.topic).arrow_type
    problem = envelope_type_problem(arrow_type)
    if problem is not None:
        raise UsageError(f"kafkarec data source: option cdc: {problem}")
    return [T.StructField(name, spark_type_of(t), True) for name, t in typed_change_types(arrow_type)]


class _EnvelopeOps:
    """What :class:`kafkarec.cdc.Debezium` calls to read the envelopes (``op``, ``source``,
    ``ts_ms``) under a typed read with view=latest: the value side's decoder (picklable, rebuilt
    on executors)."""

    def __init__(self, side) -> None:
        self.side = side

    def __call__(self, values, headers=None):
        return self.side.decode(values, headers)


def typed_schema(spec, base):
    """The data source's schema (``base``: its binary read's) with typed ``key``/``value`` and
    their schema id columns."""
    from pyspark.sql import types as T
    sides = {s.side: s for s in _sides(spec, _topic_of(spec))}
    cdc_fields = _cdc_fields(sides.get("value")) if spec.cdc is not None else []
    fields = []
    for f in base.fields:
        if f.name in sides:
            fields.append(T.StructField(f.name, sides[f.name].spark_type, True))
        else:
            fields.append(f)
    names = [f.name for f in fields]
    at = names.index("headers") + 1 if "headers" in names else len(fields)
    for side in ("key", "value"):
        if side in sides:
            fields.insert(at, T.StructField(SCHEMA_ID_COLUMN[side], T.LongType(), True))
            at += 1
    if cdc_fields:                  # where the plain read puts them: before the corrupt-record column
        names = [f.name for f in fields]
        at = len(fields)
        corrupt = spec.config.corrupt_column
        if corrupt in names:
            at = names.index(corrupt)
        fields[at:at] = cdc_fields
    return T.StructType(fields)


class TypedBatches:
    """What turns the plain read's batches (binary key/value, headers) into the typed schema:
    shared by the batch read (:class:`TypedReader`) and the stream
    (:class:`spark_udfs.read.typed_stream.TypedStreamReader`).  Built where the read is planned
    (registry read there), pickled to executors.  What a record that does not decode becomes
    (the parse mode, ``badRecordsPath``) is kafkarec's one rule, :class:`kafkarec.scan.typed.TypedRows`
    (``rows``); this adds Spark's sides, columns and schema.

    ``plain_spec``: the binary read under this one (:meth:`spark_udfs.read.spec.ReadSpec.plain`:
    headers always on, as header schema ids ``__value_schema_id`` / ``__key_schema_id`` are
    read from them); ``plain_schema``: the columns the plain read must give."""

    def __init__(self, spec, schema, *, streaming: bool = False) -> None:
        from pyspark.sql import types as T
        from spark_udfs.read import schema as _schema
        self.plain_spec = spec.plain(streaming=streaming)
        self.corrupt = spec.config.corrupt_column
        self.topic = _topic_of(spec)
        self.sides = _sides(spec, self.topic)
        typed_names = {s.side for s in self.sides} | {SCHEMA_ID_COLUMN[s.side] for s in self.sides}
        # cdc=debezium: the values are Debezium envelopes; their columns come from the typed value
        self.cdc = spec.cdc
        if self.cdc is not None:
            value_side = next((s for s in self.sides if s.side == "value"), None)
            typed_names |= {f.name for f in _cdc_fields(value_side)}
            self.envelope_ops = _EnvelopeOps(value_side)
        base = _schema.read_schema(self.plain_spec)
        # badRecordsPath: failed records are kept whole (kafkarec.log.quarantine), so the plain read
        # gives every column a record needs to be written again
        quarantine = None
        if spec.config.bad_records_path:
            from kafkarec.log.quarantine import Quarantine
            quarantine = Quarantine(spec.config.bad_records_path)
        self.rows = TypedRows(mode=spec.config.mode, corrupt_column=self.corrupt, quarantine=quarantine, log=log)
        whole = {"key", "value", "timestamp", "timestampType"} if quarantine is not None else set()
        want = [f for f in base.fields if f.name in {g.name for g in schema.fields}
                or f.name in {s.side for s in self.sides} or f.name in whole]
        if "topic" not in {f.name for f in want}:
            want.append(next(f for f in base.fields if f.name == "topic"))
        for name in ("partition", "offset", "headers"):
            if name not in {f.name for f in want}:
                want.append(next(f for f in base.fields if f.name == name))
        unknown = [f.name for f in schema.fields if f.name not in {g.name for g in base.fields}
                   and f.name not in typed_names]
        if unknown:
            raise UsageError(f"kafkarec data source: schema column(s) {unknown} are not produced")
        self.plain_schema = T.StructType(want)
        self.schema = schema

    def convert(self, rb, target, sides=None):
        """One plain batch (binary key/value) in the typed schema ``target``."""
        import pyarrow as pa
        import pyarrow.compute as pc
        n = rb.num_rows
        cols = {name: rb.column(name) for name in rb.schema.names}
        decoded = decode_sides(self.sides if sides is None else sides, cols)
        typed = {}
        for side, (arr, ids, errs) in decoded.sides.items():
            typed[side] = arr
            typed[SCHEMA_ID_COLUMN[side]] = ids
            if self.cdc is not None and side == "value":
                from kafkarec.cdc import typed_changes
                typed.update(typed_changes(arr, errs))
        reasons = decoded.reasons
        keep = self.rows.settle(rb, reasons, decoded.failed_ids)
        if reasons is not None and self.rows.mode == "PERMISSIVE" and self.corrupt in cols:
            cols[self.corrupt] = pc.coalesce(cols[self.corrupt], reasons)
        arrays = []
        for f in target:
            if f.name in typed:
                a = typed[f.name]
            elif f.name in cols:
                a = cols[f.name]
            elif f.name == self.corrupt and reasons is not None:
                a = reasons
            else:
                a = pa.nulls(n, f.type)
            if a.type != f.type:
                a = a.cast(f.type)
            arrays.append(a)
        out = pa.RecordBatch.from_arrays(arrays, schema=target)
        return out.filter(keep) if keep is not None else out


class TypedReader(DataSourceReader):
    """Wraps the data source's reader: the plain read yields binary keys and values, each batch
    is then typed here (:class:`TypedBatches`).  Built on the driver, pickled to executors."""

    def __init__(self, source, schema) -> None:
        self.rows = TypedBatches(source.spec, schema)
        self.schema = schema
        self.inner = source.plain_reader(self.rows.plain_spec, self.rows.plain_schema)
        if self.rows.cdc is not None and self.inner.spec.view == "latest":
            # The keyed state applies Debezium's rules with op read from the decoded envelopes.
            from kafkarec.cdc import Debezium
            self.inner.cdc = Debezium(self.rows.envelope_ops)

    def partitions(self):
        return self.inner.partitions()

    def read(self, partition):
        from spark_udfs.read import schema as _schema
        target = _schema.arrow_schema_for(self.schema)
        for rb in self.inner.read(partition):
            out = self.rows.convert(rb, target)
            if out is not None and out.num_rows:
                yield out


# --- the column function ------------------------------------------------------------------

_FN_MODES = ("PERMISSIVE", "FAILFAST")


def from_registry(column, registry, subject: Optional[str] = None, *, topic: Optional[str] = None,
                  is_key: bool = False, mode: str = "PERMISSIVE", version="latest",
                  reader_schema: Optional[str] = None, message: Optional[str] = None,
                  value_format: str = "registry", headers=None, id_format: str = "confluent",
                  options: Optional[dict] = None):
    """Decode a binary Column of Schema Registry payloads (e.g. the ``value`` column of Spark's
    own Kafka source) to the subject's reader type, as ``from_avro`` does for one schema but
    with each record's writer schema from its id.

    ``registry``: a source as for the data source's ``registry`` option, or a
    :class:`kafkarec.registry.Registry` (read on the driver, shipped to executors as data);
    ``subject`` (or ``topic`` for ``<topic>-value``/``-key``); ``mode``: PERMISSIVE (a record
    that cannot be decoded is null, the default, as ``from_avro``) or FAILFAST (the task fails
    with the row and reason); ``headers``: the records' headers Column, for header ids;
    ``options``: the format's options by ``from_avro``'s names (``enableStableIdentifiersForUnionType``,
    ``stableIdentifierPrefixForUnionType``, ``datetimeRebaseMode``, ``recursiveFieldMaxDepth``; in the
    session time zone) or ``from_protobuf``'s (``enums.as.ints``, ``emit.default.values``...)."""
    import warnings
    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    m = str(mode).upper()
    if m not in _FN_MODES:
        raise UsageError(f"mode {mode!r}: PERMISSIVE or FAILFAST (a column function cannot drop rows)")
    from pyspark.sql import SparkSession
    reg = load_registry(registry)
    active = SparkSession.getActiveSession()
    tz = active.conf.get("spark.sql.session.timeZone") if active is not None else "UTC"
    side = TypedSide("key" if is_key else "value", value_format, reg, subject=subject, topic=topic,
                     version=version, reader_schema=reader_schema, message=message,
                     id_format=id_format, options=lower_keys(options or {}), time_zone=tz)

    def kafkarec_from_registry(values, hdrs=None):
        arr, _ids, errs = side.decode(values, hdrs)
        if m == "FAILFAST" and errs.null_count != len(errs):
            import pyarrow.compute as pc
            i = pc.index(errs.is_valid(), True).as_py()
            raise ValueError(f"from_registry (mode FAILFAST): row {i} of the Arrow batch: "
                             f"{errs[i].as_py()}")
        return arr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fn = arrow_udf(kafkarec_from_registry, side.spark_type, ArrowUDFType.SCALAR)
    col = F.col(column) if isinstance(column, str) else column
    if headers is not None:
        return fn(col, F.col(headers) if isinstance(headers, str) else headers)
    return fn(col)
