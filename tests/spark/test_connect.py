"""kafkarec over Spark Connect, the user's way (issue 29).

The client is a Python 3.12 venv holding ``pyspark[connect]==4.3.0`` and kafkarec installed
from the wheelhouse (``spark_helpers.connect_client``), never the checkout; the server's
Python workers run the bare Python (pyspark, pyarrow, pandas only), so kafkarec reaches them
only through ``spark_udfs.register(spark)`` (session artifacts).

jobs/connect_job.py runs every surface (batch reads of a local and an ``s3://`` log dir,
error modes, ``kafkarec_decode``/``kafkarec_explode`` in SQL, ``valueFormat=registry`` (Avro,
Protobuf, JSON Schema) and ``from_registry``, pushed filters with the bytes they read, a
``readStream`` to Parquet restarted from its checkpoint, read_committed, docs/spark.md's
``connect.py``) in one client, on the session's Connect server (support/spark/spark_cluster.py:
started on its own with ``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` over the session's standalone
cluster, two workers; its Python workers count the bytes they read into a folder), reached as
``sc://127.0.0.1:PORT``, and writes Parquet; the batch surfaces are run on the classic session
of this test run too (the same function) and the files must hold the same rows.  The job
replaces the Connect session's ``sparkContext``/``_jvm``/``_jsc`` by properties that record
any access.

``remote("local[2]")`` (the client starts its own server) runs only docs/spark.md's
``connect.py`` block, as written: that the documented local deployment reaches kafkarec.  It
ran the whole job too before, which proved nothing the server run does not (the same client,
register() and surfaces; the server's executors are the stricter case: other processes, other
workers) at the cost of a Connect server JVM and every surface again.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from support.spark import spark_helpers as H
from support.logs import events_log
from support.registry import registry_world as world
from support.registry import registry_world_formats as world_formats
from support.spark.spark_cluster import CONNECT_VARIABLE, stop_group

# the deployments reach the cluster and the Connect server through request.getfixturevalue
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.components("spark_cluster", "spark_connect")]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

JOBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs")
JOB = os.path.join(JOBS, "connect_job.py")
connect_job = H.load_job(JOB)

#: log start offsets deleteRecords left (support/logs/log_start.py: offsets 0..99 in each partition)
LOG_STARTS = {("t", 0): 37, ("t", 1): 100, ("t", 2): 0}


@pytest.fixture(scope="module")
def user(py312, bare312, wheel312):
    """(bare server-side Python, kafkarec wheel, client Python)."""
    return bare312, wheel312, H.connect_client(py312, wheel312)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, s3):
    base = tmp_path_factory.mktemp("connect-inputs")
    sample = H.sample_logs(tmp_path_factory, seed=29)
    s3.upload_dir(sample, "connect-logs", "kafka")
    typed = str(base / "typed")
    world.build(typed)
    formats = str(base / "formats")
    facts = world_formats.build(formats)
    good = {t: [sum(why is None for _, why in facts["expected"][t]),
                sum(why is None and v is not None for v, why in facts["expected"][t])]
            for t in ("shipments", "people")}
    from support.logs.log_start import deleted_records_dir
    from support.logs.lying_objects import lying_root
    log_start = str(base / "log-start")
    deleted_records_dir(log_start, LOG_STARTS)
    lying = str(base / "lying")
    lying_object = lying_root("zstd", lying, "short")
    events = str(base / "events")
    events_log.build(events)
    return {"events": events, "sample": sample, "typed": typed, "formats": formats, "formats_good": good,
            "s3": {"uri": "s3://connect-logs/kafka", "options": s3.options()},
            "tiered": os.path.join(H.ROOT, "tests", "data", "tiered", "aiven"),
            "log_start": log_start, "lying": os.path.join(lying, "zstd"), "lying_object": lying_object}


@pytest.fixture(scope="module")
def classic(spark, inputs, tmp_path_factory):
    """The batch surfaces on this run's classic session (spark_udfs.register'd)."""
    work = str(tmp_path_factory.mktemp("connect-classic"))
    result: dict = {}
    connect_job.surfaces(spark, inputs, work, result)
    return work, result


def _run_client(user, inputs, work, remote, env_extra):
    bare, wheel, client = user
    cfg = dict(inputs, remote=remote, work=work, wheelhouse=os.path.dirname(wheel),
               stream=os.path.join(work, "stream-log"),
               docs=os.path.join(H.ROOT, "docs", "spark.md"))
    with open(os.path.join(work, "config.json"), "w") as fh:
        json.dump(cfg, fh)
    env = H.bare_env(bare, env_extra)
    env["PATH"] = os.path.dirname(client) + os.pathsep + env["PATH"]
    env["PYSPARK_DRIVER_PYTHON"] = client
    env["PYTHONPATH"] = os.path.join(H.ROOT, "tests")  # support.logs.growing_log only: kafkarec comes from the client's venv
    env["PYTHONWARNINGS"] = "ignore"
    proc = subprocess.Popen([client, JOB, os.path.join(work, "config.json")], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        log, _ = proc.communicate(timeout=900)
    finally:
        stop_group(proc)
    with open(os.path.join(work, "client.log"), "w") as fh:
        fh.write(log)                 # the whole log: a failure's Python traceback precedes the JVM's
    assert proc.returncode == 0, log[-10000:]
    with open(os.path.join(work, "result.json")) as fh:
        return json.load(fh), work


@pytest.fixture(scope="module")
def local(user, inputs, tmp_path_factory):
    """docs/spark.md's connect.py alone on ``remote("local[2]")``."""
    work = str(tmp_path_factory.mktemp("connect-local"))
    return _run_client(user, dict(inputs, docs_only=True), work, "local[2]",
                       {"KAFKAREC_NATIVE_CACHE": os.path.join(work, "native-cache")})


