"""v2 (and legacy) batches whose payload was compressed by Kafka's Java libraries.

The ``java_codec`` fixture runs snappy-java, lz4-java (through Kafka's own LZ4
framing), zstd-jni and java.util.zip in a JVM.  The records section each test
compresses is taken from a kafka-python-built uncompressed batch, and the
61-byte v2 header around the Java payload is rebuilt by tests/support/oracles/foreign.py with
struct + crc32c.  The compressed batch must decode exactly like the
uncompressed one.  Framing quirks (xerial headers, concatenated streams, the
KAFKA-3160 LZ4 checksum, linked LZ4 blocks), decompression bombs and garbage
follow Kafka's Java readers (reference §1.9): every failure must be a
DecompressionError (or another DecodeError), never a crash.
"""

import gzip
import random
import struct
import sys
import time
import zlib

import lz4.block
import lz4.frame
import pytest
import snappy
import xxhash
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import Compression

from support.oracles import foreign as F
from support.oracles.gil import assert_lets_go
from support.oracles import reference as R
from support.oracles.javacodec import JavaCodecError

Rec = F.Rec
T0 = 1_650_000_000_000
_rng = random.Random(3160)
XERIAL_MAGIC = b"\x82SNAPPY\x00"

# --------------------------------------------------------------- sections


def _many_small_records():
    words = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot", b"golf"]
    out = []
    for i in range(4000):
        value = b" ".join(words[(i * j) % 7] for j in range(1, 12)) + b" #%d" % i
        if i % 50 == 0:
            value += _rng.randbytes(300)  # incompressible stretches: stored/literal paths
        out.append(Rec(i, T0 + (i * 37) % 5000 - 2500, b"user-%d" % (i % 97) if i % 9 else None,
                       value if i % 13 else None,
                       [("trace", b"%08x" % i), ("région", None)] if i % 5 == 0 else []))
    return out


def _few_large_records():
    text = b"".join(b"line %d of a long document, compressible text\n" % i for i in range(8000))
    return [Rec(0, T0, b"doc-1", text),
            Rec(1, T0 + 1, b"blob", _rng.randbytes(200_000)),
            Rec(2, T0 + 2, None, text[:150_000] + _rng.randbytes(50_000) + text[:150_000]),
            Rec(5, T0 + 3, b"tail", b"end")]


class Section:
    """An uncompressed kafka-python batch and what kafkarec reads from it."""

    def __init__(self, records):
        built = F.kp_v2(records, producer_id=4_000_000_001, producer_epoch=12,
                        base_sequence=1_000_000)
        self.batch = F.patch_v2(built, base_offset=10**9, partition_leader_epoch=7)
        self.records = records
        self.section = F.records_section(self.batch)
        ((self.header, self.got),) = F.kr_view(self.batch)
        # Sanity: kafka-python reads the reference batch the same way.
        F.assert_agrees(F.kr_view(self.batch), F.kp_view(self.batch), "kafka-python")
        F.assert_records_equal(self.got, F.expected_v2_records(
            records, base_offset=10**9, base_sequence=1_000_000))

    def wrap(self, payload, codec: int) -> bytes:
        """The same batch, its records section replaced by `payload` under `codec`."""
        return F.patch_v2(self.batch, payload=payload, set_attributes=codec)


SECTIONS = {"many-small": Section(_many_small_records()),
            "few-large": Section(_few_large_records())}
section_params = pytest.mark.parametrize("name", list(SECTIONS))
SMALL = SECTIONS["many-small"]

HEADER_FIELDS_KEPT = ("base_offset", "last_offset_delta", "last_offset", "next_offset",
                      "partition_leader_epoch", "magic", "base_timestamp", "max_timestamp",
                      "producer_id", "producer_epoch", "base_sequence", "last_sequence",
                      "record_count", "timestamp_type", "is_transactional", "is_control")


def assert_decodes_like_uncompressed(sec: Section, data: bytes, codec: int, **kwargs) -> None:
    ((batch, got),) = F.kr_view(data, **kwargs)
    assert batch["crc_valid"] is True
    assert batch["compression"] == codec
    assert batch["size_in_bytes"] == len(data)
    for name in HEADER_FIELDS_KEPT:
        assert batch[name] == sec.header[name], name
    assert len(got) == len(sec.got)
    for i, (g, e) in enumerate(zip(got, sec.got)):
        assert g == e, f"record {i} differs"


# ------------------------------------------------------ Java payloads


