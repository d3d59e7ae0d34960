"""Backfill, then hand off to the real Apache Iceberg Kafka Connect sink (issue 41), end to end.

On the session's broker, topics of 3 partitions with transactions (commits and aborts interleaved),
compaction (the log cleaner ran) and a non-transactional producer between them; kafkarec writes
[start, H) through pyiceberg into Iceberg's JDBC catalog on the session's PostgreSQL, the Connect
worker's sink (support/servers/connect_worker.py) continues from H, more records are produced, and the
audit (and a read_committed consumer, the oracle) finds every committed record of [start, end) in
the table exactly once.  Also: a crash between the backfill and the hand-off (the procedure run
again), and fill-below under a table the sink already owns.

``pytest --handoff-rounds N`` runs the module's procedure N times in one session (on the session's
broker and worker), each round from scratch: its own topics, connectors and tables.
"""
from __future__ import annotations

import json
import time
import urllib.error
from typing import NamedTuple

import pytest

pytest.importorskip("pyiceberg")

from support.brokers import produce  # noqa: E402  (tests/broker, through support.brokers.broker)
from kafkarec.lakehouse import IcebergTarget, backfill, hand_off_points, read_positions  # noqa: E402
from kafkarec.lakehouse.audit import audit  # noqa: E402
from kafkarec.lakehouse.connect import hand_off, offsets_body  # noqa: E402
from support.servers.connect_worker import CATALOG_NAME, iceberg_sink_config  # noqa: E402

LAYOUT = "iceberg-kafka-connect"
PARTITIONS = 3
#: A compacted topic whose cleaner runs at once (tests/support/brokers/produce.py's "compacted" topic).
COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100",
             "internal.segment.bytes": "8192", "min.compaction.lag.ms": "0"}


def produce_history(bootstrap: str, topic: str, rounds: int, first: int = 0) -> None:
    """``rounds`` of: a transaction that commits and one that aborts, open together on every
    partition, and plain idempotent records between them; keys repeat (the cleaner drops older
    values).  No tombstones: the sink writes no row for one, and the audit holds the table against
    every committed record."""
    committing = produce._cf_producer(bootstrap, **{"transactional.id": f"{topic}-c", "compression.type": "zstd"})
    aborting = produce._cf_producer(bootstrap, **{"transactional.id": f"{topic}-a"})
    plain = produce._cf_producer(bootstrap, **{"enable.idempotence": True})
    committing.init_transactions(30)
    aborting.init_transactions(30)
    i = first
    for _ in range(rounds):
        committing.begin_transaction()
        aborting.begin_transaction()
        for part in range(PARTITIONS):
            for _ in range(8):
                for prod in (committing, aborting, plain):
                    prod.produce(topic, value=f"{topic} value {i} ".encode() * (1 + i % 5),
                                 key=f"key-{i % 11}".encode(), partition=part)
                    i += 1
        for prod in (committing, aborting, plain):
            produce._flush(prod)
        committing.commit_transaction(30)
        aborting.abort_transaction(30)
    # the markers reach the partitions after the commit returns: until then the oracle (a
    # read_committed consumer) would stop short of the last transaction the sink goes on to read
    produce.wait_stable(bootstrap, topic, range(PARTITIONS))


TOPICS = ("handoff", "handoff-crash", "handoff-below")


def pytest_generate_tests(metafunc):
    rounds = metafunc.config.getoption("handoff_rounds")
    if rounds > 1 and "hand_off_round" in metafunc.fixturenames:
        # module scope: pytest runs every test of a round before the next round's topics are made
        metafunc.parametrize("hand_off_round", range(rounds), scope="module", ids=lambda r: f"round{r}")


@pytest.fixture(scope="module")
def hand_off_round():
    """The round (``--handoff-rounds``); 0 without the option."""
    return 0


def _named(name: str, round_: int, sep: str = "-") -> str:
    """A topic's, connector's (``-``) or table's (``_``) name in a round: round 0 keeps the name."""
    return f"{name}{sep}r{round_}" if round_ else name


class Env(NamedTuple):
    """One round's world: the session's broker, worker and catalog, the round, and the offset of
    each partition's roll record (:func:`make_topics`)."""
    kafka_broker: object
    worker: object
    catalog: object
    round: int
    rolls: dict

    def topic(self, name: str) -> str:
        return _named(name, self.round)

    def connector(self, name: str) -> str:
        return _named(name, self.round)

    def table(self, name: str) -> str:
        return _named(name, self.round, "_")


