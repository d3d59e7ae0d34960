"""The kafkarec command line, driven as a user would: ``main([...])`` and ``python -m kafkarec``.

Expected dump lines are built by ``java_*`` helpers that spell out the string
concatenations of Kafka's DumpLogSegments (tools/.../DumpLogSegments.java,
the Java rewrite run by kafka-dump-log.sh): printBatchLevel,
printRecordMetadata, printRecordContents, printControlRecord, dumpIndex,
dumpTimeIndex, dumpTxnIndex, dumpProducerIdSnapshot and the stderr reports.
"""
from support.paths import ROOT
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from kafkarec import cli
from kafkarec.log import sidefiles as sf
from kafkarec.cli import main
from kafkarec.cli.stats import Histogram, Progress

from support.logs.logdir import (CONTROL_ABORT, T0, PartitionWriter, build_log_dir,
                    kraft_control_batch, legacy_batch, producer_snapshot_bytes, sample_records,
                    v2_batch, write_offset_index, write_time_index)

CODEC = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


# --- the Java formats ------------------------------------------------------------

def _b(v):
    return "true" if v else "false"


def java_batch_line(raw: bytes, position: int) -> str:
    """printBatchLevel, with every field read from the batch's bytes."""
    magic = raw[16]
    size = len(raw)
    if magic >= 2:
        (base, _, ple, _, crc, attrs, delta, base_ts, max_ts, pid, pepoch, base_seq,
         count) = struct.unpack_from(">qiibIhiqqqhii", raw)
        last_seq = -1 if base_seq == -1 else base_seq + delta
        horizon = f"OptionalLong[{base_ts}]" if attrs & 0x40 else "OptionalLong.empty"
        ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
        head = ("baseOffset: " + str(base) + " lastOffset: " + str(base + delta) + " count: " + str(count)
                + " baseSequence: " + str(base_seq) + " lastSequence: " + str(last_seq)
                + " producerId: " + str(pid) + " producerEpoch: " + str(pepoch)
                + " partitionLeaderEpoch: " + str(ple) + " isTransactional: " + _b(attrs & 0x10)
                + " isControl: " + _b(attrs & 0x20) + " deleteHorizonMs: " + horizon)
    else:
        offset, _, crc, _, attrs = struct.unpack_from(">qiIbb", raw)
        max_ts = struct.unpack_from(">q", raw, 18)[0] if magic == 1 else -1
        ts_type = "NoTimestampType" if magic == 0 else ("LogAppendTime" if attrs & 0x08 else "CreateTime")
        head = "offset: " + str(offset)
    return (head + " position: " + str(position) + " " + ts_type + ": " + str(max_ts) + " size: " + str(size)
            + " magic: " + str(magic) + " compresscodec: " + CODEC[attrs & 7] + " crc: " + str(crc)
            + " isvalid: true")


def java_record_line(offset, ts_type, ts, key, value, *, sequence=None, header_keys=None, legacy_crc=None,
                     control="", print_data=False, skip_meta=False) -> str:
    """printRecordMetadata + printRecordContents."""
    line = ""
    if not skip_meta:
        line = ("| offset: " + str(offset) + " " + ts_type + ": " + str(ts) + " keySize: "
                + str(-1 if key is None else len(key)) + " valueSize: " + str(-1 if value is None else len(value)))
        if sequence is not None:
            line += " sequence: " + str(sequence) + " headerKeys: [" + ",".join(header_keys) + "]"
        if legacy_crc is not None:
            line += " isValid: true crc: " + str(legacy_crc)
        line += control
    if print_data and not control:
        prefix = "| " if skip_meta else " "
        if key is not None:
            line += prefix + "key: " + key.decode()
            prefix = " "
        if value is not None:
            line += prefix + "payload: " + value.decode()
    return line


def run(args, capfd):
    code = main(args)
    out, err = capfd.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    return str(root), build_log_dir(str(root))


# --- dump: .log ----------------------------------------------------------------------

