"""``iter_arrow(timestamp_unit=...)``: the core writes each batch's timestamps in an engine's unit
(DuckDB's microseconds) as its record loop finishes the batch, instead of an Arrow cast over every
chunk afterwards (issue 80).  The yardstick is the old path itself: the same bytes read in
milliseconds, each chunk cast by pyarrow's safe cast.  The rows, the chunk boundaries, the errors of
bad batches and the error of a timestamp the unit cannot hold (pyarrow's own ``ArrowInvalid``, from
the cast of a chunk the core leaves in milliseconds) must all be the same, on every record loop:
the meta-only walker and the full rows (batch by batch and in runs), legacy v0/v1 messages (no
timestamp: -1), LogAppendTime batches, compressed batches, key bounds and batch columns."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import LegacyBatchBuilder, RecordBatchBuilder, TimestampType
from support.oracles.reference import patch_v2

INT64_MAX = 2**63 - 1
INT64_MIN = -2**63
EDGE_MS = INT64_MAX // 1000                  # the largest millisecond pyarrow's cast takes to us
TS0 = 1_700_000_000_000
BUILT = 2**61                                # the base the builder is given (see v2)

# (columns, batch_columns, keys): each record loop of the core
READS = [
    (["offset", "timestamp"], False, None),                  # the meta-only walker (runs, batch by batch)
    (["offset", "timestamp", "timestampType"], False, None),
    (None, False, None),                                     # full rows
    (["offset", "timestamp", "key"], False, None),
    (None, True, None),                                      # the wide layout: batch by batch
    (["offset", "timestamp"], False, [b"k1", b"k3"]),        # a key bound: the scanner
    (None, False, [b"k1"]),
]


def v2(timestamps, *, base_offset, codec=0, log_append_time=None) -> bytes:
    """A v2 batch of these timestamps, any int64 (the builder takes no negative one: built around a
    positive base, then its header's base and max timestamps set, the CRC recomputed)."""
    kw = dict(compression=codec, base_offset=base_offset)
    if log_append_time is not None:
        kw.update(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=TS0)
    b = RecordBatchBuilder(**kw)
    for i, ts in enumerate(timestamps):
        b.append(b"v%d" % i, key=b"k%d" % (i % 4), timestamp=BUILT + (ts - timestamps[0]),
                 headers=[("h", b"x")] if i % 3 else [], offset=base_offset + i)
    return patch_v2(b.build(), base_timestamp=timestamps[0],
                    max_timestamp=max(timestamps) if log_append_time is None else log_append_time)


def legacy(magic, timestamps, *, base_offset, codec=0, log_append_time=None) -> bytes:
    kw = dict(magic=magic, compression=codec, base_offset=base_offset)
    if log_append_time is not None:
        kw.update(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=log_append_time)
    b = LegacyBatchBuilder(**kw)
    for i, ts in enumerate(timestamps):
        b.append(b"v%d" % i, key=b"k%d" % (i % 4), timestamp=ts if magic else None, offset=base_offset + i)
    return b.build()


def chunks(data: bytes, unit: str, *, columns, batch_columns, keys, **options):
    """The chunks of a read, or what it raised: (class name, message)."""
    sink: list = []
    try:
        out = list(kafkarec.iter_arrow(data, columns=columns, batch_columns=batch_columns, keys=keys,
                                       timestamp_unit=unit, errors="skip", error_sink=sink, **options))
    except Exception as exc:        # (a decode error: compared as it is)
        return type(exc).__name__, str(exc)
    return out, sink


def cast(column, unit: str):
    """pyarrow's safe cast of a column: the array, or what it raised (class name, message)."""
    try:
        return column.cast(pa.timestamp(unit))
    except pa.ArrowInvalid as exc:
        return type(exc).__name__, str(exc)


def assert_as_the_cast(data: bytes, unit: str, **read):
    """The read in ``unit`` gives what the read in milliseconds gives cast chunk by chunk: each
    chunk's rows, and where the cast refuses a chunk, that chunk in milliseconds, refused alike."""
    old, new = chunks(data, "ms", **read), chunks(data, unit, **read)
    if isinstance(old[0], str):
        assert new == old
        return
    (old_chunks, old_sink), (new_chunks, new_sink) = old, new
    assert new_sink == old_sink
    assert len(new_chunks) == len(old_chunks)
    for a, b in zip(old_chunks, new_chunks):
        i = a.schema.get_field_index("timestamp")
        if i < 0:
            assert b.equals(a)
            continue
        assert a.schema.field(i).type == pa.timestamp("ms")
        want = cast(a.column(i), unit)
        if isinstance(want, tuple):         # out of range: the chunk stays ms, the cast raises the same
            assert b.equals(a)
            assert cast(b.column(i), unit) == want
        else:
            assert b.schema.field(i).type == pa.timestamp(unit)
            assert b.equals(a.set_column(i, a.schema.field(i).with_type(pa.timestamp(unit)), want))


EDGE_NS_MS = INT64_MAX // 10**6             # the largest millisecond pyarrow's cast takes to ns
EXTREMES = [EDGE_MS, EDGE_MS + 1, -EDGE_MS, -EDGE_MS - 1, EDGE_NS_MS, EDGE_NS_MS + 1, -EDGE_NS_MS, -EDGE_NS_MS - 1,
            INT64_MAX, INT64_MIN, -1, 0, TS0]


def logs():
    """Named logs of every record loop's input, extremes placed in the middle of a chunk."""
    out = {}
    plain = [v2([TS0 + i for i in range(5)], base_offset=10 * j) for j in range(6)]
    out["plain"] = b"".join(plain)
    for k, edge in enumerate(EXTREMES):
        # the extreme in the third batch: its chunk's first batches were put in the unit already
        bad = v2([edge, edge], base_offset=20)
        out[f"v2-extreme-{k}"] = b"".join(plain[:2] + [bad] + plain[3:])
        out[f"log-append-{k}"] = b"".join(plain[:2] + [v2([TS0, TS0 + 1], base_offset=20, log_append_time=edge)]
                                          + plain[3:])
    out["gzip"] = b"".join(v2([TS0 - i, TS0 + i], base_offset=2 * j, codec=1) for j, i in enumerate(range(4)))
    out["gzip-extreme"] = out["gzip"] + v2([EDGE_MS + 5, EDGE_MS + 5], base_offset=8, codec=1) + \
        v2([TS0], base_offset=10, codec=1)
    out["v0"] = legacy(0, [None] * 4, base_offset=0) + legacy(0, [None] * 3, base_offset=4, codec=1)
    out["v1"] = legacy(1, [TS0, -1, EDGE_MS], base_offset=0) + legacy(1, [TS0, TS0], base_offset=3, codec=1)
    out["v1-extreme"] = legacy(1, [TS0, EDGE_MS + 1, TS0], base_offset=0) + v2([TS0], base_offset=3)
    out["v1-log-append"] = legacy(1, [TS0, TS0], base_offset=0, codec=1, log_append_time=EDGE_MS + 1)
    out["mixed"] = out["v0"] + legacy(1, [TS0], base_offset=7) + v2([TS0, -1, 0], base_offset=8)
    # a batch with an out-of-range timestamp and a bad CRC: left out (skip), its rows cut back
    bad_crc = bytearray(v2([EDGE_MS + 1], base_offset=20))
    bad_crc[-1] ^= 0xFF
    out["bad-crc-extreme"] = b"".join(plain[:2]) + bytes(bad_crc) + b"".join(plain[3:])
    return out


LOGS = logs()


@pytest.mark.parametrize("unit", ["us", "ns"])
@pytest.mark.parametrize("columns,batch_columns,keys", READS)
@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize("max_rows", [3, 7, 65536])
def test_the_unit_written_is_the_milliseconds_cast(name, columns, batch_columns, keys, unit, max_rows):
    assert_as_the_cast(LOGS[name], unit, columns=columns, batch_columns=batch_columns, keys=keys,
                       max_rows=max_rows)


@pytest.mark.parametrize("columns,batch_columns,keys", READS[:3])
def test_strict_and_failfast_reads_too(columns, batch_columns, keys):
    for name in ("plain", "v2-extreme-1", "log-append-3", "v1", "bad-crc-extreme"):
        data = LOGS[name]
        for options in (dict(strict=True), dict(verify_crc=False)):
            assert_as_the_cast(data, "us", columns=columns, batch_columns=batch_columns, keys=keys, **options)
        # errors="raise": the same error, or the same rows
        try:
            old = [rb.column("timestamp").cast(pa.timestamp("us"))
                   for rb in kafkarec.iter_arrow(data, columns=columns, batch_columns=batch_columns)]
        except Exception as exc:
            old = (type(exc).__name__, str(exc))
        try:
            new = [rb.column("timestamp").cast(pa.timestamp("us"))
                   for rb in kafkarec.iter_arrow(data, columns=columns, batch_columns=batch_columns,
                                                 timestamp_unit="us")]
        except Exception as exc:
            new = (type(exc).__name__, str(exc))
        assert new == old, name


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.one_of(st.integers(-EDGE_MS - 3, -EDGE_MS + 3), st.integers(EDGE_MS - 3, EDGE_MS + 3),
                                   st.integers(-2**40, 2**40)), min_size=1, max_size=6), min_size=1, max_size=8),
       st.sampled_from(range(len(READS))), st.integers(1, 12))
