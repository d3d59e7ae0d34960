"""Backfill a topic's history into the lakehouse table a live writer continues.

The rows of [start, H) per partition (:mod:`kafkarec.lakehouse.handoff`) are exactly the committed
data records a ``read_committed`` consumer is given (no control records, no aborted transaction),
read through the one reader (:class:`kafkarec.scan.LogScan` with ``read_committed`` and each
partition's [start, H) as its offset ranges), laid out as
the live writer lays them out (:func:`kafkarec.lakehouse.layouts.to_layout`), one Arrow batch at a
time.

Writes, each in ONE table commit (all partitions or none):

* Iceberg (pyiceberg, any catalog): the table is created with the layout's schema and spec when
  absent; the commit's snapshot summary records, per partition, the range written under
  ``kafkarec.backfill.<topic>.<partition>`` = ``"<start>-<end>"`` (never the sink's
  ``kafka.connect.*`` keys: those are the sink's own control-topic offsets).
* Delta (delta-rs): the data and one ``txn`` action per partition, ``appId =
  "<app_id>-<partition>"``, ``version`` = H - 1 (kafka-delta-ingest's rule: the last offset
  written, inclusive; it resumes at version + 1).

Re-running is safe at any point: a crash before the commit leaves the table as it was (the data
files written are not part of any snapshot or version), except that a new Iceberg table is created
before the commit and stays, empty (a re-run fills it); after it, a re-run finds its own record of
the ranges (Iceberg: the summary keys in the table's history; Delta: the txn versions) and writes
nothing for those partitions, saying so.  A different range over one already recorded (or a txn
version below H - 1: the live writer owns offsets the backfill would write again) is refused with
:class:`kafkarec.errors.BackfillError`.

Fill-below (``fill_below=True``, for a table a live writer already owns): each partition's
smallest offset in the table is its end; [start, that offset) is appended with the table's own
schema and spec.  A partition the table has no row of is reported, not guessed.
"""
from __future__ import annotations

import itertools
import logging
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

from kafkarec._extras import require
from kafkarec.errors import BackfillError, UsageError
from kafkarec.lakehouse import tables
from kafkarec.lakehouse.handoff import HandOff, HandOffPlan, PartitionHandOff, plan_hand_off
from kafkarec.lakehouse.layouts import Layout, layout as layout_of, to_layout
from kafkarec.lakehouse.tables import DeltaTarget, IcebergTarget, Target

__all__ = ["backfill", "backfill_batches", "PartitionSummary", "SUMMARY_PREFIX", "summary_key",
           "delta_app_id", "iceberg_ranges_to_write", "iceberg_summary_properties"]

log = logging.getLogger("kafkarec")

SUMMARY_PREFIX = "kafkarec.backfill."
#: rows per data file: a file is written as soon as this many rows are read (bounded memory)
FILE_ROWS = 1 << 20


class PartitionSummary(NamedTuple):
    """What a backfill did for one partition: [``start``, ``end``) (``end`` = H), ``rows``
    written, and ``status``: ``"written"``, ``"already written"`` (a re-run: the table records
    this range), ``"empty"`` (no committed record in the range, nothing committed) or
    ``"no rows in table"`` (fill-below: nothing to end at)."""
    topic: str
    partition: int
    start: int
    end: int
    rows: int
    status: str


def summary_key(topic: str, partition: int) -> str:
    return f"{SUMMARY_PREFIX}{topic}.{partition}"


def delta_app_id(app_id: str, partition: int) -> str:
    """kafka-delta-ingest's txn app id for a partition (``delta_helpers.rs``
    txn_app_id_for_partition: ``"<app_id>-<partition>"``)."""
    return f"{app_id}-{partition}"


# --- rows ---------------------------------------------------------------------------------------

