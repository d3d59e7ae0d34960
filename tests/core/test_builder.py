"""Writing v2 batches: RecordBatchBuilder (append / extend) and build_batch.

What we write must read back identically through kafkarec, kafka-python's
``MemoryRecords`` and aiokafka's readers (compiled ``_crecords`` and the
pure-Python fallback) for every codec; uncompressed batches must be byte for
byte what kafka-python's / aiokafka's ``DefaultRecordBatchBuilder`` write for
the same content; compressed payloads (bytes 61..end) must decompress with
the Java libraries Kafka uses (``java_codec``) to exactly our uncompressed
records section.  The writer rules (reference §1.6) raise EncodeError.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import lz4.frame
import numpy as np
import pyarrow as pa
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import Compression, EncodeError, TimestampType
from kafkarec._core import RecordBatchBuilder, build_batch

from support.oracles import foreign as F
from support.oracles.builder_checks import append_after_build, assert_encode_error

T0 = 1_700_000_000_000
LAT = 1_700_000_999_999
XERIAL_HEADER = b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01\x00\x00\x00\x01"
CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
JAVA_CODEC = {Compression.GZIP: "gzip", Compression.SNAPPY: "snappy-xerial",
              Compression.LZ4: "lz4-frame", Compression.ZSTD: "zstd"}


class R(NamedTuple):
    """A record with its absolute offset."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()


# ------------------------------------------------------------------ helpers


def build_append(records, **options) -> bytes:
    builder = RecordBatchBuilder(**options)
    for r in records:
        assert builder.append(r.value, r.key, timestamp=r.timestamp, headers=list(r.headers),
                              offset=r.offset) == r.offset
    assert builder.record_count == len(records)
    return builder.build()


def is_log_append(options) -> bool:
    return TimestampType(options.get("timestamp_type", 0)) is TimestampType.LOG_APPEND_TIME


def expected_records(records, options) -> list[dict]:
    base = options.get("base_offset", 0)
    base_sequence = options.get("base_sequence", -1)
    lat = options.get("log_append_time") if is_log_append(options) else None
    return [{
        "offset": r.offset,
        "timestamp": r.timestamp if lat is None else lat,
        "timestamp_type": TimestampType.LOG_APPEND_TIME if lat is not None else TimestampType.CREATE_TIME,
        "key": r.key, "value": r.value,
        "headers": [(k, v) for k, v in r.headers],
        "sequence": F.java_sequence(base_sequence, r.offset - base),
        "is_control": False, "magic": 2, "attributes": 0, "checksum": None,
    } for r in records]


def expected_batch(records, options) -> dict:
    base = options.get("base_offset", 0)
    lat = options.get("log_append_time") if is_log_append(options) else None
    horizon = options.get("delete_horizon_ms")
    producer_id = options.get("producer_id", -1)
    return {
        "base_offset": base,
        "last_offset": records[-1].offset,
        "last_offset_delta": records[-1].offset - base,
        "record_count": len(records),
        "magic": 2,
        "crc_valid": True,
        "compression": Compression(options.get("compression", 0)),
        "timestamp_type": TimestampType.LOG_APPEND_TIME if lat is not None else TimestampType.CREATE_TIME,
        "max_timestamp": lat if lat is not None else max(-1, *(r.timestamp for r in records)),
        "base_timestamp": horizon if horizon is not None else records[0].timestamp,
        "delete_horizon_ms": horizon,
        "producer_id": producer_id,
        "producer_epoch": options.get("producer_epoch", -1),
        "base_sequence": options.get("base_sequence", -1),
        "is_transactional": bool(options.get("is_transactional", False)),
        "is_control": False,
        "partition_leader_epoch": options.get("partition_leader_epoch", -1),
    }


def assert_reads_back(data, records, options) -> None:
    """kafkarec decodes exactly what was written; kafka-python and both aiokafka
    readers agree with kafkarec field by field."""
    ours = F.kr_view(data)
    assert len(ours) == 1
    batch, got = ours[0]
    for name, value in expected_batch(records, options).items():
        assert batch[name] == value, f"batch field {name}: got {batch[name]!r}, expected {value!r}"
    assert batch["size_in_bytes"] == len(data)
    F.assert_records_equal(got, expected_records(records, options))
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    F.assert_agrees(ours, F.aio_view(data, impl="c"), "aiokafka (_crecords)")
    F.assert_agrees(ours, F.aio_view(data, impl="py"), "aiokafka (pure Python)")


def text(n: int) -> bytes:
    return b"".join(b"record %d says hello to the log; " % i for i in range(n))


# ------------------------------------------------------------------ shapes

