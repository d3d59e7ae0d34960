"""kafkarec against Spark's own Kafka source, side by side in one run (issue 27, item 6).

    .venv/bin/python benchmarks/bench_kafka_source.py                      # 2M raw + 500k typed records
    .venv/bin/python benchmarks/bench_kafka_source.py --records 400000 --typed 100000 --repeats 2   # quick
    .venv/bin/python benchmarks/bench_kafka_source.py --json out/bench_kafka_source.json
    .venv/bin/python benchmarks/bench_kafka_source.py --typed-partitions 4 --batch-size 229376 --linger-ms 200 --floor --pruned
                                                       # issue 52's hard shape, with the typed floor

A real KRaft broker (tests/support/brokers/kafka_broker.py, the Kafka of jvm/kafka/pom.xml) is started in a
temp folder and filled through librdkafka (confluent-kafka): five topics ``bench-<codec>``
(none, gzip, snappy, lz4, zstd), ``--records`` in all, 100-byte values, 16-byte keys, one
header; and ``bench-typed`` (2 partitions, zstd): ``--typed`` Schema Registry Avro values
(Confluent's 5-byte prefix, a record of long, decimal, enum, timestamp-millis, string and an
array) with the registry's ``_schemas`` topic written through the same broker.  Then one
Spark session (local[2], the project's pyspark; the Kafka source and spark-avro from jvm/spark)
reads the same records four ways, each forced with ``write.format("noop")``:

* ``kafka``          ``format("kafka")`` from the live broker (includeHeaders)
* ``kafkarec``       ``format("kafkarec")`` on the broker's log dir (includeHeaders)
* ``kafka+from_avro`` the Kafka source's values through spark-avro's ``from_avro``
* ``kafkarec typed`` ``format("kafkarec").option("valueFormat", "registry")`` on the log dir
* ``floor typed``    (``--floor``) a Python data source whose tasks hand Spark the typed read's
                     rows as ready Arrow batches, memory-mapped from Arrow IPC files written once
                     beforehand by kafkarec itself (``bench_spark_typed.py``'s floor): the most
                     any Python data source can deliver of these rows.  The floor divided by
                     Kafka source + ``from_avro`` bounds what kafkarec typed can reach

The typed topic's shape is set by ``--typed-partitions``, ``--typed-codec`` and the producer's
``--batch-size`` (librdkafka's ``batch.size``, bytes before compression) and ``--linger-ms``;
what landed is read back with kafkarec's own reader and printed (batches, records and stored
KiB a batch).  Issue 52's hard shape (the Java producer's 64 KiB batches, 4 partitions) is
``--typed-partitions 4 --batch-size 229376`` (librdkafka's batch.size counts bytes before
compression, the Java producer's its estimate after: with zstd, 229376 lands ~64 KiB batches).
``--pruned`` adds the typed read given only the asked columns by ``.schema(offset, value)``
(and, with ``--floor``, its floor): Spark prunes no columns of a Python data source, so a
``.select`` still has every column built and handed over.

Each is run once to warm up, then ``--repeats`` times in rounds (every mechanism in turn);
the median wall time gives rows/s.  CPU-seconds are counted from /proc for this process tree
(the driver JVM and Spark's Python workers) and for the broker's JVM, which serves the Kafka
source's fetches.  The last lines give kafkarec's ratio to the Kafka source, raw and typed
(issue 27's target: 2x; issue 52's for typed: 5x, and 2x per CPU-second), and with
``--floor`` the floor's ratio and how much of it kafkarec typed reaches.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, HERE, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TYPED_TOPIC = "bench-typed"
SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
]}
SCHEMA_ID = 1


def _proc_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        raw = fh.read()
    rest = raw[raw.rindex(")") + 2:].split()
    return sum(int(x) for x in rest[11:15]) / os.sysconf("SC_CLK_TCK")


def fill(broker, records: int, typed: int, *, typed_partitions: int = 2, batch_size: int = 1_000_000,
         linger_ms: int = 50, typed_codec: str = "zstd") -> None:
    """The bench topics, through the broker with librdkafka.  ``batch_size``/``linger_ms``: the
    typed topic's producer batching (librdkafka's ``batch.size``, in bytes before compression, and
    ``linger.ms``; ``batch.num.messages`` is lifted so that bytes, not a record count, end a
    batch); the raw topics keep 1,000,000 / 50 ms."""
    import fastavro
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from support.registry.schemas_log import confluent_key, schema_value
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topics = [NewTopic(f"bench-{c}", 1, 1) for c in CODECS] + [NewTopic(TYPED_TOPIC, typed_partitions, 1),
                                                                NewTopic("_schemas", 1, 1,
                                                                         config={"cleanup.policy": "compact"})]
    for f in admin.create_topics(topics).values():
        f.result(60)
    value = (b"kafkarec benchmark value " * 5)[:100]
    # record timestamps of the last hour: older ones fall to the default 7-day retention at once
    base_ts = int(time.time() * 1000) - 3_600_000
    per = records // len(CODECS)
    for codec in CODECS:
        p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 50,
                      "batch.size": 1_000_000, "queue.buffering.max.messages": 2_000_000, "acks": "all"})
        for i in range(per):
            while True:
                try:
                    p.produce(f"bench-{codec}", value=value, key=b"key-%012d" % i, headers=[("h", b"v")],
                              timestamp=base_ts + i)
                    break
                except BufferError:
                    p.poll(0.05)
        assert p.flush(300) == 0
    parsed = fastavro.parse_schema(SCHEMA)
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": typed_codec,
                  "linger.ms": linger_ms, "batch.size": batch_size, "batch.num.messages": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_097_151})
    import io
    prefix = b"\x00" + struct.pack(">I", SCHEMA_ID)
    # encoded first, then produced in a tight loop: the producer's batches fill to batch.size
    # rather than being cut by linger.ms while Python encodes the next values
    values = []
    for i in range(typed):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {
            "id": i, "amount": (i % 100000).to_bytes(4, "big", signed=True), "status": ("NEW", "PAID", "SHIPPED")[i % 3],
            "ts": 1_700_000_000_000 + i, "note": None if i % 4 else f"note {i}", "tags": ["a", "b"][: i % 3]})
        values.append(prefix + buf.getvalue())
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(TYPED_TOPIC, value=v, key=b"k%d" % i, partition=i % typed_partitions)
                break
            except BufferError:
                p.poll(0.05)
    p.produce("_schemas", key=confluent_key("SCHEMA", f"{TYPED_TOPIC}-value", 1),
              value=schema_value(f"{TYPED_TOPIC}-value", 1, SCHEMA_ID, json.dumps(SCHEMA)))
    assert p.flush(300) == 0


def landed_batches(log_dir: str, topic: str) -> dict:
    """What the producer's batches became on the broker, read back with kafkarec's own reader:
    batches, records per batch and bytes per batch (as stored, compressed) over ``topic``'s
    partitions' segments."""
    import glob
    import kafkarec
    sizes, counts = [], []
    for seg in sorted(glob.glob(os.path.join(log_dir, f"{topic}-*", "*.log"))):
        with open(seg, "rb") as fh:
            data = fh.read()
        for b in kafkarec.iter_batches(data, verify_crc=False):
            if b.is_control:
                continue
            sizes.append(b.size_in_bytes)
            counts.append(b.record_count)
    if not sizes:
        return {"batches": 0}
    return {"batches": len(sizes), "records_per_batch_median": statistics.median(counts),
            "bytes_per_batch_median": statistics.median(sizes), "bytes_per_batch_max": max(sizes),
            "records": sum(counts)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--typed", type=int, default=500_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--typed-partitions", type=int, default=2,
                    help="partitions of the typed topic (issue 52's hard shape: 4)")
    ap.add_argument("--batch-size", type=int, default=1_000_000,
                    help="the typed topic's producer batch.size in bytes (librdkafka's, before "
                         "compression; issue 52's hard shape: 65536)")
    ap.add_argument("--linger-ms", type=int, default=50, help="the typed topic's producer linger.ms")
    ap.add_argument("--typed-codec", default="zstd", help="the typed topic's compression.type")
    ap.add_argument("--floor", action="store_true",
                    help="also run 'floor typed': a Python data source handing Spark the typed read's "
                         "rows as ready Arrow batches (bench_spark_typed.py's floor, decoded once "
                         "beforehand): the most any Python data source can reach")
    ap.add_argument("--pruned", action="store_true",
                    help="also run 'kafkarec typed pruned': the typed read given the asked columns by "
                         "the user's .schema(offset, value) (a Python data source gets no column "
                         "pruning from Spark; .select() leaves every column to be built and handed "
                         "over), and with --floor its floor")
    ap.add_argument("--only", default="", help="comma-separated mechanisms to run (default all)")
    args = ap.parse_args(argv)

    import warnings
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from support import jvm
    from bench_spark import _tree_cpu
    from support.brokers.kafka_broker import KafkaBroker
    import pyspark
    jars = jvm.spark_jars(os.path.join(os.path.dirname(pyspark.__file__), "jars"))

    with tempfile.TemporaryDirectory(prefix="kafkarec-bench-kafka-") as tmp, \
            KafkaBroker(os.path.join(tmp, "broker")) as broker:
        t0 = time.time()
        fill(broker, args.records, args.typed, typed_partitions=args.typed_partitions,
             batch_size=args.batch_size, linger_ms=args.linger_ms, typed_codec=args.typed_codec)
        time.sleep(2)          # the broker's own flushes settle before timing
        records = args.records // len(CODECS) * len(CODECS)
        print(f"broker {broker.bootstrap}, log dir {broker.log_dir}: {records} raw + {args.typed} typed "
              f"records ({time.time() - t0:.1f} s to produce)", flush=True)
        landed = landed_batches(broker.log_dir, TYPED_TOPIC)
        if landed["batches"]:
            print(f"typed topic: {args.typed_partitions} partitions, {args.typed_codec}, producer batch.size "
                  f"{args.batch_size}, linger.ms {args.linger_ms}: {landed['batches']} batches landed, "
                  f"median {landed['records_per_batch_median']:.0f} records and "
                  f"{landed['bytes_per_batch_median'] / 1024:.1f} KiB a batch (largest "
                  f"{landed['bytes_per_batch_max'] / 1024:.1f} KiB, as stored)", flush=True)

        import spark_udfs
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro
        spark = spark_udfs.session_builder("kafkarec-bench-kafka-source", conf={
            "spark.sql.session.timeZone": "UTC", "spark.jars": ",".join(jars)}).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        reg = spark_udfs.register(spark)
        print(f"Spark {spark.version}, master {spark.sparkContext.master}, kafkarec {reg.fingerprint}, "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        raw_topics = ",".join(f"bench-{c}" for c in CODECS)

        def kafka(topics):
            return (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
                    .option("subscribe", topics).option("includeHeaders", "true").load())

        def kafkarec(topics):
            return (spark.read.format("kafkarec").option("subscribe", topics).option("includeHeaders", "true")
                    .load(broker.log_dir))

        typed_options = {"path": broker.log_dir, "subscribe": TYPED_TOPIC, "valueFormat": "registry",
                         "registry": broker.log_dir}
        columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
        mechanisms = {
            "kafka": (lambda: kafka(raw_topics).select(*columns), records),
            "kafkarec": (lambda: kafkarec(raw_topics).select(*columns), records),
            "kafka+from_avro": (lambda: kafka(TYPED_TOPIC).select(
                "offset", from_avro(F.expr("substring(value, 6, length(value) - 5)"), json.dumps(SCHEMA)).alias("value")),
                args.typed),
            "kafkarec typed": (lambda: spark.read.format("kafkarec").options(**typed_options)
                               .load().select("offset", "value"), args.typed),
        }
        if args.floor:
            from bench_spark_typed import build_typed_floor, typed_floor_source
            floor_dir = os.path.join(tmp, "typed-floor")
            floor_schema = build_typed_floor(broker.log_dir, floor_dir, typed_options)
            spark.dataSource.register(typed_floor_source())
            mechanisms["floor typed"] = (lambda: spark.read.format("kafkarec_typed_floor")
                                         .option("arrow", floor_dir).option("schema", floor_schema)
                                         .load().select("offset", "value"), args.typed)
        if args.pruned:
            from pyspark.sql import types as T
            whole = spark.read.format("kafkarec").options(**typed_options).load().schema
            pruned = T.StructType([whole["offset"], whole["value"]])
            mechanisms["kafkarec typed pruned"] = (lambda: spark.read.format("kafkarec").options(**typed_options)
                                                   .schema(pruned).load(), args.typed)
            if args.floor:
                pruned_dir = os.path.join(tmp, "typed-floor-pruned")
                pruned_schema = build_typed_floor(broker.log_dir, pruned_dir, typed_options, pruned)
                mechanisms["floor typed pruned"] = (lambda: spark.read.format("kafkarec_typed_floor")
                                                    .option("arrow", pruned_dir).option("schema", pruned_schema)
                                                    .load(), args.typed)
        only = [m.strip() for m in args.only.split(",") if m.strip()]
        if only:
            mechanisms = {n: m for n, m in mechanisms.items() if n in only}
        for name, (make, n) in mechanisms.items():
            got = make().count()
            assert got == n, f"{name}: {got} rows, expected {n}"
        broker_pid = broker.proc.pid
        walls = {n: [] for n in mechanisms}
        cpus = {n: [] for n in mechanisms}
        for i in range(args.repeats + 1):
            for name, (make, n) in mechanisms.items():
                df = make()
                # the broker is this process's child: its CPU is counted apart, not as Spark's JVM
                c0, b0, t0 = _tree_cpu(os.getpid(), (broker_pid,)), _proc_cpu(broker_pid), time.perf_counter()
                df.write.format("noop").mode("overwrite").save()
                wall, c1, b1 = (time.perf_counter() - t0, _tree_cpu(os.getpid(), (broker_pid,)),
                                _proc_cpu(broker_pid))
                if i:
                    walls[name].append(wall)
                    cpus[name].append({"jvm": c1["jvm"] - c0["jvm"], "python": c1["python"] - c0["python"],
                                       "broker": b1 - b0})
        results = {}
        for name, (make, n) in mechanisms.items():
            med = statistics.median(walls[name])
            cpu = {k: statistics.median(c[k] for c in cpus[name]) for k in ("jvm", "python", "broker")}
            total = sum(cpu.values())
            results[name] = {"rows": n, "median_s": med, "rows_per_s": n / med, "cpu_s": total, **{
                f"cpu_{k}_s": v for k, v in cpu.items()}, "rows_per_cpu_s": n / total, "runs_s": walls[name]}
            print(f"  {name:<16} median {med:7.3f} s  {n / med / 1e6:6.3f} M rows/s  cpu {total:5.2f} s "
                  f"(spark jvm {cpu['jvm']:4.2f}, python {cpu['python']:4.2f}, broker {cpu['broker']:4.2f})  "
                  f"{n / total / 1e6:6.3f} M rows/CPU-s  runs {', '.join(f'{w:.2f}' for w in walls[name])}",
                  flush=True)
        ratios = {}

        def ratio(name, mine, theirs):
            if mine in results and theirs in results:
                r = results[mine]["rows_per_s"] / results[theirs]["rows_per_s"]
                c = results[mine]["rows_per_cpu_s"] / results[theirs]["rows_per_cpu_s"]
                ratios[name] = {"rows_per_s": r, "rows_per_cpu_s": c}
                return r, c
            return None

        raw = ratio("raw", "kafkarec", "kafka")
        typed = ratio("typed", "kafkarec typed", "kafka+from_avro")
        floor = ratio("floor", "floor typed", "kafka+from_avro")
        reach = ratio("typed_of_floor", "kafkarec typed", "floor typed")
        pruned_r = ratio("typed_pruned", "kafkarec typed pruned", "kafka+from_avro")
        pruned_floor = ratio("floor_pruned", "floor typed pruned", "kafka+from_avro")
        if raw:
            print(f"raw:   kafkarec {raw[0]:.2f}x the Kafka source's rows/s ({raw[1]:.2f}x per CPU-second)")
        if typed:
            print(f"typed: kafkarec {typed[0]:.2f}x Kafka source + from_avro ({typed[1]:.2f}x per CPU-second); "
                  f"issue 52's target >= 5x and >= 2x per CPU-second: "
                  f"{'met' if typed[0] >= 5 and typed[1] >= 2 else 'not met'}")
        if floor:
            print(f"floor: a Python data source handing over the typed rows ready-made reaches {floor[0]:.2f}x "
                  f"Kafka source + from_avro ({floor[1]:.2f}x per CPU-second): the most any Python data "
                  f"source can reach on this shape, every column of the read handed over")
        if reach:
            print(f"kafkarec typed reaches {reach[0]:.1%} of the floor's rows/s ({reach[1]:.1%} of its rows "
                  f"per CPU-second)")
        if pruned_r:
            print(f"typed, .schema(offset, value): kafkarec {pruned_r[0]:.2f}x Kafka source + from_avro "
                  f"({pruned_r[1]:.2f}x per CPU-second)")
        if pruned_floor:
            print(f"floor, .schema(offset, value): {pruned_floor[0]:.2f}x Kafka source + from_avro "
                  f"({pruned_floor[1]:.2f}x per CPU-second)")
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; typed topic "
              f"{args.typed_partitions} partitions, batch.size {args.batch_size}")
        spark.stop()
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as fh:
                json.dump({"results": results, "ratios": ratios, "landed_typed_batches": landed,
                           "raw_ratio": raw[0] if raw else None, "typed_ratio": typed[0] if typed else None},
                          fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
