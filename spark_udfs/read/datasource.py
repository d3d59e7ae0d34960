"""``spark.read.format("kafkarec").load(path)``: Kafka log directories / segment files.

A Python Data Source (``pyspark.sql.datasource``).  ``path`` is a log
directory (``<topic>-<partition>/*.log`` folders, found recursively), a
partition folder, a segment file or a glob; topic and partition come from the
``<topic>-<partition>`` folder names.  Large segments are split across tasks
at batch boundaries.

Options (case-insensitive): the Kafka source's keep their names and meanings
(``subscribe``, ``subscribePattern``, ``assign``, ``startingOffsets`` ...,
``kafka.isolation.level``, ``includeHeaders``; ``kafka.*`` broker settings are ignored); they and
kafkarec's own (``mode``, ``maxPartitionBytes``, ``view``, ``cdc``, ``valueFormat`` ...) are
parsed once, when the source is made, into a :class:`spark_udfs.read.spec.ReadSpec` - the option
table and ``docs/spark-options.md``.

One reader (:class:`KafkaRecReader`), one task type (:class:`KafkaRecPartition`), one planner
(:func:`plan`), one ``read``, all through kafkarec's one reader (:class:`kafkarec.scan.LogScan`):
the planner packs the scan's pieces of work (:meth:`kafkarec.scan.LogScan.pieces`) into tasks
by Spark's file-source rule (:mod:`spark_udfs.read.planning`), and each task reads its pieces
through the scan (:meth:`kafkarec.scan.LogScan.read_items`).  What the pieces are depends on
:attr:`kafkarec.scan.ScanConfig.listed` (a URI, a selection option, tiered storage, ``view=latest``, ``cdc`` or pushed filters
are read over a listing, local paths and globs as memory-mapped slices: :mod:`kafkarec.scan`).
``readCommitted`` leaves out the aborted batches' spans, judged over each topic-partition's
whole log.

Modes: PERMISSIVE keeps going past a batch that cannot be decoded and emits
one error row for it - topic and partition set (batchPosition and
batchBaseOffset too with batchColumns), other columns null, and the corrupt
record column naming the file, the byte position, the batch's base offset and
the reason.  DROPMALFORMED leaves it out (logged by the executor).  FAILFAST
fails the query.  In every mode each byte of each file is either decoded or
reported: a cut-off batch at a file's end and the bytes after a framing error
are errors too.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, List, Optional, Tuple

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafkarec.errors import UsageError
from spark_udfs.read import planning as _planning, sail as _sail, schema as _schema
from spark_udfs.ship.runtime import ensure, require_shipped_extra, use_wheelhouse
from spark_udfs.read.spec import ReadSpec, read_spec

if TYPE_CHECKING:
    from kafkarec.scan import ScanConfig

__all__ = ["KafkaRecDataSource", "KafkaRecReader", "FilteringKafkaRecReader", "KafkaRecPartition",
           "batch_read", "plan", "read_task"]

log = logging.getLogger("spark_udfs")


def batch_read(spec: ReadSpec) -> Tuple[ReadSpec, "ScanConfig"]:
    """The spec of a batch read of ``spec`` (checked by the local or the listed reader's option
    names, its selection parsed) and its :class:`kafkarec.scan.ScanConfig` (:attr:`ReadSpec.config`)."""
    spec = spec.for_batch("R" if spec.config.listed else "L")
    return spec, spec.config


class KafkaRecPartition(InputPartition):
    """One Spark task: its pieces of work in log order (:class:`kafkarec.scan.ScanPiece` s as
    the task reads them)."""

    def __init__(self, index: int, ranges: tuple):
        super().__init__(index)
        self.index = index
        self.ranges = ranges

    def __repr__(self):
        return f"KafkaRecPartition({self.index}, {len(self.ranges)} ranges)"


class KafkaRecDataSource(DataSource):
    """``spark.read.format("kafkarec")``; see the module docstring for options.

    The options are parsed once, here (:func:`spark_udfs.read.spec.read_spec`); every reader
    below takes the resulting spec.  :func:`spark_udfs.register` registers a subclass that
    also carries the driver's kafkarec fingerprint (checked in the planner and every task)
    and the cluster's default parallelism (``minPartitions``).
    """

    expected_fingerprint = None
    default_min_partitions = 1
    wheelhouse = None           # the driver's wheelhouse (register's Shipping.folder)

    @classmethod
    def name(cls) -> str:
        return "kafkarec"

    def __init__(self, options):
        super().__init__(options)
        use_wheelhouse(self.wheelhouse)
        self.spec = read_spec(options)
        _check_extras(self.spec)

    def schema(self):
        if self.spec.typed is not None:
            from spark_udfs.read import typed as _typed   # registry: options valueFormat/keyFormat (typed key/value)
            return _typed.typed_schema(self.spec, _schema.read_schema(self.spec.binary()))
        return _schema.read_schema(self.spec)

    def reader(self, schema):
        schema = _schema.handed_schema(schema)
        _sail.refuse_stream_options(self.spec.given)
        if self.spec.typed is not None:
            from spark_udfs.read import typed as _typed
            return _typed.TypedReader(self, schema)
        from spark_udfs.read import pushdown as _pushdown
        if _pushdown.planning_with_filters():       # Spark 4.1+, filter pushdown on: pushFilters
            reader = self.plain_reader(self.spec, schema, FilteringKafkaRecReader)
            reader.listable = _pushdown.listable(self.spec)
            return reader
        return self.plain_reader(self.spec, schema)

    def plain_reader(self, spec: ReadSpec, schema, reader_class=None):
        """The batch reader of ``spec`` (binary keys and values)."""
        if spec.config.listed and spec.columns.decode:
            raise UsageError("kafkarec data source: option decode works on local log directories "
                             "without selection options (not yet on URIs or with topics/offsets)")
        spec, config = batch_read(spec)
        return (reader_class or KafkaRecReader)(spec, config, schema, self.expected_fingerprint,
                                                default_parallelism=self.default_min_partitions)

    def streamReader(self, schema):
        schema = _schema.handed_schema(schema)
        if self.spec.typed is not None:    # valueFormat/keyFormat: typed key/value
            from spark_udfs.read import typed_stream as _typed_stream
            return _typed_stream.typed_stream_reader(self, schema)
        from spark_udfs.read import streaming as _streaming
        return _streaming.stream_reader(self.spec, schema, self.expected_fingerprint)


def _check_extras(spec: ReadSpec) -> None:
    """What the read needs of kafkarec's extras on executors, checked where it is planned: objects
    that a tiered-storage plugin encrypted (its config names key pairs) are decrypted by the tasks,
    with cryptography (the ``tiered`` extra)."""
    from kafkarec.log import rsm, storage
    source = storage.tiered_config_option(spec.config.storage_options)
    if not source:
        return
    try:
        encrypted = bool(rsm.load_config(source, spec.config.storage_options).key_pairs)
    except Exception:  # noqa: BLE001 - an unreadable config is the read's own error, said where it reads it
        return
    if encrypted:
        require_shipped_extra("tiered", f"reading encrypted tiered objects (tieredStorageConfig {source})")


class KafkaRecReader(DataSourceReader):
    """The batch reader: the read's spec (its Spark side: ``view``, ``cdc``, ``decode``, the
    planner's limits) and its one :class:`kafkarec.scan.ScanConfig` (what kafkarec reads),
    pickled to executors; ``cdc``: the keyed state's Debezium rules (a typed read gives them its
    decoded envelopes' ops)."""

    def __init__(self, spec: ReadSpec, config: "ScanConfig", schema, expected=None, *,
                 default_parallelism: int = 1):
        self.spec = spec
        self.config = config
        self.cdc = spec.cdc
        self.schema = schema
        self.expected = expected
        self.default_parallelism = max(1, int(default_parallelism or 1))
        if not config.listed:
            known = {f.name for f in _schema.read_schema(spec)} | {f.name for f in _schema.kafka_schema(
                batch_columns=True)} | {config.corrupt_column}
            unknown = [f.name for f in schema if f.name not in known]
            if unknown:
                raise UsageError(f"kafkarec data source: schema column(s) {unknown} are not produced; "
                                 f"available: {sorted(known)}")

    def partitions(self):
        ensure(self.expected)
        return plan(self.spec, self.config, default_parallelism=self.default_parallelism, cdc=self.cdc) or [
            KafkaRecPartition(0, ())]

    def read(self, partition):
        yield from read_task(self.spec, self.config, partition, self.schema, self.expected, cdc=self.cdc)


