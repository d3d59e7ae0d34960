"""``spark.read.format("kafkarec").load(path)``: Kafka log directories / segment files.

A Python Data Source (``pyspark.sql.datasource``).  ``path`` is a log
directory (``<topic>-<partition>/*.log`` folders, found recursively), a
partition folder, a segment file or a glob; topic and partition come from the
``<topic>-<partition>`` folder names.  Large segments are split across tasks
at batch boundaries.

Options (case-insensitive).  The Kafka source's options keep their names and meanings
(``subscribe``, ``subscribePattern``, ``assign``, ``startingOffsets`` ...,
``kafka.isolation.level``, ``includeHeaders``; ``kafka.*`` broker settings are ignored):
``docs/spark-options.md`` (:mod:`spark_udfs._options`).  A subscription option, a
starting/ending option or a URI sends the read to :mod:`spark_udfs._remote`.  kafkarec's own:

==========================  ===========  ==================================================
option                      default      meaning
==========================  ===========  ==================================================
mode                        PERMISSIVE   PERMISSIVE / DROPMALFORMED / FAILFAST (below)
columnNameOfCorruptRecord   _corrupt_record  PERMISSIVE's error column
batchColumns                false        add producerId ... magic (batch-level columns)
includeControl              false        keep control records (transaction markers)
includeHeaders              false        add the headers column (as the Kafka source)
readCommitted               false        leave out what a read_committed consumer would not
                                         see: aborted transactions, and everything from a
                                         transaction still open at the end on (the LSO),
                                         judged over each topic-partition's whole log
maxPartitionBytes           128m         most bytes per task (files are cut at batches)
openCostInBytes             4m           cost of a file when packing small files in a task
minPartitions               (cores)      aim for at least this many tasks
pathGlobFilter              *.log        which files are segments
recursiveFileLookup         true         descend into sub-folders
allowDuplicatePartitions    false        allow one topic-partition in several folders
verifyCrc                   true         check batch CRCs
strict                      false        reject what Kafka's Java reader lets through
maxDecompressedBytes        64m          most bytes one compressed batch may inflate to
maxRecordsPerBatch          16384        rows per Arrow batch handed to Spark
badRecordsPath              (none)       copy each batch that cannot be decoded, byte for byte,
                                         to PATH/_undecodable/<topic>-<partition>/<position>.batch
                                         (typed reads also keep failed records there whole)
view                        log          ``log``: every record; ``latest``: each topic-partition's
                                         keyed state, one row per live key
                                         (:mod:`kafkarec.table`; read as URIs are)
cdc                         (none)       ``debezium``: values are Debezium change events; adds op,
                                         before, after, source, ts_ms, cdcError; with view=latest
                                         the table they mirror (:mod:`kafkarec.cdc`); with
                                         valueFormat, Avro (...) envelopes: typed before/after
dedupeBufferSize            128m         view=latest: the key map's size per task (as Kafka's
                                         ``log.cleaner.dedupe.buffer.size``; more keys cost
                                         more passes, never more memory)
tieredStorageConfig         (none)       the tiered-storage plugin's properties: read the
                                         segments it stored (chunked, zstd, AES-GCM;
                                         :mod:`kafkarec.log.rsm`)
tieredStorage               (none)       a tiered-storage root stitched with the loaded log
                                         dirs: one history (gaps fail unless failOnDataLoss
                                         is false)
remoteLogMetadata           (none)       a log dir holding ``__remote_log_metadata``: read only
                                         live remote copies (default with tieredStorage: the
                                         loaded log dir)
==========================  ===========  ==================================================

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

from spark_udfs import _decode, _logdir, _options, _schema
from spark_udfs._decode import MalformedBatchError, ReadSettings, decode_range, normalize_mode
from spark_udfs._runtime import ensure

__all__ = ["KafkaRecDataSource", "KafkaRecReader", "KafkaRecPartition", "ReadConfig"]

log = logging.getLogger("spark_udfs")


_bool = _options.parse_bool

# Rows per Arrow batch handed to Spark: spark_udfs._decode (the remote and stream readers use it too).
DEFAULT_MAX_RECORDS_PER_BATCH = _decode.DEFAULT_MAX_RECORDS_PER_BATCH


_lower = _options.lower_keys


_KNOWN = {"path", "paths", "mode", "columnnameofcorruptrecord", "batchcolumns", "includecontrol",
          "includeheaders", "readcommitted", "maxpartitionbytes", "opencostinbytes", "minpartitions",
          "pathglobfilter", "recursivefilelookup", "allowduplicatepartitions", "verifycrc",
          "strict", "maxdecompressedbytes", "maxrecordsperbatch", "decode", "view", "badrecordspath"}


class ReadConfig:
    """The options of one read, validated (on the planner, at analysis time)."""

    def __init__(self, options, *, default_min_partitions: int = 1):
        o = _options.normalize(options, streaming=False)
        unknown = sorted(k for k in set(o) - _KNOWN if not k.startswith("spark."))
        if unknown:
            raise ValueError(f"kafkarec data source: unknown option(s) {unknown}; known: "
                             f"{sorted(_KNOWN)}")
        self.paths = _logdir.split_paths(o)
        if not self.paths:
            raise ValueError("kafkarec data source: no path; use spark.read.format('kafkarec').load(path)")
        self.mode = normalize_mode(o.get("mode"))
        self.corrupt_column = o.get("columnnameofcorruptrecord") or _schema.DEFAULT_CORRUPT_COLUMN
        self.batch_columns = _bool(o, "batchcolumns", False)
        self.include_control = _bool(o, "includecontrol", False)
        self.include_headers = _options.include_headers(o)
        self.read_committed = _bool(o, "readcommitted", False)
        self.max_partition_bytes = _logdir.parse_bytes(o.get("maxpartitionbytes"), 128 << 20)
        self.open_cost = _logdir.parse_bytes(o.get("opencostinbytes"), 4 << 20)
        self.min_partitions = int(o.get("minpartitions") or default_min_partitions or 1)
        self.glob_filter = o.get("pathglobfilter") or "*.log"
        self.recursive = _bool(o, "recursivefilelookup", True)
        self.allow_duplicates = _bool(o, "allowduplicatepartitions", False)
        self.read = ReadSettings(o)
        self.max_rows = int(o.get("maxrecordsperbatch") or DEFAULT_MAX_RECORDS_PER_BATCH)
        if self.max_rows <= 0:
            raise ValueError("option maxRecordsPerBatch must be positive")
        # decode: an internal topic's typed columns (kafkarec.internal.columns), e.g. consumer_offsets
        self.decode = o.get("decode") or None
        # badRecordsPath: batches that cannot be decoded are copied there whole (kafkarec.log.quarantine)
        self.bad_records_path = o.get("badrecordspath") or None

    def default_schema(self):
        return _schema.kafka_schema(
            batch_columns=self.batch_columns,
            corrupt_column=self.corrupt_column if self.mode == "PERMISSIVE" else None,
            decode=self.decode, include_headers=self.include_headers)


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

    :func:`spark_udfs.register` registers a subclass that also carries the
    driver's kafkarec fingerprint (checked in the planner and every task) and
    the cluster's default parallelism (``minPartitions``).
    """

    expected_fingerprint = None
    default_min_partitions = 1

    @classmethod
    def name(cls) -> str:
        return "kafkarec"

    def __init__(self, options):
        super().__init__(options)
        o = _lower(options)
        # Local paths without selection: mmap'd segments, split at batches
        # (KafkaRecReader).  URIs (s3://, gs://, ...) or Kafka-source selection
        # options: listed once, ranged reads, side files consulted
        # (spark_udfs._remote).  A stream (readStream) validates its own options.
        from kafkarec.log import selection, storage
        from kafkarec import cdc, table
        self.remote = (any(storage.is_uri(p) for p in _logdir.split_paths(o))
                       or storage.tiered_config_option(o) is not None or "tieredstorage" in o
                       or any(k in o for k in selection.SELECTION_OPTIONS)
                       or any(k in o for k in _options.STRATEGY_KEYS)
                       or table.parse_view(o.get("view")) == "latest"
                       or cdc.parse_cdc(o.get("cdc")) is not None)

    def schema(self):
        from spark_udfs import _typed   # registry: options valueFormat/keyFormat (typed key/value)
        if _typed.wanted(self.options):
            return _typed.typed_schema(self.options, type(self)(_typed._stripped(self.options)).schema())
        o = _lower(self.options)
        mode = normalize_mode(o.get("mode"))
        return _schema.kafka_schema(
            batch_columns=_bool(o, "batchcolumns", False),
            corrupt_column=(o.get("columnnameofcorruptrecord") or _schema.DEFAULT_CORRUPT_COLUMN)
            if mode == "PERMISSIVE" else None,
            decode=None if self.remote else (o.get("decode") or None),
            include_headers=_options.include_headers(o), cdc=_cdc(o) is not None)

    def reader(self, schema):
        from spark_udfs import _typed   # registry: options valueFormat/keyFormat (typed key/value)
        if _typed.wanted(self.options):
            return _typed.TypedReader(self, schema)
        if self.remote and _lower(self.options).get("decode"):
            raise ValueError("kafkarec data source: option decode works on local log directories "
                             "without selection options (not yet on URIs or with topics/offsets)")
        if self.remote:
            from spark_udfs import _remote
            config = _remote.RemoteReadConfig(remote_options(self.options),
                                              default_parallelism=self.default_min_partitions)
            return _remote.KafkaRecRemoteReader(config, schema, self.expected_fingerprint)
        config = ReadConfig(self.options, default_min_partitions=self.default_min_partitions)
        return KafkaRecReader(config, schema, self.expected_fingerprint)

    def streamReader(self, schema):
        from spark_udfs import _typed
        if _typed.wanted(self.options):    # valueFormat/keyFormat: typed key/value
            from spark_udfs import _typed_stream
            return _typed_stream.typed_stream_reader(self, schema)
        from spark_udfs import _streaming
        return _streaming.stream_reader(self.options, schema, self.expected_fingerprint)


def _cdc(o: dict):
    """The option ``cdc`` (kafkarec.cdc.parse_cdc): None or ``"debezium"``."""
    from kafkarec.cdc import parse_cdc
    return parse_cdc(o.get("cdc"))


def remote_options(options) -> dict:
    """The options of a read handed to :mod:`spark_udfs._remote`, in its names: the Kafka
    source's names translated (:func:`spark_udfs._options.normalize`) and the columns the
    schema already settles (``includeHeaders``) left out.  ``minPartitions`` passes as given;
    without it the remote planner uses the cluster's parallelism, as the local one does."""
    o = _options.normalize(options, streaming=False)
    o.pop("includeheaders", None)
    return o


class KafkaRecReader(DataSourceReader):
    def __init__(self, config: ReadConfig, schema, expected):
        self.config = config
        self.schema = schema
        self.expected = expected
        known = {f.name for f in config.default_schema()} | {f.name for f in _schema.kafka_schema(
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
        segments, skipped = _logdir.discover(cfg.paths, glob_filter=cfg.glob_filter,
                                             recursive=cfg.recursive,
                                             allow_duplicate_partitions=cfg.allow_duplicates)
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