def _typed_rows(typed: Optional[Dict[str, Any]], topic: str, partition: Optional[int] = None):
    """The backfill's typed values (:class:`kafkarec.scan.typed.TypedRows`, mode FAILFAST),
    or None: ``typed`` is :func:`kafkarec.registry.typed.decode_table`'s keywords; a value that
    does not decode stops the write, as the live writer would not write it either."""
    if not typed:
        return None
    from kafkarec.scan import TypedSettings
    from kafkarec.scan.typed import TypedRows
    kw = dict(typed)
    if kw.pop("key", False):
        raise UsageError("typed keys: the live writers keep a key's bytes (Redpanda, AutoMQ) or no key")
    kw.pop("value", None)
    settings = TypedSettings(value_format=kw.pop("value_format", "registry"), registry=kw.pop("registry", None),
                             options=kw)

    def refuse(_topic, _partition, offset, reason):
        return BackfillError(f"{topic}-{partition}", f"the value at offset {offset} does not decode "
                             f"({reason}); the live writer would not write it either")
    return TypedRows(settings, [topic], mode="FAILFAST", refuse=refuse)


def _read(log_uri: str, plan: HandOffPlan, storage_options, tiered_storage):
    """``(partition, its pieces)`` of the plan's ranges through the one reader
    (:class:`kafkarec.scan.LogScan`, read_committed judged over each partition's whole log; a
    record the backfill cannot read is a gap it will not leave: the write stops, naming its
    file)."""
    from kafkarec.scan import LogScan, ScanConfig
    # threads=1: decoded in the consumer's thread, as the table writer takes the rows (the writer,
    # not the decoding, paces this read)
    config = ScanConfig((log_uri,), offset_ranges=tuple((p.part.topic, p.part.partition, p.start, p.end)
                                                       for p in plan.partitions),
                        read_committed=True, storage_options=storage_options, tiered_storage=tiered_storage,
                        core_errors=True, threads=1)
    scan = LogScan(config)
    pieces: Dict[int, list] = {}
    # over the hand-off's own listing: its partitions' verdicts judged there already
    for piece in scan.pieces(listed=None if plan.listing is None else [plan.listing]):
        pieces.setdefault(piece.share, []).append(piece)
    return scan, [(part, pieces.get(i, [])) for i, part in enumerate(plan.partitions)]


def _partition_batches(scan, pieces, lay: Layout, typed) -> Iterator[Any]:
    pa = require("pyarrow")
    from kafkarec.scan.decode import Errors
    import kafkarec
    value_type = None if typed is None else typed.value_type(kafkarec.arrow_schema())
    for _, rb in scan.read_items(pieces):
        if isinstance(rb, Errors):      # FAILFAST raises before; a gap is never left quietly
            raise BackfillError(f"{rb.topic}-{rb.partition}", rb.errors[0]["message"])
        if typed is not None:
            rb = typed.decode(pa.Table.from_batches([rb]))
        out = to_layout(rb, lay, value_type=value_type)
        if out.num_rows:
            yield out


def backfill_batches(log_uri: str, layout: Union[str, Layout], *, topics=None, end_offsets=None,
                     end_time=None, points: Optional[Dict[Tuple[str, int], HandOff]] = None,
                     storage_options=None, tiered_storage: Optional[str] = None,
                     typed: Optional[Dict[str, Any]] = None, bootstrap: Optional[str] = None) -> Iterator[Any]:
    """The backfill's rows in ``layout``, one Arrow RecordBatch at a time: every partition's
    committed data records of [start, H), in partition and offset order.  ``points`` (as
    :func:`kafkarec.lakehouse.hand_off_points` returns them) fixes each partition's range;
    ``typed``: keywords of :func:`kafkarec.registry.typed.decode_table` (``registry``,
    ``value_format``, ``value_reader_schema``...) to type the values; ``bootstrap``: the running
    broker to ask for each partition's log start and last stable offset (:func:`hand_off_points`)."""
    lay = layout_of(layout)
    plan = _plan(log_uri, topics, end_offsets, end_time, points, storage_options, tiered_storage, bootstrap)
    scan, parts = _read(log_uri, plan, storage_options, tiered_storage)
    for part, pieces in parts:
        yield from _partition_batches(scan, pieces, lay, _typed_rows(typed, part.part.topic, part.part.partition))


