"""kafkarec.log.sidefiles and kafkarec.log.checks: index, time index, transaction index, producer snapshots, checkpoints,
partition.metadata and file names, with the broker's rules and messages."""
import os
import struct

import pytest

import kafkarec
from kafkarec.log import checks, sidefiles as sf
from kafkarec.log.directory import scan_partition_dir
from kafkarec.log.segment import Segment

from support.logs.logdir import (CONTROL_COMMIT, T0, PartitionWriter, build_log_dir,
                    producer_snapshot_bytes, sample_records, v2_batch,
                    write_offset_index, write_partition_metadata, write_time_index, write_txn_index)


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    return str(root), build_log_dir(str(root))


def _write(path, data) -> str:
    with open(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)
    return str(path)


# --- names ------------------------------------------------------------------------

def test_file_names():
    assert sf.file_name(42, ".log") == "00000000000000000042.log"
    assert sf.offset_from_file_name("/x/00000000000000000042.timeindex") == 42
    assert sf.offset_from_file_name("00000000000000000007.log.deleted") == 7
    with pytest.raises(sf.SideFileError, match="base offset"):
        sf.offset_from_file_name("segment.log")
    assert sf.snapshot_file_name(100, 3) == "00000000000000000100-0000000003.checkpoint"
    assert sf.parse_snapshot_path("00000000000000000100-0000000003.checkpoint") == (100, 3, False, False)
    assert sf.parse_snapshot_path("00000000000000000100-0000000003.checkpoint.part") == (100, 3, True, False)
    assert sf.parse_snapshot_path("00000000000000000100-0000000003.checkpoint.deleted") == (100, 3, False, True)
    assert sf.parse_snapshot_path("00000000000000000100.log") is None
    with pytest.raises(sf.SideFileError):
        sf.parse_snapshot_path("bad.checkpoint")


@pytest.mark.parametrize("name,kind", [
    ("00000000000000000000.log", "log"), ("00000000000000000000.index", "index"),
    ("00000000000000000000.timeindex", "timeindex"), ("00000000000000000000.txnindex", "txnindex"),
    ("00000000000000000000.snapshot", "snapshot"), ("00000000000000000010-0000000001.checkpoint", "checkpoint"),
    ("bootstrap.checkpoint", "checkpoint"), ("leader-epoch-checkpoint", "leader-epoch-checkpoint"),
    ("partition.metadata", "partition-metadata"), ("recovery-point-offset-checkpoint", "offset-checkpoint"),
    ("00000000000000000000.log.deleted", None), ("00000000000000000000.index.swap", None),
    ("quorum-state", None), ("meta.properties", None),
])
def test_file_kind(name, kind):
    assert sf.file_kind(name) == kind


# --- offset and time indexes ----------------------------------------------------

def _recovery_index(path, base, interval=4096):
    """LogSegment.recover's rule, run over the finished segment: an independent formulation of
    the append-time rule the writer used (validBytes - lastIndexEntry > indexIntervalBytes)."""
    entries, times = [], []
    valid = last_entry = 0
    max_ts, max_ts_offset = -1, base
    with Segment(path) as seg:
        for b in seg.batches():
            if b.max_timestamp > max_ts:
                max_ts, max_ts_offset = b.max_timestamp, b.last_offset
            if valid - last_entry > interval:
                entries.append((b.last_offset, valid))
                if not times or max_ts > times[-1][0]:
                    times.append((max_ts, max_ts_offset))
                last_entry = valid
            valid += b.size_in_bytes
    if max_ts > (times[-1][0] if times else -1):
        times.append((max_ts, max_ts_offset))
    return entries, times


def test_indexes_follow_the_broker_rule(logroot):
    root, writers = logroot
    checked = 0
    for name, w in writers.items():
        for files in scan_partition_dir(w.dir).segments:
            index = sf.OffsetIndex(files.index)
            tindex = sf.TimeIndex(files.timeindex)
            expected, expected_times = _recovery_index(files.log, files.base_offset)
            assert [tuple(e) for e in index] == expected
            assert [tuple(e) for e in tindex] == expected_times
            assert index.preallocated_slots == 0 and tindex.preallocated_slots == 0
            index.sanity_check()
            tindex.sanity_check()
            checked += len(expected)
            # Each entry names the batch at its position, and entries are > 4096 bytes apart.
            with Segment(files.log) as seg:
                for e in index:
                    assert seg.batch_at(e.position).last_offset == e.offset
            positions = [0] + [e.position for e in index]
            assert all(b - a > 4096 for a, b in zip(positions, positions[1:]))
    assert checked > 5


