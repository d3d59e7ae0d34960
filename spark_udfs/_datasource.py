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
parsed once, when the source is made, into a :class:`spark_udfs._spec.ReadSpec` - the option
table and ``docs/spark-options.md``.

One reader (:class:`KafkaRecReader`), one task type (:class:`KafkaRecPartition`), one planner
(:func:`plan`), one ``read``.  The planner asks :mod:`kafkarec.log` what the read covers and how
it may be cut, and packs the pieces into tasks by Spark's file-source rule
(:mod:`spark_udfs._planning`).  What kafkarec.log gives depends on :attr:`ReadSpec.listed`: a
URI, a selection option, tiered storage, ``view=latest`` or ``cdc`` are read over a listing
(:mod:`kafkarec.log.layout` sorts it into partitions and segments, :mod:`kafkarec.log.selection`
resolves the selection through the side files and cuts at offset-index positions, no segment
byte read; pieces are read in ranges of whole batches, small ranges a few ahead in threads);
otherwise local paths, globs, ``pathGlobFilter`` and ``recursiveFileLookup`` are found by
:func:`kafkarec.log.directory.find_segment_files` and cut at batch starts into slices
memory-mapped at most :data:`kafkarec.log.local.READ_WINDOW_BYTES` at a time
(:mod:`kafkarec.log.local`).  Every piece is decoded by :func:`spark_udfs._decode.decode_range`
with the same parse modes.  ``readCommitted`` leaves out the aborted batches' spans, judged over
each topic-partition's whole log.

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
from typing import Callable, List, NamedTuple, Optional

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from spark_udfs import _planning, _schema
from spark_udfs._decode import MalformedBatchError, ReadConfig, decode_range
from spark_udfs._runtime import ensure
from spark_udfs._spec import ReadSpec, read_spec

__all__ = ["KafkaRecDataSource", "KafkaRecReader", "KafkaRecPartition", "BatchReadConfig",
           "ListedRange", "batch_config", "plan"]

log = logging.getLogger("spark_udfs")


class BatchReadConfig(ReadConfig):
    """What a batch read needs of its :class:`spark_udfs._spec.ReadSpec` (pickled to executors)."""

    def __init__(self, spec: ReadSpec, *, default_parallelism: int = 1):
        super().__init__(spec)
        self.listed = spec.listed
        self.default_parallelism = max(1, int(default_parallelism or 1))
        self.files = spec.files
        # decode: an internal topic's typed columns (kafkarec.internal.columns), e.g. consumer_offsets
        self.decode = spec.columns.decode
        self.default_schema = _schema.read_schema(spec)
        # tieredStorage: a remote root whose copies are stitched with the log dirs' local segments
        self.tiered_storage = spec.storage.tiered_storage
        # view=latest: each topic-partition's keyed state (kafkarec.table), whole partitions per task
        self.view = spec.view
        self.buffer_bytes = spec.limits.dedupe_buffer_bytes


def batch_config(spec: ReadSpec, *, default_parallelism: int = 1) -> BatchReadConfig:
    """The config of a batch read of ``spec``, by the local or the listed reader's option names."""
    return BatchReadConfig(spec.for_batch("R" if spec.listed else "L"), default_parallelism=default_parallelism)


class ListedRange(NamedTuple):
    """One listed range a task reads: the storage holding it (pyarrow file systems pickle
    with their configuration), the segment range (kafkarec.log.selection.SegmentRange) and,
    with readCommitted, the spans of that segment to leave out (``[(position, size)]``)."""
    storage: object
    range: object
    skip: tuple = ()


class KafkaRecPartition(InputPartition):
    """One Spark task: its ranges in log order, local :class:`kafkarec.log.local.Slice` s
    or :class:`ListedRange` s."""

    def __init__(self, index: int, ranges: tuple):
        super().__init__(index)
        self.index = index
        self.ranges = ranges

    def __repr__(self):
        return f"KafkaRecPartition({self.index}, {len(self.ranges)} ranges)"


