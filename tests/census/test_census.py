"""kafkarec.census on log directories written as a broker writes them (support.logs.keyed,
support.logs.logdir): the census against a model of Kafka's rules (read_committed, tombstones,
compaction), the search against a filtered read, the what-if's batches against kafkarec's
own writer and its refusals, damaged segments counted."""
import json
import os
import re
import random
import shutil

import numpy as np
import pytest

import kafkarec
from kafkarec.census import census, find, parse_codecs, what_if
from kafkarec.errors import UsageError
from kafkarec.scan import Bounds
from support.logs.keyed import T0, keyed_world, model_records, model_state, write_partition
from support.logs.logdir import PartitionWriter, v2_batch


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("census")
    return str(root), keyed_world(root)


def _part(doc, topic, partition):
    [row] = [p for p in doc["partitions"] if p["topic"] == topic and p["partition"] == partition]
    return row


def test_census_counts_keys_and_live_keys_as_kafkas_rules_give(world):
    root, events = world
    doc = census(root, partitioner=False)
    for (topic, partition), evs in events.items():
        row = _part(doc, topic, partition)
        committed = model_records(evs, read_committed=True)
        everything = model_records(evs)
        state = model_state(evs, read_committed=True)
        keys = {k for _, k, _ in committed if k is not None}
        assert row["records"] == len(committed), (topic, partition)
        assert row["tombstones"] == sum(1 for _, _, v in committed if v is None)
        assert row["null_keys"] == sum(1 for _, k, _ in committed if k is None)
        assert row["distinct_keys"] == len(keys) and row["distinct_keys_exact"]
        assert row["live_keys"] == len(state)
        # the latest record of every live key: its key and value bytes (these records have no headers)
        assert row["live_bytes"] == sum(len(k) + len(v) for k, (_, v) in state.items())
        # tombstones still last in their key, in batches no cleaner has touched: all kept
        last = {}
        for _, k, v in committed:
            if k is not None:
                last[k] = v
        assert row["retained_tombstones"] == sum(1 for v in last.values() if v is None)
        adds = row["read_uncommitted_adds"]
        assert adds["records"] == len(everything) - len(committed)
        assert adds["control_records"] == sum(1 for e in evs if e[0] == "end")
        assert row["first_offset"] == committed[0][0] and row["last_offset"] == committed[-1][0]
        assert row["errors"] == []
    # profiles has aborted transactions and, in partition 1, an open one: read_uncommitted adds
    assert _part(doc, "profiles", 1)["read_uncommitted_adds"]["records"] > 0
    [topic] = [t for t in doc["topics"] if t["topic"] == "profiles"]
    assert topic["records"] == sum(len(model_records(events[("profiles", p)], read_committed=True)) for p in (0, 1))


def _transaction_model(evs):
    """From the written events alone: the aborted data records before the last stable offset,
    the last stable offset (the first offset of the earliest transaction with no marker) and the
    data records from it on."""
    current, aborted = {}, []
    for e in evs:
        if e[0] == "data" and e[4] is not None:
            current.setdefault(e[4], []).append(e[1])
        elif e[0] == "end":
            if not e[3]:
                aborted += current.get(e[2], [])
            current.pop(e[2], None)
    open_firsts = [offsets[0] for offsets in current.values() if offsets]
    stable = min(open_firsts) if open_firsts else None
    past = 0 if stable is None else sum(1 for e in evs if e[0] == "data" and e[1] >= stable)
    return sum(1 for o in aborted if stable is None or o < stable), stable, past


