"""spark_udfs.read.streaming: a log directory that grows while a streaming query reads it.

The reader's offsets, limits and data-loss rules are checked directly (no Spark); then a
real Structured Streaming query (local SparkSession, checkpoint, parquet file sink) reads
a directory that kafkarec's builder keeps appending to - new batches in the active
segment, a batch half written, new segments, a new partition - across a stop and a
restart, and delivers every record exactly once.
"""
from __future__ import annotations

import os

import pytest

import kafkarec
from support.paths import TESTS
from support.spark.streams import stream_reader

from support.logs.growing_log import GrowingLog  # noqa: E402  (shared with tests/spark/jobs/stream_job.py)



def _read_all(reader, start, end):
    import pyarrow as pa
    rows = []
    for part in reader.partitions(start, end):
        for rb in reader.read(part):
            t = pa.Table.from_batches([rb])
            rows += list(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(),
                             t.column("offset").to_pylist(), t.column("value").to_pylist()))
    return rows


def test_offsets_partial_batches_and_limits(tmp_path):
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
    log = GrowingLog(str(tmp_path))
    log.append("a", 0, 5)
    log.append("a", 1, 3)
    r = stream_reader(str(tmp_path), startingOffsets="earliest")
    start = r.initialOffset()
    assert start == {"a": {"0": 0, "1": 0}}
    log.append_half("a", 0, 4)                    # being written: not offered yet
    end = r.latestOffset(start, ReadAllAvailable())
    assert end == {"a": {"0": 5, "1": 3}}
    assert sorted(_read_all(r, start, end)) == sorted(log.written)
    log.finish_half("a", 0)
    log.roll("a", 1)
    log.append("a", 1, 6)
    log.append("b", 0, 2)                          # a new partition: from its earliest offset
    end2 = r.latestOffset(end, ReadAllAvailable())
    assert end2 == {"a": {"0": 9, "1": 9}, "b": {"0": 2}}
    got = _read_all(r, end, end2)
    assert sorted(got) == sorted(w for w in log.written if w[2] >= {("a", 0): 5, ("a", 1): 3}.get(w[:2], 0))
    # maxOffsetsPerTrigger: shared by lag, as the Kafka source does
    limited = r.latestOffset(start, ReadMaxRows(6))
    assert sum(limited["a"].values()) + sum(limited.get("b", {}).values()) <= 6 + 3
    assert limited["a"]["0"] <= 9 and limited["a"]["1"] <= 9
    r_opt = stream_reader(str(tmp_path), startingOffsets="earliest", maxOffsetsPerTrigger="4")
    assert isinstance(r_opt.getDefaultReadLimit(), ReadMaxRows)
    # startingOffsets=latest (the streaming default): only what comes after
    r_latest = stream_reader(str(tmp_path))
    assert r_latest.initialOffset() == {"a": {"0": 9, "1": 9}, "b": {"0": 2}}


def test_data_loss(tmp_path):
    from spark_udfs.read.streaming import DataLossError
    log = GrowingLog(str(tmp_path))
    log.append("a", 0, 5)
    log.roll("a", 0)
    log.append("a", 0, 5)
    start = {"a": {"0": 2}}
    first = os.path.join(str(tmp_path), "a-0", f"{0:020d}.log")
    os.remove(first)                               # retention deleted the first segment
    r = stream_reader(str(tmp_path), startingOffsets="earliest")
    end = r.latestOffset(start, None)
    assert end == {"a": {"0": 10}}
    with pytest.raises(DataLossError, match="offsets 2 to 4 are not in the log"):
        r.partitions(start, end)
    lenient = stream_reader(str(tmp_path), startingOffsets="earliest", failOnDataLoss="false")
    assert sorted(o for _, _, o, _ in _read_all(lenient, start, end)) == list(range(5, 10))



