"""Kafka logs as a Dask DataFrame: :func:`read_log`.

One Dask partition is one piece of work of :class:`kafkarec.scan.LogScan` (a byte range of one
segment, :meth:`~kafkarec.scan.LogScan.pieces`), read where Dask runs the task by
:meth:`~kafkarec.scan.LogScan.read_piece` (a thread of the local scheduler, or a worker process of
``distributed``).  What reaches the reader:

* the projection: the partitions are made by ``dd.from_map`` with a function that takes
  ``columns=`` (:class:`PieceReader`), so dask-expr's optimizer pushes the columns a query reads
  into it and only those are decoded;
* ``filters`` in ``read_parquet``'s form (``[("offset", ">=", 10), ...]``, a list of such lists
  for OR): the terms on ``topic``, ``partition``, ``offset``, ``timestamp`` and ``key`` become the
  scan's :class:`~kafkarec.scan.Bounds` (:mod:`kafkarec.scan.predicate`, the rule of every engine),
  so segments and index ranges that cannot hold such records are not read; what the bounds do not
  apply exactly Dask applies to the rows read, so the rows are exact.

The columns are pandas' ``ArrowDtype`` of the scan's Arrow schema (zero-copy from the reader's
batches, nullable: PERMISSIVE's error rows have a null offset and time).
"""
from __future__ import annotations

import datetime
import numbers
from fractions import Fraction
from typing import Any, List, Optional, Sequence, Tuple

from kafkarec._extras import require
from kafkarec.engines import task_scan_options
from kafkarec.errors import UsageError
from kafkarec.scan import Bounds, LogScan, ScanConfig, predicate as rule

dd = require("dask.dataframe")
pd = require("pandas")
_base = require("dask.base")
_dask = require("dask")

__all__ = ["read_log", "filter_bounds", "PieceReader", "arrow_meta"]