def test_census_tells_aborted_records_from_those_past_the_last_stable_offset(world):
    """What read_uncommitted adds, split: records of aborted transactions, and the records from
    the last stable offset on (a transaction still open at the end, and all after it)."""
    root, events = world
    doc = census(root, partitioner=False)
    for (topic, partition), evs in events.items():
        adds = _part(doc, topic, partition)["read_uncommitted_adds"]
        aborted, stable, past = _transaction_model(evs)
        assert (adds["aborted_records"], adds["last_stable_offset"], adds["records_past_last_stable_offset"]) \
            == (aborted, stable, past), (topic, partition)
        assert adds["aborted_records"] + adds["records_past_last_stable_offset"] == adds["records"]
    assert _part(doc, "profiles", 1)["read_uncommitted_adds"]["last_stable_offset"] is not None
    assert _part(doc, "profiles", 0)["read_uncommitted_adds"]["aborted_records"] > 0
    # within an end bound the split is still the whole log's (a transaction the bound cuts in two
    # is judged by its marker past the bound): each bounded read's adds are its aborted records
    stable = _part(doc, "profiles", 1)["read_uncommitted_adds"]["last_stable_offset"]
    for end in (7, 30, stable):
        bounded = census(root, partitioner=False, bounds=Bounds.of(topics=["profiles"], offsets=(0, end)))
        for p in (0, 1):
            adds = _part(bounded, "profiles", p)["read_uncommitted_adds"]
            aborted = sum(1 for e in events[("profiles", p)] if e[0] == "data" and e[1] < end) \
                - _part(bounded, "profiles", p)["records"]
            assert (adds["aborted_records"], adds["records_past_last_stable_offset"]) == (aborted, 0), (end, p)


def test_census_topic_rows_merge_their_partitions(world):
    """A topic's row holds what its partitions' rows hold, summed or merged: tallies by codec,
    producer and header key, the time range, the size distributions, the read_uncommitted adds."""
    root, _ = world
    doc = census(root, partitioner=False)
    [topic] = [t for t in doc["topics"] if t["topic"] == "profiles"]
    parts = [p for p in doc["partitions"] if p["topic"] == "profiles"]
    for k in ("codecs", "producers", "header_keys", "schema_ids"):
        names = {n for p in parts for n in p[k]}
        assert set(topic[k]) == names, k
        for n in names:
            for figure in topic[k][n]:
                assert topic[k][n][figure] == sum(p[k].get(n, {}).get(figure, 0) for p in parts), (k, n, figure)
    assert topic["producers"] and topic["codecs"]["none"]["records"] == topic["records"]
    assert topic["min_timestamp"] == min(p["min_timestamp"] for p in parts)
    assert topic["max_timestamp"] == max(p["max_timestamp"] for p in parts)
    for k in ("batch_size", "record_size"):
        assert topic[k]["count"] == sum(p[k]["count"] for p in parts)
        assert topic[k]["sum"] == sum(p[k]["sum"] for p in parts)
        assert (topic[k]["min"], topic[k]["max"]) == (min(p[k]["min"] for p in parts), max(p[k]["max"] for p in parts))
        assert sum(c for _, _, c in topic[k]["buckets"]) == topic[k]["count"]
    for figure in ("records", "aborted_records", "records_past_last_stable_offset", "control_records", "bytes"):
        assert topic["read_uncommitted_adds"][figure] == sum(p["read_uncommitted_adds"][figure] for p in parts)
    assert topic["batch_size"]["count"] == topic["batches"]


def test_census_bytes_are_the_batches_bytes(world):
    """Bytes: every batch a read_committed read returns records of, by its stored size; the
    uncommitted view adds the aborted batches and the markers, summing to the log's bytes."""
    root, events = world
    doc = census(root, bounds=Bounds.of(topics=["balances"]), partitioner=False)
    row = _part(doc, "balances", 0)
    size = sum(os.path.getsize(os.path.join(root, "balances-0", f))
               for f in os.listdir(os.path.join(root, "balances-0")) if f.endswith(".log"))
    assert row["bytes"] == size                       # no transactions: every batch is committed
    assert row["batches"] == 601 and row["read_uncommitted_adds"]["bytes"] == 0
    assert row["codecs"]["none"] == {"batches": 601, "records": row["records"], "bytes": size}
    assert row["batch_size"]["count"] == 601
    assert row["record_size"]["count"] == row["records"]


def test_census_distinct_keys_past_the_exact_bound_is_hyperloglog_within_its_error(world):
    root, events = world
    doc = census(root, bounds=Bounds.of(topics=["balances"]), max_exact_keys=100, partitioner=False)
    row = _part(doc, "balances", 0)
    assert not row["distinct_keys_exact"] and row["live_keys"] is None
    assert 0 < row["distinct_keys_error"] < 0.05
    assert abs(row["distinct_keys"] - 3000) <= 3000 * row["distinct_keys_error"]


