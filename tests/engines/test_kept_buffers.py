"""Column buffers kept between the queries of a registered source (issue 80; ``buffer_cache_bytes``,
:class:`kafkarec._core.SpareBuffers`).

Arrow's memory pool hands the memory of freed column buffers back to the kernel after a few
milliseconds, so a query after a pause (or after another engine's query) faulted every column page
in afresh.  DuckDB's registered table and Polars' LazyFrame keep the buffers their engine let go of
for the next query's columns.  Counted through the cache's ``held`` and the buffers' addresses,
never timed; the rows are those of a plain :class:`kafkarec.scan.LogScan`, which keeps none.
"""
import gc
import pickle

import pytest

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

from support.logs.engine_logs import long_partition  # noqa: E402
from kafkarec.engines import duckdb as kduck  # noqa: E402
from kafkarec.engines import polars as kpolars  # noqa: E402
from kafkarec.errors import UsageError  # noqa: E402
from kafkarec.scan import LogScan  # noqa: E402

QUERY = 'SELECT "offset", key, value FROM logs ORDER BY "offset"'


@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    """``root``: one partition of 200,000 records (~100-byte values): chunks of 131,072 rows, whose
    key and value columns are over the 256 KiB the cache keeps."""
    root = str(tmp_path_factory.mktemp("kept-buffers"))
    long_partition(root, records=200_000, per_batch=500, segment_bytes=16 << 20)
    return root


def _plain(root) -> list:
    return [tuple(r.values()) for r in LogScan(root, columns=["offset", "key", "value"]).to_table().to_pylist()]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_registered_table_keeps_the_buffers_duckdb_let_go(big_log, threads):
    con = duckdb.connect()
    src = kduck.register(con, "logs", big_log, threads=threads)
    spare = src.scan.spare_buffers
    assert spare is not None and spare.limit == kduck.BUFFER_CACHE_BYTES
    first = con.sql(QUERY).fetchall()
    gc.collect()
    assert 0 < spare.held <= spare.limit
    assert con.sql(QUERY).fetchall() == first == _plain(big_log)
    gc.collect()
    assert 0 < spare.held <= spare.limit
    src.close()
    assert spare.held == 0 and len(spare) == 0
    assert con.sql(QUERY).fetchall() == first           # (a closed source still reads, keeping none)
    gc.collect()
    assert spare.held == 0


def test_the_queries_share_one_cache_and_the_budget_holds(big_log):
    con = duckdb.connect()
    src = kduck.register(con, "logs", big_log, buffer_cache_bytes=3 << 20)
    con.sql(QUERY).fetchall()
    narrowed = src.scan.narrow(columns=["offset", "value"])
    assert narrowed.spare_buffers is src.scan.spare_buffers
    for _ in range(3):
        con.sql(QUERY).fetchall()
        gc.collect()
        assert 0 < src.scan.spare_buffers.held <= 3 << 20


def test_no_budget_keeps_nothing_and_a_plain_scan_none(big_log):
    con = duckdb.connect()
    src = kduck.register(con, "logs", big_log, buffer_cache_bytes=0)
    assert src.scan.spare_buffers is None
    assert con.sql(QUERY).fetchall() == _plain(big_log)
    assert LogScan(big_log).spare_buffers is None


@pytest.mark.parametrize("layout", ["copy", "view"])
def test_a_polars_lazyframe_keeps_them(big_log, monkeypatch, layout):
    made = []

    class Seen(LogScan):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)
    monkeypatch.setattr(kpolars, "LogScan", Seen)
    frame = kpolars.scan_log(big_log, value_layout=layout)
    spare = made[0].spare_buffers
    assert spare.limit == kpolars.BUFFER_CACHE_BYTES
    first = frame.select("offset", "key", "value").collect()
    rows = first.rows()
    del first
    gc.collect()
    assert rows == _plain(big_log)
    assert 0 < spare.held <= spare.limit
    assert frame.select("offset", "key", "value").collect().rows() == rows


def test_the_budget_is_checked_at_the_boundary_and_the_buffers_never_travel(big_log):
    for bad in (-1, True, 1.5, "256M"):
        with pytest.raises(UsageError, match="buffer_cache_bytes"):
            LogScan(big_log, buffer_cache_bytes=bad)
    scan = LogScan(big_log, columns=["offset", "value"], buffer_cache_bytes=64 << 20)
    scan.to_table()
    gc.collect()
    assert scan.spare_buffers.held > 0
    copy = pickle.loads(pickle.dumps(scan))     # (to a worker: the budget goes, the buffers stay here)
    assert copy.spare_buffers is None and copy.config == scan.config
    scan.close()
    assert scan.spare_buffers.held == 0
