"""Typed keys and values over a read's rows, over :mod:`kafkarec.registry.typed`: the one home
of the wrappers every surface uses.

* :class:`TypedRows`: a read's rows typed by :func:`kafkarec.registry.typed.decode_table`, one
  decoder per side built once per read, for :class:`kafkarec.scan.LogScan` and the lakehouse
  backfill.  Two modes: ``"rows"`` (a row that does not decode keeps its reason in the corrupt
  column, as Spark's PERMISSIVE) and ``"refuse"`` (the first such row raises, through
  ``refuse(offset, reason)``: the backfill, whose live writer would not write it either).
* :class:`TypedSide` and :func:`decode_sides`: one side (key or value) as a picklable decoder,
  its :class:`kafkarec.registry.TypedColumn` rebuilt where it runs once per topic, reader
  versions pinned per topic (a stream's), and a batch's sides decoded topic by topic with their
  failures' reasons merged: what Spark's data source, stream and ``from_registry`` type with
  (``spark_udfs.read.typed`` adds only Spark's types)."""
from __future__ import annotations

from typing import Callable, Dict, NamedTuple, Optional

from kafkarec._extras import require
from kafkarec.scan._config import CORRUPT_COLUMN, TypedSettings

__all__ = ["TypedRows", "MODES", "TypedSide", "SideDecoded", "decode_sides"]

MODES = ("rows", "refuse")


class TypedRows:
    """The typed rows of ``settings`` (:class:`kafkarec.scan.TypedSettings`); ``topics``: the
    read's topics (a single one is the subject's topic, known before a row is read)."""

    def __init__(self, settings: TypedSettings, topics=None, *, mode: str = "rows",
                 refuse: Optional[Callable[[int, str], Exception]] = None,
                 corrupt_column: str = CORRUPT_COLUMN):
        if mode not in MODES:
            raise ValueError(f"TypedRows mode {mode!r}: one of {MODES}")
        self.settings = settings
        self.mode = mode
        self.refuse = refuse
        self.corrupt_column = corrupt_column
        self.registry = settings.registry
        self.options = dict(settings.options)
        if topics is not None and len(topics) == 1:
            self.options.setdefault("topic", next(iter(topics)))
        self.needs = ({"topic", "headers"} | ({"value"} if settings.value_format else set())
                      | ({"key"} if settings.key_format else set()))
        self._columns: dict = {}

    def decode(self, table):
        """``table`` with its values (keys) typed; in mode ``"refuse"`` a row that does not
        decode raises ``refuse(offset, reason)``."""
        from kafkarec.registry.typed import decode_table
        s = self.settings
        out = decode_table(table, self._registry(), value=s.value_format is not None,
                           key=s.key_format is not None, value_format=s.value_format or "registry",
                           key_format=s.key_format or "registry", columns=self._columns,
                           corrupt_column=self.corrupt_column, **self.options)
        if self.mode == "refuse":
            bad = out.column(self.corrupt_column)
            if bad.null_count != len(bad):
                i = bad.is_valid().to_pylist().index(True)
                raise self.refuse(out.column("offset")[i].as_py(), bad[i].as_py())
        return out

    def _registry(self):
        from kafkarec.registry import Registry
        if self.registry is None or isinstance(self.registry, Registry):
            return self.registry
        from kafkarec.registry import load
        self.registry = load(self.registry)
        return self.registry

    def schema(self, base):
        """The typed schema of ``base`` (known before a row is read)."""
        pa = require("pyarrow")
        return self.decode(pa.Table.from_batches([], schema=base)).schema

    def value_type(self, base):
        """The Arrow type of the typed value (its decoder's)."""
        self.schema(base)
        return self._columns["value"].arrow_type

    def convert(self, rb):
        """One record batch typed (None: no rows)."""
        pa = require("pyarrow")
        table = self.decode(pa.Table.from_batches([rb]))
        return table.combine_chunks().to_batches()[0] if table.num_rows else None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_columns"] = {}
        return state


