"""Strict counterparts of the rules by which kafkarec, like Kafka's reader, lets
something the format forbids through (issue 12 item 2).

Each case is read by Kafka's own record classes (../shared/tools/kafka-java, one
JVM for all of them): Kafka accepts it, kafkarec's default mode reads the same
records, and ``strict=True`` rejects it with a DecodeError naming the rule.
What Kafka's own writer (and kafka-python's, aiokafka's) writes stays accepted
by ``strict=True``.
"""
from __future__ import annotations

import gzip
import struct

import cramjam
import lz4.frame
import pytest

import kafkarec
from support.oracles import foreign as F
from support.oracles import kafka_java as J

TS = 1_700_000_000_000
RECORDS = F.encode_record(0, 0, b"k", b"v") + F.encode_record(1, 0, b"k2", b"v2")


def _v2(codec: int, payload: bytes) -> bytes:
    return F.v2_batch(payload, record_count=2, last_offset_delta=1, attributes=codec,
                      base_timestamp=TS, max_timestamp=TS)


def _hc(descriptor: bytes) -> int:
    return kafkarec._core._lz4_header_checksum(descriptor)


def _lz4_frame(raw: bytes, *, content_size: int | None = None) -> bytes:
    """An LZ4 frame as Kafka reads it (independent blocks), optionally with a
    content-size field holding ``content_size``."""
    frame = bytearray(lz4.frame.compress(raw, store_size=content_size is not None,
                                         block_linked=False, content_checksum=False))
    if content_size is not None:
        assert frame[4] & 0x08
        struct.pack_into("<Q", frame, 6, content_size)
        frame[14] = _hc(bytes(frame[4:14]))
    return bytes(frame)


def _xerial(raw: bytes, version: int = 1, compatible: int = 1) -> bytes:
    block = bytes(cramjam.snappy.compress_raw(raw))
    return (b"\x82SNAPPY\x00" + struct.pack(">ii", version, compatible)
            + struct.pack(">i", len(block)) + block)


def _v0(offset: int, attributes: int = 0) -> bytes:
    return F.legacy_message(0, offset, key=b"k", value=b"v%d" % offset, attributes=attributes)


def _v1(offset: int, attributes: int = 0) -> bytes:
    return F.legacy_message(1, offset, key=b"k", value=b"v%d" % offset, attributes=attributes,
                            timestamp=TS)


def _wrapper(magic: int, inner: bytes, *, codec: int = F.GZIP, extra: int = 0,
             payload: bytes | None = None) -> bytes:
    if payload is None:
        payload = gzip.compress(inner)
    return F.legacy_message(magic, 1, key=None, value=payload, attributes=codec | extra,
                            timestamp=TS)


def _magic0_lz4(hc_kind: str) -> bytes:
    """A magic-0 LZ4 wrapper whose frame header checksum is the right one, Kafka's
    old one (KAFKA-3160: over the magic bytes too), or neither."""
    frame = bytearray(_lz4_frame(_v0(0) + _v0(1)))
    right, old = _hc(bytes(frame[4:6])), _hc(bytes(frame[0:6]))
    frame[6] = {"right": right, "kafka-3160": old,
                "neither": next(x for x in range(256) if x not in (right, old))}[hc_kind]
    return _wrapper(0, b"", codec=F.LZ4, payload=bytes(frame))


def _legacy_raw(magic: int, key_len: int, value: bytes) -> bytes:
    """A legacy message whose key length field says ``key_len`` (no key bytes follow)."""
    body = bytes([magic, 0]) + (struct.pack(">q", TS) if magic else b"")
    body += struct.pack(">i", key_len) + struct.pack(">i", len(value)) + value
    return F.legacy_frame(0, body)


def _uncompressed(record: bytes) -> bytes:
    return F.single_record_batch(record, timestamp=TS)