@pytest.fixture()
def small(tmp_path):
    """A segment with plain, compressed, transactional, control and legacy batches, and 9 stray bytes."""
    w = PartitionWriter(str(tmp_path), "dump", 0, segment_bytes=1 << 20)
    recs = [(T0, b"k1", b"hello", [("h1", b"x"), ("h2", None)]), (T0 + 5, None, b"no key", []),
            (T0 + 7, b"k3", None, [])]
    w.append(v2_batch(recs))
    w.append(v2_batch(sample_records(3, start_ts=T0 + 10), codec="gzip"))
    w.append(v2_batch(recs[:1], producer_id=42, producer_epoch=3, base_sequence=7, transactional=True))
    w.end_txn(CONTROL_ABORT, 42, coordinator_epoch=9, timestamp=T0 + 20)
    w.append(legacy_batch(0, [(None, b"old", b"zero")]))
    w.append(legacy_batch(1, [(T0 + 30, b"old", b"one")]))
    w.close()
    log = w.log_path(0)
    with open(log, "ab") as fh:
        fh.write(b"\x00" * 9)
    return w, log, recs


def test_dump_log_batch_lines(small, capfd):
    w, log, _ = small
    code, out, err = run(["dump", log], capfd)
    assert code == 0 and err == ""
    expected = [f"Dumping {log}", "Log starting offset: 0"]
    expected += [java_batch_line(a.raw, a.position) for a in w.appended]
    expected.append(f"Found 9 invalid bytes at the end of {os.path.basename(log)}")
    assert out.splitlines() == expected


def test_dump_log_record_lines(small, capfd):
    w, log, recs = small
    code, out, err = run(["dump", "--deep-iteration", log], capfd)
    lines = out.splitlines()
    a0 = w.appended[0]
    assert lines[2] == java_batch_line(a0.raw, 0)
    assert lines[3:6] == [
        java_record_line(0, "CreateTime", T0, b"k1", b"hello", sequence=-1, header_keys=["h1", "h2"]),
        java_record_line(1, "CreateTime", T0 + 5, None, b"no key", sequence=-1, header_keys=[]),
        java_record_line(2, "CreateTime", T0 + 7, b"k3", None, sequence=-1, header_keys=[]),
    ]
    txn, marker = w.appended[2], w.appended[3]
    i = lines.index(java_batch_line(txn.raw, txn.position))
    assert lines[i + 1] == java_record_line(txn.base_offset, "CreateTime", T0, b"k1", b"hello",
                                            sequence=7, header_keys=["h1", "h2"])
    assert lines[i + 2] == java_batch_line(marker.raw, marker.position)
    assert lines[i + 3] == java_record_line(marker.base_offset, "CreateTime", T0 + 20, b"\x00" * 4, b"\x00" * 6,
                                            sequence=-1, header_keys=[],
                                            control=" endTxnMarker: ABORT coordinatorEpoch: 9")
    v0, v1 = w.appended[4], w.appended[5]
    assert lines[i + 5] == java_record_line(v0.last_offset, "NoTimestampType", -1, b"old", b"zero",
                                            legacy_crc=struct.unpack_from(">I", v0.raw, 12)[0])
    assert lines[i + 7] == java_record_line(v1.last_offset, "CreateTime", T0 + 30, b"old", b"one",
                                            legacy_crc=struct.unpack_from(">I", v1.raw, 12)[0])
    # Every record follows the previous offset; the Java rewrite starts "previous" at -1.
    assert err == ""


def test_dump_print_data_log(small, capfd):
    w, log, recs = small
    code, out, _ = run(["dump", "--print-data-log", log], capfd)
    lines = out.splitlines()
    assert lines[3] == java_record_line(0, "CreateTime", T0, b"k1", b"hello", sequence=-1,
                                        header_keys=["h1", "h2"], print_data=True)
    assert lines[3].endswith(" key: k1 payload: hello")
    assert lines[4].endswith("headerKeys: [] payload: no key")
    assert lines[5].endswith("headerKeys: [] key: k3")
    # Control records never print key/payload.
    assert [l for l in lines if "endTxnMarker" in l][0].endswith("coordinatorEpoch: 9")


