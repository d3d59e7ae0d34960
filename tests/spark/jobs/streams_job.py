"""The user-way stream checks as one application per phase: ``spark-submit --py-files <kafkarec
wheel> streams_job.py --phase N PART=WORK...`` (tests/support/spark/stream_apps.py submits it).

Each PART runs in this one SparkSession, one after another, in its own WORK folder:
``stream`` (stream_job.py's phase N), ``typed`` (typed_stream_job.py's phase N), ``split``
(stream_job.py's minPartitions phase 3; with phase 1), ``paths`` (paths_job.py, every batch path
of tests/spark/test_cluster.py's check on this deployment; with phase 1) and ``control`` (stream_job.py's phase 0:
register()'s streaming_job link removed, a new query's planner cannot import spark_udfs; with
phase 2, last, since no stream starts after it).  Phase 2 is a new application that
restarts every stream from its checkpoint, which is what the two phases prove; a part's JVM
start, shipping and unpack of the wheels proves nothing of its own (each was an application
of its own before, 25-35 s before any work).  Each part writes ``result-<phase>.json`` as its
job does alone, or ``error-<phase>.txt`` with its traceback, and the next part runs all the same.
"""
import importlib.util
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
#: part -> (job file, the job's phase for the application's phase)
PARTS = {"stream": ("stream_job.py", lambda phase: phase),
         "typed": ("typed_stream_job.py", lambda phase: phase),
         "split": ("stream_job.py", lambda phase: 3),
         "paths": ("paths_job.py", lambda phase: phase),
         "control": ("stream_job.py", lambda phase: 0)}


def _load(script):
    spec = importlib.util.spec_from_file_location(f"streams_{script[:-3]}", os.path.join(HERE, script))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv):
    phase = int(argv[argv.index("--phase") + 1])
    parts = [a.split("=", 1) for a in argv if "=" in a]
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName(f"kafkarec-streams-{phase}").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import spark_udfs
    # kept where the suite's session keeps it (support/spark/spark_session.py): paths_job.py reports it
    spark._kafkarec_registration = spark_udfs.register(spark)
    for name, work in parts:
        script, job_phase = PARTS[name]
        print(f"streams_job: {name} (phase {job_phase(phase)}) starts", flush=True)
        started = time.monotonic()
        try:
            _load(script).run(spark, work, job_phase(phase))
        except Exception:       # noqa: BLE001 - the part's own tests report it; the next part runs
            with open(os.path.join(work, f"error-{job_phase(phase)}.txt"), "w") as fh:
                fh.write(traceback.format_exc())
        finally:
            for query in spark.streams.active:   # a part that raised may leave a stream running
                query.stop()
        print(f"streams_job: {name} ends after {time.monotonic() - started:.1f} s", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
