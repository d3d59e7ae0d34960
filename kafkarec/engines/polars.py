"""Polars over Kafka logs: :func:`scan_log`, a LazyFrame whose predicate, projection and row limit
reach :class:`kafkarec.scan.LogScan` (``polars.io.plugins.register_io_source``).

    >>> import polars as pl
    >>> from kafkarec.engines.polars import scan_log
    >>> lf = scan_log("/var/lib/kafka/data", isolation_level="read_committed")   # doctest: +SKIP
    >>> lf.filter(pl.col("offset").is_between(1000, 1999)).select("offset", "value").collect()  # doctest: +SKIP

Polars hands the source the query's predicate as an expression, with the columns it needs and the
rows it wants.  The predicate is read from Polars' own serialized tree
(``Expr.meta.serialize(format="json")``): each conjunct that compares ``topic``, ``partition``,
``offset`` or ``timestamp`` with a constant (``==``, ``<``, ``<=``, ``>``, ``>=``, ``is_between``,
``is_in``, OR of topics or of partitions) becomes :class:`~kafkarec.scan.Bounds`
(:mod:`kafkarec.engines._bounds`), which the reader resolves through the segments' indexes and
applies exactly; every other conjunct is applied to each batch afterwards, with Polars' own
semantics.  Constants are evaluated by Polars (``pl.select``) from their subtree, so a literal list,
a cast or a parsed date means what it means to Polars.  ``n_rows`` becomes the reader's row limit
when no conjunct is left to apply (else reading stops once that many rows passed the filter), and
``batch_size`` caps the rows of each DataFrame handed back.
"""
from __future__ import annotations

import io
import json
from fractions import Fraction
from typing import Iterator, List, Optional, Tuple

from kafkarec._extras import require
from kafkarec.engines import _bounds
from kafkarec.scan import Bounds, LogScan

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
    ``storage_options``, ``value_format`` ...).  Filters on ``topic``, ``partition``, ``offset`` and
    ``timestamp`` are resolved by the reader; see the module docstring."""
    scan = LogScan(source, **options)
    schema = pl.from_arrow(scan.schema.empty_table()).schema
    exact = scan.config.mode != "PERMISSIVE"      # an error row has no offset for a bound to keep

    def io_source(with_columns: Optional[List[str]], predicate, n_rows: Optional[int],
                  batch_size: Optional[int]) -> Iterator["pl.DataFrame"]:
        bounds, rest = predicate_bounds(predicate, schema) if predicate is not None else (Bounds(), None)
        if not exact:
            rest = predicate
        columns = list(with_columns) if with_columns is not None else list(schema)
        read = columns + [c for c in (rest.meta.root_names() if rest is not None else []) if c not in columns]
        narrowed = scan.narrow(bounds=bounds, columns=read, limit=n_rows if rest is None else None)
        left = n_rows
        for rb in narrowed:
            df = pl.from_arrow(rb)
            if rest is not None:
                df = df.filter(rest)
            df = df.select(columns)
            if left is not None:
                df = df.head(left)
                left -= df.height
            step = batch_size or df.height or 1
            for start in range(0, df.height, step):
                yield df.slice(start, step)
            if left == 0:
                return

    plugins = require("polars.io.plugins")
    return plugins.register_io_source(io_source, schema=schema, explain_name="kafkarec", explain_detail=repr(scan))


def predicate_bounds(predicate: "pl.Expr", schema) -> Tuple[Bounds, Optional["pl.Expr"]]:
    """``(bounds, rest)``: the bounds of the conjuncts of ``predicate`` that bounds say exactly, and
    the AND of the other conjuncts (None when there is none), to apply to the rows read."""
    tree = json.loads(predicate.meta.serialize(format="json"))
    bounds, rest = Bounds(), []
    for term in _conjuncts(tree):
        found = _term(term, schema)
        if found is None:
            rest.append(_expr(term))
        else:
            bounds = bounds.intersect(found)
    residual = None
    for expr in rest:
        residual = expr if residual is None else residual & expr
    return bounds, residual


def _conjuncts(tree: dict) -> Iterator[dict]:
    pending = [tree]
    while pending:
        node = pending.pop()
        binary = node.get("BinaryExpr") if isinstance(node, dict) else None
        if binary is not None and binary["op"] in _AND:
            pending += [binary["right"], binary["left"]]
        else:
            yield node


def _term(node: dict, schema) -> Optional[Bounds]:
    """Bounds of one conjunct, or None."""
    if "BinaryExpr" in node:
        binary = node["BinaryExpr"]
        if binary["op"] in _OR:
            return _bounds.either(_term(binary["left"], schema), _term(binary["right"], schema))
        op = _COMPARISONS.get(binary["op"])
        if op is None:
            return None
        column, constant = _column(binary["left"]), binary["right"]
        if column is None:
            column, constant, op = _column(binary["right"]), binary["left"], _bounds.flipped(op)
        if column is None:
            return None
        value = _value(constant, column, schema)
        return None if value is None else _bounds.compared(column, op, value)
    function = node.get("Function")
    if function is None:
        return None
    kind = function["function"]
    boolean = kind.get("Boolean") if isinstance(kind, dict) else None
    if not isinstance(boolean, dict):
        return None
    inputs = function["input"]
    column = _column(inputs[0]) if inputs else None
    if column is None:
        return None
    if "IsBetween" in boolean and len(inputs) == 3:
        low_op, high_op = _BETWEEN[boolean["IsBetween"]["closed"]]
        low, high = _value(inputs[1], column, schema), _value(inputs[2], column, schema)
        if low is None or high is None:
            return None
        ends = _bounds.compared(column, low_op, low), _bounds.compared(column, high_op, high)
        return None if None in ends else ends[0].intersect(ends[1])
    if "IsIn" in boolean and len(inputs) == 2:
        listed = _constant(inputs[1])
        if listed is None or not isinstance(listed.dtype, pl.List):
            return None
        values = listed.item()
        converted = [_converted(v, values.dtype, column, schema) for v in values.to_list()]
        return None if any(v is None for v in converted) else _bounds.members(column, converted)
    return None


def _column(node) -> Optional[str]:
    if isinstance(node, dict) and isinstance(node.get("Column"), str) and node["Column"] in _bounds.COLUMNS:
        return node["Column"]
    return None


def _is_constant(node) -> bool:
    """A literal, or a cast or function of constants only (so Polars evaluates it without rows)."""
    if not isinstance(node, dict) or len(node) != 1:
        return False
    kind, body = next(iter(node.items()))
    if kind == "Literal":
        return True
    if kind == "Cast":
        return _is_constant(body["expr"])
    if kind == "Function":
        return all(_is_constant(i) for i in body["input"])
    return False


def _constant(node):
    """The value of a constant subtree as Polars evaluates it, a Series for a list; None if not one."""
    if not _is_constant(node):
        return None
    series = pl.select(_expr(node)).to_series()
    if series.len() != 1 or series.null_count():
        return None
    return series


def _value(node, column: str, schema):
    series = _constant(node)
    if series is None:
        return None
    return _converted(series.item(), series.dtype, column, schema, series)


def _converted(value, dtype, column: str, schema, series=None):
    """``value`` (of Polars type ``dtype``) as :mod:`kafkarec.engines._bounds` takes it for
    ``column``: timestamps as exact milliseconds, only of the column's time zone; None if not one."""
    if value is None:
        return None
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


def _expr(node: dict) -> "pl.Expr":
    return pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
