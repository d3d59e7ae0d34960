"""The census over Spark (:func:`census`): :func:`kafkarec.census.census` with a Spark task per
topic-partition, for histories beyond one machine.

The driver plans the census (:func:`kafkarec.census.counts.plan_census`: the one reader's listing
and pieces, no record read); each task reads one topic-partition's pieces through
:class:`kafkarec.scan.LogScan` (:func:`kafkarec.census.counts.partition_census`: a partition's keys
are judged in log order, so a partition is never split) and returns its row; the driver puts the
rows together as the local census does (:func:`kafkarec.census.counts.assemble`).  The document is
the local census's, figure for figure.  The plan reaches the executors pickled as bytes and is
read there once kafkarec is loaded (``spark_udfs.register`` ships it), as the data source's config:
the tasks are :func:`spark_udfs._tasks.per_task`'s.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from kafkarec.census import Census

__all__ = ["census"]


def census(spark, source, *, bounds=None, selection=None, storage_options: Optional[dict] = None,
           tiered_storage: Optional[str] = None, verify_crc: bool = True, max_exact_keys: Optional[int] = None,
           partitioner: bool = True, num_partitions: Optional[dict] = None,
           as_of_ms: Optional[int] = None) -> "Census":
    """The census of the logs at ``source`` (a path or URI the executors reach, or a list), read
    by Spark's executors, a task per topic-partition; the keywords are
    :func:`kafkarec.census.census`'s.  Call :func:`spark_udfs.register` first (kafkarec on the
    executors)."""
    from kafkarec.census.counts import DEFAULT_MAX_EXACT_KEYS, assemble, plan_census
    from spark_udfs._tasks import per_task
    from spark_udfs.ship.shipping import expected_fingerprint
    plan = plan_census(source, bounds=bounds, selection=selection, storage_options=storage_options,
                       tiered_storage=tiered_storage, verify_crc=verify_crc,
                       max_exact_keys=DEFAULT_MAX_EXACT_KEYS if max_exact_keys is None else max_exact_keys,
                       partitioner=partitioner, num_partitions=num_partitions, as_of_ms=as_of_ms)
    if not plan.groups:
        return assemble(plan, [])
    rows = per_task(spark, plan, len(plan.groups), _rows, "row string", expected=expected_fingerprint(),
                    name="kafkarec_census")
    return assemble(plan, [json.loads(r["row"]) for r in rows])


def _rows(plan, i: int):
    """The census row (JSON text) of the plan's group ``i``, in a task (:func:`spark_udfs._tasks.per_task`)."""
    import pyarrow as pa
    from kafkarec.census.counts import partition_census
    yield pa.RecordBatch.from_arrays([pa.array([json.dumps(partition_census(plan, plan.groups[i]))], pa.string())],
                                     names=["row"])
