"""A typed read (Avro values through a registry) at 1, 2, ... threads: where the typed decode runs.

    .venv/bin/python benchmarks/bench_typed_threads.py [--partitions 4] [--records 500000]
        [--threads 1,2] [--repeats 3] [--codec none|zstd|lz4] [--workdir DIR] [--consumer-types] [--json FILE]

Writes ``--partitions`` partitions of ``--records`` records each (kafkarec's bulk builder, 1000
records a batch, 16-byte keys, one header a record, 64 MiB segments, ``--codec`` batches) whose values
are Confluent-framed Avro records (an order: id, user, amount, currency, created, 3 tags; ~70 bytes)
from a pool of 100,000, a third by writer version 1 and the rest by version 2 (a field more), read
with version 2 (so writer 1's records are resolved), into ``--workdir`` (kept and reused when given;
else a temporary folder).  Then, page cache warm, best of ``--repeats``, at each thread count:
``LogScan(log, value_format="registry", registry=..., threads=T)``'s batches counted and dropped (as
an engine's stream takes them), rows/s, the process's CPU-s and the consumer's thread's CPU-s (the
fewest of the repeats: the work left in the thread that takes the batches).

``--consumer-types``: each batch typed in the consumer's thread, as before the typed decode moved to
the pool's threads (``TypedRows.typed_batch`` made a no-op: what the consumer gets is typed by
``TypedRows.convert`` there, as a one-thread read types it), to compare in one tree.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from _segments import write_partition  # noqa: E402

PER_BATCH = 1000
POOL = 100_000
T0 = 1_700_000_000_000
TOPIC = "orders"
V1 = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "user", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "currency", "type": {"type": "enum", "name": "Currency", "symbols": ["EUR", "USD", "GBP"]}},
    {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
V2 = {**V1, "fields": V1["fields"] + [{"name": "tags", "type": {"type": "array", "items": "string"},
                                       "default": []}]}


def registry():
    import kafkarec.registry as kr

    def key(version):
        return json.dumps({"keytype": "SCHEMA", "subject": f"{TOPIC}-value", "version": version, "magic": 1}).encode()

    def value(version, sid, schema):
        return json.dumps({"subject": f"{TOPIC}-value", "version": version, "id": sid,
                           "schema": json.dumps(schema)}).encode()
    return kr.replay([(0, key(1), value(1, 1, V1)), (1, key(2), value(2, 2, V2))])


def write(root: str, partitions: int, records: int, codec: str) -> None:
    import fastavro
    from kafkarec import Compression, build_batch
    rng = random.Random(7)
    v1, v2 = fastavro.parse_schema(V1), fastavro.parse_schema(V2)
    values = []
    for i in range(POOL):
        rec = {"id": i, "user": "user-%07d" % rng.randrange(10_000_000), "amount": rng.random() * 500,
               "currency": rng.choice(["EUR", "USD", "GBP"]), "created": T0 + i}
        body = io.BytesIO()
        if i % 3 == 0:
            fastavro.schemaless_writer(body, v1, rec)
            values.append(b"\x00\x00\x00\x00\x01" + body.getvalue())
        else:
            fastavro.schemaless_writer(body, v2, {**rec, "tags": rng.sample(["new", "paid", "gift", "eu", "vip"], 3)})
            values.append(b"\x00\x00\x00\x00\x02" + body.getvalue())
    keys = [b"user-%011d" % rng.randrange(10_000_000) for _ in range(POOL)]
    headers = [[("trace", b"%016x" % 7)]] * PER_BATCH
    compression = Compression[codec.upper()]
    for p in range(partitions):
        def batches():
            for off in range(0, records, PER_BATCH):
                at = rng.randrange(POOL - PER_BATCH)
                yield off, build_batch(values[at:at + PER_BATCH], keys[at:at + PER_BATCH],
                                       [T0 + off + i for i in range(PER_BATCH)], headers=headers,
                                       base_offset=off, compression=compression)
        write_partition(os.path.join(root, "log", f"{TOPIC}-{p}"), batches())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--codec", default="none", choices=["none", "zstd", "lz4"])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir")
    ap.add_argument("--consumer-types", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    work = args.workdir or tempfile.mkdtemp(prefix="bench-typed-")
    log = os.path.join(work, "log")
    try:
        if not os.path.isdir(log):
            print(f"writing {args.partitions} x {args.records:,} typed records ({args.codec}) ...", flush=True)
            write(work, args.partitions, args.records, args.codec)
        from kafkarec.scan import LogScan
        from kafkarec.scan.typed import TypedRows
        if args.consumer_types:
            TypedRows.typed_batch = lambda self, rb: rb
        reg = registry()
        results = []
        for threads in (int(t) for t in args.threads.split(",")):
            def read():
                rows = 0
                for rb in LogScan(log, topics=[TOPIC], value_format="registry", registry=reg, threads=threads):
                    assert rb.column(rb.schema.get_field_index("_corrupt_record")).null_count == rb.num_rows
                    rows += rb.num_rows
                return rows
            read()      # warm
            wall = cpu = mine = float("inf")
            for _ in range(args.repeats):
                w0, c0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
                rows = read()
                w, c, t = time.perf_counter() - w0, time.process_time() - c0, time.thread_time() - t0
                if w < wall:
                    wall, cpu = w, c
                mine = min(mine, t)
            results.append({"threads": threads, "rows": rows, "seconds": wall, "cpu_seconds": cpu,
                            "consumer_cpu_seconds": mine, "rows_per_s": rows / wall})
            print(f"threads {threads}: {rows:,} rows in {wall:.3f} s ({rows / wall / 1e6:.2f} M rows/s, "
                  f"{cpu:.2f} CPU-s, the consumer's thread {mine:.2f} CPU-s)"
                  f"{' [typed in the consumer]' if args.consumer_types else ''}", flush=True)
        if len(results) > 1:
            print(f"threads {results[-1]['threads']} / threads {results[0]['threads']}: "
                  f"{results[-1]['rows_per_s'] / results[0]['rows_per_s']:.2f}x")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"args": vars(args), "results": results}, fh, indent=1)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
