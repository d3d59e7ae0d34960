"""Tables from logs: the state a keyed topic stands for (``view="latest"``).

For each topic-partition, one row per key whose last record is not a tombstone: that
record, as the log view gives it.  The rules are those of Kafka's log cleaner and of a
``read_committed`` Kafka Streams table:

* records count in offset order; a record with a null value (a tombstone) deletes its key;
* records with a null key never count (:attr:`LatestStats.null_keys` counts them);
* control records never count (the log view leaves them out);
* the isolation level applies as to every read: with ``read_committed`` aborted
  transactions never count and nothing from the last stable offset on does;
* the state is that after the records the read selects: an ending offset or timestamp cuts
  the log where Spark's Kafka source would stop, and the segments after the cut are not
  read.  (With ``read_committed`` whether a transaction before the cut committed is known
  from its marker, which may come after the cut: those segments' batch headers are read.)

Keys are compared as bytes, as Kafka's cleaner compares them (a typed key with two
encodings of one value is two keys to Kafka as well).

Memory is bounded, as in Kafka's cleaner: a fixed-size map from each key's 128-bit digest
to its last offset (:class:`kafkarec._core.KeyOffsetMap`, ``buffer_bytes``, 24 bytes a
key at most 90% full) is filled in a first pass over the partition and consulted in a
second, which emits the rows.  When the keys do not fit, they are split by their digest
into buckets, each bucket taking its own two passes: more reading, never more memory.
The same function serves Python (:func:`latest`), the command line (``kafkarec table``)
and Spark (``format("kafkarec").option("view", "latest")``), each through
:func:`topic_latest_batches`, which gives every partition of a topic the truncates of the
others (change data capture: a truncate event lands on one partition and applies to all).

    >>> import kafkarec.table
    >>> state = kafkarec.table.latest("/var/lib/kafka/data", topics=["profiles"])  # doctest: +SKIP
    >>> state.table.num_rows, state.stats.null_keys                                  # doctest: +SKIP
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from kafkarec._extras import require

__all__ = ["VIEWS", "DEFAULT_BUFFER_BYTES", "LatestStats", "LatestState", "latest_batches",
           "topic_latest_batches", "latest", "parse_view"]

VIEWS = ("log", "latest")

# Kafka's log.cleaner.dedupe.buffer.size default: about 5 million keys at 24 bytes a key.
DEFAULT_BUFFER_BYTES = 128 << 20


def parse_view(value: Optional[str]) -> str:
    """``"log"`` (the default: every record) or ``"latest"`` (the keyed state), any case."""
    from kafkarec._option_text import text_choice
    return text_choice("view", value, VIEWS, default="log")


class LatestStats:
    """What one keyed-state computation read: ``records`` (rows of the log view, once),
    ``null_keys`` (of those, records without a key: they never count), ``rows`` (rows of
    the state), ``buckets`` (key buckets, 1 when every key fit the map) and ``passes``
    (reads of the partitions, fills that overflowed included)."""

    __slots__ = ("records", "null_keys", "rows", "buckets", "passes")

    def __init__(self) -> None:
        self.records = self.null_keys = self.rows = 0
        self.buckets = self.passes = 0

    def add(self, other: "LatestStats") -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def __repr__(self) -> str:
        return "LatestStats(" + ", ".join(f"{n}={getattr(self, n)}" for n in self.__slots__) + ")"


def latest_batches(read: Callable[[], Iterable[Any]], *, buffer_bytes: int = DEFAULT_BUFFER_BYTES,
                   stats: Optional[LatestStats] = None, seed: Optional[int] = None,
                   cdc: Optional[str] = None, truncates: Sequence[Any] = ()) -> Iterator[Any]:
    """The rows of one partition's keyed state, as pyarrow RecordBatches of the log view's columns.

    ``read()`` starts a new read of the partition each time it is called: the log view's
    RecordBatches (columns ``key``, ``value``, ``offset`` at least; ``offset`` increasing), in
    offset order.  Anything else it yields (an error row, a report) is handed on as it is, from
    the first emitting pass only: nothing the read reports is lost or repeated.

    ``cdc="debezium"``: the values are Debezium change events (:mod:`kafkarec.cdc`); rows get
    the envelope's columns, a key whose last event is a delete is gone, and a truncate removes
    every key whose last event came before it.  A row whose value is no envelope stays, with
    its ``cdcError``.  ``cdc`` may be a :class:`kafkarec.cdc.Debezium` instead (typed values:
    the rows keep their bytes, for the typed layer to decode).  ``truncates``: the last
    :class:`kafkarec.cdc.Truncate` of each other partition of the topic (what
    :func:`topic_latest_batches` finds): keys whose last event came before one of them in the
    source's order are gone too.
    """
    from kafkarec._core import KeyOffsetMap, KEY_MAP_MAX_LEVEL
    rules = _debezium(cdc)
    own = LatestStats()
    truncated = [None]               # cdc: the partition's last truncate (every fill pass finds it)
    key_map = KeyOffsetMap(buffer_bytes, int.from_bytes(os.urandom(8), "little") if seed is None else seed)
    pending = [(0, 0)]               # (level, bucket): a bucket splits into two at the next level
    first = True
    while pending:
        level, bucket = pending.pop()
        key_map.start(level, bucket)
        own.passes += 1
        if not _fill(key_map, read(), truncated, rules):
            if level == KEY_MAP_MAX_LEVEL:
                raise MemoryError(f"the keys do not fit {buffer_bytes} bytes even split into "
                                  f"2^{level} buckets")
            pending += [(level + 1, bucket | (1 << level)), (level + 1, bucket)]
            continue
        own.passes += 1
        own.buckets += 1
        for item in read():
            if not _is_batch(item):
                if first:
                    yield item
                continue
            if first:
                own.records += item.num_rows
                own.null_keys += item.column("key").null_count
            rows = item.filter(key_map.latest(item.column("key"), item.column("value"),
                                              item.column("offset")))
            if rules is not None and rows.num_rows:
                rows = rules.table_rows(rows, truncated[0], truncates)
            if rows.num_rows:
                own.rows += rows.num_rows
                yield rows
        first = False
    if stats is not None:
        stats.add(own)


def topic_latest_batches(reads: Sequence[Callable[[], Iterable[Any]]], *,
                         buffer_bytes: int = DEFAULT_BUFFER_BYTES, stats: Optional[LatestStats] = None,
                         cdc: Any = None) -> Iterator[Tuple[int, Any]]:
    """``(i, item)``: the items of :func:`latest_batches` for each partition of one topic,
    ``reads[i]`` read after ``reads[i - 1]``.  With ``cdc`` and more than one partition, a
    first read of every partition finds its last truncate, which then applies to the others'
    keys (:meth:`kafkarec.cdc.Debezium.table_rows`); that read adds one pass a partition."""
    rules = _debezium(cdc)
    last = [None] * len(reads)
    if rules is not None and len(reads) > 1:
        for i, read in enumerate(reads):
            last[i] = _last_truncate(read(), rules)
            if stats is not None:
                stats.passes += 1
    for i, read in enumerate(reads):
        others = [t for j, t in enumerate(last) if j != i and t is not None]
        for item in latest_batches(read, buffer_bytes=buffer_bytes, stats=stats, cdc=rules, truncates=others):
            yield i, item


def _last_truncate(items: Iterable[Any], rules: Any):
    """The last truncate event of one read of a partition (error rows and reports pass by:
    the emitting pass hands them on)."""
    last = None
    for item in items:
        if _is_batch(item):
            last = rules.last_truncate(item) or last
    return last


def _is_batch(item) -> bool:
    return hasattr(item, "num_rows") and hasattr(item, "filter")


def _debezium(cdc: Any):
    """``None`` or the :class:`kafkarec.cdc.Debezium` rules ``cdc`` names."""
    if cdc is None:
        return None
    from kafkarec import cdc as _cdc
    if isinstance(cdc, _cdc.Debezium):
        return cdc
    _cdc.parse_cdc(cdc)
    return _cdc.Debezium()


def _fill(key_map, items: Iterable[Any], truncated: list, rules: Any = None) -> bool:
    """Pass 1: every batch's keys into the map (and, for change data capture, the last
    truncate into ``truncated[0]``); False when the keys did not fit."""
    truncated[0] = None
    for item in items:
        if not _is_batch(item):
            continue
        if rules is not None:
            truncated[0] = rules.last_truncate(item) or truncated[0]
        if not key_map.put(item.column("key"), item.column("offset")):
            close = getattr(items, "close", None)
            if close is not None:
                close()
            return False
    return True


class LatestState(NamedTuple):
    """:func:`latest`'s answer: ``table`` (pyarrow, the log view's columns, by topic,
    partition and offset) and ``stats`` (:class:`LatestStats`, all partitions)."""
    table: Any
    stats: LatestStats


def latest(source: str, *, topics: Optional[List[str]] = None, end_offset: Optional[int] = None,
           end_time: Optional[int] = None, read_committed: bool = False,
           buffer_bytes: int = DEFAULT_BUFFER_BYTES, storage_options: Optional[dict] = None,
           options: Any = None, batch_columns: bool = False, cdc: Optional[str] = None,
           selection: Any = None, decode: Optional[dict] = None,
           include_deleted_records: bool = False) -> LatestState:
    """The keyed state of every topic-partition under ``source`` (a log directory, a
    partition folder, or a URI: ``s3://bucket/kafka`` ...), as of ``end_offset`` (every
    partition: the records before it) or ``end_time`` (ms since the epoch: the records
    before the first one at or after it, Kafka's ``offsetsForTimes``); default: the whole log
    from each partition's log start offset (records ``deleteRecords`` left below it in the
    files count with ``include_deleted_records=True``, or option ``includeDeletedRecords``).

    ``selection``: instead of ``topics``/``end_offset``/``end_time``, the selection options of
    :mod:`kafkarec.log.selection` as Spark's Kafka source names them (``topics``,
    ``endingOffsets`` as JSON per partition, ``endingOffsetsByTimestamp``, ``endingTimestamp`` ...),
    or a :class:`kafkarec.log.selection.Selection`.
    ``options``: a :class:`kafkarec.ReadOptions` (CRCs, strictness, decompression budget).
    ``cdc="debezium"``: the topics hold Debezium change events; the table is the one they
    mirror, with the envelope's columns (``after`` is each row's image; :mod:`kafkarec.cdc`).
    ``decode``: type the state's keys and values through a Schema Registry, as Spark's
    ``valueFormat``/``keyFormat`` do: keyword arguments of
    :func:`kafkarec.registry.decode_table` (``registry``: a Registry or its source, a log
    directory holding ``_schemas``; ``value``, ``key``, ``value_format``, subjects, reader
    schemas ...), applied to each topic's rows (``value_schema_id``, ``_corrupt_record``
    added).  With ``cdc`` the values are Debezium's Avro (Protobuf, JSON Schema) envelopes:
    ``op`` is read from each decoded envelope and ``before``/``after``/``source`` keep its types.
    A batch that cannot be decoded raises :class:`kafkarec.DecodeError` (``position`` in the
    file named by its ``file`` attribute): a table with a hole in it would be a wrong table.
    """
    pa = require("pyarrow")
    import kafkarec
    selection_options = selection
    from kafkarec.log import selection
    if cdc is not None:
        from kafkarec.cdc import parse_cdc
        cdc = parse_cdc(cdc)
    typed = None if decode is None else _TypedState(decode, cdc)
    if selection_options is not None:
        if topics is not None or end_offset is not None or end_time is not None:
            raise kafkarec.SelectionError("give selection, or topics/end_offset/end_time, not both")
        if include_deleted_records:
            raise kafkarec.SelectionError("with selection, give option includeDeletedRecords in it "
                                          "instead of include_deleted_records")
        sel = (selection_options if isinstance(selection_options, selection.Selection)
               else selection.parse_selection(selection_options))
    else:
        sel = selection.cli_selection(topics=topics, end_offset=end_offset, end_time=end_time,
                                      include_deleted_records=include_deleted_records)
    stats = LatestStats()
    scan = _scan(source, sel, storage_options, read_committed, options, batch_columns)

    def reader(pieces):
        def read():
            for _, item in scan.read_items(pieces):
                yield item
        return read

    by_topic: dict = {}
    for piece in scan.pieces():
        # a folder whose name has no topic is a topic of its own
        by_topic.setdefault(piece.topic_key, (piece.topic, {}))[1].setdefault(piece.key, []).append(piece)
    by_topic = {k: (topic, [reader(pieces) for pieces in parts.values()]) for k, (topic, parts) in by_topic.items()}
    parts = []
    for topic, reads in by_topic.values():
        if typed is None:
            parts += [item for _, item in topic_latest_batches(reads, buffer_bytes=buffer_bytes, stats=stats,
                                                               cdc=cdc)]
            continue
        rows: List[list] = [[] for _ in reads]
        for i, item in topic_latest_batches(reads, buffer_bytes=buffer_bytes, stats=stats,
                                            cdc=typed.rules(topic)):
            rows[i].append(item)
        parts += [typed.table(topic, pa.Table.from_batches(
            part, schema=kafkarec.arrow_schema(batch_columns=batch_columns))) for part in rows]
    if typed is not None:
        table = typed.concat(parts)
        return LatestState(table.sort_by([("topic", "ascending"), ("partition", "ascending"),
                                          ("offset", "ascending")]), stats)
    schema = kafkarec.arrow_schema(batch_columns=batch_columns)
    if cdc is not None:
        from kafkarec.cdc import CDC_FIELDS
        for name, type_name in CDC_FIELDS:
            schema = schema.append(pa.field(name, getattr(pa, type_name)()))
    table = pa.Table.from_batches(parts, schema=schema) if parts else schema.empty_table()
    # Buckets emit in their own order: offsets are only increasing within one bucket.
    table = table.sort_by([("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")])
    return LatestState(table, stats)


class _TypedState:
    """``latest(decode=...)``: one set of registry decoders per topic, the Debezium rules over
    typed values, and each partition's state typed (:func:`kafkarec.registry.decode_table`)."""

    def __init__(self, decode: dict, cdc: Optional[str]) -> None:
        from kafkarec import registry as kr
        self.kw = dict(decode)
        source = self.kw.pop("registry", None)
        self.registry = kr.load(source) if isinstance(source, (str, os.PathLike)) else source
        self.cdc = cdc
        if cdc is not None and not self.kw.get("value", True):
            raise ValueError("cdc with decode: the values must be decoded (decode value=False)")
        self.columns: dict = {}

    def _columns(self, topic) -> dict:
        """The topic's decoders, built once (decode_table of no rows builds them)."""
        if topic not in self.columns:
            import kafkarec
            from kafkarec.registry import decode_table
            self.columns[topic] = {}
            decode_table(kafkarec.arrow_schema().empty_table(), self.registry, topic=topic,
                         columns=self.columns[topic], **self.kw)
        return self.columns[topic]

    def rules(self, topic):
        if self.cdc is None:
            return None
        from kafkarec.cdc import Debezium, envelope_type_problem
        column = self._columns(topic)["value"]
        problem = envelope_type_problem(column.arrow_type)
        if problem is not None:
            raise ValueError(f"cdc={self.cdc} on topic {topic!r}: {problem}")
        return Debezium(column.decode)

    def table(self, topic, rows):
        pa = require("pyarrow")
        from kafkarec.registry import decode_table
        out = decode_table(rows, self.registry, topic=topic, columns=self._columns(topic), **self.kw)
        if self.cdc is not None:
            from kafkarec.cdc import typed_changes
            corrupt = out.column("_corrupt_record")
            for name, arr in typed_changes(out.column("value"), corrupt).items():
                out = out.append_column(name, pa.chunked_array([arr], arr.type))
        return out

    def concat(self, tables: list):
        pa = require("pyarrow")
        if not tables:                  # nothing selected: no topic to type the columns by
            import kafkarec
            return kafkarec.arrow_schema().empty_table()
        try:
            return pa.concat_tables(tables)
        except pa.ArrowInvalid as exc:
            raise ValueError(f"the selected topics' typed rows have different types; read them one "
                             f"topic at a time ({exc})") from None


def _scan(source, sel, storage_options, read_committed: bool, options, batch_columns: bool):
    """The read of a keyed state: kafkarec's one reader (:class:`kafkarec.scan.LogScan`) over a
    listing, whole partitions in log order; a batch that cannot be decoded raises the core's
    :class:`kafkarec.DecodeError` (its ``file`` the segment's URI)."""
    from kafkarec.scan import LogScan, ScanConfig
    fields = {} if options is None else dict(verify_crc=options.verify_crc, strict=options.strict,
                                             max_decompressed_bytes=options.max_decompressed_bytes)
    # threads=1: decoded in the consumer's thread, one batch ahead of the key map at most (a pool
    # would hold threads + 1 windows of rows beside the map's dedupeBufferSize)
    return LogScan(ScanConfig((str(source),), selection=sel, storage_options=storage_options,
                              read_committed=read_committed, batch_columns=batch_columns, listing=True,
                              core_errors=True, threads=1, **fields))
