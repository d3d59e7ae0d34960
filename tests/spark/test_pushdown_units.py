"""Spark's pushed filters as the reader's bounds (spark_udfs.read.pushdown), without Spark: random
filter lists against filtering rows in Python with SQL's rules, and the conversions one by one."""
from __future__ import annotations

import datetime
import sys
import zoneinfo

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="needs pyspark 4.1+ (pushFilters)")
from pyspark.sql import datasource as ds  # noqa: E402

if not hasattr(ds, "Filter"):
    pytest.skip("needs pyspark 4.1+ (pushFilters)", allow_module_level=True)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kafkarec.scan import Bounds  # noqa: E402
from spark_udfs.read import pushdown as _pushdown  # noqa: E402
from spark_udfs.read.schema import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS  # noqa: E402

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
COMPARISONS = (ds.EqualTo, ds.EqualNullSafe, ds.GreaterThan, ds.GreaterThanOrEqual, ds.LessThan,
               ds.LessThanOrEqual)


# --- rows, and filters evaluated as Spark does (null: unknown, a row is kept when true) ------

def spark_value(row, column):
    """The row's value of ``column`` as Spark holds it (``timestamp`` in microseconds, null
    outside Spark's range; ``timestampMs`` the raw milliseconds)."""
    if column == "timestamp":
        ms = row["timestampMs"]
        return None if ms is None or not MIN_TIMESTAMP_MS <= ms <= MAX_TIMESTAMP_MS else ms * 1000
    return row.get(column)


def literal(value, column):
    """A literal in the column's terms (a zoned timestamp in microseconds), or a marker that
    the types do not compare."""
    if column == "timestamp":
        if isinstance(value, datetime.datetime) and value.tzinfo is not None:
            return (value - EPOCH) // datetime.timedelta(microseconds=1)
        return TypeError
    if column == "key":         # Spark's binary literal: bytes or a bytearray
        return bytes(value) if isinstance(value, (bytes, bytearray)) else TypeError
    want = str if column in ("topic", "value") else int
    if isinstance(value, bool) or not isinstance(value, want):
        return TypeError
    return value


def holds(f, row):
    """True / False / None (unknown) of a filter on a row."""
    if isinstance(f, ds.Not):
        inner = holds(f.child, row)
        return None if inner is None else not inner
    column = f.attribute[0]
    v = spark_value(row, column)
    if isinstance(f, ds.IsNull):
        return v is None
    if isinstance(f, ds.IsNotNull):
        return v is not None
    if isinstance(f, ds.In):
        lits = [literal(x, column) for x in f.value]
        if v is None or TypeError in lits:
            return None
        return v in lits
    lit = literal(f.value, column)
    if isinstance(f, ds.EqualNullSafe) and v is None:
        return False
    if v is None or lit is TypeError:
        return None
    return {ds.EqualTo: v == lit, ds.EqualNullSafe: v == lit, ds.GreaterThan: v > lit,
            ds.GreaterThanOrEqual: v >= lit, ds.LessThan: v < lit, ds.LessThanOrEqual: v <= lit}[type(f)]


def in_bounds(bounds, row, *, error_row_read: bool):
    """Whether the read bounded by ``bounds`` gives the row.  An error row (null offset) is
    read when its partition is and no offset or time bound applies; with one it may or may
    not be (its batch may lie inside the resolved range): both are checked."""
    if bounds is None:
        return True
    if not bounds.admits(row["topic"], row["partition"]):
        return False
    if row["offset"] is not None and bounds.keys is not None and row["key"] not in bounds.keys:
        return False            # an error row (null offset and key) is read whatever the keys
    if row["offset"] is None:
        ranged = bounds.offsets != (None, None) or bounds.timestamps != (None, None)
        return error_row_read or not ranged
    for (lo, hi), v in ((bounds.offsets, row["offset"]), (bounds.timestamps, row["timestampMs"])):
        if (lo is not None and v < lo) or (hi is not None and v >= hi):
            return False
    return True