class KafkaRecDataSource(DataSource):
    """``spark.read.format("kafkarec")``; see the module docstring for options.

    The options are parsed once, here (:func:`spark_udfs._spec.read_spec`); every reader
    below takes the resulting spec.  :func:`spark_udfs.register` registers a subclass that
    also carries the driver's kafkarec fingerprint (checked in the planner and every task)
    and the cluster's default parallelism (``minPartitions``).
    """

    expected_fingerprint = None
    default_min_partitions = 1

    @classmethod
    def name(cls) -> str:
        return "kafkarec"

    def __init__(self, options):
        super().__init__(options)
        self.spec = read_spec(options)

    def schema(self):
        if self.spec.typed is not None:
            from spark_udfs import _typed   # registry: options valueFormat/keyFormat (typed key/value)
            return _typed.typed_schema(self.spec, _schema.read_schema(self.spec.binary()))
        return _schema.read_schema(self.spec)

    def reader(self, schema):
        if self.spec.typed is not None:
            from spark_udfs import _typed
            return _typed.TypedReader(self, schema)
        from spark_udfs import _pushdown
        if _pushdown.planning_with_filters():       # Spark 4.1+, filter pushdown on: pushFilters
            return self.plain_reader(self.spec, schema, _pushdown.FilteringKafkaRecReader)
        return self.plain_reader(self.spec, schema)

    def plain_reader(self, spec: ReadSpec, schema, reader_class=None):
        """The batch reader of ``spec`` (binary keys and values)."""
        if spec.listed and spec.columns.decode:
            raise ValueError("kafkarec data source: option decode works on local log directories "
                             "without selection options (not yet on URIs or with topics/offsets)")
        config = batch_config(spec, default_parallelism=self.default_min_partitions)
        return (reader_class or KafkaRecReader)(config, schema, self.expected_fingerprint)

    def streamReader(self, schema):
        if self.spec.typed is not None:    # valueFormat/keyFormat: typed key/value
            from spark_udfs import _typed_stream
            return _typed_stream.typed_stream_reader(self, schema)
        from spark_udfs import _streaming
        return _streaming.stream_reader(self.spec, schema, self.expected_fingerprint)


class KafkaRecReader(DataSourceReader):
    def __init__(self, config: BatchReadConfig, schema, expected=None):
        self.config = config
        self.schema = schema
        self.expected = expected
        if not config.listed:
            known = {f.name for f in config.default_schema} | {f.name for f in _schema.kafka_schema(
                batch_columns=True)} | {config.corrupt_column}
            unknown = [f.name for f in schema if f.name not in known]
            if unknown:
                raise ValueError(f"kafkarec data source: schema column(s) {unknown} are not produced; "
                                 f"available: {sorted(known)}")

    def partitions(self):
        ensure(self.expected)
        return plan(self.config) or [KafkaRecPartition(0, ())]

    def read(self, partition):
        yield from read_task(self.config, partition, self.schema, self.expected)


class _Found(NamedTuple):
    """What :mod:`kafkarec.log` found for a read: its pieces in log order, how to measure, cut
    and group them for :func:`spark_udfs._planning.plan_tasks`, the ``minPartitions`` it
    aims at, and a packed task's pieces as the task reads them."""
    pieces: list
    size: Callable
    split: Callable
    group: Callable
    min_partitions: Optional[int]
    as_read: Callable


def plan(config: BatchReadConfig) -> List[KafkaRecPartition]:
    """The tasks of a batch read: the pieces :mod:`kafkarec.log` finds (:func:`_found_local`
    or :func:`_found_listed`) packed by Spark's file-source rule; with ``view=latest`` one task
    per topic-partition, as a partition's state needs all of its records in one task, in order
    (with ``cdc`` one task per topic: a truncate in one partition applies to all of them)."""
    found = _found_listed(config) if config.listed else _found_local(config)
    if config.view == "latest":
        by_partition: dict = {}
        for piece in found.pieces:
            key = found.group(piece)
            by_partition.setdefault(_topic_key(key) if config.cdc is not None else key, []).append(piece)
        return [KafkaRecPartition(i, tuple(g)) for i, g in enumerate(by_partition.values())]
    groups = _planning.plan_tasks(found.pieces, min_partitions=found.min_partitions,
                                  default_parallelism=config.default_parallelism,
                                  max_partition_bytes=config.max_partition_bytes,
                                  open_cost_bytes=config.open_cost, size=found.size, split=found.split,
                                  group=found.group)
    return [KafkaRecPartition(i, tuple(found.as_read(g))) for i, g in enumerate(groups)]


