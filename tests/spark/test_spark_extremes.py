"""Every value Kafka can store comes out of every Spark path (issue 12 item 3).

Batches written by Kafka's own MemoryRecordsBuilder (../shared/tools/kafka-java
``write``) with timestamps up to ``Long.MAX_VALUE`` (valid in Kafka; Spark's
timestamps end at 9999-12-31), offsets next to ``Long.MAX_VALUE``, the largest
producer id, epoch, leader epoch and a sequence that wraps.  In range a
timestamp is Spark's ``timestamp``; outside it the ``timestamp`` is null and
``timestampMs`` holds Kafka's milliseconds (PERMISSIVE, DROPMALFORMED), or the
task fails naming the record (FAILFAST).  Everything else equals kafkarec's
own decoder, row by row.
"""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from support.spark import spark_helpers as H
from support.paths import SHARED, require_shared

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

KAFKA_JAVA = os.path.join(SHARED, "tools", "kafka-java", "kafka-java")
LONG_MAX = 2 ** 63 - 1
HALF = LONG_MAX // 2
SPEC = {"batches": [
    {"base_offset": 0, "records": [
        {"timestamp": HALF, "key": "k1", "value": "Long.MAX_VALUE / 2"},
        {"timestamp": 1700000000000, "key": "k2", "value": "2023"},
        {"timestamp": 0, "value": "epoch"},
        {"timestamp": -1, "value": "no timestamp"}]},
    {"codec": "zstd", "base_offset": 10, "producer_id": LONG_MAX, "producer_epoch": 32767,
     "base_sequence": 2147483646, "partition_leader_epoch": 2147483647, "records": [
         {"timestamp": LONG_MAX, "value": "Long.MAX_VALUE"},
         {"timestamp": 253402300799999, "value": "last ms of 9999"},
         {"timestamp": 253402300800000, "value": "first ms of 10000"}]},
    {"codec": "lz4", "timestamp_type": "log_append_time", "log_append_time": HALF + 7,
     "base_offset": 20, "records": [{"timestamp": 5, "value": "log append time"}]},
    {"base_offset": LONG_MAX - 7, "records": [
        {"timestamp": 1, "value": "near the last offset"},
        {"offset": LONG_MAX - 1, "timestamp": 2, "value": "the last offset a record can have"}]},
]}
OUT_OF_RANGE = {0: HALF, 10: LONG_MAX, 12: 253402300800000, 20: HALF + 7}


@pytest.fixture(scope="module")
def extreme(tmp_path_factory):
    """A log directory with one segment written by Kafka's MemoryRecordsBuilder."""
    require_shared("Kafka's writer (tools/kafka-java)", KAFKA_JAVA)
    work = tmp_path_factory.mktemp("extreme")
    spec = work / "spec.json"
    spec.write_text(json.dumps(SPEC))
    folder = work / "logs" / "extreme-0"
    folder.mkdir(parents=True)
    path = folder / "00000000000000000000.log"
    subprocess.run([KAFKA_JAVA, "write", str(spec), str(path)], check=True, capture_output=True,
                   timeout=300)
    return str(path)


def _oracle(path):
    import kafkarec
    with open(path, "rb") as fh:
        data = fh.read()
    return kafkarec.to_arrow(data, topic="extreme", partition=0, batch_columns=True), data


def _check_rows(rows, oracle, *, prefix=""):
    """Spark rows (dicts) against kafkarec's table: raw ms kept, timestamp only in range."""
    import datetime
    want = {r["offset"]: r for r in oracle.to_pylist()}
    assert len(rows) == len(want) == 10
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    for row in rows:
        w = want[row[prefix + "offset"]]
        raw = int((w["timestamp"] - datetime.datetime(1970, 1, 1)).total_seconds() * 1000) \
            if not isinstance(w["timestamp"], int) else w["timestamp"]
        assert row[prefix + "timestampMs"] == raw
        if row[prefix + "offset"] in OUT_OF_RANGE:
            assert raw == OUT_OF_RANGE[row[prefix + "offset"]]
            assert row[prefix + "timestamp"] is None
        else:
            ts = row[prefix + "timestamp"]
            if ts.tzinfo is None:
                ts = ts.replace(tzinfo=datetime.timezone.utc)
            assert (ts - epoch) // datetime.timedelta(milliseconds=1) == raw
        for k in ("value", "key", "timestampType"):
            assert row[prefix + k] == w[k], (k, row, w)