def test_census_murmur2_placement(tmp_path):
    """Keys written where murmur2 names them agree; a partition holding a key murmur2 puts
    elsewhere is flagged with its count."""
    keys = [b"key-%d" % i for i in range(60)]
    for p in range(3):
        mine = [k for k in keys if kafkarec._core.partition_for_key(k, 3) == p]
        write_partition(tmp_path / "placed", "placed", p, [("batch", [(k, b"v") for k in mine], None)])
        write_partition(tmp_path / "placed", "custom", p, [("batch", [(k, b"v") for k in keys[p::3]], None)])
    doc = census(str(tmp_path / "placed"))
    placed = [t for t in doc["topics"] if t["topic"] == "placed"][0]
    custom = [t for t in doc["topics"] if t["topic"] == "custom"][0]
    assert placed["misplaced_records"] == 0
    # keys where murmur2 puts them are in one partition each: the topic's count is exact as a sum
    assert placed["distinct_keys"] == len(keys) and placed["distinct_keys_exact"]
    assert custom["distinct_keys"] == len(keys) and custom["distinct_keys_exact"]
    assert all(_part(doc, "placed", p)["partitioner"]["agrees"] for p in range(3))
    want = sum(1 for i, k in enumerate(keys) if kafkarec._core.partition_for_key(k, 3) != i % 3)
    assert custom["misplaced_records"] == want > 0


def test_census_counts_headers_schema_ids_and_delete_horizons(tmp_path):
    w = PartitionWriter(str(tmp_path), "framed", 0)
    framed = b"\x00\x00\x00\x00\x07" + b"payload"
    w.append(v2_batch([(T0, b"a", framed, [("trace", b"xyz")]), (T0 + 1, b"b", b"plain", [("trace", b"1")])]))
    # a cleaned batch: its tombstone's delete horizon at T0 + 50
    cleaned = kafkarec.RecordBatchBuilder(delete_horizon_ms=T0 + 50)
    cleaned.append(None, b"c", timestamp=T0 + 2)
    w.append(cleaned.build())
    w.append(v2_batch([(T0 + 3, b"d", None, [])]))
    w.close()
    early = census(str(tmp_path), as_of_ms=T0 + 10)["partitions"][0]
    late = census(str(tmp_path), as_of_ms=T0 + 100)["partitions"][0]
    assert early["header_keys"] == {"trace": {"records": 2, "bytes": 4}}
    assert early["schema_ids"] == {"7": {"records": 1, "bytes": len(framed)}}
    assert early["retained_tombstones"] == 2 and late["retained_tombstones"] == 1
    assert early["live_keys"] == 2 and early["tombstones"] == 2


def test_census_counts_damaged_batches(world, tmp_path):
    root, events = world
    shutil.copytree(os.path.join(root, "balances-0"), tmp_path / "balances-0")
    seg = sorted(f for f in os.listdir(tmp_path / "balances-0") if f.endswith(".log"))[0]
    path = tmp_path / "balances-0" / seg
    data = bytearray(path.read_bytes())
    data[200] ^= 0xFF                      # inside the first batch's records: its CRC fails
    path.write_bytes(bytes(data))
    row = census(str(tmp_path), partitioner=False)["partitions"][0]
    assert len(row["errors"]) >= 1 and "crc" in row["errors"][0]["message"].lower()
    assert row["records"] < len(model_records(events[("balances", 0)], read_committed=True))


def test_find_equals_a_filtered_read(world):
    root, events = world
    got = list(find(root, topics=["profiles"], key=b"user-3"))
    want = sorted((p, off, v) for p in (0, 1) for off, k, v in model_records(events[("profiles", p)])
                  if k == b"user-3")
    assert [(r["partition"], r["offset"], r["value"]) for r in got] == want and want
    got = list(find(root, topics=["profiles"], value_contains=b"profile 2", read_committed=True))
    want = sorted((p, off) for p in (0, 1) for off, k, v in model_records(events[("profiles", p)], read_committed=True)
                  if v is not None and b"profile 2" in v)
    assert [(r["partition"], r["offset"]) for r in got] == want and want
    got = list(find(root, topics=["balances"], value_regex=r"^12\d$", bounds=Bounds.of(offsets=(0, 5000))))
    assert [r["value"] for r in got] == [b"%d" % i for i in range(120, 130)]


