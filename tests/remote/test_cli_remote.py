"""The command line over an object store and with Kafka-source selection: `dump` and
`stats` of s3:// (SeaweedFS) equal those of the same log directory on disk, and a
selection equals filtering the full dump."""
from __future__ import annotations

import json
import os
import re

import pytest

from kafkarec.cli import main
from support.logs.logdir import build_log_dir

BUCKET, PREFIX = "cli-logs", "cluster-b"


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("logs"))
    build_log_dir(root)
    return root


@pytest.fixture(scope="module")
def s3_uri(s3, logroot):
    s3.upload_dir(logroot, BUCKET, PREFIX)
    return f"s3://{BUCKET}/{PREFIX}"


@pytest.fixture
def s3_env(s3, monkeypatch):
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)


def _run(capfd, *args):
    code = main(list(args))
    out, err = capfd.readouterr()
    return code, out, err


def _records(out: str) -> list:
    """(file name, offset) of every record line of a --json dump."""
    rows, current = [], None
    for line in out.splitlines():
        obj = json.loads(line)
        if obj["type"] == "file":
            current = obj["file"].rsplit("/", 2)[-2]       # the <topic>-<partition> folder
        elif obj["type"] == "record":
            rows.append((current, obj["offset"], obj.get("payload")))
    return rows


def test_dump_s3_equals_local(s3_uri, s3_env, logroot, capfd):
    code_local, local, _ = _run(capfd, "dump", "--deep-iteration", "--print-data-log",
                                "--payload-encoding", "hex", "--topics", "web-clicks,payments", logroot)
    code_s3, remote, err = _run(capfd, "dump", "--deep-iteration", "--print-data-log",
                                "--payload-encoding", "hex", "--topics", "web-clicks,payments", s3_uri)
    assert code_s3 == code_local, err
    strip = lambda text: re.sub(r"^Dumping .*/([^/]+/[^/]+)$", r"Dumping \1", text, flags=re.M)
    assert strip(remote) == strip(local)
    assert remote.count("| offset:") > 100


def test_dump_selection_equals_filtering_the_full_dump(s3_uri, s3_env, capfd):
    code, full, err = _run(capfd, "dump", "--json", "--deep-iteration", "--print-data-log", s3_uri)
    assert code in (0, 1), err
    everything = _records(full)
    code, part, err = _run(capfd, "dump", "--json", "--deep-iteration", "--print-data-log",
                           "--topics", "web-clicks", "--start-offset", "150", "--end-offset", "420", s3_uri)
    assert code in (0, 1), err
    selected = _records(part)
    want = [r for r in everything if r[0].startswith("web-clicks-") and 150 <= r[1] < 420]
    assert selected == want and len(want) > 100


def test_stats_s3_equals_local(s3_uri, s3_env, logroot, capfd):
    def totals(path):
        code, out, err = _run(capfd, "stats", "--json", "--no-progress", "--topics", "web-clicks", path)
        total = [json.loads(l) for l in out.splitlines() if json.loads(l)["type"] == "total"][0]
        return code, total["stats"]
    (c1, local), (c2, remote) = totals(logroot), totals(s3_uri)
    assert c1 == c2
    for key in ("batches", "records", "bytes", "bad_batches", "codecs", "first_offset", "last_offset"):
        assert remote[key] == local[key], key


def test_storage_option_flags_and_clear_errors(s3, s3_uri, capfd, monkeypatch):
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(k, raising=False)
    opts = [f"--storage-option=endpoint={s3.endpoint}", f"--storage-option=accessKey={s3.access_key}",
            f"--storage-option=secretKey={s3.secret_key}", f"--storage-option=region={s3.region}"]
    code, out, err = _run(capfd, "stats", "--no-progress", *opts, s3_uri)
    assert "all:" in out and "Traceback" not in err
    code, out, err = _run(capfd, "dump", "--start-time", "not-a-time", s3_uri)
    assert code == 2 and "Traceback" not in err and "error" in err
    code, out, err = _run(capfd, "verify", "--no-progress", *opts, s3_uri)
    assert code in (0, 1) and "checked " in out and "Traceback" not in err
    code, out, err = _run(capfd, "verify", "--no-progress", *opts, s3_uri + "-missing")
    assert code == 2 and "no such file or directory" in err and "Traceback" not in err