JAVA_VARIANTS = [
    ("snappy-xerial", Compression.SNAPPY, {"block_size": 1024}),
    ("snappy-xerial", Compression.SNAPPY, {"block_size": 4096}),
    ("snappy-xerial", Compression.SNAPPY, {}),  # Kafka's 32 KiB
    ("snappy-xerial", Compression.SNAPPY, {"block_size": 65536}),
    ("snappy-xerial", Compression.SNAPPY, {"block_size": 1 << 20}),
    ("snappy-raw", Compression.SNAPPY, {}),
    ("lz4-frame", Compression.LZ4, {}),  # Kafka's default: fast compressor, 64 KiB blocks
    ("lz4-frame", Compression.LZ4, {"level": 1}),
    ("lz4-frame", Compression.LZ4, {"level": 17}),
    ("lz4-frame", Compression.LZ4, {"block_checksum": True}),
    ("lz4-java-frame", Compression.LZ4, {}),
    ("lz4-java-frame", Compression.LZ4, {"block_size": "256KB"}),
    ("lz4-java-frame", Compression.LZ4, {"block_size": "4MB"}),
    ("lz4-java-frame", Compression.LZ4, {"block_checksum": True}),
    ("lz4-java-frame", Compression.LZ4, {"content_checksum": True}),
    ("lz4-java-frame", Compression.LZ4, {"content_size": True}),
    ("lz4-java-frame", Compression.LZ4,
     {"content_size": True, "content_checksum": True, "block_checksum": True}),
    ("zstd", Compression.ZSTD, {"level": 1}),
    ("zstd", Compression.ZSTD, {}),  # Kafka's level 3
    ("zstd", Compression.ZSTD, {"level": 19}),
    ("zstd", Compression.ZSTD, {"level": -5}),
    ("zstd", Compression.ZSTD, {"checksum": True}),
    ("gzip", Compression.GZIP, {}),
    ("gzip", Compression.GZIP, {"level": 1}),
    ("gzip", Compression.GZIP, {"level": 9}),
]


def _variant_id(v):
    codec, _, opts = v
    return codec + "".join(f"-{k}={val}" for k, val in opts.items())


@section_params
@pytest.mark.parametrize("variant", JAVA_VARIANTS, ids=[_variant_id(v) for v in JAVA_VARIANTS])
def test_java_compressed_batch_decodes_like_uncompressed(java_codec, name, variant):
    codec, codec_id, opts = variant
    sec = SECTIONS[name]
    payload = java_codec.compress(codec, sec.section, **opts)
    assert len(payload) < len(sec.section)
    if codec == "zstd":
        # Java streams: no content size in the frame header.
        assert zstandard.get_frame_parameters(payload).content_size == zstandard.CONTENTSIZE_UNKNOWN
    if codec == "snappy-xerial":
        assert payload[:8] == XERIAL_MAGIC
    assert_decodes_like_uncompressed(sec, sec.wrap(payload, codec_id), codec_id)


def _split(data: bytes, n: int) -> list:
    cuts = sorted(_rng.sample(range(1, len(data)), n - 1))
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


@section_params
@pytest.mark.parametrize("codec,codec_id,opts", [
    ("zstd", Compression.ZSTD, [{"level": 1}, {}, {"level": 19}]),
    ("gzip", Compression.GZIP, [{"level": 1}, {}, {"level": 9}]),
    ("snappy-xerial", Compression.SNAPPY, [{"block_size": 1024}, {}, {"block_size": 65536}]),
], ids=["zstd-frames", "gzip-members", "xerial-streams"])
def test_concatenated_java_streams(java_codec, name, codec, codec_id, opts):
    # Several frames / members / xerial streams back to back, cut at arbitrary
    # bytes (not record boundaries); Java's stream readers read on across them.
    sec = SECTIONS[name]
    parts = _split(sec.section, 3)
    payload = b"".join(java_codec.compress(codec, part, **o) for part, o in zip(parts, opts))
    assert java_codec.decompress(codec, payload) == sec.section
    assert_decodes_like_uncompressed(sec, sec.wrap(payload, codec_id), codec_id)


def test_many_small_zstd_frames(java_codec):
    parts = _split(SMALL.section, 40)
    payload = b"".join(java_codec.compress("zstd", p) for p in parts)
    assert_decodes_like_uncompressed(SMALL, SMALL.wrap(payload, Compression.ZSTD), Compression.ZSTD)


@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_gzip_with_an_empty_member(java_codec, position):
    # GZIPInputStream reads an empty member like any other.
    parts = _split(SMALL.section, 2)
    members = [java_codec.compress("gzip", p) for p in parts]
    empty = java_codec.compress("gzip", b"")
    members.insert({"first": 0, "middle": 1, "last": 2}[position], empty)
    payload = b"".join(members)
    assert java_codec.decompress("gzip", payload) == SMALL.section
    assert_decodes_like_uncompressed(SMALL, SMALL.wrap(payload, Compression.GZIP), Compression.GZIP)


GZIP_TAILS = {
    "zeros": b"\x00" * 40,
    "text": b"not a gzip member at all, just trailing junk",
    "bad-method": b"\x1f\x8b\x09\x00" + b"\x00" * 36,
    "corrupt-header-crc": b"\x1f\x8b\x08\x02" + b"\x00" * 6 + b"\xde\xad" + b"\x00" * 28,
}


