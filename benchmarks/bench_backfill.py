"""kafkarec's backfill into Iceberg against Apache Iceberg's Kafka Connect sink consuming the same
history, side by side in one run (issue 41).

    .venv/bin/python benchmarks/bench_backfill.py                          # 2M records, 3 partitions
    .venv/bin/python benchmarks/bench_backfill.py --records 300000         # quick
    .venv/bin/python benchmarks/bench_backfill.py --json out/bench_backfill.json

The script starts its own components from the test suite's code (tests/support, tests/broker): a
KRaft broker (jvm/kafka), a PostgreSQL holding Iceberg's JDBC catalog (warehouse in a temp folder),
and a Kafka Connect worker with the sink (jvm/iceberg-connect).  One topic, ``--partitions``
partitions, ``--records`` records of ``--value-bytes``-byte values and 16-byte keys, written
through librdkafka.  Then, one after the other:

* ``kafkarec``  :func:`kafkarec.lakehouse.backfill` of [log start, H) from the broker's log dir
  into a new table through pyiceberg, layout ``iceberg-kafka-connect``; CPU-seconds of this process.
* ``sink``      the sink (tasks = partitions, commit interval 1 s) handed the same history
  (:func:`kafkarec.lakehouse.connect.hand_off` to the log start) into another table it creates;
  timed from the resume until its commits hold every record; CPU-seconds of the worker's JVM,
  and of the broker's (its fetches) beside.

The last line gives the ratio of rows/s (the target: 3x).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

TOPIC = "bench-lake"
LAYOUT = "iceberg-kafka-connect"


def _proc_cpu(pid: int) -> float:
    """User + system CPU-seconds of ``pid`` (and its waited-for children) from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(f) for f in fields[11:15]) / ticks