def _found_local(config: BatchReadConfig) -> _Found:
    """Local paths found (:func:`kafkarec.log.directory.find_segment_files`: globs,
    pathGlobFilter, recursiveFileLookup, duplicate partitions) as slices cut at batch starts
    and read in windows (:mod:`kafkarec.log.local`)."""
    from kafkarec.log import directory, local
    files = config.files
    segments, skipped = directory.find_segment_files(
        config.paths, pattern=files.glob_filter, recursive=files.recursive,
        allow_duplicate_partitions=files.allow_duplicates)
    for d in skipped:
        log.warning("kafkarec: skipped %s (a folder Kafka itself ignores)", d)
    spans: dict = {}   # each file's batches are walked once for cuts, windows and readCommitted
    aborted = local.aborted_batches(segments, spans) if config.read_committed else None
    # a local read aims at minPartitions, else the cluster's cores, in the Kafka source's meaning
    return _Found(local.slices(segments, aborted, local.log_starts(segments)), size=lambda sl: sl.end - sl.start,
                  split=lambda sl, max_bytes: local.split(sl, max_bytes, spans),
                  group=local.partition_key,
                  min_partitions=config.min_partitions or config.default_parallelism,
                  as_read=lambda task: [w for sl in task for w in local.windows(sl, spans)])


def _range_bytes(rr: ListedRange) -> int:
    sr = rr.range
    return max(0, (sr.segment.size if sr.end is None else min(sr.end, sr.segment.size)) - sr.start)


def _partition_key(rr: ListedRange):
    """The topic-partition of a range (its folder when the folder name has none)."""
    sr = rr.range
    if sr.topic is not None:
        return (rr.storage.prefix, sr.topic, sr.partition)
    return (rr.storage.prefix, None, sr.segment.path.rsplit("/", 1)[0])


def _topic_key(partition_key):
    """The topic of a :func:`_partition_key` (whichever log dir holds the partition); a folder
    whose name has no topic is one of its own."""
    topic = partition_key[1]
    return ("topic", topic) if topic is not None else partition_key


def _found_listed(config: BatchReadConfig) -> _Found:
    """Each path listed once (:func:`kafkarec.log.layout.scan_history`: local folders, object
    stores, tiered copies stitched with the log dirs), selected, and cut at offset-index
    positions (:mod:`kafkarec.log.selection`); no segment byte is read to plan (readCommitted
    walks the selected partitions' logs)."""
    from kafkarec.log import layout, selection
    resolvers: dict = {}
    items: List[ListedRange] = []
    for raw in config.paths:
        lay, gaps = layout.scan_history(raw, config.tiered_storage, config.storage_options)
        st = lay.storage
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
        items += [ListedRange(st, sr, tuple(skips.get(sr.segment.path, ()))) for sr in ranges]

    def split(rr: ListedRange, max_bytes: int) -> list:
        return [rr._replace(range=sr)
                for sr in selection.split_ranges([rr.range], resolvers[id(rr.storage)], max_bytes)]

    return _Found(items, size=_range_bytes, split=split, group=_partition_key,
                  min_partitions=config.min_partitions, as_read=list)


def _read_committed_skips(st, lay, ranges) -> dict:
    """The aborted spans of every partition the ranges read, each judged over its whole log."""
    from kafkarec.log import committed
    wanted = {(sr.topic, sr.partition) for sr in ranges}
    skips: dict = {}
    for part in lay.partitions:
        if part.key in wanted:
            skips.update(committed.read_committed_spans(st, part))
    return skips


