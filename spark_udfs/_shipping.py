"""Getting the driver's kafkarec build onto executors and the Data Source planner.

Spark puts ``--py-files`` ending in ``.zip``/``.egg``/``.jar`` on the
executors' ``sys.path`` but not ``.whl`` files, and Python Data Sources are
planned in a separate Python worker that behaves like an executor.  So
:func:`ship` (run by :func:`spark_udfs.register`) re-ships, as
``<name>.whl.zip`` through ``SparkContext.addPyFile``:

1. every ``.whl`` in ``spark.submit.pyFiles`` (and any given explicitly);
2. if kafkarec itself is not among them: the archive the driver imported it
   from, else a ``wheelhouse/kafkarec-*.whl`` holding exactly the driver's
   build, else a zip built from the installed kafkarec and spark_udfs packages
   (with the compiled core).

kafkarec then loads its compiled core out of the zip (``kafkarec._loader``).
A kafkarec wheel whose build differs from the driver's is refused here, and
:func:`verify_executors` runs a small job that checks every executor's build.
"""
from __future__ import annotations

import glob
import hashlib
import importlib.machinery
import io
import os
import re
import shutil
import sys
import tempfile
import zipfile
import zipimport
from typing import NamedTuple

from spark_udfs import _runtime
from spark_udfs._runtime import KafkarecMismatchError

__all__ = ["ship", "verify_executors", "expected_fingerprint", "archive_fingerprint",
           "find_wheels", "build_pyfiles_zip", "Shipped"]

_VERSION_RE = re.compile(rb"""^__version__\s*=\s*["']([^"']+)["']""", re.M)
_shipped_by_context: dict = {}
_driver_fp = None


class Shipped(NamedTuple):
    source: str        # the wheel/zip/folder it came from
    shipped_as: str    # the file given to addPyFile ("" when Spark already ships it)
    fingerprint: str | None


def expected_fingerprint() -> str:
    """The fingerprint of the driver's kafkarec (what every executor must have)."""
    global _driver_fp
    if _driver_fp is None:
        _driver_fp = _runtime.fingerprint(_runtime.import_kafkarec())
    return _driver_fp


