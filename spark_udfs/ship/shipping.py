"""Getting kafkarec and its dependencies onto Spark's Python processes: one way, two transports.

Spark puts ``--py-files`` ending in ``.zip``/``.egg``/``.jar`` on the executors' ``sys.path``
but not ``.whl`` files, Python Data Sources are planned in a separate Python worker that
behaves like an executor, and Python cannot load compiled modules out of a zip.  So
:func:`ship` (run by :func:`spark_udfs.register`):

1. picks kafkarec's archive: the kafkarec wheel among ``wheels`` / ``spark.submit.pyFiles``,
   else the archive the driver imports kafkarec from, else a ``kafkarec-*.whl`` in
   ``wheelhouse`` (or :func:`find_wheels`' folders) holding exactly the driver's build, else
   a zip of the installed kafkarec and spark_udfs packages with kafkarec's METADATA
   (:func:`build_pyfiles_zip`);
2. ships it as a py-file (``<name>.whl.zip``: on every worker's ``sys.path``), and every wheel
   of kafkarec's dependencies (and of the Protobuf schema compiler: the Data Source planner
   compiles ``.proto`` text, ``kafkarec.protobuf.compiler._toolchain``) as a plain file next
   to it, where kafkarec's loader looks for them.  The wheels come from ``wheelhouse`` or
   the folder of kafkarec's wheel; when there is none (kafkarec pip-installed on the driver,
   no wheelhouse at hand) they are made from the driver's installed distributions, the files
   each one's RECORD lists (:func:`installed_wheels`), so workers whose Python and platform
   are the driver's need nothing else;
3. checks that the driver's Python can use them when it imports kafkarec from the archive
   (``kafkarec._boot.wheels.resolve``).

:func:`verify_executors` then runs one small job whose tasks (:func:`_probe`) make the same
check on every executor, import kafkarec from what was shipped (the loader unpacks each wheel
once per machine into its cache), compare the build with the driver's and decode a batch of
every codec.  Every problem found on the driver and on the executors becomes one
:class:`ShippingError` (:func:`_report`) with one "Fix:".

Only how the files travel and how the check job runs depend on the session: a classic
session's :class:`ClassicTransport` (``SparkContext.addPyFile``/``addFile``, an RDD job) or a
Spark Connect session's :class:`ConnectTransport` (``addArtifacts``, a DataFrame job);
:func:`transport` picks one.
"""
from __future__ import annotations

import glob
import hashlib
import importlib.machinery
import importlib.util
import io
import marshal
import os
import re
import sys
import zipfile
from typing import NamedTuple

from spark_udfs.ship import runtime as _runtime
from spark_udfs.ship.runtime import KafkarecMismatchError, ShippingError

__all__ = ["ship", "verify_executors", "expected_fingerprint", "archive_fingerprint",
           "find_wheels", "build_pyfiles_zip", "installed_wheels", "transport", "is_connect",
           "ClassicTransport", "ConnectTransport", "default_parallelism", "shipped_digests",
           "Shipped", "Shipping", "ArtifactsUnsupported"]

_VERSION_RE = re.compile(rb"""^__version__\s*=\s*["']([^"']+)["']""", re.M)
_driver_fp = None


class Shipped(NamedTuple):
    source: str        # the wheel/zip/folder it came from
    shipped_as: str    # the file given to the transport ("" when Spark already ships it)
    fingerprint: str | None


class Shipping(NamedTuple):
    kafkarec: Shipped | None   # kafkarec's archive (None: nothing shipped, installed everywhere)
    dependencies: list         # Shipped dependency wheels
    folder: str | None         # where dependency wheels were looked for (None: the driver's installed ones)
    problems: list             # what the driver's Python cannot use
    driver: str = ""           # the driver's Python (for messages)

    def __iter__(self):        # the shipped files, kafkarec's first
        return iter(([self.kafkarec] if self.kafkarec else []) + list(self.dependencies))


# -- the transports -------------------------------------------------------------------------