SHAPES = {
    "plain": ({}, [R(0, T0, b"k0", b"v0"), R(1, T0 + 5, b"k1", b"v1"), R(2, T0 + 3, b"k2", b"v2")]),
    "headers": ({}, [
        R(0, T0, b"k", b"v", (("trace", b"abc"), ("r\u00e9gion", None), ("trace", b""))),
        R(1, T0 + 1, b"k", b"v2", (("\u65e5\u672c", b"\x00\xff"),)),
        R(2, T0 + 2, b"k", b"v3")]),
    "null-key": ({}, [R(0, T0, None, b"value"), R(1, T0, b"k", b"v")]),
    "null-value": ({}, [R(0, T0, b"key", None), R(1, T0, b"k", b"v")]),
    "null-key-and-value": ({}, [R(0, T0, None, None), R(1, T0 + 1, None, None)]),
    "empty-key-and-value": ({}, [R(0, T0, b"", b""), R(1, T0, b"", b"x"), R(2, T0, b"y", b"")]),
    "offset-gaps": ({"base_offset": 1000}, [R(1000, T0, b"a", b"1"), R(1003, T0, b"b", b"2"),
                                            R(1100, T0 + 9, b"c", b"3"), R(70000, T0 - 7, b"d", b"4")]),
    "first-offset-above-base": ({"base_offset": 50}, [R(52, T0, b"a", b"1"), R(53, T0, b"b", b"2")]),
    "timestamps": ({}, [R(0, -1, b"a", b"1"), R(1, 0, b"b", b"2"), R(2, 2**62, b"c", b"3"),
                        R(3, T0, b"d", b"4")]),
    "log-append-time": ({"timestamp_type": TimestampType.LOG_APPEND_TIME, "log_append_time": LAT},
                        [R(0, T0, b"a", b"1"), R(1, T0 + 10, b"b", b"2")]),
    "idempotent": ({"producer_id": 4_000_000_001, "producer_epoch": 12, "base_sequence": 1_000_000,
                    "base_offset": 77}, [R(77, T0, b"a", b"1"), R(78, T0, b"b", b"2"),
                                         R(80, T0, b"c", b"3")]),
    "sequence-wrap": ({"producer_id": 9, "producer_epoch": 0, "base_sequence": 2**31 - 2},
                      [R(0, T0, b"a", b"1"), R(1, T0, b"b", b"2"), R(3, T0, b"c", b"3")]),
    "transactional": ({"producer_id": 31337, "producer_epoch": 3, "base_sequence": 0,
                       "is_transactional": True, "partition_leader_epoch": 17},
                      [R(0, T0, b"a", b"1"), R(1, T0 + 1, b"b", b"2")]),
    "delete-horizon": ({"delete_horizon_ms": T0 + 86_400_000},
                       [R(0, T0, b"tomb", b""), R(1, T0 + 2, b"k", b"v")]),
    "large": ({"base_offset": 2**40}, [R(2**40 + i, T0 + i, b"key-%d" % (i % 7), text(40 + i % 200),
                                        (("n", b"%d" % i),) if i % 3 == 0 else ())
                                      for i in range(600)]),
}
NULL_SHAPES = {"null-key", "null-value", "null-key-and-value"}


def codec_options(codec):
    if codec == "snappy-raw":
        return {"compression": Compression.SNAPPY, "snappy_framing": "raw"}
    return {"compression": codec}


CODEC_PARAMS = [*CODECS, "snappy-raw"]


# ------------------------------------------------ 1. read back by every reader


@pytest.mark.parametrize("codec", CODEC_PARAMS, ids=str)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_reads_back_through_every_reader(shape, codec):
    options, records = SHAPES[shape]
    options = {**options, **codec_options(codec)}
    data = build_append(records, **options)
    assert_reads_back(data, records, options)


@pytest.mark.parametrize("codec", CODECS, ids=str)
def test_two_batches_in_one_buffer(codec):
    first = build_append([R(0, T0, b"a", b"1")], compression=codec)
    second = build_append([R(1, T0, b"b", b"2"), R(4, T0, b"c", b"3")], compression=codec,
                          base_offset=1)
    data = first + second
    ours = F.kr_view(data)
    assert [[r["offset"] for r in recs] for _, recs in ours] == [[0], [1, 4]]
    assert [b["position"] for b, _ in ours] == [0, len(first)]
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    F.assert_agrees(ours, F.aio_view(data, impl="c"), "aiokafka (_crecords)")


def test_empty_builder_writes_nothing():
    builder = RecordBatchBuilder(compression=Compression.GZIP)
    assert builder.size_in_bytes == 61
    assert builder.build() == b""
    assert build_batch([]) == b""


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_size_in_bytes_is_the_uncompressed_batch_size(shape):
    options, records = SHAPES[shape]
    builder = RecordBatchBuilder(**options)
    for r in records:
        builder.append(r.value, r.key, timestamp=r.timestamp, headers=list(r.headers), offset=r.offset)
    assert builder.size_in_bytes == len(builder.build())


# ------------------------------------- 2. byte equality with Python builders


