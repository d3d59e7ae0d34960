"""The suite's one ``spark-submit`` command line: every test and fixture that starts a Spark
application as a user does (the one user-way application, the broker's Spark application, the
lakehouse job, the standalone cluster's jobs, the Spark Connect server, the streaming restarts)
builds it here.

The command runs the ``spark-submit`` next to ``python`` (a bare interpreter with pyspark, never
the project's venv), in the environment of a user's shell (:func:`spark_helpers.bare_env`: no
PYTHONPATH, the driver and the workers on ``python``).  Every application has the UI off and its
driver and executors on the suite's Spark JVM flags (``spark_helpers.SPARK_JVM_FLAGS``); the rest is
the caller's.
"""
from __future__ import annotations

import os
from typing import Iterable, Mapping, NamedTuple, Optional, Sequence

from support.spark import spark_helpers as H


class SparkSubmit(NamedTuple):
    """A ``spark-submit`` command and the environment to run it in."""
    cmd: list
    env: dict


def spark_submit(python: str, app: Optional[str] = None, args: Sequence[str] = (), *,
                 master: str = "local[2]", py_files: Optional[str] = None,
                 conf: Optional[Mapping[str, object]] = None, jars: Iterable[str] = (),
                 driver_memory: Optional[str] = None, main_class: Optional[str] = None,
                 env: Optional[Mapping[str, str]] = None, extra: Sequence[str] = ()) -> SparkSubmit:
    """``spark-submit --master MASTER [--class C] [--driver-memory M] --conf spark.ui.enabled=false
    --conf spark.{driver,executor}.extraJavaOptions=<SPARK_JVM_FLAGS> [--conf K=V]... [--jars J,...]
    [EXTRA...] [--py-files F] [APP ARGS...]`` from ``python``'s folder.

    ``app`` is the application's script (none for a ``main_class`` of Spark's own, such as the
    Connect server); ``conf`` more ``--conf`` settings, in order; ``extra`` more spark-submit
    options given as they are (a caller's ready-made ``--conf``/``--jars`` list); ``env`` added to
    the user's-shell environment."""
    cmd = [os.path.join(os.path.dirname(python), "spark-submit"), "--master", master]
    if main_class:
        cmd += ["--class", main_class]
    if driver_memory:
        cmd += ["--driver-memory", driver_memory]
    for key, value in {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": H.SPARK_JVM_FLAGS,
                       "spark.executor.extraJavaOptions": H.SPARK_JVM_FLAGS, **(conf or {})}.items():
        cmd += ["--conf", f"{key}={value}"]
    jars = list(jars)
    if jars:
        cmd += ["--jars", ",".join(jars)]
    cmd += list(extra)
    if py_files:
        cmd += ["--py-files", py_files]
    if app:
        cmd += [app, *map(str, args)]
    return SparkSubmit(cmd, H.bare_env(python, dict(env or {})))
