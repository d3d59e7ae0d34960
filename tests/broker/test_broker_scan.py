"""kafkarec.scan.LogScan on the session broker's log dir (issue 42): the same rows as Spark's own Kafka
source read from the broker (the one Spark application's cases, tests/support/spark/spark_app.py: every
codec, transactions under both isolation levels, compacted topics, headers, offset and timestamp
windows in the Kafka source's meaning) and as librdkafka's consumer."""
from __future__ import annotations

import pytest

from support.brokers import produce
from support.brokers.readers import arrow_rows, kafkarec_rows
from support.spark.spark_app import cases, rows

pytestmark = [pytest.mark.broker, pytest.mark.slow]

def _scan_rows(log_dir, case):
    from kafkarec.scan import LogScan
    options = dict(case["options"])
    isolation = options.pop("kafka.isolation.level", "read_uncommitted")
    table = LogScan(log_dir, topics=case["topics"], isolation_level=isolation,
                    selection=options or None).to_table()
    out = table.to_pylist()
    for r in out:
        r["headers"] = [(h["key"], h["value"]) for h in (r["headers"] or [])]
    out.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    return out


@pytest.mark.spark
@pytest.mark.parametrize("name", ["all-uncommitted", "all-committed", "txn-offsets-committed",
                                  "txn-offsets-uncommitted", "timestamps"])
def test_same_rows_as_sparks_kafka_source(broker_spark, broker_data, stopped_log_dir, name):
    (case,) = [c for c in cases(broker_data) if c["name"] == name]
    kafka = rows(broker_spark / name / "kafka")
    ours = _scan_rows(stopped_log_dir, case)
    assert kafka and len(ours) == len(kafka)
    for a, b in zip(ours, kafka):
        assert a == b


@pytest.mark.parametrize("iso", ["read_uncommitted", "read_committed"])
def test_same_rows_as_the_consumer(kafka_broker, broker_data, stopped_log_dir, iso):
    """Every data topic as librdkafka's consumer reads it, and as the log layer's reading does."""
    from kafkarec.scan import LogScan
    topics = broker_data.data_topics()
    got = sorted(arrow_rows(LogScan(stopped_log_dir, topics=topics, isolation_level=iso).to_table()),
                 key=lambda r: (r[0], r[1], r[2]))
    assert got == produce.consume(kafka_broker.bootstrap, topics, iso)
    assert got == kafkarec_rows(stopped_log_dir, topics, iso == "read_committed")