def test_find_with_murmur2_reads_only_the_named_partition(tmp_path):
    from kafkarec.log.storage import process_bytes_read
    rng = random.Random(5)
    for p in range(8):
        plan = [("batch", [(b"key-%d" % rng.randrange(10_000), b"x" * 200) for _ in range(20)], None)
                for _ in range(40)]
        write_partition(tmp_path, "wide", p, plan, segment_bytes=64 << 10)
    key = b"key-77"
    target = kafkarec._core.partition_for_key(key, 8)
    before = dict(process_bytes_read().by_path)
    list(find(str(tmp_path), topics=["wide"], key=key, partitioner="murmur2"))
    after = dict(process_bytes_read().by_path)
    read = {path: after[path] - before.get(path, 0) for path in after if after[path] != before.get(path, 0)}
    logs = {path: n for path, n in read.items() if path.endswith(".log")}
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".log"))
    assert logs and all(f"wide-{target}" in path for path in logs), logs
    assert sum(logs.values()) <= total / 8 + total * 0.01


def test_find_refuses_a_partitioner_without_a_key_and_a_bad_regex(world):
    root, _ = world
    with pytest.raises(UsageError, match="key"):
        list(find(root, partitioner="murmur2"))
    with pytest.raises(UsageError, match="regex"):
        list(find(root, value_regex="("))


@pytest.mark.parametrize("spec, needle", [("gzip:10", "[1, 9]"), ("lz4:18", "[1, 17]"),
                                           ("zstd:23", "[-131072, 22]"), ("zstd:-131073", "[-131072, 22]"),
                                           ("snappy:1", "no compression level"), ("brotli", "one of")])
def test_what_if_refuses_levels_outside_kafkas_ranges(spec, needle):
    with pytest.raises(UsageError) as e:
        parse_codecs(spec)
    assert needle in str(e.value)


def test_what_if_batches_as_the_producer_and_writes_every_codec(world):
    root, events = world
    codecs = parse_codecs("zstd:3,zstd:9,lz4,snappy,gzip:6,none")
    doc = what_if(root, codecs, bounds=Bounds.of(topics=["balances"]))
    by = {c["codec"]: c for c in doc["codecs"]}
    assert list(by) == ["zstd:3", "zstd:9", "lz4", "snappy", "gzip:6", "none"]
    # the same records with kafkarec's writer, cut where has_room_for says (batch.size 16384)
    records = model_records(events[("balances", 0)], read_committed=True)
    sizes, b = [], None
    for off, k, v in records:
        ts = T0 + off
        if b is not None and not b.has_room_for(v, k, timestamp=ts):
            sizes.append(len(b.build()))
            b = None
        if b is None:
            b = kafkarec.RecordBatchBuilder(max_batch_size=16384)
        b.append(v, k, timestamp=ts)
    sizes.append(len(b.build()))
    assert by["none"]["bytes"] == sum(sizes) and by["none"]["batches"] == len(sizes)
    for name in ("zstd:3", "zstd:9", "lz4", "snappy", "gzip:6"):
        # compressed batches hold more records: their size is estimated from the running ratio
        assert by[name]["batches"] < len(sizes)
        assert 0 < by[name]["bytes"] < by["none"]["bytes"] and by[name]["ratio"] > 1
    # zstd:3 cut as Kafka's producer cuts: uncompressed records x the topic's running ratio x 1.05
    # (CompressionRatioEstimator, in Java floats: 1.0 at first; up to at least the ratio seen, by
    # 0.05 at least; down by 0.005, not below the ratio seen)
    f32 = np.float32
    ratio, sizes, b = f32(1.0), [], None
    for off, k, v in records:
        if b is not None and not b.has_room_for(v, k, timestamp=T0 + off):
            uncompressed = b.size_in_bytes - 61
            sizes.append(len(b.build()))
            seen = f32(sizes[-1] - 61) / f32(uncompressed)
            ratio = max(ratio + f32(0.05), seen) if seen > ratio else max(ratio - f32(0.005), seen) if seen < ratio else ratio
            b = None
        if b is None:
            b = kafkarec.RecordBatchBuilder(compression=kafkarec.Compression.ZSTD, compression_level=3,
                                            max_batch_size=16384, estimated_compression_ratio=float(ratio))
        b.append(v, k, timestamp=T0 + off)
    sizes.append(len(b.build()))
    assert (by["zstd:3"]["batches"], by["zstd:3"]["bytes"]) == (len(sizes), sum(sizes))
    kept = what_if(root, parse_codecs("none"), keep_batches=True, bounds=Bounds.of(topics=["balances"]))
    log_bytes = census(root, bounds=Bounds.of(topics=["balances"]), partitioner=False)["partitions"][0]["bytes"]
    assert kept["codecs"][0]["bytes"] == log_bytes      # the log's own batches rebuilt: the same size