def _python_records(records):
    """kafka-python / aiokafka builders take the offset delta (base offset 0)."""
    return [F.Rec(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


PRODUCER_STATES = {
    "no-producer": {},
    "idempotent": {"producer_id": 123456789012, "producer_epoch": 7, "base_sequence": 42},
    "transactional": {"producer_id": 5, "producer_epoch": 0, "base_sequence": 2**31 - 1,
                      "is_transactional": True},
}
BYTE_EQUAL_SHAPES = sorted(name for name, (opts, _) in SHAPES.items()
                           if set(opts) <= {"base_offset"} and opts.get("base_offset", 0) == 0)


@pytest.mark.parametrize("state", sorted(PRODUCER_STATES))
@pytest.mark.parametrize("shape", BYTE_EQUAL_SHAPES)
def test_uncompressed_bytes_equal_kafka_python(shape, state):
    _, records = SHAPES[shape]
    producer = PRODUCER_STATES[state]
    py_producer = {k: v for k, v in producer.items() if k != "is_transactional"}
    transactional = producer.get("is_transactional", False)
    theirs = F.kp_v2(_python_records(records), transactional=transactional, **py_producer)
    ours = build_append(records, partition_leader_epoch=0, **producer)
    assert ours == theirs
    # aiokafka writes partitionLeaderEpoch -1 like Java: our default.  (Its compiled
    # builder takes a first timestamp of -1 as base timestamp 0, so that record would
    # read back as 0: only the pure-Python builder is compared for such batches.)
    impls = ("py",) if any(r.timestamp == -1 for r in records) else ("c", "py")
    for impl in impls:
        theirs = F.aio_v2(_python_records(records), transactional=transactional, impl=impl,
                          **py_producer)
        assert build_append(records, **producer) == theirs, impl


def test_byte_equality_covers_all_record_shapes():
    # The parametrization above must not silently lose the interesting shapes.
    assert {"headers", "null-key", "null-value", "null-key-and-value", "empty-key-and-value",
            "timestamps", "plain"} <= set(BYTE_EQUAL_SHAPES)


# ------------------------------------------------ 3. codecs, checked with Java


def _codec_records(size: str):
    if size == "small":
        return [R(0, T0, b"k", b"tiny value"), R(1, T0 + 1, b"k2", b"x" * 40)]
    # > 64 KiB (several LZ4 blocks), > 32 KiB (several xerial blocks), partly incompressible.
    import random
    rng = random.Random(61)
    out = []
    for i in range(300):
        value = text(20) if i % 4 else rng.randbytes(900)
        out.append(R(i, T0 + i, b"key-%d" % i, value, (("i", b"%d" % i),)))
    return out


def _payload_and_section(records, **options):
    compressed = build_append(records, **options)
    plain = build_append(records, **{k: v for k, v in options.items()
                                     if k not in ("compression", "compression_level", "snappy_framing")})
    assert plain[21:23] == b"\x00\x00"
    assert struct.unpack(">h", compressed[21:23])[0] & 7 == int(options["compression"])
    # everything but the payload, length and CRC is the same header
    assert compressed[:8] == plain[:8] and compressed[12:17] == plain[12:17]
    assert compressed[23:61] == plain[23:61]
    return compressed[61:], plain[61:]


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("codec,level", [
    (Compression.GZIP, None), (Compression.GZIP, 1), (Compression.GZIP, 9),
    (Compression.SNAPPY, None),
    (Compression.LZ4, None), (Compression.LZ4, 9), (Compression.LZ4, 1), (Compression.LZ4, 17),
    (Compression.ZSTD, None), (Compression.ZSTD, 1), (Compression.ZSTD, 19), (Compression.ZSTD, -5),
], ids=lambda v: str(v))
def test_payload_decompresses_with_java(java_codec, codec, level, size):
    records = _codec_records(size)
    payload, section = _payload_and_section(records, compression=codec, compression_level=level)
    assert java_codec.decompress(JAVA_CODEC[codec], payload) == section
    assert_reads_back(build_append(records, compression=codec, compression_level=level), records,
                      {"compression": codec})


def test_lz4_frame_descriptor_is_kafkas(java_codec):
    records = _codec_records("large")
    payload, section = _payload_and_section(records, compression=Compression.LZ4)
    java = java_codec.compress("lz4-frame", section)
    # magic, FLG 0x60 (independent blocks, no checksums, no size), BD 0x40 (64 KiB), standard HC
    assert payload[:7] == java[:7]
    assert payload[4:6] == b"\x60\x40"
    assert java_codec.decompress("lz4-frame", payload, hc="standard") == section
    assert lz4.frame.decompress(payload) == section   # magic 2: the standard header checksum
    assert payload[-4:] == b"\x00\x00\x00\x00"          # EndMark, no content checksum


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("level", [1, 2, 3, 17])
def test_lz4_levels_bytes_are_kafkas(java_codec, size, level):
    """Kafka's Lz4BlockOutputStream at a level other than 9: lz4-java's highCompressor, whose
    levels 1 and 2 are LZ4 1.10's mid matcher (the lz4 package's frame API compresses them
    fast); every 64 KiB block, a stored one too, and the frame as Kafka writes them."""
    payload, section = _payload_and_section(_codec_records(size), compression=Compression.LZ4,
                                            compression_level=level)
    assert payload == java_codec.compress("lz4-frame", section, level=level)


def test_lz4_level_1_incompressible_block_is_stored():
    """A block compression does not shrink is stored, its size's high bit set (as Kafka's)."""
    import random
    noise = random.Random(5).randbytes(70_000)
    payload, section = _payload_and_section([R(0, T0, None, noise)], compression=Compression.LZ4,
                                            compression_level=1)
    (first,) = struct.unpack_from("<I", payload, 7)
    assert first == 0x80000000 | 65536 and payload[11:11 + 65536] == section[:65536]
    assert lz4.frame.decompress(payload) == section


def test_lz4_mid_known_answer_is_kafkas_and_tells_lz4_versions_apart(java_codec):
    """The core's known answer for lz4 levels 1-2 is what Kafka's lz4-java writes at level 2 for
    its input, and neither LZ4 1.9's fast compressor nor any of its HC levels writes it: a
    pyarrow bundling another LZ4 gives other bytes and is refused."""
    import lz4.block
    from kafkarec import _core
    data, answer = _core._LZ4_MID_INPUT, _core._LZ4_MID_ANSWER
    # Kafka's frame: 7 header bytes, one block's size, the block, the end mark
    assert java_codec.compress("lz4-frame", data, level=2) == (
        b"\x04\x22\x4d\x18\x60\x40\x82" + len(answer).to_bytes(4, "little") + answer + bytes(4))
    others = {lz4.block.compress(data, mode="fast", store_size=False)}
    others |= {lz4.block.compress(data, mode="high_compression", compression=level, store_size=False)
               for level in range(1, 13)}
    assert answer not in others


class _OtherLz4:
    """A pyarrow Codec whose bundled LZ4 is not lz4-java's: valid LZ4, other bytes."""

    def __init__(self, name, compression_level=None):
        import lz4.block
        self._lz4 = lz4.block

    def compress(self, data, asbytes=False):
        return self._lz4.compress(bytes(data), mode="fast", store_size=False)


class _NoLz4:
    def __init__(self, name, compression_level=None):
        raise pa.ArrowNotImplementedError("Support for codec 'lz4_raw' not built")


@pytest.mark.parametrize("codec, reason", [(_OtherLz4, "compresses the known-answer input to other bytes"),
                                           (_NoLz4, "needs pyarrow's LZ4 codec, which pyarrow")])
def test_lz4_levels_1_2_refuse_a_pyarrow_lz4_that_is_not_kafkas(monkeypatch, codec, reason):
    """Frames Kafka would not write, or Arrow's own exception, are a CodecUnavailableError saying
    what is missing; checked once, when the codec is first made."""
    from kafkarec import _core
    from kafkarec.errors import CodecUnavailableError
    monkeypatch.setattr(_core, "_lz4_mid", None)
    monkeypatch.setattr(pa, "Codec", codec)
    for level in (1, 2):
        with pytest.raises(CodecUnavailableError, match=reason) as info:
            build_batch([b"v" * 300], compression=Compression.LZ4, compression_level=level)
        assert "writing lz4 at level 1 or 2" in str(info.value)
        assert _core._lz4_mid is None           # nothing cached: the next batch asks again


def test_snappy_defaults_to_xerial_framing(java_codec):
    records = _codec_records("large")
    payload, section = _payload_and_section(records, compression=Compression.SNAPPY)
    java = java_codec.compress("snappy-xerial", section)
    assert payload[:16] == XERIAL_HEADER == java[:16]
    # 32 KiB blocks like snappy-java: the first block's length is followed by a raw block
    # that decompresses to exactly 32 KiB.
    (first_len,) = struct.unpack_from(">i", payload, 16)
    import snappy
    assert len(snappy.decompress(payload[20:20 + first_len])) == 32 * 1024
    assert java_codec.decompress("snappy-xerial", payload) == section


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("framing", ["xerial", "raw"])
def test_snappy_bytes_are_kafkas(java_codec, size, framing):
    """Snappy as Kafka writes it, byte for byte: snappy-java's 32 KiB xerial blocks (or raw
    snappy), compressed by the Google snappy 1.1 that snappy-java bundles; kafkarec takes the
    system's libsnappy for it (Debian's libsnappy1v5, on this machine kind)."""
    from support.oracles.javacodec import require_kafkas_snappy
    require_kafkas_snappy()
    payload, section = _payload_and_section(_codec_records(size), compression=Compression.SNAPPY,
                                            snappy_framing=framing)
    assert payload == java_codec.compress(f"snappy-{framing}", section)


def test_snappy_known_answer_is_kafkas_and_tells_snappys_apart(java_codec):
    """The core's known answers for snappy are snappy-java's raw blocks of their inputs (a short one
    and a whole 32 KiB xerial block), which cramjam's snappy or the Google snappy 1.2 in pyarrow do
    not write: a system libsnappy of another version is passed over for cramjam."""
    import cramjam
    from kafkarec import _core
    data, answer = _core._SNAPPY_INPUT, _core._SNAPPY_ANSWER
    assert java_codec.compress("snappy-raw", data) == answer
    assert bytes(cramjam.snappy.compress_raw(data)) != answer
    assert pa.Codec("snappy").compress(data, asbytes=True) != answer
    # the whole-block answer (by its digest): snappy-java's bytes, not snappy 1.2's
    import hashlib
    block = _core._snappy_block_input()
    assert len(block) == 32 * 1024
    assert hashlib.sha256(java_codec.compress("snappy-raw", block)).hexdigest() == _core._SNAPPY_BLOCK_SHA256
    assert hashlib.sha256(pa.Codec("snappy").compress(block, asbytes=True)).hexdigest() != _core._SNAPPY_BLOCK_SHA256


def test_snappy_without_kafkas_library_is_cramjams_valid_snappy(monkeypatch, java_codec):
    """Where no system snappy gives the known answer, the writer compresses with cramjam:
    valid snappy Kafka reads, named by snappy_compressor(); the real one is chosen again after."""
    from kafkarec import _core
    from support.oracles.javacodec import require_kafkas_snappy
    monkeypatch.setattr(_core, "_SNAPPY_SONAMES", ("libsnappy-missing.so.9",))
    monkeypatch.setattr(_core, "_snappy_library", None)
    try:
        assert _core.snappy_compressor() == "cramjam"
        payload, section = _payload_and_section(_codec_records("large"), compression=Compression.SNAPPY)
        assert java_codec.decompress("snappy-xerial", payload) == section
    finally:
        monkeypatch.undo()
        _core._snappy_library = None        # the next batch chooses again, on the real names
    require_kafkas_snappy()


def test_snappy_raw_framing_on_request(java_codec):
    records = _codec_records("large")
    payload, section = _payload_and_section(records, compression=Compression.SNAPPY,
                                            snappy_framing="raw")
    assert not payload.startswith(b"\x82SNAPPY\x00")
    assert java_codec.decompress("snappy-raw", payload) == section
    # SnappyInputStream (what a Kafka consumer uses) falls back to raw decoding
    assert java_codec.decompress("snappy-xerial", payload) == section


def test_zstd_frames_carry_no_content_size(java_codec):
    payload, section = _payload_and_section(_codec_records("large"), compression=Compression.ZSTD)
    assert zstandard.get_frame_parameters(payload).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert java_codec.decompress("zstd", payload) == section


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("level", [None, 1, 9, -5, 22])
def test_zstd_bytes_are_kafkas(java_codec, size, level):
    """The bytes Kafka's ZstdOutputStream behind its 16 KiB BufferedOutputStream writes: the
    buffer's flush before close ends a block, so the frame ends with an empty last block."""
    payload, section = _payload_and_section(_codec_records(size), compression=Compression.ZSTD,
                                            compression_level=level)
    assert payload == java_codec.compress("zstd", section, level=3 if level is None else level)


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("level", [None, 1, 6, 9])
def test_gzip_bytes_are_kafkas(java_codec, size, level):
    """Kafka's GZIPOutputStream (a member per batch) byte for byte: zlib's deflate stream behind
    the JDK's header, XFL 0 and OS 255 at every level (zlib would write XFL 2 or 4 and OS 3)."""
    payload, section = _payload_and_section(_codec_records(size), compression=Compression.GZIP,
                                            compression_level=level)
    assert payload[8:10] == b"\x00\xff"
    assert payload == java_codec.compress("gzip", section, level=-1 if level is None else level)


def test_gzip_is_one_member_with_mtime_zero(java_codec):
    payload, section = _payload_and_section(_codec_records("large"), compression=Compression.GZIP)
    assert payload[:4] == b"\x1f\x8b\x08\x00" and payload[4:8] == b"\x00\x00\x00\x00"
    assert java_codec.decompress("gzip", payload) == section


def test_snappy_framing_is_validated():
    with pytest.raises(EncodeError, match="snappy_framing"):
        RecordBatchBuilder(compression=Compression.SNAPPY, snappy_framing="framed")


# ----------------------------------------- 4. every build path, same bytes

BINARY = st.binary(max_size=200)
HEADER = st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16))
LEVELS = {Compression.NONE: [None], Compression.GZIP: [None, 1, 6, 9], Compression.SNAPPY: [None],
          Compression.LZ4: [None, 9, 1, 12], Compression.ZSTD: [None, 1, 3, -1, 12]}


