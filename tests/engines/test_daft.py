"""kafkarec.engines.daft: a Daft DataSource over the one Arrow stream reader (issue 42, item 4), on
Daft's local runner.

The rows are LogScan's and Kafka's consumer's on the session broker's topics (every codec,
transactions both isolation levels, compaction, headers); Daft's filters, projections and limits give
the rows of filtering the full read, a filter on a column the reader cannot push down too; Daft's
pushdowns become the scan's bounds, columns and limit where that is exact; a 1% slice by offset and
by time reads at most 2% of the partition's segment bytes; a damaged segment raises the reader's
error through Daft.
"""
import datetime

import pytest

from kafkarec.scan import Bounds, LogScan
from support.logs.engine_logs import T0, rows, segment_bytes_read

pytestmark = pytest.mark.slow


def _at(ms) -> datetime.datetime:
    """A time as Daft compares it with the column: naive, as its timestamp[ms]."""
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)


@pytest.mark.broker
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_rows_equal_logscan_and_consumer(kafka_broker, broker_data, stopped_log_dir, isolation):
    from support.brokers import produce
    from kafkarec.engines.daft import read_log
    topics = broker_data.data_topics()
    want = produce.consume(kafka_broker.bootstrap, topics, isolation)
    assert len(want) > 4000
    assert rows(LogScan(stopped_log_dir, topics=topics, isolation_level=isolation).to_table()) == want
    assert rows(read_log(stopped_log_dir, topics=topics, isolation_level=isolation).to_arrow()) == want


def test_pushdowns_become_bounds_columns_and_limit(log_root):
    """Each of Daft's pushdowns: bounds from the terms on topic, partition, offset and timestamp (a
    time to the millisecond the column holds), the columns the filter reads decoded too, and the limit
    only where the bounds are the whole filter."""
    from daft import col
    from daft.io.pushdowns import Pushdowns
    from kafkarec.engines.daft import KafkaLogSource
    source = KafkaLogSource(log_root)
    exact = (col("offset").between(10, 19) & col("partition").is_in([0, 3]) & (col("timestamp") > _at(T0 + 100.5))
             & ((col("topic") == "a") | (col("topic") == "b")))
    scan = source.planned(Pushdowns(filters=exact, columns=["key"], limit=5))
    assert scan.bounds == Bounds.of(topics=["a", "b"], partitions=[0, 3], offsets=(10, 20),
                                    timestamps=(T0 + 101, None))
    assert (scan.columns, scan.limit) == (["key", "topic", "partition", "offset", "timestamp"], 5)
    loose = (col("offset") < 50) & col("value").not_null()
    scan = source.planned(Pushdowns(filters=loose, columns=["offset"], limit=5))
    assert (scan.bounds, scan.columns, scan.limit) == (Bounds.of(offsets=(None, 50)), ["value", "offset"], None)
    aware = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    assert source.planned(Pushdowns(filters=col("timestamp") >= aware)).bounds == Bounds()


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_filters_projection_and_limit(log_root, isolation):
    """Queries through Daft against filtering the full read: pushed terms, terms the reader cannot
    bound, projections and limits."""
    import daft
    from daft import col
    from kafkarec.engines.daft import read_log
    full = daft.from_arrow(LogScan(log_root, isolation_level=isolation).to_table())
    df = read_log(log_root, isolation_level=isolation)
    predicates = [
        col("offset").between(3, 40) & col("topic").is_in(["web-clicks", "payments"]),
        (col("partition") == 1) | (col("partition") == 2),
        col("timestamp") > _at(T0 + 5.5),
        (col("offset") < 4) | (col("offset") > 30),
        (col("offset") % 7 == 0) & col("value").not_null() & (col("offset") >= 2),
    ]
    for predicate in predicates:
        assert rows(df.where(predicate).to_arrow()) == rows(full.where(predicate).to_arrow()), predicate
    assert df.count_rows() == len(full)
    got = df.where(col("offset") >= 3).select("offset", "topic").limit(5).to_pydict()
    assert list(got) == ["offset", "topic"] and len(got["offset"]) == 5 and min(got["offset"]) >= 3