class TypedSide:
    """One side (``side``: ``"key"`` or ``"value"``) of a typed read, picklable: its format
    (``fmt``), ``registry`` and :class:`kafkarec.registry.TypedColumn`'s settings (``subject``,
    ``strategy``, ``record_name``, ``version``, ``reader_schema``, ``message``, ``id_format``,
    ``options``, ``time_zone``); ``topic``: the read's one topic, when it has one.  The column
    (its compiled decoders) is rebuilt where it runs, once per topic (once, with a subject named);
    made here once, so a bad subject or schema fails where the read is planned.  ``pins``:
    ``{topic: reader version}`` fixed by :meth:`pin`."""

    def __init__(self, side: str, fmt: str, registry, *, subject=None, topic=None, strategy="topic",
                 record_name=None, version="latest", reader_schema=None, message=None,
                 id_format="confluent", pins=None, options=None, time_zone="UTC") -> None:
        self.side = side
        self.format = fmt
        self.registry = registry
        self.kw = dict(subject=subject, strategy=strategy, record_name=record_name,
                       version=version or "latest", reader_schema=reader_schema, message=message,
                       id_format=id_format, options=dict(options or {}), time_zone=time_zone or "UTC")
        self.topic = topic
        # {column key: reader version}: a stream's reader versions, fixed when it started
        self.pins: dict = dict(pins or {})
        self._columns: dict = {}
        self.compiled: dict = {}
        col = self.column(topic)           # fails early (where the read is planned)
        if col.schema_type == "PROTOBUF":
            # protoc runs here, where the read is planned; workers get the compiled (plain) schemas
            self.compiled = col.precompile()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_columns"] = {}
        return state

    def _key(self, topic):
        return topic if self.kw["subject"] is None else None

    def pinnable(self) -> bool:
        """Whether the reader schema is "the latest version", which a stream fixes at start."""
        return (self.format == "registry" and self.kw["reader_schema"] is None
                and str(self.kw["version"]).lower() == "latest")

    def pin(self, topic, fits: Optional[Callable] = None) -> bool:
        """Fix the reader version of ``topic``'s column to the one it reads now, or, given
        ``fits`` (``fits(arrow_type)``: whether a version's type is the one the query settled
        on, maybe in another process), to the newest version that fits: later registrations must
        not change a running stream's columns.  False, nothing pinned, when no version fits."""
        key = self._key(topic)
        if not self.pinnable() or key in self.pins:
            return True
        col = self.column(topic)
        version = col.reader.version
        if fits is not None and not fits(col.arrow_type):
            version = next((v for v in sorted(self.registry.versions(col.subject), reverse=True)
                            if fits(self._make(topic, v).arrow_type)), None)
            if version is None:
                return False
        self.pins[key] = version
        self._columns.pop(key, None)
        return True

    def column(self, topic):
        """The :class:`kafkarec.registry.TypedColumn` of ``topic`` (built once)."""
        key = self._key(topic)
        col = self._columns.get(key)
        if col is None:
            col = self._make(topic, self.pins.get(key, self.kw["version"]))
            self._columns[key] = col
        return col

    def _make(self, topic, version):
        from kafkarec.registry import TypedColumn
        return TypedColumn(self.registry, self.kw["subject"], topic=topic,
                           is_key=self.side == "key", strategy=self.kw["strategy"],
                           record_name=self.kw["record_name"], version=version,
                           reader_schema=self.kw["reader_schema"], message=self.kw["message"],
                           id_format=self.kw["id_format"], value_format=self.format,
                           compiled=self.compiled, options=self.kw["options"],
                           time_zone=self.kw["time_zone"])

    def with_registry(self, registry) -> "TypedSide":
        """The same side over a newer registry (a stream's ``_schemas`` grew): reader versions
        stay pinned; new writer schemas are compiled here, where the read is planned."""
        return type(self)(self.side, self.format, registry, topic=self.topic, pins=self.pins, **self.kw)

    def decode(self, values, headers=None, topic=None):
        """``(typed values, writer schema ids, errors)`` of ``values`` (a binary Arrow array) of
        ``topic`` (default the read's)."""
        return self.column(topic if topic is not None else self.topic).decode(values, headers)


class SideDecoded(NamedTuple):
    """A batch's sides decoded (:func:`decode_sides`): ``{side: (typed, ids, errors)}``, and per
    row the first failing side's reason (``"<side>: ..."``; None when every side decoded) and
    that side's writer id (:func:`kafkarec.registry.typed.add_reasons`)."""
    sides: Dict[str, tuple]
    reasons: object
    failed_ids: object


def decode_sides(sides, columns: dict) -> SideDecoded:
    """Each of ``sides`` (:class:`TypedSide`) decoded over a batch's ``columns`` (``{name:
    Arrow array}``: the side's binary column, ``topic``, ``headers``), topic by topic when the
    batch holds several (each topic its own subject and column)."""
    from kafkarec.registry.typed import add_reasons
    pc = require("pyarrow.compute")
    topics = pc.unique(columns["topic"]).drop_null().to_pylist()
    out: dict = {}
    reasons = failed_ids = None
    for s in sides:
        if len(topics) <= 1:
            out[s.side] = s.decode(columns[s.side], columns.get("headers"), topics[0] if topics else None)
        else:
            out[s.side] = _by_topic(s, columns, topics)
        _, ids, errs = out[s.side]
        reasons, failed_ids = add_reasons(s.side, errs, ids, reasons, failed_ids)
    return SideDecoded(out, reasons, failed_ids)


def _by_topic(side, columns: dict, topics):
    """One side of a batch of several topics: each topic's rows decoded by its own column, the
    results put back in the batch's row order."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    parts, rows_of = [], []
    headers = columns.get("headers")
    for t in topics:
        rows = pc.indices_nonzero(pc.equal(columns["topic"], t))
        parts.append(side.decode(pc.take(columns[side.side], rows),
                                 None if headers is None else pc.take(headers, rows), t))
        rows_of.append(rows)
    order = pc.sort_indices(pa.concat_arrays([r.cast(pa.int64()) for r in rows_of]))
    assert len(order) == len(columns["topic"])      # every row has a topic (the log's folders name one)
    return tuple(pc.take(pa.concat_arrays([p[i] for p in parts]), order) for i in range(3))
