"""kafkarec.table.latest from each partition's log start offset: a key whose records all lie below
it (``deleteRecords``) is not in the state a consumer builds; ``include_deleted_records=True``
(option ``includeDeletedRecords``) counts them.  read_committed judges transactions over the whole
log (a marker above the log start still aborts data below and above it)."""
from __future__ import annotations

import pytest

import kafkarec
from kafkarec import table
from support.logs.logdir import CONTROL_ABORT, PartitionWriter, v2_batch
from support.logs.log_start import T0, write_log_start_checkpoint


def _keys(state):
    return {(row["key"], row["offset"]) for row in state.table.to_pylist()}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("latest-log-start"))
    w = PartitionWriter(root, "t", 0, segment_bytes=1 << 20)
    w.append(v2_batch([(T0, b"gone", b"1", []), (T0 + 1, b"gone", b"2", [])]))              # 0-1
    w.append(v2_batch([(T0 + 2, b"x", b"3", []), (T0 + 3, b"x", b"4", [])], producer_id=7,
                      producer_epoch=0, base_sequence=0, transactional=True))                 # 2-3
    w.append(v2_batch([(T0 + 4, b"y", b"5", [])]))                                            # 4
    w.end_txn(CONTROL_ABORT, 7, timestamp=T0 + 5)                                             # 5
    w.append(v2_batch([(T0 + 6, b"z", b"6", [])]))                                            # 6
    w.close()
    write_log_start_checkpoint(root, {("t", 0): 3})       # inside the aborted transaction
    return root


def test_latest_starts_at_the_log_start(logs):
    assert _keys(table.latest(logs)) == {(b"x", 3), (b"y", 4), (b"z", 6)}
    assert _keys(table.latest(logs, include_deleted_records=True)) == {
        (b"gone", 1), (b"x", 3), (b"y", 4), (b"z", 6)}
    assert _keys(table.latest(logs, selection={"includeDeletedRecords": "true"})) == {
        (b"gone", 1), (b"x", 3), (b"y", 4), (b"z", 6)}
    with pytest.raises(kafkarec.SelectionError, match="includeDeletedRecords"):
        table.latest(logs, selection={}, include_deleted_records=True)


def test_read_committed_judges_the_whole_log(logs):
    assert _keys(table.latest(logs, read_committed=True)) == {(b"y", 4), (b"z", 6)}
    assert _keys(table.latest(logs, read_committed=True, include_deleted_records=True)) == {
        (b"gone", 1), (b"y", 4), (b"z", 6)}
