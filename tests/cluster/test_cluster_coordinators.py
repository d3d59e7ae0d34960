"""Open/hanging transactions and lag at rest: Kafka's __transaction_state and __consumer_offsets segments
next to data partitions written here with kafkarec's builder (transactional batches, markers)."""
import json
import os
import shutil

import kafkarec
from kafkarec.enums import ControlRecordType
from kafkarec.cluster import coordinators
from support.logs.internal_fixtures import DATA


def _write(folder, batches):
    os.makedirs(folder)
    with open(os.path.join(folder, "00000000000000000000.log"), "wb") as f:
        for b in batches:
            f.write(b)


def _txn_batch(base, pid, n=2, ts=1729881999000):
    b = kafkarec.RecordBatchBuilder(base_offset=base, producer_id=pid, producer_epoch=3, base_sequence=0,
                                    is_transactional=True)
    for i in range(n):
        b.append(b"v%d" % i, timestamp=ts + i)
    return b.build()


def _marker(base, pid, kind):
    m = kafkarec.RecordBatchBuilder(base_offset=base, producer_id=pid, producer_epoch=3, is_transactional=True,
                                    is_control=True)
    m.append_control(kind, {"coordinatorEpoch": 1}, timestamp=1729881999100)
    return m.build()


def _log_dir(tmp_path):
    root = str(tmp_path / "logs")
    for name in os.listdir(os.path.join(DATA, "logs")):
        if name.startswith(("__transaction_state", "__consumer_offsets")):
            shutil.copytree(os.path.join(DATA, "logs", name), os.path.join(root, name))
    plain = kafkarec.RecordBatchBuilder(base_offset=0)
    for i in range(50):
        plain.append(b"x", timestamp=1729881990000 + i)
    _write(os.path.join(root, "orders-0"), [plain.build()])
    # producer 4276 = connect-offsets-writer (coordinator: PrepareEpochFence over orders-1): open, not hanging
    _write(os.path.join(root, "orders-1"), [_txn_batch(0, 4276)])
    # producer 999 is unknown to the coordinator: open in clicks-3 (hanging); committed in clicks-4
    _write(os.path.join(root, "clicks-3"), [_txn_batch(0, 999), _txn_batch(2, 999)])
    _write(os.path.join(root, "clicks-4"), [_txn_batch(0, 999), _marker(2, 999, ControlRecordType.COMMIT)])
    return root


def test_open_and_hanging_transactions(tmp_path):
    root = _log_dir(tmp_path)
    opened = coordinators.open_transactions(root)
    assert [(o["topic"], o["partition"], o["producer_id"], o["first_offset"], o["last_offset"], o["hanging"],
             o["transactional_id"]) for o in opened] == [
        ("clicks", 3, 999, 0, 3, True, None),
        ("orders", 1, 4276, 0, 1, False, "connect-offsets-writer")]
    states = coordinators.transaction_states(root)
    assert states["connect-offsets-writer"]["state"] == "PrepareEpochFence"
    assert states["connect-offsets-writer"]["partitions"] == [("orders", 1)]


def test_lag_at_rest(tmp_path):
    root = _log_dir(tmp_path)
    assert coordinators.log_end_offsets(root)[("orders", 0)] == 50
    assert coordinators.log_end_offsets(root)[("clicks", 4)] == 3
    lag = {(x["group"], x["topic"], x["partition"]): x for x in coordinators.consumer_lag(root)}
    x = lag[("deleted-group", "orders", 0)]
    assert (x["committed_offset"], x["log_end_offset"], x["lag"]) == (42, 50, 8)
    assert lag[("orders-service", "orders", 2)]["log_end_offset"] is None


