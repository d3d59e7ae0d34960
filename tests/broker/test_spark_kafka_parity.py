"""Spark's own Kafka source is the yardstick (issue 27): for the topics a real broker wrote,
``spark.read.format("kafka")`` against the broker and ``spark.read.format("kafkarec")`` on
the broker's log dir give the same rows -- key, value, topic, partition, offset, timestamp,
timestampType and headers (``includeHeaders``) -- under both isolation levels, with starting
and ending offsets and timestamps; kafkarec reads the log dir while the broker runs (active
segments, preallocated indexes) and again after a clean shutdown; on the topics whose log start
offset ``deleteRecords`` moved (tests/support/brokers/deleted_records.py) both read from the log start, as
the Kafka source's ``earliest`` does, batch (the listed and the local reader) and stream, and
``includeDeletedRecords`` reads every record of the files.  kafkarec runs the user's
way: ``spark-submit --py-files <kafkarec wheel>`` from a bare Python; the Kafka source comes
from jvm/spark's jars (``--jars``).  One Spark application does every case (the broker tests'
one: tests/support/spark/spark_app.py, ``broker_spark``).
"""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from support.spark.spark_app import rows as _rows

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]


@pytest.mark.parametrize("case", ["all-uncommitted", "all-committed", "log-start-uncommitted",
                                  "log-start-committed", "txn-offsets-committed", "txn-offsets-uncommitted",
                                  "timestamps"])
@pytest.mark.parametrize("where", ["live", "stopped"])
def test_same_rows_as_sparks_kafka_source(broker_spark, case, where):
    out = broker_spark
    kafka = _rows(out / case / "kafka")
    ours = _rows(out / case / where)
    assert kafka, "the Kafka source read nothing: the case is empty"
    assert len(ours) == len(kafka)
    for a, b in zip(ours, kafka):
        assert a == b


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("where", ["live", "stopped"])
def test_keyed_state_is_the_window_over_the_kafka_source(broker_spark, isolation, where):
    """view=latest against what a user writes over Spark's Kafka source: each key's last record
    by offset, per topic-partition, without tombstones and null keys.  The broker's compacted
    topics are read as the cleaner left them, the transactional ones with both isolations."""
    out = broker_spark
    kafka = _rows(out / f"state-{isolation}" / "kafka")
    ours = _rows(out / f"state-{isolation}" / where)
    assert {"compacted", "compacted-expired", "txn", "deleted-in-aborted"} <= {r["topic"] for r in kafka}
    assert len(ours) == len(kafka)
    for a, b in zip(ours, kafka):
        assert a == b


def test_the_cases_cover_what_they_claim(broker_spark, broker_data):
    out = broker_spark
    every = _rows(out / "all-uncommitted" / "kafka")
    committed = _rows(out / "all-committed" / "kafka")
    assert {r["topic"] for r in every} == set(broker_data.data_topics())
    assert len(committed) < len(every)                       # aborted records left out
    assert {r["timestampType"] for r in every} == {0, 1}      # CreateTime and LogAppendTime
    assert any(r["headers"] for r in every) and any(r["key"] is None for r in every)
    assert any(r["value"] is None for r in every)            # tombstones of the compacted topics


def test_typed_values_as_from_avro(broker_spark):
    """kafkarec's valueFormat=registry and spark-avro's from_avro (writer schema, avroSchema = the
    subject's latest) give the same typed values, record for record: decimals, timestamps, enums,
    unions, arrays, maps and records over three evolving writer schemas."""
    out = broker_spark
    spark_avro = pq.read_table(str(out / "typed" / "from_avro"))
    ours = pq.read_table(str(out / "typed" / "kafkarec"))
    assert ours.column("_corrupt_record").null_count == ours.num_rows
    # the same types; from_avro also marks the fields Avro cannot make null as not null, where
    # kafkarec's data source declares every field nullable (its schema is fixed before any row)
    assert (str(ours.schema.field("value").type)
            == str(spark_avro.schema.field("value").type).replace(" not null", ""))
    a = sorted(ours.select(["offset", "value"]).to_pylist(), key=lambda r: r["offset"])
    b = sorted(spark_avro.to_pylist(), key=lambda r: r["offset"])
    assert len(a) == len(b) == 30
    for x, y in zip(a, b):
        assert x == y
    kinds = str(ours.schema.field("value").type)
    for kind in ("decimal", "timestamp", "list", "map", "struct"):
        assert kind in kinds, kinds


def test_stream_writes_what_the_kafka_sources_stream_writes(broker_spark):
    """readStream of every topic (Trigger.AvailableNow, Parquet sink), more records produced into
    one, the same streams again from their checkpoints: both sinks hold the same rows, each
    record once."""
    out = broker_spark
    first = json.loads((out / "_more_data").read_text())
    every = len(_rows(out / "all-uncommitted" / "kafka")) + len(_rows(out / "log-start-uncommitted" / "kafka"))
    assert first == {"kafka": every + 300, "kafkarec": every + 300}
    kafka = _rows(out / "stream" / "kafka")
    ours = _rows(out / "stream" / "kafkarec")
    assert len(kafka) == every + 500 and ours == kafka
    assert len({(r["topic"], r["partition"], r["offset"]) for r in ours}) == every + 500


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("where", ["live", "stopped"])
def test_local_reader_starts_at_the_log_start(broker_spark, isolation, where):
    """The partition folders loaded without a selection option (the local reader) give what the
    Kafka source gives of the topics whose log start deleteRecords moved."""
    case = "log-start-committed" if isolation == "read_committed" else "log-start-uncommitted"
    kafka = _rows(broker_spark / case / "kafka")
    ours = _rows(broker_spark / "log-start" / f"{where}-local-{isolation}")
    assert kafka and len(ours) == len(kafka)
    for a, b in zip(ours, kafka):
        assert a == b


@pytest.mark.parametrize("where", ["live", "stopped"])
def test_include_deleted_records_reads_the_files(broker_spark, kafka_broker, stopped_log_dir, where):
    """``includeDeletedRecords=true``: every record the segment files hold, those below the log
    start too (the log layer's reading of the same files, tests/support/brokers/readers.py)."""
    from support.brokers.deleted_records import TOPICS
    from support.brokers.readers import kafkarec_rows
    log_dir = kafka_broker.log_dir if where == "live" else stopped_log_dir
    error = broker_spark / "log-start" / f"{where}-included.error.txt"
    if error.exists():
        pytest.fail(f"the read with includeDeletedRecords failed: {error.read_text()}", pytrace=False)
    files = [r[:5] for r in kafkarec_rows(log_dir, set(TOPICS), False, include_deleted_records=True)]
    ours = [(r["topic"], r["partition"], r["offset"], r["key"], r["value"])
            for r in _rows(broker_spark / "log-start" / f"{where}-included")]
    assert len(ours) > len(_rows(broker_spark / "log-start-uncommitted" / "kafka"))
    assert ours == files