@pytest.mark.spark
def test_stream_exactly_once_across_restart(spark, tmp_path):
    root = str(tmp_path / "logs")
    out, ck = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    log = GrowingLog(root)
    log.append("orders", 0, 5)
    log.append("orders", 1, 3, codec=kafkarec.Compression.ZSTD)

    def start():
        df = (spark.readStream.format("kafkarec").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "7").load(root))
        return (df.select("topic", "partition", "offset", "value").writeStream.format("parquet")
                .option("path", out).option("checkpointLocation", ck)
                .trigger(processingTime="200 milliseconds").start())

    q = start()
    try:
        q.processAllAvailable()
        log.append("orders", 0, 4)                       # new batches in the active segment
        log.append_half("orders", 1, 5)                  # a batch still being written
        q.processAllAvailable()
        log.roll("orders", 0)                            # a new segment
        log.append("orders", 0, 6, codec=kafkarec.Compression.LZ4)
        log.append("payments", 0, 2)                     # a new partition
        q.processAllAvailable()
    finally:
        q.stop()
    assert q.exception() is None
    log.finish_half("orders", 1)                         # completed while the query was down
    log.append("orders", 1, 3)
    log.roll("payments", 0)
    log.append("payments", 0, 4)
    q = start()
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert q.exception() is None
    got = spark.read.parquet(out).select("topic", "partition", "offset", "value").collect()
    rows = sorted((r.topic, r.partition, r.offset, bytes(r.value)) for r in got)
    assert len(rows) == len(set(rows)), "a record was delivered twice"
    assert rows == sorted(log.written)


def test_stream_refuses_batch_only_and_unknown_options(tmp_path):
    """An option a stream would ignore is an error, not a silent difference: endingOffsets
    belongs to batch reads (as in Spark's Kafka source), mode to the batch source."""
    log = GrowingLog(str(tmp_path))
    log.append("a", 0, 5)
    with pytest.raises(ValueError, match="not valid in streaming queries"):
        stream_reader(str(tmp_path), endingOffsets="latest")
    with pytest.raises(ValueError, match="mode"):
        stream_reader(str(tmp_path), mode="DROPMALFORMED")
    with pytest.raises(ValueError, match="Only one of the following options"):
        stream_reader(str(tmp_path), subscribe="a", topicPattern="a")
    with pytest.raises(ValueError, match="minOffsetPerTrigger\\(9\\) is higher"):
        stream_reader(str(tmp_path), minOffsetsPerTrigger="9", maxOffsetsPerTrigger="4")
    stream_reader(str(tmp_path), readCommitted="false", endpoint="http://127.0.0.1:1")  # allowed
    # broker settings mean nothing here: accepted and ignored
    stream_reader(str(tmp_path), **{"kafka.bootstrap.servers": "b:9092", "groupIdPrefix": "x",
                              "kafka.session.timeout.ms": "1000"})


def _offsets(rows):
    return sorted(rows)


def test_stream_subscribe_assign_and_headers(tmp_path):
    log = GrowingLog(str(tmp_path))
    for p in range(3):
        log.append("orders", p, 4)
    log.append("audit", 0, 2)
    r = stream_reader(str(tmp_path), assign='{"orders":[0,2]}', startingOffsets="earliest")
    start = r.initialOffset()
    assert start == {"orders": {"0": 0, "2": 0}}
    end = r.latestOffset(start, None)
    assert sorted(_read_all(r, start, end)) == sorted(w for w in log.written
                                                      if w[0] == "orders" and w[1] in (0, 2))
    # with assign, specific offsets name exactly the assigned partitions
    r = stream_reader(str(tmp_path), assign='{"orders":[1]}', startingOffsets='{"orders":{"1":2}}')
    assert r.initialOffset() == {"orders": {"1": 2}}
    with pytest.raises(ValueError, match="exactly the assigned partitions"):
        stream_reader(str(tmp_path), assign='{"orders":[1]}',
                startingOffsets='{"orders":{"0":1,"1":2}}').initialOffset()
    r = stream_reader(str(tmp_path), subscribePattern="ord.*", startingOffsets="earliest")
    assert set(r.initialOffset()) == {"orders"}
    assert "headers" not in r.schema.names
    assert "headers" in stream_reader(str(tmp_path), includeHeaders="true").schema.names


