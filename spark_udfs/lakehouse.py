"""Backfills from Spark: a topic's history, [log start, hand-off point) per partition, in a live
writer's row layout (:mod:`kafkarec.lakehouse`), as a DataFrame or written into an Iceberg table
through Spark's catalog.

* :func:`backfill_frame` - ``spark.read.format("kafkarec")`` with ``readCommitted`` and the
  hand-off points as starting/ending offsets (what a ``read_committed`` consumer reads of
  [start, H)), each Arrow batch turned into the layout's rows by
  :func:`kafkarec.lakehouse.to_layout` in ``mapInArrow``; the frame's schema is the layout's.
* :func:`backfill_iceberg` - that frame appended to an Iceberg table of a Spark catalog
  (created with the layout's schema and partition spec when absent), its snapshot carrying
  kafkarec's backfill summary keys through Spark's ``snapshot-property.*`` write options: the
  keys and the re-run rule are :mod:`kafkarec.lakehouse`'s, so a re-run of the same backfill,
  by Spark or by the Python writer, writes nothing, and one over a different range is refused.

The options are parsed once into a :class:`BackfillSpec` (``spark_udfs.read.spec``'s convention):
the hand-off points are computed on the driver (or client) from the log, which must be readable
there as on the executors; ``spark_udfs.register(spark)`` must have run (the data source and
kafkarec on the executors).  Classic and Spark Connect sessions alike.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

from kafkarec.errors import UsageError
from spark_udfs.read.options import BACKFILL_SETS

__all__ = ["BackfillSpec", "backfill_spec", "backfill_frame", "backfill_iceberg"]

# Iceberg's partition transforms as Spark's DDL writes them ({col}: the source column)
_TRANSFORMS = {"identity": "{col}", "year": "years({col})", "month": "months({col})",
               "day": "days({col})", "hour": "hours({col})"}


@dataclasses.dataclass(frozen=True)
class BackfillSpec:
    """One backfill's options, parsed: the log, the layout, the hand-off points
    ({(topic, partition): HandOff(start, end)}), the reader options passed through to
    ``format("kafkarec")`` (storage, typed values, ...; lower-case names), and the table."""
    log_uri: str
    layout: Any                       # kafkarec.lakehouse.Layout
    points: dict
    read_options: dict
    table: Optional[str] = None       # catalog.namespace.table, for backfill_iceberg

    def ranges(self) -> dict:
        """The partitions with records to read: {topic: {partition: (start, end)}}."""
        out: dict = {}
        for (topic, partition), point in sorted(self.points.items()):
            if point.end > point.start:
                out.setdefault(topic, {})[partition] = (point.start, point.end)
        return out


def backfill_spec(log_uri: str, *, layout, points=None, topics=None, end_offsets=None, end_time=None,
                  options=None, table: Optional[str] = None) -> BackfillSpec:
    """The :class:`BackfillSpec` of a backfill; ``points`` default to
    :func:`kafkarec.lakehouse.hand_off_points` of ``log_uri`` (``topics``, ``end_offsets``,
    ``end_time`` as it takes them; the storage and tiered-storage options of ``options``)."""
    from kafkarec import lakehouse
    from kafkarec.log import storage
    if not log_uri:
        raise UsageError("backfill: no log path or URI")
    chosen = lakehouse.layout(layout)
    given = {str(k).lower(): str(v) for k, v in dict(options or {}).items() if v is not None}
    # read options the backfill sets from its hand-off points and its contract (committed data
    # records only; a batch that does not decode fails the write): a caller's value would read
    # something else than the range the table's summary records
    own = sorted(given.keys() & BACKFILL_SETS)
    if own:
        raise UsageError(f"backfill: option(s) {own} are set by the backfill itself (the hand-off "
                         f"points' range, committed records only); give topics, end_offsets or "
                         f"end_time, or points")
    if table is not None and len([p for p in str(table).split(".") if p]) < 3:
        raise UsageError(f"backfill: table {table!r} is not catalog.namespace.table (a Spark catalog's "
                         f"Iceberg table)")
    if points is None:
        points = lakehouse.hand_off_points(log_uri, topics=topics, end_offsets=end_offsets,
                                           end_time=end_time,
                                           storage_options=storage.storage_options(given) or None,
                                           tiered_storage=given.get("tieredstorage"))
    elif topics is not None or end_offsets is not None or end_time is not None:
        raise UsageError("backfill: give points, or topics/end_offsets/end_time to compute them, not both")
    if chosen.topic is None and len({t for t, _ in points}) > 1:
        raise UsageError(f"backfill: layout {chosen.name} keeps one topic per table (its rows do not "
                         f"name the topic); the log has {sorted({t for t, _ in points})}: choose one "
                         f"with topics=")
    return BackfillSpec(str(log_uri), chosen, dict(points), given, table)


def backfill_frame(spark, log_uri=None, *, spec: Optional[BackfillSpec] = None, **kw):
    """The rows of [start, H) of every partition of the hand-off points, in the layout
    (a DataFrame of the layout's schema); ``spec`` or :func:`backfill_spec`'s arguments."""
    spec = spec or backfill_spec(log_uri, **kw)
    from pyspark.sql import functions as F
    from spark_udfs.read.schema import RAW_TIMESTAMP
    from spark_udfs.ship.shipping import expected_fingerprint
    ranges = spec.ranges()
    if not ranges:
        # nothing below any hand-off point (an empty log, or H at the log start everywhere)
        return spark.createDataFrame([], _spark_schema(spec.layout.schema()))
    reader = spark.read.format("kafkarec")
    for k, v in spec.read_options.items():
        reader = reader.option(k, v)
    reader = (reader.option("readCommitted", "true").option("mode", "FAILFAST")
              .option("includeHeaders", "true")
              .option("assign", json.dumps({t: sorted(ps) for t, ps in ranges.items()}))
              .option("startingOffsets", json.dumps(_offsets_json(ranges, 0)))
              .option("endingOffsets", json.dumps(_offsets_json(ranges, 1))))
    rows = reader.load(spec.log_uri)
    value_type = _value_type(rows.schema["value"].dataType)
    out_schema = _spark_schema(spec.layout.schema(value_type))
    # to_layout takes kafkarec's rows: the timestamp in ms, as the data source's timestampMs
    rows = rows.select("key", "value", "topic", "partition", "offset",
                       F.col(RAW_TIMESTAMP).alias("timestamp"), "timestampType", "headers")
    params = (spec.layout.name, value_type, expected_fingerprint())

    def kafkarec_to_layout(batches):
        return _layout_batches(batches, *params)

    return rows.mapInArrow(kafkarec_to_layout, out_schema)


def _layout_batches(batches, layout_name, value_type, expected):
    from spark_udfs.ship.runtime import ensure
    ensure(expected)
    from kafkarec.lakehouse import to_layout
    for batch in batches:
        yield to_layout(batch, layout_name, value_type=value_type)


def _offsets_json(ranges: dict, which: int) -> dict:
    return {t: {str(p): r[which] for p, r in ps.items()} for t, ps in ranges.items()}


def _value_type(spark_type):
    """The value's Arrow type in the layout: a typed value's struct, else None (binary)."""
    from pyspark.sql import types as T
    if not isinstance(spark_type, T.StructType):
        return None
    from spark_udfs.read.schema import arrow_type_for
    return arrow_type_for(spark_type)


def _spark_schema(arrow_schema):
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(arrow_schema)


def backfill_iceberg(spark, log_uri=None, table: Optional[str] = None, *,
                     spec: Optional[BackfillSpec] = None, **kw) -> dict:
    """Append the backfill (:func:`backfill_frame`) to the Iceberg table ``table``
    (``catalog.namespace.table`` of a Spark catalog), creating it with the layout's schema and
    partition spec when absent, in one commit whose snapshot summary records each partition's
    [start, H) (:data:`kafkarec.lakehouse.backfill.SUMMARY_PREFIX`).  Partitions whose range the
    table's history records are not written again; a different range over a recorded one raises
    :class:`kafkarec.errors.BackfillError`.  Returns {(topic, partition):
    :class:`kafkarec.lakehouse.backfill.PartitionSummary`}."""
    from kafkarec.lakehouse.backfill import (PartitionSummary, iceberg_ranges_to_write,
                                             iceberg_summary_properties)
    spec = spec or backfill_spec(log_uri, table=table, **kw)
    if spec.table is None:
        raise UsageError("backfill_iceberg: no table (catalog.namespace.table)")
    exists = spark.catalog.tableExists(spec.table)
    todo, summary = iceberg_ranges_to_write(
        spec.table, _snapshot_summaries(spark, spec.table) if exists else [], spec.points)
    for (topic, partition), point in spec.points.items():
        if (topic, partition) not in todo and (topic, partition) not in summary:
            summary[(topic, partition)] = PartitionSummary(topic, partition, point.start, point.end, 0, "empty")
    if not todo:
        return dict(sorted(summary.items()))
    spec = dataclasses.replace(spec, points=todo)
    frame = backfill_frame(spark, spec=spec)
    if not exists:
        _create_table(spark, spec.table, frame.schema, spec.layout)
    props = iceberg_summary_properties(todo)
    writer = frame.writeTo(spec.table)
    for k, v in props.items():
        writer = writer.option(f"snapshot-property.{k}", v)
    writer.append()
    rows = _rows_written(spark, spec, props)
    for key, point in todo.items():
        n = rows.get(key, 0)
        summary[key] = PartitionSummary(key[0], key[1], point.start, point.end, n, "written" if n else "empty")
    return dict(sorted(summary.items()))


def _snapshot_summaries(spark, table: str) -> list:
    """Every snapshot's summary of ``table``, oldest first (its ``snapshots`` metadata table)."""
    rows = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at").collect()
    return [dict(r["summary"] or {}) for r in rows]


def _create_table(spark, table: str, schema, layout) -> None:
    """``table`` with ``schema`` (NOT NULL where the layout's column is required, nested fields
    too) and the layout's Iceberg partition spec, through Spark's DDL (a CTAS would make every
    column nullable)."""
    columns = ", ".join(f"{_quote(f.name)} {_ddl_type(f.dataType)}{'' if f.nullable else ' NOT NULL'}"
                        for f in schema.fields)
    parts = []
    for field in layout.partition_spec:
        template = _TRANSFORMS.get(field.transform)
        if template is None:
            raise UsageError(f"layout {layout.name}: partition transform {field.transform!r} has no "
                             f"Spark DDL here (known: {', '.join(_TRANSFORMS)})")
        parts.append(template.format(col=".".join(_quote(n) for n in field.source)))
    partitioned = f" PARTITIONED BY ({', '.join(parts)})" if parts else ""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {table.rsplit('.', 1)[0]}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} ({columns}) USING iceberg{partitioned}")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _ddl_type(dt) -> str:
    from pyspark.sql import types as T
    if isinstance(dt, T.StructType):
        return "STRUCT<" + ", ".join(
            f"{_quote(f.name)}: {_ddl_type(f.dataType)}{'' if f.nullable else ' NOT NULL'}"
            for f in dt.fields) + ">"
    if isinstance(dt, T.ArrayType):
        return f"ARRAY<{_ddl_type(dt.elementType)}>"
    if isinstance(dt, T.MapType):
        return f"MAP<{_ddl_type(dt.keyType)}, {_ddl_type(dt.valueType)}>"
    return dt.simpleString()