@pytest.mark.parametrize("tail", list(GZIP_TAILS))
def test_gzip_trailing_bytes_that_are_not_a_member_header_are_ignored(java_codec, tail):
    # JDK GZIPInputStream.readTrailer: bytes after a member that fail to parse
    # as a gzip header are ignored (reference §1.9).
    payload = java_codec.compress("gzip", SMALL.section) + GZIP_TAILS[tail]
    assert java_codec.decompress("gzip", payload) == SMALL.section
    assert_decodes_like_uncompressed(SMALL, SMALL.wrap(payload, Compression.GZIP), Compression.GZIP)


def test_gzip_trailing_member_with_broken_deflate_data_is_an_error(java_codec):
    # A valid header starts a member; its data must then decode (Java throws too).
    payload = (java_codec.compress("gzip", SMALL.section)
               + b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"garbage" * 6)
    with pytest.raises(JavaCodecError):
        java_codec.decompress("gzip", payload)
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(SMALL.wrap(payload, Compression.GZIP))))


# ------------------------------------------------------------- xerial


@pytest.mark.parametrize("fields", [struct.pack("<ii", 1, 1), struct.pack(">ii", 1, 2),
                                    struct.pack(">ii", 7, 1)],
                         ids=["little-endian", "compatible-2", "version-7"])
def test_xerial_header_version_fields_are_not_checked(java_codec, fields):
    # Redpanda once wrote the version fields little-endian (kafka-python#2414);
    # Java only needs the magic (and a version >= 1 read big-endian).
    blob = java_codec.compress("snappy-xerial", SMALL.section, block_size=8192)
    odd = blob[:8] + fields + blob[16:]
    assert java_codec.decompress("snappy-xerial", odd) == SMALL.section
    assert_decodes_like_uncompressed(SMALL, SMALL.wrap(odd, Compression.SNAPPY), Compression.SNAPPY)


def test_concatenated_xerial_streams_with_little_endian_second_header(java_codec):
    first, second = _split(SMALL.section, 2)
    b2 = java_codec.compress("snappy-xerial", second)
    payload = java_codec.compress("snappy-xerial", first) + b2[:8] + struct.pack("<ii", 1, 1) + b2[16:]
    assert java_codec.decompress("snappy-xerial", payload) == SMALL.section
    assert_decodes_like_uncompressed(SMALL, SMALL.wrap(payload, Compression.SNAPPY), Compression.SNAPPY)


def test_raw_snappy_of_a_short_section(java_codec):
    # Under 16 bytes there is no room for a xerial header: always raw.
    tiny = F.kp_v2([Rec(0, T0, None, b"x")])
    section = F.records_section(tiny)
    payload = java_codec.compress("snappy-raw", section)
    assert len(payload) < 16
    data = F.patch_v2(tiny, payload=payload, set_attributes=Compression.SNAPPY)
    ((batch, got),) = F.kr_view(data)
    assert [r["value"] for r in got] == [b"x"] and batch["compression"] == Compression.SNAPPY


# ---------------------------------------------------------------- lz4


def _hc(descriptor: bytes) -> int:
    return (xxhash.xxh32_intdigest(descriptor) >> 8) & 0xFF


def _legacy_inner_set():
    records = [Rec(i, T0 + i, b"k%d" % i, b"legacy lz4 value %d " % i * 10) for i in range(200)]
    inner = F.kp_legacy(0, records)  # magic-0 messages from kafka-python
    return records, inner


def test_magic0_wrapper_with_broken_lz4_header_checksum(java_codec):
    # KAFKA-3160: Kafka 0.8/0.9 computed the LZ4 header checksum over the magic
    # too; Java ignores the checksum for magic 0.
    records, inner = _legacy_inner_set()
    frame = java_codec.compress("lz4-frame-broken-hc", inner)
    assert frame[6] == _hc(frame[0:6]) != _hc(frame[4:6])
    wrapper = F.legacy_message(0, 199, key=None, value=frame, attributes=F.LZ4)
    ((batch, got),) = F.kr_view(wrapper)
    assert batch["magic"] == 0 and batch["compression"] == Compression.LZ4
    assert batch["base_offset"] == 0 and batch["last_offset"] == 199
    expected = F.kr_view(inner)  # the same messages, uncompressed
    assert [r for _, rs in expected for r in rs] == got
    assert [r["value"] for r in got] == [r.value for r in records]
    # kafka-python's reader agrees.
    F.assert_agrees(F.kr_view(wrapper), F.kp_view(wrapper), "kafka-python")


def test_magic0_wrapper_ignores_any_lz4_header_checksum(java_codec):
    _, inner = _legacy_inner_set()
    standard = java_codec.compress("lz4-frame", inner)
    garbled = standard[:6] + bytes([standard[6] ^ 0x5A]) + standard[7:]
    for frame in (standard, garbled):
        wrapper = F.legacy_message(0, 199, key=None, value=frame, attributes=F.LZ4)
        ((_, got),) = F.kr_view(wrapper)
        assert len(got) == 200


