"""Polars over Kafka logs: :func:`scan_log`, a LazyFrame whose predicate, projection and row limit
reach :class:`kafkarec.scan.LogScan` (``polars.io.plugins.register_io_source``).

    >>> import polars as pl
    >>> from kafkarec.engines.polars import scan_log
    >>> lf = scan_log("/var/lib/kafka/data", isolation_level="read_committed")   # doctest: +SKIP
    >>> lf.filter(pl.col("offset").is_between(1000, 1999)).select("offset", "value").collect()  # doctest: +SKIP

Polars hands the source the query's predicate as an expression, with the columns it needs and the
rows it wants.  The predicate is walked as Polars' own expressions (``Expr.meta.pop`` for a
node's inputs, the node's kind read from ``Expr.meta.serialize(format="json")``): each conjunct
that compares ``topic``, ``partition``, ``offset``, ``timestamp`` or ``key`` with a constant (``==``,
``<``, ``<=``, ``>``, ``>=``, ``is_between``, ``is_in``, OR of topics, of partitions or of keys; a key
as bytes, or a string, which Polars compares with a Binary column by its UTF-8 bytes) becomes
:class:`~kafkarec.scan.Bounds` (:mod:`kafkarec.scan.predicate`, the rule every engine uses), which
the reader resolves through the segments' indexes and applies exactly; every other conjunct is
applied to each batch afterwards as the very expression Polars gave (nothing is rebuilt from
text: a non-finite float, which Polars' JSON cannot carry, means what it means to Polars).
Constants are evaluated by Polars (``pl.select``), so a literal list, a cast or a parsed date
means what it means to Polars.  ``n_rows`` becomes the reader's row limit
when no conjunct is left to apply (else reading stops once that many rows passed the filter), and
``batch_size`` caps the rows of each DataFrame handed back.
"""
from __future__ import annotations

import json
from fractions import Fraction
from typing import Iterator, List, Optional, Tuple

from kafkarec._extras import require
from kafkarec.engines import BUFFER_CACHE_BYTES, MAP_CACHE_BYTES, VALUE_LAYOUT  # (a held source's defaults: one home)
from kafkarec.scan import Bounds, LogScan, default_threads, predicate as rule

pl = require("polars")

__all__ = ["scan_log", "predicate_bounds"]


#: Polars' comparison operators (``BinaryExpr.op`` in its serialized tree)
_COMPARISONS = {"Eq": "==", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_AND = ("And", "LogicalAnd")
_OR = ("Or", "LogicalOr")
#: ``is_between``'s ``closed``: the operators of its lower and upper ends
_BETWEEN = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}
#: time unit of a Polars Datetime -> its ticks per millisecond
_PER_MS = {"ns": 1_000_000, "us": 1_000, "ms": 1}


def scan_log(source, **options) -> "pl.LazyFrame":
    """A LazyFrame of the records of ``source`` (a log dir, partition folder, segment files or
    URI); ``options`` are :class:`kafkarec.scan.LogScan`'s (``isolation_level``, ``bounds``,
    ``storage_options``, ``value_format``, ``partitioner`` ...).  Filters on ``topic``, ``partition``,
    ``offset``, ``timestamp`` and ``key`` are resolved by the reader; see the module docstring.
    Unless ``threads`` is given, the scan decodes on as many threads as Polars' pool has (at most
    the CPUs): the source yields batches as the pool finishes them, in log order.  Unless
    ``value_layout`` is given, ``key`` and ``value`` are decoded as ``binary_view`` (Polars' own
    layout), no cast (``"copy"``: decoded as ``binary`` and cast on the pool; docs/performance.md,
    "The view layout").  Unless
    ``map_cache_bytes`` is given, the LazyFrame's reads keep up to :data:`MAP_CACHE_BYTES` of the
    local windows they map open from one collect to the next (0: none), until the LazyFrame
    (and every frame made of it) is dropped (docs/engines.md, "Windows kept mapped"); and unless
    ``buffer_cache_bytes`` is given, up to :data:`BUFFER_CACHE_BYTES` of the column buffers Polars
    let go of, for the next collect's columns (0: none; docs/engines.md, "Column buffers kept")."""
    options.setdefault("value_layout", VALUE_LAYOUT)
    options.setdefault("map_cache_bytes", MAP_CACHE_BYTES)
    options.setdefault("buffer_cache_bytes", BUFFER_CACHE_BYTES)
    if "threads" not in options:
        options["threads"] = default_threads(pl.thread_pool_size())
    scan = LogScan(source, **options)
    schema = pl.from_arrow(scan.schema.empty_table()).schema

    def io_source(with_columns: Optional[List[str]], predicate, n_rows: Optional[int],
                  batch_size: Optional[int]) -> Iterator["pl.DataFrame"]:
        bounds, rest = (Bounds(), None) if predicate is None else \
            predicate_bounds(predicate, schema, error_rows=scan.config.error_rows, raw_keys=scan.config.raw_keys)
        columns = list(with_columns) if with_columns is not None else list(schema)
        read = columns + [c for c in (rest.meta.root_names() if rest is not None else []) if c not in columns]
        narrowed = scan.narrow(bounds=bounds, columns=read, limit=n_rows if rest is None else None)
        left = n_rows
        for rb in narrowed.batches_in(_views(narrowed.schema)):
            df = pl.from_arrow(rb)
            if rest is not None:
                df = df.filter(rest)
            if df.columns != columns:       # (a select per batch costs Polars a plan: skip it when idle)
                df = df.select(columns)
            if left is not None:
                df = df.head(left)
                left -= df.height
            if df.height * 2 < rb.num_rows:
                df = _compacted(df)
            step = batch_size or df.height or 1
            for start in range(0, df.height, step):
                yield df.slice(start, step)
            if left == 0:
                return

    plugins = require("polars.io.plugins")
    return plugins.register_io_source(io_source, schema=schema, explain_name="kafkarec", explain_detail=repr(scan))