def test_dump_skip_record_metadata(small, capfd):
    w, log, recs = small
    code, out, _ = run(["dump", "--print-data-log", "--skip-record-metadata", log], capfd)
    lines = out.splitlines()
    assert lines[3:6] == ["| key: k1 payload: hello", "| payload: no key", "| key: k3"]
    # A control record with its metadata skipped prints an empty line, as Kafka does.
    marker = w.appended[3]
    i = lines.index(java_batch_line(marker.raw, marker.position))
    assert lines[i + 1] == ""
    code, out, _ = run(["dump", "--deep-iteration", "--skip-record-metadata", log], capfd)
    assert out.splitlines()[3:6] == ["", "", ""]


def test_dump_non_consecutive_offsets_report(logroot, capfd):
    root, writers = logroot
    log = writers["compacted-0"].log_path(0)
    code, out, err = run(["dump", "--deep-iteration", log], capfd)
    assert code == 0
    assert err.splitlines() == [f"Non-consecutive offsets in {os.path.abspath(log)}",
                                "  0 is followed by 3", "  4 is followed by 9", "  9 is followed by 16",
                                "  17 is followed by 20", "  20 is followed by 27"]
    # count 0 batch (kept by the cleaner for producer state): a line, no records
    empty = writers["compacted-0"].appended[2]
    assert java_batch_line(empty.raw, empty.position) in out.splitlines()


def test_dump_max_bytes(small, capfd):
    w, log, _ = small
    limit = w.appended[1].position + w.appended[1].size + 10
    code, out, _ = run(["dump", "--max-bytes", str(limit), log], capfd)
    lines = out.splitlines()
    assert lines[2:] == [java_batch_line(a.raw, a.position) for a in w.appended[:2]]   # no "invalid bytes" line


def test_dump_legacy_wrappers(logroot, capfd):
    root, writers = logroot
    w = writers["legacy-0"]
    code, out, err = run(["dump", "--deep-iteration", w.log_path(0)], capfd)
    lines = out.splitlines()
    for a in w.appended:
        assert java_batch_line(a.raw, a.position) in lines
    gz = [l for l in lines if "compresscodec: gzip" in l][0]
    i = lines.index(gz)
    inner = lines[i + 1:i + 5]
    assert [l.split(" ")[2] for l in inner] == ["6", "7", "8", "9"]
    assert all(" isValid: true crc: " in l and "sequence" not in l for l in inner)
    assert err == ""


