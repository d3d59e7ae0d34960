"""The v2 core on bytes written out by hand, and its error behaviour."""
import struct

import pytest

import kafkarec
from kafkarec import (ChecksumError, Compression, CorruptBatchError, DecodeError,
                      InvalidRecordError, TimestampType, TruncatedError)

from support.oracles import reference as R
from support.oracles.reference import encode_record as record


def v2_batch(records: bytes, count: int, *, last_offset_delta=None, base_timestamp=1714000000000,
             max_timestamp=None, **fields) -> bytes:
    """The reference encoder's v2 batch with this file's defaults: the last offset delta
    is count - 1, the max timestamp the base timestamp; the CRC is computed unless given."""
    return R.v2_batch(records, record_count=count,
                      last_offset_delta=max(count - 1, 0) if last_offset_delta is None else last_offset_delta,
                      base_timestamp=base_timestamp,
                      max_timestamp=base_timestamp if max_timestamp is None else max_timestamp, **fields)


# The seeds' two-record example (002, "Complete Byte-Level Layout").  The seed
# gets two lengths wrong: each record's length varint is listed as 0x0C (6),
# but the body after it is 11 bytes (0x16); and the batch length is listed as
# 74, but 61 + 12 + 12 = 85 bytes make 73.  Everything else is as listed;
# the CRC (shown as XX there) is computed.
HELLO_RECORDS = bytes.fromhex("16000000010a68656c6c6f00" "16000002010a776f726c6400")


def hello_world() -> bytes:
    return v2_batch(HELLO_RECORDS, 2, base_timestamp=0x0000018D00000000)


def test_hello_world_from_the_seeds():
    data = hello_world()
    assert len(data) == 85 and data[8:12] == b"\x00\x00\x00\x49"
    it = kafkarec.iter_batches(data)
    (batch,) = list(it)
    assert it.trailing_bytes == 0
    assert (batch.base_offset, batch.batch_length, batch.partition_leader_epoch, batch.magic) == (0, 73, -1, 2)
    assert batch.crc == R.crc32c(data[21:]) and batch.crc_valid
    assert (batch.attributes, batch.last_offset_delta, batch.record_count) == (0, 1, 2)
    assert batch.base_timestamp == batch.max_timestamp == 0x18D00000000
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert (batch.last_offset, batch.next_offset, batch.last_sequence) == (1, 2, -1)
    assert batch.compression is Compression.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control
    assert batch.delete_horizon_ms is None
    assert (batch.position, batch.size_in_bytes) == (0, 85)
    recs = list(batch)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers, r.sequence) for r in recs] == [
        (0, 0x18D00000000, None, b"hello", [], -1),
        (1, 0x18D00000000, None, b"world", [], -1),
    ]
    assert all(r.control_type is None and r.timestamp_type is TimestampType.CREATE_TIME for r in recs)


def test_any_buffer_type_and_no_copy():
    data = hello_world() * 2
    for buf in (data, bytearray(data), memoryview(data)):
        assert [b.position for b in kafkarec.iter_batches(buf)] == [0, 85]
    ba = bytearray(data)
    batches = list(kafkarec.iter_batches(ba))
    with pytest.raises(BufferError):
        ba.append(0)  # the batches hold a view of the caller's buffer: it is not copied
    del batches
    with pytest.raises(TypeError):
        list(kafkarec.iter_batches("text"))


def test_fields_values_and_headers():
    recs = (record(0, -5, key=b"", value=None, headers=[(b"k", None), (b"k", b"v"), ("é".encode(), b"")])
            + record(300, 7, key=b"key", value=b"v" * 200))
    data = v2_batch(recs, 2, base_offset=1000, last_offset_delta=300, base_timestamp=50)
    (batch,) = kafkarec.iter_batches(data)
    r1, r2 = batch
    assert (r1.offset, r1.timestamp, r1.key, r1.value) == (1000, 45, b"", None)
    assert r1.headers == [("k", None), ("k", b"v"), ("é", b"")]
    assert (r2.offset, r2.timestamp, r2.key, r2.value, r2.headers) == (1300, 57, b"key", b"v" * 200, [])
    assert batch.last_offset == 1300