@pytest.fixture(scope="module")
def run(user, inputs, spark_connect, tmp_path_factory):
    """The whole job on the session's Connect server: (result, work folder)."""
    work = str(tmp_path_factory.mktemp("connect-server"))
    return _run_client(user, dict(inputs, bytes_read_dir=spark_connect.bytes_read_dir), work,
                       spark_connect.url, {"KAFKAREC_NATIVE_CACHE": os.path.join(work, "native-cache")})


def _table(work, name):
    import pyarrow.parquet as pq
    return pq.read_table(os.path.join(work, name))


def _rows(table):
    import pyarrow as pa
    import pyarrow.compute as pc
    cols = {}
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_timestamp(col.type):
            col = pc.cast(col, pa.timestamp("us", tz="UTC"))
        cols[name] = col.to_pylist()
    rows = [tuple(cols[n][i] for n in table.column_names) for i in range(table.num_rows)]
    return table.column_names, sorted(rows, key=repr)


# -- registration -----------------------------------------------------------------------

def test_register_on_connect_without_spark_context(run):
    result, _ = run
    assert result["session_class"] == "pyspark.sql.connect.session.SparkSession"
    assert result["touched"] == []
    # the client's kafkarec is the wheelhouse's install, not the checkout
    assert "connect-client" in result["client_kafkarec"] and "site-packages" in result["client_kafkarec"]
    assert not result["client_kafkarec"].startswith(os.path.join(H.ROOT, "kafkarec"))
    assert result["shipped"][0].startswith("kafkarec-") and result["shipped"][0].endswith(".whl.zip")
    assert any(n.startswith("zstandard-") for n in result["shipped"])
    # every executor python loaded kafkarec from the shipped archive, the client's build
    assert result["executors"]
    for e in result["executors"]:
        assert result["fingerprint"] in e and ".whl.zip" in e
    assert result["parallelism"] == result["parallelism_unverified"] == 2


# -- batch surfaces: the same rows as the classic session ----------------------------------

@pytest.mark.parametrize("name", ["batch_local", "batch_meta", "batch_s3", "decode", "explode", "typed",
                                  "typed_shipments", "typed_people", "from_registry", "latest", "typed_latest", "cdc",
                                  "tiered", "log_start", "log_start_listed", "log_start_all"])
def test_same_rows_as_classic(run, classic, name):
    _, work = run
    got_cols, got = _rows(_table(work, name))
    want_cols, want = _rows(_table(classic[0], name))
    assert got_cols == want_cols
    assert len(got) == len(want) > 0
    assert got == want


def test_protobuf_and_json_schema_over_connect(run, inputs):
    """The .proto text compiled where Connect's server plans the column (its Python is bare: the
    compiler comes from the wheels register() shipped); each topic's decodable records decoded."""
    _, work = run
    for topic, (good, valued) in inputs["formats_good"].items():
        rows = _table(work, f"typed_{topic}").to_pylist()
        ok = [r for r in rows if r["_corrupt_record"] is None]
        assert len(ok) == good > 0, (topic, [r["_corrupt_record"] for r in rows])
        assert sum(r["value"] is not None for r in ok) == valued > 0      # tombstones stay null


def test_tiered_objects_over_connect(run):
    """The plugin's objects read over Connect: every record of the segments it stored.  Its
    AES-GCM chunks need the tiered extra (cryptography) on the executors, which register() without
    it does not ship: the read is refused where it is planned, naming the extra, and a second
    register(extras=["tiered"]) ships that extra alone."""
    result, work = run
    assert "needs the tiered extra (cryptography) on every executor" in result["tiered_unshipped"], \
        result["tiered_unshipped"]
    assert "spark_udfs.register(spark, extras=['tiered'])" in result["tiered_unshipped"]
    assert sorted(n.split("-")[0] for n in result["tiered_shipped"][1:]) == ["cffi", "cryptography", "pycparser"]
    assert not any(n.startswith(("cryptography", "cffi")) for n in result["shipped"]), result["shipped"]
    t = _table(work, "tiered")
    assert sorted(set(t.column("topic").to_pylist())) == ["clicks", "txn"]
    assert t.num_rows == 837 + 24