def test_dump_kraft_checkpoint(tmp_path, capfd):
    from kafkarec.control import encode_control_value
    voters = {"voters": [{"voterId": 1, "voterDirectoryId": "AAECAwQFBgcICQoLDA0ODw",
                          "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                          "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}
    header = kraft_control_batch([(3, encode_control_value(3, {"lastContainedLogTimestamp": T0})),
                                  (5, encode_control_value(5, {"kRaftVersion": 1})),
                                  (6, encode_control_value(6, voters))], timestamp=T0)
    footer = bytearray(kraft_control_batch([(4, encode_control_value(4, {}))], timestamp=T0))
    struct.pack_into(">q", footer, 0, 3)
    path = tmp_path / "00000000000000000003-0000000007.checkpoint"
    path.write_bytes(header + bytes(footer))
    code, out, err = run(["dump", "--deep-iteration", str(path)], capfd)
    lines = out.splitlines()
    assert lines[1] == "Snapshot end offset: 3, epoch: 7"
    assert lines[3].endswith(' SnapshotHeader {"version":0,"lastContainedLogTimestamp":%d}' % T0)
    assert lines[4].endswith(' KRaftVersion {"version":0,"kRaftVersion":1}')
    assert lines[5].endswith(' KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":'
                             '"AAECAwQFBgcICQoLDA0ODw","endpoints":[{"name":"CONTROLLER","host":"localhost",'
                             '"port":9093}],"kRaftVersionFeature":{"minSupportedVersion":0,'
                             '"maxSupportedVersion":1}}]}')
    assert lines[7].endswith(' SnapshotFooter {"version":0}')
    boot = tmp_path / "bootstrap.checkpoint"
    shutil.copy(path, boot)
    code, out, err = run(["dump", str(boot)], capfd)
    assert out.splitlines()[1] == "KRaft bootstrap snapshot"


def test_dump_corrupt_log_is_reported(tmp_path, capfd):
    path = tmp_path / "00000000000000000000.log"
    good = v2_batch(sample_records(2))
    path.write_bytes(good + struct.pack(">qi", 0, 3) + bytes(30))
    code, out, err = run(["dump", str(path)], capfd)
    assert code == 1
    assert java_batch_line(good, 0) in out
    assert f"position {len(good)}: Found record size 3 smaller than minimum record overhead (14)" in err


# --- dump: side files ----------------------------------------------------------------

def test_dump_index_and_time_index(logroot, capfd):
    root, writers = logroot
    w = writers["web-clicks-0"]
    index = os.path.join(w.dir, "00000000000000000000.index")
    tindex = os.path.join(w.dir, "00000000000000000000.timeindex")
    code, out, err = run(["dump", index, tindex], capfd)
    assert code == 0 and err == ""
    entries = list(sf.OffsetIndex(index))
    times = list(sf.TimeIndex(tindex))
    assert entries and times
    assert out.splitlines() == ([f"Dumping {index}"]
                                + [f"offset: {e.offset} position: {e.position}" for e in entries]
                                + [f"Dumping {tindex}"]
                                + [f"timestamp: {t.timestamp} offset: {t.offset}" for t in times])
    code, out, err = run(["dump", "--verify-index-only", index, tindex], capfd)
    assert out.splitlines() == [f"Dumping {index}", f"Dumping {tindex}"] and err == ""
    code, out, err = run(["dump", "--index-sanity-check", index, tindex], capfd)
    assert out.splitlines() == [f"Dumping {index}", f"{index} passed sanity check.",
                                f"Dumping {tindex}", f"{tindex} passed sanity check."]


def test_dump_index_mismatch_report(tmp_path, capfd):
    w = PartitionWriter(str(tmp_path), "m", 0, index_interval_bytes=200)
    for k in range(5):
        w.append(v2_batch(sample_records(3, start_ts=T0 + k)))
    w.close()
    index = os.path.join(w.dir, "00000000000000000000.index")
    entries = list(sf.OffsetIndex(index))
    write_offset_index(index, 0, [(e.offset + 1, e.position) for e in entries] + [(0, 0)] * 3)
    code, out, err = run(["dump", index], capfd)
    assert code == 0
    # Entries stop at the zero (preallocated) tail; mismatches come last, highest index offset first.
    assert out.splitlines()[1:] == [f"offset: {e.offset + 1} position: {e.position}" for e in entries]
    assert err.splitlines() == ([f"Mismatches in :{os.path.abspath(index)}"]
                                + [f"  Index offset: {e.offset + 1}, log offset: {e.offset}"
                                   for e in reversed(entries)])
    empty = os.path.join(w.dir, "00000000000000000099.index")
    open(empty, "wb").close()
    code, out, err = run(["dump", empty], capfd)
    assert out.splitlines() == [f"Dumping {empty}", f"{empty} is empty."]


def test_dump_time_index_error_reports(tmp_path, capfd):
    w = PartitionWriter(str(tmp_path), "ti", 0, index_interval_bytes=100)
    for k in range(4):
        w.append(v2_batch(sample_records(3, start_ts=T0 + 100 * k)))
    w.close()
    tindex = os.path.join(w.dir, "00000000000000000000.timeindex")
    good = list(sf.TimeIndex(tindex))
    bad = [(good[0].timestamp + 1, good[0].offset), (good[0].timestamp, good[1].offset), (T0 + 999, 1)]
    write_time_index(tindex, 0, bad)
    code, out, err = run(["dump", tindex], capfd)
    assert out.splitlines()[1:] == [f"timestamp: {t} offset: {o}" for t, o in bad]
    a = os.path.abspath(tindex)
    assert err.splitlines() == [
        f"Found timestamp mismatch in :{a}",
        f"  Index timestamp: {bad[0][0]}, log timestamp: {good[0].timestamp}",
        f"  Index timestamp: {bad[1][0]}, log timestamp: {good[1].timestamp}",
        f"Found out of order timestamp in :{a}",
        f"  Index timestamp: {bad[1][0]}, Previously indexed timestamp: {bad[0][0]}",
        f"The following indexed offsets are not found in :{a}",     # kafka-dump-log 4.3.1 and 4.4.0 alike
        "Indexed offset: 1, found log offset: 2",
    ]


def test_dump_txn_index_and_snapshot(logroot, tmp_path, capfd):
    root, writers = logroot
    w = writers["payments-0"]
    txn = os.path.join(w.dir, "00000000000000000000.txnindex")
    snap_path = os.path.join(w.dir, sf.file_name(w.next_offset, ".snapshot"))
    code, out, err = run(["dump", txn, snap_path], capfd)
    lines = out.splitlines()
    t = sf.TransactionIndex(txn).entries()[0]
    assert lines[1] == (f"version: 0 producerId: 2000 firstOffset: {t.first_offset} lastOffset: {t.last_offset} "
                        f"lastStableOffset: {t.last_stable_offset}")
    snap = {e.producer_id: e for e in sf.read_producer_snapshot(snap_path).entries}
    e = snap[1000]
    assert (f"producerId: 1000 producerEpoch: 1 coordinatorEpoch: 7 currentTxnFirstOffset: OptionalLong.empty "
            f"lastTimestamp: {e.timestamp} firstSequence: 5 lastSequence: 9 lastOffset: {e.last_offset} "
            f"offsetDelta: 4 timestamp: {e.timestamp}") in lines
    # An ongoing transaction and no batch metadata.
    path = tmp_path / "00000000000000000100.snapshot"
    path.write_bytes(producer_snapshot_bytes([(5, 2, -1, -1, 0, T0, 3, 90)]))
    code, out, err = run(["dump", str(path)], capfd)
    assert out.splitlines()[1] == ("producerId: 5 producerEpoch: 2 coordinatorEpoch: 3 "
                                   f"currentTxnFirstOffset: OptionalLong[90] lastTimestamp: {T0}")
    path.write_bytes(b"\x00\x02")
    code, out, err = run(["dump", str(path)], capfd)
    assert code == 1
    assert err.strip() == "Snapshot failed schema validation: Snapshot contained an unknown file version 2"


def test_dump_partition_dir_and_json(logroot, capfd):
    root, writers = logroot
    d = writers["payments-0"].dir
    code, out, err = run(["dump", "--json", "--print-data-log", d], capfd)
    assert code == 0
    objs = [json.loads(l) for l in out.splitlines()]
    kinds = {o["type"] for o in objs}
    assert {"file", "log_start", "batch", "record", "aborted_txn", "producer_state", "leader_epoch"} <= kinds
    files = [o["file"] for o in objs if o["type"] == "file"]
    assert files[0].endswith("00000000000000000000.log")
    records = [o for o in objs if o["type"] == "record"]
    marker = [r for r in records if r.get("control_type") == "ABORT"][0]
    assert marker["coordinator_epoch"] == 7 and "key" not in marker
    data = [r for r in records if "control_type" not in r][0]
    assert data["key"].startswith("pay-") and data["payload"].startswith("value-0-")
    batches = [o for o in objs if o["type"] == "batch"]
    assert all(b["isvalid"] for b in batches)
    assert sum(1 for b in batches if b.get("is_control")) == 2


def test_dump_unknown_and_missing(tmp_path, capfd):
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    code, out, err = run(["dump", str(other)], capfd)
    # kafka-dump-log's words, and its exit status 0 (issue 49): not a usage error
    assert code == 0 and err.strip() == f"Ignoring unknown file {other}" and out == f"Dumping {other}\n"
    code, out, err = run(["dump", str(tmp_path / "nope.log")], capfd)
    assert code == 2 and "no such file or directory" in err and out == ""
    os.makedirs(tmp_path / "empty")
    code, out, err = run(["verify", str(tmp_path / "empty")], capfd)
    assert code == 2 and "not a Kafka log directory" in err


# --- verify ----------------------------------------------------------------------------

def test_verify_clean_log_dir(logroot, capfd):
    root, writers = logroot
    code, out, err = run(["verify", "--deep", root], capfd)
    assert code == 0
    assert out.splitlines()[-1].startswith("checked 6 partition(s), ")
    assert out.splitlines()[-1].endswith(": 0 error(s), 0 warning(s)")


def _corrupted(tmp_path):
    w = PartitionWriter(str(tmp_path), "bad", 0)
    app = [w.append(v2_batch(sample_records(10, start_ts=T0 + k), codec=c))
           for k, c in enumerate(["none", "lz4", "none", "zstd", "none"])]
    w.close()
    w.corrupt(app[1])
    with open(w.log_path(0), "r+b") as fh:
        fh.seek(app[3].position + 8)
        fh.write(struct.pack(">i", 2))
    return w, app


def test_verify_lists_every_bad_batch(tmp_path, capfd):
    w, app = _corrupted(tmp_path)
    log = w.log_path(0)
    code, out, err = run(["verify", w.dir], capfd)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{log}: position {app[1].position}, offset {app[1].base_offset}: "
                               "Record is corrupt (stored crc = ")
    assert lines[1] == (f"{log}: position {app[3].position}: Found record size 2 smaller than minimum "
                        f"record overhead (14) in file {log}.")
    assert lines[2].startswith(f"warning: {log}: position {app[3].position}: stopped reading")
    assert lines[-1].endswith("2 error(s), 1 warning(s)")
    code, out, err = run(["verify", "--resync", w.dir], capfd)
    assert code == 1
    assert f"next plausible batch at position {app[4].position}" in out
    code, out, err = run(["verify", "--resync", "--json", log], capfd)
    objs = [json.loads(l) for l in out.splitlines()]
    errors = [o for o in objs if o["type"] == "problem" and o["severity"] == "error"]
    assert [(o["position"], o["offset"]) for o in errors] == [(app[1].position, app[1].base_offset),
                                                              (app[3].position, None)]
    assert objs[-1]["type"] == "summary" and objs[-1]["batches"] == 4 and objs[-1]["errors"] == 2


def test_verify_single_files(logroot, tmp_path, capfd):
    root, writers = logroot
    w = writers["payments-0"]
    code, out, err = run(["verify", os.path.join(w.dir, "00000000000000000000.index"),
                          os.path.join(w.dir, "leader-epoch-checkpoint")], capfd)
    assert code == 0 and "1 segment(s)" in out
    bad = tmp_path / "00000000000000000000.snapshot"
    bad.write_bytes(producer_snapshot_bytes([(1, 0, 0, 5, 0, T0, 0, -1)])[:-1] + b"\x01")
    code, out, err = run(["verify", str(bad)], capfd)
    assert code == 1 and "Snapshot is corrupt (CRC is no longer valid)" in out
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"x")
    code, out, err = run(["verify", str(junk)], capfd)
    assert code == 2 and "not a Kafka log file" in err


