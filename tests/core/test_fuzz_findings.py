"""Regression tests for what the coverage-guided fuzzing campaign found (issue 12,
item 4): every reproducer is a whole input, and each must give a clear
kafkarec error or a result that decodes again - never a raw OverflowError, a
silent wrap, a write that kafkarec itself then refuses, or a silent loss."""
from __future__ import annotations

import pytest

import kafkarec
from kafkarec import Compression, EncodeError, KafkaRecError

from support.oracles import reference as R

OVERFLOW = bytes.fromhex(
    "400000000000000000000041729dbf8a010100000000000003e8ffffffff0000002b1f8b0800000000000203"
    "73608003f1aed497b98c500ef38bff400064302632105602004afbfce246000000")
NEGATIVE_BASE_V2 = bytes.fromhex(
    "fffffffffffffff600000055ffffffff02d653566600010000000100000000000000010000000000000002ff"
    "ffffffffffffffffffffffffff000000021f8b0800000000000003e363606060644a64e063606262644a6200"
    "00697da4ff10000000")
CONTROL_WITH_HEADERS = bytes.fromhex(
    "000000000000b04d000000590000000702f0ada1b2002200a20c1e0922103508763135018108800b2009121436"
    "107631362d010414003200ff0000000182534e4150505900000000010000000100000014124422000000086f6e"
    "6c79066f6e650202680276")
EMPTY_GZIP_STRICT = bytes.fromhex(
    "000000000000000000000045ffffffff0263ed8b4800010000000000000000000003e800000000000003e8ff"
    "ffffffffffffffffffffffffff000000001f8b080000000000020303000000000000000000")


@pytest.mark.parametrize("read", [
    lambda d: [b.base_offset for b in kafkarec.iter_batches(d)],
    lambda d: [r for b in kafkarec.iter_batches(d) for r in b],
    lambda d: kafkarec.to_arrow(d),
    lambda d: kafkarec.convert(d, 2),
    lambda d: kafkarec.scan_records(next(iter(kafkarec.iter_batches(d)))),
], ids=["base_offset", "records", "to_arrow", "convert", "scan_records"])
def test_legacy_offset_overflow_is_a_decode_error(read):
    with pytest.raises(kafkarec.InvalidRecordError, match="does not fit a 64-bit offset") as info:
        read(OVERFLOW)
    assert info.value.position == 0


def test_legacy_offset_overflow_is_skipped_whole_by_iter_arrow():
    sink = []
    tables = list(kafkarec.iter_arrow(OVERFLOW, errors="skip", error_sink=sink))
    assert sum(t.num_rows for t in tables) == 0
    assert [e["error"] for e in sink] == ["InvalidRecordError"] and sink[0]["position"] == 0


def test_wrapper_offset_minus_negative_inner_offset_does_not_wrap():
    inner = kafkarec.LegacyBatchBuilder(magic=1)
    inner.append(b"v", timestamp=1, offset=0)
    entry = bytearray(inner.build())
    entry[0:8] = (-2**63).to_bytes(8, "big", signed=True)            # the inner offset
    import gzip
    wrapper = kafkarec.LegacyBatchBuilder(magic=1, compression=Compression.GZIP)
    wrapper.append(b"x", timestamp=1, offset=0)
    data = bytearray(wrapper.build())
    # Rebuild the wrapper's value around our inner message, then fix its CRC.
    value = gzip.compress(bytes(entry), mtime=0)
    msg = R.patch_legacy(data, offset=1, key=None, value=value)
    with pytest.raises(kafkarec.InvalidRecordError, match="64-bit offset"):
        list(next(iter(kafkarec.iter_batches(msg))))


def test_builders_refuse_what_they_could_not_read_back():
    with pytest.raises(EncodeError, match="cannot start at offset -10"):
        kafkarec.LegacyBatchBuilder(magic=1, compression=Compression.GZIP, base_offset=-10)
    with pytest.raises(EncodeError):
        kafkarec.convert(NEGATIVE_BASE_V2, 1)
    # magic 0 wrappers carry absolute inner offsets: negative ones read back
    ok = kafkarec.convert(NEGATIVE_BASE_V2, 0)
    assert [r.offset for b in kafkarec.iter_batches(ok.data) for r in b] == [-10, -9]


def test_restamp_refuses_an_offset_below_the_inner_offsets_and_writes_nothing():
    b = kafkarec.LegacyBatchBuilder(magic=1, compression=Compression.GZIP)
    for off in range(0, 5001, 1000):
        b.append(b"v", timestamp=1, offset=off)
    original = b.build()
    buf = bytearray(original)
    with pytest.raises(EncodeError, match="below its inner"):
        kafkarec.restamp(buf, 0, base_offset=1000)
    assert buf == original
    kafkarec.restamp(buf, 0, base_offset=9000)
    assert [r.offset for bt in kafkarec.iter_batches(bytes(buf)) for r in bt] == list(range(4000, 9001, 1000))


def test_convert_keeps_control_record_headers():
    (batch,) = kafkarec.iter_batches(CONTROL_WITH_HEADERS)
    before = [(r.offset, r.key, r.value, r.headers) for r in batch]
    assert before and before[0][3]
    result = kafkarec.convert(CONTROL_WITH_HEADERS, 2)
    assert result.lost["headers"] == 0
    after = [(r.offset, r.key, r.value, r.headers) for b in kafkarec.iter_batches(result.data) for r in b]
    assert after == before


def test_strict_empty_compressed_batch_as_empty_uncompressed():
    """strict: a records section that is empty once decompressed is accepted, as an empty
    uncompressed one is; bytes left in it are refused whether compressed or not."""
    (batch,) = kafkarec.iter_batches(EMPTY_GZIP_STRICT, strict=True)
    assert batch.records() == []
    stray = bytearray(EMPTY_GZIP_STRICT)
    stray[22] = 0                                   # codec none: the gzip bytes become records bytes
    stray = R.with_v2_crc(stray)
    (batch,) = kafkarec.iter_batches(stray, strict=True)
    with pytest.raises(KafkaRecError, match="declares 0 records but holds 20 bytes"):
        batch.records()
