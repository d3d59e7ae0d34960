"""kafkarec.engines.polars: a LazyFrame over the one Arrow stream reader (issue 42, item 2).

The yardstick is :class:`kafkarec.scan.LogScan` itself (the Kafka consumer's rows are compared on the
session broker's topics in tests/broker/test_broker_engines.py) and Polars filtering the full read.
"""
import datetime

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pl = pytest.importorskip("polars")

from support.logs.engine_logs import T0, rows, segment_bytes_read  # noqa: E402
from kafkarec.engines.polars import predicate_bounds, scan_log  # noqa: E402
from kafkarec.scan import Bounds, LogScan  # noqa: E402

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
SCHEMA = pl.Schema({"topic": pl.String, "partition": pl.Int32, "offset": pl.Int64,
                    "timestamp": pl.Datetime("ms"), "value": pl.Binary})


def _at(ms: int) -> datetime.datetime:
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)


@pytest.mark.parametrize("isolation_level", ISOLATION_LEVELS)
def test_the_same_rows_as_the_reader(log_root, isolation_level):
    want = rows(LogScan(log_root, isolation_level=isolation_level).to_table())
    assert len(want) > 100
    assert rows(scan_log(log_root, isolation_level=isolation_level).collect()) == want


@pytest.mark.parametrize("isolation_level", ISOLATION_LEVELS)
def test_pushed_and_unpushed_filters_give_the_rows_of_filtering_the_full_read(log_root, isolation_level):
    full = pl.from_arrow(LogScan(log_root, isolation_level=isolation_level).to_table())
    lf = scan_log(log_root, isolation_level=isolation_level)
    predicates = [
        pl.col("offset").is_between(3, 40) & pl.col("topic").is_in(["web-clicks", "payments"]),
        (pl.col("partition") == 1) | (pl.col("partition") == 2),
        pl.col("timestamp") >= _at(T0 + 5),
        (pl.col("offset") < 4) | (pl.col("offset") > 30),                 # a union of ranges: not pushed
        pl.col("value").bin.contains(b"7") & (pl.col("offset") >= 2),      # a column the reader cannot push
        ~(pl.col("offset") >= 10),
        pl.col("key").is_null() | (pl.col("offset") == 7),
    ]
    for predicate in predicates:
        assert rows(lf.filter(predicate).collect()) == rows(full.filter(predicate)), predicate


def test_projection_and_row_limit(log_root):
    lf = scan_log(log_root)
    got = lf.select("offset", "topic").head(5).collect()
    assert got.columns == ["offset", "topic"] and got.height == 5
    filtered = lf.filter(pl.col("value").bin.contains(b"1")).head(3).collect()
    assert filtered.height == 3 and all(b"1" in v for v in filtered["value"])
    small = scan_log(log_root).filter(pl.col("topic") == "web-clicks").collect(engine="streaming")
    assert set(small["topic"]) == {"web-clicks"}


@pytest.mark.parametrize("predicate,bounds,rest", [
    (pl.col("offset").is_between(10, 20), Bounds.of(offsets=(10, 21)), False),
    (pl.col("offset").is_between(10, 20, closed="none"), Bounds.of(offsets=(11, 20)), False),
    ((pl.col("offset") > 5) & (pl.col("offset") <= 9), Bounds.of(offsets=(6, 10)), False),
    (pl.lit(5) < pl.col("offset"), Bounds.of(offsets=(6, None)), False),
    (pl.col("offset") == 7, Bounds.of(offsets=(7, 8)), False),
    (pl.col("topic").is_in(["a", "b"]) & (pl.col("partition") == 3),
     Bounds.of(topics=["a", "b"], partitions=[3]), False),
    ((pl.col("topic") == "a") | (pl.col("topic") == "b"), Bounds.of(topics=["a", "b"]), False),
    (pl.col("timestamp") >= datetime.datetime(2026, 1, 1), Bounds.of(timestamps=(1767225600000, None)), False),
    (pl.col("timestamp") < datetime.datetime(2026, 1, 1, 0, 0, 0, 1500),
     Bounds.of(timestamps=(None, 1767225600002)), False),
    (pl.col("timestamp") >= datetime.date(2026, 1, 1), Bounds.of(timestamps=(1767225600000, None)), False),
    ((pl.col("offset") >= 3) & pl.col("value").bin.contains(b"x"), Bounds.of(offsets=(3, None)), True),
    ((pl.col("offset") < 3) | (pl.col("offset") > 9), Bounds(), True),
    ((pl.col("topic") == "a") | (pl.col("partition") == 1), Bounds(), True),
    (pl.col("offset") != 3, Bounds(), True),
])
def test_predicate_bounds(predicate, bounds, rest):
    """Conjuncts become exact bounds, read from Polars' serialized expression tree; the rest stays."""
    got, residual = predicate_bounds(predicate, SCHEMA)
    assert got == bounds
    assert (residual is not None) == rest