def test_index_preallocated_tail(tmp_path):
    path = str(tmp_path / "00000000000000000100.index")
    write_offset_index(path, 100, [(105, 4200), (130, 9000)], preallocated_slots=10)
    idx = sf.OffsetIndex(path)
    assert idx.slots == 12 and len(idx) == 2 and idx.preallocated_slots == 10 and idx.tail_is_zero()
    assert list(idx) == [(105, 4200), (130, 9000)]
    idx.sanity_check()                 # the last slot is (base, 0): not below the base offset
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(105) == (105, 4200)
    assert idx.lookup(129) == (105, 4200)
    assert idx.lookup(10**9) == (130, 9000)


def test_index_sanity_messages(tmp_path):
    path = str(tmp_path / "00000000000000000100.index")
    with open(path, "wb") as fh:
        fh.write(struct.pack(">ii", -5, 0))
    with pytest.raises(sf.CorruptIndexError) as e:
        sf.OffsetIndex(path).sanity_check()
    assert str(e.value) == (f"Corrupt index found, index file {os.path.abspath(path)} has non-zero size "
                            "but the last offset is 95 which is less than the base offset 100")
    with open(path, "wb") as fh:
        fh.write(struct.pack(">ii", 5, 0) + b"\x00\x00\x00")
    with pytest.raises(sf.CorruptIndexError) as e:
        sf.OffsetIndex(path).sanity_check()
    assert str(e.value) == (f"Index file {os.path.abspath(path)} is corrupt, found 11 bytes which is "
                            "neither positive nor a multiple of 8")


def test_time_index_entries_and_sanity(tmp_path):
    path = str(tmp_path / "00000000000000000010.timeindex")
    write_time_index(path, 10, [(T0, 12), (T0 + 5, 20)])
    t = sf.TimeIndex(path)
    assert list(t) == [(T0, 12), (T0 + 5, 20)]
    t.sanity_check()
    # Kafka's check reads the last slot: an untrimmed (zero-tailed) time index fails it.
    write_time_index(path, 10, [(T0, 12)], preallocated_slots=3)
    t = sf.TimeIndex(path)
    assert len(t) == 1 and t.preallocated_slots == 3
    with pytest.raises(sf.CorruptIndexError) as e:
        t.sanity_check()
    assert str(e.value) == (f"Corrupt time index found, time index file ({os.path.abspath(path)}) has "
                            f"non-zero size but the last timestamp is 0 which is less than the first "
                            f"timestamp {T0}")
    write_time_index(path, 10, [(T0, 12), (T0 + 1, 5)])
    with pytest.raises(sf.CorruptIndexError, match="last offset is 5 which is less than the first offset 10"):
        sf.TimeIndex(path).sanity_check()
    _write(path, struct.pack(">qi", T0, 0) + b"\x01")
    with pytest.raises(sf.CorruptIndexError, match="found 13 bytes which is neither positive nor a multiple of 12"):
        sf.TimeIndex(path).sanity_check()


def test_empty_indexes(tmp_path):
    path = _write(tmp_path / "00000000000000000000.index", b"")
    idx = sf.OffsetIndex(path)
    assert idx.slots == 0 and list(idx) == [] and idx.last_entry() == (0, 0)
    idx.sanity_check()
    tpath = _write(tmp_path / "00000000000000000000.timeindex", b"")
    assert sf.TimeIndex(tpath).last_entry() == (-1, 0)


# --- transaction index -------------------------------------------------------------

