"""Polars and DuckDB over kafkarec against Polars and DuckDB reading the same rows from Parquet.

    .venv/bin/python benchmarks/bench_engines_local.py [--records 2000000] [--repeats 3] [--json FILE]
        [--partitions 4] [--headers 0] [--queries all,meta,kv,whole,summax,count,first,slice] [--floor] [--dask] [--values pool|json] [--work DIR] [--layouts]
        [--compression none|gzip|snappy|lz4|zstd] [--map-cache-bytes N] [--buffer-cache-bytes N] [--segment-bytes N]

Writes one topic of ``--records`` records (``--partitions`` partitions, v2 batches of 1000 records
from kafkarec's bulk builder, 16-byte keys, ~100-byte values from a pool of 100,000, ``--headers``
headers a record, ``--compression`` (default none), 64 MiB segments) into a temporary log dir (issue 52's shape:
``--records 3000000 --partitions 1 --headers 1``), then the same rows once to Parquet (pyarrow's defaults: snappy, one file) from
:class:`kafkarec.scan.LogScan`.  Then times, page cache warm, best of ``--repeats``, in this process:

* ``all columns``: every row and column into the engine (Polars ``collect()``, DuckDB
  ``to_arrow_table()``) -- kafkarec decodes every batch, Parquet every column chunk;
* ``offset, timestamp, key, value`` (``--queries kv``): the columns analysts select -- kafkarec
  decodes every record whole (its headers left out), Parquet reads four column chunks;
* ``offset, timestamp``: two columns only -- kafkarec still walks every record (a v2 record's offset
  and timestamp are varint deltas inside it), Parquet reads two column chunks.

* ``whole rows`` (``--queries whole``, issue 80's outside check): DuckDB ``count(*),
  sum(octet_length(value)), sum(octet_length(key))``, Polars ``collect()`` of ``offset, timestamp,
  key, value``;
* ``offset, timestamp (sum, max)`` (``--queries summax``): those two columns aggregated;
* (whole rows and sum, max) each kafkarec row three ways: ``kafkarec``, a registered DuckDB table
  and a held Polars LazyFrame queried again, their windows kept mapped from one query to the next
  (``map_cache_bytes``: the adapters' default 1 GiB, or ``--map-cache-bytes``); ``kafkarec cold``,
  a first query (the table registered anew, a new LazyFrame); ``kafkarec unkept``, queried again with
  no map kept (``map_cache_bytes=0``: each window mapped and unmapped every query); all three keep
  the column buffers the engine let go of for the next query's columns (``buffer_cache_bytes``: the
  adapters' default 256 MiB, or ``--buffer-cache-bytes``; 0: each buffer back to Arrow's pool);
* ``count`` (``--queries count``): ``count(*)`` (Polars ``pl.len()``), and DuckDB's
  ``count("offset")`` over kafkarec beside it (a ``count(*)`` asks the source for ``key``).
* ``first rows (LIMIT 5)`` (``--queries first``): DuckDB ``SELECT * ... LIMIT 5`` (the source is
  not told the limit: DuckDB stops pulling its stream) and Polars ``head(5)`` (the scan's limit);
  ``first batch``: ``LogScan(threads=2)``'s first batch and the read stopped, against pyarrow's first
  131,072 rows of the Parquet file;
* ``offset slice`` (``--queries slice``): ``count(*)`` of ten records in the middle of the log by
  ``offset`` (this log has no ``.index`` files: the resolver rebuilds each segment's from its batch
  headers), against Parquet's row-group statistics.

Each query's four runs alternate, best of ``--repeats`` (a noisy moment hits every run alike).
Prints rows/s, GB/s of ``.log`` bytes, that rate over one large ``memcpy`` of the log's size
(numpy ``copyto``: this machine's memory bandwidth as one thread sees it), the process's CPU
seconds (all threads: on a shared machine the steadier measure), and kafkarec's time over
Parquet's; the target (issue 42) is within 2x, issue 80's is 1.0x for whole rows and 0.8x for
``offset, timestamp`` on one partition (``--records 3000000 --partitions 1 --headers 1 --values json``).

``--layouts`` (issue 80, item 2) instead measures the view layout: the log's four columns read
once, then in CPU seconds pyarrow's cast of ``key`` and ``value`` to ``binary_view`` and each engine
taking either layout (Polars ``pl.from_arrow``, DuckDB the whole-rows query), with the Arrow memory
each layout holds.

``--value-layouts`` (issue 80, item 2, the reader's view layout) instead times each reading of the
log in both layouts of ``key`` and ``value`` (``value_layout="copy"``: ``binary``, the bytes copied
into the batches; ``"view"``: ``binary_view`` pointing into the windows read, which are then read
into memory, not mapped), alternating, best of ``--repeats`` in CPU seconds and wall: DuckDB's
whole-rows query, Polars ``collect()`` of ``offset, timestamp, key, value``, ``LogScan(...)``'s
``to_table()``, a plain iteration of its batches, and the core's ``kafkarec.to_arrow`` over the
segments' bytes already in memory (no window read in either layout); then the Arrow memory a table of the four
columns holds in each layout (``pyarrow.total_allocated_bytes``; in the view layout the windows
its views point into among them).

``--dask`` (issue 82, item 1) instead times :func:`kafkarec.engines.dask.read_log` on a
``distributed.LocalCluster`` of 2 worker processes (one thread each, started once, before the
timings) against :class:`kafkarec.scan.LogScan` with ``threads=2`` in this process, on the same
log: each counts the rows of every piece in the engine (Dask: ``map_partitions(len)``, the rows
made pandas frames in the workers, only the counts sent back; the reader: its batches counted).
The target is Dask at 0.8x the reader's rate or better.

``--floor`` (with ``meta``) times what bounds ``offset, timestamp`` from below, the same way: the
reader alone (:class:`kafkarec.scan.LogScan`'s batches of those columns, counted), and each engine
taking those batches read beforehand -- Polars from a Python IO plugin yielding ready DataFrames
(``register_io_source``, as :func:`kafkarec.engines.polars.scan_log` hands them over), DuckDB from
an Arrow stream of ready batches (timestamps already DuckDB's microseconds, as
:class:`kafkarec.engines.duckdb.LogSource` hands them over).  The reader's time plus an engine's
ingest is about the least kafkarec can take in that engine on this machine.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from _segments import SEGMENT_BYTES, write_partition  # noqa: E402

TARGET = 2.0
DASK_TARGET = 0.8       # Dask's rows/s over the reader's at threads=2, at least
PER_BATCH = 1000
POOL = 100_000
T0 = 1_700_000_000_000
FOUR = ("offset", "timestamp", "key", "value")
WHOLE = "SELECT count(*), sum(octet_length(value)), sum(octet_length(key)) FROM {}"
SUM_MAX_SQL = 'SELECT sum("offset"), max(timestamp) FROM {}'


def json_values(start: int, n: int, rng: random.Random) -> list:
    """``n`` 100-byte JSON events (``--values json``): each one distinct (its id), their fields
    from a few kinds and users, so they compress well, as the events of issue 80's outside check."""
    kinds = (b"click", b"view", b"purchase", b"signup", b"logout")
    return [(b'{"id":%d,"type":"%s","user":"u%05d","amount":%d,"ok":true}'
             % (start + i, rng.choice(kinds), rng.randrange(20_000), rng.randrange(10_000))).ljust(100)
            for i in range(n)]