def test_broken_lz4_header_checksum_is_rejected_for_magic_1_and_2(java_codec):
    _, inner = _legacy_inner_set()
    frame = java_codec.compress("lz4-frame-broken-hc", inner)
    with pytest.raises(JavaCodecError, match="header checksum"):
        java_codec.decompress("lz4-frame", frame)
    v1 = F.legacy_message(1, 0, key=None, value=frame, attributes=F.LZ4, timestamp=T0)
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(v1)))
    v2 = SMALL.wrap(java_codec.compress("lz4-frame-broken-hc", SMALL.section), Compression.LZ4)
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(v2)))


def test_lz4_linked_blocks_are_rejected_as_kafka_does(java_codec):
    linked = lz4.frame.compress(SMALL.section, block_linked=True,
                                block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    assert not linked[4] & 0x20  # block independence flag clear
    with pytest.raises(JavaCodecError, match="dependent blocks"):
        java_codec.decompress("lz4-frame", linked)
    data = SMALL.wrap(linked, Compression.LZ4)
    (batch,) = kafkarec.iter_batches(data)
    with pytest.raises(kafkarec.DecompressionError) as info:
        list(batch)
    assert info.value.position == 0


def test_lz4_content_checksum_is_not_verified_as_in_kafka(java_codec):
    # Lz4BlockInputStream reads the content checksum but does not check it.
    frame = java_codec.compress("lz4-java-frame", SMALL.section, content_checksum=True)
    assert frame[4] & 0x04
    bad = frame[:-4] + bytes(b ^ 0xFF for b in frame[-4:])
    assert_decodes_like_uncompressed(SMALL, SMALL.wrap(bad, Compression.LZ4), Compression.LZ4)


def test_lz4_content_size_is_skipped_unchecked_as_in_kafka(java_codec):
    frame = java_codec.compress("lz4-java-frame", SMALL.section, content_size=True)
    assert frame[4] & 0x08 and struct.unpack_from("<Q", frame, 6)[0] == len(SMALL.section)
    descriptor = frame[4:6] + struct.pack("<Q", 12345)
    lying = frame[:4] + descriptor + bytes([_hc(descriptor)]) + frame[15:]
    assert_decodes_like_uncompressed(SMALL, SMALL.wrap(lying, Compression.LZ4), Compression.LZ4)


def test_lz4_block_checksum_mismatch_is_an_error(java_codec):
    frame = bytearray(java_codec.compress("lz4-frame", SMALL.section, block_checksum=True))
    (size,) = struct.unpack_from("<I", frame, 7)
    checksum_at = 7 + 4 + (size & 0x7FFFFFFF)
    frame[checksum_at] ^= 0x01
    with pytest.raises(JavaCodecError, match="[Cc]hecksum"):
        java_codec.decompress("lz4-frame", bytes(frame))
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(SMALL.wrap(bytes(frame), Compression.LZ4))))


def test_lz4_reading_stops_at_the_first_end_mark(java_codec):
    # Lz4BlockInputStream never reads a second frame, so records in it are
    # missing: "premature EOF" for the declared count.
    first, second = _split(SMALL.section, 2)
    payload = java_codec.compress("lz4-frame", first) + java_codec.compress("lz4-frame", second)
    with pytest.raises(kafkarec.InvalidRecordError):
        list(next(kafkarec.iter_batches(SMALL.wrap(payload, Compression.LZ4))))


def test_a_corrupt_lz4_block_is_named_with_its_place(java_codec):
    frame = bytearray(java_codec.compress("lz4-frame", SMALL.section))
    at, sizes = 7, []
    while (word := struct.unpack_from("<I", frame, at)[0]) != 0:
        sizes.append((at, word))
        at += 4 + (word & 0x7FFFFFFF)
    at, word = sizes[1]
    assert len(sizes) > 2 and not word & 0x80000000      # a compressed block between others
    frame[at + 4:at + 4 + word] = b"\xff" * word          # literal lengths past the block's end
    with pytest.raises(JavaCodecError):
        java_codec.decompress("lz4-frame", bytes(frame))
    with pytest.raises(kafkarec.DecompressionError) as info:
        list(next(kafkarec.iter_batches(SMALL.wrap(bytes(frame), Compression.LZ4))))
    assert info.value.position == 0
    assert f"lz4 payload does not decompress: block 1 at payload byte {at} is corrupt" in str(info.value)


def _kafka_lz4_frame(section: bytes) -> bytes:
    """Kafka's Lz4BlockOutputStream layout (64 KiB independent blocks, no checksums),
    each distinct block compressed once."""
    compressed, out = {}, [b"\x04\x22\x4d\x18\x60\x40", bytes([_hc(b"\x60\x40")])]
    for at in range(0, len(section), 1 << 16):
        block = section[at:at + (1 << 16)]
        if block not in compressed:
            compressed[block] = lz4.block.compress(block, store_size=False)
        out += [struct.pack("<I", len(compressed[block])), compressed[block]]
    return b"".join(out + [bytes(4)])


