"""Writing legacy message sets (magic 0 and 1): LegacyBatchBuilder.

Kafka's MemoryRecordsBuilder rules for old formats (reference §1.5-1.6): an
uncompressed set is one entry per record with its absolute offset; a
compressed set is one wrapper (key null) whose value is the compressed inner
set, inner offsets relative (0..n-1 from the base) for magic 1 and absolute
for magic 0, wrapper offset = last offset (or 0, as librdkafka writes it,
with ``wrapper_offset="zero"``), wrapper timestamp = max or LogAppendTime.
Everything must read back identically through kafkarec, kafka-python and
aiokafka; uncompressed sets must equal kafka-python's LegacyRecordBatchBuilder
byte for byte; wrapper values must decompress with the Java libraries
(magic-0 LZ4 with Kafka's broken header checksum, KAFKA-3160).
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

import lz4.frame
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import Compression, EncodeError, TimestampType
from kafkarec._core import LegacyBatchBuilder

from support.oracles import foreign as F
from support.oracles.builder_checks import append_after_build, assert_encode_error
from support.oracles.javacodec import JavaCodecError

T0 = 1_600_000_000_000
LAT = 1_600_000_777_777
CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
JAVA_CODEC = {Compression.GZIP: "gzip", Compression.SNAPPY: "snappy-xerial",
              Compression.LZ4: "lz4-frame"}


class R(NamedTuple):
    offset: int
    timestamp: int | None
    key: bytes | None
    value: bytes | None


def build(magic, records, **options) -> bytes:
    builder = LegacyBatchBuilder(magic=magic, **options)
    for r in records:
        ts = None if magic == 0 else r.timestamp
        assert builder.append(r.value, r.key, timestamp=ts, offset=r.offset) == r.offset
    assert builder.record_count == len(records)
    return builder.build()


def expected_records(magic, records, options) -> list[dict]:
    codec = Compression(options.get("compression", 0))
    base = options.get("base_offset", 0)
    log_append = TimestampType(options.get("timestamp_type", -1 if magic == 0 else 0)) \
        is TimestampType.LOG_APPEND_TIME
    zero_wrapper = codec is not Compression.NONE and options.get("wrapper_offset") == "zero"
    out = []
    for r in records:
        if magic == 0:
            ts, ts_type = -1, TimestampType.NO_TIMESTAMP_TYPE
        elif log_append:
            ts, ts_type = options["log_append_time"], TimestampType.LOG_APPEND_TIME
        else:
            ts, ts_type = r.timestamp, TimestampType.CREATE_TIME
        out.append({
            # Java (AbstractLegacyRecordBatch): a v1 wrapper at offset 0 takes inner offsets as-is
            "offset": r.offset - base if (zero_wrapper and magic == 1) else r.offset,
            "timestamp": ts, "timestamp_type": ts_type, "key": r.key, "value": r.value,
            "headers": [], "sequence": -1, "magic": magic, "is_control": False,
        })
    return out


def assert_reads_back(magic, data, records, options) -> list:
    codec = Compression(options.get("compression", 0))
    ours = F.kr_view(data)
    got = [rec for _, recs in ours for rec in recs]
    F.assert_records_equal(got, expected_records(magic, records, options))
    entries = F.split_batches(data)
    assert len(ours) == len(entries) == (len(records) if codec is Compression.NONE else 1)
    for (batch, recs), entry in zip(ours, entries):
        fields = F.legacy_fields(entry)
        assert batch["magic"] == magic and batch["crc_valid"]
        assert batch["compression"] is codec
        assert batch["producer_id"] == -1 and batch["partition_leader_epoch"] == -1
        assert batch["last_offset"] == fields["offset"]
        assert batch["size_in_bytes"] == len(entry)
        # every message's own CRC-32 is right (zlib, not kafkarec)
        assert fields["crc"] == zlib.crc32(entry[16:]) & 0xFFFFFFFF
        if codec is not Compression.NONE:
            assert fields["key"] is None
            assert batch["record_count"] == len(records)
            assert batch["base_offset"] == recs[0]["offset"]
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    if magic == 0 and codec is Compression.LZ4:
        # aiokafka refuses LZ4 for magic 0 (reference §4): it must say so, not misread
        from aiokafka.errors import UnsupportedCodecError
        for impl in ("c", "py"):
            with pytest.raises(UnsupportedCodecError):
                F.aio_view(data, impl=impl)
    else:
        F.assert_agrees(ours, _aio_view(magic, data, "c"), "aiokafka (_crecords)")
        F.assert_agrees(ours, _aio_view(magic, data, "py"), "aiokafka (pure Python)")
    return ours


def _aio_view(magic, data, impl):
    """aiokafka's readers, with one known quirk of their own normalized: they report
    a v1 message whose timestamp is -1 as having no timestamp type, where Java (and
    kafka-python) report CreateTime."""
    view = F.aio_view(data, impl=impl)
    for _, recs in view:
        for rec in recs:
            if magic == 1 and rec["timestamp"] == -1 and rec["timestamp_type"] == -1:
                rec["timestamp_type"] = TimestampType.CREATE_TIME
    return view


def text(n):
    return b"".join(b"legacy message %d of the log; " % i for i in range(n))


SHAPES = {
    "single": ({}, [R(0, T0, b"k", b"v")]),
    "null-key": ({}, [R(0, T0, None, b"v1"), R(1, T0 + 1, None, b"v2")]),
    "null-value": ({}, [R(0, T0, b"k1", None), R(1, T0 + 1, b"k2", None)]),
    "null-key-and-value": ({}, [R(0, T0, None, None), R(1, T0 + 2, None, None)]),
    "empty-key-and-value": ({}, [R(0, T0, b"", b""), R(1, T0, b"", None), R(2, T0, None, b"")]),
    "gaps-and-base-offset": ({"base_offset": 1000},
                             [R(1000, T0, b"a", b"1"), R(1004, T0 - 9, b"b", b"2"),
                              R(1010, T0 + 3, b"c", b"3")]),
    "first-offset-above-base": ({"base_offset": 20}, [R(23, T0, b"a", b"1"), R(24, T0, b"b", b"2")]),
    "wrapper-offset-zero": ({"base_offset": 500, "wrapper_offset": "zero"},
                            [R(500, T0, b"a", b"1"), R(502, T0 + 1, b"b", b"2")]),
    "timestamps": ({}, [R(0, -1, b"a", b"1"), R(1, 0, b"b", b"2"), R(2, 2**62, b"c", b"3")]),
    "large": ({"base_offset": 2**40}, [R(2**40 + i, T0 + i, b"key-%d" % (i % 5), text(30 + i % 90))
                                       for i in range(400)]),
}
V1_ONLY = {
    "log-append-time": ({"timestamp_type": TimestampType.LOG_APPEND_TIME, "log_append_time": LAT},
                        [R(0, T0, b"a", b"1"), R(1, T0 + 5, b"b", b"2")]),
    "log-append-time-gaps": ({"timestamp_type": TimestampType.LOG_APPEND_TIME, "log_append_time": LAT,
                              "base_offset": 7}, [R(7, T0, b"a", b"1"), R(9, T0 + 5, None, b"2")]),
}
CASES = [(m, name) for m in (0, 1) for name in sorted(SHAPES)] + [(1, name) for name in sorted(V1_ONLY)]


def shape(name):
    return SHAPES.get(name) or V1_ONLY[name]


# ------------------------------------------------ 1. read back by every reader


@pytest.mark.parametrize("codec", CODECS, ids=str)
@pytest.mark.parametrize("magic,name", CASES)
def test_reads_back_through_every_reader(magic, name, codec):
    options, records = shape(name)
    options = {**options, "compression": codec}
    data = build(magic, records, **options)
    assert_reads_back(magic, data, records, options)


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE], ids=str)
@pytest.mark.parametrize("magic", [0, 1])
def test_compressed_wrapper_layout(magic, codec):
    records = [R(10, T0 + 3, b"a", b"1"), R(12, T0 + 9, b"b", b"2"), R(13, T0 + 1, b"c", None)]
    for wrapper_offset in ("last", "zero"):
        data = build(magic, records, compression=codec, base_offset=10, wrapper_offset=wrapper_offset)
        (entry,) = F.split_batches(data)
        wrapper = F.legacy_fields(entry)
        assert wrapper["offset"] == (13 if wrapper_offset == "last" else 0)
        assert wrapper["attributes"] == int(codec)
        assert wrapper["key"] is None
        if magic == 1:
            assert wrapper["timestamp"] == T0 + 9          # the max timestamp
        inner = build(magic, records, base_offset=10)      # the uncompressed set, absolute offsets
        inner_entries = F.split_batches(inner)
        # Kafka's toInnerOffset: relative to the base offset for magic 1, absolute for magic 0
        expected_inner = b"".join(
            F.set_legacy_offset(e, F.legacy_fields(e)["offset"] - (10 if magic == 1 else 0))
            for e in inner_entries)
        assert _decompress_python(codec, wrapper["value"], magic) == expected_inner


def _decompress_python(codec, payload, magic):
    import gzip

    if codec is Compression.GZIP:
        return gzip.decompress(payload)
    if codec is Compression.SNAPPY:
        from kafka.codec import snappy_decode
        return snappy_decode(payload)
    if magic == 0:
        from kafka.codec import lz4_decode_old_kafka
        return lz4_decode_old_kafka(payload)
    return lz4.frame.decompress(payload)


def test_empty_builder_writes_nothing():
    for magic in (0, 1):
        assert LegacyBatchBuilder(magic=magic, compression=Compression.GZIP).build() == b""


def test_default_timestamp_is_now_for_magic_1():
    import time
    before = int(time.time() * 1000)
    builder = LegacyBatchBuilder(magic=1)
    builder.append(b"v")
    data = builder.build()
    after = int(time.time() * 1000)
    (record,) = [r for b in kafkarec.iter_batches(data) for r in b]
    assert before <= record.timestamp <= after


# ------------------------------------- 2. byte equality with Python builders


def _python(records):
    return [F.Rec(r.offset, r.timestamp, r.key, r.value) for r in records]


BYTE_EQUAL = [(m, n) for m, n in CASES
              if set(shape(n)[0]) <= {"base_offset"}]


@pytest.mark.parametrize("magic,name", BYTE_EQUAL)
def test_uncompressed_bytes_equal_kafka_python(magic, name):
    _, records = shape(name)
    ours = build(magic, records, base_offset=records[0].offset)
    assert ours == F.kp_legacy(magic, _python(records))
    for impl in ("c", "py"):
        assert ours == F.aio_legacy(magic, _python(records), impl=impl), impl


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE], ids=str)
@pytest.mark.parametrize("magic", [0, 1])
def test_compressed_inner_set_equals_kafka_python(magic, codec):
    # kafka-python writes the wrapper at offset 0 with timestamp 0 and inner offsets as
    # given; with base offset 0 the decompressed inner sets must be identical.
    records = [R(0, T0, b"a", b"1"), R(1, T0 + 1, None, b"2"), R(2, T0 + 2, b"c", None),
               R(5, T0 - 1, b"", b"")]
    ours = F.legacy_fields(build(magic, records, compression=codec))["value"]
    theirs = F.legacy_fields(F.kp_legacy(magic, _python(records), codec))["value"]
    assert _decompress_python(codec, ours, magic) == _decompress_python(codec, theirs, magic)


def test_byte_equality_covers_the_record_shapes():
    assert {(0, "null-key-and-value"), (1, "null-key-and-value"), (1, "timestamps"),
            (0, "gaps-and-base-offset"), (1, "empty-key-and-value")} <= set(BYTE_EQUAL)


# ------------------------------------------------ 3. codecs, checked with Java


def _large_records():
    import random
    rng = random.Random(3160)
    return [R(i, T0 + i, b"key-%d" % i, text(15) if i % 3 else rng.randbytes(700)) for i in range(250)]


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE], ids=str)
@pytest.mark.parametrize("magic", [0, 1])
def test_wrapper_value_decompresses_with_java(java_codec, magic, codec, size):
    records = _large_records() if size == "large" else [R(0, T0, b"k", b"v"), R(1, T0, None, b"w")]
    payload = F.legacy_fields(build(magic, records, compression=codec))["value"]
    inner = build(magic, records)    # base offset 0: relative == absolute offsets
    options = {"hc": "broken"} if (codec is Compression.LZ4 and magic == 0) else {}
    assert java_codec.decompress(JAVA_CODEC[codec], payload, **options) == inner


@pytest.mark.parametrize("magic", [0, 1])
def test_lz4_header_checksum_depends_on_magic(java_codec, magic):
    records = _large_records()
    payload = F.legacy_fields(build(magic, records, compression=Compression.LZ4))["value"]
    inner = build(magic, records)
    assert payload[4:6] == b"\x60\x40"
    # Kafka reads magic 0 ignoring the HC (KAFKA-3160) and checks it for magic 1
    assert java_codec.decompress("lz4-frame", payload, hc="ignore") == inner
    if magic == 0:
        assert payload[:7] == java_codec.compress("lz4-frame-broken-hc", inner)[:7]
        assert java_codec.decompress("lz4-frame", payload, hc="broken") == inner
        with pytest.raises(JavaCodecError, match="header checksum"):
            java_codec.decompress("lz4-frame", payload, hc="standard")
        with pytest.raises(RuntimeError, match="(?i)header.?checksum"):
            lz4.frame.decompress(payload)
    else:
        assert payload[:7] == java_codec.compress("lz4-frame", inner)[:7]
        assert java_codec.decompress("lz4-frame", payload, hc="standard") == inner
        with pytest.raises(JavaCodecError, match="header checksum"):
            java_codec.decompress("lz4-frame", payload, hc="broken")
        assert lz4.frame.decompress(payload) == inner


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_snappy_is_xerial(java_codec, magic):
    records = _large_records()
    payload = F.legacy_fields(build(magic, records, compression=Compression.SNAPPY))["value"]
    assert payload[:16] == java_codec.compress("snappy-xerial", b"x")[:16]
    assert java_codec.decompress("snappy-xerial", payload) == build(magic, records)


def test_gzip_levels(java_codec):
    records = _large_records()
    inner = build(1, records)
    sizes = []
    for level in (1, 9, None):
        payload = F.legacy_fields(build(1, records, compression=Compression.GZIP,
                                        compression_level=level))["value"]
        assert java_codec.decompress("gzip", payload) == inner
        sizes.append(len(payload))
    assert sizes[0] > sizes[1]          # the level is applied


# ----------------------------------------------------------- hypothesis

ITEM = st.none() | st.binary(max_size=100)


@st.composite
def legacy_specs(draw):
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from(CODECS))
    options = {"compression": codec, "base_offset": draw(st.integers(0, 2**62))}
    if codec is not Compression.NONE:
        options["wrapper_offset"] = draw(st.sampled_from(["last", "zero"]))
    if magic == 1 and draw(st.booleans()):
        options["timestamp_type"] = TimestampType.LOG_APPEND_TIME
        options["log_append_time"] = draw(st.integers(0, 2**50))
    offset = options["base_offset"] + draw(st.integers(0, 3))
    records = []
    for i in range(draw(st.integers(1, 10))):
        if i:
            offset += draw(st.integers(1, 10_000))
        records.append(R(offset, draw(st.just(-1) | st.integers(0, 2**50)), draw(ITEM), draw(ITEM)))
    return magic, options, records


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(legacy_specs())
def test_legacy_round_trip(spec):
    magic, options, records = spec
    data = build(magic, records, **options)
    assert_reads_back(magic, data, records, options)


# --------------------------------------------------- 6. invalid arguments


def _append(builder, *records):
    for r in records:
        builder.append(r.value, r.key, timestamp=r.timestamp, offset=r.offset)
    return builder


INVALID = {
    "headers on magic 0": (lambda: LegacyBatchBuilder(magic=0).append(b"v", headers=[("h", b"x")]),
                           r"Magic v0 does not support record headers"),
    "headers on magic 1": (lambda: LegacyBatchBuilder(magic=1).append(b"v", headers=[("h", b"x")]),
                           r"Magic v1 does not support record headers"),
    "zstd on magic 0": (lambda: LegacyBatchBuilder(magic=0, compression=Compression.ZSTD),
                        r"ZStandard compression is not supported for magic 0"),
    "zstd on magic 1": (lambda: LegacyBatchBuilder(magic=1, compression=Compression.ZSTD),
                        r"ZStandard compression is not supported for magic 1"),
    "magic 2": (lambda: LegacyBatchBuilder(magic=2), r"Invalid magic value 2"),
    "magic -1": (lambda: LegacyBatchBuilder(magic=-1), r"Invalid magic value -1"),
    "negative timestamp": (lambda: _append(LegacyBatchBuilder(magic=1), R(0, -2, b"k", b"v")),
                           r"Invalid message timestamp -2"),
    "timestamp on magic 0": (lambda: LegacyBatchBuilder(magic=0).append(b"v", timestamp=T0),
                             r"magic 0 messages have no timestamp"),
    "timestamp type on magic 0": (
        lambda: LegacyBatchBuilder(magic=0, timestamp_type=TimestampType.CREATE_TIME),
        r"magic 0 messages have no timestamp"),
    "no timestamp type on magic 1": (
        lambda: LegacyBatchBuilder(magic=1, timestamp_type=TimestampType.NO_TIMESTAMP_TYPE),
        r"Timestamp type must be provided to compute attributes for message format v1"),
    "decreasing offset": (lambda: _append(LegacyBatchBuilder(magic=1), R(5, T0, b"k", b"v"),
                                          R(4, T0, b"k", b"v")),
                          r"Illegal offset 4 following previous offset 5 \(Offsets must increase"),
    "equal offset": (lambda: _append(LegacyBatchBuilder(magic=0), R(5, None, b"k", b"v"),
                                     R(5, None, b"k", b"v")),
                     r"Illegal offset 5 following previous offset 5"),
    "offset below base": (lambda: _append(LegacyBatchBuilder(magic=1, base_offset=9), R(8, T0, b"k", b"v")),
                          r"offset 8 is below the batch's base offset 9"),
    "wrapper offset": (lambda: LegacyBatchBuilder(magic=1, wrapper_offset="first"),
                       r"wrapper_offset must be 'last' or 'zero'"),
    "append after build": (lambda: append_after_build(LegacyBatchBuilder(magic=1), T0), r"already built"),
    # Java: LegacyRecord.write -> "Invalid message timestamp -5" for the LogAppendTime stamp too
    "negative log append time": (
        lambda: _append(LegacyBatchBuilder(magic=1, timestamp_type=TimestampType.LOG_APPEND_TIME,
                                           log_append_time=-5), R(0, T0, b"k", b"v")).build(),
        r"-5"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_arguments_raise_encode_error(case):
    assert_encode_error(INVALID, case)


def test_rejected_append_leaves_the_builder_usable():
    builder = LegacyBatchBuilder(magic=1, compression=Compression.GZIP)
    builder.append(b"a", b"k", timestamp=T0)
    for bad in (dict(offset=0), dict(timestamp=-3), dict(headers=[("h", b"")])):
        with pytest.raises(EncodeError):
            builder.append(b"bad", b"k", **{"timestamp": T0, **bad})
    builder.append(b"b", b"k", timestamp=T0 + 1)
    assert builder.build() == build(1, [R(0, T0, b"k", b"a"), R(1, T0 + 1, b"k", b"b")],
                                    compression=Compression.GZIP)


# ----------------------------------------------- Java's LogAppendTime layout


@pytest.mark.parametrize("codec", CODECS, ids=str)
def test_log_append_time_messages_are_written_like_java(codec):
    # MemoryRecordsBuilder.appendLegacyRecord: with LOG_APPEND_TIME every message (inner
    # messages of a compressed set too) is written with timestamp = logAppendTime and
    # the LogAppendTime attribute bit (LegacyRecord.write(..., timestampType)).
    records = [R(0, T0, b"a", b"1"), R(1, T0 + 5, b"b", b"2")]
    data = build(1, records, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME,
                 log_append_time=LAT)
    entries = F.split_batches(data)
    if codec is not Compression.NONE:
        (wrapper,) = entries
        fields = F.legacy_fields(wrapper)
        assert fields["timestamp"] == LAT and fields["attributes"] == int(codec) | 0x08
        entries = F.split_batches(_decompress_python(codec, fields["value"], 1))
    for entry in entries:
        fields = F.legacy_fields(entry)
        assert fields["attributes"] & 0x08, fields
        assert fields["timestamp"] == LAT, fields
