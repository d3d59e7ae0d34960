"""Getting kafkarec and its dependencies onto executors and the Data Source planner.

Spark puts ``--py-files`` ending in ``.zip``/``.egg``/``.jar`` on the
executors' ``sys.path`` but not ``.whl`` files, Python Data Sources are
planned in a separate Python worker that behaves like an executor, and Python
cannot load compiled modules out of a zip.  So :func:`ship` (run by
:func:`spark_udfs.register`):

1. picks kafkarec's archive: the kafkarec wheel among ``wheels`` /
   ``spark.submit.pyFiles``, else the archive the driver imports kafkarec
   from, else a ``wheelhouse/kafkarec-*.whl`` holding exactly the driver's
   build, else a zip of the installed kafkarec and spark_udfs packages;
2. ships it as ``<name>.whl.zip`` (``SparkContext.addPyFile``: on every
   worker's ``sys.path``), and the wheels of kafkarec's dependencies found next
   to it or in ``wheelhouse`` (``SparkContext.addFile``: next to it in every
   worker's SparkFiles folder), unless kafkarec is installed on the driver;
   the Protobuf schema compiler's wheels (grpcio-tools, protobuf...) go the
   same way when the folder holds them: the Data Source planner compiles
   ``.proto`` text there (``kafkarec.protobuf.compiler._toolchain``);
3. checks, without importing kafkarec, that the driver's Python can use them
   (``spark_udfs._wheels.resolve``).

:func:`verify_executors` then runs one small job whose tasks make the same
check on every executor, import kafkarec from what was shipped (the loader
unpacks each wheel once per machine into its cache), compare the build with
the driver's and decode a batch of every codec.  Every problem found on the
driver and on the executors becomes one :class:`ShippingError`.
"""
from __future__ import annotations

import glob
import hashlib
import importlib.machinery
import io
import os
import re
import sys
import zipfile
from typing import NamedTuple

from spark_udfs import _runtime
from spark_udfs._runtime import KafkarecMismatchError, ShippingError

__all__ = ["ship", "verify_executors", "expected_fingerprint", "archive_fingerprint",
           "find_wheels", "build_pyfiles_zip", "Shipped", "Shipping"]

_VERSION_RE = re.compile(rb"""^__version__\s*=\s*["']([^"']+)["']""", re.M)
_shipped_by_context: dict = {}
_driver_fp = None


class Shipped(NamedTuple):
    source: str        # the wheel/zip/folder it came from
    shipped_as: str    # the file given to addPyFile/addFile ("" when Spark already ships it)
    fingerprint: str | None


class Shipping(NamedTuple):
    kafkarec: Shipped | None   # kafkarec's archive (None: nothing shipped, installed everywhere)
    dependencies: list         # Shipped dependency wheels
    folder: str | None         # where dependency wheels were looked for
    problems: list             # what the driver's Python cannot use
    driver: str = ""           # the driver's Python (for messages)

    def __iter__(self):        # the shipped files, kafkarec's first
        return iter(([self.kafkarec] if self.kafkarec else []) + list(self.dependencies))


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


def _as_zip(path: str) -> str:
    """A ``<name>.whl.zip`` (or ``<name>.zip``) copy of an archive, content-addressed."""
    loader = _runtime.loader_module()
    digest = _file_digest(path)[:20]
    folder = os.path.join(_cache_dir(), digest)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    name = os.path.basename(path)
    dst = os.path.join(folder, name + ".zip" if name.endswith(".whl") else name + ".pyfiles.zip")
    if not os.path.exists(dst):
        loader.atomic_write(dst, source=path)
    return dst


def _add(sc, path: str, *, python: bool = True) -> bool:
    key = sc.applicationId
    done = _shipped_by_context.setdefault(key, set())
    name = os.path.basename(path)
    if name in done or name in (sc._python_includes or []):
        return False
    if python:
        sc.addPyFile(path)
    else:
        sc.addFile(path)
    done.add(name)
    return True


