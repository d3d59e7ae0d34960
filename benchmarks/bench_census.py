"""The census, the key search and the compression what-if against what users run instead, one run
(issue 50).

    .venv/bin/python benchmarks/bench_census.py                     # 1M records
    .venv/bin/python benchmarks/bench_census.py --records 200000    # quick
    .venv/bin/python benchmarks/bench_census.py --json out/bench_census.json

A real KRaft broker (tests/support/brokers/kafka_broker.py, the Kafka of jvm/kafka/pom.xml) is started in a
temp folder and the topic ``census`` (4 partitions, lz4) is filled once through librdkafka with
Java's partitioner (murmur2): ``--records`` records of ``--records / 10`` keys, 100-byte values.
Then, after a warm-up of the files in the page cache, each timed ``--repeats`` times (5; the
median is the figure, the fastest and slowest beside it):

* **Java consumer** — Kafka's own ``kafka-consumer-perf-test`` (``ConsumerPerformance``, in the
  tools' JVM, ``isolation.level=read_committed``) consuming the whole topic from the broker: what a
  consumer-based count or search costs (it is the "full consumer scan" of the key lookup too);
* **plain read** — :class:`kafkarec.scan.LogScan` of the log dir, ``read_committed``, the columns the
  census reads, every batch: the project's own read, so that census / plain read is the cost of
  counting;
* **census** — :func:`kafkarec.census.census` of the topic (both passes, keys exact);
* **find key** — :func:`kafkarec.census.find` of one key, over every partition and with
  ``partitioner="murmur2"``;
* **what-if** — :func:`kafkarec.census.what_if` with ``zstd:3,lz4,snappy,gzip:6``: per codec the
  MB/s of building and compressing its batches (uncompressed batch bytes over its
  ``compress_seconds``, in the last run), beside the raw compressor (the limit; for snappy the
  library the writer uses, ``kafkarec.snappy_compressor()``) on the same batches' record bytes,
  cut at the same 16 KiB.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

TOPIC = "census"
PARTITIONS = 4
CODECS = "zstd:3,lz4,snappy,gzip:6"


def fill(bootstrap: str, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config={"retention.ms": "-1"})]).values():
        f.result(60)
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4", "linger.ms": 20,
                  "partitioner": "murmur2_random", "queue.buffering.max.messages": 1_000_000, "acks": "all"})
    keys = max(1, records // 10)
    rng = random.Random(50)
    words = [w.encode() for w in "order shipped pending refund card wallet express standard priority gift "
             "north south east west warehouse courier".split()]
    for i in range(records):
        # order-like values: compress about as a JSON topic does (zstd ~3x), not as a repeated string
        value = b'{"id":%d,"amount":%d.%02d,"note":"%s"}' % (
            i, rng.randrange(1000), rng.randrange(100), b" ".join(rng.choice(words) for _ in range(rng.randrange(4, 12))))
        while True:
            try:
                p.produce(TOPIC, value=value, key=b"key-%010d" % (i % keys))
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0


REPEATS = 5


def timed(name: str, run, results: dict, rows: int) -> object:
    """``run`` REPEATS times: the median wall time (and that run's CPU) is the figure, the fastest
    and slowest beside it (a sub-second read timed once moves by 2x on a machine in use)."""
    runs = []
    for _ in range(REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        out = run()
        runs.append((time.perf_counter() - t0, time.process_time() - c0))
    runs.sort()
    wall, cpu = runs[len(runs) // 2]
    results[name] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "rows_per_s": round(rows / wall),
                     "wall_s_min": round(runs[0][0], 3), "wall_s_max": round(runs[-1][0], 3),
                     "repeats": len(runs)}
    print(f"  {name:<34} {wall:8.2f} s wall {cpu:8.2f} s CPU (this process)  {rows / wall / 1e6:7.3f} M rows/s"
          f"  (median of {len(runs)}: {runs[0][0]:.2f}-{runs[-1][0]:.2f} s)", flush=True)
    return out


def java_consumer(broker, records: int, work: str) -> None:
    config = os.path.join(work, "consumer.properties")
    with open(config, "w") as fh:
        fh.write("isolation.level=read_committed\nauto.offset.reset=earliest\n")
    proc = broker.run_tool("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", broker.bootstrap,
                           "--topic", TOPIC, "--num-records", str(records), "--command-config", config,
                           "--group", "bench-census-%d" % time.time_ns(), timeout=600)
    # its CSV line: start.time, end.time, MB, MB.sec, nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms,
    # fetch.MB.sec, fetch.nMsg.sec (the last: its own rate, the group's join left out)
    rows = [line.split(",") for line in proc.stdout.splitlines() if line.count(",") >= 9]
    if not rows or int(float(rows[-1][4])) != records:
        raise RuntimeError(f"ConsumerPerformance did not report {records} records:\n{proc.stdout}\n{proc.stderr}")
    return float(rows[-1][9])


def raw_compressors(batches, results: dict) -> None:
    """Each codec's library alone on the same 16 KiB record runs: the what-if's limit."""
    import zlib

    import lz4.block
    import zstandard
    total = sum(len(b) for b in batches)
    runs = {"zstd:3": zstandard.ZstdCompressor(level=3).compress,
            "lz4": lambda b: lz4.block.compress(b, store_size=False),
            "snappy": snappy_raw(),
            "gzip:6": lambda b: zlib.compress(b, 6)}
    for label, compress in runs.items():
        t0 = time.perf_counter()
        out = sum(len(compress(b)) for b in batches)
        wall = time.perf_counter() - t0
        results.setdefault("raw", {})[label] = {"mb_per_s": round(total / wall / 1e6, 1), "bytes": out}
        print(f"  raw {label:<10} {total / wall / 1e6:8.1f} MB/s", flush=True)


def snappy_raw():
    """The snappy the what-if's writer uses (kafkarec.snappy_compressor()), called alone."""
    import kafkarec
    library = kafkarec.snappy_compressor()
    if library == "cramjam":
        import cramjam
        return lambda b: bytes(cramjam.snappy.compress_raw(b))
    import ctypes
    lib = ctypes.CDLL(library)
    size = ctypes.c_size_t()

    def compress(b):
        out = ctypes.create_string_buffer(lib.snappy_max_compressed_length(ctypes.c_size_t(len(b))))
        size.value = len(out)
        if lib.snappy_compress(b, ctypes.c_size_t(len(b)), out, ctypes.byref(size)) != 0:
            raise RuntimeError("snappy_compress failed")
        return out.raw[:size.value]
    return compress


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--repeats", type=int, default=REPEATS, help="runs of each read; the median is taken")
    args = ap.parse_args(argv)
    globals()["REPEATS"] = max(1, args.repeats)

    import pyarrow as pa

    from kafkarec.census import census, find, parse_codecs, what_if
    from kafkarec.census._scan import base_config, open_scan
    from kafkarec.census.counts import _COMMITTED_COLUMNS
    from kafkarec.scan import Bounds, LogScan
    from support.brokers.kafka_broker import KafkaBroker

    results: dict = {"records": args.records}
    with tempfile.TemporaryDirectory(prefix="kafkarec-bench-census-") as tmp, \
            KafkaBroker(os.path.join(tmp, "broker")) as broker:
        t0 = time.time()
        fill(broker.bootstrap, args.records)
        time.sleep(2)
        bounds = Bounds.of(topics=[TOPIC])
        LogScan(broker.log_dir, bounds=bounds).to_table()          # warm the page cache
        print(f"{args.records} records in {TOPIC} ({PARTITIONS} partitions, lz4; {time.time() - t0:.1f} s to "
              f"produce), load average {os.getloadavg()[0]:.2f}", flush=True)
        n = args.records
        fetch_rate = timed("java consumer (read_committed)", lambda: java_consumer(broker, n, tmp), results, n)
        results["java consumer (read_committed)"]["fetch_rows_per_s"] = round(fetch_rate)
        print(f"  (its own fetch rate, the group's join left out: {fetch_rate / 1e6:.3f} M rows/s)", flush=True)

        def plain():      # the census's own read_committed scan, its columns, nothing counted
            scan = open_scan(base_config(broker.log_dir, bounds=bounds), read_committed=True,
                             columns=_COMMITTED_COLUMNS)
            return sum(rb.num_rows for rb in scan.to_reader())
        assert timed("kafkarec plain read", plain, results, n) == n
        doc = timed("kafkarec census", lambda: census(broker.log_dir, bounds=bounds), results, n)
        assert doc["topics"][0]["records"] == n
        key = b"key-%010d" % (n // 20)
        hits = timed("kafkarec find --key", lambda: list(find(broker.log_dir, topics=[TOPIC], key=key)), results, n)
        hits_m = timed("kafkarec find --key --partitioner murmur2",
                       lambda: list(find(broker.log_dir, topics=[TOPIC], key=key, partitioner="murmur2")), results, n)
        assert len(hits) == len(hits_m) == n // max(1, n // 10)
        codecs = parse_codecs(CODECS)
        doc = timed("kafkarec what-if " + CODECS, lambda: what_if(broker.log_dir, codecs, bounds=bounds,
                                                                   detail=True), results, n)
        plain_bytes = next(c["bytes"] for c in doc["codecs"] if c["codec"] == "none")
        for c in doc["codecs"]:
            if c["codec"] != "none":
                mbs = plain_bytes / c["compress_seconds"] / 1e6
                results.setdefault("what_if", {})[c["codec"]] = {"mb_per_s": round(mbs, 1), "bytes": c["bytes"],
                                                                 "ratio": round(c["ratio"], 3)}
                print(f"  what-if {c['codec']:<10} {mbs:8.1f} MB/s (build + compress), ratio {c['ratio']:.3f}",
                      flush=True)
        # the raw compressors on the uncompressed batches' record bytes, cut at 16 KiB
        table = LogScan(broker.log_dir, bounds=bounds, isolation_level="read_committed",
                        columns=["value", "key"]).to_table()
        blob = b"".join(pa.concat_arrays([table.column("key").combine_chunks(),
                                          table.column("value").combine_chunks()]).to_pylist())
        raw_compressors([blob[i:i + 16384] for i in range(0, len(blob), 16384)], results)
    java = results["java consumer (read_committed)"]["rows_per_s"]
    summary = {"census_vs_plain_read": results["kafkarec census"]["rows_per_s"] / results["kafkarec plain read"]["rows_per_s"],
               "census_vs_java_consumer": results["kafkarec census"]["rows_per_s"] / java,
               "census_vs_java_consumer_fetch_rate": results["kafkarec census"]["rows_per_s"]
               / results["java consumer (read_committed)"]["fetch_rows_per_s"],
               "find_vs_java_consumer_scan": results["java consumer (read_committed)"]["wall_s"]
               / results["kafkarec find --key"]["wall_s"],
               "find_murmur2_vs_java_consumer_scan": results["java consumer (read_committed)"]["wall_s"]
               / results["kafkarec find --key --partitioner murmur2"]["wall_s"]}
    results["summary"] = {k: round(v, 3) for k, v in summary.items()}
    print("summary:", json.dumps(results["summary"]))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
