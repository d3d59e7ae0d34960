"""Batch reads of log directories anywhere (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``,
``file://``, plain paths) with Spark Kafka-source selection, for the ``kafkarec`` data source.

The driver lists once (:func:`kafkarec.log.storage.list_files`), sorts the files into
partitions and segments (:mod:`kafkarec.log.layout`: broker and tiered-storage layouts,
copies read once), resolves the selection through the side files
(:mod:`kafkarec.log.selection`), then cuts large segments at offset-index positions and
packs the ranges into tasks by the local reader's rule (:mod:`spark_udfs._planning`:
Spark's maxPartitionBytes / openCostInBytes / minPartitions) - no segment byte is read
to plan.  Each task reads its byte ranges with ranged reads in
pieces of whole batches (memory bounded by a piece, not the object; small ranges - many
small segments - read a few ahead in threads) and decodes them with the batch source's
parse modes (:func:`spark_udfs._decode.decode_range`).

Options: the batch source's (``mode``, ``columnNameOfCorruptRecord``, ``batchColumns``,
``includeControl``, ``verifyCrc``, ``strict``, ``maxDecompressedBytes``,
``maxRecordsPerBatch``, ``maxPartitionBytes``, ``openCostInBytes``, ``minPartitions``), the selection options of
:mod:`kafkarec.log.selection` (``topics``, ``topicPattern``, ``startingOffsets``,
``endingOffsets``, ``startingTimestamp``, ``endingTimestamp``,
``startingOffsetsByTimestamp``, ``endingOffsetsByTimestamp``,
``startingOffsetsByTimestampStrategy``) and the storage options of
:mod:`kafkarec.log.storage` (``endpoint``, ``region``, ``accessKey``, ``secretKey``,
``sessionToken``, ``anonymous``, ...), and ``readCommitted``: the driver walks each selected
topic-partition's whole log once (:func:`kafkarec.log.committed.read_committed_spans`: a
transaction may start before the selection or in another segment) and every task leaves out
the spans of aborted batches and those past the last stable offset.  Options that only the
local reader has (``pathGlobFilter``, ``recursiveFileLookup`` ...) are refused, as is any
unknown option.

The ``kafkarec`` data source (:mod:`spark_udfs._datasource`) hands a read here when a
path is a URI or a selection option is given.
"""
from __future__ import annotations

import logging
from typing import List, NamedTuple

from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark_udfs import _planning, _schema
from spark_udfs._decode import MalformedBatchError, ReadConfig, decode_range
from spark_udfs._runtime import ensure
from spark_udfs._spec import ReadSpec

__all__ = ["RemoteReadConfig", "RemoteRange", "RemoteTask", "plan_tasks", "read_task", "KafkaRecRemoteReader"]

log = logging.getLogger("spark_udfs")


class RemoteReadConfig(ReadConfig):
    """What a listed read needs of its :class:`spark_udfs._spec.ReadSpec` (pickled to executors)."""

    def __init__(self, spec: ReadSpec, *, default_parallelism: int = 1):
        super().__init__(spec)
        # tieredStorage: a remote root whose copies are stitched with the log dirs' local segments
        self.tiered_storage = spec.storage.tiered_storage
        self.default_parallelism = max(1, int(default_parallelism or 1))
        # view=latest: each topic-partition's keyed state (kafkarec.table), whole partitions per task
        self.view = spec.view
        self.buffer_bytes = spec.limits.dedupe_buffer_bytes


class RemoteRange(NamedTuple):
    """One range a task reads: the storage holding it (pyarrow file systems pickle with
    their configuration), the segment range (kafkarec.log.selection.SegmentRange) and,
    with readCommitted, the spans of that segment to leave out (``[(position, size)]``)."""
    storage: object
    range: object
    skip: tuple = ()


class RemoteTask(InputPartition):
    """One Spark task: :class:`RemoteRange` s, in log order."""

    def __init__(self, index: int, ranges: tuple):
        super().__init__(index)
        self.index = index
        self.ranges = ranges

    def __repr__(self):
        return f"RemoteTask({self.index}, {len(self.ranges)} ranges)"


def _range_bytes(rr: RemoteRange) -> int:
    sr = rr.range
    return max(0, (sr.segment.size if sr.end is None else min(sr.end, sr.segment.size)) - sr.start)


