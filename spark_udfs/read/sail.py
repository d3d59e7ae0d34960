"""Sail (``pysail``, a Spark Connect server in Rust) as the server of a read: what it does
otherwise than Spark, judged in one place.

Sail runs a Python data source's methods in its own process (the server's embedded Python, where
``pysail`` is imported: :func:`serving`), so the data source asks this module, never the session:

* it hands ``reader()`` a ``pyarrow.Schema`` (:func:`spark_udfs.read.schema.handed_schema`) and
  compares each batch's types with that schema exactly;
* it calls ``pushFilters`` on any reader that has one (Spark 4.1+ only in its filter pushdown
  planner, :func:`spark_udfs.read.pushdown.planning_with_filters`); neither it nor PySpark's API
  offers a limit to push;
* its ``spark.range`` is one partition, so the cluster's parallelism that ``register`` measures is
  1: a read without ``minPartitions`` aims at its pieces of work instead (:func:`default_aim`);
* it runs Python data sources in batch only (0.7.2): ``readStream`` is planned as a batch read,
  ``reader()`` with the stream's options and never ``streamReader()``; a read that gives a stream's
  own options is refused here (:func:`refuse_stream_options`), naming that limit.
"""
from __future__ import annotations

import sys

__all__ = ["serving", "version", "default_aim", "refuse_stream_options"]


def serving() -> bool:
    """Is this process a Sail server?  (Its data source calls run in the server's own Python.)"""
    return "pysail" in sys.modules


def version() -> str:
    """The serving Sail's version (pysail's distribution), or ``"?"``."""
    from importlib import metadata
    try:
        return metadata.version("pysail")
    except metadata.PackageNotFoundError:
        return "?"


def default_aim(default_parallelism: int, pieces: int) -> int:
    """The task count a read without ``minPartitions`` aims at: the cluster's parallelism, or on
    Sail (whose measured parallelism is 1) the read's pieces of work."""
    return max(default_parallelism, pieces) if serving() else default_parallelism


def refuse_stream_options(given) -> None:
    """On Sail, a read given a stream's own options (``maxOffsetsPerTrigger`` ...) is a
    ``readStream`` that Sail planned as a batch read: refused in one line (Spark's batch reads
    ignore them, as the Kafka source does)."""
    from spark_udfs.read.options import OPTIONS, STREAM_ONLY
    documented = {o.key: o.name for o in OPTIONS}
    stream = sorted(documented.get(k, k) for k in set(given) & STREAM_ONLY)
    if stream and serving():
        from kafkarec.errors import UsageError
        raise UsageError(f"kafkarec data source: Sail {version()} runs Python data sources in batch "
                         f"only (readStream is planned as a batch read; options {', '.join(stream)} "
                         f"are a stream's): use spark.read, or a Spark server for readStream")
