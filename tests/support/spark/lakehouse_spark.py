"""The lakehouse Spark of the suite, as a Spark user sets it up: pyspark at
``LAKEHOUSE_PYSPARK_VERSION`` (scripts/versions.sh) in a bare venv of its own
(``scripts/bare_python.sh --lakehouse``), Iceberg's Spark runtime resolved from jvm/lakehouse-spark's
pom into the Maven cache and handed to Spark with ``--jars`` (the jar files of the cache, so
nothing is resolved at submit time), a Hadoop catalog ``lake`` on local files.

:func:`submit` runs a job with ``spark-submit --py-files <kafkarec wheel>``; :func:`connect_server`
is a Spark Connect server of the same Spark (its own ``--jars`` and catalog), which a client venv
at that pyspark (``spark_helpers.connect_client(..., lakehouse=True)``) reaches.  One module uses
them (tests/broker/test_lakehouse_spark.py): a separate Spark from the suite's own, so its own
application.
"""
from __future__ import annotations

import os
import subprocess
from typing import List

from support.spark import spark_helpers as H
from support.procs import kill_group
from support.spark.spark_cluster import ConnectServer
from support.spark.spark_submit import spark_submit

CATALOG = "lake"
LOG_TAIL_CHARS = 8000


def runtime_jars() -> List[str]:
    """Iceberg's Spark runtime jars (jvm/lakehouse-spark) in the project's Maven cache."""
    from support import jvm
    return [j for j in jvm.classpath("jvm/lakehouse-spark").split(":") if j]


def spark_args(jars: List[str], warehouse: str) -> List[str]:
    """spark-submit's arguments for the runtime and the ``lake`` catalog on ``warehouse``."""
    conf = {"spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{CATALOG}.type": "hadoop",
            f"spark.sql.catalog.{CATALOG}.warehouse": warehouse,
            "spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2"}
    args = ["--jars", ",".join(jars)]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    return args


def _tail(path: str) -> str:
    with open(path, errors="replace") as fh:
        return fh.read()[-LOG_TAIL_CHARS:]


def submit(bare: str, wheel: str, args: List[str], job: str, plan_file: str, work: str,
           timeout: float) -> subprocess.Popen:
    """``spark-submit --master local[2] ... --py-files wheel job plan_file`` from ``bare``,
    started (its own process group); :func:`finish` waits for it."""
    cmd, env = spark_submit(bare, job, [plan_file], driver_memory="1g", extra=args, py_files=wheel,
                            env={"KAFKAREC_NATIVE_CACHE": os.path.join(work, "native-cache"),
                                 "KAFKAREC_SPARK_CACHE": os.path.join(work, "spark-cache")})
    log = open(os.path.join(work, "spark-submit.log"), "wb")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    proc.timeout, proc.log_path = timeout, os.path.join(work, "spark-submit.log")
    return proc


def connect_client(client: str, bare: str, job: str, plan_file: str, url: str, work: str,
                   timeout: float) -> subprocess.Popen:
    """``client job plan_file url``: the job from a Spark Connect client's venv, started."""
    env = H.bare_env(bare)
    env["PATH"] = os.path.dirname(client) + os.pathsep + env["PATH"]
    env["PYSPARK_DRIVER_PYTHON"] = client
    env["PYTHONWARNINGS"] = "ignore"
    log = open(os.path.join(work, "connect-client.log"), "wb")
    proc = subprocess.Popen([client, job, plan_file, url], cwd=work, env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    proc.timeout, proc.log_path = timeout, os.path.join(work, "connect-client.log")
    return proc


def finish(proc: subprocess.Popen) -> None:
    """Wait for ``proc`` (its timeout), end whatever is left of its group, and fail with the end
    of its log unless it exited with 0."""
    try:
        proc.wait(timeout=proc.timeout)
        ended = f"exited with status {proc.returncode}"
    except subprocess.TimeoutExpired:
        ended = f"was killed after its timeout of {proc.timeout} s"
    finally:
        kill_group(proc)
    if ended != "exited with status 0":
        raise AssertionError(f"{' '.join(proc.args[:2])} {ended} (log {proc.log_path}); its end:\n"
                             f"{_tail(proc.log_path)}")


def connect_server(bare: str, args: List[str], work: str) -> ConnectServer:
    """A Spark Connect server of the lakehouse Spark on ``local[2]`` (not started), its Python
    workers on ``bare``, the runtime and the catalog in ``args``."""
    return ConnectServer(work, bare, "local[2]",
                         {"KAFKAREC_NATIVE_CACHE": os.path.join(work, "native-cache")}, args)