def test_log_append_time_takes_max_timestamp():
    data = v2_batch(record(0, 3, value=b"a") + record(1, 9, value=b"b"), 2, attributes=0x08,
                    base_timestamp=10, max_timestamp=777)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [(r.timestamp, r.timestamp_type) for r in batch] == [(777, TimestampType.LOG_APPEND_TIME)] * 2


def test_sequences_wrap_and_producer_fields():
    data = v2_batch(record(0, value=b"a") + record(3, value=b"b"), 2, last_offset_delta=3,
                    producer_id=42, producer_epoch=7, base_sequence=2147483646, attributes=0x10)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.is_transactional and (batch.producer_id, batch.producer_epoch) == (42, 7)
    assert batch.last_sequence == 1
    assert [r.sequence for r in batch] == [2147483646, 1]


def test_delete_horizon():
    data = v2_batch(record(0, value=None), 1, attributes=0x40, base_timestamp=999)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.delete_horizon_ms == 999


def test_control_batch_markers():
    marker = record(0, key=struct.pack(">hh", 0, 1), value=struct.pack(">hi", 0, 17))
    data = v2_batch(marker, 1, attributes=0x30, producer_id=5, producer_epoch=1)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.is_control and batch.is_transactional
    (r,) = batch
    assert r.control_type is kafkarec.ControlRecordType.COMMIT
    assert (r.control_type_id, r.control_key_version, r.coordinator_epoch) == (1, 0, 17)
    unknown = record(0, key=struct.pack(">hhxx", 3, 99), value=b"")
    (r,) = next(iter(kafkarec.iter_batches(v2_batch(unknown, 1, attributes=0x20))))
    assert r.control_type is kafkarec.ControlRecordType.UNKNOWN and r.coordinator_epoch is None
    short = record(0, key=b"\x00\x00\x01", value=b"")
    (r,) = next(iter(kafkarec.iter_batches(v2_batch(short, 1, attributes=0x20))))
    with pytest.raises(InvalidRecordError, match="at least 4 bytes"):
        r.control_type


def test_empty_batch_left_by_compaction():
    data = v2_batch(b"", 0, last_offset_delta=9, base_offset=100, base_timestamp=-1,
                    producer_id=3, producer_epoch=0, base_sequence=10)
    (batch,) = kafkarec.iter_batches(data)
    assert list(batch) == []
    assert (batch.next_offset, batch.last_sequence) == (110, 19)


def test_crc_mismatch_raises_before_any_record():
    data = bytearray(hello_world())
    data[-3] ^= 0x01
    (batch,) = kafkarec.iter_batches(bytes(data))
    assert not batch.crc_valid
    with pytest.raises(ChecksumError) as err:
        next(iter(batch))
    assert err.value.position == 0 and err.value.expected == batch.crc
    assert err.value.actual == R.crc32c(bytes(data[21:]))
    assert "at byte 0" in str(err.value)
    (batch,) = kafkarec.iter_batches(bytes(data), verify_crc=False)
    assert len(list(batch)) == 2


def test_partial_trailing_batch_is_reported_not_silent():
    data = hello_world() + hello_world()[:50]
    it = kafkarec.iter_batches(data)
    assert len(list(it)) == 1
    assert it.trailing_bytes == 50 and it.position == 85
    with pytest.raises(TruncatedError) as err:
        list(kafkarec.iter_batches(data, strict=True))
    assert err.value.position == 85


@pytest.mark.parametrize("size", [0, 13, -1, -2147483648])
def test_size_below_minimum_overhead(size):
    data = bytearray(hello_world())
    data[8:12] = struct.pack(">i", size)
    with pytest.raises(CorruptBatchError, match="minimum record overhead"):
        list(kafkarec.iter_batches(bytes(data)))


