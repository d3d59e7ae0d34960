"""Polars, DuckDB and Dask over a real broker's log dir (issue 42, items 2 and 3; Dask: issue 82, on the
session's ``distributed.LocalCluster``, whose worker processes read the log dir): the rows Kafka's own
consumer reads (librdkafka, read_uncommitted and read_committed) and the rows of
:class:`kafkarec.scan.LogScan`, on every topic of tests/support/brokers/produce.py (every codec, three
producers, transactions, compaction, retention, headers, LogAppendTime), as a clean shutdown left
them.
"""
import pytest

from support.brokers import produce
from support.logs.engine_logs import rows

pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

from kafkarec.engines.dask import read_log  # noqa: E402
from kafkarec.engines.duckdb import register  # noqa: E402
from kafkarec.engines.polars import scan_log  # noqa: E402
from kafkarec.scan import LogScan  # noqa: E402

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.fixture(scope="module")
def consumed(kafka_broker, broker_data):
    topics = broker_data.data_topics()
    return {iso: produce.consume(kafka_broker.bootstrap, topics, iso)
            for iso in ("read_uncommitted", "read_committed")}


@pytest.mark.parametrize("iso", ["read_uncommitted", "read_committed"])
def test_every_engine_reads_what_the_consumer_reads(broker_data, stopped_log_dir, consumed, dask_cluster, iso):
    topics = broker_data.data_topics()
    want = consumed[iso]
    assert len(want) > 4000
    scanned = rows(LogScan(stopped_log_dir, topics=topics, isolation_level=iso).to_table())
    assert scanned == want
    lf = scan_log(stopped_log_dir, isolation_level=iso)
    assert rows(lf.filter(pl.col("topic").is_in(topics)).collect()) == want
    con = duckdb.connect()
    register(con, "logs", stopped_log_dir, isolation_level=iso)
    listed = ", ".join(f"'{t}'" for t in topics)
    assert rows(con.sql(f"SELECT * FROM logs WHERE topic IN ({listed})").to_arrow_table()) == want
    frame = read_log(stopped_log_dir, topics=topics, isolation_level=iso)
    assert frame.npartitions > 1
    assert rows(_arrow(frame.compute(scheduler=dask_cluster.client))) == want


@pytest.mark.parametrize("iso", ["read_uncommitted", "read_committed"])
def test_a_pushed_filter_on_a_transactional_topic_keeps_the_consumers_rows(stopped_log_dir, consumed, dask_cluster, iso):
    """Bounds inside transactions whose markers lie outside them: the isolation level is judged over
    the partition's whole log, not the rows the bounds keep."""
    want = [r for r in consumed[iso] if r[0] == "txn" and r[1] == 1 and 20 <= r[2] < 60]
    assert want
    lf = scan_log(stopped_log_dir, isolation_level=iso)
    got = lf.filter((pl.col("topic") == "txn") & (pl.col("partition") == 1)
                    & pl.col("offset").is_between(20, 59)).collect()
    assert rows(got) == want
    con = duckdb.connect()
    register(con, "logs", stopped_log_dir, isolation_level=iso)
    sql = "SELECT * FROM logs WHERE topic = 'txn' AND partition = 1 AND \"offset\" BETWEEN 20 AND 59"
    assert rows(con.sql(sql).to_arrow_table()) == want
    frame = read_log(stopped_log_dir, isolation_level=iso, filters=[
        ("topic", "==", "txn"), ("partition", "==", 1), ("offset", ">=", 20), ("offset", "<=", 59)])
    assert rows(_arrow(frame.compute(scheduler=dask_cluster.client))) == want


def _arrow(frame):
    """A Dask result (pandas, ``ArrowDtype`` columns) as the Arrow table it was made from."""
    import pyarrow as pa
    return pa.Table.from_pandas(frame, preserve_index=False)
