"""Smoke tests for the Java codec oracle (tests/support/oracles/javacodec.py).

The oracle is only useful if it is right, so every op is cross-checked
against an independent Python implementation, and the framing details that
kafkarec depends on (LZ4 header checksum variants, zstd frames without a
content size, xerial snappy chunking, gzip MTIME) are asserted byte by byte.
"""

import gzip
import io
import random
import struct
import time

import lz4.block
import lz4.frame
import pytest
import snappy
import xxhash
import zstandard

from support.oracles.javacodec import REQUIRED_JARS, JavaCodecError, JavaCodecTimeout

_rng = random.Random(20240611)
TEXT = b"".join(b"offset=%d key=user-%d value={\"clicks\": %d}\n" % (i, i % 97, i * 7) for i in range(6000))
NOISE = _rng.randbytes(150_000)

SAMPLES = {
    "empty": b"",
    "one-byte": b"k",
    "text": TEXT,  # ~250 KB, spans several blocks of every codec
    "random": NOISE,  # incompressible: exercises stored/raw paths
    "mixed": TEXT[:70_000] + NOISE[:70_000] + TEXT[:70_000],
}
sample_params = pytest.mark.parametrize("data", SAMPLES.values(), ids=SAMPLES.keys())

XERIAL_MAGIC = b"\x82SNAPPY\x00"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def lz4_hc(header_bytes: bytes) -> int:
    return (xxhash.xxh32_intdigest(header_bytes) >> 8) & 0xFF


def parse_xerial(blob: bytes) -> list[bytes]:
    """Split a snappy-java stream into its raw-snappy chunks."""
    assert blob[:8] == XERIAL_MAGIC
    version, compatible = struct.unpack(">ii", blob[8:16])
    assert (version, compatible) == (1, 1)
    chunks, pos = [], 16
    while pos < len(blob):
        (size,) = struct.unpack_from(">i", blob, pos)
        chunks.append(blob[pos + 4:pos + 4 + size])
        pos += 4 + size
    assert pos == len(blob)
    return chunks


def parse_lz4_blocks(blob: bytes, pos: int, block_checksum: bool = False) -> tuple[list, int]:
    """Decode the block sequence of an LZ4 frame with Python's lz4.block.

    Returns ([(stored, decoded_bytes), ...], offset just past the EndMark).
    """
    blocks = []
    while True:
        (word,) = struct.unpack_from("<I", blob, pos)
        pos += 4
        if word == 0:
            return blocks, pos
        stored, size = bool(word & 0x80000000), word & 0x7FFFFFFF
        payload = blob[pos:pos + size]
        assert len(payload) == size
        pos += size
        if block_checksum:
            assert struct.unpack_from("<I", blob, pos)[0] == xxhash.xxh32_intdigest(payload)
            pos += 4
        decoded = payload if stored else lz4.block.decompress(payload, uncompressed_size=64 * 1024)
        blocks.append((stored, decoded))


def build_xerial(data: bytes, block_size: int = 32 * 1024) -> bytes:
    out = [XERIAL_MAGIC, struct.pack(">ii", 1, 1)]
    for off in range(0, len(data), block_size):
        chunk = snappy.compress(data[off:off + block_size])
        out += [struct.pack(">i", len(chunk)), chunk]
    return b"".join(out)


def zstd_frame_header_descriptor(blob: bytes) -> int:
    assert blob[:4] == ZSTD_MAGIC
    return blob[4]


# ----------------------------------------------------------------- plumbing


def test_info_reports_the_pyspark_jars(java_codec):
    info = java_codec.info
    assert info["java.version"]
    assert info["snappy.native"]
    assert info["lz4.factory"].startswith("LZ4Factory:")
    assert info["jar.snappy"] == java_codec.jars["snappy-java"].name
    assert info["jar.lz4"] == java_codec.jars["lz4-java"].name
    assert info["jar.zstd"] == java_codec.jars["zstd-jni"].name
    assert set(java_codec.jars) == set(REQUIRED_JARS)


def test_one_jvm_serves_many_requests(java_codec):
    pid = java_codec.pid
    start = time.monotonic()
    for i in range(300):
        payload = b"record-%d" % i
        assert java_codec.decompress("gzip", java_codec.compress("gzip", payload)) == payload
    assert java_codec.pid == pid
    assert time.monotonic() - start < 60


