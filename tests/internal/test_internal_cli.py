"""kafkarec dump with the internal-topic decoders, kafkarec metadata and kafkarec transactions, on Kafka's
own segments: the lines kafka-dump-log printed, the objects Kafka's JsonConverter wrote, the state Kafka's
metadata image holds."""
import json
import os
import re

import pytest

from kafkarec.cli import main
from support.logs.internal_fixtures import DATA, load

INDEX = load(os.path.join(DATA, "expected", "index.json"))["segments"]
IDS = [s["segment"] for s in INDEX]


def run(args, capfd):
    code = main(args)
    out, err = capfd.readouterr()
    return code, out, err


@pytest.mark.parametrize("seg", INDEX, ids=IDS)
def test_dump_with_decoder_prints_kafka_dump_log_lines(seg, capfd, monkeypatch):
    monkeypatch.chdir(DATA)
    code, out, err = run(["dump", seg["dump_decoder_option"], "--schemas", "1eb7644", seg["segment"]], capfd)
    assert (code, err) == (0, "")
    want = open(seg["dump"], encoding="utf-8").read().splitlines()
    got = out.splitlines()
    assert got == want


def test_dump_with_current_kafkas_format(capfd, monkeypatch):
    """--schemas current prints as current Kafka's DumpLogSegments: LeaderChange decoded, the transaction
    log and share-group state as JSON with "version"."""
    monkeypatch.chdir(DATA)
    code, out, _ = run(["dump", "--cluster-metadata-decoder", "logs/__cluster_metadata-0/00000000000000000000.log"],
                       capfd)
    assert code == 0
    exp = [r for b in load("expected/__cluster_metadata-0/00000000000000000000.log.json")["batches"]
           for r in b["records"] if r.get("control_type") == "LEADER_CHANGE"]
    lines = [line for line in out.splitlines() if " LeaderChange: " in line]
    assert len(lines) == len(exp) > 0
    for line, e in zip(lines, exp):
        assert json.loads(line.split(" LeaderChange: ", 1)[1]) == e["value_json"]
    code, out, _ = run(["dump", "--transaction-log-decoder", "logs/__transaction_state-1"], capfd)
    # the status by name, as Kafka 4.4's kafka-dump-log prints it; 4.3's printed the record's number
    assert code == 0 and "transaction_metadata::" not in out and re.search(r'"transactionStatus":"[A-Z]', out)
    assert not re.search(r'"transactionStatus":\d', out)
    code, out43, _ = run(["dump", "--transaction-log-decoder", "--kafka-version", "4.3",
                          "logs/__transaction_state-1"], capfd)
    assert code == 0 and re.search(r'"transactionStatus":\d', out43) and not re.search(r'"transactionStatus":"', out43)


@pytest.mark.parametrize("seg", INDEX, ids=IDS)
def test_dump_json_carries_kafkas_decoded_objects(seg, capfd, monkeypatch):
    monkeypatch.chdir(DATA)
    code, out, err = run(["dump", "--decode", "auto", "--schemas", "1eb7644", "--json", seg["segment"]], capfd)
    assert (code, err) == (0, "")
    records = [o for o in map(json.loads, out.splitlines()) if o["type"] == "record"]
    expected = [r for b in load(seg["expected"])["batches"] for r in b["records"]]
    assert len(records) == len(expected)
    for got, e in zip(records, expected):
        assert got["offset"] == e["offset"]
        if e["control"]:
            assert "decoded" not in got
            continue
        d = got["decoded"]
        assert (d["record_type"], d["key"], d["value"], d["tombstone"]) == \
            (e["record_type"], e["key_json"], e["value_json"], e["tombstone"])


def test_decode_auto_follows_folder_names(capfd, monkeypatch):
    monkeypatch.chdir(DATA)
    code, auto, _ = run(["dump", "--decode", "auto", "logs/__share_group_state-7"], capfd)
    code2, explicit, _ = run(["dump", "--share-group-state-decoder", "logs/__share_group_state-7"], capfd)
    assert code == code2 == 0 and auto == explicit and "payload: <DELETE>" in auto
    # a decoder named explicitly wins over the folder; a non-internal folder is dumped as bytes
    code, plain, _ = run(["dump", "--print-data-log", "logs/__share_group_state-7"], capfd)
    assert code == 0 and plain != auto and '"type":"1"' not in plain


def test_metadata_command_reproduces_kafkas_state(capfd):
    expected = load(os.path.join(DATA, "expected", "cluster_metadata_state.json"))
    code, out, err = run(["metadata", "--json", os.path.join(DATA, "logs")], capfd)
    assert (code, err) == (0, "")
    want = expected["final"]["state"]
    for cred in want["scram_credentials"].values():
        for secret in ("salt", "stored_key", "server_key"):
            assert cred.pop(secret) not in out
    assert json.loads(out) == want
    end = expected["at_snapshot"]["end_offset"]
    code, out, err = run(["metadata", "--json", "--at-offset", str(end - 1), os.path.join(DATA, "logs")], capfd)
    got = json.loads(out)
    want = expected["at_snapshot"]["state"]
    for cred in want["scram_credentials"].values():
        for secret in ("salt", "stored_key", "server_key"):
            cred.pop(secret)
    assert code == 0 and got == want
    code, out, err = run(["metadata", os.path.join(DATA, "logs")], capfd)
    assert code == 0 and "Brokers (3):" in out and "audit-log" in out
    code, out, err = run(["metadata", os.path.join(DATA, "expected")], capfd)
    assert code == 2 and "no .log segment or .checkpoint snapshot" in err
    code, out, err = run(["metadata", os.path.join(DATA, "logs", "__consumer_offsets-17")], capfd)
    assert code == 2 and "no __cluster_metadata" in err


def test_transactions_command_on_kafkas_logs(capfd):
    code, out, err = run(["transactions", "--json", "--all", "--schemas", "1eb7644", os.path.join(DATA, "logs")], capfd)
    assert (code, err) == (0, "")
    got = json.loads(out)
    # every transactional id's latest state, as kafka-dump-log decoded it from the same records
    latest = {}
    for seg in INDEX:
        if seg["topic"] != "__transaction_state":
            continue
        for b in load(os.path.join(DATA, seg["expected"]))["batches"]:
            for r in b["records"]:
                if r["record_type"] != "TransactionLog":
                    continue
                tid = r["key_json"]["transactionalId"]
                if r["tombstone"]:
                    latest.pop(tid, None)
                else:
                    latest[tid] = r["value_json"]
    assert {t["transactional_id"]: (t["producer_id"], t["producer_epoch"], t["timeout_ms"])
            for t in got["transactions"]} == \
        {tid: (v["producerId"], v["producerEpoch"], v["transactionTimeoutMs"]) for tid, v in latest.items()}
    assert got["open_in_partitions"] == []        # the fixtures hold no data partitions
    assert got["lag"] and all(x["log_end_offset"] is None for x in got["lag"])
