"""kafkarec.log.segment and kafkarec.log.directory: segment files read with FileLogInputStream's rules, log directory discovery,
and single-pass partition verification."""
from support.paths import ROOT
import mmap
import os
import struct
import subprocess
import sys

import pytest

import kafkarec
from kafkarec.errors import CorruptBatchError, DecodeError
from kafkarec.log.checks import check_partition
from kafkarec.log.directory import find_partition_dirs, is_partition_dir, parse_topic_partition, scan_partition_dir
from kafkarec.log.segment import Segment

from support.logs.logdir import (CONTROL_ABORT, T0, PartitionWriter, build_log_dir, kraft_control_batch,
                    legacy_batch, sample_records, v2_batch)
from support.oracles import reference as R


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    writers = build_log_dir(str(root))
    return str(root), writers


def _write(path, data: bytes) -> str:
    with open(path, "wb") as fh:
        fh.write(data)
    return str(path)


# --- reading segments ------------------------------------------------------------

def test_batches_are_where_the_writer_put_them(logroot):
    root, writers = logroot
    for name, w in writers.items():
        by_segment = {}
        for a in w.appended:
            by_segment.setdefault(a.segment_base, []).append(a)
        for base, appended in by_segment.items():
            with Segment(w.log_path(base)) as seg:
                assert seg.base_offset == base
                got = list(seg.batches())
                assert [(b.position, b.size_in_bytes, b.magic) for b in got] == \
                       [(a.position, a.size, a.magic) for a in appended]
                assert [b.last_offset for b in got] == [a.last_offset for a in appended]
                assert [bytes(b.raw()) for b in got] == [a.raw for a in appended]
                assert all(b.crc_valid for b in got)