def write_log(root: str, records: int, partitions: int = 4, headers: int = 0, values_kind: str = "pool",
              compression: str = "none", segment_bytes: int = SEGMENT_BYTES) -> None:
    from kafkarec import Compression, build_batch
    codec = Compression[compression.upper()]
    rng = random.Random(7)
    words = [b"order", b"paid", b"user", b"eur", b"shipped", b"qty", b"item", b"ok"]
    # pools larger than a batch, each batch a slice at a random start: Parquet's dictionaries do not
    # shrink the values to a few distinct ones, as 1000 values repeated in every batch would let them
    values = [b"%d " % i + b" ".join(rng.choice(words) for _ in range(18))[:90] for i in range(POOL)]
    keys = [b"user-%011d" % rng.randrange(10_000_000) for _ in range(POOL)]
    per_partition = records // partitions
    # one header a record as producers' tracing adds them: a short key, a 16-byte value
    record_headers = [[("trace-%d" % h, b"%016x" % h) for h in range(headers)]] * PER_BATCH if headers else None
    for partition in range(partitions):
        def batches():
            for offset in range(0, per_partition, PER_BATCH):
                n = min(PER_BATCH, per_partition - offset)
                at = rng.randrange(POOL - n)
                chosen = values[at:at + n] if values_kind == "pool" else json_values(offset, n, rng)
                yield offset, build_batch(chosen, keys[at:at + n], [T0 + offset + i for i in range(n)],
                                          headers=record_headers[:n] if record_headers else None,
                                          base_offset=offset, compression=codec)
        write_partition(os.path.join(root, f"bench-{partition}"), batches(), segment_bytes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--headers", type=int, default=0, help="headers a record")
    ap.add_argument("--queries", default="all,meta",
                    help="which queries: all (every column), meta (offset, timestamp), kv (offset, timestamp, "
                         "key, value: the columns analysts select), whole, summax, count, first (LIMIT 5), slice, comma-separated")
    ap.add_argument("--values", choices=("pool", "json"), default="pool",
                    help="pool: ~100-byte values from a pool of 100,000 word strings; json: distinct 100-byte "
                         "JSON events that compress well (issue 80's outside check)")
    ap.add_argument("--compression", choices=("none", "gzip", "snappy", "lz4", "zstd"), default="none",
                    help="the batches' codec (a --work DIR holds the log of the codec it was written with)")
    ap.add_argument("--segment-bytes", type=int, default=SEGMENT_BYTES, metavar="N",
                    help="roll each partition's segments at N bytes (default 64 MiB; a broker's default "
                         "segment.bytes is 1 GiB: one file, cut into 64 MiB windows by a walk of its headers)")
    ap.add_argument("--layouts", action="store_true",
                    help="instead: each engine taking key and value as binary or binary_view (CPU seconds)")
    ap.add_argument("--value-layouts", action="store_true",
                    help="instead: each reading in value_layout copy against view (CPU seconds and wall)")
    ap.add_argument("--work", metavar="DIR",
                    help="keep the log and the Parquet file in DIR and reuse them if there (before/after runs)")
    ap.add_argument("--floor", action="store_true",
                    help="with meta: also the reader alone and each engine taking ready batches")
    ap.add_argument("--map-cache-bytes", type=int, default=None, metavar="N",
                    help="the maps the registered DuckDB table and the held Polars LazyFrame keep open between "
                         "queries (default: the adapters' own, 1 GiB; 0: none)")
    ap.add_argument("--buffer-cache-bytes", type=int, default=None, metavar="N",
                    help="the column buffers the registered DuckDB table and the held Polars LazyFrame keep "
                         "between queries (default: the adapters' own, 256 MiB; 0: none)")
    ap.add_argument("--dask", action="store_true",
                    help="Dask on a LocalCluster of 2 workers against LogScan(threads=2), instead")
    args = ap.parse_args(argv)
    if args.dask:
        return dask_main(args)
    import duckdb
    import polars as pl
    import pyarrow.parquet as pq
    global SUM_MAX
    SUM_MAX = (pl.col("offset").sum(), pl.col("timestamp").max())
    from kafkarec.engines.duckdb import register
    from kafkarec.engines.polars import scan_log
    from kafkarec.scan import LogScan

    work = args.work or tempfile.mkdtemp(prefix="kafkarec-bench-engines-")
    try:
        logs = os.path.join(work, "logs")
        parquet = os.path.join(work, "records.parquet")
        t = time.perf_counter()
        if not os.path.exists(parquet):         # (--work: written once, read by later runs)
            write_log(logs, args.records, args.partitions, args.headers, args.values, args.compression,
                      args.segment_bytes)
            table = LogScan(logs).to_table()
            pq.write_table(table, parquet)
            del table
        n = pq.ParquetFile(parquet).metadata.num_rows
        log_mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(logs) for f in fs) / 2**20
        print(f"{n} records: log {log_mb:.0f} MiB, Parquet {os.path.getsize(parquet) / 2**20:.0f} MiB "
              f"(written in {time.perf_counter() - t:.1f} s)")
        con = duckdb.connect()
        kept = {} if args.map_cache_bytes is None else {"map_cache_bytes": args.map_cache_bytes}
        if args.buffer_cache_bytes is not None:
            kept["buffer_cache_bytes"] = args.buffer_cache_bytes
        register(con, "logs", logs, **kept)
        # the same table keeping no maps (each window mapped and unmapped every query: as before
        # issue 80's kept maps), and a LazyFrame held across its collects, either way
        unkept = dict(kept, map_cache_bytes=0)
        register(con, "logs_unkept", logs, **unkept)
        lf, lf_unkept = scan_log(logs, **kept), scan_log(logs, **unkept)

        def first_batch(source):
            """The first batch of a read, and the read stopped (the pool's threads and maps let go)."""
            batches = iter(LogScan(logs, threads=2) if source == "kafkarec" else
                           pq.ParquetFile(parquet).iter_batches(batch_size=131072))
            next(batches)
            batches.close()

        middle = n // 2         # an offset slice: 10 records in the middle of the log
        SLICE = f'SELECT count(*) FROM {{}} WHERE "offset" >= {middle} AND "offset" < {middle + 10}'

        def duck_cold(sql: str):
            """A first query: the table registered anew (no map kept yet)."""
            register(con, "logs_cold", logs, **kept)
            return con.sql(sql.format("logs_cold")).fetchall()
        con.sql(f"CREATE VIEW records AS SELECT * FROM read_parquet('{parquet}')")
        queries = {
            "all columns": {
                ("Polars", "kafkarec"): lambda: scan_log(logs).collect(),
                ("Polars", "Parquet"): lambda: pl.scan_parquet(parquet).collect(),
                ("DuckDB", "kafkarec"): lambda: con.sql("SELECT * FROM logs").to_arrow_table(),
                ("DuckDB", "Parquet"): lambda: con.sql("SELECT * FROM records").to_arrow_table(),
            },
            "offset, timestamp, key, value": {
                ("Polars", "kafkarec"): lambda: scan_log(logs).select("offset", "timestamp", "key", "value").collect(),
                ("Polars", "Parquet"): lambda: pl.scan_parquet(parquet).select("offset", "timestamp", "key",
                                                                               "value").collect(),
                ("DuckDB", "kafkarec"): lambda: con.sql('SELECT "offset", timestamp, key, value FROM logs').to_arrow_table(),
                ("DuckDB", "Parquet"): lambda: con.sql('SELECT "offset", timestamp, key, value FROM records').to_arrow_table(),
            },
            "offset, timestamp": {
                ("Polars", "kafkarec"): lambda: scan_log(logs).select("offset", "timestamp").collect(),
                ("Polars", "Parquet"): lambda: pl.scan_parquet(parquet).select("offset", "timestamp").collect(),
                ("DuckDB", "kafkarec"): lambda: con.sql('SELECT "offset", timestamp FROM logs').to_arrow_table(),
                ("DuckDB", "Parquet"): lambda: con.sql('SELECT "offset", timestamp FROM records').to_arrow_table(),
            },
            # issue 80's outside check: whole rows aggregated (DuckDB), the four columns collected (Polars)
            "whole rows": {
                ("Polars", "kafkarec"): lambda: lf.select(*FOUR).collect(),
                ("Polars", "kafkarec cold"): lambda: scan_log(logs, **kept).select(*FOUR).collect(),
                ("Polars", "kafkarec unkept"): lambda: lf_unkept.select(*FOUR).collect(),
                ("Polars", "Parquet"): lambda: pl.scan_parquet(parquet).select(*FOUR).collect(),
                ("DuckDB", "kafkarec"): lambda: con.sql(WHOLE.format("logs")).fetchall(),
                ("DuckDB", "kafkarec cold"): lambda: duck_cold(WHOLE),
                ("DuckDB", "kafkarec unkept"): lambda: con.sql(WHOLE.format("logs_unkept")).fetchall(),
                ("DuckDB", "Parquet"): lambda: con.sql(WHOLE.format("records")).fetchall(),
            },
            # a count: DuckDB asks the source for column 0 (key) as for SELECT key, so it decodes keys
            "count": {
                ("Polars", "kafkarec"): lambda: scan_log(logs).select(pl.len()).collect(),
                ("Polars", "Parquet"): lambda: pl.scan_parquet(parquet).select(pl.len()).collect(),
                ("DuckDB", "kafkarec"): lambda: con.sql("SELECT count(*) FROM logs").fetchall(),
                ("DuckDB", "Parquet"): lambda: con.sql("SELECT count(*) FROM records").fetchall(),
                ("DuckDB", 'count("offset")'): lambda: con.sql('SELECT count("offset") FROM logs').fetchall(),
            },
            # a look at the first rows: DuckDB's LIMIT is not told to the source (it stops pulling),
            # Polars' head is (the scan's limit)
            "first rows (LIMIT 5)": {
                ("Polars", "kafkarec"): lambda: lf.head(5).collect(),
                ("Polars", "Parquet"): lambda: pl.scan_parquet(parquet).head(5).collect(),
                ("DuckDB", "kafkarec"): lambda: con.sql("SELECT * FROM logs LIMIT 5").fetchall(),
                ("DuckDB", "Parquet"): lambda: con.sql("SELECT * FROM records LIMIT 5").fetchall(),
                ("first batch", "kafkarec"): lambda: first_batch("kafkarec"),
                ("first batch", "Parquet"): lambda: first_batch("Parquet"),
            },
            # ten records in the middle, by offset (a log without .index files: the index rebuilt)
            "offset slice": {
                ("Polars", "kafkarec"): lambda: lf.filter((pl.col("offset") >= middle) & (pl.col("offset") < middle + 10))
                .select(pl.len()).collect(),
                ("Polars", "Parquet"): lambda: pl.scan_parquet(parquet).filter(
                    (pl.col("offset") >= middle) & (pl.col("offset") < middle + 10)).select(pl.len()).collect(),
                ("DuckDB", "kafkarec"): lambda: con.sql(SLICE.format("logs")).fetchall(),
                ("DuckDB", "Parquet"): lambda: con.sql(SLICE.format("records")).fetchall(),
            },
            "offset, timestamp (sum, max)": {
                ("Polars", "kafkarec"): lambda: lf.select(*SUM_MAX).collect(),
                ("Polars", "kafkarec cold"): lambda: scan_log(logs, **kept).select(*SUM_MAX).collect(),
                ("Polars", "kafkarec unkept"): lambda: lf_unkept.select(*SUM_MAX).collect(),
                ("Polars", "Parquet"): lambda: pl.scan_parquet(parquet).select(*SUM_MAX).collect(),
                ("DuckDB", "kafkarec"): lambda: con.sql(SUM_MAX_SQL.format("logs")).fetchall(),
                ("DuckDB", "kafkarec cold"): lambda: duck_cold(SUM_MAX_SQL),
                ("DuckDB", "kafkarec unkept"): lambda: con.sql(SUM_MAX_SQL.format("logs_unkept")).fetchall(),
                ("DuckDB", "Parquet"): lambda: con.sql(SUM_MAX_SQL.format("records")).fetchall(),
            },
        }
        if args.floor:
            queries["offset, timestamp"].update(_floor_runs(logs, con))
        if args.layouts:
            layout_runs(logs, args.repeats)
            return 0
        if args.value_layouts:
            value_layout_runs(logs, args.repeats)
            return 0
        wanted = {"all": "all columns", "meta": "offset, timestamp", "kv": "offset, timestamp, key, value",
                  "whole": "whole rows", "summax": "offset, timestamp (sum, max)", "count": "count",
                  "first": "first rows (LIMIT 5)", "slice": "offset slice"}
        chosen = {wanted[q] for q in args.queries.split(",")}
        queries = {q: runs for q, runs in queries.items() if q in chosen}
        results, verdicts = {}, []
        log_bytes = log_mb * 2**20
        copy_rate = memcpy_rate(int(log_bytes), args.repeats)
        print(f"memcpy of {log_mb:.0f} MiB (numpy copyto, best of {args.repeats}): {copy_rate / 1e9:.1f} GB/s")
        print(f"{'query':30s} {'engine':11s} {'source':15s} {'best s':>8s} {'M rows/s':>9s} {'log GB/s':>9s} "
              f"{'of memcpy':>9s} {'CPU s':>7s}")
        for query, runs in queries.items():
            for call in runs.values():
                call()                                  # warm: page cache, imports, plans
            best = {which: float("inf") for which in runs}
            cpu = dict(best)
            for _ in range(args.repeats):               # alternating: a noisy moment hits every run alike
                for which, call in runs.items():
                    t, c = time.perf_counter(), time.process_time()
                    call()
                    best[which] = min(best[which], time.perf_counter() - t)
                    cpu[which] = min(cpu[which], time.process_time() - c)
            for (engine, source), seconds in best.items():
                rate = log_bytes / seconds
                results[f"{query} | {engine} | {source}"] = {"seconds": seconds, "rows_per_s": n / seconds,
                                                             "log_bytes_per_s": rate,
                                                             "cpu_seconds": cpu[(engine, source)]}
                print(f"{query:30s} {engine:11s} {source:15s} {seconds:8.3f} {n / seconds / 1e6:9.2f} "
                      f"{rate / 1e9:9.2f} {rate / copy_rate:9.2f} {cpu[(engine, source)]:7.3f}")
            for engine in ("Polars", "DuckDB", "first batch"):
                if f"{query} | {engine} | kafkarec" not in results:
                    continue
                ratio = results[f"{query} | {engine} | kafkarec"]["seconds"] / \
                    results[f"{query} | {engine} | Parquet"]["seconds"]
                verdict = "PASS" if ratio <= TARGET else "FAIL"
                verdicts.append(verdict)
                cpu_ratio = results[f"{query} | {engine} | kafkarec"]["cpu_seconds"] / \
                    results[f"{query} | {engine} | Parquet"]["cpu_seconds"]
                print(f"  {engine} over kafkarec / over Parquet: {ratio:.2f}x the time, {1 / ratio:.2f}x the rate, "
                      f"{cpu_ratio:.2f}x the CPU (target <= {TARGET}x the time: {verdict})")
                for other in ("kafkarec cold", "kafkarec unkept"):
                    alt = results.get(f"{query} | {engine} | {other}")
                    if alt is not None:
                        print(f"  {engine} over {other} / over Parquet: "
                              f"{alt['seconds'] / results[f'{query} | {engine} | Parquet']['seconds']:.2f}x the time, "
                              f"{alt['cpu_seconds'] / results[f'{query} | {engine} | Parquet']['cpu_seconds']:.2f}x "
                              "the CPU")
                ready = results.get(f"{query} | {engine} | ready batches")
                if ready is not None:
                    floor = results[f"{query} | reader | kafkarec"]["seconds"] + ready["seconds"]
                    print(f"  {engine} floor (the reader alone + its ready batches): {floor:.3f} s, "
                          f"{floor / results[f'{query} | {engine} | Parquet']['seconds']:.2f}x Parquet's time")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"records": n, "results": results}, fh, indent=2)
        return 0 if all(v == "PASS" for v in verdicts) else 1
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def layout_runs(logs: str, repeats: int) -> None:
    """``--layouts`` (issue 80, item 2): the log's ``offset, timestamp, key, value`` read once, then,
    best of ``repeats`` in CPU seconds, pyarrow's cast of ``key`` and ``value`` to ``binary_view``
    (what :func:`kafkarec.engines.polars.scan_log` has the pool do), and each engine taking the
    rows in either layout: Polars ``pl.from_arrow``, DuckDB issue 80's whole-rows query over the
    Arrow table; with the Arrow memory each layout holds."""
    import duckdb
    import polars as pl
    import pyarrow as pa
    from kafkarec.scan import LogScan
    before = pa.total_allocated_bytes()
    classic = table = pa.Table.from_batches(list(LogScan(logs, columns=list(FOUR))))
    classic_bytes = pa.total_allocated_bytes() - before
    views = pa.schema([f.with_type(pa.binary_view()) if f.type == pa.binary() else f for f in table.schema])
    viewed = table.cast(views)
    view_bytes = pa.total_allocated_bytes() - before - classic_bytes
    con = duckdb.connect()
    con.register("classic", classic)
    con.register("viewed", viewed)

    def cpu(call):
        call()
        best = float("inf")
        for _ in range(repeats):
            c = time.process_time()
            call()
            best = min(best, time.process_time() - c)
        return best
    n = table.num_rows
    print(f"{n} rows of offset, timestamp, key, value: classic layout {classic_bytes / 2**20:.0f} MiB held; "
          f"the views add {view_bytes / 2**20:.0f} MiB (the value bytes shared)")
    print(f"{'step':44s} {'classic':>9s} {'views':>9s}  (CPU s, best of {repeats})")
    print(f"{'cast key, value to binary_view (pyarrow)':44s} {'':>9s} {cpu(lambda: table.cast(views)):9.3f}")
    print(f"{'Polars pl.from_arrow':44s} {cpu(lambda: pl.from_arrow(table)):9.3f} "
          f"{cpu(lambda: pl.from_arrow(viewed)):9.3f}")
    print(f"{'DuckDB whole rows over the Arrow table':44s} {cpu(lambda: con.sql(WHOLE.format('classic')).fetchall()):9.3f} "
          f"{cpu(lambda: con.sql(WHOLE.format('viewed')).fetchall()):9.3f}")


