"""Tiered-storage plugin objects (kafkarec.log.rsm) on arbitrary input.

From the input: a manifest text (parse_manifest: a SegmentManifest or RemoteObjectError, never
another exception), a chunk-size code (decode_chunk_sizes: the same; the plugin's properties text
has its own target, fuzz_properties.py), a ciphertext for the RSA-OAEP/SHA3-512 unwrap (ValueError at most), and a segment
stored in the plugin's chunk layout (optionally one zstd frame per chunk) with a chunk index
built from the input, possibly damaged: every ranged read gives exactly the original bytes or
raises RemoteObjectError naming the chunk, never anything else, never the wrong bytes.
"""
import atheris

from _harness import run

with atheris.instrument_imports():
    from kafkarec.errors import RemoteObjectError
    from kafkarec.log import rsm

import zstandard

from cryptography.hazmat.primitives.asymmetric import rsa

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
CCTX = zstandard.ZstdCompressor(level=1, write_content_size=True)


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
    try:
        rsm.oaep_sha3_512_decrypt(KEY, fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 260)))
    except ValueError:
        pass

    original = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 3000))
    chunk = fdp.ConsumeIntInRange(1, 700)
    compress = fdp.ConsumeBool()
    blobs = [original[a:a + chunk] for a in range(0, len(original), chunk)]
    if compress:
        blobs = [CCTX.compress(b) for b in blobs]
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
    for _ in range(fdp.ConsumeIntInRange(1, 6)):
        a = fdp.ConsumeIntInRange(0, len(original) + 5)
        n = fdp.ConsumeIntInRange(0, len(original) + 5)
        try:
            got = f.read_at(a, n)
        except RemoteObjectError as exc:
            assert damaged or exc is None, exc
            continue
        if not damaged or (damaged == 1 and not compress):
            if damaged == 1:
                assert len(got) == len(original[a:a + n])
            else:
                assert got == original[a:a + n], (a, n)
        else:
            assert len(got) == len(original[a:a + n])
    f.close()


if __name__ == "__main__":
    run(test_one_input)
