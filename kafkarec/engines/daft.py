"""Kafka logs as a Daft DataFrame: :class:`KafkaLogSource` (a Daft ``DataSource``) and :func:`read_log`.

Each Daft task is one piece of work of :class:`kafkarec.scan.LogScan` (a byte range of one segment,
:meth:`~kafkarec.scan.LogScan.pieces`), read by :meth:`~kafkarec.scan.LogScan.read_piece`.  Daft hands
its pushdowns to :meth:`KafkaLogSource.get_tasks`:

* ``columns``: only those columns (and those the filter reads) are decoded;
* ``filters``: the conjuncts on ``topic``, ``partition``, ``offset`` and ``timestamp`` become the
  scan's :class:`~kafkarec.scan.Bounds`, so segments and index ranges that cannot hold such records
  are not read; Daft applies the whole filter to the rows after the scan, as for every source;
* ``limit``: each task stops after that many rows, when the filter is exactly its bounds (no filter,
  or one made only of such conjuncts; in PERMISSIVE mode only of conjuncts on topic and partition,
  as error rows have no offset or time) - otherwise the limit would count rows the filter may still
  drop;
* ``count(*)``: with no filter Daft hands the count down (``supports_count_pushdown``): one task a
  topic-partition answers its count (:meth:`kafkarec.scan.LogScan.count`: from the batch headers
  where that is exact, otherwise by reading the offsets), and Daft sums them.

The tasks come in ``(topic, partition, offset)`` order, each one segment range of one partition, so
the source declares range clustering on those columns (``get_clustering_keys``): a distributed
runner need not shuffle to sort by them.  Not in PERMISSIVE mode (an error row has no offset), nor
over several paths (two log dirs may hold the same partition).
"""
from __future__ import annotations

from typing import Any, AsyncIterator, List, Optional, Tuple

from kafkarec._extras import require
from kafkarec.engines import task_scan_options
from kafkarec.scan import Bounds, LogScan, predicate as rule

_daft = require("daft")
_recordbatch = require("daft.recordbatch")
_source = require("daft.io.source")
_visitor = require("daft.expressions.visitor")
_clustering = require("daft.io.clustering")

__all__ = ["KafkaLogSource", "read_log", "filter_bounds"]


class KafkaLogSource(_source.DataSource):
    """A Daft ``DataSource`` over Kafka logs: ``source`` and ``options`` as
    :class:`kafkarec.scan.LogScan` takes them (``columns``, ``topics``, ``partitions``, ``bounds``,
    ``limit``, ``isolation_level``, ``storage_options``, ``mode`` ...)."""

    def __init__(self, source, **options):
        self._scan = LogScan(source, **task_scan_options(options, "kafkarec.engines.daft"))

    @property
    def name(self) -> str:
        return "KafkaLogSource"

    @property
    def schema(self):
        return _daft.Schema.from_pyarrow_schema(self._scan.schema)

    def planned(self, pushdowns) -> LogScan:
        """The scan that Daft's pushdowns narrow this source to."""
        # PERMISSIVE's error rows have no offset or time, a typed key is no key bound: Daft's
        # filter may drop rows the bounds keep
        config = self._scan.config
        bounds, exact = (Bounds(), True) if pushdowns.filters is None else \
            filter_bounds(pushdowns.filters, error_rows=config.error_rows, raw_keys=config.raw_keys)
        columns = None
        if pushdowns.columns is not None:
            needed = set(pushdowns.columns)
            if pushdowns.filters is not None:
                needed |= _Columns().visit(pushdowns.filters)
            # no column at all (a count): the offsets, cheapest to decode, carry the rows
            columns = [c for c in self._scan.columns if c in needed] or ["offset"]
        limit = pushdowns.limit if exact else None
        return self._scan.narrow(bounds=bounds, columns=columns, limit=limit)

    def supports_count_pushdown(self) -> bool:
        return True

    def get_clustering_keys(self):
        paths = self._scan.config.paths
        # one log dir or partition folder: each topic-partition once, a topic name from its folder
        if self._scan.config.mode == "PERMISSIVE" or len(paths) != 1 or str(paths[0]).endswith(".log"):
            return None
        return _clustering.ClusteringKeys.range("topic", "partition", "offset")

    async def get_tasks(self, pushdowns) -> AsyncIterator[_source.DataSourceTask]:
        if pushdowns.aggregation is not None:
            # count(*) with no filter (Daft pushes down no other aggregation, nor one under a filter)
            column = pushdowns._to_pypushdowns().aggregation_required_column_names()[0]
            scan = self._scan.narrow(columns=["offset"])
            for group in _by_partition(scan.pieces()):
                yield KafkaCountTask(scan, group, column)
            return
        scan = self.planned(pushdowns)
        # (topic, partition) order, each one's pieces in log order: the declared clustering
        for group in _by_partition(scan.pieces()):
            for piece in group:
                yield KafkaLogTask(scan, piece)


def _by_partition(pieces) -> List[list]:
    """The pieces of each log (topic-partition), in ``(topic, partition)`` order."""
    logs: dict = {}
    for piece in pieces:
        logs.setdefault(piece.key, []).append(piece)
    return sorted(logs.values(), key=lambda g: (g[0].topic or "", -1 if g[0].partition is None else g[0].partition))


class KafkaLogTask(_source.DataSourceTask):
    """One piece of work of a :class:`~kafkarec.scan.LogScan`."""

    def __init__(self, scan: LogScan, piece):
        self._scan = scan
        self._piece = piece

    @property
    def schema(self):
        return _daft.Schema.from_pyarrow_schema(self._scan.schema)

    async def read(self):
        for rb in self._scan.read_piece(self._piece):
            yield _recordbatch.RecordBatch.from_arrow_record_batches([rb], rb.schema)