class _Transport:
    """How files reach a session's Python processes and how its check job runs; each file
    is sent once per application or Connect session (``key``)."""

    where = ""

    def __init__(self, key: str):
        self._done = _shipped_names.setdefault(key, set())

    def add(self, path: str, *, python: bool) -> bool:
        """Send ``path``: on every worker's ``sys.path`` (``python``), else as a file next to
        the py-files.  False when it was sent already."""
        name = os.path.basename(path)
        if name in self._done or self.shipped_already(path):
            return False
        self._send(path, python)
        self._done.add(name)
        return True


class ClassicTransport(_Transport):
    """A classic session: files through its ``SparkContext``, the check as an RDD job."""

    where = "Spark application"

    def __init__(self, spark):
        self.sc = spark.sparkContext
        super().__init__(self.sc.applicationId)

    def submitted(self) -> list:
        """The driver's ``spark.submit.pyFiles`` (``--py-files``)."""
        conf = self.sc.getConf().get("spark.submit.pyFiles", "") or ""
        return [_local_path(p) for p in conf.split(",") if p.strip()]

    def shipped_already(self, path: str) -> bool:
        return os.path.basename(path) in (self.sc._python_includes or [])

    def _send(self, path: str, python: bool) -> None:
        (self.sc.addPyFile if python else self.sc.addFile)(path)

    def after_ship(self) -> None:
        # readStream's planner runs where addPyFile's files are not looked for
        link_streaming_runner_files(self.sc)

    def data_source_class(self, expected: str, parallelism: int, shipping) -> type:
        from spark_udfs.read import datasource as _datasource
        return type("RegisteredKafkaRecDataSource", (_datasource.KafkaRecDataSource,), {
            "__module__": _datasource.__name__,
            "__qualname__": "RegisteredKafkaRecDataSource",
            "expected_fingerprint": expected,
            "default_min_partitions": parallelism,
            "wheelhouse": shipping.folder if shipping else None,
        })

    def parallelism(self) -> int:
        return max(1, self.sc.defaultParallelism)

    def probe(self, expected, must_ship, tasks) -> list:
        n = max(2, tasks or self.sc.defaultParallelism)    # two at least: two Python workers
        return self.sc.parallelize(range(n), n).mapPartitions(
            lambda _: _probe(expected, must_ship)).collect()


# application id / session id -> names of the files already added there
_shipped_names: dict = {}


_PROBE_SCHEMA = "task int, host string, interpreter string, kafkarec string, problems array<string>"
# rows of spark.range: enough that every default partition holds some
_RANGE = 1 << 16


def is_connect(spark) -> bool:
    """Is ``spark`` a Spark Connect session?  (Judged from its class, never by touching
    ``sparkContext``.)"""
    return any(cls.__module__.startswith("pyspark.sql.connect") for cls in type(spark).__mro__)


class ConnectTransport(_Transport):
    """A Spark Connect session: no ``SparkContext`` (``sparkContext``, ``_jvm`` and ``_jsc``
    raise there and are never touched here), but session-scoped artifacts:
    ``addArtifacts(path, pyfile=True)`` puts a ``.zip`` on the ``sys.path`` of every Python
    process the server starts for the session (executors' workers, the Data Source planner,
    the streaming source runner), ``addArtifacts(path, file=True)`` puts a file in the same
    session folder, next to it.  The check is one DataFrame job (``mapInArrow`` over
    ``spark.range``, no RDD) of :func:`default_parallelism` tasks."""

    where = "Spark Connect session"

    def __init__(self, spark):
        self.spark = spark
        super().__init__(str(getattr(spark, "session_id", None) or id(spark)))

    def submitted(self) -> list:
        return []                     # a client has no --py-files

    def shipped_already(self, path: str) -> bool:
        return False

    def _send(self, path: str, python: bool) -> None:
        try:
            self.spark.addArtifacts(path, pyfile=python, file=not python)
        except Exception as exc:
            # Sail 0.7 answers AddArtifacts with UNIMPLEMENTED ("handle add artifacts"), which
            # the client raises as UnsupportedOperationException; any other failure is the
            # upload's own
            if type(exc).__name__ == "UnsupportedOperationException" and "artifact" in str(exc).lower():
                raise ArtifactsUnsupported(str(exc)) from exc
            raise

    def after_ship(self) -> None:
        pass                          # the runner's files: data_source_class finds them

    def data_source_class(self, expected: str, parallelism: int, shipping) -> type:
        # pickled by value: the streaming source runner finds the shipped files through it
        from spark_udfs.ship import connect as _connect
        return _connect.data_source_class(expected, parallelism, shipped_digests(shipping),
                                          shipping.folder if shipping else None)

    def parallelism(self) -> int:
        return default_parallelism(self.spark)

    def probe(self, expected, must_ship, tasks) -> list:
        n = tasks or default_parallelism(self.spark)
        rows = self.spark.range(0, _RANGE, 1, n).mapInArrow(
            _probe_task(expected, must_ship), _PROBE_SCHEMA).collect()
        return [r.asDict() for r in rows]


