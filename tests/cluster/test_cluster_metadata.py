"""Replaying Kafka's __cluster_metadata log and snapshot gives the state Kafka's own metadata image holds."""
import json
import os

from kafkarec.cluster import metadata
from support.logs.internal_fixtures import DATA, load

EXPECTED = load(os.path.join(DATA, "expected", "cluster_metadata_state.json"))
LOGS = os.path.join(DATA, "logs")
SECRETS = ("salt", "stored_key", "server_key")


def _without_secrets(state):
    state = json.loads(json.dumps(state))
    for cred in state["scram_credentials"].values():
        for k in SECRETS:
            cred.pop(k)
    return state


def _json(state):
    return json.loads(json.dumps(state))     # int keys as strings, as in the expected file


def test_final_state_equals_kafkas():
    st = metadata.replay(LOGS)
    assert _json(st.state()) == _without_secrets(EXPECTED["final"]["state"])
    assert st.last_offset == EXPECTED["final"]["last_offset"]
    # the partition folder works as well as the log directory
    assert metadata.replay(os.path.join(LOGS, "__cluster_metadata-0")).state() == st.state()


def test_state_at_the_snapshot_offset():
    end = EXPECTED["at_snapshot"]["end_offset"]
    st = metadata.replay(LOGS, at_offset=end - 1)
    assert _json(st.state()) == _without_secrets(EXPECTED["at_snapshot"]["state"])


def test_snapshot_then_log_gives_the_same_state_but_the_producer_id_history():
    for at, key in ((None, "final"), (EXPECTED["at_snapshot"]["end_offset"] - 1, "at_snapshot")):
        got = _json(metadata.replay(LOGS, at_offset=at, use_snapshot=True).state())
        want = _without_secrets(EXPECTED[key]["state"])
        # a snapshot holds one ProducerIdsRecord (the next id, no broker): the blocks before it are gone
        got_blocks, want_blocks = got["producer_ids"].pop("blocks"), want["producer_ids"].pop("blocks")
        assert got == want
        assert got_blocks[0] == {"broker_id": -1, "broker_epoch": -1, "first_producer_id": 0,
                                 "next_producer_id": EXPECTED["at_snapshot"]["state"]["producer_ids"]["next_producer_id"]}
        assert got_blocks[1:] == [b for b in want_blocks if b["first_producer_id"] >= got_blocks[0]["next_producer_id"]]


def test_states_along_the_log_and_no_secrets():
    previous = None
    changes = 0
    for offset in range(0, EXPECTED["final"]["last_offset"] + 1):
        st = metadata.replay(LOGS, at_offset=offset)
        text = json.dumps(st.state())
        for secret in SECRETS:
            assert secret not in text
        changes += text != previous
        previous = text
    assert changes > 40
    summary = st.summary()
    assert "orders" in summary and "alice" in summary
    for cred in EXPECTED["final"]["state"]["scram_credentials"].values():
        assert cred["salt"] not in summary and cred["stored_key"] not in summary


def test_aborted_metadata_transaction_is_dropped():
    st = metadata.ClusterState()
    st.apply("TOPIC_RECORD", {"name": "a", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"})
    st.apply("BEGIN_TRANSACTION_RECORD", {"name": "t"})
    st.apply("TOPIC_RECORD", {"name": "b", "topicId": "AAAAAAAAAAAAAAAAAAAAAg"})
    assert list(st.state()["topics"]) == ["a"]
    st.apply("ABORT_TRANSACTION_RECORD", {"reason": None})
    st.apply("BEGIN_TRANSACTION_RECORD", {"name": "t"})
    st.apply("TOPIC_RECORD", {"name": "c", "topicId": "AAAAAAAAAAAAAAAAAAAAAw"})
    st.apply("END_TRANSACTION_RECORD", {})
    assert list(st.state()["topics"]) == ["a", "c"]
