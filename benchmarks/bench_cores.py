"""How one process's reads scale with cores, against one process a partition and Parquet.

    .venv/bin/python benchmarks/bench_cores.py [--partitions 16] [--records 400000] [--codec none|zstd|lz4]
        [--threads 1,2,4,...] [--repeats 3] [--workdir DIR] [--json FILE] [--values pool|json]

Writes ``--partitions`` partitions of ``--records`` records each (kafkarec's bulk builder, 1000
records a batch, 16-byte keys, ~100-byte values from a pool of 100,000, one header a record, 64 MiB
segments, ``--codec`` batches; ``--values json``: distinct 100-byte JSON events that compress well,
:func:`bench_engines_local.json_values`) and one Parquet file a partition of the same rows (pyarrow's defaults:
snappy), into ``--workdir`` (kept and reused when given; else a temporary folder).  Then, page cache
warm, best of ``--repeats``, for ``offset, timestamp`` (meta) and ``offset, timestamp, key, value``
(kv), at each thread count (default 1, 2, 4, ... up to the machine's cores):

* ``reader``: ``LogScan(log, columns=..., threads=T).to_table()`` in this process;
* ``procs``: one process a partition (``LogScan(partition folder, threads=1)`` each, as many at once
  as cores, at most the partitions): what per-core decoding reaches, the ceiling of ``reader``;
* ``pyarrow-parquet``: ``pyarrow.parquet.read_table`` of the files at ``pa.set_cpu_count(T)``;
* ``duckdb-parquet`` and ``duckdb-kafkarec``: ``SELECT sum("offset"), max(timestamp)`` (meta) and
  ``SELECT count(*), sum(octet_length(value)), sum(octet_length(key))`` (kv) over ``read_parquet``
  and over :func:`kafkarec.engines.duckdb.register` (``threads=T``), DuckDB at ``threads`` T;
* ``polars-parquet`` and ``polars-kafkarec``: ``scan_parquet`` and
  :func:`kafkarec.engines.polars.scan_log` (``threads=T``) ``.select(...).collect()`` (Polars' own
  threads are set once a process: its default, all cores);
* ``batch`` (with ``--only``): the reader's whole rows with the batch columns (``batch_columns=True``);
* ``keyed`` (with ``--only``): the reader with a key bound of ten of the log's keys (every record
  read and its key tested; rows/s counts the records read);
* ``strict`` (with ``--only``): the reader's ``offset, timestamp`` in a strict read (every record
  read by the scanner, its further rules checked);
* ``consumer`` (with ``--only``): the CPU time of the consumer's thread (``time.thread_time`` of the
  thread calling ``to_table``) in the reader's read at each thread count above one, least of
  ``--repeats``, and per row: what the consumer does while the pool decodes (issue 68, item 3: nothing
  per record, almost nothing per batch).

Then the peak RSS of a streaming read (``LogScan`` batches counted and dropped, kv) at each thread
count, each in a child process of its own, against the one-thread read's.  Prints a table (M rows/s
and the reader against ``procs``, DuckDB over kafkarec against over Parquet) and, with ``--json``,
every figure.  Each row also gives the GB/s of ``.log`` bytes read and that rate over one large
``memcpy`` of the log's size (this machine's memory bandwidth as one thread sees it, measured in the
same run).  The issue 68 shape on 16 cores is the default; on a 2-core machine
``--partitions 4 --records 400000``.  Issue 80's one-partition shape (one partition of 3 M records,
JSON events; the reader at T threads against the one process of ``procs`` and against Parquet):

    .venv/bin/python benchmarks/bench_cores.py --partitions 1 --records 3000000 --values json \
        --workdir /tmp/cores1p --threads 1,2 --repeats 5 --only reader,procs,pyarrow,duckdb,polars
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from _segments import write_partition  # noqa: E402
from bench_engines_local import json_values, memcpy_rate  # noqa: E402

PER_BATCH = 1000
POOL = 100_000
T0 = 1_700_000_000_000
QUERIES = {"meta": ["offset", "timestamp"], "kv": ["offset", "timestamp", "key", "value"]}
DUCKDB_SQL = {"meta": 'SELECT sum("offset"), max(timestamp) FROM {}',
              "kv": "SELECT count(*), sum(octet_length(value)), sum(octet_length(key)) FROM {}"}


def write(root: str, partitions: int, records: int, codec: str, values_kind: str = "pool") -> None:
    """The log dir (``root/log``) and the Parquet files (``root/pq``) of the same rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from kafkarec import Compression, build_batch
    rng = random.Random(7)
    words = [b"order", b"paid", b"user", b"eur", b"shipped", b"qty", b"item", b"ok"]
    values = [b"%d " % i + b" ".join(rng.choice(words) for _ in range(18))[:90] for i in range(POOL)]
    keys = [b"user-%011d" % rng.randrange(10_000_000) for _ in range(POOL)]
    headers = [[("trace", b"%016x" % 7)]] * PER_BATCH
    compression = Compression[codec.upper()]
    os.makedirs(os.path.join(root, "pq"), exist_ok=True)
    for p in range(partitions):
        offs, tss, ks, vs = [], [], [], []

        def batches():
            for off in range(0, records, PER_BATCH):
                at = rng.randrange(POOL - PER_BATCH)
                k = keys[at:at + PER_BATCH]
                v = values[at:at + PER_BATCH] if values_kind == "pool" else json_values(off, PER_BATCH, rng)
                ts = [T0 + off + i for i in range(PER_BATCH)]
                yield off, build_batch(v, k, ts, headers=headers, base_offset=off, compression=compression)
                offs.extend(range(off, off + PER_BATCH))
                tss.extend(ts)
                ks.extend(k)
                vs.extend(v)
        write_partition(os.path.join(root, "log", f"cores-{p}"), batches())
        pq.write_table(pa.table({"offset": pa.array(offs, pa.int64()),
                                 "timestamp": pa.array(tss, pa.int64()).cast(pa.timestamp("ms")),
                                 "key": pa.array(ks, pa.binary()), "value": pa.array(vs, pa.binary())}),
                       os.path.join(root, "pq", f"cores-{p}.parquet"))