def test_census_topic_counts_a_key_in_several_partitions_once(tmp_path):
    """A topic's distinct keys are the union of its partitions' keys: a custom partitioner that
    wrote the same keys to every partition counts them once (exact while every partition is
    exact; the sketches' union, within its error, once one is not)."""
    keys = [b"key-%d" % i for i in range(300)]
    for p in range(3):      # partition p: keys[100p : 100p+200], so 200 keys each, 300 in all
        write_partition(tmp_path, "spread", p, [("batch", [(k, b"v") for k in keys[100 * p:100 * p + 200]], None)])
    doc = census(str(tmp_path))
    [topic] = doc["topics"]
    assert [_part(doc, "spread", p)["distinct_keys"] for p in range(3)] == [200, 200, 100]
    assert topic["distinct_keys"] == 300 and topic["distinct_keys_exact"] and topic["distinct_keys_error"] == 0
    assert all("_keys_for_merge" not in p for p in doc["partitions"])
    # live keys are what a compaction keeps, partition by partition
    assert topic["live_keys"] == 500
    # every partition exact, but the census's partitions hold more keys than the bound in all: each
    # gives its digests only within its share of it (400 // 3), else its sketch: the union is HLL's
    doc = census(str(tmp_path), max_exact_keys=400)
    [topic] = doc["topics"]
    assert all(_part(doc, "spread", p)["distinct_keys_exact"] for p in range(3))
    assert not topic["distinct_keys_exact"] and abs(topic["distinct_keys"] - 300) <= 300 * topic["distinct_keys_error"]
    # one partition past the exact bound: the union of sketches, the exact partitions' digests in it
    doc = census(str(tmp_path), max_exact_keys=150)
    [topic] = doc["topics"]
    assert [_part(doc, "spread", p)["distinct_keys_exact"] for p in range(3)] == [False, False, True]
    assert not topic["distinct_keys_exact"] and 0 < topic["distinct_keys_error"] < 0.05
    assert abs(topic["distinct_keys"] - 300) <= 300 * topic["distinct_keys_error"]
    assert topic["live_keys"] is None


def test_what_if_a_record_past_batch_size_gets_a_batch_of_its_size(tmp_path):
    """The producer's buffer for a batch is at least the first record's upper bound
    (AbstractRecords.estimateSizeInBytesUpperBound: header 61, record overhead 21, key, value,
    headers); small records that fit in what that leaves join it, as Kafka's producer appends them."""
    from kafkarec.census.what_if import _batch_upper_bound
    assert _batch_upper_bound(b"v" * 20000, b"k", [("h", b"x")]) == 61 + 21 + 2 + 3 + 20000 + 1 + 2 + 2
    records = [(b"k", b"v" * 20000)] + [(None, b"s")] * 10
    write_partition(tmp_path, "big", 0, [("batch", records, None)])
    doc = what_if(str(tmp_path), parse_codecs("none"), detail=True)
    [row] = doc["partitions"]
    # the limit is 61 + 21 + 2 + 20,003 + 1 = 20,088; the big record takes 61 + 20,012 and each small
    # one 8 (a 7-byte body and its length): one fits (20,081), a second would not (20,089)
    assert row["codecs"][0]["batch_records"] == [2, 9]      # cut at batch.size: [1, 10]