class ArtifactsUnsupported(Exception):
    """The Connect server implements no AddArtifacts (Sail): nothing can be shipped to it, its
    Python must have kafkarec already (:func:`spark_udfs.register` goes on with ``ship=False``)."""


def _probe_task(expected, must_ship):
    """mapInArrow function: one row per task, what :func:`_probe` saw."""
    def probe(batches):
        import pyarrow as pa
        from pyspark import TaskContext
        for _ in batches:
            pass
        ctx = TaskContext.get()
        r = _probe(expected, must_ship)[0]
        yield pa.RecordBatch.from_pylist(
            [{"task": ctx.partitionId() if ctx else 0, "host": r["host"],
              "interpreter": r["interpreter"], "kafkarec": r["kafkarec"],
              "problems": list(r["problems"])}],
            schema=pa.schema([("task", pa.int32()), ("host", pa.string()),
                              ("interpreter", pa.string()), ("kafkarec", pa.string()),
                              ("problems", pa.list_(pa.string()))]))
    return probe


def default_parallelism(spark) -> int:
    """``spark.default.parallelism`` when the session's conf has it, else the number of
    partitions of ``spark.range`` (which Spark sizes by the default parallelism), from a
    small job that never starts Python."""
    value = spark.conf.get("spark.default.parallelism", None)
    if value not in (None, ""):
        try:
            return max(1, int(value))
        except ValueError:
            pass
    from pyspark.sql import functions as F
    row = (spark.range(0, _RANGE).select(F.spark_partition_id().alias("p"))
           .agg(F.max("p").alias("p")).first())
    return max(1, int(row["p"]) + 1)


def transport(spark):
    """The session's transport: :class:`ClassicTransport` or :class:`ConnectTransport`."""
    return ConnectTransport(spark) if is_connect(spark) else ClassicTransport(spark)


# -- archives -------------------------------------------------------------------------------

def expected_fingerprint() -> str:
    """The fingerprint of the driver's kafkarec (what every executor must have)."""
    global _driver_fp
    if _driver_fp is None:
        _driver_fp = _runtime.fingerprint(_runtime.import_kafkarec())
    return _driver_fp


def _cache_dir(*parts) -> str:
    env = os.environ.get("KAFKAREC_SPARK_CACHE")
    if env:
        root = env
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "kafkarec-spark")
    folder = os.path.join(root, *parts)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


def _files():
    """:mod:`kafkarec._boot.files` (``atomic_write``), without loading kafkarec's core on the driver."""
    return _runtime.boot_module("files")


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
    """A ``<name>.whl.zip`` copy of a wheel, content-addressed (zips are shipped as they are)."""
    if not path.endswith(".whl"):
        return path
    dst = os.path.join(_cache_dir(_files().file_sha256(path)[:20]), os.path.basename(path) + ".zip")
    if not os.path.exists(dst):
        _files().atomic_write(dst, source=path)
    return dst


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


