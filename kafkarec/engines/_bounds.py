"""An engine's filter as :class:`kafkarec.scan.Bounds`: the one translation the Ray and Daft adapters
share.  Each adapter walks its engine's expression tree and hands over the conjuncts it recognizes as
``(column, op, value)`` (``op``: ``==``, ``<``, ``<=``, ``>``, ``>=``, ``in``; the column on the
left); :func:`bounds_of` makes the bounds that admit every row satisfying them.  Offsets are integers
and timestamps whole milliseconds (``timestamp[ms]``), so a bound on a fractional value rounds to the
same rows: ``offset > 9.5`` is ``offset >= 10``, ``timestamp < 10:00:00.0005`` is ``< 10:00:00.001``.
"""
from __future__ import annotations

import datetime
import math
from fractions import Fraction
from typing import Iterable, Optional, Tuple

from kafkarec.scan import Bounds

__all__ = ["BOUNDED_COLUMNS", "bounds_of"]

#: The columns a bound is made of.
BOUNDED_COLUMNS = ("topic", "partition", "offset", "timestamp")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MICROSECOND = datetime.timedelta(microseconds=1)


def bounds_of(conjuncts: Iterable[Tuple[str, str, object]]) -> Tuple[Bounds, bool]:
    """The bounds of ``conjuncts`` (ANDed), and whether they are exact: the rows a scan with those
    bounds returns are exactly the rows that satisfy every conjunct (then a row limit may be pushed
    too).  A conjunct on another column or with a value of another kind bounds nothing and makes the
    result inexact; the engine's own filter keeps the rows right."""
    sets = {"topic": None, "partition": None}
    ranges = {"offset": [None, None], "timestamp": [None, None]}
    exact = True
    for column, op, value in conjuncts:
        if column in sets and op in ("==", "in"):
            values = _members(value, column, op)
            if values is None:
                exact = False
            else:
                sets[column] = values if sets[column] is None else sets[column] & values
            continue
        if column in ranges:
            span = _span(column, op, value)
            if span is not None:
                lo, hi, fits = span
                bound = ranges[column]
                if lo is not None:
                    bound[0] = lo if bound[0] is None else max(bound[0], lo)
                if hi is not None:
                    bound[1] = hi if bound[1] is None else min(bound[1], hi)
                exact = exact and fits
                continue
        exact = False
    for bound in ranges.values():
        if bound[0] is not None and bound[1] is not None and bound[1] < bound[0]:
            bound[1] = bound[0]         # contradictory bounds: an empty range
    return Bounds.of(topics=sets["topic"], partitions=sets["partition"], offsets=tuple(ranges["offset"]),
                     timestamps=tuple(ranges["timestamp"])), exact


def _members(value, column: str, op: str) -> Optional[frozenset]:
    items = [value] if op == "==" else value
    try:
        items = list(items)
    except TypeError:
        return None
    if column == "topic":
        if not all(isinstance(v, str) for v in items):
            return None
    elif not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        return None
    return frozenset(items)


def _span(column: str, op: str, value) -> Optional[Tuple[Optional[int], Optional[int], bool]]:
    """``(lo, hi, exact)``: the integer range ``[lo, hi)`` of ``column op value``."""
    if op == "in":
        points = [_number(column, v) for v in _listed(value)]
        if not points or any(p is None for p in points):
            return None
        whole = [int(p) for p in points if p.denominator == 1]
        if not whole:
            return (0, 0, True)
        lo, hi = min(whole), max(whole) + 1
        return (lo, hi, hi - lo == len(set(whole)))
    x = _number(column, value)
    if x is None:
        return None
    if op == "==":
        return (int(x), int(x) + 1, True) if x.denominator == 1 else (0, 0, True)
    if op == ">=":
        return (math.ceil(x), None, True)
    if op == ">":
        return (math.floor(x) + 1, None, True)
    if op == "<":
        return (None, math.ceil(x), True)
    if op == "<=":
        return (None, math.floor(x) + 1, True)
    return None


def _listed(value):
    try:
        return list(value)
    except TypeError:
        return []


def _number(column: str, value) -> Optional[Fraction]:
    """An offset as a number, a timestamp as milliseconds since the epoch (a naive datetime is UTC,
    as Arrow's ``timestamp[ms]`` without a zone); None for a value of another kind."""
    if column == "timestamp":
        if not isinstance(value, datetime.datetime):
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return Fraction((value - _EPOCH) // _MICROSECOND, 1000)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not math.isfinite(value)):
        return None
    return Fraction(value)
