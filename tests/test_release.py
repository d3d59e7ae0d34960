"""``bash scripts/release.sh DIR``: an sdist and a repaired manylinux wheel for
every CPython 3.9-3.13 on the machine; each wheel installs into a clean venv of
its own Python and decodes a batch there, the first Python's built from the sdist
by pip (as for a user who installs the sdist: from its sources alone).  And the
README's first install line, ``pip install --no-index --find-links wheelhouse
kafkarec`` (no extras): every command works or names the extra it needs."""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from support.spark import spark_helpers as H
from support.paths import TESTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = [pytest.mark.slow]


def _pythons() -> list[str]:
    found = []
    for minor in range(9, 14):
        name = f"python3.{minor}"   # as release.sh looks: on PATH, else under pyenv
        for path in [shutil.which(name)] + sorted(glob.glob(
                os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/{name}"))):
            if path and subprocess.run([path, "-c", "import venv"], capture_output=True).returncode == 0:
                found.append(path)
                break
    return found


def test_release_builds_and_checks_every_python(tmp_path):
    pythons = _pythons()
    if len(pythons) < 2:
        pytest.skip(f"release needs several CPythons 3.9-3.13; found {pythons}")
    out = tmp_path / "release"
    # the suite's wheelhouses (scripts/test_deps.sh: cp311, cp312) give their wheels of the same
    # sources instead of a second build; every wheel is still checked in a clean venv below
    reuse = [arg for folder in sorted(glob.glob(os.path.join(ROOT, ".cache", "wheelhouse-*/")))
             for arg in ("--reuse", folder)]
    # the Pythons with no wheelhouse compile at -O0 (setup.py's KAFKAREC_CHECK_BUILD: ~11 CPU-s a
    # compile, not ~80): what is checked is that each builds, is repaired, installs and decodes; the
    # release's own flags are the reused cp311/cp312 wheels'
    env = dict(os.environ, KAFKAREC_CHECK_BUILD="1")
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "release.sh"), str(out), *reuse],
                          capture_output=True, text=True, timeout=2400, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    version = re.search(r'^__version__ = "(.*)"$', open(os.path.join(ROOT, "kafkarec", "__init__.py")).read(),
                        re.M).group(1)
    assert (out / f"kafkarec-{version}.tar.gz").is_file()
    wheels = sorted(p.name for p in out.glob(f"kafkarec-{version}-*.whl"))
    tags = sorted(re.match(rf"kafkarec-{re.escape(version)}-(cp3\d+)-", w).group(1) for w in wheels)
    want = sorted("cp3" + re.search(r"python3\.(\d+)$", p).group(1) for p in pythons)
    assert tags == want
    assert all("manylinux" in w for w in wheels)
    # every wheel decoded a batch in a clean venv of its own
    checked = re.findall(r"^  (kafkarec-\S+): kafkarec \S+ decodes$", proc.stderr, re.M)
    assert sorted(checked) == wheels
    # the first Python's was built from source by pip from the sdist (which ships no C), with
    # Cython run on the sdist's .pyx: the sdist builds and installs as a user's pip does it
    first = "cp3" + re.search(r"python3\.(\d+)$", pythons[0]).group(1)
    built, = re.findall(rf"^  kafkarec-{re.escape(version)}\.tar\.gz: built from source by pip into "
                        rf"(kafkarec-{re.escape(version)}-{first}-\S+\.whl), which decodes$", proc.stderr, re.M)
    assert built in wheels
    assert re.search(rf"^wheelhouse: building kafkarec's sdist, and from it with pip the wheel for Python "
                     rf"\S+ \({first}\)$", proc.stderr, re.M)
    with tarfile.open(out / f"kafkarec-{version}.tar.gz") as sdist:
        shipped = {os.path.relpath(n, f"kafkarec-{version}") for n in sdist.getnames()}
    assert "kafkarec/_core.pyx" in shipped and "kafkarec/_core.c" not in shipped
    # the folder is a wheelhouse for every one of those Pythons (dependency wheels beside)
    for tag in want:
        assert list(out.glob(f"lz4-*-{tag}-*.whl")), tag


# --- a base install: what a new user has after the README's first install line ----------------

#: The one line a command or function gives where the extra it needs is not installed.
EXTRA_LINE = (r"(?:(?:pyarrow|numpy) is not installed: pip install 'kafkarec\[arrow\]'"
              r"|(?:polars|duckdb|ray|daft|dask|pandas) is not installed: pip install 'kafkarec\[engines\]'"
              r"|(?:pyiceberg|deltalake|confluent-kafka) is not installed: pip install 'kafkarec\[lakehouse\]'"
              r"|confluent-kafka is not installed: pip install 'kafkarec\[restore\]')")