def _zip_members(members: dict) -> bytes:
    """A zip of ``members`` (name in the archive -> a file's path, or bytes), the same bytes
    for the same contents."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc in sorted(members):
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            src = members[arc]
            if isinstance(src, str):
                with open(src, "rb") as fh:
                    src = fh.read()
            zf.writestr(info, src)
    return buf.getvalue()


def _checked_pyc(source: bytes, name: str) -> bytes:
    """A module's ``source`` compiled as a checked hash-based pyc (PEP 552) for this Python, without
    optimisation (``-O`` drops asserts), the form a wheel carries beside each module (setup.py):
    zipimport imports it rather than compiling the module in every worker, while the ``.py`` beside
    it is the same bytes and the Python the same version.  ``name`` is the module's path in the zip:
    tracebacks show it after the same ``<kafkarec archive>/`` (the zip's path on a worker is not
    known here), and their lines come from the zip, as for the source."""
    code = compile(source, f"<kafkarec archive>/{name}", "exec", dont_inherit=True, optimize=0)
    flags = (0b11).to_bytes(4, "little")                 # hash-based, checked
    return importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source) + marshal.dumps(code)


def _metadata_text(dist) -> str:
    """An installed distribution's METADATA (PKG-INFO for an ``.egg-info``, as a checkout's
    ``pip install -e`` may leave beside it)."""
    return dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""


def build_pyfiles_zip(kafkarec=None) -> str:
    """A zip of the installed kafkarec (with its compiled core) and spark_udfs packages, and
    kafkarec's METADATA (whose ``Requires-Dist`` kafkarec's loader follows on the workers),
    content-addressed in the cache (``kafkarec-<fp>-<digest>.pyfiles.zip``): the digest is of what it
    is built from (the files, this Python's bytecode version), so an existing zip is found without
    compiling its modules again."""
    import importlib.metadata as md
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
                    members[f"{rel}/{entry}"] = _read_bytes(os.path.join(dirpath, entry))
    members[f"kafkarec/_core{suffix}"] = _read_bytes(core)
    try:
        metadata = _metadata_text(md.distribution("kafkarec"))
    except md.PackageNotFoundError:     # a checkout on sys.path: its dependencies are the workers' own
        metadata = None
    if metadata:
        members[f"kafkarec-{kafkarec.__version__}.dist-info/METADATA"] = metadata.encode()
    fp = _runtime.fingerprint(kafkarec)
    # (not the zip's own bytes: marshal writes a frozenset in the order of the hash seed on 3.9 and 3.10)
    inputs = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    for arc in sorted(members):
        inputs.update(arc.encode() + b"\0" + hashlib.sha256(members[arc]).digest())
    dst = os.path.join(_cache_dir(), f"kafkarec-{fp.replace('+', '-')}-{inputs.hexdigest()[:12]}.pyfiles.zip")
    if not os.path.exists(dst):
        for arc in [a for a in members if a.endswith(".py")]:
            members[arc + "c"] = _checked_pyc(members[arc], arc)
        _files().atomic_write(dst, _zip_members(members))
    return dst


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _wheel_tag(dist) -> str:
    """The compressed tag set (``cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64``) of
    the ``Tag:`` lines in an installed distribution's WHEEL file."""
    from email.parser import HeaderParser
    tags = HeaderParser().parsestr(dist.read_text("WHEEL") or "").get_all("Tag") or ["py3-none-any"]
    parts = [sorted({t.strip().split("-")[i] for t in tags}) for i in range(3)]
    return "-".join(".".join(p) for p in parts)


def _repacked(dist) -> str:
    """A wheel of the installed distribution ``dist``: the files its RECORD lists under
    site-packages, named with the tags its WHEEL file gives; made once per RECORD."""
    record = dist.read_text("RECORD") or ""
    name = f"{re.sub(r'[-_.]+', '_', dist.metadata['Name'])}-{dist.version}-{_wheel_tag(dist)}.whl"
    dst = os.path.join(_cache_dir("installed", hashlib.sha256(record.encode()).hexdigest()[:20]), name)
    if not os.path.exists(dst):
        members = {}
        for f in dist.files or ():
            path = str(dist.locate_file(f))
            if f.parts[0] != ".." and "__pycache__" not in f.parts and os.path.isfile(path):
                members[str(f).replace(os.sep, "/")] = path
        _files().atomic_write(dst, _zip_members(members))
    return dst


def installed_wheels(metadata: str, projects=()) -> list:
    """Wheels of the driver's installed distributions that the ``Requires-Dist`` of ``metadata``
    (kafkarec's METADATA text) name, followed through theirs, and of ``projects`` (an extra's,
    asked for) when they are installed (:func:`_repacked`).  What is not installed is left out:
    the probe names what a worker then lacks, :func:`ship` an extra asked for."""
    import importlib.metadata as md
    loader = _runtime.boot_module("wheels")
    env = loader.interpreter()["markers"]
    todo = loader.requirements(metadata, env)
    for optional in (tuple(projects),):
        try:
            for project in optional:
                md.distribution(project)
            todo += loader.requirements(loader.requires_dist(optional), env)
        except md.PackageNotFoundError:
            pass                      # optional (what imports them says what to install)
    seen, out = set(), []
    while todo:
        req = todo.pop(0)
        project = loader.canonicalize_name(req.name)
        if project in seen:
            continue
        seen.add(project)
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            continue
        out.append(_repacked(dist))
        todo += loader.requirements(_metadata_text(dist), env)
    return out


# -- ship ---------------------------------------------------------------------------------

def _given_archives(t, wheels):
    """(kafkarec's archive among the wheels given or submitted, or None; the other wheels)."""
    given = [_local_path(w) for w in (wheels or [])]
    submitted = [p for p in t.submitted() if p.endswith((".whl", ".zip"))]
    archive, others = None, []
    for path in dict.fromkeys(given + submitted):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"wheel to ship not found: {path}")
        if archive is None and archive_fingerprint(path) is not None:
            archive = path
        elif path in given or path.endswith(".whl"):
            others.append(path)
    return archive, others


