"""`kafkarec stats` on a partition where no batch is readable prints its report and
exits 1 (it ended in `TypeError: bad operand type for abs(): 'NoneType'` in the text
report).  Found by a coverage-guided campaign; the reproducers replay through the fuzz
harness's own code (fuzz/fuzz_cli.py run on the file, as libFuzzer replays a crash)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkarec.cli import main
from support.paths import ROOT

REPRODUCERS = os.path.join(ROOT, "tests", "fuzz", "reproducers")
CASES = {
    # one v2 batch whose CRC does not match its bytes
    "cli-stats-v2-bad-crc.bin": "Record is corrupt (stored crc = ",
    # a v0 gzip wrapper whose value is null (valid CRC)
    "cli-stats-legacy-null-wrapper.bin": "Found invalid compressed record set with null value (magic = 0)",
}


@pytest.fixture(params=sorted(CASES))
def partition(request, tmp_path):
    part = tmp_path / "topic-0"
    part.mkdir()
    with open(os.path.join(REPRODUCERS, request.param), "rb") as fh:
        (part / "00000000000000000000.log").write_bytes(fh.read())
    return str(part), CASES[request.param]


@pytest.mark.parametrize("flags", [(), ("--headers-only",), ("--json",)])
def test_stats_reports_a_partition_without_readable_batches(partition, flags, capfd):
    part, reason = partition
    assert main(["stats", "--no-progress", *flags, part]) == 1
    out, err = capfd.readouterr()
    assert "Traceback" not in err and reason in err
    if "--json" in flags:
        assert '"bad_batches":1' in out and '"batches":1' in out
    else:
        assert "00000000000000000000.log" in out and "(1 unreadable)" in out
        assert "no readable batches (1 unreadable)" in out
        assert "topic topic: 1 partition(s), 1 segment(s), 1 batches, 0 records" in out


def test_reproducers_replay_through_the_fuzz_harness():
    pytest.importorskip("atheris")
    files = [os.path.join(REPRODUCERS, name) for name in sorted(CASES)]
    run = subprocess.run([sys.executable, os.path.join(ROOT, "fuzz", "fuzz_cli.py"), *files],
                         cwd=os.path.join(ROOT, "fuzz"), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    for f in files:
        assert f"Running: {f}" in run.stderr, run.stderr[-3000:]


def test_the_harness_covers_stats_text_output():
    with open(os.path.join(ROOT, "fuzz", "fuzz_cli.py"), encoding="utf-8") as fh:
        src = fh.read()
    assert '["stats", "--no-progress", PART]' in src
