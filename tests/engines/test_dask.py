"""kafkarec.engines.dask: a Dask DataFrame over the one Arrow stream reader (issue 82, item 1), on Dask's
threaded scheduler and on a real ``distributed.LocalCluster`` of two worker processes (the session's
``dask_cluster``, tests/support/servers/dask_cluster.py).

The rows are LogScan's (several partitions, every codec, a transaction with an aborted part, both
isolation levels); dask-expr pushes a projection into the read (only those columns decoded);
``read_parquet``-form filters become the scan's bounds where they are exactly bounds, and Dask
applies the rest, so the rows are those of filtering the full read; a 1% slice by offset and by time
reads at most 2% of the partition's segment bytes, counted in the workers; PERMISSIVE gives the
reader's error rows, FAILFAST its error.
"""
import datetime

import pytest

from kafkarec.scan import Bounds, LogScan
from support.logs.engine_logs import T0, rows, segment_bytes_read
from support.logs.worker_bytes import segment_bytes_read_by_workers

pytestmark = pytest.mark.slow

SCHEDULERS = ["threads", "cluster"]


@pytest.fixture(params=SCHEDULERS)
def compute(request):
    """``compute(frame)``: the pandas result, on the threaded scheduler or the session's cluster."""
    if request.param == "threads":
        return lambda frame: frame.compute(scheduler="threads")
    client = request.getfixturevalue("dask_cluster").client
    return lambda frame: frame.compute(scheduler=client)


def _arrow(frame):
    import pyarrow as pa
    return pa.Table.from_pandas(frame, preserve_index=False)


def _with_errors(table):
    """A PERMISSIVE read's rows, sorted (error rows have no offset)."""
    got = table.to_pylist()
    return sorted(got, key=lambda r: (r["topic"], r["partition"], r["offset"] is not None, r["offset"] or 0,
                                      r["_corrupt_record"] or ""))


def _at(ms) -> datetime.datetime:
    """A time as the column holds it: naive, its timestamp[ms]."""
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)


def _read_columns(frame):
    """The columns the optimized graph's read decodes (the projection dask-expr pushed into it)."""
    from dask.dataframe.dask_expr.io import FromMapProjectable
    reads = list(frame.optimize(fuse=False).expr.find_operations(FromMapProjectable))
    assert len(reads) == 1
    return sorted(reads[0].columns)


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_rows_equal_logscan(compute, log_root, isolation):
    """Every row and column, one Dask partition per piece of work."""
    from kafkarec.engines.dask import read_log
    scan = LogScan(log_root, isolation_level=isolation)
    want = scan.to_table()
    frame = read_log(log_root, isolation_level=isolation)
    assert frame.npartitions == len(scan.pieces()) > 4
    assert len({p.partition for p in scan.pieces()}) > 1
    got = _arrow(compute(frame))
    assert got.schema == want.schema
    assert rows(got) == rows(want)
    if isolation == "read_committed":      # the aborted part of the transaction is left out
        assert got.num_rows < LogScan(log_root).to_table().num_rows


def test_meta_is_the_schema_without_reading(log_root, monkeypatch):
    """The frame's meta is made from the Arrow schema: building the graph decodes no record."""
    import pyarrow as pa
    from kafkarec.engines.dask import read_log
    monkeypatch.setattr(LogScan, "read_piece", lambda *a: pytest.fail("a record read at graph-build time"))
    frame = read_log(log_root, columns=["offset", "timestamp", "key"], filters=[("value", "is not", None)])
    meta = frame._meta
    assert list(meta.columns) == ["offset", "timestamp", "key"] and len(meta) == 0
    assert pa.Schema.from_pandas(meta, preserve_index=False) == LogScan(log_root, columns=["offset", "timestamp",
                                                                                           "key"]).schema
    assert frame.divisions == (None,) * (frame.npartitions + 1)


def test_projection_decodes_only_the_columns_read(log_root, monkeypatch):
    """dask-expr pushes the columns a query reads into the read (the function's ``columns=``): the
    other columns are not decoded."""
    from kafkarec.engines.dask import read_log
    frame = read_log(log_root)
    assert _read_columns(frame[["offset", "key"]]) == ["key", "offset"]
    assert _read_columns(frame["partition"]) == ["partition"]
    assert _read_columns(frame[frame["value"].notnull()][["offset"]]) == ["offset", "value"]
    decoded = []
    read_piece = LogScan.read_piece

    def spy(scan, piece):
        decoded.append(tuple(scan.decoded_columns() or scan.schema.names))
        return read_piece(scan, piece)
    monkeypatch.setattr(LogScan, "read_piece", spy)
    total = frame["offset"].sum().compute(scheduler="threads")
    assert total == sum(LogScan(log_root, columns=["offset"]).to_table().column("offset").to_pylist())
    assert set(decoded) == {("offset",)}
    decoded.clear()
    # Dask 2026.8 pushes no projection under len() (its Len passes through projections to the IO node,
    # which counts whole partitions): counting a column's values is the cheap count
    assert frame["offset"].count().compute(scheduler="threads") == LogScan(log_root).to_table().num_rows
    assert set(decoded) == {("offset",)}


