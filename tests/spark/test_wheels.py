"""kafkarec._wheels' wheel rules: which wheel fits which interpreter, which
dependencies a kafkarec wheel needs, and one report naming every problem.
(No Spark: these decide what register() ships and refuses.)"""
from __future__ import annotations

import os
import zipfile

import pytest

from kafkarec import _wheels as L
from paths import ROOT


def interp(py="cp312", machine="x86_64", glibc=(2, 36), python="3.12.1"):
    i = L.interpreter()
    i = dict(i, py_tag=py, machine=machine, glibc=glibc, python=python,
             markers=dict(i["markers"], python_version=python.rsplit(".", 1)[0],
                          platform_machine=machine))
    return i


def wheel(name):
    w = L.parse_wheel_name(f"/wh/{name}")
    assert w is not None, name
    return w


@pytest.mark.parametrize("name, fits", [
    ("crc32c-2.9-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", True),
    ("crc32c-2.9-cp311-cp311-manylinux_2_17_x86_64.whl", False),            # another Python
    ("crc32c-2.9-cp312-cp312-manylinux_2_17_aarch64.whl", False),           # another machine
    ("cramjam-2.14-cp312-cp312-manylinux_2_39_x86_64.whl", False),          # newer glibc
    ("cramjam-2.14-cp312-cp312-musllinux_1_2_x86_64.whl", False),           # musl
    ("python_snappy-0.7.3-py3-none-any.whl", True),
    ("zstandard-0.25.0-cp39-abi3-manylinux2014_x86_64.whl", True),          # stable ABI
    ("zstandard-0.25.0-cp313-abi3-manylinux2014_x86_64.whl", False),        # abi3 from 3.13 on
    ("kafkarec-0.1.0-cp312-cp312-linux_x86_64.whl", True),
    ("kafkarec-0.1.0-cp312-cp312-linux_x86_64.whl.zip", True),              # as register ships it
])
def test_wheel_fits_interpreter(name, fits):
    why = L.incompatibility(wheel(name), interp())
    assert (why is None) is fits, why
    if not fits:
        assert "built for" in why and ("cp312" in why or "x86_64" in why)


def test_not_a_wheel():
    assert L.parse_wheel_name("/x/kafkarec.zip") is None
    assert L.parse_wheel_name("/x/a-b.whl") is None


@pytest.mark.parametrize("marker, want", [
    ('platform_python_implementation == "PyPy"', False),
    ('python_version >= "3.9"', True),
    ('python_version < "3.10"', False),
    ('extra == "test"', False),
    ('(python_version >= "3.13" or sys_platform == "linux") and os_name == "posix"', True),
    ("platform_machine in 'x86_64 aarch64'", True),
    ("platform_machine not in 'x86_64 aarch64'", False),
])
def test_markers(marker, want):
    env = dict(interp()["markers"], sys_platform="linux", os_name="posix")
    assert L.marker_holds(marker, env) is want


def test_requirements_skip_extras_and_markers():
    meta = ("Metadata-Version: 2.1\nName: zstandard\n"
            "Requires-Dist: cffi>=1.17; platform_python_implementation == \"PyPy\"\n"
            "Requires-Dist: Cram_Jam (>=2.8) ; python_version >= \"3.8\"\n"
            "Requires-Dist: pytest; extra == \"test\"\n\nRequires-Dist: in the body\n")
    assert L.requirements(meta, interp()["markers"]) == ["cram-jam"]


def _fake_wheel(folder, name, requires=()):
    w = wheel(name)
    path = os.path.join(folder, name)
    dist = f"{w.project.replace('-', '_')}-{w.version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{dist}/METADATA", "Metadata-Version: 2.1\nName: x\n"
                    + "".join(f"Requires-Dist: {r}\n" for r in requires))
    return path


