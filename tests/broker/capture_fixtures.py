"""Write tests/data/broker/: small log dirs a real Kafka broker wrote, kept as regression
fixtures for what the broker tests found (tests/broker/test_broker_fixtures.py reads them
without a JVM).

    .venv/bin/python tests/broker/capture_fixtures.py [DEST]      (default tests/data/broker)

A broker (kafka_broker.KafkaBroker) gets one topic ``txn`` with small segments and small
preallocated indexes (``segment.index.bytes`` 4096), rolled by ``segment.ms``; a
transactional producer writes a transaction that spans segments and aborts, then one that
commits.  Copied: ``live/txn-0`` while the broker runs (the active segment's indexes
still preallocated, all zeros), ``stopped/txn-0`` after a clean shutdown, and the
``__transaction_state`` segment with the lines Kafka's kafka-dump-log
(``--transaction-log-decoder --deep-iteration``, same jars) printed for it.
"""
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# run by hand (python tests/broker/capture_fixtures.py): tests/ on the import path for the suite's helpers
sys.path.insert(0, os.path.dirname(HERE))

from support import jvm  # noqa: E402
from support.brokers import produce  # noqa: E402
from support.brokers.kafka_broker import DUMP_LOG_MAIN, TOOL_JVM_FLAGS, KafkaBroker  # noqa: E402

TOPIC = "txn"


def _copy_partition(src: str, dest: str) -> None:
    os.makedirs(dest, exist_ok=True)
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if os.path.isfile(path):
            shutil.copyfile(path, os.path.join(dest, name))


def main(dest: str) -> None:
    if os.path.exists(dest):
        shutil.rmtree(dest)
    with KafkaBroker() as broker:
        produce.create_topics(broker.bootstrap, [produce.TopicInfo(
            TOPIC, 1, {"internal.segment.bytes": "2048", "segment.ms": "100", "segment.index.bytes": "4096"},
            "confluent-kafka")])
        p = produce._cf_producer(broker.bootstrap, **{"transactional.id": "fixture-txn", "batch.size": 1024})
        p.init_transactions(30)
        i = 0
        for commit in (False, True):
            p.begin_transaction()
            for _ in range(3):          # three flushed rounds, segment.ms apart: the transaction spans segments
                for _ in range(4):
                    p.produce(TOPIC, key=produce.key_for(i), value=f"fixture value {i}".encode(),
                              headers=[("n", str(i).encode())], timestamp=produce.BASE_TS + i)
                    i += 1
                produce._flush(p)
                time.sleep(0.25)
            (p.commit_transaction if commit else p.abort_transaction)(30)
        produce.wait_settled(broker.log_dir, [TOPIC])
        _copy_partition(broker.partition_dir(TOPIC), os.path.join(dest, "live", f"{TOPIC}-0"))
        broker.stop()
        _copy_partition(broker.partition_dir(TOPIC), os.path.join(dest, "stopped", f"{TOPIC}-0"))
        for d in sorted(os.listdir(broker.log_dir)):
            if d.startswith("__transaction_state-"):
                logs = [n for n in sorted(os.listdir(os.path.join(broker.log_dir, d)))
                        if n.endswith(".log") and os.path.getsize(os.path.join(broker.log_dir, d, n))]
                if logs:
                    _copy_partition(os.path.join(broker.log_dir, d), os.path.join(dest, d))
                    rel = os.path.join(d, logs[0])
                    # kafka-dump-log prints the path as given: run it in its own JVM from DEST with
                    # a relative one (the tools' JVM resolves paths from where it started)
                    proc = jvm.java(broker.classpath, DUMP_LOG_MAIN, "--files", rel, "--transaction-log-decoder",
                                    "--deep-iteration", jvm_flags=TOOL_JVM_FLAGS, cwd=dest)
                    if proc.returncode != 0:
                        raise RuntimeError(proc.stderr)
                    with open(os.path.join(dest, rel + ".dump.txt"), "w") as fh:
                        fh.write(proc.stdout)
    print(f"wrote {dest}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(HERE), "data", "broker"))
