"""kafkarec imports its compiled core out of a zip or wheel (as Spark ships it),
through a content-addressed cache that concurrent processes share safely."""
from support.paths import ROOT
import os
import subprocess
import sys
import zipfile



def _package_files(suffixes):
    """kafkarec's files as the wheel holds them (name in the archive -> path), the boot room's
    loader and wheel rules among them."""
    found = {}
    for folder, dirs, files in os.walk(os.path.join(ROOT, "kafkarec")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(suffixes):
                path = os.path.join(folder, name)
                found[os.path.relpath(path, ROOT).replace(os.sep, "/")] = path
    return found


def make_archive(path, inner_prefix=""):
    """kafkarec as in the wheel; no spark_udfs: the loader needs nothing of it."""
    with zipfile.ZipFile(path, "w") as zf:
        for arc, f in _package_files((".py", ".so", ".pyi", ".typed")).items():
            zf.write(f, inner_prefix + arc)


def import_from(archive, cache, extra_path=""):
    code = ("import sys; sys.path.insert(0, %r); import kafkarec, zipimport; "
            "print(type(kafkarec.__loader__).__name__, kafkarec._core.__file__, "
            "len(list(kafkarec.iter_batches(kafkarec.build_batch([b'x'])))))"
            % (archive + extra_path))
    env = dict(os.environ, KAFKAREC_NATIVE_CACHE=cache, PYTHONPATH="")
    return subprocess.run([sys.executable, "-c", code], cwd="/", env=env, capture_output=True,
                          text=True, timeout=120)


def test_core_loads_from_a_wheel_shaped_zip(tmp_path):
    archive = str(tmp_path / "kafkarec-0.1.0-cp311-cp311-linux_x86_64.whl.zip")
    make_archive(archive)
    run = import_from(archive, str(tmp_path / "cache"))
    assert run.returncode == 0, run.stderr
    kind, core, n = run.stdout.split()
    assert kind == "zipimporter" and core.startswith(str(tmp_path / "cache")) and n == "1"


def test_core_loads_from_a_subfolder_of_a_zip(tmp_path):
    archive = str(tmp_path / "bundle.zip")
    make_archive(archive, "lib/")
    run = import_from(archive, str(tmp_path / "cache"), "/lib")
    assert run.returncode == 0, run.stderr


def test_concurrent_first_imports_share_one_cache_file(tmp_path):
    archive = str(tmp_path / "k.zip")
    make_archive(archive)
    cache = str(tmp_path / "cache")
    env = dict(os.environ, KAFKAREC_NATIVE_CACHE=cache, PYTHONPATH="")
    code = f"import sys; sys.path.insert(0, {archive!r}); import kafkarec; print(kafkarec._core.__file__)"
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd="/", env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert len({o.strip() for o, _ in outs}) == 1
    unpacked = os.listdir(os.path.join(cache, "unpacked"))
    assert len(unpacked) == 1 and not unpacked[0].startswith(".part-"), unpacked
    cores = [f for _, _, fs in os.walk(cache) for f in fs if f.startswith("_core") and f.endswith(".so")]
    assert len(cores) == 1


def test_zip_without_a_matching_core_names_the_interpreter(tmp_path):
    archive = str(tmp_path / "nocore.zip")
    with zipfile.ZipFile(archive, "w") as zf:
        for arc, f in _package_files((".py",)).items():
            zf.write(f, arc)
    run = import_from(archive, str(tmp_path / "cache"))
    assert run.returncode != 0
    assert "no kafkarec/_core built for this interpreter" in run.stderr
    assert sys.implementation.cache_tag in run.stderr


def test_an_extra_missing_where_kafkarec_came_from_its_wheel_names_the_wheelhouse_fix(tmp_path):
    """On a bare executor (kafkarec imported from the shipped wheel) pip is not the fix: the line
    names the wheel to ship beside kafkarec's; the error pickles to the driver with that line.  An
    installed kafkarec keeps the pip line (tests/test_extras.py, tests/test_release.py)."""
    archive = str(tmp_path / "kafkarec-0.1.0-cp311-cp311-linux_x86_64.whl.zip")
    make_archive(archive)
    # a bare Python (no site-packages: confluent-kafka is neither importable nor installed), with
    # packaging only, which the wheel rules use; the lazy import loads no core and needs nothing else
    import packaging
    bare = tmp_path / "bare"
    bare.mkdir()
    os.symlink(os.path.dirname(packaging.__file__), bare / "packaging")
    code = (
        "import sys, pickle\n"
        f"sys.path[:0] = [{archive!r}, {str(bare)!r}]\n"
        "from kafkarec._extras import require\n"
        "from kafkarec.errors import MissingExtraError\n"
        "try:\n"
        "    require('confluent_kafka')\n"
        "except MissingExtraError as e:\n"
        "    sys.stdout.buffer.write(pickle.dumps(e))\n")
    env = {k: v for k, v in os.environ.items() if k != "KAFKAREC_WHEELHOUSE"}
    env.update(KAFKAREC_NATIVE_CACHE=str(tmp_path / "cache"), PYTHONPATH="")
    run = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd="/", env=env, capture_output=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout, run.stderr.decode()
    import pickle
    err = pickle.loads(run.stdout)
    assert (err.distribution, err.extra, err.archive, err.python) == ("confluent-kafka", "restore", archive,
                                                                      sys.executable)
    assert str(err) == (
        f"confluent-kafka is not installed in {sys.executable}, which imports kafkarec from its wheel ({archive}), "
        "and no wheel of it was shipped beside that one: put its wheel for that Python in the wheelhouse (pip "
        "download --only-binary=:all: -d DIR confluent-kafka, or bash scripts/wheelhouse.sh DIR) and ship it: "
        "spark_udfs.ship(spark, wheelhouse=DIR, projects=['confluent-kafka'])")
    assert "pip install" not in str(err)