class KafkaCountTask(_source.DataSourceTask):
    """The rows of one topic-partition's pieces, counted (:meth:`~kafkarec.scan.LogScan.count`):
    one row, the count in ``column`` (Daft's count type, uint64), which Daft sums."""

    def __init__(self, scan: LogScan, pieces, column: str):
        self._scan = scan
        self._pieces = pieces
        self._column = column

    @property
    def schema(self):
        pa = require("pyarrow")
        return _daft.Schema.from_pyarrow_schema(pa.schema([(self._column, pa.uint64())]))

    async def read(self):
        pa = require("pyarrow")
        rb = pa.record_batch([pa.array([self._scan.count(self._pieces)], pa.uint64())], [self._column])
        yield _recordbatch.RecordBatch.from_arrow_record_batches([rb], rb.schema)


def read_log(source, **options) -> "_daft.DataFrame":
    """A Daft DataFrame of the records of Kafka logs (see the module docstring); ``options`` as
    :class:`kafkarec.scan.LogScan` takes them."""
    return KafkaLogSource(source, **options).read()


def filter_bounds(expr, *, error_rows: bool = False, raw_keys: bool = True) -> Tuple[Bounds, bool]:
    """The bounds of a Daft filter's top-level AND chain (its terms on ``topic``, ``partition``,
    ``offset`` and ``timestamp``: :mod:`kafkarec.scan.predicate`), and whether the read applies
    the whole filter exactly (every term one the read applies exactly; ``error_rows``: whether
    the read gives error rows, PERMISSIVE; ``raw_keys``: whether its key column holds the key bytes)."""
    terms = _Terms().visit(expr)
    bounds = Bounds()
    for term in terms:
        if term is not None:
            bounds = bounds.intersect(term.bounds)
    return bounds, all(rule.exact(t, error_rows=error_rows, raw_keys=raw_keys) for t in terms)


class _Operand(_visitor.ExpressionVisitor):
    """``("col", name)``, ``("lit", value)`` or None for any other expression."""

    def visit_col(self, name: str):
        return ("col", name)

    def visit_lit(self, value: Any):
        return ("lit", value)

    def visit_alias(self, expr, alias: str):
        return None

    def visit_cast(self, expr, dtype):
        return None

    def visit_function(self, name: str, args: list):
        return None

    def visit_coalesce(self, args: list):
        return None


class _Columns(_visitor.ExpressionVisitor):
    """The columns an expression reads (Daft's own ``Pushdowns.filter_required_column_names`` fails
    on ``is_in``, whose items come as a list)."""

    def visit_col(self, name: str) -> set:
        return {name}

    def visit_lit(self, value: Any) -> set:
        return set()

    def visit_alias(self, expr, alias: str) -> set:
        return self.visit(expr)

    def visit_cast(self, expr, dtype) -> set:
        return self.visit(expr)

    def visit_function(self, name: str, args: list) -> set:
        return set().union(*(self.visit(a) if not isinstance(a, list) else self.visit_function(name, a)
                             for a in args))

    def visit_coalesce(self, args: list) -> set:
        return self.visit_function("coalesce", args)


class _Terms(_visitor.ExpressionVisitor):
    """The rule's term of each term of a filter's top-level AND chain, or None."""

    def visit_and(self, left, right) -> List[Optional[rule.Term]]:
        return self.visit(left) + self.visit(right)

    def visit_or(self, left, right):
        return [rule.either(self._whole(left), self._whole(right))]

    def _whole(self, expr) -> Optional[rule.Term]:
        terms = self.visit(expr)
        whole = terms[0]
        for term in terms[1:]:
            whole = rule.both(whole, term)
        return whole

    def _compare(self, left, right, op: str):
        a, b = _Operand().visit(left), _Operand().visit(right)
        if a and b and a[0] == "lit" and b[0] == "col":
            a, b, op = b, a, rule.swapped(op)
        if not (a and b and a[0] == "col" and b[0] == "lit"):
            return [None]
        value = rule.python_constant(a[1], b[1])
        return [None if value is None else rule.compared(a[1], op, value)]

    def visit_equal(self, left, right):
        return self._compare(left, right, "==")

    def visit_less_than(self, left, right):
        return self._compare(left, right, "<")

    def visit_less_than_or_equal(self, left, right):
        return self._compare(left, right, "<=")

    def visit_greater_than(self, left, right):
        return self._compare(left, right, ">")

    def visit_greater_than_or_equal(self, left, right):
        return self._compare(left, right, ">=")

    def visit_between(self, expr, lower, upper):
        return self._compare(expr, lower, ">=") + self._compare(expr, upper, "<=")

    def visit_is_in(self, expr, items):
        column = _Operand().visit(expr)
        values = [_Operand().visit(i) for i in items]
        if not (column and column[0] == "col" and all(v and v[0] == "lit" for v in values)):
            return [None]
        constants = [rule.python_constant(column[1], v[1]) for v in values]
        return [None if None in constants else rule.members(column[1], constants)]

    def visit_col(self, name: str):
        return [None]

    def visit_lit(self, value: Any):
        return [None]

    def visit_alias(self, expr, alias: str):
        return [None]

    def visit_cast(self, expr, dtype):
        return [None]

    def visit_function(self, name: str, args: list):
        return [None]

    def visit_coalesce(self, args: list):
        return [None]
