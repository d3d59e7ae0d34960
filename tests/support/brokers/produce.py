"""Fill a live :class:`~kafka_broker.KafkaBroker` with the topics the broker tests read.

Three producers write through the broker: confluent-kafka (librdkafka), kafka-python and
Kafka's own Java producer (``tests/java/BrokerProducer.java``, compiled once against the
resolved kafka-clients: :func:`support.java.compiled`).  :func:`produce_all` creates
every topic, writes it, waits for what the broker does on its own (the log cleaner,
retention, tiered storage), makes consumer groups commit offsets, and returns a
:class:`BrokerData` naming what was written.

The expected rows are not what the producers meant to write but what Kafka's consumer
reads back (:func:`consume`, librdkafka with ``isolation.level`` either way): the tests
compare kafkarec's reading of the log dir with that.  The records each producer saw
acknowledged are kept too (``BrokerData.acked``) to check that none is lost.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from support.paths import TESTS

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: Record timestamps start an hour ago: older ones would be deleted by the default
#: time retention (7 days) as soon as their segment rolls.
BASE_TS = (int(time.time()) - 3600) * 1000
#: Small segments (Kafka 4 refuses ``segment.bytes`` under 1 MiB; ``internal.segment.bytes``
#: is its own test-only topic setting that goes lower).
SMALL_SEGMENT = {"internal.segment.bytes": "16384", "segment.ms": "100"}


@dataclass
class TopicInfo:
    name: str
    partitions: int
    config: Dict[str, str]
    producer: str                 # "confluent-kafka" | "kafka-python" | "kafka-java" | "broker"
    codec: Optional[str] = None
    transactional: bool = False
    note: str = ""


@dataclass
class Acked:
    """One record a producer saw acknowledged (the broker's offset and timestamp)."""
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: List[Tuple[str, Optional[bytes]]]
    committed: bool = True        # False: written inside a transaction that was aborted


@dataclass
class BrokerData:
    """What :func:`produce_all` wrote: topics (name -> :class:`TopicInfo`), the
    acknowledged records, and the consumer groups that committed offsets; the tiered
    topic (:mod:`tiered_topic`) apart, with its acknowledged records, and the topics whose
    log start offset deleteRecords moved (:mod:`deleted_records`) apart, with theirs and the
    log start offsets."""
    bootstrap: str
    topics: Dict[str, TopicInfo] = field(default_factory=dict)
    acked: List[Acked] = field(default_factory=list)
    tiered_acked: List[Acked] = field(default_factory=list)
    log_start_topics: Dict[str, TopicInfo] = field(default_factory=dict)
    log_start_acked: List[Acked] = field(default_factory=list)
    #: (topic, partition) -> the log start offset deleteRecords set
    log_starts: Dict[Tuple[str, int], int] = field(default_factory=dict)
    groups: List[str] = field(default_factory=list)
    #: registry-avro's decoded values by offset, as the subject's latest schema reads them
    registry_values: Dict[int, Optional[dict]] = field(default_factory=dict)

    def data_topics(self) -> List[str]:
        return sorted(self.topics)


# --- helpers -------------------------------------------------------------------------

def _admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topics(bootstrap: str, topics: Sequence[TopicInfo], timeout: float = 30) -> None:
    from confluent_kafka.admin import NewTopic
    admin = _admin(bootstrap)     # kept alive until the futures are done
    futures = admin.create_topics(
        [NewTopic(t.name, t.partitions, 1, config=dict(t.config)) for t in topics],
        operation_timeout=timeout, request_timeout=timeout)
    for f in futures.values():
        f.result(timeout=timeout)


def value_for(i: int, topic: str) -> Optional[bytes]:
    if i % 17 == 9:
        return None
    if i % 5 == 0:
        return random.Random(i).randbytes(20 + i % 40)     # incompressible, the same every call
    return (f"{topic} value {i} " + "kafkarec " * (1 + i % 12)).encode()


def key_for(i: int) -> Optional[bytes]:
    # never null together with the value (kafka-python refuses a record with neither)
    return None if i % 10 == 3 and i % 17 != 9 else f"key-{i % 23}".encode()


def headers_for(i: int) -> List[Tuple[str, Optional[bytes]]]:
    if i % 4 == 0:
        return []
    out = [("seq", str(i).encode())]
    if i % 4 == 2:
        out += [("empty", b""), ("none", None), ("seq", b"again"), ("utf8-\u00e9", b"\xff\x00")]
    return out


def _cf_producer(bootstrap: str, **conf):
    from confluent_kafka import Producer
    base = {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "log_level": 0,
            "message.timeout.ms": 60000}
    base.update(conf)
    return Producer(base)


class _Reports:
    """Delivery reports of a confluent-kafka producer, as :class:`Acked` records."""

    def __init__(self, committed: bool = True):
        self.acked: List[Acked] = []
        self.errors: List[str] = []
        self.committed = committed

    def callback(self, headers, committed=None):
        def cb(err, msg):
            if err is not None:
                self.errors.append(str(err))
                return
            self.acked.append(Acked(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1],
                                    msg.key(), msg.value(), list(headers),
                                    self.committed if committed is None else committed))
        return cb