def test_filter_bounds():
    """What becomes the scan's bounds, and what Dask still applies."""
    from kafkarec.engines.dask import filter_bounds
    at = datetime.datetime(2026, 1, 1, 0, 0, 0, 1500)
    bounds, rest = filter_bounds([("offset", ">=", 10), ("offset", "<", 20), ("partition", "=", 3),
                                  ("topic", "in", ["a", "b"]), ("timestamp", "<", at)])
    assert bounds == Bounds.of(topics=["a", "b"], partitions=[3], offsets=(10, 20), timestamps=(None, 1767225600002))
    assert rest == []
    bounds, rest = filter_bounds([("offset", ">", 5), ("value", "!=", b"x")])
    assert (bounds, rest) == (Bounds.of(offsets=(6, None)), [[("value", "!=", b"x")]])
    assert filter_bounds([[("partition", "==", 1)], [("partition", "==", 2)]]) == (Bounds.of(partitions=[1, 2]), [])
    either = [[("offset", "<", 3)], [("offset", ">", 9)]]           # OR of ranges: Dask's alone
    assert filter_bounds(either) == (Bounds(), either)
    # offsets in a list bound their hull; Dask keeps the term
    assert filter_bounds([("offset", "in", [3, 7])]) == (Bounds.of(offsets=(3, 8)), [[("offset", "in", [3, 7])]])
    aware = at.replace(tzinfo=datetime.timezone.utc)
    assert filter_bounds([("timestamp", ">=", aware)])[0] == Bounds()
    import numpy as np
    import pandas as pd
    ns = pd.Timestamp("2026-01-01 00:00:00.001000001")            # a nanosecond past 1 ms: >= 2 ms
    assert filter_bounds([("timestamp", ">=", ns), ("offset", "<", np.int64(4))])[0] == \
        Bounds.of(timestamps=(1767225600002, None), offsets=(None, 4))


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_filters_give_the_rows_of_filtering_the_full_read(log_root, isolation):
    """Pushed terms, terms no bounds say (applied by Dask) and ORs, against filtering the full read."""
    import pyarrow as pa
    from kafkarec.engines.dask import read_log
    full = LogScan(log_root, isolation_level=isolation).to_table()
    offsets, ts = full.column("offset").to_pylist(), full.column("timestamp").cast(pa.int64()).to_pylist()
    topics, parts = full.column("topic").to_pylist(), full.column("partition").to_pylist()
    values = full.column("value").to_pylist()
    cases = [
        ([("offset", ">=", 3), ("offset", "<=", 40), ("topic", "in", ["web-clicks", "payments"])],
         lambda i: 3 <= offsets[i] <= 40 and topics[i] in ("web-clicks", "payments")),
        ([[("partition", "==", 1)], [("partition", "==", 2)]], lambda i: parts[i] in (1, 2)),
        ([("timestamp", ">", _at(T0 + 5.5))], lambda i: ts[i] > T0 + 5),
        ([[("offset", "<", 4)], [("offset", ">", 30)]], lambda i: offsets[i] < 4 or offsets[i] > 30),
        ([("offset", "!=", 7), ("value", "is not", None), ("offset", ">=", 2)],
         lambda i: offsets[i] != 7 and values[i] is not None and offsets[i] >= 2),
        ([("offset", "in", [0, 5, 9]), ("partition", "not in", [0])], lambda i: offsets[i] in (0, 5, 9) and parts[i] != 0),
    ]
    for filters, keep in cases:
        want = sorted((topics[i], parts[i], offsets[i]) for i in range(full.num_rows) if keep(i))
        got = read_log(log_root, columns=["offset", "partition", "topic"], filters=filters,
                       isolation_level=isolation).compute(scheduler="threads")
        assert list(got.columns) == ["offset", "partition", "topic"]
        assert sorted(zip(got["topic"], got["partition"], got["offset"])) == want, filters
    assert len(read_log(log_root, filters=[("offset", ">", (1 << 63) - 1)]).compute(scheduler="threads")) == 0