def test_any_timestamps(batches, read, max_rows):
    """Batches of any timestamps near either edge of the range (each batch's spread small enough for
    its deltas) in any chunking: the same as the cast."""
    spread_ok = [b for b in batches if max(b) - min(b) < 2**60]
    data = b"".join(v2(ts, base_offset=10 * j) for j, ts in enumerate(spread_ok))
    columns, batch_columns, keys = READS[read]
    assert_as_the_cast(data, "us", columns=columns, batch_columns=batch_columns, keys=keys, max_rows=max_rows)


def test_the_schema_and_a_unit_the_core_does_not_write():
    assert kafkarec.arrow_schema(timestamp_unit="us").field("timestamp").type == pa.timestamp("us")
    assert kafkarec.arrow_schema().field("timestamp").type == pa.timestamp("ms")
    with pytest.raises(ValueError, match="timestamp_unit"):
        kafkarec.iter_arrow(LOGS["plain"], timestamp_unit="s")
    with pytest.raises(ValueError, match="timestamp_unit"):
        kafkarec.arrow_schema(timestamp_unit="s")


@pytest.mark.parametrize("columns", [["offset", "timestamp"], None])
def test_a_timestamp_out_of_range_leaves_its_chunk_in_milliseconds_for_pyarrow_to_refuse(columns):
    """The batches before it in its chunk put back, the chunks after it in the unit again."""
    data = LOGS["v2-extreme-1"]         # batches of 5, 5, 2 (EDGE_MS + 1), 5, 5, 5 rows
    got = list(kafkarec.iter_arrow(data, columns=columns, timestamp_unit="us", max_rows=12))
    assert [rb.schema.field("timestamp").type.unit for rb in got] == ["ms", "us"]
    assert [rb.num_rows for rb in got] == [12, 15]
    first = got[0].column("timestamp").cast("int64").to_pylist()
    assert first == [TS0 + i for i in range(5)] * 2 + [EDGE_MS + 1] * 2
    with pytest.raises(pa.ArrowInvalid, match="would result in out of bounds timestamp: 9223372036854776"):
        got[0].column("timestamp").cast(pa.timestamp("us"))
    assert got[1].column("timestamp").cast("int64").to_pylist() == [(TS0 + i) * 1000 for i in range(5)] * 3
