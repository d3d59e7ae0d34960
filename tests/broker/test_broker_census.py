"""kafkarec.census and find on the logs the session's broker (Kafka 4.4.0) wrote, against what
Kafka's own Java consumer (read_committed) returns of the same topics: compaction (tombstones,
delete horizons), transactions (commits, aborts), every codec, headers, registry framing;
and the default partitioner's placement on a topic written with librdkafka's murmur2 (Java's)
partitioner beside one written to explicit partitions."""
import os

import pytest

from kafkarec._core import partition_for_key
from kafkarec.census import census, find
from kafkarec.scan import Bounds
from support.brokers import produce

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PLACED, CUSTOM = "census-murmur2", "census-custom"


@pytest.fixture(scope="module")
def committed(kafka_broker, broker_data):
    return produce.java_consume(kafka_broker.bootstrap, broker_data.data_topics(), "read_committed")


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
    """Every search equals the Java consumer's records filtered the same way: by key (as text and
    as hex on the command line), value bytes and pattern, header tests, and within offsets and
    times (resolved through the indexes)."""
    import re
    topics = broker_data.data_topics()

    def search(**kwargs):
        return [(r["topic"], r["partition"], r["offset"]) for r in
                find(stopped_log_dir, topics=topics, read_committed=True, **kwargs)]

    def consumer(keep):
        out = [r[:3] for r in committed if keep(r)]
        assert out, "the case selects nothing"
        return out

    assert search(key=b"key-7") == consumer(lambda r: r[3] == b"key-7")
    assert search(value_contains=b"value 12 ") == consumer(lambda r: r[4] is not None and b"value 12 " in r[4])
    assert search(value_regex=r"^[a-z-]+ value 1[0-3] ") == consumer(
        lambda r: r[4] is not None and re.search(rb"^[a-z-]+ value 1[0-3] ", r[4]))
    assert search(headers={"seq": b"again"}) == consumer(lambda r: ("seq", b"again") in r[5])
    assert search(header_names=["seq"], header_regex={"seq": "^ag"}) == consumer(
        lambda r: any(k == "seq" and v is not None and v.startswith(b"ag") for k, v in r[5]))
    assert search(header_contains={"seq": b"gai"}, value_contains=b"value") == consumer(
        lambda r: r[4] is not None and b"value" in r[4]
        and any(k == "seq" and v is not None and b"gai" in v for k, v in r[5]))
    # bounds: offsets [5, 40) in every partition, and a time window of the records' own times
    assert search(value_contains=b"value", bounds=Bounds.of(offsets=(5, 40))) == consumer(
        lambda r: 5 <= r[2] < 40 and r[4] is not None and b"value" in r[4])
    times = sorted(r[7] for r in committed)
    lo, hi = times[len(times) // 4], times[3 * len(times) // 4]
    assert search(value_regex=".", bounds=Bounds.of(timestamps=(lo, hi))) == consumer(
        lambda r: lo <= r[7] < hi and r[4] is not None and len(r[4]) > 0)


def test_find_key_hex_on_the_command_line_equals_the_consumer(broker_data, stopped_log_dir, committed):
    import json
    import subprocess
    import sys
    key = b"key-7"
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "find", stopped_log_dir, "--read-committed", "--json",
                           "--topics", ",".join(broker_data.data_topics()), "--key-hex", key.hex()],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = [(o["topic"], o["partition"], o["offset"]) for o in map(json.loads, proc.stdout.splitlines())]
    assert got == [r[:3] for r in committed if r[3] == key] and got


@pytest.fixture(scope="module")
def placed(kafka_broker):
    """Two 4-partition topics: keys placed by librdkafka's murmur2_random (Java's default for
    keyed records) and the same keys sent to explicit partitions.  The keys are 50 per partition
    murmur2 names, of one width, and the values of one size, so the partitions hold a quarter of
    the topic's bytes each, as a topic of many keys does."""
    from confluent_kafka.admin import NewTopic
    admin = produce._admin(kafka_broker.bootstrap)
    for f in admin.create_topics([NewTopic(t, 4, 1) for t in (PLACED, CUSTOM)]).values():
        f.result(30)
    p = produce._cf_producer(kafka_broker.bootstrap, partitioner="murmur2_random")
    keys, per_partition = [], {n: 0 for n in range(4)}
    for i in range(10_000):
        k = b"user-%05d" % i
        if per_partition[partition_for_key(k, 4)] < 50:
            per_partition[partition_for_key(k, 4)] += 1
            keys.append(k)
    assert len(keys) == 200
    for i, k in enumerate(keys * 5):
        p.produce(PLACED, key=k, value=b"v%05d " % i * 10)
        p.produce(CUSTOM, key=k, value=b"v%05d " % i * 10, partition=i % 4)
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
    # only the partition murmur2 names is read, at most its bytes: 1/N of the topic's + 1%
    assert logs and all(os.path.basename(os.path.dirname(p)) == target for p in logs), logs
    total = sum(os.path.getsize(os.path.join(log_dir, d, f)) for d in os.listdir(log_dir)
                if d.startswith(PLACED + "-") for f in os.listdir(os.path.join(log_dir, d)) if f.endswith(".log"))
    assert sum(logs.values()) <= own <= total / 4 + total * 0.01, (sum(logs.values()), own, total)
    # without the option the custom topic is searched whole, and finds every copy of the key
    assert len(list(find(log_dir, topics=[CUSTOM], key=key))) == 5


