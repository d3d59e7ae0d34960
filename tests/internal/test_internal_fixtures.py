"""Every record Kafka wrote in tests/data/internal-topics/ decodes to what Kafka's own code says it holds."""
import os

import pytest

from kafkarec import internal
from kafkarec.errors import InternalRecordError
from kafkarec.internal import dumplog
from support.logs.internal_fixtures import DATA, expected_files, load, records

FILES = expected_files()
K = "1eb7644"          # the fixtures' Kafka commit
IDS = [os.path.relpath(p, DATA) for p in FILES]


def test_schema_sets_name_their_kafka_commits():
    assert internal.kafka_commit(K) == load(os.path.join(DATA, "expected", "index.json"))["kafka_commit"]
    assert internal.kafka_commit("current").startswith("d79bd502")
    assert internal.DEFAULT_SCHEMAS == "current"


def test_current_schemas_read_the_fixtures_except_what_kafka_changed():
    """Current Kafka reads every fixture record as Kafka 1eb7644 did, except: share groups (a preview then;
    their value schemas changed incompatibly at version 0), ShareGroupPartitionMetadata (type 9, removed),
    record type 16 (unknown then, ConsumerGroupRegularExpression now), and offset commits of record type 0,
    which current Kafka reads as LegacyOffsetCommit."""
    differ = {}
    for path in FILES:
        exp = load(path)
        for r, e, _b in records(exp):
            if e["control"]:
                assert internal.decode_control(r.control_type_id, r.value, json=True) == e.get("value_json")
                continue
            try:
                rec = internal.decode(exp["topic"], r.key, r.value, json=True)
                same = (rec.record_type, rec.key, rec.value) == (e["record_type"], e["key_json"], e["value_json"])
            except InternalRecordError:
                same = False
            if not same:
                differ.setdefault((exp["topic"], e["record_type"], e["key_version"] if "key_version" in e else None), 0)
                differ[(exp["topic"], e["record_type"], e.get("key_version"))] += 1
    kinds = {(t, rt) for t, rt, _kv in differ}
    assert kinds <= {("__share_group_state", "ShareSnapshot"), ("__share_group_state", "ShareUpdate"),
                     ("__consumer_offsets", "ShareGroupPartitionMetadata"), ("__consumer_offsets", "ShareGroupMetadata"),
                     ("__consumer_offsets", "ShareGroupStatePartitionMetadata"), ("__consumer_offsets", "Unknown"),
                     ("__consumer_offsets", "OffsetCommit")}
    assert {kv for (_t, rt, kv) in differ if rt == "OffsetCommit"} <= {0}
    assert ("__share_group_state", "ShareSnapshot") in kinds and ("__consumer_offsets", "Unknown") in kinds


def test_fixture_corpus_present():
    index = load(os.path.join(DATA, "expected", "index.json"))["segments"]
    assert sorted(os.path.join(DATA, s["expected"]) for s in index) == FILES
    assert len(FILES) == 20


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_records_decode_to_kafka_json(path):
    exp = load(path)
    for r, e, _b in records(exp):
        if e["control"]:
            assert e["control_type_id"] == r.control_type_id
            if "value_json" in e:
                assert internal.decode_control(r.control_type_id, r.value, json=True, strict=True, schemas=K) == e["value_json"]
            else:
                assert internal.decode_control(r.control_type_id, r.value) is None
            continue
        rec = internal.decode(exp["topic"], r.key, r.value, json=True, schemas=K)
        assert rec.record_type == e["record_type"]
        assert rec.key == e["key_json"]
        assert rec.value == e["value_json"]
        assert rec.tombstone == e["tombstone"]
        assert rec.value_version == e["value_version"]
        assert rec.value_schema == e["value_schema"]
        if "api_key" in e:
            assert rec.api_key == e["api_key"]
        else:
            assert rec.key_schema == e["key_schema"]
            assert rec.key_version == e["key_version"]
        assert rec.unknown == (e["record_type"] == "Unknown")


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_dump_log_text(path):
    """The key/payload (and control) text of each record is what kafka-dump-log printed."""
    exp = load(path)
    dump_lines = open(path[:-len(".json")] + ".dump.txt", encoding="utf-8").read().splitlines()
    record_lines = [line for line in dump_lines if line.startswith("| offset: ")]
    n = 0
    for r, e, _b in records(exp):
        assert record_lines[n] == e["dump_line"]
        n += 1
        if e["control"]:
            got = dumplog.format_control(r.control_type_id, r.value, getattr(r, "coordinator_epoch", None), K)
            assert got == e["dump_control"]
            continue
        assert dumplog.format_parts(exp["topic"], r.key, r.value, r.offset, K) == (e["key"], e["payload"])
        assert e["dump_line"].endswith(" headerKeys: []" + dumplog.format_record(exp["topic"], r.key, r.value,
                                                                                r.offset, K))
    assert n == len(record_lines)


def test_dict_form_keeps_bytes_and_fills_tagged_defaults():
    exp = load(os.path.join(DATA, "expected", "__cluster_metadata-0", "00000000000000000000.log.json"))
    seen = False
    for r, e, _b in records(exp):
        if e["control"] or e["record_type"] != "PARTITION_CHANGE_RECORD":
            continue
        rec = internal.decode("__cluster_metadata", r.key, r.value, schemas=K)
        # every tagged field is there, defaults where the record left it out (JSON view omits those)
        for name in ("isr", "leader", "replicas", "removingReplicas", "addingReplicas", "leaderRecoveryState"):
            assert name in rec.value
        assert {k: v for k, v in rec.value.items() if k in e["value_json"]} == e["value_json"]
        if "leader" not in e["value_json"]:
            assert rec.value["leader"] == -2
            seen = True
    assert seen


@pytest.mark.parametrize("kafka_version", ["4.3", "4.4"])
def test_current_kafkas_dump_format_of_the_transaction_log(kafka_version):
    """Current Kafka's DumpLogSegments prints __transaction_state as JSON: the key under "type", the value under
    "version" with the status as its number (4.3) or by name (4.4); a key of an unknown type is skipped."""
    seen = 0
    for path in FILES:
        exp = load(path)
        if exp["topic"] != "__transaction_state":
            continue
        for r, e, _b in records(exp):
            if e["control"]:
                continue
            k, p = dumplog.format_parts(exp["topic"], r.key, r.value, r.offset, "current", kafka_version)
            if e["record_type"] == "Unknown":
                assert (k, p) == (f"Unknown record type {e['key_version']} at offset {r.offset}, skipping.", None)
                continue
            assert k == dumplog.java_json({"type": "0", "data": e["key_json"]})
            if e["tombstone"]:
                assert p == "<DELETE>"
                continue
            value = dict(e["value_json"])     # transactionStatus a number, as Kafka's converter writes it
            if kafka_version == "4.4":
                value["transactionStatus"] = dumplog.TRANSACTION_STATES[value["transactionStatus"]]
            assert p == dumplog.java_json({"version": str(e["value_version"]), "data": value})
            seen += 1
    assert seen > 20
