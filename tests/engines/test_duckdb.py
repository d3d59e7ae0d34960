"""kafkarec.engines.duckdb: SQL over the one Arrow stream reader (issue 42, item 3).

The yardstick is :class:`kafkarec.scan.LogScan` itself (the Kafka consumer's rows are compared on the
session broker's topics in tests/broker/test_broker_engines.py) and DuckDB filtering the full read.
"""
import pytest

duckdb = pytest.importorskip("duckdb")

from support.logs.engine_logs import T0, rows, segment_bytes_read  # noqa: E402
from kafkarec.engines.duckdb import LogSource, register  # noqa: E402
from kafkarec.scan import LogScan  # noqa: E402

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def _time(ms: int) -> str:
    return f"epoch_ms({ms})::TIMESTAMP"


@pytest.mark.parametrize("isolation_level", ISOLATION_LEVELS)
def test_the_same_rows_as_the_reader_pushed_or_plainly_registered(log_root, isolation_level):
    want = rows(LogScan(log_root, isolation_level=isolation_level).to_table())
    assert len(want) > 100
    con = duckdb.connect()
    register(con, "logs", log_root, isolation_level=isolation_level)
    assert rows(con.sql("SELECT * FROM logs").to_arrow_table()) == want
    con.register("plain", LogScan(log_root, isolation_level=isolation_level))   # the Arrow stream alone
    assert rows(con.sql("SELECT * FROM plain").to_arrow_table()) == want


WHERE = [
    "\"offset\" BETWEEN 3 AND 40 AND topic IN ('web-clicks', 'payments')",
    "partition = 1 OR partition = 2",
    f"timestamp >= {_time(T0 + 5)}",
    "timestamp >= TIMESTAMP '2023-11-14 22:13:20.005'",
    "timestamp < '2023-11-14 22:13:20.0105'",
    "\"offset\" < 4 OR \"offset\" > 30",                             # a union of ranges: DuckDB filters
    "contains(value::VARCHAR, '7') AND \"offset\" >= 2",            # a column the reader cannot push
    "NOT (\"offset\" >= 10)",
    "key IS NULL OR \"offset\" = 7",
    "\"offset\" IN (1, 5, 9) AND partition IN (0, 2)",
]


@pytest.mark.parametrize("isolation_level", ISOLATION_LEVELS)
def test_pushed_and_unpushed_filters_give_the_rows_of_filtering_the_full_read(log_root, isolation_level):
    con = duckdb.connect()
    register(con, "logs", log_root, isolation_level=isolation_level)
    everything = LogScan(log_root, isolation_level=isolation_level).to_table()   # noqa: F841 (DuckDB reads it)
    for where in WHERE:
        got = rows(con.sql(f"SELECT * FROM logs WHERE {where}").to_arrow_table())
        want = rows(con.sql(f"SELECT * FROM everything WHERE {where}").to_arrow_table())
        assert got == want, where


def test_which_filters_the_source_takes(log_root):
    """DuckDB offers each filter to the source; those the reader applies exactly are taken (DuckDB
    does not apply them again), the rest DuckDB applies itself."""
    from duckdb._sources.nodes import Binary, Col, In, Lit
    import datetime
    source = LogSource(LogScan(log_root))
    offset, topic, ts = Col(("offset",)), Col(("topic",)), Col(("timestamp",))
    assert source.accepts(Binary("AND", Binary(">=", offset, Lit(10, "BIGINT")), Binary("<=", offset, Lit(20, "BIGINT"))))
    assert source.accepts(In(topic, [Lit("a", "VARCHAR"), Lit("b", "VARCHAR")]))
    assert source.accepts(Binary(">=", ts, Lit(datetime.datetime(2026, 1, 1, 0, 0, 0, 1500), "TIMESTAMP")))
    assert not source.accepts(Binary("OR", Binary("<", offset, Lit(3, "BIGINT")), Binary(">", offset, Lit(9, "BIGINT"))))
    assert not source.accepts(Binary("!=", offset, Lit(3, "BIGINT")))
    assert source.accepts(Binary("=", Col(("key",)), Lit(b"k", "BLOB")))
    assert source.accepts(In(Col(("key",)), [Lit(b"k", "BLOB"), Lit(b"j", "BLOB")]))
    assert not source.accepts(Binary(">", Col(("key",)), Lit(b"k", "BLOB")))
    permissive = LogSource(LogScan(log_root, mode="PERMISSIVE"))      # error rows have no offset or key
    assert not permissive.accepts(Binary(">=", offset, Lit(10, "BIGINT")))
    assert not permissive.accepts(Binary("=", Col(("key",)), Lit(b"k", "BLOB")))


def test_projection_and_limit(log_root):
    con = duckdb.connect()
    register(con, "logs", log_root)
    got = con.sql("SELECT \"offset\", topic FROM logs LIMIT 5").to_arrow_table()
    assert got.column_names == ["offset", "topic"] and got.num_rows == 5
    assert con.sql("SELECT count(*) FROM logs").fetchall() == [(LogScan(log_root).to_table().num_rows,)]