def test_what_if_gives_a_large_zstd_context_back_when_it_returns(tmp_path):
    """Issue 67, finding 45: the what-if builds all its zstd:19 batches with one context (made
    once, not per batch) and frees it on return; it kept ~90 MB per level for the process's life."""
    from kafkarec._core import zstd_contexts_held
    write_partition(tmp_path, "z", 0, [("batch", [(b"k", b"v" * 100)] * 3, None), ("batch", [(b"k", b"w" * 100)], None)])
    doc = what_if(str(tmp_path), parse_codecs("zstd:19"), keep_batches=True)
    assert [(c["codec"], c["batches"]) for c in doc["codecs"]] == [("zstd:19", 2), ("none", 2)]
    assert 19 not in zstd_contexts_held()


def test_census_topic_keys_unknown_where_a_partition_has_no_sketch_library(tmp_path, monkeypatch):
    """A partition past its share of the exact bound, read where datasketches is not installed (a
    Spark executor with kafkarec's base dependencies): its partition figures stay exact, the topic's
    union is unknown (None), never a wrong sum; keys where murmur2 puts them still add up."""
    import kafkarec.census.keys as keys_module
    from kafkarec.errors import MissingExtraError
    real = keys_module.require

    def no_sketches(name):
        if name == "datasketches":
            raise MissingExtraError("datasketches", "datasketches", "census")
        return real(name)
    monkeypatch.setattr(keys_module, "require", no_sketches)
    keys = [b"key-%d" % i for i in range(300)]
    for p in range(3):
        write_partition(tmp_path, "spread", p, [("batch", [(k, b"v") for k in keys[100 * p:100 * p + 200]], None)])
    doc = census(str(tmp_path), max_exact_keys=400)
    [topic] = doc["topics"]
    assert [_part(doc, "spread", p)["distinct_keys"] for p in range(3)] == [200, 200, 100]
    assert topic["distinct_keys"] is None and not topic["distinct_keys_exact"]


@pytest.fixture(scope="module")
def sample_root(tmp_path_factory):
    from kafkarec.sample import generate
    root = str(tmp_path_factory.mktemp("find-sample") / "sample")
    generate(root, seed=7, scale=1)
    return root


def _full_read(root, topic):
    from kafkarec.scan import LogScan
    rows = LogScan(root, bounds=Bounds.of(topics=[topic])).to_table().to_pylist()
    for r in rows:
        r["headers"] = [(h["key"], h["value"]) for h in (r["headers"] or ())]
    return rows


@pytest.mark.parametrize("name, kwargs, keep", [
    ("header present", {"header_names": ["trace-id"]}, lambda r: any(k == "trace-id" for k, _ in r["headers"])),
    ("header holds bytes", {"header_contains": {"trace-id": b"a3"}},
     lambda r: any(k == "trace-id" and v is not None and b"a3" in v for k, v in r["headers"])),
    ("header regex", {"header_regex": {"trace-id": r"^[0-9]+[a-f]"}},
     lambda r: any(k == "trace-id" and v is not None and re.search(rb"^[0-9]+[a-f]", v) for k, v in r["headers"])),
    ("header equals, other name", {"headers": {"source": b"sample"}, "header_names": ["trace-id"]},
     lambda r: ("source", b"sample") in r["headers"] and any(k == "trace-id" for k, _ in r["headers"])),
    ("value bytes and header", {"value_contains": b'"qty', "header_contains": {"trace-id": b"d"}},
     lambda r: r["value"] is not None and b'"qty' in r["value"]
     and any(k == "trace-id" and v is not None and b"d" in v for k, v in r["headers"])),
])
def test_find_header_and_value_tests_equal_a_filtered_read(sample_root, name, kwargs, keep):
    want = [(r["partition"], r["offset"]) for r in _full_read(sample_root, "orders") if keep(r)]
    got = [(r["partition"], r["offset"]) for r in find(sample_root, topics=["orders"], **kwargs)]
    assert sorted(got) == sorted(want) and want, name
    assert len(want) < len(_full_read(sample_root, "orders"))       # the test picks, not everything