def test_min_offsets_per_trigger_waits_for_max_trigger_delay(tmp_path):
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    log = GrowingLog(str(tmp_path))
    log.append("a", 0, 3)
    r = stream_reader(str(tmp_path), startingOffsets="earliest", minOffsetsPerTrigger="5",
                maxTriggerDelay="1h")
    start = r.initialOffset()
    assert r.latestOffset(start, ReadAllAvailable()) == {"a": {"0": 3}}   # first trigger: delay passed
    log.append("a", 0, 2)
    end = {"a": {"0": 3}}
    assert r.latestOffset(end, ReadAllAvailable()) == end                  # 2 < 5: wait
    log.append("a", 0, 3)
    assert r.latestOffset(end, ReadAllAvailable()) == {"a": {"0": 8}}      # 5 new: go
    r._last_trigger_ms -= 2 * 3600 * 1000                                 # maxTriggerDelay passed
    log.append("a", 0, 1)
    assert r.latestOffset({"a": {"0": 8}}, ReadAllAvailable()) == {"a": {"0": 9}}


def _committed_rows(log):
    return sorted((t, p, o, v) for t, p, o, v in log.committed())


def test_read_committed_stream_across_micro_batches_segments_and_restart(tmp_path):
    """Transactions open across micro-batches and segments: a micro-batch never reads past
    the LSO nor an aborted record; a transaction committing later is read then; a new reader
    from the last offsets (a restart) goes on the same way."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    root = str(tmp_path)
    log = GrowingLog(root)
    opts = {"startingOffsets": "earliest", "kafka.isolation.level": "read_committed"}
    log.append("t", 0, 3)
    log.txn_append("t", 0, 2, producer_id=7)          # open: LSO at 3
    log.append("t", 0, 2)                             # after the LSO: waits
    r = stream_reader(root, **opts)
    got = []
    off = r.initialOffset()

    def step(reader, off):
        end = reader.latestOffset(off, ReadAllAvailable())
        got.extend(_read_all(reader, off, end))
        return end
    off = step(r, off)
    assert off == {"t": {"0": 3}}
    assert sorted(got) == _committed_rows(log)
    log.txn_append("t", 0, 1, producer_id=8)          # a second open transaction
    log.roll("t", 0)                                  # the transactions go on in a new segment
    log.txn_append("t", 0, 2, producer_id=7)
    log.txn_end("t", 0, 8, commit=False)              # 8 aborts: its batch is never read
    off = step(r, off)
    assert off == {"t": {"0": 3}}                     # 7 still open
    log.txn_end("t", 0, 7, commit=True)               # 7 commits in a later micro-batch
    off = step(r, off)
    assert sorted(got) == _committed_rows(log)
    # restart: a new reader from the checkpointed offsets
    log.txn_append("t", 0, 2, producer_id=9)
    log.append("t", 0, 1)
    r2 = stream_reader(root, **opts)
    off = step(r2, off)
    log.roll("t", 0)
    log.txn_end("t", 0, 9, commit=False)
    log.append("t", 0, 2)
    off = step(r2, off)
    assert sorted(got) == _committed_rows(log)
    assert len(got) == len(set(got))
    assert not any(g[:3] in log.aborted for g in got)
    # read_uncommitted (and readCommitted=false) still read every data record
    r3 = stream_reader(root, startingOffsets="earliest", readCommitted="false")
    s = r3.initialOffset()
    assert sorted(_read_all(r3, s, r3.latestOffset(s, None))) == sorted(log.written)
    with pytest.raises(ValueError, match="disagree"):
        stream_reader(root, readCommitted="false", **{"kafka.isolation.level": "read_committed"})


def test_stream_batch_positions_are_file_positions(tmp_path):
    """read_committed leaves an aborted transaction's bytes out, so what follows it is decoded
    as a piece that starts inside the segment: its batchPosition is still the batch's position
    in the file (the piece is read with its origin)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    import pyarrow as pa
    log = GrowingLog(str(tmp_path))
    log.append("t", 0, 3)
    log.txn_append("t", 0, 2, producer_id=7)
    log.txn_end("t", 0, 7, commit=False)
    log.append("t", 0, 2)
    log.append("t", 0, 4)
    r = stream_reader(str(tmp_path), startingOffsets="earliest", batchColumns="true",
                **{"kafka.isolation.level": "read_committed"})
    start = r.initialOffset()
    end = r.latestOffset(start, ReadAllAvailable())
    got = {}
    for part in r.partitions(start, end):
        for rb in r.read(part):
            t = pa.Table.from_batches([rb])
            got.update(zip(t.column("offset").to_pylist(), t.column("batchPosition").to_pylist()))
    data = open(log.active[("t", 0)], "rb").read()
    want = {rec.offset: b.position for b in kafkarec.iter_batches(data) if not b.is_control
            for rec in b if rec.offset not in (3, 4)}
    assert got == want
    assert max(got.values()) > 0 and set(got) == {0, 1, 2, 6, 7, 8, 9, 10, 11}


