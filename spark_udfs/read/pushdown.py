"""Spark's pushed filters as the reader's bounds (``DataSourceReader.pushFilters``, Spark 4.1+).

Spark hands a Python data source the conjuncts of a query's ``WHERE`` that compare one column
with literals (``pyspark.sql.datasource``: ``EqualTo``, ``EqualNullSafe``, ``In``,
``GreaterThan(OrEqual)``, ``LessThan(OrEqual)``, ``IsNull``, ``IsNotNull``, each maybe under
``Not``; a disjunction is never pushed, a conjunction arrives as its parts).  Those on
``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampMs`` and ``key`` become one
:class:`kafkarec.scan.Bounds` - the typed bounds the read's options give too, intersected with
them - so the read resolves them through the segments' indexes before any segment byte is read.
The rule is :mod:`kafkarec.scan.predicate`, the one every engine adapter uses; this module is
Spark's side of it, a table from Spark's filter classes to the rule's operations (``EqualTo``,
``EqualNullSafe``, the four comparisons: a comparison; ``Not`` of one: its negation; ``In``:
membership).  Every other filter, and every filter the bounds do not apply exactly, goes back to
Spark, which applies it to the rows read:

* ``topic`` (``=``, ``IN``), ``partition`` (``=``, ``IN``, ``<``, ``<=``, ``>``, ``>=``): exact,
  whole partitions are left out (a partition range is an interval, whatever it spans); an error
  row carries its topic and partition.
* ``offset``: a range, applied to every record; returned to Spark as well when the read can
  give error rows (PERMISSIVE, and a local read's file that shrank), whose offset is null and
  which a comparison leaves out; ``IN`` prunes to its smallest and largest value and is
  returned.
* ``timestamp``, ``timestampMs``: a range of milliseconds (Spark's microsecond literal rounded
  by the rule's one rounding: to the whole milliseconds it admits) whose lower bound is
  resolved as Kafka's ``offsetsForTimes`` (every record before that offset is earlier); always
  returned to Spark: this reader does not filter rows by time (CreateTime timestamps are not
  ordered in the log, so the records past that offset, and any upper bound, are Spark's to
  filter), and a record timestamp outside Spark's range is a null ``timestamp``
  (``timestampMs`` keeps it).  A literal Spark sends without a zone (``TIMESTAMP_NTZ``) is
  not pushed.
* ``key`` (``=``, ``IN``, binary literals): exact, the core builds only the records with those
  keys, and with the read option ``partitioner=murmur2`` only the partitions Kafka's default
  partitioner names for them are opened; returned to Spark as well when the read can give error
  rows (their key is null).
* a bound past the long range (``offset = 9223372036854775807`` is pushed as ``>=`` it and ``<``
  one more) is clipped where bounds are made (:class:`kafkarec.scan.Bounds`).
* anything else (``<>``, ``NOT IN``, ``IS NULL``, ``LIKE``, a literal of another type, any other
  column): not pushed.
"""
from __future__ import annotations

import functools
import sys
from typing import List, NamedTuple

__all__ = ["PUSHED_COLUMNS", "Pushed", "push", "push_into", "listable", "planning_with_filters"]

PUSHED_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestampMs", "key")
# where Spark runs pushFilters: only when spark.sql.python.filterPushdown.enabled is on
_PUSHDOWN_PLANNER = "pyspark.sql.worker.data_source_pushdown_filters"
#: Spark's comparison filters as the rule's operators (``In`` is the rule's membership; ``Not`` of a
#: comparison is the rule's negation).  ``EqualNullSafe`` is ``=`` here: ``null <=> v`` is false,
#: as ``null = v`` leaves the row out too
_COMPARISONS = {"EqualTo": "==", "EqualNullSafe": "==", "GreaterThan": ">", "GreaterThanOrEqual": ">=",
                "LessThan": "<", "LessThanOrEqual": "<="}