def _raw_ms(table):
    import pyarrow as pa
    return table.set_column(table.schema.get_field_index("timestamp"), "timestamp",
                            table.column("timestamp").cast(pa.int64()))


def _read(spark, path, mode):
    return (spark.read.format("kafkarec").option("mode", mode).option("batchColumns", "true")
            .load(path))


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_data_source_keeps_every_value(spark, extreme, mode):
    oracle, _ = _oracle(extreme)
    oracle = _raw_ms(oracle)
    rows = [r.asDict() for r in _read(spark, extreme, mode).collect()]
    _check_rows(rows, oracle)
    if mode == "PERMISSIVE":
        assert all(r["_corrupt_record"] is None for r in rows)
    by_offset = {r["offset"]: r for r in rows}
    for w in oracle.to_pylist():   # batch-level extremes as Kafka wrote them
        r = by_offset[w["offset"]]
        for k in ("producerId", "producerEpoch", "sequence", "partitionLeaderEpoch",
                  "batchBaseOffset", "batchPosition", "compression"):
            assert r[k] == w[k], (k, r, w)
    assert by_offset[11]["sequence"] == 2147483647 and by_offset[12]["sequence"] == 0  # wraps
    assert by_offset[LONG_MAX - 1]["offset"] == LONG_MAX - 1
    assert by_offset[10]["producerId"] == LONG_MAX and by_offset[10]["producerEpoch"] == 32767


def test_data_source_failfast_names_the_record(spark, extreme):
    with pytest.raises(Exception) as info:
        _read(spark, extreme, "FAILFAST").collect()
    text = str(info.value)
    # the file may be read by several tasks (minPartitions): whichever fails first names its record
    assert re.search(r"record at offset \d+ has timestamp -?\d+ ms, outside Spark's timestamp range", text)
    assert extreme in text


def test_decode_explode_and_udtf_keep_every_value(spark, extreme):
    import spark_udfs
    oracle = _raw_ms(_oracle(extreme)[0])
    with open(extreme, "rb") as fh:
        blob = fh.read()
    df = spark.createDataFrame([(1, blob)], "id int, blob binary")
    df.createOrReplaceTempView("extreme_blobs")
    # kafkarec_decode (arrow_udf)
    rows = spark.sql("SELECT d.error, d.records FROM (SELECT kafkarec_decode(blob) AS d "
                     "FROM extreme_blobs)").collect()
    assert rows[0]["error"] is None
    _check_rows([r.asDict() for r in rows[0]["records"]], oracle)
    # explode_records (mapInArrow), PERMISSIVE and DROPMALFORMED
    for mode in ("PERMISSIVE", "DROPMALFORMED"):
        out = spark_udfs.explode_records(df, "blob", keep=["id"], mode=mode, prefix="r_").collect()
        _check_rows([r.asDict() for r in out], oracle, prefix="r_")
    # kafkarec_explode (row UDTF, LATERAL)
    out = spark.sql("SELECT r.* FROM extreme_blobs, LATERAL kafkarec_explode(blob) r").collect()
    _check_rows([r.asDict() for r in out], oracle)
    # decode_records with FAILFAST: a clear error naming the record
    for query in (lambda: df.select(spark_udfs.decode_records("blob", mode="FAILFAST")).collect(),
                  lambda: spark_udfs.explode_records(df, "blob", mode="FAILFAST").collect(),
                  lambda: spark.sql("SELECT r.* FROM extreme_blobs, "
                                    "LATERAL kafkarec_explode(blob, 'FAILFAST') r").collect()):
        with pytest.raises(Exception) as info:
            query()
        assert f"record at offset 0 has timestamp {HALF} ms, outside Spark's timestamp range" \
            in str(info.value)
