"""Reading a segment stored as Aiven's tiered-storage plugin stores it (zstd + AES-GCM chunks) from
an object store, against the raw ranged reads of the same object and the bare library calls.

A SeaweedFS S3 server on 127.0.0.1 (tests/support/servers/s3server.py) holds one segment (v2 batches of JSON-like
values, uncompressed batches, so the plugin's zstd has work to do) in the plugin's format: chunks
of ``--chunk-mb`` original bytes, each one zstd frame (level 3, as zstd-jni's default) then
``IV || AES-256-GCM ciphertext || tag``, the manifest's variable chunk index, the data key wrapped
with RSA-OAEP/SHA3-512 (written here for the benchmark: the format is checked against the
plugin's own objects in tests/tiered).  With the same pyarrow S3 file system:

* raw: ``RangeFile.read_at`` of every stored chunk, in order (the limit: the bytes must come in);
* SegmentObject: :class:`kafkarec.log.rsm.SegmentObject` reading the original segment in
  ``--chunk-mb`` steps (fetch, decrypt, decompress; the next chunk read ahead);
* ranged pieces into Arrow: every record into Arrow through the layout (what a Spark task does);
* in memory: the bare library calls on the stored chunks (AESGCM.decrypt then
  ZstdDecompressor.decompress, the floor of the work), against kafkarec's per-chunk path on
  the same bytes without I/O.

Usage: ``.venv/bin/python benchmarks/bench_tiered.py [--size-mb 256] [--chunk-mb 4] [--runs 3]``
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import kafkarec  # noqa: E402
from kafkarec.log import layout, rsm, selection, storage  # noqa: E402
from bench_remote import timed  # noqa: E402  (median and best of runs)

TOPIC_ID = "q3_Yx0-lTnWb5T0aN8Jw_A"
SEGMENT_ID = "bEnChMaRkSeGmEnT0000AA"


def make_segment(path: str, size_mb: int) -> int:
    offset = 0
    with open(path, "wb") as fh:
        while fh.tell() < size_mb << 20:
            values = [json.dumps({"user": f"u{(offset + i) % 977}", "event": "click", "n": offset + i,
                                  "page": f"/p/{(offset + i) % 131}"}).encode() for i in range(500)]
            fh.write(kafkarec.build_batch(values, keys=[b"user-%d" % ((offset + i) % 977) for i in range(500)],
                                          timestamps=[1_700_000_000_000 + offset + i for i in range(500)],
                                          offsets=list(range(offset, offset + 500))))
            offset += 500
    return offset


def oaep_sha3_512_encrypt(public_numbers, message: bytes) -> bytes:
    n, e = public_numbers.n, public_numbers.e
    k = (n.bit_length() + 7) // 8
    h = 64
    db = hashlib.sha3_512(b"").digest() + b"\0" * (k - len(message) - 2 * h - 2) + b"\x01" + message
    seed = os.urandom(h)
    masked_db = bytes(a ^ b for a, b in zip(db, rsm._mgf1_sha3_512(seed, k - h - 1)))
    masked_seed = bytes(a ^ b for a, b in zip(seed, rsm._mgf1_sha3_512(masked_db, h)))
    return pow(int.from_bytes(b"\0" + masked_seed + masked_db, "big"), e, n).to_bytes(k, "big")


def store(segment: str, out_dir: str, chunk: int, keys_dir: str) -> dict:
    """The plugin's three objects (``.log`` and manifest; no side files) and its config."""
    import zstandard
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    os.makedirs(keys_dir, exist_ok=True)
    private = os.path.join(keys_dir, "k1-private.pem")
    with open(private, "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
    data_key, aad = os.urandom(32), os.urandom(32)
    folder = os.path.join(out_dir, f"bench-{TOPIC_ID}", "0")
    os.makedirs(folder)
    stem = os.path.join(folder, f"{0:020d}-{SEGMENT_ID}")
    data = open(segment, "rb").read()
    cctx = zstandard.ZstdCompressor(level=3, write_content_size=True)
    aes = AESGCM(data_key)
    sizes = []
    with open(stem + ".log", "wb") as fh:
        for at in range(0, len(data), chunk):
            iv = os.urandom(12)
            blob = iv + aes.encrypt(iv, cctx.compress(data[at:at + chunk]), aad)
            fh.write(blob)
            sizes.append(len(blob))
    base = min(sizes[:-1]) if len(sizes) > 1 else 0
    width = max(1, (max([s - base for s in sizes[:-1]] or [0]).bit_length() + 7) // 8)
    code = (struct.pack(">i", len(sizes)) + (struct.pack(">i", sizes[0]) if len(sizes) == 1 else
            struct.pack(">iB", base, width) + b"".join((s - base).to_bytes(width, "big") for s in sizes[:-1])
            + struct.pack(">i", sizes[-1])))
    manifest = {"version": "1", "chunkIndex": {"type": "variable", "originalChunkSize": chunk,
                                                "originalFileSize": len(data),
                                                "transformedChunks": base64.b64encode(cctx.compress(code)).decode()},
                "segmentIndexes": {}, "compression": True,
                "encryption": {"dataKey": "k1:" + base64.b64encode(oaep_sha3_512_encrypt(
                    key.public_key().public_numbers(), data_key)).decode(), "aad": base64.b64encode(aad).decode()}}
    with open(stem + ".rsm-manifest", "w") as fh:
        json.dump(manifest, fh)
    config = os.path.join(keys_dir, "rsm.properties")
    with open(config, "w") as fh:
        fh.write(f"rsm.config.encryption.key.pairs=k1\nrsm.config.encryption.key.pairs.k1.private.key.file={private}\n")
    return {"config": config, "data_key": data_key, "aad": aad, "sizes": sizes, "original": len(data)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--chunk-mb", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    import zstandard
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from support.servers.s3server import S3Server
    chunk = args.chunk_mb << 20
    with tempfile.TemporaryDirectory() as tmp, S3Server() as s3:
        records = make_segment(os.path.join(tmp, "segment.log"), args.size_mb)
        objects = os.path.join(tmp, "objects")
        made = store(os.path.join(tmp, "segment.log"), objects, chunk, os.path.join(tmp, "keys"))
        s3.upload_dir(objects, "tiered")
        st, root = storage.resolve("s3://tiered", {**s3.options(), "tieredStorageConfig": made["config"]})
        lay = layout.scan(st, root)
        seg = lay.partitions[0].segments[0]
        stored = seg.rsm.chunk_index.stored
        size = made["original"]

        def raw():
            n = 0
            with st.open(seg.path) as f:
                for i in range(len(stored) - 1):
                    n += f.read_buffer(stored[i], stored[i + 1] - stored[i]).size
            return n

        def segment_object():
            n = 0
            with layout.open_segment(st, seg) as f:
                pos = 0
                while pos < size:
                    n += len(f.read_at(pos, chunk))
                    pos += chunk
            return n

        def arrow():
            sr = selection.SegmentRange("bench", 0, seg)
            return sum(rb.num_rows for piece in selection.iter_range_pieces(st, sr, chunk_size=chunk)
                       for rb in kafkarec.iter_arrow(piece.data, origin=piece.position))

        with st.open(seg.path) as f:
            blobs = [f.read_at(stored[i], stored[i + 1] - stored[i]) for i in range(len(stored) - 1)]

        def bare():
            aes = AESGCM(made["data_key"])
            dctx = zstandard.ZstdDecompressor()
            return sum(len(dctx.decompress(aes.decrypt(b[:12], b[12:], made["aad"]))) for b in blobs)

        def ours():
            n = 0
            for i, b in enumerate(blobs):
                plain = rsm._aes_gcm(made["data_key"], made["aad"], b, "bench", i)
                n += len(rsm._zstd_frame(plain, chunk, "bench", i))
            return n

        raw()  # warm-up
        object_bytes = stored[-1]
        rows = []
        for name, fn, check, nbytes in (
                ("raw ranged reads of the stored chunks (the limit)", raw, object_bytes, object_bytes),
                ("SegmentObject: fetch, decrypt, decompress", segment_object, size, object_bytes),
                ("ranged pieces into Arrow: records into Arrow", arrow, records, object_bytes),
                ("in memory: bare AESGCM + zstd calls", bare, size, object_bytes),
                ("in memory: kafkarec's per-chunk path", ours, size, object_bytes)):
            med, best, result = timed(fn, args.runs)
            assert result == check, (name, result, check)
            rows.append((name, nbytes / med / 1e9, med))
        print(f"segment: {size / 2**20:.0f} MiB original, {object_bytes / 2**20:.1f} MiB stored "
              f"({len(stored) - 1} chunks of {args.chunk_mb} MiB, zstd + AES-GCM), {records} records, "
              f"S3 (SeaweedFS {s3.endpoint}), median of {args.runs}")
        print(f"{'step':<52} {'GB/s stored':>12} {'seconds':>8}")
        for name, gbs, med in rows:
            print(f"{name:<52} {gbs:12.3f} {med:8.3f}")
        print(f"SegmentObject vs raw ranged reads: {rows[1][1] / rows[0][1]:.0%} of the raw throughput")
        print(f"kafkarec's per-chunk path vs the bare calls: {rows[3][2] and rows[4][2] / rows[3][2]:.2f}x the time")


if __name__ == "__main__":
    main()
