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
