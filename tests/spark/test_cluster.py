"""kafkarec on a real Spark standalone cluster, as users run it.

The session's cluster (support/spark/spark_cluster.py): a master and two workers (spark-class,
127.0.0.1, own work dirs), started from a "bare" Python 3.12 venv holding only pyspark,
pyarrow and pandas (made once, cached in .cache/).  kafkarec reaches the driver, the
executors and the Data Source planner only as ``spark-submit --py-files <kafkarec cp312
wheel>`` plus the dependency wheels next to it (scripts/wheelhouse.sh).  Every output is
compared row by row with kafkarec's own decoder; one test kills a worker in the middle of a
job (after every other test of the session, then starts it again).  The fixture tears the
cluster down at the end of the session and nothing it started is left running.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import time

import pytest

from support.spark import spark_helpers as H
from support.spark.spark_cluster import MASTER_VARIABLE
from support.spark.spark_submit import spark_submit

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "paths_job.py")


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return H.sample_logs(tmp_path_factory, seed=11)


def submit(cluster, wheel, args, cwd, *, background=False, timeout=420, py_files=None):
    cmd, env = spark_submit(cluster.python, JOB, args, master=cluster.master_url,
                            conf={"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                                  "spark.executor.memory": "768m", "spark.sql.shuffle.partitions": 2},
                            py_files=py_files or wheel,
                            env={"KAFKAREC_NATIVE_CACHE": os.path.join(cwd, "driver-cache")})
    if background:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _parquet(path):
    import pyarrow.parquet as pq
    return pq.read_table(path)


def check_data_source(out, sample):
    want, want_errors = H.oracle_dir(sample, batch_columns=True)
    got = _parquet(os.path.join(out, "ds"))
    bad = got.filter(got.column("_corrupt_record").is_valid())
    good = got.filter(got.column("_corrupt_record").is_null())
    H.assert_same_rows(good, want, H.KAFKA_COLUMNS + ["compression", "batchPosition", "producerId"])
    keys = list(zip(*[good.column(c).to_pylist() for c in ("topic", "partition", "offset")]))
    assert len(keys) == len(set(keys)), "a record was written twice"
    assert bad.num_rows == sum(len(v) for v in want_errors.values()) >= 1
    return good.num_rows


def check_meta(out, sample):
    """A user schema of topic, partition, offset and timestamp, DROPMALFORMED (paths_job.py):
    the decodable records' four columns, each once."""
    want, _ = H.oracle_dir(sample)
    got = _parquet(os.path.join(out, "meta"))
    assert got.column_names == ["topic", "partition", "offset", "timestamp"]
    H.assert_same_rows(got, want, got.column_names)


def check_assign(out, sample):
    """``assign`` ``{"orders":[1]}`` from offset 150 to 1500 (paths_job.py): exactly those
    records of orders-1, no other partition."""
    import pyarrow.compute as pc
    want, _ = H.oracle_dir(sample)
    mask = pc.and_(pc.and_(pc.equal(want.column("topic"), "orders"), pc.equal(want.column("partition"), 1)),
                   pc.and_(pc.greater_equal(want.column("offset"), 150), pc.less(want.column("offset"), 1500)))
    want = want.filter(mask)
    got = _parquet(os.path.join(out, "assign"))
    if "_corrupt_record" in got.column_names:
        assert got.column("_corrupt_record").null_count == got.num_rows
    assert want.num_rows == 1350 == got.num_rows
    H.assert_same_rows(got, want, [c for c in H.KAFKA_COLUMNS if c != "headers"])


def _oracle_files(sample):
    import pyarrow as pa
    tables, errors = [], {}
    for path in sorted(glob.glob(os.path.join(sample, "**", "*.log"), recursive=True)):
        t, errs = H.oracle_file(path)
        t = t.append_column("path", pa.array(["file:" + path] * t.num_rows, pa.string()))
        tables.append(t)
        errors["file:" + path] = errs
    return pa.concat_tables(tables), errors