def _partition_key(rr: RemoteRange):
    """The topic-partition of a range (its folder when the folder name has none)."""
    sr = rr.range
    if sr.topic is not None:
        return (rr.storage.prefix, sr.topic, sr.partition)
    return (rr.storage.prefix, None, sr.segment.path.rsplit("/", 1)[0])


def plan_tasks(config: RemoteReadConfig) -> List[RemoteTask]:
    """List each path once, select, then cut at offset-index positions and pack into
    tasks by :func:`spark_udfs._planning.plan_tasks` (Spark's file-source rule, as local
    reads); no segment byte is read to plan (readCommitted walks the selected
    partitions' logs)."""
    from kafkarec.log import layout, selection, storage
    resolvers: dict = {}
    items: List[RemoteRange] = []
    for raw in config.paths:
        lay, gaps = layout.scan_history(raw, config.tiered_storage, config.storage_options)
        st, root = lay.storage, lay.root
        for gap in gaps:
            msg = (f"kafkarec: offsets {gap.start}..{gap.end - 1} of {gap.topic}-{gap.partition} are in neither "
                   f"the remote copies ({config.tiered_storage}) nor the log dir ({raw})")
            if config.fail_on_data_loss:
                raise ValueError(msg + " (data loss; failOnDataLoss=false reads around it)")
            log.warning(msg)
        for d in lay.skipped:
            log.warning("kafkarec: skipped %s (a folder Kafka itself ignores)", st.uri(d))
        for uri, why in lay.not_live:
            log.warning("kafkarec: not read: %s: %s", uri, why)
        resolver = resolvers[id(st)] = selection.Resolver(st)
        ranges = selection.plan(lay, config.selection, resolver)
        skips = _read_committed_skips(st, lay, ranges) if config.read_committed else {}
        items += [RemoteRange(st, sr, tuple(skips.get(sr.segment.path, ()))) for sr in ranges]

    if config.view == "latest":
        # A partition's state needs all of its records in one task, in order: never split.
        by_partition: dict = {}
        for rr in items:
            by_partition.setdefault(_partition_key(rr), []).append(rr)
        return [RemoteTask(i, tuple(g)) for i, g in enumerate(by_partition.values())]

    def split(rr: RemoteRange, max_bytes: int) -> list:
        return [rr._replace(range=sr)
                for sr in selection.split_ranges([rr.range], resolvers[id(rr.storage)], max_bytes)]

    groups = _planning.plan_tasks(items, min_partitions=config.min_partitions,
                                  default_parallelism=config.default_parallelism,
                                  max_partition_bytes=config.max_partition_bytes,
                                  open_cost_bytes=config.open_cost, size=_range_bytes, split=split,
                                  group=_partition_key)
    return [RemoteTask(i, tuple(g)) for i, g in enumerate(groups)]


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
    """Arrow batches of one task in ``schema`` (parse modes as the batch source's); with
    ``view=latest`` each topic-partition's keyed state (:func:`kafkarec.table.latest_batches`:
    two passes over its ranges, error rows handed on once)."""
    kafkarec = ensure(expected)
    target = _schema.arrow_schema_for(schema)
    corrupt = config.corrupt_column if config.corrupt_column in target.names else None
    need_batch_columns = bool(set(target.names) & set(_schema.batch_column_names()))
    if config.view != "latest":
        for where, item in _decoded(config, kafkarec, task.ranges, need_batch_columns):
            if config.cdc is not None and not isinstance(item, _Errors):
                from kafkarec.cdc import changes
                item = changes(item)
            yield from _emit(config, where, item, target, corrupt)
        return
    from kafkarec import table
    groups: dict = {}
    for rr in task.ranges:
        groups.setdefault(_partition_key(rr), []).append(rr)
    for ranges in groups.values():
        where = ranges[0].storage.uri(ranges[0].range.segment.path.rsplit("/", 1)[0])

        def read(ranges=ranges):
            for _, item in _decoded(config, kafkarec, ranges, need_batch_columns):
                yield item
        for item in table.latest_batches(read, buffer_bytes=config.buffer_bytes, cdc=config.cdc):
            yield from _emit(config, where, item, target, corrupt)


class _Errors(NamedTuple):
    """Batches of one piece that could not be decoded (``decode_range``'s error dicts)."""
    errors: list
    topic: object
    partition: object