def best(call, repeats: int):
    """The best time of ``repeats`` calls after a warm one, and the last result."""
    result = call()
    seconds = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        seconds = min(seconds, time.perf_counter() - start)
    return seconds, result


def one_partition(args) -> int:
    folder, columns = args
    from kafkarec.scan import LogScan
    return LogScan(folder, columns=columns, threads=1).to_table().num_rows


RSS_CHILD = r"""
import resource, sys
from kafkarec.scan import LogScan
n = sum(rb.num_rows for rb in LogScan(sys.argv[1], columns=sys.argv[3].split(","), threads=int(sys.argv[2])))
print(n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss(log: str, threads: int, columns) -> tuple:
    out = subprocess.run([sys.executable, "-c", RSS_CHILD, log, str(threads), ",".join(columns)],
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1]) / 1024       # rows, MiB


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--records", type=int, default=400_000, help="records a partition")
    ap.add_argument("--codec", default="none", choices=["none", "zstd", "lz4", "snappy", "gzip"])
    ap.add_argument("--threads", help="thread counts, comma-separated (default 1, 2, 4, ... cores)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", help="where the logs and Parquet files are written (kept, reused)")
    ap.add_argument("--only", default="reader,procs,pyarrow,duckdb,polars,rss",
                    help="which measures, comma-separated")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--values", choices=("pool", "json"), default="pool",
                    help="pool: ~100-byte values from a pool of 100,000 word strings; json: distinct 100-byte "
                         "JSON events that compress well (issue 80's outside check)")
    args = ap.parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    steps = ([int(t) for t in args.threads.split(",")] if args.threads else
             sorted({t for t in (1, 2, 4, 8, 16, 32, 64) if t <= cores} | {cores}))
    only = set(args.only.split(","))
    work = args.workdir or tempfile.mkdtemp(prefix="kafkarec-bench-cores-")
    try:
        log = os.path.join(work, "log")
        # what the data was written with: a reused --workdir must hold the data asked for
        shape = {"partitions": args.partitions, "records": args.records, "codec": args.codec, "values": args.values}
        marker = os.path.join(work, "shape.json")
        if os.path.isdir(log):
            written = json.load(open(marker)) if os.path.exists(marker) else None
            if written != shape:
                sys.exit(f"{work} holds data written as {written or 'an older run (no shape.json)'}, not {shape}: "
                         "give another --workdir")
        else:
            start = time.perf_counter()
            write(work, args.partitions, args.records, args.codec, args.values)
            with open(marker, "w") as fh:
                json.dump(shape, fh)
            print(f"wrote {args.partitions} x {args.records} records ({args.codec}) in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        return run(args, work, log, steps, cores, only)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def run(args, work: str, log: str, steps, cores: int, only: set) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from kafkarec.scan import LogScan
    files = sorted(os.path.join(work, "pq", f) for f in os.listdir(os.path.join(work, "pq")))
    parts = sorted(os.path.join(log, d) for d in os.listdir(log))
    n = args.partitions * args.records
    results = []
    log_bytes = sum(os.path.getsize(os.path.join(p, f)) for p in parts for f in os.listdir(p) if f.endswith(".log"))
    copy_rate = memcpy_rate(log_bytes, args.repeats)
    print(f"{cores} cores; {n} records in {len(parts)} partitions ({args.codec}, {args.values} values); "
          f"best of {args.repeats}")
    print(f"log {log_bytes / 2**20:.0f} MiB; memcpy of that size (numpy copyto, one thread): {copy_rate / 1e9:.1f} GB/s")
    print(f"{'query':5s} {'who':18s} {'threads':>7s} {'best s':>8s} {'M rows/s':>9s} {'log GB/s':>9s} "
          f"{'of memcpy':>9s}", flush=True)

    def emit(query, who, threads, seconds, rows):
        assert rows == n, (who, rows, n)
        rate = log_bytes / seconds
        results.append({"query": query, "who": who, "threads": threads, "seconds": seconds,
                        "rows_per_s": n / seconds, "log_bytes_per_s": rate, "of_memcpy": rate / copy_rate})
        print(f"{query:5s} {who:18s} {threads:7d} {seconds:8.3f} {n / seconds / 1e6:9.2f} {rate / 1e9:9.2f} "
              f"{rate / copy_rate:9.2f}", flush=True)

    for query, columns in QUERIES.items():
        for t in steps:
            if "reader" in only:
                emit(query, "reader", t, *best(lambda: LogScan(log, columns=columns, threads=t).to_table().num_rows,
                                               args.repeats))
            if "pyarrow" in only:
                pa.set_cpu_count(t)
                pa.set_io_thread_count(t)
                emit(query, "pyarrow-parquet", t, *best(lambda: pq.read_table(files, columns=columns).num_rows,
                                                        args.repeats))
        if "procs" in only:
            width = min(len(parts), cores)
            with mp.get_context("spawn").Pool(width) as pool:
                emit(query, "procs", width, *best(lambda: sum(pool.map(one_partition, [(p, columns) for p in parts])),
                                                  args.repeats))
    pa.set_cpu_count(cores)
    pa.set_io_thread_count(cores)
    if "duckdb" in only:
        import duckdb
        from kafkarec.engines import duckdb as kd
        parquet = "read_parquet([" + ",".join(f"'{f}'" for f in files) + "])"
        for t in steps:
            con = duckdb.connect(config={"threads": t})
            kd.register(con, "k", log, threads=t)
            for query, sql in DUCKDB_SQL.items():
                s1, r1 = best(lambda: con.execute(sql.format("k")).fetchall(), args.repeats)
                s2, r2 = best(lambda: con.execute(sql.format(parquet)).fetchall(), args.repeats)
                assert str(r1) == str(r2), (query, r1, r2)
                count = con.execute("SELECT count(*) FROM k").fetchall()[0][0]
                emit(query, "duckdb-kafkarec", t, s1, count)
                emit(query, "duckdb-parquet", t, s2, count)
            con.close()
    if "polars" in only:
        import polars as pl
        from kafkarec.engines.polars import scan_log
        for t in steps:
            for query, columns in QUERIES.items():
                emit(query, "polars-kafkarec", t,
                     *best(lambda: scan_log(log, threads=t).select(columns).collect().height, args.repeats))
        for query, columns in QUERIES.items():
            emit(query, "polars-parquet", pl.thread_pool_size(),
                 *best(lambda: pl.scan_parquet(files).select(columns).collect().height, args.repeats))
    if "strict" in only:
        import dataclasses
        from kafkarec.scan import ScanConfig
        for t in steps:
            strict = dataclasses.replace(ScanConfig.of(log, columns=QUERIES["meta"], threads=t), strict=True)
            emit("strict", "reader", t, *best(lambda: LogScan(strict).to_table().num_rows, args.repeats))
    if "consumer" in only:
        for query, columns in QUERIES.items():
            for t in [t for t in steps if t > 1]:
                cpu = []
                for _ in range(args.repeats):
                    before = time.thread_time()
                    assert LogScan(log, columns=columns, threads=t).to_table().num_rows == n
                    cpu.append(time.thread_time() - before)
                results.append({"query": query, "who": "consumer", "threads": t, "cpu_seconds": min(cpu)})
                print(f"{query:5s} consumer's CPU       {t:3d}   {min(cpu) * 1e3:7.1f} ms  "
                      f"({min(cpu) / n * 1e9:.1f} ns a row)", flush=True)
    if "batch" in only or "keyed" in only:
        from kafkarec.scan import Bounds
        # ten keys of the log (a search for a few records, as DuckDB's ``WHERE key IN (...)``): every
        # record read and its key tested, ~100 rows kept
        keys = LogScan(log, columns=["key"], limit=10).to_table().column("key").to_pylist()
        for t in steps:
            if "batch" in only:
                emit("batch", "reader", t, *best(lambda: LogScan(log, batch_columns=True, threads=t).to_table().num_rows,
                                                 args.repeats))
            if "keyed" in only:
                seconds, kept = best(lambda: LogScan(log, bounds=Bounds(keys=keys), threads=t).to_table().num_rows,
                                     args.repeats)
                results.append({"query": "keyed", "who": "reader", "threads": t, "seconds": seconds,
                                "rows_per_s": n / seconds, "kept": kept})
                print(f"keyed reader             {t:7d} {seconds:8.3f} {n / seconds / 1e6:9.2f}  "
                      f"(records read and tested; {kept} kept)", flush=True)
    rss = {}
    if "rss" in only:
        for t in steps:
            rows, mib = peak_rss(log, t, QUERIES["kv"])
            assert rows == n
            rss[t] = mib
            print(f"peak RSS, a streaming kv read at threads {t}: {mib:.0f} MiB "
                  f"({mib / rss[steps[0]]:.2f}x threads {steps[0]})", flush=True)
    summary(results, steps)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cores": cores, "partitions": args.partitions, "records": args.records, "codec": args.codec,
                       "values": args.values, "log_bytes": log_bytes, "memcpy_bytes_per_s": copy_rate,
                       "results": results, "peak_rss_mib": rss}, fh, indent=2)
    return 0


def summary(results, steps) -> None:
    """The reader against one process a partition, and DuckDB over kafkarec against over Parquet."""
    def rate(query, who, threads=None):
        rows = [r["rows_per_s"] for r in results if r["query"] == query and r["who"] == who
                and (threads is None or r["threads"] == threads)]
        return max(rows) if rows else None
    print("\nsummary (rows/s ratios)")
    for query in QUERIES:
        procs, one = rate(query, "procs"), rate(query, "reader", 1)
        for t in steps:
            reader = rate(query, "reader", t)
            if reader is None:
                continue
            line = f"  {query:5s} reader threads {t:3d}: {reader / one:5.2f}x its 1-thread rate"
            if procs:
                line += f", {reader / procs:5.2f}x one process a partition"
            duck, duck_pq = rate(query, "duckdb-kafkarec", t), rate(query, "duckdb-parquet", t)
            if duck and duck_pq:
                line += f"; DuckDB over kafkarec {duck / duck_pq:5.2f}x over Parquet"
            print(line)
        polars, polars_pq = rate(query, "polars-kafkarec"), rate(query, "polars-parquet")
        if polars and polars_pq:
            print(f"  {query:5s} Polars over kafkarec (best threads) {polars / polars_pq:5.2f}x over Parquet")


if __name__ == "__main__":
    sys.exit(main())
