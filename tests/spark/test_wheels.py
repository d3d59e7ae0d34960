"""kafkarec._boot.wheels' wheel rules: which wheel fits which interpreter, which
dependencies a kafkarec wheel needs, and one report naming every problem.
(No Spark: these decide what register() ships and refuses.)"""
from __future__ import annotations

import os
import zipfile

import pytest

from kafkarec._boot import wheels as L
from support.paths import ROOT


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
    ("six-1.17.0-py2.py3-none-any.whl", True),                              # a compressed tag set
    ("isal-1.7-cp312-cp312-manylinux1_x86_64.whl", True),                   # glibc 2.5
    ("isal-1.7-cp312-cp312-manylinux_2_36_x86_64.whl", True),               # exactly this glibc
    ("isal-1.7-cp312-cp312-manylinux_2_37_x86_64.whl", False),              # one newer
    ("isal-1.7-cp312-cp312-macosx_11_0_x86_64.whl", False),                 # another system
    ("isal-1.7-pp310-pypy310_pp73-manylinux_2_17_x86_64.whl", False),       # another implementation
])
def test_wheel_fits_interpreter(name, fits):
    why = L.incompatibility(wheel(name), interp())
    assert (why is None) is fits, why
    if not fits:
        assert "built for" in why and ("cp312" in why or "x86_64" in why)


def test_not_a_wheel():
    assert L.parse_wheel_name("/x/kafkarec.zip") is None
    assert L.parse_wheel_name("/x/a-b.whl") is None
    assert L.parse_wheel_name("/x/a-not.a.version-py3-none-any.whl") is None


def test_wheel_names_are_read_by_packaging():
    w = wheel("Python_Snappy-0.7.3-1-py3-none-any.whl.zip")
    assert w.project == "python-snappy" and str(w.version) == "0.7.3"
    assert w.filename == "Python_Snappy-0.7.3-1-py3-none-any.whl"
    assert (w.python, w.abi, w.platform) == ("py3", "none", "any")
    assert wheel("lz4-4.10-cp312-cp312-linux_x86_64.whl").version > wheel("lz4-4.9-cp312-cp312-linux_x86_64.whl").version


def test_another_system_accepts_only_pure_wheels():
    mac = dict(interp(), system="Darwin", glibc=None)
    assert L.incompatibility(wheel("six-1.17.0-py2.py3-none-any.whl"), mac) is None
    why = L.incompatibility(wheel("crc32c-2.9-cp312-cp312-manylinux_2_17_x86_64.whl"), mac)
    assert why.startswith("built for manylinux_2_17_x86_64, this machine is Darwin"), why


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
    assert [r.name for r in L.requirements(meta, interp()["markers"])] == ["Cram_Jam"]


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


def test_resolve_takes_the_newest_wheel_the_requirement_allows(tmp_path):
    d = str(tmp_path)
    for v in ("4.3.2", "4.4.0", "5.0.0rc1"):
        _fake_wheel(d, f"lz4-{v}-cp312-cp312-manylinux_2_17_x86_64.whl")
    _fake_wheel(d, "crc32c-2.2-cp312-cp312-manylinux_2_17_x86_64.whl")
    meta = "Requires-Dist: lz4>=4.3\nRequires-Dist: crc32c>=2.3\n"
    res = L.resolve(meta, L.wheel_candidates(folders=[d]), interp())
    assert str(res.wheels["lz4"].version) == "4.4.0"            # no pre-release while a release fits
    assert res.problems == ["crc32c (needed by kafkarec): no wheel is crc32c>=2.3: "
                            "crc32c-2.2-cp312-cp312-manylinux_2_17_x86_64.whl"]
    res = L.resolve("Requires-Dist: lz4>=5.0.0rc1\n", L.wheel_candidates(folders=[d]), interp())
    assert str(res.wheels["lz4"].version) == "5.0.0rc1"         # ... but when only a pre-release does


def test_unreadable_requirement_is_one_import_error():
    with pytest.raises(ImportError, match="cannot tell whether Requires-Dist: x; platform_release"):
        L.requirements('Requires-Dist: x; platform_release >>= "5"\n', interp()["markers"])