def _compacted(df: "pl.DataFrame") -> "pl.DataFrame":
    """``df`` (the few rows a filter or a limit kept of a batch) with its keys, values and headers
    copied out of the batch: a view (``binary_view``, Polars' layout, and the view layout's) holds
    the whole buffer it points into -- the window's 64 MiB read, or the batch's value bytes -- for
    as long as the frame lives, so 30 rows kept of a 435 MiB log held all of it.  Arrow's cast to
    the classic layout copies only the bytes the rows refer to (Polars' ``shrink_to_fit`` does not
    collect a frame's views), and Polars makes its views anew over them."""
    pa = require("pyarrow")
    table = df.to_arrow()
    classic = pa.schema([f.with_type(pa.binary()) if f.type == pa.binary_view() else f for f in table.schema])
    return pl.from_arrow(table.cast(classic))


def _views(schema):
    """``schema`` with ``key`` and ``value`` in Arrow's view layout (``binary_view``), Polars' own
    (already so in a read of ``value_layout="view"``; else cast on the decode pool's threads (:meth:`kafkarec.scan.LogScan.batches_in`), the views point
    into the batch's value bytes), and ``pl.from_arrow`` in the source's thread copies nothing
    (from the classic layout it rebuilds every value's view itself, holding the GIL)."""
    pa = require("pyarrow")
    return pa.schema([f.with_type(pa.binary_view()) if f.name in ("key", "value") and f.type == pa.binary() else f
                      for f in schema])


def predicate_bounds(predicate: "pl.Expr", schema, *, error_rows: bool = False,
                     raw_keys: bool = True) -> Tuple[Bounds, Optional["pl.Expr"]]:
    """``(bounds, rest)``: the bounds of the conjuncts of ``predicate`` (:mod:`kafkarec.scan.predicate`),
    and the AND of the conjuncts the read does not apply exactly (None when there is none), the
    very expressions Polars gave, to apply to the rows read.  ``error_rows``: whether the read
    gives error rows (PERMISSIVE), whose null offset and timestamp no bound keeps out; ``raw_keys``:
    whether its key column holds the key bytes (no ``key_format``), else key terms stay Polars'."""
    bounds, rest = Bounds(), []
    for conjunct in _conjuncts(predicate):
        term = _term(conjunct, schema)
        if term is not None:
            bounds = bounds.intersect(term.bounds)
        if not rule.exact(term, error_rows=error_rows, raw_keys=raw_keys):
            rest.append(conjunct)
    residual = None
    for expr in rest:
        residual = expr if residual is None else residual & expr
    return bounds, residual


def _node(expr: "pl.Expr") -> Tuple[str, dict]:
    """``(kind, body)`` of the root of Polars' serialized tree of ``expr``: only read, never
    deserialized (Polars writes a non-finite float literal as JSON null, which it cannot read back)."""
    tree = json.loads(expr.meta.serialize(format="json"))
    if not isinstance(tree, dict) or len(tree) != 1:
        return "", {}
    kind, body = next(iter(tree.items()))
    return kind, body if isinstance(body, dict) else {"value": body}


