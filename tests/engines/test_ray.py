"""kafkarec.engines.ray: a Ray Datasource over the one Arrow stream reader (issue 42, item 4), on a
real local Ray: one ``ray.init`` for the module (2 CPUs, no dashboard; its start time is printed),
shut down at its end.

The rows are LogScan's and Kafka's consumer's on the session broker's topics (every codec,
transactions both isolation levels, compaction, headers); Ray's filter expressions, projections and
limits give the rows of filtering the full read, a filter on a column the reader cannot push down
too; a 1% slice by offset and by time reads at most 2% of the partition's segment bytes, counted in
Ray's worker processes; a damaged segment raises the reader's error through Ray.
"""
import datetime
import time
from typing import NamedTuple

import pytest

from kafkarec.log import storage
from kafkarec.scan import Bounds, LogScan
from support.logs.engine_logs import T0, rows
from support.logs.worker_bytes import segment_bytes_read_by_workers

pytestmark = pytest.mark.slow


class RayLocal(NamedTuple):
    counts: str         # the folder Ray's workers count the bytes they read into
    started_s: float


@pytest.fixture(scope="module")
def ray_local(tmp_path_factory):
    import logging

    import ray
    counts = str(tmp_path_factory.mktemp("ray-bytes-read"))
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {storage.BYTES_READ_ENV: counts}})
    started = time.perf_counter() - t0
    print(f"ray.init: {started:.1f} s")
    ray.data.DataContext.get_current().enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    try:
        yield RayLocal(counts, started)
    finally:
        ray.shutdown()


def _table(ds):
    import pyarrow as pa
    import ray
    # a task that found no rows gives an empty block without columns
    return pa.concat_tables([t for t in ray.get(ds.to_arrow_refs()) if t.num_columns])


def _at(ms) -> datetime.datetime:
    """A time as Ray's literals compare with the column: naive, as its timestamp[ms]."""
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)


@pytest.mark.broker
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_rows_equal_logscan_and_consumer(ray_local, kafka_broker, broker_data, stopped_log_dir, isolation):
    from support.brokers import produce
    from kafkarec.engines.ray import read_log
    topics = broker_data.data_topics()
    want = produce.consume(kafka_broker.bootstrap, topics, isolation)
    assert len(want) > 4000
    assert rows(LogScan(stopped_log_dir, topics=topics, isolation_level=isolation).to_table()) == want
    assert rows(_table(read_log(stopped_log_dir, topics=topics, isolation_level=isolation))) == want


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_filters_projection_and_limit(ray_local, log_root, isolation):
    """Pushed terms, terms Ray pushes but the reader cannot bound (applied to each block), a
    projection in its own order and a limit: the rows of filtering the full read."""
    import pyarrow as pa
    from ray.data.expressions import col
    from kafkarec.engines.ray import read_log
    full = LogScan(log_root, isolation_level=isolation).to_table()
    ds = read_log(log_root, isolation_level=isolation)
    offsets, ts = full.column("offset").to_pylist(), full.column("timestamp").cast(pa.int64()).to_pylist()
    topics, parts = full.column("topic").to_pylist(), full.column("partition").to_pylist()
    values = full.column("value").to_pylist()
    cases = [
        ((col("offset") >= 3) & (col("offset") <= 40) & col("topic").is_in(["web-clicks", "payments"]),
         lambda i: 3 <= offsets[i] <= 40 and topics[i] in ("web-clicks", "payments")),
        ((col("partition") == 1) | (col("partition") == 2), lambda i: parts[i] in (1, 2)),
        (col("timestamp") > _at(T0 + 5.5), lambda i: ts[i] > T0 + 5),
        ((col("offset") < 4) | (col("offset") > 30), lambda i: offsets[i] < 4 or offsets[i] > 30),
        ((col("offset") % 7 == 0) & col("value").is_not_null() & (col("offset") >= 2),
         lambda i: offsets[i] % 7 == 0 and values[i] is not None and offsets[i] >= 2),
    ]
    for predicate, keep in cases:
        want = sorted((topics[i], parts[i], offsets[i]) for i in range(full.num_rows) if keep(i))
        got = _table(ds.filter(expr=predicate).select_columns(["offset", "partition", "topic"]))
        assert got.column_names == ["offset", "partition", "topic"]
        assert sorted(zip(got["topic"].to_pylist(), got["partition"].to_pylist(),
                          got["offset"].to_pylist())) == want, predicate
    assert _table(ds.select_columns(["offset"]).limit(25)).num_rows == 25
    assert ds.count() == full.num_rows          # no column pushed: the rows still counted


def test_predicate_bounds():
    """What Ray's pushed expression becomes: the terms on the four columns, a time to the ms."""
    from ray.data.expressions import col, lit
    from kafkarec.engines.ray import predicate_bounds
    at = datetime.datetime(2026, 1, 1, 0, 0, 0, 1500)
    assert predicate_bounds((col("offset") >= 10) & (lit(20) > col("offset")) & (col("partition") == 3)
                            & col("topic").is_in(["a", "b"]) & (col("timestamp") < at)) == Bounds.of(
        topics=["a", "b"], partitions=[3], offsets=(10, 20), timestamps=(None, 1767225600002))
    assert predicate_bounds((col("offset") > 5) & col("value").is_not_null()) == Bounds.of(offsets=(6, None))
    aware = at.replace(tzinfo=datetime.timezone.utc)
    assert predicate_bounds((col("offset") < 3) | (col("offset") > 9)) == Bounds()
    assert predicate_bounds(col("timestamp") >= aware) == Bounds()