# name -> (input, what strict's error says)
CASES = {
    # the record-level rules
    "v2 key length -2": (_uncompressed(F.sized_record(
        b"\x00" + F.varlong(0) + F.varint(0) + F.varint(-2) + F.varint(1) + b"v" + F.varint(0))),
        "negative"),
    "v2 header value length -3": (_uncompressed(F.sized_record(
        b"\x00" + F.varlong(0) + F.varint(0) + F.varint(-1) + F.varint(1) + b"v" + F.varint(1)
        + F.varint(1) + b"h" + F.varint(-3))), "negative"),
    "magic 1 key length -5": (_legacy_raw(1, -5, b"v"), "negative key/value length"),
    "magic 0 key length -5": (_legacy_raw(0, -5, b"v"), "negative key/value length"),
    "v2 invalid UTF-8 header key": (_uncompressed(F.encode_record(0, 0, b"k", b"v",
                                                               headers=[(b"\xed\xa0\x80", b"x")])),
                                 "UTF-8"),
    "v2 unused batch attribute bit 7": (F.v2_batch(RECORDS, record_count=2, last_offset_delta=1,
                                                   attributes=0x80, base_timestamp=TS,
                                                   max_timestamp=TS), "unused attribute bits"),
    "v2 record attributes": (_uncompressed(F.encode_record(0, 0, b"k", b"v", attributes=0x01)),
                             "attributes"),
    # the codecs and legacy wrappers
    "lz4 content size too large": (_v2(F.LZ4, _lz4_frame(RECORDS, content_size=len(RECORDS) + 1)),
                                   "declares a content size of"),
    "lz4 content size too small": (_v2(F.LZ4, _lz4_frame(RECORDS, content_size=len(RECORDS) - 1)),
                                   "declares a content size of"),
    "lz4 content size zero": (_v2(F.LZ4, _lz4_frame(RECORDS, content_size=0)),
                              "declares a content size of 0"),
    "lz4 second frame after the first": (
        _v2(F.LZ4, _lz4_frame(RECORDS) + _lz4_frame(F.encode_record(2, 0, b"k3", b"v3"))),
        "bytes after the lz4 frame"),
    "lz4 stray bytes after the frame": (_v2(F.LZ4, _lz4_frame(RECORDS) + b"\x00\x01"),
                                        "2 bytes after the lz4 frame"),
    "lz4 EndMark with the uncompressed bit": (_v2(F.LZ4, _lz4_frame(RECORDS)[:-4] + b"\x00\x00\x00\x80"),
                                              "EndMark 0x80000000"),
    "magic 0 lz4 header checksum neither right nor Kafka's old one": (
        _magic0_lz4("neither"), "header checksum"),
    "gzip garbage after the member": (_v2(F.GZIP, gzip.compress(RECORDS) + b"garbage!"),
                                      "8 bytes after the last gzip member"),
    "gzip one zero byte after the member": (_v2(F.GZIP, gzip.compress(RECORDS) + b"\x00"),
                                            "1 bytes after the last gzip member"),
    "legacy gzip garbage after the member": (
        _wrapper(1, b"", payload=gzip.compress(_v1(0) + _v1(1)) + b"\x1f"),
        "1 bytes after the last gzip member"),
    "xerial version 0": (_v2(F.SNAPPY, _xerial(RECORDS, 0, 0)), "compatible version 0"),
    "xerial version fields little-endian": (
        _v2(F.SNAPPY, _xerial(RECORDS, 0x01000000, 0x01000000)),
        "1, 1 little-endian, as Redpanda once wrote them"),
    "xerial compatible version 2": (_v2(F.SNAPPY, _xerial(RECORDS, 2, 2)), "compatible version 2"),
    "xerial stray bytes after the last block": (_v2(F.SNAPPY, _xerial(RECORDS) + b"\x00\x00\x01"),
                                                "3 stray bytes after the last xerial snappy block"),
    "magic 0 unused attribute bit 3": (_v0(0, 0x08), "unused attribute bits"),
    "magic 0 unused attribute bit 7": (_v0(0, 0x80), "unused attribute bits"),
    "magic 1 unused attribute bit 4": (_v1(0, 0x10), "unused attribute bits"),
    "magic 1 wrapper unused attribute bit 6": (_wrapper(1, _v1(0) + _v1(1), extra=0x40),
                                               "unused attribute bits"),
    "magic 1 inner message unused attribute bit 5": (_wrapper(1, _v1(0, 0x20) + _v1(1)),
                                                     "unused attribute bits"),
    "magic 0 wrapper with the LogAppendTime bit": (_wrapper(0, _v0(0) + _v0(1), extra=0x08),
                                                   "unused attribute bits"),
    "magic 0 messages in a magic 1 wrapper": (_wrapper(1, _v0(0) + _v0(1)),
                                              "inner message has magic 0 in a magic 1 wrapper"),
    "magic 1 messages in a magic 0 wrapper": (_wrapper(0, _v1(0) + _v1(1)),
                                              "inner message has magic 1 in a magic 0 wrapper"),
}


