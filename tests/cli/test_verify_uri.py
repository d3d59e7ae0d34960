"""verify of a URI (file:// here; s3:// in tests/remote): kafkarec.log.staging mirrors the
side files, stages one segment at a time, and the report equals the local one."""
import json
import os
import shutil

from kafkarec.cli import main
from kafkarec.log.staging import Staging
from support.logs.logdir import build_log_dir


def _run(capfd, *args):
    code = main(list(args))
    out, err = capfd.readouterr()
    return code, out, err


def _damaged(tmp_path):
    root = str(tmp_path / "logs")
    build_log_dir(root)
    log = os.path.join(root, "web-clicks-0", "00000000000000000000.log")
    data = bytearray(open(log, "rb").read())
    data[len(data) // 2] ^= 0x55
    open(log, "wb").write(bytes(data))
    return root


def _rows(out, prefix):
    rows = [json.loads(line) for line in out.splitlines()]
    for r in rows:
        for k in ("file", "reason"):
            if k in r and r[k]:
                r[k] = r[k].replace(prefix, "ROOT")
    return rows


def test_verify_file_uri_equals_local(tmp_path, capfd):
    root = _damaged(tmp_path)
    for flags in ((), ("--deep", "--resync")):
        code, local, _ = _run(capfd, "verify", "--json", "--no-progress", *flags, root)
        code_uri, remote, err = _run(capfd, "verify", "--json", "--no-progress", *flags, "file://" + root)
        assert code == code_uri == 1 and "Traceback" not in err, err
        # (a file:// URI names its files by their local paths, as dump and stats do)
        assert _rows(remote, root) == _rows(local, root)
        assert any(r.get("file") == os.path.join(root, "web-clicks-0", "00000000000000000000.log")
                   for r in map(json.loads, remote.splitlines()))


def test_staging_holds_one_segment_at_a_time(tmp_path):
    root = _damaged(tmp_path)
    with Staging("file://" + root) as staging:
        pdirs = staging.partition_dirs()
        logs = [s.log for p in pdirs for s in p.segments]
        assert logs and all(os.path.getsize(p) > 0 for p in logs)
        # placeholders: the listed size, no blocks on disk, until staged
        assert all(os.stat(p).st_blocks == 0 for p in logs)
        first = logs[0]
        with staging.stage(first):
            original = os.path.join(root, os.path.relpath(first, staging.local_root))
            assert open(first, "rb").read() == open(original, "rb").read()
            assert all(os.stat(p).st_blocks == 0 for p in logs[1:])
        assert os.stat(first).st_blocks == 0
        # side files are real copies
        index = next(s.index for p in pdirs for s in p.segments if s.index)
        assert open(index, "rb").read() == open(os.path.join(
            root, os.path.relpath(index, staging.local_root)), "rb").read()
        assert staging.to_uri(first) == os.path.join(root, os.path.relpath(first, staging.local_root))
        mirror = staging.local_root
    assert not os.path.exists(mirror)


def test_verify_uri_of_a_renamed_segment(tmp_path, capfd):
    """A backed-up segment under a URI: its base offset comes from its first batch, as for a
    local file, and the note names the URI."""
    root = _damaged(tmp_path)
    src = os.path.join(root, "payments-0", "00000000000000000000.log")
    backup = tmp_path / "backup"
    backup.mkdir()
    shutil.copy(src, backup / "backup.log")
    code, out, err = _run(capfd, "verify", "--no-progress", "file://" + str(backup / "backup.log"))
    assert code == 0, out + err
    assert str(backup / "backup.log") in err and "first batch" in err
    assert "checked 1 partition(s), 1 segment(s)" in out
