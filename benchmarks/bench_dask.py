"""Dask over kafkarec on a LocalCluster against the reader in one process and Dask over Parquet.

    .venv/bin/python benchmarks/bench_dask.py [--records 4000000] [--partitions 4] [--repeats 5]
        [--queries all,kv,meta] [--json FILE]

Writes one topic of ``--records`` records in ``--partitions`` partitions (bench_engines_local.py's
log: v2 batches of 1000 records, 16-byte keys, ~100-byte values, no compression, 64 MiB segments,
with offset indexes as Kafka writes them),
and the same rows to Parquet, one file a piece of work of :class:`kafkarec.scan.LogScan` (so
``dd.read_parquet`` has as many partitions as :func:`kafkarec.engines.dask.read_log`).  Then, on a
``distributed.LocalCluster`` of 2 worker processes (one thread each, started once, before the
timings), page cache warm, the contenders in turn in each round (best of ``--repeats`` rounds):

* ``read_log``: ``read_log(logs, columns=...).map_partitions(len).sum().compute()`` -- the rows made
  pandas frames in the workers, only the counts sent back, as a user writes it;
* ``read_log, optimized``: the same after ``.optimize()``: Dask 2026.8's ``compute`` does not fuse
  the read with ``len`` and the sum's chunk (dask/distributed#8833), so a partition is three tasks
  and three round trips to the scheduler; ``optimize()`` fuses them into one;
* ``dd.read_parquet``: the user's alternative, the same query over the Parquet files, in the same
  ``ArrowDtype`` columns as ``read_log``'s (``dtype_backend="pyarrow"``: numpy's would make a Python
  object of every key and value);
* ``LogScan(threads=2)``: the reader in this process, its batches' rows counted.

Prints rows/s and, for each query, Dask's rate over the reader's (issue 82's target: 0.8x or
better).  Before the timings, on a cluster whose workers count the bytes they read
(:data:`kafkarec.log.storage.BYTES_READ_ENV`), a 1% slice of the offsets of every partition
(``filters=[("offset", ">=", a), ("offset", "<", b)]``) is read through Dask, and the ``.log`` bytes
the workers read are printed against the log's (the target: 2% or less).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_engines_local import write_log  # noqa: E402

TARGET = 0.8            # Dask's rows/s over the reader's at threads=2, at least
INDEX_INTERVAL_BYTES = 4096    # Kafka's index.interval.bytes
SLICE_TARGET = 0.02     # the bytes a 1% offset slice reads, at most, of the log's
COLUMNS = {"all": None, "kv": ["offset", "timestamp", "key", "value"], "meta": ["offset", "timestamp"]}
NAMES = {"all": "all columns", "kv": "offset, timestamp, key, value", "meta": "offset, timestamp"}


def _cluster(env=None):
    from distributed import Client, LocalCluster
    pythonpath = os.pathsep.join(p for p in [ROOT, os.environ.get("PYTHONPATH")] if p)
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                           silence_logs=40, env={"PYTHONPATH": pythonpath, **(env or {})})
    return cluster, Client(cluster)


def write_offset_indexes(logs: str, interval: int = INDEX_INTERVAL_BYTES) -> None:
    """An ``.index`` beside every ``.log``, as ``LogSegment.append`` makes it: before a batch is
    appended, if more than ``interval`` bytes went in since the last entry, an entry of the batch's
    last offset (relative to the segment's base) and its position."""
    for folder, _, files in os.walk(logs):
        for name in sorted(f for f in files if f.endswith(".log")):
            base = int(name[:-4])
            entries, since, position = [], 0, 0
            with open(os.path.join(folder, name), "rb") as fh:
                while True:
                    header = fh.read(61)
                    if len(header) < 61:
                        break
                    first, length = struct.unpack_from(">qi", header, 0)
                    last = first + struct.unpack_from(">i", header, 23)[0]
                    if since > interval:
                        entries.append(struct.pack(">ii", last - base, position))
                        since = 0
                    since += 12 + length
                    position += 12 + length
                    fh.seek(position)
            with open(os.path.join(folder, name[:-4] + ".index"), "wb") as out:
                out.write(b"".join(entries))


def write_parquet(logs: str, out: str) -> int:
    """The log's rows, one Parquet file a piece of work; how many files."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from kafkarec.scan import LogScan
    os.makedirs(out)
    scan = LogScan(logs, threads=1)
    pieces = scan.pieces()
    for i, piece in enumerate(pieces):
        pq.write_table(pa.Table.from_batches(list(scan.read_piece(piece)), schema=scan.schema),
                       os.path.join(out, f"part-{i:04d}.parquet"))
    return len(pieces)


def slice_bytes(logs: str, records: int, partitions: int) -> dict:
    """The ``.log`` bytes the workers read for a 1% slice of every partition's offsets."""
    from kafkarec.engines.dask import read_log
    from kafkarec.log.storage import BYTES_READ_ENV, bytes_read
    counts = tempfile.mkdtemp(prefix="kafkarec-bench-dask-counts-")
    try:
        cluster, client = _cluster({BYTES_READ_ENV: counts})
        with cluster, client:
            per = records // partitions
            start, width = per // 2, max(1, per // 100)
            frame = read_log(logs, columns=["offset"], filters=[("offset", ">=", start), ("offset", "<", start + width)])
            n = len(frame.compute())
            assert n == width * partitions, (n, width * partitions)
            read = sum(b for p, b in bytes_read(counts).items() if p.endswith(".log"))
        total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(logs) for f in fs if f.endswith(".log"))
        return {"rows": n, "bytes_read": read, "log_bytes": total, "share": read / total}
    finally:
        shutil.rmtree(counts, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=4_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--queries", default="all,kv,meta", help="all, kv, meta, comma-separated")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)

    import dask.dataframe as dd
    from kafkarec.engines.dask import read_log
    from kafkarec.scan import LogScan

    work = tempfile.mkdtemp(prefix="kafkarec-bench-dask-")
    try:
        logs, parquet = os.path.join(work, "logs"), os.path.join(work, "parquet")
        t = time.perf_counter()
        write_log(logs, args.records, args.partitions)
        write_offset_indexes(logs)
        files = write_parquet(logs, parquet)
        log_mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(logs) for f in fs) / 2**20
        print(f"{args.records} records in {args.partitions} partitions: log {log_mb:.0f} MiB, {files} pieces of work "
              f"(= Parquet files), written in {time.perf_counter() - t:.1f} s")
        want = args.records // args.partitions * args.partitions

        sliced = slice_bytes(logs, args.records, args.partitions)
        verdict = "PASS" if sliced["share"] <= SLICE_TARGET else "FAIL"
        print(f"1% offset slice ({sliced['rows']} rows) on the cluster: the workers read {sliced['bytes_read']:,} of "
              f"{sliced['log_bytes']:,} .log bytes = {sliced['share']:.2%} (target <= {SLICE_TARGET:.0%}: {verdict})")
        verdicts = [verdict]

        t = time.perf_counter()
        cluster, client = _cluster()
        with cluster, client:
            print(f"LocalCluster of 2 workers started in {time.perf_counter() - t:.1f} s")
            results: dict = {}
            for query in args.queries.split(","):
                cols = COLUMNS[query]
                runs = {
                    "read_log": lambda: read_log(logs, columns=cols).map_partitions(len).sum().compute(),
                    "read_log, optimized": lambda: read_log(logs, columns=cols).map_partitions(len).sum()
                    .optimize().compute(),
                    "dd.read_parquet": lambda: dd.read_parquet(parquet, columns=cols, dtype_backend="pyarrow").map_partitions(len).sum().compute(),
                    "LogScan(threads=2)": lambda: sum(rb.num_rows for rb in LogScan(logs, columns=cols, threads=2)),
                }
                best = {}
                for engine, call in runs.items():
                    assert int(call()) == want, engine       # warm: page cache, the workers' imports
                for _ in range(args.repeats):               # the contenders in turn in each round
                    for engine, call in runs.items():
                        t = time.perf_counter()
                        call()
                        best[engine] = min(best.get(engine, float("inf")), time.perf_counter() - t)
                print(f"{NAMES[query]}:")
                for engine, seconds in best.items():
                    results[f"{NAMES[query]} | {engine}"] = {"seconds": seconds, "rows_per_s": want / seconds}
                    print(f"  {engine:22s} {seconds:8.3f} s {want / seconds / 1e6:8.2f} M rows/s")
                for engine in ("read_log", "read_log, optimized"):
                    ratio = best["LogScan(threads=2)"] / best[engine]
                    verdict = "PASS" if ratio >= TARGET else "FAIL"
                    verdicts.append(verdict)
                    print(f"  {engine} / LogScan(threads=2): {ratio:.2f}x (target >= {TARGET}x: {verdict}); "
                          f"/ dd.read_parquet: {best['dd.read_parquet'] / best[engine]:.2f}x")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"records": args.records, "slice": sliced, "results": results}, fh, indent=2)
        return 0 if all(v == "PASS" for v in verdicts) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
