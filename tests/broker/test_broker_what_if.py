"""The compression what-if against what Kafka's Java producer (kafka-clients 4.4.0: ``batch.size``
16384, its default; ``linger.ms`` long, so that batches leave full whatever the machine's load)
really writes into the session's broker: the same records produced once per codec and level (tests/java/WhatIfProducer.java, one JVM), each into a topic of
its own; the what-if of the uncompressed topic predicts every codec's topic size within 5%."""
import base64
import json
import os
import random
import subprocess
import time

import pytest

from kafkarec.census import parse_codecs, what_if
from kafkarec.scan import Bounds
from support.brokers import produce

pytestmark = [pytest.mark.broker, pytest.mark.slow]

SPEC = "none,zstd:3,zstd:9,lz4,snappy,gzip:6"
PARTITIONS = 3
RECORDS = 12_000
WORDS = ("order shipped pending refund card wallet express standard priority gift "
         "north south east west warehouse courier").split()


def _topic(label: str) -> str:
    return "whatif-" + label.replace(":", "-")


def _records():
    """Order-like records: JSON values of varied words and numbers, keys of 500 users, a header
    on every third record; timestamps from now (retention keeps them)."""
    rng = random.Random(50)
    now = int(time.time() * 1000)
    out = []
    for i in range(RECORDS):
        user = "user-%d" % rng.randrange(500)
        value = json.dumps({"id": i, "user": user, "amount": round(rng.uniform(1, 500), 2),
                            "note": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 12)))})
        headers = [["trace", base64.b64encode(b"%016x" % rng.getrandbits(64)).decode()]] if i % 3 == 0 else []
        out.append([i % PARTITIONS, now + i, base64.b64encode(user.encode()).decode(),
                    base64.b64encode(value.encode()).decode(), headers])
    return out


def _topic_bytes(log_dir: str, topic: str) -> int:
    total = 0
    for p in range(PARTITIONS):
        folder = os.path.join(log_dir, f"{topic}-{p}")
        total += sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder) if n.endswith(".log"))
    return total


@pytest.fixture(scope="module")
def produced(kafka_broker, tmp_path_factory):
    from confluent_kafka.admin import NewTopic
    from support.java import compiled
    from support.jvm import classpath
    from support.brokers.kafka_broker import QUIET_LOG4J_FLAG
    from support.paths import ROOT
    codecs = parse_codecs(SPEC)
    topics = [_topic(c.label) for c in codecs]
    admin = produce._admin(kafka_broker.bootstrap)
    for f in admin.create_topics([NewTopic(t, PARTITIONS, 1, config={"retention.ms": "-1"})
                                  for t in topics]).values():
        f.result(30)
    work = tmp_path_factory.mktemp("what-if-producer")
    spec = work / "spec.json"
    spec.write_text(json.dumps({"bootstrap": kafka_broker.bootstrap, "records": _records(),
                                "runs": [{"topic": _topic(c.label), "codec": c.name, "level": c.level}
                                         for c in codecs]}))
    program = compiled(os.path.join(ROOT, "tests", "java", "WhatIfProducer.java"), classpath("jvm/kafka"))
    proc = subprocess.run(program.command(str(spec), jvm_flags=["-XX:+UseSerialGC", "-Xmx512m", QUIET_LOG4J_FLAG]),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("done"), proc.stderr[-4000:]
    produce.wait_settled(kafka_broker.log_dir, topics)
    return kafka_broker.log_dir, codecs


def test_what_if_predicts_a_real_producers_bytes_within_5_percent(produced):
    log_dir, codecs = produced
    doc = what_if(log_dir, codecs, bounds=Bounds.of(topics=[_topic("none")]))
    assert not doc["errors"]
    predicted = {c["codec"]: c["bytes"] for c in doc["codecs"]}
    written = {c.label: _topic_bytes(log_dir, _topic(c.label)) for c in codecs}
    print({label: (predicted[label], written[label], round(predicted[label] / written[label] - 1, 4))
           for label in written})
    for label, actual in written.items():
        assert abs(predicted[label] - actual) <= 0.05 * actual, (label, predicted[label], actual)
