"""How planning grows with partitions, per command (issue 79): ``restore --dry-run``, ``census``,
``census --what-if zstd`` and ``find`` over a local log directory of N partitions (10 records each,
one segment: :mod:`bench_planning`'s layout), each command run in this process through the command
line; reported: seconds, listings (:func:`kafkarec.log.storage.process_listings`, where the tree has
the counter) and ``.log`` bytes read over the log's ``.log`` bytes
(:func:`kafkarec.log.storage.process_bytes_read`), and of those what walks of batch headers read
(:func:`kafkarec.log.storage.process_walk_bytes`, where the tree has it).

    PYTHONPATH=. python benchmarks/bench_commands.py --partitions 50,200,800,3200
    PYTHONPATH=. python benchmarks/bench_commands.py --partitions 5000 --commands "restore --dry-run,census"
    PYTHONPATH=. python benchmarks/bench_commands.py --s3 --partitions 50,200,800

``--s3``: the same log directory uploaded to a SeaweedFS S3 server this run starts on 127.0.0.1
(tests/support/servers/s3server.py, its metrics on), each command run on ``s3://bucket``; reported
besides: the LIST and GET requests the server answered (weed counts a HEAD as a GET: one per
segment opened), and each command run twice, alternating: with the walk's segments held for the
read (:class:`kafkarec.log.storage.HeldSegments`, the default) and without (``KAFKAREC_HOLD_BYTES=0``:
the read requests the walked segments again, as before the hold).
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
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))     # the SeaweedFS server (--s3)

COMMANDS = (
    ("restore --dry-run", lambda root: ["restore", root, "--dry-run", "--no-groups"]),
    ("census", lambda root: ["census", root, "--json", "--no-progress"]),
    ("census --what-if zstd", lambda root: ["census", root, "--json", "--no-progress", "--what-if", "zstd"]),
    ("find", lambda root: ["find", root, "--key", "6b30303030303030"]),
)


def run(argv, server=None) -> dict:
    from kafkarec.cli.main import main
    from kafkarec.log import storage
    listings = getattr(storage, "process_listings", None)
    before_l = listings().requests if listings else None
    before_r = server.requests() if server is not None else {}
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
    after_r = server.requests() if server is not None else {}
    return {"seconds": seconds, "code": code, "read": read, "walked": walked,
            "listings": None if listings is None else listings().requests - before_l,
            "lists": after_r.get("LIST", 0) - before_r.get("LIST", 0),
            "gets": after_r.get("GET", 0) - before_r.get("GET", 0)}


def main_s3(args, wanted) -> int:
    """The commands on SeaweedFS: each with the walk's segments held for the read and without."""
    from bench_planning import layout_files, write_s3
    from support.servers.s3server import S3Server
    rows = []
    with S3Server(startup_timeout=120, metrics=True) as server:
        os.environ.update(server.env())
        fs = server.filesystem()
        for n in (int(x) for x in args.partitions.split(",")):
            bucket = f"bench-commands-{n}"
            t = time.perf_counter()
            write_s3(fs, bucket, n, 1)
            upload = time.perf_counter() - t
            size = sum(len(data) for rel, data in layout_files(n, 1) if rel.endswith(".log"))
            objects = sum(1 for _ in layout_files(n, 1))
            print(f"{n} partitions: {objects} objects uploaded in {upload:.1f} s", flush=True)
            if not rows:
                run(COMMANDS[0][1](f"s3://{bucket}"), server)       # warm-up: imports, first connections
            for name, make in COMMANDS:
                if name not in wanted:
                    continue
                got = {}
                for hold in ("held", "not held", "held", "not held")[:2 * args.runs]:
                    if hold == "held":
                        os.environ.pop("KAFKAREC_HOLD_BYTES", None)
                    else:
                        os.environ["KAFKAREC_HOLD_BYTES"] = "0"
                    r = run(make(f"s3://{bucket}"), server)
                    if hold not in got or r["seconds"] < got[hold]["seconds"]:
                        got[hold] = r
                os.environ.pop("KAFKAREC_HOLD_BYTES", None)
                for hold, r in got.items():
                    rows.append((name, n, hold, r, size))
                    print(f"{name:<24} {n:>6} partitions {hold:<9} {r['seconds']:8.2f} s  listings {r['listings']}  "
                          f"LIST {r['lists']}  GET {r['gets']}  read {r['read'] / size:.3f}x "
                          f"(header walks {r['walked'] / size:.3f}x)  (exit {r['code']})", flush=True)
            fs.delete_dir(bucket)
    print()
    print("| command | partitions | walk's segments | seconds | listings | LIST requests | GET requests "
          "| .log bytes read / .log bytes | of which the walk |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, n, hold, r, size in rows:
        print(f"| `{name}` | {n:,} | {hold} | {r['seconds']:.2f} | {r['listings']} | {r['lists']} | {r['gets']:,} "
              f"| {r['read'] / size:.3f} | {r['walked'] / size:.3f} |")
    return 0 if all(r["code"] == 0 for _, _, _, r, _ in rows) else 1


def main(argv=None) -> int:
    from bench_planning import write_local
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", default="50,200,800")
    ap.add_argument("--commands", default=",".join(name for name, _ in COMMANDS))
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "kafkarec-bench-commands"))
    ap.add_argument("--s3", action="store_true", help="on a SeaweedFS server this run starts (see above)")
    ap.add_argument("--runs", type=int, default=2, help="--s3: runs of each (held, not held) pair; the best kept")
    args = ap.parse_args(argv)
    wanted = [c.strip() for c in args.commands.split(",")]
    if args.s3:
        return main_s3(args, wanted)
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
