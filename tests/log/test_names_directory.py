"""kafkarec.log.names (every file-name rule, tiered names included), kafkarec.log.directory
(the one directory walk) and the old import paths of both."""
import json
import os
import struct

import pytest

import kafkarec
from kafkarec.cli import main
from kafkarec.log import directory, layout, names
from kafkarec.log.segment import Segment

from support.logs.logdir import sample_records, v2_batch

# A segment id as Kafka's Uuid.toString() writes it, and the same kind of id as a UUID.
SID = "oAtiIQ95REujbuzNd_lkLQ"
UUID = "a0b62d21-0f79-44eb-a6ee-cdd77fe52d0b"


@pytest.mark.parametrize("name, expected", [
    ("00000000000000000042.log", (42, None, "log")),
    ("/a/b/00000000000000000042.timeindex", (42, None, "timeindex")),
    ("00000000000000000042.snapshot", (42, None, "snapshot")),
    (f"00000000000000000042-{SID}.log", (42, SID, "log")),
    (f"00000000000000000042-{SID}.txnindex", (42, SID, "txnindex")),
    (f"00000000000000000042-{SID}.leader_epoch_checkpoint", (42, SID, "leader-epoch-checkpoint")),
    (f"00000000000000000042-{SID}.rsm-manifest", (42, SID, "manifest")),
    (f"prefix/topic-{SID}/0/00000000000000000042-{UUID}.indexes", (42, UUID, "indexes")),
    # not segment files
    ("00000000000000000042.log.deleted", None),
    ("00000000000000000100-0000000003.checkpoint", None),
    ("backup.log", None),
    (f"00000000000000000042-{SID}.unknown", None),
])
def test_parse_segment_name(name, expected):
    assert names.parse_segment_name(name) == expected


def test_tiered_names_in_every_name_rule():
    # Before the names module, offset_from_file_name refused tiered names (SideFileError).
    assert names.offset_from_file_name(f"00000000000000000042-{SID}.log") == 42
    assert names.offset_from_file_name(f"00000000000000000042-{UUID}.timeindex") == 42
    assert names.file_kind(f"00000000000000000042-{SID}.index") == "index"
    assert names.file_kind(f"00000000000000000042-{SID}.snapshot") == "snapshot"
    assert names.file_kind("backup.log") == "log"
    # layout reads the kinds it uses from the same rule
    assert layout.parse_segment_name(f"x/00000000000000000042-{SID}.index") == (42, SID, "index")
    assert layout.parse_segment_name("x/00000000000000000042.snapshot") is None


def test_one_import_path_and_no_cycle():
    """No pre-release shims (kafkarec.segment, kafkarec.sidefiles), the directory walk has one
    home, and sidefiles does not reach back into checks (checks imports sidefiles, not both ways)."""
    import importlib.util
    import subprocess
    import sys
    from kafkarec.log import segment, sidefiles
    for old in ("kafkarec.segment", "kafkarec.sidefiles"):
        assert importlib.util.find_spec(old) is None, old
    for name in ("find_partition_dirs", "scan_partition_dir", "is_partition_dir", "PartitionDir"):
        assert not hasattr(segment, name), name
    assert not hasattr(sidefiles, "OffsetIndexCheck") and not hasattr(sidefiles, "__getattr__")
    for name in sidefiles.__all__:
        assert getattr(sidefiles, name) is not None, name
    code = ("import sys, kafkarec.log.sidefiles; "
            "assert 'kafkarec.log.checks' not in sys.modules, 'sidefiles imports checks'")
    subprocess.run([sys.executable, "-c", code], check=True)


def _tiered_partition(tmp_path):
    """A LocalTieredStorage-style folder: ``<topic>-<partition>-<topic id>/<offset>-<id>.log``."""
    part = tmp_path / f"orders-0-{SID}"
    part.mkdir()
    batch = bytearray(v2_batch(sample_records(5)))
    struct.pack_into(">q", batch, 0, 42)          # base offset 42 (not in the v2 CRC)
    (part / f"00000000000000000042-{UUID}.log").write_bytes(bytes(batch))
    (part / f"00000000000000000042-{UUID}.index").write_bytes(b"")
    return part


def test_directory_walk_finds_tiered_segments(tmp_path):
    part = _tiered_partition(tmp_path)
    pdir = directory.scan_partition_dir(str(part))
    assert [(s.base_offset, s.segment_id, s.log is not None, s.index is not None) for s in pdir.segments] \
        == [(42, UUID, True, True)]
    assert pdir.other == []
    assert directory.is_partition_dir(str(part))
    assert [p.path for p in directory.find_partition_dirs(str(tmp_path))] == [str(part)]
    with Segment(pdir.segments[0].log) as seg:
        assert (seg.base_offset, seg.base_offset_source) == (42, "name")


