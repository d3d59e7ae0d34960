"""One Spark task per piece of kafkarec's work (a census's topic-partition, a restore's source
partition): :func:`per_task`, the scaffold :mod:`spark_udfs._census` and
:mod:`spark_udfs._restore` share.

The driver pickles what the tasks need once (a plan, a spec) and runs ``spark.range(n)`` cut in
``n`` partitions, so each task is handed one index; on the executor the task first checks that
it loads the driver's kafkarec build (:func:`spark_udfs.ship.runtime.ensure`: the payload is read
by that kafkarec), then unpickles the payload and yields ``work(payload, index)``'s Arrow record
batches.  The rows come back to the driver as Spark's ``collect`` gives them.
"""
from __future__ import annotations

import pickle
from typing import Any, Callable, Iterator, List, Optional

__all__ = ["per_task"]


def per_task(spark, payload: Any, tasks: int, work: Callable[[Any, int], Iterator], schema: str, *,
             expected: Optional[str], name: str) -> List:
    """The rows of ``work(payload, i)`` for ``i`` in ``range(tasks)``, each index in a Spark task
    of its own (``schema``: the rows' DDL, as ``mapInArrow`` takes it; ``expected``: the driver's
    kafkarec build, :func:`spark_udfs.ship.shipping.expected_fingerprint`, each task's to load;
    ``name``: the Python function Spark's plan and UI show).  ``work`` runs on an executor, with
    kafkarec loaded: a function of an importable module (``spark_udfs`` ships there).  Spark's own
    failure of the job (a task failing past its attempts) raises here, as ``collect`` raises it."""
    shipped = pickle.dumps(payload)

    def task(batches):
        return _task(batches, shipped, expected, work)
    task.__name__ = task.__qualname__ = name
    # spark.range splits [0, tasks) evenly: one index per task
    return spark.range(tasks, numPartitions=tasks).mapInArrow(task, schema).collect()


def _task(batches, shipped: bytes, expected: Optional[str], work) -> Iterator:
    """A task's rows: ``work``'s for each index its input holds."""
    from spark_udfs.ship.runtime import ensure
    ensure(expected)
    payload = pickle.loads(shipped)
    for batch in batches:
        for i in batch.column("id").to_pylist():
            yield from work(payload, i)
