"""``kafkarec census`` (with ``--what-if``) and ``kafkarec find`` on the command line: the same
figures as kafkarec.census, the JSON shapes the docs promise, refusals and damaged batches."""
import base64
import json
import subprocess
import sys

import pytest

from support.logs.keyed import keyed_world, model_records


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("census-cli") / "logs")
    return root, keyed_world(root)


def _run(*args):
    return subprocess.run([sys.executable, "-m", "kafkarec", *args], capture_output=True, text=True, timeout=300)


def test_census_json_has_the_promised_fields(world):
    root, events = world
    proc = _run("census", root, "--json", "--topics", "profiles")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rows = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
    assert set(rows) == {("profiles", 0), ("profiles", 1)}
    for tp, row in rows.items():
        assert {"topic", "partition", "records", "tombstones", "distinct_keys", "live_keys"} <= set(row)
        assert row["records"] == len(model_records(events[tp], read_committed=True))


def test_census_table_and_what_if(world):
    root, _ = world
    proc = _run("census", root, "--topics", "balances", "--what-if", "zstd:3,lz4,none", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("partition ")
    assert "balances-0" in proc.stdout and "topic balances: 1 partition(s), 31000 records, 1000 tombstones, 3000 distinct keys, 2000 live keys" in proc.stdout
    lines = [line.split() for line in proc.stdout.splitlines() if line.startswith("  zstd:3") or line.startswith("  none")]
    assert [l[0] for l in lines] == ["zstd:3", "none"] and int(lines[0][2]) < int(lines[1][2])


def test_what_if_level_out_of_range_is_a_usage_error(world):
    root, _ = world
    proc = _run("census", root, "--what-if", "zstd:23")
    assert proc.returncode == 2 and "[-131072, 22]" in proc.stderr and not proc.stdout


def test_census_damaged_batch_is_counted_and_fails_the_run(tmp_path):
    subprocess.run([sys.executable, "-m", "kafkarec.sample", str(tmp_path / "s")], check=True, capture_output=True)
    proc = _run("census", str(tmp_path / "s"), "--json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    bad = [p for p in doc["partitions"] if p["errors"]]
    assert len(bad) == 1 and "crc" in bad[0]["errors"][0]["message"].lower()
    assert "position" in proc.stderr


def test_find_json_lines(world):
    root, events = world
    proc = _run("find", root, "--topics", "profiles", "--key", "user-3", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    want = sorted((p, off, v) for p in (0, 1) for off, k, v in model_records(events[("profiles", p)]) if k == b"user-3")
    assert [(r["partition"], r["offset"], None if r["value"] is None else r["value"].encode()) for r in rows] == want
    assert all(r["key"] == "user-3" and r["key_encoding"] == "utf8" for r in rows)
    hexed = _run("find", root, "--topics", "profiles", "--key-hex", b"user-3".hex(), "--json")
    assert hexed.stdout == proc.stdout
    assert proc.stderr.strip() == f"{len(rows)} record(s) found"


def test_find_renders_binary_as_base64(tmp_path):
    from support.logs.logdir import PartitionWriter, v2_batch
    w = PartitionWriter(str(tmp_path), "bin", 0)
    w.append(v2_batch([(0, b"\xff\x00", b"\x80\x81", [])]))
    w.close()
    proc = _run("find", str(tmp_path), "--key-hex", "ff00", "--json")
    [row] = [json.loads(line) for line in proc.stdout.splitlines()]
    assert row["key_encoding"] == row["value_encoding"] == "base64"
    assert base64.b64decode(row["value"]) == b"\x80\x81"


def test_find_refuses_before_it_writes_anything(world):
    """A usage error (here a regular expression RE2 refuses) is the command's only output: the table's
    heading is not written first (find's checks and scans are made by the call, not on the first row)."""
    root, _ = world
    proc = _run("find", root, "--topics", "profiles", "--value-regex", "(")
    assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
    assert "value regex '('" in proc.stderr


@pytest.mark.parametrize("args", [["find", "--key", "k", "--start-time"], ["find", "--key", "k", "--end-time"],
                                  ["census", "--start-time"], ["census", "--end-time"],
                                  ["restore", "--target-bootstrap", "127.0.0.1:1", "--end-time"],
                                  ["restore", "--target-bootstrap", "127.0.0.1:1", "--groups-as-of"]])
def test_a_time_past_a_long_is_a_usage_error(tmp_path, capfd, args):
    """Finding 40 (issue 67): a time option of 5,000 digits raised Python's integer-digit-limit
    ValueError; it is refused as Java's Long.parseLong refuses it, exit 2, one line."""
    from kafkarec.cli import main
    code = main([args[0], str(tmp_path), *args[1:], "1" * 5000])
    _, err = capfd.readouterr()
    assert code == 2 and len(err.splitlines()) == 1 and "out of a 64-bit number's range" in err, err


@pytest.mark.parametrize("count", ["2147483648", "0", "-1"])
def test_census_partition_count_is_finds_rule(world, capfd, count):
    """Finding 39 (issue 67): --partitions t=2147483648 raised a raw OverflowError from the core's
    misplaced_keys; census refuses what find refuses, with find's words."""
    from kafkarec.cli import main
    root, _ = world
    for args in (["census", root, "--topics", "profiles", "--no-progress"],
                 ["find", root, "--key", "k", "--partitioner", "murmur2"]):
        code = main([*args, "--partitions", f"profiles={count}"])
        _, err = capfd.readouterr()
        assert code == 2 and f"{count} is no partition count (1 to 2^31-1)" in err, err
