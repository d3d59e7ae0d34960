"""Debezium's change events in Spark (``format("kafkarec").option("cdc", "debezium")``), run as a
user runs it: ``spark-submit --py-files <kafkarec wheel>`` from a bare Python.  The mirrored
table (view=latest) is the database's final SELECT; the change rows (view=log) are what
kafkarec.cdc.changes gives in Python."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

import spark_helpers as H

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cdc_job.py")


@pytest.fixture(scope="module")
def submitted(debezium_capture, tmp_path_factory):
    log_dir, final = debezium_capture
    wheel = H.wheelhouse(sys.executable)
    bare = H.bare_python(sys.executable)
    work = tmp_path_factory.mktemp("cdc-spark")
    out = str(work / "out.json")
    env = H.bare_env(bare, {"KAFKAREC_NATIVE_CACHE": str(work / "cache"),
                            "KAFKAREC_SPARK_CACHE": str(work / "spark-cache")})
    cmd = [os.path.join(os.path.dirname(bare), "spark-submit"), "--master", "local[2]",
           "--driver-memory", "2g", "--conf", "spark.ui.enabled=false",
           "--conf", "spark.sql.session.timeZone=UTC", "--py-files", wheel, JOB, log_dir, out]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    with open(out) as f:
        return json.load(f), log_dir, final


@pytest.mark.parametrize("prefix", ["plain", "dbz"])
@pytest.mark.parametrize("table", ["customers", "orders"])
def test_mirrored_table_is_the_databases_select(submitted, prefix, table):
    result, _, final = submitted
    rows = result[f"{prefix}.public.{table} latest"]
    assert all(r["cdcError"] is None and r["op"] in ("c", "u", "r") for r in rows)
    assert sorted((json.loads(r["after"]) for r in rows), key=lambda r: r["id"]) == final[table]


@pytest.mark.parametrize("prefix", ["plain", "dbz"])
def test_change_rows_are_kafkarecs_python_rows(submitted, prefix):
    import kafkarec
    from kafkarec import cdc
    result, log_dir, _ = submitted
    topic = f"{prefix}.public.customers"
    (path,) = glob.glob(os.path.join(log_dir, topic + "-0", "*.log"))
    with open(path, "rb") as fh:
        want = cdc.changes(kafkarec.to_arrow(fh.read())).select(
            ["offset", "op", "before", "after", "ts_ms", "cdcError"]).to_pylist()
    assert result[f"{topic} log"] == want
    assert {r["op"] for r in want} == {"r", "c", "u", "d", None}


def test_a_stream_of_change_events_is_the_batch_rows(submitted):
    result, _, _ = submitted
    assert result["stream"] and result["stream"] == result["plain.public.customers log"]