def test_transactional_offset_commits_count_after_their_commit_marker(tmp_path):
    from kafkarec import internal
    root = str(tmp_path / "logs")
    key = lambda p: internal.encode_record("__consumer_offsets", "OffsetCommit",
                                           {"group": "g", "topic": "t", "partition": p}, None)[0]
    value = lambda off: internal.encode_record("__consumer_offsets", "OffsetCommit", {"group": "g", "topic": "t",
                                               "partition": 0}, {"offset": off, "leaderEpoch": 1, "metadata": "",
                                               "commitTimestamp": 5}, 3)[1]
    plain = kafkarec.RecordBatchBuilder(base_offset=0)
    plain.append(value(10), key=key(0), timestamp=1)
    plain.append(value(10), key=key(1), timestamp=1)
    committed = kafkarec.RecordBatchBuilder(base_offset=2, producer_id=7, producer_epoch=0, base_sequence=0,
                                          is_transactional=True)
    committed.append(value(20), key=key(0), timestamp=2)
    aborted = kafkarec.RecordBatchBuilder(base_offset=4, producer_id=8, producer_epoch=0, base_sequence=0,
                                          is_transactional=True)
    aborted.append(value(30), key=key(1), timestamp=3)
    pending = kafkarec.RecordBatchBuilder(base_offset=7, producer_id=9, producer_epoch=0, base_sequence=0,
                                          is_transactional=True)
    pending.append(value(40), key=key(0), timestamp=4)
    _write(os.path.join(root, "__consumer_offsets-0"), [
        plain.build(), committed.build(), aborted.build(), _marker(5, 8, ControlRecordType.ABORT),
        _marker(6, 7, ControlRecordType.COMMIT), pending.build()])
    got = {k: v["offset"] for k, v in coordinators.committed_offsets(root).items()}
    assert got == {("g", "t", 0): 20, ("g", "t", 1): 10}


def test_transactions_command_text(tmp_path, capfd):
    from kafkarec.cli import main
    root = _log_dir(tmp_path)
    assert main(["transactions", root]) == 0
    out, err = capfd.readouterr()
    assert err == ""
    assert "Open transactions in data partitions: 2 (1 hanging)" in out
    assert "clicks-3: producerId 999 epoch 3 from offset 0 (transactionalId None, coordinator state None) HANGING" in out
    assert "deleted-group orders-0: committed 42 log end 50 lag 8" in out
    assert main(["transactions", "--json", "--now", "1729881938615", root]) == 0
    got = json.loads(capfd.readouterr()[0])
    assert [o["hanging"] for o in got["open_in_partitions"]] == [True, False]


def test_committed_offsets_as_of_a_time(tmp_path):
    """``as_of``: only what the coordinator had appended by then; a transactional commit by its
    COMMIT marker's time (issue 51: groups as of T)."""
    from kafkarec import internal
    root = str(tmp_path / "logs")
    key = internal.encode_record("__consumer_offsets", "OffsetCommit", {"group": "g", "topic": "t", "partition": 0},
                                 None)[0]
    value = lambda off: internal.encode_record("__consumer_offsets", "OffsetCommit", {"group": "g", "topic": "t",
                                               "partition": 0}, {"offset": off, "leaderEpoch": 1, "metadata": "",
                                               "commitTimestamp": 5}, 3)[1]
    plain = kafkarec.RecordBatchBuilder(base_offset=0)
    plain.append(value(10), key=key, timestamp=1000)
    plain.append(value(11), key=key, timestamp=2000)
    txn = kafkarec.RecordBatchBuilder(base_offset=2, producer_id=7, producer_epoch=3, base_sequence=0,
                                      is_transactional=True)
    txn.append(value(20), key=key, timestamp=2500)
    marker = _marker(3, 7, ControlRecordType.COMMIT)            # at 1729881999100
    later = kafkarec.RecordBatchBuilder(base_offset=4)
    later.append(value(30), key=key, timestamp=1729881999200)
    _write(os.path.join(root, "__consumer_offsets-0"), [plain.build(), txn.build(), marker, later.build()])
    at = lambda t: coordinators.committed_offsets(root, as_of=t)[("g", "t", 0)]["offset"]
    assert at(1000) == 10 and at(1999) == 10 and at(2000) == 11
    assert at(2600) == 11                       # the transaction's marker comes later
    assert at(1729881999100) == 20 and at(1729881999200) == 30
    assert coordinators.committed_offsets(root, as_of=999) == {}
    assert coordinators.committed_offsets(root)[("g", "t", 0)]["offset"] == 30


def test_a_uri_is_read_through_the_storage_layer_with_the_same_results(tmp_path):
    """A URI (here ``file://``; tests/remote/test_remote_groups.py: ``s3://``) is listed and read
    through kafkarec.log.storage, not walked on disk: the same answers (issue 51)."""
    from kafkarec.cluster import replay
    root = _log_dir(tmp_path)
    uri = "file://" + os.path.abspath(root)
    for f in (coordinators.committed_offsets, coordinators.transaction_states, coordinators.open_transactions,
              coordinators.consumer_lag, coordinators.log_end_offsets):
        assert f(uri) == f(root), f.__name__
    assert coordinators.committed_offsets(uri)
    kraft = os.path.join(DATA, "logs")
    assert replay("file://" + os.path.abspath(kraft)).state() == replay(kraft).state()
