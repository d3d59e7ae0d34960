"""kafkarec's Ray Datasource (:mod:`kafkarec.engines.ray`) on a real local Ray: one ``ray.init`` for
the module (2 CPUs, no dashboard; its start time is printed), shut down at its end.

The rows are LogScan's and Kafka's consumer's on the session broker's topics (every codec,
transactions both isolation levels, compaction, headers); Ray's filter expressions and projections
give the rows filtering the full read gives, a filter on a column the reader cannot push down too; a
1% slice by offset and by time reads at most 2% of the partition's segment bytes, counted in Ray's
worker processes (:data:`kafkarec.log.storage.BYTES_READ_ENV`); a corrupt segment raises
kafkarec's error through Ray.
"""
import datetime
import os
import time
from typing import NamedTuple

import pytest

from kafkarec.errors import MalformedBatchError
from kafkarec.log import storage
from kafkarec.scan import LogScan
from support import engines as E

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


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("big"))
    E.big_partition(root)
    return root


@pytest.mark.broker
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_rows_equal_logscan_and_consumer(ray_local, kafka_broker, broker_data, stopped_log_dir, isolation):
    import produce
    from kafkarec.engines.ray import read_log
    topics = broker_data.data_topics()
    got = E.rows(_table(read_log(stopped_log_dir, topics=topics, isolation_level=isolation)))
    scanned = E.rows(LogScan(stopped_log_dir, topics=topics, isolation_level=isolation).to_table())
    assert got == scanned
    assert got == produce.consume(kafka_broker.bootstrap, topics, isolation)


def test_filters_and_projection(ray_local, big):
    """Pushed conjuncts, an expression Ray cannot push into a read, a projection and a limit: the rows
    of filtering the full read."""
    from ray.data.expressions import col
    from kafkarec.engines.ray import read_log
    at = datetime.datetime(2023, 11, 14, 22, 13, 20, 100500)         # T0 + 100.5 ms: records from 101
    ds = read_log(big).filter(expr=(col("offset") >= 95) & (col("offset") < 1005)
                              & (col("timestamp") > at) & (col("partition") == 0))
    got = _table(ds.select_columns(["offset", "key"]))
    assert got.column_names == ["offset", "key"]
    assert sorted(got["offset"].to_pylist()) == list(range(101, 1005))
    # a conjunct on the value (not a bound) and one that is not a comparison: applied row by row
    ds = read_log(big, columns=["offset", "value"]).filter(
        expr=(col("offset") < 300) & ((col("offset") % 7) == 0) & col("value").is_not_null())
    assert sorted(_table(ds)["offset"].to_pylist()) == list(range(0, 300, 7))
    assert _table(read_log(big, columns=["offset"]).limit(25)).num_rows == 25


@pytest.mark.parametrize("by", ["offset", "time"])
def test_one_percent_slice_reads_at_most_two_percent(ray_local, big, by):
    """The bytes Ray's workers read, counted through the storage layer in each worker process."""
    from ray.data.expressions import col
    from kafkarec.engines.ray import read_log
    column, lo, hi = E.slice_limits(by)
    if column == "timestamp":
        # naive, as the column's timestamp[ms] (Arrow compares no zoned time with it)
        lo, hi = (datetime.datetime.fromtimestamp(v / 1000, datetime.timezone.utc).replace(tzinfo=None)
                  for v in (lo, hi))
    before = storage.bytes_read(ray_local.counts)
    got = _table(read_log(big).filter(expr=(col(column) >= lo) & (col(column) < hi)).select_columns(["offset"]))
    assert sorted(got["offset"].to_pylist()) == list(range(E.SLICE_START, E.SLICE_START + E.SLICE_RECORDS))
    total = E.segment_bytes(os.path.join(big, "big-0"))
    read = E.segment_bytes_read(ray_local.counts, before)
    assert 0 < read <= 0.02 * total, (read, total)


def test_corrupt_segment(ray_local, tmp_path):
    """kafkarec's error through Ray (FAILFAST), or its error rows (PERMISSIVE); the workers live on."""
    from kafkarec.engines.ray import read_log
    root = E.corrupt_partition(str(tmp_path))
    with pytest.raises(MalformedBatchError, match=r"00000000000000000000\.log.*ChecksumError"):
        _table(read_log(root))
    got = _table(read_log(root, mode="PERMISSIVE"))
    errors = [e for e in got["_corrupt_record"].to_pylist() if e]
    assert len(errors) == 1 and "ChecksumError" in errors[0]
    assert got.num_rows - 1 == 10          # the two good batches' records