@st.composite
def batch_specs(draw, nulls: bool):
    codec = draw(st.sampled_from(CODECS))
    options = {"compression": codec, "compression_level": draw(st.sampled_from(LEVELS[codec])),
               "base_offset": draw(st.integers(0, 2**62)),
               "partition_leader_epoch": draw(st.integers(-1, 2**31 - 1))}
    if codec is Compression.SNAPPY and draw(st.booleans()):
        options["snappy_framing"] = "raw"
    if draw(st.booleans()):
        options["timestamp_type"] = TimestampType.LOG_APPEND_TIME
        options["log_append_time"] = draw(st.integers(0, 2**50))
    if draw(st.booleans()):
        options["producer_id"] = draw(st.integers(0, 2**63 - 1))
        options["producer_epoch"] = draw(st.integers(0, 2**15 - 1))
        options["base_sequence"] = draw(st.integers(0, 2**31 - 1))
        options["is_transactional"] = draw(st.booleans())
    if draw(st.booleans()):
        options["delete_horizon_ms"] = draw(st.integers(0, 2**50))
    n = draw(st.integers(1, 12))
    consecutive = draw(st.booleans())
    offset = options["base_offset"] + (0 if consecutive else draw(st.integers(0, 3)))
    with_headers = draw(st.booleans())
    item = (st.none() | BINARY) if nulls else BINARY
    records = []
    for i in range(n):
        if i:
            offset += 1 if consecutive else draw(st.integers(1, 100_000))
        records.append(R(offset, draw(st.just(-1) | st.integers(0, 2**45)),
                         draw(item), draw(item),
                         tuple(draw(st.lists(HEADER, max_size=3))) if with_headers else ()))
    return options, records