def _plan(log_uri, topics, end_offsets, end_time, points, storage_options, tiered_storage,
          bootstrap=None) -> HandOffPlan:
    if points is not None:
        if end_offsets is not None or end_time is not None:
            raise UsageError("give points, or end_offsets/end_time, not both")
        topics = topics if topics is not None else sorted({t for t, _ in points})
    plan = plan_hand_off(log_uri, topics=topics, end_offsets=end_offsets, end_time=end_time,
                         storage_options=storage_options, tiered_storage=tiered_storage, bootstrap=bootstrap)
    if points is None:
        return plan
    parts = []
    for p in plan.partitions:
        given = points.get(p.key)
        if given is not None:
            parts.append(p._replace(start=max(p.start, int(given.start)), end=int(given.end)))
    return HandOffPlan(plan.storage, parts, plan.listing)


# --- writing ------------------------------------------------------------------------------------

def _value_type(typed: Optional[Dict[str, Any]], topic: str):
    import kafkarec
    rows = _typed_rows(typed, topic)
    return None if rows is None else rows.value_type(kafkarec.arrow_schema())


def backfill(log_uri: str, target: Target, *, layout: Union[str, Layout],
             points: Optional[Dict[Tuple[str, int], HandOff]] = None, fill_below: bool = False,
             app_id: Optional[str] = None, topics=None, end_offsets=None, end_time=None,
             storage_options=None, tiered_storage: Optional[str] = None,
             typed: Optional[Dict[str, Any]] = None,
             bootstrap: Optional[str] = None) -> Dict[Tuple[str, int], PartitionSummary]:
    """Write the history of the log under ``log_uri`` into ``target`` (a
    :class:`~kafkarec.lakehouse.tables.DeltaTarget` or
    :class:`~kafkarec.lakehouse.tables.IcebergTarget`) in ``layout``, in one commit;
    ``{(topic, partition): PartitionSummary}``.

    The range per partition is [start, H) (:func:`kafkarec.lakehouse.hand_off_points`, or
    ``points``), or with ``fill_below`` [start, the table's smallest offset).  ``app_id``: the
    kafka-delta-ingest app id whose txn actions the Delta commit carries (required for Delta).
    ``storage_options``: the log's (a Delta target has its own).  ``bootstrap``: the running broker
    (``host:port``) whose log directory this is: each partition's log start and last stable offset
    are asked of it too (:func:`kafkarec.lakehouse.hand_off_points`), as the log directory's
    checkpoint lags it."""
    lay = layout_of(layout)
    if isinstance(target, DeltaTarget):
        if not app_id and not fill_below:
            raise UsageError("a Delta backfill needs app_id: the kafka-delta-ingest app id whose txn "
                             "actions say where the live writer resumes")
    elif not isinstance(target, IcebergTarget):
        raise UsageError(f"a target is a DeltaTarget or an IcebergTarget, not {type(target).__name__}")
    plan = _plan(log_uri, topics, end_offsets, end_time, points, storage_options, tiered_storage, bootstrap)
    summary: Dict[Tuple[str, int], PartitionSummary] = {}
    if fill_below:
        plan = _fill_below_plan(plan, target, lay, summary)
    if fill_below:
        # ends at the table's first rows: a re-run finds nothing below them (its own check); the txn
        # actions stay the live writer's (a lower version would send kafka-delta-ingest back)
        todo = [p for p in plan.partitions if p.end > p.start]
        app_id = None
    elif isinstance(target, DeltaTarget):
        todo = _delta_todo(target, plan, app_id, summary)
    else:
        todo = _iceberg_todo(target, plan, summary)
    for p in plan.partitions:
        if p.key not in summary and p not in todo:
            summary[p.key] = PartitionSummary(p.part.topic, p.part.partition, p.start, p.end, 0, "empty")
    rows = _write(target, lay, todo, app_id, typed,
                  lambda todo: _read(log_uri, plan._replace(partitions=todo), storage_options, tiered_storage))
    for part in todo:
        n = rows.get(part.key, 0)
        # a Delta backfill commits its txn actions even for a partition without rows
        wrote = n > 0 or (isinstance(target, DeltaTarget) and app_id is not None and not fill_below)
        summary[part.key] = PartitionSummary(part.part.topic, part.part.partition, part.start, part.end, n,
                                             "written" if wrote else "empty")
    return dict(sorted(summary.items()))