@pytest.fixture(scope="module")
def env(kafka_broker, connect_worker, iceberg_catalog, hand_off_round):
    """The round's topics written and compacted (all at once: one wait for the log cleaner)."""
    rolls = make_topics(kafka_broker, [_named(t, hand_off_round) for t in TOPICS])
    yield Env(kafka_broker, connect_worker, iceberg_catalog, hand_off_round, rolls)
    for name in connect_worker.rest("GET", "/connectors"):     # the worker is the session's
        connect_worker.delete_connector(name)


def make_topics(kafka_broker, names, rounds: int = 3):
    """``names`` created, written (``rounds`` of :func:`produce_history`), compacted, and then kept
    from further compaction; ``{(topic, partition): offset}`` of each partition's roll record (the
    base of its active segment once written)."""
    produce.create_topics(kafka_broker.bootstrap, [
        info for name in names for info in (
            produce.TopicInfo(name, PARTITIONS, dict(COMPACTED), "confluent-kafka", "zstd", transactional=True),
            produce.TopicInfo(f"control-{name}", 1, {}, "confluent-kafka", "none"))])
    for name in names:
        produce_history(kafka_broker.bootstrap, name, rounds)
    # one more record per partition once segment.ms has passed: the append rolls the segment, so
    # the whole history is below the active segment and cleanable (in a full suite's timing the
    # history could still be in the active one, which the cleaner never touches)
    time.sleep(0.3)
    plain = produce._cf_producer(kafka_broker.bootstrap, **{"enable.idempotence": True})
    rolls = {}

    def rolled(err, msg):
        if err is None:
            rolls[(msg.topic(), msg.partition())] = msg.offset()
    for name in names:
        for part in range(PARTITIONS):
            plain.produce(name, value=b"roll", key=b"roll", partition=part, on_delivery=rolled)
    produce._flush(plain)
    assert len(rolls) == len(names) * PARTITIONS, f"roll records not delivered: {sorted(rolls)}"
    # every partition cleaned up to its roll record, the base of its active segment: a partition
    # cleaned once (its first segments, while the history was still being written) keeps a dirty
    # tail whose cleaning, until the setting below takes, removes records the test already read
    for name in names:
        produce.wait_cleaned(kafka_broker.log_dir, name, timeout=120, partitions=range(PARTITIONS),
                             through={p: rolls[(name, p)] for p in range(PARTITIONS)})
    # the cleaner has compacted the history; from here on it holds off (a record's newer value would
    # otherwise remove it between the sink's read and the oracle's, both right)
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    admin = produce._admin(kafka_broker.bootstrap)
    futures = admin.incremental_alter_configs([ConfigResource("TOPIC", name, incremental_configs=[
        ConfigEntry("min.compaction.lag.ms", str(24 * 3600 * 1000), incremental_operation=AlterConfigOpType.SET)])
        for name in names])
    for future in futures.values():
        future.result(timeout=30)
    return rolls


def committed_offsets(bootstrap: str, topic: str):
    """(partition, offset) of every record a read_committed consumer reads, to the LSO: the oracle."""
    return sorted((r[1], r[2]) for r in produce.consume(bootstrap, [topic], "read_committed"))


def table_offsets(target: IcebergTarget, topic: str):
    pos = read_positions(target, LAYOUT)
    assert set(pos.column("topic").to_pylist()) <= {topic}
    return sorted(zip(pos.column("partition").to_pylist(), pos.column("offset").to_pylist()))


def _spread(offsets):
    return {p: (len(o), min(o), max(o)) for p in sorted({p for p, _ in offsets})
            for o in [[x for q, x in offsets if q == p]]}


def wait_for_sink(target: IcebergTarget, topic: str, expected, timeout: float = 60):
    """Until the sink's commits hold every offset of ``expected`` (or more rows than that); the rows."""
    deadline = time.monotonic() + timeout
    while True:
        got = table_offsets(target, topic)
        if len(got) >= len(expected) and set(got) >= set(expected):
            return got
        if time.monotonic() > deadline:
            missing = sorted(set(expected) - set(got))
            pytest.fail(f"the sink did not commit {len(missing)} records within {timeout} s "
                        f"(first {missing[:5]}; the table has {len(got)} rows, {len(set(got))} distinct, "
                        f"per partition (count, first, last): table {_spread(got)}, expected {_spread(expected)})")
        time.sleep(0.5)


def assert_complete(kafka_broker, target, topic):
    """Every committed record of [start, end) once: the read_committed consumer's offsets equal the
    table's, and kafkarec's audit of the log says so too."""
    expected = committed_offsets(kafka_broker.bootstrap, topic)
    got = wait_for_sink(target, topic, expected)
    assert got == expected
    report = audit(kafka_broker.log_dir, read_positions(target, LAYOUT), topics=[topic])
    assert report.ok, report