def _flush(producer, timeout: float = 60) -> None:
    left = producer.flush(timeout)
    if left:
        raise RuntimeError(f"{left} message(s) not delivered within {timeout} s")


# --- the producers -------------------------------------------------------------------

def produce_confluent(bootstrap: str, topic: str, n: int, *, partitions: int = 1, rounds: int = 3,
                      pause: float = 0.15, **conf) -> List[Acked]:
    """``n`` records in ``rounds`` flushed rounds ``pause`` s apart (so ``segment.ms``
    rolls segments between them)."""
    p = _cf_producer(bootstrap, **{"batch.size": 4096, **conf})
    rep = _Reports()
    per_round = max(1, n // rounds)
    for i in range(n):
        h = headers_for(i)
        p.produce(topic, value=value_for(i, topic), key=key_for(i), headers=h or None,
                  partition=i % partitions, timestamp=BASE_TS + 1000 * i, on_delivery=rep.callback(h))
        if (i + 1) % per_round == 0:
            _flush(p)
            if pause:
                time.sleep(pause)
    _flush(p)
    if rep.errors:
        raise RuntimeError(f"{topic}: {rep.errors[:3]}")
    return rep.acked


def produce_kafka_python(bootstrap: str, topic: str, n: int, codec: str) -> List[Acked]:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                             linger_ms=5, acks="all", batch_size=4096)
    try:
        futures = []
        for i in range(n):
            # kafka-python takes no null header values
            h = [(k, v) for k, v in headers_for(i) if v is not None]
            futures.append((i, h, producer.send(topic, value=value_for(i, topic), key=key_for(i),
                                                 headers=h,
                                                 partition=0, timestamp_ms=BASE_TS + 1000 * i)))
        producer.flush(60)
        out = []
        for i, h, f in futures:
            md = f.get(timeout=60)
            out.append(Acked(topic, md.partition, md.offset, md.timestamp, key_for(i),
                             value_for(i, topic), h))
        return out
    finally:
        producer.close(timeout=30)


def produce_transactions(bootstrap: str, topic: str, partitions: int, rounds: int = 4,
                         per_partition: int = 6) -> List[Acked]:
    """Two transactional producers whose transactions overlap on the same partitions; in
    each round one commits and the other aborts (roles swapping), while an idempotent
    non-transactional producer writes between them."""
    a = _cf_producer(bootstrap, **{"transactional.id": f"{topic}-a", "compression.type": "zstd"})
    b = _cf_producer(bootstrap, **{"transactional.id": f"{topic}-b", "compression.type": "none"})
    plain = _cf_producer(bootstrap, **{"enable.idempotence": True})
    a.init_transactions(30)
    b.init_transactions(30)
    acked: List[Acked] = []
    i = 0
    for r in range(rounds):
        commit_a = r % 2 == 0
        reps = {"a": _Reports(commit_a), "b": _Reports(not commit_a), "plain": _Reports(True)}
        a.begin_transaction()
        b.begin_transaction()
        for part in range(partitions):
            for _ in range(per_partition):
                for name, prod in (("a", a), ("b", b), ("plain", plain)):
                    if name == "plain" and i % 3:
                        i += 1
                        continue
                    h = headers_for(i) + [("from", name.encode())]
                    prod.produce(topic, value=value_for(i, topic), key=key_for(i), headers=h,
                                 partition=(part + (name == "b")) % partitions,
                                 timestamp=BASE_TS + 1000 * i, on_delivery=reps[name].callback(h))
                    i += 1
            a.poll(0)
            b.poll(0)
        _flush(a)
        _flush(b)
        _flush(plain)
        for name, prod, commit in (("a", a, commit_a), ("b", b, not commit_a)):
            if commit:
                prod.commit_transaction(30)
            else:
                prod.abort_transaction(30)
        for rep in reps.values():
            if rep.errors:
                raise RuntimeError(f"{topic}: {rep.errors[:3]}")
            acked.extend(rep.acked)
    return acked


