"""The broker tests' one Spark application: ``tests/broker/jobs/kafka_parity_job.py`` submitted
as a user runs kafkarec (``spark-submit --py-files <kafkarec wheel>`` from a bare Python, Spark's
Kafka source and spark-avro from jvm/spark's jars with ``--jars``) while the session broker
runs.  It writes what tests/broker/test_spark_kafka_parity.py and the Spark tests of
tests/broker/test_broker_tiered.py assert on; :func:`run` produces the stream topic's records
the job asks for between its two streams.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from support.brokers import produce
from support.paths import TESTS
from support.spark.spark_submit import spark_submit
from support.spark import spark_helpers as H
from support.brokers import tiered_topic

#: The topic the streams read besides the data topics, written by :func:`run` (300 records
#: before the first streams, 200 more between the two).
STREAM_TOPIC = "stream-parity"


def cases(data) -> list:
    """The batch reads compared with Spark's Kafka source: every data topic both ways, the topics
    whose log start deleteRecords moved both ways, offset windows inside txn's partitions, and a
    timestamp window of cf-none."""
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
        {"name": "log-start-uncommitted", "topics": sorted(data.log_start_topics), "options": {}},
        {"name": "log-start-committed", "topics": sorted(data.log_start_topics),
         "options": {"kafka.isolation.level": "read_committed"}},
        {"name": "txn-offsets-committed", "topics": ["txn"],
         "options": {"startingOffsets": json.dumps(starting), "endingOffsets": json.dumps(ending),
                     "kafka.isolation.level": "read_committed"}},
        {"name": "txn-offsets-uncommitted", "topics": ["txn"],
         "options": {"startingOffsets": json.dumps(starting), "endingOffsets": json.dumps(ending)}},
        {"name": "timestamps", "topics": ["cf-none", "kp-none", "java-none"],
         "options": {"startingTimestamp": str(t_start), "endingTimestamp": str(t_end)}},
    ]


def typed_spec(log_dir, data) -> dict:
    """registry-avro's writer schemas by id (from the values' prefixes) and the subject's latest."""
    import kafkarec.registry as kr
    reg = kr.load(log_dir)
    ids = {int.from_bytes(a.value[1:5], "big") for a in data.acked
           if a.topic == produce.REGISTRY_TOPIC and a.value is not None}
    assert len(ids) == 3
    return {"topic": produce.REGISTRY_TOPIC, "writers": {str(i): reg.by_id(i).schema for i in sorted(ids)},
            "reader": reg.get(f"{produce.REGISTRY_TOPIC}-value").schema}


def run(broker, data, stopped, work, restore=None) -> str:
    """Submit the job and see it through (bounded); returns its output folder.  ``stopped``:
    the session's copy of the broker's log dir and tiered storage after a clean shutdown;
    ``restore``: the job's SPEC ``restore`` (:func:`restore_spec`)."""
    bare = H.bare_python(sys.executable)
    wheel = H.wheelhouse(sys.executable)
    jars = H.kafka_source_jars(bare)
    out = work / "out"
    out.mkdir()
    gappy = str(work / "gappy-remote")
    tiered_topic.copy_with_gap(stopped.log_dir, stopped.remote_dir, gappy)
    produce.create_topics(broker.bootstrap, [produce.TopicInfo(
        STREAM_TOPIC, 2, {"internal.segment.bytes": "8192"}, "confluent-kafka", "lz4")])
    produce.produce_confluent(broker.bootstrap, STREAM_TOPIC, 300, partitions=2, **{"compression.type": "lz4"})
    spec = work / "spec.json"
    spec.write_text(json.dumps({
        "cases": cases(data), "typed": typed_spec(broker.log_dir, data),
        "state": {"topics": data.data_topics() + sorted(data.log_start_topics)},
        "stopped": stopped.log_dir,
        "tiered": {"topic": tiered_topic.TOPIC, "remote": broker.remote_dir,
                   "stopped_remote": stopped.remote_dir, "gappy_remote": gappy},
        "log_start": {"topics": sorted(data.log_start_topics)},
        "stream": {"topics": data.data_topics() + sorted(data.log_start_topics) + [STREAM_TOPIC]},
        **({"restore": restore} if restore else {})}))
    cmd, env = spark_submit(bare, os.path.join(TESTS, "broker", "jobs", "kafka_parity_job.py"),
                            [broker.bootstrap, broker.log_dir, spec, out], driver_memory="2g",
                            # Spark's INFO lines are megabytes of log per run; warnings and errors stay in job.log
                            conf={"spark.sql.shuffle.partitions": 4, "spark.log.level": "WARN"},
                            jars=jars, py_files=wheel,
                            env={"KAFKAREC_NATIVE_CACHE": str(work / "native"),
                                 "KAFKAREC_SPARK_CACHE": str(work / "spark-cache")})
    log = open(work / "job.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 900
        while not (out / "_stream1_done").exists():
            assert proc.poll() is None, (work / "job.log").read_text()[-6000:]
            assert time.monotonic() < deadline, "the broker Spark job did not reach its second streams in 900 s"
            time.sleep(0.5)
        first = {src: len(rows(out / "stream" / src)) for src in ("kafka", "kafkarec")}
        produce.produce_confluent(broker.bootstrap, STREAM_TOPIC, 200, partitions=2, **{"compression.type": "zstd"})
        (out / "_more_data").write_text(json.dumps(first))
        proc.wait(timeout=600)
        assert proc.returncode == 0, (work / "job.log").read_text()[-6000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    return out


#: what the Spark restore restores: the restore tests' topics (rs-bad's group is refused), each into
#: ``<topic>-spark`` under restore id ``spark``, 20 records a transaction, the groups as of the
#: history's ``as_of``; rs-crash restored to its 40th record first (``partial``)
RESTORED_TOPICS = ("rs-orders", "rs-compacted", "rs-crash")


def restore_options(history, suffix: str, restore_id: str) -> dict:
    """RestoreSpec.of's keywords of the Spark restore (``suffix`` "-spark") and of the command
    it is compared with."""
    return {"topics": list(RESTORED_TOPICS), "rename": {t: t + suffix for t in RESTORED_TOPICS},
            "restore_id": restore_id, "transaction_records": 20, "groups_as_of": history.as_of}


def restore_spec(history, target) -> dict:
    """The job's SPEC ``restore``: ``history`` (support.brokers.restore_history) into ``target``."""
    return {"source": history.log_dir, "target": target.bootstrap,
            "options": restore_options(history, "-spark", "spark"),
            "partial": {"topics": ["rs-crash"], "rename": {"rs-crash": "rs-crash-spark"},
                        "end_time": produce.BASE_TS + 40_000}}


def rows(folder):
    """A Parquet folder the job wrote, as rows sorted by topic, partition, offset (headers as pairs)."""
    import pyarrow.parquet as pq
    result = pq.read_table(str(folder)).to_pylist()
    for r in result:
        r["headers"] = [(h["key"], h["value"]) for h in (r["headers"] or [])]
    result.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    return result
