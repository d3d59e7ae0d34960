"""The walks of a batch's records into columns, outside strict reads and without a key bound,
against the record scanner's read of the same bytes (``kafkarec._core.record_walks(False)``: every
record the scanner's): the same rows, the same error (class, position, reason) and the same place
where framing stopped, on v2 records built field by field and then damaged.  The walks are

- into the classic layout (field_walk.h: a whole row, or the columns analysts select, ``offset,
  timestamp, key, value``: a LogScan's, Spark's and pyarrow's default), and
- into views (view_walk.h: DuckDB's ``[key, value]``, Polars' four columns, a whole row; long keys
  and values copied out of a memory map, or viewed in bytes read into memory),

each with the headers appended when the read wants them (header_walk.h).  A walk reads a record's
lengths without bounds and hands any record it does not accept, whose bytes do not fit the room
reserved, or with a header key that is not ASCII, to the scanner; so a rule it skipped, a field,
view or header written wrong (inline up to 12 bytes, copied or pointing past it, null) or a byte
read past the record would show as a row or an error the scanner's read does not give."""
from __future__ import annotations

import mmap
from contextlib import contextmanager

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import DecodeError
from support.oracles.damaged_records import ATTR_GZIP, BASE_TS, batch_of, damaged_batches, raw_record
from support.oracles.reference import encode_record, varint

#: DuckDB's whole rows, Polars' four columns, a key or a value alone (the other left empty), a whole
#: row, and the headers beside some of the others
PROJECTIONS = (["key", "value"], ["offset", "timestamp", "key", "value"], ["key"], ["value", "offset"],
               None, ["offset", "key", "headers"], ["headers", "timestamp"])


@contextmanager
def scanner_only():
    """Every record of a full read by the record scanner, within the block."""
    previous = kafkarec._core.record_walks(False)
    try:
        yield
    finally:
        kafkarec._core.record_walks(previous)


def in_map(data: bytes):
    """``data`` in an anonymous memory map: the view layout copies its long keys and values (the
    walk's input), or itself when empty (nothing maps 0 bytes)."""
    if not data:
        return data
    mm = mmap.mmap(-1, len(data))
    mm.write(data)
    return mm


def rows(chunks) -> list:
    """Every chunk's columns as Python values, key and value as bytes."""
    out = []
    for rb in chunks:
        rb.validate(full=True)
        out.append({name: (col.cast(pa.binary()) if col.type == pa.binary_view() else col).to_pylist()
                    for name, col in zip(rb.schema.names, rb.columns)})
    return out


def read(source, columns, value_layout: str, **options):
    """A read's rows, or what it raises as (class, position, reason, decompressed position)."""
    try:
        return ("rows", rows(kafkarec.iter_arrow(source, columns=columns, value_layout=value_layout,
                                                 max_rows=5, **options)))
    except DecodeError as exc:
        return ("error", type(exc).__name__, exc.position, exc.reason,
                getattr(exc, "decompressed_position", None))


def skipped(source, columns, value_layout: str, **options):
    """Rows, the error sink and where framing stopped, with ``errors="skip"``."""
    sink = []
    it = kafkarec.iter_arrow(source, columns=columns, value_layout=value_layout, errors="skip",
                             error_sink=sink, max_rows=7, **options)
    return rows(it), sink, it.position, it.stop_reason, it.trailing_bytes


def assert_same(data: bytes, **options) -> tuple:
    """Each projection in both layouts, over a map (a view's long bytes copied) and over the bytes
    (viewed where they are), walked as the scanner reads it."""
    mapped = in_map(data)
    for columns in PROJECTIONS:
        for layout in ("copy", "view"):
            for source in (mapped, data):
                with scanner_only():
                    scanned = read(source, columns, layout, **options)
                    scanned_skipping = skipped(source, columns, layout, **options)
                assert read(source, columns, layout, **options) == scanned, (columns, layout, type(source))
                assert skipped(source, columns, layout, **options) == scanned_skipping, (columns, layout,
                                                                                        type(source))
    return read(data, None, "copy", **options)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_batches(max_records=20), st.booleans())
def test_walk_equals_the_scanners_read(data, verify_crc):
    outcome = assert_same(data, verify_crc=verify_crc)
    event(outcome[0] if outcome[0] == "rows" else f"raises {outcome[1]}")


# ------------------------------------------------------------------ one case of each rule, named

PAD = [encode_record(d, d, b"k" * d, b"v" * 40) for d in range(1, 4)]      # records after the case's