# --- random rows and filters ---------------------------------------------------------------

T0 = 1_790_000_000_000        # 2026-09
# few values, so that the literals often meet the rows' values and their neighbours
MS = [T0 - 1, T0, T0 + 1, MIN_TIMESTAMP_MS - 1, MAX_TIMESTAMP_MS + 1, MAX_TIMESTAMP_MS, -1]
ms = st.sampled_from(MS)
topics = st.sampled_from(["a", "b", "c"])


@st.composite
def rows(draw, error_rows: bool):
    topic = draw(st.one_of(topics, st.none()))
    partition = None if topic is None else draw(st.integers(0, 3))
    if error_rows and topic is not None and draw(st.booleans()):
        return {"topic": topic, "partition": partition, "offset": None, "timestampMs": None, "value": None,
                "key": None}
    return {"topic": topic, "partition": partition, "offset": draw(st.integers(0, 6)),
            "timestampMs": draw(ms), "value": draw(st.sampled_from(["x", "y", None])),
            "key": draw(st.sampled_from([b"a", b"b", None]))}


def zoned(micros, zone):
    return (EPOCH + datetime.timedelta(microseconds=micros)).astimezone(zone)


@st.composite
def values(draw, column):
    """A literal for ``column``: mostly of its type, sometimes of another."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([1.5, True, "3", datetime.datetime(2026, 9, 1), 7]))
    if column in ("topic", "value"):
        return draw(st.one_of(topics, st.just("x")))
    if column == "key":
        return draw(st.sampled_from([b"a", b"b", b"z", bytearray(b"a")]))
    if column == "timestamp":
        # on a millisecond, or a microsecond or more past one (rounded either way by the bounds)
        us = draw(ms) * 1000 + draw(st.sampled_from([0, 1, 500, 999]))
        if not (MIN_TIMESTAMP_MS * 1000 <= us <= MAX_TIMESTAMP_MS * 1000):
            us = T0 * 1000
        # Spark gives a zoned instant; a zone off whole hours shows nothing depends on it
        zone = UTC if abs(us // 1000 - T0) > 10 else zoneinfo.ZoneInfo("America/St_Johns")
        return zoned(us, zone)
    if column == "timestampMs":
        return draw(ms)
    return draw(st.integers(-1, 7))


@st.composite
def filters(draw):
    column = draw(st.sampled_from(["topic", "partition", "offset", "timestamp", "timestampMs", "value", "key"]))
    kind = draw(st.sampled_from(COMPARISONS + (ds.In, ds.IsNull, ds.IsNotNull)))
    if kind in (ds.IsNull, ds.IsNotNull):
        f = kind((column,))
    elif kind is ds.In:
        f = ds.In((column,), tuple(draw(st.lists(values(column), min_size=1, max_size=3))))
    else:
        f = kind((column,), draw(values(column)))
    return ds.Not(f) if draw(st.integers(0, 3)) == 0 else f


def check(fs, table, error_rows):
    """Every row all the filters admit is read (the bounds never lose one), and the rows read
    that pass the filters Spark keeps are exactly those all the filters admit."""
    pushed = _pushdown.push(fs, error_rows=error_rows)
    assert all(any(k is f for f in fs) for k in pushed.kept)        # the objects Spark gave
    want = [r for r in table if all(holds(f, r) for f in fs)]
    for error_row_read in (True, False):
        read = [r for r in table if in_bounds(pushed.bounds, r, error_row_read=error_row_read)]
        assert all(r in read for r in want), (fs, pushed.bounds)
        assert [r for r in read if all(holds(f, r) for f in pushed.kept)] == want, (fs, pushed)


ALL_ROWS = [{"topic": t, "partition": p, "offset": o, "timestampMs": m, "value": "x", "key": k}
            for t in ("a", "b") for p in (0, 1, 2) for o in (0, 1, 2) for m in MS for k in (b"a", None)]
ALL_ROWS += [{"topic": t, "partition": p, "offset": None, "timestampMs": None, "value": None, "key": None}
             for t in ("a", None) for p in (0, 1, None) if (t is None) == (p is None)]
LITERALS = {"topic": ["a", "z", 1], "partition": [-1, 0, 1, 2, 3, "1"], "offset": [-1, 0, 1, 2, 3, 1.5],
            "timestampMs": list(MS) + [True],
            "timestamp": [zoned(m * 1000 + us, UTC) for m in (T0 - 1, T0, T0 + 1) for us in (0, 1, 999)]
            + [zoned(T0 * 1000 + 1, zoneinfo.ZoneInfo("America/St_Johns")), datetime.datetime(2026, 9, 1)],
            "value": ["x"], "key": [b"a", b"z", bytearray(b"a"), "a", 1]}


@pytest.mark.parametrize("column", sorted(LITERALS))
def test_every_single_filter(column):
    """Each filter kind, negated or not, with each literal, over rows of every value near it."""
    for error_rows in (True, False):
        table = [r for r in ALL_ROWS if error_rows or r["offset"] is not None]
        for kind in COMPARISONS + (ds.In, ds.IsNull, ds.IsNotNull):
            if kind in (ds.IsNull, ds.IsNotNull):
                made = [kind((column,))]
            elif kind is ds.In:
                lits = LITERALS[column]
                made = [kind((column,), tuple(lits[i:i + 2])) for i in range(len(lits))]
            else:
                made = [kind((column,), v) for v in LITERALS[column]]
            for f in made:
                check([f], table, error_rows)
                check([ds.Not(f)], table, error_rows)


@settings(max_examples=300, deadline=None)
@given(st.booleans(), st.data())
def test_random_filter_lists(error_rows, data):
    """Lists of filters (their AND: intersected bounds) over random rows."""
    table = data.draw(st.lists(rows(error_rows), min_size=5, max_size=40))
    check(data.draw(st.lists(filters(), min_size=2, max_size=6)), table, error_rows)


def test_conversions():
    at = datetime.datetime(2026, 11, 1, tzinfo=UTC)
    at_ms = (at - EPOCH) // datetime.timedelta(milliseconds=1)
    ge_ts = ds.GreaterThanOrEqual(("timestamp",), at)
    p = _pushdown.push([ge_ts, ds.IsNotNull(("timestamp",))])
    assert p.bounds == Bounds(timestamps=(at_ms, None))
    assert len(p.kept) == 2 and p.kept[0] is ge_ts          # Spark re-applies the time bound
    # the session time zone's literal is an instant; a microsecond past a millisecond rounds in
    just_after = (at + datetime.timedelta(microseconds=1)).astimezone(zoneinfo.ZoneInfo("Asia/Kolkata"))
    assert _pushdown.push([ds.GreaterThan(("timestamp",), just_after)]).bounds.timestamps == (at_ms + 1, None)
    assert _pushdown.push([ds.LessThanOrEqual(("timestamp",), just_after)]).bounds.timestamps == (None, at_ms + 1)
    assert _pushdown.push([ds.LessThan(("timestamp",), just_after)]).bounds.timestamps == (None, at_ms + 1)
    assert _pushdown.push([ds.EqualTo(("timestamp",), just_after)]).bounds.timestamps == (at_ms + 1, at_ms + 1)
    # a literal without a zone is not pushed
    naive = ds.GreaterThan(("timestamp",), datetime.datetime(2026, 11, 1))
    assert _pushdown.push([naive]) == (None, [naive])
    # topics and partitions: exact
    eq, within = ds.EqualTo(("topic",), "orders"), ds.In(("partition",), (0, 2))
    assert _pushdown.push([eq, within]) == (Bounds(topics=frozenset({"orders"}), partitions=frozenset({0, 2})), [])
    assert _pushdown.push([ds.LessThan(("partition",), 2)]).bounds.partitions == frozenset({0, 1})
    # offsets: a range; returned to Spark while error rows (null offsets) can be read
    ge, lt = ds.GreaterThanOrEqual(("offset",), 10), ds.Not(ds.GreaterThanOrEqual(("offset",), 20))
    assert _pushdown.push([ge, lt], error_rows=False) == (Bounds(offsets=(10, 20)), [])
    assert _pushdown.push([ge, lt]) == (Bounds(offsets=(10, 20)), [ge, lt])
    # an IN prunes to its ends and stays Spark's; other columns, <>, NOT IN stay Spark's
    some = ds.In(("offset",), (3, 9))
    assert _pushdown.push([some], error_rows=False) == (Bounds(offsets=(3, 10)), [some])
    others = [ds.EqualTo(("value",), b"x"), ds.Not(ds.EqualTo(("offset",), 3)),
              ds.Not(ds.In(("topic",), ("a",))), ds.IsNull(("offset",)), ds.EqualTo(("headers", "key"), "k")]
    assert _pushdown.push(others) == (None, others)
    # keys: exact (bytes; Spark's binary literal may come as a bytearray); kept for Spark while
    # error rows (null keys) can be read; a str literal is no binary: not pushed
    key, keys = ds.EqualTo(("key",), b"k1"), ds.In(("key",), (bytearray(b"k2"), b"k3"))
    assert _pushdown.push([key], error_rows=False) == (Bounds(keys=[b"k1"]), [])
    assert _pushdown.push([keys], error_rows=False) == (Bounds(keys=[b"k2", b"k3"]), [])
    assert _pushdown.push([key, keys]) == (Bounds(keys=[]), [key, keys])
    text = ds.EqualTo(("key",), "k1")
    assert _pushdown.push([text, ds.Not(key)]) == (None, [text, ds.Not(key)])
    # a keyed state takes whole partitions only
    assert _pushdown.push([eq, ge], columns=("topic",)) == (Bounds(topics=frozenset({"orders"})), [ge])


def test_pushfilters_only_in_sparks_pushdown_planner(monkeypatch, tmp_path):
    """Spark 4.1+ refuses a reader with pushFilters while pushdown is off: the reader has it only
    in the planner Spark runs with pushdown on; there filters narrow the read's bounds, except
    where the read cannot take them (a local-only option) or a keyed state would change."""
    import types
    from spark_udfs.read.datasource import FilteringKafkaRecReader, KafkaRecDataSource, KafkaRecReader

    def reader(**options):
        src = KafkaRecDataSource({"path": str(tmp_path), **options})
        return src.reader(src.schema())
    assert not _pushdown.planning_with_filters()
    plain = reader()
    assert type(plain) is KafkaRecReader and type(plain).pushFilters is ds.DataSourceReader.pushFilters
    monkeypatch.setitem(sys.modules, "pyspark.sql.worker.data_source_pushdown_filters",
                        types.ModuleType("pyspark.sql.worker.data_source_pushdown_filters"))
    assert _pushdown.planning_with_filters()
    fs = [ds.EqualTo(("topic",), "t"), ds.EqualTo(("partition",), 0), ds.GreaterThanOrEqual(("offset",), 5)]
    r = reader()
    assert isinstance(r, FilteringKafkaRecReader)
    assert r.pushFilters(fs) == fs[2:] and r.config.listed       # planned over a listing now
    assert r.config.bounds == Bounds(topics=frozenset({"t"}), partitions=frozenset({0}), offsets=(5, None))
    r = reader()
    held = r.config                 # what a plan made before the push holds: never changed
    r.pushFilters(fs)
    assert held.bounds.unbounded and not held.listed and r.config is not held
    r = reader(startingOffsets='{"t":{"0":7}}', assign='{"t":[0]}')
    r.pushFilters(fs)
    assert r.config.bounds.offsets == (5, None) and r.config.selection.start.value == {"t": {0: 7}}
    r = reader(pathGlobFilter="*.log")                            # the local reader's own option
    assert r.pushFilters(fs) == fs and r.config.bounds.unbounded and not r.config.listed
    r = reader(view="latest")                                     # whole partitions only
    assert r.pushFilters(fs) == fs[2:] and r.config.bounds == Bounds(topics=frozenset({"t"}),
                                                                   partitions=frozenset({0}))
    r = reader(view="latest", cdc="debezium")                     # a truncate reaches every partition
    assert r.pushFilters(fs) == fs[1:] and r.config.bounds == Bounds(topics=frozenset({"t"}))


LONG_MAX = (1 << 63) - 1


def test_a_partition_range_costs_its_ends():
    """``partition < 2147483647`` is two numbers, not a set of two billion (issue 49, finding 5);
    every comparison on a partition is pushed exactly."""
    import tracemalloc
    from kafkarec.scan.bounds import Partitions
    tracemalloc.start()
    try:
        wide = _pushdown.push([ds.LessThan(("partition",), 10_000_000)])
        whole = _pushdown.push([ds.LessThan(("partition",), 2147483647), ds.GreaterThanOrEqual(("partition",), 5)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert wide.kept == [] and wide.bounds.admits("t", 9_999_999) and not wide.bounds.admits("t", 10_000_000)
    assert whole == (Bounds(partitions=Partitions.between(5, 2147483647)), [])
    above = ds.Not(ds.LessThanOrEqual(("partition",), 1))
    assert _pushdown.push([above]) == (Bounds(partitions=Partitions.between(2, None)), [])


def test_bounds_past_the_long_range(tmp_path):
    """``offset = Long.MAX`` (pushed as ``>= Long.MAX`` and ``< 2^63``) and ``offset > Long.MAX`` keep
    what Spark's filtering keeps, read through the reader (issue 49, finding 6)."""
    from kafkarec.scan import LogScan
    from support.logs.logdir import build_log_dir
    build_log_dir(str(tmp_path))
    offsets = LogScan(str(tmp_path), columns=["offset"]).to_table().column("offset").to_pylist()
    cases = [([ds.EqualTo(("offset",), LONG_MAX)], []),
             ([ds.GreaterThan(("offset",), LONG_MAX)], []),
             ([ds.GreaterThanOrEqual(("offset",), 2), ds.LessThanOrEqual(("offset",), LONG_MAX)],
              [o for o in offsets if o >= 2]),
             ([ds.LessThan(("timestampMs",), LONG_MAX), ds.GreaterThan(("timestampMs",), -(1 << 63))], offsets),
             ([ds.GreaterThan(("timestampMs",), LONG_MAX)], [])]
    for fs, want in cases:
        pushed = _pushdown.push(fs, error_rows=False)
        for lo, hi in (pushed.bounds.offsets, pushed.bounds.timestamps):
            assert all(v is None or -(1 << 63) <= v <= LONG_MAX for v in (lo, hi)), pushed
        got = LogScan(str(tmp_path), bounds=pushed.bounds, columns=["offset"]).to_table()
        assert sorted(got.column("offset").to_pylist()) == sorted(want), fs


def test_whether_a_read_gives_error_rows_is_the_configs_one_answer():
    """pushFilters takes the config's answer (ScanConfig.error_rows), as the engines do: PERMISSIVE
    leaves Spark the filters on columns its error rows hold null; FAILFAST, whose read with bounds
    pushed into it is listed and so gives no error row, leaves what DROPMALFORMED does.  It asked
    ``mode != DROPMALFORMED`` and kept a FAILFAST read's offset filter."""
    from spark_udfs.read.datasource import batch_read
    from spark_udfs.read.spec import read_spec
    fs = [ds.GreaterThanOrEqual(("offset",), 5)]
    for mode, kept in (("PERMISSIVE", fs), ("FAILFAST", []), ("DROPMALFORMED", [])):
        spec, config = batch_read(read_spec({"path": "/logs", "mode": mode}))
        assert config.error_rows is (mode == "PERMISSIVE")
        narrowed, left = _pushdown.push_into(spec, config, fs)
        assert left == kept and narrowed.listed and narrowed.bounds.offsets == (5, None)
