"""``spark.readStream.format("kafkarec").load(path)``: a log directory that keeps growing,
read as a stream (PySpark's Python streaming data source, ``DataSourceStreamReader``).

Offsets are per topic-partition, as JSON like Spark's Kafka source:
``{"orders":{"0":1234,"1":998}}`` - for each partition the next offset to read.
Each micro-batch reads what was appended since the last one: new batches in the
active segment, new segments, new partitions (read from their earliest offset,
as the Kafka source does).  Only whole batches count: a batch still being
written when a micro-batch is planned waits for the next trigger.  The path may
be any URI :mod:`kafkarec.log.storage` understands (``s3://`` ...), local and
tiered copies of the same range are read once (:mod:`kafkarec.log.layout`).

Options (case-insensitive), besides the storage options of
:func:`kafkarec.log.storage.storage_options`:

========================  ============  ====================================================
option                    default       meaning
========================  ============  ====================================================
topics / topicPattern                   which topics (as in :mod:`kafkarec.log.selection`)
startingOffsets           latest        ``earliest``, ``latest`` or JSON (-2/-1), Kafka's default
startingTimestamp, startingOffsetsByTimestamp, startingOffsetsByTimestampStrategy
                                        as the Kafka source
maxOffsetsPerTrigger      (none)        most offsets per micro-batch, shared among partitions
                                        by how far behind each is, as the Kafka source does
failOnDataLoss            true          fail when offsets to read are gone (segments deleted
                                        by retention, a partition deleted or truncated);
                                        ``false``: log it and go on from what is there
includeControl, batchColumns, verifyCrc, strict, maxRecordsPerBatch, maxDecompressedBytes
                                        as the batch data source
========================  ============  ====================================================

A query with a checkpoint restarts from the checkpointed offsets and re-reads a
planned micro-batch identically, so with an idempotent sink (the file sink)
every record is delivered exactly once.

Wiring: the batch source's ``DataSource.streamReader(schema)`` returns
:func:`stream_reader` ``(self.options, schema, self.expected_fingerprint)``.
"""
from __future__ import annotations

import json
import logging
import math
from typing import Dict, List, Optional, Tuple

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from spark_udfs import _logdir, _schema
from spark_udfs._decode import ReadSettings
from spark_udfs._runtime import ensure

try:   # Spark >= 4.2: read limits and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows,
                                                  SupportsTriggerAvailableNow)
except ImportError:   # pragma: no cover - older PySpark
    ReadAllAvailable = ReadMaxRows = None

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass

__all__ = ["stream_reader", "KafkaRecStreamReader", "StreamConfig",
           "STREAM_OPTIONS", "DataLossError"]

log = logging.getLogger("spark_udfs")

STREAM_OPTIONS = {"path", "paths", "topics", "topicpattern", "startingoffsets", "startingtimestamp",
                  "startingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy",
                  "maxoffsetspertrigger", "failondataloss", "includecontrol", "batchcolumns",
                  "verifycrc", "strict", "maxrecordsperbatch", "maxdecompressedbytes",
                  "columnnameofcorruptrecord"}


class DataLossError(RuntimeError):
    """Offsets a stream still had to read are gone (with failOnDataLoss=true)."""


_bool = _logdir.parse_bool


