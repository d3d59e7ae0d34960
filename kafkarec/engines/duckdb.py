"""DuckDB over Kafka logs: :func:`register` puts a log dir under a table name whose filters on
``topic``, ``partition``, ``offset``, ``timestamp`` and ``key`` and whose projection reach
:class:`kafkarec.scan.LogScan`, so ``WHERE "offset" BETWEEN ...`` or ``WHERE timestamp >= ...``
reads only the segments (and the part of a segment) that can hold such records, and ``WHERE key
= 'k1'`` (DuckDB casts the string to a ``BLOB`` constant: the source sees its bytes) builds no
other key's record.

    >>> import duckdb
    >>> from kafkarec.engines.duckdb import register
    >>> con = duckdb.connect()
    >>> register(con, "logs", "/var/lib/kafka/data")                        # doctest: +SKIP
    >>> con.sql('SELECT count(*) FROM logs WHERE "offset" BETWEEN 1000 AND 1999').fetchall()  # doctest: +SKIP

How it reaches DuckDB (docs/engines.md says why this way): duckdb 2.0's Arrow scan speaks to every
Python object through a *source* (``duckdb._sources``): ``adapt`` keeps an object that already is
one, asks it ``accepts(predicate)`` for each filter, with the predicate as DuckDB's typed tree
(``Binary``/``In``/``Col``/``Lit``, a constant already of the column's type), and then
``stream(columns, filters)`` with the column indexes the query reads and the filters it accepted.
:class:`LogSource` accepts a filter when :mod:`kafkarec.scan.predicate` says the read applies it
exactly as :class:`~kafkarec.scan.Bounds` (so DuckDB does not apply it again) and refuses the rest,
which DuckDB applies itself.  DuckDB's own pyarrow Dataset path would hand a ``pyarrow.compute.Expression`` instead, which has no public tree to read bounds from, and
asks for a Dataset subclass whose other methods crash without a C++ dataset behind them.

``timestamp`` is DuckDB's ``TIMESTAMP`` (microseconds) here, not the reader's milliseconds: a
``TIMESTAMP`` constant against a ``TIMESTAMP_MS`` column makes DuckDB cast the column, and a
filter on a cast column is never offered to the source.  ``offset`` is a keyword in DuckDB's SQL:
write it ``"offset"``.
"""
from __future__ import annotations

from typing import Optional, Sequence

from kafkarec._extras import require
from kafkarec.engines import BUFFER_CACHE_BYTES, MAP_CACHE_BYTES, VALUE_LAYOUT  # (a held source's defaults: one home)
from kafkarec.scan import Bounds, LogScan, default_threads, predicate as rule

_sources = require("duckdb._sources")
pa = require("pyarrow")

__all__ = ["LogSource", "register"]


#: the DuckDB type of each column's constants (``Lit.type``), as the declared schema makes them
_CONSTANT_TYPES = {"topic": "VARCHAR", "partition": "INTEGER", "offset": "BIGINT", "timestamp": "TIMESTAMP",
                   "key": "BLOB"}


def register(con, name: str, source, **options) -> "LogSource":
    """Register the records of ``source`` (a log dir, partition folder, segment files or URI) on
    the DuckDB connection ``con`` as the table ``name``; ``options`` are
    :class:`kafkarec.scan.LogScan`'s.  Returns the :class:`LogSource` (a Python variable holding it
    is a table name to DuckDB too).  Unless ``threads`` is given, the scan decodes on as many
    threads as the connection's ``threads`` setting (at most the CPUs): DuckDB's scan threads then
    take batches the pool decoded ahead, without the GIL, in log order.  ``key`` and ``value`` come
    as ``binary_view`` (:data:`VALUE_LAYOUT`; each key and value copied once, into the batch's
    own bytes, as in the classic layout: DuckDB copies each into its own strings anyway, and takes
    views in fewer instructions than offsets; docs/performance.md, "Views of copied bytes")
    unless ``value_layout="copy"`` is given (Arrow's classic ``binary``).  Unless
    ``map_cache_bytes`` is given,
    the table keeps up to :data:`MAP_CACHE_BYTES` of its local windows mapped from one query to the
    next (0: none), until ``unregister`` or the connection drops the source, or
    :meth:`LogSource.close` (docs/engines.md, "Windows kept mapped"); and unless
    ``buffer_cache_bytes`` is given, up to :data:`BUFFER_CACHE_BYTES` of the column buffers DuckDB
    let go of, for the next query's columns (0: none; docs/engines.md, "Column buffers kept")."""
    options.setdefault("value_layout", VALUE_LAYOUT)
    options.setdefault("map_cache_bytes", MAP_CACHE_BYTES)
    options.setdefault("buffer_cache_bytes", BUFFER_CACHE_BYTES)
    if "threads" not in options:
        # (on a cursor of its own: a result the caller has pending on con stays theirs; the
        # setting is the database's, the same on every cursor)
        options["threads"] = default_threads(int(con.cursor().execute("SELECT current_setting('threads')").fetchall()[0][0]))
    log_source = LogSource(LogScan(source, **options))
    con.register(name, log_source)
    return log_source


