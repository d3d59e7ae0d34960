"""What a new user trips on: renamed segment files, and stats and verify telling
different stories about the same log (issue "One rule, one place")."""
import json
import os
import shutil
import struct

import pytest

import kafkarec
from kafkarec.cli import main
from kafkarec.log.segment import Segment
from support.logs.logdir import build_log_dir, legacy_batch
from support.oracles import reference as R


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("logs"))
    build_log_dir(root)
    return root


def _first_log(root):
    for dirpath, _, files in sorted(os.walk(root)):
        logs = sorted(f for f in files if f.endswith(".log"))
        if logs and os.path.getsize(os.path.join(dirpath, logs[-1])) > 0:
            return os.path.join(dirpath, logs[-1])
    raise AssertionError("no segment")


def _json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture
def backup(logroot, tmp_path):
    """A segment copied under a name without an offset, as backups are."""
    src = _first_log(logroot)
    dest = tmp_path / "backup.log"
    shutil.copyfile(src, dest)
    with Segment(src) as seg:
        first = next(iter(seg.batches(verify_crc=False))).batch.base_offset
    return str(dest), src, first


def test_segment_takes_its_base_offset_from_the_first_batch(backup):
    path, _, first = backup
    with Segment(path) as seg:
        assert seg.base_offset == first
        assert seg.base_offset_source == "first batch"


def test_dump_a_renamed_segment_says_where_the_offset_comes_from(backup, capfd):
    path, original, first = backup
    assert main(["dump", path]) == 0
    out, err = capfd.readouterr()
    assert f"Log starting offset: {first} (from the first batch" in out
    assert "backup.log" in out and not err
    # The batches are the same as under the segment's real name.
    assert main(["dump", original]) == 0
    out_original, _ = capfd.readouterr()
    assert out.splitlines()[2:] == out_original.splitlines()[2:]


@pytest.mark.parametrize("command", ["verify", "stats"])
def test_verify_and_stats_read_a_renamed_segment(backup, command, capfd):
    path, _, first = backup
    code = main([command, "--no-progress", path])
    out, err = capfd.readouterr()
    assert code == 0, out + err
    assert "Traceback" not in err
    assert f"base offset {first} taken from the first batch" in err


def test_an_index_without_an_offset_in_its_name_is_a_usage_error(logroot, tmp_path, capfd):
    index = _first_log(logroot)[:-4] + ".index"
    if not os.path.exists(index):
        pytest.fail("the log dir writer wrote no index")
    dest = tmp_path / "backup.index"
    shutil.copyfile(index, dest)
    assert main(["verify", "--no-progress", str(dest)]) == 2
    out, err = capfd.readouterr()
    assert "base offset in its file name" in err and "Traceback" not in err


def test_stats_and_verify_agree_on_a_corrupt_batch(logroot, tmp_path, capfd):
    """A CRC-corrupt batch is bad for both; its records are not counted."""
    src = _first_log(logroot)
    data = bytearray(open(src, "rb").read())
    spans = []
    for b in kafkarec.iter_batches(bytes(data), verify_crc=False):
        spans.append((b.position, b.size_in_bytes, b.record_count if b.magic >= 2 else None))
    assert len(spans) >= 3
    pos, size, _ = spans[1]
    data[pos + size - 2] ^= 0x5A          # inside the records: CRC no longer matches
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / os.path.basename(src)).write_bytes(bytes(data))

    assert main(["verify", "--deep", "--json", "--no-progress", str(part)]) == 1
    verify_out, _ = capfd.readouterr()
    summary = [o for o in _json_lines(verify_out) if o["type"] == "summary"][0]
    problems = [o for o in _json_lines(verify_out) if o["type"] == "problem"]

    assert main(["stats", "--json", "--no-progress", str(part)]) == 1
    stats_out, stats_err = capfd.readouterr()
    total = [o for o in _json_lines(stats_out) if o["type"] == "total"][0]["stats"]

    assert len(problems) == 1 and problems[0]["position"] == pos
    assert total["bad_batches"] == 1 == summary["errors"]
    assert total["batches"] == summary["batches"] == len(spans)
    assert total["records"] == summary["records"]
    assert total["bytes"] == summary["bytes"]
    assert f"position {pos}" in stats_err and "Record is corrupt" in stats_err


