"""A model, not a measurement: how evenly a pool's threads end a read, with the windows cut as the
pool cuts them (``kafkarec.scan._read.Read.cut``'s rule, :func:`kafkarec.scan._read.tail_cut`,
run through :func:`kafkarec.log.local._cuts` over batches of ``--batch-kb``) against whole windows,
for thread counts this machine cannot run (issue 80's 16-core row).  Each thread takes the next
window in log order when it is free (the pool keeps them in order); a window costs
``--ms-per-mb`` a MiB plus ``--ms-per-window`` (this machine's uncompressed whole rows: ~0.34 ms a
MB, docs/performance.md).  Prints, per shape and thread count, when the last thread ends against
the mean (the work divided by the threads), in ms, and the windows.

    python benchmarks/window_schedule.py [--threads 2,4,8,16]

The shapes: ``shared/bench/scale.py``'s four partitions (a 64 MiB and a 4.2 MiB segment each),
sixteen of them, issue 80's one partition as seven segments and as one 435 MiB segment, and thirty
small segments.  docs/performance.md ("The read's tail cut for its threads") has what it showed."""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MIB = 1 << 20
SHAPES = {
    "scale.py 4 x 500k": [67_008_543, 4_425_145] * 4,
    "scale.py 16 x 500k": [67_008_543, 4_425_145] * 16,
    "one partition, 64 MiB segments": [67_002_453] * 6 + [53_784_282],
    "one partition, one segment": [455_799_000],
    "30 segments of 4.2 MiB": [4_425_145] * 30,
}


def windows(sizes, threads: int, batch: int, tail: bool):
    """The windows' bytes, in log order, as the pool cuts the files ``sizes`` (batches of
    ``batch`` bytes) on ``threads`` threads, its tail cut smaller (``tail``) or not."""
    from kafkarec.log import local
    from kafkarec.scan._read import tail_cut
    out = []
    after = sum(sizes)
    for size in sizes:
        after -= size
        max_bytes = (tail_cut(size, after, threads) if tail else None) or local.READ_WINDOW_BYTES
        spans = [(pos, min(batch, size - pos)) for pos in range(0, size, batch)]
        cuts = [0] + local._cuts(spans, 0, size, max_bytes, 0) + [size]
        out.extend(b - a for a, b in zip(cuts, cuts[1:]))
    return out


def ends(ws, threads: int, ms_per_mb: float, ms_per_window: float):
    """(when the last thread ends, the mean) of windows ``ws`` taken in order by the first free thread."""
    free = [0.0] * threads
    for w in ws:
        i = free.index(min(free))
        free[i] += w / MIB * ms_per_mb + ms_per_window
    return max(free), sum(free) / threads


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="2,4,8,16")
    ap.add_argument("--batch-kb", type=int, default=130, help="a batch's bytes (1,000 records of ~130 bytes)")
    ap.add_argument("--ms-per-mb", type=float, default=0.34)
    ap.add_argument("--ms-per-window", type=float, default=0.3)
    args = ap.parse_args(argv)
    print(f"{'shape':32s} {'threads':>7s} {'whole windows: end / mean (n)':>30s} {'tail cut: end / mean (n)':>26s}")
    for name, sizes in SHAPES.items():
        for threads in (int(t) for t in args.threads.split(",")):
            row = []
            for tail in (False, True):
                ws = windows(sizes, threads, args.batch_kb * 1024, tail)
                end, mean = ends(ws, threads, args.ms_per_mb, args.ms_per_window)
                row.append(f"{end:7.1f} / {mean:6.1f} ({len(ws):3d})")
            print(f"{name:32s} {threads:7d} {row[0]:>30s} {row[1]:>26s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
