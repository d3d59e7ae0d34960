"""kafkarec.table: a keyed topic's state (view "latest"), against a model of Kafka's rules
written here: offsets in order, tombstones delete, null keys and control records never
count, read_committed leaves out aborted transactions and everything from the LSO on.

Logs are written by tests/support/logs/logdir.py's PartitionWriter (kafka-python's batch builder, the
broker's offset assignment and segment rolls); keys split into buckets when the map is too
small must give the same state as one pass."""
import os
import shutil

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kafkarec
from kafkarec import _core, table
from support.logs.keyed import T0, model_state, state_of, write_partition
from support.logs.logdir import PartitionWriter, v2_batch

keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"", None])
values = st.one_of(st.none(), st.binary(max_size=12))
batches = st.tuples(st.just("batch"), st.lists(st.tuples(keys, values), min_size=1, max_size=6),
                    st.sampled_from([None, None, 7, 8]))
ends = st.tuples(st.sampled_from(["commit", "abort"]), st.sampled_from([7, 8]))
plans = st.lists(st.one_of(batches, batches, ends), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans, read_committed=st.booleans(), tiny=st.booleans())
def test_state_is_the_model(tmp_path_factory, plan, read_committed, tiny):
    root = tmp_path_factory.mktemp("latest")
    events = write_partition(root, "t", 0, plan)
    result = table.latest(str(root), read_committed=read_committed,
                          buffer_bytes=_core.KEY_MAP_MIN_BYTES if tiny else table.DEFAULT_BUFFER_BYTES)
    assert state_of(result, "t", 0) == model_state(events, read_committed=read_committed)
    data = [e for e in events if e[0] == "data"]
    if not read_committed:
        assert result.stats.records == len(data)
        assert result.stats.null_keys == sum(1 for e in data if e[2] is None)
    assert result.stats.rows == result.table.num_rows


def test_keys_split_into_buckets_when_the_map_is_full(tmp_path):
    """3,000 keys, a map holding 38: the keys split by digest until each bucket fits; the
    state is the same as with one pass, each key once."""
    plan = [("batch", [(b"key-%d" % ((i * 50 + j) % 3000), b"v%d-%d" % (i, j)) for j in range(50)], None)
            for i in range(200)]
    plan.append(("batch", [(b"key-%d" % i, None) for i in range(0, 3000, 3)], None))   # tombstones
    events = write_partition(tmp_path, "many", 0, plan, segment_bytes=64 << 10)
    expected = model_state(events)
    one = table.latest(str(tmp_path))
    split = table.latest(str(tmp_path), buffer_bytes=_core.KEY_MAP_MIN_BYTES)
    assert one.stats.buckets == 1 and one.stats.passes == 2
    assert split.stats.buckets >= 3000 // 38 and split.stats.passes >= 2 * split.stats.buckets
    assert state_of(one, "many", 0) == state_of(split, "many", 0) == expected
    assert len(expected) == 2000
    assert split.table.equals(one.table)      # sorted by topic, partition, offset either way


def test_as_of_an_offset_needs_no_later_segment(tmp_path):
    plan = [("batch", [(b"k%d" % (i % 5), b"v%d" % i) for i in range(j, j + 4)], None) for j in range(0, 200, 4)]
    events = write_partition(tmp_path / "full", "t", 0, plan, segment_bytes=300)
    segments = sorted(f for f in os.listdir(tmp_path / "full" / "t-0") if f.endswith(".log"))
    assert len(segments) > 5
    cut = int(segments[3].split(".")[0])           # the base offset of the fourth segment
    shutil.copytree(tmp_path / "full", tmp_path / "cut")
    for name in segments[3:]:                       # the cut copy has no segment from the cut on
        for suffix in (".log", ".index", ".timeindex"):
            path = tmp_path / "cut" / "t-0" / name.replace(".log", suffix)
            if path.exists():
                path.unlink()
    for end in (cut, cut - 3):
        expected = model_state(events, end_offset=end)
        full = table.latest(str(tmp_path / "full"), end_offset=end)
        assert state_of(full, "t", 0) == expected
        if end == cut:
            assert state_of(table.latest(str(tmp_path / "cut")), "t", 0) == expected


