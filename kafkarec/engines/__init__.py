"""Engines over the one Arrow stream reader (:class:`kafkarec.scan.LogScan`): each adapter turns its
engine's projection, row limit and predicate on ``topic``, ``partition``, ``offset`` and
``timestamp`` into the reader's columns, limit and :class:`kafkarec.scan.Bounds`, and leaves the
rest of the predicate to the engine (docs/engines.md).

* :mod:`kafkarec.engines.polars` -- ``scan_log``: a Polars LazyFrame (``register_io_source``);
* :mod:`kafkarec.engines.duckdb` -- ``register`` / ``LogSource``: a DuckDB table whose filters
  and projection reach the reader.
* :mod:`kafkarec.engines.ray` -- ``read_log`` / ``KafkaLogDatasource``: a Ray Dataset whose read
  tasks are the reader's pieces of work;
* :mod:`kafkarec.engines.daft` -- ``read_log`` / ``KafkaLogSource``: a Daft DataFrame, one task per
  piece of work;
* :mod:`kafkarec.engines.dask` -- ``read_log``: a Dask DataFrame, one Dask partition per piece of
  work (``dd.from_map``), ``read_parquet``-form filters.

Each module imports its engine (``pip install "kafkarec[engines]"``); importing this package
imports neither.
"""
from __future__ import annotations

__all__ = ["task_scan_options", "MAP_CACHE_BYTES", "BUFFER_CACHE_BYTES", "VALUE_LAYOUT"]

#: what a source held across queries (a registered DuckDB table, a Polars LazyFrame) keeps between
#: them unless told otherwise: the bytes of local windows' maps left open (ScanConfig.map_cache_bytes;
#: docs/engines.md, "Windows kept mapped") and of the column buffers the engine let go of
#: (ScanConfig.buffer_cache_bytes; docs/engines.md, "Column buffers kept")
MAP_CACHE_BYTES = 1 << 30
BUFFER_CACHE_BYTES = 256 << 20
#: and the layout of ``key`` and ``value`` they read (ScanConfig.value_layout): Arrow's views, which
#: Polars holds natively and DuckDB imports in fewer instructions than offsets (docs/engines.md, "The
#: view layout")
VALUE_LAYOUT = "view"


def task_scan_options(options: dict, engine: str) -> dict:
    """``options`` of :class:`kafkarec.scan.LogScan` for an engine whose tasks each read a piece on a
    CPU of their own (Ray, Daft, Dask): one decoding thread a task unless ``threads`` is given (not
    the driver's CPU count, computed there and shipped in the pickled scan), and ``key``, ``value``
    in the classic layout: those tasks filter and take rows with pyarrow's kernels, which have none
    for ``binary_view`` (``value_layout="view"`` is refused, not left to fail in a task)."""
    from kafkarec.errors import UsageError
    if options.get("value_layout", "copy") != "copy":
        raise UsageError(f"{engine}: value_layout={options['value_layout']!r} is not taken here: its tasks "
                         "filter rows with pyarrow, which has no kernel for binary_view; leave it 'copy'")
    return {"threads": 1, **options}
