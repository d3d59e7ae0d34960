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
table and ``docs/spark-options.md``.  A URI, a selection option, tiered storage, ``view=latest``
or ``cdc`` send the read to :mod:`spark_udfs._remote` (:attr:`ReadSpec.listed`); otherwise the
local files are memory-mapped and split at batches here (:class:`KafkaRecReader`).

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
import mmap
import os

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from spark_udfs import _logdir, _schema
from spark_udfs._decode import MalformedBatchError, ReadConfig, decode_range
from spark_udfs._runtime import ensure
from spark_udfs._spec import ReadSpec, read_spec

__all__ = ["KafkaRecDataSource", "KafkaRecReader", "KafkaRecPartition", "LocalReadConfig"]

log = logging.getLogger("spark_udfs")


class LocalReadConfig(ReadConfig):
    """What a local read needs of its :class:`spark_udfs._spec.ReadSpec` (pickled to executors)."""

    def __init__(self, spec: ReadSpec, *, default_min_partitions: int = 1):
        super().__init__(spec)
        self.min_partitions = spec.limits.min_partitions or default_min_partitions or 1
        self.files = spec.files
        # decode: an internal topic's typed columns (kafkarec.internal.columns), e.g. consumer_offsets
        self.decode = spec.columns.decode
        self.default_schema = _schema.read_schema(spec)


class KafkaRecPartition(InputPartition):
    """One task: slices of segment files (path, start, end, topic, partition, skip)."""

    def __init__(self, index: int, slices: tuple):
        super().__init__(index)
        self.index = index
        self.slices = slices

    def __repr__(self):
        return f"KafkaRecPartition({self.index}, {len(self.slices)} slices)"


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
        return self.plain_reader(self.spec, schema)

    def plain_reader(self, spec: ReadSpec, schema):
        """The batch reader of ``spec`` (binary keys and values): a listed layout
        (:mod:`spark_udfs._remote`: URIs, selection, tiered storage, view=latest, cdc) or
        local files, memory-mapped and split at batches (:class:`KafkaRecReader`)."""
        if spec.listed:
            if spec.columns.decode:
                raise ValueError("kafkarec data source: option decode works on local log directories "
                                 "without selection options (not yet on URIs or with topics/offsets)")
            from spark_udfs import _remote
            config = _remote.RemoteReadConfig(spec.for_batch("R"),
                                              default_parallelism=self.default_min_partitions)
            return _remote.KafkaRecRemoteReader(config, schema, self.expected_fingerprint)
        config = LocalReadConfig(spec.for_batch("L"), default_min_partitions=self.default_min_partitions)
        return KafkaRecReader(config, schema, self.expected_fingerprint)

    def streamReader(self, schema):
        if self.spec.typed is not None:    # valueFormat/keyFormat: typed key/value
            from spark_udfs import _typed_stream
            return _typed_stream.typed_stream_reader(self, schema)
        from spark_udfs import _streaming
        return _streaming.stream_reader(self.spec, schema, self.expected_fingerprint)