def test_lz4_decompresses_without_holding_the_gil():
    """Another Python thread keeps running while a big lz4 batch decompresses: the longest
    it waits is well under the decode's time (lz4's frame decoder held the GIL while it
    copied its whole output: about 0.1 s of a 0.25 s decode here)."""
    value = (b"kafka record batch lz4 68 " * 2600)[:1 << 16] * 768    # 48 MiB, 64 KiB-periodic
    batch = kafkarec.build_batch([value], timestamps=[T0])
    section = R.records_section(batch)
    data = R.patch_v2(batch, payload=_kafka_lz4_frame(section), set_attributes=Compression.LZ4)

    def decode():
        (b,) = kafkarec.iter_batches(data, verify_crc=False, max_decompressed_bytes=64 << 20)
        started = time.perf_counter()
        assert kafkarec.scan_records(b) == (1, len(section))
        return time.perf_counter() - started

    assert_lets_go(decode, 4)

COUNT_VARIANTS = [("gzip", Compression.GZIP), ("snappy-xerial", Compression.SNAPPY),
                  ("lz4-frame", Compression.LZ4), ("zstd", Compression.ZSTD)]


@pytest.mark.parametrize("codec,codec_id", COUNT_VARIANTS, ids=[c for c, _ in COUNT_VARIANTS])
@pytest.mark.parametrize("delta", [+1, -1])
def test_declared_count_that_lies_in_a_compressed_batch(java_codec, codec, codec_id, delta):
    # DefaultRecordBatch: more declared than present -> "premature EOF";
    # fewer -> "records still remaining" once the last declared one is read.
    payload = java_codec.compress(codec, SMALL.section)
    data = F.patch_v2(SMALL.wrap(payload, codec_id),
                      record_count=len(SMALL.records) + delta)
    (batch,) = kafkarec.iter_batches(data)
    records = iter(batch)
    for expected in SMALL.got[:batch.record_count - 1]:  # all but the last declared record
        assert next(records).offset == expected["offset"]
    match = "premature EOF" if delta > 0 else "still remaining"
    with pytest.raises(kafkarec.InvalidRecordError, match=match):
        list(records)


# ---------------------------------------------------------------- bombs

BOMB_VARIANTS = [("gzip", Compression.GZIP), ("snappy-xerial", Compression.SNAPPY),
                 ("snappy-raw", Compression.SNAPPY), ("lz4-frame", Compression.LZ4),
                 ("zstd", Compression.ZSTD)]
bomb_params = pytest.mark.parametrize("codec,codec_id", BOMB_VARIANTS,
                                      ids=[c for c, _ in BOMB_VARIANTS])


@bomb_params
def test_java_bomb_hits_the_budget(java_codec, codec, codec_id):
    zeros = bytes(16 << 20)
    payload = java_codec.compress(codec, zeros)
    assert len(payload) < 1 << 20  # small on the wire
    data = F.v2_batch(payload, record_count=1, last_offset_delta=0, attributes=codec_id)
    (batch,) = kafkarec.iter_batches(data, max_decompressed_bytes=1 << 20)
    with pytest.raises(kafkarec.DecompressionLimitError) as info:
        list(batch)
    assert isinstance(info.value, kafkarec.DecompressionError)
    assert info.value.position == 0


def _python_bomb(codec_id, n):
    zeros = bytes(n)
    if codec_id == Compression.GZIP:
        return gzip.compress(zeros, compresslevel=9)
    if codec_id == Compression.SNAPPY:
        return snappy.compress(zeros)
    if codec_id == Compression.LZ4:
        return lz4.frame.compress(zeros, block_linked=False, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    return zstandard.ZstdCompressor(write_content_size=False).compress(zeros)


@pytest.mark.parametrize("codec_id", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4,
                                      Compression.ZSTD], ids=["gzip", "snappy", "lz4", "zstd"])
def test_default_budget_is_64_mib(codec_id):
    limit = kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES
    assert limit == 64 << 20
    payload = _python_bomb(codec_id, limit + 1)
    assert len(payload) < 4 << 20
    data = F.v2_batch(payload, record_count=1, last_offset_delta=0, attributes=codec_id)
    with pytest.raises(kafkarec.DecompressionLimitError):
        list(next(kafkarec.iter_batches(data)))


@bomb_params
def test_budget_boundary_is_exact(java_codec, codec, codec_id):
    payload = java_codec.compress(codec, SMALL.section)
    data = SMALL.wrap(payload, codec_id)
    n = len(SMALL.section)
    assert_decodes_like_uncompressed(SMALL, data, codec_id, max_decompressed_bytes=n)
    with pytest.raises(kafkarec.DecompressionLimitError):
        list(next(kafkarec.iter_batches(data, max_decompressed_bytes=n - 1)))