class JavaProducer:
    """Kafka's Java producer (``BrokerProducer``) writing ``PREFIX-<codec>`` and ``PREFIX-txn``
    in its own JVM, started at once so that it writes while the Python producers do (other
    topics); :meth:`acked` waits for it, :meth:`close` ends it."""

    def __init__(self, bootstrap: str, classpath: str, prefix: str, n: int, work_dir: str):
        from support.brokers.kafka_broker import PRODUCER_SOURCE, QUIET_LOG4J_FLAG, die_with_parent
        from support.java import compiled
        self._stdout = os.path.join(work_dir, "java-producer.out")
        self._stderr = os.path.join(work_dir, "java-producer.err")
        with open(self._stdout, "w") as out, open(self._stderr, "w") as err:
            self.proc = subprocess.Popen(
                compiled(PRODUCER_SOURCE, classpath).command(
                    bootstrap, prefix, str(n), str(BASE_TS),
                    jvm_flags=["-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m",
                               QUIET_LOG4J_FLAG]),
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)

    def acked(self, timeout: float = 180) -> List[Acked]:
        self.proc.wait(timeout=timeout)
        if self.proc.returncode != 0:
            with open(self._stderr, errors="replace") as fh:
                raise RuntimeError(f"BrokerProducer failed ({self.proc.returncode}):\n{fh.read()[-4000:]}")
        with open(self._stdout) as fh:
            return _java_acked(fh.read())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


#: The prefix of the topics and groups :class:`CoordinatorClients` makes.
COORDINATOR_PREFIX = "coord"