def all_build_paths(options, records) -> dict[str, bytes]:
    values = [r.value for r in records]
    keys = [r.key for r in records]
    timestamps = [r.timestamp for r in records]
    offsets = [r.offset for r in records]
    base = options["base_offset"]
    consecutive = offsets == list(range(base, base + len(records)))
    headers = [list(r.headers) for r in records] if any(r.headers for r in records) else None
    arrow_values = pa.array(values, pa.binary())
    arrow_keys = pa.array(keys, pa.large_binary())
    arrow_ts = pa.array(timestamps, pa.int64())
    arrow_offsets = None if consecutive else pa.array(offsets, pa.int64())
    list_offsets = None if consecutive else offsets
    out = {"append": build_append(records, **options)}
    out["extend(lists)"] = RecordBatchBuilder(**options).extend(
        values, keys, timestamps, headers, list_offsets).build()
    half = len(records) // 2
    split = RecordBatchBuilder(**options)
    split.extend(values[:half], keys[:half], timestamps[:half],
                 None if headers is None else headers[:half], None if consecutive else offsets[:half])
    split.extend(values[half:], keys[half:], timestamps[half:],
                 None if headers is None else headers[half:], None if consecutive else offsets[half:])
    out["extend(lists, two calls)"] = split.build()
    out["extend(arrow)"] = RecordBatchBuilder(**options).extend(
        arrow_values, arrow_keys, arrow_ts, headers, arrow_offsets).build()
    # sliced arrays: a non-zero array offset into the buffers
    padded = pa.array([b"pad"] + values, pa.binary()).slice(1)
    padded_keys = pa.array([None] + keys, pa.binary()).slice(1)
    out["extend(sliced arrow)"] = RecordBatchBuilder(**options).extend(
        padded, padded_keys, pa.array([7] + timestamps, pa.int64()).slice(1), headers,
        arrow_offsets).build()
    halves = RecordBatchBuilder(**options)
    for part in (slice(0, half), slice(half, None)):
        if part.start == part.stop:
            continue   # empty columns: see test_empty_columns_extend_nothing
        halves.extend(arrow_values[part], arrow_keys[part], arrow_ts[part],
                      None if headers is None else headers[part],
                      None if arrow_offsets is None else arrow_offsets[part])
    out["extend(arrow, two calls)"] = halves.build()
    # a (never reached) size limit takes the per-record path over the same arrays
    out["extend(arrow, max_batch_size)"] = RecordBatchBuilder(max_batch_size=2**40, **options).extend(
        arrow_values, arrow_keys, arrow_ts, headers, arrow_offsets).build()
    out["build_batch(lists)"] = build_batch(values, keys, timestamps, headers, list_offsets, **options)
    out["build_batch(arrow)"] = build_batch(arrow_values, arrow_keys, arrow_ts, headers,
                                            arrow_offsets, **options)
    return out


