"""Ray's and Daft's Kafka readers against kafkarec's Ray and Daft readers, one run (issue 42).

    .venv/bin/python benchmarks/bench_engines_kafka.py                    # 2M records
    .venv/bin/python benchmarks/bench_engines_kafka.py --records 200000   # quick
    .venv/bin/python benchmarks/bench_engines_kafka.py --json out/bench_engines_kafka.json

A real KRaft broker (tests/support/brokers/kafka_broker.py, the Kafka of jvm/kafka/pom.xml) is started in a
temp folder and the topic ``bench`` (2 partitions, lz4) is filled once through librdkafka
(confluent-kafka): ``--records`` records, 16-byte keys, 100-byte values, one header.  Then, in one
local Ray (``num_cpus=2``) and Daft's local runner, the same records are read four ways, each once:

* ``ray.data.read_kafka``       from the live broker (Ray's reader: confluent-kafka, one task per
  partition, blocks made with ``pa.Table.from_pylist``), materialized in Ray's object store;
* ``kafkarec ray``              :func:`kafkarec.engines.ray.read_log` on the broker's log dir, every
  column, materialized the same way;
* ``daft.read_kafka``           from the live broker (its six columns), collected;
* ``kafkarec daft``             :func:`kafkarec.engines.daft.read_log` on the log dir, the same six
  columns, collected.

Rows/s is the records over the wall time of that one read; the last lines give kafkarec's ratio to
each engine's Kafka reader (the target: 5x).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

TOPIC = "bench"
PARTITIONS = 2
DAFT_COLUMNS = ["topic", "partition", "offset", "timestamp", "key", "value"]


def fill(bootstrap: str, records: int) -> None:
    """The bench topic, through the broker with librdkafka."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        f.result(60)
    value = (b"kafkarec benchmark value " * 5)[:100]
    # record timestamps of the last hour: older ones fall to the default 7-day retention at once
    base_ts = int(time.time() * 1000) - 3_600_000
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4", "linger.ms": 50,
                  "batch.size": 1_000_000, "queue.buffering.max.messages": 2_000_000, "acks": "all"})
    for i in range(records):
        while True:
            try:
                p.produce(TOPIC, value=value, key=b"key-%012d" % i, headers=[("h", b"v")],
                          partition=i % PARTITIONS, timestamp=base_ts + i // 1000)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0


def timed(name: str, run, records: int, results: dict) -> None:
    t0 = time.perf_counter()
    rows = run()
    wall = time.perf_counter() - t0
    assert rows == records, f"{name}: {rows} rows, expected {records}"
    results[name] = {"rows": rows, "wall_s": wall, "rows_per_s": rows / wall}
    print(f"  {name:<22} {wall:8.2f} s  {rows / wall / 1e6:7.3f} M rows/s", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)

    from support.brokers.kafka_broker import KafkaBroker
    # a local Ray of this process only; neither engine reports usage over the network while timed
    for name, value in (("RAY_AUTH_MODE", "disabled"), ("RAY_USAGE_STATS_ENABLED", "0"), ("DO_NOT_TRACK", "1")):
        os.environ.setdefault(name, value)
    with tempfile.TemporaryDirectory(prefix="kafkarec-bench-engines-") as tmp, \
            KafkaBroker(os.path.join(tmp, "broker")) as broker:
        t0 = time.time()
        fill(broker.bootstrap, args.records)
        time.sleep(2)          # the broker's own flushes settle before timing
        print(f"broker {broker.bootstrap}, log dir {broker.log_dir}: {args.records} records in {TOPIC} "
              f"({PARTITIONS} partitions, lz4; {time.time() - t0:.1f} s to produce), load average "
              f"{os.getloadavg()[0]:.2f}", flush=True)

        import daft
        import ray
        t0 = time.time()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        print(f"ray {ray.__version__} started in {time.time() - t0:.1f} s; daft {daft.__version__}", flush=True)
        from kafkarec.engines import daft as kdaft
        from kafkarec.engines import ray as kray
        try:
            results: dict = {}
            timed("ray.data.read_kafka", lambda: ray.data.read_kafka(
                TOPIC, bootstrap_servers=broker.bootstrap).materialize().count(), args.records, results)
            timed("kafkarec ray", lambda: kray.read_log(broker.log_dir, topics=[TOPIC]).materialize().count(),
                  args.records, results)
            timed("daft.read_kafka", lambda: len(daft.read_kafka(broker.bootstrap, TOPIC).collect()),
                  args.records, results)
            timed("kafkarec daft", lambda: len(kdaft.read_log(broker.log_dir, topics=[TOPIC],
                                                              columns=DAFT_COLUMNS).collect()),
                  args.records, results)
        finally:
            ray.shutdown()
    ratios = {"ray": results["kafkarec ray"]["rows_per_s"] / results["ray.data.read_kafka"]["rows_per_s"],
              "daft": results["kafkarec daft"]["rows_per_s"] / results["daft.read_kafka"]["rows_per_s"]}
    for engine, ratio in ratios.items():
        print(f"{engine}: kafkarec {ratio:.1f}x the rows/s of {engine}'s Kafka reader (target 5x)")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"records": args.records, "results": results, "ratios": ratios}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