def test_scan_records_agrees_with_iteration(logroot):
    """The core's record scan (used by stats) counts and fails as iteration does."""
    seen = 0
    for dirpath, _, files in sorted(os.walk(logroot)):
        for name in sorted(files):
            if not name.endswith(".log"):
                continue
            data = open(os.path.join(dirpath, name), "rb").read()
            for batch in kafkarec.iter_batches(data, verify_crc=False):
                try:
                    records = list(batch)
                except kafkarec.KafkaRecError as e:
                    with pytest.raises(type(e)):
                        kafkarec.scan_records(batch)
                    continue
                count, size = kafkarec.scan_records(batch)
                assert count == len(records)
                if batch.magic >= 2 and not batch.attributes & 7:
                    assert size == batch.size_in_bytes - 61
                seen += 1
    assert seen > 20


@pytest.mark.parametrize("encoding, render", [
    ("hex", bytes.hex),
    ("base64", lambda b: __import__("base64").b64encode(b).decode()),
    ("utf8", lambda b: b.decode("utf-8", "backslashreplace")),
    # new String(bytes, UTF_8) as Java 17 computes it (JavaString in tests/cli/test_java_string.py):
    # ed a0 80, an encoded surrogate, is ONE U+FFFD (Python's "replace" gives three)
    ("java", {b"k\x80": "k\ufffd", b"\xff\x00caf\xc3\xa9\xed\xa0\x80\\x41": "\ufffd\x00caf\u00e9\ufffd\\x41"}.get),
])
def test_dump_payload_encoding_gives_exact_bytes(tmp_path, encoding, render, capfd):
    """--payload-encoding: keys, values and header values, in text and --json."""
    weird = b"\xff\x00caf\xc3\xa9\xed\xa0\x80\\x41"
    b = kafkarec.RecordBatchBuilder(base_offset=5)
    b.append(weird, key=b"k\x80", timestamp=1_700_000_000_000, headers=[("h", weird), ("n", None)])
    path = tmp_path / "00000000000000000005.log"
    path.write_bytes(b.build())
    assert main(["dump", "--print-data-log", "--payload-encoding", encoding, str(path)]) == 0
    out, _ = capfd.readouterr()
    assert f"key: {render(b'k' + bytes([0x80]))} payload: {render(weird)}" in out
    assert main(["dump", "--print-data-log", "--json", "--payload-encoding", encoding, str(path)]) == 0
    (record,) = [o for o in _json_lines(capfd.readouterr()[0]) if o["type"] == "record"]
    assert record["payload"] == render(weird) and record["key"] == render(b"k\x80")
    assert record["headers"] == [["h", render(weird)], ["n", None]]
    if encoding in ("hex", "base64"):
        back = bytes.fromhex if encoding == "hex" else __import__("base64").b64decode
        assert back(record["payload"]) == weird


def test_stats_and_verify_agree_on_a_legacy_value_length_that_overruns(tmp_path, capfd):
    """A v1 message (valid CRC) whose value length runs past the message: the core cannot
    read its value, so verify --deep and stats both count the batch bad and none of its
    records (stats --headers-only used to clamp the length by hand and count it good)."""
    good = legacy_batch(1, [(1_700_000_000_000, None, b"value-0")])
    bad = bytearray(legacy_batch(1, [(1_700_000_000_001, None, b"value-1")]))
    struct.pack_into(">q", bad, 0, 1)                       # offset 1
    struct.pack_into(">i", bad, 30, len(b"value-1") + 5)    # value length past the message
    bad = R.with_legacy_crc(bad)
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(good + bad)
    assert main(["verify", "--deep", "--json", "--no-progress", str(part)]) == 1
    summary = json.loads(capfd.readouterr().out.splitlines()[-1])
    assert main(["stats", "--json", "--no-progress", str(part)]) == 1
    total = json.loads(capfd.readouterr().out.splitlines()[-1])["stats"]
    assert (summary["batches"], summary["records"]) == (total["batches"], total["records"]) == (2, 1)
    assert total["bad_batches"] == 1
    # --headers-only too: the stored payload is the core's (RecordBatch.payload), not a
    # hand-read length that was clamped, so the batch is bad there as well.
    assert main(["stats", "--json", "--headers-only", "--no-progress", str(part)]) == 1
    total = json.loads(capfd.readouterr().out.splitlines()[-1])["stats"]
    assert (total["batches"], total["bad_batches"]) == (2, 1)
