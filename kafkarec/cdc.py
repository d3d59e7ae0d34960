"""Change data capture: Debezium's change events, as rows and as the table they mirror.

A Debezium topic holds one record per row change of one database table: the key is the
row's primary key, the value an *envelope* ``{"before", "after", "source", "op", "ts_ms",
...}``, written by Kafka Connect's JsonConverter either bare (``schemas.enable=false``) or
wrapped as ``{"schema": ..., "payload": <envelope>}``.  ``op`` is ``c`` (insert), ``u``
(update), ``d`` (delete: ``after`` null, and a tombstone with the same key follows unless
``tombstones.on.delete=false``), ``r`` (a snapshot read) or ``t`` (a truncate: no key, no
images).  A primary-key change is a delete of the old key and an insert of the new one.

:func:`changes` adds the envelope's fields to the log view's rows: ``op``, ``before``,
``after`` and ``source`` (JSON text, as Debezium wrote them), ``ts_ms``, and ``cdcError``
(why a value is not an envelope; the row is kept).  The mirrored table is the keyed state
(:mod:`kafkarec.table`) with Debezium's rules on top: a key whose last event is a delete is
gone, and a truncate removes every key whose last event came before it.

A truncate event has no key, so a producer sends it to one partition of the table's topic,
while the rows it removes are spread over all of them.  In its own partition "before" is the
offset order.  Across partitions it is the source's order (:func:`event_order`): the most exact
position both events' ``source`` blocks carry (PostgreSQL's ``lsn``; MySQL's and MariaDB's binlog
``file``, ``pos`` and ``row`` from one ``server_id``; SQL Server's ``commit_lsn``,
``change_lsn`` and ``event_serial_no``; Oracle's ``scn``; MongoDB's ``ts_ms`` and ``ord``),
else the database's time ``source.ts_ms``.  A row whose order against a truncate in another
partition cannot be decided (equal times and no common position) stays in the table.

Debezium's Avro (Kafka Connect's AvroConverter through a Schema Registry) is read by the
typed layer: :class:`Debezium` takes a decoder of the values (a registry
:class:`~kafkarec.registry.TypedColumn`), the keyed state finds each event's ``op`` in the
decoded envelope, and :func:`typed_changes` gives the same columns with ``before``,
``after`` and ``source`` as the envelope's own typed structs.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any, Iterator, NamedTuple, Optional, Sequence, Tuple

from kafkarec._extras import require

__all__ = ["FORMATS", "parse_cdc", "envelope", "changes", "CDC_FIELDS", "Debezium", "typed_changes",
           "envelope_type_problem", "EventOrder", "event_order", "Truncate"]

log = logging.getLogger("kafkarec")

FORMATS = ("debezium",)
OPS = frozenset("cudrt")
#: The columns :func:`changes` adds, in order, with their pyarrow types' names.
CDC_FIELDS = (("op", "string"), ("before", "string"), ("after", "string"), ("source", "string"),
              ("ts_ms", "int64"), ("cdcError", "string"))


def parse_cdc(value: Optional[str]) -> Optional[str]:
    """``None`` (no change data capture) or ``"debezium"``, any case."""
    from kafkarec._option_text import text_choice
    return text_choice("cdc", value, FORMATS)


def envelope(value: bytes) -> Tuple[Optional[dict], Optional[str]]:
    """``(envelope, None)`` for a Debezium change event's value (bare or in the JSON
    converter's schema/payload wrapper), else ``(None, reason)``: a value that is no JSON
    object, an ``op`` that is not Debezium's, or an envelope whose order cannot be read
    (:func:`event_order`'s ``problem``)."""
    doc, _, reason = _event(value)
    return doc, reason


def _event(value: bytes) -> Tuple[Optional[dict], Optional[EventOrder], Optional[str]]:
    """``(envelope, its order, None)`` or ``(None, None, reason)``: the value parsed and its
    ``source`` read, once."""
    doc, reason = _envelope(value)
    if doc is None:
        return None, None, reason
    order = _order_of(doc)
    if order.problem is not None:
        return None, None, f"not a Debezium envelope: {order.problem}"
    return doc, order, None


def _envelope(value: bytes) -> Tuple[Optional[dict], Optional[str]]:
    try:
        doc = json.loads(value)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"not JSON: {exc}"
    if isinstance(doc, dict) and set(doc) == {"schema", "payload"}:
        doc = doc["payload"]
    if not isinstance(doc, dict):
        return None, "not a Debezium envelope: the value is not a JSON object"
    op = doc.get("op")
    if op not in OPS:
        return None, f"not a Debezium envelope: op is {op!r}, not one of c, u, d, r, t"
    for image in ("before", "after"):
        if doc.get(image) is not None and not isinstance(doc[image], dict):
            return None, f"not a Debezium envelope: {image} is not an object"
    return doc, None


def _text(obj: Any) -> Optional[str]:
    return None if obj is None else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def changes(batch: Any) -> Any:
    """``batch`` (a pyarrow RecordBatch or Table of the log view) with :data:`CDC_FIELDS` added.
    A tombstone (null value) has them all null; a value that is not an envelope has only
    ``cdcError``."""
    pa = require("pyarrow")
    cols: dict = {name: [] for name, _ in CDC_FIELDS}
    for value in batch.column("value").to_pylist():
        doc, error = (None, None) if value is None else envelope(value)
        cols["op"].append(doc["op"] if doc else None)
        cols["before"].append(_text(doc.get("before")) if doc else None)
        cols["after"].append(_text(doc.get("after")) if doc else None)
        cols["source"].append(_text(doc.get("source")) if doc else None)
        cols["ts_ms"].append(doc.get("ts_ms") if doc else None)
        cols["cdcError"].append(error)
    out = batch
    for name, type_name in CDC_FIELDS:
        out = out.append_column(name, pa.array(cols[name], getattr(pa, type_name)()))
    return out


class EventOrder(NamedTuple):
    """Where a change event stands in its source's order: ``position`` (``(kind, key)``: keys
    of one kind compare, as tuples) or ``None`` when its ``source`` block has none, and
    ``ts_ms`` (the database's time of the change) or ``None``.  ``problem``: why the event's
    order cannot be read (a ``source`` field of a type Debezium does not write there; position
    and time are then ``None``), else ``None``."""
    position: Optional[tuple]
    ts_ms: Optional[int]
    problem: Optional[str] = None

    def precedes(self, other: "EventOrder") -> Optional[bool]:
        """Whether this event came before ``other``: by their positions when both have one of
        the same kind, else by their times; ``None`` when neither decides (equal or missing
        times, no common position)."""
        if self.position is not None and other.position is not None and self.position[0] == other.position[0]:
            return self.position[1] < other.position[1]
        if self.ts_ms is not None and other.ts_ms is not None and self.ts_ms != other.ts_ms:
            return self.ts_ms < other.ts_ms
        return None


class _Unreadable(Exception):
    """A ``source`` field that is not what Debezium writes there (internal: becomes a reason)."""


_LONG = (-(1 << 63), (1 << 63) - 1)      # Kafka Connect's INT64
_INT = (-(1 << 31), (1 << 31) - 1)       # INT32
_TEXT_MAX = 512                          # MySQL's longest file name (FN_REFLEN); LSNs are shorter
# ASCII digits only ([0-9], not \d: "²" and "①" are Unicode digits int() refuses), at most 20: a
# 64-bit number (an Oracle SCN of 8 bytes, a binlog file's sequence number)
_DIGITS = re.compile(r"[0-9]{1,20}")
_BINLOG_FILE = re.compile(r"(.+)\.([0-9]{1,20})")
# SQL Server's Lsn.toString: 10 bytes in lower-case hex, "0000002b:00000b68:0003" (fixed width: they
# compare as text); "NULL" where no LSN is available
_SQLSERVER_LSN = re.compile(r"[0-9a-f]{8}:[0-9a-f]{8}:[0-9a-f]{4}")


def _whole(block: dict, name: str, bounds: Tuple[int, int], where: str = "source.") -> Optional[int]:
    """An INT64 (or INT32) field of a source block (or of the envelope): absent or null is ``None``."""
    value = block.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        kind = "a long" if bounds == _LONG else "an int"
        raise _Unreadable(f"{where}{name} is {_shown(value)}, not {kind}")
    return value


def _string(source: dict, name: str, pattern: Optional[Any] = None, what: str = "text") -> Optional[str]:
    """A STRING field of a source block (matching ``pattern`` when given): absent or null is ``None``."""
    value = source.get(name)
    if value is None:
        return None
    if (not isinstance(value, str) or len(value) > _TEXT_MAX
            or (pattern is not None and pattern.fullmatch(value) is None)):
        raise _Unreadable(f"source.{name} is {_shown(value)}, not {what}")
    return value


def _shown(value: Any) -> str:
    """A field's value in a reason, cut short (an int past Python's digit limit has no repr)."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}... ({len(text)} characters)"


def _binlog(source: dict) -> Optional[tuple]:
    # MySqlSourceInfoStructMaker (MariaDB's likewise): server_id INT64, file STRING, pos INT64, row INT32
    server = _whole(source, "server_id", _LONG)
    name = _string(source, "file", _BINLOG_FILE, "a binlog file name (<base>.<number>)")
    pos, row = _whole(source, "pos", _LONG), _whole(source, "row", _INT)
    if name is None or pos is None:
        return None
    # the server numbers its files in order, and the number may outgrow its zero padding
    base, number = _BINLOG_FILE.fullmatch(name).groups()
    # positions in one server's binlog only: another server (a fail-over) numbers its own files
    return ("binlog", server), ((base, int(number)), pos, row or 0)


def _postgresql(source: dict) -> Optional[tuple]:
    lsn = _whole(source, "lsn", _LONG)            # PostgresSourceInfoStructMaker: lsn OPTIONAL_INT64
    return None if lsn is None else (("lsn",), (lsn,))


def _sqlserver(source: dict) -> Optional[tuple]:
    # SqlServerSourceInfoStructMaker: change_lsn, commit_lsn OPTIONAL_STRING, event_serial_no OPTIONAL_INT64
    lsn = (_SQLSERVER_LSN, "an LSN (xxxxxxxx:xxxxxxxx:xxxx)")
    commit = source.get("commit_lsn")
    commit = None if commit == "NULL" else _string(source, "commit_lsn", *lsn)
    change = source.get("change_lsn")
    change = None if change == "NULL" else _string(source, "change_lsn", *lsn)
    serial = _whole(source, "event_serial_no", _LONG)
    if commit is None:
        return None
    # no change LSN sorts first, as Debezium's Lsn.NULL does
    return ("sqlserver",), (commit, change or "", serial or 0)


def _oracle(source: dict) -> Optional[tuple]:
    # OracleSourceInfoStructMaker: scn OPTIONAL_STRING, the SCN in decimal (an INT64 in older releases)
    scn = source.get("scn")
    if scn is None:
        return None
    if isinstance(scn, int) and not isinstance(scn, bool):
        scn = _whole(source, "scn", _LONG)
    else:
        scn = int(_string(source, "scn", _DIGITS, "an SCN (decimal digits, at most 20)"))
    return ("scn",), (scn,)


def _mongodb(source: dict) -> Optional[tuple]:
    # MongoDbSourceInfoStructMaker: the oplog's timestamp, its seconds (ts_ms, INT64) and the
    # operation's ordinal within them (ord, INT32)
    ts, ordinal = _whole(source, "ts_ms", _LONG), _whole(source, "ord", _INT)
    return None if ts is None or ordinal is None else (("oplog",), (ts, ordinal))


#: What each Debezium connector (``source.connector``) records of its log position.
_POSITIONS = {"postgresql": _postgresql, "mysql": _binlog, "mariadb": _binlog, "sqlserver": _sqlserver,
              "oracle": _oracle, "mongodb": _mongodb}


def _order_of(doc: Optional[dict]) -> EventOrder:
    """The one reading of an envelope's ``source`` block, by the types Debezium writes there."""
    source = doc.get("source") if doc else None
    position = ts = None
    try:
        # the envelope's own ts_ms: Envelope.schema's INT64
        own = _whole(doc, "ts_ms", _LONG, "") if doc else None
        if source is not None and not isinstance(source, dict):
            raise _Unreadable("source is not an object")
        if source is not None:
            # AbstractSourceInfoStructMaker: connector STRING, ts_ms INT64 (every connector)
            connector = _string(source, "connector")
            ts = _whole(source, "ts_ms", _LONG)
            rule = _POSITIONS.get(connector) if connector is not None else None
            position = rule(source) if rule is not None else None
        if ts is None:
            ts = own
    except _Unreadable as exc:
        return EventOrder(None, None, str(exc))
    return EventOrder(position, ts)


def event_order(doc: Optional[dict]) -> EventOrder:
    """The :class:`EventOrder` of a change event (an envelope, as :func:`envelope` gives it or
    as a typed envelope's fields): its connector's position (``_POSITIONS``) and
    ``source.ts_ms``, else the envelope's own ``ts_ms``.  Each field is read as the type
    Debezium writes it (a long, an int, text; Oracle's SCN decimal digits, a binlog file
    ``<base>.<number>``); an event with a field of another type has no order, and
    ``problem`` says why (:func:`envelope` refuses such a value with that reason)."""
    return _order_of(doc)


class Truncate(NamedTuple):
    """A partition's last truncate event: its ``offset`` (the order in its own partition) and
    its :class:`EventOrder` (the order against the other partitions' rows)."""
    offset: int
    order: EventOrder


class Debezium:
    """Debezium's rules over one read of a log view (what :func:`kafkarec.table.latest_batches`
    asks): the ``op`` of each change event, the last truncate, and the rows of the mirrored
    table.  ``decode``: ``None`` for the JSON converter's values, else a picklable callable
    from a binary column to ``(typed values, schema ids, errors)`` (a registry
    :class:`~kafkarec.registry.TypedColumn`'s ``decode``, or a Spark read's typed side): the
    values are then Avro (or Protobuf, JSON Schema) envelopes, and the rows keep their bytes
    for the typed layer to decode and extend (:func:`typed_changes`)."""

    def __init__(self, decode: Any = None) -> None:
        self.decode = decode

    def envelopes(self, values: Any, headers: Any = None) -> Iterator[Optional[dict]]:
        """Each value's envelope (a binary column; ``headers``: the rows' headers, where a
        registry's schema id may be) as a dict with ``op`` (one of c, u, d, r, t), ``source``
        and ``ts_ms``, ``None`` where it is no envelope or null (:func:`envelope`'s rules)."""
        return (None if e is None else e[0] for e in self.events(values, headers))

    def events(self, values: Any, headers: Any = None) -> Iterator[Optional[Tuple[dict, EventOrder]]]:
        """Each value's ``(envelope, its order)`` (:meth:`envelopes`, the order read once), or
        ``None``; one at a time (a batch of parsed envelopes held at once costs the garbage
        collector more than the parse)."""
        if self.decode is None:
            for v in values.to_pylist():
                doc, order, _ = (None, None, None) if v is None else _event(v)
                yield None if doc is None else (doc, order)
            return
        pa = require("pyarrow")
        typed = self.decode(values, headers)[0]
        if not pa.types.is_struct(typed.type) or typed.type.get_field_index("op") < 0:
            yield from [None] * len(values)
            return
        pc = require("pyarrow.compute")
        fields = [n for n in ("op", "source", "ts_ms") if typed.type.get_field_index(n) >= 0]
        columns = [pc.struct_field(typed, n).to_pylist() for n in fields]
        for row in zip(*columns):
            doc = dict(zip(fields, row)) if row[0] in OPS else None
            order = None if doc is None else _order_of(doc)
            # a typed envelope whose source is not Debezium's is no envelope either (typed_changes
            # gives its reason)
            yield None if order is None or order.problem is not None else (doc, order)

    def last_truncate(self, batch: Any) -> Optional[Truncate]:
        """The last truncate event (op ``t``: no key) in ``batch``, ``None`` if none: the
        mirrored table holds nothing written before it."""
        pc = require("pyarrow.compute")
        keyless = batch.filter(pc.and_(pc.is_null(batch.column("key")), pc.is_valid(batch.column("value"))))
        if not keyless.num_rows:
            return None
        last = None
        for offset, event in zip(keyless.column("offset").to_pylist(),
                                 self.events(keyless.column("value"), _headers(keyless))):
            if event is not None and event[0]["op"] == "t" and (last is None or offset > last.offset):
                last = Truncate(offset, event[1])
        return last

    def table_rows(self, rows: Any, truncated: Optional[Truncate], others: Sequence[Truncate] = ()) -> Any:
        """Of the keyed state's ``rows``, those the mirrored table holds (last event not a
        delete, written after the partition's own last truncate ``truncated`` and not before
        any of ``others``, the last truncates of the topic's other partitions; a value that is
        no envelope stays, with its reason), with the change-event columns for JSON values
        (typed values get theirs once decoded)."""
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        live = []
        undecided = 0
        for event in self.events(rows.column("value"), _headers(rows)):
            keep = event is None or event[0]["op"] != "d"
            if keep and others and event is not None:
                before = [event[1].precedes(t.order) for t in others]
                keep = not any(before)
                undecided += keep and None in before
            live.append(keep)
        if undecided:
            log.warning("kafkarec: cdc=debezium: %d rows kept: their order against a truncate in another "
                        "partition cannot be decided (no common position, equal ts_ms)", undecided)
        keep = pa.array(live, pa.bool_())
        if truncated is not None:
            keep = pc.and_(keep, pc.greater(rows.column("offset"), truncated.offset))
        rows = rows.filter(keep)
        return changes(rows) if self.decode is None and rows.num_rows else rows


def _headers(batch: Any) -> Any:
    return batch.column("headers") if "headers" in batch.schema.names else None


def envelope_type_problem(value_type: Any) -> Optional[str]:
    """Why values of pyarrow type ``value_type`` (a typed value column) are not Debezium
    envelopes, or ``None`` when they are (a struct with ``op``, ``before``, ``after``)."""
    pa = require("pyarrow")
    if not pa.types.is_struct(value_type):
        return f"the values are of type {value_type}, not Debezium envelopes (a record with op, before, after)"
    missing = [n for n in ("op", "before", "after") if value_type.get_field_index(n) < 0]
    if missing:
        return f"the values' record has no field {', '.join(missing)}: not a Debezium envelope"
    if not pa.types.is_string(value_type.field("op").type) and not pa.types.is_large_string(
            value_type.field("op").type):
        return f"the envelope's op is of type {value_type.field('op').type}, not a string"
    return None


def typed_change_types(value_type: Any) -> list:
    """``[(name, pyarrow type)]`` of :func:`typed_changes`'s columns for values of
    ``value_type`` (a Debezium envelope struct): op, before, after, source, ts_ms, cdcError."""
    pa = require("pyarrow")

    def field(name, default):
        i = value_type.get_field_index(name)
        return value_type.field(i).type if i >= 0 else default
    return [("op", pa.string()), ("before", field("before", pa.null())), ("after", field("after", pa.null())),
            ("source", field("source", pa.null())), ("ts_ms", pa.int64()), ("cdcError", pa.string())]


def typed_changes(values: Any, errors: Any = None) -> dict:
    """``{name: array}`` of the change-event columns for typed ``values`` (a struct column
    of Debezium envelopes, as the registry decoded them; ``errors``: the decoder's reasons,
    null where a value decoded): ``op``, ``before``, ``after`` and ``source`` (the envelope's
    own types), ``ts_ms``, and ``cdcError`` where a decoded value is no change event (a value
    that did not decode has its reason in the corrupt-record column instead)."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    n = len(values)
    types = typed_change_types(values.type)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    out = {}
    # struct_field, not .field(): a null value (a tombstone) has null fields
    for name, t in types[:4]:
        out[name] = pc.struct_field(values, name) if values.type.get_field_index(name) >= 0 else pa.nulls(n, t)
    ts = values.type.get_field_index("ts_ms")
    out["ts_ms"] = (pc.struct_field(values, "ts_ms").cast(pa.int64()) if ts >= 0
                    else pa.nulls(n, pa.int64()))
    op = out["op"]
    bad = pc.and_(pc.is_valid(values), pc.invert(pc.fill_null(pc.is_in(op, pa.array(sorted(OPS))), False)))
    if errors is not None:
        bad = pc.and_(bad, pc.is_null(errors))
    reasons = pc.if_else(bad, pc.binary_join_element_wise(
        pa.scalar("not a Debezium envelope: op is "), pc.fill_null(op, "null"), ""), pa.scalar(None, pa.string()))
    if values.type.get_field_index("source") >= 0:
        # a source block whose order cannot be read (event_order's problem), as for JSON values
        unread = pa.array([None if s is None or b else _order_of({"source": s}).problem
                           for s, b in zip(out["source"].to_pylist(), bad.to_pylist())], pa.string())
        unread = pc.binary_join_element_wise(pa.scalar("not a Debezium envelope: "), unread, "")
        if errors is not None:
            unread = pc.if_else(pc.is_null(errors), unread, pa.scalar(None, pa.string()))
        reasons = pc.coalesce(reasons, unread)
        bad = pc.is_valid(reasons)
    # A row whose value is no envelope has no change columns, as with JSON.
    for name in ("op", "before", "after", "source", "ts_ms"):
        out[name] = pc.if_else(bad, pa.scalar(None, out[name].type), out[name])
    out["cdcError"] = reasons
    return out