@pytest.mark.parametrize("by", ["offset", "time"])
def test_one_percent_slice_reads_at_most_two_percent(long_log, by):
    from daft import col
    from kafkarec.engines.daft import read_log
    root, folder = long_log
    if by == "offset":
        predicate = col("offset").between(9_000, 9_199)
    else:
        predicate = col("timestamp") >= _at(T0 + 19_800)
    got, read, total = segment_bytes_read(folder, lambda: read_log(root).where(predicate).select("offset").to_pydict())
    assert len(got["offset"]) == 200
    assert 0 < read <= 0.02 * total, (read, total)


def test_a_damaged_segment_gives_the_readers_error(damaged):
    """Daft 0.7.26 does not pass a source's exception object through: it raises its own
    DaftCoreException carrying the reader's error, type, file, byte and reason, word for word.
    PERMISSIVE gives the reader's error rows instead."""
    from daft import col
    from daft.exceptions import DaftCoreException
    from kafkarec.engines.daft import read_log
    from kafkarec.scan import CORRUPT_COLUMN
    root, error = damaged
    with pytest.raises(DaftCoreException) as got:
        read_log(root).collect()
    assert f"{type(error).__name__}: {error}" in str(got.value)
    want = LogScan(root, mode="PERMISSIVE").to_table()
    errors = read_log(root, mode="PERMISSIVE").where(col(CORRUPT_COLUMN).not_null()).to_pydict()
    assert sorted(errors[CORRUPT_COLUMN]) == sorted(e for e in want.column(CORRUPT_COLUMN).to_pylist() if e)
    assert errors[CORRUPT_COLUMN]


def test_bounds_past_the_long_range_and_partition_ranges(log_root):
    """No offset is past a Java long: such a bound keeps none or all, exactly (issue 49, finding 6);
    a partition range is a bound that costs its ends (finding 5); in PERMISSIVE, whose error rows
    carry their topic and partition, a filter on those alone still takes the limit."""
    from daft import col
    from daft.io.pushdowns import Pushdowns
    from kafkarec.engines.daft import KafkaLogSource, read_log
    full = LogScan(log_root, columns=["offset", "partition"]).to_table()
    offsets, partitions = full.column("offset").to_pylist(), full.column("partition").to_pylist()
    df = read_log(log_root)
    long_max = (1 << 63) - 1
    assert df.where(col("offset") > long_max).count_rows() == 0
    assert df.where(col("offset") >= long_max).count_rows() == 0
    assert df.where(col("offset") < long_max).count_rows() == len(offsets)
    assert df.where(col("partition") < 2147483647).count_rows() == len(offsets)
    assert df.where(col("partition") >= 1).count_rows() == sum(p >= 1 for p in partitions)
    scan = KafkaLogSource(log_root, mode="PERMISSIVE").planned(
        Pushdowns(filters=(col("partition") >= 1) & (col("topic") == "a"), limit=5))
    assert scan.limit == 5 and scan.bounds.admits("a", 2147483646) and not scan.bounds.admits("a", 0)


@pytest.mark.parametrize("partitioner", [None, "murmur2"])
def test_key_filters_give_the_rows_of_filtering_the_full_read(keyed_log, partitioner):
    """``key ==`` and ``is_in`` with bytes are the scan's key bounds; the rows are those of filtering
    the full read."""
    import daft
    from daft import col
    from daft.io.pushdowns import Pushdowns
    from kafkarec.engines.daft import KafkaLogSource, read_log
    root, _ = keyed_log
    full = daft.from_arrow(LogScan(root).to_table())
    df = read_log(root, partitioner=partitioner)
    for predicate, keys in [(col("key") == b"key-7", 1), (col("key").is_in([b"key-7", b"key-150"]), 2),
                            ((col("key") == b"key-7") | (col("key") == b"key-9"), 2)]:
        assert KafkaLogSource(root).planned(Pushdowns(filters=predicate)).bounds.keys is not None
        got = rows(df.where(predicate).to_arrow())
        assert len(got) == 40 * keys
        assert got == rows(full.where(predicate).to_arrow()), predicate


