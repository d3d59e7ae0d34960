"""kafkarec on log dirs a real Kafka broker wrote (issue 27).

The broker (tests/support/brokers/kafka_broker.py, Kafka from jvm/kafka/pom.xml) is fed by
three producers (tests/support/brokers/produce.py).  The yardstick is Kafka's own software: what
librdkafka's consumer reads back (read_committed and read_uncommitted) and what Kafka's
``kafka-dump-log`` (DumpLogSegments, same jars) prints.  kafkarec reads the broker's log
dir twice: while the broker is live, and as a clean shutdown left it.
"""
import os
import re
import subprocess
import sys
import time
from collections import Counter

import pytest

from support.brokers import produce
from support import versions
from support.brokers.readers import kafkarec_rows

pytestmark = [pytest.mark.broker, pytest.mark.slow]

#: Topics whose log the broker rewrote after the producers were acknowledged (the cleaner,
#: retention): every acknowledged record is not there, only what the consumer reads.
REWRITTEN = {"compacted", "compacted-expired", "retention"}


def _first_difference(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"row {i}: kafkarec {g!r}\n  consumer {w!r}"
    return f"kafkarec has {len(got)} rows, the consumer {len(want)}"


def _check_acked(broker_data, rows_uncommitted, rows_committed):
    """Every record a producer saw acknowledged is in kafkarec's rows exactly once, with
    its key, value, headers and the broker's offset and timestamp; an aborted one is in
    read_uncommitted only."""
    index = Counter((r[0], r[1], r[2]) for r in rows_uncommitted)
    by_pos = {(r[0], r[1], r[2]): r for r in rows_uncommitted}
    committed_pos = {(r[0], r[1], r[2]) for r in rows_committed}
    checked = 0
    for a in broker_data.acked:
        if a.topic in REWRITTEN:
            continue
        pos = (a.topic, a.partition, a.offset)
        assert index[pos] == 1, f"acknowledged record {pos} found {index[pos]} times"
        row = by_pos[pos]
        assert (row[3], row[4], list(row[5])) == (a.key, a.value, a.headers), pos
        info = broker_data.topics[a.topic]
        if info.config.get("message.timestamp.type") == "LogAppendTime":
            assert row[6] == 1
        else:
            assert row[6] == 0
        assert row[7] == a.timestamp, pos
        assert (pos in committed_pos) == a.committed, pos
        checked += 1
    assert checked > 4000


@pytest.fixture(scope="module")
def live_views(kafka_broker, broker_data):
    """The consumer's rows and kafkarec's rows of the live broker's log dir, both ways."""
    topics = broker_data.data_topics()
    out = {}
    for iso in ("read_uncommitted", "read_committed"):
        want = produce.consume(kafka_broker.bootstrap, topics, iso)
        got = kafkarec_rows(kafka_broker.log_dir, topics, iso == "read_committed")
        out[iso] = (got, want)
    return out


@pytest.fixture(scope="module")
def stopped_views(kafka_broker, broker_data, stopped_log_dir):
    topics = broker_data.data_topics()
    out = {}
    for iso in ("read_uncommitted", "read_committed"):
        want = produce.consume(kafka_broker.bootstrap, topics, iso)
        got = kafkarec_rows(stopped_log_dir, topics, iso == "read_committed")
        out[iso] = (got, want)
    return out


@pytest.mark.parametrize("iso", ["read_uncommitted", "read_committed"])
def test_live_log_dir_reads_as_the_consumer_reads(live_views, iso):
    got, want = live_views[iso]
    assert got == want, _first_difference(got, want)


@pytest.mark.parametrize("iso", ["read_uncommitted", "read_committed"])
def test_stopped_log_dir_reads_as_the_consumer_reads(stopped_views, iso):
    got, want = stopped_views[iso]
    assert got == want, _first_difference(got, want)


def test_every_acknowledged_record_is_there_once(broker_data, stopped_views):
    _check_acked(broker_data, stopped_views["read_uncommitted"][0], stopped_views["read_committed"][0])


def test_the_broker_did_its_own_work(broker_data, stopped_log_dir, stopped_views):
    """The data holds what only a broker writes: transaction markers, aborted records,
    LogAppendTime, a cleaned segment, segments deleted by retention, rolled segments."""
    rows_all, rows_committed = stopped_views["read_uncommitted"][0], stopped_views["read_committed"][0]
    assert len(rows_committed) < len(rows_all)                       # aborted transactions
    assert {r[6] for r in rows_all if r[0] == "log-append-time"} == {1}
    compacted_keys = [r[3] for r in rows_all if r[0] == "compacted"]
    assert 0 < len(compacted_keys) < 240                             # the cleaner removed records
    gone = {r[3]: r[4] for r in rows_all if r[0] == "compacted" and r[3].startswith(b"gone-")}
    assert gone == {f"gone-{j}".encode(): None for j in range(5)}    # tombstones kept (horizon ahead)
    expired = [r for r in rows_all if r[0] == "compacted-expired"]
    assert expired and not [r for r in expired if r[3].startswith(b"e-gone-")]   # horizon passed: removed
    retention = sorted(r[2] for r in rows_all if r[0] == "retention")
    assert retention[0] > 0 and retention[-1] == 299                 # oldest segments deleted
    segments = [n for n in os.listdir(os.path.join(stopped_log_dir, "cf-none-0")) if n.endswith(".log")]
    assert len(segments) > 1


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "kafkarec", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_verify_finds_no_error_after_clean_shutdown(stopped_log_dir):
    proc = _cli("verify", "--deep", stopped_log_dir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " 0 error(s)" in proc.stdout


def test_verify_finds_no_error_live(kafka_broker, broker_data, live_views):
    proc = _cli("verify", "--deep", kafka_broker.log_dir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " 0 error(s)" in proc.stdout


INTERNAL = [("__consumer_offsets", "--offsets-decoder"),
            ("__transaction_state", "--transaction-log-decoder"),
            ("__share_group_state", "--share-group-state-decoder"),
            ("__cluster_metadata", "--cluster-metadata-decoder"),
            ("__remote_log_metadata", "--remote-log-metadata-decoder")]     # the broker runs tiered storage


def _internal_segments(log_dir, topic):
    out = []
    for d in sorted(os.listdir(log_dir)):
        if d.rsplit("-", 1)[0] == topic:
            folder = os.path.join(log_dir, d)
            out += [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".log")]
    return out


@pytest.fixture(scope="module")
def internal_dumps(kafka_broker, stopped_log_dir):
    """Each internal topic's segments (the non-empty ones) after the clean shutdown and the lines
    Kafka's DumpLogSegments (same Kafka version, from the resolved jars) prints for them with the
    topic's decoder: {topic: (files, lines)}."""
    out = {}
    for topic, option in INTERNAL:
        files = [f for f in _internal_segments(stopped_log_dir, topic) if os.path.getsize(f)]
        assert files, f"the broker wrote no {topic} segment"
        out[topic] = (files, kafka_broker.dump_log(files, option, "--deep-iteration").splitlines())
    return out


@pytest.mark.parametrize("topic,option", INTERNAL, ids=[t for t, _ in INTERNAL])
def test_dump_internal_topics_as_kafka_dump_log(internal_dumps, topic, option):
    """``kafkarec dump`` with the internal topic's decoder prints exactly the lines of Kafka's
    DumpLogSegments on the broker's segments: every record the coordinators and the controller
    wrote (:func:`test_internal_topics_hold_every_kind_of_record`).  Nothing is normalised: both
    get the same file paths, so even the ``Dumping PATH`` lines are compared as printed."""
    files, exp = internal_dumps[topic]
    # printed as the kafka-dump-log of the tests' Kafka prints (4.3 and 4.4 differ in transactionStatus)
    proc = _cli("dump", option, "--deep-iteration", "--kafka-version", ".".join(versions.KAFKA.split(".")[:2]),
                *files)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = proc.stdout.splitlines()
    assert len([line for line in exp if line.startswith("| offset: ")]) > 0
    differ = [(i, g, w) for i, (g, w) in enumerate(zip(got, exp)) if g != w]
    assert not differ, f"{len(differ)} of {len(exp)} lines differ; the first:\n" + "\n".join(
        f"line {i}:\n kafkarec {g}\n kafka    {w}" for i, g, w in differ[:3])
    assert len(got) == len(exp)


_KEY_TYPE = re.compile(r' key: \{"type":"(\d+)"')


def _record_kinds(lines):
    """{record type: (records, tombstones)} of kafka-dump-log's coordinator lines."""
    kinds = {}
    for line in lines:
        m = _KEY_TYPE.search(line)
        if m:
            n, dead = kinds.get(int(m.group(1)), (0, 0))
            kinds[int(m.group(1))] = (n + 1, dead + line.endswith(" payload: <DELETE>"))
    return kinds


def test_internal_topics_hold_every_kind_of_record(internal_dumps):
    """What the coordinators and the controller wrote for the session's clients
    (produce.CoordinatorClients), as Kafka's own dump reads it: the comparison above covers every
    record kind a Kafka 4.4 broker writes, tombstones included."""
    offsets = _record_kinds(internal_dumps["__consumer_offsets"][1])
    # 1 offset commits, 2 classic groups, 3-8 consumer-protocol groups, 10-15 share groups,
    # 16 regular expressions, 17 and 19-23 streams groups (4, 9, 18: no longer written)
    written = {1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23}
    assert written <= set(offsets), sorted(written - set(offsets))
    deleted = {1, 2, 3, 5, 6, 7, 8, 11, 16, 17, 19}            # offset and group deletes
    assert all(offsets[t][1] for t in deleted), {t: offsets[t] for t in deleted}
    text = "\n".join(internal_dumps["__consumer_offsets"][1])
    assert '"classicMemberMetadata":{' in text                  # the migrated group's classic member
    assert '"classicMemberMetadata":null' in text               # a consumer-protocol member
    assert " endTxnMarker: COMMIT " in text                      # offsets sent to transactions
    share = _record_kinds(internal_dumps["__share_group_state"][1])
    assert set(share) == {0, 1} and share[0][1] + share[1][1] > 0, share    # snapshots, updates, deletes
    txn = internal_dumps["__transaction_state"][1]
    for status in ("Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort"):
        assert f'"transactionStatus":"{status}"' in "\n".join(txn), status
    tv2 = [line for line in txn if '"clientTransactionVersion":2' in line]
    tv1 = [line for line in txn if f'"transactionalId":"{produce.COORDINATOR_PREFIX}-tv1"' in line]
    assert tv2 and tv1 and not [line for line in tv1 if "clientTransactionVersion" in line]
    metadata = "\n".join(internal_dumps["__cluster_metadata"][1])
    for kind in ('"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"transaction.version","featureLevel":1}',
                 '"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"transaction.version","featureLevel":2}',
                 '"CLIENT_QUOTA_RECORD"', '"USER_SCRAM_CREDENTIAL_RECORD"', '"REMOVE_USER_SCRAM_CREDENTIAL_RECORD"',
                 '"REMOVE_TOPIC_RECORD"', '"CONFIG_RECORD","version":0,"data":{"resourceType":32'):
        assert kind in metadata, kind


def _attrs_as_dict(v):
    """Arrow's map as a dict (to_pylist gives a list of pairs)."""
    if isinstance(v, dict):
        return {k: (dict(x) if k == "attrs" and isinstance(x, list) else x) for k, x in v.items()}
    return v


def _as_columns(record):
    """A union of null and several types becomes a struct with one member per non-null branch
    (member0, member1, ...), the convention of Spark's from_avro that kafkarec's columns follow."""
    c = record["choice"]
    if c is not None:
        record = dict(record, choice={"member0": c if isinstance(c, int) else None,
                                      "member1": c if isinstance(c, str) else None})
    return record


@pytest.mark.parametrize("where", ["live", "stopped"])
def test_registry_values_through_the_broker(kafka_broker, broker_data, stopped_log_dir, where):
    """Values confluent-kafka's AvroSerializer wrote through the broker, decoded by kafkarec with
    the registry the same broker's ``_schemas`` topic holds, are the records serialized."""
    import kafkarec.registry as kr
    log_dir = kafka_broker.log_dir if where == "live" else stopped_log_dir
    reg = kr.load(log_dir)
    rows = []
    storage_rows = kafkarec_rows(log_dir, {produce.REGISTRY_TOPIC}, False)
    assert [r[2] for r in storage_rows] == sorted(broker_data.registry_values)
    import pyarrow as pa
    import kafkarec
    part = os.path.join(log_dir, f"{produce.REGISTRY_TOPIC}-0")
    for name in sorted(n for n in os.listdir(part) if n.endswith(".log")):
        with open(os.path.join(part, name), "rb") as fh:
            rows.append(kafkarec.to_arrow(fh.read(), topic=produce.REGISTRY_TOPIC, partition=0))
    typed = kr.decode_table(pa.concat_tables(rows), reg, key=True)
    assert typed.column("_corrupt_record").null_count == typed.num_rows
    got = dict(zip(typed.column("offset").to_pylist(), map(_attrs_as_dict, typed.column("value").to_pylist())))
    for offset, want in broker_data.registry_values.items():
        want = _as_columns(want)
        assert got[offset] == want, f"offset {offset}:\n kafkarec {got[offset]}\n expected {want}"
    assert typed.column("key").to_pylist() == [f"k{i}" for i in range(typed.num_rows)]


def _files(log_dir, suffixes, *, internal):
    """The files of the partition folders (``<topic>-<partition>``; not the broker's
    ``remote-log-index-cache``, which holds the remote segments' indexes it fetched)."""
    out = []
    for d in sorted(os.listdir(log_dir)):
        folder = os.path.join(log_dir, d)
        if not os.path.isdir(folder) or not re.fullmatch(r".+-\d+", d):
            continue
        if d.startswith("__") != internal and not (internal is None):
            continue
        out += [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(suffixes)]
    return out


@pytest.mark.parametrize("where", ["stopped", "live"])
def test_dump_every_file_as_kafka_dump_log(kafka_broker, broker_data, stopped_log_dir, where):
    """``kafkarec dump`` prints byte for byte what Kafka's DumpLogSegments prints, stdout and
    stderr, for every segment of the data topics (``--print-data-log``: keys, values and
    header keys as Java prints them) and every ``.index``, ``.timeindex``, ``.txnindex`` and
    producer ``.snapshot`` (with the index checks against the log).  Live: the data topics'
    files while the broker runs (active segments with preallocated indexes); the internal
    topics, still written to, only after the clean shutdown."""
    log_dir = stopped_log_dir if where == "stopped" else kafka_broker.log_dir
    internal = None if where == "stopped" else False
    runs = [(_files(log_dir, (".log",), internal=False), ["--deep-iteration", "--print-data-log"]),
            (_files(log_dir, (".index", ".timeindex", ".txnindex", ".snapshot"), internal=internal)
             + (_files(log_dir, (".log",), internal=True) if where == "stopped" else []),
             ["--deep-iteration"])]
    for files, options in runs:
        assert len(files) > 20
        want = kafka_broker.run_tool("org.apache.kafka.tools.DumpLogSegments", "--files", ",".join(files),
                                     *options, check=False)
        got = subprocess.run([sys.executable, "-m", "kafkarec", "dump", *options, *files],
                             capture_output=True, timeout=300)
        out, err = (got.stdout.decode("utf-8", "surrogateescape"), got.stderr.decode("utf-8", "surrogateescape"))
        assert want.returncode == 0 and got.returncode == 0, err[-2000:]
        assert out.splitlines(keepends=True) == want.stdout.splitlines(keepends=True)
        assert err == want.stderr


def test_metadata_replay_matches_kafka_metadata_image(kafka_broker, stopped_log_dir):
    """``kafkarec metadata`` replays the controller's ``__cluster_metadata`` into the state Kafka's own
    metadata image (kafka-metadata's MetadataDelta, same jars) holds of the same log: features
    (transaction.version downgraded and upgraded again, share.version 2), the broker and controller,
    every topic and partition, configs (a group's too), the next producer id, client quotas, SCRAM
    users."""
    import json
    proc = _cli("metadata", "--json", stopped_log_dir)
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    theirs = kafka_broker.metadata_image(os.path.join(stopped_log_dir, "__cluster_metadata-0"))
    # what the image does not keep: ZooKeeper migration (gone in Kafka 4), the producer-id blocks
    # before the last one
    assert ours.pop("zk_migration_state") == 0
    for broker in ours["brokers"].values():
        assert broker.pop("is_migrating_zk_broker") is False
    assert ours["producer_ids"].pop("blocks")
    assert sorted(ours) == sorted(theirs)
    for section in theirs:
        assert ours[section] == theirs[section], section
    assert len(ours["topics"]) > 20 and ours["scram_credentials"] and ours["client_quotas"]
    assert ours["features"]["transaction.version"] == 2 and ours["features"]["share.version"] == 2


def test_read_while_the_broker_writes(kafka_broker, broker_data):
    """kafkarec reads the log dir again and again while a producer writes through the broker
    (the active segment growing, segments rolling, a batch possibly half written at the end):
    every read is a prefix of what the consumer finally reads, and the last read all of it."""
    import threading
    topic = "growing"
    produce.create_topics(kafka_broker.bootstrap, [produce.TopicInfo(
        topic, 1, {"internal.segment.bytes": "16384"}, "confluent-kafka", "lz4")])
    errors = []

    def write():
        try:
            produce.produce_confluent(kafka_broker.bootstrap, topic, 3000, rounds=30, pause=0.03,
                                      **{"compression.type": "lz4", "batch.size": 3000, "linger.ms": 1})
        except Exception as e:      # reported below
            errors.append(e)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    reads = []
    deadline = time.monotonic() + 60
    while writer.is_alive() and time.monotonic() < deadline:
        reads.append(kafkarec_rows(kafka_broker.log_dir, {topic}, False))
        time.sleep(0.05)
    writer.join(60)
    assert not writer.is_alive() and not errors, errors
    final = produce.consume(kafka_broker.bootstrap, [topic])
    assert len(final) == 3000
    assert kafkarec_rows(kafka_broker.log_dir, {topic}, False) == final
    growing = [len(rows) for rows in reads]
    assert len(set(growing)) > 3, growing          # the reads saw the topic grow
    for rows in reads:
        assert rows == final[:len(rows)]
