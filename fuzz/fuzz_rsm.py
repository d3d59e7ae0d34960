"""Tiered-storage plugin objects (kafkarec.log.rsm) on arbitrary input.

From the input: a manifest text (parse_manifest: a SegmentManifest or RemoteObjectError, never
another exception), a chunk-size code (decode_chunk_sizes: the same; the plugin's properties text
has its own target, fuzz_properties.py), a ciphertext for the RSA-OAEP/SHA3-512 unwrap (ValueError at most), and a segment
stored in the plugin's chunk layout (optionally one zstd frame per chunk) with a chunk index
built from the input, possibly damaged: every ranged read gives exactly the original bytes or
raises RemoteObjectError naming the chunk, never anything else, never the wrong bytes.

Byte budgets (issue 40), beside libFuzzer's -rss_limit_mb: a manifest whose chunk index claims
any sizes and counts (fixed, or variable with a chunk-size code whose zstd frame declares any
content size or none) is parsed within a budget of Python allocations (tracemalloc's peak): a
few KiB, plus ten bytes per byte of the code it decodes up to the plugin's 10 MiB; a chunk whose
frame header declares more than the chunk's original size (the zstd-frame-header oracle:
``zstandard.get_frame_parameters``) fails its read with RemoteObjectError, within a budget of
the chunks' original bytes.
"""
import base64
import json
import struct
import tracemalloc

import atheris

from _harness import run

with atheris.instrument_imports():
    from kafkarec.errors import RemoteObjectError
    from kafkarec.log import rsm

import zstandard

from cryptography.hazmat.primitives.asymmetric import rsa

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
CCTX = zstandard.ZstdCompressor(level=1, write_content_size=True)
CCTX_UNSIZED = zstandard.ZstdCompressor(level=1, write_content_size=False)
SMALL = 256 << 10              # bytes of Python allocations a parse or read of tiny input may take


def _peak(fn):
    """fn()'s result (or the RemoteObjectError it raised) and the peak bytes allocated meanwhile."""
    tracemalloc.start()
    try:
        try:
            result = fn()
        except RemoteObjectError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _declaring(content: bytes, declared: int) -> bytes:
    """A zstd frame holding ``content`` as one raw block whose header declares ``declared`` bytes."""
    return (b"\x28\xb5\x2f\xfd\xe0" + declared.to_bytes(8, "little")
            + ((len(content) << 3) | 1).to_bytes(3, "little") + content)


def claimed_manifest(fdp) -> None:
    """A manifest claiming sizes and counts anywhere up to 2^63, parsed within its byte budget."""
    big = [0, 1, 2**31 - 1, 2**31, 2**36, 2**40, 2**61, 2**63 - 1]

    def claim():
        return fdp.PickValueInList(big) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(0, 2**63 - 1)
    ci = {"originalChunkSize": claim(), "originalFileSize": claim()}
    budget = SMALL
    if fdp.ConsumeBool():
        ci.update(type="fixed", transformedChunkSize=claim(), finalTransformedChunkSize=claim())
    else:
        count = fdp.ConsumeIntInRange(0, 2**31 - 1)        # the code's count is a Java int
        width = fdp.ConsumeIntInRange(1, 4)
        code = struct.pack(">iiB", count, fdp.ConsumeIntInRange(0, 2**31 - 1), width)
        code += fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64)) * fdp.ConsumeIntInRange(0, 1 << 14)
        how = fdp.ConsumeIntInRange(0, 2)
        declared = claim()
        frame = (CCTX.compress(code) if how == 0 else CCTX_UNSIZED.compress(code) if how == 1
                 else _declaring(code[:fdp.ConsumeIntInRange(0, 200)], declared))
        ci.update(type="variable", transformedChunks=base64.b64encode(frame).decode())
        budget += 10 * min(len(code), rsm.CHUNK_SIZES_LIMIT) + 2 * len(frame)
        if how == 2 and declared <= rsm.CHUNK_SIZES_LIMIT:
            budget += declared      # a declared size within the plugin's limit is allocated whole, as zstd does
    text = json.dumps({"version": "1", "chunkIndex": ci, "compression": True}).encode()
    result, peak = _peak(lambda: rsm.parse_manifest(text, "claimed.rsm-manifest"))
    assert peak <= budget + 4 * len(text), (peak, budget, ci)
    if not isinstance(result, RemoteObjectError):
        stored = result.chunk_index.stored
        assert stored[0] == 0 and len(stored) == result.chunk_index.count + 1 <= 2**31 + 1
        # checked against a small object before any chunk is read: cheap, whatever the claim
        _, peak = _peak(lambda: rsm.check_object_size(result.chunk_index, 100, "claimed.log"))
        assert peak <= SMALL, peak