def find_wheels(kafkarec=None) -> list:
    """kafkarec wheels in ``$KAFKAREC_WHEELHOUSE``, ``./wheelhouse`` and
    ``<project>/wheelhouse`` (next to the kafkarec package), newest first."""
    dirs = []
    if os.environ.get("KAFKAREC_WHEELHOUSE"):
        dirs.append(os.environ["KAFKAREC_WHEELHOUSE"])
    dirs.append(os.path.join(os.getcwd(), "wheelhouse"))
    if kafkarec is not None and _runtime.shipped_kafkarec_archive() is None:
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
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            rel = os.path.relpath(dirpath, os.path.dirname(root)).replace(os.sep, "/")
            for entry in sorted(filenames):
                if entry.endswith((".py", ".pyi")) or entry == "py.typed":
                    members[f"{rel}/{entry}"] = os.path.join(dirpath, entry)
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
        _runtime.loader_module().atomic_write(dst, data)
    return dst


def _kafkarec_archive(sc, wheels):
    """(kafkarec's archive or None, the other wheels given or submitted)."""
    given = [_local_path(w) for w in (wheels or [])]
    submitted = [_local_path(p) for p in (sc.getConf().get("spark.submit.pyFiles", "") or "").split(",")
                 if p.strip()]
    archive, others = None, []
    for path in dict.fromkeys(given + [p for p in submitted if p.endswith((".whl", ".zip"))]):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"wheel to ship not found: {path}")
        if archive is None and archive_fingerprint(path) is not None:
            archive = path
        elif path.endswith(".whl"):
            others.append(path)
    return archive, others


def _fix(folder, python=None) -> str:
    loader = _runtime.loader_module()
    return loader.FIX_COMMAND.replace("DIR", folder or "wheelhouse").replace(
        "PYTHON", python or sys.executable)


def _driver_problems(loader, archive: str, candidates: list) -> list:
    """What keeps the driver's Python from importing kafkarec out of ``archive``."""
    interp = loader.interpreter()
    problems = []
    w = loader.parse_wheel_name(archive)
    if w is not None and w.project == "kafkarec":
        why = loader.incompatibility(w, interp)
        if why:
            problems.append(f"kafkarec: {w.filename} is {why}")
    res = loader.resolve(loader._archive_metadata(archive, "kafkarec"), candidates)
    return problems + res.problems