class CoordinatorClients:
    """Kafka's Java clients driving the broker's coordinators (``tests/java/CoordinatorRecords.java``,
    in its own JVM, started at once): classic, consumer-protocol and migrated groups, a share group,
    a Kafka Streams application on the streams protocol, transactions on both transaction versions,
    group and offset deletes, quotas and SCRAM users, so that the internal topics hold records of
    every kind a Kafka 4.4 broker writes; :meth:`wait` waits for it (bounded)."""

    def __init__(self, bootstrap: str, classpath: str, work_dir: str, prefix: str = COORDINATOR_PREFIX):
        from support.brokers.kafka_broker import COORDINATOR_SOURCE, QUIET_LOG4J_FLAG, die_with_parent
        from support.java import compiled
        self._stdout = os.path.join(work_dir, "coordinator-records.out")
        self._stderr = os.path.join(work_dir, "coordinator-records.err")
        state_dir = os.path.join(work_dir, "streams-state")
        with open(self._stdout, "w") as out, open(self._stderr, "w") as err:
            self.proc = subprocess.Popen(
                compiled(COORDINATOR_SOURCE, classpath).command(
                    bootstrap, prefix, state_dir,
                    jvm_flags=["-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx384m",
                               QUIET_LOG4J_FLAG]),
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)

    def wait(self, timeout: float = 300) -> None:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.close()
            raise RuntimeError(f"CoordinatorRecords did not finish within {timeout} s") from None
        with open(self._stdout) as fh:
            done = fh.read().splitlines()[-1:] == ["done"]
        if self.proc.returncode != 0 or not done:
            with open(self._stderr, errors="replace") as fh:
                raise RuntimeError(f"CoordinatorRecords failed ({self.proc.returncode}):\n{fh.read()[-4000:]}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _java_acked(stdout: str) -> List[Acked]:
    """BrokerProducer's JSON lines as :class:`Acked` records (the keys, values and headers it
    wrote for each ``i``, as its source computes them)."""
    out = []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        i = d["i"]
        key = None if i % 7 == 0 else f"jkey-{i % 13}".encode()
        value = None if i % 11 == 5 else (f"java value {i} " + "abcdefghij" * (1 + i % 9)).encode()
        headers = [("h", f"v{i}".encode()), ("nullh", None), ("h", b"dup")] if i % 3 == 0 else []
        out.append(Acked(d["topic"], d["partition"], d["offset"], d["timestamp"], key, value, headers,
                         d["committed"]))
    return out


def commit_groups(bootstrap: str, topics: Sequence[str], groups: Sequence[str]) -> None:
    """Consumer groups that read the topics and commit offsets (``__consumer_offsets``
    gets real group metadata and offset commits): a librdkafka group committing every few
    messages, and a kafka-python group committing once."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": groups[0], "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "log_level": 0, "session.timeout.ms": 10000})
    try:
        c.subscribe(list(topics))
        seen, deadline = 0, time.monotonic() + 30
        while seen < 60 and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None or msg.error():
                continue
            seen += 1
            if seen % 10 == 0:
                c.commit(message=msg, asynchronous=False)
        if not seen:
            raise RuntimeError("the consumer group read nothing")
    finally:
        c.close()
    from kafka import KafkaConsumer
    kc = KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=groups[1],
                       auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        got = kc.poll(timeout_ms=10000, max_records=50)
        if got:
            kc.commit()
    finally:
        kc.close()


# --- waiting for the broker's own work -------------------------------------------------

def _checkpoint(path: str) -> Dict[Tuple[str, int], int]:
    out: Dict[Tuple[str, int], int] = {}
    try:
        with open(path) as fh:
            lines = fh.read().split("\n")
    except OSError:
        return out
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3:
            out[(parts[0], int(parts[1]))] = int(parts[2])
    return out


def wait_cleaned(log_dir: str, topic: str, timeout: float = 60, partitions: Sequence[int] = (0,),
                 through: Optional[Dict[int, int]] = None) -> None:
    """Until the cleaner has cleaned each of ``partitions`` of ``topic`` (their entries in
    cleaner-offset-checkpoint); with ``through`` ({partition: offset}), until it has cleaned each
    partition up to that offset (the checkpoint is the first offset not cleaned yet).  A first
    cleaning of the older segments is not the last: while the tail below the active segment is
    still dirty, a later pass can remove records of the history (its keys' newer values)."""
    deadline = time.monotonic() + timeout
    want = {p: (through or {}).get(p, 1) for p in partitions}
    done: Dict[Tuple[str, int], int] = {}
    while time.monotonic() < deadline:
        done = _checkpoint(os.path.join(log_dir, "cleaner-offset-checkpoint"))
        if all(done.get((topic, p), 0) >= want[p] for p in partitions):
            return
        time.sleep(0.3)
    raise RuntimeError(f"the log cleaner did not clean {topic} partitions {list(partitions)} up to {want} within "
                       f"{timeout} s (cleaned up to {({p: done.get((topic, p), 0) for p in partitions})})")


def _first_segment(log_dir: str, topic: str) -> Optional[int]:
    d = os.path.join(log_dir, f"{topic}-0")
    bases = [int(n[:-4]) for n in os.listdir(d) if n.endswith(".log")] if os.path.isdir(d) else []
    return min(bases) if bases else None


def active_segment_base(log_dir: str, topic: str, partition: int = 0) -> int:
    """The base offset of the partition's active segment (its last ``.log`` file), which the
    cleaner never cleans: a partition cleaned up to it has nothing left for a later pass."""
    d = os.path.join(log_dir, f"{topic}-{partition}")
    return max(int(n[:-4]) for n in os.listdir(d) if n.endswith(".log"))


def wait_stable(bootstrap: str, topic: str, partitions: Sequence[int], timeout: float = 60) -> None:
    """Until each of ``partitions`` of ``topic`` has its last stable offset at its high watermark
    (ListOffsets latest, read_committed against read_uncommitted).  A producer's commit returns
    once the transaction coordinator has prepared it; the markers reach the partitions after, and
    a read_committed consumer before that stops at the transaction."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec
    admin = _admin(bootstrap)
    deadline = time.monotonic() + timeout

    def ends(isolation):
        futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in partitions},
                                     isolation_level=isolation, request_timeout=10)
        return {tp.partition: f.result().offset for tp, f in futures.items()}
    while True:
        stable, high = ends(IsolationLevel.READ_COMMITTED), ends(IsolationLevel.READ_UNCOMMITTED)
        if stable == high:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic}: transactions still open after {timeout} s (LSO {stable}, high "
                               f"watermark {high})")
        time.sleep(0.1)


def wait_retention(log_dir: str, topic: str, timeout: float = 60) -> None:
    """Until retention deleted ``topic``-0's oldest segments (its first segment's base
    offset above 0) and nothing more changes for a second."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        first = _first_segment(log_dir, topic)
        if first:
            time.sleep(1.2)
            if _first_segment(log_dir, topic) == first:
                return
        time.sleep(0.3)
    raise RuntimeError(f"retention did not delete segments of {topic} within {timeout} s")


def wait_settled(log_dir: str, topics: Sequence[str], quiet: float = 1.5, timeout: float = 30) -> None:
    """Until the partitions of ``topics`` have not changed (names, sizes) for ``quiet`` s."""
    def state():
        out = []
        for t in topics:
            d = os.path.join(log_dir, f"{t}-0")
            if os.path.isdir(d):
                for n in sorted(os.listdir(d)):
                    try:
                        out.append((t, n, os.path.getsize(os.path.join(d, n))))
                    except FileNotFoundError:   # (deleted since the listing: a change)
                        out.append((t, n, None))
        return out
    deadline = time.monotonic() + timeout
    last, since = state(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = state()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    raise RuntimeError(f"{topics} still changing after {timeout} s")


# --- Schema Registry Avro values through the broker --------------------------------------

REGISTRY_TOPIC = "registry-avro"
SCHEMAS_TOPIC = "_schemas"


def registry_schemas():
    """Three versions of one value schema (tests/support/registry/registry_world.py's two, then a map and a
    three-branch union added), and the key schema."""
    from support.registry import registry_world as world
    v3 = dict(world.ORDER_V2, fields=world.ORDER_V2["fields"] + [
        {"name": "attrs", "type": {"type": "map", "values": "double"}, "default": {}},
        {"name": "choice", "type": ["null", "long", "string"], "default": None},
    ])
    return [world.ORDER_V1, world.ORDER_V2, v3], world.KEY_SCHEMA


def registry_record(version: int, i: int) -> dict:
    from support.registry import registry_world as world
    if version == 1:
        return world.v1_record(i)
    r = world.v2_record(i)
    if version == 3:
        r.update(attrs={"a": i / 4, "b": -1.5} if i % 2 else {}, choice=[None, i, f"c{i}"][i % 3])
    return r


def registry_expected(record: dict) -> dict:
    """A record as the subject's latest schema (v3) reads it: missing fields take defaults."""
    out = dict(record)
    out.setdefault("note", None)
    out.setdefault("lines", [])
    out.setdefault("attrs", {})
    out.setdefault("choice", None)
    return out


def produce_registry(bootstrap: str, n: int = 30) -> Tuple[List[Acked], Dict[int, Optional[dict]]]:
    """``registry-avro``: keys and values written by confluent-kafka's ``AvroSerializer``
    (three evolving versions of the value schema, decimals, timestamps, enums, unions,
    arrays, maps, records; ids as the 5-byte prefix) through the broker, and ``_schemas``:
    what Confluent's registry would have written for them, also through the broker, so the
    broker's log dir carries its own registry (``kafkarec.registry.load(log_dir)``).
    Returns the acknowledged records and the expected decoded value by offset."""
    import base64
    import uuid

    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from support.registry.schemas_log import confluent_key, schema_value

    schemas, key_schema = registry_schemas()
    client = MockSchemaRegistryClient({"url": "mock://broker"})
    sers = [AvroSerializer(client, json.dumps(sch), conf={"auto.register.schemas": True}) for sch in schemas]
    kser = AvroSerializer(client, key_schema, conf={"auto.register.schemas": True})
    p = _cf_producer(bootstrap, **{"compression.type": "zstd"})
    rep = _Reports()
    records = []
    for i in range(n):
        version = 1 + i * 3 // n
        rec = registry_record(version, i)
        value = sers[version - 1](rec, SerializationContext(REGISTRY_TOPIC, MessageField.VALUE, []))
        key = kser(f"k{i}", SerializationContext(REGISTRY_TOPIC, MessageField.KEY, []))
        records.append(rec)
        p.produce(REGISTRY_TOPIC, key=key, value=value, timestamp=BASE_TS + i, on_delivery=rep.callback([]))
    _flush(p)
    # the registry's own topic, as Confluent's registry writes it (the mock's GUIDs kept, as
    # tests/support/registry/registry_world.py does, so ids resolve the same)
    sp = _cf_producer(bootstrap)
    srep = _Reports()
    sp.produce(SCHEMAS_TOPIC, key=confluent_key("NOOP"), value=None, on_delivery=srep.callback([]))
    for subject in sorted(client.get_subjects()):
        for v in client.get_versions(subject):
            rs = client.get_version(subject, v)
            val = json.loads(schema_value(subject, v, rs.schema_id, rs.schema.schema_str))
            val["md5"] = base64.b64encode(uuid.UUID(rs.guid).bytes).decode()
            sp.produce(SCHEMAS_TOPIC, key=confluent_key("SCHEMA", subject, v), value=json.dumps(val).encode(),
                       on_delivery=srep.callback([]))
    _flush(sp)
    if rep.errors or srep.errors:
        raise RuntimeError(f"registry topics: {(rep.errors + srep.errors)[:3]}")
    acked = sorted(rep.acked, key=lambda a: a.offset)
    expected = {a.offset: registry_expected(records[i]) for i, a in enumerate(acked)}
    return acked + srep.acked, expected


def _produce_expired_tombstones(broker, p) -> List[Acked]:
    """``compacted-expired`` (delete.retention.ms 300): tombstones kept by a first cleaning
    with a delete horizon, which has passed when more data makes the log dirty again, so a
    second cleaning removes them."""
    topic, rep = "compacted-expired", _Reports()

    def rnd(n, gone=None):
        for i in range(20):
            p.produce(topic, key=f"e-{i % 10}".encode(), value=f"expired {n} {i} ".encode() * 3,
                      timestamp=BASE_TS + 1000 * (n * 20 + i), on_delivery=rep.callback([]))
        for j in range(5 if gone is not None else 0):
            p.produce(topic, key=f"e-gone-{j}".encode(), value=gone or None,
                      timestamp=BASE_TS + 1000 * (n * 20 + 19), on_delivery=rep.callback([]))
        _flush(p)
        time.sleep(0.25)            # segment.ms 100: the next append rolls

    rnd(0, gone=b"soon gone")
    rnd(1, gone=b"")                # tombstones: the last word on e-gone-*
    rnd(2)
    wait_cleaned(broker.log_dir, topic)
    first = _checkpoint(os.path.join(broker.log_dir, "cleaner-offset-checkpoint"))[(topic, 0)]
    time.sleep(0.6)                 # past the tombstones' delete horizon
    for i in range(20):
        p.produce(topic, key=f"e-{i % 10}".encode(), value=f"expired 3 {i} ".encode() * 3,
                  timestamp=BASE_TS + 1000 * (60 + i), on_delivery=rep.callback([]))
    _flush(p)
    time.sleep(0.25)
    p.produce(topic, key=b"e-0", value=b"last", timestamp=BASE_TS + 1000 * 81, on_delivery=rep.callback([]))
    _flush(p)
    deadline = time.monotonic() + 60
    while _checkpoint(os.path.join(broker.log_dir, "cleaner-offset-checkpoint")).get((topic, 0), 0) <= first:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the log cleaner did not clean {topic} a second time within 60 s")
        time.sleep(0.3)
    return rep.acked


# --- everything ------------------------------------------------------------------------

def topic_plan() -> List[TopicInfo]:
    t: List[TopicInfo] = []
    for codec in CODECS:
        t.append(TopicInfo(f"cf-{codec}", 1, dict(SMALL_SEGMENT), "confluent-kafka", codec))
        t.append(TopicInfo(f"kp-{codec}", 1, dict(SMALL_SEGMENT), "kafka-python", codec))
        t.append(TopicInfo(f"java-{codec}", 1, dict(SMALL_SEGMENT), "kafka-java", codec,
                           note="idempotent"))
    t.append(TopicInfo("java-txn", 1, dict(SMALL_SEGMENT), "kafka-java", "lz4", transactional=True))
    t.append(TopicInfo("idempotent", 2, dict(SMALL_SEGMENT), "confluent-kafka", "snappy",
                       note="enable.idempotence"))
    t.append(TopicInfo("txn", 3, dict(SMALL_SEGMENT), "confluent-kafka", "zstd/none", transactional=True,
                       note="two transactional producers, commits and aborts interleaved"))
    t.append(TopicInfo("log-append-time", 1, {**SMALL_SEGMENT, "message.timestamp.type": "LogAppendTime"},
                       "confluent-kafka", "gzip"))
    t.append(TopicInfo("compacted", 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                         "segment.ms": "100", "internal.segment.bytes": "8192",
                                         "min.compaction.lag.ms": "0"},
                       "confluent-kafka", "none", note="the log cleaner ran"))
    t.append(TopicInfo("compacted-expired", 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                                 "segment.ms": "100", "internal.segment.bytes": "8192",
                                                 "min.compaction.lag.ms": "0", "delete.retention.ms": "300"},
                       "confluent-kafka", "none", note="cleaned twice: tombstones past their delete horizon removed"))
    t.append(TopicInfo("retention", 1, {"internal.segment.bytes": "4096", "retention.bytes": "12000"},
                       "confluent-kafka", "none", note="oldest segments deleted"))
    t.append(TopicInfo(REGISTRY_TOPIC, 1, dict(SMALL_SEGMENT), "confluent-kafka", "zstd",
                       note="AvroSerializer keys and values, 3 schema versions; registry in _schemas"))
    t.append(TopicInfo(SCHEMAS_TOPIC, 1, {"cleanup.policy": "compact"}, "confluent-kafka", "none",
                       note="the Schema Registry's topic for registry-avro"))
    return t