class FilteringKafkaRecReader(KafkaRecReader):
    """:class:`KafkaRecReader` with ``pushFilters`` (:func:`spark_udfs.read.pushdown.push_into`), made
    only in Spark's filter pushdown planner: Spark 4.1+ refuses a reader that has it while
    ``spark.sql.python.filterPushdown.enabled`` is off (:func:`spark_udfs.read.pushdown.planning_with_filters`)."""

    listable = True          # whether the read may be planned over a listing (pushdown.listable)

    def pushFilters(self, filters):
        from spark_udfs.read import pushdown as _pushdown
        # a new config, the filters' bounds intersected with the options' (never changed in place)
        self.config, kept = _pushdown.push_into(self.spec, self.config, filters, listable=self.listable)
        return kept


def _scan(config: "ScanConfig", *, batch_columns: bool = False, columns=None):
    """The read as kafkarec's reader (kafkarec is loaded: ``ensure`` ran); ``columns``: the core's
    projection (None: every column)."""
    import dataclasses
    from kafkarec.scan import LogScan
    return LogScan(dataclasses.replace(config, batch_columns=batch_columns,
                                       columns=None if columns is None else tuple(columns)))


def _core_projection(spec: ReadSpec, target, corrupt, decoded, cdc) -> Optional[tuple]:
    """The core columns a task's Arrow schema ``target`` takes, or None (every column).  Spark
    prunes no column of a Python data source, so a user's ``.schema(...)`` without ``key``,
    ``value`` and ``headers`` is a projection the core reads by its meta-only walker
    (kafkarec.iter_arrow's ``columns``); any other schema is read whole and conformed, as the full
    decode gains nothing from leaving columns out.  Keyed state, CDC and the internal topics'
    typed columns read whole records."""
    if spec.view == "latest" or cdc is not None or decoded:
        return None
    from kafkarec import arrow_schema
    core = arrow_schema().names
    wanted = {"timestamp" if name == _schema.RAW_TIMESTAMP else name for name in target.names if name != corrupt}
    if not wanted or not wanted <= set(core) or wanted & {"key", "value", "headers"}:
        return None
    return tuple(name for name in core if name in wanted)


