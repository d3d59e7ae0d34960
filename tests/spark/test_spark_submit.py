"""The shipping path exactly as a user runs it.

Build the wheel, generate the sample log directory with ``python -m
kafkarec.sample``, then ``spark-submit --py-files <wheel> scripts/spark_job.py``
in a fresh folder (no source tree on any path) with a fresh
``KAFKAREC_NATIVE_CACHE``: the driver imports kafkarec from the wheel,
executors and the Data Source planner from the ``.whl.zip`` that
``spark_udfs.register`` re-ships, all loading the compiled core out of the zip.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess

import pytest

import spark_helpers as H

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return H.built_wheel(str(tmp_path_factory.mktemp("wheel")))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    work = tmp_path_factory.mktemp("user")
    env = H.spark_env()
    env.pop("PYTHONPATH", None)
    env["PYTHONPATH"] = H.ROOT   # only to run kafkarec.sample, as the wrapper does
    out = subprocess.run([H.VENV_PY, "-m", "kafkarec.sample", "sample-data", "--clean"], cwd=work,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return work


def _submit(wheel, workdir, args, cache):
    env = H.spark_env({"KAFKAREC_NATIVE_CACHE": str(cache),
                       "KAFKAREC_SPARK_CACHE": str(cache) + "-spark"})
    env.pop("PYTHONPATH", None)
    cmd = [H.SPARK_SUBMIT, "--driver-memory", "4g", "--conf", "spark.ui.enabled=false",
           "--py-files", wheel, os.path.join(H.ROOT, "scripts", "spark_job.py")] + args
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def test_spark_submit_py_files_wheel_end_to_end(wheel, workdir):
    cache = workdir / "native-cache"
    proc = _submit(wheel, workdir, ["sample-data", "out"], cache)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-8000:]
    # executors (and the planner) imported kafkarec from the re-shipped zip, same build
    name = os.path.basename(wheel) + ".zip"
    log = proc.stdout + proc.stderr   # spark-submit merges the Python driver's stderr into stdout
    lines = [l for l in log.splitlines() if l.startswith("  executor: kafkarec ")]
    assert lines and all(f"{name}/kafkarec" in l for l in lines), log[-4000:]
    assert all(str(cache) in l for l in lines)        # core extracted into the fresh cache
    cores = glob.glob(str(cache / "*" / "_core*.so"))
    assert len(cores) == 1
    # the summary: every topic/partition, records, codecs, errors - as the decoder sees them
    want, want_errors = H.oracle_dir(str(workdir / "sample-data"), batch_columns=True)
    summary = json.loads((workdir / "out" / "summary.json").read_text())
    assert summary["records"] == want.num_rows
    assert summary["errors"] == sum(len(v) for v in want_errors.values()) >= 1
    parts = {(p["topic"], p["partition"]): p for p in summary["partitions"]}
    folders = sorted(H.topic_partition(os.path.join(d, "x"))
                     for d in glob.glob(str(workdir / "sample-data" / "*")))
    assert sorted(parts) == folders
    for path, errs in want_errors.items():
        assert parts[H.topic_partition(path)]["errors"] == len(errs)
    assert set(parts[("orders", 0)]["codecs"]) == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert "ChecksumError" in log and "orders" in log
    # the Parquet output, row by row against kafkarec's decoder
    import pyarrow.dataset as ds
    got = ds.dataset(str(workdir / "out" / "records"), format="parquet",
                     partitioning="hive").to_table()
    import pyarrow as pa
    import pyarrow.compute as pc
    got = got.set_column(got.schema.get_field_index("partition"), "partition",
                         pc.cast(got.column("partition"), pa.int32()))
    got = got.set_column(got.schema.get_field_index("topic"), "topic",
                         pc.cast(got.column("topic"), pa.string()))
    H.assert_same_rows(got, want, H.KAFKA_COLUMNS + ["compression", "batchPosition", "producerId"])
    errors = [json.loads(l) for f in glob.glob(str(workdir / "out" / "errors" / "*.json"))
              for l in open(f)]
    assert len(errors) == summary["errors"]
    (path, (e, *_)), *_ = want_errors.items()
    assert any(x["error"].startswith(f"{path}: byte {e['position']} ") for x in errors)


def test_spark_submit_failfast_fails_with_a_clear_message(wheel, workdir):
    proc = _submit(wheel, workdir, ["sample-data", "out-ff", "--mode", "FAILFAST"],
                   workdir / "native-cache-2")
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Malformed Kafka record batch (mode FAILFAST)" in log
    assert "clicks-0" in log and "ChecksumError" in log