def value_layout_runs(logs: str, repeats: int) -> None:
    """``--value-layouts``: each reading in ``value_layout`` "copy" and "view", alternating, best of
    ``repeats`` (CPU seconds of the process, all threads, and wall), then the Arrow memory a table of
    ``offset, timestamp, key, value`` holds in each (see the module docstring)."""
    import duckdb
    import pyarrow as pa
    from kafkarec.engines.duckdb import register
    from kafkarec.engines.polars import scan_log
    from kafkarec.scan import LogScan
    from kafkarec import to_arrow
    layouts = ("copy", "view")
    held = []
    for folder, _, names in os.walk(logs):
        for name in sorted(names):
            if name.endswith(".log"):
                with open(os.path.join(folder, name), "rb") as fh:
                    held.append(fh.read())
    con = duckdb.connect()
    for layout in layouts:
        register(con, f"logs_{layout}", logs, value_layout=layout)
    readings = {
        "DuckDB whole rows": lambda layout: con.sql(WHOLE.format(f"logs_{layout}")).fetchall(),
        "Polars offset, timestamp, key, value": lambda layout: scan_log(logs, value_layout=layout)
        .select(*FOUR).collect(),
        "LogScan(columns=4).to_table()": lambda layout: LogScan(logs, columns=list(FOUR), value_layout=layout)
        .to_table(),
        "LogScan() batches iterated": lambda layout: sum(rb.num_rows for rb in LogScan(logs, value_layout=layout)),
        # the core alone, over the segments' bytes already in memory (no window read either way)
        "kafkarec.to_arrow(bytes in memory)": lambda layout: [to_arrow(data, value_layout=layout) for data in held],
    }
    # the memory first: before any view read leaves spare windows in Arrow's pool (counted there)
    for layout in layouts:
        before = pa.total_allocated_bytes()
        table = LogScan(logs, columns=list(FOUR), value_layout=layout).to_table()
        kept = pa.total_allocated_bytes() - before
        windows = {}
        for name in ("key", "value"):
            for chunk in table.column(name).chunks:
                for buf in chunk.buffers()[3:] if layout == "view" else ():   # (views: buffer 3 on)
                    windows[buf.address] = buf.size
        print(f"Arrow memory of the four columns, {layout}: {kept / 2**20:.0f} MiB "
              f"(the windows read, views point into: {sum(windows.values()) / 2**20:.0f} MiB)")
        del table
    print(f"{'reading':40s} {'copy CPU s':>10s} {'view CPU s':>10s} {'view/copy':>9s} "
          f"{'copy wall':>9s} {'view wall':>9s}  (best of {repeats}, alternating)")
    for name, call in readings.items():
        best = {(layout, kind): float("inf") for layout in layouts for kind in ("cpu", "wall")}
        for layout in layouts:
            call(layout)                                    # warm: page cache, imports, plans
        for _ in range(repeats):
            for layout in layouts:
                t, c = time.perf_counter(), time.process_time()
                call(layout)
                best[layout, "wall"] = min(best[layout, "wall"], time.perf_counter() - t)
                best[layout, "cpu"] = min(best[layout, "cpu"], time.process_time() - c)
        print(f"{name:40s} {best['copy', 'cpu']:10.3f} {best['view', 'cpu']:10.3f} "
              f"{best['view', 'cpu'] / best['copy', 'cpu']:9.2f} {best['copy', 'wall']:9.3f} {best['view', 'wall']:9.3f}")


