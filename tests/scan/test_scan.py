"""kafkarec.scan.LogScan, the one Arrow stream reader: its rows against its batch-level door's
records (:meth:`PartitionWalk.records`, what replays read), projection, bounds (random ones against filtering the full read),
limit, isolation levels, pieces, and the bytes it reads."""
import os
import pickle

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkarec.errors import MalformedBatchError, UsageError
from kafkarec.log import selection, storage
from kafkarec.scan import Bounds, LogScan

from support.logs.logdir import T0, PartitionWriter, build_log_dir, sample_records, v2_batch

KEY = ["topic", "partition", "offset"]


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = tmp_path_factory.mktemp("scanlogs")
    build_log_dir(str(root))
    return str(root)


@pytest.fixture(scope="module")
def big_partition(tmp_path_factory):
    """One partition of 40 segments of 100 batches each, indexed every 4 KiB as a broker does."""
    root = tmp_path_factory.mktemp("big")
    w = PartitionWriter(str(root), "big", 0, segment_bytes=200_000, index_interval_bytes=4096)
    for k in range(4000):
        w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=150), codec="none"))
    w.close()
    return str(root)


def _rows(table):
    return sorted(zip(*(table.column(c).to_pylist() for c in table.column_names)), key=lambda r: r[:3])


def _full(logroot):
    return LogScan(logroot).to_table().select(
        ["topic", "partition", "offset", "timestamp", "key", "value", "headers"])


def test_rows_equal_the_partition_walks_records(logroot):
    got = LogScan(logroot).to_table()
    # the batch-level door's records (a replay's), from each log start: control batches' markers
    # are not records a consumer is given
    want = [(w.part.topic, w.part.partition, r.offset, r.key, r.value) for w in LogScan(logroot).partition_walks()
            for r in w.records(start=w.log_start())]
    assert got.num_rows == len(want) > 0
    have = sorted(zip(*(got.column(c).to_pylist() for c in ["topic", "partition", "offset", "key", "value"])))
    assert have == sorted(want)
    # the Arrow stream interface gives the same
    assert pa.table(LogScan(logroot)).num_rows == got.num_rows
    assert pa.RecordBatchReader.from_stream(LogScan(logroot)).read_all().num_rows == got.num_rows


def test_read_committed_leaves_out_the_aborted_transaction(logroot):
    every = LogScan(logroot, topics=["payments"]).to_table()
    committed = LogScan(logroot, topics=["payments"], isolation_level="read_committed").to_table()
    assert every.num_rows == 24 and committed.num_rows == 18     # producer 2000's aborted 2 x 3
    with pytest.raises(UsageError, match="isolation_level"):
        LogScan(logroot, isolation_level="committed")


def test_projection_schema_and_rows(logroot):
    scan = LogScan(logroot, columns=["offset", "timestamp"])
    assert scan.schema.names == ["offset", "timestamp"]
    table = scan.to_table()
    assert table.schema == scan.schema
    full = LogScan(logroot).to_table()
    assert table.column("offset").to_pylist() == full.column("offset").to_pylist()
    with pytest.raises(UsageError, match="not read"):
        LogScan(logroot, columns=["nope"])


def test_pieces_pickle_and_read_alone(logroot):
    scan = LogScan(logroot, topics=["web-clicks"], columns=KEY)
    pieces = scan.pieces()
    assert len(pieces) > 3 and all(p.topic == "web-clicks" and p.bytes > 0 for p in pieces)
    worker = pickle.loads(pickle.dumps(scan))
    read = [rb for p in pickle.loads(pickle.dumps(pieces)) for rb in worker.read_piece(p)]
    assert sum(rb.num_rows for rb in read) == scan.to_table().num_rows


def test_limit_stops_reading(big_partition):
    counter = storage.process_bytes_read()
    before = counter.bytes
    table = LogScan(big_partition, limit=25).to_table()
    assert table.num_rows == 25 and table.column("offset").to_pylist() == list(range(25))
    total = sum(os.path.getsize(os.path.join(big_partition, "big-0", f))
                for f in os.listdir(os.path.join(big_partition, "big-0")) if f.endswith(".log"))
    assert counter.bytes - before < total / 10


