"""Segment scan benchmark: how close `kafkarec verify` and a header-only batch
scan come to plain file reading, and how much memory they need.

    .venv/bin/python benchmarks/bench_segment.py [--size-mb 512] [--keep DIR]

Writes one segment of about --size-mb MiB (v2 batches of 1000 records, every
codec, written with kafkarec's bulk builder) into a temporary log directory,
then times, page cache warm, best of 3, each in a fresh process so peak RSS
(ru_maxrss) is that step's own:
  * plain read: the file in 1 MiB chunks into one reused buffer (the limit);
  * header scan: every batch header through kafkarec.log.segment.Segment, no CRC;
  * header scan + CRC-32C of every batch;
  * `kafkarec verify` (CRCs, offsets, indexes) as a user runs it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STEPS = {
    "plain read (1 MiB chunks)": """
buf = bytearray(1 << 20)
with open(PATH, 'rb', buffering=0) as f:
    while f.readinto(buf):
        pass
""",
    "header scan (Segment.batches, no CRC)": """
from kafkarec.log.segment import Segment
seg = Segment(PATH)
n = sum(1 for _ in seg.batches(verify_crc=False))
seg.close()
""",
    "header scan + CRC-32C per batch": """
from kafkarec.log.segment import Segment
seg = Segment(PATH)
bad = sum(1 for b in seg.batches(verify_crc=False) if not b.crc_valid)
assert bad == 0
seg.close()
""",
    "kafkarec verify (CLI)": """
from kafkarec.cli import main
assert main(['verify', '--no-progress', DIR]) == 0
""",
    "kafkarec verify --deep (CLI)": """
from kafkarec.cli import main
assert main(['verify', '--deep', '--no-progress', DIR]) == 0
""",
    "kafkarec stats (CLI)": """
from kafkarec.cli import main
assert main(['stats', '--no-progress', DIR]) == 0
""",
}
# stats reads every record, as verify --deep does; it may cost at most this much more.
STATS_VS_DEEP_TARGET = 1.2

RUNNER = """
import contextlib, io, resource, sys, time
PATH, DIR = sys.argv[1], sys.argv[2]
t = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    exec(compile(sys.argv[3], 'step', 'exec'))
dt = time.perf_counter() - t
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_segment(directory: str, size_mb: int) -> str:
    sys.path.insert(0, ROOT)
    from kafkarec import Compression, build_batch
    part = os.path.join(directory, "bench-0")
    os.makedirs(part)
    path = os.path.join(part, "%020d.log" % 0)
    rng = random.Random(7)
    words = [b"order", b"paid", b"user", b"eur", b"shipped", b"qty", b"item", b"ok"]
    values = [b" ".join(rng.choice(words) for _ in range(18))[:100] for _ in range(1000)]
    keys = [b"user-%011d" % rng.randrange(200000) for _ in range(1000)]
    codecs = list(Compression)
    offset, written, i = 0, 0, 0
    with open(path, "wb") as fh:
        while written < size_mb << 20:
            batch = build_batch(values, keys, list(range(offset, offset + 1000)),
                                base_offset=offset, compression=codecs[i % len(codecs)])
            fh.write(batch)
            written += len(batch)
            offset += 1000
            i += 1
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=512, help="segment size (default 512 MiB)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="write the segment here and keep it")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    directory = args.keep or tempfile.mkdtemp(prefix="kafkarec-bench-")
    try:
        t = time.perf_counter()
        path = write_segment(directory, args.size_mb)
        size = os.path.getsize(path)
        print(f"segment: {size / 2**20:.0f} MiB written in {time.perf_counter() - t:.1f} s ({path})")
        with open(path, "rb") as fh:             # warm the page cache
            while fh.read(1 << 24):
                pass
        results = {}
        env = dict(os.environ, PYTHONPATH=ROOT)
        print(f"{'step':42s} {'best s':>8s} {'GB/s':>7s} {'peak RSS MiB':>13s}")
        for name, code in STEPS.items():
            runs = []
            for _ in range(args.repeats):
                out = subprocess.run([sys.executable, "-c", RUNNER, path, directory, code], env=env,
                                     capture_output=True, text=True, check=True).stdout.split()
                runs.append((float(out[0]), int(out[1]) / 1024))
            best = min(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            results[name] = {"seconds": best, "gb_per_s": size / best / 1e9, "peak_rss_mib": rss}
            print(f"{name:42s} {best:8.3f} {size / best / 1e9:7.2f} {rss:13.0f}")
        limit = results["plain read (1 MiB chunks)"]["seconds"]
        for name in list(STEPS)[1:]:
            print(f"  {name}: {results[name]['seconds'] / limit:.1f}x the plain read time")
        ratio = results["kafkarec stats (CLI)"]["seconds"] / results["kafkarec verify --deep (CLI)"]["seconds"]
        verdict = "PASS" if ratio <= STATS_VS_DEEP_TARGET else "FAIL"
        print(f"stats / verify --deep: {ratio:.2f}x (target <= {STATS_VS_DEEP_TARGET}x: {verdict})")
        results["stats_vs_verify_deep"] = ratio
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"segment_bytes": size, "results": results}, fh, indent=2)
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
