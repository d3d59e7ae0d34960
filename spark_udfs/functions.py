"""Spark functions decoding a binary column of Kafka record batches.

* :func:`decode_records` / SQL ``kafkarec_decode(col[, mode])`` - an
  ``arrow_udf``: one ``struct<records: array<record>, error: string>`` per
  input row (null for a null input); explode with ``inline(d.records)``.
* :func:`explode_records` - ``mapInArrow``: one row per record, carrying the
  chosen input columns along (the fastest path).
* :func:`explode_udtf` / SQL ``kafkarec_explode(col[, mode])`` - a row
  ``@udtf(useArrow=True)`` for ``LATERAL``, registered ``asDeterministic()``.

A record carries Spark's Kafka source fields except topic and partition (not
in the bytes): key, value, offset, timestamp, timestampType, headers, timestampMs
(+ batch columns on request).
"""
from __future__ import annotations

import logging
from typing import Optional

from spark_udfs.read import schema as _schema
from spark_udfs.ship.runtime import ensure

__all__ = ["decode_result_type", "decode_records", "make_decode_udf", "explode_records",
           "explode_udtf", "explode_schema"]

_FUNCTION_MODES = ("PERMISSIVE", "FAILFAST")   # a column function cannot drop its row


def decode_result_type(*, batch_columns: bool = False):
    from pyspark.sql import types as T
    return T.StructType([
        T.StructField("records", T.ArrayType(_schema.record_struct(batch_columns=batch_columns))),
        T.StructField("error", T.StringType()),
    ])


def _binary_values(data):
    """(offsets as int64 numpy, memoryview of the data buffer, array) of a (large_)binary array."""
    import numpy as np
    import pyarrow as pa
    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks()
    width = np.int64 if pa.types.is_large_binary(data.type) else np.int32
    bufs = data.buffers()
    n = len(data)
    offsets = np.frombuffer(bufs[1], dtype=width, count=n + 1,
                            offset=data.offset * np.dtype(width).itemsize).astype(np.int64)
    values = memoryview(bufs[2]) if bufs[2] is not None else memoryview(b"")
    return offsets, values, data


class _Decoded:
    """The records of one Arrow column of binary values, in row order.

    ``pieces``: RecordBatches in the record schema (Spark's Arrow types);
    ``rows``: the input row of every record (int64, non-decreasing);
    ``errors``: ``(row, message)``; ``nulls``: bool per input row.
    """

    def __init__(self, n):
        import numpy as np
        self.pieces = []
        self.rows = []
        self.errors = []
        self.nulls = np.zeros(n, dtype=bool)
        self.records = 0

    def add(self, rb, rows):
        self.pieces.append(rb)
        self.rows.append(rows)
        self.records += rb.num_rows

    def row_index(self):
        import numpy as np
        return np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=np.int64)


def _record_target(batch_columns):
    return _schema.arrow_schema_for(_schema.kafka_schema(batch_columns=batch_columns,
                                                         with_topic_partition=False))