def test_bounds_intersect():
    a = Bounds.of(topics=["a", "b"], offsets=(10, None), timestamps=(None, 50))
    b = Bounds.of(topics=["b"], partitions=[1], offsets=(5, 20), timestamps=(7, 60))
    assert a.intersect(b) == Bounds(frozenset({"b"}), frozenset({1}), (10, 20), (7, 50))
    assert a.intersect(None) == a and Bounds().unbounded


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_bounds_equal_filtering_the_full_read(logroot, data):
    full = _full(logroot)
    topics = data.draw(st.one_of(st.none(), st.sets(st.sampled_from(["web-clicks", "payments", "compacted",
                                                                    "legacy", "none"]))))
    parts = data.draw(st.one_of(st.none(), st.sets(st.integers(0, 3))))
    opt = st.one_of(st.none(), st.integers(0, 700))
    offsets = (data.draw(opt), data.draw(opt))
    tso = st.one_of(st.none(), st.integers(T0 - 10, T0 + 32_000))
    times = (data.draw(tso), data.draw(tso))
    if None not in offsets and offsets[1] < offsets[0]:
        offsets = offsets[::-1]
    if None not in times and times[1] < times[0]:
        times = times[::-1]
    bounds = Bounds.of(topics=topics, partitions=parts, offsets=offsets, timestamps=times)
    got = LogScan(logroot, bounds=bounds).to_table().select(full.column_names)
    mask = pa.array([True] * full.num_rows)
    if topics is not None:
        mask = pc.and_(mask, pc.is_in(full.column("topic"), pa.array(sorted(topics), pa.string())))
    if parts is not None:
        mask = pc.and_(mask, pc.is_in(full.column("partition"), pa.array(sorted(parts), pa.int32())))
    ts = full.column("timestamp").cast(pa.int64())
    for col, (lo, hi) in ((full.column("offset"), offsets), (ts, times)):
        if lo is not None:
            mask = pc.and_(mask, pc.greater_equal(col, lo))
        if hi is not None:
            mask = pc.and_(mask, pc.less(col, hi))
    assert _rows(got) == _rows(full.filter(mask))


def _segment_bytes(folder):
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".log"))


