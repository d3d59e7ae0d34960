"""A v2 record's body is taken whole by the checked read and its fields are read inside it; a record
whose fields do not fit its declared size is still reported as Kafka's DefaultRecord.readFrom reports
it (its reader reads on into the rest of the batch, then compares what it read with the size), at the
same byte, by the record iterator and by the Arrow path alike."""
from __future__ import annotations

import struct

import pytest

import kafkarec
from kafkarec import InvalidRecordError

RECORDS_AT = 61         # the v2 batch header's size: the first record starts there


def _zigzag(n: int) -> bytes:
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _body(key: bytes, value: bytes) -> bytes:
    # attributes, timestamp delta, offset delta, key, value, no headers
    return (b"\x00" + _zigzag(0) + _zigzag(0) + _zigzag(len(key)) + key + _zigzag(len(value)) + value
            + _zigzag(0))


def _batch(records: bytes, count: int) -> bytes:
    header = bytearray(kafkarec.build_batch([b"x"])[:RECORDS_AT])
    struct.pack_into(">i", header, 8, RECORDS_AT + len(records) - 12)     # batch length
    struct.pack_into(">i", header, 23, count - 1)                          # last offset delta
    struct.pack_into(">i", header, 57, count)                              # record count
    return bytes(header) + records


def _errors(data: bytes) -> list:
    """(position, reason) as the record iterator and as to_arrow report them."""
    out = []
    with pytest.raises(InvalidRecordError) as err:
        for batch in kafkarec.iter_batches(data, verify_crc=False):
            list(batch)
    out.append((err.value.position, err.value.reason))
    with pytest.raises(InvalidRecordError) as err:
        kafkarec.to_arrow(data, verify_crc=False)
    out.append((err.value.position, err.value.reason))
    return out


def test_fields_past_the_declared_size_are_a_size_mismatch():
    body = _body(b"kkkk", b"vvvv")      # 14 bytes, declared as 12: the value runs 2 bytes past
    second = _body(b"k", b"v")
    data = _batch(_zigzag(12) + body + _zigzag(len(second)) + second, 2)
    assert _errors(data) == [(RECORDS_AT, "Invalid record size: expected to read 12 bytes in record "
                                          "payload, but instead read 14")] * 2


def test_a_negative_size_reads_the_fields_and_mismatches():
    body = _body(b"k", b"v")
    data = _batch(_zigzag(-3) + body, 1)
    assert _errors(data) == [(RECORDS_AT, "Invalid record size: expected to read -3 bytes in record "
                                          "payload, but instead read %d" % len(body))] * 2


def test_a_size_past_the_batch():
    body = _body(b"k", b"v")
    data = _batch(_zigzag(100) + body, 1)
    assert _errors(data) == [(RECORDS_AT, "Invalid record size: expected 100 bytes in record payload, "
                                          "but instead the buffer has only %d remaining bytes." % len(body))] * 2


def test_a_key_past_the_record_and_the_batch_names_the_batch_bytes_left():
    # declared size 5, key length 50: the key needs more than the record and the batch hold
    records = _zigzag(5) + b"\x00" + _zigzag(0) + _zigzag(0) + _zigzag(50) + b"k" * 10
    data = _batch(records, 1)
    key_at = RECORDS_AT + 1 + 4         # the size varint, then attributes, two deltas, key length
    assert _errors(data) == [(key_at, "record key needs 50 bytes but only 10 remain in the batch")] * 2
