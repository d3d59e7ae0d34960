"""Segments stored by Aiven's tiered-storage plugin (its own RemoteStorageManager, compiled from
its source: scripts/aiven_rsm_fixtures.py wrote tests/data/tiered/aiven) read back as the
original segments and side files, for every variant it writes; damaged objects give errors
that name the object and the chunk."""
from __future__ import annotations

import json
import os
import random
import shutil

import pytest

import kafkarec
from kafkarec.log import rsm, storage

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "data", "tiered", "aiven")
FIXTURES = json.load(open(os.path.join(DATA, "fixtures.json")))
VARIANTS = sorted(FIXTURES)
LOCAL, _ = storage.resolve("/")


def segments(variant):
    """(segment listing entry, object path without suffix, config) for each stored segment."""
    config = rsm.load_config(os.path.join(DATA, variant, "rsm.properties"))
    root = os.path.join(DATA, variant, "objects")
    for seg in FIXTURES[variant]:
        topic, partition = seg["partition"].rsplit("-", 1)
        folder = os.path.join(root, config.key_prefix + f"{topic}-{seg['topic_id']}", partition)
        yield seg, os.path.join(folder, f"{seg['base_offset']:020d}-{seg['segment_id']}"), config


def original(seg, suffix, base=None):
    base = seg["base_offset"] if base is None else base
    with open(os.path.join(DATA, "input", seg["partition"], f"{base:020d}{suffix}"), "rb") as fh:
        return fh.read()


def manifest(stem):
    with open(stem + ".rsm-manifest", "rb") as fh:
        return rsm.parse_manifest(fh.read(), stem + ".rsm-manifest")