def test_large_payload_does_not_deadlock_the_pipes(java_codec):
    big = _rng.randbytes(1 << 20) * 12  # 12 MiB, far beyond pipe buffers
    assert java_codec.call("echo", big) == big
    assert java_codec.decompress("zstd", java_codec.compress("zstd", big)) == big


def test_java_errors_become_python_exceptions(java_codec):
    pid = java_codec.pid
    with pytest.raises(JavaCodecError, match="unknown op 'no-such-op'"):
        java_codec.call("no-such-op", b"")
    with pytest.raises(JavaCodecError, match=r"does not take option\(s\) \[levle\]"):
        java_codec.compress("zstd", b"x", levle=5)
    with pytest.raises(JavaCodecError, match="must be an integer"):
        java_codec.compress("gzip", b"x", level="high")
    with pytest.raises(JavaCodecError, match="ZLIB|GZIP|gzip|Not in GZIP format"):
        java_codec.decompress("gzip", b"definitely not gzip")
    with pytest.raises(JavaCodecError, match="snappy|Snappy|FAILED_TO_UNCOMPRESS"):
        java_codec.decompress("snappy-raw", b"\xff\xff\xff\xff\x0f garbage")
    with pytest.raises(ValueError, match="unknown codec"):
        java_codec.compress("brotli", b"x")
    # Errors are per request: the same JVM keeps serving.
    assert java_codec.pid == pid
    assert java_codec.call("echo", b"still alive") == b"still alive"


def test_timeout_kills_the_jvm_and_the_next_call_restarts_it(java_codec):
    old_pid = java_codec.pid
    start = time.monotonic()
    with pytest.raises(JavaCodecTimeout):
        java_codec.call("sleep", ms=30_000, timeout=0.5)
    assert time.monotonic() - start < 10
    assert java_codec.pid is None
    assert java_codec.call("echo", b"back") == b"back"
    assert java_codec.pid not in (None, old_pid)


# ------------------------------------------------------------------- snappy


@sample_params
def test_snappy_raw_matches_python_snappy(java_codec, data):
    blob = java_codec.compress("snappy-raw", data)
    assert snappy.decompress(blob) == data
    ours = snappy.compress(data)
    assert java_codec.decompress("snappy-raw", ours) == data
    # SnappyInputStream falls back to raw snappy when the xerial magic is absent.
    assert java_codec.decompress("snappy-xerial", ours) == data


@sample_params
def test_snappy_xerial_framing(java_codec, data):
    blob = java_codec.compress("snappy-xerial", data)
    chunks = [snappy.decompress(c) for c in parse_xerial(blob)]
    assert b"".join(chunks) == data
    assert all(0 < len(c) <= 32 * 1024 for c in chunks)  # Kafka's default block size
    assert java_codec.decompress("snappy-xerial", blob) == data
    assert java_codec.decompress("snappy-xerial", build_xerial(data)) == data


def test_snappy_xerial_block_size_option(java_codec):
    blob = java_codec.compress("snappy-xerial", TEXT, block_size=4096)
    chunks = [snappy.decompress(c) for c in parse_xerial(blob)]
    assert b"".join(chunks) == TEXT
    assert max(map(len, chunks)) == 4096


# ---------------------------------------------------------------------- lz4


@sample_params
def test_lz4_kafka_frame_layout(java_codec, data):
    blob = java_codec.compress("lz4-frame", data)
    assert blob[:6] == LZ4_MAGIC + b"\x60\x40"
    assert blob[6] == lz4_hc(blob[4:6])
    blocks, end = parse_lz4_blocks(blob, 7)
    assert end == len(blob)  # EndMark, then no content checksum
    assert b"".join(d for _, d in blocks) == data
    # Kafka cuts blocks at exactly 64 KiB of input.
    expected_sizes = [min(65536, len(data) - off) for off in range(0, len(data), 65536)]
    assert [len(d) for _, d in blocks] == expected_sizes
    if data is NOISE:
        assert all(stored for stored, _ in blocks)
    if data is TEXT:
        assert not any(stored for stored, _ in blocks)
    # The standard header checksum makes it a valid LZ4 frame for everyone.
    assert lz4.frame.decompress(blob) == data
    assert java_codec.decompress("lz4-frame", blob) == data
    assert java_codec.decompress("lz4-java-frame", blob) == data


