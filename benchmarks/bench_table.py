"""The keyed state (``view=latest``) against the plain read, in Spark, on one executor.

    .venv/bin/python benchmarks/bench_table.py                       # 20M records, 5M keys
    .venv/bin/python benchmarks/bench_table.py --records 2000000 --keys 500000   # quick

Input: one partition ``state-0`` of ``--records`` records over ``--keys`` distinct keys (16-byte
keys in a scattered order, 100-byte values, 2% tombstones), 1000 records per batch, lz4, 1 GiB
segments as a broker rolls them; cached under ``--data``.  Spark runs ``local[1]`` (one
executor core, so one Python worker) and forces each read with ``write.format("noop")``:

* ``log``     ``spark.read.format("kafkarec").load(dir)``: every record
* ``latest``  ``.option("view", "latest")``: each live key's last record (two passes over the
              partition with a fixed-size key map, kafkarec.table)

Reported per mechanism: the median wall time of ``--repeats`` runs after a warm-up, input
records/s, and the Python workers' peak resident set (VmHWM, sampled from /proc every 50 ms).
Issue 30 asks ``latest`` for at least 40% of ``log``'s records/s, and the peak Python-worker RSS
per distinct key.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

BATCH = 1000
SEGMENT_BYTES = 1 << 30


def write_partition(folder: str, records: int, keys: int) -> None:
    """The partition, written once (a ``done`` marker makes a second run reuse it)."""
    import numpy as np
    import pyarrow as pa
    import kafkarec
    marker = os.path.join(folder, "done")
    if os.path.exists(marker):
        return
    part = os.path.join(folder, "state-0")
    os.makedirs(part, exist_ok=True)
    for name in os.listdir(part):
        os.unlink(os.path.join(part, name))
    rng = np.random.default_rng(30)
    seg_base, seg, size = 0, None, 0
    t0 = 1_700_000_000_000
    for base in range(0, records, BATCH):
        n = min(BATCH, records - base)
        ids = rng.integers(0, keys, n)
        # the first pass over the keys names each once, so every key exists
        if base < keys:
            ids[: min(n, keys - base)] = np.arange(base, min(base + n, keys))
        key_col = pa.array([b"key-%012d" % (i * 2654435761 % keys) for i in ids.tolist()], pa.binary())
        vals = [None if r < 0.02 else b"v" * 100 for r in rng.random(n).tolist()]
        batch = kafkarec.build_batch(pa.array(vals, pa.binary()), key_col,
                                     timestamps=list(range(t0 + base, t0 + base + n)),
                                     base_offset=base, compression=kafkarec.Compression.LZ4)
        if seg is None or size + len(batch) > SEGMENT_BYTES:
            if seg is not None:
                seg.close()
            seg_base, size = base, 0
            seg = open(os.path.join(part, f"{seg_base:020d}.log"), "wb")
        seg.write(batch)
        size += len(batch)
    seg.close()
    open(marker, "w").close()


class PeakWorkerRss:
    """The largest VmHWM of any Spark Python worker (``pyspark.daemon``/``worker``) seen."""

    def __init__(self):
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for d in os.listdir("/proc"):
                if not d.isdigit():
                    continue
                try:
                    with open(f"/proc/{d}/cmdline", "rb") as fh:
                        cmd = fh.read()
                    if b"pyspark.daemon" not in cmd and b"pyspark.worker" not in cmd:
                        continue
                    with open(f"/proc/{d}/status") as fh:
                        for line in fh:
                            if line.startswith("VmHWM:"):
                                self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                except OSError:
                    continue
            self._stop.wait(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20_000_000)
    ap.add_argument("--keys", type=int, default=5_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "kafkarec-bench-table"))
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    folder = os.path.join(args.data, f"{args.records}-{args.keys}")
    t = time.perf_counter()
    write_partition(folder, args.records, args.keys)
    print(f"data: {folder} ({time.perf_counter() - t:.1f} s to prepare)", flush=True)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)     # workers: this Python, with kafkarec
    from pyspark.sql import SparkSession
    import spark_udfs
    spark = (SparkSession.builder.master("local[1]").appName("bench_table")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "4g")
             .config("spark.sql.shuffle.partitions", "1")
             # a fresh worker per task: its VmHWM is that read's peak, not an earlier one's
             .config("spark.python.worker.reuse", "false").getOrCreate())
    spark_udfs.register(spark)
    reads = {"log": lambda: spark.read.format("kafkarec").load(folder),
             "latest": lambda: spark.read.format("kafkarec").option("view", "latest").load(folder)}
    live = reads["latest"]().count()
    results = []
    for name, make in reads.items():
        walls = []
        with PeakWorkerRss() as rss:
            for i in range(args.repeats + 1):
                t0 = time.perf_counter()
                make().write.format("noop").mode("overwrite").save()
                if i:
                    walls.append(time.perf_counter() - t0)
        med = statistics.median(walls)
        results.append({"read": name, "records": args.records, "median_s": med,
                        "records_per_s": args.records / med, "peak_worker_rss_mib": rss.peak_kib / 1024})
        print(f"{name:>7}: {med:7.2f} s  {args.records / med / 1e6:6.3f} M records/s  "
              f"peak Python worker RSS {rss.peak_kib / 1024:8.1f} MiB", flush=True)
    spark.stop()
    log, latest = results
    ratio = latest["records_per_s"] / log["records_per_s"]
    per_key = (latest["peak_worker_rss_mib"] - log["peak_worker_rss_mib"]) * (1 << 20) / args.keys
    print(f"{live} live keys of {args.keys}; view=latest at {ratio:.1%} of the plain read's records/s "
          f"(issue 30 asks >= 40%); peak Python-worker RSS above the plain read's: {per_key:.1f} bytes "
          f"per distinct key")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"results": results, "live_keys": live, "ratio": ratio, "bytes_per_key": per_key}, fh,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