class _Object:
    def __init__(self, data):
        self.data = data
        self.size = len(data)

    def read_at(self, position, nbytes):
        return self.data[position:position + max(0, nbytes)]

    def close(self):
        pass


class _Storage:
    def __init__(self, data):
        self.data = data

    def open(self, path, size=None):
        return _Object(self.data)

    def uri(self, path):
        return "mem://" + path


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    try:
        rsm.parse_manifest(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 400)))
    except RemoteObjectError:
        pass
    try:
        sizes = rsm.decode_chunk_sizes(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40)))
        assert all(isinstance(s, int) for s in sizes)
    except RemoteObjectError:
        pass
    claimed_manifest(fdp)
    try:
        rsm.oaep_sha3_512_decrypt(KEY, fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 260)))
    except ValueError:
        pass

    original = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 3000))
    chunk = fdp.ConsumeIntInRange(1, 700)
    compress = fdp.ConsumeBool()
    blobs = [original[a:a + chunk] for a in range(0, len(original), chunk)]
    declares = {}                                              # chunk -> the size its frame header declares
    if compress:
        blobs = [CCTX.compress(b) for b in blobs]
        if blobs and fdp.ConsumeBool():                        # a frame header that lies about its size
            i = fdp.ConsumeIntInRange(0, len(blobs) - 1)
            honest = len(original[i * chunk:(i + 1) * chunk])
            declares[i] = fdp.PickValueInList([honest, honest + 1, 2**30, 2**40, 2**64 - 2])
            blobs[i] = _declaring(original[i * chunk:(i + 1) * chunk], declares[i])
    stored = [0]
    for b in blobs:
        stored.append(stored[-1] + len(b))
    obj = bytearray(b"".join(blobs))
    damaged = fdp.ConsumeIntInRange(0, 3)
    if damaged == 1 and obj:                                   # a flipped byte
        at = fdp.ConsumeIntInRange(0, len(obj) - 1)
        obj[at] ^= 1 + fdp.ConsumeIntInRange(0, 254)
    elif damaged == 2 and len(stored) > 2:                     # a chunk index that lies
        i = fdp.ConsumeIntInRange(1, len(stored) - 2)
        stored[i] = fdp.ConsumeIntInRange(0, stored[-1])
    manifest = rsm.SegmentManifest(rsm.ChunkIndex(chunk, len(original), tuple(stored)), {}, compress, None, {})
    try:
        f = rsm.SegmentObject(_Storage(bytes(obj)), "seg.log", manifest)
    except RemoteObjectError:
        return
    # the zstd-frame-header oracle: a chunk whose frame declares more than its original bytes
    # is never decompressed, so a read allocates about its chunks' original bytes, ahead included
    lies = {i for i, n in declares.items() if n > len(original[i * chunk:(i + 1) * chunk]) and not damaged}
    for _ in range(fdp.ConsumeIntInRange(1, 6)):
        a = fdp.ConsumeIntInRange(0, len(original) + 5)
        n = fdp.ConsumeIntInRange(0, len(original) + 5)
        got, peak = _peak(lambda: f.read_at(a, n))
        assert peak <= SMALL + 4 * (len(obj) + (2 + rsm.READ_AHEAD) * chunk), peak
        if isinstance(got, RemoteObjectError):
            assert damaged or declares, got
            continue
        assert not lies.intersection(manifest.chunk_index.chunks(a, a + n)), (lies, a, n)
        if not (damaged or declares) or (damaged == 1 and not compress):
            if damaged == 1:
                assert len(got) == len(original[a:a + n])
            else:
                assert got == original[a:a + n], (a, n)
        else:
            assert len(got) == len(original[a:a + n])
    f.close()


if __name__ == "__main__":
    run(test_one_input)
