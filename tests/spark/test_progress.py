"""Stream progress without a cluster: ``reportLatestOffset`` (what a query's progress shows as
``sources[].latestOffset``) and :func:`spark_udfs.offsets_behind_latest` (the Kafka source's
lag figures from a progress).  A query's real progress, on classic and Connect sessions, is
checked in tests/spark/test_connect.py and docs/spark.md's example."""
from __future__ import annotations

import json

import pytest

from support.spark import spark_helpers as H
from support.spark.streams import stream_reader

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

from support.logs.growing_log import GrowingLog  # noqa: E402


def _reader(root, **options):
    return stream_reader(root, **{"startingOffsets": "earliest", **options})


def test_report_latest_offset_is_the_log_end_whatever_the_limit(tmp_path):
    root = str(tmp_path / "logs")
    g = GrowingLog(root)
    g.append("orders", 0, 40)
    g.append("orders", 1, 10)
    reader = _reader(root, maxOffsetsPerTrigger="20")
    start = reader.initialOffset()
    assert reader.reportLatestOffset() == {"orders": {"0": 40, "1": 10}}   # before any batch
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert sum(end["orders"].values()) <= 20                                # the limit applies ...
    assert reader.reportLatestOffset() == {"orders": {"0": 40, "1": 10}}   # ... not to the report
    g.append("orders", 1, 5)
    g.append("pay", 0, 3)
    reader.latestOffset(end, reader.getDefaultReadLimit())
    assert reader.reportLatestOffset() == {"orders": {"0": 40, "1": 15}, "pay": {"0": 3}}


def test_report_latest_offset_read_committed_is_the_last_stable_offset(tmp_path):
    root = str(tmp_path / "logs")
    g = GrowingLog(root)
    g.append("orders", 0, 10)
    g.txn_append("orders", 0, 4, producer_id=3)      # open transaction from offset 10
    reader = _reader(root, **{"kafka.isolation.level": "read_committed"})
    reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
    assert reader.reportLatestOffset() == {"orders": {"0": 10}}
    g.txn_end("orders", 0, 3, commit=True)
    reader.latestOffset({"orders": {"0": 10}}, reader.getDefaultReadLimit())
    assert reader.reportLatestOffset() == {"orders": {"0": 15}}         # 14 records + marker


def _progress(latest, end):
    return {"sources": [{"description": "x", "startOffset": None, "endOffset": json.dumps(end),
                         "latestOffset": json.dumps(latest), "numInputRows": 1}]}


def test_offsets_behind_latest_as_the_kafka_source():
    import spark_udfs
    p = _progress({"orders": {"0": 40, "1": 10}, "pay": {"0": 7}},
                  {"orders": {"0": 12, "1": 10}, "pay": {"0": 1}})
    want = {"minOffsetsBehindLatest": 0, "maxOffsetsBehindLatest": 28,
            "avgOffsetsBehindLatest": 34 / 3,
            "offsetsBehindLatest": {"orders": {"0": 28, "1": 0}, "pay": {"0": 6}}}
    assert spark_udfs.offsets_behind_latest(p) == want
    assert spark_udfs.offsets_behind_latest(json.dumps(p)) == want            # its JSON

    class Progress:                                                           # .json, as pyspark's
        json = json.dumps(p)
    assert spark_udfs.offsets_behind_latest(Progress()) == want
    # offsets as objects rather than JSON text
    p2 = {"sources": [{"endOffset": {"t": {"0": 5}}, "latestOffset": {"t": {"0": 9}}}]}
    assert spark_udfs.offsets_behind_latest(p2)["offsetsBehindLatest"] == {"t": {"0": 4}}


def test_offsets_behind_latest_without_figures():
    import spark_udfs
    assert spark_udfs.offsets_behind_latest(None) is None
    assert spark_udfs.offsets_behind_latest({"sources": []}) is None
    assert spark_udfs.offsets_behind_latest(_progress({"a": {"0": 1}}, {"a": {"0": 1}}), source=1) is None
    assert spark_udfs.offsets_behind_latest({"sources": [{"endOffset": None, "latestOffset": None}]}) is None
    with pytest.raises(TypeError):
        spark_udfs.offsets_behind_latest(42)