def _installed_build_archive(wheelhouse):
    """The driver's installed kafkarec as an archive: a wheel of exactly its build in
    ``wheelhouse`` or :func:`find_wheels`' folders, else :func:`build_pyfiles_zip`."""
    kafkarec = _runtime.import_kafkarec()
    fp = expected_fingerprint()
    house = sorted(glob.glob(os.path.join(wheelhouse, "kafkarec-*.whl"))) if wheelhouse else []
    for wheel in house + find_wheels(kafkarec):
        if archive_fingerprint(wheel) == fp:
            return wheel
    return build_pyfiles_zip(kafkarec)


def _driver_problems(loader, archive: str, candidates: list) -> list:
    """What keeps the driver's Python from importing kafkarec out of ``archive``."""
    problems = []
    w = loader.parse_wheel_name(archive)
    if w is not None and w.project == "kafkarec":
        why = loader.incompatibility(w, loader.interpreter())
        if why:
            problems.append(f"kafkarec: {w.filename} is {why}")
    return problems + loader.resolve(loader.archive_metadata(archive, "kafkarec"), candidates).problems


def ship(spark, wheels=None, *, wheelhouse: str | None = None, projects=(), extras=()) -> Shipping:
    """Make kafkarec (and spark_udfs) and its dependencies importable on executors and the
    Data Source planner (see the module docstring).  Only kafkarec's runtime dependencies go,
    and the wheels of the ``extras`` named (:data:`kafkarec._boot.wheels.SHIPPED_EXTRAS`:
    ``registry``, the Protobuf schema compiler where a column is planned on a Connect server;
    ``tiered``, cryptography for encrypted tiered objects; ``restore``, confluent-kafka), found
    as the others are: an extra asked for and not found is a problem naming it.  Called again
    on the same session, only what was not sent yet is sent: that is how a later read gets an
    extra.  ``projects``: more distributions whose wheels (and their dependencies') go too
    (``spark_udfs.restore`` ships :data:`kafkarec._boot.wheels.RESTORE_CLIENT`); what is
    missing of them is said where it is imported (:func:`kafkarec._extras.require` takes them
    from beside kafkarec's wheel).  Returns what was shipped and what the driver's Python cannot
    use (:attr:`Shipping.problems`; :func:`spark_udfs.register` raises them together with the
    executors')."""
    t = transport(spark)
    loader = _runtime.boot_module("wheels")
    try:
        asked = loader.extra_projects(extras)
    except ValueError as exc:
        from kafkarec.errors import UsageError
        raise UsageError(str(exc)) from None
    wheelhouse = wheelhouse or os.environ.get("KAFKAREC_WHEELHOUSE") or None
    if wheelhouse and not os.environ.get("KAFKAREC_WHEELHOUSE"):
        os.environ["KAFKAREC_WHEELHOUSE"] = wheelhouse    # for the driver's own import
    archive, others = _given_archives(t, wheels)
    archive = archive or _runtime.shipped_kafkarec_archive()
    installed = archive is None       # the driver imports kafkarec from a folder
    if installed:
        archive = _installed_build_archive(wheelhouse)
    built = archive.endswith(".pyfiles.zip")
    folder = wheelhouse or (None if built else os.path.dirname(os.path.abspath(archive)))
    candidates = [w for w in loader.wheel_candidates(next_to=None if built else archive,
                                                     folders=[folder] if folder else [])
                  if w.project != "kafkarec"]
    meta = loader.archive_metadata(archive, "kafkarec")
    if folder is None and meta:       # (no METADATA: a checkout on sys.path, nothing installed)
        candidates += [loader.parse_wheel_name(p) for p in installed_wheels(meta, (*asked, *projects))]
    candidates += [w for w in map(loader.parse_wheel_name, others) if w is not None]
    problems = [] if installed else _driver_problems(loader, archive, candidates)
    fp = archive_fingerprint(archive)
    if not problems and "kafkarec._core" in sys.modules and fp != expected_fingerprint():
        raise KafkarecMismatchError(
            f"the kafkarec wheel {archive} holds build {fp}, but the driver imported kafkarec "
            f"{_runtime.describe()}; executors would run a different build. Build the "
            f"wheel from the same sources (or import kafkarec from it on the driver).")
    # kafkarec's archive: on every worker's sys.path
    if archive.endswith((".zip", ".egg")) and t.shipped_already(archive):
        main = Shipped(archive, "", fp)
    else:
        shipped = _as_zip(archive)
        t.add(shipped, python=True)
        main = Shipped(archive, shipped, fp)
    # Dependency wheels: plain files next to it (the loader unpacks those it needs; as
    # py-files, a reused worker would import a dependency out of its zip). Every wheel of a
    # needed project goes: each worker picks the one that fits it.
    interp = loader.interpreter()
    needed = set(loader.resolve(meta, candidates, interp).projects)
    # The extras asked for, each whole or a problem naming it (never one of them unasked: a decode
    # job's executors import none of them)
    for extra in extras:
        res = loader.resolve(loader.requires_dist(loader.SHIPPED_EXTRAS[extra]), candidates, interp,
                             root=f"the {extra} extra")
        needed |= set(res.projects)
        problems += [f"{p}; the {extra} extra asked for: put its wheels next to kafkarec's "
                     f"(bash scripts/wheelhouse.sh DIR --extras {extra})" for p in res.problems]
    if projects:                      # asked for: what is missing is said where it is imported
        needed |= set(loader.resolve(loader.requires_dist(projects), candidates, interp,
                                     root="the projects asked for").projects)
    deps = []
    for w in candidates:
        if w.project in needed and w.path.endswith(".whl"):
            if t.add(w.path, python=False):
                deps.append(Shipped(w.path, w.path, None))
    # the other wheels given or submitted (the job's own): on workers' sys.path as .whl.zip
    # (the optional sets' wheels, asked for or not, are never a job's: a compiled one cannot load
    # from a .whl.zip, and on workers' sys.path first it would shadow the unpacked copy)
    optional = {loader.canonicalize_name(p) for ps in loader.SHIPPED_EXTRAS.values() for p in ps}
    for path in others:
        w = loader.parse_wheel_name(path)
        if w is not None and w.project in optional and w.project not in needed:
            continue
        if w is None or w.project not in needed:
            zipped = _as_zip(path)
            if t.add(zipped, python=True):
                deps.append(Shipped(path, zipped, None))
    return Shipping(main, deps, folder, problems, loader.describe_interpreter(interp))


