"""``spark_udfs.restore``'s driver and task functions without a cluster: a task's kafkarec error (a
bare executor without confluent-kafka) comes back to the driver as itself, naming the extra, and
the options Spark cannot honour are refused before anything runs.  The restore on real executors
is tests/broker/test_broker_restore_spark.py's."""
from __future__ import annotations

import pyarrow as pa
import pytest

from kafkarec.errors import MissingExtraError, UsageError
from kafkarec.restore import RestoreSpec, SourcePartition


class _Frame:
    """What ``spark.range(n, numPartitions=n).mapInArrow(f, schema).collect()`` gives, task by task:
    ``f`` over one batch holding the task's one id."""

    def __init__(self, n: int, fn=None):
        self.n, self.fn = n, fn

    def mapInArrow(self, fn, schema):
        return _Frame(self.n, fn)

    def collect(self):
        rows = []
        for i in range(self.n):
            batch = pa.RecordBatch.from_arrays([pa.array([i], pa.int64())], names=["id"])
            for out in self.fn(iter([batch])):
                rows += out.to_pylist()
        return rows


class _Spark:
    def __init__(self, conf=None):
        self.conf = dict(conf or {})
        self.ranges = []

    def range(self, n, numPartitions):
        assert n == numPartitions       # one partition index per task
        self.ranges.append(n)
        return _Frame(n)


def _spec() -> RestoreSpec:
    return RestoreSpec.of("no-such-history", "127.0.0.1:1", restore_id="units")


def test_a_task_without_the_client_raises_its_extra_on_the_driver(monkeypatch):
    import sys
    from spark_udfs._restore import _run
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)      # as on an executor without it
    parts = [SourcePartition("orders", p, 0, 10, 10, "orders") for p in range(2)]
    spark = _Spark()
    with pytest.raises(MissingExtraError) as info:
        _run(spark, _spec(), parts, None)
    assert spark.ranges == [2]
    assert str(info.value) == "confluent-kafka is not installed: pip install 'kafkarec[restore]'"
    assert info.value.extra == "restore"


def test_speculation_and_a_spec_with_options_are_refused_before_anything_runs():
    import spark_udfs
    spark = _Spark({"spark.speculation": "true"})
    with pytest.raises(UsageError, match="spark.speculation is on"):
        spark_udfs.restore(spark, _spec())
    with pytest.raises(UsageError, match="not both"):
        spark_udfs.restore(_Spark(), _spec(), topics="orders")
    assert spark.ranges == []
