"""``LogScan.batches_in`` with DuckDB's microseconds (issue 80): the core writes the unit as it
decodes, and the batches, and a timestamp the unit cannot hold, are what the old path gave, which
decoded milliseconds and cast each batch with pyarrow (``ArrowInvalid``, after the rows before it),
decoded in the consumer's thread or on the pool, lean or whole rows; and DuckDB itself refuses such a
log with pyarrow's message."""
from __future__ import annotations

import pyarrow as pa
import pytest

import kafkarec
from kafkarec.log import local
from kafkarec.scan import LogScan
from support.logs.logdir import PartitionWriter
from support.oracles.reference import patch_v2

EDGE_MS = (2**63 - 1) // 1000       # the largest millisecond pyarrow's cast takes to microseconds
T0 = 1_700_000_000_000


def batch(timestamps) -> bytes:
    """A batch of these timestamps (any int64: built around a positive base, its header set)."""
    n = len(timestamps)
    raw = kafkarec.build_batch([b"v" * 30] * n, [b"k%d" % i for i in range(n)],
                               [T0 + t - timestamps[0] for t in timestamps])
    return patch_v2(raw, base_timestamp=timestamps[0], max_timestamp=max(timestamps))


def write(root, *, bad_at=None):
    """One partition of 200 batches of 10 records over several segments (edges of the range in it),
    with a batch of EDGE_MS + 1 at ``bad_at``."""
    w = PartitionWriter(str(root), "events", 0, segment_bytes=40_000)
    for k in range(200):
        if k == bad_at:
            w.append(batch([EDGE_MS + 1] * 10))
        elif k == 50:
            w.append(batch([EDGE_MS - 9 + i for i in range(10)]))
        elif k == 60:
            w.append(batch([-EDGE_MS + i for i in range(10)]))
        elif k == 70:
            w.append(batch([-1, 0] * 5))
        else:
            w.append(batch([T0 + 10 * k + i for i in range(10)]))
    w.close()
    return str(root)


def old_path(scan: LogScan, schema):
    """What batches_in gave before the core wrote the unit: the read in ms, each batch cast."""
    out = []
    try:
        for rb in scan:
            i = rb.schema.get_field_index("timestamp")
            out.append(rb.set_column(i, schema.field("timestamp"), rb.column(i).cast(schema.field("timestamp").type)))
    except pa.ArrowInvalid as exc:
        return out, str(exc)
    return out, None


def new_path(scan: LogScan, schema):
    out = []
    try:
        for rb in scan.batches_in(schema):
            out.append(rb)
    except pa.ArrowInvalid as exc:
        return out, str(exc)
    return out, None


def in_us(scan: LogScan):
    return pa.schema([f.with_type(pa.timestamp("us")) if f.name == "timestamp" else f for f in scan.schema])


@pytest.fixture(params=[None, 150], ids=["in-range", "out-of-range"])
def log(request, tmp_path):
    return write(tmp_path, bad_at=request.param), request.param


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("columns", [["offset", "timestamp"], ["offset", "timestamp", "key"], None])
def test_batches_in_microseconds_are_the_old_cast(log, threads, columns, monkeypatch):
    root, bad_at = log
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 16_384)      # many windows: the pool decodes them
    scan = LogScan(root, columns=columns, threads=threads)
    schema = in_us(scan)
    old, old_error = old_path(scan, schema)
    new, new_error = new_path(scan, schema)
    assert new_error == old_error
    if bad_at is None:
        assert old_error is None
    else:
        assert "would result in out of bounds timestamp: 9223372036854776" in old_error
    assert pa.Table.from_batches(new, schema=schema).equals(pa.Table.from_batches(old, schema=schema))
    assert sum(rb.num_rows for rb in new) == (2000 if bad_at is None else sum(rb.num_rows for rb in old))


def test_duckdb_refuses_a_timestamp_its_unit_cannot_hold_as_before(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    from kafkarec.engines.duckdb import register
    con = duckdb.connect()
    register(con, "good", write(tmp_path / "good"))
    assert con.sql('SELECT count(*), min(timestamp), max(timestamp) FROM good').fetchall()[0][0] == 2000
    register(con, "bad", write(tmp_path / "bad", bad_at=150))
    with pytest.raises(Exception, match="would result in out of bounds timestamp: 9223372036854776"):
        con.sql('SELECT sum("offset"), max(timestamp) FROM bad').fetchall()


def test_offsets_rise_is_the_offset_order_rules_test():
    """The core's test of a chunk's offsets (OffsetOrder.seen) against Python's, on Arrow arrays
    sliced anywhere (the values are read from the column's offset on), and a range past the buffer
    refused."""
    import random
    from kafkarec._core import offsets_rise
    rnd = random.Random(80)
    for _ in range(300):
        values = sorted(rnd.sample(range(-50, 10**6), rnd.randint(0, 40)))
        if values and rnd.random() < 0.5:
            i = rnd.randrange(len(values))
            values[i] = values[i - 1] if rnd.random() < 0.5 else values[i] - 3    # equal, or going back
        arr = pa.array(values, pa.int64())
        lo = rnd.randint(0, len(values))
        part = arr.slice(lo)
        want = all(b > a for a, b in zip(values[lo:], values[lo + 1:]))
        assert offsets_rise(part.buffers()[1], part.offset, len(part)) == want
    with pytest.raises(ValueError, match="offsets_rise"):
        offsets_rise(pa.array([1, 2], pa.int64()).buffers()[1], 1, 2)
    # a count whose byte size overflows: refused, not read past the buffer (the review's crash)
    for start, count in ((0, 2**61), (2**61, 2), (1, 2**62)):
        with pytest.raises(ValueError, match="offsets_rise"):
            offsets_rise(bytes(16), start, count)