def _fill_below_plan(plan: HandOffPlan, target: Target, lay: Layout, summary) -> HandOffPlan:
    topics = sorted({p.part.topic for p in plan.partitions})
    if lay.topic is None and len(topics) != 1:
        raise UsageError(f"layout {lay.name} keeps one topic per table: fill below for one topic "
                         f"(topics={topics})")
    smallest = tables.smallest_offsets(target, lay, topic=topics[0] if lay.topic is None else None)
    if not smallest:
        raise BackfillError(tables.describe(target), "the table has no rows: nothing to fill below "
                                                     "(run a backfill to H instead)")
    parts = []
    for p in plan.partitions:
        first = smallest.get(p.key)
        if first is None:
            summary[p.key] = PartitionSummary(p.part.topic, p.part.partition, p.start, p.start, 0,
                                              "no rows in table")
            log.warning("kafkarec: %s has no row of %s-%d: nothing to fill below (reported, not guessed)",
                        tables.describe(target), p.part.topic, p.part.partition)
            continue
        # below the table's first row, and never past what is decided at the log's end (H)
        parts.append(p._replace(end=max(p.start, min(first, p.end))))
    return plan._replace(partitions=parts)


def _iceberg_todo(target: IcebergTarget, plan: HandOffPlan, summary) -> List[PartitionHandOff]:
    """The partitions to write: those whose range the table's history does not record."""
    table = tables.load_iceberg_table(target)
    todo, already = iceberg_ranges_to_write(tables.describe(target),
                                            tables.iceberg_summaries(table) if table is not None else [],
                                            plan.points())
    summary.update(already)
    return [p for p in plan.partitions if p.key in todo]


def iceberg_ranges_to_write(table: str, summaries: List[Dict[str, str]], points: Dict[Tuple[str, int], HandOff]):
    """The re-run rule of an Iceberg backfill, whoever writes it (this module, Spark:
    ``spark_udfs.backfill_iceberg``): of ``points``, ``(todo, already)`` - the points whose range the
    table's snapshot ``summaries`` do not record, and a :class:`PartitionSummary` ``"already
    written"`` for each one they record.  A different range overlapping a recorded one is refused."""
    recorded: Dict[str, List[Tuple[int, int]]] = {}
    for props in summaries:
        for k, v in props.items():
            if k.startswith(SUMMARY_PREFIX):
                a, _, b = v.partition("-")
                recorded.setdefault(k, []).append((int(a), int(b)))
    todo, already = {}, {}
    for (topic, partition), point in points.items():
        if point.end <= point.start:
            continue                  # nothing to write, nothing the sink needs recorded
        ranges = recorded.get(summary_key(topic, partition), [])
        if (point.start, point.end) in ranges:
            already[(topic, partition)] = PartitionSummary(topic, partition, point.start, point.end, 0,
                                                           "already written")
            continue
        for a, b in ranges:
            if a < point.end and point.start < b:
                raise BackfillError(table, f"a backfill of [{a}, {b}) is already in the table; [{point.start}, "
                                           f"{point.end}) overlaps it", topic=topic, partition=partition)
        todo[(topic, partition)] = point
    return todo, already


def iceberg_summary_properties(points: Dict[Tuple[str, int], HandOff]) -> Dict[str, str]:
    """The snapshot summary properties recording the ranges of ``points`` (one commit's)."""
    return {summary_key(topic, partition): f"{p.start}-{p.end}" for (topic, partition), p in points.items()}


