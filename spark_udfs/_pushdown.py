"""Spark's pushed filters as the reader's bounds (``DataSourceReader.pushFilters``, Spark 4.1+).

Spark hands a Python data source the conjuncts of a query's ``WHERE`` that compare one column
with literals (``pyspark.sql.datasource``: ``EqualTo``, ``EqualNullSafe``, ``In``,
``GreaterThan(OrEqual)``, ``LessThan(OrEqual)``, ``IsNull``, ``IsNotNull``, each maybe under
``Not``; a disjunction is never pushed, a conjunction arrives as its parts).  Those on
``topic``, ``partition``, ``offset``, ``timestamp`` and ``timestampMs`` become one
:class:`kafkarec.scan.Bounds` - the typed bounds the read's options give too, intersected with
them - so the read resolves them through the segments' indexes before any segment byte is read.
Every other filter, and every filter the bounds do not apply exactly, goes back to Spark, which
applies it to the rows read:

* ``topic``, ``partition`` (``=``, ``IN``, ``<``, ``<=``): exact, whole partitions are left out;
  an error row carries its topic and partition.
* ``offset``: a range, applied to every record; returned to Spark as well when the read can
  give error rows (PERMISSIVE, and a local read's file that shrank), whose offset is null and
  which a comparison leaves out; ``IN`` prunes to its smallest and largest value and is
  returned.
* ``timestamp``, ``timestampMs``: a range of milliseconds (Spark's microsecond literal rounded
  so that no record it admits is lost) whose lower bound is resolved as Kafka's
  ``offsetsForTimes`` (every record before that offset is earlier); always returned to Spark:
  CreateTime timestamps are not ordered in the log, so the records past that offset, and any
  upper bound, are Spark's to filter, and a record timestamp outside Spark's range is a null
  ``timestamp`` (``timestampMs`` keeps it).  A literal Spark sends without a zone
  (``TIMESTAMP_NTZ``) is not pushed.
* anything else (``<>``, ``NOT IN``, ``IS NULL``, ``LIKE``, a literal of another type, any other
  column): not pushed.
"""
from __future__ import annotations

import datetime
import functools
import sys
from typing import List, NamedTuple, Optional

__all__ = ["PUSHED_COLUMNS", "Pushed", "push", "push_into", "listable", "planning_with_filters"]

PUSHED_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestampMs")
# where Spark runs pushFilters: only when spark.sql.python.filterPushdown.enabled is on
_PUSHDOWN_PLANNER = "pyspark.sql.worker.data_source_pushdown_filters"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_US = datetime.timedelta(microseconds=1)
# Not(a < v) is a >= v for a value that is not null (null stays out either way)
_FLIPPED = {"GreaterThan": "LessThanOrEqual", "GreaterThanOrEqual": "LessThan",
            "LessThan": "GreaterThanOrEqual", "LessThanOrEqual": "GreaterThan"}


class Pushed(NamedTuple):
    """What :func:`push` made of Spark's filters: the ``bounds`` the read is narrowed to (None:
    none of them bounds the read), and the filters Spark still applies (``kept``: the very
    objects it gave, as ``pushFilters`` must return them)."""
    bounds: object
    kept: list


def planning_with_filters() -> bool:
    """Is this process Spark's filter pushdown planner?  Spark 4.1+ refuses a reader that
    implements ``pushFilters`` unless ``spark.sql.python.filterPushdown.enabled`` is on
    (``DATA_SOURCE_PUSHDOWN_DISABLED``), and the planner's Python process cannot read the
    session's configuration; only with it on does Spark plan a read in this module's process,
    so the reader offers ``pushFilters`` there and nowhere else."""
    main = sys.modules.get("__main__")
    return (_PUSHDOWN_PLANNER in sys.modules
            or getattr(getattr(main, "__spec__", None), "name", None) == _PUSHDOWN_PLANNER)


def push_into(config, filters, *, listable: bool = True) -> list:
    """``pushFilters`` of the data source's reader (:class:`spark_udfs._datasource.FilteringKafkaRecReader`):
    Spark's filters narrow ``config`` 's bounds (the options' intersected with them); returns the
    filters Spark still applies.  A read of local files with filters pushed is planned over a
    listing, as only that resolves bounds through the side files; one that uses an option only
    the local reader takes (not ``listable``: ``pathGlobFilter``, ``decode`` ...) pushes nothing.
    A keyed state (``view=latest``) takes only whole topics (and without ``cdc``, whose truncates
    reach every partition of a topic, whole partitions): a record bound would change which record
    is a key's latest."""
    if not listable:
        return list(filters)
    columns = PUSHED_COLUMNS
    if config.view == "latest":
        columns = ("topic",) if config.cdc is not None else ("topic", "partition")
    pushed = push(filters, columns=columns, error_rows=config.mode != "DROPMALFORMED")
    if pushed.bounds is None:
        return list(filters)
    config.bounds = pushed.bounds.intersect(config.bounds)
    config.listed = True
    return pushed.kept


