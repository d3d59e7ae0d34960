"""Typed keys and values over a read's rows, over :mod:`kafkarec.registry.typed`: the one home
of the wrappers every surface uses.

* :class:`TypedRows`: a read's rows typed by :func:`kafkarec.registry.typed.decode_table`, one
  decoder per side built once per read, for :class:`kafkarec.scan.LogScan` and the lakehouse
  backfill, and the one rule of what a row that does not decode becomes, in Spark's parse modes
  (:meth:`TypedRows.settle`, which Spark's typed reads, ``spark_udfs.read.typed``, apply to the
  batches they decode): PERMISSIVE (the row kept, its reason in the corrupt column), DROPMALFORMED
  (left out) and FAILFAST (the first such row raises, through ``refuse``: the backfill's says its
  live writer would not write it either); a quarantine (``badRecordsPath``) keeps each such record
  whole first, whatever the mode.
* :class:`TypedSide` and :func:`decode_sides`: one side (key or value) as a picklable decoder,
  its :class:`kafkarec.registry.TypedColumn` rebuilt where it runs once per topic, reader
  versions pinned per topic (a stream's), and a batch's sides decoded topic by topic with their
  failures' reasons merged: what Spark's data source, stream and ``from_registry`` type with
  (``spark_udfs.read.typed`` adds only Spark's types)."""
from __future__ import annotations

import logging
import threading
from typing import Callable, Dict, NamedTuple, Optional

from kafkarec._extras import require
from kafkarec.scan.config import CORRUPT_COLUMN, MODES, TypedSettings, normalize_mode

__all__ = ["TypedRows", "MODES", "TypedSide", "SideDecoded", "decode_sides"]


def _failfast(topic, partition, offset, reason: str, corrupt_column: str) -> Exception:
    """FAILFAST's error where the reader gives none of its own: Spark's wording."""
    from kafkarec.errors import MalformedBatchError
    return MalformedBatchError(f"topic {topic} partition {partition} offset {offset}: {reason} (mode FAILFAST; "
                               f"PERMISSIVE gives a null value and the reason in {corrupt_column})")


class TypedRows:
    """The typed rows of ``settings`` (:class:`kafkarec.scan.TypedSettings`; None for a reader
    that decodes its batches itself and asks only :meth:`settle`); ``topics``: the read's topics (a
    single one is the subject's topic, known before a row is read); ``mode``: one of Spark's parse
    modes (:data:`MODES`, any case); ``refuse(topic, partition, offset, reason)``: FAILFAST's error
    (default Spark's wording, a :class:`kafkarec.errors.MalformedBatchError`); ``quarantine``: a
    :class:`kafkarec.log.quarantine.Quarantine` keeping each failed record whole; ``log``: where
    DROPMALFORMED says how many it left out."""

    def __init__(self, settings: Optional[TypedSettings] = None, topics=None, *, mode: str = "PERMISSIVE",
                 refuse: Optional[Callable[..., Exception]] = None, corrupt_column: str = CORRUPT_COLUMN,
                 quarantine=None, log: Optional[logging.Logger] = None):
        self.settings = settings
        self.mode = normalize_mode(mode)
        self.refuse = refuse
        self.corrupt_column = corrupt_column
        self.quarantine = quarantine
        self.log = log if log is not None else logging.getLogger("kafkarec")
        self.registry = None if settings is None else settings.registry
        self.options = {} if settings is None else dict(settings.options)
        if topics is not None and len(topics) == 1:
            self.options.setdefault("topic", next(iter(topics)))
        self.needs = set() if settings is None else (
            {"topic", "headers"} | ({"value"} if settings.value_format else set())
            | ({"key"} if settings.key_format else set()))
        self._columns: dict = {}
        self._loading = threading.Lock()

    def settle(self, rows, reasons, failed_ids=None):
        """The mode's rule over a batch's ``rows`` (an Arrow table or record batch of the plain
        read: ``topic``, ``partition``, ``offset``...) whose ``reasons`` (per row; null where the row
        decoded, None when every row did) say why a row does not decode: the mask of the rows kept
        (None: every row).  The quarantine first keeps each failed record (``failed_ids``: the
        failing side's writer id per row), so that FAILFAST, which raises at the first, loses none."""
        if reasons is None or reasons.null_count == len(reasons):
            return None
        if self.quarantine is not None:
            pa = require("pyarrow")
            table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
            self.quarantine.add_table(table, reasons, failed_ids)
        bad = reasons.is_valid()
        if self.mode == "FAILFAST":
            i = bad.to_pylist().index(True)
            at = [rows.column(c)[i].as_py() if c in rows.schema.names else None
                  for c in ("topic", "partition", "offset")]
            if self.refuse is not None:
                raise self.refuse(*at, reasons[i].as_py())
            raise _failfast(*at, reasons[i].as_py(), self.corrupt_column)
        if self.mode == "DROPMALFORMED":
            pa = require("pyarrow")
            pc = require("pyarrow.compute")
            keep = pc.invert(bad)
            self.log.warning("kafkarec: DROPMALFORMED left out %d records that could not be decoded",
                             len(reasons) - pc.sum(keep.cast(pa.int64())).as_py())
            return keep
        return None

    def decode(self, table):
        """``table`` with its values (keys) typed, the rows that do not decode settled by the mode
        (:meth:`settle`)."""
        return self._settled(self._typed(table))

    def _typed(self, table):
        """``table`` typed (:func:`kafkarec.registry.typed.decode_table`), not settled."""
        from kafkarec.registry.typed import decode_table
        s = self.settings
        return decode_table(table, self._registry(), value=s.value_format is not None,
                            key=s.key_format is not None, value_format=s.value_format or "registry",
                            key_format=s.key_format or "registry", columns=self._columns,
                            corrupt_column=self.corrupt_column, **self.options)

    def _settled(self, out):
        keep = self.settle(out, out.column(self.corrupt_column))
        return out if keep is None else out.filter(keep)

    def _registry(self):
        from kafkarec.registry import Registry
        if self.registry is None or isinstance(self.registry, Registry):
            return self.registry
        with self._loading:     # (typing runs on a read's pool threads too: loaded once)
            if not isinstance(self.registry, Registry):
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

    def typed_batch(self, rb):
        """One record batch of the plain read with its values (keys) typed, not yet settled (the
        rows that do not decode keep their reason in the corrupt column): what
        :class:`kafkarec.scan.LogScan`'s pool threads run next to the record decode, the settling
        (:meth:`settle`: the mode's rule, the quarantine) left to :meth:`convert` in the consumer's
        thread, in log order, over the rows the read keeps.  A batch whose typing raised, or that has
        no rows, is handed back as it was: :meth:`convert` types it there, and raises where a read on
        one thread does.  Several threads may type at once (one decoder a side, each writer added
        once: :func:`kafkarec.registry.typed.decode_table`)."""
        pa = require("pyarrow")
        try:
            table = self._typed(pa.Table.from_batches([rb]))
        except Exception:
            return rb
        batches = table.combine_chunks().to_batches()
        return batches[0] if batches else rb

    def convert(self, rb):
        """One record batch typed and settled (None: no rows); one :meth:`typed_batch` typed
        already (it holds the corrupt column, which only typing adds) is only settled."""
        pa = require("pyarrow")
        table = pa.Table.from_batches([rb])
        if self.corrupt_column in rb.schema.names:
            table = self._settled(table)
        else:
            table = self.decode(table)
        return table.combine_chunks().to_batches()[0] if table.num_rows else None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_columns"] = {}
        del state["_loading"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._loading = threading.Lock()


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