def ship(spark, wheels=None, *, wheelhouse: str | None = None) -> Shipping:
    """Make kafkarec (and spark_udfs) and its dependencies importable on executors
    and the Data Source planner.  Returns what was shipped and what the driver's
    Python cannot use (:attr:`Shipping.problems`; :func:`spark_udfs.register`
    raises them together with the executors')."""
    sc = spark.sparkContext
    loader = _runtime.loader_module()
    archive, others = _kafkarec_archive(sc, wheels)
    if archive is None:
        archive = _runtime.shipped_kafkarec_archive()
    if archive is None:
        # kafkarec is installed on the driver: ship its build (executors may have it installed too).
        kafkarec = _runtime.import_kafkarec()
        driver_fp = expected_fingerprint()
        extra = _ship_others(sc, loader, others)
        for wheel in find_wheels(kafkarec):
            if archive_fingerprint(wheel) == driver_fp:
                shipped = _as_zip(wheel)
                _add(sc, shipped)
                return Shipping(Shipped(wheel, shipped, driver_fp), extra, None, [])
        built = build_pyfiles_zip(kafkarec)
        _add(sc, built)
        return Shipping(Shipped(os.path.dirname(os.path.abspath(kafkarec.__file__)), built,
                                driver_fp), extra, None, [])
    folder = wheelhouse or os.path.dirname(os.path.abspath(archive))
    if wheelhouse and not os.environ.get("KAFKAREC_WHEELHOUSE"):
        os.environ["KAFKAREC_WHEELHOUSE"] = wheelhouse    # for the driver's own import
    candidates = [w for w in loader.wheel_candidates(next_to=archive, folders=[folder])
                  if w.project != "kafkarec"]
    candidates += [loader.parse_wheel_name(p) for p in others if loader.parse_wheel_name(p)]
    problems = _driver_problems(loader, archive, candidates)
    fp = archive_fingerprint(archive)
    if not problems and "kafkarec" in sys.modules:
        driver_fp = expected_fingerprint()
        if fp != driver_fp:
            raise KafkarecMismatchError(
                f"the kafkarec wheel {archive} holds build {fp}, but the driver imported kafkarec "
                f"{_runtime.describe()}; executors would run a different build. Build the "
                f"wheel from the same sources (or import kafkarec from it on the driver).")
    # kafkarec's archive: on every worker's sys.path
    includes = set(sc._python_includes or [])
    if archive.endswith((".zip", ".egg")) and os.path.basename(archive) in includes:
        main = Shipped(archive, "", fp)
    else:
        shipped = _as_zip(archive) if archive.endswith(".whl") else archive
        _add(sc, shipped)
        main = Shipped(archive, shipped, fp)
    # dependency wheels: next to it in every worker's SparkFiles folder. Every
    # wheel of a needed project goes (executors pick the one that fits them).
    needed = set(loader.resolve(loader._archive_metadata(archive, "kafkarec"), candidates,
                                loader.interpreter()).projects)
    # The Protobuf schema compiler's wheels when the folder has them (optional: only a process that
    # plans a Protobuf column uses them, kafkarec.protobuf.compiler._toolchain; executors get compiled schemas).
    needed |= set(loader.resolve(loader.requires_dist(loader.PROTOBUF_COMPILER), candidates,
                                 loader.interpreter(), root="the Protobuf schema compiler").projects)
    deps = []
    for w in candidates:
        if w.project in needed and w.path.endswith(".whl"):
            if _add(sc, w.path, python=False):
                deps.append(Shipped(w.path, w.path, None))
    deps += _ship_others(sc, loader, others, needed)
    return Shipping(main, deps, folder, problems, loader.describe_interpreter(loader.interpreter()))


# The folder, under the driver's SparkFiles root, where Spark's streaming source and sink
# runners (python_streaming_source_runner / _sink_runner) look for py-files: apache/spark's
# PythonStreamingSourceRunner.init calls PythonWorkerUtils.writeSparkFiles(Some("streaming_job"),
# ...), so the runner puts <root>/streaming_job/<name> on sys.path for each py-file, while
# addPyFile puts files in <root> itself.  Executors, the batch planner and the Data Source
# reader/writer workers get <root> (classic mode), so only these runners miss the files.
STREAMING_RUNNER_FOLDER = "streaming_job"


def link_streaming_runner_files(sc) -> str | None:
    """Make every py-file added to ``sc`` (now or later) visible to the Python processes
    Spark starts for streaming Python data sources: ``<SparkFiles root>/streaming_job`` is
    made a link to the root itself (``streaming_job -> .``).  Returns the folder, or None
    when it is a real folder already (then the files shipped so far are linked into it).
    Spark deletes the root when the application ends; the link goes with it, and removing
    it never follows it."""
    from pyspark import SparkFiles
    root = SparkFiles.getRootDirectory()
    folder = os.path.join(root, STREAMING_RUNNER_FOLDER)
    if os.path.islink(folder):
        return folder
    if not os.path.exists(folder):
        try:
            os.symlink(".", folder)
            return folder
        except FileExistsError:
            return folder if os.path.islink(folder) else link_streaming_runner_files(sc)
    # A real folder (Spark made it, or a session's artifacts live there): one link per file.
    for name in list(sc._python_includes or []):
        src, dst = os.path.join(root, name), os.path.join(folder, name)
        if os.path.exists(src) and not os.path.exists(dst):
            try:
                os.link(src, dst)
            except OSError:
                os.symlink(src, dst)
    return None


def _ship_others(sc, loader, others, needed=()) -> list:
    """Other wheels given or submitted (the job's own): on workers' sys.path as .whl.zip."""
    out = []
    for path in others:
        w = loader.parse_wheel_name(path)
        if w is None or w.project not in needed:
            shipped = _as_zip(path)
            if _add(sc, shipped):
                out.append(Shipped(path, shipped, None))
    return out