def target_for(catalog, table: str) -> IcebergTarget:
    return IcebergTarget(catalog.pyiceberg_properties(), table, CATALOG_NAME)


def sink_config(catalog, topic: str, table: str, **kw):
    return iceberg_sink_config(catalog, [topic], table, tasks=PARTITIONS, control_topic=f"control-{topic}", **kw)


def test_offsets_body_is_kip_875s_sink_form():
    from kafkarec.lakehouse import HandOff
    body = offsets_body({("t", 1): HandOff(0, 7), ("t", 0): HandOff(3, 5), ("u", 0): 9})
    assert body == {"offsets": [
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 5}},
        {"partition": {"kafka_topic": "t", "kafka_partition": 1}, "offset": {"kafka_offset": 7}},
        {"partition": {"kafka_topic": "u", "kafka_partition": 0}, "offset": {"kafka_offset": 9}}]}


def test_the_history_is_cleaned_up_to_its_active_segment(env):
    """The tests read a history the cleaner is done with: each partition cleaned up to its roll
    record (the base of its active segment), before the topics were kept from compaction.  A
    partition with a dirty tail left below would lose records to a later pass under the tests."""
    cleaned = produce._checkpoint(f"{env.kafka_broker.log_dir}/cleaner-offset-checkpoint")
    behind = {tp: (cleaned.get(tp), roll) for tp, roll in env.rolls.items() if cleaned.get(tp, 0) < roll}
    assert not behind, f"cleaned up to, and the roll record's offset: {behind}"


def test_backfill_then_hand_off(env):
    kafka_broker, worker, catalog = env.kafka_broker, env.worker, env.catalog
    topic, table, connector = env.topic("handoff"), env.table("lake.handoff"), env.connector("sink-handoff")
    target = target_for(catalog, table)
    points = hand_off_points(kafka_broker.log_dir, topics=[topic])
    summary = backfill(kafka_broker.log_dir, target, layout=LAYOUT, points=points)
    assert sum(s.rows for s in summary.values()) == len(table_offsets(target, topic)) > 0
    body = hand_off(worker.url, connector, points, config=sink_config(catalog, topic, table))
    assert [o["offset"]["kafka_offset"] for o in body["offsets"]] == [points[(topic, p)].end
                                                                      for p in range(PARTITIONS)]
    produce_history(kafka_broker.bootstrap, topic, 2, first=10_000)
    assert_complete(kafka_broker, target, topic)
    # a repeat after the hand-off finished would make the sink write its rows again: refused, the
    # connector left running
    from kafkarec.errors import ConnectError
    with pytest.raises(ConnectError, match="already past the hand-off point"):
        hand_off(worker.url, connector, points)
    deadline = time.monotonic() + 30        # resuming is asynchronous (202 Accepted)
    while worker.rest("GET", f"/connectors/{connector}/status")["connector"]["state"] != "RUNNING":
        assert time.monotonic() < deadline, "the connector was not resumed"
        time.sleep(0.25)
    # the sink's own snapshots carry its kafka.connect.* keys; kafkarec's backfill carries none
    ice = catalog.load().load_table(table)
    summaries = [dict(s.summary.additional_properties) for s in ice.snapshots()]
    assert not any(k.startswith("kafka.connect.") for k in summaries[0])
    assert any(k.startswith("kafka.connect.") for s in summaries[1:] for k in s)


def test_a_crash_between_backfill_and_hand_off_is_finished_by_running_it_again(env, tmp_path, capfd):
    from kafkarec.cli.main import main
    kafka_broker, worker, catalog = env.kafka_broker, env.worker, env.catalog
    topic, table = env.topic("handoff-crash"), env.table("lake.handoff_crash")
    connector = env.connector("sink-handoff-crash")
    target = target_for(catalog, table)
    config = sink_config(catalog, topic, table)
    points = hand_off_points(kafka_broker.log_dir, topics=[topic])
    backfill(kafka_broker.log_dir, target, layout=LAYOUT, points=points)
    # the crash: the procedure died after creating the connector STOPPED, before setting its offsets
    worker.rest("POST", "/connectors", {"name": connector, "config": config, "initial_state": "STOPPED"})
    produce_history(kafka_broker.bootstrap, topic, 1, first=10_000)    # the topic goes on meanwhile
    # the re-run: the same procedure from the top, on the same hand-off points, as a command
    config_file = tmp_path / "connector.json"
    config_file.write_text(json.dumps(config))
    ends = json.dumps({topic: {str(p): h.end for (_, p), h in points.items()}})
    props = [a for k, v in catalog.pyiceberg_properties().items() for a in ("--catalog-property", f"{k}={v}")]
    capfd.readouterr()
    assert main(["backfill", kafka_broker.log_dir, "--iceberg-catalog", CATALOG_NAME, *props, "--table", table,
                 "--layout", LAYOUT, "--topics", topic, "--end-offsets", ends, "--connect-url", worker.url,
                 "--connector", connector, "--connector-config", str(config_file)]) == 0
    out, err = capfd.readouterr()
    assert out.splitlines() == [f"{topic}-{p} [{h.start}, {h.end}) 0 rows already written"
                                for (_, p), h in sorted(points.items())]
    assert f"connector {connector}: offsets set to H on {PARTITIONS} partition(s), resumed" in err
    produce_history(kafka_broker.bootstrap, topic, 1, first=20_000)
    assert_complete(kafka_broker, target, topic)


