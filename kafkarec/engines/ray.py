"""Kafka logs as a Ray Dataset: :class:`KafkaLogDatasource` and :func:`read_log`.

Each read task is one piece of work of :class:`kafkarec.scan.LogScan` (a byte range of one segment,
:meth:`~kafkarec.scan.LogScan.pieces`), read where Ray runs it by
:meth:`~kafkarec.scan.LogScan.read_piece`.  Ray's optimizer pushes into the datasource:

* a projection (``ds.select_columns([...])``): only those columns are decoded;
* a filter expression (``ds.filter(expr=col("offset") >= 100)``): its conjuncts on ``topic``,
  ``partition``, ``offset`` and ``timestamp`` become the scan's :class:`~kafkarec.scan.Bounds`
  (segments and index ranges that cannot hold such records are not read), and the whole expression is
  applied to each block, so the rows are exact whatever the expression holds;
* a row limit (``ds.limit(n)``): each task stops reading after ``n`` rows.

Bounds, columns and every other :class:`~kafkarec.scan.LogScan` option may be given as arguments too.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, List, Optional

from kafkarec._extras import require
from kafkarec.engines import task_scan_options
from kafkarec.scan import Bounds, LogScan, predicate as rule

ray_data = require("ray.data")
_block = require("ray.data.block")
_expressions = require("ray.data.expressions")

__all__ = ["KafkaLogDatasource", "read_log", "predicate_bounds"]

#: Ray's comparison operations in :mod:`kafkarec.scan.predicate`'s spelling
_OPS = {"eq": "==", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class KafkaLogDatasource(ray_data.Datasource):
    """A :class:`ray.data.Datasource` over Kafka logs: ``source`` and ``options`` as
    :class:`kafkarec.scan.LogScan` takes them (``columns``, ``topics``, ``partitions``, ``bounds``,
    ``limit``, ``isolation_level``, ``storage_options``, ``mode`` ...)."""

    def __init__(self, source, **options):
        super().__init__()
        self._scan = LogScan(source, **task_scan_options(options, "kafkarec.engines.ray"))
        self._projection_map = None
        # (scan, its pieces), listed once: Ray asks for them several times (sizes, read tasks), on
        # this datasource and on the copies its projection pushdown makes (a pushed predicate
        # makes a new scan, listed anew)
        self._plan: Optional[tuple] = None

    def get_name(self) -> str:
        return "KafkaLog"

    def supports_projection_pushdown(self) -> bool:
        return True

    def supports_predicate_pushdown(self) -> bool:
        return True

    def apply_predicate(self, predicate_expr) -> "KafkaLogDatasource":
        clone = super().apply_predicate(predicate_expr)
        clone._scan = self._scan.narrow(bounds=predicate_bounds(predicate_expr))
        return clone

    def _planned(self) -> LogScan:
        """The scan with the projection pushed into it, decoding what the predicate reads too."""
        needed = set(self._output_columns())
        if self._predicate_expr is not None:
            needed |= set(_columns_of(self._predicate_expr))
        # no column at all (``count()``): the offsets, cheapest to decode, carry the rows
        decoded = [c for c in self._scan.columns if c in needed] or ["offset"]
        return self._scan if decoded == self._scan.columns else self._scan.narrow(columns=decoded)

    def _pieces(self) -> list:
        """The scan's pieces of work, listed once per scan (the columns decoded do not change
        what is read, so every projection's scan reads these pieces)."""
        if self._plan is None or self._plan[0] is not self._scan:
            self._plan = (self._scan, self._scan.pieces())
        return self._plan[1]

    def _output_columns(self) -> List[str]:
        """The columns of the blocks, in the projection's order (Ray drops its own projection)."""
        if self._projection_map is None:
            return list(self._scan.columns)
        return [c for c in self._projection_map if c in self._scan.columns]

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return sum(p.bytes for p in self._pieces())

    def get_read_tasks(self, parallelism: int, per_task_row_limit: Optional[int] = None,
                       data_context=None) -> List["ray_data.ReadTask"]:
        scan = self._planned()
        out = self._output_columns()
        schema = require("pyarrow").schema([scan.schema.field(c) for c in out])
        predicate = None if self._predicate_expr is None else self._predicate_expr.to_pyarrow()
        tasks = []
        for piece in self._pieces():
            meta = _block.BlockMetadata(num_rows=None, size_bytes=int(piece.bytes), exec_stats=None, input_files=None)
            tasks.append(ray_data.ReadTask(
                lambda piece=piece: _blocks(scan, piece, predicate, schema),
                meta, schema=schema, per_task_row_limit=per_task_row_limit))
        return tasks


