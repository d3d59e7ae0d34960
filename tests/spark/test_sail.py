"""kafkarec on Sail (``pysail``), a Spark Connect server in Rust (issue 82 item 2).

One ``sail spark server`` per test session (support/spark/sail.py: no JVM; its Python data sources run
in the server's own Python, which takes kafkarec from the checkout), and one client run of
jobs/sail_job.py over it (the Sail venv's ``pyspark-client`` at scripts/versions.sh's pin); each test
holds one surface's rows against :class:`kafkarec.scan.LogScan`'s over the same log directory.
"""
from __future__ import annotations

import json
import os
import subprocess

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.spark import spark_helpers as H
from support.spark.sail import checkout_env

pytestmark = [pytest.mark.slow]

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "sail_job.py")
DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs",
                    "spark.md")


@pytest.fixture(scope="module")
def run(sail_server, tmp_path_factory):
    """(result.json, work folder, sample log dir, clean segment) of the one client run."""
    sample = H.sample_logs(tmp_path_factory, seed=82)
    work = tmp_path_factory.mktemp("sail-job")
    segment = os.path.join(sample, "payments-0", "00000000000000000000.log")
    cfg = {"remote": sail_server.url, "work": str(work), "sample": sample, "segment": segment, "docs": DOCS}
    (work / "config.json").write_text(json.dumps(cfg))
    proc = subprocess.run([sail_server.python, JOB, str(work / "config.json")], env=checkout_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    with open(work / "result.json") as fh:
        return json.load(fh), str(work), sample, segment


def rows(table, columns=("topic", "partition", "offset", "key", "value")):
    """The records of ``table`` as sorted tuples (error rows, whose offset is null, left out)."""
    table = table.filter(pc.is_valid(table.column("offset")))
    return sorted(zip(*(table.column(c).to_pylist() for c in columns)), key=repr)


def saved(run, name):
    with pa.OSFile(os.path.join(run[1], f"{name}.arrow"), "rb") as fh:
        return pa.ipc.open_file(fh).read_all()


def oracle(path, **kw):
    from kafkarec.scan import LogScan
    return LogScan(path, mode="DROPMALFORMED", **kw).to_table()


def test_register_warns_once_and_checks_the_servers_own_kafkarec(run):
    result = run[0]
    assert len(result["register"]) == 1, result["register"]
    assert "does not take artifacts" in result["register"][0] and "ship=False" in result["register"][0]
    assert result["executors"] and "kafkarec" in result["executors"][0]


def test_batch_read_equals_logscan_with_error_rows(run):
    full = saved(run, "full")
    assert rows(full) == rows(oracle(run[2]))
    corrupt = [c for c in full.column("_corrupt_record").to_pylist() if c]
    assert corrupt and all("ChecksumError" in c or "byte" in c for c in corrupt), corrupt


def test_default_parallelism_is_the_pieces_of_work(run):
    from kafkarec.scan import LogScan
    # each piece its own task at least (a piece larger than the read's split size is cut further)
    assert run[0]["tasks_default"] >= len(LogScan(run[2]).pieces()) > 1


def test_filters_are_pushed_and_rows_equal(run):
    import pyarrow.compute as pc
    want = oracle(run[2])
    want = want.filter(pc.and_(pc.and_(pc.equal(want.column("topic"), "orders"),
                                       pc.and_(pc.greater_equal(want.column("offset"), 100),
                                               pc.less(want.column("offset"), 900))),
                               pc.greater_equal(want.column("timestamp").cast(pa.int64()), 1700000005000)))
    assert rows(saved(run, "filtered")) == rows(want) != []
    # the topic filter reached pushFilters: only orders' pieces are planned
    assert 0 < run[0]["tasks_filtered"] < run[0]["tasks_default"]
    assert run[0]["limit"] == 3


def test_starting_offsets_subscribe(run):
    want = oracle(run[2])
    start = {0: 100, 1: 0, 2: 200}
    keep = [t == "orders" and o >= start[p] for t, p, o in zip(want.column("topic").to_pylist(),
                                                           want.column("partition").to_pylist(),
                                                           want.column("offset").to_pylist())]
    assert rows(saved(run, "starting")) == rows(want.filter(pa.array(keep))) != []


def test_temporary_view_and_min_partitions(run):
    want = rows(oracle(run[2]))
    assert rows(saved(run, "view")) == want
    assert rows(saved(run, "min5")) == want
    assert run[0]["tasks_min5"] >= 5


def test_read_committed(run):
    want = oracle(run[2], isolation_level="read_committed")
    assert rows(saved(run, "committed")) == rows(want)
    assert len(rows(want)) < len(rows(oracle(run[2])))


def test_user_schema_with_a_timestamp(run):
    got = saved(run, "user_schema")
    assert got.column_names == ["topic", "partition", "offset", "timestamp"]
    want = oracle(run[2])
    cols = ("topic", "partition", "offset")
    assert rows(got, cols) == rows(want, cols)
    got_ts = sorted(v.timestamp() for v in got.column("timestamp").to_pylist() if v is not None)
    want_ts = sorted(v.timestamp() for v in want.column("timestamp").to_pylist())
    assert got_ts == want_ts


def test_failfast_and_stream_fail_in_one_line(run):
    assert "FAILFAST" in run[0]["failfast"], run[0]["failfast"]
    stream = run[0]["stream"]
    assert stream and "Sail" in stream and "batch only" in stream and "maxOffsetsPerTrigger" in stream, stream


def test_decode_function_and_sails_explode_limit(run):
    assert run[0]["decode"] is None, run[0]["decode"]
    want = rows(oracle(run[3]), ("offset", "key", "value"))
    assert rows(saved(run, "decode"), ("offset", "key", "value")) == want
    # Sail 0.7.2's own limit (docs/spark.md#sail): a UDTF's binary argument reaches Python as text
    assert run[0]["explode"] and "ArrowInvalid: Could not convert b'" in run[0]["explode"], run[0]["explode"]


def test_docs_sail_example(run):
    printed = run[0]["docs"]
    assert "orders" in printed and "payments" in printed, printed
