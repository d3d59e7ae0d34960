"""kafkarec.census and find on the logs the session's broker (Kafka 4.4.0) wrote, against what
librdkafka's consumer (read_committed) returns of the same topics: compaction (tombstones,
delete horizons), transactions (commits, aborts), every codec, headers, registry framing;
and the default partitioner's placement on a topic written with librdkafka's murmur2 (Java's)
partitioner beside one written to explicit partitions."""
import os

import pytest

from kafkarec._core import partition_for_key
from kafkarec.census import census, find
from kafkarec.scan import Bounds
from support import produce

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PLACED, CUSTOM = "census-murmur2", "census-custom"


@pytest.fixture(scope="module")
def committed(kafka_broker, broker_data):
    return produce.consume(kafka_broker.bootstrap, broker_data.data_topics(), "read_committed")


def _expected(rows):
    """Per partition: records, tombstones, distinct and live keys of consumed rows."""
    out = {}
    for topic, partition, offset, key, value, *_ in rows:
        e = out.setdefault((topic, partition), {"records": 0, "tombstones": 0, "last": {}})
        e["records"] += 1
        e["tombstones"] += value is None
        if key is not None:
            e["last"][key] = value
    return {tp: {"records": e["records"], "tombstones": e["tombstones"], "distinct_keys": len(e["last"]),
                 "live_keys": sum(1 for v in e["last"].values() if v is not None)} for tp, e in out.items()}


def test_census_equals_the_consumer(broker_data, stopped_log_dir, committed):
    doc = census(stopped_log_dir, bounds=Bounds.of(topics=broker_data.data_topics()))
    got = {(p["topic"], p["partition"]): {k: p[k] for k in ("records", "tombstones", "distinct_keys", "live_keys")}
           for p in doc["partitions"] if p["records"]}
    want = _expected(committed)
    assert got == want
    # what the topics hold: compaction, transactions, codecs, headers, registry ids
    by = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
    assert by[("compacted", 0)]["tombstones"] > 0 and by[("compacted", 0)]["live_keys"] > 0
    assert by[("txn", 0)]["read_uncommitted_adds"]["records"] > 0          # aborted transactions
    assert by[("txn", 0)]["read_uncommitted_adds"]["control_records"] > 0
    assert set(by[("cf-zstd", 0)]["codecs"]) == {"zstd"}
    assert by[("cf-none", 0)]["header_keys"]["seq"]["records"] > 0
    assert by[(produce.REGISTRY_TOPIC, 0)]["schema_ids"]
    assert all(p["errors"] == [] for p in doc["partitions"])


def test_find_equals_the_consumer_filtered(broker_data, stopped_log_dir, committed):
    topics = broker_data.data_topics()
    got = [(r["topic"], r["partition"], r["offset"]) for r in
           find(stopped_log_dir, topics=topics, key=b"key-7", read_committed=True)]
    want = [r[:3] for r in committed if r[3] == b"key-7"]
    assert got == want and want
    got = [(r["topic"], r["partition"], r["offset"]) for r in
           find(stopped_log_dir, topics=topics, value_contains=b"value 12 ", read_committed=True)]
    want = [r[:3] for r in committed if r[4] is not None and b"value 12 " in r[4]]
    assert got == want and want
    got = [(r["topic"], r["partition"], r["offset"]) for r in
           find(stopped_log_dir, topics=topics, headers={"seq": b"again"}, read_committed=True)]
    want = [r[:3] for r in committed if ("seq", b"again") in r[5]]
    assert got == want and want


@pytest.fixture(scope="module")
def placed(kafka_broker):
    """Two 4-partition topics: keys placed by librdkafka's murmur2_random (Java's default for
    keyed records) and the same keys sent to explicit partitions."""
    from confluent_kafka.admin import NewTopic
    admin = produce._admin(kafka_broker.bootstrap)
    for f in admin.create_topics([NewTopic(t, 4, 1) for t in (PLACED, CUSTOM)]).values():
        f.result(30)
    p = produce._cf_producer(kafka_broker.bootstrap, partitioner="murmur2_random")
    keys = [b"user-%d" % i for i in range(200)]
    for i, k in enumerate(keys * 5):
        p.produce(PLACED, key=k, value=b"v%d " % i * 20)
        p.produce(CUSTOM, key=k, value=b"v%d " % i * 20, partition=i % 4)
    produce._flush(p)
    produce.wait_settled(kafka_broker.log_dir, [PLACED, CUSTOM])
    return kafka_broker.log_dir, keys


def test_census_flags_keys_off_their_murmur2_partition(placed):
    log_dir, keys = placed
    doc = census(log_dir, bounds=Bounds.of(topics=[PLACED, CUSTOM]))
    topics = {t["topic"]: t for t in doc["topics"]}
    assert topics[PLACED]["records"] == topics[CUSTOM]["records"] == 1000
    assert topics[PLACED]["misplaced_records"] == 0
    assert topics[CUSTOM]["misplaced_records"] > 0


def test_find_with_murmur2_reads_one_partition(placed):
    from kafkarec.log.storage import process_bytes_read
    log_dir, keys = placed
    key = keys[17]
    before = dict(process_bytes_read().by_path)
    got = list(find(log_dir, topics=[PLACED], key=key, partitioner="murmur2"))
    after = dict(process_bytes_read().by_path)
    assert len(got) == 5 and {r["partition"] for r in got} == {partition_for_key(key, 4)}
    logs = {p: after[p] - before.get(p, 0) for p in after if p.endswith(".log") and after[p] != before.get(p, 0)}
    target = f"{PLACED}-{partition_for_key(key, 4)}"
    own = sum(os.path.getsize(os.path.join(log_dir, target, f)) for f in os.listdir(os.path.join(log_dir, target))
              if f.endswith(".log"))
    # only the partition murmur2 names is read, and at most its bytes (1/N of the topic's when
    # the keys spread evenly; here 200 keys over 4 partitions, not quite even)
    assert logs and all(os.path.basename(os.path.dirname(p)) == target for p in logs), logs
    assert sum(logs.values()) <= own
    # without the option the custom topic is searched whole, and finds every copy of the key
    assert len(list(find(log_dir, topics=[CUSTOM], key=key))) == 5