#: Spark's columns as the rule's (``timestamp`` Spark's microseconds, ``timestampMs`` the log's ms)
_RULE_COLUMN = {"topic": "topic", "partition": "partition", "offset": "offset", "timestamp": "timestamp",
                "timestampMs": "timestamp", "key": "key"}


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
    so the reader offers ``pushFilters`` there and nowhere else.  A Sail server
    (:mod:`spark_udfs.read.sail`) is always such a planner."""
    from spark_udfs.read import sail
    if sail.serving():      # Sail calls pushFilters on any reader that has one
        return True
    main = sys.modules.get("__main__")
    return (_PUSHDOWN_PLANNER in sys.modules
            or getattr(getattr(main, "__spec__", None), "name", None) == _PUSHDOWN_PLANNER)


def push_into(spec, config, filters, *, listable: bool = True):
    """``pushFilters`` of the data source's reader (:class:`spark_udfs.read.datasource.FilteringKafkaRecReader`):
    ``(config, kept)``, the read's :class:`kafkarec.scan.ScanConfig` with Spark's filters' bounds
    intersected with its own (a new config: ``dataclasses.replace``), and the filters Spark still
    applies.  A read of local files with bounds is planned over a listing (the config says so:
    :attr:`kafkarec.scan.ScanConfig.listed`), as only that resolves bounds through the side
    files; one that uses an option only the local reader takes (not ``listable``:
    ``pathGlobFilter``, ``decode`` ...) pushes nothing.  A keyed state (``view=latest`` of
    ``spec``) takes only whole topics (and without ``cdc``, whose truncates reach every partition
    of a topic, whole partitions): a record bound would change which record is a key's latest."""
    if not listable:
        return config, list(filters)
    columns = PUSHED_COLUMNS
    if spec.view == "latest":
        columns = ("topic",) if spec.cdc is not None else ("topic", "partition")
    pushed = push(filters, columns=columns, error_rows=config.error_rows)
    if pushed.bounds is None:
        return config, list(filters)
    return config.narrow(bounds=pushed.bounds), pushed.kept


def listable(spec) -> bool:
    """Whether the read of ``spec`` (a :class:`spark_udfs.read.spec.ReadSpec`) may be planned over a
    listing: it is already, or it gives no option only the local reader takes."""
    from spark_udfs.read.options import LOCAL_ONLY
    return spec.config.listed or not (spec.given & LOCAL_ONLY)


def push(filters, *, columns=PUSHED_COLUMNS, error_rows: bool = True) -> Pushed:
    """:class:`Pushed` of Spark's ``filters`` (their AND).  ``columns``: those a bound may be on
    (a keyed state takes only whole partitions); ``error_rows``: whether the read can give rows
    whose ``offset`` and ``timestamp`` are null."""
    from kafkarec.scan import Bounds
    from kafkarec.scan import predicate
    bounds: List[Bounds] = []
    kept = []
    for f in filters:
        term = _term(f, columns)
        if term is not None:
            bounds.append(term.bounds)
        # this reader leaves time to Spark: it does not filter rows by it, and Spark's timestamp
        # is null where a record's is outside Spark's range
        if not predicate.exact(term, error_rows=error_rows) or "timestamp" in term.columns:
            kept.append(f)
    return Pushed(functools.reduce(Bounds.intersect, bounds) if bounds else None, kept)


def _term(f, columns):
    """The :class:`kafkarec.scan.predicate.Term` of one of Spark's filters, or None: Spark's
    filter classes translated by the tables above, the literals by :func:`_constant`."""
    from kafkarec.scan import predicate
    name = type(f).__name__
    if name == "Not":
        f, name = f.child, type(f.child).__name__
        op = predicate.negated(_COMPARISONS.get(name, ""))
        if op is None:
            return None                    # <>, NOT IN, IS NOT NULL ...: no range holds them
    else:
        op = _COMPARISONS.get(name)
    attribute = getattr(f, "attribute", ())
    if (op is None and name != "In") or len(attribute) != 1 or attribute[0] not in columns:
        return None                        # IS (NOT) NULL, LIKE, other columns ...
    column = attribute[0]
    values = tuple(f.value) if op is None else (f.value,)
    constants = [_constant(column, v) for v in values]
    if not constants or None in constants:
        return None
    column = _RULE_COLUMN[column]
    return predicate.compared(column, op, constants[0]) if op else predicate.members(column, constants)


def _constant(column: str, value):
    """A literal of Spark's filter as the rule takes it, or None: ``timestamp`` an instant with a
    zone (Spark sends one, its string literals read in the session time zone; one without a zone,
    ``TIMESTAMP_NTZ``, is not pushed), ``timestampMs`` and the numbers an int, ``topic`` a str,
    ``key`` bytes (Spark's binary literal; a string compared with the binary key is cast by Spark
    before any filter is pushed, a str literal is not pushed)."""
    from kafkarec.scan import predicate
    if column == "timestamp":
        return predicate.milliseconds(value, zoned=True)
    if column == "key":
        return predicate.key_constant(value, strings=False)
    if column == "topic":
        return value if isinstance(value, str) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