def _decode_column(data, modes, batch_columns, *, max_rows=None):
    """Decode every value of ``data``; ``modes`` is one mode or a list (one per row).

    Values holding nothing but whole batches are decoded in one pass over the
    column's data buffer (records are mapped back to rows by batch position);
    anything else (a framing problem, a cut-off batch, per-row modes) row by row.
    Either way the result is the same as decoding each value on its own.
    """
    if max_rows is None:
        from kafkarec.scan.config import ROWS_PER_BATCH
        max_rows = ROWS_PER_BATCH
    from kafkarec.scan.decode import decode_range
    import numpy as np
    target = _record_target(batch_columns)
    offsets, values, data = _binary_values(data)
    n = len(data)
    out = _Decoded(n)
    if data.null_count:
        out.nulls = np.asarray(data.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    single = modes if isinstance(modes, str) else None
    if single is not None and n and _decode_concatenated(offsets, values, out, single,
                                                         batch_columns, target, max_rows):
        return out
    out = _Decoded(n)
    if data.null_count:
        out.nulls = np.asarray(data.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    for i in range(n):
        if out.nulls[i]:
            continue
        view = values[offsets[i]:offsets[i + 1]]
        try:
            for kind, item in decode_range(view, batch_columns=batch_columns,
                                           max_rows=max_rows,
                                           mode=single or modes[i]):
                if kind == "batch":
                    out.add(_schema.conform(item, target, mode=single or modes[i]),
                            np.full(item.num_rows, i, dtype=np.int64))
                else:
                    out.errors.append((i, item["message"]))
        finally:
            view.release()
    return out


def _decode_concatenated(offsets, values, out, mode, batch_columns, target, max_rows):
    """The one-pass path; False (nothing added) when the values are not all whole batches."""
    import numpy as np
    import pyarrow as pa
    from kafkarec._core import iter_arrow, iter_batches
    from kafkarec.errors import DecodeError, MalformedBatchError
    from kafkarec.scan.decode import format_error
    start, end = int(offsets[0]), int(offsets[-1])
    lengths = np.diff(offsets)
    if out.nulls.any() and lengths[out.nulls].any():
        return False
    starts = offsets[:-1] - start
    region = values[start:end]
    it = iter_batches(region, verify_crc=False)
    positions = []
    b = None
    try:
        for b in it:
            positions.append(b.position)
        whole = it.position == end - start
    except DecodeError:
        whole = False
    finally:
        del b, it
    if not whole:
        region.release()
        return False
    nonempty = starts[lengths > 0]
    if len(nonempty) and not np.isin(nonempty, np.asarray(positions, dtype=np.int64)).all():
        region.release()
        return False
    sink = []
    try:
        for rb in iter_arrow(region, batch_columns=True, errors="skip", error_sink=sink,
                             max_rows=max_rows):
            if not rb.num_rows:
                continue
            pos = rb.column("batchPosition").to_numpy()
            rows = np.searchsorted(starts, pos, side="right") - 1
            if batch_columns:
                rel = pa.array(pos - starts[rows], pa.int64())
                rb = rb.set_column(rb.schema.get_field_index("batchPosition"), "batchPosition", rel)
            out.add(_schema.conform(rb, target, mode=mode), rows.astype(np.int64))
    finally:
        region.release()
    for e in sink:
        row = int(np.searchsorted(starts, e["position"], side="right") - 1)
        err = dict(e)
        err["position"] = e["position"] - int(starts[row])
        message = format_error(err)
        if mode == "FAILFAST":
            raise MalformedBatchError("Malformed Kafka record batch (mode FAILFAST): " + message)
        out.errors.append((row, message))
    return True


def _decode_array(data, mode_arr, default_mode, batch_columns, expected):
    """The body of kafkarec_decode: a (large_)binary Array -> StructArray."""
    import numpy as np
    import pyarrow as pa
    ensure(expected)       # kafkarec imported (a shipped archive first), checked to be the driver's build
    from kafkarec.scan.config import normalize_mode
    modes = default_mode
    if mode_arr is not None:
        if isinstance(mode_arr, pa.ChunkedArray):
            mode_arr = mode_arr.combine_chunks()
        raw = mode_arr.to_pylist()
        normalized = {m: normalize_mode(m, allowed=_FUNCTION_MODES) for m in set(raw)}
        modes = [normalized[m] for m in raw]
        if len(normalized) == 1:
            modes = modes[0] if modes else default_mode
    rtype = _record_target(batch_columns)
    n = len(data)
    dec = _decode_column(data, modes, batch_columns, max_rows=1 << 30)
    if dec.records > 0x7FFFFFFF:
        raise OverflowError("more than 2**31 records in one Arrow batch; lower "
                            "spark.sql.execution.arrow.maxRecordsPerBatch")
    counts = np.zeros(n + 1, dtype=np.int64)
    counts[1:] = np.cumsum(np.bincount(dec.row_index(), minlength=n))
    errors = [None] * n
    for row, message in dec.errors:
        errors[row] = message if errors[row] is None else errors[row] + "; " + message
    table = pa.Table.from_batches(dec.pieces, schema=rtype).combine_chunks()
    values = pa.StructArray.from_arrays([table.column(j).combine_chunks() if table.num_rows else
                                         pa.array([], f.type) for j, f in enumerate(rtype)],
                                        fields=list(rtype))
    mask = pa.array(dec.nulls) if dec.nulls.any() else None
    records = pa.ListArray.from_arrays(pa.array(counts.astype(np.int32), pa.int32()), values, mask=mask)
    error_arr = pa.array(errors, pa.string())
    return pa.StructArray.from_arrays([records, error_arr], names=["records", "error"], mask=mask)


def make_decode_udf(*, mode="PERMISSIVE", batch_columns=False, expected=None):
    """The arrow_udf behind kafkarec_decode; called with (col) or (col, mode)."""
    from kafkarec.scan.config import normalize_mode
    import warnings
    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    default_mode = normalize_mode(mode, allowed=_FUNCTION_MODES)

    def kafkarec_decode(data, mode=None):
        return _decode_array(data, mode, default_mode, batch_columns, expected)

    with warnings.catch_warnings():
        # "It is preferred to specify type hints": hints cannot express the optional mode.
        warnings.simplefilter("ignore", UserWarning)
        return arrow_udf(kafkarec_decode, decode_result_type(batch_columns=batch_columns),
                         ArrowUDFType.SCALAR)


def decode_records(col, *, mode="PERMISSIVE", batch_columns=False):
    """``kafkarec_decode`` as a Column: ``struct<records: array<record>, error: string>``.

    ``col`` is a Column or column name of binary values, each holding whole
    Kafka record batches.  ``mode``: PERMISSIVE (bad batches left out and
    described in ``error``) or FAILFAST.  DROPMALFORMED is not supported for a
    column function (as for Spark's from_json): use :func:`explode_records`.
    """
    from spark_udfs.ship.shipping import expected_fingerprint
    from pyspark.sql import functions as F
    if isinstance(col, str):
        col = F.col(col)
    return make_decode_udf(mode=mode, batch_columns=batch_columns,
                           expected=expected_fingerprint())(col)


def explode_schema(input_schema, column, keep, *, mode, batch_columns, prefix="",
                   corrupt_column=_schema.DEFAULT_CORRUPT_COLUMN):
    from pyspark.sql import types as T
    fields = []
    for name in keep:
        fields.append(input_schema[name])
    records = _schema.kafka_schema(batch_columns=batch_columns, with_topic_partition=False)
    for f in records:
        fields.append(T.StructField(prefix + f.name, f.dataType, True))
    if mode == "PERMISSIVE":
        fields.append(T.StructField(corrupt_column, T.StringType(), True))
    names = [f.name for f in fields]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        from kafkarec.errors import UsageError
        raise UsageError(f"explode_records: output column(s) {dup} appear twice (a kept input column "
                         f"has a record column's name); rename the input column or pass prefix=...")
    return T.StructType(fields)


def explode_records(df, column, keep=(), *, mode="PERMISSIVE", batch_columns=False, outer=False,
                    prefix="", columnNameOfCorruptRecord=_schema.DEFAULT_CORRUPT_COLUMN,
                    max_rows_per_batch: Optional[int] = None):
    """One row per record of the batches in binary ``column`` of ``df``, with the
    ``keep`` columns of its input row (``DataFrame.mapInArrow``).

    Columns: ``keep``..., key, value, offset, timestamp, timestampType, headers, timestampMs
    (names prefixed with ``prefix``), batch columns if ``batch_columns``, and in
    PERMISSIVE mode ``_corrupt_record`` (``columnNameOfCorruptRecord``): an
    undecodable batch becomes one row with the ``keep`` columns, null record
    columns and the error there.  DROPMALFORMED leaves it out; FAILFAST raises.
    ``outer=True`` keeps a row (record columns null) for a null or empty input.
    """
    from kafkarec.errors import UsageError
    from kafkarec.scan.config import normalize_mode
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from spark_udfs.ship.shipping import expected_fingerprint
    mode = normalize_mode(mode)
    keep = list(keep or ())
    if column not in df.columns:
        raise UsageError(f"explode_records: no column {column!r} in {df.columns}")
    if not isinstance(df.schema[column].dataType, T.BinaryType):
        raise TypeError(f"explode_records: column {column!r} is {df.schema[column].dataType.simpleString()}, "
                        f"not binary")
    missing = [k for k in keep if k not in df.columns]
    if missing:
        raise UsageError(f"explode_records: keep columns {missing} not in {df.columns}")
    out_schema = explode_schema(df.schema, column, keep, mode=mode, batch_columns=batch_columns,
                                prefix=prefix, corrupt_column=columnNameOfCorruptRecord)
    inputs = [column] + [k for k in keep if k != column]
    src = df.select(*[F.col(f"`{c}`") for c in inputs])
    expected = expected_fingerprint()
    out_names = out_schema.fieldNames()
    params = (column, tuple(keep), mode, batch_columns, outer, prefix, columnNameOfCorruptRecord,
              max_rows_per_batch, out_names, expected)

    def kafkarec_explode_records(batches):
        return _explode_batches(batches, *params)

    return src.mapInArrow(kafkarec_explode_records, out_schema)


def _explode_batches(batches, column, keep, mode, batch_columns, outer, prefix, corrupt_column,
                     max_rows, out_names, expected):
    import numpy as np
    import pyarrow as pa
    ensure(expected)       # kafkarec imported (a shipped archive first), checked to be the driver's build
    if max_rows is None:
        from kafkarec.scan.config import ROWS_PER_BATCH
        max_rows = ROWS_PER_BATCH
    record_target = _record_target(batch_columns)
    out_schema = None
    permissive = mode == "PERMISSIVE"
    for inb in batches:
        data = inb.column(column)
        keep_cols = [inb.column(k) for k in keep]
        if out_schema is None:
            fields = [pa.field(k, c.type) for k, c in zip(keep, keep_cols)]
            fields += [pa.field(prefix + f.name, f.type) for f in record_target]
            if permissive:
                fields.append(pa.field(corrupt_column, pa.string()))
            out_schema = pa.schema(fields)
        dec = _decode_column(data, mode, batch_columns, max_rows=max_rows)
        err_idx, err_msgs = [], []
        for row, message in dec.errors:
            if permissive:
                err_idx.append(row)
                err_msgs.append(message)
            else:
                _log_dropped(message)
        if outer:
            got = np.bincount(dec.row_index(), minlength=len(data))
            has_err = np.zeros(len(data), dtype=bool)
            has_err[[r for r, _ in dec.errors]] = True
            for i in np.nonzero((got == 0) & ~has_err)[0]:
                err_idx.append(int(i))
                err_msgs.append(None)
        pending, idx, rows = [], [], 0
        for rb, r in zip(dec.pieces, dec.rows):
            pending.append(rb)
            idx.append(r)
            rows += rb.num_rows
            if rows >= max_rows:
                yield _explode_output(pending, idx, keep_cols, out_schema, record_target,
                                      permissive, (), ())
                pending, idx, rows = [], [], 0
        if pending or err_idx:
            yield _explode_output(pending, idx, keep_cols, out_schema, record_target, permissive,
                                  err_idx, err_msgs)


def _explode_output(pending, idx, keep_cols, out_schema, record_target, permissive, err_idx,
                    err_msgs):
    import numpy as np
    import pyarrow as pa
    tables = []
    if pending:
        take = pa.array(np.concatenate(idx))
        table = pa.Table.from_batches(pending, schema=record_target)
        cols = [c.take(take) for c in keep_cols] + [table.column(j) for j in range(table.num_columns)]
        if permissive:
            cols.append(pa.nulls(len(take), pa.string()))
        tables.append(pa.Table.from_arrays(cols, schema=out_schema))
    if err_idx:
        take = pa.array(err_idx, pa.int64())
        n = len(err_idx)
        cols = [c.take(take) for c in keep_cols] + [pa.nulls(n, f.type) for f in record_target]
        if permissive:
            cols.append(pa.array(err_msgs, pa.string()))
        tables.append(pa.Table.from_arrays(cols, schema=out_schema))
    out = (pa.concat_tables(tables) if len(tables) > 1 else tables[0]).combine_chunks()
    return out.to_batches()[0]


def _log_dropped(message: str) -> None:
    logging.getLogger("spark_udfs").warning("kafkarec: DROPMALFORMED left out a batch: %s", message)


def explode_udtf(*, batch_columns=False, corrupt_column=_schema.DEFAULT_CORRUPT_COLUMN,
                 expected=None):
    """The row UDTF behind ``kafkarec_explode(col[, mode])`` (for LATERAL joins),
    deterministic so filters on the left side are pushed below it."""
    from pyspark.sql.functions import udtf
    ret = _schema.kafka_schema(batch_columns=batch_columns, with_topic_partition=False,
                               corrupt_column=corrupt_column)
    width = len(ret) - 1

    class KafkarecExplode:
        def eval(self, data, mode=None):
            yield from _udtf_rows(data, mode, batch_columns, width, expected)

    return udtf(KafkarecExplode, returnType=ret, useArrow=True).asDeterministic()


def _udtf_rows(data, mode, batch_columns, width, expected):
    if data is None:
        return
    ensure(expected)       # kafkarec imported (a shipped archive first), checked to be the driver's build
    from kafkarec.scan.config import normalize_mode
    from kafkarec.scan.decode import decode_range
    mode = normalize_mode(mode)
    target = _record_target(batch_columns)
    for kind, item in decode_range(memoryview(data), batch_columns=batch_columns,
                                   mode=mode):
        if kind == "error":
            if mode == "PERMISSIVE":
                yield (None,) * width + (item["message"],)
            else:
                _log_dropped(item["message"])
            continue
        rb = _schema.conform(item, target, mode=mode)
        cols = [rb.column(j).to_pylist() for j in range(rb.num_columns)]
        cols.append([None] * rb.num_rows)
        yield from zip(*cols)
