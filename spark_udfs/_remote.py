"""Batch reads of log directories anywhere (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``,
``file://``, plain paths) with Spark Kafka-source selection, for the ``kafkarec`` data source.

The driver lists once (:func:`kafkarec.log.storage.list_files`), sorts the files into
partitions and segments (:mod:`kafkarec.log.layout`: broker and tiered-storage layouts,
copies read once), resolves the selection through the side files
(:mod:`kafkarec.log.selection`) and cuts large segments at offset-index positions - no
segment byte is read to plan.  Each task reads its byte ranges with ranged reads in
pieces of whole batches (memory bounded by a piece, not the object) and decodes them with
the batch source's parse modes (:func:`spark_udfs._decode.decode_range`).

Options: the batch source's (``mode``, ``columnNameOfCorruptRecord``, ``batchColumns``,
``includeControl``, ``verifyCrc``, ``strict``, ``maxDecompressedBytes``,
``maxRecordsPerBatch``, ``maxPartitionBytes``), the selection options of
:mod:`kafkarec.log.selection` (``topics``, ``topicPattern``, ``startingOffsets``,
``endingOffsets``, ``startingTimestamp``, ``endingTimestamp``,
``startingOffsetsByTimestamp``, ``endingOffsetsByTimestamp``,
``startingOffsetsByTimestampStrategy``) and the storage options of
:mod:`kafkarec.log.storage` (``endpoint``, ``region``, ``accessKey``, ``secretKey``,
``sessionToken``, ``anonymous``, ...), and ``readCommitted``: the driver walks each selected
topic-partition's whole log once (:func:`kafkarec.log.committed.read_committed_spans`: a
transaction may start before the selection or in another segment) and every task leaves out
the spans of aborted batches and those past the last stable offset.  Options that only the
local reader has (``pathGlobFilter``, ``openCostInBytes`` ...) are refused, as is any
unknown option.

The ``kafkarec`` data source (:mod:`spark_udfs._datasource`) hands a read here when a
path is a URI or a selection option is given.
"""
from __future__ import annotations

import logging
from typing import List

from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_udfs import _logdir, _schema
from spark_udfs._decode import MalformedBatchError, ReadSettings, decode_range, normalize_mode
from spark_udfs._runtime import ensure

__all__ = ["RemoteReadConfig", "RemoteTask", "plan_tasks", "read_task", "KafkaRecRemoteReader",
           "REMOTE_OPTIONS"]

log = logging.getLogger("spark_udfs")

REMOTE_OPTIONS = {"path", "paths", "mode", "columnnameofcorruptrecord", "batchcolumns",
                  "includecontrol", "verifycrc", "strict", "maxdecompressedbytes",
                  "maxrecordsperbatch", "maxpartitionbytes", "readcommitted"}


_bool = _logdir.parse_bool


class RemoteReadConfig:
    def __init__(self, options):
        from kafkarec.log import selection, storage
        o = {str(k).lower(): v for k, v in dict(options).items()}
        unknown = sorted(k for k in o if k not in REMOTE_OPTIONS and k not in selection.SELECTION_OPTIONS
                         and not storage.storage_options({k: "x"}) and not k.startswith("spark."))
        if unknown:
            raise ValueError(
                f"kafkarec data source: option(s) {unknown} are not used when reading URIs or with "
                f"selection options; known here: {sorted(REMOTE_OPTIONS | set(selection.SELECTION_OPTIONS))}"
                f" and the storage options of kafkarec.log.storage (endpoint, region, accessKey, ...)")
        self.options = o
        self.paths = _logdir.split_paths(o)
        if not self.paths:
            raise ValueError("kafkarec data source: no path; use spark.read.format('kafkarec').load(path)")
        self.storage_options = storage.storage_options(o)
        self.selection = selection.parse_selection({k: v for k, v in o.items()
                                                    if k in selection.SELECTION_OPTIONS})
        self.mode = normalize_mode(o.get("mode"))
        self.corrupt_column = o.get("columnnameofcorruptrecord") or _schema.DEFAULT_CORRUPT_COLUMN
        self.batch_columns = _bool(o, "batchcolumns", False)
        self.include_control = _bool(o, "includecontrol", False)
        self.read_committed = _bool(o, "readcommitted", False)
        self.read = ReadSettings(o)
        self.max_rows = int(o.get("maxrecordsperbatch") or 10000)
        self.max_partition_bytes = _logdir.parse_bytes(o.get("maxpartitionbytes"), 128 << 20)

    def schema(self):
        return _schema.kafka_schema(
            batch_columns=self.batch_columns,
            corrupt_column=self.corrupt_column if self.mode == "PERMISSIVE" else None)