def test_verify_garbage_named_like_a_segment(tmp_path, capfd):
    d = tmp_path / "x-0"
    os.makedirs(d)
    (d / "00000000000000000000.log").write_bytes(b"This is not a Kafka log segment at all, just text.\n" * 3)
    code, out, err = run(["verify", str(d)], capfd)
    assert code == 1
    assert "position 0: the bytes here do not look like a batch (magic 102" in out


# --- stats ------------------------------------------------------------------------------

def test_stats_json_counts_and_ratios(logroot, capfd):
    root, writers = logroot
    code, out, err = run(["stats", "--json", "--no-progress", root], capfd)
    assert code == 0 and err == ""
    objs = [json.loads(l) for l in out.splitlines()]
    parts = {o["topic"] + "-" + str(o["partition"]): o for o in objs if o["type"] == "partition"}
    for name, w in writers.items():
        st = parts[name]["stats"]
        assert st["batches"] == len(w.appended)
        assert st["last_offset"] == w.appended[-1].last_offset
        assert st["bytes"] == sum(a.size for a in w.appended)
    pay = parts["payments-0"]["stats"]
    assert pay["producers"] == 3 and pay["control_batches"] == 2 and pay["transactional_batches"] == 6
    assert pay["records"] == 5 + 3 + 4 + 5 + 1 + 3 + 1 + 4
    total = [o for o in objs if o["type"] == "total"][0]["stats"]
    assert set(total["codecs"]) == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert total["batch_size"]["count"] == total["batches"]
    # Compression ratio: the decompressed payload size is exact (checked against gzip itself).
    gz = [a for a in writers["web-clicks-0"].appended if a.raw[21:23] == b"\x00\x01"]
    raw = sum(len(gzip.decompress(a.raw[61:])) for a in gz)
    stored = sum(len(a.raw) - 61 for a in gz)
    seg_stats = parts["web-clicks-0"]["stats"]["codecs"]["gzip"]
    assert (seg_stats["stored_bytes"], seg_stats["uncompressed_bytes"]) == (stored, raw)
    topics = {o["topic"]: o for o in objs if o["type"] == "topic"}
    assert topics["web-clicks"]["partitions"] == 3