def test_a_time_zone_other_than_the_columns_is_left_to_polars():
    aware = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    bounds, residual = predicate_bounds(pl.col("timestamp") >= aware, SCHEMA)
    assert bounds == Bounds() and residual is not None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lo=st.integers(-5, 20_100), span=st.integers(0, 400), ts_lo=st.integers(-5, 20_100),
       closed=st.sampled_from(["both", "left", "right", "none"]))
def test_random_bounds_read_what_filtering_the_full_read_keeps(long_log, lo, span, ts_lo, closed):
    root, _ = long_log
    predicate = pl.col("offset").is_between(lo, lo + span, closed=closed) & (pl.col("timestamp") >= _at(T0 + ts_lo))
    got = scan_log(root).filter(predicate).select("offset").collect()["offset"].to_list()
    want = [o for o in range(20_000) if o >= ts_lo and (lo < o if closed in ("right", "none") else lo <= o)
            and (o < lo + span if closed in ("left", "none") else o <= lo + span)]
    assert got == want


@pytest.mark.parametrize("by", ["offset", "time"])
def test_a_one_percent_slice_reads_at_most_two_percent_of_the_segment_bytes(long_log, by):
    root, folder = long_log
    if by == "offset":
        predicate = pl.col("offset").is_between(9_000, 9_199)
    else:
        predicate = pl.col("timestamp") >= _at(T0 + 19_800)
    got, read, total = segment_bytes_read(folder, lambda: scan_log(root).filter(predicate).collect())
    assert got.height == 200
    assert 0 < read <= 0.02 * total, (read, total)


def test_a_damaged_segment_gives_the_readers_error(damaged):
    """Polars passes the source's exception through: kafkarec's own, with the file, byte and reason."""
    root, error = damaged
    with pytest.raises(type(error)) as got:
        scan_log(root).collect()
    assert str(got.value) == str(error)


LONG_MAX = (1 << 63) - 1
# what Polars answers on a plain DataFrame is the yardstick: non-finite floats (issue 49, finding 7),
# bounds past the long range (finding 6), partition ranges (finding 5)
EDGE_PREDICATES = [
    pl.col("offset") < float("inf"),
    pl.col("offset") != float("-inf"),
    pl.col("offset") < float("nan"),
    (pl.col("offset") >= 3) & (pl.col("offset") <= float("inf")),
    pl.col("offset").is_between(2, float("inf")),
    pl.col("offset") > LONG_MAX,
    pl.col("offset") >= LONG_MAX,
    pl.col("offset") < LONG_MAX,
    pl.col("timestamp").cast(pl.Int64) > LONG_MAX,
    pl.col("partition") < 2147483647,
    (pl.col("partition") >= 1) & (pl.col("partition") < 3),
]


@pytest.mark.parametrize("predicate", EDGE_PREDICATES, ids=str)
def test_edge_constants_answer_as_polars_does(log_root, predicate):
    full = pl.from_arrow(LogScan(log_root).to_table())
    assert rows(scan_log(log_root).filter(predicate).collect()) == rows(full.filter(predicate))


def test_bounds_past_the_long_range_and_partition_ranges():
    assert predicate_bounds(pl.col("offset") > LONG_MAX, SCHEMA) == (Bounds(offsets=(LONG_MAX, LONG_MAX)), None)
    assert predicate_bounds(pl.col("offset") >= LONG_MAX, SCHEMA)[0] == Bounds(offsets=(LONG_MAX, None))
    bounds, rest = predicate_bounds((pl.col("partition") >= 1) & (pl.col("partition") < 2147483647), SCHEMA)
    assert rest is None and bounds.admits("t", 2147483646) and not bounds.admits("t", 0)
    # a float constant stays Polars' to compare, as the very expression it gave
    inf = pl.col("offset") < float("inf")
    bounds, rest = predicate_bounds(inf & (pl.col("offset") >= 3), SCHEMA)
    assert bounds == Bounds.of(offsets=(3, None)) and rest.meta.eq(inf)


KEY_PREDICATES = [
    (pl.col("key") == b"key-7", [b"key-7"]),
    (pl.col("key") == "key-7", [b"key-7"]),             # Polars compares Binary and String by UTF-8
    (pl.col("key").is_in([b"key-7", b"key-150"]), [b"key-7", b"key-150"]),
    ((pl.col("key") == b"key-7") | (pl.col("key") == b"key-9"), [b"key-7", b"key-9"]),
]


