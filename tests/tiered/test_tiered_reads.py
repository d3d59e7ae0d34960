"""Every reader of kafkarec over a plugin's storage root: the layout finds the segments (the
plugin's key prefix taken off the topic names), selections use the side files inside
``.indexes``, and Python, the command line and the keyed state read exactly the original
records (the plugin's own objects: tests/data/tiered/aiven)."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

import kafkarec
from kafkarec.log import layout, selection, storage
from support.logs.aiven_objects import DATA, originals
from support.brokers.readers import planned_rows

VARIANTS = ("plain", "zstd", "aes", "both", "small", "large")


def opened(variant):
    return storage.resolve(os.path.join(DATA, variant, "objects"),
                           {"tieredStorageConfig": os.path.join(DATA, variant, "rsm.properties")})


def read(st, root, sel=None):
    lay = layout.scan(st, root)
    return lay, planned_rows(st, sel, lay=lay)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_layout_and_a_whole_read(variant):
    st, root = opened(variant)
    lay, rows = read(st, root)
    assert sorted(p.topic for p in lay.partitions) == ["clicks", "txn"]
    for p in lay.partitions:
        assert all(s.rsm is not None for s in p.segments)
        assert p.topic_id in ("-_815o2ZH57GCKVHnvxDzQ", "q3_Yx0-lTnWb5T0aN8Jw_A")
    assert rows["clicks"] == originals("clicks-0") and rows["txn"] == originals("txn-0")


@pytest.mark.parametrize("variant", ["both", "small", "plain"])
def test_selections_go_through_the_stored_indexes(variant):
    st, root = opened(variant)
    sel = selection.parse_selection({"subscribe": "clicks", "startingOffsets": '{"clicks":{"0":301}}',
                                     "endingOffsets": '{"clicks":{"0":640}}'})
    _, rows = read(st, root, sel)
    assert rows["clicks"] == originals("clicks-0", 301, 640)
    # the offset index inside .indexes is what positions the start (not a scan from byte 0)
    lay = layout.scan(st, root)
    seg = next(s for p in lay.partitions if p.topic == "clicks" for s in p.segments if s.base_offset == 285)
    entries = selection.Resolver(st).offset_entries(seg)
    assert entries and entries[0][0] > 285
    t0 = originals("clicks-0")[400]["timestamp"]
    sel = selection.parse_selection({"subscribe": "clicks", "startingTimestamp": str(round(t0.timestamp() * 1000))})
    _, rows = read(st, root, sel)
    assert rows["clicks"][0]["offset"] == originals("clicks-0")[400]["offset"]


def test_the_keyed_state_of_a_stored_topic():
    import kafkarec.table
    state = kafkarec.table.latest(os.path.join(DATA, "both", "objects"), topics=["clicks"],
                                  storage_options={"tieredStorageConfig": os.path.join(DATA, "both", "rsm.properties")})
    last = {}
    for r in originals("clicks-0"):
        last[r["key"]] = r["offset"]
    assert sorted(state.table.column("offset").to_pylist()) == sorted(last.values())


def test_without_the_config_the_prefix_stays_and_encrypted_segments_are_refused():
    st, root = storage.resolve(os.path.join(DATA, "aes", "objects"))
    lay = layout.scan(st, root)
    seg = lay.partitions[0].segments[0]
    assert seg.rsm is not None and seg.rsm.encryption is not None
    with pytest.raises(kafkarec.RemoteObjectError, match="encrypted .*tieredStorageConfig"):
        with layout.open_segment(st, seg) as f:
            f.read_at(0, 10)
    # compression needs no key: the fallback reads it
    st, root = storage.resolve(os.path.join(DATA, "zstd", "objects"))
    _, rows = read(st, root)
    assert rows["clicks"] == originals("clicks-0")


def test_a_damaged_manifest_is_reported_when_its_segment_is_read(tmp_path):
    shutil.copytree(os.path.join(DATA, "plain", "objects"), tmp_path / "objects")
    (man,) = [m for m in glob.glob(str(tmp_path / "objects" / "**" / "*.rsm-manifest"), recursive=True)
              if os.path.basename(m).startswith("00000000000000000285")]
    with open(man, "w") as fh:
        fh.write("{not json")
    st, root = storage.resolve(str(tmp_path / "objects"))
    with pytest.raises(kafkarec.RemoteObjectError, match="not a segment manifest"):
        read(st, root)


@pytest.mark.parametrize("command", ["dump", "stats"])
def test_the_command_line(command):
    args = [sys.executable, "-m", "kafkarec", command, os.path.join(DATA, "small", "objects"),
            "--tiered-storage-config", os.path.join(DATA, "small", "rsm.properties"), "--json"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if command == "dump":
        batches = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        records = sum(b.get("count", 0) for b in batches if b.get("type", "batch") == "batch")
        want = 0                                  # control records included, as dump prints them
        for part in ("clicks-0", "txn-0"):
            for path in sorted(glob.glob(os.path.join(DATA, "input", part, "*.log")))[:-1]:
                with open(path, "rb") as fh:
                    want += sum(len(list(b)) for b in kafkarec.iter_batches(fh.read()))
        assert records == want
    else:
        assert "837" in proc.stdout


@pytest.mark.parametrize("variant", ["both", "zstd"])
def test_plugin_objects_read_from_s3(s3, tmp_path, variant):
    """The plugin's objects in a bucket of a real S3 server (SeaweedFS), the key files too
    (URIs in the config): the same records, and the key prefix taken off the topic names."""
    bucket = f"tiered-{variant}"
    s3.upload_dir(os.path.join(DATA, variant, "objects"), bucket, "rsm")
    s3.upload_dir(os.path.join(DATA, "keys"), bucket, "keys")
    with open(os.path.join(DATA, variant, "rsm.properties")) as fh:
        text = fh.read().replace("../keys/", f"s3://{bucket}/keys/")
    config = tmp_path / "rsm.properties"
    config.write_text(text)
    st, root = storage.resolve(f"s3://{bucket}/rsm", {**s3.options(), "tieredStorageConfig": str(config)})
    lay, rows = read(st, root)
    assert sorted(p.topic for p in lay.partitions) == ["clicks", "txn"]
    assert rows["clicks"] == originals("clicks-0") and rows["txn"] == originals("txn-0")


@pytest.mark.parametrize("variant", ["both", "small", "plain"])
def test_verify_checks_the_segments_as_the_broker_had_them(variant):
    """``kafkarec verify`` stages each plugin segment as its original bytes with its indexes
    (taken out of ``.indexes``) and checks them as any segment: nothing wrong."""
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "verify", os.path.join(DATA, variant, "objects"),
                           "--tiered-storage-config", os.path.join(DATA, variant, "rsm.properties")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "checked 2 partition(s), 5 segment(s), 38 batches" in proc.stdout
    assert "0 error(s), 0 warning(s)" in proc.stdout


def test_verify_reports_a_damaged_object_and_goes_on(tmp_path):
    shutil.copytree(os.path.join(DATA, "both"), tmp_path / "both")
    shutil.copytree(os.path.join(DATA, "keys"), tmp_path / "keys")
    (log,) = glob.glob(str(tmp_path / "both" / "objects" / "**" / "rsm_clicks-*" / "0" / "00000000000000000000-*.log"),
                       recursive=True)
    with open(log, "r+b") as fh:
        fh.seek(3000)
        b = fh.read(1)
        fh.seek(3000)
        fh.write(bytes([b[0] ^ 1]))
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "verify", str(tmp_path / "both" / "objects"),
                           "--tiered-storage-config", str(tmp_path / "both" / "rsm.properties")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the segment could not be read" in proc.stdout and "chunk 4: the AES-GCM tag does not verify" in proc.stdout
    assert "checked 2 partition(s), 4 segment(s)" in proc.stdout and "1 error(s)" in proc.stdout
    assert "Traceback" not in proc.stderr


# --- objects that disagree with their manifest (issue 40) -------------------------------------

# (variant, damage): a fixed index raised by two chunks over a byte copy and over AES-GCM
# chunks, an object cut short, an object with bytes after its last chunk
LYING = [("plain", "more chunks"), ("aes", "more chunks"), ("plain", "short"), ("zstd", "short"),
         ("plain", "longer"), ("both", "longer")]


def _lying(tmp_path, variant, damage):
    from support.logs.lying_objects import lying_root
    log = lying_root(variant, str(tmp_path), damage)
    st, root = storage.resolve(str(tmp_path / variant / "objects"),
                               {"tieredStorageConfig": str(tmp_path / variant / "rsm.properties")})
    return log, st, root


@pytest.mark.parametrize("variant, damage", LYING)
def test_an_object_that_disagrees_with_its_manifest_fails_the_read(tmp_path, variant, damage):
    """A segment shorter (or longer) than its manifest says is data loss: the read fails naming
    the object and the chunk, as docs/tiered-storage.md promises, however the object is stored;
    the segments that agree with their manifests read as before."""
    log, st, root = _lying(tmp_path, variant, damage)
    with pytest.raises(kafkarec.RemoteObjectError, match=r"covers \d+ bytes, the object holds \d+") as e:
        read(st, root, selection.parse_selection({"topics": "clicks"}))
    assert e.value.object == log and e.value.chunk is not None
    assert f"{log}, chunk {e.value.chunk}: " in str(e.value)
    if damage == "more chunks":                 # 8107 bytes in chunks of 4096: chunk 1 is the first not whole
        assert e.value.chunk == 1 and "3 of the 4 chunks are not whole" in str(e.value)
    _, rows = read(st, root, selection.parse_selection({"topics": "txn"}))
    assert rows["txn"] == originals("txn-0")
    _, rows = read(st, root, selection.parse_selection({"topics": "clicks", "endingOffsets": '{"clicks":{"0":285}}'}))
    assert rows["clicks"] == originals("clicks-0", 0, 285)


def test_the_stitched_history_fails_on_a_lying_remote_copy(tmp_path):
    """A broker's log directory holding only clicks-0's active segment, stitched with remote
    copies one of which claims two chunks its object does not hold."""
    log, _, _ = _lying(tmp_path, "plain", "more chunks")
    logdir = tmp_path / "logdir" / "clicks-0"
    logdir.mkdir(parents=True)
    for path in glob.glob(os.path.join(DATA, "input", "clicks-0", "00000000000000000837.*")):
        shutil.copy(path, logdir)
    lay, gaps = layout.scan_history(str(tmp_path / "logdir"), str(tmp_path / "plain" / "objects"),
                                    {"tieredStorageConfig": str(tmp_path / "plain" / "rsm.properties")})
    clicks = next(p for p in lay.partitions if p.topic == "clicks")
    assert not gaps and [s.base_offset for s in clicks.segments] == [0, 285, 600, 837]
    with pytest.raises(kafkarec.RemoteObjectError, match=r"chunk 1: the manifest's chunk index covers") as e:
        planned_rows(lay.storage, lay=lay)
    assert e.value.object == log


@pytest.mark.parametrize("command", ["dump", "stats", "table"])
def test_the_command_line_reports_a_lying_object(tmp_path, command):
    log, _, _ = _lying(tmp_path, "plain", "more chunks")
    args = [sys.executable, "-m", "kafkarec", command, str(tmp_path / "plain" / "objects"),
            "--tiered-storage-config", str(tmp_path / "plain" / "rsm.properties")]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert f"{log}, chunk 1: the manifest's chunk index covers" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_manifest_nested_too_deep_is_one_bad_object_not_a_failed_scan(tmp_path):
    """Found by fuzzing: a manifest nested deeper than Python's recursion limit raised
    RecursionError out of the scan; it is that segment's RemoteObjectError, and the scan and
    the other segments go on."""
    shutil.copytree(os.path.join(DATA, "plain", "objects"), tmp_path / "objects")
    (man,) = glob.glob(str(tmp_path / "objects" / "**" / "*clicks-*" / "0" / "00000000000000000285-*.rsm-manifest"),
                       recursive=True)
    with open(man, "w") as fh:
        fh.write('{"version":"1","chunkIndex":' + "[" * 100_000 + "]" * 100_000 + "}")
    st, root = storage.resolve(str(tmp_path / "objects"))
    lay = layout.scan(st, root)
    clicks = next(p for p in lay.partitions if p.topic == "clicks")
    assert [s.rsm is None for s in clicks.segments] == [False, True, False]
    with pytest.raises(kafkarec.RemoteObjectError, match="nested deeper than Python's recursion limit"):
        read(st, root)
    _, rows = read(st, root, selection.parse_selection({"topics": "txn"}))
    assert rows["txn"] == originals("txn-0")


@pytest.mark.parametrize("variant, damage", [("plain", "more chunks"), ("zstd", "short")])
def test_verify_reports_an_object_that_disagrees_with_its_manifest(tmp_path, variant, damage):
    log, _, _ = _lying(tmp_path, variant, damage)
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "verify", str(tmp_path / variant / "objects"),
                           "--tiered-storage-config", str(tmp_path / variant / "rsm.properties")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{os.path.basename(log)}, chunk 1: the manifest's chunk index covers" in proc.stdout
    assert "checked 2 partition(s), 4 segment(s)" in proc.stdout and "1 error(s)" in proc.stdout
    assert "Traceback" not in proc.stderr