def test_stats_text_and_headers_only(logroot, capfd):
    root, writers = logroot
    code, out, err = run(["stats", os.path.join(root, "payments-0")], capfd)
    assert code == 0
    assert "payments-0  (" in out
    assert "producers: 3 producer id(s)" in out and "control 25.0% of batches" in out
    assert "codecs: " in out and "ratio" in out and "timestamps: 2023-11-14T22:13:20" in out
    code, out, err = run(["stats", "--headers-only", os.path.join(root, "payments-0")], capfd)
    assert "ratio" not in out


def test_stats_plot(logroot, tmp_path, capfd):
    import matplotlib  # noqa: F401  (a test dependency: the plot must really be drawn)
    root, writers = logroot
    png = tmp_path / "dist.png"
    code, out, err = run(["stats", "--plot", str(png), root], capfd)
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stats_plot_without_matplotlib(logroot, tmp_path, capfd, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)       # import fails
    root, _ = logroot
    code, out, err = run(["stats", "--plot", str(tmp_path / "x.png"), root], capfd)
    assert code == 2 and out == ""
    assert "--plot needs matplotlib" in err and "pip install matplotlib" in err


def test_histogram_buckets():
    h = Histogram()
    for v in [0, 1, 2, 3, 61, 100, 4096, 5000, 10**6]:
        h.add(v)
        lo, hi = Histogram.bucket_range(Histogram.bucket_of(v))
        assert lo <= v <= hi
    assert h.min == 0 and h.max == 10**6 and h.percentile(1.0) == 10**6
    assert 61 <= h.percentile(0.5) <= 100