@pytest.mark.parametrize("predicate,keys", KEY_PREDICATES)
def test_key_filters_are_pushed_exactly_except_under_error_rows(predicate, keys):
    schema = pl.Schema({**SCHEMA, "key": pl.Binary})
    assert predicate_bounds(predicate, schema) == (Bounds.of(keys=keys), None)
    bounds, residual = predicate_bounds(predicate, schema, error_rows=True)
    assert bounds == Bounds.of(keys=keys) and residual is not None     # error rows' key is null


@pytest.mark.parametrize("partitioner", [None, "murmur2"])
@pytest.mark.parametrize("predicate,keys", KEY_PREDICATES)
def test_key_filters_give_the_rows_of_filtering_the_full_read(keyed_log, predicate, keys, partitioner):
    root, _ = keyed_log
    full = pl.from_arrow(LogScan(root).to_table())
    got = scan_log(root, partitioner=partitioner).filter(predicate).collect()
    assert got.height == 40 * len(keys)
    assert rows(got) == rows(full.filter(predicate))


def test_a_key_lookup_with_murmur2_reads_at_most_one_partitions_bytes(keyed_log):
    root, partitions = keyed_log
    got, read, total = segment_bytes_read(
        root, lambda: scan_log(root, partitioner="murmur2").filter(pl.col("key") == b"key-7").collect())
    assert got.height == 40 and set(got["key"]) == {b"key-7"}
    assert 0 < read <= total / partitions + 0.01 * total, (read, total)


def test_a_typed_key_filter_is_polars_own_and_keeps_its_rows(tmp_path):
    """With ``key_format`` the key column holds decoded keys, which no key bound names (bounds
    name key bytes): the filter stays Polars', the read takes no key bound, and the rows are
    those of filtering the full read; a key bound given to such a read is refused."""
    import json

    import kafkarec
    from kafkarec.errors import UsageError
    part = tmp_path / "t-0"
    part.mkdir()
    keys = [json.dumps(k).encode() for k in ("a", "b", "a", "c")]
    (part / "00000000000000000000.log").write_bytes(
        kafkarec.build_batch([b"1", b"2", b"3", b"4"], keys=keys, base_offset=0))
    typed = {"key_format": "json", "typed_options": {"key_reader_schema": '{"type": "string"}'}}
    got = scan_log(str(tmp_path), **typed).filter(pl.col("key") == "a").select("offset", "key").collect()
    assert got.rows() == [(0, "a"), (2, "a")]
    assert LogScan(str(tmp_path), **typed).config.narrow(bounds=Bounds(keys=[b"a"])).bounds.keys is None
    assert predicate_bounds(pl.col("key") == "a", scan_log(str(tmp_path), **typed).collect_schema(),
                            raw_keys=False)[1] is not None
    with pytest.raises(UsageError, match="key_format"):
        LogScan(str(tmp_path), bounds=Bounds(keys=[b"a"]), **typed)


def test_the_scan_decodes_on_polars_threads(log_root, monkeypatch):
    """Unless told, the source's scan takes the size of Polars' pool (at most the CPUs) as its pool's."""
    from kafkarec.engines import polars as engine
    from kafkarec.scan.config import usable_cpus
    made = []

    class Recording(LogScan):
        def __init__(self, source, **options):
            super().__init__(source, **options)
            made.append(self.config.threads)
    monkeypatch.setattr(engine, "LogScan", Recording)
    assert rows(scan_log(log_root).collect()) == rows(LogScan(log_root).to_table())
    assert made[0] == min(pl.thread_pool_size(), usable_cpus())
    scan_log(log_root, threads=3)
    assert made[-1] == 3


@pytest.mark.parametrize("value_layout", ["view", "copy"])
def test_a_few_rows_kept_do_not_hold_the_batches_they_came_from(tmp_path, value_layout):
    # a view (Polars' layout; the view layout's too) holds the whole buffer it points into: 20 rows
    # kept of 40 MB of values held every window read (the review of issue 80's view layout)
    import gc
    import os
    import pyarrow as pa
    from kafkarec import build_batch
    folder = tmp_path / "big-0"
    folder.mkdir()
    with open(folder / ("0" * 20 + ".log"), "wb") as fh:
        for base in range(0, 40_000, 1000):
            fh.write(build_batch([os.urandom(1000) for _ in range(1000)], [b"k%d" % i for i in range(1000)],
                                 [T0 + base + i for i in range(1000)], base_offset=base))
    gc.collect()
    before = pa.total_allocated_bytes()
    df = scan_log(str(tmp_path), value_layout=value_layout, threads=2) \
        .filter(pl.col("offset") % 2000 == 0).select("offset", "value").collect()
    gc.collect()
    assert df["offset"].to_list() == list(range(0, 40_000, 2000))
    assert all(len(v) == 1000 for v in df["value"])
    held = pa.total_allocated_bytes() - before
    assert held < 4 << 20, f"{held} bytes of Arrow memory held by {df.height} rows"