def test_cli_reads_tiered_segments(tmp_path, capfd):
    part = _tiered_partition(tmp_path)
    log = str(part / f"00000000000000000042-{UUID}.log")
    assert main(["dump", "--json", log]) == 0
    lines = [json.loads(x) for x in capfd.readouterr().out.splitlines()]
    assert {"type": "log_start", "offset": 42} in lines
    assert [x["base_offset"] for x in lines if x["type"] == "batch"] == [42]
    assert main(["verify", "--deep", "--json", "--no-progress", str(part)]) == 0
    summary = json.loads(capfd.readouterr().out.splitlines()[-1])
    assert (summary["segments"], summary["records"], summary["errors"]) == (1, 5, 0)


def test_plugin_layout_topic_id_folders(tmp_path, capfd):
    """A remote storage plugin's ``<topic>-<topic id>/<partition>/`` under a root: the walk,
    the CLI and Spark's file discovery find each partition once, named by topic."""
    part = tmp_path / f"orders-{SID}" / "3"
    part.mkdir(parents=True)
    batch = bytearray(v2_batch(sample_records(4)))
    struct.pack_into(">q", batch, 0, 7)
    (part / f"00000000000000000007-{UUID}.log").write_bytes(bytes(batch))
    (tmp_path / "payments-0").mkdir()                          # a broker folder beside it
    (tmp_path / "payments-0" / "00000000000000000000.log").write_bytes(v2_batch(sample_records(2)))
    assert names.is_topic_id_folder(f"orders-{SID}") and not names.is_topic_id_folder("orders-0")
    assert not names.is_topic_id_folder(f"orders-0-{SID}")     # LocalTieredStorage's partition form
    found = directory.find_partition_dirs(str(tmp_path))
    assert [(p.topic_partition.topic, p.topic_partition.partition) for p in found] == \
        [("orders", 3), ("payments", 0)]
    assert main(["verify", "--deep", "--json", "--no-progress", str(tmp_path)]) == 0
    summary = json.loads(capfd.readouterr().out.splitlines()[-1])
    assert (summary["partitions"], summary["records"], summary["errors"]) == (2, 6, 0)
    files, _ = directory.find_segment_files([str(tmp_path)])
    assert sorted((f.topic, f.partition, f.base_offset) for f in files) == [("orders", 3, 7), ("payments", 0, 0)]


def test_batch_names_come_from_the_core():
    from kafkarec.cli.common import codec_name, ts_name
    data = v2_batch(sample_records(3), codec="gzip")
    b = next(kafkarec.iter_batches(data))
    assert (codec_name(b), ts_name(b)) == ("gzip", "CreateTime")
    bad = bytearray(data)
    bad[22] |= 7                                  # codec id 7: the core names no such codec
    b = next(kafkarec.iter_batches(bytes(bad), verify_crc=False))
    assert codec_name(b).startswith("unknown (")


def test_skipping_yields_batches_and_what_it_skipped(tmp_path):
    """The one 'continue past a bad header' loop: a header the core refuses is reported
    and reading goes on after it; a size field below 14 ends framing."""
    good = v2_batch(sample_records(3))
    short_v2 = struct.pack(">qiib", 3, 40, 0, 2) + bytes(40 - 5)      # v2 size 52 < 61 bytes
    framing_end = struct.pack(">qi", 4, 5) + bytes(20)                 # size 5 < 14
    path = tmp_path / "mixed.log"
    path.write_bytes(good + short_v2 + good + framing_end)
    with Segment(str(path)) as seg:
        assert seg.base_offset_source == "first batch"
        it = seg.batches(verify_crc=True)
        items = list(it.skipping())
    kinds = [(type(i).__name__, i.position, getattr(i, "stopped", None)) for i in items]
    assert kinds == [("FileBatch", 0, None), ("SkippedBatch", len(good), False),
                     ("FileBatch", len(good) + len(short_v2), None),
                     ("SkippedBatch", 2 * len(good) + len(short_v2), True)]
    assert isinstance(items[1].error, kafkarec.DecodeError)
    assert "record size 5" in items[3].error.reason