def _problems(out: str, prefix: str) -> list:
    """verify --json's problems, files named relative to the log directory."""
    rows = [json.loads(line) for line in out.splitlines()]
    for r in rows:
        if "file" in r:
            assert r["file"].startswith(prefix + "/"), r["file"]
            r["file"] = r["file"][len(prefix) + 1:]
        if "reason" in r:
            r["reason"] = r["reason"].replace(prefix + "/", "")
    return rows


def _stage_dirs() -> set:
    import glob
    import tempfile
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "kafkarec-stage-*")))


@pytest.fixture(scope="module")
def damaged(s3, logroot, tmp_path_factory):
    """A copy of the log directory with a corrupt batch, a region of garbage, a bad index
    entry and a broken checkpoint: (local root, its s3:// URI)."""
    import shutil
    root = str(tmp_path_factory.mktemp("damaged") / "logs")
    shutil.copytree(logroot, root)
    log = os.path.join(root, "web-clicks-0", "00000000000000000000.log")
    data = bytearray(open(log, "rb").read())
    data[len(data) // 3] ^= 0xFF                     # a CRC failure (or a framing error)
    data[2 * len(data) // 3:2 * len(data) // 3 + 40] = b"\xee" * 40
    open(log, "wb").write(bytes(data))
    with open(os.path.join(root, "payments-0", "00000000000000000000.index"), "ab") as fh:
        fh.write(b"\x00\x00\x00\x07\x00\x00\x00\x01")  # an entry that points backwards
    with open(os.path.join(root, "compacted-0", "leader-epoch-checkpoint"), "w") as fh:
        fh.write("0\n2\n0 0\n")                    # says 2 entries, holds 1
    s3.upload_dir(root, BUCKET, "damaged")
    return root, f"s3://{BUCKET}/damaged"


def test_verify_s3_equals_local(damaged, s3_env, capfd):
    """verify of an s3:// log directory: the same problems (named by their URIs) and the same
    summary as on disk; the staged copies are gone afterwards."""
    root, uri = damaged
    before = _stage_dirs()
    for flags in ((), ("--deep",), ("--resync",)):
        code_local, local, _ = _run(capfd, "verify", "--json", "--no-progress", *flags, root)
        code_s3, remote, err = _run(capfd, "verify", "--json", "--no-progress", *flags, uri)
        assert code_s3 == code_local == 1 and "Traceback" not in err, err
        problems = _problems(remote, uri)
        assert problems == _problems(local, os.path.abspath(root))
        files = {r["file"] for r in problems if r["type"] == "problem" and r["severity"] == "error"}
        assert {"web-clicks-0/00000000000000000000.log", "payments-0/00000000000000000000.index",
                "compacted-0/leader-epoch-checkpoint"} <= files, files
    assert _stage_dirs() == before


def test_verify_s3_partition_folder_and_file(s3_uri, s3_env, logroot, capfd):
    part = sorted(d for d in os.listdir(logroot) if os.path.isdir(os.path.join(logroot, d)))[0]
    code_local, local, _ = _run(capfd, "verify", "--json", "--no-progress", "--deep",
                                os.path.join(logroot, part))
    code_s3, remote, err = _run(capfd, "verify", "--json", "--no-progress", "--deep",
                                f"{s3_uri}/{part}")
    assert code_s3 == code_local, err
    assert _problems(remote, f"{s3_uri}/{part}") == _problems(local, os.path.join(
        os.path.abspath(logroot), part))
    log = sorted(f for f in os.listdir(os.path.join(logroot, part)) if f.endswith(".log"))[0]
    code_local, local, _ = _run(capfd, "verify", "--json", "--no-progress",
                                os.path.join(logroot, part, log))
    code_s3, remote, err = _run(capfd, "verify", "--json", "--no-progress", f"{s3_uri}/{part}/{log}")
    assert code_s3 == code_local, err
    assert _problems(remote, f"{s3_uri}/{part}") == _problems(local, os.path.join(
        os.path.abspath(logroot), part))
