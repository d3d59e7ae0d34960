"""ReadOptions (one options object for every layer) and the iterators' report of where and
why framing stopped, which the log layer and Spark ask instead of framing bytes again."""
from __future__ import annotations

import gzip
import pickle

import pytest

import kafkarec
from support.oracles.foreign import legacy_message
from kafkarec import ReadOptions


def _batch(base_offset: int, n: int = 3) -> bytes:
    b = kafkarec.RecordBatchBuilder(base_offset=base_offset)
    for i in range(n):
        b.append(b"v%d" % i, key=b"k", timestamp=1_700_000_000_000 + i)
    return b.build()


# --- ReadOptions -------------------------------------------------------------------------

def test_defaults_and_fields():
    o = ReadOptions()
    assert (o.verify_crc, o.strict, o.max_decompressed_bytes, o.file_rules) == (
        True, False, kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES, False)


def test_replace_pickle_equality_hash():
    o = ReadOptions(strict=True, max_decompressed_bytes=1 << 20)
    p = o.replace(verify_crc=False)
    assert (p.verify_crc, p.strict, p.max_decompressed_bytes) == (False, True, 1 << 20)
    assert o.verify_crc is True                      # immutable: replace made a copy
    assert pickle.loads(pickle.dumps(p)) == p        # Spark ships options to executors
    assert hash(pickle.loads(pickle.dumps(p))) == hash(p)
    assert p != o
    with pytest.raises(TypeError, match="no field max_bytes"):
        o.replace(max_bytes=1)
    with pytest.raises(AttributeError):
        o.strict = False


@pytest.mark.parametrize("bad", [-1, None, 1.5, "64m", True])
def test_max_decompressed_bytes_is_a_non_negative_int(bad):
    with pytest.raises(ValueError, match="max_decompressed_bytes must be a non-negative int"):
        ReadOptions(max_decompressed_bytes=bad)


def test_zero_budget_is_a_real_budget_everywhere():
    # One meaning: 0 allows only empty payloads (it is not "the default").
    b = kafkarec.RecordBatchBuilder(compression=kafkarec.Compression.GZIP)
    b.append(b"x" * 100, timestamp=1)
    data = b.build()
    with pytest.raises(kafkarec.DecompressionLimitError):
        list(next(kafkarec.iter_batches(data, ReadOptions(max_decompressed_bytes=0))))
    with pytest.raises(kafkarec.DecompressionLimitError):
        kafkarec.to_arrow(data, max_decompressed_bytes=0)


def test_keywords_on_top_of_options_mean_the_same():
    data = bytearray(_batch(0))
    data[17] ^= 0xFF                                  # the stored CRC no longer matches
    opts = ReadOptions(verify_crc=False)
    assert len(list(next(kafkarec.iter_batches(bytes(data), opts)))) == 3
    assert len(list(next(kafkarec.iter_batches(bytes(data), verify_crc=False)))) == 3
    with pytest.raises(kafkarec.ChecksumError):       # a keyword overrides the object's field
        list(next(kafkarec.iter_batches(bytes(data), opts, verify_crc=True)))
    it = kafkarec.iter_batches(bytes(data), opts, strict=True)
    assert it.options == ReadOptions(verify_crc=False, strict=True)
    assert next(it).options == it.options
    with pytest.raises(TypeError, match="ReadOptions"):
        kafkarec.iter_batches(bytes(data), {"verify_crc": False})


def test_arrow_takes_the_same_options():
    data = _batch(5) + _batch(8)
    t1 = kafkarec.to_arrow(data, ReadOptions(strict=True))
    t2 = kafkarec.to_arrow(data, strict=True)
    assert t1.equals(t2) and t1.num_rows == 6


# --- where framing stopped ---------------------------------------------------------------

def test_stop_reason_end():
    data = _batch(0) + _batch(3)
    it = kafkarec.iter_batches(data)
    assert it.stop_reason is None
    assert len(list(it)) == 2
    assert (it.stop_reason, it.position, it.trailing_bytes, it.stop_error) == ("end", len(data), 0, None)