def read_task(config: BatchReadConfig, task: KafkaRecPartition, schema, expected=None):
    """Arrow batches of one task in ``schema`` (see the module docstring for the parse modes);
    with ``view=latest`` each topic-partition's keyed state (:func:`kafkarec.table.latest_batches`:
    two passes over its ranges, error rows handed on once)."""
    kafkarec = ensure(expected)
    target = _schema.arrow_schema_for(schema)
    corrupt = config.corrupt_column if config.corrupt_column in target.names else None
    need_batch_columns = bool(set(target.names) & set(_schema.batch_column_names()))
    decoded = [f.name for f in schema if f.name in _schema.decoded_names(config.decode)]
    if config.view != "latest":
        for where, item in _decoded(config, kafkarec, task.ranges, need_batch_columns):
            if config.cdc is not None and not isinstance(item, _Errors):
                from kafkarec.cdc import changes
                item = changes(item)
            yield from _emit(config, where, item, target, corrupt, decoded)
        return
    from kafkarec import table
    topics: dict = {}
    for rr in task.ranges:
        key = _partition_key(rr)
        topics.setdefault(_topic_key(key), {}).setdefault(key, []).append(rr)
    for partitions in topics.values():
        wheres, reads = [], []
        for ranges in partitions.values():
            wheres.append(ranges[0].storage.uri(ranges[0].range.segment.path.rsplit("/", 1)[0]))

            def read(ranges=ranges):
                for _, item in _decoded(config, kafkarec, ranges, need_batch_columns):
                    yield item
            reads.append(read)
        for i, item in table.topic_latest_batches(reads, buffer_bytes=config.buffer_bytes, cdc=config.cdc):
            yield from _emit(config, wheres[i], item, target, corrupt, decoded)


class _Errors(NamedTuple):
    """Batches of one piece that could not be decoded (``decode_range``'s error dicts)."""
    errors: list
    topic: object
    partition: object


def _decoded(config: BatchReadConfig, kafkarec, ranges, need_batch_columns: bool):
    """``(where, item)`` for each range read in log order: items are Arrow batches of the
    log view (offset bounds applied, not yet conformed) and :class:`_Errors`."""
    from kafkarec.log import local, selection
    from kafkarec.log.storage import without_spans
    quarantine = None
    if config.bad_records_path:
        from kafkarec.log.quarantine import Quarantine
        quarantine = Quarantine(config.bad_records_path, storage_options=config.storage_options)
    options = config.read.options(kafkarec)
    if config.listed:
        hint = "(data source option mode=FAILFAST; use PERMISSIVE or DROPMALFORMED)"
    else:
        hint = (f"(data source option mode=FAILFAST; use PERMISSIVE to get error rows in "
                f"{config.corrupt_column}, or DROPMALFORMED)")
    for rr, where, topic, partition, mapped, pieces in _ranges_read(ranges):
        # offsets kept: a local slice's from the log start on, a listed range's as selected
        lo, hi = (rr.min_offset, None) if mapped else (rr.range.min_offset, rr.range.end_offset)
        if rr.skip:       # read_committed: the aborted batches' spans are left out
            pieces = (part for piece in pieces
                      for part in ((piece,) if isinstance(piece, dict) else without_spans(piece, rr.skip)))
        for piece in pieces:
            if isinstance(piece, dict):     # the local file shrank after the read was planned
                yield where, _Errors([piece], topic, partition)
                continue
            errs = []
            try:
                for kind, item in decode_range(
                        kafkarec, piece.data, options, base=piece.position,
                        topic=topic, partition=partition, include_control=config.include_control,
                        batch_columns=need_batch_columns,
                        max_rows=config.max_rows, mode=config.mode, where=where,
                        quarantine=quarantine):
                    if kind != "batch":
                        errs.append(item)
                        continue
                    if lo is not None or hi is not None:
                        item = selection.filter_offsets(item, lo, hi)
                        if not item.num_rows:
                            continue
                    if errs:
                        yield where, _Errors(errs, topic, partition)
                        errs = []
                    yield where, item
            except MalformedBatchError as exc:
                raise MalformedBatchError(f"{exc} {hint}") from None
            finally:
                if mapped:        # so that the map can close
                    local.release(piece.data)
            if errs:
                yield where, _Errors(errs, topic, partition)


