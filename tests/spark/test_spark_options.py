"""spark.read.format("kafkarec") with the Kafka source's option names (docs/spark-options.md):
subscribe / subscribePattern / assign, includeHeaders, kafka.isolation.level, ignored
kafka.* settings, and the Kafka source's errors.  Rows are compared with kafkarec's decoder."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.spark import spark_helpers as H

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

KEY = ["topic", "partition", "offset"]


def _read(spark, path, **options):
    reader = spark.read.format("kafkarec")
    for k, v in options.items():
        reader = reader.option(k, v)
    df = reader.load(path)
    t = df.toArrow()
    if "_corrupt_record" in t.column_names:
        t = t.filter(t.column("_corrupt_record").is_null())
    return df, t


def _keys(t):
    return sorted(zip(*[t.column(c).to_pylist() for c in KEY]))


def _oracle(sample, **kw):
    want, _ = H.oracle_dir(sample, **kw)
    return want


def test_headers_only_with_include_headers(spark, sample):
    df, t = _read(spark, sample)
    assert "headers" not in df.columns
    assert "headers" not in _read(spark, sample, includeHeaders="false")[0].columns
    df, t = _read(spark, sample, includeHeaders="true")
    assert df.schema["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    H.assert_same_rows(t, _oracle(sample), H.KAFKA_COLUMNS)


def test_subscribe_pattern_and_assign(spark, sample):
    want = _oracle(sample)
    topics = sorted(set(want.column("topic").to_pylist()))
    assert {"orders", "payments"} <= set(topics)

    def rows(mask):
        return _keys(want.filter(mask))
    _, t = _read(spark, sample, subscribe="orders,payments")
    assert _keys(t) == rows(pc.is_in(want.column("topic"), pa.array(["orders", "payments"])))
    _, t2 = _read(spark, sample, topics="orders,payments")          # the alias: the same
    assert _keys(t2) == _keys(t)
    _, t = _read(spark, sample, subscribePattern="pay.*")
    assert _keys(t) == rows(pc.equal(want.column("topic"), "payments"))
    # assign, with specific offsets naming exactly the assigned partitions (the README example)
    _, t = _read(spark, sample, assign='{"orders":[0],"payments":[0]}',
                 startingOffsets='{"orders":{"0":10},"payments":{"0":-2}}')
    mask = pc.or_(pc.and_(pc.equal(want.column("topic"), "orders"),
                          pc.and_(pc.equal(want.column("partition"), 0),
                                  pc.greater_equal(want.column("offset"), 10))),
                  pc.and_(pc.equal(want.column("topic"), "payments"),
                          pc.equal(want.column("partition"), 0)))
    assert _keys(t) == rows(mask) and len(_keys(t)) > 0


def test_isolation_level_batch(spark, sample):
    """kafka.isolation.level is readCommitted (tested against the rule in test_spark.py)."""
    _, every = _read(spark, sample)
    _, rc_alias = _read(spark, sample, readCommitted="true")
    _, rc = _read(spark, sample, **{"kafka.isolation.level": "read_committed"})
    _, ru = _read(spark, sample, **{"kafka.isolation.level": "read_uncommitted"})
    assert _keys(rc) == _keys(rc_alias) and len(_keys(rc)) < len(_keys(every))
    assert _keys(ru) == _keys(every)
    # the same through the selection reader (a subscription option)
    _, rc_sel = _read(spark, sample, subscribe="payments",
                      **{"kafka.isolation.level": "read_committed"})
    assert _keys(rc_sel) == [k for k in _keys(rc) if k[0] == "payments"]
    assert len(_keys(rc_sel)) < sum(1 for k in _keys(every) if k[0] == "payments")


def test_kafka_settings_ignored_and_kafka_errors(spark, sample):
    from pyspark.errors import AnalysisException, PySparkException
    _, t = _read(spark, sample, **{"kafka.bootstrap.servers": "broker:9092", "groupIdPrefix": "g",
                                   "kafka.fetch.max.bytes": "1", "maxOffsetsPerTrigger": "3"})
    assert _keys(t) == _keys(_read(spark, sample)[1])
    for options, message in [({"subscribe": "orders", "subscribePattern": "o.*"},
                              "Only one of the following options"),
                             ({"assign": "orders"}, "No topicpartitions to assign"),
                             ({"kafka.auto.offset.reset": "earliest"}, "auto.offset.reset"),
                             ({"assign": '{"orders":[0]}', "startingOffsets": '{"payments":{"0":1}}'},
                              "exactly the assigned partitions")]:
        with pytest.raises((AnalysisException, PySparkException, ValueError), match=message):
            _read(spark, sample, **options)