def _delta_todo(target: DeltaTarget, plan: HandOffPlan, app_id: str, summary) -> List[PartitionHandOff]:
    """kafka-delta-ingest's rule: a txn version at or past H - 1 means the offsets below H are in
    the table (nothing to write); one below it means a writer owns offsets the backfill would
    write again (refused)."""
    table = tables.delta_table(target)
    if table is None:
        return list(plan.partitions)
    versions = tables.delta_txn_versions(table, [delta_app_id(app_id, p.part.partition) for p in plan.partitions])
    todo = []
    for p in plan.partitions:
        v = versions[delta_app_id(app_id, p.part.partition)]
        if v is None:
            todo.append(p)
        elif v >= p.end - 1:
            summary[p.key] = PartitionSummary(p.part.topic, p.part.partition, p.start, p.end, 0,
                                              "already written")
        else:
            raise BackfillError(target.path, f"txn {delta_app_id(app_id, p.part.partition)} is at version "
                                             f"{v}: offsets from {v + 1} are the live writer's, below "
                                             f"the hand-off point {p.end}", topic=p.part.topic,
                                partition=p.part.partition)
    return todo


class _Counter:
    def __init__(self, batches: Iterable[Any], key):
        self.batches, self.key, self.rows = batches, key, 0

    def __iter__(self):
        for rb in self.batches:
            self.rows += rb.num_rows
            yield rb


def _write(target: Target, lay: Layout, todo: List[PartitionHandOff], app_id, typed, read) -> Dict:
    pa = require("pyarrow")
    if not todo:
        return {}
    value_type = _value_type(typed, todo[0].part.topic)
    if isinstance(target, IcebergTarget):
        existing = tables.load_iceberg_table(target)
        table = existing if existing is not None else tables.create_iceberg_table(
            target, lay.schema(value_type), lay)
    else:
        existing = tables.delta_table(target)
    if existing is not None:
        # the table's own schema (fill-below, a table the live writer made): rows are cast to it
        schema = (existing.schema().as_arrow() if isinstance(target, IcebergTarget)
                  else pa.schema(existing.schema().to_arrow()))
    else:
        schema = lay.schema(value_type)
    counters = []

    def batches():
        scan, parts = read(todo)
        for part, pieces in parts:
            c = _Counter(_partition_batches(scan, pieces, lay,
                                            _typed_rows(typed, part.part.topic, part.part.partition)), part.key)
            counters.append(c)
            for rb in c:
                yield _cast(rb, schema)

    if isinstance(target, IcebergTarget):
        props = iceberg_summary_properties({p.key: HandOff(p.start, p.end) for p in todo})
        with table.transaction() as tx:
            for chunk in _chunks(batches(), schema):
                tx.append(chunk, snapshot_properties=props)
    else:
        deltalake = require("deltalake")
        txns = [deltalake.Transaction(app_id=delta_app_id(app_id, p.part.partition), version=p.end - 1)
                for p in todo] if app_id else []
        failure: list = []

        def reading():
            # delta-rs reads the stream through Arrow's C interface, which turns an exception into
            # its own text: the reader's error (a corrupt record, with its file) is raised as it was
            try:
                yield from batches()
            except Exception as exc:
                failure.append(exc)
                raise

        stream = reading()
        first = next(stream, None)
        if first is None and not txns:
            return {c.key: c.rows for c in counters}       # nothing to commit: no empty version
        reader = pa.RecordBatchReader.from_batches(schema, itertools.chain([first] if first else [], stream))
        try:
            deltalake.write_deltalake(target.path, reader, mode="append", storage_options=target.storage_options,
                                      commit_properties=deltalake.CommitProperties(app_transactions=txns))
        except Exception:
            if failure:
                raise failure[0] from None
            raise
    return {c.key: c.rows for c in counters}


def _cast(rb, schema):
    if rb.schema.equals(schema):
        return rb
    pa = require("pyarrow")
    return pa.Table.from_batches([rb]).select(schema.names).cast(schema).combine_chunks().to_batches()[0] \
        if rb.num_rows else pa.RecordBatch.from_pylist([], schema=schema)


def _chunks(batches: Iterable[Any], schema) -> Iterator[Any]:
    """Tables of about FILE_ROWS rows: one data file each, memory bounded by one."""
    pa = require("pyarrow")
    pending, n = [], 0
    for rb in batches:
        pending.append(rb)
        n += rb.num_rows
        if n >= FILE_ROWS:
            yield pa.Table.from_batches(pending, schema=schema)
            pending, n = [], 0
    if pending:
        yield pa.Table.from_batches(pending, schema=schema)
