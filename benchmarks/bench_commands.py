"""How planning grows with partitions, per command (issue 79): ``restore --dry-run``, ``census``,
``census --what-if zstd``, a backfill's planning (and read, without its table writer), ``find`` and
a read_committed stream's trigger over a local log directory of N partitions (10 records each, one
segment: :mod:`bench_planning`'s layout), each run in this process (the commands through the
command line, after a warm-up on a small log); reported: seconds, CPU seconds (this process's:
what to read on a shared machine, where the wall clock waits for the cores), listings
(:func:`kafkarec.log.storage.process_listings`, where the tree has the counter) and ``.log`` bytes
read over the log's ``.log`` bytes (:func:`kafkarec.log.storage.process_bytes_read`), and of those
what walks of batch headers read (:func:`kafkarec.log.storage.process_walk_bytes`, where the tree
has it); then each command's growth from each size to the largest (the issue's target: from 200 to
3,200 partitions, at most 18x).  ``--runs N``: each command N times, the fastest kept.

    PYTHONPATH=. python benchmarks/bench_commands.py --partitions 50,200,800,3200
    PYTHONPATH=. python benchmarks/bench_commands.py --partitions 200,3200 --runs 3
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



def cli(*argv):
    """The command line's ``kafkarec ARGV``, as a call returning its exit code."""
    def go() -> int:
        from kafkarec.cli.main import main
        return main(list(argv))
    return go


def backfill(root):
    """A backfill's plan and read without its table writer: every partition's committed rows in a
    live writer's layout (:func:`kafkarec.lakehouse.backfill.backfill_batches`: the hand-off plan,
    then the one read over its listing)."""
    def go() -> int:
        from kafkarec.lakehouse.backfill import backfill_batches
        for _ in backfill_batches(root, "kafka-delta-ingest"):
            pass
        return 0
    return go


def stream_trigger(root):
    """A read_committed stream's first trigger, driven as Spark's micro-batch loop drives it
    (tests/support/spark/streams.py, no SparkSession): ``initialOffset``, ``latestOffset``, then
    the micro-batch's ranges planned (``partitions``) and read; every partition has grown.  The
    query's start (the reader, ``initialOffset``) is made before the count."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from support.spark.streams import stream_reader
    # the query's start, before the trigger (a query starts once; its triggers are what grows)
    r = stream_reader(root, startingOffsets="earliest", **{"kafka.isolation.level": "read_committed"})
    start = r.initialOffset()

    def go() -> int:
        end = r.latestOffset(start, ReadAllAvailable())
        for task in r.partitions(start, end):
            for _ in r.read(task):
                pass
        return 0
    return go


#: each command, as a call over the log's root returning its exit code
COMMANDS = (
    ("restore --dry-run", lambda root: cli("restore", root, "--dry-run", "--no-groups")),
    ("census", lambda root: cli("census", root, "--json", "--no-progress")),
    ("census --what-if zstd", lambda root: cli("census", root, "--json", "--no-progress", "--what-if", "zstd")),
    ("backfill planning", backfill),
    ("find", lambda root: cli("find", root, "--key", "6b30303030303030")),
    ("stream trigger", stream_trigger),
)


def run(command, server=None) -> dict:
    from kafkarec.log import storage
    listings = getattr(storage, "process_listings", None)
    before_l = listings().requests if listings else None
    before_r = server.requests() if server is not None else {}
    reads = storage.process_bytes_read()
    walks = storage.process_walk_bytes() if hasattr(storage, "process_walk_bytes") else None
    before = {p: n for p, n in reads.by_path.items() if p.endswith(".log")}
    before_w = {} if walks is None else {p: n for p, n in walks.by_path.items() if p.endswith(".log")}
    t, c = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = command()
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    read = sum(n - before.get(p, 0) for p, n in reads.by_path.items() if p.endswith(".log"))
    walked = None if walks is None else sum(n - before_w.get(p, 0) for p, n in walks.by_path.items()
                                            if p.endswith(".log"))
    after_r = server.requests() if server is not None else {}
    return {"seconds": seconds, "cpu": cpu, "code": code, "read": read, "walked": walked,
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
    ap.add_argument("--runs", type=int, default=None,
                    help="runs of each command, the fastest kept (--s3: of each (held, not held) pair; default "
                         "2 there, 1 locally)")
    args = ap.parse_args(argv)
    wanted = [c.strip() for c in args.commands.split(",")]
    if args.s3:
        args.runs = 2 if args.runs is None else args.runs
        return main_s3(args, wanted)
    rows = []
    for i, n in enumerate(int(x) for x in args.partitions.split(",")):
        root = os.path.join(args.data, f"logs-{n}")
        shutil.rmtree(root, ignore_errors=True)
        write_local(root, n, 1)
        if i == 0:
            warm = os.path.join(args.data, "warm-up")
            shutil.rmtree(warm, ignore_errors=True)
            write_local(warm, 5, 1)
            for name, make in COMMANDS:         # imports and first calls, out of the first row
                if name in wanted:
                    run(make(warm))
            shutil.rmtree(warm, ignore_errors=True)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs if f.endswith(".log"))
        for name, make in COMMANDS:
            if name not in wanted:
                continue
            r = None
            for _ in range(args.runs or 1):     # the fastest: the least disturbed by other work
                got = run(make(root))
                if r is None or got["seconds"] < r["seconds"]:
                    r = got
            rows.append((name, n, r, size))
            walked = "-" if r["walked"] is None else f"{r['walked'] / size:.3f}x"
            print(f"{name:<24} {n:>6} partitions {r['seconds']:8.2f} s ({r['cpu']:.2f} s CPU)  listings "
                  f"{r['listings']}  read {r['read'] / size:.3f}x (header walks {walked})  (exit {r['code']})",
                  flush=True)
        shutil.rmtree(root, ignore_errors=True)
    print()
    # CPU seconds: this process's, all its threads; on a shared machine the wall clock waits for the
    # cores and the CPU seconds do not
    print("| command | partitions | seconds | CPU seconds | listings | .log bytes read / .log bytes "
          "| of which header walks |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, n, r, size in rows:
        listed = "-" if r["listings"] is None else r["listings"]
        walked = "-" if r["walked"] is None else f"{r['walked'] / size:.3f}"
        print(f"| `{name}` | {n:,} | {r['seconds']:.2f} | {r['cpu']:.2f} | {listed} | {r['read'] / size:.3f} "
              f"| {walked} |")
    ns = sorted({n for _, n, _, _ in rows})
    got = {(name, n): r for name, n, r, _ in rows}
    # the target: from 200 to 3,200 partitions (16x the work) at most 18x the time
    for lo in ns[:-1]:
        hi = ns[-1]
        print()
        print(f"growth from {lo:,} to {hi:,} partitions ({hi / lo:g}x the work): seconds, CPU seconds, listings")
        for name, _ in COMMANDS:
            a, b = got.get((name, lo)), got.get((name, hi))
            if a and b:
                print(f"  {name:<24} {b['seconds'] / a['seconds']:6.1f}x  {b['cpu'] / max(a['cpu'], 1e-9):6.1f}x  "
                      f"{a['listings']} -> {b['listings']}")
    return 0 if all(r["code"] == 0 for _, _, r, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