def test_legacy_wrapper_java_bomb(java_codec):
    inner = F.legacy_message(1, 0, key=None, value=bytes(8 << 20), timestamp=T0)
    payload = java_codec.compress("gzip", inner)
    data = F.legacy_message(1, 0, key=None, value=payload, attributes=F.GZIP, timestamp=T0)
    with pytest.raises(kafkarec.DecompressionLimitError):
        list(next(kafkarec.iter_batches(data, max_decompressed_bytes=1 << 20)))


# ------------------------------------------------- lying sizes, garbage


def _raw_snappy_with_preamble(blob: bytes, claimed: int) -> bytes:
    pos = 0
    while blob[pos] & 0x80:
        pos += 1
    return F.uvarint(claimed) + blob[pos + 1:]


@pytest.mark.parametrize("delta", [+1, +1000, -1, -1000])
def test_raw_snappy_preamble_that_lies(java_codec, delta):
    blob = java_codec.compress("snappy-raw", SMALL.section)
    lying = _raw_snappy_with_preamble(blob, len(SMALL.section) + delta)
    with pytest.raises(JavaCodecError):
        java_codec.decompress("snappy-raw", lying)
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(SMALL.wrap(lying, Compression.SNAPPY))))


def test_raw_snappy_preamble_claiming_4_gib_is_refused_before_allocating(java_codec):
    blob = java_codec.compress("snappy-raw", SMALL.section)
    lying = _raw_snappy_with_preamble(blob, 2**32 - 1)
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(SMALL.wrap(lying, Compression.SNAPPY))))


@pytest.mark.parametrize("what", ["length-past-end", "negative-length", "inner-preamble"])
def test_xerial_block_that_lies(java_codec, what):
    blob = bytearray(java_codec.compress("snappy-xerial", SMALL.section, block_size=4096))
    (first_len,) = struct.unpack_from(">i", blob, 16)
    second = 16 + 4 + first_len  # the second block's length field
    if what == "length-past-end":
        struct.pack_into(">i", blob, second, len(blob))
    elif what == "negative-length":
        struct.pack_into(">i", blob, second, -5)
    else:
        block = bytes(blob[20:20 + first_len])
        lied = _raw_snappy_with_preamble(block, 4096 + 7)
        blob = blob[:16] + struct.pack(">i", len(lied)) + lied + blob[20 + first_len:]
    with pytest.raises(JavaCodecError):
        java_codec.decompress("snappy-xerial", bytes(blob))
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(SMALL.wrap(bytes(blob), Compression.SNAPPY))))


@pytest.mark.parametrize("what", ["block-over-max", "block-past-end", "no-end-mark"])
def test_lz4_block_sizes_that_lie(java_codec, what):
    frame = bytearray(java_codec.compress("lz4-frame", SMALL.section))
    if what == "block-over-max":
        struct.pack_into("<I", frame, 7, 65536 + 1)
    elif what == "block-past-end":
        assert struct.unpack_from("<I", frame, 7)[0] & 0x7FFFFFFF > 1000
        frame = frame[:7 + 4 + 1000]  # the first block's size now runs past the payload
    else:
        frame = frame[:-4]  # drop the EndMark
    with pytest.raises(JavaCodecError):
        java_codec.decompress("lz4-frame", bytes(frame))
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(SMALL.wrap(bytes(frame), Compression.LZ4))))


def test_zstd_frame_content_size_that_lies(java_codec):
    frame = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(SMALL.section))
    fhd = frame[4]
    fcs_sizes = (1 if fhd & 0x20 else 0, 2, 4, 8)
    fcs_size = fcs_sizes[fhd >> 6]
    assert fcs_size == 4
    fcs_at = 5 + (0 if fhd & 0x20 else 1) + (0, 1, 2, 4)[fhd & 3]
    assert struct.unpack_from("<I", frame, fcs_at)[0] == len(SMALL.section)
    struct.pack_into("<I", frame, fcs_at, len(SMALL.section) - 100)
    with pytest.raises(JavaCodecError):
        java_codec.decompress("zstd", bytes(frame))
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(SMALL.wrap(bytes(frame), Compression.ZSTD))))


@pytest.mark.parametrize("field", ["crc", "isize"])
def test_gzip_trailer_that_lies(java_codec, field):
    blob = bytearray(java_codec.compress("gzip", SMALL.section))
    at = len(blob) - (8 if field == "crc" else 4)
    blob[at] ^= 0x01
    with pytest.raises(JavaCodecError):
        java_codec.decompress("gzip", bytes(blob))
    with pytest.raises(kafkarec.DecompressionError):
        list(next(kafkarec.iter_batches(SMALL.wrap(bytes(blob), Compression.GZIP))))


TRUNCATABLE = [("gzip", Compression.GZIP, {}), ("snappy-xerial", Compression.SNAPPY, {}),
               ("snappy-raw", Compression.SNAPPY, {}), ("lz4-frame", Compression.LZ4, {}),
               ("zstd", Compression.ZSTD, {})]


