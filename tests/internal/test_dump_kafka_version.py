"""``dump`` prints as the kafka-dump-log of the Kafka the user names (4.4 by default; ``--kafka-version 4.3``),
and exits 0 on files kafka-dump-log skips (issue 49, findings 2 and 3)."""
import os

import pytest

from kafkarec import build_batch, internal
from kafkarec.cli import main
from kafkarec.internal import dumplog

# issue 49: a fenced producer's TransactionLogValue v1, status 0 (Empty)
TXN_KEY = bytes.fromhex("0000000c74786e2d66656e6365642d61")
TXN_VALUE = bytes.fromhex("0001000000000000001200000000ea600000000001a215d7e6deffffffffffffffff0100080000000000000012")
KEY_TEXT = '{"type":"0","data":{"transactionalId":"txn-fenced-a"}}'


def _payload(status) -> str:
    return ('{"version":"1","data":{"producerId":18,"previousProducerId":18,"producerEpoch":0,'
            f'"transactionTimeoutMs":60000,"transactionStatus":{status},"transactionPartitions":null,'
            '"transactionLastUpdateTimestampMs":1795662800606,"transactionStartTimestampMs":-1}}')


def test_transaction_status_by_name_as_kafka_44_prints_it():
    assert dumplog.format_record("__transaction_state", TXN_KEY, TXN_VALUE, offset=0) == (
        f" key: {KEY_TEXT} payload: {_payload(chr(34) + 'Empty' + chr(34))}")
    assert dumplog.format_record("__transaction_state", TXN_KEY, TXN_VALUE, offset=0, kafka_version="4.4") == (
        f" key: {KEY_TEXT} payload: {_payload(chr(34) + 'Empty' + chr(34))}")
    # Kafka 4.3's kafka-dump-log printed the int8
    assert dumplog.format_record("__transaction_state", TXN_KEY, TXN_VALUE, offset=0, kafka_version="4.3") == (
        f" key: {KEY_TEXT} payload: {_payload(0)}")
    with pytest.raises(ValueError, match="kafka_version"):
        dumplog.format_record("__transaction_state", TXN_KEY, TXN_VALUE, offset=0, kafka_version="4.2")


@pytest.mark.parametrize("status,name", list(enumerate(dumplog.TRANSACTION_STATES)) + [(8, "8"), (-1, "-1")])
def test_every_transaction_state(status, name):
    """TransactionState.stateName for the ids Kafka knows; an id it does not know as the number, in a JSON
    string (DumpLogSegments catches fromId's IllegalStateException and puts String.valueOf(id))."""
    value = {"producerId": 5, "producerEpoch": 1, "transactionTimeoutMs": 1000, "transactionStatus": status,
             "transactionPartitions": None, "transactionLastUpdateTimestampMs": 10,
             "transactionStartTimestampMs": -1}
    key, raw = internal.encode_record("__transaction_state", "TransactionLog", {"transactionalId": "t"}, value, 1)
    _k, payload = dumplog.format_parts("__transaction_state", key, raw, 0)
    assert f'"transactionStatus":"{name}",' in payload
    _k, payload = dumplog.format_parts("__transaction_state", key, raw, 0, kafka_version="4.3")
    assert f'"transactionStatus":{status},' in payload


def test_dump_kafka_version_option(tmp_path, capfd, monkeypatch):
    folder = tmp_path / "__transaction_state-3"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(build_batch([TXN_VALUE], [TXN_KEY], [1_795_662_800_606]))
    monkeypatch.chdir(tmp_path)
    rel = os.path.join("__transaction_state-3", "00000000000000000000.log")
    for extra, status in (([], '"Empty"'), (["--kafka-version", "4.4"], '"Empty"'), (["--kafka-version", "4.3"], "0")):
        code = main(["dump", "--transaction-log-decoder", *extra, rel])
        out, err = capfd.readouterr()
        assert (code, err) == (0, "")
        assert out.splitlines()[-1].endswith(f" key: {KEY_TEXT} payload: {_payload(status)}")
    code = main(["dump", "--transaction-log-decoder", "--kafka-version", "3.9", rel])
    out, err = capfd.readouterr()
    assert code == 2 and "--kafka-version" in err and out == ""


def test_dump_of_only_skipped_files_exits_0(tmp_path, capfd):
    """kafka-dump-log prints "Dumping F" and, on stderr, "Ignoring unknown file F" for a file it does not
    read (a segment being deleted, KRaft's quorum-state) and exits 0."""
    folder = tmp_path / "__cluster_metadata-0"
    folder.mkdir()
    deleted = folder / "00000000000000000000.log.deleted"
    deleted.write_bytes(build_batch([b"v"], [b"k"], [1]))
    quorum = folder / "quorum-state"
    quorum.write_text('{"leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,"currentVoters":null,'
                      '"data_version":1}')
    code = main(["dump", str(deleted), str(quorum)])
    out, err = capfd.readouterr()
    assert code == 0
    assert out == f"Dumping {deleted}\nDumping {quorum}\n"
    assert err == f"Ignoring unknown file {deleted}\nIgnoring unknown file {quorum}\n"
