"""kafkarec's Daft DataSource (:mod:`kafkarec.engines.daft`) on Daft's local runner.

The rows are LogScan's and Kafka's consumer's on the session broker's topics (every codec,
transactions both isolation levels, compaction, headers); Daft's filters, projections and limits give
the rows filtering the full read gives, a filter on a column the reader cannot push down too; its
pushdowns become the scan's bounds, columns and limit where that is exact; a 1% slice by offset and by
time reads at most 2% of the partition's segment bytes (counted through the storage layer); a corrupt
segment raises kafkarec's error through Daft.
"""
import datetime
import os

import pytest

from kafkarec.errors import MalformedBatchError
from kafkarec.log import storage
from kafkarec.scan import Bounds, LogScan
from support import engines as E

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("big"))
    E.big_partition(root)
    return root


@pytest.mark.broker
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_rows_equal_logscan_and_consumer(kafka_broker, broker_data, stopped_log_dir, isolation):
    import produce
    from kafkarec.engines.daft import read_log
    topics = broker_data.data_topics()
    got = E.rows(read_log(stopped_log_dir, topics=topics, isolation_level=isolation).to_arrow())
    scanned = E.rows(LogScan(stopped_log_dir, topics=topics, isolation_level=isolation).to_table())
    assert got == scanned
    assert got == produce.consume(kafka_broker.bootstrap, topics, isolation)


def test_pushdowns_become_bounds(big):
    """What each of Daft's pushdowns turns into: bounds from the conjuncts on topic, partition,
    offset and timestamp (a time rounded to the millisecond the column holds), the columns the filter
    reads decoded too, and the limit only where the bounds are the whole filter."""
    from daft import col
    from daft.io.pushdowns import Pushdowns
    from kafkarec.engines.daft import KafkaLogSource
    source = KafkaLogSource(big)
    at = datetime.datetime(2023, 11, 14, 22, 13, 20, 100500)         # T0 + 100.5 ms
    exact = (col("offset").between(10, 19) & col("partition").is_in([0, 3]) & (col("timestamp") > at)
             & (col("topic") == "big"))
    scan = source.planned(Pushdowns(filters=exact, columns=["key"], limit=5))
    assert scan.bounds == Bounds.of(topics=["big"], partitions=[0, 3], offsets=(10, 20),
                                    timestamps=(E.T0 + 101, None))
    assert (scan.columns, scan.limit) == (["key", "topic", "partition", "offset", "timestamp"], 5)
    loose = (col("offset") < 50) & col("value").not_null()
    scan = source.planned(Pushdowns(filters=loose, columns=["offset"], limit=5))
    assert (scan.bounds, scan.columns, scan.limit) == (Bounds.of(offsets=(None, 50)), ["value", "offset"], None)


def test_filters_and_projection(big):
    """Rows of queries through Daft against filtering the full read: pushed conjuncts, a conjunct the
    reader cannot push down, projections and a limit."""
    from daft import col
    from kafkarec.engines.daft import read_log
    df = read_log(big)
    at = datetime.datetime(2023, 11, 14, 22, 13, 20, 100500)
    got = df.where((col("offset") >= 95) & (col("offset") < 1005) & (col("timestamp") > at)).select("offset")
    assert sorted(got.to_pydict()["offset"]) == list(range(101, 1005))
    got = df.where((col("offset") < 300) & ((col("offset") % 7) == 0) & col("value").not_null()).select("offset")
    assert sorted(got.to_pydict()["offset"]) == list(range(0, 300, 7))
    assert len(df.where(col("offset") >= 100).limit(25).collect()) == 25
    assert df.select("partition").limit(7).to_pydict() == {"partition": [0] * 7}


@pytest.mark.parametrize("by", ["offset", "time"])
def test_one_percent_slice_reads_at_most_two_percent(big, by, tmp_path, monkeypatch):
    from daft import col
    from kafkarec.engines.daft import read_log
    counts = str(tmp_path)
    monkeypatch.setenv(storage.BYTES_READ_ENV, counts)
    column, lo, hi = E.slice_limits(by)
    if column == "timestamp":
        lo, hi = (datetime.datetime.fromtimestamp(v / 1000, datetime.timezone.utc).replace(tzinfo=None)
                  for v in (lo, hi))
    got = read_log(big).where((col(column) >= lo) & (col(column) < hi)).select("offset").to_pydict()
    assert sorted(got["offset"]) == list(range(E.SLICE_START, E.SLICE_START + E.SLICE_RECORDS))
    total = E.segment_bytes(os.path.join(big, "big-0"))
    read = E.segment_bytes_read(counts, {})
    assert 0 < read <= 0.02 * total, (read, total)


def test_corrupt_segment(tmp_path):
    """kafkarec's error through Daft (FAILFAST), or its error rows (PERMISSIVE)."""
    from kafkarec.engines.daft import read_log
    root = E.corrupt_partition(str(tmp_path))
    with pytest.raises(MalformedBatchError, match=r"00000000000000000000\.log.*ChecksumError"):
        read_log(root).collect()
    got = read_log(root, mode="PERMISSIVE").to_arrow()
    errors = [e for e in got["_corrupt_record"].to_pylist() if e]
    assert len(errors) == 1 and "ChecksumError" in errors[0]
    assert got.num_rows - 1 == 10          # the two good batches' records
