"""scripts/test_times.py, the report that ends a full ``bash scripts/test.sh``: its closing line
says how long the whole command took, and a run over the suite's budget (30 minutes on a fresh
2-core machine, set-up included) ends with a WARNING line and exit status 1, which fails the run
under CI."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "test_times.py")

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4" time="1234.5">
<testcase classname="tests.spark.test_cluster" name="test_a" time="700.0"/>
<testcase classname="tests.core.test_x" name="test_b" time="0.5"/>
<testcase classname="tests.core.test_x" name="test_c" time="0.1"><failure message="AssertionError: no&#10;assert 1 == 2"/></testcase>
<testcase classname="tests.core.test_x" name="test_d" time="0.0"><skipped message="why"/></testcase>
</testsuite></testsuites>
"""


def _run(tmp_path, *args):
    xml = tmp_path / "main.xml"
    xml.write_text(JUNIT)
    return subprocess.run([sys.executable, SCRIPT, str(xml), *args], capture_output=True, text=True, timeout=60)


def test_a_run_over_the_budget_ends_with_a_warning_and_fails(tmp_path):
    proc = _run(tmp_path, "--closing-line", "--elapsed", "1900")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    closing, warning = proc.stdout.splitlines()[-2:]
    assert closing == "suite: 2 passed, 1 failed, 1 skipped in 1900 s (budget 1800 s)"
    assert warning.startswith("WARNING: the whole test command took 1900 s, over the suite's budget of 1800 s "
                              "(by 100 s)")


def test_a_run_within_the_budget_says_how_long_it_took(tmp_path):
    proc = _run(tmp_path, "--closing-line", "--elapsed", "1799")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "suite: 2 passed, 1 failed, 1 skipped in 1799 s (budget 1800 s)"
    # a budget of one's own (a slower machine's)
    proc = _run(tmp_path, "--closing-line", "--elapsed", "1799", "--budget", "1000")
    assert proc.returncode == 1 and "over the suite's budget of 1000 s (by 799 s)" in proc.stdout


def test_the_closing_line_without_the_elapsed_time_is_the_counts_alone(tmp_path):
    proc = _run(tmp_path, "--closing-line")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "suite: 2 passed, 1 failed, 1 skipped"


def test_the_closing_lines_name_what_failed_and_a_pytest_internal_error(tmp_path):
    """CI shows the output's tail: the closing lines name each failed test with its message's first
    line, and the last lines of a pytest internal error (a worker's, whose queued tests never ran)
    from the run's log beside its XML."""
    (tmp_path / "main.log").write_text(
        "....\nINTERNALERROR> Traceback (most recent call last):\n"
        "INTERNALERROR>   File \"x.py\", line 1, in f\n"
        "INTERNALERROR> OSError: [Errno 28] No space left on device\n")
    proc = _run(tmp_path, "--closing-line")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "---- what failed (1; the first 1, then by message) ----",
        "  failure: tests.core.test_x::test_c: AssertionError: no",
        "      1 x AssertionError: no",
        "---- pytest internal error (main.log, its last lines) ----",
        "  INTERNALERROR> Traceback (most recent call last):",
        '  INTERNALERROR>   File "x.py", line 1, in f',
        "  INTERNALERROR> OSError: [Errno 28] No space left on device",
        "  the exceptions it names:",
        "    INTERNALERROR> OSError: [Errno 28] No space left on device",
        "suite: 2 passed, 1 failed, 1 skipped",
    ]


def test_the_closing_lines_warn_of_a_disk_or_memory_that_ran_low(tmp_path):
    """test.sh's phases.json keeps the least free disk and available memory seen during the run;
    under 2 GiB the closing lines say so (a full disk fails tests in ways that name no cause)."""
    phases = tmp_path / "phases.json"
    phases.write_text(json.dumps({"lowest_kib": {"disk of the checkout": 900 * 1024,
                                                 "disk of the temporary folders": 40 * 2**20,
                                                 "memory available": 3 * 2**20}}))
    proc = _run(tmp_path, "--closing-line", "--phases", str(phases))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING: the disk of the checkout fell to 0.88 GiB during the run" in proc.stdout.splitlines()
    assert "temporary" not in proc.stdout and "memory" not in proc.stdout