def plan(spec: ReadSpec, config: "ScanConfig", *, default_parallelism: int = 1, cdc=None) -> List[KafkaRecPartition]:
    """The tasks of a batch read: the reader's pieces of work packed by Spark's file-source
    rule; with ``view=latest`` one task per topic-partition, as a partition's state needs all
    of its records in one task, in order (with ``cdc`` one task per topic: a truncate in one
    partition applies to all of them; ``cdc``: the keyed state's rules, default the spec's)."""
    cdc = spec.cdc if cdc is None else cdc
    scan = _scan(config)
    pieces = scan.pieces()
    if spec.view == "latest":
        by_partition: dict = {}
        for piece in pieces:
            by_partition.setdefault(piece.topic_key if cdc is not None else piece.key, []).append(piece)
        return [KafkaRecPartition(i, tuple(g)) for i, g in enumerate(by_partition.values())]
    default_parallelism = _sail.default_aim(max(1, int(default_parallelism or 1)), len(pieces))
    limits = spec.limits
    # a local read aims at minPartitions, else the cluster's cores, in the Kafka source's meaning
    aim = limits.min_partitions if config.listed else (limits.min_partitions or default_parallelism)
    groups = _planning.plan_tasks(pieces, min_partitions=aim,
                                  default_parallelism=default_parallelism,
                                  max_partition_bytes=limits.max_partition_bytes,
                                  open_cost_bytes=limits.open_cost_bytes, size=lambda p: p.bytes, split=scan.split,
                                  group=lambda p: p.key)
    return [KafkaRecPartition(i, tuple(scan.as_read(g))) for i, g in enumerate(groups)]