def _cache_dir() -> str:
    env = os.environ.get("KAFKAREC_SPARK_CACHE")
    if env:
        root = env
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "kafkarec-spark")
    os.makedirs(root, mode=0o700, exist_ok=True)
    return root


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def archive_fingerprint(path: str) -> str | None:
    """The fingerprint of the kafkarec inside a wheel/zip (None if it has none)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if "kafkarec/__init__.py" not in names:
                return None
            m = _VERSION_RE.search(zf.read("kafkarec/__init__.py"))
            version = m.group(1).decode() if m else "?"
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                member = f"kafkarec/_core{suffix}"
                if member in names:
                    digest = hashlib.sha256(zf.read(member)).hexdigest()[:16]
                    return f"{version}+{digest}"
            return f"{version}+no-core-for-{sys.implementation.cache_tag}"
    except (OSError, zipfile.BadZipFile):
        return None


def _local_path(entry: str) -> str:
    for prefix in ("file://", "file:"):
        if entry.startswith(prefix):
            return entry[len(prefix):]
    return entry


def _atomic_copy(src: str, dst: str) -> None:
    if os.path.exists(dst):
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dst), prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _as_zip(path: str) -> str:
    """A ``<name>.whl.zip`` (or ``<name>.zip``) copy of an archive, content-addressed."""
    digest = _file_digest(path)[:20]
    folder = os.path.join(_cache_dir(), digest)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    name = os.path.basename(path)
    dst = os.path.join(folder, name + ".zip" if name.endswith(".whl") else name + ".pyfiles.zip")
    _atomic_copy(path, dst)
    return dst


def _add(sc, path: str) -> bool:
    key = sc.applicationId
    done = _shipped_by_context.setdefault(key, set())
    name = os.path.basename(path)
    if name in done or name in (sc._python_includes or []):
        return False
    sc.addPyFile(path)
    done.add(name)
    return True


def _driver_archive(kafkarec):
    loader = getattr(kafkarec, "__loader__", None)
    spec = getattr(kafkarec, "__spec__", None)
    if isinstance(loader, zipimport.zipimporter):
        return loader.archive
    if spec is not None and isinstance(spec.loader, zipimport.zipimporter):
        return spec.loader.archive
    return None


def find_wheels(kafkarec=None) -> list:
    """kafkarec wheels in ``$KAFKAREC_WHEELHOUSE``, ``./wheelhouse`` and
    ``<project>/wheelhouse`` (next to the kafkarec package), newest first."""
    dirs = []
    if os.environ.get("KAFKAREC_WHEELHOUSE"):
        dirs.append(os.environ["KAFKAREC_WHEELHOUSE"])
    dirs.append(os.path.join(os.getcwd(), "wheelhouse"))
    if kafkarec is not None and _driver_archive(kafkarec) is None:
        dirs.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(kafkarec.__file__))),
                                 "wheelhouse"))
    seen, out = set(), []
    for d in dirs:
        for w in glob.glob(os.path.join(d, "kafkarec-*.whl")):
            real = os.path.realpath(w)
            if real not in seen:
                seen.add(real)
                out.append(w)
    out.sort(key=lambda p: os.path.getmtime(p), reverse=True)
    return out


def build_pyfiles_zip(kafkarec=None) -> str:
    """A zip of the installed kafkarec (with its compiled core) and spark_udfs
    packages, content-addressed in the cache (``kafkarec-<fp>.pyfiles.zip``)."""
    import spark_udfs
    if kafkarec is None:
        kafkarec = _runtime.import_kafkarec()
    core = kafkarec._core.__file__
    suffix = next((s for s in importlib.machinery.EXTENSION_SUFFIXES if core.endswith(s)),
                  importlib.machinery.EXTENSION_SUFFIXES[0])
    members = {}
    for pkg in (kafkarec, spark_udfs):
        root = os.path.dirname(os.path.abspath(pkg.__file__))
        name = pkg.__name__
        for entry in sorted(os.listdir(root)):
            full = os.path.join(root, entry)
            if not os.path.isfile(full):
                continue
            if entry.endswith((".py", ".pyi")) or entry == "py.typed":
                members[f"{name}/{entry}"] = full
    members[f"kafkarec/_core{suffix}"] = core
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc in sorted(members):
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(members[arc], "rb") as fh:
                zf.writestr(info, fh.read())
    data = buf.getvalue()
    fp = _runtime.fingerprint(kafkarec)
    digest = hashlib.sha256(data).hexdigest()[:12]
    dst = os.path.join(_cache_dir(), f"kafkarec-{fp.replace('+', '-')}-{digest}.pyfiles.zip")
    if not os.path.exists(dst):
        fd, tmp = tempfile.mkstemp(dir=_cache_dir(), prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return dst


def ship(spark, wheels=None) -> list:
    """Make the driver's kafkarec (and spark_udfs, and other ``.whl`` py-files)
    importable on executors and the Data Source planner.  Returns what was shipped."""
    sc = spark.sparkContext
    kafkarec = _runtime.import_kafkarec()
    driver_fp = expected_fingerprint()
    out = []
    given = [_local_path(w) for w in (wheels or [])]
    submitted = [_local_path(p) for p in (sc.getConf().get("spark.submit.pyFiles", "") or "").split(",")
                 if p.strip()]
    kafkarec_shipped = False
    for path in dict.fromkeys(given + [p for p in submitted if p.endswith(".whl")]):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"wheel to ship not found: {path}")
        fp = archive_fingerprint(path)
        if fp is not None and fp != driver_fp:
            raise KafkarecMismatchError(
                f"the kafkarec wheel {path} holds build {fp}, but the driver imported kafkarec "
                f"{_runtime.describe(kafkarec)}; executors would run a different build. Build the "
                f"wheel from the same sources (or import kafkarec from it on the driver).")
        if path.endswith(".whl"):
            shipped = _as_zip(path)
            _add(sc, shipped)
            out.append(Shipped(path, shipped, fp))
        else:
            if _add(sc, path):
                out.append(Shipped(path, path, fp))
        kafkarec_shipped |= fp is not None
    if kafkarec_shipped:
        return out
    # kafkarec is not among the wheels: ship the driver's own build.
    archive = _driver_archive(kafkarec)
    includes = set(sc._python_includes or [])
    if archive is not None:
        if archive.endswith((".zip", ".egg")) and os.path.basename(archive) in includes:
            out.append(Shipped(archive, "", archive_fingerprint(archive)))
            return out
        shipped = _as_zip(archive)
        _add(sc, shipped)
        out.append(Shipped(archive, shipped, archive_fingerprint(archive)))
        return out
    for wheel in find_wheels(kafkarec):
        if archive_fingerprint(wheel) == driver_fp:
            shipped = _as_zip(wheel)
            _add(sc, shipped)
            out.append(Shipped(wheel, shipped, driver_fp))
            return out
    built = build_pyfiles_zip(kafkarec)
    _add(sc, built)
    out.append(Shipped(os.path.dirname(os.path.abspath(kafkarec.__file__)), built, driver_fp))
    return out


# What kafkarec imports lazily on executors (not shipped by --py-files: install them there).
_EXECUTOR_MODULES = (("pyarrow", True), ("crc32c", False), ("lz4.frame", False),
                     ("zstandard", False), ("snappy", False))


def _probe(expected):
    import importlib
    from spark_udfs import _runtime as rt
    try:
        rt.ensure(expected)
    except Exception as exc:  # noqa: BLE001 - reported to the driver
        return [(False, f"{type(exc).__name__}: {exc}")]
    missing, fatal = [], False
    for name, required in _EXECUTOR_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
            fatal |= required
    text = rt.describe()
    if missing:
        text += f"; not importable there: {', '.join(missing)}"
    return [(not fatal, text)]


def verify_executors(spark, expected=None, *, tasks=None) -> list:
    """Run one small job whose tasks import kafkarec and compare its build with
    the driver's; raise :class:`KafkarecMismatchError` naming any difference."""
    sc = spark.sparkContext
    expected = expected or expected_fingerprint()
    n = tasks or max(1, sc.defaultParallelism)
    results = sc.parallelize(range(n), n).mapPartitions(lambda _: _probe(expected)).collect()
    bad = sorted({msg for ok, msg in results if not ok})
    if bad:
        raise KafkarecMismatchError(
            f"kafkarec on executors does not match the driver (kafkarec {expected}): "
            + " | ".join(bad))
    return sorted({msg for _, msg in results})
