"""The meta-only walker (``iter_arrow(columns=["offset", "timestamp"])``, issue 52) against the full
read of the same bytes by the record scanner: the same offsets and timestamps, the same error (class, position, reason)
and the same place where framing stopped, on v2 records built field by field and then damaged.

The walker reads a record's lengths and deltas only and hands any record it does not accept to the
record scanner; these tests make records of every shape the scanner accepts or refuses (negative
lengths, headers, lengths running past the record or the batch, leftovers, miscounted batches),
uncompressed and gzip-compressed, lenient and strict, so that a rule the walker skipped would show
as a row or an error the full read does not give."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import DecodeError
from support.oracles.damaged_records import ATTR_GZIP, BASE_TS, batch_of, damaged_batches, raw_record
from support.oracles.reference import encode_record, patch_v2, v2_batch, varint

META = ["offset", "timestamp"]


def raised(data: bytes, columns, **options):
    """What a read raises, as (class, position, reason, decompressed position), or its rows."""
    try:
        t = kafkarec.to_arrow(data, **options) if columns is None else pa_table(data, columns, **options)
    except DecodeError as exc:
        return ("error", type(exc).__name__, exc.position, exc.reason,
                getattr(exc, "decompressed_position", None))
    return ("rows", t.column("offset").to_pylist(), t.column("timestamp").cast("int64").to_pylist())


def pa_table(data, columns, **options):
    import pyarrow as pa
    chunks = list(kafkarec.iter_arrow(data, columns=columns, **options))
    return pa.Table.from_batches(chunks)


def skipped(data: bytes, columns, **options):
    """Rows, the error sink and where framing stopped, with ``errors="skip"``."""
    sink, offsets, timestamps = [], [], []
    it = kafkarec.iter_arrow(data, columns=columns, errors="skip", error_sink=sink, max_rows=7,
                             **options)
    for rb in it:
        offsets += rb.column("offset").to_pylist()
        timestamps += rb.column("timestamp").cast("int64").to_pylist()
    return offsets, timestamps, sink, it.position, it.stop_reason, it.trailing_bytes


def assert_same(data: bytes, **options) -> tuple:
    # the full read's every record by the scanner (the walks into columns, which read as the
    # scanner does, test_record_walks.py, switched off)
    previous = kafkarec._core.record_walks(False)
    try:
        full, full_skipping = raised(data, None, **options), skipped(data, None, **options)
    finally:
        kafkarec._core.record_walks(previous)
    assert raised(data, META, **options) == full
    assert skipped(data, META, **options) == full_skipping
    return full


# ------------------------------------------------------------------ records as the scanner sees them

@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_batches(), st.booleans(), st.booleans())
def test_walker_equals_the_full_read(data, strict, verify_crc):
    outcome = assert_same(data, strict=strict, verify_crc=verify_crc)
    event(outcome[0] if outcome[0] == "rows" else f"raises {outcome[1]}")


# ------------------------------------------------------------------ one case of each rule, named

def one_record_batch(record: bytes, *, count: int = 1, tail: bytes = b"", codec: int = 0) -> bytes:
    return batch_of(record + tail, count=count, last_delta=0, codec=codec)


CASES = {
    # accepted by a lenient read: any negative length is null, a header value of -5 too
    "negative key length": raw_record(b"\x00\x02\x00" + varint(-5) + varint(1) + b"v" + varint(0)),
    "negative header value length": raw_record(b"\x00\x02\x00" + varint(-1) + varint(-1) + varint(1)
                                               + varint(1) + b"h" + varint(-5)),
    "five-byte size": b"\x8c\x80\x80\x80\x00" + encode_record(0, 1, b"k", b"v")[1:],
    # refused
    "key past the record": raw_record(b"\x00\x02\x00" + varint(9) + b"k" + varint(-1) + varint(0)),
    "size past the batch": varint(200) + encode_record(0, 1, b"k", b"v")[1:],
    "negative size": varint(-3) + encode_record(0, 1, b"k", b"v")[1:],
    "negative header count": raw_record(b"\x00\x02\x00" + varint(-1) + varint(-1) + varint(-2)),
    "header count past the record": raw_record(b"\x00\x02\x00" + varint(-1) + varint(-1) + varint(50)),
    "negative header key length": raw_record(b"\x00\x02\x00" + varint(-1) + varint(-1) + varint(1)
                                             + varint(-1) + varint(-1)),
    "fields short of the size": raw_record(b"\x00\x02\x00" + varint(-1) + varint(-1) + varint(0) + b"xx"),
    "varint too long": raw_record(b"\x00\x02\xff\xff\xff\xff\xff\x01" + varint(-1) + varint(0)),
    "no bytes": b"",
}


@pytest.mark.parametrize("codec", [0, ATTR_GZIP])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_record_rule(case, strict, codec):
    assert_same(one_record_batch(CASES[case], codec=codec), strict=strict, verify_crc=False)


@pytest.mark.parametrize("codec", [0, ATTR_GZIP])
@pytest.mark.parametrize("count, tail", [(2, b""), (1, b"\x00"), (1, encode_record(1, 1, b"k", b"v"))])
def test_miscounted_batches(count, tail, codec):
    # more declared records than there are; bytes left after the last declared one
    outcome = assert_same(one_record_batch(encode_record(0, 1, b"k", b"v"), count=count, tail=tail,
                                           codec=codec), verify_crc=False)
    assert outcome[0] == "error"


def test_damage_after_good_records_keeps_the_rows_before_it_out():
    # A batch is all or nothing: the walker's records before the bad one are not committed.
    good = b"".join(encode_record(d, d, b"k%d" % d, b"v" * 20, [("h", b"x")]) for d in range(5))
    bad = raw_record(b"\x00\x02\x00" + varint(9) + b"k" + varint(-1) + varint(0))
    data = (batch_of(good, count=5, last_delta=4, base_offset=0)
            + batch_of(good + bad, count=6, last_delta=5, base_offset=5)
            + batch_of(good, count=5, last_delta=4, base_offset=11))
    offsets, _, sink, _, _, _ = skipped(data, META, verify_crc=False)
    assert offsets == [0, 1, 2, 3, 4, 11, 12, 13, 14, 15]
    assert [e["error"] for e in sink] == ["InvalidRecordError"]
    assert_same(data, verify_crc=False)


def test_log_append_time_and_wrapping_offsets():
    # LogAppendTime: every record has the batch's max timestamp; offsets wrap as Java's long does.
    section = b"".join(encode_record(d, -d, None, b"v") for d in range(3))
    data = batch_of(section, count=3, last_delta=2, log_append=True) + v2_batch(
        section, record_count=3, last_offset_delta=2, base_offset=2**63 - 2, base_timestamp=5,
        max_timestamp=5)
    outcome = assert_same(data)
    assert outcome == ("rows", [100, 101, 102, 2**63 - 2, 2**63 - 1, -2**63],
                       [BASE_TS + 77] * 3 + [5, 4, 3])


def test_strict_rules_stay_the_scanners():
    # attributes set, an offset delta out of order, a header key that is not UTF-8: refused in strict
    # reads (the walker leaves strict reads to the scanner), accepted in lenient ones
    for record in (encode_record(0, 0, b"k", b"v", attributes=1),
                   encode_record(0, 0, b"k", b"v", [(b"\xff", b"x")])):
        data = patch_v2(one_record_batch(record), last_offset_delta=0)
        assert assert_same(data, strict=True)[0] == "error"
        assert assert_same(data, strict=False)[0] == "rows"
    out_of_order = batch_of(encode_record(1, 0, b"k", b"v") + encode_record(0, 0, b"k", b"v"), count=2,
                            last_delta=1)
    assert assert_same(out_of_order, strict=True)[0] == "error"
    assert assert_same(out_of_order, strict=False) == ("rows", [101, 100], [BASE_TS, BASE_TS])


def test_an_empty_projection_keeps_the_row_count():
    """``columns=[]`` asks for the rows alone (a count): each chunk has no column and as many rows
    as the whole read's (a lean chunk built from its projection's arrays alone would have none)."""
    data = kafkarec.build_batch([b"a", b"b", b"c"]) + kafkarec.build_batch([b"d"], base_offset=3)
    counted = [rb.num_rows for rb in kafkarec.iter_arrow(data, columns=[])]
    assert sum(counted) == 4 == sum(rb.num_rows for rb in kafkarec.iter_arrow(data))
    assert all(rb.num_columns == 0 for rb in kafkarec.iter_arrow(data, columns=[]))