def _check_paths(options, records):
    paths = all_build_paths(options, records)
    reference = paths["append"]
    for name, data in paths.items():
        assert data == reference, f"{name} wrote different bytes than append()"
    assert_reads_back(reference, records, options)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_specs(nulls=False))
def test_every_build_path_writes_the_same_bytes_and_reads_back(spec):
    _check_paths(*spec)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_specs(nulls=True))
def test_every_build_path_with_null_keys_and_values(spec):
    _check_paths(*spec)


def test_bulk_array_path_is_used_and_matches_append():
    # no headers, no offsets, array columns: the bulk C loop (kafkarec_bulk_write)
    n = 2000
    values = [b"value-%d" % i * (i % 5) for i in range(n)]
    keys = [b"k%d" % (i % 13) for i in range(n)]
    ts = [T0 + (i * 7919) % 1000 - 500 for i in range(n)]
    records = [R(10 + i, ts[i], keys[i], values[i]) for i in range(n)]
    for codec in CODECS:
        options = {"compression": codec, "base_offset": 10}
        expected = build_append(records, **options)
        assert build_batch(pa.array(values), pa.array(keys), pa.array(ts, pa.int64()),
                           **options) == expected
        assert build_batch(pa.array(values, pa.large_binary()),
                           pa.array([k.decode() for k in keys], pa.string()),
                           pa.array(ts, pa.timestamp("ms")), **options) == expected
        # a numpy int64 column and a list of keys with an arrow array of values
        assert build_batch(pa.array(values), keys, np.array(ts, dtype=np.int64), **options) == expected
    assert_reads_back(expected, records, options)


def test_arrow_chunked_arrays_are_accepted():
    values = pa.chunked_array([pa.array([b"a", b"b"]), pa.array([b"c"])])
    keys = pa.chunked_array([pa.array([b"k1"]), pa.array([b"k2", b"k3"])])
    ts = pa.chunked_array([pa.array([T0], pa.int64()), pa.array([T0 + 1, T0 + 2], pa.int64())])
    records = [R(0, T0, b"k1", b"a"), R(1, T0 + 1, b"k2", b"b"), R(2, T0 + 2, b"k3", b"c")]
    assert build_batch(values, keys, ts) == build_append(records)


@pytest.mark.parametrize("columns", [
    {"values": []},
    {"values": [], "keys": [], "timestamps": [], "headers": [], "offsets": []},
    {"values": pa.array([], pa.binary())},
    {"values": pa.array([], pa.binary()), "keys": pa.array([], pa.large_binary()),
     "timestamps": pa.array([], pa.int64())},
    {"values": pa.array([], pa.binary()), "offsets": pa.array([], pa.int64())},
], ids=["list", "all lists", "array", "arrays + int64 timestamps", "array + int64 offsets"])
def test_empty_columns_extend_nothing(columns):
    # e.g. an empty Arrow record batch: no records, no error
    assert build_batch(**columns) == b""
    builder = RecordBatchBuilder(base_offset=3)
    builder.append(b"v", b"k", timestamp=T0)
    builder.extend(**columns)
    assert builder.record_count == 1
    assert builder.build() == build_append([R(3, T0, b"k", b"v")], base_offset=3)


def test_missing_columns_mean_null_keys_now_and_consecutive_offsets():
    import time
    before = int(time.time() * 1000)
    data = build_batch([b"a", b"b"], base_offset=5)
    after = int(time.time() * 1000)
    (batch,) = kafkarec.iter_batches(data)
    got = list(batch)
    assert [r.offset for r in got] == [5, 6]
    assert [r.key for r in got] == [None, None]
    assert [r.value for r in got] == [b"a", b"b"]
    assert all(before <= r.timestamp <= after for r in got)
    assert [r.headers for r in got] == [[], []]


def test_bytearray_and_memoryview_inputs():
    records = [R(0, T0, b"key", b"value", (("h", b"hv"),))]
    expected = build_append(records)
    builder = RecordBatchBuilder()
    builder.append(memoryview(b"value"), bytearray(b"key"), timestamp=T0,
                   headers=[("h", bytearray(b"hv"))])
    assert builder.build() == expected
    assert build_batch([bytearray(b"value")], [memoryview(b"key")], [T0], [[("h", b"hv")]]) == expected


# --------------------------------------------------- 6. invalid arguments


def _append_all(builder, *records):
    for r in records:
        builder.append(r.value, r.key, timestamp=r.timestamp, offset=r.offset)
    return builder