class StreamConfig:
    """The options of one stream, validated on the driver."""

    def __init__(self, options):
        from kafkarec.log import selection, storage
        o = {str(k).lower(): v for k, v in dict(options).items()}
        if "readcommitted" in o and _bool(o, "readcommitted", False):
            raise ValueError("kafkarec stream: readCommitted is for batch reads "
                             "(spark.read.format('kafkarec')); a stream delivers every data record")
        unknown = sorted(k for k in o if k not in STREAM_OPTIONS and k != "readcommitted"
                         and not storage.storage_options({k: "x"}) and not k.startswith("spark."))
        if unknown:
            raise ValueError(f"kafkarec stream: unknown option(s) {unknown}; known: "
                             f"{sorted(STREAM_OPTIONS)} and the storage options of "
                             f"kafkarec.log.storage (endpoint, region, accessKey, ...)")
        self.paths = _logdir.split_paths(o)
        if len(self.paths) != 1:
            raise ValueError("kafkarec stream: give exactly one path (a log directory or its URI)")
        self.path = self.paths[0]
        self.storage_options = storage.storage_options(o)
        sel_opts = {k: v for k, v in o.items() if k in selection.SELECTION_OPTIONS}
        sel_opts.setdefault("startingoffsets", "latest")
        self.selection = selection.parse_selection(sel_opts, streaming=True)
        mopt = o.get("maxoffsetspertrigger")
        self.max_offsets = int(mopt) if mopt not in (None, "") else None
        if self.max_offsets is not None and self.max_offsets <= 0:
            raise ValueError("option maxOffsetsPerTrigger must be positive")
        self.fail_on_data_loss = _bool(o, "failondataloss", True)
        # The data source's schema has PERMISSIVE's error column; a stream fills it with nulls
        # (a batch that cannot be read fails the query, as the Kafka source's would).
        self.corrupt_column = o.get("columnnameofcorruptrecord") or _schema.DEFAULT_CORRUPT_COLUMN
        self.include_control = _bool(o, "includecontrol", False)
        self.batch_columns = _bool(o, "batchcolumns", False)
        self.read = ReadSettings(o)
        self.max_rows = int(o.get("maxrecordsperbatch") or 10000)

    def schema(self):
        return _schema.kafka_schema(batch_columns=self.batch_columns)


def _to_json(offsets: Dict[Tuple[str, int], int]) -> dict:
    out: Dict[str, Dict[str, int]] = {}
    for (t, p), o in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(o)
    return out


def _from_json(d) -> Dict[Tuple[str, int], int]:
    if isinstance(d, str):
        d = json.loads(d)
    return {(t, int(p)): int(o) for t, ps in (d or {}).items() for p, o in ps.items()}


class KafkaRecStreamPartition(InputPartition):
    """One task: the segment ranges of one topic-partition for one micro-batch."""

    def __init__(self, storage, ranges: tuple):
        super().__init__(None)
        self.storage = storage
        self.ranges = ranges


class KafkaRecStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, config: StreamConfig, schema, expected: Optional[str] = None):
        self.config = config
        self.schema = schema
        self.expected = expected
        self._target_cap: Optional[Dict] = None
        self._storage = None
        self._root = None

    # -- the log, as it is now ------------------------------------------------------
    def _layout(self):
        ensure(self.expected)
        from kafkarec.log import layout, storage
        if self._storage is None:
            self._storage, self._root = storage.resolve(self.config.path, self.config.storage_options)
        return layout.scan(self._storage, self._root)

    def _partitions(self):
        from kafkarec.log import selection
        lay = self._layout()
        parts = {p.key: p for p in lay.partitions if p.topic is not None
                 and self.config.selection.wants_topic(p.topic) and p.segments}
        return parts, selection.Resolver(lay.storage)

    def _log_ends(self):
        parts, resolver = self._partitions()
        return {k: resolver.log_end(p) for k, p in parts.items()}, parts, resolver

    # -- offsets --------------------------------------------------------------------
    def initialOffset(self) -> dict:
        from kafkarec.log import selection
        parts, resolver = self._partitions()
        sel = self.config.selection
        out = {}
        for key, part in parts.items():
            start, _ = selection._spec_offset(sel.start, part, resolver, starting=True,
                                              strategy=sel.no_match_strategy)
            out[key] = resolver.log_start(part) if start is None else start
        return _to_json(out)

    def latestOffset(self, start=None, limit=None) -> dict:
        ends, parts, resolver = self._log_ends()
        if self._target_cap is not None:
            ends = {k: min(v, self._target_cap.get(k, v)) for k, v in ends.items()
                    if k in self._target_cap}
        if start is None:
            return _to_json(ends)
        begin = _from_json(start)
        for key, b in begin.items():
            if key not in ends:
                self._data_loss(f"topic-partition {key[0]}-{key[1]} is gone (offsets from {b} on "
                                f"were not read)")
            elif ends[key] < b:
                self._data_loss(f"{key[0]}-{key[1]}: the log ends at offset {ends[key]}, before "
                                f"offset {b} already read (truncated or re-created)")
        # New partitions start at their earliest offset.
        begin_all = {k: begin.get(k, resolver.log_start(parts[k])) for k in ends}
        max_rows = None
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif limit is None and self.config.max_offsets is not None:
            max_rows = self.config.max_offsets
        if max_rows is not None:
            ends = _rate_limit(begin_all, ends, max_rows)
        return _to_json(ends)

    def getDefaultReadLimit(self):
        if self.config.max_offsets is not None and ReadMaxRows is not None:
            return ReadMaxRows(self.config.max_offsets)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        ends, _, _ = self._log_ends()
        self._target_cap = ends

    def _data_loss(self, message: str) -> None:
        if self.config.fail_on_data_loss:
            raise DataLossError(
                f"kafkarec stream: {message}. Some data may have been lost because it is not "
                f"in the log any more (retention, compaction of whole segments, deleted topics). "
                f"Set option failOnDataLoss=false to go on from what is there.")
        log.warning("kafkarec stream: %s; going on (failOnDataLoss=false)", message)

    # -- planning and reading ---------------------------------------------------------
    def partitions(self, start: dict, end: dict):
        from kafkarec.log import selection
        begin, stop = _from_json(start), _from_json(end)
        parts, resolver = self._partitions()
        out = []
        for key, e in sorted(stop.items()):
            part = parts.get(key)
            if part is None:
                self._data_loss(f"topic-partition {key[0]}-{key[1]} is gone")
                continue
            log_start = resolver.log_start(part)
            s = begin.get(key, log_start)
            if s > e:
                s = log_start                 # reset partition (failOnDataLoss=false)
            if s < log_start:
                self._data_loss(f"{key[0]}-{key[1]}: offsets {s} to {log_start - 1} are not in "
                                f"the log any more")
                s = log_start
            if s >= e:
                continue
            ranges = selection.plan_partition(part, s, e, resolver)
            if ranges:
                out.append(KafkaRecStreamPartition(self._storage, tuple(ranges)))
        return out

    def read(self, partition):
        kafkarec = ensure(self.expected)
        from kafkarec.log import selection
        cfg = self.config
        target = _schema.arrow_schema_for(self.schema)
        kw = dict(include_control=cfg.include_control, batch_columns=cfg.batch_columns,
                  max_rows=cfg.max_rows)
        for sr in partition.ranges:
            try:
                for rb in selection.read_arrow(partition.storage, sr, cfg.read.options(kafkarec), **kw):
                    # A stream has no error column: a timestamp outside Spark's
                    # range is null, with Kafka's milliseconds in timestampMs.
                    yield _schema.conform(rb, target, corrupt=cfg.corrupt_column, mode="PERMISSIVE",
                                          where=partition.storage.uri(sr.segment.path))
            except FileNotFoundError as exc:
                if cfg.fail_on_data_loss:
                    raise DataLossError(f"kafkarec stream: {sr.segment.path} was deleted before "
                                        f"it was read ({exc}); set failOnDataLoss=false to skip "
                                        f"it") from None
                log.warning("kafkarec stream: %s deleted before it was read; skipped", sr.segment.path)

    def commit(self, end: dict) -> None:
        pass


def _rate_limit(begin: Dict, end: Dict, limit: int) -> Dict:
    """The Kafka source's maxOffsetsPerTrigger: ``limit`` offsets shared by lag."""
    lags = {k: max(0, end[k] - begin.get(k, end[k])) for k in end}
    total = sum(lags.values())
    if total <= limit:
        return dict(end)
    out = {}
    for k, e in end.items():
        b = begin.get(k, e)
        share = limit * lags[k] / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[k] = min(e, b + step)
    return out


def stream_reader(options, schema, expected: Optional[str] = None) -> KafkaRecStreamReader:
    """What ``DataSource.streamReader(schema)`` of the kafkarec source returns."""
    return KafkaRecStreamReader(StreamConfig(options), schema, expected)