def listable(spec) -> bool:
    """Whether the read of ``spec`` (a :class:`spark_udfs._spec.ReadSpec`) may be planned over a
    listing: it is already, or it gives no option only the local reader takes."""
    from spark_udfs._spec import OPTIONS
    local_only = {o.name.lower() for o in OPTIONS if "R" not in o.readers and "L" in o.readers}
    return spec.listed or not (spec.given & local_only)


def push(filters, *, columns=PUSHED_COLUMNS, error_rows: bool = True) -> Pushed:
    """:class:`Pushed` of Spark's ``filters`` (their AND).  ``columns``: those a bound may be on
    (a keyed state takes only whole partitions); ``error_rows``: whether the read can give rows
    whose ``offset`` and ``timestamp`` are null."""
    from kafkarec.scan import Bounds
    bounds: List[Bounds] = []
    kept = []
    for f in filters:
        bound, exact = _bound(f, columns, error_rows)
        if bound is not None:
            bounds.append(bound)
        if not exact:
            kept.append(f)
    return Pushed(functools.reduce(Bounds.intersect, bounds) if bounds else None, kept)


def _bound(f, columns, error_rows: bool):
    """``(Bounds or None, whether the bound is the filter exactly)`` of one filter."""
    name, negated = type(f).__name__, False
    if name == "Not":
        f, name, negated = f.child, type(f.child).__name__, True
        if name not in _FLIPPED:
            return None, False             # <>, NOT IN, IS NOT NULL ...: no range holds them
        name = _FLIPPED[name]
    attribute = getattr(f, "attribute", ())
    if len(attribute) != 1 or attribute[0] not in columns:
        return None, False
    column = attribute[0]
    if name == "EqualNullSafe":            # <=> a value: = (null <=> v is false, as null = v)
        name = "EqualTo"
    if name == "In":
        values = tuple(f.value)
    elif name in ("EqualTo", "GreaterThan", "GreaterThanOrEqual", "LessThan", "LessThanOrEqual"):
        values = (f.value,)
    else:
        return None, False                 # IS NULL, IS NOT NULL, LIKE ...
    if not values:
        return None, False
    if column == "topic":
        return _topic_bound(name, values)
    if column == "timestamp":
        micros = [_micros(v) for v in values]
        if None in micros:
            return None, False
        return _range_bound("timestamps", name, micros, 1000), False
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None, False
    if column == "partition":
        return _partition_bound(name, values)
    if column == "timestampMs":
        return _range_bound("timestamps", name, values, 1), False
    return _range_bound("offsets", name, values, 1), not error_rows and (name != "In" or len(set(values)) == 1)


def _topic_bound(name: str, values):
    from kafkarec.scan import Bounds
    if name not in ("EqualTo", "In") or not all(isinstance(v, str) for v in values):
        return None, False
    return Bounds(topics=frozenset(values)), True


def _partition_bound(name: str, values):
    """A partition is a number from 0 on: ``=``, ``IN`` and an upper bound are sets of them."""
    from kafkarec.scan import Bounds
    if name in ("EqualTo", "In"):
        return Bounds(partitions=frozenset(values)), True
    if name in ("LessThan", "LessThanOrEqual"):
        end = values[0] + (name == "LessThanOrEqual")
        return Bounds(partitions=frozenset(range(max(0, end)))), True
    return None, False


def _range_bound(field: str, name: str, values, unit: int):
    """The ``[lo, hi)`` bound on ``field`` of ``column <name> values``, with the literals in
    ``unit`` s of the bound's (1000: Spark's microseconds against milliseconds), rounded so that
    every whole bound value the comparison admits stays in."""
    from kafkarec.scan import Bounds
    lo_v, hi_v = min(values), max(values)
    ceil_lo = -(-lo_v // unit)
    after_hi = hi_v // unit + 1             # the first whole value above hi_v
    lo = hi = None
    if name in ("EqualTo", "In"):
        lo, hi = ceil_lo, after_hi
    elif name == "GreaterThan":
        lo = lo_v // unit + 1
    elif name == "GreaterThanOrEqual":
        lo = ceil_lo
    elif name == "LessThan":
        hi = -(-hi_v // unit)
    else:                                   # LessThanOrEqual
        hi = after_hi
    return Bounds(**{field: (lo, hi)})


def _micros(value) -> Optional[int]:
    """Microseconds since the epoch of a zoned timestamp literal (Spark sends an instant for a
    ``timestamp`` comparison, its string literals read in the session time zone), exactly;
    None for anything else."""
    if not isinstance(value, datetime.datetime) or value.tzinfo is None or value.utcoffset() is None:
        return None
    return (value - _EPOCH) // _US