def test_find_cli_selects_partitions_and_takes_bytes_in_hex(sample_root, capfd):
    from kafkarec.cli.main import main
    rows = _full_read(sample_root, "orders")
    want = [(r["partition"], r["offset"]) for r in rows if r["partition"] in (0, 2)
            and r["value"] is not None and b"paid" in r["value"]
            and any(k == "source" and v is not None and b"amp" in v for k, v in r["headers"])]
    assert main(["find", sample_root, "--topics", "orders", "--partition", "0,2", "--json",
                 "--value-contains-hex", b"paid".hex(), "--header-contains-hex", "source=" + b"amp".hex()]) == 0
    got = [(o["partition"], o["offset"]) for o in map(json.loads, capfd.readouterr().out.splitlines())]
    assert sorted(got) == sorted(want) and want
    assert main(["find", sample_root, "--value-contains-hex", "zz"]) == 2
    assert "--value-contains-hex 'zz': not hex" in capfd.readouterr().err


def test_partition_selection_is_a_number_list(sample_root):
    from kafkarec.log.selection import SelectionError, cli_selection
    assert cli_selection(partitions="2, 0").partitions == frozenset({0, 2})
    for bad in ("x", "-1", "2147483648", ","):
        with pytest.raises(SelectionError, match="partition"):
            cli_selection(partitions=bad)


def test_census_what_if_names_the_records_it_could_not_take(sample_root, capfd):
    """A damaged batch stops the what-if's records too: said on stderr, counted in the exit."""
    from kafkarec.cli.main import main
    assert main(["census", sample_root, "--topics", "clicks", "--no-progress", "--what-if", "lz4", "--json"]) == 1
    captured = capfd.readouterr()
    doc = json.loads(captured.out)
    assert doc["what_if"]["errors"] and all(e["topic"] == "clicks" for e in doc["what_if"]["errors"])
    assert [line for line in captured.err.splitlines() if line.startswith("what-if: clicks-0: ")]


def test_census_counts_a_damaged_first_batch_in_each_segment(tmp_path):
    """Finding 43: every segment's first batch is at position 0; the census told damaged batches
    apart by position alone, so a second segment's damaged first batch was never counted."""
    w = PartitionWriter(str(tmp_path), "t", 0, segment_bytes=200)
    for i in range(4):                     # two batches a segment
        w.append(v2_batch([(T0 + i, b"k%d" % i, b"value-%d" % i, [])]))
    w.close()
    logs = sorted(os.path.join(w.dir, f) for f in os.listdir(w.dir) if f.endswith(".log"))
    assert len(logs) == 2
    for path in logs:
        data = bytearray(open(path, "rb").read())
        data[70] ^= 0xFF                   # inside the first batch's records: its CRC fails
        open(path, "wb").write(bytes(data))
    row = census(str(tmp_path), partitioner=False)["partitions"][0]
    assert len(row["errors"]) == 2
    assert [(os.path.basename(e["file"]), e["position"]) for e in row["errors"]] == \
        [(os.path.basename(p), 0) for p in logs]
    assert all("crc" in e["message"].lower() for e in row["errors"]) and row["records"] == 2
    assert len([r for r in find(str(tmp_path)) if "error" in r]) == 2


def test_census_header_key_records_count_records(tmp_path):
    """Finding 44: a record carrying a header key twice is one record of that key."""
    w = PartitionWriter(str(tmp_path), "h", 0)
    w.append(v2_batch([(T0, b"a", b"v", [("h", b"a"), ("h", b"b"), ("x", None)]), (T0 + 1, b"b", b"v", [("h", b"cc")])]))
    w.close()
    row = census(str(tmp_path))["partitions"][0]
    assert row["header_keys"] == {"h": {"records": 2, "bytes": 4}, "x": {"records": 1, "bytes": 0}}
    assert census(str(tmp_path))["topics"][0]["header_keys"]["h"] == {"records": 2, "bytes": 4}


