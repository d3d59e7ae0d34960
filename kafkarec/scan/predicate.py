"""The one rule turning a predicate's terms into :class:`kafkarec.scan.Bounds`, for every engine.

Each adapter (Polars, DuckDB, Ray, Daft: :mod:`kafkarec.engines`; Spark's ``pushFilters``:
:mod:`spark_udfs.read.pushdown`) translates its own expression form into this module's operations and
nothing else:

* :func:`compared`: a column (``topic``, ``partition``, ``offset``, ``timestamp``, ``key``) compared
  with a constant (``==``, ``<``, ``<=``, ``>``, ``>=``; :func:`swapped` turns ``constant op column``
  around, :func:`negated` is NOT of a comparison);
* :func:`members`: membership in a list of constants;
* :func:`both` and :func:`either`: AND and OR of two terms.

Each answer is a :class:`Term` (or None: no bounds say it, the term stays the engine's):

* ``topic``: ``==`` and membership, exactly; ``partition``: every comparison and membership,
  exactly, as :class:`kafkarec.scan.bounds.Partitions` (a range costs two numbers, whatever it
  spans); OR of two terms on the same one of these columns, exactly;
* ``offset`` and ``timestamp``: a range ``[lo, hi)`` of whole numbers, exactly; membership of
  several values bounds their hull, not exactly (the engine keeps the term);
* ``key``: ``==`` and membership, exactly, as a set of ``bytes`` (OR of key terms too): the core
  compares each record's key before it builds the record, so other keys' values are never built.
  The constant is bytes; a ``str`` is taken as its UTF-8 bytes, which is what an engine means
  only where it compares a binary column with a string by those bytes: an adapter passes a
  string only there (:func:`key_constant`).

**Timestamps** are milliseconds since the epoch in the bounds; a constant of a finer unit (Spark's
and DuckDB's microseconds, a Python ``datetime``, Polars' nanoseconds) comes as an exact
:class:`fractions.Fraction` of a millisecond (:func:`milliseconds`), and a range is rounded to the
whole milliseconds it admits: ``> 5.5`` is ``>= 6``, ``<= 5.5`` is ``< 6``, ``== 5.5`` admits none.
No record is lost and none is added: the rounding is exact.

**Error rows** (``mode="PERMISSIVE"``, and a local read's file that shrank) carry their topic and
partition and a null offset, timestamp and key.  A term on ``topic`` or ``partition`` is exact for
them too; a term on ``offset``, ``timestamp`` or ``key`` is not (the read keeps an error row inside the range,
a comparison with null leaves it out): :func:`exact` says which terms a read with error rows
applies exactly, and the engine applies the others again.

Every number is a Java long in the bounds: :class:`kafkarec.scan.Bounds` clips a bound past that
range where it is made, so ``offset > 9223372036854775807`` keeps no row, exactly.
"""
from __future__ import annotations

import datetime
import math
from fractions import Fraction
from typing import Iterable, NamedTuple, Optional, Union

from kafkarec.scan.bounds import Bounds, Partitions

__all__ = ["COLUMNS", "COMPARISONS", "Term", "compared", "members", "both", "either", "exact", "swapped",
           "negated", "milliseconds", "python_constant", "key_constant"]