def produce_all(broker, work_dir: str, *, records: int = 240) -> BrokerData:
    """Create and write every topic of :func:`topic_plan` through ``broker``, and the tiered
    topic (:mod:`tiered_topic`) when the broker has tiered storage; bounded in time (about
    20-40 s on 2 cores).  Kafka's Java producer writes beside the Python ones, then Kafka's Java
    clients drive the coordinators (:class:`CoordinatorClients`) beside them, and the broker
    copies the tiered topic's segments while the rest is written."""
    from support.brokers import deleted_records
    from support.brokers import tiered_topic
    bootstrap = broker.bootstrap
    plan = topic_plan()
    tiered = broker.remote_dir is not None
    deleted_plan = deleted_records.topic_infos()
    create_topics(bootstrap, plan + deleted_plan + ([tiered_topic.topic_info()] if tiered else []))
    data = BrokerData(bootstrap, {t.name: t for t in plan}, log_start_topics={t.name: t for t in deleted_plan})
    java = JavaProducer(bootstrap, broker.classpath, "java", records, work_dir)
    try:
        if tiered:
            data.tiered_acked = tiered_topic.write(bootstrap)
        for codec in CODECS:
            data.acked += produce_confluent(bootstrap, f"cf-{codec}", records, **{"compression.type": codec})
            data.acked += produce_kafka_python(bootstrap, f"kp-{codec}", records, codec)
        data.acked += java.acked()
    finally:
        java.close()
    # after the Java producer's transactions: the clients downgrade transaction.version for a while
    coordinators = CoordinatorClients(bootstrap, broker.classpath, work_dir)
    try:
        _produce_rest(broker, data, records, tiered)
        coordinators.wait()
    finally:
        coordinators.close()
    return data