# Every codec and the CRC: decoding one batch of each loads every compiled dependency.
_SELF_TEST_CODECS = ("NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD")


def _probe(expected, must_ship):
    """Runs in an executor's Python worker: can it use what was shipped?"""
    import platform
    from spark_udfs import _runtime as rt
    out = {"host": platform.node(), "problems": [], "interpreter": "", "kafkarec": ""}
    try:
        loader = rt.loader_module()
    except Exception as exc:  # noqa: BLE001 - reported to the driver
        out["problems"].append(f"kafkarec is not importable: {type(exc).__name__}: {exc}")
        return [out]
    interp = loader.interpreter()
    out["interpreter"] = loader.describe_interpreter(interp)
    archive = rt.shipped_kafkarec_archive()
    if archive is not None:
        w = loader.parse_wheel_name(archive)
        if w is not None and w.project == "kafkarec":
            why = loader.incompatibility(w, interp)
            if why:
                out["problems"].append(f"kafkarec: {w.filename} is {why}")
        out["problems"] += loader.zip_dependencies(archive).problems
    elif must_ship:
        out["problems"].append("the shipped kafkarec archive is not on this worker's sys.path")
    if out["problems"]:
        return [out]
    try:
        kafkarec = rt.ensure(expected)
        out["kafkarec"] = rt.describe(kafkarec)
        for name in _SELF_TEST_CODECS:
            codec = getattr(kafkarec.Compression, name)
            data = kafkarec.build_batch([b"kafkarec"], compression=codec)
            got = [r.value for b in kafkarec.iter_batches(data) for r in b]
            if got != [b"kafkarec"]:
                raise RuntimeError(f"{name} batch decoded as {got}")
    except KafkarecMismatchError as exc:
        out["problems"].append(str(exc))
    except Exception as exc:  # noqa: BLE001 - reported to the driver
        out["problems"].append(f"{type(exc).__name__}: {exc}")
    return [out]


def verify_executors(spark, expected=None, *, tasks=None, shipping: Shipping | None = None) -> list:
    """Run one small job whose tasks check what was shipped, import kafkarec,
    compare its build with the driver's and decode a batch of every codec;
    raise :class:`ShippingError` naming every problem (the driver's too, from
    ``shipping``).  Returns one description per distinct executor Python."""
    sc = spark.sparkContext
    where: dict = {}      # problem -> the processes that have it
    for p in (shipping.problems if shipping else []):
        where.setdefault(p, []).append(f"driver ({shipping.driver})")
    if expected is None and not where:
        expected = expected_fingerprint()
    must_ship = bool(shipping and shipping.kafkarec and shipping.kafkarec.shipped_as)
    n = tasks or max(2, sc.defaultParallelism)
    results = sc.parallelize(range(n), n).mapPartitions(
        lambda _: _probe(expected, must_ship)).collect()
    executors: dict = {}
    for r in results:
        for p in r["problems"]:
            executors.setdefault(p, set()).add(f"{r['host']}: {r['interpreter']}")
    for p, hosts in executors.items():
        where.setdefault(p, []).append("executor " + ", ".join(sorted(hosts)))
    if where:
        problems = [f"{p}  [{'; '.join(w)}]" for p, w in where.items()]
        folder = shipping.folder if shipping else None
        pythons = sorted({r["interpreter"].split(" at ")[-1].split(" on ")[0] for r in results
                          if r["interpreter"]})
        cls = KafkarecMismatchError if all("not the driver's build" in p for p in where) \
            else ShippingError
        raise cls(
            f"kafkarec cannot run on this Spark application ({len(problems)} problem"
            f"{'s' if len(problems) > 1 else ''}):\n  - " + "\n  - ".join(problems)
            + f"\nFix: {_fix(folder, pythons[0] if pythons else None)}; then pass the kafkarec "
              f"wheel with --py-files (dependency wheels next to it, or "
              f"spark_udfs.register(spark, wheelhouse=DIR)), or install kafkarec in every "
              f"executor's Python.")
    return sorted({f"{r['host']}: {r['kafkarec']}" for r in results})