def test_records_round_trip_every_codec(tmp_path):
    w = PartitionWriter(str(tmp_path), "t", 0, segment_bytes=1 << 20)
    inputs = {}
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        recs = sample_records(25, start_ts=T0, key_prefix=codec.encode())
        a = w.append(v2_batch(recs, codec=codec))
        inputs[a.position] = (codec, a.base_offset, recs)
    w.close()
    with Segment(w.log_path(0)) as seg:
        for fb in seg.batches():
            codec, base, recs = inputs[fb.position]
            assert fb.compression.name.lower() == codec
            got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in fb]
            assert got == [(base + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]


def test_legacy_offsets_and_wrappers(logroot):
    root, writers = logroot
    with Segment(writers["legacy-0"].log_path(0)) as seg:
        batches = list(seg.batches())
        assert [b.magic for b in batches] == [0, 0, 0, 1, 1, 1, 1, 1, 1]
        offsets = [r.offset for b in batches for r in b]
        assert offsets == list(range(18))
        wrappers = batches[-3:]
        assert [b.compression.name for b in wrappers] == ["GZIP", "SNAPPY", "LZ4"]
        # A wrapper's offset is its last inner offset; its timestamp the largest inner one.
        assert [b.last_offset for b in wrappers] == [9, 13, 17]
        assert all(b.max_timestamp == T0 + 103 for b in wrappers)
        assert [r.value for r in wrappers[1]] == [b"wrapped snappy %d" % i for i in range(4)]


def test_positions_absolute_and_views_zero_copy(logroot):
    root, writers = logroot
    w = writers["web-clicks-0"]
    with Segment(w.log_path(0)) as seg:
        batches = list(seg.batches())
        assert batches[3].position == w.appended[3].position > 0
        raw = batches[3].raw()
        assert isinstance(raw, memoryview) and raw.readonly
        assert isinstance(raw.obj, mmap.mmap)          # a view of the map, not a copy
        payload = batches[3].payload()
        assert isinstance(payload, memoryview)


def test_only_headers_until_records_are_asked_for(tmp_path):
    """A batch with a broken compressed payload frames and reads its header fine;
    decoding fails only when iterated, and names the file position."""
    good = v2_batch(sample_records(3), codec="gzip")
    bad = bytearray(v2_batch(sample_records(3), codec="gzip"))
    bad[61:] = b"\x00" * (len(bad) - 61)       # not gzip any more
    bad = R.with_v2_crc(bad)
    path = _write(tmp_path / "00000000000000000000.log", good + bad)
    with Segment(path) as seg:
        first, second = list(seg.batches())
        assert second.record_count == 3 and second.crc_valid
        with pytest.raises(DecodeError) as e:
            list(second)
        assert e.value.position == len(good)


def test_decode_errors_name_file_positions(tmp_path):
    recs = sample_records(2, headers=False)
    data = bytearray(v2_batch(recs))
    data[-2] ^= 0x01                           # 'x' -> 'y' in the last value: CRC mismatch
    prefix = v2_batch(sample_records(4))
    path = _write(tmp_path / "00000000000000000000.log", prefix + bytes(data))
    with Segment(path) as seg:
        batches = list(seg.batches())
        assert not batches[1].crc_valid
        with pytest.raises(kafkarec.ChecksumError) as e:
            list(batches[1])
        assert e.value.position == len(prefix)
        assert e.value.expected == batches[1].crc
        assert f"at byte {len(prefix)}" in str(e.value)
        # verify_crc=False reads the records anyway, as Kafka's dump tool does.
        assert len(list(seg.batches(verify_crc=False))[1].records()) == 2


# --- FileLogInputStream framing rules ----------------------------------------------

def test_truncated_tail_stops_quietly(tmp_path):
    a, b = v2_batch(sample_records(3)), v2_batch(sample_records(4))
    path = _write(tmp_path / "00000000000000000000.log", a + b[:-10])
    with Segment(path) as seg:
        it = seg.batches()
        assert [x.position for x in it] == [0]
        assert it.trailing_bytes == len(b) - 10
        assert it.position == len(a)


def test_seventeen_byte_tail_is_ignored(tmp_path):
    # FileLogInputStream stops when position >= end - 17, even if the tail's size field is bad.
    a = v2_batch(sample_records(2))
    tail = struct.pack(">qib", 0, 3, 0) + b"\x00\x00\x00\x02"   # 17 bytes, size 3 < 14
    path = _write(tmp_path / "00000000000000000000.log", a + tail)
    with Segment(path) as seg:
        it = seg.batches()
        assert len(list(it)) == 1 and it.trailing_bytes == 17


def test_small_size_is_a_framing_error(tmp_path):
    a = v2_batch(sample_records(2))
    bad = struct.pack(">qi", 7, 13) + bytes(20)
    path = _write(tmp_path / "00000000000000000000.log", a + bad)
    with Segment(path) as seg:
        it = seg.batches()
        assert next(it).position == 0
        with pytest.raises(CorruptBatchError) as e:
            next(it)
        assert e.value.position == len(a)
        assert str(e.value.reason) == (f"Found record size 13 smaller than minimum record overhead (14) "
                                       f"in file {path}.")
        assert it.exhausted
        assert list(it) == []


def test_unknown_magic_is_laid_out_as_v2(tmp_path):
    # FileLogInputStream makes magic >= 2 a DefaultFileChannelRecordBatch; no magic check at framing.
    b3 = bytearray(v2_batch(sample_records(3)))
    b3[16] = 3
    path = _write(tmp_path / "00000000000000000000.log", bytes(b3) + v2_batch(sample_records(1)))
    with Segment(path) as seg:
        batches = list(seg.batches(verify_crc=False))
        assert [b.magic for b in batches] == [3, 2]
        assert batches[0].record_count == 3 and batches[0].crc_valid   # magic is outside the v2 CRC
        assert bytes(batches[0].raw())[16] == 3


def test_bad_header_does_not_end_iteration(tmp_path):
    # Framing is intact (sizes fine), but a header does not parse: raise, then go on.
    good = v2_batch(sample_records(2))
    neg = bytearray(legacy_batch(0, [(None, b"k", b"v")]))
    neg[16] = 0xFE                             # magic -2: legacy by FileLogInputStream, invalid
    small_v2 = struct.pack(">qiib", 0, 40, 0, 2) + bytes(40 - 5)   # v2 smaller than 61 bytes
    path = _write(tmp_path / "00000000000000000000.log", bytes(neg) + small_v2 + good)
    with Segment(path) as seg:
        it = seg.batches()
        with pytest.raises(DecodeError) as e1:
            next(it)
        assert e1.value.position == 0 and not it.exhausted
        with pytest.raises(DecodeError) as e2:
            next(it)
        assert e2.value.position == len(neg) and "61" in e2.value.reason
        assert next(it).position == len(neg) + len(small_v2)


def test_mixed_magic_file(tmp_path):
    data = (legacy_batch(0, [(None, b"a", b"0")]) + v2_batch(sample_records(2))
            + legacy_batch(1, [(T0, b"b", b"1")]) + v2_batch(sample_records(1), codec="lz4"))
    path = _write(tmp_path / "00000000000000000000.log", data)
    with Segment(path) as seg:
        assert [b.magic for b in seg.batches()] == [0, 2, 1, 2]
        assert len(list(seg.records())) == 5


def test_empty_file_and_max_bytes(tmp_path):
    path = _write(tmp_path / "00000000000000000000.log", b"")
    with Segment(path) as seg:
        assert seg.size == 0 and list(seg.batches()) == []
    a, b = v2_batch(sample_records(2)), v2_batch(sample_records(3))
    path = _write(tmp_path / "00000000000000000005.log", a + b)
    with Segment(path) as seg:
        assert seg.base_offset == 5
        it = seg.batches(0, len(a) + 20)
        assert len(list(it)) == 1 and it.trailing_bytes == 20


def test_batch_at_and_resync_search(tmp_path):
    a, b, c = v2_batch(sample_records(2)), v2_batch(sample_records(3)), legacy_batch(1, [(T0, b"k", b"v")])
    garbage = bytes(range(256)) * 3 + b"\x00" * 500
    path = _write(tmp_path / "00000000000000000000.log", a + garbage + b + c)
    with Segment(path) as seg:
        assert seg.batch_at(0).size_in_bytes == len(a)
        assert seg.batch_at(len(a) + len(garbage)).record_count == 3
        assert seg.batch_at(0, limit=len(a) - 1) is None      # does not fit the limit
        assert seg.plausible_at(0) and not seg.plausible_at(1)
        assert seg.find_next_batch(1) == len(a) + len(garbage)
        assert seg.find_next_batch(len(a) + len(garbage) + 1) == len(a) + len(garbage) + len(b)
        assert seg.find_next_batch(len(a + garbage + b) + 1) == -1


def test_close_with_live_views(tmp_path):
    path = _write(tmp_path / "00000000000000000000.log", v2_batch(sample_records(2)))
    seg = Segment(path)
    batch = next(seg.batches())
    seg.close()                                # views still alive: the map outlives close()
    assert [r.offset for r in batch] == [0, 1]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
def test_scan_memory_stays_near_the_batch_size(tmp_path):
    """Peak RSS while checking every CRC of a 128 MiB segment: pages behind the scan are released."""
    batch = bytearray(v2_batch([(T0, b"k", os.urandom(60_000), [])]))
    n = (128 << 20) // len(batch)
    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as fh:
        for i in range(n):
            struct.pack_into(">q", batch, 0, i)
            fh.write(batch)
    # VmHWM (peak RSS of this process image): unlike getrusage's ru_maxrss it is not
    # inherited across exec from the (large) pytest process that forks the child.
    script = (
        "import re, sys\n"
        "from kafkarec.log.segment import Segment\n"
        "def hwm():\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "base = hwm()\n"
        "with Segment(sys.argv[1]) as seg:\n"
        "    assert all(b.crc_valid for b in seg.batches(release=sys.argv[2] == '1'))\n"
        "print((hwm() - base) // 1024)\n")
    root = ROOT

    def growth(release):
        out = subprocess.run([sys.executable, "-c", script, str(path), release], cwd=root,
                             capture_output=True, text=True, check=True)
        return int(out.stdout)
    released, kept = growth("1"), growth("0")
    assert released < 40             # MiB: the 16 MiB release window plus noise
    assert kept > released + 60      # the same scan keeping every page mapped


# --- log directories -----------------------------------------------------------------

@pytest.mark.parametrize("name,expected", [
    ("orders-0", ("orders", 0)),
    ("web-clicks-12", ("web-clicks", 12)),
    ("a-b-c-3", ("a-b-c", 3)),
    ("t--1", ("t-", 1)),
    ("__consumer_offsets-49", ("__consumer_offsets", 49)),
    ("orders-3.0a1b2c3d4e5f-delete", ("orders", 3)),
    ("orders-3.0a1b2c3d4e5f-future", ("orders", 3)),
    ("orders-3.0a1b2c3d4e5f-stray", ("orders", 3)),
    ("orders-delete", None),               # suffix without the .<id> Kafka writes
    ("orders", None),
    ("orders-x", None),
    ("-3", None),
    ("orders-", None),
    ("orders-99999999999", None),          # not an int
])
def test_parse_topic_partition(name, expected):
    tp = parse_topic_partition(name)
    assert (tuple(tp) if tp else None) == expected


def test_find_partition_dirs_orders_by_topic_then_partition(tmp_path):
    for name in ("b-10", "b-2", "a-1", "not-kafka"):
        os.makedirs(tmp_path / name)
    _write(tmp_path / "not-kafka" / "notes.txt", b"hi")
    _write(tmp_path / "meta.properties", b"version=1\n")
    found = [p.name for p in find_partition_dirs(str(tmp_path))]
    assert found == ["a-1", "b-2", "b-10"]
    assert not is_partition_dir(str(tmp_path / "not-kafka"))


def test_scan_partition_dir(logroot, tmp_path):
    root, writers = logroot
    p = scan_partition_dir(os.path.join(root, "web-clicks-1"))
    assert p.topic_partition == ("web-clicks", 1)
    assert [s.base_offset for s in p.segments] == sorted({a.segment_base for a in writers["web-clicks-1"].appended})
    assert all(s.log and s.index and s.timeindex for s in p.segments)
    assert p.leader_epoch_checkpoint.endswith("leader-epoch-checkpoint")
    assert p.partition_metadata.endswith("partition.metadata")
    assert [os.path.basename(s) for s in p.producer_snapshots]
    # Offsets sort numerically even without Kafka's zero padding; odd files land in `other`.
    d = tmp_path / "x-0"
    os.makedirs(d)
    for name in ("100.log", "99.log", "99.index", "00000000000000000000.log.deleted", "quorum-state"):
        _write(d / name, b"")
    p = scan_partition_dir(str(d))
    assert [s.base_offset for s in p.segments] == [99, 100]
    assert p.segments[0].index.endswith("99.index")
    assert sorted(os.path.basename(o) for o in p.other) == ["00000000000000000000.log.deleted", "quorum-state"]


def test_find_partition_dirs_of_the_standard_layout(logroot):
    root, writers = logroot
    assert [p.name for p in find_partition_dirs(root)] == [
        "compacted-0", "legacy-0", "payments-0", "web-clicks-0", "web-clicks-1", "web-clicks-2"]


# --- verification --------------------------------------------------------------------

def _problems(pdir, **kw):
    out = []
    for _, probs in check_partition(pdir, **kw):
        out.extend(probs)
    return out


def test_clean_log_dir_verifies(logroot):
    root, _ = logroot
    for pdir in find_partition_dirs(root):
        assert [p for p in _problems(pdir, deep=True) if p.severity != "note"] == []


def _corruptible(tmp_path, n=6, **close):
    w = PartitionWriter(str(tmp_path), "c", 0, segment_bytes=1 << 20)
    app = [w.append(v2_batch(sample_records(30, start_ts=T0 + 100 * k), codec=c))
           for k, c in enumerate(["none", "gzip", "lz4", "none", "zstd", "none"][:n])]
    w.close(**close)
    return w, app


def test_verify_reports_crc_error_with_position_and_offset(tmp_path):
    w, app = _corruptible(tmp_path)
    w.corrupt(app[2])
    probs = _problems(scan_partition_dir(w.dir))
    assert [(p.position, p.offset, p.severity) for p in probs] == [(app[2].position, app[2].base_offset, "error")]
    assert probs[0].reason.startswith("Record is corrupt (stored crc = ")
    assert probs[0].path == w.log_path(0)


def test_verify_stops_at_bad_framing_unless_resync(tmp_path):
    w, app = _corruptible(tmp_path)
    with open(w.log_path(0), "r+b") as fh:      # a size field of 5
        fh.seek(app[3].position + 8)
        fh.write(struct.pack(">i", 5))
    pdir = scan_partition_dir(w.dir)
    probs = _problems(pdir)
    errors = [p for p in probs if p.severity == "error"]
    assert len(errors) == 1 and errors[0].position == app[3].position
    assert any("stopped reading" in p.reason for p in probs)
    # With --resync the scan goes on at the next batch: it and every later batch are checked.
    checks = [c for c, _ in check_partition(pdir, resync=True) if c is not None]
    assert checks[0].batches == 5 and checks[0].skipped_bytes == app[3].size
    probs = _problems(pdir, resync=True)
    assert [p.severity for p in probs] == ["error", "warning"]
    assert f"at position {app[4].position}" in probs[1].reason


def test_resync_distrusts_the_size_of_a_bad_crc_batch(tmp_path):
    w, app = _corruptible(tmp_path)
    with open(w.log_path(0), "r+b") as fh:      # a plausible but wrong size: CRC fails, next header is garbage
        fh.seek(app[1].position + 8)
        fh.write(struct.pack(">i", app[1].size - 12 + 7))
    pdir = scan_partition_dir(w.dir)
    check = [c for c, _ in check_partition(pdir, resync=True) if c is not None][0]
    probs = [p for p in check.problems]
    assert probs[0].position == app[1].position and "crc" in probs[0].reason
    assert check.batches == 6          # all others found again
    assert check.last_offset == app[-1].last_offset


def test_verify_truncated_tail(tmp_path):
    w, app = _corruptible(tmp_path, crash=True, truncate_tail=15)
    probs = _problems(scan_partition_dir(w.dir))
    assert len(probs) == 1 and probs[0].position == app[-1].position
    assert "truncated write" in probs[0].reason


def test_verify_offsets_across_segments(tmp_path):
    d = tmp_path / "o-0"
    os.makedirs(d)
    b = bytearray(v2_batch(sample_records(5)))
    _write(d / "00000000000000000000.log", bytes(b))      # offsets 0..4
    struct.pack_into(">q", b, 0, 3)
    _write(d / "00000000000000000003.log", bytes(b))      # 3..7: overlaps the previous segment
    struct.pack_into(">q", b, 0, 2)
    _write(d / "00000000000000000010.log", bytes(b))      # 2..6: below its base offset 10
    reasons = [p.reason for p in _problems(scan_partition_dir(str(d)))]
    assert any("offsets go backwards" in r for r in reasons)
    assert any("not above the previous segment's last offset 4" in r for r in reasons)
    assert any("below the segment's base offset 10" in r for r in reasons)


def test_verify_deep_decodes_records(tmp_path):
    # A batch whose CRC is right but whose records are not: only --deep finds it.
    rec = b"\x7f\x00"                                   # record length 63, then nothing
    bad = R.v2_batch(rec, record_count=1, last_offset_delta=0, base_timestamp=T0, max_timestamp=T0,
                     partition_leader_epoch=0)
    d = tmp_path / "d-0"
    os.makedirs(d)
    _write(d / "00000000000000000000.log", bad)
    pdir = scan_partition_dir(str(d))
    assert _problems(pdir) == []
    probs = _problems(pdir, deep=True)
    assert len(probs) == 1 and "record" in probs[0].reason.lower()


def test_verify_index_mismatch_and_txn_index(tmp_path):
    w = PartitionWriter(str(tmp_path), "x", 0, segment_bytes=1 << 20, index_interval_bytes=500)
    for k in range(6):
        w.append(v2_batch(sample_records(10, start_ts=T0 + k * 100), producer_id=9, producer_epoch=0,
                          base_sequence=k * 10, transactional=True))
    w.end_txn(CONTROL_ABORT, 9, coordinator_epoch=1, timestamp=T0 + 999)
    w.close()
    pdir = scan_partition_dir(w.dir)
    assert _problems(pdir) == []
    index = pdir.segments[0].index
    with open(index, "r+b") as fh:                  # first entry: wrong relative offset
        fh.write(struct.pack(">i", 3))
    reasons = [p.reason for p in _problems(pdir)]
    assert any(r.startswith("Index offset: 3, log offset:") for r in reasons)
    with open(pdir.segments[0].txnindex, "r+b") as fh:   # the aborted txn now ends elsewhere
        fh.seek(2 + 8 + 8)
        fh.write(struct.pack(">q", 5))
    reasons = [p.reason for p in _problems(pdir)]
    assert any("ends at offset 5, where the log has no control marker" in r for r in reasons)


def test_verify_time_index_timestamps(tmp_path):
    w = PartitionWriter(str(tmp_path), "ti", 0, segment_bytes=1 << 20, index_interval_bytes=100)
    for k in range(4):
        w.append(v2_batch(sample_records(5, start_ts=T0 + k * 100)))
    w.close()
    pdir = scan_partition_dir(w.dir)
    tpath = pdir.segments[0].timeindex
    with open(tpath, "r+b") as fh:
        fh.write(struct.pack(">q", T0 + 1))          # first entry's timestamp no longer matches
    reasons = [p.reason for p in _problems(pdir)]
    assert any(r.startswith(f"Index timestamp: {T0 + 1}, log timestamp: ") for r in reasons)


def test_untrimmed_indexes_after_a_crash_are_notes(tmp_path):
    w = PartitionWriter(str(tmp_path), "u", 0, segment_bytes=2000, index_interval_bytes=300)
    for k in range(8):
        w.append(v2_batch(sample_records(5, start_ts=T0 + k)))
    w.close(crash=True)
    pdir = scan_partition_dir(w.dir)
    probs = _problems(pdir)
    assert [p for p in probs if p.severity != "note"] == []


def test_leader_epoch_mismatch_is_a_warning(tmp_path):
    w = PartitionWriter(str(tmp_path), "le", 0)
    w.append(v2_batch(sample_records(3)))
    w.set_leader_epoch(4)
    w.append(v2_batch(sample_records(3)))
    w.close()
    pdir = scan_partition_dir(w.dir)
    assert _problems(pdir) == []
    with open(pdir.leader_epoch_checkpoint, "w") as fh:
        fh.write("0\n2\n0 0\n4 5\n")                  # epoch 4 starts two offsets late
    probs = _problems(pdir)
    assert [p.severity for p in probs] == ["warning"]
    assert "partition leader epoch 4" in probs[0].reason


def test_kraft_snapshot_structure(tmp_path):
    from kafkarec.control import encode_control_value
    header = kraft_control_batch([(3, encode_control_value(3, {"lastContainedLogTimestamp": T0}))],
                                 timestamp=T0)
    footer = kraft_control_batch([(4, encode_control_value(4, {}))], timestamp=T0)
    body = bytearray(v2_batch(sample_records(2)))
    d = tmp_path / "__cluster_metadata-0"
    os.makedirs(d)
    snap = bytearray(header)
    struct.pack_into(">q", body, 0, 1)
    snap += body
    f = bytearray(footer)
    struct.pack_into(">q", f, 0, 3)
    snap += f
    _write(d / "00000000000000000004-0000000002.checkpoint", bytes(snap))
    assert _problems(scan_partition_dir(str(d)), deep=True) == []
    _write(d / "00000000000000000004-0000000002.checkpoint", bytes(snap[:len(header) + len(body)]))
    reasons = [p.reason for p in _problems(scan_partition_dir(str(d)))]
    assert reasons == ["the last batch holds no SnapshotFooter control record"]


def test_root_named_like_a_partition(tmp_path):
    # /var/lib/kafka/data-1 is a log dir root, not partition 1 of topic "data".
    root = tmp_path / "data-1"
    os.makedirs(root / "orders-0")
    _write(root / "orders-0" / "00000000000000000000.log", v2_batch(sample_records(1)))
    assert not is_partition_dir(str(root))
    assert [p.name for p in find_partition_dirs(str(root))] == ["orders-0"]
    empty = tmp_path / "orders-7"                 # a partition with no segments yet
    os.makedirs(empty)
    assert is_partition_dir(str(empty))
    _write(tmp_path / "meta.properties", b"")
    assert not is_partition_dir(str(tmp_path))


def test_index_entry_at_a_bad_crc_batch_is_still_matched(tmp_path):
    w = PartitionWriter(str(tmp_path), "i", 0, index_interval_bytes=300)
    app = [w.append(v2_batch(sample_records(5, start_ts=T0 + k))) for k in range(6)]
    w.close()
    pdir = scan_partition_dir(w.dir)
    from kafkarec.log import sidefiles as sf
    target = list(sf.OffsetIndex(pdir.segments[0].index))[0]
    hit = [a for a in app if a.position == target.position][0]
    w.corrupt(hit)
    probs = _problems(pdir)
    assert [(p.position, p.severity) for p in probs] == [(hit.position, "error")]
    assert "crc" in probs[0].reason


def test_legacy_wrapper_first_offset_is_kafkas_base_offset(tmp_path):
    # A v1 gzip wrapper whose wrapper offset moves on (12) but whose inner messages
    # (relative 0..3 -> 9..12) overlap the previous batch (0..9).  The batch's first offset
    # is Kafka's baseOffset() (AbstractLegacyRecordBatch opens the wrapper): 9, so verify
    # sees the overlap with or without --deep (it took the wrapper's own offset, 12, before).
    first = v2_batch(sample_records(10))
    wrapper = bytearray(legacy_batch(1, [(T0 + i, b"k", b"v%d" % i) for i in range(4)], codec="gzip"))
    struct.pack_into(">q", wrapper, 0, 12)
    struct.pack_into(">q", wrapper, 18, T0 + 3)
    wrapper = R.with_legacy_crc(wrapper)
    d = tmp_path / "l-0"
    os.makedirs(d)
    _write(d / "00000000000000000000.log", first + wrapper)
    pdir = scan_partition_dir(str(d))
    for deep in (False, True):
        probs = _problems(pdir, deep=deep)
        assert [(p.offset, p.reason) for p in probs] == [
            (9, "offsets go backwards: batch starts at 9 after offset 9")]


def test_resync_skips_zero_runs_and_garbage(tmp_path):
    # A preallocated/crashed stretch of zeros and a stretch of random bytes between good batches.
    import random
    rng = random.Random(5)
    good = [bytearray(v2_batch(sample_records(4, start_ts=T0 + k), codec="lz4")) for k in range(4)]
    for k, b in enumerate(good):
        struct.pack_into(">q", b, 0, 10 * k)
    junk = bytes(rng.getrandbits(8) for _ in range(300_000))
    data = bytes(good[0]) + bytes(3 << 20) + bytes(good[1]) + junk + bytes(good[2]) + bytes(good[3])
    d = tmp_path / "z-0"
    os.makedirs(d)
    _write(d / "00000000000000000000.log", data)
    check = [c for c, _ in check_partition(scan_partition_dir(str(d)), resync=True) if c is not None][0]
    assert check.batches == 4 and check.last_offset == 33
    assert check.skipped_bytes == (3 << 20) + len(junk)
    assert [p.severity for p in check.problems] == ["error", "warning", "error", "warning"]