@sample_params
def test_lz4_kafka_frame_broken_hc(java_codec, data):
    blob = java_codec.compress("lz4-frame-broken-hc", data)
    assert blob[:6] == LZ4_MAGIC + b"\x60\x40"
    assert blob[6] == lz4_hc(blob[0:6])  # KAFKA-3160: checksum covers the magic too
    # Same blocks as the standard variant: only the HC byte differs.
    assert blob[7:] == java_codec.compress("lz4-frame", data)[7:]
    if blob[6] != lz4_hc(blob[4:6]):
        with pytest.raises(RuntimeError):
            lz4.frame.decompress(blob)
        with pytest.raises(JavaCodecError, match="header checksum mismatch"):
            java_codec.decompress("lz4-frame", blob)
    assert java_codec.decompress("lz4-frame", blob, hc="broken") == data
    assert java_codec.decompress("lz4-frame", blob, hc="ignore") == data
    fixed = blob[:6] + bytes([lz4_hc(blob[4:6])]) + blob[7:]
    assert lz4.frame.decompress(fixed) == data


def test_lz4_broken_hc_really_differs_for_kafka_header(java_codec):
    standard = java_codec.compress("lz4-frame", b"")
    broken = java_codec.compress("lz4-frame-broken-hc", b"")
    assert standard[6] != broken[6]


@pytest.mark.parametrize("level", [1, 9, 12, 17])
def test_lz4_kafka_frame_levels(java_codec, level):
    blob = java_codec.compress("lz4-frame", TEXT, level=level)
    assert blob[:7] == java_codec.compress("lz4-frame", b"")[:7]
    assert lz4.frame.decompress(blob) == TEXT
    assert java_codec.decompress("lz4-frame", blob) == TEXT


def test_lz4_kafka_frame_block_checksum(java_codec):
    blob = java_codec.compress("lz4-frame", SAMPLES["mixed"], block_checksum=True)
    assert blob[4] == 0x70
    assert blob[6] == lz4_hc(blob[4:6])
    blocks, end = parse_lz4_blocks(blob, 7, block_checksum=True)
    assert end == len(blob)
    assert b"".join(d for _, d in blocks) == SAMPLES["mixed"]
    assert lz4.frame.decompress(blob) == SAMPLES["mixed"]
    assert java_codec.decompress("lz4-frame", blob) == SAMPLES["mixed"]


@pytest.mark.parametrize(
    "opts, flg, bd",
    [
        ({}, 0x60, 0x40),
        ({"block_size": "256KB"}, 0x60, 0x50),
        ({"block_size": "4MB"}, 0x60, 0x70),
        ({"block_checksum": True}, 0x70, 0x40),
        ({"content_checksum": True}, 0x64, 0x40),
        ({"content_size": True}, 0x68, 0x40),
    ],
    ids=["default", "256KB", "4MB", "block-checksum", "content-checksum", "content-size"],
)
def test_lz4_java_own_frame(java_codec, opts, flg, bd):
    data = SAMPLES["mixed"]
    blob = java_codec.compress("lz4-java-frame", data, **opts)
    assert blob[:4] == LZ4_MAGIC
    assert (blob[4], blob[5]) == (flg, bd)
    descriptor_end = 6 + (8 if flg & 0x08 else 0)
    assert blob[descriptor_end] == lz4_hc(blob[4:descriptor_end])
    if flg & 0x08:
        assert struct.unpack_from("<Q", blob, 6)[0] == len(data)
    assert lz4.frame.decompress(blob) == data
    assert java_codec.decompress("lz4-java-frame", blob) == data
    if bd == 0x40:  # Kafka's framing only differs from this in the HC detail
        assert java_codec.decompress("lz4-frame", blob) == data


@sample_params
def test_lz4_decoders_accept_python_frames(java_codec, data):
    for kwargs in (
        {},
        {"content_checksum": True, "store_size": False},
        {"block_checksum": True},
    ):
        frame = lz4.frame.compress(
            data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, **kwargs
        )
        assert java_codec.decompress("lz4-frame", frame) == data, kwargs
        assert java_codec.decompress("lz4-java-frame", frame) == data, kwargs


