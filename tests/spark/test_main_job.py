"""The README's first command, ``bash scripts/main.sh``, as a user runs it: it
speaks to its user (a progress line per step, Spark at WARN, the summary at the
end), and once the wheelhouse is built (its step 1, ``scripts/wheelhouse.sh``, run
first on its own) it rebuilds nothing.

Its step 4 is the shipping path exactly as a user runs it, in local mode: ``spark-submit
--py-files <kafkarec wheel> scripts/spark_job.py`` from a "bare" Python that holds only
pyspark, pyarrow and pandas, in an empty folder (no source tree on any path), here with a
fresh ``KAFKAREC_NATIVE_CACHE``: the driver imports kafkarec from the wheel, executors and
the Data Source planner from the ``.whl.zip`` that ``spark_udfs.register`` re-ships, and
every compiled module (kafkarec's core, crc32c, lz4, zstandard, cramjam, isal) comes out of
the shipped wheels, as does ``packaging`` (the wheel rules' library), which the bare Python
lacks; none of an extra's wheels is shipped (no confluent-kafka, grpcio, cryptography or
setuptools: the job decodes a local log); every output equals kafkarec's decoder.  One spark-submit: a first whole run of
main.sh only built that wheelhouse, and tests/spark/test_spark_submit.py submitted the same
job over the same sample once more for these checks.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from support.spark import spark_helpers as H

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)


def _run(*args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KAFKAREC_SPARK_LOG_LEVEL")}
    env.update(env_extra or {})
    proc = subprocess.run(["bash", *args], cwd=H.ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


@pytest.fixture(scope="module")
def main_job(tmp_path_factory):
    """(main.sh's finished process, the kafkarec wheel it shipped, its fresh native cache)."""
    # main.sh's step 1 as it runs it (its Python: $PYTHON, else python3), taking the wheels of the
    # suite's wheelhouse for that Python (scripts/test_deps.sh made it, by the same wheelhouse.sh
    # from the same sources) instead of building and downloading them a second time (--reuse: only
    # when its stamp is current for these sources; built otherwise)
    python = os.environ.get("PYTHON", "python3")
    built = _run(os.path.join(H.ROOT, "scripts", "wheelhouse.sh"), "wheelhouse", "--python", python,
                 "--extras", "none", "--reuse", os.path.join(H.ROOT, ".cache", f"wheelhouse-{H._cache_tag(shutil.which(python) or python)}"))
    wheel = built.stdout.strip().splitlines()[-1]
    cache = tmp_path_factory.mktemp("main-job") / "native-cache"
    # Spark's JVM (local mode: the driver is the only one) on the suite's JVM flags, as every other
    # Spark JVM the tests start (spark_helpers.SPARK_JVM_FLAGS: one JIT tier, the serial collector),
    # through the launcher's own variable for spark-submit's JVM, main.sh unchanged
    proc = _run(os.path.join(H.ROOT, "scripts", "main.sh"),
                env_extra={"KAFKAREC_NATIVE_CACHE": str(cache), "SPARK_SUBMIT_OPTS": H.SPARK_JVM_FLAGS})
    return proc, wheel, cache


def test_main_job_prints_progress_and_summary_without_spark_info(main_job):
    proc, _, _ = main_job
    out = proc.stdout + proc.stderr
    spark_info = [line for line in out.splitlines() if re.match(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ", line)]
    assert spark_info == []
    steps = re.findall(r"kafkarec main job: (\d)/4 ", proc.stderr)
    assert steps == ["1", "2", "3", "4"]
    # the summary: one row per partition of the sample log directory, then the total
    assert re.search(r"^orders +0 +\d+ +\d+ +\d+ ", proc.stdout, re.M)
    total = re.search(r"^total: (\d+) records, (\d+) errors", proc.stdout, re.M)
    assert total and int(total.group(1)) == 7687 and int(total.group(2)) == 1
    # the wheelhouse built before: nothing rebuilt
    assert "is up to date" in proc.stderr and "building kafkarec" not in proc.stderr


def test_spark_submit_py_files_wheel_end_to_end(main_job):
    """(Was tests/spark/test_spark_submit.py's, on an application of its own.)"""
    proc, wheel, cache = main_job
    sample, out = os.path.join(H.ROOT, "sample-data"), os.path.join(H.ROOT, "out")
    # executors (and the planner) imported kafkarec from the re-shipped zip, same build
    name = os.path.basename(wheel) + ".zip"
    log = proc.stdout + proc.stderr
    lines = [l for l in log.splitlines() if l.startswith("  executor: ")]
    assert lines and all(f"{name}/kafkarec" in l for l in lines), log[-4000:]
    bare = os.path.join(H.ROOT, ".cache", "bare-")           # main.sh's bare Python
    assert all(str(cache) in l and bare in l for l in lines)   # core unpacked into the fresh cache
    cores = glob.glob(str(cache / "unpacked" / "*" / "kafkarec" / "_core*.so"))
    assert len(cores) == 1
    unpacked = {os.path.basename(d).split("-")[0] for d in glob.glob(str(cache / "unpacked" / "*"))}
    assert unpacked == {"kafkarec", "crc32c", "lz4", "zstandard", "python_snappy", "cramjam", "isal", "msgspec",
                        "packaging"}
    # what register() shipped: kafkarec and its runtime dependencies, none of an extra's (no
    # confluent-kafka, grpcio, grpcio-tools, protobuf, cryptography, cffi or setuptools)
    shipped, = re.findall(r"; shipped to executors: (.*?); executors checked", log)
    projects = sorted(n.split("-")[0] for n in shipped.split(", "))
    assert projects == ["cramjam", "crc32c", "isal", "kafkarec", "lz4", "msgspec", "packaging", "python_snappy",
                        "zstandard"], shipped
    # the summary: every topic/partition, records, codecs, errors - as the decoder sees them
    want, want_errors = H.oracle_dir(sample, batch_columns=True)
    with open(os.path.join(out, "summary.json")) as fh:
        summary = json.load(fh)
    assert summary["records"] == want.num_rows
    assert summary["errors"] == sum(len(v) for v in want_errors.values()) >= 1
    parts = {(p["topic"], p["partition"]): p for p in summary["partitions"]}
    folders = sorted(H.topic_partition(os.path.join(d, "x")) for d in glob.glob(os.path.join(sample, "*")))
    assert sorted(parts) == folders
    for path, errs in want_errors.items():
        assert parts[H.topic_partition(path)]["errors"] == len(errs)
    assert set(parts[("orders", 0)]["codecs"]) == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert "ChecksumError" in log and "orders" in log
    # the Parquet output, row by row against kafkarec's decoder
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    got = ds.dataset(os.path.join(out, "records"), format="parquet", partitioning="hive").to_table()
    got = got.set_column(got.schema.get_field_index("partition"), "partition",
                         pc.cast(got.column("partition"), pa.int32()))
    got = got.set_column(got.schema.get_field_index("topic"), "topic", pc.cast(got.column("topic"), pa.string()))
    H.assert_same_rows(got, want, H.KAFKA_COLUMNS + ["compression", "batchPosition", "producerId"])
    errors = [json.loads(l) for f in glob.glob(os.path.join(out, "errors", "*.json")) for l in open(f)]
    assert len(errors) == summary["errors"]
    (path, (e, *_)), *_ = want_errors.items()
    assert any(x["error"].startswith(f"{path}: byte {e['position']} ") for x in errors)