class RemoteTask(InputPartition):
    """One Spark task: segment ranges (kafkarec.log.selection.SegmentRange), the storage
    to read them from (pyarrow file systems pickle with their configuration) and, with
    readCommitted, the spans to leave out of each segment (``{path: [(position, size)]}``)."""

    def __init__(self, index: int, storage, ranges: tuple, skips: dict | None = None):
        super().__init__(index)
        self.storage = storage
        self.ranges = ranges
        self.skips = skips or {}


def plan_tasks(config: RemoteReadConfig) -> List[RemoteTask]:
    """List once, select, cut at index positions, pack into tasks of ~maxPartitionBytes."""
    from kafkarec.log import layout, selection, storage
    tasks: List[RemoteTask] = []
    for raw in config.paths:
        st, root = storage.resolve(raw, config.storage_options)
        lay = layout.scan(st, root)
        for d in lay.skipped:
            log.warning("kafkarec: skipped %s (a folder Kafka itself ignores)", st.uri(d))
        resolver = selection.Resolver(st)
        ranges = selection.split_ranges(selection.plan(lay, config.selection, resolver), resolver,
                                        config.max_partition_bytes)
        skips = _read_committed_skips(st, lay, ranges) if config.read_committed else {}

        def task(srs):
            mine = {sr.segment.path for sr in srs}
            return RemoteTask(len(tasks), st, tuple(srs), {p: v for p, v in skips.items() if p in mine})
        current, size = [], 0
        for sr in ranges:
            n = (sr.segment.size if sr.end is None else min(sr.end, sr.segment.size)) - sr.start
            if current and size + n > config.max_partition_bytes:
                tasks.append(task(current))
                current, size = [], 0
            current.append(sr)
            size += n
        if current:
            tasks.append(task(current))
    return tasks


def _read_committed_skips(st, lay, ranges) -> dict:
    """The aborted spans of every partition the ranges read, each judged over its whole log."""
    from kafkarec.log import committed
    wanted = {(sr.topic, sr.partition) for sr in ranges}
    skips: dict = {}
    for part in lay.partitions:
        if part.key in wanted:
            skips.update(committed.read_committed_spans(st, part))
    return skips


def read_task(config: RemoteReadConfig, task: RemoteTask, schema, expected=None):
    """Arrow batches of one task in ``schema`` (parse modes as the batch source's)."""
    kafkarec = ensure(expected)
    from kafkarec.log import selection
    target = _schema.arrow_schema_for(schema)
    corrupt = config.corrupt_column if config.corrupt_column in target.names else None
    names = set(target.names)
    need_batch_columns = bool(names & set(_schema.batch_column_names()))
    from kafkarec.log.storage import without_spans
    for sr in task.ranges:
        where = task.storage.uri(sr.segment.path)
        fixed = {"topic": sr.topic, "partition": sr.partition}
        skip = task.skips.get(sr.segment.path)
        pieces = selection.iter_range_pieces(task.storage, sr)
        if skip:
            pieces = (part for piece in pieces for part in without_spans(piece, skip))
        for piece in pieces:
            errs = []
            try:
                for kind, item in decode_range(
                        kafkarec, piece.data, config.read.options(kafkarec), base=piece.position,
                        topic=sr.topic, partition=sr.partition, include_control=config.include_control,
                        batch_columns=need_batch_columns,
                        max_rows=config.max_rows, mode=config.mode, where=where):
                    if kind == "batch":
                        item = selection.filter_offsets(item, sr.min_offset, sr.end_offset)
                        if item.num_rows:
                            yield _schema.conform(item, target, corrupt=corrupt, mode=config.mode,
                                                  where=where)
                    else:
                        errs.append(item)
            except MalformedBatchError as exc:
                raise MalformedBatchError(f"{exc} (data source option mode=FAILFAST; use "
                                          f"PERMISSIVE or DROPMALFORMED)") from None
            if errs and config.mode == "PERMISSIVE" and corrupt:
                cols = dict(fixed)
                cols["batchPosition"] = [e["position"] for e in errs]
                cols["batchBaseOffset"] = [e.get("base_offset") for e in errs]
                yield _schema.error_rows(target, {corrupt: [e["message"] for e in errs]}, cols)
            elif errs:
                for e in errs:
                    log.warning("kafkarec: %s left out: %s", config.mode, e["message"])


class KafkaRecRemoteReader(DataSourceReader):
    def __init__(self, config: RemoteReadConfig, schema, expected=None):
        self.config = config
        self.schema = schema
        self.expected = expected

    def partitions(self):
        ensure(self.expected)
        tasks = plan_tasks(self.config)
        return tasks or [RemoteTask(0, None, ())]

    def read(self, partition):
        yield from read_task(self.config, partition, self.schema, self.expected)