def _self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def produce_topic(bootstrap: str, records: int, partitions: int, value_bytes: int) -> None:
    from support.brokers import produce
    produce.create_topics(bootstrap, [
        produce.TopicInfo(TOPIC, partitions, {"segment.bytes": str(64 << 20)}, "confluent-kafka", "lz4"),
        produce.TopicInfo(f"control-{TOPIC}", 1, {}, "confluent-kafka", "none")])
    prod = produce._cf_producer(bootstrap, **{"compression.type": "lz4", "linger.ms": 50,
                                              "batch.size": 1 << 20, "enable.idempotence": True})
    payload = os.urandom(value_bytes // 2).hex().encode()[:value_bytes]
    for i in range(records):
        while True:
            try:
                prod.produce(TOPIC, value=payload, key=b"%016d" % i, partition=i % partitions)
                break
            except BufferError:
                prod.poll(0.05)
        if i % 10000 == 0:
            prod.poll(0)
    produce._flush(prod, timeout=300)


def run_kafkarec(log_dir: str, target) -> dict:
    from kafkarec.lakehouse import backfill, hand_off_points
    points = hand_off_points(log_dir, topics=[TOPIC])
    cpu0, t0 = _self_cpu(), time.perf_counter()
    summary = backfill(log_dir, target, layout=LAYOUT, points=points)
    wall, cpu = time.perf_counter() - t0, _self_cpu() - cpu0
    rows = sum(s.rows for s in summary.values())
    return {"rows": rows, "seconds": wall, "cpu_seconds": cpu, "rows_per_s": rows / wall, "points": points}


def run_sink(worker, broker, catalog, points, records: int, partitions: int, timeout: float) -> dict:
    from kafkarec.lakehouse import HandOff
    from kafkarec.lakehouse.connect import hand_off
    from support.servers.connect_worker import iceberg_sink_config
    table = "bench.sink"
    config = iceberg_sink_config(catalog, [TOPIC], table, tasks=partitions, control_topic=f"control-{TOPIC}",
                                 auto_create=True)
    # the sink's consumer group set to the log start: it reads the same [start, H) as the backfill
    start = {key: HandOff(p.start, p.start) for key, p in points.items()}
    ice = catalog.load()
    worker_cpu0, broker_cpu0 = _proc_cpu(worker.proc.pid), _proc_cpu(broker.proc.pid)
    t0 = time.perf_counter()
    hand_off(worker.url, "bench-sink", start, config=config, timeout=120)
    deadline = time.monotonic() + timeout
    rows = 0
    while rows < records:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the sink committed {rows} of {records} rows within {timeout} s:\n"
                               + worker.log_tail())
        time.sleep(0.2)
        try:
            snap = ice.load_table(table).current_snapshot()
        except Exception:           # not created yet
            continue
        rows = int(snap.summary.additional_properties.get("total-records", 0)) if snap else 0
    wall = time.perf_counter() - t0
    worker_cpu, broker_cpu = _proc_cpu(worker.proc.pid) - worker_cpu0, _proc_cpu(broker.proc.pid) - broker_cpu0
    return {"rows": rows, "seconds": wall, "cpu_seconds": worker_cpu, "broker_cpu_seconds": broker_cpu,
            "rows_per_s": rows / wall}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--sink-timeout", type=float, default=900)
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args(argv)

    from support.servers.postgres_server import USER, PostgresServer
    from support.brokers.kafka_broker import KafkaBroker
    from kafkarec.lakehouse import IcebergTarget
    from support.servers.connect_worker import CATALOG_NAME, ConnectWorker, IcebergCatalog

    base = tempfile.mkdtemp(prefix="kafkarec-bench-backfill-")
    broker = pg = worker = None
    try:
        broker = KafkaBroker(os.path.join(base, "broker")).start()
        pg = PostgresServer().start()
        pg.sql("CREATE DATABASE iceberg;")
        catalog = IcebergCatalog(pg.port, USER, os.path.join(base, "warehouse"))
        os.makedirs(os.path.join(base, "warehouse"))
        t0 = time.perf_counter()
        produce_topic(broker.bootstrap, args.records, args.partitions, args.value_bytes)
        print(f"produced {args.records} records in {time.perf_counter() - t0:.1f} s", flush=True)
        worker = ConnectWorker(broker.bootstrap, base_dir=os.path.join(base, "connect"))
        os.makedirs(worker.base_dir)
        worker.start()
        target = IcebergTarget(catalog.pyiceberg_properties(), "bench.kafkarec", CATALOG_NAME)
        ours = run_kafkarec(broker.log_dir, target)
        points = ours.pop("points")
        sink = run_sink(worker, broker, catalog, points, ours["rows"], args.partitions, args.sink_timeout)
    finally:
        for component in (worker, broker):
            if component is not None:
                component.close()
        if pg is not None:
            pg.stop()
        shutil.rmtree(base, ignore_errors=True)

    print(f"{'mechanism':<10} {'rows':>10} {'seconds':>8} {'rows/s':>12} {'CPU-s':>8} {'rows/CPU-s':>12}")
    for name, r in (("kafkarec", ours), ("sink", sink)):
        print(f"{name:<10} {r['rows']:>10} {r['seconds']:>8.2f} {r['rows_per_s'] / 1e6:>10.3f} M "
              f"{r['cpu_seconds']:>8.2f} {r['rows'] / r['cpu_seconds'] / 1e6:>10.3f} M")
    print(f"(the broker served the sink's fetches with {sink['broker_cpu_seconds']:.2f} CPU-s)")
    ratio = ours["rows_per_s"] / sink["rows_per_s"]
    print(f"kafkarec / sink: {ratio:.2f}x rows/s, "
          f"{(ours['rows'] / ours['cpu_seconds']) / (sink['rows'] / sink['cpu_seconds']):.2f}x rows per CPU-s "
          f"(target: 3x rows/s)")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"records": args.records, "partitions": args.partitions, "kafkarec": ours, "sink": sink,
                       "ratio": ratio}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
