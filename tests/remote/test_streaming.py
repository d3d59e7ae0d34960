"""spark_udfs._streaming: a log directory that grows while a streaming query reads it.

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
import spark_helpers as H

T0 = 1_700_000_000_000


class GrowingLog:
    """Appends kafkarec-built batches to segment files the way a broker does (in place)."""

    def __init__(self, root):
        self.root = root
        self.next = {}          # (topic, p) -> next offset
        self.active = {}        # (topic, p) -> path of the active segment
        self.written = []       # (topic, p, offset, value) of every record in a whole batch
        self.pending = {}       # (topic, p) -> bytes of a batch not yet written in full

    def _segment(self, topic, p):
        key = (topic, p)
        if key not in self.active:
            self.roll(topic, p)
        return self.active[key]

    def roll(self, topic, p):
        key = (topic, p)
        d = os.path.join(self.root, f"{topic}-{p}")
        os.makedirs(d, exist_ok=True)
        base = self.next.setdefault(key, 0)
        path = os.path.join(d, f"{base:020d}.log")
        open(path, "ab").close()
        self.active[key] = path

    def batch(self, topic, p, n, *, codec=kafkarec.Compression.NONE):
        key = (topic, p)
        base = self.next.get(key, 0)
        values = [b"%s-%d-%d" % (topic.encode(), p, base + i) for i in range(n)]
        data = kafkarec.build_batch(values, keys=[b"k"] * n, timestamps=[T0 + base + i for i in range(n)],
                                    offsets=list(range(base, base + n)), compression=codec)
        self.next[key] = base + n
        return data, [(topic, p, base + i, v) for i, v in enumerate(values)]

    def append(self, topic, p, n, **kw):
        path = self._segment(topic, p)
        data, recs = self.batch(topic, p, n, **kw)
        with open(path, "ab") as fh:
            fh.write(data)
        self.written += recs

    def append_half(self, topic, p, n):
        """The first half of a batch: a write still in progress."""
        path = self._segment(topic, p)
        data, recs = self.batch(topic, p, n)
        with open(path, "ab") as fh:
            fh.write(data[:len(data) // 2])
        self.pending[(topic, p)] = (data[len(data) // 2:], recs)

    def finish_half(self, topic, p):
        rest, recs = self.pending.pop((topic, p))
        with open(self.active[(topic, p)], "ab") as fh:
            fh.write(rest)
        self.written += recs


def _reader(root, **options):
    from spark_udfs import _streaming
    opts = {"path": root, **options}
    cfg = _streaming.StreamConfig(opts)
    return _streaming.KafkaRecStreamReader(cfg, cfg.schema())


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
    r = _reader(str(tmp_path), startingOffsets="earliest")
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
    r_opt = _reader(str(tmp_path), startingOffsets="earliest", maxOffsetsPerTrigger="4")
    assert isinstance(r_opt.getDefaultReadLimit(), ReadMaxRows)
    # startingOffsets=latest (the streaming default): only what comes after
    r_latest = _reader(str(tmp_path))
    assert r_latest.initialOffset() == {"a": {"0": 9, "1": 9}, "b": {"0": 2}}


def test_data_loss(tmp_path):
    from spark_udfs._streaming import DataLossError
    log = GrowingLog(str(tmp_path))
    log.append("a", 0, 5)
    log.roll("a", 0)
    log.append("a", 0, 5)
    start = {"a": {"0": 2}}
    first = os.path.join(str(tmp_path), "a-0", f"{0:020d}.log")
    os.remove(first)                               # retention deleted the first segment
    r = _reader(str(tmp_path), startingOffsets="earliest")
    end = r.latestOffset(start, None)
    assert end == {"a": {"0": 10}}
    with pytest.raises(DataLossError, match="offsets 2 to 4 are not in the log"):
        r.partitions(start, end)
    lenient = _reader(str(tmp_path), startingOffsets="earliest", failOnDataLoss="false")
    assert sorted(o for _, _, o, _ in _read_all(lenient, start, end)) == list(range(5, 10))



@pytest.mark.spark
def test_stream_exactly_once_across_restart(tmp_path):
    why = H.spark_available()
    if why:
        pytest.fail(f"Spark is part of the test extra: {why}")
    from spark_udfs._datasource import KafkaRecDataSource
    spark = H.make_session(str(tmp_path / "spark-cache"))
    spark.dataSource.register(KafkaRecDataSource)
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
    """An option a stream would ignore is an error, not a silent difference: readCommitted
    and endingOffsets belong to batch reads (as endingOffsets does in Spark's Kafka source)."""
    log = GrowingLog(str(tmp_path))
    log.append("a", 0, 5)
    with pytest.raises(ValueError, match="readCommitted is for batch reads"):
        _reader(str(tmp_path), readCommitted="true")
    with pytest.raises(ValueError, match="endingoffsets"):
        _reader(str(tmp_path), endingOffsets="latest")
    with pytest.raises(ValueError, match="mode"):
        _reader(str(tmp_path), mode="DROPMALFORMED")
    _reader(str(tmp_path), readCommitted="false", endpoint="http://127.0.0.1:1")  # allowed