#: Every command of ``kafkarec --help`` as a user runs it on a base install, on the sample log
#: directory (SAMPLE, written by that install) and Kafka's internal topics (INTERNAL): its exit
#: status and how a line of its output starts, or None where it needs the arrow extra (exit 2,
#: EXTRA_LINE).  The sample holds one batch with a broken CRC: verify and stats exit 1.
BASE_COMMANDS = [
    (["dump", "SAMPLE"], 0, "Dumping SAMPLE/clicks-0/00000000000000000000.log"),
    (["dump", "--decode", "auto", "INTERNAL/__cluster_metadata-0"], 0, "Log starting offset: 0"),
    (["dump", "--topics", "orders", "--start-offset", "5", "SAMPLE"], 2, None),
    (["dump", "--value-decoder", "avro", "--value-schema", "SCHEMA", "SAMPLE/orders-0"], 2, None),
    (["verify", "--no-progress", "SAMPLE"], 1, "checked 6 partition(s), 11 segment(s), 84 batches, "),
    (["verify", "--no-progress", "file://SAMPLE"], 2, None),
    (["stats", "--no-progress", "SAMPLE"], 1, "all: 6 partition(s), 11 segment(s), 84 batches, 7690 records"),
    (["stats", "--no-progress", "--end-offset", "10", "SAMPLE"], 2, None),
    # a log dir is read through the storage layer (pyarrow's file systems), the one door to the log
    (["metadata", "INTERNAL"], 2, None),
    (["transactions", "INTERNAL"], 2, None),
    (["table", "SAMPLE"], 2, None),
    (["schemas", "SAMPLE"], 2, None),
    (["backfill", "SAMPLE", "--delta", "SAMPLE-table", "--layout", "kafka-delta-ingest", "--app-id", "lake"], 2,
     None),
    (["audit", "SAMPLE", "--delta", "SAMPLE-table", "--layout", "kafka-delta-ingest"], 2, None),
    (["census", "--no-progress", "SAMPLE"], 2, None),
    (["find", "--topics", "orders", "--key", "k", "SAMPLE"], 2, None),
    (["restore", "SAMPLE", "--target-bootstrap", "127.0.0.1:1"], 2, None),
]

#: In the base install: every kafkarec module imports or says the extra, and so do the entry points
#: that need it; what needs no extra works.
BASE_API = r"""
import json, os, sys
import kafkarec
from kafkarec.errors import MissingExtraError
sample = sys.argv[1]
root = os.path.dirname(kafkarec.__file__)
said = {}
for folder, _, files in os.walk(root):
    for f in files:
        name = os.path.relpath(os.path.join(folder, f), os.path.dirname(root))[:-3].replace(os.sep, ".")
        if f.endswith(".py") and not name.endswith("__main__"):
            try:
                __import__(name.removesuffix(".__init__"))
            except MissingExtraError as e:
                said[name] = str(e)
from kafkarec import table
from kafkarec.log import storage
data = kafkarec.build_batch([b"v"], keys=[b"k"], base_offset=7)
calls = {"iter_batches": lambda: [(r.offset, r.value) for b in kafkarec.iter_batches(data) for r in b],
         "to_arrow": lambda: kafkarec.to_arrow(data), "iter_arrow": lambda: list(kafkarec.iter_arrow(data)),
         "arrow_schema": lambda: kafkarec.arrow_schema(),
         "to_arrow(decode=)": lambda: kafkarec.to_arrow(data, decode="consumer_offsets"),
         "table.latest": lambda: table.latest(sample), "storage.resolve": lambda: storage.resolve(sample)}
for name, call in calls.items():
    try:
        said[name] = repr(call())
    except MissingExtraError as e:
        said[name] = str(e)
print(json.dumps(said))
"""


def test_base_install_commands_work_or_name_their_extra(tmp_path):
    """No pyarrow, no numpy: each command of ``kafkarec --help`` gives its normal output or one line
    naming the extra, never a traceback.  The wheel is the cp311 wheelhouse's (scripts/test_deps.sh
    made it before this module runs); only the venv is new."""
    wheel = H.wheelhouse(sys.executable)
    venv = tmp_path / "base"
    # without pip of its own (ensurepip takes seconds): this pip installs into it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    py, cli = str(venv / "bin" / "python"), str(venv / "bin" / "kafkarec")
    subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--disable-pip-version-check",
                    "--no-compile", "--no-index", "--find-links", os.path.dirname(wheel), "kafkarec"],
                   check=True, env=env, timeout=600)

    def run(*args):       # in tmp_path, where the checkout is not importable
        return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run(py, "-c", "import pyarrow").returncode == run(py, "-c", "import numpy").returncode == 1
    sample = str(tmp_path / "sample")
    made = run(py, "-m", "kafkarec.sample", sample)
    assert made.returncode == 0, made.stderr
    schema = tmp_path / "value.avsc"
    schema.write_text('{"type": "record", "name": "V", "fields": [{"name": "a", "type": "string"}]}')
    paths = {"SAMPLE": sample, "INTERNAL": os.path.join(TESTS, "data", "internal-topics", "logs"),
             "SCHEMA": str(schema)}

    helped = run(cli, "--help")
    assert helped.returncode == 0
    assert set(re.findall(r"^    ([a-z]+)\b", helped.stdout, re.M)) == {argv[0] for argv, _, _ in BASE_COMMANDS}
    for argv, status, line in BASE_COMMANDS:
        args = [re.sub(r"\b(SAMPLE|INTERNAL|SCHEMA)\b", lambda m: paths[m.group(1)], a) for a in argv]
        got = run(cli, *args)
        assert "Traceback" not in got.stderr, (args, got.stderr)
        assert got.returncode == status, (args, got.stdout[-2000:], got.stderr[-2000:])
        if line is None:
            assert got.stdout == "" and re.fullmatch(rf"kafkarec {argv[0]}: error: {EXTRA_LINE}\n", got.stderr), \
                (args, got.stderr)
        else:
            start = line.replace("SAMPLE", sample)
            assert any(out.startswith(start) for out in got.stdout.splitlines()), (args, got.stdout[-2000:])

    api = run(py, "-c", BASE_API, sample)
    assert api.returncode == 0 and "Traceback" not in api.stderr, api.stderr
    said = json.loads(api.stdout)
    assert said.pop("iter_batches") == "[(7, b'v')]"
    assert said and all(re.fullmatch(EXTRA_LINE, text) for text in said.values()), said
    assert {"to_arrow", "table.latest", "kafkarec.registry.__init__", "kafkarec.avro.rebase"} <= set(said)
