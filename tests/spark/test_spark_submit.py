"""The shipping path as a user runs it, in local mode, where an application of its own is the
evidence: ``spark-submit --py-files <kafkarec wheel>`` from a "bare" Python that holds only
pyspark, pyarrow and pandas, in a fresh folder (no source tree on any path) with a fresh
``KAFKAREC_NATIVE_CACHE``: FAILFAST fails its application with a clear message; a wheelhouse
built for another Python, or missing a dependency, is one error at ``register()``;
docs/spark.md's ``job.py`` runs as written.  The end-to-end run of scripts/spark_job.py (every
compiled module out of the shipped wheels into a fresh cache, every output against the decoder)
is tests/spark/test_main_job.py's: ``scripts/main.sh`` submits that job as the user does.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import pytest

from support.spark import spark_helpers as H
from support.spark.spark_submit import spark_submit

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
    """``cache``: the native cache; the cp311 applications share one (the first unpacks the
    wheels: the cold unpack is test_main_job's check), as a user's runs do."""
    cmd, env = spark_submit(bare, job or os.path.join(H.ROOT, "scripts", "spark_job.py"), args,
                            driver_memory="4g", py_files=wheel,
                            env={"KAFKAREC_NATIVE_CACHE": str(cache), "KAFKAREC_SPARK_CACHE": str(cache) + "-spark"})
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def test_spark_submit_failfast_fails_with_a_clear_message(wheel, bare, workdir):
    proc = _submit(bare, wheel, workdir, ["sample-data", "out-ff", "--mode", "FAILFAST"],
                   workdir / "native-cache")
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
                   workdir / "native-cache", job=str(job))
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