def test_txn_index_from_the_writer(logroot):
    root, writers = logroot
    w = writers["payments-0"]
    path = os.path.join(w.dir, "00000000000000000000.txnindex")
    entries = sf.TransactionIndex(path).entries()
    abort = [a for a in w.appended if a.raw[21:23] == b"\x00\x30" and a.raw[-10:-8] == b"\x00\x00"][0]
    first_2000 = [a for a in w.appended if a.raw[43:51] == struct.pack(">q", 2000)][0]
    # The only aborted transaction: producer 2000, from its first batch to its ABORT marker;
    # the LSO is the marker + 1 (producer 1000 committed before it).
    assert entries == [(0, 2000, first_2000.base_offset, abort.base_offset, abort.base_offset + 1)]


def test_txn_index_rules(tmp_path):
    path = str(tmp_path / "00000000000000000050.txnindex")
    write_txn_index(path, [(7, 50, 60, 61), (8, 55, 70, 71)])
    with open(path, "ab") as fh:
        fh.write(b"\x00" * 10)                       # a partial entry: ignored, as Kafka does
    t = sf.TransactionIndex(path)
    assert t.entries() == [(0, 7, 50, 60, 61), (0, 8, 55, 70, 71)] and t.trailing_bytes == 10
    t.sanity_check()
    write_txn_index(path, [(7, 10, 20, 21)])
    with pytest.raises(sf.CorruptIndexError) as e:
        sf.TransactionIndex(path).sanity_check()
    assert str(e.value) == ("Last offset of aborted transaction AbortedTxn(version=0, producerId=7, "
                            "firstOffset=10, lastOffset=20, lastStableOffset=21) in index "
                            f"{os.path.abspath(path)} is less than start offset 50")


def test_txn_index_version_is_one_byte(tmp_path):
    # AbortedTxn.version() reads the byte at offset 0: a short 1 (00 01) reads as 0 ...
    path = str(tmp_path / "00000000000000000000.txnindex")
    write_txn_index(path, [(7, 1, 2, 3)], version=1)
    assert sf.TransactionIndex(path).entries()[0].version == 0
    # ... and 256 (01 00) as 1, which Kafka refuses.
    write_txn_index(path, [(7, 1, 2, 3)], version=256)
    with pytest.raises(sf.SideFileError) as e:
        sf.TransactionIndex(path).entries()
    assert str(e.value) == (f"Unexpected aborted transaction version 1 in transaction index "
                            f"{os.path.abspath(path)}, current version is 0")


# --- producer snapshots --------------------------------------------------------------

def test_producer_snapshot_from_the_writer(logroot):
    root, writers = logroot
    w = writers["payments-0"]
    path = os.path.join(w.dir, sf.file_name(w.next_offset, ".snapshot"))
    snap = sf.read_producer_snapshot(path)
    assert snap.offset == w.next_offset and snap.version == 1 and snap.crc == snap.computed_crc
    by_pid = {e.producer_id: e for e in snap.entries}
    assert sorted(by_pid) == [1000, 2000, 3000]
    assert by_pid[1000].coordinator_epoch == 7 and by_pid[1000].current_txn_first_offset == -1
    assert by_pid[1000].last_sequence == 9 and by_pid[1000].first_sequence == 5
    assert by_pid[3000].coordinator_epoch == -1 and by_pid[3000].has_batch_metadata
    assert all(e.last_offset < snap.offset for e in snap.entries)


def test_producer_snapshot_layout_and_crc(tmp_path):
    entries = [(5, 2, 2147483646, 100, 3, T0, 4, -1), (6, 0, -1, -1, 0, -1, -1, 90)]
    data = producer_snapshot_bytes(entries)
    assert len(data) == 2 + 4 + 4 + 46 * 2
    assert struct.unpack(">I", data[2:6])[0] == kafkarec.crc32c(data[6:])
    path = _write(tmp_path / "00000000000000000120.snapshot", data)
    snap = sf.read_producer_snapshot(path)
    assert [tuple(e) for e in snap.entries] == entries
    # firstSeq = decrementSequence(lastSeq, offsetDelta); wraps below zero.
    assert snap.entries[0].first_sequence == 2147483643
    assert sf.ProducerStateEntry(1, 0, 1, 10, 3, 0, 0, -1).first_sequence == 2147483646
    assert not snap.entries[1].has_batch_metadata


