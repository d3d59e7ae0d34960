"""Typed values on a stream, as a user runs it: ``run(spark, WORK, phase)``, a part of streams_job.py's
applications (``spark-submit --py-files <kafkarec wheel> streams_job.py --phase N``; phase 2 is
a new application: a restart from the checkpoints).  Driver and executors have only pyspark, pyarrow and pandas.

WORK/steps.pickle (written by tests/spark/test_typed_stream.py) holds, per step, the bytes to
append to the log directory's files (``_schemas-0`` and ``orders-0``; records serialized by
confluent-kafka's AvroSerializer).  Phase 1 applies step 0, starts the queries, then applies
the phase's other steps one by one with the queries draining in between (a new schema
registered mid-stream, a bad payload, a new segment).  The queries:

* ``typed``: ``valueFormat=registry`` + ``keyFormat=registry``, the registry read from the
  log itself, ``includeHeaders=true``, PERMISSIVE, into a Parquet file sink;
* ``failfast``: the same with ``mode=FAILFAST`` (phase 1): fails at the first bad payload.

Between the phases (queries down) the step marked ``"between"`` is applied; phase 2 restarts
``typed`` from its checkpoint and applies the phase-2 steps.  WORK/result-<phase>.json holds
the sink's rows and what failed.
"""
from __future__ import annotations

import glob
import json
import os
import pickle


def apply(root, step):
    for rel, data in step["files"]:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "ab") as fh:
            fh.write(data)


def run(spark, work, phase):
    """Phase ``phase`` of the job in ``spark`` (spark_udfs.register'd); writes and returns its result."""
    root = os.path.join(work, "logs")
    with open(os.path.join(work, "steps.pickle"), "rb") as fh:
        steps = pickle.load(fh)

    def query(name, **options):
        df = spark.readStream.format("kafkarec")
        for k, v in {"startingOffsets": "earliest", "subscribe": "orders",
                     "valueFormat": "registry", "keyFormat": "registry", "registry": root,
                     **options}.items():
            df = df.option(k, v)
        df = df.load(root)
        return (df.writeStream.format("parquet")
                .option("path", os.path.join(work, "out", name))
                .option("checkpointLocation", os.path.join(work, "checkpoint", name))
                .queryName(name).trigger(processingTime="200 milliseconds").start())

    result = {"phase": phase}
    if phase == 1:
        apply(root, steps[0])
    # badRecordsPath: the records that fail are kept whole (across the restart: once each)
    typed = query("typed", includeHeaders="true", badRecordsPath=os.path.join(work, "bad"))
    result["schema"] = None
    queries = [typed]
    try:
        typed.processAllAvailable()
        for step in steps:
            if step["phase"] == phase and step is not steps[0]:
                apply(root, step)
                typed.processAllAvailable()
    finally:
        typed.stop()
    result["exceptions"] = [str(q.exception()) for q in queries if q.exception() is not None]

    if phase == 1:
        ff = query("failfast", mode="FAILFAST")
        try:
            ff.awaitTermination(180)
            result["failfast"] = None
        except Exception as exc:  # noqa: BLE001 - the failure is the point
            result["failfast"] = f"{type(exc).__name__}: {exc}"[:4000]
        finally:
            ff.stop()
        for step in steps:
            if step["phase"] == "between":
                apply(root, step)

    files = glob.glob(os.path.join(work, "out", "typed", "*.parquet"))
    sink = spark.read.option("mergeSchema", "true").parquet(*files)
    result["schema"] = sink.schema.jsonValue()
    result["rows"] = [r.asDict(recursive=True) for r in sink.orderBy("offset").collect()]
    with open(os.path.join(work, f"result-{phase}.json"), "w") as fh:
        json.dump(result, fh, default=str)
    return result