def _produce_rest(broker, data: BrokerData, records: int, tiered: bool) -> None:
    """The Python producers' topics after the Java producer's, and the broker's own work on them."""
    from support.brokers import deleted_records
    from support.brokers import tiered_topic
    bootstrap = broker.bootstrap
    data.acked += produce_confluent(bootstrap, "idempotent", records, partitions=2,
                                    **{"enable.idempotence": True, "compression.type": "snappy"})
    data.acked += produce_transactions(bootstrap, "txn", 3)
    data.acked += produce_confluent(bootstrap, "log-append-time", records // 2, **{"compression.type": "gzip"})
    # compacted: few keys written many times in rounds, segments rolled by segment.ms,
    # tombstones among them (gone-*: the last word on their key, kept with a delete horizon
    # a day away); the active segment is never cleaned
    p = _cf_producer(bootstrap, **{"batch.size": 4000})
    rep = _Reports()
    for rnd in range(4):
        for i in range(60):
            k = f"ck-{i % 15}".encode()
            v = None if (i % 15 == 4 and rnd == 2) else f"compacted {rnd} {i} ".encode() * 4
            p.produce("compacted", key=k, value=v, timestamp=BASE_TS + 1000 * (rnd * 60 + i),
                      on_delivery=rep.callback([]))
        if rnd < 3:
            for j in range(5):
                p.produce("compacted", key=f"gone-{j}".encode(), value=None if rnd == 2 else b"soon gone",
                          timestamp=BASE_TS + 1000 * (rnd * 60 + 59), on_delivery=rep.callback([]))
        _flush(p)
        time.sleep(0.25)
    data.acked += rep.acked
    data.acked += _produce_expired_tombstones(broker, p)
    # retention: ~40 KB through 4 KiB segments, retention.bytes 12000
    data.acked += produce_confluent(bootstrap, "retention", 300, rounds=6, pause=0.1,
                                    **{"batch.size": 2000})
    registry_acked, data.registry_values = produce_registry(bootstrap)
    data.log_start_acked, data.log_starts = deleted_records.write(bootstrap)
    data.acked += registry_acked
    data.groups = ["group-librdkafka", "group-kafka-python"]
    commit_groups(bootstrap, ["cf-none", "kp-gzip", "idempotent", "txn"], data.groups)
    # cleaned up to the active segment, not only once: a tail the cleaner has not reached yet (a
    # starved cleaner outwaits wait_settled's quiet second and a half) is cleaned by the live broker
    # after the stopped copy is taken (snapshot_stopped restarts it), and its consumer then no longer
    # reads what the copy holds
    for topic in ("compacted", "compacted-expired"):
        wait_cleaned(broker.log_dir, topic, through={0: active_segment_base(broker.log_dir, topic)})
    wait_retention(broker.log_dir, "retention")
    deleted_records.wait_deleted(broker.log_dir, data.log_starts)
    if tiered:
        tiered_topic.wait_tiered(broker)
    wait_settled(broker.log_dir, ["compacted", "compacted-expired", "retention"]
                 + ([tiered_topic.TOPIC] if tiered else []))


# --- what Kafka's consumer reads --------------------------------------------------------

Row = Tuple[str, int, int, Optional[bytes], Optional[bytes], Tuple[Tuple[str, Optional[bytes]], ...], int, int]


def consume(bootstrap: str, topics: Sequence[str], isolation: str = "read_uncommitted",
            timeout: float = 60, start: Optional[Dict[Tuple[str, int], int]] = None) -> List[Row]:
    """Every record of ``topics`` as librdkafka's consumer reads it, from each partition's
    start (or the offset ``start`` gives it, as a consumer seeking there) to its end (the high
    watermark, or the last stable offset for read_committed):
    ``(topic, partition, offset, key, value, headers, timestampType, timestamp)`` sorted
    by topic, partition, offset.  timestampType: 0 CreateTime, 1 LogAppendTime."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition, TIMESTAMP_LOG_APPEND_TIME
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkarec-expected", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "log_level": 0,
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50})
    try:
        meta = c.list_topics(timeout=10)
        tps = [TopicPartition(t, p, (start or {}).get((t, p), -2))
               for t in topics for p in sorted(meta.topics[t].partitions)]
        c.assign(tps)
        pending = {(tp.topic, tp.partition) for tp in tps}
        rows: List[Row] = []
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumer did not reach the end of {sorted(pending)} within {timeout} s")
            for msg in c.consume(500, 0.5):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending.discard((msg.topic(), msg.partition()))
                        continue
                    raise RuntimeError(str(err))
                ts_type, ts = msg.timestamp()
                rows.append((msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                             tuple((k, v) for k, v in (msg.headers() or [])),
                             1 if ts_type == TIMESTAMP_LOG_APPEND_TIME else 0, ts))
        rows.sort(key=lambda r: (r[0], r[1], r[2]))
        return rows
    finally:
        c.close()


def java_consume(bootstrap: str, topics: Sequence[str], isolation: str = "read_uncommitted",
                 timeout: float = 120) -> List[Row]:
    """What Kafka's own Java consumer (``tests/java/ConsumerDump.java``, kafka-clients of the tests'
    Kafka) returns of ``topics`` from each partition's start to its end (the high watermark, or the
    last stable offset for read_committed): rows as :func:`consume` gives them, sorted the same."""
    import base64

    from support.java import compiled
    from support.jvm import classpath
    from support.paths import ROOT
    program = compiled(os.path.join(ROOT, "tests", "java", "ConsumerDump.java"), classpath("jvm/kafka"))
    proc = subprocess.run(program.command(bootstrap, isolation, str(int(timeout * 1000)), *topics,
                                          jvm_flags=["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m"]),
                          capture_output=True, timeout=timeout + 60)
    if proc.returncode != 0:
        raise RuntimeError(f"ConsumerDump failed ({proc.returncode}):\n{proc.stderr.decode(errors='replace')[-4000:]}")

    def data(field: str) -> Optional[bytes]:
        return None if field == "-" else base64.b64decode(field)

    rows: List[Row] = []
    for line in proc.stdout.decode("ascii").splitlines():
        topic, partition, offset, ts_type, ts, key, value, *hs = line.split("\t")
        headers = tuple((base64.b64decode(hs[i]).decode("utf-8"), data(hs[i + 1])) for i in range(0, len(hs), 2))
        rows.append((topic, int(partition), int(offset), data(key), data(value), headers, int(ts_type), int(ts)))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return rows