#: ``read_parquet``'s comparison operators in :mod:`kafkarec.scan.predicate`'s spelling
_OPS = {"=": "==", "==": "==", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
#: every operator of ``read_parquet``'s filters (the others bound nothing: Dask applies them)
_ALL_OPS = frozenset(_OPS) | {"!=", "in", "not in", "is", "is not"}

Filters = Optional[Sequence[Any]]


def _frame(table) -> "pd.DataFrame":
    """An Arrow table as pandas, every column ``ArrowDtype``: the dtypes come from the schema alone,
    never from the rows (numpy's int64 would turn into float64 where an error row's offset is null),
    so every partition has the meta's dtypes."""
    return table.to_pandas(types_mapper=pd.ArrowDtype, ignore_metadata=True)


def arrow_meta(scan: LogScan) -> "pd.DataFrame":
    """The empty frame of ``scan``'s schema (Dask's ``meta``): made from the schema, no record read."""
    return _frame(scan.schema.empty_table())


class PieceReader:
    """Reads one piece of work of ``scan`` into a pandas DataFrame: the function ``dd.from_map``
    maps over the pieces.  Its ``columns=`` keyword is what dask-expr looks for to push a projection
    into the read (``from_map`` reads the signature; dask-expr no longer honours the older
    ``DataFrameIOFunction`` protocol's ``project_columns``)."""

    def __init__(self, scan: LogScan):
        self.scan = scan

    def __call__(self, piece, columns: Optional[List[str]] = None) -> "pd.DataFrame":
        scan = self.scan
        # (dask-expr passes the columns a query reads, never none: it pushes no empty projection)
        if columns is not None and list(columns) != scan.columns:
            scan = scan.narrow(columns=list(columns))
        pa = require("pyarrow")
        return _frame(pa.Table.from_batches(list(scan.read_piece(piece)), schema=scan.schema))

    def __dask_tokenize__(self):
        # the config is a frozen dataclass of plain values (paths, bounds, options): it names the
        # read, and Dask's names stay the same from one graph of it to the next
        return (type(self).__name__, _base.normalize_token(self.scan.config))


def read_log(source, columns: Optional[Sequence[str]] = None, filters: Filters = None,
             **options) -> "dd.DataFrame":
    """A Dask DataFrame of the records of Kafka logs, one Dask partition per piece of work (see the
    module docstring).

    ``columns``: the columns (default all); ``filters``: ``read_parquet``'s form, a list of
    ``(column, op, value)`` (AND), or a list of such lists (OR of ANDs), ``op`` one of ``=``,
    ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in``, ``is``, ``is not``;
    timestamps are naive ``datetime`` (or ``pandas.Timestamp``) constants, as the column's
    ``timestamp[ms]``.  ``options``: :class:`kafkarec.scan.LogScan`'s (``topics``, ``partitions``,
    ``bounds``, ``isolation_level``, ``mode``, ``storage_options``, ``threads`` ...; ``threads``
    defaults to 1: Dask runs the partitions side by side, each task on a thread of its own).

    Divisions are unknown (see :func:`_divisions`); ``set_index("offset", sorted=True)`` on a read
    of one partition gives them, at the cost of a pass over the rows."""
    if "columns" in options or "limit" in options:
        raise UsageError("kafkarec.engines.dask.read_log: columns are read_log's own argument, and a row "
                         "limit is Dask's (head)")
    scan = LogScan(source, **task_scan_options(options, "kafkarec.engines.dask"))
    names = scan.columns
    wanted = names if columns is None else list(columns)
    unknown = [c for c in wanted if c not in names]
    if unknown:
        raise UsageError(f"read_log: column(s) {unknown} are not read; available: {names}")
    dnf = _normalized(filters, names)
    bounds, rest = filter_bounds(dnf, config=scan.config)
    if dnf:
        scan = scan.narrow(bounds=bounds)
    meta = arrow_meta(scan)
    # the columns read: the query's, in its order (the read gives them so, not a reordering
    # projection after it), and those the filters left to Dask compare
    needed = wanted + [c for c in names if c not in wanted and any(c == t[0] for conj in rest for t in conj)]
    pieces = scan.pieces()
    if not pieces:
        # from_map needs one item at least: no piece is no row, in the schema's dtypes
        frame = dd.from_pandas(meta[needed], npartitions=1)
    else:
        # without dask's string conversion: the columns are ArrowDtype already (strings are
        # ``ArrowDtype(pa.string())``, which it leaves as they are), so it would change nothing in a
        # frame, yet add a task a partition (a compute does not fuse it into the read: dask/distributed#8833)
        with _dask.config.set({"dataframe.convert-string": False}):
            frame = dd.from_map(PieceReader(scan), pieces, meta=meta, divisions=_divisions(scan, pieces),
                                label="read-kafka-log", enforce_metadata=False,
                                columns=None if needed == names else needed)
    if rest:
        frame = frame[_mask(frame, rest)]
    return frame if list(frame.columns) == wanted else frame[wanted]


def _divisions(scan: LogScan, pieces) -> None:
    """None: the divisions are unknown, even where one Kafka partition is read.  An index on
    ``offset`` would fit Dask's model only in part: a piece is a byte range, whose offsets the plan
    knows only as its segment's ``[base offset, next segment's base)`` (several windows of one
    segment share that range, and Dask's divisions must rise from one partition to the next); the
    last division, the partition's highest offset, is known only once its last batch is read; a
    PERMISSIVE read's error rows have no offset to place; and the frame's columns would depend on
    how many partitions the bounds keep (``offset`` an index for one, a column for several)."""
    return None


def _normalized(filters: Filters, columns: Sequence[str]) -> List[List[tuple]]:
    """``filters`` as a list of conjunctions (``read_parquet``'s DNF), each term checked."""
    if not filters:
        return []
    dnf = [list(filters)] if all(isinstance(t, tuple) for t in filters) else [list(c) for c in filters]
    for conj in dnf:
        for term in conj:
            if not (isinstance(term, tuple) and len(term) == 3):
                raise UsageError(f"read_log: a filter is (column, op, value), not {term!r}")
            column, op, _ = term
            if op not in _ALL_OPS:
                raise UsageError(f"read_log: filter operator {op!r} is not one of {sorted(_ALL_OPS)}")
            if column not in columns:
                raise UsageError(f"read_log: filter on {column!r}, which is not read; available: {list(columns)}")
    return dnf


def _constant(column: str, value):
    """A filter's constant as :mod:`kafkarec.scan.predicate` takes it, or None."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)           # numpy's integers too
    if column == "timestamp":
        if isinstance(value, pd.Timestamp):
            # exact to the nanosecond (a datetime holds microseconds): a naive one only, as the column
            return None if value.tzinfo is not None else Fraction(value.as_unit("ns").value, 10**6)
        if not isinstance(value, datetime.datetime):
            return None
    return rule.python_constant(column, value)


def _term(column: str, op: str, value) -> Optional[rule.Term]:
    """The rule's term of one ``(column, op, value)``, or None."""
    if op in ("in",):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            return None
        values = [_constant(column, v) for v in value]
        return None if None in values else rule.members(column, values)
    if op not in _OPS:
        return None
    constant = _constant(column, value)
    return None if constant is None else rule.compared(column, _OPS[op], constant)


def filter_bounds(filters: Filters, *, config: Optional[ScanConfig] = None) -> Tuple[Bounds, List[List[tuple]]]:
    """The bounds of ``read_parquet``-form ``filters`` (a list of terms, or a list of such lists
    for OR), and the filters Dask must still apply to the rows read, in the same form (``[]``:
    none; the terms a read of ``config`` applies exactly are left out).  A single conjunction
    bounds the read by its terms on ``topic``, ``partition``, ``offset``, ``timestamp`` and
    ``key``; an OR bounds it only where the rule says so (topics, partitions or keys of one
    column), else not at all."""
    dnf = filters if filters and not all(isinstance(t, tuple) for t in filters) else ([list(filters)] if filters else [])
    exact = (lambda t: rule.exact(t, error_rows=False)) if config is None else config.applies_exactly
    if not dnf:
        return Bounds(), []
    terms = [[_term(*t) for t in conj] for conj in dnf]
    if len(dnf) == 1:
        bounds = Bounds()
        for term in terms[0]:
            if term is not None:
                bounds = bounds.intersect(term.bounds)
        return bounds, ([[t for t, term in zip(dnf[0], terms[0]) if not exact(term)]]
                        if not all(exact(term) for term in terms[0]) else [])
    whole = None
    for i, conj in enumerate(terms):
        both = conj[0]
        for term in conj[1:]:
            both = rule.both(both, term)
        whole = both if i == 0 else rule.either(whole, both)
    if whole is None:
        return Bounds(), [list(c) for c in dnf]
    return whole.bounds, ([] if exact(whole) else [list(c) for c in dnf])


def _mask(frame, dnf: List[List[tuple]]):
    """The Dask boolean Series of ``dnf`` on ``frame``; a comparison with a null (an error row's
    offset) keeps no row, as SQL's and ``read_parquet``'s filters."""
    either = None
    for conj in dnf:
        both = None
        for column, op, value in conj:
            series = frame[column]
            if op in ("in", "not in"):
                test = series.isin(list(value))
                # NOT IN of a null is null (no row), as the comparisons' nulls below
                test = (~test & series.notnull()) if op == "not in" else test
            elif op in ("is", "is not"):
                if value is not None:
                    raise UsageError(f"read_log: {op!r} compares with None only, not {value!r}")
                test = series.isna() if op == "is" else series.notnull()
            else:
                test = {"=": series.__eq__, "==": series.__eq__, "!=": series.__ne__, "<": series.__lt__,
                        "<=": series.__le__, ">": series.__gt__, ">=": series.__ge__}[op](value)
            test = test.fillna(False)
            both = test if both is None else both & test
        either = both if either is None else either | both
    return either