@pytest.mark.parametrize("by", ["offset", "time", "kafka-time"])
def test_one_percent_slice_reads_at_most_two_percent(big_partition, by, tmp_path, monkeypatch):
    """Bytes counted through the storage layer, in a folder as other processes count them.  By
    time: the last 1% (``timestamp >= t``: an upper timestamp bound prunes nothing), or any 1%
    in the Kafka source's meaning (option endingTimestamp: ends at offsetsForTimes)."""
    folder = tmp_path / "counts"
    folder.mkdir()
    monkeypatch.setenv(storage.BYTES_READ_ENV, str(folder))
    total = _segment_bytes(os.path.join(big_partition, "big-0"))
    n = 40_000
    lo = n // 2 if by != "time" else n - n // 100
    kw = {}
    if by == "offset":
        kw["bounds"] = Bounds(offsets=(lo, lo + n // 100))
    elif by == "time":
        kw["bounds"] = Bounds(timestamps=(T0 + lo, None))
    else:
        kw["selection"] = {"startingTimestamp": T0 + lo, "endingTimestamp": T0 + lo + n // 100}
    table = LogScan(big_partition, columns=["offset", "timestamp"], **kw).to_table()
    assert table.column("offset").to_pylist() == list(range(lo, lo + n // 100))
    read = storage.bytes_read(str(folder))
    segment_read = sum(v for k, v in read.items() if k.endswith(".log"))
    assert 0 < segment_read <= 0.02 * total, (segment_read, total)


def test_corrupt_segment_errors_as_the_spark_source(tmp_path):
    w = PartitionWriter(str(tmp_path), "bad", 0, segment_bytes=1 << 20)
    for k in range(3):
        w.append(v2_batch(sample_records(5, start_ts=T0 + k * 10)))
    w.close()
    seg = os.path.join(str(tmp_path), "bad-0", "00000000000000000000.log")
    data = bytearray(open(seg, "rb").read())
    data[-5] ^= 0xFF                   # the last batch's CRC fails
    open(seg, "wb").write(bytes(data) + b"\0\0\0")   # and a cut-off batch at the end
    with pytest.raises(MalformedBatchError, match=r"Malformed Kafka record batch \(mode FAILFAST\): "
                                                  r".*00000000000000000000.log: byte \d+: "
                                                  r"ChecksumError"):
        LogScan(str(tmp_path)).to_table()
    permissive = LogScan(str(tmp_path), mode="PERMISSIVE").to_table()
    errors = permissive.filter(permissive.column("_corrupt_record").is_valid())
    assert permissive.num_rows - errors.num_rows == 10
    assert errors.num_rows == 2 and "TruncatedError" in errors.column("_corrupt_record")[1].as_py()
    assert LogScan(str(tmp_path), mode="DROPMALFORMED").to_table().num_rows == 10


def test_typed_values_as_decode_table(tmp_path):
    """value_format: the values typed as kafkarec.registry.typed.decode_table types them (the
    Spark source's valueFormat), the schema known before a record is read."""
    import json
    from kafkarec.registry.typed import decode_table
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}})
    w = PartitionWriter(str(tmp_path), "events", 0, segment_bytes=1 << 20)
    w.append(v2_batch([(T0 + i, b"k", json.dumps({"n": i, "s": "x" * i}).encode(), []) for i in range(5)]
                      + [(T0 + 5, b"k", b"not json", [])]))
    w.close()
    options = {"value_reader_schema": schema}
    scan = LogScan(str(tmp_path), topics=["events"], columns=["offset", "value", "_corrupt_record"],
                   value_format="json", typed_options=options)
    got = scan.to_table()
    plain = LogScan(str(tmp_path)).to_table()
    want = decode_table(plain, None, value_format="json", value_reader_schema=schema)
    assert got.schema.field("value").type == want.schema.field("value").type == scan.schema.field("value").type
    assert got.column("value").to_pylist() == want.column("value").to_pylist()
    assert got.column("_corrupt_record").to_pylist() == want.column("_corrupt_record").to_pylist()
    assert got.column("_corrupt_record")[5].as_py() is not None


@pytest.mark.parametrize("columns", [["offset", "timestamp"], ["topic", "partition", "offset", "timestampType"],
                                     ["key", "offset"], ["value", "headers", "producerId", "batchPosition"]])
def test_core_projection_equals_the_full_read(logroot, columns):
    """iter_arrow(columns=...): the columns of the full read, every codec, legacy magics, compacted
    gaps, transactions; without key, value and headers (the lean read) none of them is built."""
    import glob

    import kafkarec
    batch_columns = "producerId" in columns
    for path in sorted(glob.glob(os.path.join(logroot, "*", "*.log"))):
        data = open(path, "rb").read()
        full = kafkarec.to_arrow(data, topic="t", partition=1, batch_columns=batch_columns)
        parts = list(kafkarec.iter_arrow(data, topic="t", partition=1, columns=columns,
                                         batch_columns=batch_columns))
        got = pa.Table.from_batches(parts)
        assert got.schema.names == [n for n in full.schema.names if n in columns]
        assert got.equals(full.select(got.schema.names)), path
    with pytest.raises(UsageError, match=r"column\(s\) \['nope'\] are not read"):
        kafkarec.iter_arrow(b"", columns=["nope"])


def test_lean_read_reports_the_same_errors(tmp_path):
    import kafkarec
    data = bytearray(b"".join(v2_batch(sample_records(5, start_ts=T0 + k)) for k in range(3)))
    data[-5] ^= 0xFF
    for cols in (None, ["offset", "timestamp"]):
        sink: list = []
        got = pa.Table.from_batches(list(kafkarec.iter_arrow(bytes(data), columns=cols, errors="skip",
                                                             error_sink=sink)))
        assert got.num_rows == 10 and [e["error"] for e in sink] == ["ChecksumError"]


LONG_MAX = (1 << 63) - 1


def test_bounds_past_the_long_range_keep_none_or_all(logroot):
    """No offset or timestamp is past a Java long: a bound past that range keeps none of the rows
    (or all), exactly, instead of a raw error from pyarrow (issue 49, finding 6)."""
    full = _full(logroot)
    offsets = full.column("offset").to_pylist()
    cases = [
        (Bounds.of(offsets=(1, 1 << 63)), [o for o in offsets if o >= 1]),
        (Bounds(offsets=(LONG_MAX, 1 << 63)), []),                  # Spark's offset = Long.MAX
        (Bounds(offsets=(LONG_MAX + 1, None)), []),                 # offset > Long.MAX
        (Bounds(offsets=(None, 1 << 70)), offsets),
        (Bounds(offsets=(-(1 << 70), None)), offsets),
        (Bounds(timestamps=(LONG_MAX + 1, None)), []),
        (Bounds(timestamps=(None, 1 << 64)), offsets),
        (Bounds(timestamps=(-(1 << 64), None)), offsets),
    ]
    for bounds, want in cases:
        got = LogScan(logroot, bounds=bounds, columns=["offset"]).to_table()
        assert sorted(got.column("offset").to_pylist()) == sorted(want), bounds
    # clipped where bounds are made: nothing downstream sees a number a long cannot hold
    assert Bounds.of(offsets=(1, 1 << 63)).offsets == (1, None)
    assert Bounds(offsets=(LONG_MAX + 1, None)).offsets == (LONG_MAX, LONG_MAX)
    assert Bounds(timestamps=(None, -(1 << 64))).intersect(Bounds(timestamps=(5, None))).timestamps[0] <= LONG_MAX


def test_partition_bounds_are_intervals():
    """A bound on partitions costs its intervals, not its members (issue 49, finding 5), and is the
    set of its members to every comparison."""
    import tracemalloc
    from kafkarec.scan.bounds import Partitions
    tracemalloc.start()
    try:
        everything = Bounds(partitions=Partitions.between(None, 2147483647))
        up_to = Bounds(partitions=Partitions.between(0, 10_000_000)).intersect(Bounds.of(partitions=[3, 10_000_000]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert everything.admits("t", 2147483646) and not everything.admits("t", 2147483647)
    assert not everything.admits("t", -1) and up_to.partitions == {3}
    assert Bounds.of(partitions=[0, 1]).partitions == frozenset({0, 1}) == Partitions.between(None, 2)
    assert Bounds.of(partitions=[0, 2]) == Bounds(partitions=frozenset({2, 0}))
    assert hash(Partitions.of([4, 5])) == hash(frozenset({4, 5}))
    assert pickle.loads(pickle.dumps(everything)) == everything
