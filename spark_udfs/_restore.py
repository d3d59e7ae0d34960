"""The restore over Spark (:func:`restore`): :func:`kafkarec.restore.restore` with a Spark task per
source partition, for histories beyond one machine.

The driver does what :func:`kafkarec.restore.restore` does around the partitions: it plans them,
checks every group's position before anything is written, and creates the target topics, once;
each task runs :func:`kafkarec.restore.restore_partition` for one partition (its own transactional
producer, whose transactional id names the partition, so order is kept and a re-run or a retried
task fences the one before it and resumes from the progress on the target); the driver joins the
partitions' offset maps and writes what the command line writes (:func:`kafkarec.restore.finish`).
The spec and the plan reach the executors pickled; a task's kafkarec error comes back to the driver
as itself, raised there once every task has answered.
"""
from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Iterator, List, NamedTuple, Optional, Union

if TYPE_CHECKING:
    from kafkarec.restore import Finished, RestoreResult, RestoreSpec, SourcePartition

__all__ = ["restore", "SparkRestore"]


class SparkRestore(NamedTuple):
    """What :func:`restore` did: the :class:`kafkarec.restore.RestoreResult` (plan, each partition's
    summary, the topics created, the offset map) and the groups' outcome
    (:class:`kafkarec.restore.Finished`: the positions set or written, the share groups')."""
    result: "RestoreResult"
    finished: "Finished"


def restore(spark, spec: Union["RestoreSpec", str], target: Optional[str] = None, *, offset_map: Optional[str] = None,
            groups: bool = True, groups_csv: Optional[str] = None, share_groups_csv: Optional[str] = None,
            wheelhouse: Optional[str] = None, ship: bool = True, **options) -> SparkRestore:
    """Restore a history into another cluster with a Spark task per source partition
    (docs/restore.md#over-spark).  ``spec``: a :class:`kafkarec.restore.RestoreSpec`, or the source
    history (a path or URI every executor reaches) with ``target`` (bootstrap servers) and
    ``options``, :meth:`RestoreSpec.of`'s keywords.  ``offset_map``, ``groups_csv``,
    ``share_groups_csv``: the command line's ``--offset-map``, ``--groups-csv``,
    ``--share-groups-csv`` (files on the driver); ``groups=False``: ``--no-groups``.  Call
    :func:`spark_udfs.register` first (kafkarec on the executors); ``ship`` sends the restore's client
    (confluent-kafka) from ``wheelhouse`` (or beside kafkarec's wheel) to the executors too."""
    from kafkarec import restore as R
    from kafkarec._extras import require
    from kafkarec.errors import UsageError
    from spark_udfs.ship import shipping
    from spark_udfs.ship.runtime import boot_module
    if isinstance(spec, R.RestoreSpec):
        if target is not None or options:
            raise UsageError("restore: a RestoreSpec, or a source and target with options, not both")
    else:
        spec = R.RestoreSpec.of(spec, target, **options)
    if str(spark.conf.get("spark.speculation", "false")).strip().lower() == "true":
        # two attempts of one partition would fence each other; the loser's refusal is not a failure
        raise UsageError("restore: spark.speculation is on; a partition's restore must run as one attempt at a "
                         "time (turn it off for this application)")
    require("confluent_kafka")          # the driver creates the topics and translates the groups
    require("pyarrow")
    if ship:
        shipping.ship(spark, wheelhouse=wheelhouse, projects=boot_module("wheels").RESTORE_CLIENT)
    plan = R.plan(spec)
    if groups:
        R.check_groups(spec, plan)      # before anything is written
    expected = shipping.expected_fingerprint()

    def run_partitions(s: "RestoreSpec", parts: List["SourcePartition"]):
        return _run(spark, s, parts, expected)

    result = R.restore(spec, source_plan=plan, run_partitions=run_partitions)
    finished = R.finish(spec, result, offset_map=offset_map, groups=groups, groups_csv=groups_csv,
                        share_groups_csv=share_groups_csv)
    return SparkRestore(result, finished)


def _run(spark, spec: "RestoreSpec", parts: List["SourcePartition"], expected: str):
    """Each partition's :func:`kafkarec.restore.restore_partition` in a Spark task of its own, in
    the order of ``parts``; the first kafkarec error of any task raised here, once all answered."""
    shipped, tasks = pickle.dumps((spec, parts)), len(parts)

    def kafkarec_restore(batches):
        return _answers(batches, shipped, expected)

    # spark.range splits [0, tasks) evenly: one partition index per task
    rows = spark.range(tasks, numPartitions=tasks).mapInArrow(kafkarec_restore, "id long, answer binary").collect()
    answers = {r["id"]: pickle.loads(r["answer"]) for r in rows}
    out = []
    for i in range(tasks):
        answer = answers.get(i)
        if answer is None:
            from kafkarec.errors import RestoreError
            raise RestoreError(spec.target, f"no answer from the task of source partition "
                                            f"{parts[i].topic}-{parts[i].partition}")
        if isinstance(answer, BaseException):
            raise answer
        out.append(answer)
    return out


def _answers(batches, shipped: bytes, expected) -> Iterator:
    """A task's answers: for each partition index its input holds, the pickled
    ``(PartitionSummary, OffsetMap)`` of its restore, or the kafkarec error that stopped it (a
    refusal, a missing client: the same again on a retry).  Anything else raises, and Spark
    retries the task: the progress on the target keeps it exactly once."""
    import pyarrow as pa
    from spark_udfs.ship.runtime import ensure
    ensure(expected)
    from kafkarec.errors import KafkaRecError, RestoreError
    spec, parts = pickle.loads(shipped)
    for batch in batches:
        ids = batch.column("id").to_pylist()
        answers = []
        for i in ids:
            part = parts[i]
            try:
                from kafkarec.restore import restore_partition
                answer: object = restore_partition(spec, part)
            except KafkaRecError as exc:
                answer = exc
            try:
                answers.append(pickle.dumps(answer))
            except Exception:       # an error whose fields do not pickle: its words, where it happened
                answers.append(pickle.dumps(RestoreError(spec.target, f"{type(answer).__name__}: {answer}",
                                                         topic=part.target_topic, partition=part.partition)))
        yield pa.RecordBatch.from_arrays([pa.array(ids, pa.int64()), pa.array(answers, pa.binary())],
                                         names=["id", "answer"])
