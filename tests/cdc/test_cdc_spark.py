"""Debezium's change events in Spark (``format("kafkarec").option("cdc", "debezium")``), run as a
user runs it: ``spark-submit --py-files <kafkarec wheel>`` from a bare Python (a job of the one
user-way application, tests/support/spark/user_app.py).  The mirrored table (view=latest) is the
database's final SELECT; the change rows (view=log) are what kafkarec.cdc.changes gives in Python."""
from __future__ import annotations

import glob
import json
import os

import pytest

from support.spark import spark_helpers as H
from support.spark.user_app import UserAppJob

# the job's inputs are the session's captures, which the application's preparation asks for
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.components("debezium_capture", "mariadb_capture")]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)


def _prepare(request, work):
    log_dir, final = request.getfixturevalue("debezium_capture")
    try:
        mariadb_dir, mariadb_final = request.getfixturevalue("mariadb_capture")
        why = None
    except pytest.skip.Exception as exc:        # the PostgreSQL checks still run
        mariadb_dir, mariadb_final, why = "", None, exc.msg
    return [log_dir, mariadb_dir], (log_dir, final, mariadb_final, why)


JOB = UserAppJob("cdc", os.path.join(os.path.dirname(os.path.abspath(__file__)), "cdc_job.py"), _prepare,
                 driver_memory_gb=2)


@pytest.fixture(scope="module")
def submitted(user_app):
    result, (log_dir, final, _, _) = user_app.outcome(JOB)
    return result, log_dir, final


@pytest.fixture(scope="module")
def mariadb_submitted(user_app):
    result, (_, _, final, why) = user_app.outcome(JOB)
    if final is None:
        pytest.skip(why)
    return result, final


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


@pytest.mark.parametrize("table", ["customers", "orders"])
def test_mirrored_table_from_avro_is_the_databases_select(submitted, table):
    """valueFormat/keyFormat=registry with cdc=debezium and view=latest: op read from each
    decoded envelope, the typed after images are the final SELECT, keyed by the typed key."""
    result, _, final = submitted
    rows = result[f"avro.public.{table} latest"]
    assert all(r["cdcError"] is None and r["_corrupt_record"] is None and r["op"] in ("c", "u", "r")
               for r in rows)
    assert sorted((r["after"] for r in rows), key=lambda r: r["id"]) == final[table]
    assert all(r["key"] == {"id": r["after"]["id"]} for r in rows)


@pytest.mark.parametrize("table", ["customers", "orders"])
def test_avro_change_rows_are_the_json_converters(submitted, table):
    """view=log over the Avro events: the same changes as the JSON converter's topic."""
    result, _, _ = submitted
    avro = result[f"avro.public.{table} log"]
    plain = result[f"plain.public.{table} log"]
    assert [r["op"] for r in avro] == [r["op"] for r in plain]
    for image in ("before", "after"):
        assert [r[image] for r in avro] == [None if r[image] is None else json.loads(r[image]) for r in plain]
    assert [r["ts_ms"] for r in avro] == [r["ts_ms"] for r in plain]
    assert all(r["cdcError"] is None and r["_corrupt_record"] is None for r in avro)


def test_a_stream_of_avro_change_events_is_the_batch_rows(submitted):
    result, _, _ = submitted
    assert result["avro stream"] and result["avro stream"] == result["avro.public.customers log"]


# --- a truncate on one partition of a 3-partition topic (issue 40) ---

@pytest.mark.parametrize("table", ["customers", "orders"])
def test_mirrored_table_over_three_partitions_is_the_databases_select(submitted, table):
    result, _, final = submitted
    rows = result[f"parted.public.{table} latest"]
    assert all(r["cdcError"] is None and r["op"] in ("c", "u", "r") for r in rows)
    assert sorted((json.loads(r["after"]) for r in rows), key=lambda r: r["id"]) == final[table]


@pytest.mark.parametrize("prefix", ["plain", "dbz"])
@pytest.mark.parametrize("table", ["items", "orders", "order_lines"])
def test_mariadb_mirrored_table_is_the_databases_select(mariadb_submitted, prefix, table):
    """MariaDB through Debezium's MariaDB connector, 3 partitions a topic: view=latest is the
    final SELECT, the truncate of orders applied to the rows of every partition."""
    result, final = mariadb_submitted
    rows = result[f"{prefix}.shop.{table} latest"]
    assert all(r["cdcError"] is None and r["op"] in ("c", "u", "r") for r in rows)
    after = [json.loads(r["after"]) for r in rows]
    assert sorted(after, key=lambda r: tuple(r.values())[:2]) == final[table]
    assert table != "orders" or {r["partition"] for r in rows} == {0, 1, 2}


def test_a_stream_of_mariadb_change_events_is_the_batch_rows(mariadb_submitted):
    """A stream of the change events of a 3-partition topic gives the batch read's rows, the
    truncate event among them (a stream is the log: applying it is the consumer's part)."""
    result, _ = mariadb_submitted
    assert result["mariadb stream"] == result["mariadb batch"]
    assert [r["op"] for r in result["mariadb stream"]].count("t") == 1