@pytest.mark.parametrize("data,message", [
    (b"", "Snapshot failed schema validation: null"),
    (struct.pack(">h", 2) + bytes(8), "Snapshot failed schema validation: Snapshot contained an unknown file version 2"),
    (struct.pack(">h", 0), "Snapshot failed schema validation: Snapshot contained an unknown file version 0"),
    (struct.pack(">hI", 1, 0), "Snapshot failed schema validation: null"),
    (struct.pack(">hIi", 1, 0, -1), "Snapshot failed schema validation: non-nullable field producerEntries was serialized as null"),
    (struct.pack(">hIi", 1, 0, 50) + bytes(20), "Snapshot failed schema validation: Tried to allocate a collection of size 50, but there are only 20 bytes remaining."),
    (struct.pack(">hIi", 1, 0, 2) + bytes(46), "Snapshot failed schema validation: null"),
])
def test_producer_snapshot_schema_errors(tmp_path, data, message):
    path = _write(tmp_path / "00000000000000000000.snapshot", data)
    with pytest.raises(sf.CorruptSnapshotError) as e:
        sf.read_producer_snapshot(path)
    assert str(e.value) == message


def test_producer_snapshot_crc_error(tmp_path):
    data = bytearray(producer_snapshot_bytes([(5, 2, 9, 100, 3, T0, 4, -1)]))
    data[-1] ^= 1
    stored = struct.unpack(">I", data[2:6])[0]
    path = _write(tmp_path / "00000000000000000000.snapshot", bytes(data))
    with pytest.raises(sf.CorruptSnapshotError) as e:
        sf.read_producer_snapshot(path)
    assert str(e.value) == (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
                            f"Computed crc: {kafkarec.crc32c(bytes(data[6:]))}")


# --- text checkpoints -------------------------------------------------------------------

def test_leader_epoch_checkpoint(tmp_path, logroot):
    root, writers = logroot
    p = scan_partition_dir(writers["web-clicks-0"].dir)
    entries = sf.read_leader_epoch_checkpoint(p.leader_epoch_checkpoint)
    assert entries == [(0, 0), (2, writers["web-clicks-0"].appended[7].base_offset)]
    path = str(tmp_path / "leader-epoch-checkpoint")
    _write(path, b"0\r\n2\r\n0 0\r\n5  \t 17 \r\n")             # CRLF, runs of whitespace, trailing blanks
    assert sf.read_leader_epoch_checkpoint(path) == [(0, 0), (5, 17)]
    _write(path, b"")
    assert sf.read_leader_epoch_checkpoint(path) == []
    _write(path, b"0\n")
    assert sf.read_leader_epoch_checkpoint(path) == []


@pytest.mark.parametrize("text,message", [
    ("1\n0\n", "Unrecognised version:1, expected version: 0 in checkpoint file at: {path}"),
    ("0\n2\n0 0\n", "Expected [2] entries in checkpoint file [{path}], but found only [1]"),
    ("0\n1\n0 0 9\n", "Malformed line in checkpoint file [{path}]: 0 0 9"),
    ("0\n1\nzero 0\n", "Malformed line in checkpoint file [{path}]: zero 0"),
    (" 0\n", "Malformed line in checkpoint file [{path}]:  0"),
    ("0\n1\n\n", "Malformed line in checkpoint file [{path}]: "),
])
def test_leader_epoch_checkpoint_errors(tmp_path, text, message):
    path = _write(tmp_path / "leader-epoch-checkpoint", text)
    with pytest.raises(sf.CheckpointError) as e:
        sf.read_leader_epoch_checkpoint(path)
    assert str(e.value) == message.format(path=os.path.abspath(path))


def test_check_leader_epochs():
    assert checks.check_leader_epochs([sf.EpochEntry(0, 0), sf.EpochEntry(3, 10)]) == []
    assert len(checks.check_leader_epochs([sf.EpochEntry(3, 0), sf.EpochEntry(3, 10)])) == 1
    assert len(checks.check_leader_epochs([sf.EpochEntry(1, 10), sf.EpochEntry(2, 5)])) == 1