@pytest.mark.parametrize("where", ['"offset" BETWEEN 9000 AND 9199', f"timestamp >= {_time(T0 + 19_800)}",
                                   "timestamp >= TIMESTAMP '2023-11-14 22:13:39.800'"])
def test_a_one_percent_slice_reads_at_most_two_percent_of_the_segment_bytes(long_log, where):
    root, folder = long_log
    con = duckdb.connect()
    register(con, "logs", root)
    got, read, total = segment_bytes_read(
        folder, lambda: con.sql(f'SELECT "offset", value FROM logs WHERE {where}').fetchall())
    assert len(got) == 200
    assert 0 < read <= 0.02 * total, (read, total)


def test_a_damaged_segment_gives_the_readers_error(damaged):
    """DuckDB reports a failing Arrow stream as its own error; its text is kafkarec's."""
    root, error = damaged
    con = duckdb.connect()
    register(con, "logs", root)
    with pytest.raises(duckdb.Error) as got:
        con.sql("SELECT * FROM logs").fetchall()
    assert str(error) in str(got.value)


@pytest.mark.parametrize("where", [
    '"offset" > 9223372036854775807', '"offset" >= 9223372036854775807', '"offset" = 9223372036854775807',
    '"offset" < 9223372036854775807', '"offset" <= 9223372036854775807',
    "partition < 2147483647", "partition >= 1 AND partition < 3",
])
def test_bounds_past_the_long_range_and_partition_ranges(log_root, where):
    """No offset is past a Java long: such a bound keeps none or all, exactly (issue 49, finding 6);
    a partition range is taken and costs its ends (finding 5)."""
    con = duckdb.connect()
    register(con, "logs", log_root)
    con.register("plain", LogScan(log_root))
    assert rows(con.sql(f"SELECT * FROM logs WHERE {where}").to_arrow_table()) == \
        rows(con.sql(f"SELECT * FROM plain WHERE {where}").to_arrow_table())


def test_long_max_and_partition_ranges_are_taken(log_root):
    from duckdb._sources.nodes import Binary, Col, Lit
    source = LogSource(LogScan(log_root))
    offset, partition = Col(("offset",)), Col(("partition",))
    assert source.accepts(Binary(">", offset, Lit(9223372036854775807, "BIGINT")))
    assert source.accepts(Binary("<", partition, Lit(2147483647, "INTEGER")))
    assert LogSource(LogScan(log_root, mode="PERMISSIVE")).accepts(Binary(">=", partition, Lit(1, "INTEGER")))


KEY_WHERE = [("key = 'key-7'", 1), ("key IN ('key-7', 'key-150')", 2), ("key = 'key-7' OR key = 'key-9'", 2),
             ("key = '\\x6B\\x65\\x79-7'::BLOB", 1)]


@pytest.mark.parametrize("partitioner", [None, "murmur2"])
@pytest.mark.parametrize("where,keys", KEY_WHERE)
def test_key_filters_give_the_rows_of_filtering_the_full_read(keyed_log, where, keys, partitioner):
    """DuckDB casts a string compared with the BLOB key to a BLOB constant; the source takes it."""
    root, _ = keyed_log
    con = duckdb.connect()
    register(con, "logs", root, partitioner=partitioner)
    con.register("whole_read", LogScan(root).to_table())
    got = rows(con.sql(f"SELECT * FROM logs WHERE {where}").to_arrow_table())
    assert len(got) == 40 * keys
    assert got == rows(con.sql(f"SELECT * FROM whole_read WHERE {where}").to_arrow_table())


def test_a_key_lookup_with_murmur2_reads_at_most_one_partitions_bytes(keyed_log):
    root, partitions = keyed_log
    con = duckdb.connect()
    register(con, "logs", root, partitioner="murmur2")
    got, read, total = segment_bytes_read(
        root, lambda: con.sql("SELECT \"offset\", value FROM logs WHERE key = 'key-7'").fetchall())
    assert len(got) == 40
    assert 0 < read <= total / partitions + 0.01 * total, (read, total)


def test_the_scan_decodes_on_the_connections_threads(log_root):
    """Unless told, the source's scan takes DuckDB's ``threads`` setting (at most the CPUs) as its
    pool's size: the engine's parallelism is the read's."""
    from kafkarec.scan.config import usable_cpus
    for threads in (1, 2, 64):
        con = duckdb.connect(config={"threads": threads})
        assert register(con, "logs", log_root).scan.config.threads == min(threads, usable_cpus())
        assert register(con, "three", log_root, threads=3).scan.config.threads == 3
        assert con.sql("SELECT count(*) FROM logs").fetchall() == con.sql("SELECT count(*) FROM three").fetchall()


def test_registering_leaves_a_pending_result_alone(log_root):
    """Asking the connection's threads goes through a cursor of its own: a result the caller has
    pending is not replaced (DuckDB itself then refuses the registration, as without kafkarec)."""
    con = duckdb.connect()
    pending = con.execute("SELECT 42")
    with pytest.raises(duckdb.Error, match="unfinished result"):
        register(con, "logs", log_root)
    assert pending.fetchall() == [(42,)]
    register(con, "logs", log_root)
    assert con.sql("SELECT count(*) FROM logs").fetchall()[0][0] > 100