def test_the_fixtures_hold_every_variant():
    assert set(VARIANTS) == {"plain", "zstd", "aes", "both", "small", "large"}
    for variant in VARIANTS:
        assert {s["partition"] for s in FIXTURES[variant]} == {"txn-0", "clicks-0"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_segment_reads_back_as_the_original(variant):
    want_flags = {"plain": (False, False), "zstd": (True, False), "aes": (False, True)}.get(variant, (True, True))
    for seg, stem, config in segments(variant):
        m = manifest(stem)
        assert (m.compression, m.encryption is not None) == want_flags
        keys = rsm.KeyRing.from_config(config)
        with rsm.SegmentObject(LOCAL, stem + ".log", m, keys) as f:
            data = f.read_at(0, f.size)
        assert data == original(seg, ".log")
        # the records too, through kafkarec's decoder
        assert [r.offset for b in kafkarec.iter_batches(data) for r in b][-1] <= seg["end_offset"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_ranged_reads_give_the_same_bytes(variant):
    rnd = random.Random(31)
    for seg, stem, config in segments(variant):
        want = original(seg, ".log")
        with rsm.SegmentObject(LOCAL, stem + ".log", manifest(stem), rsm.KeyRing.from_config(config)) as f:
            for _ in range(40):
                a = rnd.randrange(0, len(want))
                n = rnd.choice([1, 7, 99, 100, 101, 1000, 5000, len(want)])
                assert f.read_at(a, n) == want[a:a + n]
            buf = bytearray(300)
            assert f.read_into(len(want) - 100, buf) == 100 and bytes(buf[:100]) == want[-100:]


@pytest.mark.parametrize("variant", VARIANTS)
def test_side_files_are_the_originals(variant):
    for seg, stem, config in segments(variant):
        m = manifest(stem)
        sides = rsm.side_files(LOCAL, stem + ".indexes", m, rsm.KeyRing.from_config(config))
        assert sides["offset"] == original(seg, ".index")
        assert sides["timestamp"] == original(seg, ".timeindex")
        assert sides["producerSnapshot"] == original(seg, ".snapshot", seg["end_offset"] + 1)
        txn = os.path.join(DATA, "input", seg["partition"], f"{seg['base_offset']:020d}.txnindex")
        assert ("transaction" in sides) == os.path.exists(txn)
        if os.path.exists(txn):
            assert sides["transaction"] == original(seg, ".txnindex")
        # the broker's checkpoint text for the epochs up to the segment's end
        lines = sides["leaderEpoch"].decode().splitlines()
        assert lines[0] == "0" and int(lines[1]) == len(lines) - 2 >= 1


def test_a_fixed_chunk_index_and_a_variable_one():
    seg, stem, _ = next(s for s in segments("aes") if s[0]["partition"] == "clicks-0")
    ci = manifest(stem).chunk_index
    assert ci.count >= 2
    sizes = {ci.stored[i + 1] - ci.stored[i] for i in range(ci.count - 1)}
    assert sizes == {4096 + 28}                                  # IV and tag around each chunk
    for seg, stem, _ in segments("small"):
        ci = manifest(stem).chunk_index
        assert ci.count == -(-ci.original_file_size // 100) and len(set(ci.stored)) == ci.count + 1
    for seg, stem, _ in segments("large"):
        assert manifest(stem).chunk_index.count == 1


def test_the_key_prefix_and_both_key_pairs():
    config = rsm.load_config(os.path.join(DATA, "both", "rsm.properties"))
    assert config.key_prefix == "tenant/rsm_" and set(config.key_pairs) == {"k1", "k2"}
    assert config.active_key_pair == "k2" and config.storage_root() == "objects"
    pairs = {manifest(stem).encryption.key_pair_id for _, stem, _ in segments("both")}
    assert pairs == {"k1", "k2"}


def test_plain_objects_are_byte_copies():
    for seg, stem, _ in segments("plain"):
        with open(stem + ".log", "rb") as fh:
            assert fh.read() == original(seg, ".log")


def test_a_read_fetches_only_the_chunks_it_needs():
    seg, stem, config = next(s for s in segments("small") if s[0]["partition"] == "clicks-0")
    m = manifest(stem)
    keys = rsm.KeyRing.from_config(config)
    stats = storage.ReadStats()
    storage.RangeFile.stats = stats
    try:
        with rsm.SegmentObject(LOCAL, stem + ".log", m, keys) as f:
            f.read_at(5050, 120)                   # chunks 50 and 51 of 100 bytes
    finally:
        storage.RangeFile.stats = None
    ci = m.chunk_index
    # chunks 50 and 51, and at most the next READ_AHEAD, read ahead (closed: done or cancelled)
    assert ci.stored[52] - ci.stored[50] <= stats.bytes <= ci.stored[52 + rsm.READ_AHEAD] - ci.stored[50]


# --- damaged objects -------------------------------------------------------------------------

@pytest.fixture
def copy_of(tmp_path):
    def make(variant, partition="clicks-0"):
        seg, stem, config = next(s for s in segments(variant) if s[0]["partition"] == partition)
        out = tmp_path / variant
        out.mkdir()
        for suffix in (".log", ".indexes", ".rsm-manifest"):
            shutil.copy(stem + suffix, out / ("segment" + suffix))
        return str(out / "segment"), config
    return make


def _flip(path, at):
    with open(path, "r+b") as fh:
        fh.seek(at)
        b = fh.read(1)
        fh.seek(at)
        fh.write(bytes([b[0] ^ 0x40]))


def test_an_altered_encrypted_chunk_names_the_chunk(copy_of):
    stem, config = copy_of("both")
    m = manifest(stem)
    _flip(stem + ".log", m.chunk_index.stored[3] + 20)
    with rsm.SegmentObject(LOCAL, stem + ".log", m, rsm.KeyRing.from_config(config)) as f:
        assert len(f.read_at(0, 3000)) == 3000             # chunks 0-2 are intact
        with pytest.raises(kafkarec.RemoteObjectError, match="chunk 3: the AES-GCM tag does not verify") as e:
            f.read_at(0, f.size)
    assert e.value.chunk == 3 and e.value.object.endswith("segment.log")


def test_an_altered_compressed_chunk_is_an_error(copy_of):
    stem, config = copy_of("zstd")
    m = manifest(stem)
    _flip(stem + ".log", m.chunk_index.stored[1] + 1)       # inside the second frame's header
    with rsm.SegmentObject(LOCAL, stem + ".log", m, None) as f:
        with pytest.raises(kafkarec.RemoteObjectError, match="chunk 1: "):
            f.read_at(0, f.size)


def test_a_truncated_object_is_refused_before_reading(copy_of):
    stem, config = copy_of("aes")
    with open(stem + ".log", "r+b") as fh:
        fh.truncate(os.path.getsize(stem + ".log") - 5)
    with pytest.raises(kafkarec.RemoteObjectError, match="covers .* bytes, the object holds"):
        rsm.SegmentObject(LOCAL, stem + ".log", manifest(stem), rsm.KeyRing.from_config(config))


def test_a_wrong_or_missing_key(copy_of):
    stem, config = copy_of("both")                     # clicks-0: wrapped with k2
    m = manifest(stem)
    pems = rsm.KeyRing.from_config(config).pems
    wrong = rsm.KeyRing({"k2": pems["k1"]})
    with rsm.SegmentObject(LOCAL, stem + ".log", m, wrong) as f:
        with pytest.raises(kafkarec.RemoteObjectError, match="does not unwrap with key pair 'k2'"):
            f.read_at(0, 10)
    with rsm.SegmentObject(LOCAL, stem + ".log", m, rsm.KeyRing({"k1": pems["k1"]})) as f:
        with pytest.raises(kafkarec.RemoteObjectError, match="key pair 'k2', which the key ring does not hold"):
            f.read_at(0, 10)
    with rsm.SegmentObject(LOCAL, stem + ".log", m, None) as f:
        with pytest.raises(kafkarec.RemoteObjectError, match="encrypted .* give the plugin's config"):
            f.read_at(0, 10)
    with pytest.raises(kafkarec.RemoteObjectError, match="side files are encrypted"):
        rsm.side_files(LOCAL, stem + ".indexes", m, None)


def test_cryptography_still_refuses_oaep_with_sha3():
    """Why rsm unwraps data keys itself: the pinned cryptography will not do OAEP with SHA3-512.
    When this fails, cryptography has learned it: unwrap through it instead."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    config = rsm.load_config(os.path.join(DATA, "aes", "rsm.properties"))
    key = load_pem_private_key(next(iter(rsm.KeyRing.from_config(config).pems.values())), password=None)
    sha3 = padding.OAEP(mgf=padding.MGF1(hashes.SHA3_512()), algorithm=hashes.SHA3_512(), label=None)
    with pytest.raises(UnsupportedAlgorithm):
        key.public_key().encrypt(b"k" * 32, sha3)


def test_the_blinded_exponentiation_is_the_plain_one():
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    config = rsm.load_config(os.path.join(DATA, "aes", "rsm.properties"))
    key = load_pem_private_key(next(iter(rsm.KeyRing.from_config(config).pems.values())), password=None)
    numbers = key.private_numbers()
    n, e, d = numbers.public_numbers.n, numbers.public_numbers.e, numbers.d
    rnd = random.Random(5)
    for c in [0, 1, n - 1] + [rnd.randrange(n) for _ in range(5)]:
        assert rsm._blinded_rsa_decrypt(c, n, e, d) == pow(c, d, n)


def test_a_manifest_that_points_past_the_indexes(copy_of):
    stem, config = copy_of("plain")
    doc = json.load(open(stem + ".rsm-manifest"))
    doc["segmentIndexes"]["timestamp"]["size"] += 1000
    with pytest.raises(kafkarec.RemoteObjectError, match="timestamp at bytes .* past the object's"):
        rsm.side_files(LOCAL, stem + ".indexes", rsm.parse_manifest(json.dumps(doc).encode()), None)


@pytest.mark.parametrize("text, reason", [
    (b"garbage", "not JSON"),
    (b"[]", "not a segment manifest of version 1"),
    (b'{"version":"2"}', "version '2'"),
    (b'{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":0,"originalFileSize":5}}',
     "originalChunkSize is 0"),
    (b'{"version":"1","chunkIndex":{"type":"odd","originalChunkSize":4,"originalFileSize":5}}', "type 'odd'"),
    (b'{"version":"1","chunkIndex":{"type":"variable","originalChunkSize":4,"originalFileSize":5,'
     b'"transformedChunks":"!!"}}', "not base64"),
    (b'{"version":"1","chunkIndex":{"type":"variable","originalChunkSize":4,"originalFileSize":5,'
     b'"transformedChunks":"AAAA"}}', "not a zstd frame"),
    (b'{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":4,"originalFileSize":5,'
     b'"transformedChunkSize":4,"finalTransformedChunkSize":1},"encryption":{"dataKey":"nokey"}}',
     "dataKey of the form"),
])
def test_a_manifest_that_is_not_one(text, reason):
    with pytest.raises(kafkarec.RemoteObjectError, match=reason):
        rsm.parse_manifest(text, "m.rsm-manifest")


@pytest.mark.parametrize("sizes", [[], [7], [5, 9], [300, 280, 1 << 20, 17], [70000] * 5 + [3]])
def test_chunk_sizes_code(sizes):
    """The plugin's code for variable chunk sizes, written here as its ChunkSizesBinaryCodec
    writes it, reads back."""
    import struct
    if not sizes:
        blob = struct.pack(">i", 0)
    elif len(sizes) == 1:
        blob = struct.pack(">ii", 1, sizes[0])
    else:
        base = min(sizes[:-1])
        width = max(1, (max(s - base for s in sizes[:-1]).bit_length() + 7) // 8)
        blob = struct.pack(">iiB", len(sizes), base, width) + b"".join(
            (s - base).to_bytes(width, "big") for s in sizes[:-1]) + struct.pack(">i", sizes[-1])
    assert rsm.decode_chunk_sizes(blob) == sizes
    with pytest.raises(kafkarec.RemoteObjectError, match="chunk sizes end after"):
        rsm.decode_chunk_sizes(blob[:-1] if len(blob) > 4 else b"\0\0\0")


def test_config_properties_forms(tmp_path):
    p = tmp_path / "rsm.properties"
    p.write_text("# comment\nrsm.config.key.prefix = a/b_\n! other\nrsm.config.encryption.key.pairs=x\\\n,y\n"
                 "rsm.config.encryption.key.pairs.x.private.key.file=keys/x.pem\nstorage.s3.bucket.name: bkt\n")
    config = rsm.load_config(str(p))
    assert config.key_prefix == "a/b_" and set(config.key_pairs) == {"x", "y"}
    assert config.key_pairs["x"] == (None, str(tmp_path / "keys" / "x.pem"))
    assert config.storage_root() == "s3://bkt"