@pytest.mark.parametrize("magic", [3, 127, -1])
def test_invalid_magic(magic):
    data = bytearray(hello_world())
    data[16] = magic & 0xFF
    with pytest.raises(CorruptBatchError, match="Invalid magic"):
        list(kafkarec.iter_batches(bytes(data)))


def test_count_mismatch_both_ways():
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        list(next(iter(kafkarec.iter_batches(v2_batch(HELLO_RECORDS, 3)))))
    with pytest.raises(InvalidRecordError, match="records still remaining"):
        list(next(iter(kafkarec.iter_batches(v2_batch(HELLO_RECORDS, 1)))))
    with pytest.raises(InvalidRecordError, match="invalid record count -1"):
        list(next(iter(kafkarec.iter_batches(v2_batch(HELLO_RECORDS, -1)))))


def test_count_zero_with_bytes_java_lenient_strict_rejects():
    data = v2_batch(HELLO_RECORDS, 0)
    assert list(next(iter(kafkarec.iter_batches(data)))) == []
    with pytest.raises(InvalidRecordError):
        list(next(iter(kafkarec.iter_batches(data, strict=True))))


def test_negative_lengths_other_than_minus_one():
    data = v2_batch(record(0, key=None, value=None).replace(b"\x01\x01\x00", b"\x03\x01\x00"), 1)
    (r,) = next(iter(kafkarec.iter_batches(data)))
    assert r.key is None  # Kafka reads any negative length as null
    with pytest.raises(InvalidRecordError, match="other than -1"):
        list(next(iter(kafkarec.iter_batches(data, strict=True))))


def test_record_attributes_read_as_one_byte():
    # aiokafka and kafka-python read this byte as a varint; Kafka reads one raw byte.
    data = v2_batch(record(0, value=b"x", attributes=0x80), 1)
    (r,) = next(iter(kafkarec.iter_batches(data)))
    assert (r.value, r.attributes) == (b"x", -128)
    with pytest.raises(InvalidRecordError, match="unused record attributes"):
        list(next(iter(kafkarec.iter_batches(data, strict=True))))


def test_header_count_larger_than_remaining():
    body = b"\x00\x00\x00\x01\x02v" + R.varint(1000)
    data = v2_batch(R.sized_record(body), 1)
    with pytest.raises(InvalidRecordError, match="larger than the remaining size"):
        list(next(iter(kafkarec.iter_batches(data))))


def test_invalid_utf8_header_key_replaced_or_rejected():
    data = v2_batch(record(0, value=b"v", headers=[(b"\xff", b"x")]), 1)
    (r,) = next(iter(kafkarec.iter_batches(data)))
    assert r.headers == [("\ufffd", b"x")]
    with pytest.raises(InvalidRecordError, match="UTF-8"):
        list(next(iter(kafkarec.iter_batches(data, strict=True))))


def test_varint_too_long():
    body = b"\x00" + b"\xff" * 10 + b"\x01"
    data = v2_batch(R.sized_record(body), 1)
    with pytest.raises(InvalidRecordError, match="too long"):
        list(next(iter(kafkarec.iter_batches(data))))


def test_error_positions_point_into_the_buffer():
    good = hello_world()
    bad = v2_batch(HELLO_RECORDS, 3)
    data = good + bad
    batches = list(kafkarec.iter_batches(data))
    with pytest.raises(DecodeError) as err:
        list(batches[1])
    assert err.value.position == 85 + 61 + 24  # the missing third record
    assert isinstance(err.value, ValueError)


def test_unknown_codec():
    data = v2_batch(HELLO_RECORDS, 2, attributes=0x07)
    (batch,) = kafkarec.iter_batches(data)
    with pytest.raises(kafkarec.UnsupportedCodecError, match="Unknown compression type id: 7"):
        list(batch)
    with pytest.raises(kafkarec.UnsupportedCodecError):
        list(kafkarec.iter_batches(data, strict=True))


def test_errors_pickle():
    import pickle
    err = ChecksumError("bad", 12, expected=1, actual=2)
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), back.position, back.expected, back.actual, str(back)) == (
        ChecksumError, 12, 1, 2, str(err))
