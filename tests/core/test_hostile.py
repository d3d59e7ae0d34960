"""Every truncation and every single-byte change of valid input gives records
or a DecodeError: never a crash, a hang, another exception type, or an
allocation past the budget."""
import struct

import pytest
from hypothesis import given, settings, strategies as st

import kafkarec
from kafkarec import KafkaRecError

from kafka.record.memory_records import MemoryRecordsBuilder


def kafka_python_batch(magic, codec, n=4, headers=True):
    b = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(n):
        b.append(timestamp=1_700_000_000_000 + i if magic else None,
                 key=None if i % 2 else b"k%d" % i, value=b"value-%d" % i * (i + 1),
                 headers=[("h", b"x"), ("n", None)] if magic == 2 and headers else [])
    b.close()
    return bytes(b.buffer())


SAMPLES = {
    f"m{magic}-c{codec}": kafka_python_batch(magic, codec)
    for magic in (0, 1, 2) for codec in (0, 1, 2, 3, 4)
    if not (magic < 2 and codec == 4)
}


def decode_all(data, **kw):
    """Decode everything; return a summary so a decode is checked, not only run."""
    out = []
    it = kafkarec.iter_batches(data, max_decompressed_bytes=1 << 20, **kw)
    for batch in it:
        fields = (batch.base_offset, batch.last_offset, batch.record_count, batch.magic,
                  batch.compression if (batch.attributes & 7) < 5 else None)
        recs = []
        for r in batch:
            assert r.key is None or isinstance(r.key, bytes)
            assert r.value is None or isinstance(r.value, bytes)
            hs = r.headers
            assert all(isinstance(k, str) and (v is None or isinstance(v, bytes)) for k, v in hs)
            recs.append((r.offset, r.timestamp, r.key, r.value, tuple(hs)))
        out.append((fields, recs))
    assert 0 <= it.trailing_bytes <= len(data)
    return out


def assert_records_or_decode_error(data, **kw):
    try:
        decode_all(data, **kw)
    except KafkaRecError as exc:
        assert isinstance(exc, kafkarec.DecodeError) or isinstance(exc, kafkarec.CodecUnavailableError)
        assert 0 <= exc.position <= len(data), exc
        assert "at byte" in str(exc)


def consumer_rows(data, verify_crc=True, strict=False):
    """Records as a consumer with check.crcs reads them: each batch's CRC first."""
    rows = []
    for batch in kafkarec.iter_batches(data, verify_crc=verify_crc, strict=strict,
                                       max_decompressed_bytes=1 << 20):
        if verify_crc:
            batch.ensure_valid()
        rows += [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]
    return rows


def assert_arrow_agrees(data, **kw):
    """to_arrow (its own decode loop) gives the record reader's rows, or the
    same error at the same byte."""
    try:
        want = consumer_rows(data, **kw)
        err = None
    except KafkaRecError as exc:
        want, err = None, exc
    for batch_columns in (False, True):
        try:
            table = kafkarec.to_arrow(data, include_control=True, batch_columns=batch_columns,
                                      max_decompressed_bytes=1 << 20, **kw)
        except KafkaRecError as exc:
            assert err is not None, f"to_arrow raised {exc!r}; the record reader did not"
            assert (type(exc), exc.position) == (type(err), err.position), (exc, err)
            continue
        assert err is None, f"the record reader raised {err!r}; to_arrow did not"
        table.validate(full=True)
        timestamps = table.column("timestamp").cast("int64").to_pylist()
        rows = table.drop_columns(["timestamp"]).to_pylist()   # any int64 is a valid timestamp
        got = [(row["offset"], ts, row["key"], row["value"],
                tuple((h["key"], h["value"]) for h in row["headers"] or ()))
               for row, ts in zip(rows, timestamps)]
        assert got == want


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_decode(name):
    data = SAMPLES[name]
    (batch_summaries) = decode_all(data)
    assert sum(len(recs) for _, recs in batch_summaries) == 4


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_truncation(name):
    data = SAMPLES[name]
    full = decode_all(data)
    for cut in range(len(data)):
        part = data[:cut]
        # A cut batch is a trailing partial batch: fewer batches, never an error.
        got = decode_all(part)
        assert got == full[:len(got)]
        assert_arrow_agrees(part)
        if _cut_mid_batch(data, cut):
            with pytest.raises(kafkarec.TruncatedError):
                list(kafkarec.iter_batches(part, strict=True))
        else:
            list(kafkarec.iter_batches(part, strict=True))


def _cut_mid_batch(data, cut):
    pos = 0
    while pos < cut:
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        if pos + size > cut:
            return True
        pos += size
    return False


@pytest.mark.parametrize("verify_crc", [True, False])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_single_byte_change(name, verify_crc):
    data = SAMPLES[name]
    for pos in range(len(data)):
        for new in {data[pos] ^ 0x01, data[pos] ^ 0x80, 0x00, 0xFF}:
            if new == data[pos]:
                continue
            mutated = data[:pos] + bytes([new]) + data[pos + 1:]
            assert_records_or_decode_error(mutated, verify_crc=verify_crc)
            assert_records_or_decode_error(mutated, verify_crc=verify_crc, strict=True)
            assert_arrow_agrees(mutated, verify_crc=verify_crc)
            assert_arrow_agrees(mutated, verify_crc=verify_crc, strict=True)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(SAMPLES)), st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)),
                                                   min_size=1, max_size=8))
def test_random_multi_byte_changes(name, edits):
    data = bytearray(SAMPLES[name])
    for pos, val in edits:
        data[pos % len(data)] = val
    assert_records_or_decode_error(bytes(data), verify_crc=False)
    assert_arrow_agrees(bytes(data), verify_crc=False)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data):
    assert_records_or_decode_error(data, verify_crc=False)
    assert_records_or_decode_error(data, verify_crc=False, strict=True)
    assert_arrow_agrees(data, verify_crc=False)


LOG = SAMPLES["m2-c0"] + SAMPLES["m2-c1"] + SAMPLES["m1-c0"] + SAMPLES["m2-c0"] + SAMPLES["m2-c3"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=6),
       st.booleans())
def test_random_changes_to_a_log_decode_the_same_into_arrow(edits, verify_crc):
    data = bytearray(LOG)
    for pos, val in edits:
        data[pos % len(data)] = val
    data = bytes(data)
    assert_arrow_agrees(data, verify_crc=verify_crc)
    # errors="skip" never raises, and what it keeps plus what it reports
    # accounts for every batch it reached.
    sink = []
    chunks = list(kafkarec.iter_arrow(data, errors="skip", error_sink=sink, include_control=True,
                                      verify_crc=verify_crc, max_decompressed_bytes=1 << 20))
    for chunk in chunks:
        chunk.validate(full=True)
    assert all(0 <= e["position"] <= len(data) for e in sink)
