"""gzip decoding has two backends (ISA-L when installed, else zlib): the gzip
tests run on both."""
from support.paths import ROOT
import os
import subprocess
import sys

import kafkarec


def test_backend_follows_what_is_installed():
    """ISA-L when its package imports, zlib otherwise (a rule about kafkarec, not about
    this machine: either way the answer is checked)."""
    import importlib.util
    want = "isal" if importlib.util.find_spec("isal") is not None else "zlib"
    assert kafkarec._core._inflate_backend() == want


def test_gzip_tests_pass_on_the_zlib_fallback():
    env = dict(os.environ, KAFKAREC_INFLATE="zlib")
    root = ROOT
    check = subprocess.run(
        [sys.executable, "-c", "import kafkarec; print(kafkarec._core._inflate_backend())"],
        env=env, cwd=root, capture_output=True, text=True, check=True)
    assert check.stdout.strip() == "zlib"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "gzip",
         "tests/core/test_codecs_foreign.py", "tests/core/test_interop_legacy.py",
         "tests/core/test_interop_v2.py"],
        env=env, cwd=root, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and " failed" not in run.stdout
