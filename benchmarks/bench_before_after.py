#!/usr/bin/env python
"""Hot paths of two builds of kafkarec in one run: an earlier commit against the checkout.

    .venv/bin/python benchmarks/bench_before_after.py --ref e360790          # ~2-3 min
    .venv/bin/python benchmarks/bench_before_after.py --ref HEAD~5 --rounds 9

The earlier commit is checked out as a git worktree under ``.cache/bench-ref-<sha>`` and
its core compiled in place there with this Python (once; later runs reuse it).  The
workloads of ``workloads.py`` (batches written by kafka-python) are written to a
temporary file; then each measurement runs in a fresh child process per build, the two
builds alternating round by round so that background load hits both alike.  A child
imports kafkarec from its tree only (checked) and reports the best of a few timed runs.
The table shows the best over all rounds for each build and after/before (below 1.00
is faster now).  Only calls that both builds have are timed:

* ``fields``   - ``iter_batches`` and every field of every record (CRC checked);
* ``to_arrow`` - ``kafkarec.to_arrow`` (Spark's Kafka schema);
* ``build``    - ``RecordBatchBuilder.append`` record by record, then ``build``;
* ``bulk``     - ``build_batch`` from columns (lists of bytes);
* ``duckdb``   - DuckDB's whole rows over one partition in issue 80's shape (JSON-like values,
  16-byte keys, one header, 1,000 records a batch; ``--duckdb-records``, written once by the
  checkout): ``count(*), sum(octet_length(value)), sum(octet_length(key))`` over a table
  ``kafkarec.engines.duckdb.register`` put on the log, queried again (the engine's threads; needs
  ``duckdb``).  A measure in rows/s like the others.
"""
from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

MEASURES = ("fields", "to_arrow", "build", "bulk", "duckdb")
DECODE_WORKLOADS = ("100B", "headers", "tiny", "100B-lz4", "100B-zstd")


def _child(tree: str, data_file: str, measure: str, workload: str, repeats: int) -> None:
    """Runs in a child process: time one measurement with kafkarec from ``tree``."""
    sys.path.insert(0, tree)
    import gc
    import kafkarec
    if not os.path.abspath(kafkarec.__file__).startswith(os.path.abspath(tree) + os.sep):
        raise SystemExit(f"kafkarec came from {kafkarec.__file__}, not {tree}")
    if measure == "duckdb":     # (data_file: the log's folder)
        _duckdb_child(data_file, repeats)
        return
    with open(data_file, "rb") as fh:
        workloads = pickle.load(fh)
    data, records = workloads[workload]

    def fields():
        n = 0
        for batch in kafkarec.iter_batches(data):
            for r in batch:
                r.offset, r.timestamp, r.key, r.value, r.headers
                n += 1
        return n

    def to_arrow():
        return kafkarec.to_arrow(data).num_rows

    def build():
        n = 0
        for batch in records:
            b = kafkarec.RecordBatchBuilder(base_offset=n)
            for ts, key, value, headers in batch:
                b.append(value, key=key, timestamp=ts, headers=headers)
            b.build()
            n += len(batch)
        return n

    def bulk():
        n = 0
        for batch in records:
            kafkarec.build_batch([r[2] for r in batch], keys=[r[1] for r in batch],
                                 timestamps=[r[0] for r in batch])
            n += len(batch)
        return n

    fn = {"fields": fields, "to_arrow": to_arrow, "build": build, "bulk": bulk}[measure]
    count = fn()                               # warm-up, and the record count
    gc.disable()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    print(f"{best!r} {count}")


DUCKDB_QUERY = 'SELECT count(*), sum(octet_length("value")), sum(octet_length("key")) FROM logs'


def _duckdb_child(log_dir: str, repeats: int) -> None:
    """The ``duckdb`` measure, in a child: best of ``repeats`` repeated queries."""
    import gc
    import duckdb
    from kafkarec.engines.duckdb import register
    con = duckdb.connect()
    register(con, "logs", log_dir)
    count = con.sql(DUCKDB_QUERY).fetchall()[0][0]      # warm-up (the maps kept), and the row count
    gc.disable()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        con.sql(DUCKDB_QUERY).fetchall()
        best = min(best, time.perf_counter() - t0)
    print(f"{best!r} {count}")


def _duckdb_log(root: str, records: int) -> str:
    """One partition of ``records`` records in issue 80's shape, written by the checkout."""
    sys.path.insert(0, REPO)
    import kafkarec
    folder = os.path.join(root, "events-0")
    os.makedirs(folder)
    with open(os.path.join(folder, "%020d.log" % 0), "wb") as fh:
        for base in range(0, records, 1000):
            n = min(1000, records - base)
            values = [b'{"id":%9d,"event":"click","user":"u%06d","page":"/p/%05d","ts":1700000000000}'
                      % (i, i % 999983, i % 99991) for i in range(base, base + n)]
            fh.write(kafkarec.build_batch(values, keys=[b"k%015d" % i for i in range(base, base + n)],
                                          timestamps=[1_700_000_000_000 + i for i in range(base, base + n)],
                                          headers=[[("trace", b"%016x" % i)] for i in range(base, base + n)],
                                          base_offset=base))
    return root


