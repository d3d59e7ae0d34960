"""The one rule every engine adapter uses to turn a predicate's terms into :class:`kafkarec.scan.Bounds`.

Each adapter walks its engine's own predicate tree and hands the terms it recognises here: a
comparison of ``topic``, ``partition``, ``offset`` or ``timestamp`` with a constant
(:func:`compared`), membership in a list of constants (:func:`members`), and OR of two such terms
(:func:`either`).  Every answer is exact -- the rows the bounds admit are the rows the term keeps
(none of the four columns is ever null in a scan that is not PERMISSIVE) -- or None, where the
term stays the engine's to evaluate.  Timestamps are milliseconds since the epoch in the bounds;
an engine's constant of a finer unit comes as an exact :class:`fractions.Fraction` of a
millisecond, so a bound between two milliseconds keeps its meaning.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterable, Optional, Union

from kafkarec.scan import Bounds

__all__ = ["COLUMNS", "COMPARISONS", "compared", "members", "either", "flipped", "python_constant"]

#: the columns a predicate can bound
COLUMNS = ("topic", "partition", "offset", "timestamp")
#: comparison operators, in the spelling the adapters map their engine's to
COMPARISONS = ("==", "<", "<=", ">", ">=")
_FLIPPED = {"==": "==", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ORDERED = ("offset", "timestamp")

Number = Union[int, Fraction]


def flipped(op: str) -> str:
    """The operator of ``constant op column`` written as ``column op' constant``."""
    return _FLIPPED[op]


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


def compared(column: str, op: str, value) -> Optional[Bounds]:
    """Bounds of ``column op value`` (``value``: a str for topic, an int for partition and offset,
    an int or Fraction of milliseconds for timestamp), or None where no bounds say it exactly."""
    if op not in COMPARISONS:
        return None
    if column == "topic":
        return Bounds.of(topics=[value]) if op == "==" and isinstance(value, str) else None
    if column == "partition":
        return Bounds.of(partitions=[value]) if op == "==" and _integer(value) else None
    if column in _ORDERED and (_integer(value) or (column == "timestamp" and isinstance(value, Fraction))):
        pair = _range(op, value)
        return Bounds.of(offsets=pair) if column == "offset" else Bounds.of(timestamps=pair)
    return None


def members(column: str, values: Iterable) -> Optional[Bounds]:
    """Bounds of ``column`` IN ``values`` (nulls among them match nothing), or None."""
    values = [v for v in values if v is not None]
    if column == "topic" and all(isinstance(v, str) for v in values):
        return Bounds.of(topics=values)
    if column == "partition" and all(_integer(v) for v in values):
        return Bounds.of(partitions=values)
    if column in _ORDERED and len(values) == 1:
        return compared(column, "==", values[0])
    return None


def either(a: Optional[Bounds], b: Optional[Bounds]) -> Optional[Bounds]:
    """Bounds of ``a OR b`` where both bound the same set column (topics or partitions) and
    nothing else, or None: a union of ranges or of different columns is no :class:`Bounds`."""
    if a is None or b is None:
        return None
    for field in ("topics", "partitions"):
        if Bounds(**{field: getattr(a, field)}) == a and Bounds(**{field: getattr(b, field)}) == b \
                and getattr(a, field) is not None and getattr(b, field) is not None:
            return Bounds(**{field: getattr(a, field) | getattr(b, field)})
    return None


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def python_constant(column: str, value):
    """A Python constant of Ray's and Daft's expressions as :func:`compared` and :func:`members` take
    it: for ``timestamp`` a ``datetime`` in milliseconds since the epoch, exact to the microsecond,
    naive as the column (``timestamp[ms]``, UTC without a zone) - None for any other kind or one with a
    zone, which stays the engine's; other columns' constants as they are."""
    import datetime
    if column != "timestamp":
        return value
    if not isinstance(value, datetime.datetime) or value.tzinfo is not None:
        return None
    return Fraction((value - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1), 1000)