def test_as_of_a_time(tmp_path):
    plan = [("batch", [(b"k%d" % (i % 3), b"v%d" % i)], None) for i in range(40)]
    events = write_partition(tmp_path, "t", 0, plan)
    # record i has timestamp T0 + i: end_time T0 + 17 keeps offsets 0..16
    assert state_of(table.latest(str(tmp_path), end_time=T0 + 17), "t", 0) == model_state(events, end_offset=17)


def test_partitions_and_topics_are_separate_states(tmp_path):
    ev = {(t, p): write_partition(tmp_path, t, p, [("batch", [(b"same", b"%s-%d" % (t.encode(), p))], None)])
          for t in ("a", "b") for p in (0, 1)}
    result = table.latest(str(tmp_path))
    assert result.table.num_rows == 4
    for (t, p), events in ev.items():
        assert state_of(result, t, p) == model_state(events)
    only_b = table.latest(str(tmp_path), topics=["b"])
    assert set(only_b.table["topic"].to_pylist()) == {"b"}


def test_control_records_never_count(tmp_path):
    plan = [("batch", [(b"k", b"1")], 7), ("commit", 7), ("batch", [(b"k", None)], 7), ("abort", 7)]
    events = write_partition(tmp_path, "t", 0, plan)
    assert state_of(table.latest(str(tmp_path), read_committed=True), "t", 0) == {b"k": (0, b"1")}
    assert state_of(table.latest(str(tmp_path)), "t", 0) == {}       # uncommitted: the tombstone counts
    assert model_state(events) == {}


def test_a_corrupt_batch_raises_with_its_position(tmp_path):
    w = PartitionWriter(str(tmp_path), "t", 0)
    w.append(v2_batch([(T0, b"k", b"v", [])]))
    bad = w.append(v2_batch([(T0, b"k", b"w", [])]))
    w.close()
    where = w.corrupt(bad, at=-1)
    with pytest.raises(kafkarec.DecodeError) as info:
        table.latest(str(tmp_path))
    assert info.value.file.endswith("t-0/00000000000000000000.log")
    assert bad.position <= info.value.position <= where


def test_the_engine_hands_on_what_is_not_a_batch_once(tmp_path):
    """Spark's error rows ride along: the first emitting pass hands them on, no other."""
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("offset", pa.int64())])
    rb = pa.record_batch([pa.array([b"k%d" % (i % 50) for i in range(400)]),
                          pa.array([b"v"] * 400), pa.array(range(400), pa.int64())], schema=schema)
    reads = []

    def read():
        reads.append(1)
        yield rb
        yield "an error row"
    stats = table.LatestStats()
    out = list(table.latest_batches(read, buffer_bytes=_core.KEY_MAP_MIN_BYTES, stats=stats))
    assert out.count("an error row") == 1
    got = pa.Table.from_batches([b for b in out if not isinstance(b, str)])
    assert sorted(got["offset"].to_pylist()) == list(range(350, 400))
    assert stats.buckets >= 2 and stats.passes == len(reads)


def test_key_digest_is_murmur3_x64_128():
    mmh3 = pytest.importorskip("mmh3", reason="mmh3 (in the test extra) checks the digest")
    m = _core.KeyOffsetMap(4096, 0)
    for key in (b"", b"a", b"0123456789abcdef", b"0123456789abcdefg", bytes(range(256))):
        expect = mmh3.hash128(key, 0, True, signed=False).to_bytes(16, "little")
        assert m.digest(key) == expect


def test_key_map_refuses_what_is_not_arrow():
    m = _core.KeyOffsetMap(4096, 1)
    m.start()
    with pytest.raises(TypeError, match="keys must be a pyarrow binary array"):
        m.put([b"a"], pa.array([0], pa.int64()))
    with pytest.raises(TypeError, match="offsets must be a pyarrow int64 array"):
        m.put(pa.array([b"a"]), pa.array([0], pa.int32()))
    with pytest.raises(ValueError, match="keys has 2 rows, offsets have 1"):
        m.put(pa.array([b"a", b"b"]), pa.array([0], pa.int64()))
    with pytest.raises(ValueError, match="at least 1024 bytes"):
        _core.KeyOffsetMap(100)
    with pytest.raises(ValueError, match="view must be one of log, latest"):
        table.parse_view("newest")