def _blocks(scan: LogScan, piece, predicate, schema) -> Iterator:
    """One task's blocks: the piece's batches, filtered by the pushed predicate, projected; a
    task whose rows the filter empties gives one empty block of the schema (a block without
    columns would not concatenate with the others)."""
    pa = require("pyarrow")
    columns = schema.names
    rows = 0
    for rb in scan.read_piece(piece):
        table = pa.Table.from_batches([rb])
        if predicate is not None:
            table = table.filter(predicate)
        if table.column_names != columns:
            # Ray's own select: no column at all (``count()``) keeps the rows in a stub column
            table = _block.BlockAccessor.for_block(table).select(columns)
        if table.num_rows:
            rows += table.num_rows
            yield table
    if not rows and columns:
        yield schema.empty_table()


def read_log(source, *, override_num_blocks: Optional[int] = None, ray_remote_args: Optional[dict] = None,
             **options) -> "ray_data.Dataset":
    """A Ray Dataset of the records of Kafka logs (see the module docstring); ``options`` as
    :class:`kafkarec.scan.LogScan` takes them."""
    return ray_data.read_datasource(KafkaLogDatasource(source, **options),
                                    override_num_blocks=override_num_blocks, ray_remote_args=ray_remote_args)


def predicate_bounds(expr) -> Bounds:
    """The bounds of a Ray expression's top-level AND chain: its terms on ``topic``, ``partition``,
    ``offset`` and ``timestamp`` (:mod:`kafkarec.scan.predicate`); the other terms bound nothing.
    Ray's filter is applied to every block whatever the bounds, so a term's bounds need not be exact."""
    E = _expressions
    if isinstance(expr, E.BinaryExpr) and expr.op.value == "and":
        return predicate_bounds(expr.left).intersect(predicate_bounds(expr.right))
    term = _term(expr)
    return Bounds() if term is None else term.bounds


def _term(expr) -> Optional[rule.Term]:
    """The rule's term of one Ray expression, or None."""
    E = _expressions
    if not isinstance(expr, E.BinaryExpr):
        return None
    op = expr.op.value
    if op == "or":
        return rule.either(_term(expr.left), _term(expr.right))
    left, right = expr.left, expr.right
    if op == "in" and isinstance(left, E.ColumnExpr) and isinstance(right, E.LiteralExpr):
        values = [rule.python_constant(left.name, v) for v in right.value]
        return None if None in values else rule.members(left.name, values)
    if op not in _OPS:
        return None
    op = _OPS[op]
    if isinstance(right, E.ColumnExpr) and isinstance(left, E.LiteralExpr):
        left, right, op = right, left, rule.swapped(op)
    if not (isinstance(left, E.ColumnExpr) and isinstance(right, E.LiteralExpr)):
        return None
    value = rule.python_constant(left.name, right.value)
    return None if value is None else rule.compared(left.name, op, value)


def _columns_of(expr) -> List[str]:
    """The columns an expression reads."""
    E = _expressions
    if isinstance(expr, E.ColumnExpr):
        return [expr.name]
    names = []
    if dataclasses.is_dataclass(expr):
        for f in dataclasses.fields(expr):
            value = getattr(expr, f.name, None)
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, E.Expr):
                    names += _columns_of(v)
    return names