def test_filters_on_the_cluster(dask_cluster, log_root):
    """A pushed filter and one Dask applies, computed in the workers."""
    from kafkarec.engines.dask import read_log
    full = LogScan(log_root, columns=["offset", "value"]).to_table().to_pydict()
    want = sorted(o for o, v in zip(full["offset"], full["value"]) if 2 <= o < 30 and v is not None)
    got = read_log(log_root, columns=["offset"], filters=[("offset", ">=", 2), ("offset", "<", 30),
                                                          ("value", "is not", None)])
    assert sorted(got.compute(scheduler=dask_cluster.client)["offset"]) == want


@pytest.mark.parametrize("by", ["offset", "time"])
def test_one_percent_slice_reads_at_most_two_percent(dask_cluster, long_log, by):
    """The bytes the workers read, counted through the storage layer in each worker process; and the
    same read on the threaded scheduler, counted in this process."""
    from kafkarec.engines.dask import read_log
    root, folder = long_log
    if by == "offset":
        filters = [("offset", ">=", 9_000), ("offset", "<", 9_200)]
    else:
        filters = [("timestamp", ">=", _at(T0 + 19_800))]
    frame = read_log(root, columns=["offset"], filters=filters)
    got, read, total = segment_bytes_read_by_workers(
        dask_cluster.counts, folder, lambda: frame.compute(scheduler=dask_cluster.client))
    assert len(got) == 200
    assert 0 < read <= 0.02 * total, (read, total)
    got, read, total = segment_bytes_read(folder, lambda: frame.compute(scheduler="threads"))
    assert len(got) == 200
    assert 0 < read <= 0.02 * total, (read, total)


def test_a_damaged_segment(compute, damaged):
    """FAILFAST: the reader's exception, its own type, file, byte and reason, out of Dask (the
    workers' too); PERMISSIVE: the reader's error rows in ``_corrupt_record``, and a filter on the
    offset, which error rows do not have, applied by Dask."""
    from kafkarec.engines.dask import read_log
    from kafkarec.scan import CORRUPT_COLUMN
    root, error = damaged
    with pytest.raises(type(error)) as got:
        compute(read_log(root))
    assert str(error) in str(got.value)
    want = LogScan(root, mode="PERMISSIVE").to_table()
    frame = read_log(root, mode="PERMISSIVE")
    got = _arrow(compute(frame))
    assert _with_errors(got) == _with_errors(want)
    errors = sorted(e for e in want.column(CORRUPT_COLUMN).to_pylist() if e)
    assert errors and sorted(e for e in got.column(CORRUPT_COLUMN).to_pylist() if e) == errors
    bounded = compute(read_log(root, mode="PERMISSIVE", filters=[("offset", ">=", 0)]))
    assert bounded[CORRUPT_COLUMN].isna().all()
    assert len(bounded) == sum(1 for o in want.column("offset").to_pylist() if o is not None)


def test_a_partition_is_one_task_of_ours(log_root):
    """A read adds one task a partition, the read's own, and no step after it: Dask 2026.8's
    ``compute()`` does not fuse a partition's steps (dask/distributed#8833), so each step would be a
    round trip to the scheduler (Dask's string conversion, which ``from_map`` adds, is left out: the
    columns are Arrow already).  Counted in the graph ``compute()`` sends, unfused, with and without
    a projection; and the strings come back as they were read."""
    import pyarrow as pa
    from kafkarec.engines.dask import read_log
    for columns in (None, ["topic", "offset"]):
        frame = read_log(log_root, columns=columns)
        graph = frame.optimize(fuse=False).__dask_graph__()
        assert len(graph) == frame.npartitions > 1
        assert {key[0].rsplit("-", 1)[0] for key in graph} == {"read-kafka-log"}
        got = frame.compute(scheduler="threads")
        assert got.dtypes["topic"].pyarrow_dtype == pa.string()
        assert sorted(got["topic"].unique()) == sorted(LogScan(log_root).to_table().column("topic").unique().to_pylist())


def test_nothing_to_read_is_an_empty_frame_of_the_schema(log_root):
    from kafkarec.engines.dask import read_log
    frame = read_log(log_root, topics=["no-such-topic"], columns=["offset", "key"])
    got = frame.compute(scheduler="threads")
    assert list(got.columns) == ["offset", "key"] and len(got) == 0
    assert str(got.dtypes["offset"]) == "int64[pyarrow]"


def test_usage_errors(log_root):
    from kafkarec.engines.dask import read_log
    from kafkarec.errors import UsageError
    with pytest.raises(UsageError, match="not read"):
        read_log(log_root, columns=["nope"])
    with pytest.raises(UsageError, match="operator"):
        read_log(log_root, filters=[("offset", "~", 1)])
    with pytest.raises(UsageError, match="filter on 'nope'"):
        read_log(log_root, filters=[("nope", "==", 1)])
