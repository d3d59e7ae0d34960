#!/usr/bin/env python
"""The compression what-if's speed per codec, an earlier commit against the checkout, in one run.

    .venv/bin/python benchmarks/bench_what_if.py --ref main --records 300000 --rounds 5

A topic shaped as ``bench_census.py``'s (4 partitions, lz4, ``--records`` order-like JSON values
of ``--records / 10`` keys) is written offline as a log dir by kafkarec's batch writer (no broker:
the what-if reads files).  Then :func:`kafkarec.census.what_if` with ``zstd:3,lz4,snappy,gzip:6``
runs in a fresh child process per build, the builds alternating round by round so that the
machine's load hits both alike (the earlier commit is checked out and compiled as
``bench_before_after.py`` does).  Per codec: MB/s of building and compressing its batches
(uncompressed batch bytes over ``compress_seconds``, the best round), and the bytes, which must be
equal in both builds.  Two limits beside them, on the same records:

* **raw, 16 KiB** - each library alone on the key and value bytes cut at 16 KiB, as
  ``bench_census.py`` measures it (zstd one-shot: the input's size known, so zstd picks the small
  tables of a 16 KiB input, which Kafka's stream cannot);
* **zstd as Kafka frames it** - the what-if's own zstd batches (their uncompressed records),
  compressed alone as the core compresses them (a stream of unknown size, a block flush, the end):
  what the what-if's zstd figure would be if building the batch cost nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TOPIC = "census"
PARTITIONS = 4
CODECS = "zstd:3,lz4,snappy,gzip:6"


def write_topic(root: str, records: int) -> None:
    """bench_census.py's topic, its records spread over the partitions by key, written as lz4
    batches of 500 records."""
    import kafkarec
    from kafkarec._core import partition_for_key
    from kafkarec.enums import Compression
    keys = max(1, records // 10)
    rng = random.Random(50)
    words = [w.encode() for w in "order shipped pending refund card wallet express standard priority gift "
             "north south east west warehouse courier".split()]
    parts = [[] for _ in range(PARTITIONS)]
    for i in range(records):
        value = b'{"id":%d,"amount":%d.%02d,"note":"%s"}' % (
            i, rng.randrange(1000), rng.randrange(100), b" ".join(rng.choice(words) for _ in range(rng.randrange(4, 12))))
        key = b"key-%010d" % (i % keys)
        parts[partition_for_key(key, PARTITIONS)].append((key, value, 1_700_000_000_000 + i))
    for p, recs in enumerate(parts):
        folder = os.path.join(root, f"{TOPIC}-{p}")
        os.makedirs(folder)
        with open(os.path.join(folder, "00000000000000000000.log"), "wb") as fh:
            for start in range(0, len(recs), 500):
                chunk = recs[start:start + 500]
                fh.write(kafkarec.build_batch([v for _, v, _ in chunk], keys=[k for k, _, _ in chunk],
                                              timestamps=[t for _, _, t in chunk], base_offset=start,
                                              compression=Compression.LZ4))


def _child(tree: str, root: str) -> None:
    """In a child process: one what-if with kafkarec from ``tree``; its figures as JSON."""
    sys.path.insert(0, tree)
    import kafkarec
    if not os.path.abspath(kafkarec.__file__).startswith(os.path.abspath(tree) + os.sep):
        raise SystemExit(f"kafkarec came from {kafkarec.__file__}, not {tree}")
    from kafkarec.census import parse_codecs, what_if
    from kafkarec.scan import Bounds
    t0 = time.perf_counter()
    doc = what_if(root, parse_codecs(CODECS), bounds=Bounds.of(topics=[TOPIC]))
    wall = time.perf_counter() - t0
    print(json.dumps({"wall": wall, "codecs": {c["codec"]: [c["bytes"], c["compress_seconds"]]
                                               for c in doc["codecs"]}}))


def limits(root: str) -> dict:
    """MB/s of the raw compressors on 16 KiB cuts, and of zstd on the what-if's own batches as
    Kafka frames them (both over the same byte counts as the what-if's figures)."""
    import zlib

    import cramjam
    import lz4.block
    import pyarrow as pa
    import zstandard

    import kafkarec
    from kafkarec.census import parse_codecs, what_if
    from kafkarec.scan import Bounds, LogScan
    bounds = Bounds.of(topics=[TOPIC])
    table = LogScan(root, bounds=bounds, isolation_level="read_committed").to_table()
    blob = b"".join(pa.concat_arrays([table.column("key").combine_chunks(),
                                      table.column("value").combine_chunks()]).to_pylist())
    cuts = [blob[i:i + 16384] for i in range(0, len(blob), 16384)]
    raw = {"zstd:3": zstandard.ZstdCompressor(level=3).compress,
           "lz4": lambda b: lz4.block.compress(b, store_size=False),
           "snappy": lambda b: bytes(cramjam.snappy.compress_raw(b)),
           "gzip:6": lambda b: zlib.compress(b, 6)}
    out = {}
    for label, compress in raw.items():
        t0 = time.perf_counter()
        for b in cuts:
            compress(b)
        out["raw " + label] = len(blob) / (time.perf_counter() - t0) / 1e6
    # the what-if's zstd batches: the same records cut as it cut them, uncompressed
    doc = what_if(root, parse_codecs("zstd:3"), bounds=bounds, detail=True)
    sections = []
    rows = table.to_pylist()
    for r, ms in zip(rows, table.column("timestamp").cast("int64").to_pylist()):
        r["timestamp"] = ms
    for part in doc["partitions"]:
        recs = [r for r in rows if r["partition"] == part["partition"]]
        at = 0
        for n in part["codecs"][0]["batch_records"]:
            b = kafkarec.RecordBatchBuilder()
            for r in recs[at:at + n]:
                b.append(r["value"], r["key"], timestamp=r["timestamp"],
                         headers=[(h["key"], h["value"]) for h in r["headers"] or ()])
            sections.append(b.build()[kafkarec._core.V2_HEADER_SIZE:])
            at += n
    stream = zstandard.ZstdCompressor(level=3, write_content_size=False)
    t0 = time.perf_counter()
    for s in sections:
        o = stream.compressobj()
        o.compress(s) + o.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + o.flush()
    plain = next(c["bytes"] for c in doc["codecs"] if c["codec"] == "none")
    out["zstd:3 as Kafka frames it, the what-if's batches"] = plain / (time.perf_counter() - t0) / 1e6
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", required=True, help="the earlier commit (any git revision)")
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (best kept)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    sys.path.insert(0, HERE)
    from bench_before_after import _worktree
    trees = {"before": _worktree(args.ref), "after": REPO}
    best: dict = {}
    with tempfile.TemporaryDirectory(prefix="kafkarec-bench-what-if-") as root:
        write_topic(root, args.records)
        load0 = os.getloadavg()[0]
        for rnd in range(args.rounds):
            for t in (("before", "after") if rnd % 2 == 0 else ("after", "before")):
                out = json.loads(subprocess.check_output(
                    [sys.executable, os.path.abspath(__file__), "--ref", args.ref, "--child", trees[t], root],
                    cwd=tempfile.gettempdir(), text=True))
                for codec, (size, secs) in out["codecs"].items():
                    seen = best.setdefault((codec, t), [size, secs])
                    if seen[0] != size or best.get((codec, "before"), seen)[0] != size:
                        raise SystemExit(f"{codec}: the builds wrote different bytes ({seen[0]}, {size})")
                    seen[1] = min(seen[1], secs)
                best.setdefault(("wall", t), []).append(out["wall"])
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
        load1 = os.getloadavg()[0]
        lim = limits(root)
    plain = best["none", "after"][0]
    print(f"{args.records} records; before: {args.ref}, after: the checkout; best of {args.rounds} rounds; "
          f"load average {load0:.2f} -> {load1:.2f}")
    print(f"{'codec':8} {'bytes':>10} {'before MB/s':>12} {'after MB/s':>11}")
    for label in CODECS.split(","):
        print(f"{label:8} {best[label, 'after'][0]:10d} {plain / best[label, 'before'][1] / 1e6:12.1f} "
              f"{plain / best[label, 'after'][1] / 1e6:11.1f}")
    print(f"whole what-if, best wall: before {min(best['wall', 'before']):.2f} s, "
          f"after {min(best['wall', 'after']):.2f} s")
    for name, mbs in lim.items():
        print(f"limit: {name:52} {mbs:8.1f} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