def _emit(config: BatchReadConfig, where: str, item, target, corrupt, decoded):
    """Rows in the read's schema: a batch conformed, or the error rows of :class:`_Errors`
    (PERMISSIVE; DROPMALFORMED logs them)."""
    if not isinstance(item, _Errors):
        yield _schema.conform(item, target, _decoded_columns(config, decoded, item),
                              corrupt=corrupt, mode=config.mode, where=where)
        return
    errs = item.errors
    # a local read gives its error rows without the corrupt column too, and in FAILFAST the
    # shrunk file's (decode errors have raised already)
    if config.mode != "DROPMALFORMED" and (corrupt or not config.listed):
        cols = {"topic": item.topic, "partition": item.partition}
        cols["batchPosition"] = [e["position"] for e in errs]
        cols["batchBaseOffset"] = [e.get("base_offset") for e in errs]
        yield _schema.error_rows(target, {corrupt or "\0none": [e["message"] for e in errs]}, cols)
    else:
        for e in errs:
            log.warning("kafkarec: %s left out: %s", config.mode, e["message"])


def _decoded_columns(config: BatchReadConfig, decoded: list, batch):
    """The internal topic's typed columns for ``batch`` (option decode), or None."""
    if not decoded:
        return None
    import pyarrow as pa
    from kafkarec.internal import columns
    table = columns.decode_columns(pa.Table.from_batches([batch]), config.decode,
                                   strict=config.read.strict)
    return {name: table.column(name).combine_chunks() for name in decoded}


# Small ranges (whole small segments: many small partitions) are read ahead, this many at a
# time, while the task decodes the current one: on an object store each costs a metadata and a
# ranged request, a round trip each, which would otherwise add up one after the other.
READ_AHEAD_RANGES = 4
READ_AHEAD_MAX_BYTES = 8 << 20      # one request's worth (kafkarec.log.storage.DEFAULT_CHUNK)


def _ranges_read(ranges):
    """``(range, where, topic, partition, mapped, pieces)`` for each of ``ranges`` in order.  A
    local slice (``mapped``) is memory-mapped when its turn comes
    (:func:`kafkarec.log.local.iter_pieces`).  A listed range of at most
    :data:`READ_AHEAD_MAX_BYTES` is read whole in a background thread up to
    :data:`READ_AHEAD_RANGES` ranges ahead (memory: that many small ranges), a larger one is
    walked in bounded pieces when its turn comes (:func:`kafkarec.log.selection.iter_range_pieces`)."""
    from kafkarec.log import local, selection
    mapped = [isinstance(rr, local.Slice) for rr in ranges]

    def whole(rr):
        return list(selection.iter_range_pieces(rr.storage, rr.range))

    def described(i, pieces):
        rr = ranges[i]
        if mapped[i]:
            return rr, rr.path, rr.topic, rr.partition, True, pieces
        return rr, rr.storage.uri(rr.range.segment.path), rr.range.topic, rr.range.partition, False, pieces

    def later(i):
        rr = ranges[i]
        return local.iter_pieces(rr) if mapped[i] else selection.iter_range_pieces(rr.storage, rr.range)
    small = [len(ranges) > 1 and not m and _range_bytes(rr) <= READ_AHEAD_MAX_BYTES
             for rr, m in zip(ranges, mapped)]
    if sum(small) < 2:
        for i in range(len(ranges)):
            yield described(i, later(i))
        return
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(READ_AHEAD_RANGES, thread_name_prefix="kafkarec-ranges")
    ahead: dict = {}
    try:
        for i in range(len(ranges)):
            for j in range(i, min(len(ranges), i + READ_AHEAD_RANGES)):
                if small[j] and j not in ahead:
                    ahead[j] = pool.submit(whole, ranges[j])
            yield described(i, ahead.pop(i).result() if i in ahead else later(i))
    finally:
        for f in ahead.values():
            f.cancel()
        pool.shutdown(wait=True)
