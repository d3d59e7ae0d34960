"""The restore over Spark (:func:`restore`): :func:`kafkarec.restore.restore` with a Spark task per
source partition, for histories beyond one machine.

The driver does what :func:`kafkarec.restore.restore` does around the partitions: it plans them,
checks every group's position before anything is written, and creates the target topics, once;
each task runs :func:`kafkarec.restore.restore_partition` for one partition (its own transactional
producer, whose transactional id names the partition, so order is kept and a re-run or a retried
task fences the one before it and resumes from the progress on the target); the driver joins the
partitions' offset maps and writes what the command line writes (:func:`kafkarec.restore.finish`).
The spec and the plan reach the executors pickled; a task's permanent kafkarec error comes back to
the driver as itself, raised there once every task has answered; a retriable one (the restore's
rule: :attr:`kafkarec.errors.KafkaRecError.retriable`) fails the task, which Spark tries again.
Each offset map comes back as packed runs in rows of bounded size (:meth:`OffsetMap.pack`).
"""
from __future__ import annotations

import pickle
import re
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
    if spec.source_registry is not None:
        # each task would register its ids on its own, and the driver's evidence would hold none of them
        raise UsageError("restore over Spark does not translate schema ids (--source-registry, --target-registry) "
                         "yet: run kafkarec restore for that")
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


def _run(spark, spec: "RestoreSpec", parts: List["SourcePartition"], expected: Optional[str]):
    """Each partition's :func:`kafkarec.restore.restore_partition` in a Spark task of its own, in
    the order of ``parts``; the first kafkarec error of any task raised here, once all answered.  A
    job that fails (a task failing past Spark's attempts, an executor lost) is a
    :class:`~kafkarec.errors.RestoreError` naming the target and the partitions, Spark's error its
    cause: a re-run resumes from the progress on the target."""
    from kafkarec.errors import RestoreError
    from spark_udfs._tasks import per_task
    try:
        rows = per_task(spark, (spec, parts), len(parts), _answers, ANSWER_SCHEMA, expected=expected,
                        name="kafkarec_restore")
    except Exception as exc:        # Py4J's or Spark's own: the job, not one partition, failed
        names = [f"{p.topic}-{p.partition}" for p in parts]
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        raise RestoreError(spec.target, f"the Spark job restoring source partition(s) {shown} failed "
                                        f"({_job_failure_reason(exc)}); what it committed is kept: run the "
                                        "restore again to resume once the cause is fixed") from exc
    return _joined(spec, parts, rows)


def _job_failure_reason(exc: BaseException) -> str:
    """The line of a failed job's text that says why: the last error a worker's Python traceback
    names (``kafkarec.errors.X: ...``, ``SomeError: ...``), else Spark's "Job aborted due to stage
    failure: ..." line, else the first line.  Py4J's first line is only the call that failed
    ("An error occurred while calling o123.collectToPython.")."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    raised = [line for line in lines if re.match(r"^[\w.]*(?:Error|Exception)\b[^:]*: ", line)
              and not line.startswith(("py4j.", "org.apache.spark.SparkException: Job aborted"))]
    aborted = [line for line in lines if "Job aborted due to stage failure" in line]
    return (raised or aborted or lines)[-1 if raised else 0][:400]


#: a task's answer rows: per source partition (``id``, its index in the plan), ``seq`` 0 the pickled
#: summary (or the kafkarec error that stopped it), then ``seq`` 1, 2... its offset map's packed runs
ANSWER_SCHEMA = "id long, seq long, answer binary"


def _joined(spec: "RestoreSpec", parts: List["SourcePartition"], rows) -> list:
    """The tasks' rows as each partition's ``(PartitionSummary, OffsetMap)``, in the order of
    ``parts``; the first error answered raised."""
    from kafkarec.errors import RestoreError
    from kafkarec.restore.offsets import OffsetMap
    heads, chunks = {}, {}
    for r in rows:
        if r["seq"] == 0:
            heads[r["id"]] = pickle.loads(r["answer"])
        else:
            chunks.setdefault(r["id"], []).append((r["seq"], r["answer"]))
    out = []
    for i, part in enumerate(parts):
        head = heads.get(i)
        if head is None:
            raise RestoreError(spec.target, f"no answer from the task of source partition "
                                            f"{part.topic}-{part.partition}")
        if isinstance(head, BaseException):
            raise head
        summary, target_topic, ends = head
        omap = OffsetMap()
        packed = sorted(chunks.get(i, ()))
        if [seq for seq, _ in packed] != list(range(1, len(packed) + 1)):
            raise RestoreError(spec.target, f"the offset map of source partition {part.topic}-{part.partition} "
                                            f"came back with chunks {[seq for seq, _ in packed]}, not 1..{len(packed)}")
        for _, chunk in packed:
            omap.add_packed(part.topic, part.partition, target_topic, chunk)
        if ends is not None:
            omap.set_end(part.topic, part.partition, target_topic, *ends)
        out.append((summary, omap))
    return out


def _answers(payload, i: int) -> Iterator:
    """A task's answer rows (:data:`ANSWER_SCHEMA`) for partition index ``i`` of ``payload`` (the
    spec and the partitions; the task is :func:`spark_udfs._tasks.per_task`'s): its summary and its
    offset map's packed runs (rows of bounded size, whatever the records), or the kafkarec error that
    stopped it (a refusal, a missing client: the same again on a retry).  An error that is
    :attr:`~kafkarec.errors.KafkaRecError.retriable` (a coordinator loading, a broker not available, a
    timeout, an object store throttling), or any other exception, raises, and Spark tries the task
    again: its transactional id fences this attempt and the progress on the target resumes it, so
    every record is still written once."""
    import pyarrow as pa
    from kafkarec.errors import KafkaRecError
    spec, parts = payload
    part = parts[i]

    def row(seq: int, answer: bytes):   # a batch a row: a task holds one chunk at a time
        return pa.RecordBatch.from_arrays([pa.array([i], pa.int64()), pa.array([seq], pa.int64()),
                                           pa.array([answer], pa.binary())], names=["id", "seq", "answer"])
    try:
        from kafkarec.restore import restore_partition
        summary, omap = restore_partition(spec, part)
    except KafkaRecError as exc:
        if exc.retriable:
            raise
        yield row(0, _pickled_error(spec, part, exc))
        return
    key = (part.topic, part.partition)
    target_topic = omap.target_topics.get(key, part.target_topic)
    yield row(0, pickle.dumps((summary, target_topic, omap.ends.get(key))))
    for seq, chunk in enumerate(omap.pack(part.topic, part.partition), 1):
        yield row(seq, chunk)


def _pickled_error(spec: "RestoreSpec", part: "SourcePartition", exc: BaseException) -> bytes:
    from kafkarec.errors import RestoreError
    try:
        return pickle.dumps(exc)
    except Exception:       # an error whose fields do not pickle: its words, where it happened
        return pickle.dumps(RestoreError(spec.target, f"{type(exc).__name__}: {exc}",
                                         topic=part.target_topic, partition=part.partition))