def _decoded(config: RemoteReadConfig, kafkarec, ranges, need_batch_columns: bool):
    """``(where, item)`` for each range read in log order: items are Arrow batches of the
    log view (offset bounds applied, not yet conformed) and :class:`_Errors`."""
    from kafkarec.log import selection
    from kafkarec.log.storage import without_spans
    quarantine = None
    if config.bad_records_path:
        from kafkarec.log.quarantine import Quarantine
        quarantine = Quarantine(config.bad_records_path, storage_options=config.storage_options)
    for (st, sr, skip), pieces in _ranges_read_ahead(ranges):
        where = st.uri(sr.segment.path)
        if skip:
            pieces = (part for piece in pieces for part in without_spans(piece, skip))
        for piece in pieces:
            errs = []
            try:
                for kind, item in decode_range(
                        kafkarec, piece.data, config.read.options(kafkarec), base=piece.position,
                        topic=sr.topic, partition=sr.partition, include_control=config.include_control,
                        batch_columns=need_batch_columns,
                        max_rows=config.max_rows, mode=config.mode, where=where,
                        quarantine=quarantine):
                    if kind == "batch":
                        item = selection.filter_offsets(item, sr.min_offset, sr.end_offset)
                        if item.num_rows:
                            yield where, item
                    else:
                        errs.append(item)
            except MalformedBatchError as exc:
                raise MalformedBatchError(f"{exc} (data source option mode=FAILFAST; use "
                                          f"PERMISSIVE or DROPMALFORMED)") from None
            if errs:
                yield where, _Errors(errs, sr.topic, sr.partition)


def _emit(config: RemoteReadConfig, where: str, item, target, corrupt):
    """Rows in the read's schema: a batch conformed, or the error rows of :class:`_Errors`
    (PERMISSIVE; DROPMALFORMED logs them)."""
    if not isinstance(item, _Errors):
        yield _schema.conform(item, target, corrupt=corrupt, mode=config.mode, where=where)
        return
    errs = item.errors
    if config.mode == "PERMISSIVE" and corrupt:
        cols = {"topic": item.topic, "partition": item.partition}
        cols["batchPosition"] = [e["position"] for e in errs]
        cols["batchBaseOffset"] = [e.get("base_offset") for e in errs]
        yield _schema.error_rows(target, {corrupt: [e["message"] for e in errs]}, cols)
    else:
        for e in errs:
            log.warning("kafkarec: %s left out: %s", config.mode, e["message"])


# Small ranges (whole small segments: many small partitions) are read ahead, this many at a
# time, while the task decodes the current one: on an object store each costs a metadata and a
# ranged request, a round trip each, which would otherwise add up one after the other.
READ_AHEAD_RANGES = 4
READ_AHEAD_MAX_BYTES = 8 << 20      # one request's worth (kafkarec.log.storage.DEFAULT_CHUNK)


def _ranges_read_ahead(ranges):
    """``(range, pieces)`` for each of ``ranges`` in order; a range of at most
    :data:`READ_AHEAD_MAX_BYTES` is read whole in a background thread up to
    :data:`READ_AHEAD_RANGES` ranges ahead (memory: that many small ranges), a larger one is
    walked in bounded pieces when its turn comes (:func:`kafkarec.log.selection.iter_range_pieces`)."""
    from kafkarec.log import selection

    def whole(rr):
        return list(selection.iter_range_pieces(rr.storage, rr.range))
    small = [len(ranges) > 1 and _range_bytes(rr) <= READ_AHEAD_MAX_BYTES for rr in ranges]
    if sum(small) < 2:
        for rr in ranges:
            yield rr, selection.iter_range_pieces(rr.storage, rr.range)
        return
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(READ_AHEAD_RANGES, thread_name_prefix="kafkarec-ranges")
    ahead: dict = {}
    try:
        for i, rr in enumerate(ranges):
            for j in range(i, min(len(ranges), i + READ_AHEAD_RANGES)):
                if small[j] and j not in ahead:
                    ahead[j] = pool.submit(whole, ranges[j])
            if i in ahead:
                yield rr, ahead.pop(i).result()
            else:
                yield rr, selection.iter_range_pieces(rr.storage, rr.range)
    finally:
        for f in ahead.values():
            f.cancel()
        pool.shutdown(wait=True)


class KafkaRecRemoteReader(DataSourceReader):
    def __init__(self, config: RemoteReadConfig, schema, expected=None):
        self.config = config
        self.schema = schema
        self.expected = expected

    def partitions(self):
        ensure(self.expected)
        tasks = plan_tasks(self.config)
        return tasks or [RemoteTask(0, ())]

    def read(self, partition):
        yield from read_task(self.config, partition, self.schema, self.expected)