class LogSource(_sources.ArrowScanSource):
    """A :class:`kafkarec.scan.LogScan` as a DuckDB Arrow scan source (see the module docstring).
    Each query reads a narrowed scan of it, through the scan's kept maps (``map_cache_bytes``) and
    column buffers (``buffer_cache_bytes``), which :meth:`close` lets go, as collecting the source
    does (DuckDB's ``unregister``, a closed connection: the scan's
    :class:`kafkarec.log.window_maps.WindowMaps` has a finalizer, its buffers go with it)."""

    schema_is_stable = True

    def __init__(self, scan: LogScan):
        super().__init__(scan)
        self.scan = scan
        self.schema = pa.schema([f.with_type(pa.timestamp("us")) if f.name == "timestamp" else f
                                 for f in scan.schema])

    def close(self) -> None:
        """The local windows' maps the table kept open between queries closed, and the column
        buffers it kept let go (:meth:`LogScan.close`)."""
        self.scan.close()

    def __arrow_c_schema__(self):
        return self.schema.__arrow_c_schema__()

    def accepts(self, predicate) -> bool:
        return self.scan.config.applies_exactly(_term(predicate))

    def stream(self, columns: Optional[Sequence[int]], filters):
        bounds = Bounds()
        for predicate in filters:
            bounds = bounds.intersect(_term(predicate).bounds)
        # no column at all (a count): every column, as DuckDB then takes the row count from them
        names = [self.schema.names[i] for i in columns] if columns else None
        narrowed = self.scan.narrow(bounds=bounds, columns=names)
        return self._reader(narrowed).__arrow_c_stream__(), names is not None

    def __arrow_c_stream__(self, requested_schema=None):
        """Every record, every column (what DuckDB's registration checks an Arrow object by)."""
        return self._reader(self.scan).__arrow_c_stream__(requested_schema)

    def _reader(self, scan: LogScan):
        # the timestamps in DuckDB's unit as the core decodes them (LogScan.batches_in: the record
        # loops write microseconds): the stream DuckDB's threads pull from casts nothing
        schema = pa.schema([self.schema.field(name) for name in scan.schema.names])
        return pa.RecordBatchReader.from_batches(schema, scan.batches_in(schema))


def _term(node) -> Optional[rule.Term]:
    """DuckDB's predicate tree ``node`` as the rule's term, or None."""
    if isinstance(node, _sources.nodes.Binary):
        if node.op in ("AND", "OR"):
            left, right = _term(node.left), _term(node.right)
            return rule.either(left, right) if node.op == "OR" else rule.both(left, right)
        column = _column(node.left)
        if column is None or not isinstance(node.right, _sources.nodes.Lit):
            return None
        value = _value(node.right, column)
        return None if value is None else rule.compared(column, "==" if node.op == "=" else node.op, value)
    if isinstance(node, _sources.nodes.In):
        column = _column(node.operand)
        if column is None:
            return None
        values = [_value(v, column) if isinstance(v, _sources.nodes.Lit) else None for v in node.values]
        return None if None in values else rule.members(column, values)
    return None


def _column(node) -> Optional[str]:
    if isinstance(node, _sources.nodes.Col) and len(node.parts) == 1 and node.parts[0] in _CONSTANT_TYPES:
        return node.parts[0]
    return None


def _value(constant, column: str):
    """A constant as :mod:`kafkarec.scan.predicate` takes it (timestamps: exact milliseconds)."""
    if constant.type != _CONSTANT_TYPES[column] or not _sources.nodes.exact_value(constant):
        return None
    return rule.python_constant(column, constant.value)
