"""kafkarec against Spark's own Kafka source, side by side in one run (issue 27, item 6).

    .venv/bin/python benchmarks/bench_kafka_source.py                      # 2M raw + 500k typed records
    .venv/bin/python benchmarks/bench_kafka_source.py --records 400000 --typed 100000 --repeats 2   # quick
    .venv/bin/python benchmarks/bench_kafka_source.py --json out/bench_kafka_source.json

A real KRaft broker (tests/support/kafka_broker.py, the Kafka of jvm/kafka/pom.xml) is started in a
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

Each is run once to warm up, then ``--repeats`` times in rounds (every mechanism in turn);
the median wall time gives rows/s.  CPU-seconds are counted from /proc for this process tree
(the driver JVM and Spark's Python workers) and for the broker's JVM, which serves the Kafka
source's fetches.  The last lines give kafkarec's ratio to the Kafka source, raw and typed
(the target: 2x).
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


def fill(broker, records: int, typed: int) -> None:
    """The bench topics, through the broker with librdkafka."""
    import fastavro
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from support.schemas_log import confluent_key, schema_value
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topics = [NewTopic(f"bench-{c}", 1, 1) for c in CODECS] + [NewTopic(TYPED_TOPIC, 2, 1),
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
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "zstd", "linger.ms": 50,
                  "batch.size": 1_000_000, "queue.buffering.max.messages": 2_000_000})
    import io
    prefix = b"\x00" + struct.pack(">I", SCHEMA_ID)
    for i in range(typed):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {
            "id": i, "amount": (i % 100000).to_bytes(4, "big", signed=True), "status": ("NEW", "PAID", "SHIPPED")[i % 3],
            "ts": 1_700_000_000_000 + i, "note": None if i % 4 else f"note {i}", "tags": ["a", "b"][: i % 3]})
        while True:
            try:
                p.produce(TYPED_TOPIC, value=prefix + buf.getvalue(), key=b"k%d" % i, partition=i % 2)
                break
            except BufferError:
                p.poll(0.05)
    p.produce("_schemas", key=confluent_key("SCHEMA", f"{TYPED_TOPIC}-value", 1),
              value=schema_value(f"{TYPED_TOPIC}-value", 1, SCHEMA_ID, json.dumps(SCHEMA)))
    assert p.flush(300) == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--typed", type=int, default=500_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)

    import warnings
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from support import jvm
    from bench_spark import _tree_cpu
    from support.kafka_broker import KafkaBroker
    import pyspark
    jars = jvm.spark_jars(os.path.join(os.path.dirname(pyspark.__file__), "jars"))

    with tempfile.TemporaryDirectory(prefix="kafkarec-bench-kafka-") as tmp, \
            KafkaBroker(os.path.join(tmp, "broker")) as broker:
        t0 = time.time()
        fill(broker, args.records, args.typed)
        time.sleep(2)          # the broker's own flushes settle before timing
        records = args.records // len(CODECS) * len(CODECS)
        print(f"broker {broker.bootstrap}, log dir {broker.log_dir}: {records} raw + {args.typed} typed "
              f"records ({time.time() - t0:.1f} s to produce)", flush=True)

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

        columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
        mechanisms = {
            "kafka": (lambda: kafka(raw_topics).select(*columns), records),
            "kafkarec": (lambda: kafkarec(raw_topics).select(*columns), records),
            "kafka+from_avro": (lambda: kafka(TYPED_TOPIC).select(
                "offset", from_avro(F.expr("substring(value, 6, length(value) - 5)"), json.dumps(SCHEMA)).alias("value")),
                args.typed),
            "kafkarec typed": (lambda: spark.read.format("kafkarec").option("subscribe", TYPED_TOPIC)
                               .option("valueFormat", "registry").option("registry", broker.log_dir)
                               .load(broker.log_dir).select("offset", "value"), args.typed),
        }
        for name, (make, n) in mechanisms.items():
            got = make().count()
            assert got == n, f"{name}: {got} rows, expected {n}"
        broker_pid = broker.proc.pid
        walls = {n: [] for n in mechanisms}
        cpus = {n: [] for n in mechanisms}
        for i in range(args.repeats + 1):
            for name, (make, n) in mechanisms.items():
                df = make()
                c0, b0, t0 = _tree_cpu(os.getpid()), _proc_cpu(broker_pid), time.perf_counter()
                df.write.format("noop").mode("overwrite").save()
                wall, c1, b1 = time.perf_counter() - t0, _tree_cpu(os.getpid()), _proc_cpu(broker_pid)
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
        raw = results["kafkarec"]["rows_per_s"] / results["kafka"]["rows_per_s"]
        typed = results["kafkarec typed"]["rows_per_s"] / results["kafka+from_avro"]["rows_per_s"]
        raw_cpu = results["kafkarec"]["rows_per_cpu_s"] / results["kafka"]["rows_per_cpu_s"]
        typed_cpu = results["kafkarec typed"]["rows_per_cpu_s"] / results["kafka+from_avro"]["rows_per_cpu_s"]
        print(f"raw:   kafkarec {raw:.2f}x the Kafka source's rows/s ({raw_cpu:.2f}x per CPU-second)")
        print(f"typed: kafkarec {typed:.2f}x Kafka source + from_avro ({typed_cpu:.2f}x per CPU-second)")
        print(f"target 2x: raw {'met' if raw >= 2 else 'not met'}, typed {'met' if typed >= 2 else 'not met'}; "
              f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        spark.stop()
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as fh:
                json.dump({"results": results, "raw_ratio": raw, "typed_ratio": typed}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