@pytest.mark.parametrize("n", [-1, 0, 2 ** 31, "3", True])
def test_census_refuses_what_find_refuses_as_a_partition_count(world, n):
    """Finding 39: one rule for a partition count (find's): the core's murmur2 raised a raw
    OverflowError or ValueError from the census."""
    root, _ = world
    for call in (lambda: census(root, num_partitions={"profiles": n}),
                 lambda: list(find(root, key=b"k", partitioner="murmur2", num_partitions={"profiles": n}))):
        with pytest.raises(UsageError, match=r"is no partition count \(1 to 2\^31-1\)"):
            call()


def test_a_damaged_partition_is_counted_as_its_two_reads_give_and_its_what_if_taken_back(tmp_path):
    """The census reads a partition once; one whose pass meets damage has its read_committed rows
    read apart, and what the pass counted and handed the what-if is taken back (the what-if's
    running ratio is the topic's: the partitions after it must see it as a read_committed read
    leaves it).  Partition 1: a transaction aborted, then a batch going back below the aborted
    batch's offsets (an error read_uncommitted, rows read_committed), then a CRC broken at the end:
    the pass has handed rows on before it meets the damage."""
    from kafkarec.census.what_if import WhatIf
    from kafkarec.scan import LogScan
    from support.logs.logdir import CONTROL_ABORT
    rng = random.Random(3)

    def records(n, at):
        return [(T0 + at + i, b"k%d" % rng.randrange(50), bytes(rng.randrange(256) for _ in range(300)), [])
                for i in range(n)]
    for p in range(3):
        w = PartitionWriter(str(tmp_path), "t", p, segment_bytes=1 << 20)
        for i in range(6):
            w.append(v2_batch(records(20, i * 20), codec="zstd"))
        w.append(v2_batch(records(5, 200), codec="zstd", producer_id=9, producer_epoch=0, base_sequence=0,
                          transactional=True))
        w.end_txn(CONTROL_ABORT, 9)
        for i in range(4):
            w.append(v2_batch(records(20, 300 + i * 20), codec="zstd"))
        w.close()
    path = os.path.join(str(tmp_path), "t-1", "%020d.log" % 0)
    data = bytearray(open(path, "rb").read())
    spans = [(b.position, b.size_in_bytes, b.base_offset) for b in kafkarec.iter_batches(bytes(data))]
    # the first batch after the marker takes the aborted batch's first offset (its offsets go back)
    after_marker = spans[8]
    data[after_marker[0]:after_marker[0] + 8] = spans[6][2].to_bytes(8, "big")
    data[spans[-1][0] + 100] ^= 0xFF        # the last batch's CRC fails
    open(path, "wb").write(bytes(data))

    codecs = parse_codecs("zstd,lz4")
    also = WhatIf(codecs)
    doc = census(str(tmp_path), partitioner=False, what_if=also)
    alone = what_if(str(tmp_path), codecs)

    def plain(result):
        return ([{k: v for k, v in c.items() if k != "compress_seconds"} for c in result["codecs"]],
                result["partitions"], [e["message"] for e in result["errors"]])
    assert plain(also.result()) == plain(alone)
    assert len(alone["errors"]) == 1

    def rows(isolation_level, p):
        t = LogScan(str(tmp_path), mode="PERMISSIVE", isolation_level=isolation_level,
                    partitions=[p]).to_table()
        return t.column("offset").to_pylist(), t.column("_corrupt_record").to_pylist()
    for p in range(3):
        row = _part(doc, "t", p)
        (committed, c_errors), (everything, u_errors) = rows("read_committed", p), rows("read_uncommitted", p)
        good = [o for o, e in zip(committed, c_errors) if e is None]
        assert (row["records"], row["first_offset"], row["last_offset"]) == (len(good), good[0], good[-1])
        assert row["read_uncommitted_adds"]["records"] == sum(e is None for e in u_errors) - len(good)
        assert len(row["errors"]) == len({e for e in c_errors + u_errors if e is not None})
    # partition 1's read_committed read keeps the batch read_uncommitted leaves out
    assert len(_part(doc, "t", 1)["errors"]) == 2 and _part(doc, "t", 1)["records"] == 9 * 20
