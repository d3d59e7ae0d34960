"""Spark's own Kafka source is the yardstick (issue 27): for the topics a real broker wrote,
``spark.read.format("kafka")`` against the broker and ``spark.read.format("kafkarec")`` on
the broker's log dir give the same rows -- key, value, topic, partition, offset, timestamp,
timestampType and headers (``includeHeaders``) -- under both isolation levels, with starting
and ending offsets and timestamps; kafkarec reads the log dir while the broker runs (active
segments, preallocated indexes) and again after a clean shutdown.  kafkarec runs the user's
way: ``spark-submit --py-files <kafkarec wheel>`` from a bare Python; the Kafka source comes
from jvm/spark's jars (``--jars``).  One Spark application does every case.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

import jvm
import spark_helpers as H

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "kafka_parity_job.py")


def _cases(data) -> list:
    topics = data.data_topics()
    by_tp = {}
    for a in data.acked:
        by_tp.setdefault((a.topic, a.partition), []).append(a)
    # offsets: a window inside each partition of txn (commits and aborts interleaved)
    starting, ending = {"txn": {}}, {"txn": {}}
    for (t, p), recs in by_tp.items():
        if t == "txn":
            offsets = sorted(r.offset for r in recs)
            starting["txn"][str(p)] = offsets[len(offsets) // 4]
            ending["txn"][str(p)] = offsets[3 * len(offsets) // 4]
    # timestamps: CreateTime records of cf-none between its 25th and 75th percentile
    stamps = sorted(r.timestamp for r in by_tp[("cf-none", 0)])
    t_start, t_end = stamps[len(stamps) // 4], stamps[3 * len(stamps) // 4]
    return [
        {"name": "all-uncommitted", "topics": topics, "options": {}},
        {"name": "all-committed", "topics": topics, "options": {"kafka.isolation.level": "read_committed"}},
        {"name": "txn-offsets-committed", "topics": ["txn"],
         "options": {"startingOffsets": json.dumps(starting), "endingOffsets": json.dumps(ending),
                     "kafka.isolation.level": "read_committed"}},
        {"name": "txn-offsets-uncommitted", "topics": ["txn"],
         "options": {"startingOffsets": json.dumps(starting), "endingOffsets": json.dumps(ending)}},
        {"name": "timestamps", "topics": ["cf-none", "kp-none", "java-none"],
         "options": {"startingTimestamp": str(t_start), "endingTimestamp": str(t_end)}},
    ]


def _typed_spec(log_dir, data) -> dict:
    """registry-avro's writer schemas by id (from the values' prefixes) and the subject's latest."""
    import kafkarec.registry as kr
    import produce
    reg = kr.load(log_dir)
    ids = {int.from_bytes(a.value[1:5], "big") for a in data.acked
           if a.topic == produce.REGISTRY_TOPIC and a.value is not None}
    assert len(ids) == 3
    return {"topic": produce.REGISTRY_TOPIC, "writers": {str(i): reg.by_id(i).schema for i in sorted(ids)},
            "reader": reg.get(f"{produce.REGISTRY_TOPIC}-value").schema}