def memcpy_rate(size: int, repeats: int) -> float:
    """Bytes a second of one large copy of ``size`` bytes (numpy's ``copyto``, a ``memcpy``), best
    of ``repeats``: this machine's memory bandwidth as one thread sees it, the ceiling of a read."""
    import numpy as np
    src = np.ones(size, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)                 # (pages touched before timing)
    return size / min(timeit.repeat(lambda: np.copyto(dst, src), number=1, repeat=repeats))


def _floor_runs(logs: str, con) -> dict:
    """The floor's runs of ``offset, timestamp`` (see the module docstring): the reader alone, and
    Polars and DuckDB each taking the reader's batches, read once beforehand, in the form its
    adapter hands them over."""
    import polars as pl
    import pyarrow as pa
    from polars.io.plugins import register_io_source
    from kafkarec.scan import LogScan
    scan = LogScan(logs, columns=["offset", "timestamp"])
    batches = list(scan)
    frames = [pl.from_arrow(rb) for rb in batches]
    us = pa.schema([f.with_type(pa.timestamp("us")) if f.name == "timestamp" else f for f in scan.schema])
    ready = [rb.cast(us) for rb in batches]

    def frames_source(with_columns, predicate, n_rows, batch_size):
        yield from frames
    plugin = register_io_source(frames_source, schema=frames[0].schema)
    return {
        ("reader", "kafkarec"): lambda: sum(rb.num_rows for rb in scan),
        ("Polars", "ready batches"): lambda: plugin.select("offset", "timestamp").collect(),
        ("DuckDB", "ready batches"): lambda: con.from_arrow(pa.RecordBatchReader.from_batches(us, iter(ready)))
        .to_arrow_table(),
    }