def test_stop_reason_truncated_reports_the_size_still_needed():
    a, b = _batch(0), _batch(3)
    it = kafkarec.iter_batches(a + b[:40])
    assert len(list(it)) == 1
    assert (it.stop_reason, it.position, it.trailing_bytes) == ("truncated", len(a), 40)
    assert it.next_batch_size == len(b)               # the size field was there
    it = kafkarec.iter_batches(a + b[:10])
    list(it)
    assert (it.stop_reason, it.next_batch_size) == ("truncated", 0)   # not even the size field


def test_stop_reason_error_and_resume_after_a_bad_header():
    a, c = _batch(0), _batch(10)
    bad = bytearray(_batch(3))
    bad[16] = 0xFF                                   # magic -1: the frame is known, the header is not
    data = a + bytes(bad) + c
    it = kafkarec.iter_batches(data, ReadOptions(file_rules=True, verify_crc=False))
    assert next(it).base_offset == 0
    with pytest.raises(kafkarec.CorruptBatchError, match="Invalid magic") as info:
        next(it)
    assert it.stop_reason == "error" and it.stop_error is info.value and it.resumable
    assert info.value.position == len(a)
    it.resume()
    assert [b.base_offset for b in it] == [10]
    assert it.stop_reason == "end"


def test_framing_error_is_not_resumable():
    data = bytearray(_batch(0))
    data[8:12] = (5).to_bytes(4, "big")              # size below 14: nothing after can be framed
    it = kafkarec.iter_batches(bytes(data), file_rules=True)
    with pytest.raises(kafkarec.CorruptBatchError, match="smaller than minimum record overhead"):
        next(it)
    assert it.stop_reason == "error" and not it.resumable
    with pytest.raises(ValueError, match="nothing to resume"):
        it.resume()


def test_iter_arrow_reports_where_framing_stopped_in_skip_mode():
    a = _batch(0)
    junk = bytearray(_batch(3))
    junk[8:12] = (1).to_bytes(4, "big")
    sink: list = []
    chunks = kafkarec.iter_arrow(a + bytes(junk), errors="skip", error_sink=sink)
    rows = sum(rb.num_rows for rb in chunks)
    assert rows == 3
    assert chunks.stop_reason == "error" and chunks.position == len(a)
    assert sink[0]["position"] == len(a) and chunks.stop_error.position == len(a)
    chunks = kafkarec.iter_arrow(a + _batch(3)[:30])
    assert sum(rb.num_rows for rb in chunks) == 3
    assert (chunks.stop_reason, chunks.trailing_bytes) == ("truncated", 30)


# --- plausibility (resynchronising after a corrupt region) --------------------------------

def test_is_plausible_batch():
    a, b = _batch(0), _batch(3)
    data = a + b
    assert kafkarec._core.is_plausible_batch(data, 0)
    assert kafkarec._core.is_plausible_batch(data, len(a))
    assert not kafkarec._core.is_plausible_batch(data, 1)
    bad_crc = bytearray(data)
    bad_crc[-1] ^= 1
    assert not kafkarec._core.is_plausible_batch(bytes(bad_crc), len(a))
    unused_bits = bytearray(a)
    unused_bits[21] |= 0x80                          # attributes bit 15: strict refuses it
    assert not kafkarec._core.is_plausible_batch(bytes(unused_bits), 0)
    assert not kafkarec._core.is_plausible_batch(a[:-1], 0)     # does not fit


# --- a legacy message's own CRC ------------------------------------------------------------

def test_legacy_inner_record_crc_valid():
    good = legacy_message(1, 0, key=None, value=b"a", timestamp=5)
    bad = legacy_message(1, 1, key=None, value=b"b", timestamp=6, crc=12345)
    inner = gzip.compress(good + bad)
    wrapper = legacy_message(1, 1, key=None, value=inner, attributes=1, timestamp=6)
    (batch,) = kafkarec.iter_batches(wrapper, verify_crc=False)
    assert [r.crc_valid for r in batch] == [True, False]
    with pytest.raises(kafkarec.ChecksumError):
        list(next(kafkarec.iter_batches(wrapper)))
    (plain,) = kafkarec.iter_batches(good)
    assert [r.crc_valid for r in plain] == [True]
    (v2,) = kafkarec.iter_batches(_batch(0))
    assert {r.crc_valid for r in v2} == {None}