@settings(deadline=None)         # the first example imports numpy
@given(st.lists(st.one_of(st.integers(-5, 10), st.integers(0, 2**52)), max_size=80))
def test_histogram_add_many_is_add_one_by_one(values):
    """The census's vectorised add gives the histogram adding each value gives, and survives its
    own dict form (a Spark task's row, merged on the driver)."""
    import numpy as np
    one, many = Histogram(), Histogram()
    for v in values:
        one.add(v)
    many.add_many(np.array(values, dtype=np.int64))
    assert many.as_dict() == one.as_dict()
    assert Histogram.from_dict(one.as_dict()).as_dict() == one.as_dict()


def test_progress_only_on_a_tty():
    class Tty:
        def __init__(self, tty):
            self.tty, self.text = tty, ""

        def isatty(self):
            return self.tty

        def write(self, s):
            self.text += s

        def flush(self):
            pass
    tty, pipe = Tty(True), Tty(False)
    for stream in (tty, pipe):
        p = Progress(100 << 20, stream, delay=0)
        p.update(50 << 20)
        p.close()
    assert "50.0%" in tty.text and tty.text.endswith("\r") and pipe.text == ""


# --- help and the module entry point --------------------------------------------------

def test_help_explains_every_option(capfd):
    parser = cli.build_parser()
    sub = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"][0]
    assert set(sub.choices) == {"dump", "verify", "stats", "metadata", "transactions", "schemas", "table",
                                "backfill", "audit", "census", "find", "restore"}
    for name, p in sub.choices.items():
        code = main([name, "--help"])
        out, _ = capfd.readouterr()
        assert code == 0
        for action in p._actions:
            assert action.help, (name, action.dest)
            for opt in action.option_strings:
                assert opt in out
    assert main(["--help"]) == 0
    out, _ = capfd.readouterr()
    assert "exit status" in out and "dump" in out
    assert main(["dump"]) == 2                     # PATH is required
    assert "required" in capfd.readouterr().err