def test_lz4_frame_decoder_is_strict(java_codec):
    linked = lz4.frame.compress(TEXT, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=True)
    with pytest.raises(JavaCodecError, match="dependent blocks"):
        java_codec.decompress("lz4-frame", linked)
    good = java_codec.compress("lz4-frame", TEXT)
    with pytest.raises(JavaCodecError, match="truncated"):
        java_codec.decompress("lz4-frame", good[:-5])
    with pytest.raises(JavaCodecError, match="trailing bytes"):
        java_codec.decompress("lz4-frame", good + b"\x00")
    with pytest.raises(JavaCodecError, match="hc must be"):
        java_codec.decompress("lz4-frame", good, hc="sometimes")


# --------------------------------------------------------------------- zstd


def read_zstd(blob: bytes) -> bytes:
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob), read_across_frames=True)
    return reader.read()


@sample_params
def test_zstd_stream_frames_have_no_content_size(java_codec, data):
    blob = java_codec.compress("zstd", data)
    fhd = zstd_frame_header_descriptor(blob)
    assert fhd >> 6 == 0  # Frame_Content_Size_flag
    assert not fhd & 0x04  # no checksum unless asked
    if data:
        assert not fhd & 0x20  # Single_Segment_flag (would imply a content size)
        assert zstandard.get_frame_parameters(blob).content_size == zstandard.CONTENTSIZE_UNKNOWN
    else:
        # Nothing written before close() means zstd's first call is ZSTD_e_end,
        # so it knows the size: a single-segment frame with a 1-byte size of 0.
        assert fhd & 0x20
        assert zstandard.get_frame_parameters(blob).content_size == 0
    assert read_zstd(blob) == data
    assert java_codec.decompress("zstd", blob) == data
    # The reverse direction, with and without a content size in the header.
    assert java_codec.decompress("zstd", zstandard.ZstdCompressor().compress(data)) == data
    cobj = zstandard.ZstdCompressor().compressobj()
    assert java_codec.decompress("zstd", cobj.compress(data) + cobj.flush()) == data


@pytest.mark.parametrize("level", [-5, 1, 3, 10, 19])
def test_zstd_levels(java_codec, level):
    blob = java_codec.compress("zstd", TEXT, level=level)
    assert zstandard.get_frame_parameters(blob).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert read_zstd(blob) == TEXT


def test_zstd_default_level_is_3(java_codec):
    assert java_codec.compress("zstd", TEXT) == java_codec.compress("zstd", TEXT, level=3)
    assert java_codec.compress("zstd", TEXT) != java_codec.compress("zstd", TEXT, level=1)


def test_zstd_checksum_option(java_codec):
    blob = java_codec.compress("zstd", TEXT, checksum=True)
    assert zstd_frame_header_descriptor(blob) & 0x04
    assert zstandard.get_frame_parameters(blob).has_checksum
    assert read_zstd(blob) == TEXT


def test_zstd_decompress_reads_concatenated_frames(java_codec):
    cctx = zstandard.ZstdCompressor()
    assert java_codec.decompress("zstd", cctx.compress(b"abc") + cctx.compress(b"def")) == b"abcdef"


# --------------------------------------------------------------------- gzip


@sample_params
def test_gzip_matches_python(java_codec, data):
    blob = java_codec.compress("gzip", data)
    assert blob[:4] == b"\x1f\x8b\x08\x00"  # deflate, no optional fields
    assert blob[4:8] == b"\x00\x00\x00\x00"  # MTIME 0
    assert gzip.decompress(blob) == data
    assert java_codec.decompress("gzip", blob) == data
    assert java_codec.decompress("gzip", gzip.compress(data, mtime=0)) == data


@pytest.mark.parametrize("level", [0, 1, 9])
def test_gzip_levels(java_codec, level):
    blob = java_codec.compress("gzip", TEXT, level=level)
    assert gzip.decompress(blob) == TEXT
    if level == 0:
        assert len(blob) > len(TEXT)


def test_gzip_decompress_reads_concatenated_members(java_codec):
    two = gzip.compress(b"first,") + gzip.compress(b"second")
    assert java_codec.decompress("gzip", two) == b"first,second"