def test_find_segment_files(tmp_path):
    """The file discovery Spark and the CLI share: broker and tiered folders, renamed
    folders skipped, each file once, in topic/partition/offset order."""
    tiered = _tiered_partition(tmp_path)
    broker = tmp_path / "orders-1"
    broker.mkdir()
    (broker / "00000000000000000007.log").write_bytes(v2_batch(sample_records(1)))
    (broker / "backup.log").write_bytes(v2_batch(sample_records(1)))
    gone = tmp_path / "orders-2.0123abcd-delete"
    gone.mkdir()
    (gone / "00000000000000000000.log").write_bytes(b"")
    found, skipped = directory.find_segment_files([str(tmp_path), str(broker)])
    assert [(f.topic_partition, f.base_offset, f.segment_id, f.path.rsplit("/", 1)[-1]) for f in found] == [
        (("orders", 0), 42, UUID, f"00000000000000000042-{UUID}.log"),
        (("orders", 1), None, None, "backup.log"),
        (("orders", 1), 7, None, "00000000000000000007.log"),
    ]
    assert skipped == [str(gone)]
    assert directory.scan_partition_dir(str(tiered)).topic_partition == ("orders", 0)
    assert names.parse_partition_folder(f"x/orders-{SID}/3") == ("orders", 3, SID)


def test_a_segment_retention_deletes_while_the_folder_is_listed_is_left_out(tmp_path, monkeypatch):
    """A live broker's retention renames a segment (``.log.deleted``) at any moment, so one may go
    between the folder's listing and its size: the listing leaves it out (a listing a moment
    later would not have found it), and a read (read_committed's walk too) gives the log's other
    records; a file named as it is must still be there."""
    from kafkarec.scan import LogScan
    part = tmp_path / "orders-0"
    part.mkdir()
    for base in (0, 3, 6):
        # (a batch's base offset is outside its CRC)
        (part / f"{base:020d}.log").write_bytes(struct.pack(">q", base) + v2_batch(sample_records(3))[8:])
    listed = directory._partition_logs

    def listed_then_deleted(found, pattern):
        files = listed(found, pattern)
        first = sorted(f for f in files if f.endswith(f"{0:020d}.log"))
        for f in first:             # retention's rename, right after the listing
            os.rename(f, f + ".deleted")
        return files
    monkeypatch.setattr(directory, "_partition_logs", listed_then_deleted)
    found, _ = directory.find_segment_files([str(part)])
    assert [f.base_offset for f in found] == [3, 6]
    os.rename(part / f"{0:020d}.log.deleted", part / f"{0:020d}.log")
    monkeypatch.undo()
    # gone after the listing, before the plan walks it (read_committed's walk): the read reports it
    find = directory.find_segment_files

    def found_then_deleted(*args, **kwargs):
        out = find(*args, **kwargs)
        os.rename(part / f"{0:020d}.log", part / f"{0:020d}.log.deleted")
        return out
    monkeypatch.setattr(directory, "find_segment_files", found_then_deleted)
    for isolation in ("read_uncommitted", "read_committed"):
        table = LogScan(str(part), isolation_level=isolation, mode="PERMISSIVE",
                        columns=["offset", "_corrupt_record"]).to_table()
        assert table.column("offset").to_pylist()[1:] == [3, 4, 5, 6, 7, 8]
        assert "deleted after the read was planned" in table.column("_corrupt_record")[0].as_py()
        os.rename(part / f"{0:020d}.log.deleted", part / f"{0:020d}.log")
    monkeypatch.undo()
    gone = str(part / f"{0:020d}.log")
    os.remove(gone)
    with pytest.raises(FileNotFoundError):
        directory.find_segment_files([gone])


def test_cli_file_argument_finds_tiered_siblings(tmp_path, capfd):
    """verify FILE on a tiered index finds its log by the same <offset>-<id> stem."""
    part = _tiered_partition(tmp_path)
    index = str(part / f"00000000000000000042-{UUID}.index")
    assert main(["verify", "--json", "--no-progress", index]) == 0
    summary = json.loads(capfd.readouterr().out.splitlines()[-1])
    assert (summary["segments"], summary["batches"], summary["errors"]) == (1, 1, 0)


def test_scan_resyncs_past_a_corrupt_region(tmp_path):
    """Segment.scan(resync=True): after a framing error, reading goes on at the next
    plausible batch and the skipped region is reported; without resync it stops."""
    a = v2_batch(sample_records(2))
    b = bytearray(v2_batch(sample_records(2)))
    struct.pack_into(">q", b, 0, 2)                     # offsets 2..3 follow a's 0..1
    garbage = struct.pack(">qi", 0, 3) + b"\xff" * 30   # size 3 < 14: framing ends here
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(a + garbage + bytes(b))
    with Segment(str(path)) as seg:
        plain = [type(i).__name__ for i in seg.scan()]
        resync = list(seg.scan(resync=True))
    assert plain == ["FileBatch", "SkippedBatch"]
    assert [type(i).__name__ for i in resync] == ["FileBatch", "SkippedBatch", "SkippedRegion", "FileBatch"]
    region = resync[2]
    assert (region.start, region.end, region.found) == (len(a), len(a) + len(garbage), True)
    assert resync[3].base_offset == 2