def test_a_key_lookup_with_murmur2_reads_at_most_one_partitions_bytes(keyed_log):
    from daft import col
    from kafkarec.engines.daft import read_log
    root, partitions = keyed_log
    got, read, total = segment_bytes_read(
        root, lambda: read_log(root, partitioner="murmur2").where(col("key") == b"key-7").select("offset").to_pydict())
    assert len(got["offset"]) == 40
    assert 0 < read <= total / partitions + 0.01 * total, (read, total)


def _counted(monkeypatch):
    """What each log's header count answered (None: the read counted its rows)."""
    import kafkarec.scan
    answers = []
    real = kafkarec.scan.header_count

    def spy(*args):
        answers.append(real(*args))
        return answers[-1]
    monkeypatch.setattr(kafkarec.scan, "header_count", spy)
    return answers


@pytest.mark.parametrize("options", [{}, {"isolation_level": "read_committed"}, {"mode": "PERMISSIVE"},
                                     {"bounds": Bounds(offsets=(3, 40))}, {"partitions": [0]}])
def test_count_pushdown_equals_the_rows(log_root, monkeypatch, options):
    """count(*) is pushed down (a task a topic-partition) and equals the read's rows, on a log of
    every codec, legacy v0/v1 message sets, compaction holes, control markers and an aborted
    transaction: the v2 partitions read_uncommitted answered from their headers, the legacy ones,
    read_committed and an offset bound cutting inside a batch by reading the rows."""
    from kafkarec.engines.daft import read_log
    want = LogScan(log_root, **options).to_table().num_rows
    answers = _counted(monkeypatch)
    assert read_log(log_root, **options).count_rows() == want
    assert read_log(log_root, **options).count().to_pydict() == {"count": [want]}
    if "isolation_level" in options:
        assert answers == []            # the transaction rule: never from the headers
    elif "bounds" in options:
        assert None in answers          # a bound cutting inside a batch
    else:
        assert any(a is not None for a in answers) and None in answers     # (the legacy partitions)


@pytest.mark.parametrize("log_start", [0, 7, 10])
def test_count_pushdown_with_a_log_start_inside_a_batch(tmp_path, monkeypatch, log_start):
    """A log start offset inside a batch (7 in 5..9) cuts it: that log is counted by reading its rows;
    one at a batch boundary (10) is answered from the headers."""
    from kafkarec.engines.daft import read_log
    from support.logs.log_start import deleted_records_dir
    root = str(tmp_path / "logs")
    deleted_records_dir(root, {("t", 0): log_start})
    answers = _counted(monkeypatch)
    assert read_log(root).count_rows() == LogScan(root).to_table().num_rows == 100 - log_start
    assert answers == [None if log_start == 7 else 100 - log_start]


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_count_pushdown_of_a_damaged_segment(damaged, monkeypatch, mode):
    """A corrupt or truncated batch is an error row in PERMISSIVE, none in DROPMALFORMED: its log is
    counted by reading its rows, the count equal to the read's (FAILFAST raises the reader's error)."""
    from kafkarec.engines.daft import read_log
    root, error = damaged
    want = LogScan(root, mode=mode).to_table().num_rows
    assert read_log(root, mode=mode).count_rows() == want
    with pytest.raises(Exception, match=str(error)[:40].replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        read_log(root).count_rows()


def _plan(df) -> str:
    import io
    out = io.StringIO()
    df.explain(show_all=True, file=out)
    return out.getvalue()


def test_range_clustering_on_topic_partition_offset(log_root):
    """The tasks come in (topic, partition, offset) order: Daft's plan carries the range clustering
    (not in PERMISSIVE mode, whose error rows have no offset), and a sort by those columns gives
    the rows in the order the read gives them."""
    from kafkarec.engines.daft import read_log
    df = read_log(log_root)
    assert "Clustering keys = [col(topic), col(partition), col(offset)]" in _plan(df)
    assert "Clustering keys = [col(topic)" not in _plan(read_log(log_root, mode="PERMISSIVE"))
    got = df.select("topic", "partition", "offset").to_arrow()
    ordered = sorted(zip(*(got.column(c).to_pylist() for c in ("topic", "partition", "offset"))))
    assert list(zip(*(got.column(c).to_pylist() for c in ("topic", "partition", "offset")))) == ordered