def test_log_start_over_connect(run):
    """Each partition from its log start offset, as the consumer reads it, in a batch read and
    in a stream from earliest (its planner in a Python process of its own); includeDeletedRecords
    gives every record the files hold (issue 40)."""
    _, work = run
    for name in ("log_start", "log_start_listed", "stream_log_start"):
        t = _table(work, name)
        got = sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))
        assert got == [(p, o) for (_, p), start in sorted(LOG_STARTS.items()) for o in range(start, 100)], name
    t = _table(work, "log_start_all")
    assert sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist())) == \
        [(p, o) for (_, p) in sorted(LOG_STARTS) for o in range(100)]


def test_an_object_shorter_than_its_manifest_fails_over_connect(run, inputs):
    result, _ = run
    assert result["lying"] is not None, "the read of an object shorter than its manifest succeeded"
    assert f"{inputs['lying_object']}, chunk 1: the manifest's chunk index covers" in result["lying"]


def test_pushed_filters_over_connect(run, inputs):
    """DataFrame filters on topic, partition, offset and timestamp pushed into the read over
    Connect: the rows of the data, of Spark's own filtering and of the options; a 1% slice reads
    at most 2% of the segment bytes (the server's Python workers count them; a server named by
    KAFKAREC_TEST_SPARK_CONNECT does not, and only the rows are checked then)."""
    result, _ = run
    assert result["pushdown_counted"] or os.environ.get(CONNECT_VARIABLE), \
        "the session's Connect server counted no bytes"
    events_log.check(result["pushdown"], inputs["events"], counted=result["pushdown_counted"])


def test_cdc_columns_over_connect(run):
    _, work = run
    t = _table(work, "cdc")
    assert {"op", "before", "after", "source", "ts_ms", "cdcError"} <= set(t.column_names)
    errors = t.column("cdcError").to_pylist()
    assert t.num_rows and all(e and "not a Debezium envelope" in e for e in errors)


def test_batch_matches_decoder(run, inputs):
    _, work = run
    t = _table(work, "batch_local")
    good = t.filter(t.column("_corrupt_record").is_null())
    want, errors = H.oracle_dir(inputs["sample"])
    H.assert_same_rows(good, want, H.KAFKA_COLUMNS)
    assert t.num_rows - good.num_rows == sum(len(v) for v in errors.values()) > 0
    meta = _table(work, "batch_meta")
    meta_good = meta.filter(meta.column("_corrupt_record").is_null())
    H.assert_same_rows(meta_good, want, ["topic", "partition", "offset", "timestamp"])
    assert meta.num_rows - meta_good.num_rows == t.num_rows - good.num_rows
    s3 = _table(work, "batch_s3")
    bad = s3.filter(s3.column("_corrupt_record").is_valid()).column("_corrupt_record").to_pylist()
    assert bad and all(e.startswith("s3://connect-logs/kafka/") for e in bad)


def test_error_modes(run, classic, inputs):
    result, _ = run
    want, _ = H.oracle_dir(inputs["sample"])
    assert result["dropmalformed"] == classic[1]["dropmalformed"] == want.num_rows
    # FAILFAST: the read fails on the first corrupt batch, on both kinds of session
    assert result["failfast"] is not None and classic[1]["failfast"] is not None
    assert "kafkarec" in result["failfast"].lower()


# -- streams -------------------------------------------------------------------------------

def test_stream_exactly_once_across_restart(run):
    result, work = run
    assert result["exceptions"] == []
    t = _table(work, "stream")
    got = list(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(),
                   t.column("offset").to_pylist(), t.column("value").to_pylist()))
    want = [(tp, p, o, v.encode()) for tp, p, o, v in result["written"]]
    assert len(got) == len(set(got)) == len(want)
    assert sorted(got) == sorted(want)
    # maxOffsetsPerTrigger=30: 77 offsets in 3 micro-batches at least, then the 23 appended
    assert result["stream_batches"][0] >= 3 and result["stream_batches"][1] >= 1


def test_stream_read_committed(run):
    result, work = run
    t = _table(work, "committed")
    got = sorted(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(),
                     t.column("offset").to_pylist()))
    want = sorted((tp, p, o) for tp, p, o, _ in result["committed"])
    assert got == want
    # the aborted transaction (orders-1) never appears; the committed one (orders-0) does, once
    assert len(got) == len(set(got)) < len(result["written"])


