"""The one user-way application (tests/support/spark/user_app.py submits it):

    spark-submit --master local[2] --py-files <kafkarec wheel> user_app_main.py PLAN.json

PLAN (JSON): {"jobs": [{"name", "script", "args", "out", "error"}, ...]}.  Every job runs in this
one SparkSession, one after another: its script's ``run(spark, *args)`` returns its result, which
goes to ``out`` as JSON; a job that raises writes its traceback to ``error`` instead, and the next
job runs all the same.  Nothing here imports kafkarec: each job does, from the shipped wheel.
"""
import importlib.util
import json
import os
import sys
import time
import traceback

from pyspark.sql import SparkSession


def _load(name, script):
    spec = importlib.util.spec_from_file_location(f"user_app_job_{name.replace('-', '_')}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(path, text):
    with open(path + ".part", "w") as fh:
        fh.write(text)
    os.replace(path + ".part", path)


def main(plan_file):
    with open(plan_file) as fh:
        plan = json.load(fh)
    spark = SparkSession.builder.appName("kafkarec-user-app").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    for job in plan["jobs"]:
        started = time.monotonic()
        print(f"user-app: job {job['name']} starts", flush=True)
        try:
            result = _load(job["name"], job["script"]).run(spark, *job["args"])
            _write(job["out"], json.dumps(result, default=str))
            how = "done"
        except Exception:       # noqa: BLE001 - recorded for the job's own tests; the next job runs
            _write(job["error"], traceback.format_exc())
            how = "raised"
        finally:
            # a job that raised may leave a stream running: the next job starts from a quiet session
            for query in spark.streams.active:
                query.stop()
        print(f"user-app: job {job['name']} {how} in {time.monotonic() - started:.1f} s", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