CASES = {
    # accepted by a lenient read: any negative length is null
    "negative key length": raw_record(b"\x00\x02\x00" + varint(-5) + varint(1) + b"v" + varint(0)),
    "negative value length": raw_record(b"\x00\x02\x00" + varint(1) + b"k" + varint(-9) + varint(0)),
    "five-byte size": b"\x8c\x80\x80\x80\x00" + encode_record(0, 1, b"k", b"v")[1:],
    "two-byte key length": encode_record(0, 1, b"k" * 100, b"v"),
    "three-byte value length": encode_record(0, 1, b"k", b"v" * 9000),
    "headers skipped": encode_record(0, 1, b"k" * 20, b"v" * 20, [("h", b"x"), ("", None)]),
    # refused
    "key past the record": raw_record(b"\x00\x02\x00" + varint(9) + b"k" + varint(-1) + varint(0)),
    "value past the record": raw_record(b"\x00\x02\x00" + varint(-1) + varint(30) + b"v" + varint(0)),
    "size past the batch": varint(2000) + encode_record(0, 1, b"k", b"v")[1:],
    "negative size": varint(-3) + encode_record(0, 1, b"k", b"v")[1:],
    "negative header count": raw_record(b"\x00\x02\x00" + varint(-1) + varint(-1) + varint(-2)),
    "header count past the record": raw_record(b"\x00\x02\x00" + varint(-1) + varint(-1) + varint(50)),
    "fields short of the size": raw_record(b"\x00\x02\x00" + varint(-1) + varint(-1) + varint(0) + b"xx"),
    "varint too long": raw_record(b"\x00\x02\xff\xff\xff\xff\xff\x01" + varint(-1) + varint(0)),
}


@pytest.mark.parametrize("codec", [0, ATTR_GZIP])
@pytest.mark.parametrize("where", ["first", "alone"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_record_rule(case, where, codec):
    # first: the case walked (records after it, so it ends well before the section's end); alone:
    # the batch's last record, the scanner's
    section = CASES[case] + (b"".join(PAD) if where == "first" else b"")
    count = 1 + (len(PAD) if where == "first" else 0)
    assert_same(batch_of(section, count=count, last_delta=count - 1, codec=codec), verify_crc=False)


@pytest.mark.parametrize("length", [0, 1, 3, 4, 5, 8, 11, 12, 13, 16, 31, 32, 33, 255, 256, 257, 300])
def test_every_view_shape_of_a_key_and_a_value(length):
    # inline (up to 12 bytes, zero padded), copied in 32-byte blocks, or by memcpy past 256; a
    # header's key and value of the same length (a key ASCII or not: the walk leaves a key that is
    # not to the scanner)
    records = [encode_record(d, d, bytes((d + i) % 256 for i in range(length)), bytes([255 - d]) * length,
                             [(bytes((97 + d + i) % 256 for i in range(length)), b"h" * length)] * (d % 3))
               for d in range(6)]
    data = batch_of(b"".join(records), count=6, last_delta=5)
    outcome = assert_same(data)
    assert outcome[0] == "rows"


def test_log_append_time_and_wrapping_offsets():
    # LogAppendTime: every record has the batch's max timestamp; offsets wrap as Java's long does
    from support.oracles.reference import v2_batch
    section = b"".join(encode_record(d, -d, None, b"v" * 20) for d in range(4))
    data = batch_of(section, count=4, last_delta=3, log_append=True) + v2_batch(
        section, record_count=4, last_offset_delta=3, base_offset=2**63 - 2, base_timestamp=5,
        max_timestamp=5)
    got = read(in_map(data), ["offset", "timestamp", "value"], "view", timestamp_unit="ms")
    assert got == read(data, ["offset", "timestamp", "value"], "view", timestamp_unit="ms")
    assert got[0] == "rows"
    offsets = [o for chunk in got[1] for o in chunk["offset"]]
    timestamps = [int(t.timestamp() * 1000) for chunk in got[1] for t in chunk["timestamp"]]
    assert offsets == [100, 101, 102, 103, 2**63 - 2, 2**63 - 1, -2**63, -2**63 + 1]
    assert timestamps == [BASE_TS + 77] * 4 + [5, 4, 3, 2]
    assert_same(data)


def test_many_batches_grow_the_room_between_records():
    # the first batch of a chunk finds no room for its bytes (a view's copies, the classic
    # column's, the headers'): the walk stops, the GIL's path grows the room, the walk resumes; the
    # rows are the scanner's whatever the chunk
    data = b"".join(batch_of(b"".join(encode_record(d, d, b"key-%05d-%d" % (b, d), b"x" * (50 + 7 * d),
                                                    [("h%d" % i, b"y" * (d + i)) for i in range(d % 4)])
                                      for d in range(30)), count=30, last_delta=29, base_offset=b * 30)
                    for b in range(40))
    mapped = in_map(data)
    for max_rows in (1, 29, 31, 1000):
        for columns in (None, ["key", "value"]):
            for layout in ("copy", "view"):
                for source in (mapped, data):
                    with scanner_only():
                        scanned = rows(kafkarec.iter_arrow(source, columns=columns, value_layout=layout,
                                                           max_rows=max_rows))
                    walked = rows(kafkarec.iter_arrow(source, columns=columns, value_layout=layout,
                                                      max_rows=max_rows))
                    assert walked == scanned, (columns, layout, max_rows)
                    assert sum(len(chunk["key"]) for chunk in walked) == 1200


def test_the_walks_are_on_by_default_and_switched_process_wide():
    assert kafkarec._core.record_walks() is True
    with scanner_only():
        assert kafkarec._core.record_walks() is False
    assert kafkarec._core.record_walks() is True
