"""``kafkarec table``: the keyed state as JSON lines, the same rows as kafkarec.table.latest and
the model of Kafka's rules (tests/support/logs/keyed.py), as of an offset or a time, read_committed or not."""
import base64
import json
import subprocess
import sys

import pytest

from support.logs.keyed import T0, keyed_world, model_state


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("keyed") / "logs")
    return root, keyed_world(root)


def _table(*args):
    proc = subprocess.run([sys.executable, "-m", "kafkarec", "table", *args], capture_output=True,
                          text=True, timeout=300)
    return proc


def _state(proc, topic, partition):
    out = {}
    for line in proc.stdout.splitlines():
        row = json.loads(line)
        if (row["topic"], row["partition"]) == (topic, partition):
            key = base64.b64decode(row["key"])
            assert key not in out
            out[key] = (row["offset"], base64.b64decode(row["value"]))
    return out


@pytest.mark.parametrize("committed", [False, True])
def test_every_partition_as_the_model(world, committed):
    root, events = world
    proc = _table(root, *(["--read-committed"] if committed else []), "--dedupe-buffer-size", "4096")
    assert proc.returncode == 0, proc.stderr
    for (topic, partition), ev in events.items():
        assert _state(proc, topic, partition) == model_state(ev, read_committed=committed)
    n = len(proc.stdout.splitlines())
    assert proc.stderr.startswith(f"{n} live keys in 3 partition(s) from ")
    assert "without a key, never counted" in proc.stderr


def test_as_of_and_topics(world):
    root, events = world
    proc = _table(root, "--topics", "profiles", "--end-offset", "40")
    assert proc.returncode == 0, proc.stderr
    assert {json.loads(line)["topic"] for line in proc.stdout.splitlines()} == {"profiles"}
    for partition in (0, 1):
        assert _state(proc, "profiles", partition) == model_state(events[("profiles", partition)], end_offset=40)
    by_time = _table(root, "--topics", "profiles", "--end-time", str(T0 + 40))
    assert by_time.stdout == proc.stdout


def test_rows_carry_what_the_log_view_has(world):
    root, _ = world
    proc = _table(root, "--topics", "balances", "--payload-encoding", "utf8")
    row = json.loads(proc.stdout.splitlines()[0])
    assert sorted(row) == ["headers", "key", "offset", "partition", "timestamp", "timestampType", "timestamp_iso",
                           "topic", "value"]
    assert row["key"].startswith("account-") and row["timestamp"] == T0 + row["offset"]
    from kafkarec.times import iso
    assert row["timestamp_iso"] == iso(row["timestamp"])


def test_a_path_that_is_not_there(tmp_path):
    proc = _table(str(tmp_path / "nothing"))
    assert proc.returncode == 2 and "kafkarec table: error: " in proc.stderr and "no such file or directory" in proc.stderr and not proc.stdout


def test_a_key_map_too_small_is_a_usage_error(world):
    root, _ = world
    proc = _table(root, "--dedupe-buffer-size", "100")
    assert proc.returncode == 2 and "at least 1024 bytes, not 100" in proc.stderr and not proc.stdout