@pytest.mark.parametrize("by", ["offset", "time"])
def test_one_percent_slice_reads_at_most_two_percent(ray_local, long_log, by):
    """The bytes Ray's workers read, counted through the storage layer in each worker process."""
    from ray.data.expressions import col
    from kafkarec.engines.ray import read_log
    root, folder = long_log
    if by == "offset":
        predicate = (col("offset") >= 9_000) & (col("offset") < 9_200)
    else:
        predicate = col("timestamp") >= _at(T0 + 19_800)
    got, read, total = segment_bytes_read_by_workers(
        ray_local.counts, folder, lambda: _table(read_log(root).filter(expr=predicate).select_columns(["offset"])))
    assert got.num_rows == 200
    assert 0 < read <= 0.02 * total, (read, total)


def test_a_damaged_segment_gives_the_readers_error(ray_local, damaged):
    """The reader's exception out of Ray's worker: kafkarec's own type, the file, byte and reason."""
    from kafkarec.engines.ray import read_log
    root, error = damaged
    with pytest.raises(type(error)) as got:
        _table(read_log(root))
    assert str(error) in str(got.value)


def _all_bytes(by_path, folder) -> int:
    """Bytes of every file of ``folder`` (segments, indexes, time indexes) in a by-path tally."""
    import os
    folder = os.path.realpath(folder)
    return sum(n for path, n in by_path.items() if os.path.realpath(path).startswith(folder + os.sep))


def test_a_time_slice_reads_what_the_reader_reads(ray_local, long_log):
    """Ray plans a read once however often it asks (issue 49, finding 11): a 1% time slice with a
    projection reads, in this process (planning) and Ray's workers (reading) together, about what
    the reader alone reads for it: each ``.timeindex`` once."""
    from ray.data.expressions import col
    from kafkarec.engines.ray import read_log
    root, folder = long_log
    at = T0 + 19_800

    def tally():
        return _all_bytes(storage.process_bytes_read().by_path, folder) + \
            _all_bytes(storage.bytes_read(ray_local.counts), folder)
    before = tally()
    alone = LogScan(root, bounds=Bounds.of(timestamps=(at, None)), columns=["offset"]).to_table()
    reader = tally() - before
    before = tally()
    got = _table(read_log(root).filter(expr=col("timestamp") >= _at(at)).select_columns(["offset"]))
    ray = tally() - before
    assert got.num_rows == alone.num_rows == 200
    assert reader <= ray <= 1.1 * reader, (ray, reader)


def test_pieces_a_filter_empties_give_blocks_of_the_schema(ray_local, log_root):
    """Every block has the dataset's columns, so Ray's blocks concatenate as they are (finding 11)."""
    import pyarrow as pa
    import ray
    from ray.data.expressions import col
    from kafkarec.engines.ray import read_log
    full = LogScan(log_root, columns=["offset", "topic"]).to_table()
    want = sorted(o for o in full.column("offset").to_pylist() if o >= 40)
    ds = read_log(log_root).filter(expr=col("value").is_not_null() | (col("offset") >= 40))
    ds = ds.filter(expr=col("offset") >= 40).select_columns(["offset", "topic"])
    got = pa.concat_tables(ray.get(ds.to_arrow_refs()))
    assert got.column_names == ["offset", "topic"] and sorted(got.column("offset").to_pylist()) == want


def test_bounds_past_the_long_range(ray_local, log_root):
    """No offset is past a Java long: such a bound keeps none or all, exactly (finding 6)."""
    from ray.data.expressions import col
    from kafkarec.engines.ray import read_log
    n = LogScan(log_root).to_table().num_rows
    ds = read_log(log_root).select_columns(["offset"])
    assert ds.filter(expr=col("offset") > (1 << 63) - 1).count() == 0
    assert ds.filter(expr=col("offset") >= (1 << 63) - 1).count() == 0
    assert ds.filter(expr=col("offset") < (1 << 63) - 1).count() == n


def test_key_filters_and_murmur2_read_one_partitions_bytes(ray_local, keyed_log):
    """``key ==`` and ``is_in`` with bytes are the scan's key bounds (the predicate's other half is
    Ray's); with ``partitioner="murmur2"`` the workers read at most one partition's bytes, plus 1%."""
    from ray.data.expressions import col
    from kafkarec.engines.ray import predicate_bounds, read_log
    root, partitions = keyed_log
    assert predicate_bounds(col("key").is_in([b"key-7", b"key-150"])) == Bounds.of(keys=[b"key-7", b"key-150"])
    assert predicate_bounds((col("key") == b"key-7") | (col("key") == b"key-9")) == Bounds.of(keys=[b"key-7", b"key-9"])
    assert predicate_bounds(col("key") == "key-7") == Bounds()      # Ray's str is no binary
    full = LogScan(root).to_table()
    want = sorted((p, o) for k, p, o in zip(full["key"].to_pylist(), full["partition"].to_pylist(),
                                             full["offset"].to_pylist()) if k == b"key-7")
    got, read, total = segment_bytes_read_by_workers(
        ray_local.counts, root,
        lambda: _table(read_log(root, partitioner="murmur2").filter(expr=col("key") == b"key-7")
                       .select_columns(["partition", "offset"])))
    assert sorted(zip(got["partition"].to_pylist(), got["offset"].to_pylist())) == want and len(want) == 40
    assert 0 < read <= total / partitions + 0.01 * total, (read, total)
