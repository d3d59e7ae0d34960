"""JVM components resolved the Python way: ``classpath("jvm/kafka")``.

A module is a folder under ``jvm/`` with a checked-in ``pom.xml`` listing Maven
artifacts; ``scripts/jvm.sh`` resolves them into the project-local cache (``.cache/m2``)
once and prints the classpath, which it keeps in a file keyed by the pom's hash, so a
later call neither starts Maven nor downloads anything.

A test that needs a module calls :func:`classpath`.  Where ``mvn`` or ``java`` is
missing it SKIPS with the reason, except where tools are required
(:func:`paths.shared_required`: ``CI=true``): there it FAILS, so CI never passes by
skipping.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import List, Optional

from support.paths import ROOT, shared_required

SCRIPT = os.path.join(ROOT, "scripts", "jvm.sh")


def missing_tools(tools=("java", "mvn")) -> List[str]:
    return [tool for tool in tools if shutil.which(tool) is None]


def _skip_or_fail(reason: str):
    import pytest
    if shared_required():
        pytest.fail(reason + " (required: CI=true)", pytrace=False)
    pytest.skip(reason + " (skipped; CI runs it)")


def require_tools(tools=("java", "mvn")) -> None:
    """Skip (or, on CI, fail) the calling test when one of ``tools`` is not on PATH."""
    missing = missing_tools(tools)
    if missing:
        _skip_or_fail(f"{' and '.join(missing)} not installed: the JVM components cannot be resolved or run")


@functools.lru_cache(maxsize=None)
def _resolve(module: str) -> str:
    proc = subprocess.run(["bash", SCRIPT, module], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/jvm.sh {module} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout.strip()


def classpath(module: str, *, tools=("java", "mvn")) -> str:
    """The classpath (jars joined by ``:``) of ``module`` (e.g. ``"jvm/kafka"``)."""
    require_tools(tools)
    return _resolve(module)


def java(cp: str, main: str, *args: str, jvm_flags: Optional[List[str]] = None,
         timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """Run ``main`` from ``cp`` to completion; stdout and stderr as text (UTF-8, newlines
    kept as printed)."""
    cmd = ["java", *(jvm_flags or ["-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m"]),
           "-Dfile.encoding=UTF-8", "-Dsun.stdout.encoding=UTF-8", "-Dsun.stderr.encoding=UTF-8",
           "-cp", cp, main, *args]
    # bytes decoded as UTF-8 without newline translation: a tool's output is compared byte for
    # byte (a \r inside a printed payload must stay a \r)
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout, **kw)
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       proc.stdout.decode("utf-8", "surrogateescape"),
                                       proc.stderr.decode("utf-8", "surrogateescape"))


def _artifact(jar: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients`` (the name without its version)."""
    import re
    return re.sub(r"-\d[^-]*(-[A-Za-z0-9.]+)?\.jar$", "", os.path.basename(jar))


def spark_jars(pyspark_jars_dir: str) -> List[str]:
    """The jars of ``jvm/spark`` (Spark's Kafka source and spark-avro) that a pyspark
    whose ``jars/`` folder is ``pyspark_jars_dir`` lacks: an artifact pyspark already ships
    (scala-library, lz4-java, snappy-java, hadoop, slf4j...) is loaded once, in pyspark's version."""
    shipped = {_artifact(j) for j in os.listdir(pyspark_jars_dir) if j.endswith(".jar")}
    return [j for j in classpath("jvm/spark").split(":") if j and _artifact(j) not in shipped]