@pytest.mark.parametrize("codec,codec_id,opts", TRUNCATABLE, ids=[c for c, _, _ in TRUNCATABLE])
@pytest.mark.parametrize("keep", [0.5, 0.999, -1])
def test_truncated_java_payload_is_a_decompression_error(java_codec, codec, codec_id, opts, keep):
    blob = java_codec.compress(codec, SMALL.section, **opts)
    cut = blob[:-1] if keep == -1 else blob[:int(len(blob) * keep)]
    with pytest.raises(JavaCodecError):
        java_codec.decompress(codec, cut)
    with pytest.raises(kafkarec.DecompressionError) as info:
        list(next(kafkarec.iter_batches(SMALL.wrap(cut, codec_id))))
    assert info.value.position == 0


# ------------------------------------------- the Arrow read, batch after batch

# A section that inflates more than 8x past 256 KiB: zstd into the Arrow read's buffer misses its
# first guess of the room, is decoded again by the stream reader, and the buffer grows.
_SQUASHY = Section([Rec(i, T0 + i, b"k%d" % i, (b"the same line, again and again\n" * 64) + b"%d" % i, [])
                    for i in range(400)])


def _rows_of_records(data, **kwargs):
    """The record reader's rows of ``data`` in iter_arrow's columns (bad batches left out), and
    its errors as iter_arrow's error sink puts them: (rows, [(batch position, error, message)])."""
    rows, errors = [], []
    for batch in kafkarec.iter_batches(data, **kwargs):
        try:
            records = list(batch)
        except kafkarec.DecodeError as exc:
            errors.append((batch.position, type(exc).__name__, str(exc)))
            continue
        rows += [(r.offset, r.key, r.value, [(k, v) for k, v in r.headers] or None) for r in records]
    return rows, errors


def _rows_of_arrow(data, **kwargs):
    sink = []
    table = kafkarec.to_arrow(data, errors="skip", error_sink=sink, **kwargs)
    headers = table.column("headers").to_pylist()
    rows = [(o, k, v, None if h is None else [(x["key"], x["value"]) for x in h])
            for o, k, v, h in zip(table.column("offset").to_pylist(), table.column("key").to_pylist(),
                                  table.column("value").to_pylist(), headers)]
    return rows, [(e["batch_position"], e["error"], e["message"]) for e in sink]


def test_the_arrow_read_decodes_java_payloads_one_after_another_into_one_buffer(java_codec):
    """iter_arrow decompresses a log's snappy, lz4 and zstd batches into one buffer it keeps
    (each batch's records are copied out before the next is read). Large, small and squashy
    sections alternate under every Java variant, so the buffer is outgrown, refilled over stale
    bytes and (zstd) guessed too small: every batch must still read as the record reader reads it,
    each into its own buffer."""
    log = []
    sections = [SECTIONS["few-large"], SMALL, _SQUASHY, SMALL, SECTIONS["few-large"]]
    for sec in sections:
        for codec, codec_id, opts in JAVA_VARIANTS:
            log.append(sec.wrap(java_codec.compress(codec, sec.section, **opts), codec_id))
        # zstd frames back to back, cut anywhere (its own cuts: the module's generator is shared
        # by tests that run in any order): one read across them
        cuts = sorted(random.Random(len(sec.section)).sample(range(1, len(sec.section)), 2))
        frames = b"".join(java_codec.compress("zstd", sec.section[a:b])
                          for a, b in zip([0] + cuts, cuts + [len(sec.section)]))
        log.append(sec.wrap(frames, Compression.ZSTD))
    data = b"".join(log)
    want, errors = _rows_of_records(data)
    assert not errors
    assert len(want) == sum(len(sec.records) for sec in sections) * (len(JAVA_VARIANTS) + 1)
    assert _rows_of_arrow(data) == (want, [])