@pytest.fixture(scope="module")
def parity(kafka_broker, broker_data, tmp_path_factory):
    bare = H.bare_python(sys.executable)
    wheel = H.wheelhouse(sys.executable)
    jars_dir = subprocess.run([bare, "-c", "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
    jars = jvm.spark_jars(jars_dir)
    work = tmp_path_factory.mktemp("parity")
    out = work / "out"
    out.mkdir()
    cases = _cases(broker_data)
    spec = work / "spec.json"
    import produce
    produce.create_topics(kafka_broker.bootstrap, [produce.TopicInfo(
        STREAM_TOPIC, 2, {"internal.segment.bytes": "8192"}, "confluent-kafka", "lz4")])
    produce.produce_confluent(kafka_broker.bootstrap, STREAM_TOPIC, 300, partitions=2,
                              **{"compression.type": "lz4"})
    spec.write_text(json.dumps({"cases": cases, "typed": _typed_spec(kafka_broker.log_dir, broker_data),
                                "stream": {"topics": broker_data.data_topics() + [STREAM_TOPIC]},
                                "state": {"topics": broker_data.data_topics()}}))
    env = H.bare_env(bare, {"KAFKAREC_NATIVE_CACHE": str(work / "native"),
                            "KAFKAREC_SPARK_CACHE": str(work / "spark-cache")})
    cmd = [os.path.join(os.path.dirname(bare), "spark-submit"), "--master", "local[2]", "--driver-memory", "2g",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4",
           "--jars", ",".join(jars), "--py-files", wheel,
           JOB, kafka_broker.bootstrap, kafka_broker.log_dir, str(spec), str(out)]
    log = open(work / "job.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while not (out / "_live_done").exists():
            assert proc.poll() is None, (work / "job.log").read_text()[-6000:]
            assert time.monotonic() < deadline, "the parity job did not finish its live reads in 600 s"
            time.sleep(0.5)
        stopped = kafka_broker.snapshot_stopped(str(work / "stopped"))
        (out / "_stopped.tmp").write_text(stopped)
        os.rename(out / "_stopped.tmp", out / "_stopped")
        while not (out / "_stream1_done").exists():
            assert proc.poll() is None, (work / "job.log").read_text()[-6000:]
            assert time.monotonic() < deadline + 300, "the parity job's first streams did not finish"
            time.sleep(0.5)
        first = {src: len(_rows(out / "stream" / src)) for src in ("kafka", "kafkarec")}
        produce.produce_confluent(kafka_broker.bootstrap, STREAM_TOPIC, 200, partitions=2,
                                  **{"compression.type": "zstd"})
        (out / "_more_data").write_text(json.dumps(first))
        proc.wait(timeout=600)
        assert proc.returncode == 0, (work / "job.log").read_text()[-6000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    return out, cases


STREAM_TOPIC = "stream-parity"


def _rows(folder):
    rows = pq.read_table(str(folder)).to_pylist()
    for r in rows:
        r["headers"] = [(h["key"], h["value"]) for h in (r["headers"] or [])]
    rows.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    return rows


@pytest.mark.parametrize("case", ["all-uncommitted", "all-committed", "txn-offsets-committed",
                                  "txn-offsets-uncommitted", "timestamps"])
@pytest.mark.parametrize("where", ["live", "stopped"])
def test_same_rows_as_sparks_kafka_source(parity, case, where):
    out, cases = parity
    kafka = _rows(out / case / "kafka")
    ours = _rows(out / case / where)
    assert kafka, "the Kafka source read nothing: the case is empty"
    assert len(ours) == len(kafka)
    for a, b in zip(ours, kafka):
        assert a == b


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("where", ["live", "stopped"])
def test_keyed_state_is_the_window_over_the_kafka_source(parity, isolation, where):
    """view=latest against what a user writes over Spark's Kafka source: each key's last record
    by offset, per topic-partition, without tombstones and null keys.  The broker's compacted
    topics are read as the cleaner left them, the transactional ones with both isolations."""
    out, _ = parity
    kafka = _rows(out / f"state-{isolation}" / "kafka")
    ours = _rows(out / f"state-{isolation}" / where)
    assert {"compacted", "compacted-expired", "txn"} <= {r["topic"] for r in kafka}
    assert len(ours) == len(kafka)
    for a, b in zip(ours, kafka):
        assert a == b


def test_the_cases_cover_what_they_claim(parity, broker_data):
    out, _ = parity
    every = _rows(out / "all-uncommitted" / "kafka")
    committed = _rows(out / "all-committed" / "kafka")
    assert {r["topic"] for r in every} == set(broker_data.data_topics())
    assert len(committed) < len(every)                       # aborted records left out
    assert {r["timestampType"] for r in every} == {0, 1}      # CreateTime and LogAppendTime
    assert any(r["headers"] for r in every) and any(r["key"] is None for r in every)
    assert any(r["value"] is None for r in every)            # tombstones of the compacted topics


def test_typed_values_as_from_avro(parity):
    """kafkarec's valueFormat=registry and spark-avro's from_avro (writer schema, avroSchema = the
    subject's latest) give the same typed values, record for record: decimals, timestamps, enums,
    unions, arrays, maps and records over three evolving writer schemas."""
    out, _ = parity
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


def test_stream_writes_what_the_kafka_sources_stream_writes(parity):
    """readStream of every topic (Trigger.AvailableNow, Parquet sink), more records produced into
    one, the same streams again from their checkpoints: both sinks hold the same rows, each
    record once."""
    out, _ = parity
    first = json.loads((out / "_more_data").read_text())
    every = len(_rows(out / "all-uncommitted" / "kafka"))
    assert first == {"kafka": every + 300, "kafkarec": every + 300}
    kafka = _rows(out / "stream" / "kafka")
    ours = _rows(out / "stream" / "kafkarec")
    assert len(kafka) == every + 500 and ours == kafka
    assert len({(r["topic"], r["partition"], r["offset"]) for r in ours}) == every + 500
