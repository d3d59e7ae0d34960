"""How planning grows with partitions, per command (issue 79): ``restore --dry-run``, ``census``,
``census --what-if zstd`` and ``find`` over a local log directory of N partitions (10 records each,
one segment: :mod:`bench_planning`'s layout), each command run in this process through the command
line; reported: seconds, listings (:func:`kafkarec.log.storage.process_listings`, where the tree has
the counter) and ``.log`` bytes read over the log's ``.log`` bytes
(:func:`kafkarec.log.storage.process_bytes_read`), and of those what walks of batch headers read
(:func:`kafkarec.log.storage.process_walk_bytes`, where the tree has it).

    PYTHONPATH=. python benchmarks/bench_commands.py --partitions 50,200,800,3200
    PYTHONPATH=. python benchmarks/bench_commands.py --partitions 5000 --commands "restore --dry-run,census"
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

COMMANDS = (
    ("restore --dry-run", lambda root: ["restore", root, "--dry-run", "--no-groups"]),
    ("census", lambda root: ["census", root, "--json", "--no-progress"]),
    ("census --what-if zstd", lambda root: ["census", root, "--json", "--no-progress", "--what-if", "zstd"]),
    ("find", lambda root: ["find", root, "--key", "6b30303030303030"]),
)


def run(argv) -> dict:
    from kafkarec.cli.main import main
    from kafkarec.log import storage
    listings = getattr(storage, "process_listings", None)
    before_l = listings().requests if listings else None
    reads = storage.process_bytes_read()
    walks = storage.process_walk_bytes() if hasattr(storage, "process_walk_bytes") else None
    before = {p: n for p, n in reads.by_path.items() if p.endswith(".log")}
    before_w = {} if walks is None else {p: n for p, n in walks.by_path.items() if p.endswith(".log")}
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    seconds = time.perf_counter() - t
    read = sum(n - before.get(p, 0) for p, n in reads.by_path.items() if p.endswith(".log"))
    walked = None if walks is None else sum(n - before_w.get(p, 0) for p, n in walks.by_path.items()
                                            if p.endswith(".log"))
    return {"seconds": seconds, "code": code, "read": read, "walked": walked,
            "listings": None if listings is None else listings().requests - before_l}


def main(argv=None) -> int:
    from bench_planning import write_local
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", default="50,200,800")
    ap.add_argument("--commands", default=",".join(name for name, _ in COMMANDS))
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "kafkarec-bench-commands"))
    args = ap.parse_args(argv)
    wanted = [c.strip() for c in args.commands.split(",")]
    rows = []
    for n in (int(x) for x in args.partitions.split(",")):
        root = os.path.join(args.data, f"logs-{n}")
        shutil.rmtree(root, ignore_errors=True)
        write_local(root, n, 1)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs if f.endswith(".log"))
        for name, make in COMMANDS:
            if name not in wanted:
                continue
            r = run(make(root))
            rows.append((name, n, r, size))
            walked = "-" if r["walked"] is None else f"{r['walked'] / size:.3f}x"
            print(f"{name:<24} {n:>6} partitions {r['seconds']:8.2f} s  listings {r['listings']}  "
                  f"read {r['read'] / size:.3f}x (header walks {walked})  (exit {r['code']})", flush=True)
        shutil.rmtree(root, ignore_errors=True)
    print()
    print("| command | partitions | seconds | listings | .log bytes read / .log bytes | of which header walks |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, n, r, size in rows:
        listed = "-" if r["listings"] is None else r["listings"]
        walked = "-" if r["walked"] is None else f"{r['walked'] / size:.3f}"
        print(f"| `{name}` | {n:,} | {r['seconds']:.2f} | {listed} | {r['read'] / size:.3f} | {walked} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