def test_fill_below_under_the_sinks_table(env):
    kafka_broker, worker, catalog = env.kafka_broker, env.worker, env.catalog
    topic, table = env.topic("handoff-below"), env.table("lake.handoff_below")
    connector = env.connector("sink-handoff-below")
    target = target_for(catalog, table)
    # the live writer came first: its connector starts in the middle of the history (after
    # compaction) and creates the table itself
    history = committed_offsets(kafka_broker.bootstrap, topic)
    middle = inside_history(kafka_broker.log_dir, topic, history)
    hand_off(worker.url, connector, middle, config=sink_config(catalog, topic, table, auto_create=True))
    produce_history(kafka_broker.bootstrap, topic, 1, first=10_000)
    expected_above = [o for o in committed_offsets(kafka_broker.bootstrap, topic) if o[1] >= middle[(topic, o[0])].end]
    sinks = wait_for_sink(target, topic, expected_above)
    # the hand-off's promise: the sink starts at H, its first row the first committed record at or
    # past H (a row below would be written twice, and wait_for_sink holds every row above)
    assert {p: min(o for q, o in sinks if q == p) for p in range(PARTITIONS)} == {
        p: min(o for q, o in expected_above if q == p) for p in range(PARTITIONS)}
    summary = backfill(kafka_broker.log_dir, target, layout=LAYOUT, fill_below=True, topics=[topic])
    assert sum(s.rows for s in summary.values()) > 0
    assert {k[1]: s.end for k, s in summary.items()} == {
        p: min(o for q, o in table_offsets(target, topic) if q == p and o >= middle[(topic, p)].end)
        for p in range(PARTITIONS)}
    produce_history(kafka_broker.bootstrap, topic, 1, first=20_000)
    assert_complete(kafka_broker, target, topic)


def inside_history(log_dir: str, topic: str, history):
    """Per partition, the hand-off point of the first committed record from the middle of the
    history on that leaves committed records on both sides of H.  A cut inside a transaction still
    open there puts H at that transaction's first offset (the LSO), and where compaction and the
    producers' interleaving left no committed record before it, the middle record's H has none
    below it: a fill-below would rightly find nothing to write."""
    points = {}
    for p in range(PARTITIONS):
        offsets = [o for q, o in history if q == p]
        for end in offsets[len(offsets) // 2:]:
            point = hand_off_points(log_dir, topics=[topic], end_offsets={(topic, p): end})[(topic, p)]
            if offsets[0] < point.end <= offsets[-1]:
                points[(topic, p)] = point
                break
        else:
            pytest.fail(f"{topic}-{p}: no hand-off point with committed records on both sides (committed: {offsets})")
    return points


def test_hand_off_errors_carry_the_call_status_and_answer(env):
    from kafkarec.errors import ConnectError
    worker = env.worker
    with pytest.raises(ConnectError, match="no such connector") as info:
        hand_off(worker.url, "sink-nobody", {("t", 0): 5})
    assert info.value.status == 404 and info.value.connector == "sink-nobody"
    with pytest.raises(ConnectError) as info:
        hand_off(worker.url, "sink-bad", {("t", 0): 5}, config={"connector.class": "no.such.Connector"})
    assert info.value.status == 400 and "no.such.Connector" in str(info.value)
    with pytest.raises(ConnectError, match="did not answer") as info:
        hand_off("http://127.0.0.1:9", "sink-nobody", {("t", 0): 5}, timeout=2, request_timeout=2)
    assert info.value.status is None
    with pytest.raises(urllib.error.HTTPError):
        worker.rest("GET", "/connectors/sink-bad")