@pytest.mark.parametrize("codec,codec_id,opts", TRUNCATABLE, ids=[c for c, _, _ in TRUNCATABLE])
def test_the_arrow_read_reports_a_damaged_payload_between_sound_ones_as_the_record_reader(
        java_codec, codec, codec_id, opts):
    """Sound, truncated, garbled and sound again, in one log: the Arrow read keeps the sound
    batches' rows (their buffer reused after a failed batch) and reports the others with the
    record reader's errors."""
    blob = java_codec.compress(codec, SMALL.section, **opts)
    garbled = bytearray(blob)
    for at in range(len(blob) // 3, len(blob), max(1, len(blob) // 7)):
        garbled[at] ^= 0x5A
    payloads = [blob, blob[:len(blob) // 2], blob, blob[:-1], bytes(garbled), blob, b"", blob]
    data = b"".join(SMALL.wrap(p, codec_id) for p in payloads)
    want = _rows_of_records(data)
    assert len(want[0]) == 4 * len(SMALL.records)
    assert len(want[1]) == 4
    assert _rows_of_arrow(data) == want


@pytest.mark.parametrize("codec,codec_id", [("zstd", Compression.ZSTD), ("lz4-frame", Compression.LZ4),
                                            ("snappy-xerial", Compression.SNAPPY), ("gzip", Compression.GZIP)])
def test_the_largest_budget_reads_every_codec(java_codec, codec, codec_id):
    """max_decompressed_bytes is held at the largest size an index can hold; one byte past it is
    never computed (it would wrap around), in the Arrow read and in the record reader."""
    data = b"".join(sec.wrap(java_codec.compress(codec, sec.section), codec_id) for sec in (_SQUASHY, SMALL))
    for budget in (sys.maxsize, 2 ** 70):
        want = _rows_of_records(data, max_decompressed_bytes=budget)
        assert want[1] == [] and len(want[0]) == len(_SQUASHY.records) + len(SMALL.records)
        assert _rows_of_arrow(data, max_decompressed_bytes=budget) == want


@pytest.mark.parametrize("codec", ["zstd", "lz4-frame", "snappy-xerial", "snappy-raw"])
@pytest.mark.parametrize("slack", [0, -1])
def test_the_arrow_read_holds_the_decompression_budget_at_its_edge(java_codec, codec, slack):
    """A budget of exactly the section's size reads it; one byte less is the budget's error,
    the same as the record reader's, also for a payload that follows one that fitted."""
    codec_id = {"zstd": Compression.ZSTD, "lz4-frame": Compression.LZ4}.get(codec, Compression.SNAPPY)
    sec = _SQUASHY
    small = SMALL.wrap(java_codec.compress(codec, SMALL.section), codec_id)
    data = small + sec.wrap(java_codec.compress(codec, sec.section), codec_id) + small
    budget = len(sec.section) + slack
    assert len(SMALL.section) <= budget
    want = _rows_of_records(data, max_decompressed_bytes=budget)
    assert len(want[1]) == (1 if slack else 0)
    if slack:
        assert want[1][0][1] == "DecompressionLimitError"
    assert _rows_of_arrow(data, max_decompressed_bytes=budget) == want


GARBAGE = {
    "random": _rng.randbytes(2000),
    "empty": b"",
    "one-byte": b"\xff",  # (b"\x00" is a valid, empty raw snappy block)
    "gzip-magic": b"\x1f\x8b\x08\x00" + _rng.randbytes(500),
    "xerial-magic": XERIAL_MAGIC + struct.pack(">ii", 1, 1) + _rng.randbytes(500),
    "lz4-magic": b"\x04\x22\x4d\x18\x60\x40\x82" + _rng.randbytes(500),
    "zstd-magic": b"\x28\xb5\x2f\xfd" + _rng.randbytes(500),
}


@pytest.mark.parametrize("codec_id", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4,
                                      Compression.ZSTD], ids=["gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("garbage", list(GARBAGE))
def test_garbage_payload_is_a_decompression_error(codec_id, garbage):
    data = F.v2_batch(GARBAGE[garbage], record_count=3, last_offset_delta=2, attributes=codec_id)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.crc_valid
    with pytest.raises(kafkarec.DecompressionError) as info:
        list(batch)
    assert info.value.position == 0


@pytest.fixture(scope="module")
def fuzz_payloads(java_codec):
    small = F.records_section(F.kp_v2([Rec(i, T0 + i, b"k%d" % i, b"fuzz value %d " % i * 8,
                                           [("h", b"v")]) for i in range(40)]))
    out = {}
    for codec, codec_id, opts in TRUNCATABLE + [("lz4-java-frame", Compression.LZ4,
                                                 {"content_size": True, "content_checksum": True,
                                                  "block_checksum": True})]:
        out[f"{codec}{opts}"] = (codec_id, java_codec.compress(codec, small, **opts))
    return small, out


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_java_payloads_never_crash(fuzz_payloads, data):
    small, payloads = fuzz_payloads
    key = data.draw(st.sampled_from(sorted(payloads)))
    codec_id, blob = payloads[key]
    blob = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(blob) - 1))
        op = data.draw(st.sampled_from(["flip", "set", "cut", "dup"]))
        if op == "flip":
            blob[at] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "set":
            blob[at] = data.draw(st.sampled_from([0x00, 0xFF, 0x80, 0x7F]))
        elif op == "cut":
            del blob[at:at + data.draw(st.integers(1, 64))]
        else:
            blob[at:at] = blob[at:at + data.draw(st.integers(1, 64))]
        if not blob:
            blob = bytearray(b"\x00")
    batch_bytes = F.v2_batch(bytes(blob), record_count=40, last_offset_delta=39,
                             attributes=codec_id, base_timestamp=T0, max_timestamp=T0 + 39)
    try:
        records = list(next(kafkarec.iter_batches(batch_bytes, max_decompressed_bytes=1 << 20)))
    except kafkarec.DecodeError as exc:
        assert exc.position == 0
    else:
        # A mutation the codec cannot notice (e.g. inside a literal) still
        # yields exactly the declared number of well-formed records.
        assert len(records) == 40
        for r in records:
            _ = (r.key, r.value, r.headers)
