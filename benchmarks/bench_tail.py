"""A read's tail on the pool: ``LogScan(...).to_table()`` with the windows cut as this tree cuts
them (``kafkarec.scan._read.Read.cut``: the tail cut smaller for the threads) against whole windows
(the same read with the tail's cut left out), alternating in one process, medians and bests of
``--repeats`` (wall and the process's CPU), and the threads' busy share (CPU / wall / threads).

    python benchmarks/bench_tail.py LOGDIR [--threads 2] [--repeats 30] [--columns offset,timestamp,key,value]

LOGDIR: a log folder, e.g. ``shared/bench/scale.py``'s ``WORK/log`` or ``bench_engines_local.py
--work W``'s ``W/logs`` (one 435 MiB segment with ``--segment-bytes 1073741824``).  It patches
``Read.cut`` in this process only; run it from another tree (its own ``benchmarks/``) to measure that
tree's cut.  ``benchmarks/cores_timeline.py --threads N`` shows one read's windows and how long its
first thread to end waited; ``benchmarks/window_schedule.py`` models thread counts this machine has
not got.  docs/performance.md ("The read's tail cut for its threads") has what they showed."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--columns", default="offset,timestamp,key,value")
    args = ap.parse_args(argv)
    from kafkarec.scan import LogScan, _read
    columns = args.columns.split(",")
    cut = _read.Read.cut

    def whole(self, piece, after=None):
        return cut(self, piece, None)
    variants = {"tail cut": cut, "whole windows": whole}
    times = {name: [] for name in variants}
    try:
        for i in range(args.repeats + 2):       # (two rounds of warming: page cache, threads, imports)
            order = list(variants.items())
            for name, fn in (order if i % 2 else order[::-1]):
                _read.Read.cut = fn
                w, c = time.perf_counter(), time.process_time()
                LogScan(args.log, columns=columns, threads=args.threads).to_table()
                if i >= 2:
                    times[name].append((time.perf_counter() - w, time.process_time() - c))
    finally:
        _read.Read.cut = cut
    print(f"{args.log}: {args.threads} threads, {args.repeats} alternating rounds")
    for name, ts in times.items():
        wall = statistics.median(t[0] for t in ts)
        cpu = statistics.median(t[1] for t in ts)
        print(f"  {name:14s} wall median {wall * 1e3:7.1f} ms, best {min(t[0] for t in ts) * 1e3:7.1f} ms; "
              f"CPU median {cpu * 1e3:7.1f} ms; busy {cpu / wall / args.threads:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
