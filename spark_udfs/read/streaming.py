"""``spark.readStream.format("kafkarec").load(path)``: a log directory that keeps growing,
read as a stream (PySpark's Python streaming data source, ``DataSourceStreamReader``).

Offsets are per topic-partition, as JSON like Spark's Kafka source:
``{"orders":{"0":1234,"1":998}}`` - for each partition the next offset to read.
Each micro-batch reads what was appended since the last one: new batches in the
active segment, new segments, new partitions (read from their earliest offset,
as the Kafka source does).  A partition's earliest offset is its log start offset
(:meth:`kafkarec.log.selection.Resolver.log_start`: ``log-start-offset-checkpoint``, moved by
``deleteRecords``); offsets still to read that fall below it are lost data
(``failOnDataLoss``), as for the Kafka source.  Option ``includeDeletedRecords=true`` starts
at each partition's first segment instead (records below the log start too).  Only whole batches count: a batch still being
written when a micro-batch is planned waits for the next trigger.  The path may
be any URI :mod:`kafkarec.log.storage` understands (``s3://`` ...), local and
tiered copies of the same range are read once (:mod:`kafkarec.log.layout`).

Options (case-insensitive): the Kafka source's, with its names and meanings
(``docs/spark-options.md``, :mod:`spark_udfs.read.options`): ``subscribe`` /
``subscribePattern`` / ``assign`` (aliases ``topics`` / ``topicPattern``),
``startingOffsets`` (default ``latest``), ``startingTimestamp``,
``startingOffsetsByTimestamp``, ``startingOffsetsByTimestampStrategy``,
``maxOffsetsPerTrigger`` (shared among partitions by lag), ``minOffsetsPerTrigger`` and
``maxTriggerDelay``, ``failOnDataLoss`` (default true: fail when offsets still to read are
gone - segments deleted by retention, a partition deleted or truncated; false: log it and go
on from what is there), ``includeHeaders``, ``kafka.isolation.level`` (alias
``readCommitted``), ``minPartitions`` (as the Kafka source: with more than the micro-batch's
topic-partitions, large offset ranges are cut into several tasks); plus ``includeControl``,
``batchColumns``, ``verifyCrc``, ``strict``, ``maxRecordsPerBatch``, ``maxDecompressedBytes``
as the batch data source, ``badRecordsPath`` (a batch that cannot be decoded is copied there byte
for byte and left out, and the stream goes on; without it such a batch fails the query), and the
storage options of :func:`kafkarec.log.storage.storage_options`.

read_committed: each micro-batch ends at the partition's last stable offset and leaves out
the batches of aborted transactions, both rebuilt from the log when the micro-batch is
planned (:meth:`kafkarec.scan.PartitionWalk.committed_view`, the batch read's rule).  Markers
never change once written, so a planned micro-batch re-reads identically after a restart and no
state beyond the offsets is kept; a transaction that commits later is read once its marker is there.

A query with a checkpoint restarts from the checkpointed offsets and re-reads a
planned micro-batch identically, so with an idempotent sink (the file sink)
every record is delivered exactly once.

Progress: :meth:`KafkaRecStreamReader.reportLatestOffset` gives each micro-batch's
``latestOffset`` (the log's end per partition); :func:`spark_udfs.offsets_behind_latest`
derives the Kafka source's ``min/max/avgOffsetsBehindLatest`` from a progress.

Wiring: the batch source's ``DataSource.streamReader(schema)`` returns
:func:`stream_reader` ``(self.spec, schema, self.expected_fingerprint)``.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
from typing import Dict, Optional, Tuple

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from kafkarec.errors import UsageError
from spark_udfs.read import planning as _planning, schema as _schema
from spark_udfs.ship.runtime import ensure
from spark_udfs.read.spec import ReadSpec

try:   # Spark >= 4.2: read limits and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows,
                                                  SupportsTriggerAvailableNow)
except ImportError:   # pragma: no cover - older PySpark
    ReadAllAvailable = ReadMaxRows = None

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass

__all__ = ["stream_reader", "KafkaRecStreamReader", "DataLossError"]

log = logging.getLogger("spark_udfs")


#: what a FAILFAST error adds (offsets that go back: the core's decode errors are raised as they are)
_FAILS = "(kafkarec stream: option badRecordsPath keeps such a batch and goes on)"


class DataLossError(RuntimeError):
    """Offsets a stream still had to read are gone (with failOnDataLoss=true)."""


def _to_json(offsets: Dict[Tuple[str, int], int]) -> dict:
    out: Dict[str, Dict[str, int]] = {}
    for (t, p), o in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(o)
    return out


def _from_json(d) -> Dict[Tuple[str, int], int]:
    """A stream offset as Spark gives it back (the JSON :func:`_to_json` made, or its dict), read
    by the rule of the offsets options."""
    from kafkarec.log import selection
    text = d if isinstance(d, str) else json.dumps(d or {})
    return {(t, p): o for t, ps in selection.json_offsets(text, "the stream's offset").items()
            for p, o in ps.items()}


class KafkaRecStreamPartition(InputPartition):
    """One task: one offset range of one topic-partition for one micro-batch (with
    minPartitions, a part of its offsets), as the reader's pieces of work
    (:class:`kafkarec.scan.ScanPiece` s: their segment ranges and, with read_committed, the
    byte spans left out) and the :class:`kafkarec.scan.ScanConfig` that planned them."""

    def __init__(self, config, ranges: tuple):
        super().__init__(None)
        self.config = config
        self.ranges = ranges


class KafkaRecStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream of ``spec`` (``for_stream`` made: the stream's rules checked, its selection
    parsed): its offsets planned here, each micro-batch's offset ranges read by kafkarec's one
    reader (:class:`kafkarec.scan.LogScan`, :attr:`kafkarec.scan.ScanConfig.offset_ranges`).
    ``minPartitions``: as the Kafka source, large offset ranges cut into more tasks
    (planning.split_offset_ranges); the error column is the data source's, which a stream
    fills with nulls (a batch that cannot be read fails the query, as the Kafka source's would,
    or with badRecordsPath is kept there and left out)."""

    def __init__(self, spec: ReadSpec, schema, expected: Optional[str] = None):
        if len(spec.config.paths) != 1:
            raise UsageError("kafkarec stream: give exactly one path (a log directory or its URI)")
        self.spec = spec
        self.path = spec.config.paths[0]
        self.selection = spec.parsed_selection      # kafkarec.log.selection.Selection
        # the core's errors raised as they are, or (badRecordsPath) kept there and left out
        self.config = dataclasses.replace(spec.config, core_errors=True,
                                          mode="DROPMALFORMED" if spec.config.bad_records_path else "FAILFAST")
        self.schema = schema
        self.expected = expected
        self._target_cap: Optional[Dict] = None
        self._storage = None            # the storage of the last listing
        self._committed: Dict = {}      # partition key -> (segments seen, kafkarec.scan.LogFacts)
        self._last_trigger_ms = 0.0     # minOffsetsPerTrigger / maxTriggerDelay, as Kafka's
        self._reported: Optional[Dict] = None   # the log end latestOffset saw (progress)
        self._listed = None             # the listing latestOffset found the ends in, for planning them

    # -- the log, as it is now ------------------------------------------------------
    def _partitions(self):
        """The partitions the stream reads and a resolver of their storage, from the log as it is
        now: listed once a call, as a read of the config lists it (:func:`kafkarec.scan.listings`)."""
        ensure(self.expected)
        from kafkarec.scan import listings
        listed = next(listings(self.config))
        self._storage = listed.layout.storage
        self._listed = listed
        return self._parts_of(listed), listed.resolver

    def _parts_of(self, listed) -> dict:
        return {p.key: p for p in listed.layout.partitions if p.topic is not None
                and self.selection.wants_partition(p.topic, p.partition) and p.segments}

    def _log_start(self, part, resolver) -> int:
        return resolver.log_start(part, include_deleted_records=self.selection.include_deleted_records)

    def _view(self, part):
        """read_committed: the partition's :meth:`kafkarec.scan.PartitionWalk.committed_view`
        (its left-out spans and stable end), walked in this trigger's listing (whose plan of the
        ranges then reads the spans off the same walk), and walked again only when a segment was
        added, removed or grew since the last micro-batch: otherwise the last walk's facts are
        given to this listing (:meth:`kafkarec.scan.PartitionWalk.remember`)."""
        seen = tuple((s.path, s.size) for s in part.segments)
        walk = self._listed.walks({part.key})[part.key]
        cached = self._committed.get(part.key)
        if cached is not None and cached[0] == seen:
            walk.remember(cached[1])
        else:
            self._committed[part.key] = (seen, walk.facts())
        return walk.committed_view()

    def _log_ends(self):
        parts, resolver = self._partitions()
        ends = {}
        for k, p in parts.items():
            # read_committed: the partition's one walk first, its segments' last offsets the log end
            view = self._view(p) if self.config.read_committed else None
            end = resolver.log_end(p)
            if view is not None:
                stable = view.stable_end
                if stable is not None:
                    # nothing at or past the LSO yet; a later micro-batch reads it once decided
                    end = max(self._log_start(p, resolver), min(end, stable))
            ends[k] = end
        return ends, parts, resolver

    # -- offsets --------------------------------------------------------------------
    def initialOffset(self) -> dict:
        from kafkarec.log import selection
        parts, resolver = self._partitions()
        sel = self.selection
        out = {}
        for key, part in parts.items():
            log_start = self._log_start(part, resolver)
            # not raised to the log start: offsets asked for below it are lost data (partitions)
            start, _ = selection.spec_offset(sel.start, part, resolver, starting=True,
                                              strategy=sel.no_match_strategy, log_start=log_start)
            out[key] = log_start if start is None else start
        return _to_json(out)

    def latestOffset(self, start=None, limit=None) -> dict:
        ends, parts, resolver = self._log_ends()
        self._reported = dict(ends)      # for reportLatestOffset: the log's end, uncapped
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
        begin_all = {k: begin.get(k, self._log_start(parts[k], resolver)) for k in ends}
        max_rows = None
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif limit is None and self.spec.limits.max_offsets is not None:
            max_rows = self.spec.limits.max_offsets
        if max_rows is not None:
            ends = _rate_limit(begin_all, ends, max_rows)
        if (self.spec.limits.min_offsets is not None and self._target_cap is None
                and self._delay_batch(begin_all, ends)):
            return _to_json({k: begin_all[k] for k in ends})
        return _to_json(ends)

    def _delay_batch(self, begin: Dict, end: Dict) -> bool:
        """The Kafka source's minOffsetsPerTrigger: wait while fewer new offsets than that are
        there, unless maxTriggerDelay passed since the last micro-batch."""
        import time
        now = time.time() * 1000
        if now - self._last_trigger_ms >= self.spec.limits.max_trigger_delay_ms:
            self._last_trigger_ms = now
            return False
        if sum(max(0, e - begin.get(k, e)) for k, e in end.items()) < self.spec.limits.min_offsets:
            return True
        self._last_trigger_ms = now
        return False

    def reportLatestOffset(self) -> Optional[dict]:
        """The log's end per partition (with read_committed its last stable offset), found
        when the micro-batch was planned and whatever the read limits cut off: what the
        query's progress shows as ``sources[].latestOffset``, as the Kafka source's does.
        :func:`spark_udfs.offsets_behind_latest` turns it into the Kafka source's lag figures."""
        ends = self._reported
        if ends is None:
            ends, _, _ = self._log_ends()
        return _to_json(ends)

    def getDefaultReadLimit(self):
        if self.spec.limits.max_offsets is not None and ReadMaxRows is not None:
            return ReadMaxRows(self.spec.limits.max_offsets)
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
        from kafkarec.scan import LogScan
        begin, stop = _from_json(start), _from_json(end)
        # one listing a trigger: the ranges are planned over the listing latestOffset found their
        # ends in (it holds every segment up to them); a plan with no latestOffset before it in
        # this process (a restarted query's first batch) lists the log once itself
        listed = self._listed
        self._listed = None
        if listed is None:
            parts, resolver = self._partitions()
            listed, self._listed = self._listed, None
        else:
            parts = self._parts_of(listed)
            resolver = listed.resolver
            self._storage = listed.layout.storage
        wanted = []
        for key, e in sorted(stop.items()):
            part = parts.get(key)
            if part is None:
                self._data_loss(f"topic-partition {key[0]}-{key[1]} is gone")
                continue
            log_start = self._log_start(part, resolver)
            s = begin.get(key, log_start)
            if s > e:
                s = log_start                 # reset partition (failOnDataLoss=false)
            if s < log_start:
                self._data_loss(f"{key[0]}-{key[1]}: offsets {s} to {log_start - 1} are not in "
                                f"the log any more")
                s = log_start
            wanted.append((key, s, e))
        # one task per topic-partition, or (minPartitions) the Kafka source's cut of large ranges
        cut = list(_planning.split_offset_ranges(wanted, self.spec.limits.min_partitions))
        if not cut:
            return []
        # the reader plans the offset ranges (read_committed: the aborted spans, judged over
        # each partition's whole log, as the batch read judges them)
        config = dataclasses.replace(self.config, offset_ranges=tuple((k[0], k[1], s, e) for k, s, e in cut))
        by_range: Dict[int, list] = {}
        for piece in LogScan(config).pieces(listed=[listed]):
            by_range.setdefault(piece.share, []).append(piece)
        return [KafkaRecStreamPartition(config, tuple(by_range[i])) for i in sorted(by_range)]

    def read(self, partition):
        ensure(self.expected)
        from kafkarec.scan import LogScan
        from kafkarec.scan.decode import Errors
        cdc = self.spec.cdc
        target = _schema.arrow_schema_for(self.schema)
        scan = LogScan(partition.config)
        for piece in partition.ranges:
            sr = piece.range
            where = piece.where
            try:
                # one piece at a time: a segment deleted before it is read is that piece's loss
                for _, rb in scan.read_items([piece], hint=_FAILS):
                    if isinstance(rb, Errors):
                        for e in rb.errors:
                            log.warning("kafkarec stream: kept in badRecordsPath and left out: %s", e["message"])
                        continue
                    if rb.num_rows and cdc is not None:
                        from kafkarec.cdc import changes
                        rb = changes(rb)
                    if rb.num_rows:
                        # A stream has no error column: a timestamp outside Spark's
                        # range is null, with Kafka's milliseconds in timestampMs.
                        yield _schema.conform(rb, target, corrupt=self.config.corrupt_column,
                                              mode="PERMISSIVE", where=where)
            except FileNotFoundError as exc:
                if self.config.fail_on_data_loss:
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


def stream_reader(spec: ReadSpec, schema, expected: Optional[str] = None) -> KafkaRecStreamReader:
    """What ``DataSource.streamReader(schema)`` of the kafkarec source returns."""
    return KafkaRecStreamReader(spec.for_stream(), schema, expected)
