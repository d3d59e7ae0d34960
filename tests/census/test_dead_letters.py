"""Share groups' dead letters (KIP-1191) read offline: headers Kafka would not write are named on
the record, never raised; dump's --decode dead_letters line; the census's tally with a bad one.
(A real broker's dead letters, restored: tests/broker/test_broker_restore.py.)"""
import json
import os

import kafkarec
from kafkarec.cli.main import main
from kafkarec.dlq import dead_letter


def _letter(offset=b"4", partition=b"0", count=b"1", why=b"Offset rejected by client."):
    return [("__dlq.errors.topic", b"orders"), ("__dlq.errors.partition", partition),
            ("__dlq.errors.offset", offset), ("__dlq.errors.group", b"billing"),
            ("__dlq.errors.delivery.count", count), ("__dlq.errors.message", why)]


def test_headers_kafka_would_not_write_are_named_on_the_record(tmp_path, capfd):
    # Java's Long.toString writes no leading zero; a partition is never negative; a count is a short
    bad = dead_letter(_letter(offset=b"04", partition=b"-1", count=b"40000", why=b"gone"))
    assert (bad.offset, bad.partition, bad.delivery_count, bad.cause) == (None, None, None, "other")
    assert bad.error == ("header __dlq.errors.partition is b'-1', not a decimal number from 0 to 2147483647; "
                         "header __dlq.errors.offset is b'04', not a decimal number from -1 to 9223372036854775807; "
                         "header __dlq.errors.delivery.count is b'40000', not a decimal number from 0 to 32767")
    # without the group header it is no dead letter
    assert dead_letter([h for h in _letter() if h[0] != "__dlq.errors.group"]) is None
    folder = tmp_path / "logs" / "dlq.billing-0"
    os.makedirs(folder)
    seg = folder / "00000000000000000000.log"
    seg.write_bytes(kafkarec.build_batch([b"v", None, b"plain"], keys=[None, None, None], timestamps=[1] * 3,
                                         headers=[_letter(), _letter(offset=b"x"), []]))
    assert main(["dump", str(seg), "--decode", "dead_letters"]) == 0
    lines = [x for x in capfd.readouterr().out.splitlines() if x.startswith("| offset")]
    assert [x.partition(" deadLetter: ")[2] for x in lines] == [
        '{"group":"billing","topic":"orders","partition":0,"offset":4,"delivery_count":1,'
        '"reason":"Offset rejected by client.","cause":"rejected","original_offset":null,"original_topic":null,'
        '"error":null}',
        '{"group":"billing","topic":"orders","partition":0,"offset":null,"delivery_count":1,'
        '"reason":"Offset rejected by client.","cause":"rejected","original_offset":null,"original_topic":null,'
        '"error":"header __dlq.errors.offset is b\'x\', not a decimal number from -1 to 9223372036854775807"}',
        ""]
    assert lines[2].endswith("payload: plain")
    assert main(["census", str(tmp_path / "logs"), "--json", "--no-progress"]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["partitions"][0]["dead_letters"] == doc["topics"][0]["dead_letters"] == {
        "records": 2, "errors": 1, "sources": [
            {"group": "billing", "topic": "orders", "partition": 0, "records": 2, "offsets": 1, "offset_runs": "4",
             "delivery_counts": {"1": 2}, "causes": {"rejected": 2}}]}
