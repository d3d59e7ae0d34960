# Columnar output, the schema: records decoded straight into Arrow buffers (no Python object per
# record, _full_rows.pxi and _meta_rows.pxi) in the schema of Spark's Kafka source:
#   key binary, value binary, topic string, partition int32, offset int64,
#   timestamp timestamp[ms], timestampType int32,
#   headers list<struct<key string, value binary>> (null when a record has none)
# plus opt-in batch-level columns (_batch_columns.pxi), each built by the one column builder
# (_column.pxi).  pyarrow is imported on first use.
#
# Projection (iter_arrow's ``columns``): a read that asks for none of key, value and headers
# builds none of them ("lean" columns: v2 records are walked for their offsets and timestamps by
# their lengths and deltas alone, their bytes not copied; add_v2_meta over walk_v2_meta, which
# leaves any record it does not accept to the scanner); other projections build the full row and leave out what
# was not asked for when a chunk is finished.  A compressed batch is decompressed either way:
# its records' offset and timestamp deltas are inside the compressed records.

cdef dict _schemas = {}
# the units of the timestamp column, each with how many of it a millisecond holds (iter_arrow's
# timestamp_unit; the core writes them, _row_columns.pxi)
cdef dict _TIMESTAMP_SCALES = {"ms": 1, "us": 1000, "ns": 1000000}
# the columns a lean read does not build
cdef frozenset _RECORD_BYTES_COLUMNS = frozenset({"key", "value", "headers"})


def arrow_schema(*, batch_columns=False, str timestamp_unit="ms", str value_layout="copy"):
    """The Arrow schema of to_arrow's output (Spark's Kafka source layout); ``timestamp_unit``: the
    unit of ``timestamp`` (iter_arrow's: ``"ms"``, Kafka's and Spark's, or ``"us"``, ``"ns"``);
    ``value_layout="view"``: ``key`` and ``value`` as ``binary_view`` (iter_arrow's view layout,
    _views.pxi)."""
    cdef bint views = value_layout_is_view(value_layout)
    if timestamp_unit not in _TIMESTAMP_SCALES:
        raise ValueError(f"timestamp_unit must be one of {sorted(_TIMESTAMP_SCALES)}, not {timestamp_unit!r}")
    cache_key = (bool(batch_columns), timestamp_unit, views)
    cached = _schemas.get(cache_key)
    if cached is not None:
        return cached
    pa = pyarrow()
    binary = pa.binary_view() if views else pa.binary()
    fields = [
        pa.field("key", binary), pa.field("value", binary),
        pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()), pa.field("timestamp", pa.timestamp(timestamp_unit)),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()),
                                                pa.field("value", pa.binary())]))),
    ]
    if batch_columns:
        fields += [
            pa.field("producerId", pa.int64()), pa.field("producerEpoch", pa.int16()),
            pa.field("sequence", pa.int32()), pa.field("isTransactional", pa.bool_()),
            pa.field("isControl", pa.bool_()), pa.field("compression", pa.string()),
            pa.field("batchPosition", pa.int64()), pa.field("batchBaseOffset", pa.int64()),
            pa.field("partitionLeaderEpoch", pa.int32()), pa.field("magic", pa.int8()),
            pa.field("batchSize", pa.int32()), pa.field("deleteHorizonMs", pa.int64()),
        ]
    schema = _schemas[cache_key] = pa.schema(fields)
    return schema


cdef bint value_layout_is_view(str value_layout) except -1:
    """The layout of ``key`` and ``value``: "copy" (classic binary, the bytes copied into the
    column) or "view" (binary_view, long ones pointing into the bytes read)."""
    if value_layout == "view":
        return True
    if value_layout != "copy":
        raise ValueError(f"value_layout must be 'copy' or 'view', not {value_layout!r}")
    return False


cdef bint is_lean(object projection, bint batch_columns):
    """A projection without the records' bytes, on the v2 fast path (not the wide layout)."""
    return projection is not None and not batch_columns and _RECORD_BYTES_COLUMNS.isdisjoint(projection)


def meta_walk(columns, /, *, batch_columns=False, keys=None) -> bool:
    """Whether ``iter_arrow`` with these ``columns``, ``batch_columns`` and ``keys`` reads v2
    records by the meta-only walk (offsets and timestamps by the records' lengths alone)."""
    return keys is None and is_lean(columns, batch_columns)