class KafkaRecReader(DataSourceReader):
    def __init__(self, config: LocalReadConfig, schema, expected):
        self.config = config
        self.schema = schema
        self.expected = expected
        known = {f.name for f in config.default_schema} | {f.name for f in _schema.kafka_schema(
            batch_columns=True)} | {config.corrupt_column}
        self.decoded = [f.name for f in schema if f.name in _schema.decoded_names(config.decode)]
        unknown = [f.name for f in schema if f.name not in known]
        if unknown:
            raise ValueError(f"kafkarec data source: schema column(s) {unknown} are not produced; "
                             f"available: {sorted(known)}")
        names = {f.name for f in schema}
        self.need_batch_columns = bool(names & set(_schema.batch_column_names()))

    def partitions(self):
        cfg = self.config
        kafkarec = ensure(self.expected)
        segments, skipped = _logdir.discover(cfg.paths, glob_filter=cfg.files.glob_filter,
                                             recursive=cfg.files.recursive,
                                             allow_duplicate_partitions=cfg.files.allow_duplicates)
        for d in skipped:
            log.warning("kafkarec: skipped %s (a folder Kafka itself ignores)", d)
        spans: dict = {}   # each file's batches are walked once for both
        aborted = _logdir.aborted_batches(segments, spans) if cfg.read_committed else None
        tasks = _logdir.plan(segments, max_partition_bytes=cfg.max_partition_bytes,
                             open_cost=cfg.open_cost, min_partitions=cfg.min_partitions,
                             aborted=aborted, spans=spans)
        if not tasks:
            return [KafkaRecPartition(0, ())]
        return [KafkaRecPartition(i, tuple(t)) for i, t in enumerate(tasks)]

    def read(self, partition):
        cfg = self.config
        kafkarec = ensure(self.expected)
        target = _schema.arrow_schema_for(self.schema)
        corrupt = cfg.corrupt_column if cfg.corrupt_column in target.names else None
        quarantine = None
        if cfg.bad_records_path:
            from kafkarec.log.quarantine import Quarantine
            quarantine = Quarantine(cfg.bad_records_path)
        for sl in partition.slices:
            yield from self._read_slice(kafkarec, sl, target, corrupt, quarantine)

    def _read_slice(self, kafkarec, sl, target, corrupt, quarantine=None):
        cfg = self.config
        if sl.end <= sl.start:
            return
        from kafkarec.log.storage import Piece, without_spans
        fixed = {"topic": sl.topic, "partition": sl.partition}
        end = sl.end
        with open(sl.path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < sl.end:
                yield from self._errors([{
                    "position": size, "base_offset": None, "error": "FileChangedError",
                    "reason": f"the file is {size} bytes now, {sl.end} when the read was planned",
                    "message": f"{sl.path}: the file shrank from {sl.end} to {size} bytes "
                               f"after the read was planned"}], target, corrupt, fixed)
                if size <= sl.start:
                    return
                end = size
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            mv = memoryview(mm)
            whole = mv[sl.start:end]
            try:
                # read_committed: the aborted batches' spans are left out
                for part in without_spans(Piece(sl.start, whole), sl.skip):
                    a, view = part.position, part.data
                    try:
                        errs = []
                        for kind, item in decode_range(
                                kafkarec, view, cfg.read.options(kafkarec), base=a, topic=sl.topic,
                                partition=sl.partition, include_control=cfg.include_control,
                                batch_columns=self.need_batch_columns,
                                max_rows=cfg.max_rows, mode=cfg.mode, where=sl.path,
                                quarantine=quarantine):
                            if kind == "batch":
                                if errs:
                                    yield from self._errors(errs, target, corrupt, fixed)
                                    errs = []
                                yield _schema.conform(item, target, self._decoded_columns(item),
                                                      corrupt=corrupt, mode=cfg.mode, where=sl.path)
                            else:
                                errs.append(item)
                        if errs:
                            yield from self._errors(errs, target, corrupt, fixed)
                    except MalformedBatchError as exc:
                        raise MalformedBatchError(
                            f"{exc} (data source option mode=FAILFAST; use PERMISSIVE to get "
                            f"error rows in {cfg.corrupt_column}, or DROPMALFORMED)") from None
                    finally:
                        _release(view)
            finally:
                _release(whole)
                _release(mv)
                try:
                    mm.close()
                except BufferError:
                    pass

    def _decoded_columns(self, batch):
        """The internal topic's typed columns for ``batch`` (option decode), or None."""
        if not self.decoded:
            return None
        import pyarrow as pa
        from kafkarec.internal import columns
        table = columns.decode_columns(pa.Table.from_batches([batch]), self.config.decode,
                                       strict=self.config.read.strict)
        return {name: table.column(name).combine_chunks() for name in self.decoded}

    def _errors(self, errs, target, corrupt, fixed):
        if self.config.mode == "DROPMALFORMED":
            for e in errs:
                log.warning("kafkarec: DROPMALFORMED left out: %s", e["message"])
            return
        # PERMISSIVE: one row per error (FAILFAST raised already)
        cols = dict(fixed)
        cols["batchPosition"] = [e["position"] for e in errs]
        cols["batchBaseOffset"] = [e.get("base_offset") for e in errs]
        messages = [e["message"] for e in errs]
        yield _schema.error_rows(target, {corrupt or "\0none": messages}, cols)


def _release(view) -> None:
    try:
        view.release()
    except BufferError:
        pass