def _worktree(ref: str) -> str:
    sha = subprocess.check_output(["git", "-C", REPO, "rev-parse", "--short=12", ref], text=True).strip()
    tree = os.path.join(REPO, ".cache", f"bench-ref-{sha}")
    if not os.path.isdir(tree):
        subprocess.check_call(["git", "-C", REPO, "worktree", "add", "--detach", tree, sha],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not any(f.startswith("_core") and f.endswith(".so") for f in os.listdir(os.path.join(tree, "kafkarec"))):
        print(f"compiling the core of {ref} ({sha}) in {tree} ...", file=sys.stderr)
        with open(os.path.join(tree, "build.log"), "w") as log:
            subprocess.check_call([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                                  cwd=tree, stdout=log, stderr=subprocess.STDOUT)
    return tree


def _workloads(scale: float) -> dict:
    sys.path.insert(0, HERE)
    import workloads as W
    out = {}
    for spec in W.default_specs(scale):
        if spec.name in DECODE_WORKLOADS:
            w = W.build_workload(spec)
            out[spec.name] = (w.data, [[(ts, k, v, list(h)) for ts, k, v, h in batch]
                                       for batch in W._records_for(spec)])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", required=True, help="the earlier commit (any git revision)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (best kept)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs in each child")
    ap.add_argument("--scale", type=float, default=0.5, help="workload size (1 = bench_decode's)")
    ap.add_argument("--only", help="a subset of measure:workload pairs, e.g. fields:headers,build:100B")
    ap.add_argument("--duckdb-records", type=int, default=1_000_000, help="the duckdb measure's records")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        tree, data_file, measure, workload, repeats = args.child
        _child(tree, data_file, measure, workload, int(repeats))
        return 0
    before = _worktree(args.ref)
    trees = {"before": before, "after": REPO}
    work = _workloads(args.scale)
    with tempfile.NamedTemporaryFile(suffix=".pickle", delete=False) as fh:
        pickle.dump(work, fh)
        data_file = fh.name
    cases = [(m, w) for m in ("fields", "to_arrow") for w in DECODE_WORKLOADS] + \
            [(m, "100B") for m in ("build", "bulk")] + [("build", "headers")]
    try:
        import duckdb  # noqa: F401  (the duckdb measure needs it in both builds' Python)
        cases.append(("duckdb", "issue80"))
    except ImportError:
        print("duckdb is not installed: the duckdb measure is left out", file=sys.stderr)
    if args.only:
        wanted = {tuple(x.split(":")) for x in args.only.split(",")}
        cases = [c for c in cases if c in wanted]
        if not cases:
            raise SystemExit(f"--only {args.only}: no such measure:workload")
    log_dir = None
    if any(m == "duckdb" for m, _ in cases):
        log_dir = _duckdb_log(tempfile.mkdtemp(prefix="kafkarec-bench-"), args.duckdb_records)
    best = {(c, t): float("inf") for c in cases for t in trees}
    counts = {}
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    try:
        load0 = os.getloadavg()[0]
        for rnd in range(args.rounds):
            for case in cases:
                order = ("before", "after") if rnd % 2 == 0 else ("after", "before")
                for t in order:
                    out = subprocess.check_output(
                        [sys.executable, os.path.abspath(__file__), "--ref", args.ref, "--child",
                         trees[t], log_dir if case[0] == "duckdb" else data_file, case[0], case[1],
                         str(args.repeats)],
                        env=env, cwd=tempfile.gettempdir(), text=True)
                    secs, n = out.split()
                    best[case, t] = min(best[case, t], float(secs))
                    if counts.setdefault(case, int(n)) != int(n):
                        raise SystemExit(f"{case}: the builds disagree on the record count")
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
        load1 = os.getloadavg()[0]
    finally:
        os.unlink(data_file)
        if log_dir is not None:
            import shutil
            shutil.rmtree(log_dir, ignore_errors=True)
    head = subprocess.check_output(["git", "-C", REPO, "rev-parse", "--short=12", "HEAD"], text=True).strip()
    print(f"before: {args.ref} ({os.path.basename(before)}), after: the checkout (HEAD {head}); "
          f"best of {args.rounds} rounds x {args.repeats} runs; load average {load0:.2f} -> {load1:.2f}")
    print(f"{'measure':10} {'workload':10} {'records':>8} {'before Mrec/s':>14} {'after Mrec/s':>13} "
          f"{'after/before time':>18}")
    ratios = []
    for case in cases:
        n = counts[case]
        b, a = best[case, "before"], best[case, "after"]
        ratios.append(a / b)
        print(f"{case[0]:10} {case[1]:10} {n:8d} {n / b / 1e6:14.2f} {n / a / 1e6:13.2f} {a / b:18.2f}")
    print(f"geometric mean of after/before: {statistics.geometric_mean(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