def test_unpack_is_shared_and_atomic(tmp_path, monkeypatch):
    from kafkarec._boot.files import cache_root
    monkeypatch.setenv("KAFKAREC_NATIVE_CACHE", str(tmp_path / "cache"))
    cache = cache_root()
    assert cache == str(tmp_path / "cache")
    path = _fake_wheel(str(tmp_path), "zstandard-0.25-cp312-cp312-manylinux_2_17_x86_64.whl")
    a = L.unpack(path, cache)
    assert L.unpack(path, cache) == a and os.path.isfile(os.path.join(a, "zstandard-0.25.dist-info", "METADATA"))
    assert not [n for n in os.listdir(os.path.dirname(a)) if n.startswith(".part-")]
    evil = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../outside.py", "")
    with pytest.raises(ImportError, match="refusing to unpack"):
        L.unpack(str(evil), cache)
    assert not (tmp_path / "cache" / "outside.py").exists()


def test_import_kafkarec_does_not_import_the_wheel_code():
    import subprocess
    import sys
    code = ("import sys, kafkarec; print(*(m in sys.modules for m in "
            "('kafkarec._boot.wheels', 'spark_udfs', 'packaging')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), cwd="/").stdout
    assert out.split() == ["False", "False", "False"]


def _packaging_wheel(folder, monkeypatch):
    """packaging's wheel as register() makes it from the installed distribution's files, when
    no wheelhouse is given (spark_udfs.ship.shipping.installed_wheels), copied into ``folder``."""
    import importlib.metadata as md
    import shutil
    from spark_udfs.ship import shipping as _shipping
    monkeypatch.setenv("KAFKAREC_SPARK_CACHE", os.path.join(folder, "spark-cache"))
    made = _shipping._repacked(md.distribution("packaging"))
    assert os.path.basename(made) == f"packaging-{md.version('packaging')}-py3-none-any.whl"
    return shutil.copy(made, folder)


def _bundle(folder):
    """kafkarec's package and boot room as the kafkarec wheel holds them (a zip), without the
    compiled core or its dependency wheels: ``import kafkarec`` loads no core, so the wheel rules
    import all the same."""
    path = os.path.join(folder, "kafkarec-0.1.0-py3-none-any.whl.zip")
    with zipfile.ZipFile(path, "w") as zf:
        for name in ("__init__.py", "_boot/__init__.py", "_boot/loader.py", "_boot/wheels.py",
                     "_boot/files.py"):
            zf.write(os.path.join(ROOT, "kafkarec", *name.split("/")), f"kafkarec/{name}")
    return path


def _without_site(archive, code):
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KAFKAREC_"))}
    return subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path.insert(0, {archive!r})\n" + code],
                          capture_output=True, text=True, env=env, cwd="/", timeout=120)


def test_a_python_without_packaging_imports_it_from_its_wheel_next_to_the_archive(tmp_path, monkeypatch):
    """A bare executor: kafkarec._boot.wheels (from the shipped zip) finds packaging's pure-Python
    wheel beside that zip, imports it as a zip, and then resolves with it."""
    archive = _bundle(str(tmp_path))
    code = ("from kafkarec._boot import wheels as L\nimport packaging\nprint(packaging.__file__)\n"
            "print(L.parse_wheel_name('/x/Python_Snappy-0.7.3-py3-none-any.whl').project)")
    run = _without_site(archive, "import packaging")
    assert run.returncode != 0 and "No module named 'packaging'" in run.stderr   # -S: no site-packages
    run = _without_site(archive, code)
    assert run.returncode != 0
    assert "kafkarec needs the packaging library, which this Python" in run.stderr
    assert "packaging-*-py3-none-any.whl was found in" in run.stderr and "wheelhouse.sh" in run.stderr
    wheel_path = _packaging_wheel(str(tmp_path), monkeypatch)
    run = _without_site(archive, code)
    assert run.returncode == 0, run.stderr
    where, project = run.stdout.split()
    assert where.startswith(wheel_path + os.sep) and project == "python-snappy"


def test_a_failed_check_job_names_the_workers_python_in_its_fix():
    """PySpark refuses workers of another Python minor version before the probe runs: the one
    ShippingError quotes Spark's error class and tells what to make for which Python."""
    from spark_udfs.ship import shipping as _shipping
    exc = RuntimeError("An exception was thrown from the Python worker:\n"
                       "pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] "
                       "Python in worker has different version: 3.12 than that in driver: 3.11, PySpark "
                       "cannot run with different minor versions.")
    text = str(_shipping._job_failed("Spark Connect session", exc, None))
    first, fix = text.split("\nFix: ")
    assert first.startswith("kafkarec cannot run on this Spark Connect session: the check job failed")
    assert "[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.12" in first
    assert fix.startswith("bash scripts/wheelhouse.sh wheelhouse --python python3.12")
    assert "spark_udfs.register(spark, wheelhouse='wheelhouse')" in fix