def test_offset_checkpoint(tmp_path):
    path = _write(tmp_path / "recovery-point-offset-checkpoint", "0\n2\nweb-clicks 0 120\n__consumer_offsets 7 0\n")
    assert sf.read_offset_checkpoint(path) == [("web-clicks", 0, 120), ("__consumer_offsets", 7, 0)]


def test_partition_metadata(tmp_path, logroot):
    root, writers = logroot
    meta = sf.read_partition_metadata(os.path.join(writers["web-clicks-1"].dir, "partition.metadata"))
    assert meta == (0, sf.uuid_to_base64(bytes([2] * 16)))
    path = str(tmp_path / "partition.metadata")
    write_partition_metadata(path, bytes(range(16)))
    assert sf.read_partition_metadata(path).topic_id == "AAECAwQFBgcICQoLDA0ODw"
    write_partition_metadata(path, bytes(16))
    with pytest.raises(sf.CheckpointError, match=r"Invalid topic ID in partition metadata file"):
        sf.read_partition_metadata(path)
    _write(path, "version 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw\n")
    with pytest.raises(sf.CheckpointError) as e:
        sf.read_partition_metadata(path)
    assert str(e.value) == f"Malformed line in checkpoint file [{os.path.abspath(path)}]: version 0"
    _write(path, "version: 0\ntopic_id: AAAA\n")
    with pytest.raises(sf.CheckpointError, match="decoded as 3 bytes"):
        sf.read_partition_metadata(path)
    _write(path, "version: 0\ntopic_id: " + "A" * 30 + "\n")
    with pytest.raises(sf.CheckpointError, match="too long to be decoded as a base64 UUID"):
        sf.read_partition_metadata(path)


# --- checks against the log ---------------------------------------------------------

def _segment_with_index(tmp_path, n=8, interval=300):
    w = PartitionWriter(str(tmp_path), "chk", 0, segment_bytes=1 << 20, index_interval_bytes=interval)
    for k in range(n):
        w.append(v2_batch(sample_records(4, start_ts=T0 + 10 * k)))
    w.close()
    return w, scan_partition_dir(w.dir).segments[0]


def _feed(check, log, kind):
    with Segment(log) as seg:
        for b in seg.batches():
            if kind == "offset":
                check.see_batch(b.position, b.last_offset)
            else:
                check.see_batch(b.last_offset, b.max_timestamp)


def test_offset_index_check(tmp_path):
    w, files = _segment_with_index(tmp_path)
    size = os.path.getsize(files.log)
    c = checks.OffsetIndexCheck(sf.OffsetIndex(files.index), size)
    _feed(c, files.log, "offset")
    assert c.finish() == []
    entries = list(sf.OffsetIndex(files.index))
    bad = [(entries[0].offset + 1, entries[0].position), (entries[1].offset, entries[1].position + 1),
           (entries[1].offset + 5, size + 10)]
    write_offset_index(files.index, 0, bad)
    c = checks.OffsetIndexCheck(sf.OffsetIndex(files.index), size)
    _feed(c, files.log, "offset")
    reasons = [p.reason for p in c.finish()]
    assert reasons[0].startswith(f"entry 2 position {size + 10} is outside the log")
    assert f"Index offset: {bad[0][0]}, log offset: {entries[0].offset}" in reasons[1]
    assert reasons[2] == (f"index entry offset {bad[1][0]} points at position {bad[1][1]}, "
                          "where no batch starts")


def test_time_index_check(tmp_path):
    w, files = _segment_with_index(tmp_path)
    c = checks.TimeIndexCheck(sf.TimeIndex(files.timeindex))
    _feed(c, files.log, "time")
    assert c.finish() == []
    entries = list(sf.TimeIndex(files.timeindex))
    write_time_index(files.timeindex, 0, [(entries[0].timestamp + 1, entries[0].offset),
                                          (entries[0].timestamp, entries[0].offset + 1)])
    c = checks.TimeIndexCheck(sf.TimeIndex(files.timeindex))
    _feed(c, files.log, "time")
    reasons = [p.reason for p in c.finish()]
    assert any("Previously indexed timestamp" in r for r in reasons)
    assert any(r.startswith(f"Index timestamp: {entries[0].timestamp + 1}, log timestamp: "
                            f"{entries[0].timestamp}") for r in reasons)
    assert any(f"Indexed offset: {entries[0].offset + 1} is not the last offset" in r for r in reasons)