def shipped_digests(shipping) -> list:
    """(file name, sha256) of every file shipped, kafkarec's archive first."""
    out = []
    for s in shipping or []:
        if s.shipped_as:
            out.append((os.path.basename(s.shipped_as), _files().file_sha256(s.shipped_as)))
    return out


# -- the check: one probe, one report -----------------------------------------------------

# Every codec and the CRC: decoding one batch of each loads every compiled dependency.
_SELF_TEST_CODECS = ("NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD")


def _probe(expected, must_ship):
    """Runs in an executor's Python worker: can it use what was shipped?"""
    import platform
    from spark_udfs.ship import runtime as rt
    out = {"host": platform.node(), "problems": [], "interpreter": "", "kafkarec": ""}
    try:
        loader = rt.boot_module("wheels")
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


def _fix(shipping: Shipping | None, python: str | None) -> str:
    """The one "Fix:" of every shipping problem: make a wheelhouse for the executors' Python
    (``python``; EXECUTOR_PYTHON when no executor could say) and pass it."""
    loader = _runtime.boot_module("wheels")
    folder = (shipping.folder if shipping else None) or "wheelhouse"
    text = (f"\nFix: {loader.FIX_COMMAND.replace('DIR', folder).replace('PYTHON', python or sys.executable)}; "
            f"then call spark_udfs.register(spark, wheelhouse={folder!r}) (the folder holding kafkarec's "
            f"wheel and its dependency wheels; with spark-submit, pass the kafkarec wheel with --py-files "
            f"and its dependency wheels next to it), or install kafkarec in every executor's Python.")
    if shipping is not None and shipping.kafkarec is not None and shipping.folder is None:
        text += (f" (kafkarec and its dependencies were taken from the driver's installed packages, "
                 f"built for {shipping.driver}: without a wheelhouse, executors need that same Python "
                 f"and platform.)")
    return text