def test_progress_latest_offset_and_lag(run):
    result, _ = run
    first = result["progress"][0]["sources"][0]
    latest = json.loads(first["latestOffset"]) if isinstance(first["latestOffset"], str) \
        else first["latestOffset"]
    # the log's end per partition when the first micro-batch was planned: 40 + 6 (open
    # transaction) in orders-0; 25 + 5 aborted + the ABORT marker in orders-1
    assert latest == {"orders": {"0": 46, "1": 31}}
    end = json.loads(first["endOffset"]) if isinstance(first["endOffset"], str) else first["endOffset"]
    assert sum(end["orders"].values()) <= 30                  # maxOffsetsPerTrigger=30
    lag = result["lag"][0]
    # the Kafka source's figures: per partition, the log's end minus the next offset to read
    want = {p: latest["orders"][p] - end["orders"][p] for p in ("0", "1")}
    assert lag["offsetsBehindLatest"] == {"orders": want}
    assert lag["minOffsetsBehindLatest"] == min(want.values()) > 0
    assert lag["maxOffsetsBehindLatest"] == max(want.values())
    assert lag["avgOffsetsBehindLatest"] == sum(want.values()) / 2
    last = result["lag"][-1]
    assert last["maxOffsetsBehindLatest"] == last["minOffsetsBehindLatest"] == 0
    assert last["avgOffsetsBehindLatest"] == 0.0


@pytest.mark.parametrize("deployment", ["local", "run"])
def test_docs_connect_example(deployment, request, inputs):
    """docs/spark.md's connect.py, run as written: on ``remote("local[2]")`` alone, and on the
    session's Connect server in the job."""
    import collections
    result, _ = request.getfixturevalue(deployment)
    want, _ = H.oracle_dir(inputs["sample"])
    counts = collections.Counter(want.column("topic").to_pylist())
    shown = {}
    for line in result["docs_example"].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[1].isdigit():
            shown[cells[0]] = int(cells[1])
    # every topic with its records (PERMISSIVE also keeps a row per corrupt batch)
    assert set(shown) >= set(counts), result["docs_example"]
    assert all(shown[t] >= n for t, n in counts.items()), result["docs_example"]


# -- register(spark) with no arguments, from a pip-installed client -----------------------------

NO_ARGS_JOB = os.path.join(JOBS, "register_no_args_job.py")


@pytest.mark.parametrize("kind", ["classic", "connect"])
def test_register_without_arguments_from_a_pip_installed_client(kind, user, inputs, spark_connect,
                                                                 spark_cluster, tmp_path):
    """A notebook user's call: the client's kafkarec was pip-installed from the wheelhouse and
    no wheelhouse is at hand (no argument, no $KAFKAREC_WHEELHOUSE).  The session's workers are
    bare Pythons of the client's version and platform: a classic application on the session's
    cluster and the session's Connect server both get kafkarec and every dependency made from
    the client's installed distributions, and read every record."""
    _, _, client = user
    work = str(tmp_path)
    cfg = {"master": spark_cluster.master_url, "remote": spark_connect.url, "sample": inputs["sample"],
           "work": work}
    with open(os.path.join(work, "config.json"), "w") as fh:
        json.dump(cfg, fh)
    env = H.bare_env(spark_cluster.python, {"KAFKAREC_NATIVE_CACHE": os.path.join(work, "native-cache"),
                                            "KAFKAREC_SPARK_CACHE": os.path.join(work, "spark-cache")})
    env.pop("KAFKAREC_WHEELHOUSE", None)
    env["PYSPARK_DRIVER_PYTHON"] = client
    env["PYTHONWARNINGS"] = "ignore"
    proc = subprocess.Popen([client, NO_ARGS_JOB, os.path.join(work, "config.json"), kind], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        log, _ = proc.communicate(timeout=600)
    finally:
        stop_group(proc)
    assert proc.returncode == 0, log[-10000:]
    with open(os.path.join(work, f"{kind}.json")) as fh:
        result = json.load(fh)
    assert "connect-client" in result["client_kafkarec"] and "site-packages" in result["client_kafkarec"]
    # kafkarec zipped from the installed package, its dependencies as wheels of the installed ones
    assert result["shipped"][0].startswith("kafkarec-") and result["shipped"][0].endswith(".pyfiles.zip")
    shipped = " ".join(result["shipped"][1:])
    for project in ("packaging-", "crc32c-", "zstandard-"):
        assert project in shipped, result["shipped"]
    # a decode job's executors get none of the extras
    for project in ("cryptography-", "cffi-", "confluent_kafka-", "grpcio", "protobuf-", "setuptools-"):
        assert project not in shipped, result["shipped"]
    assert result["executors"]
    for e in result["executors"]:
        assert result["fingerprint"] in e and ".pyfiles.zip" in e
    want, _ = H.oracle_dir(inputs["sample"])
    assert result["records"] == want.num_rows