def check_functions(out, sample):
    want, want_errors = _oracle_files(sample)
    cols = ["path"] + H.RECORD_COLUMNS
    explode = _parquet(os.path.join(out, "explode"))
    good = explode.filter(explode.column("_corrupt_record").is_null())
    H.assert_same_rows(good, want, cols, sort_by=("path", "offset"))
    bad = explode.filter(explode.column("_corrupt_record").is_valid())
    assert bad.num_rows == sum(len(v) for v in want_errors.values())
    decode = _parquet(os.path.join(out, "decode"))
    rows = decode.filter(decode.column("offset").is_valid())
    H.assert_same_rows(rows, want, cols, sort_by=("path", "offset"))
    errors = {p: e for p, e in zip(decode.column("path").to_pylist(), decode.column("error").to_pylist())
              if e is not None}
    assert set(errors) == {p for p, e in want_errors.items() if e}
    for path, text in errors.items():
        assert all(f"byte {e['position']} " in text for e in want_errors[path])


def test_every_spark_path_on_a_bare_312_cluster(stream_apps_cluster, spark_cluster, wheel312):
    """paths_job.py as a part of the session's stream application of phase 1
    (support/spark/stream_apps.py): ``spark-submit --py-files <cp312 wheel>`` from the bare Python 3.12
    on this cluster, the deployment this check is about, without an application of its own."""
    sample, out = stream_apps_cluster.paths()
    reg = json.load(open(os.path.join(out, "register.json")))
    # driver: kafkarec from the cp312 wheel itself; executors: from its shipped .whl.zip,
    # each compiled module unpacked from the shipped wheels into the worker's cache
    assert os.path.basename(wheel312) in reg["driver_kafkarec"]
    assert "cp312" in os.path.basename(wheel312)
    assert any(s.endswith(".whl.zip") and "kafkarec-" in s for s in reg["shipped"])
    assert {os.path.basename(s).split("-")[0] for s in reg["shipped"]} >= {
        "kafkarec", "crc32c", "lz4", "zstandard", "python_snappy", "cramjam", "isal", "msgspec", "packaging"}
    assert reg["executors"] and all("Python 3.12" in e and ".whl.zip/kafkarec" in e
                                    and "native-cache" in e for e in reg["executors"])
    assert all(spark_cluster.python in e for e in reg["executors"])
    n = check_data_source(out, sample)
    check_meta(out, sample)
    check_assign(out, sample)
    check_functions(out, sample)
    print(f"cluster job: {n} records")


@pytest.mark.kills_a_spark_worker
def test_a_worker_killed_mid_job_loses_and_duplicates_nothing(spark_cluster, wheel312, sample, tmp_path):
    """Also the other way to ship: --py-files listing every wheel of the wheelhouse.  Runs
    after every other test of the session (its marker) and starts the worker again."""
    cluster = spark_cluster.own
    if cluster is None:
        pytest.skip(f"{MASTER_VARIABLE} names a cluster this session did not start: none of its "
                    "workers is killed")
    marker = tmp_path / "started"
    marker.mkdir()
    out = str(tmp_path / "out")
    every = [wheel312] + sorted(w for w in glob.glob(os.path.join(os.path.dirname(wheel312), "*.whl"))
                                if w != wheel312 and "cp311" not in w)
    t0 = time.monotonic()
    proc = submit(spark_cluster, wheel312, [sample, out, "--only", "ds", "--marker", str(marker),
                                            "--delay", "1.0", "--max-partition-bytes", "64k"],
                  str(tmp_path), background=True, py_files=",".join(every))
    killed = None
    try:
        deadline = time.monotonic() + 240
        while len(os.listdir(marker)) < 3:
            assert proc.poll() is None, proc.stdout.read()[-6000:]
            assert time.monotonic() < deadline, "the job did not start its tasks"
            time.sleep(0.2)
        killed = time.monotonic()
        cluster.kill_worker(1)
        log, _ = proc.communicate(timeout=360)
        print(f"tasks started before the kill: {len(os.listdir(marker))} "
              f"({killed - t0:.1f} s); job done {time.monotonic() - killed:.1f} s after it")
        alive_after_the_job = cluster.status()["aliveworkers"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
        if killed is not None:
            # the cluster as every test finds it: both workers alive
            restored = time.monotonic()
            cluster.restart_worker(1)
            print(f"worker 1 back in {time.monotonic() - restored:.1f} s")
    assert proc.returncode == 0, log[-6000:]
    assert alive_after_the_job in (1, 2)   # the master may not have noticed yet
    attempts = os.listdir(marker)
    n = check_data_source(out, sample)
    # tasks did run again after the loss (a partition started twice, or on a new pid)
    parts = [a.split("-")[0] for a in attempts]
    assert n > 0 and len(parts) > len(set(parts)) or any(a.split("-")[1] != "0" for a in attempts), \
        attempts
