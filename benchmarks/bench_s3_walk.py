"""How the transaction rule's walk should read an object store (issue 79), measured on SeaweedFS:
a dry-run restore of a log with transactions, compaction holes and several segments a partition
(tests/support/logs/plan_counts.py), its walk made four ways, alternating, in one run:

* ``held`` (what kafkarec does): each segment read whole in one request and held for the read
  (:class:`kafkarec.log.storage.HeldSegments`), a partition's segments several at once
  (:data:`kafkarec.log.committed.HOLD_THREADS`);
* ``held, one at a time``: the same, a segment after another (``HOLD_THREADS = 1``);
* ``ranged headers``: the walk a local file gets, a ranged GET per batch header (61 bytes) and per
  transactional batch, the segment not held (the walk is shown the storage as local);
* ``whole, not held``: each segment read whole and not held (``KAFKAREC_HOLD_BYTES=0``): the read
  requests it again, as before the hold.

Reported: seconds, the GET requests the server answered (weed counts a HEAD as a GET) and ``.log``
bytes read over the log's.

    PYTHONPATH=. python benchmarks/bench_s3_walk.py --partitions 40
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


MODES = ("held", "held, one at a time", "ranged headers", "whole, not held")


class _AsLocal:
    """The storage as the walk's test of "a local file" sees it: local, so it seeks header to header."""
    is_local = True
    held = None

    def __init__(self, storage):
        self.storage = storage


def main(argv=None) -> int:
    from support.logs.plan_counts import cli, log_bytes, write_hard_log
    from support.servers.s3server import S3Server
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args(argv)
    from kafkarec.log import committed, storage
    real, threads = committed.storage_of, committed.HOLD_THREADS
    root = tempfile.mkdtemp(prefix="kafkarec-bench-s3-walk-")
    rows = []
    try:
        write_hard_log(root, args.partitions)
        size = log_bytes(root)
        with S3Server(startup_timeout=120, metrics=True) as server:
            server.upload_dir(root, "bench-s3-walk")
            os.environ.update(server.env())
            argv_ = ["restore", "s3://bench-s3-walk", "--dry-run", "--no-groups"]
            cli(*argv_)()                       # warm-up: imports, first connections
            for mode in MODES * args.runs:
                committed.storage_of = (lambda st, seg: _AsLocal(st)) if mode == "ranged headers" else real
                committed.HOLD_THREADS = 1 if mode == "held, one at a time" else threads
                if mode in ("held", "held, one at a time"):
                    os.environ.pop("KAFKAREC_HOLD_BYTES", None)
                else:
                    os.environ["KAFKAREC_HOLD_BYTES"] = "0"
                before, read0 = server.requests(), dict(storage.process_bytes_read().by_path)
                t = time.perf_counter()
                code = cli(*argv_)()
                seconds = time.perf_counter() - t
                after = server.requests()
                read = sum(n - read0.get(p, 0) for p, n in storage.process_bytes_read().by_path.items()
                           if p.endswith(".log"))
                rows.append((mode, seconds, after.get("GET", 0) - before.get("GET", 0), read / size, code))
                print(f"{mode:<16} {seconds:6.2f} s  GET {rows[-1][2]}  read {read / size:.3f}x  (exit {code})",
                      flush=True)
    finally:
        committed.storage_of, committed.HOLD_THREADS = real, threads
        os.environ.pop("KAFKAREC_HOLD_BYTES", None)
        shutil.rmtree(root, ignore_errors=True)
    print()
    print("| the walk on S3 | seconds (best) | GET requests | .log bytes read / .log bytes |")
    print("|---|---:|---:|---:|")
    for mode in MODES:
        mine = [r for r in rows if r[0] == mode]
        print(f"| {mode} | {min(r[1] for r in mine):.2f} | {mine[0][2]:,} | {mine[0][3]:.3f} |")
    return 0 if all(r[4] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