def read_task(spec: ReadSpec, config: "ScanConfig", task: KafkaRecPartition, schema, expected=None, *,
              cdc=None):
    """Arrow batches of one task in ``schema`` (see the module docstring for the parse modes);
    with ``view=latest`` each topic-partition's keyed state (:func:`kafkarec.table.latest_batches`:
    two passes over its ranges, error rows handed on once).  ``cdc``: the keyed state's rules
    (default the spec's)."""
    ensure(expected)
    from kafkarec.scan import error_rows
    from kafkarec.scan.decode import Errors
    cdc = spec.cdc if cdc is None else cdc
    target = _schema.arrow_schema_for(schema)
    corrupt = config.corrupt_column if config.corrupt_column in target.names else None
    need_batch_columns = bool(set(target.names) & set(_schema.batch_column_names()))
    decoded = [f.name for f in schema if f.name in _schema.decoded_names(spec.columns.decode)]
    scan = _scan(config, batch_columns=need_batch_columns,
                 columns=None if need_batch_columns else _core_projection(spec, target, corrupt, decoded, cdc))
    if config.listed:
        hint = "(data source option mode=FAILFAST; use PERMISSIVE or DROPMALFORMED)"
    else:
        hint = (f"(data source option mode=FAILFAST; use PERMISSIVE to get error rows in "
                f"{config.corrupt_column}, or DROPMALFORMED)")

    def emit(where, item):
        """Rows in the read's schema: a batch conformed, or the error rows of
        :class:`kafkarec.scan.decode.Errors` (PERMISSIVE; DROPMALFORMED logs them; a local read
        gives them without the corrupt column too, and in FAILFAST the shrunk file's)."""
        if isinstance(item, Errors):
            rows = error_rows(item, target, config.mode, corrupt_column=corrupt,
                              always=not config.listed)
            if rows is not None:
                yield rows
            return
        yield _schema.conform(item, target, _decoded_columns(spec, config, decoded, item),
                              corrupt=corrupt, mode=config.mode, where=where)

    if spec.view != "latest":
        # (the projection's columns, the offset its order check needs among them; None: all)
        for where, item in scan.read_items(task.ranges, hint=hint, columns=scan.decoded_columns()):
            if cdc is not None and not isinstance(item, Errors):
                from kafkarec.cdc import changes
                item = changes(item)
            yield from emit(where, item)
        return
    from kafkarec import table
    topics: dict = {}
    for piece in task.ranges:
        topics.setdefault(piece.topic_key, {}).setdefault(piece.key, []).append(piece)
    for partitions in topics.values():
        wheres, reads = [], []
        for pieces in partitions.values():
            first = pieces[0]
            wheres.append(first.storage.uri(first.range.segment.path.rsplit("/", 1)[0]))

            def read(pieces=pieces):
                for _, item in scan.read_items(pieces, hint=hint):
                    yield item
            reads.append(read)
        for i, item in table.topic_latest_batches(reads, buffer_bytes=spec.limits.dedupe_buffer_bytes, cdc=cdc):
            yield from emit(wheres[i], item)


def _decoded_columns(spec: ReadSpec, config: "ScanConfig", decoded: list, batch):
    """The internal topic's typed columns for ``batch`` (option decode), or None."""
    if not decoded:
        return None
    import pyarrow as pa
    from kafkarec.internal import columns
    table = columns.decode_columns(pa.Table.from_batches([batch]), spec.columns.decode,
                                   strict=bool(config.strict))
    return {name: table.column(name).combine_chunks() for name in decoded}