def test_a_trigger_lists_the_log_once(tmp_path, monkeypatch):
    """latestOffset finds the ends in one listing, and the micro-batch's ranges are planned over
    that same listing (it holds every segment up to the ends): one listing a trigger; a plan with
    no latestOffset before it (a restarted query's first batch) lists once itself."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from kafkarec.log import layout
    log = GrowingLog(str(tmp_path))
    log.append("a", 0, 5)
    log.append("a", 1, 3)
    r = stream_reader(str(tmp_path), startingOffsets="earliest")
    start = r.initialOffset()
    listed, plain = [], layout.scan_history

    def counted(*args, **kwargs):
        listed.append(args[0])
        return plain(*args, **kwargs)
    monkeypatch.setattr(layout, "scan_history", counted)
    end = r.latestOffset(start, ReadAllAvailable())
    tasks = r.partitions(start, end)
    assert len(listed) == 1
    assert sorted(row for t in tasks for rb in r.read(t)
                  for row in zip(rb.column("offset").to_pylist(), rb.column("partition").to_pylist())) == \
        sorted((o, p) for _t, p, o, _v in log.written)
    log.append("a", 0, 2)
    tasks = r.partitions(end, {"a": {"0": 7, "1": 3}})       # no latestOffset before it
    assert len(listed) == 2
    assert [rb.column("offset").to_pylist() for t in tasks for rb in r.read(t)] == [[5, 6]]


def test_read_committed_stream_walks_each_grown_partition_once_a_trigger(tmp_path):
    """A trigger (latestOffset, then the ranges planned and read) walks each partition that grew
    once, in its one listing, and a partition that did not grow not at all (issue 79): its
    last stable offset, the read's left-out spans and the log end are read off that walk."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from support.logs.plan_counts import counted, header_walk_bytes
    root = str(tmp_path)
    log = GrowingLog(root)
    for p in (0, 1):
        log.append("t", p, 3)
        log.txn_append("t", p, 2, producer_id=7 + p)
        log.txn_end("t", p, 7 + p, commit=p == 0)
    r = stream_reader(root, startingOffsets="earliest", **{"kafka.isolation.level": "read_committed"})
    off = [r.initialOffset()]

    def trigger():
        end = r.latestOffset(off[0], ReadAllAvailable())
        _read_all(r, off[0], end)
        off[0] = end
        return 0
    first = counted(root, trigger)
    assert first.walk_bytes_read == header_walk_bytes(root), first        # each partition walked once
    assert first.records_ratio <= 1.02, first
    before = header_walk_bytes(os.path.join(root, "t-1"))
    log.append("t", 1, 2)                                                  # only t-1 grows
    log.txn_append("t", 1, 1, producer_id=9)
    grown = counted(root, trigger)
    assert grown.walk_bytes_read == header_walk_bytes(os.path.join(root, "t-1")) > before, grown
    idle = counted(root, trigger)                                          # nothing grew: nothing walked
    assert idle.walk_bytes_read == 0, idle
