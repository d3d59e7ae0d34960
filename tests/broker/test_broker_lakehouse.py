"""Backfills of the session broker's topics (transactions with commits and aborts, compaction,
several partitions) against Kafka's own read_committed consumer: the rows of [start, H) are the
records it is given, H is where it ends, and a reader resuming as kafka-delta-ingest does (txn
version + 1) after a Delta backfill reads the rest with no gap or duplicate."""
import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow]

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

TOPICS = ["txn", "java-txn", "compacted"]


def _rows(batches):
    """(topic, partition, offset, key, value, headers, timestamp) of Redpanda-layout rows."""
    out = []
    for rb in batches:
        for r in rb.to_pylist():
            rp = r["redpanda"]
            out.append((rp["partition"], rp["offset"], rp["key"], r["value"],
                        tuple((h["key"], h["value"]) for h in rp["headers"] or ()),
                        int(rp["timestamp"].timestamp() * 1000)))
    return out


@pytest.mark.parametrize("topic", TOPICS)
def test_backfill_is_the_read_committed_consumers_records(broker_data, stopped_log_dir, topic):
    from support.brokers import produce
    from kafkarec.lakehouse import backfill_batches, hand_off_points
    want = [(r[1], r[2], r[3], r[4], r[5], r[7]) for r in
            produce.consume(broker_data.bootstrap, [topic], isolation="read_committed")]
    got = _rows(backfill_batches(stopped_log_dir, "redpanda", topics=topic))
    assert sorted(got) == want and want
    # every transaction is closed: H is the end of the log, where the consumer stopped
    points = hand_off_points(stopped_log_dir, topics=topic)
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker_data.bootstrap, "group.id": "kafkarec-ends", "log_level": 0})
    try:
        for (t, p), point in points.items():
            low, high = c.get_watermark_offsets(TopicPartition(t, p), timeout=10)
            assert point.end == high and point.start == low
    finally:
        c.close()


def test_delta_backfill_then_the_kafka_delta_ingest_resume_rule(broker_data, stopped_log_dir, tmp_path):
    """Backfill txn's first half into Delta; a read_committed consumer seeking each partition to
    its txn version + 1 reads the rest: together every committed record once."""
    from support.brokers import produce
    from kafkarec.lakehouse import DeltaTarget, backfill, hand_off_points, read_positions
    full = hand_off_points(stopped_log_dir, topics="txn")
    half = {t: {p: point.end // 2 for (t2, p), point in full.items() if t2 == t} for t in {"txn"}}
    target = DeltaTarget(str(tmp_path / "txn"))
    summary = backfill(stopped_log_dir, target, layout="kafka-delta-ingest", app_id="ingest", topics="txn",
                       end_offsets=half)
    table = deltalake.DeltaTable(target.path)
    assert table.version() == 0
    resume = {("txn", p): table.transaction_version(f"ingest-{p}") + 1 for (_, p) in summary}
    assert resume == {k: s.end for k, s in summary.items()}
    pos = read_positions(target, "kafka-delta-ingest")
    backfilled = sorted(zip(pos.column("topic").to_pylist(), pos.column("partition").to_pylist(),
                            pos.column("offset").to_pylist()))
    # kafka-delta-ingest's start: seek each partition to its txn version + 1, read_committed
    rest = [r[:3] for r in produce.consume(broker_data.bootstrap, ["txn"], isolation="read_committed",
                                           start=resume)]
    records = produce.consume(broker_data.bootstrap, ["txn"], isolation="read_committed")
    ends = {(t, p): s.end for (t, p), s in summary.items()}
    # kafka-delta-ingest writes no row for a record without value (EmptyPayload); the resumed reader
    # is given every record from H on
    assert backfilled == [(r[0], r[1], r[2]) for r in records if r[2] < ends[(r[0], r[1])] and r[4] is not None]
    assert rest == [(r[0], r[1], r[2]) for r in records if r[2] >= ends[(r[0], r[1])]]
    assert backfilled and rest