def _report(where: str, problems: dict, shipping: Shipping | None, pythons: list):
    """One :class:`ShippingError` naming every problem (problem -> the processes that have it)."""
    lines = [f"{p}  [{'; '.join(w)}]" for p, w in problems.items()]
    cls = KafkarecMismatchError if all("not the driver's build" in p for p in problems) else ShippingError
    return cls(f"kafkarec cannot run on this {where} ({len(lines)} problem{'s' if len(lines) > 1 else ''}):"
               f"\n  - " + "\n  - ".join(lines) + _fix(shipping, pythons[0] if pythons else None))


def _job_failed(where: str, exc: Exception, shipping: Shipping | None) -> ShippingError:
    """The check job itself failed: its error (Spark's error class line when it has one, e.g.
    ``[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.12 than that in
    driver: 3.11``), and the Fix for the workers' Python when the error names it."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = next((line for line in lines if re.search(r"\[[A-Z_]+\]", line)), lines[0] if lines else "")
    m = re.search(r"Python in worker has different version:? (\d+\.\d+)", str(exc))
    python = f"python{m.group(1)}" if m else "EXECUTOR_PYTHON"
    return ShippingError(f"kafkarec cannot run on this {where}: the check job failed "
                         f"({type(exc).__name__}: {first})." + _fix(shipping, python))


def verify_executors(spark, expected=None, *, tasks=None, shipping: Shipping | None = None) -> list:
    """Run one small job whose tasks check what was shipped, import kafkarec, compare its
    build with the driver's and decode a batch of every codec; raise :class:`ShippingError`
    naming every problem (the driver's too, from ``shipping``).  Returns one description per
    distinct executor Python."""
    t = transport(spark)
    where: dict = {}      # problem -> the processes that have it
    for p in (shipping.problems if shipping else []):
        where.setdefault(p, []).append(f"driver ({shipping.driver})")
    if expected is None and not where:
        expected = expected_fingerprint()
    must_ship = bool(shipping and shipping.kafkarec and shipping.kafkarec.shipped_as)
    try:
        results = t.probe(expected, must_ship, tasks)
    except Exception as exc:  # noqa: BLE001 - a worker could not even run the probe
        raise _job_failed(t.where, exc, shipping) from exc
    executors: dict = {}
    for r in results:
        for p in r["problems"]:
            executors.setdefault(p, set()).add(f"{r['host']}: {r['interpreter']}")
    for p, hosts in executors.items():
        where.setdefault(p, []).append("executor " + ", ".join(sorted(hosts)))
    if where:
        pythons = sorted({r["interpreter"].split(" at ")[-1].split(" on ")[0] for r in results
                          if r["interpreter"]})
        raise _report(t.where, where, shipping, pythons)
    return sorted({f"{r['host']}: {r['kafkarec']}" for r in results})


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
