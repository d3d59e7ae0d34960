"""Control keys and values: what Kafka's readers let through (extra bytes, invalid
UTF-8 replaced, varint bits past 32 dropped) is read the same by default and
rejected by ``strict=True``; each case checked against Kafka's own reader
(../shared/tools/kafka-java, one JVM)."""
from __future__ import annotations

import pytest

import kafkarec
from support.oracles import foreign as F
from support.oracles import kafka_java as J

TS = 1_700_000_000_000


def _control_batch(type_id: int, value: bytes, key: bytes | None = None) -> bytes:
    return F.control_record_batch(F.control_key(type_id) if key is None else key, value, timestamp=TS)


def _voters(host: bytes) -> bytes:
    return F.voters_value([F.voter_bytes(3, bytes(16), [(b"CONTROLLER", host, 9093)], 0, 1)])


LEADER_CHANGE = F.leader_change_value([1], [1])
SNAPSHOT_HEADER = (0).to_bytes(2, "big") + TS.to_bytes(8, "big") + b"\x00"
COMMIT = (0).to_bytes(2, "big") + (7).to_bytes(4, "big")

# name -> (batch, which record property reads the control part, strict's error)
CASES = {
    "voters host with an encoded surrogate": (_control_batch(6, _voters(b"h\xed\xa0\x80st")),
                                              "control_value", "host: string is not valid UTF-8"),
    "voters host with a lone continuation byte": (_control_batch(6, _voters(b"\x80host")),
                                                  "control_value", "host: string is not valid UTF-8"),
    "leader change with 3 bytes after the value": (_control_batch(2, LEADER_CHANGE + b"\x00\x01\x02"),
                                                   "control_value", "3 bytes left after LeaderChangeMessage v0"),
    "snapshot header with a byte after the value": (_control_batch(3, SNAPSHOT_HEADER + b"\x00"),
                                                    "control_value", "1 bytes left after SnapshotHeaderRecord v0"),
    "snapshot footer tagged-field count with bits past 32": (
        _control_batch(4, (0).to_bytes(2, "big") + b"\x80\x80\x80\x80\x10"),
        "control_value", "unsigned varint overflows 32 bits"),
    "commit marker with 2 bytes after the value": (_control_batch(1, COMMIT + b"\x00\x00"),
                                                   "coordinator_epoch", "8 bytes \\(6 expected\\)"),
    "control key with 2 bytes after the type": (
        _control_batch(1, COMMIT, key=F.control_key(1) + b"\x00\x00"),
        "control_type", "key of 6 bytes \\(4 expected\\)"),
}


@pytest.fixture(scope="module")
def java_answers() -> dict:
    names = list(CASES)
    return dict(zip(names, J.decode_many([CASES[n][0] for n in names])))


@pytest.mark.parametrize("name", list(CASES))
def test_java_accepts_default_agrees_strict_rejects(name, java_answers):
    data, prop, reason = CASES[name]
    answer = java_answers[name]
    assert "error" not in answer, answer
    (jrec,) = answer["batches"][0]["records"]
    assert "java_value_error" not in jrec, jrec
    ours = F.kr_only_record(data)
    assert ours.control_type_id == jrec["control"]["type"]
    assert ours.control_key_version == jrec["control"]["version"]
    value = ours.control_value
    if jrec["control"]["type"] in (0, 1):
        assert value["coordinatorEpoch"] == jrec["control"]["coordinator_epoch"]
    elif jrec["control"]["type"] == 6:
        # Java's toString holds the host as its decoder replaced it: so do we.
        host = value["voters"][0]["endpoints"][0]["host"]
        assert "\ufffd" in host and host in jrec["java_value"]
    strict = F.kr_only_record(data, strict=True)
    with pytest.raises(kafkarec.InvalidRecordError, match=reason):
        getattr(strict, prop)