def dask_main(args) -> int:
    """``--dask``: see the module docstring."""
    from distributed import Client, LocalCluster
    from kafkarec.engines.dask import read_log
    from kafkarec.scan import LogScan

    work = tempfile.mkdtemp(prefix="kafkarec-bench-dask-")
    try:
        logs = os.path.join(work, "logs")
        t = time.perf_counter()
        write_log(logs, args.records, args.partitions, args.headers)
        log_mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(logs) for f in fs) / 2**20
        print(f"{args.records} records in {args.partitions} partitions: log {log_mb:.0f} MiB, "
              f"{len(LogScan(logs).pieces())} pieces of work (written in {time.perf_counter() - t:.1f} s)")
        t = time.perf_counter()
        with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                          silence_logs=40) as cluster, Client(cluster) as client:
            print(f"LocalCluster of 2 workers started in {time.perf_counter() - t:.1f} s")
            columns = {"all columns": None, "offset, timestamp, key, value": ["offset", "timestamp", "key", "value"],
                       "offset, timestamp": ["offset", "timestamp"]}
            wanted = {"all": "all columns", "meta": "offset, timestamp", "kv": "offset, timestamp, key, value"}
            chosen = [wanted[q] for q in args.queries.split(",")]
            results, verdicts = {}, []
            print(f"{'query':30s} {'engine':22s} {'best s':>8s} {'M rows/s':>9s}")
            for query in chosen:
                cols = columns[query]
                runs = {
                    "Dask, 2 workers": lambda: int(read_log(logs, columns=cols).map_partitions(len).sum()
                                                   .compute(scheduler=client)),
                    "LogScan(threads=2)": lambda: sum(rb.num_rows for rb in LogScan(logs, columns=cols, threads=2)),
                }
                for engine, call in runs.items():
                    n = call()                          # warm: page cache, imports, the workers' imports
                    assert n == args.records // args.partitions * args.partitions, n
                    seconds = min(timeit.repeat(call, number=1, repeat=args.repeats))
                    results[f"{query} | {engine}"] = {"seconds": seconds, "rows_per_s": n / seconds}
                    print(f"{query:30s} {engine:22s} {seconds:8.3f} {n / seconds / 1e6:9.2f}")
                ratio = results[f"{query} | LogScan(threads=2)"]["seconds"] / results[f"{query} | Dask, 2 workers"]["seconds"]
                verdict = "PASS" if ratio >= DASK_TARGET else "FAIL"
                verdicts.append(verdict)
                print(f"  Dask's rate / the reader's: {ratio:.2f}x (target >= {DASK_TARGET}x: {verdict})")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"records": args.records, "results": results}, fh, indent=2)
        return 0 if all(v == "PASS" for v in verdicts) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