def test_resolve_names_every_missing_and_mismatched_piece(tmp_path):
    d = str(tmp_path)
    _fake_wheel(d, "crc32c-2.9-cp311-cp311-manylinux_2_17_x86_64.whl")      # wrong Python
    _fake_wheel(d, "lz4-4.4-cp312-cp312-manylinux_2_17_aarch64.whl")        # wrong machine
    _fake_wheel(d, "python_snappy-0.7.3-py3-none-any.whl", ["cramjam"])     # needs cramjam: absent
    _fake_wheel(d, "zstandard-0.25-cp312-cp312-manylinux_2_17_x86_64.whl")  # fine
    meta = "Name: kafkarec\n" + "".join(f"Requires-Dist: {r}\n" for r in
                                        ("crc32c>=2.3", "lz4>=4", "zstandard", "python-snappy", "isal"))
    res = L.resolve(meta, L.wheel_candidates(folders=[d]), interp())
    assert set(res.wheels) == {"zstandard", "python-snappy"}
    text = "\n".join(res.problems)
    assert len(res.problems) == 4, text
    assert "crc32c (needed by kafkarec): no wheel fits crc32c-2.9-cp311" in text and "cp312" in text
    assert "lz4 (needed by kafkarec): no wheel fits" in text and "aarch64" in text
    assert "isal (needed by kafkarec): not installed and no isal wheel was found" in text
    assert "cramjam (needed by python-snappy): not installed" in text


def test_unpack_is_shared_and_atomic(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKAREC_NATIVE_CACHE", str(tmp_path / "cache"))
    path = _fake_wheel(str(tmp_path), "zstandard-0.25-cp312-cp312-manylinux_2_17_x86_64.whl")
    a = L.unpack(path)
    assert L.unpack(path) == a and os.path.isfile(os.path.join(a, "zstandard-0.25.dist-info", "METADATA"))
    assert not [n for n in os.listdir(os.path.dirname(a)) if n.startswith(".part-")]
    evil = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../outside.py", "")
    with pytest.raises(ImportError, match="refusing to unpack"):
        L.unpack(str(evil))
    assert not (tmp_path / "cache" / "outside.py").exists()


# -- markers: packaging when installed, a PEP 440-correct fallback when not --------------

MARKERS = [
    'python_version ~= "3.9"', 'python_version ~= "3.12"', 'python_full_version ~= "3.11.0"',
    'python_full_version ~= "3.11.9"', 'python_version ~= "2.7"', 'python_version == "3.*"',
    'python_version != "3.11.*"', 'python_version == "3.1.*"', 'python_full_version >= "3.11.0"',
    'python_version > "3.9"', 'python_version < "3.10"', 'python_version <= "3.11"',
    'python_version == "3.11"', 'python_version == "3.11.0"', 'sys_platform == "linux"',
    'platform_machine != "arm64"', "os_name in 'posix nt'", 'extra == "test"',
    '(python_version >= "3.13" or sys_platform == "linux") and os_name == "posix"',
    'platform_python_implementation == "PyPy"',
]
ENVS = [dict(python_version=v, python_full_version=f"{v}.{m}", sys_platform="linux",
             platform_machine="x86_64", os_name="posix", platform_python_implementation="CPython",
             implementation_name="cpython", platform_system="Linux", extra="")
        for v, m in (("3.9", 18), ("3.10", 0), ("3.11", 4), ("3.12", 1), ("3.13", 0))]


@pytest.mark.parametrize("marker", MARKERS)
def test_marker_fallback_agrees_with_packaging(marker):
    from packaging.markers import Marker
    for env in ENVS:
        assert L._marker_fallback(marker, env) is Marker(marker).evaluate(dict(env)), (marker, env)
        assert L.marker_holds(marker, env) is Marker(marker).evaluate(dict(env))


def test_compatible_release_is_not_greater_or_equal():
    env = dict(ENVS[0], python_full_version="3.12.1")
    # ~= 3.11.0 means >= 3.11.0, == 3.11.*: 3.12.1 is not compatible (>= would say it is)
    assert L._marker_fallback('python_full_version ~= "3.11.0"', env) is False
    assert L._marker_fallback('python_full_version >= "3.11.0"', env) is True


def test_fallback_refuses_what_it_cannot_compare():
    with pytest.raises(ValueError):
        L._marker_fallback('platform_release >= "5.4-generic"', {"platform_release": "6.1"})
    meta = 'Requires-Dist: x; platform_release >= "5.4-generic"\n'
    import unittest.mock
    with unittest.mock.patch.object(L, "_packaging_marker", lambda: None):
        with pytest.raises(ImportError, match="installing the packaging library"):
            L.requirements(meta, {"platform_release": "6.1"})


def test_import_kafkarec_does_not_import_the_wheel_code():
    import subprocess
    import sys
    code = "import sys, kafkarec; print('kafkarec._wheels' in sys.modules, 'zipfile' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), cwd="/").stdout
    assert out.split()[0] == "False"
