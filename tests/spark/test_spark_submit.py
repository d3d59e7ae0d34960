"""The shipping path exactly as a user runs it, in local mode.

Build the wheelhouse (scripts/wheelhouse.sh), generate the sample log
directory with ``python -m kafkarec.sample``, then run ``spark-submit
--py-files <kafkarec wheel> scripts/spark_job.py`` from a "bare" Python that
holds only pyspark, pyarrow and pandas, in a fresh folder (no source tree on
any path) with a fresh ``KAFKAREC_NATIVE_CACHE``: the driver imports kafkarec
from the wheel, executors and the Data Source planner from the ``.whl.zip``
that ``spark_udfs.register`` re-ships, and every compiled module (kafkarec's
core, crc32c, lz4, zstandard, cramjam, isal) comes out of the shipped wheels,
as does ``packaging`` (the wheel rules' library), which the bare Python lacks.
A wheelhouse built for another Python, or missing a dependency, is one error
at ``register()``.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from support import spark_helpers as H
from support.spark_submit import spark_submit

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)


@pytest.fixture(scope="module")
def wheel():
    return H.wheelhouse(sys.executable)


@pytest.fixture(scope="module")
def bare():
    return H.bare_python(sys.executable)


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


def _submit(bare, wheel, workdir, args, cache, job=None):
    cmd, env = spark_submit(bare, job or os.path.join(H.ROOT, "scripts", "spark_job.py"), args,
                            driver_memory="4g", py_files=wheel,
                            env={"KAFKAREC_NATIVE_CACHE": str(cache), "KAFKAREC_SPARK_CACHE": str(cache) + "-spark"})
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def test_spark_submit_py_files_wheel_end_to_end(wheel, bare, workdir):
    cache = workdir / "native-cache"
    proc = _submit(bare, wheel, workdir, ["sample-data", "out"], cache)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-8000:]
    # executors (and the planner) imported kafkarec from the re-shipped zip, same build
    name = os.path.basename(wheel) + ".zip"
    log = proc.stdout + proc.stderr   # spark-submit merges the Python driver's stderr into stdout
    lines = [l for l in log.splitlines() if l.startswith("  executor: ")]
    assert lines and all(f"{name}/kafkarec" in l for l in lines), log[-4000:]
    assert all(str(cache) in l and bare in l for l in lines)   # core unpacked into the fresh cache
    cores = glob.glob(str(cache / "unpacked" / "*" / "kafkarec" / "_core*.so"))
    assert len(cores) == 1
    unpacked = {os.path.basename(d).split("-")[0] for d in glob.glob(str(cache / "unpacked" / "*"))}
    assert unpacked == {"kafkarec", "crc32c", "lz4", "zstandard", "python_snappy", "cramjam", "isal",
                        "cryptography", "cffi", "pycparser", "packaging"}
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


def test_spark_submit_failfast_fails_with_a_clear_message(wheel, bare, workdir):
    proc = _submit(bare, wheel, workdir, ["sample-data", "out-ff", "--mode", "FAILFAST"],
                   workdir / "native-cache-2")
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Malformed Kafka record batch (mode FAILFAST)" in log
    assert "clicks-0" in log and "ChecksumError" in log


REGISTER_ONLY = """
import spark_udfs
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
try:
    spark_udfs.register(spark)
except spark_udfs.ShippingError as exc:
    print("REGISTER FAILED:", type(exc).__name__, exc)
    raise SystemExit(3)
print("REGISTER OK")
"""


def test_register_names_every_missing_and_mismatched_piece_at_once(wheel, workdir, tmp_path):
    """A cp311 kafkarec wheel on Python 3.12, next to a cp311-only crc32c wheel
    and without lz4: one ShippingError at register() naming all three (on the
    driver and the executors) and the command that fixes it."""
    py312 = H.python_for("3.12")
    if py312 is None:
        pytest.fail("no Python 3.12 found (python3.12 on PATH or ~/.pyenv/versions/3.12.*)")
    bare312 = H.bare_python(py312)
    wheel312 = H.wheelhouse(py312)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(wheel, mixed)                                   # kafkarec cp311
    for w in glob.glob(os.path.join(os.path.dirname(wheel312), "*.whl")):
        name = os.path.basename(w)
        if not name.startswith(("kafkarec-", "lz4-", "crc32c-")):
            shutil.copy(w, mixed)                               # the cp312 rest
    crc311, = glob.glob(os.path.join(os.path.dirname(wheel), "crc32c-*cp311*.whl"))
    shutil.copy(crc311, mixed)
    job = tmp_path / "register_only.py"
    job.write_text(REGISTER_ONLY)
    proc = _submit(bare312, str(mixed / os.path.basename(wheel)), tmp_path, [],
                   tmp_path / "cache", job=str(job))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 3, log[-6000:]
    line = log[log.index("REGISTER FAILED: ShippingError"):]
    assert "(3 problems)" in line, line
    assert f"kafkarec: {os.path.basename(wheel)} is built for cp311-cp311, this interpreter is cp312" in line
    assert "crc32c (needed by kafkarec): no wheel fits crc32c-" in line and "cp311" in line
    assert "lz4 (needed by kafkarec): not installed and no lz4 wheel was found" in line
    assert line.count("[driver (Python 3.12") == 3 and line.count("; executor ") == 3
    assert f"bash scripts/wheelhouse.sh {mixed} --python {bare312}" in line
    assert "Traceback" not in log.split("REGISTER FAILED")[0][-2000:] or "ModuleNotFoundError" not in log


def test_readme_spark_job_runs_as_written(wheel, bare, workdir, tmp_path):
    """docs/spark.md's job.py, submitted as its spark-submit line says (local mode, bare
    Python, the wheel alone in --py-files): every output equals kafkarec's decoder."""
    import re
    readme = open(os.path.join(H.ROOT, "docs", "spark.md"), encoding="utf-8").read()
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if b.startswith("# job.py")]
    job = tmp_path / "job.py"
    job.write_text(code)
    out = tmp_path / "out"
    proc = _submit(bare, wheel, tmp_path, [str(workdir / "sample-data"), str(out)],
                   tmp_path / "cache", job=str(job))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    import pyarrow as pa
    import pyarrow.dataset as ds
    want, want_errors = H.oracle_dir(str(workdir / "sample-data"))
    records = ds.dataset(str(out / "records"), format="parquet").to_table()
    good = records.filter(records.column("_corrupt_record").is_null())
    # the Kafka source's columns; headers only with includeHeaders=true, as there
    assert "headers" not in good.column_names
    H.assert_same_rows(good, want, [c for c in H.KAFKA_COLUMNS if c != "headers"])
    per_file = []
    for path in sorted(glob.glob(str(workdir / "sample-data" / "**" / "*.log"), recursive=True)):
        t, _ = H.oracle_file(path)
        per_file.append(t.append_column("path", pa.array(["file:" + path] * t.num_rows)))
    want_files = pa.concat_tables(per_file)
    for name in ("exploded", "decoded"):
        got = ds.dataset(str(out / name), format="parquet").to_table()
        if "_corrupt_record" in got.column_names:
            got = got.filter(got.column("_corrupt_record").is_null())
        H.assert_same_rows(got, want_files, ["path"] + H.RECORD_COLUMNS, sort_by=("path", "offset"))
