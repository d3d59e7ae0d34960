"""``format("kafkarec").option("view", "latest")``: each topic-partition's keyed state in Spark,
the same rows as kafkarec.table.latest and as the model of Kafka's rules in tests/support/logs/keyed.py,
with the Kafka source's isolation level and ending options; error rows of undecodable
batches kept once; options that make no sense with a state refused."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest

from support.spark import spark_helpers as H
from support.spark.user_app import UserAppJob

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

from support.logs.keyed import T0, keyed_world, model_state, state_of  # noqa: E402

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("keyed") / "logs")
    return root, keyed_world(root)


def _latest(spark, path, **options):
    reader = spark.read.format("kafkarec").option("view", "latest")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path).toArrow()


def _rows(t):
    """Rows by topic, partition, offset; timestamps as ms (Spark's carry the session's zone)."""
    import pyarrow as pa
    t = t.select(COLUMNS)
    t = t.set_column(COLUMNS.index("timestamp"), "timestamp",
                     t["timestamp"].cast(pa.timestamp("ms")).cast(pa.int64()))
    return sorted(t.to_pylist(), key=lambda r: (r["topic"], r["partition"], r["offset"]))


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_state_of_every_partition(spark, world, isolation):
    from kafkarec import table
    root, events = world
    committed = isolation == "read_committed"
    got = _latest(spark, root, **{"kafka.isolation.level": isolation})
    for (topic, partition), ev in events.items():
        assert state_of(got, topic, partition) == model_state(ev, read_committed=committed)
    assert _rows(got) == _rows(table.latest(root, read_committed=committed).table)


def test_many_passes_when_the_keys_do_not_fit(spark, world):
    root, events = world
    got = _latest(spark, root, dedupeBufferSize="1k", subscribe="balances")
    assert state_of(got, "balances", 0) == model_state(events[("balances", 0)])
    assert got.num_rows == 2000


def test_as_of_ending_offsets_and_timestamps(spark, world):
    root, events = world
    ends = {"profiles": {"0": 50, "1": 120}, "balances": {"0": 7777}}
    got = _latest(spark, root, endingOffsets=json.dumps(ends))
    for (topic, partition), ev in events.items():
        assert state_of(got, topic, partition) == model_state(ev, end_offset=ends[topic][str(partition)])
    # record at offset o has timestamp T0 + o (keyed.write_partition)
    got = _latest(spark, root, endingTimestamp=str(T0 + 90), subscribe="profiles")
    for partition in (0, 1):
        assert state_of(got, "profiles", partition) == model_state(events[("profiles", partition)], end_offset=90)


def test_headers_and_typed_columns_come_along(spark, world):
    root, _ = world
    df = (spark.read.format("kafkarec").option("view", "latest").option("includeHeaders", "true")
          .option("subscribe", "profiles").load(root))
    assert "headers" in df.columns
    assert df.count() == _latest(spark, root, subscribe="profiles").num_rows


def test_undecodable_batches_are_error_rows_once(spark, sample, corrupt):
    """The corrupt copy of the sample: the state of what decodes, and every bad batch once, as
    the log view reports them."""
    log = spark.read.format("kafkarec").option("readCommitted", "false").load(corrupt["root"]).toArrow()
    state = _latest(spark, corrupt["root"])
    bad = lambda t: sorted(x for x in t.column("_corrupt_record").to_pylist() if x is not None)  # noqa: E731
    assert bad(state) and bad(state) == bad(log)
    with pytest.raises(Exception, match="FAILFAST"):
        _latest(spark, corrupt["root"], mode="FAILFAST")


def test_what_a_state_cannot_be(spark, world):
    root, _ = world
    with pytest.raises(Exception, match="includeControl=true cannot be used with view=latest"):
        _latest(spark, root, includeControl="true")
    with pytest.raises(Exception, match="dedupeBufferSize must be at least 1024 bytes"):
        _latest(spark, root, dedupeBufferSize="100")
    with pytest.raises(Exception, match="view must be one of log, latest"):
        spark.read.format("kafkarec").option("view", "newest").load(root).count()
    query = (spark.readStream.format("kafkarec").option("view", "latest").load(root)
             .writeStream.format("memory").queryName("never").start())
    try:
        with pytest.raises(Exception, match="view=latest is for batch reads"):
            query.awaitTermination(120)
    finally:
        query.stop()


# -- the user's way: spark-submit --py-files from a bare Python (a job of the one user-way application,
# tests/support/spark/user_app.py); the same rows as Python and the CLI --

def _cases():
    ends = {"profiles": {"0": 50, "1": 120}, "balances": {"0": 7777}}
    by_time = {"profiles": {"0": T0 + 30, "1": T0 + 60}, "balances": {"0": T0 + 5000}}
    return {
        "everything": ({}, {}, []),
        "committed": ({"kafka.isolation.level": "read_committed"}, {"read_committed": True},
                      ["--read-committed"]),
        "end-time": ({"endingTimestamp": str(T0 + 90)}, {"end_time": T0 + 90}, ["--end-time", str(T0 + 90)]),
        "end-time-committed-small-map": (
            {"endingTimestamp": str(T0 + 400), "kafka.isolation.level": "read_committed", "dedupeBufferSize": "1k"},
            {"end_time": T0 + 400, "read_committed": True, "buffer_bytes": 1024},
            ["--end-time", str(T0 + 400), "--read-committed", "--dedupe-buffer-size", "1024"]),
        "ending-offsets": ({"endingOffsets": json.dumps(ends)},
                           {"selection": {"endingOffsets": json.dumps(ends)}}, None),
        "ending-offsets-by-timestamp": ({"endingOffsetsByTimestamp": json.dumps(by_time)},
                                        {"selection": {"endingOffsetsByTimestamp": json.dumps(by_time)}}, None),
    }


def _b64(v):
    return None if v is None else base64.b64encode(v).decode()


def _prepare(request, work):
    root = str(work / "logs")
    keyed_world(root)
    (work / "cases.json").write_text(json.dumps({n: c[0] for n, c in _cases().items()}))
    return [root, work / "cases.json"], root


JOB = UserAppJob("table", os.path.join(H.ROOT, "tests", "spark", "jobs", "table_job.py"), _prepare,
                 driver_memory_gb=2)


@pytest.fixture(scope="module")
def submitted(user_app):
    """The job's rows by case, and its log directory: a keyed world of its own, written as the
    module's ``world`` is (a module's fixture cannot feed the session's one application)."""
    return user_app.outcome(JOB)


@pytest.mark.parametrize("case", list(_cases()))
def test_bare_executors_python_and_cli_agree(submitted, case):
    from kafkarec import table
    spark_rows, root = submitted
    _, python_kw, cli_args = _cases()[case]
    t = table.latest(root, **python_kw).table
    python_rows = sorted([r["topic"], r["partition"], r["offset"], _b64(r["key"]), _b64(r["value"])]
                         for r in t.select(["topic", "partition", "offset", "key", "value"]).to_pylist())
    assert spark_rows[case] == python_rows and len(python_rows) > 10
    if cli_args is not None:
        proc = subprocess.run([sys.executable, "-m", "kafkarec", "table", root, *cli_args],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        cli_rows = sorted([r["topic"], r["partition"], r["offset"], r["key"], r["value"]]
                          for r in map(json.loads, proc.stdout.splitlines()))
        assert cli_rows == python_rows