@pytest.fixture(scope="module")
def java_answers() -> dict:
    names = list(CASES)
    return dict(zip(names, J.decode_many([CASES[n][0] for n in names])))


def _java_records(answer: dict) -> list:
    assert "error" not in answer, answer
    return [(r["offset"], r["key"], r["value"]) for b in answer["batches"] for r in b["records"]]


def _our_records(data: bytes, **kw) -> list:
    return [(r.offset, J.b64(r.key), J.b64(r.value))
            for b in kafkarec.iter_batches(data, **kw) for r in b]


@pytest.mark.parametrize("name", list(CASES))
def test_java_accepts_default_agrees_strict_rejects(name, java_answers):
    data, reason = CASES[name]
    expected = _java_records(java_answers[name])
    assert expected, "Kafka reads records from every case"
    assert _our_records(data) == expected
    assert kafkarec.to_arrow(data).column("offset").to_pylist() == [o for o, _, _ in expected]
    with pytest.raises(kafkarec.DecodeError, match=reason) as info:
        _our_records(data, strict=True)
    if name.startswith("v2 ") and "attribute bit" not in name:
        # a record's error names a byte of that record (the records section starts at 61)
        assert 61 <= info.value.position < len(data)
    else:
        assert info.value.position == 0
    # The columnar path applies the same strict rules.
    with pytest.raises(kafkarec.DecodeError, match=reason):
        kafkarec.to_arrow(data, strict=True)


@pytest.mark.parametrize("hc_kind", ["right", "kafka-3160"])
def test_strict_accepts_both_magic0_lz4_header_checksums(hc_kind):
    data = _magic0_lz4(hc_kind)
    assert [r.value for b in kafkarec.iter_batches(data, strict=True) for r in b] == [b"v0", b"v1"]


def test_strict_accepts_a_right_lz4_content_size():
    data = _v2(F.LZ4, _lz4_frame(RECORDS, content_size=len(RECORDS)))
    assert [r.value for b in kafkarec.iter_batches(data, strict=True) for r in b] == [b"v", b"v2"]


def test_strict_accepts_what_kafkas_writer_writes():
    """Kafka's MemoryRecordsBuilder in every magic and codec (magic 0 LZ4 with its
    old header checksum), read back with strict=True."""
    specs = []
    for magic, codecs in ((2, ["none", "gzip", "snappy", "lz4", "zstd"]),
                          (1, ["none", "gzip", "snappy", "lz4"]), (0, ["none", "gzip", "snappy", "lz4"])):
        for codec in codecs:
            specs.append({"magic": magic, "codec": codec, "base_offset": len(specs) * 10,
                          "gen": {"count": 5, "key": "k-%d", "value": {"random": 40, "seed": 1},
                                  "ts_start": TS, "ts_step": 1}})
    for ts_type in ("create_time", "log_append_time"):
        specs.append({"magic": 1, "codec": "gzip", "base_offset": len(specs) * 10,
                      "timestamp_type": ts_type, "log_append_time": TS + 99,
                      "gen": {"count": 3, "key": "k-%d", "value": "v", "ts_start": TS}})
    data = J.write({"batches": specs})
    (answer,) = J.decode_many([data])
    expected = _java_records(answer)
    assert len(expected) == 5 * 13 + 6
    assert _our_records(data, strict=True) == expected


@pytest.mark.parametrize("codec", [F.GZIP, F.SNAPPY, F.LZ4])
@pytest.mark.parametrize("magic", [0, 1])
def test_strict_accepts_python_clients_legacy_wrappers(magic, codec):
    records = [F.Rec(i, TS + i, b"k%d" % i, b"v%d" % i) for i in range(4)]
    writers = [F.kp_legacy]
    if not (magic == 0 and codec == F.LZ4):      # aiokafka refuses LZ4 for magic 0
        writers.append(F.aio_legacy)
    for data in (write(magic, records, codec) for write in writers):
        assert [r.value for b in kafkarec.iter_batches(data, strict=True) for r in b] == \
            [b"v0", b"v1", b"v2", b"v3"]