def test_python_dash_m_dump_matches_main(small, capfd):
    w, log, _ = small
    main(["dump", "--deep-iteration", log])
    expected = capfd.readouterr().out
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "dump", "--deep-iteration", log],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == expected


def test_python_dash_m_verify_exit_status(tmp_path, logroot):
    root, _ = logroot
    env = dict(os.environ, PYTHONPATH=ROOT)
    ok = subprocess.run([sys.executable, "-m", "kafkarec", "verify", root], cwd=ROOT, env=env,
                        capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stderr == "" and "0 error(s)" in ok.stdout
    w, app = _corrupted(tmp_path)
    bad = subprocess.run([sys.executable, "-m", "kafkarec", "verify", "--resync", w.dir], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "Record is corrupt" in bad.stdout
    assert "\r" not in bad.stderr                  # no progress bar when stderr is not a terminal
    missing = subprocess.run([sys.executable, "-m", "kafkarec", "stats", str(tmp_path / "gone")], cwd=ROOT,
                             env=env, capture_output=True, text=True)
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr


def test_decompression_budget(tmp_path, capfd):
    w = PartitionWriter(str(tmp_path), "z", 0)
    w.append(v2_batch([(T0, b"k", b"\x00" * 200_000, [])], codec="zstd"))
    w.close()
    code, out, err = run(["verify", "--deep", "--max-decompressed-bytes", "1000", w.dir], capfd)
    assert code == 1 and "1000" in out
    code, out, err = run(["verify", "--deep", w.dir], capfd)
    assert code == 0
    code, out, err = run(["dump", "--deep-iteration", "--max-decompressed-bytes", "1000", w.log_path(0)], capfd)
    assert code == 1 and "1000" in err


def test_dump_legacy_inner_is_valid_is_each_message_own_crc(tmp_path, capfd):
    # isValid of a record inside a compressed legacy wrapper is that message's own CRC-32
    # (LegacyRecord.isValid), read from its bytes, not re-derived from decoded fields.
    from support.oracles.foreign import legacy_message
    good = legacy_message(1, 0, key=None, value=b"a", timestamp=5)
    bad = legacy_message(1, 1, key=None, value=b"b", timestamp=6, crc=12345)
    wrapper = legacy_message(1, 1, key=None, value=gzip.compress(good + bad), attributes=1, timestamp=6)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(wrapper)
    code, out, _ = run(["dump", "--deep-iteration", str(path)], capfd)
    valid = [line.split("isValid: ")[1].split()[0] for line in out.splitlines() if line.startswith("| offset")]
    assert valid == ["true", "false"]
    code, out, _ = run(["dump", "--deep-iteration", "--json", str(path)], capfd)
    records = [r for r in map(json.loads, out.splitlines()) if r["type"] == "record"]
    assert [r["is_valid"] for r in records] == [True, False]