# --- live keys against the broker's own cleaner -------------------------------------------------

CLEANED = "census-cleaner"
#: tombstones outlive the first cleaning by this long (their batches' delete horizon)
DELETE_RETENTION_MS = 1000


def _rows_below(log_dir, end):
    """``[(offset, key, value, header bytes, deleteHorizonMs)]`` of the topic's records below ``end``."""
    from kafkarec.scan import LogScan
    t = LogScan(log_dir, topics=[CLEANED], batch_columns=True, bounds=Bounds.of(offsets=(0, end))).to_table()
    return [(o, k, v, sum(len(h["key"].encode()) + len(h["value"] or b"") for h in hs or ()), d)
            for o, k, v, hs, d in zip(*(t[c].to_pylist() for c in ("offset", "key", "value", "headers",
                                                                    "deleteHorizonMs")))]


def _partition(doc):
    (row,) = [p for p in doc["partitions"] if p["topic"] == CLEANED]
    return row


def _roll_and_wait_cleaned(kafka_broker, producer, tag: str, timeout: float = 30) -> int:
    """Append records of fresh keys until the partition rolls a segment (``segment.ms`` 100 rolls
    on the first append past it), then wait until the cleaner has cleaned up to the new active
    segment; returns its base offset."""
    import time
    d = kafka_broker.partition_dir(CLEANED)
    logs = lambda: sorted(int(n[:-4]) for n in os.listdir(d) if n.endswith(".log"))   # noqa: E731
    before, deadline, i = logs()[-1], time.monotonic() + timeout, 0
    while logs()[-1] == before:
        assert time.monotonic() < deadline, f"{CLEANED} did not roll a segment within {timeout} s"
        producer.produce(CLEANED, key=b"%s-%d" % (tag.encode(), i), value=b"roll")
        produce._flush(producer)
        i += 1
        time.sleep(0.05)        # the roll is time-driven (segment.ms): appends spaced, the wait bounded
    active = logs()[-1]
    produce.wait_cleaned(kafka_broker.log_dir, CLEANED, timeout=timeout, through={0: active})
    return active


def _copy_logs(kafka_broker, dest: str) -> str:
    """The partition's ``.log`` files copied under ``dest`` (a log dir of their own), while nothing
    is appended and the cleaner has nothing dirty left (an index is not needed to read them)."""
    import shutil
    src, folder = kafka_broker.partition_dir(CLEANED), os.path.join(dest, f"{CLEANED}-0")
    os.makedirs(folder)
    for name in os.listdir(src):
        if name.endswith(".log"):
            shutil.copyfile(os.path.join(src, name), os.path.join(folder, name))
    return dest