#: the columns a predicate can bound
COLUMNS = ("topic", "partition", "offset", "timestamp", "key")
#: comparison operators, in the spelling the adapters map their engine's to
COMPARISONS = ("==", "<", "<=", ">", ">=")
#: ``constant op column`` is ``column SWAPPED[op] constant``
_SWAPPED = {"==": "==", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: ``NOT (column op constant)`` is ``column NEGATED[op] constant`` for a value that is not null (a
#: null is left out either way); NOT of ``==`` is no range
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_ORDERED = ("offset", "timestamp")
#: the columns error rows carry (topic and partition; their offset, timestamp and key are null)
_ERROR_ROWS_CARRY = frozenset(("topic", "partition"))
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=datetime.timezone.utc)
_US = datetime.timedelta(microseconds=1)

Number = Union[int, Fraction]


class Term(NamedTuple):
    """A term's bounds: ``columns`` the columns it bounds; ``exact``: the bounds admit exactly the
    records the term keeps (else they admit more, and the term stays the engine's)."""
    columns: frozenset
    bounds: Bounds
    exact: bool


def swapped(op: str) -> str:
    """The operator of ``constant op column`` written as ``column op' constant``."""
    return _SWAPPED[op]


def negated(op: str) -> Optional[str]:
    """The operator of ``NOT (column op constant)`` (None: no range says it)."""
    return _NEGATED.get(op)


def exact(term: Optional[Term], *, error_rows: bool, raw_keys: bool = True) -> bool:
    """Whether a read applies ``term`` exactly: its bounds are exact, where the read can give
    error rows the term's column is one they carry (see the module docstring), and a term on
    ``key`` only where the read's key column holds the key bytes (``raw_keys``: no ``key_format``;
    a read that decodes its keys takes no key bound, :meth:`kafkarec.scan.ScanConfig.narrow`).
    Adapters ask :meth:`kafkarec.scan.ScanConfig.applies_exactly`."""
    if term is None or not term.exact or (error_rows and not term.columns <= _ERROR_ROWS_CARRY):
        return False
    return raw_keys or "key" not in term.columns


def _range(op: str, value: Number):
    """``(lo, hi)`` of the integers ``x`` with ``x op value``, ``lo`` inclusive, ``hi`` exclusive."""
    if op == ">=":
        return (math.ceil(value), None)
    if op == ">":
        return (math.floor(value) + 1, None)
    if op == "<":
        return (None, math.ceil(value))
    if op == "<=":
        return (None, math.floor(value) + 1)
    lo = math.ceil(value)
    return (lo, lo + 1 if lo == value else lo)        # == a non-integer: no integer


def _ranged(column: str, pair) -> Bounds:
    if column == "partition":
        return Bounds(partitions=Partitions.between(*pair))
    return Bounds(offsets=pair) if column == "offset" else Bounds(timestamps=pair)


def _fits(column: str, value) -> bool:
    """Whether ``value`` is a constant this module takes for ``column``: a str for topic, an int
    for partition and offset, an int or Fraction of milliseconds for timestamp, bytes (or a str,
    its UTF-8) for key."""
    if column == "topic":
        return isinstance(value, str)
    if column == "key":
        return isinstance(value, (bytes, bytearray, str))
    if column == "timestamp" and isinstance(value, Fraction):
        return True
    return column in COLUMNS and isinstance(value, int) and not isinstance(value, bool)


def compared(column: str, op: str, value) -> Optional[Term]:
    """The term ``column op value`` (``value`` as :func:`_fits` takes it), or None where no bounds
    say it."""
    if op not in COMPARISONS or not _fits(column, value):
        return None
    if column == "topic":
        return _term(column, Bounds(topics=frozenset([value]))) if op == "==" else None
    if column == "key":
        return _term(column, Bounds(keys=[_key(value)])) if op == "==" else None
    return _term(column, _ranged(column, _range(op, value)))


def members(column: str, values: Iterable) -> Optional[Term]:
    """The term ``column IN values`` (nulls among them match nothing), or None.  Several values of
    an ordered column bound their hull, not exactly."""
    values = [v for v in values if v is not None]
    if not all(_fits(column, v) for v in values):
        return None
    if column == "topic":
        return _term(column, Bounds(topics=frozenset(values)))
    if column == "partition":
        return _term(column, Bounds(partitions=Partitions.of(values)))
    if column == "key":
        return _term(column, Bounds(keys=[_key(v) for v in values]))
    if column not in _ORDERED or not values:
        return None
    if len(set(values)) == 1:
        return compared(column, "==", values[0])
    hull = compared(column, ">=", min(values)).bounds.intersect(compared(column, "<=", max(values)).bounds)
    return _term(column, hull, exact=False)


def both(a: Optional[Term], b: Optional[Term]) -> Optional[Term]:
    """The term ``a AND b`` (None if either is None: an engine splits its conjuncts itself where
    it keeps the ones no bounds say)."""
    if a is None or b is None:
        return None
    return Term(a.columns | b.columns, a.bounds.intersect(b.bounds), a.exact and b.exact)


def either(a: Optional[Term], b: Optional[Term]) -> Optional[Term]:
    """The term ``a OR b`` where both are exact on the same set column (topics, partitions or
    keys), or None: a union of ranges or of different columns is no :class:`Bounds`."""
    if a is None or b is None or not (a.exact and b.exact) or a.columns != b.columns:
        return None
    if a.columns == {"topic"}:
        return _term("topic", Bounds(topics=a.bounds.topics | b.bounds.topics))
    if a.columns == {"partition"}:
        return _term("partition", Bounds(partitions=a.bounds.partitions | b.bounds.partitions))
    if a.columns == {"key"}:
        return _term("key", Bounds(keys=a.bounds.keys | b.bounds.keys))
    return None


def _key(value) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def key_constant(value, *, strings: bool):
    """A constant compared with ``key`` as :func:`compared` takes it, or None: bytes as they
    are; a str only where the engine compares a binary column with a string by its UTF-8 bytes
    (``strings``), else None (the engine keeps the term)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return value if strings and isinstance(value, str) else None


def _term(column: str, bounds: Bounds, *, exact: bool = True) -> Term:
    return Term(frozenset([column]), bounds, exact)


def milliseconds(moment: datetime.datetime, *, zoned: bool) -> Optional[Fraction]:
    """``moment`` as exact milliseconds since the epoch, the constant a ``timestamp`` term takes:
    ``zoned`` an instant with a zone (Spark's literals: an instant in the session time zone),
    else a naive one read as UTC (the reader's ``timestamp[ms]`` column has no zone, and neither
    have Ray's, Daft's and DuckDB's constants compared with it); None for one of the other kind."""
    if not isinstance(moment, datetime.datetime):
        return None
    if zoned:
        if moment.tzinfo is None or moment.utcoffset() is None:
            return None
        return Fraction((moment - _EPOCH_UTC) // _US, 1000)
    if moment.tzinfo is not None:
        return None
    return Fraction((moment - _EPOCH) // _US, 1000)


def python_constant(column: str, value):
    """A Python constant of DuckDB's, Ray's and Daft's expressions as :func:`compared` and
    :func:`members` take it: for ``timestamp`` a naive ``datetime`` in exact milliseconds
    (:func:`milliseconds`), None for any other kind; for ``key`` bytes only (:func:`key_constant`:
    these engines' string is no binary); other columns' constants as they are."""
    if column == "key":
        return key_constant(value, strings=False)
    if column != "timestamp":
        return value
    return milliseconds(value, zoned=False)
