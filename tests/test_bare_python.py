"""``scripts/bare_python.sh``: the bare Spark Python (pyspark, pyarrow, pandas) is installed without
pip's byte-compiling of every module (``--no-compile``: pyspark's, pandas' and pyarrow's tests among
them, CPU-seconds of the suite's set-up beside pytest for modules no job imports); Python compiles
what a job imports on first import."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from support import spark_helpers as H

pytestmark = [pytest.mark.slow]


def test_bare_python_is_installed_without_byte_compiling():
    python = H.bare_python(sys.executable)
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    # modules of the bare install that no Spark job imports: pandas' own tests
    tests = os.path.join(site, "pandas", "tests")
    assert glob.glob(os.path.join(tests, "**", "*.py"), recursive=True), f"no pandas tests in {site}"
    compiled = glob.glob(os.path.join(tests, "**", "*.pyc"), recursive=True)
    assert compiled == [], f"{len(compiled)} modules byte-compiled at install, e.g. {compiled[:3]}"
    # and the install works: what a job imports compiles on first import
    imported = subprocess.run([python, "-c", "import pandas, pyarrow, pyspark; print(pandas.__version__)"],
                              capture_output=True, text=True, timeout=300)
    assert imported.returncode == 0, imported.stderr[-2000:]
