"""readStream.format("kafkarec") the user's way: a bare Python (pyspark, pyarrow, pandas
only; scripts/bare_python.sh), ``spark-submit --py-files <kafkarec cp312 wheel>`` on the
session's standalone cluster (its bare Python 3.12; support/spark/spark_cluster.py), as two
applications (the second restarts every query from its checkpoint; support/spark/stream_apps.py: the
typed stream's job, minPartitions' cut and the control run in the same applications).
jobs/stream_job.py grows a log directory while the queries read it (appends, a half-written
batch, a new segment, a new partition, transactions open across micro-batches and segments)
and reports what the Parquet sinks hold.  (A second pair in local mode, on Python 3.11, proved
nothing more: support/spark/stream_apps.py.)

Spark plans a streaming Python source in its own Python process
(python_streaming_source_runner), which looks for py-files under
``<SparkFiles root>/streaming_job/``; without spark_udfs.register's link there, a query
fails with ``ModuleNotFoundError: No module named 'spark_udfs'``.
"""
from __future__ import annotations

import pytest

from support.spark import spark_helpers as H

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)


def _check(apps):
    r1 = apps.result("stream", 1)
    print("phase 1:", r1)
    assert r1["exceptions"] == []
    assert r1["all_ok"] and r1["rows"] == r1["distinct"] == r1["written"]
    # read_committed: a transaction is still open; its records and the aborted ones are not there
    assert r1["open_transactions"] == 1 and r1["open_emitted"] == r1["aborted_emitted"] == 0
    assert r1["committed_ok"] and r1["committed_rows"] == r1["committed_expected"] < r1["written"]
    assert 0 < r1["max_rows_per_batch"] <= r1["max_offsets_per_trigger"] < r1["rows"]
    r2 = apps.result("stream", 2)
    print("phase 2:", r2)
    assert r2["exceptions"] == []
    # every data record exactly once, across the restart
    assert r2["all_ok"] and r2["rows"] == r2["distinct"] == r2["written"]
    assert r2["committed_ok"] and r2["committed_rows"] == r2["committed_distinct"] \
        == r2["committed_expected"] < r2["written"]
    assert r2["aborted_emitted"] == r2["open_emitted"] == 0
    assert 0 < r2["max_rows_per_batch"] <= r2["max_offsets_per_trigger"]
    # failOnDataLoss: fails when true, goes on from what is there when false
    assert "failOnDataLoss" in r2["loss_true"] and "not in the log any more" in r2["loss_true"]
    assert r2["loss_false_exception"] is None and r2["loss_ok"] and r2["loss_rows"] == 9
    return r1, r2


def test_without_the_link_the_stream_planner_misses_the_wheel(stream_apps_cluster):
    """The control: the same job with register()'s streaming_job link removed fails as users
    saw it fail before (the planner's Python cannot import spark_udfs).  The last part of the
    phase-2 application: a query started after the link is gone."""
    r = stream_apps_cluster.result("control", 2)
    assert r["link"] == "."
    assert "No module named 'spark_udfs'" in r["error"], r["error"]


def test_stream_min_partitions_cuts_offset_ranges_as_the_kafka_source(stream_apps_cluster):
    """minPartitions=5 over a micro-batch of orders-0 (40 offsets, zstd) and orders-1 (2):
    the Kafka source's rule gives orders-1 one task (round(2/42*5) = 0 -> 1) and orders-0
    the other four, 10 offsets each; without the option one task per topic-partition."""
    r = stream_apps_cluster.result("split", 1)
    print("phase 3:", r)
    for name in ("split", "unsplit"):
        assert r[name]["exception"] is None
        assert r[name]["batches"] == 1 and r[name]["rows_ok"] and r[name]["rows"] == 42
        assert r[name]["tasks_single_partition"]
    assert r["split"]["tasks"] == [["orders", 0, 0, 9, 10], ["orders", 0, 10, 19, 10],
                                   ["orders", 0, 20, 29, 10], ["orders", 0, 30, 39, 10],
                                   ["orders", 1, 0, 1, 2]]
    assert r["unsplit"]["tasks"] == [["orders", 0, 0, 39, 40], ["orders", 1, 0, 1, 2]]


def test_stream_on_bare_python_standalone_cluster(stream_apps_cluster):
    _check(stream_apps_cluster)