INVALID = {
    "decreasing offset": (
        lambda: _append_all(RecordBatchBuilder(), R(5, T0, b"k", b"v"), R(4, T0, b"k", b"v")),
        r"Illegal offset 4 following previous offset 5 \(Offsets must increase monotonically\)"),
    "equal offset": (
        lambda: _append_all(RecordBatchBuilder(), R(5, T0, b"k", b"v"), R(5, T0, b"k", b"v")),
        r"Illegal offset 5 following previous offset 5"),
    "offset below base offset": (
        lambda: _append_all(RecordBatchBuilder(base_offset=10), R(9, T0, b"k", b"v")),
        r"offset 9 is below the batch's base offset 10"),
    "offset delta past int32": (
        lambda: _append_all(RecordBatchBuilder(), R(0, T0, b"k", b"v"), R(2**31, T0, b"k", b"v")),
        r"Maximum offset delta exceeded"),
    "negative timestamp": (
        lambda: _append_all(RecordBatchBuilder(), R(0, -2, b"k", b"v")),
        r"Invalid negative timestamp -2"),
    "very negative timestamp": (
        lambda: _append_all(RecordBatchBuilder(), R(0, T0, b"k", b"v"), R(1, -(2**63), b"k", b"v")),
        r"Invalid negative timestamp -9223372036854775808"),
    "negative timestamp (extend lists)": (
        lambda: build_batch([b"a", b"b"], timestamps=[T0, -5]), r"Invalid negative timestamp -5"),
    "negative timestamp (extend arrays)": (
        lambda: build_batch(pa.array([b"a", b"b"]), timestamps=pa.array([T0, -5], pa.int64())),
        r"Invalid negative timestamp -5"),
    "transactional without producer id": (
        lambda: RecordBatchBuilder(is_transactional=True),
        r"Cannot write transactional messages without a valid producer ID"),
    "producer id without epoch": (
        lambda: RecordBatchBuilder(producer_id=1, base_sequence=0),
        r"Invalid negative producer epoch"),
    "producer id without sequence": (
        lambda: RecordBatchBuilder(producer_id=1, producer_epoch=0),
        r"Invalid negative sequence number used"),
    "data record in a control batch (append)": (
        lambda: RecordBatchBuilder(is_control=True).append(b"v"),
        r"control batch takes control records only"),
    "data records in a control batch (extend)": (
        lambda: RecordBatchBuilder(is_control=True).extend([b"v"]),
        r"control batch takes control records only"),
    "null header key": (
        lambda: RecordBatchBuilder().append(b"v", headers=[(None, b"x")]),
        r"Invalid null header key found in headers"),
    "no timestamp type": (
        lambda: RecordBatchBuilder(timestamp_type=TimestampType.NO_TIMESTAMP_TYPE),
        r"CREATE_TIME or LOG_APPEND_TIME"),
    "log_append_time without LOG_APPEND_TIME": (
        lambda: RecordBatchBuilder(log_append_time=5), r"LOG_APPEND_TIME"),
    "append after build": (
        lambda: append_after_build(RecordBatchBuilder(), T0), r"already built"),
    "keys column length": (
        lambda: build_batch([b"a", b"b"], keys=[b"k"]), r"keys has 1 items, values has 2"),
    "timestamps column length": (
        lambda: build_batch(pa.array([b"a", b"b"]), timestamps=pa.array([1], pa.int64())),
        r"timestamps has 1 items, values has 2"),
    "headers column length": (
        lambda: build_batch([b"a", b"b"], headers=[[]]), r"headers has 1 items, values has 2"),
    "nulls in an int64 column": (
        lambda: build_batch(pa.array([b"a"]), timestamps=pa.array([None], pa.int64())),
        r"timestamps must not contain nulls"),
    "non-binary arrow column": (
        lambda: build_batch(pa.array([1, 2])), r"values must be a binary or string array"),
    "decreasing offsets column": (
        lambda: build_batch([b"a", b"b"], offsets=[3, 3], base_offset=3), r"Illegal offset 3"),
    # Java: DefaultRecordBatch.writeHeader rejects a base timestamp < 0 other than -1.
    "negative delete horizon": (
        lambda: _append_all(RecordBatchBuilder(delete_horizon_ms=-5), R(0, T0, b"k", b"v")).build(),
        r"-5"),
    # Java: CompressionType.forId -> "Unknown compression type id: 5"
    "unknown codec id": (lambda: RecordBatchBuilder(compression=5), r"5"),
    # Java: GzipCompression.Builder.level accepts 1..9 or -1
    "gzip level out of range": (
        lambda: _append_all(RecordBatchBuilder(compression=Compression.GZIP, compression_level=15),
                            R(0, T0, b"k", b"v")).build(), r"15"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_arguments_raise_encode_error(case):
    assert_encode_error(INVALID, case)


def test_rejected_append_leaves_the_builder_usable():
    builder = RecordBatchBuilder(base_offset=3)
    builder.append(b"a", b"k", timestamp=T0)
    for bad in (dict(offset=3), dict(offset=2), dict(timestamp=-7), dict(headers=[(None, b"")])):
        with pytest.raises(EncodeError):
            builder.append(b"bad", b"k", **{"timestamp": T0, **bad})
    builder.append(b"b", b"k", timestamp=T0 + 1)
    assert builder.record_count == 2
    data = builder.build()
    assert data == build_append([R(3, T0, b"k", b"a"), R(4, T0 + 1, b"k", b"b")], base_offset=3)


# ------------------------------------------------------- has_room_for


def _record_size(offset_delta, timestamp_delta, key, value, headers=()):
    """DefaultRecord.sizeInBytes: the exact encoded size of one record."""
    return len(F.encode_record(offset_delta, timestamp_delta, key, value, list(headers)))


def test_first_record_always_fits():
    builder = RecordBatchBuilder(max_batch_size=10)
    assert builder.has_room_for(b"x" * 1000, b"k")
    builder.append(b"x" * 1000, b"k", timestamp=T0)
    assert builder.size_in_bytes > 10
    assert not builder.has_room_for(b"")
    with pytest.raises(EncodeError, match="does not fit"):
        builder.append(b"", timestamp=T0)
    data = builder.build()
    assert [r.value for r in next(kafkarec.iter_batches(data))] == [b"x" * 1000]


def test_has_room_for_agrees_with_append_and_bounds_the_batch():
    limit = 1024
    builder = RecordBatchBuilder(max_batch_size=limit)
    appended = 0
    for i in range(1000):
        value, headers = b"v" * (i % 37), [("h", b"x" * (i % 5))]
        if builder.has_room_for(value, b"key", timestamp=T0 + i, headers=headers):
            builder.append(value, b"key", timestamp=T0 + i, headers=headers)
            appended += 1
        else:
            with pytest.raises(EncodeError, match="does not fit"):
                builder.append(value, b"key", timestamp=T0 + i, headers=headers)
            break
    else:
        pytest.fail("the batch never filled up")
    assert appended > 5
    data = builder.build()
    assert len(data) <= limit
    assert len(list(next(kafkarec.iter_batches(data)))) == appended


def test_has_room_for_uses_the_exact_record_size_like_java():
    # MemoryRecordsBuilder.hasRoomFor: writeLimit >= estimatedBytesWritten()
    #   + DefaultRecord.sizeInBytes(nextOffsetDelta, timestampDelta, key, value, headers)
    first = RecordBatchBuilder()
    first.append(b"first", b"k", timestamp=T0)
    used = first.size_in_bytes
    nxt = _record_size(1, 5, b"k2", b"second", [("h", b"v")])
    fits = RecordBatchBuilder(max_batch_size=used + nxt)
    fits.append(b"first", b"k", timestamp=T0)
    assert fits.has_room_for(b"second", b"k2", timestamp=T0 + 5, headers=[("h", b"v")])
    fits.append(b"second", b"k2", timestamp=T0 + 5, headers=[("h", b"v")])
    assert len(fits.build()) == used + nxt
    tight = RecordBatchBuilder(max_batch_size=used + nxt - 1)
    tight.append(b"first", b"k", timestamp=T0)
    assert not tight.has_room_for(b"second", b"k2", timestamp=T0 + 5, headers=[("h", b"v")])


def test_no_limit_without_max_batch_size():
    builder = RecordBatchBuilder()
    builder.append(b"x" * 100_000, timestamp=T0)
    assert builder.has_room_for(b"y" * 10_000_000)


def test_has_room_for_estimates_a_compressed_batch_as_kafkas_producer():
    """MemoryRecordsBuilder.estimatedBytesWritten: header + (int) (uncompressed * ratio * 1.05f)
    for a compressed batch; the uncompressed size itself without compression."""
    import numpy as np
    value = b"x" * 1000

    def records_that_fit(compression, ratio):
        b = kafkarec.RecordBatchBuilder(compression=compression, max_batch_size=16384,
                                        estimated_compression_ratio=ratio)
        while b.has_room_for(value, timestamp=0):
            b.append(value, timestamp=0)
        return b.record_count, b.size_in_bytes - 61

    n, uncompressed = records_that_fit(kafkarec.Compression.ZSTD, 0.25)
    estimate = int(np.float32(uncompressed) * np.float32(0.25) * np.float32(1.05))
    assert 61 + estimate <= 16384 and n > 50            # about 4x the records of an uncompressed batch
    assert records_that_fit(kafkarec.Compression.NONE, 0.25)[0] == records_that_fit(kafkarec.Compression.NONE, 1.0)[0] == 16
    assert records_that_fit(kafkarec.Compression.ZSTD, 1.0)[0] == 15     # 1.05 x the uncompressed bytes
    for bad in (0.0, -1.0, float("nan"), float("inf"), None, "x"):
        with pytest.raises(kafkarec.EncodeError, match="estimated_compression_ratio"):
            kafkarec.RecordBatchBuilder(compression=kafkarec.Compression.ZSTD, estimated_compression_ratio=bad)
    with pytest.raises(TypeError):          # final, as before: no subclass slows its per-record calls
        type("Sub", (kafkarec.RecordBatchBuilder,), {})


def test_lz4_level_1_without_pyarrow_names_the_write_and_the_package():
    """Writing lz4 at level 1 or 2 needs pyarrow's LZ4 codec: without it, the error says it is
    the write that needs it (not "decoding"), and names the package."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['pyarrow'] = None\n"
            "import kafkarec\n"
            "from kafkarec.errors import CodecUnavailableError\n"
            "try:\n"
            "    kafkarec.build_batch([b'v'], compression=kafkarec.Compression.LZ4, compression_level=1)\n"
            "except CodecUnavailableError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("writing lz4 at level 1 or 2 needs the 'pyarrow' package (pip install pyarrow)"), \
        out.stdout


def _resident_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def test_zstd_large_window_contexts_go_with_their_batch():
    """Issue 67, finding 45: a zstd context for an unknown content size (Kafka's stream) holds the
    level's window and tables, 90 MB at level 19 and 850 MB at 22; the writer kept one per level
    and thread for the process's life.  Small ones (level 3: ~1.3 MB, rebuilt per batch it would
    cost more than the batch) are still kept; a large one goes with its batch, as Kafka's producer
    frees its context when the batch closes, unless a holder (the what-if) keeps it."""
    from kafkarec._core import ZSTD_KEPT_CONTEXT_BYTES, zstd_context, zstd_contexts_held
    build_batch([b"x" * 100], timestamps=[0], compression=Compression.ZSTD)
    assert 0 < zstd_contexts_held()[3] <= ZSTD_KEPT_CONTEXT_BYTES
    for level in (19, 20, 21, 22):     # zstd's own estimate: 80, 160, 320 and 640 MB
        size = zstandard.ZstdCompressionParameters.from_level(level).estimated_compression_context_size()
        assert size > 4 * ZSTD_KEPT_CONTEXT_BYTES
    before = _resident_bytes()
    b = RecordBatchBuilder(compression=Compression.ZSTD, compression_level=19)
    b.append(b"x" * 100, timestamp=0)
    one = b.build()
    del b
    assert 19 not in zstd_contexts_held()
    assert _resident_bytes() - before < 32 << 20          # it kept ~120 MB resident
    held = zstd_context(19)
    assert build_batch([b"x" * 100], timestamps=[0], compression=Compression.ZSTD, compression_level=19) == one
    assert zstd_contexts_held()[19] > 64 << 20            # one context for the holder's batches
    del held
    assert 19 not in zstd_contexts_held()
    assert _resident_bytes() - before < 32 << 20