def test_time_index_entries_past_the_active_segments_read_are_noted(tmp_path):
    """A live broker appends a batch, then its time index entry: a check that read the active
    segment's log as listed and its time index afterwards may find entries for batches appended
    since (seen on a live broker's ``__cluster_metadata``, which takes a record every 500 ms).  Past
    the last batch read of the active segment that is a note; anywhere else still an error."""
    w, files = _segment_with_index(tmp_path)
    entries = list(sf.TimeIndex(files.timeindex))
    last = entries[-1]
    write_time_index(files.timeindex, 0, [(e.timestamp, e.offset) for e in entries]
                     + [(last.timestamp + 5, last.offset + 3)])
    for active, severity, said in ((True, "note", "lies past the last batch read"),
                                   (False, "error", "is not the last offset of any batch")):
        c = checks.TimeIndexCheck(sf.TimeIndex(files.timeindex), active=active)
        _feed(c, files.log, "time")
        problems = [p for p in c.finish() if p.offset == last.offset + 3]
        assert [(p.severity, said in p.reason) for p in problems] == [(severity, True)], problems


def test_txn_index_check_markers(tmp_path):
    w = PartitionWriter(str(tmp_path), "tx", 0)
    w.append(v2_batch(sample_records(3), producer_id=1, producer_epoch=0, base_sequence=0, transactional=True))
    w.end_txn(CONTROL_COMMIT, 1, timestamp=T0)
    w.close()
    files = scan_partition_dir(w.dir).segments[0]
    path = str(tmp_path / "00000000000000000000.txnindex")
    write_txn_index(path, [(1, 0, 3, 4)])             # claims the COMMIT marker aborted
    c = checks.TxnIndexCheck(sf.TransactionIndex(path))
    c.see_data_batch(1, 0)
    c.see_marker(3, 1, "COMMIT")
    reasons = [p.reason for p in c.finish(log_start=0)]
    assert reasons == ["entry for producer 1 ends at offset 3, which holds a COMMIT marker of producer 1"]
    c = checks.TxnIndexCheck(sf.TransactionIndex(path))
    c.see_marker(9, 2, "ABORT")
    probs = c.finish(log_start=0)
    assert [p.severity for p in probs] == ["warning", "error", "error"]
    assert files.txnindex is None        # the writer only writes a txnindex for aborts



def test_txn_index_of_a_transaction_begun_in_a_deleted_segment(tmp_path):
    # deleteRecords (or retention) deleted the segments where the transaction began: the index
    # keeps its first offset (0), the scan first sees its batches at the log's first segment (22)
    path = str(tmp_path / "00000000000000000030.txnindex")
    write_txn_index(path, [(15, 0, 31, 22)])
    c = checks.TxnIndexCheck(sf.TransactionIndex(path))
    c.see_marker(31, 15, "ABORT", began=22)
    assert [p.reason for p in c.finish(log_start=20)] == []
    c = checks.TxnIndexCheck(sf.TransactionIndex(path))          # still in the log: a wrong entry
    c.see_marker(31, 15, "ABORT", began=22)
    assert [p.reason for p in c.finish(log_start=0)] == [
        "first offset 0 of producer 15's aborted transaction is not where it began (offset 22)"]

def test_leader_epoch_check():
    c = checks.LeaderEpochCheck("lec", [sf.EpochEntry(0, 0), sf.EpochEntry(3, 100)])
    assert c.expected_epoch(99) == 0 and c.expected_epoch(100) == 3
    c.see_batch("x.log", 0, 50, 0)
    c.see_batch("x.log", 10, 150, 3)
    c.see_batch("x.log", 20, 160, 2)
    c.see_batch("x.log", 30, 170, -1)                 # no epoch (legacy / unset): skipped
    probs = c.finish()
    assert len(probs) == 1 and probs[0].severity == "warning" and probs[0].position == 20