def _rows_written(spark, spec: BackfillSpec, props: dict) -> dict:
    """{(topic, partition): rows} of the snapshot this backfill committed (the one whose summary
    holds ``props``), counted from its position columns only."""
    from pyspark.sql import functions as F
    snaps = spark.sql(f"SELECT snapshot_id, parent_id, summary FROM {spec.table}.snapshots "
                      f"ORDER BY committed_at DESC").collect()
    ours = next(s for s in snaps if all((s["summary"] or {}).get(k) == v for k, v in props.items()))
    reader = spark.read.format("iceberg")
    if ours["parent_id"] is None:
        reader = reader.option("versionAsOf", ours["snapshot_id"])
    else:
        # an incremental read: the rows appended after the parent, up to ours
        reader = (reader.option("start-snapshot-id", ours["parent_id"])
                  .option("end-snapshot-id", ours["snapshot_id"]))
    lay = spec.layout
    partition = F.col(".".join(lay.partition)).alias("p")
    if lay.topic is None:
        (topic,) = {t for t, _ in spec.points}
        counted = reader.load(spec.table).groupBy(partition).count().collect()
        return {(topic, r["p"]): r["count"] for r in counted}
    counted = (reader.load(spec.table).groupBy(F.col(".".join(lay.topic)).alias("t"), partition)
               .count().collect())
    return {(r["t"], r["p"]): r["count"] for r in counted}
