"""``scripts/bare_python.sh``: the bare Spark Python (pyspark, pyarrow, pandas) is installed without
pip's byte-compiling of every module (``--no-compile``: pandas' 1,100 test modules among them,
CPU-seconds of the suite's set-up beside pytest for modules no job imports); the modules a Python
worker imports are compiled ahead, so a first worker does not compile them within Spark's 10 s to
connect back."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from support.spark import spark_helpers as H

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
    # what a Python worker imports is compiled ahead: it must connect back within Spark's 10 s
    for module in ("pyspark/worker", "pyspark/sql/worker/plan_data_source_read", "pandas/core/frame",
                   "pyarrow/pandas_compat"):
        name = os.path.basename(module)
        assert glob.glob(os.path.join(site, os.path.dirname(module), "__pycache__", f"{name}.*.pyc")), module
    # and the install works
    imported = subprocess.run([python, "-c", "import pandas, pyarrow, pyspark; print(pandas.__version__)"],
                              capture_output=True, text=True, timeout=300)
    assert imported.returncode == 0, imported.stderr[-2000:]


def test_spark_pythons_import_pyspark_compiled_from_its_zip():
    """Spark puts pyspark/python/lib/pyspark.zip first on the path of every Python it starts;
    scripts/pyspark_zip_pyc.py adds this Python's compiled modules to it, and a Python started as
    Spark starts one imports them (``__file__`` a .pyc in the zip) rather than compiling the sources."""
    python = H.bare_python(sys.executable)
    lib = subprocess.run([python, "-c", "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "
                                        "'python', 'lib'))"], capture_output=True, text=True, check=True,
                         timeout=120).stdout.strip()
    zips = sorted(glob.glob(os.path.join(lib, "*.zip")))
    assert any(z.endswith("pyspark.zip") for z in zips), zips
    got = subprocess.run([python, "-c", "import pyspark.worker; print(pyspark.worker.__file__)"],
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(zips)},
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.strip().endswith(os.path.join("pyspark.zip", "pyspark", "worker.pyc")), got.stdout


def test_a_python_imports_kafkarec_compiled_from_its_wheel():
    """Spark puts ``--py-files <wheel>`` on its Pythons' path as a zip; the wheel carries each
    module's checked hash-based ``.pyc`` beside its ``.py`` (setup.py's build_py), so a worker
    imports kafkarec and spark_udfs compiled rather than compiling their sources."""
    import zipfile
    wheel = H.wheelhouse(sys.executable)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        sources = sorted(n for n in names if n.endswith(".py"))
        assert sources and [n for n in sources if n + "c" not in names] == []
        header = zf.read("kafkarec/scan/_read.pyc")[:8]
    import importlib.util
    assert header[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(header[4:8], "little") == 0b11           # hash-based, checked
    python = H.bare_python(sys.executable)
    probe = ("import kafkarec, kafkarec.scan._read as r, spark_udfs.read.datasource as d\n"
             "data = kafkarec.build_batch([b'v'], keys=[b'k'], base_offset=7)\n"
             "print(r.__file__, d.__file__, [x.offset for b in kafkarec.iter_batches(data) for x in b])")
    # the wheel with its dependency wheels beside it, as a shipped worker has them
    got = subprocess.run([python, "-c", probe], env={**H.bare_env(python), "PYTHONPATH": wheel},
                         capture_output=True, text=True, timeout=300, cwd=os.path.dirname(wheel))
    assert got.returncode == 0, got.stderr[-2000:]
    read, datasource, offsets = got.stdout.split(" ", 2)
    assert read == os.path.join(wheel, "kafkarec", "scan", "_read.pyc")
    assert datasource == os.path.join(wheel, "spark_udfs", "read", "datasource.pyc")
    assert offsets.strip() == "[7]"