def _inputs(expr: "pl.Expr") -> List["pl.Expr"]:
    """The input expressions of ``expr``'s root, in order (``meta.pop`` gives them last first)."""
    return list(reversed(expr.meta.pop()))


def _conjuncts(predicate: "pl.Expr") -> Iterator["pl.Expr"]:
    pending = [predicate]
    while pending:
        expr = pending.pop()
        kind, body = _node(expr)
        if kind == "BinaryExpr" and body["op"] in _AND:
            pending += list(reversed(_inputs(expr)))
        else:
            yield expr


def _term(expr: "pl.Expr", schema) -> Optional[rule.Term]:
    """The rule's term of one conjunct, or None."""
    kind, body = _node(expr)
    if kind == "BinaryExpr":
        left, right = _inputs(expr)
        if body["op"] in _OR:
            return rule.either(_term(left, schema), _term(right, schema))
        op = _COMPARISONS.get(body["op"])
        if op is None:
            return None
        column, constant = _column(left), right
        if column is None:
            column, constant, op = _column(right), left, rule.swapped(op)
        if column is None:
            return None
        value = _value(constant, column, schema)
        return None if value is None else rule.compared(column, op, value)
    if kind != "Function":
        return None
    function = body["function"]
    boolean = function.get("Boolean") if isinstance(function, dict) else None
    if not isinstance(boolean, dict):
        return None
    inputs = _inputs(expr)
    column = _column(inputs[0]) if inputs else None
    if column is None:
        return None
    if "IsBetween" in boolean and len(inputs) == 3:
        low_op, high_op = _BETWEEN[boolean["IsBetween"]["closed"]]
        low, high = _value(inputs[1], column, schema), _value(inputs[2], column, schema)
        if low is None or high is None:
            return None
        return rule.both(rule.compared(column, low_op, low), rule.compared(column, high_op, high))
    if "IsIn" in boolean and len(inputs) == 2:
        listed = _constant(inputs[1])
        if listed is None or not isinstance(listed.dtype, pl.List):
            return None
        values = listed.item()
        converted = [_converted(v, values.dtype, column, schema) for v in values.to_list()]
        return None if any(v is None for v in converted) else rule.members(column, converted)
    return None


def _column(expr: "pl.Expr") -> Optional[str]:
    kind, body = _node(expr)
    if kind == "Column" and body.get("value") in rule.COLUMNS:
        return body["value"]
    return None


def _is_constant(expr: "pl.Expr") -> bool:
    """A literal, or a cast or function of constants only (so Polars evaluates it without rows)."""
    kind, _ = _node(expr)
    if kind == "Literal":
        return True
    if kind in ("Cast", "Function"):
        return all(_is_constant(i) for i in _inputs(expr))
    return False


def _constant(expr: "pl.Expr"):
    """The value of a constant expression as Polars evaluates it, a Series for a list; None if not one."""
    if not _is_constant(expr):
        return None
    series = pl.select(expr).to_series()
    if series.len() != 1 or series.null_count():
        return None
    return series


def _value(expr: "pl.Expr", column: str, schema):
    series = _constant(expr)
    if series is None:
        return None
    return _converted(series.item(), series.dtype, column, schema, series)


def _converted(value, dtype, column: str, schema, series=None):
    """``value`` (of Polars type ``dtype``) as :mod:`kafkarec.scan.predicate` takes it for
    ``column``: timestamps as exact milliseconds, only of the column's time zone; None if not one."""
    if value is None:
        return None
    if column == "key":         # Polars compares a Binary column with a String by its UTF-8 bytes
        return rule.key_constant(value, strings=dtype == pl.String)
    if column != "timestamp":
        return value if (dtype.is_integer() or dtype == pl.String) else None
    column_type = schema["timestamp"]
    if series is None:
        series = pl.Series([value], dtype=dtype)
    if isinstance(dtype, pl.Datetime):
        if dtype.time_zone != getattr(column_type, "time_zone", None):
            return None
        return Fraction(series.cast(pl.Int64).item(), _PER_MS[dtype.time_unit])
    if dtype == pl.Date and getattr(column_type, "time_zone", None) is None:
        return series.cast(pl.Int32).item() * 86_400_000
    return None
