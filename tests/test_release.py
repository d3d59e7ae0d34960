"""``bash scripts/release.sh DIR``: an sdist and a repaired manylinux wheel for
every CPython 3.9-3.13 on the machine; each wheel installs into a clean venv of
its own Python and decodes a batch there, the first Python's built from the sdist
by pip (as for a user who installs the sdist: from its sources alone)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tarfile

import pytest

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
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "release.sh"), str(out)],
                          capture_output=True, text=True, timeout=2400)
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
