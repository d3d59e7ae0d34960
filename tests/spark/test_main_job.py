"""The README's first command, ``bash scripts/main.sh``, as a user runs it: it
speaks to its user (a progress line per step, Spark at WARN, the summary at the
end), and once the wheelhouse is built (its step 1, ``scripts/wheelhouse.sh``, run
first on its own) it rebuilds nothing.  One spark-submit: a first whole run of main.sh
only built that wheelhouse, then ran the same Spark job again."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from support import spark_helpers as H

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)


def _run(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KAFKAREC_SPARK_LOG_LEVEL")}
    proc = subprocess.run(["bash", *args], cwd=H.ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def test_main_job_prints_progress_and_summary_without_spark_info():
    # main.sh's step 1 as it runs it (its Python: $PYTHON, else python3)
    _run(os.path.join(H.ROOT, "scripts", "wheelhouse.sh"), "wheelhouse", "--python",
         os.environ.get("PYTHON", "python3"))
    proc = _run(os.path.join(H.ROOT, "scripts", "main.sh"))
    out = proc.stdout + proc.stderr
    spark_info = [line for line in out.splitlines() if re.match(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ", line)]
    assert spark_info == []
    steps = re.findall(r"kafkarec main job: (\d)/4 ", proc.stderr)
    assert steps == ["1", "2", "3", "4"]
    # the summary: one row per partition of the sample log directory, then the total
    assert re.search(r"^orders +0 +\d+ +\d+ +\d+ ", proc.stdout, re.M)
    total = re.search(r"^total: (\d+) records, (\d+) errors", proc.stdout, re.M)
    assert total and int(total.group(1)) == 7687 and int(total.group(2)) == 1
    # the second run rebuilt nothing
    assert "is up to date" in proc.stderr and "building kafkarec" not in proc.stderr