@pytest.fixture(scope="module")
def cleaner_run(kafka_broker, tmp_path_factory):
    """A compacted topic written into one active segment (nothing cleanable), its census taken
    then; ``segment.ms`` set to 100 so that later appends roll, and the cleaner forced to run twice:
    once (tombstones kept, their batches given a delete horizon), and once more after that horizon.
    ``{"before": census, "end": offsets it covered, "first": rows after the first cleaning,
    "first_dir": a copy of that log, "first_at"/"second_at": ms before each cleaning was forced,
    "second": rows after the second}``."""
    import random
    import time
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
    admin = produce._admin(kafka_broker.bootstrap)
    config = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0",
              "delete.retention.ms": str(DELETE_RETENTION_MS)}
    for f in admin.create_topics([NewTopic(CLEANED, 1, 1, config=config)]).values():
        f.result(30)
    p = produce._cf_producer(kafka_broker.bootstrap)
    rng = random.Random(50)
    for rnd in range(3):
        for i in range(40):
            if rnd == 1 and i % 5 == 0:
                continue
            value = None if rnd == 2 and i % 4 == 0 else b"r%d-%d-" % (rnd, i) + b"x" * rng.randrange(60)
            headers = [("h", b"%d" % i)] if i % 3 == 0 else None
            p.produce(CLEANED, key=b"c-%d" % i, value=value, headers=headers)
    p.produce(CLEANED, key=b"back", value=None)
    p.produce(CLEANED, key=b"back", value=b"again")      # a tombstone, then a value: live
    produce._flush(p)
    log_dir = kafka_broker.log_dir
    assert len([n for n in os.listdir(kafka_broker.partition_dir(CLEANED)) if n.endswith(".log")]) == 1
    out = {"before": census(log_dir, bounds=Bounds.of(topics=[CLEANED]))}
    end = out["end"] = _partition(out["before"])["records"]
    assert end == 40 * 3 - 8 + 2
    for f in admin.incremental_alter_configs([ConfigResource(
            ConfigResource.Type.TOPIC, CLEANED, incremental_configs=[ConfigEntry(
                "segment.ms", "100", incremental_operation=AlterConfigOpType.SET)])]).values():
        f.result(30)
    out["first_at"] = int(time.time() * 1000)
    _roll_and_wait_cleaned(kafka_broker, p, "roll")
    out["first"] = _rows_below(log_dir, end)
    out["first_dir"] = _copy_logs(kafka_broker, str(tmp_path_factory.mktemp("cleaned-once")))
    horizon = max(d for _, _, v, _, d in out["first"] if v is None)
    deadline = time.monotonic() + 30
    while time.time() * 1000 <= horizon:        # the rule's own clock: the horizon must pass
        assert time.monotonic() < deadline, "the tombstones' delete horizon did not pass within 30 s"
        time.sleep(0.1)
    out["second_at"] = int(time.time() * 1000)
    _roll_and_wait_cleaned(kafka_broker, p, "again")
    out["second"] = _rows_below(log_dir, end)
    return out


def test_live_keys_are_what_the_brokers_cleaner_keeps(cleaner_run, kafka_broker):
    """The census of the uncleaned log says which keys and bytes compaction keeps and how many
    tombstones: the broker's cleaner then kept exactly those (Kafka's LogCleaner, forced to run)."""
    row, end, first = _partition(cleaner_run["before"]), cleaner_run["end"], cleaner_run["first"]
    kept = [r for r in first if r[2] is not None]
    tombstones = [r for r in first if r[2] is None]
    assert len(first) < end                                        # the cleaner removed records
    assert row["live_keys"] == len(kept) == len({r[1] for r in kept}) == 31
    assert row["live_bytes"] == sum(len(k) + len(v) + h for _, k, v, h, _ in kept)
    assert row["retained_tombstones"] == len(tombstones) == 10     # c-0, c-4 ... c-36
    assert row["distinct_keys"] == len(kept) + len(tombstones)
    # the census of the cleaned log (cleaned twice by now) says the same: compaction keeps the state
    after = _partition(census(kafka_broker.log_dir, bounds=Bounds.of(topics=[CLEANED], offsets=(0, end))))
    assert (after["live_keys"], after["live_bytes"]) == (row["live_keys"], row["live_bytes"])


def test_tombstones_go_once_their_delete_horizon_passed(cleaner_run):
    """``delete.retention.ms``: the first cleaning gave each tombstone's batch a delete horizon (that
    cleaning's time plus it) and kept the tombstones; the census of that log as of the first
    cleaning keeps them, as of the second (past the horizon) none, and the second cleaning removed
    them all and kept every live key."""
    first, second, end = cleaner_run["first"], cleaner_run["second"], cleaner_run["end"]
    horizons = [d for _, _, v, _, d in first if v is None]
    assert all(h is not None and h >= cleaner_run["first_at"] + DELETE_RETENTION_MS for h in horizons)
    bounds = Bounds.of(topics=[CLEANED], offsets=(0, end))
    once = cleaner_run["first_dir"]
    kept_then = _partition(census(once, bounds=bounds, as_of_ms=cleaner_run["first_at"]))
    kept_later = _partition(census(once, bounds=bounds, as_of_ms=cleaner_run["second_at"]))
    assert kept_then["retained_tombstones"] == len(horizons) == 10
    assert kept_later["retained_tombstones"] == len([r for r in second if r[2] is None]) == 0
    assert sorted(r[:3] for r in second) == sorted(r[:3] for r in first if r[2] is not None)
    assert kept_later["live_keys"] == len(second) == 31
