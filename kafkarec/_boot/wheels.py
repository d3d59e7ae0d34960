"""Wheels for an interpreter: which wheel fits which Python (tags, glibc), which of a
wheel's ``Requires-Dist`` apply (PEP 508 markers), which dependency wheels a shipped
kafkarec needs, and their unpacking into a folder the caller names.

The rules are the ``packaging`` library's (the ones pip follows): wheel names by
``packaging.utils.parse_wheel_filename``, the tags an interpreter accepts by
``packaging.tags``, ``Requires-Dist`` by ``packaging.requirements`` (markers and
version specifiers), versions by ``packaging.version``.  Only what ``packaging`` can
say for the running machine alone is spelled out here: which ``manylinux`` platforms
an interpreter described by :func:`interpreter` accepts (its glibc), so the driver can
judge wheels for an executor's Python too.

Who imports it: :mod:`kafkarec._boot.loader` when the core first loads out of a zip (a wheel
on ``sys.path``, or the ``.whl.zip`` copy ``spark_udfs.register`` ships), ``kafkarec.protobuf``
when it takes the Protobuf compiler's wheels, ``spark_udfs`` to check the driver and every
executor before anything is decoded, and ``scripts/wheelhouse.py``: it imports nothing of
kafkarec outside :mod:`kafkarec._boot`, and ``import kafkarec`` loads no compiled core, so it is
importable before the core can load (the core needs the wheels this module is about to find).
``import kafkarec`` never imports it.

``packaging`` is one of kafkarec's dependencies.  A Python that lacks it (a bare Spark
executor) takes it from its wheel, pure Python and so importable as a zip, next to the
archive this module was imported from or in ``$KAFKAREC_WHEELHOUSE``: that is where
``scripts/wheelhouse.sh`` puts it and where ``spark_udfs`` ships it, with the other
dependency wheels (:func:`_packaging_from_its_wheel`).
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import os
import platform
import re
import shutil
import sys
import tempfile
import zipfile
from email.parser import HeaderParser
from typing import NamedTuple

__all__ = ["WheelName", "parse_wheel_name", "interpreter", "describe_interpreter",
           "incompatibility", "marker_holds", "requirements", "wheel_candidates", "resolve",
           "Resolution", "unpack", "activate", "zip_dependencies", "FIX_COMMAND",
           "PROTOBUF_COMPILER", "RESTORE_CLIENT", "TIERED_DECRYPTION", "SHIPPED_EXTRAS", "extra_projects",
           "activate_projects", "requires_dist", "archive_metadata"]
# What compiling Protobuf schema text needs (kafkarec.protobuf): protoc as grpcio-tools bundles it, and
# the protobuf runtime that reads its FileDescriptorSet.  Optional: scripts/wheelhouse.sh puts their wheels
# (and their own dependencies') next to kafkarec's, spark_udfs ships them with the others, and a process
# that lacks them takes them from there only when it compiles a schema.
PROTOBUF_COMPILER = ("grpcio-tools", "protobuf")
# What a restore's Spark task needs beyond kafkarec's dependencies and the pyarrow every Spark Python has
# (the `restore` extra's client, kafkarec.restore): scripts/wheelhouse.sh puts its wheels next to kafkarec's,
# spark_udfs.restore ships them, and kafkarec._extras.require takes them from there where it is not installed.
RESTORE_CLIENT = ("confluent-kafka",)
# What reading tiered-storage objects a plugin encrypted needs (kafkarec.log.rsm: AES-GCM chunks, RSA-wrapped
# data keys), in the executors that read them.
TIERED_DECRYPTION = ("cryptography",)
# The optional sets a Spark job may need beyond kafkarec's dependencies, by the extra of pyproject.toml that
# installs each: scripts/wheelhouse.sh --extras puts their wheels next to kafkarec's, and spark_udfs ships a
# set only to a session that asks for it (register(spark, extras=[...]); spark_udfs.restore asks for its own),
# so a decode job's executors get none of them.
SHIPPED_EXTRAS = {"registry": PROTOBUF_COMPILER, "tiered": TIERED_DECRYPTION, "restore": RESTORE_CLIENT}
FIX_COMMAND = ("bash scripts/wheelhouse.sh DIR --python PYTHON   (in a kafkarec checkout: kafkarec's wheel "
               "and every dependency wheel for that interpreter), or: PYTHON -m pip download "
               "--only-binary=:all: -d DIR <kafkarec wheel>")
# The oldest packaging whose API this module uses as it does (kafkarec's dependency says so too).
PACKAGING_MIN = "22"


# -- packaging, also on a Python that lacks it ------------------------------------------

_PACKAGING_WHEEL = re.compile(r"packaging-(\d+(?:\.\d+)*)-py3-none-any\.whl(?:\.zip)?")


def _packaging_from_its_wheel() -> None:
    """Put packaging's wheel on ``sys.path`` (it imports as a zip): the newest one next to
    the archive this module was imported from or to another archive on ``sys.path`` (the
    kafkarec wheel, or the ``.whl.zip`` that Spark put there, with the dependency wheels
    shipped beside it), else in ``$KAFKAREC_WHEELHOUSE``.  Only names of the form
    ``packaging-X.Y[.Z]-py3-none-any.whl`` are taken, so picking the newest needs only
    their release numbers."""
    archives = [getattr(globals().get("__loader__"), "archive", None)]   # a zipimporter's
    archives += [p for p in sys.path if isinstance(p, str) and p.endswith((".whl", ".zip"))]
    folders = [os.path.dirname(os.path.abspath(a)) for a in archives if a and os.path.isfile(a)]
    if os.environ.get("KAFKAREC_WHEELHOUSE"):
        folders.append(os.environ["KAFKAREC_WHEELHOUSE"])
    folders = list(dict.fromkeys(folders))
    found = []
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            m = _PACKAGING_WHEEL.fullmatch(name)
            if m and os.path.isfile(os.path.join(folder, name)):
                found.append((tuple(int(x) for x in m.group(1).split(".")), os.path.join(folder, name)))
    if not found:
        raise ImportError(
            f"kafkarec needs the packaging library, which this Python ({sys.executable}) lacks, and no "
            f"packaging-*-py3-none-any.whl was found in {folders or 'any folder'}. Install it, or put its "
            f"wheel next to the kafkarec wheel: {FIX_COMMAND}")
    sys.path.append(max(found)[1])
    importlib.invalidate_caches()


try:
    import packaging.markers  # noqa: F401
except ImportError:
    _packaging_from_its_wheel()

import packaging  # noqa: E402

if int(packaging.__version__.split(".")[0]) < int(PACKAGING_MIN):
    raise ImportError(f"kafkarec needs packaging>={PACKAGING_MIN}; {sys.executable} has packaging "
                      f"{packaging.__version__} ({os.path.dirname(packaging.__file__)})")
from packaging import tags as _tags  # noqa: E402
from packaging.markers import Marker  # noqa: E402
from packaging.requirements import InvalidRequirement, Requirement  # noqa: E402
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename  # noqa: E402
from packaging.version import InvalidVersion, Version  # noqa: E402


# -- archives --------------------------------------------------------------------------

def _zip_digest(zf: zipfile.ZipFile) -> str:
    """A digest of a zip's directory (member names, sizes, CRCs): its contents,
    without reading them."""
    h = hashlib.sha256()
    for info in sorted(zf.infolist(), key=lambda i: i.filename):
        h.update(f"{info.filename}\0{info.file_size}\0{info.CRC}\n".encode())
    return h.hexdigest()


def unpack(archive: str, cache: str) -> str:
    """The folder holding ``archive``'s files, unpacked once per content into
    ``cache``/unpacked (kafkarec's callers pass :func:`kafkarec._boot.files.cache_root`):
    built under a temporary name and renamed, so concurrent processes share one copy."""
    with zipfile.ZipFile(archive) as zf:
        stem = os.path.basename(archive)
        for ext in (".zip", ".whl"):
            stem = stem[:-len(ext)] if stem.endswith(ext) else stem
        root = os.path.join(cache, "unpacked")
        os.makedirs(root, mode=0o700, exist_ok=True)
        final = os.path.join(root, f"{stem[:80]}-{_zip_digest(zf)[:20]}")
        if os.path.isdir(final):
            return final
        tmp = tempfile.mkdtemp(dir=root, prefix=".part-")
        try:
            for info in zf.infolist():
                name = info.filename
                parts = name.replace("\\", "/").split("/")
                if name.startswith("/") or ".." in parts:
                    raise ImportError(f"{archive}: refusing to unpack member {name!r}")
                zf.extract(info, tmp)
            try:
                os.rename(tmp, final)   # atomic; a racing worker may have won
            except OSError:
                if not os.path.isdir(final):
                    raise
        finally:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
    return final


# -- wheel names and this interpreter ----------------------------------------------------

class WheelName(NamedTuple):
    path: str
    project: str          # canonical (packaging.utils.canonicalize_name)
    version: Version
    tags: frozenset       # packaging.tags.Tag, every one the name's compressed tag set stands for

    @property
    def filename(self) -> str:
        """The wheel's name (also for the ``.whl.zip`` copy register() ships)."""
        name = os.path.basename(self.path)
        return name[:-4] if name.endswith(".whl.zip") else name

    def _part(self, i: int) -> str:
        return self.filename[:-4].split("-")[i]

    @property
    def python(self) -> str:
        """The name's Python tags as written (``cp312``, ``py2.py3``)."""
        return self._part(-3)

    @property
    def abi(self) -> str:
        return self._part(-2)

    @property
    def platform(self) -> str:
        return self._part(-1)


def parse_wheel_name(path: str) -> WheelName | None:
    """``crc32c-2.7.1-cp312-cp312-manylinux_2_17_x86_64.whl`` (also ``....whl.zip``);
    None for anything that is not a valid wheel name."""
    name = os.path.basename(path)
    if name.endswith(".whl.zip"):
        name = name[:-4]
    if not name.endswith(".whl"):
        return None
    try:
        project, version, _build, tags = parse_wheel_filename(name)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    return WheelName(path, canonicalize_name(project), version, frozenset(tags))


def interpreter() -> dict:
    """What decides which wheels fit this process: Python, ABI, machine, glibc,
    plus the environment markers of PEP 508."""
    glibc = None
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
        if text.startswith("glibc "):
            glibc = tuple(int(x) for x in text.split()[1].split(".")[:2])
    except (AttributeError, ValueError, OSError):
        glibc = None
    v = sys.version_info
    return {
        "python": f"{v.major}.{v.minor}.{v.micro}",
        "implementation": sys.implementation.name,
        "cache_tag": sys.implementation.cache_tag,
        "py_tag": f"{_tags.interpreter_name()}{v.major}{v.minor}",
        "machine": platform.machine(),
        "system": platform.system(),
        "glibc": glibc,
        "executable": sys.executable,
        "host": platform.node(),
        "markers": {
            "python_version": f"{v.major}.{v.minor}",
            "python_full_version": platform.python_version(),
            "implementation_name": sys.implementation.name,
            "platform_python_implementation": platform.python_implementation(),
            "sys_platform": sys.platform,
            "platform_system": platform.system(),
            "platform_machine": platform.machine(),
            "os_name": os.name,
            "extra": "",
        },
    }


def describe_interpreter(interp: dict) -> str:
    glibc = "glibc " + ".".join(map(str, interp["glibc"])) if interp.get("glibc") else "no glibc"
    return (f"Python {interp['python']} ({interp['py_tag']}, {interp['system']} {interp['machine']}, "
            f"{glibc}) at {interp['executable']} on {interp['host']}")


# manylinux's legacy names (PEP 600): the glibc each stands for
_MANYLINUX_ALIASES = {(2, 5): "manylinux1", (2, 12): "manylinux2010", (2, 17): "manylinux2014"}
# minor versions assumed for a glibc major below the interpreter's (as packaging does)
_LAST_GLIBC_MINOR = 50


def _platforms(system: str, machine: str, glibc) -> list:
    """The platform tags a Linux machine with ``glibc`` (a (major, minor) pair, None for
    none) accepts: ``linux_<machine>`` and every ``manylinux`` up to its glibc.  Other
    systems: none (only ``any`` wheels fit them)."""
    if system != "Linux":
        return []
    out = [f"linux_{machine}"]
    if glibc is not None:
        major, minor = glibc
        for m in range(major, 1, -1):
            for n in range(minor if m == major else _LAST_GLIBC_MINOR, -1, -1):
                out.append(f"manylinux_{m}_{n}_{machine}")
                if (m, n) in _MANYLINUX_ALIASES:
                    out.append(f"{_MANYLINUX_ALIASES[(m, n)]}_{machine}")
    return out


@functools.lru_cache(maxsize=64)
def _supported(implementation: str, py_tag: str, system: str, machine: str, glibc) -> frozenset:
    """Every tag an interpreter accepts, by packaging.tags (in pip's order, as a set)."""
    digits = py_tag[2:]
    version = (int(digits[0]), int(digits[1:] or 0))
    # (never an empty list: packaging.tags reads that as "this machine's platforms")
    platforms = _platforms(system, machine, glibc) or ["any"]
    if implementation == "cpython":
        specific = _tags.cpython_tags(version, platforms=platforms)
    else:
        specific = _tags.generic_tags(py_tag, platforms=platforms)
    return frozenset([*specific, *_tags.compatible_tags(version, py_tag, platforms)])


def incompatibility(wheel: WheelName, interp: dict) -> str | None:
    """Why ``wheel`` cannot be used by ``interp`` (None when it can)."""
    supported = _supported(interp["implementation"], interp["py_tag"], interp["system"],
                           interp["machine"], interp.get("glibc"))
    if wheel.tags & supported:
        return None
    pythons = {(t.interpreter, t.abi) for t in supported}
    if not any((t.interpreter, t.abi) in pythons for t in wheel.tags):
        return f"built for {wheel.python}-{wheel.abi}, this interpreter is {interp['py_tag']}"
    glibc = ".".join(map(str, interp["glibc"])) if interp.get("glibc") else "none"
    return (f"built for {wheel.platform}, this machine is {interp['system']} "
            f"{interp['machine']} with glibc {glibc}")


# -- requirements (Requires-Dist, PEP 508) --------------------------------------------------

def marker_holds(marker: str, env: dict) -> bool:
    """Does the PEP 508 environment marker ``marker`` (``python_version >= "3.9" and ...``)
    hold in ``env`` (:func:`interpreter`'s ``markers``)?"""
    return bool(Marker(marker).evaluate(dict(env)))


def requirements(metadata: str, env: dict) -> list:
    """The ``Requires-Dist`` entries of ``metadata`` (METADATA text) that apply to ``env``,
    as ``packaging.requirements.Requirement``."""
    out = []
    for spec in HeaderParser().parsestr(metadata or "").get_all("Requires-Dist") or ():
        spec = " ".join(spec.split())          # a folded header line
        try:
            req = Requirement(spec)
            holds = req.marker is None or req.marker.evaluate(dict(env))
        except (InvalidRequirement, ValueError) as exc:
            raise ImportError(f"cannot tell whether Requires-Dist: {spec} applies here ({exc})") from None
        if holds:
            out.append(req)
    return out


def archive_metadata(archive: str, project: str) -> str | None:
    """The METADATA text of ``project``'s ``.dist-info`` at the root of ``archive`` (None without one)."""
    try:
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                parts = name.split("/")
                if len(parts) == 2 and parts[1] == "METADATA" and parts[0].endswith(".dist-info") \
                        and canonicalize_name(parts[0][:-len(".dist-info")].rsplit("-", 1)[0]) == project:
                    return zf.read(name).decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile):
        return None
    return None


def _installed(project: str) -> bool:
    """Is ``project`` installed in a folder of ``sys.path`` (not inside a zip)?"""
    import importlib.metadata as md
    for dist in md.distributions(name=project):
        try:
            where = str(dist.locate_file(""))
        except Exception:  # noqa: BLE001 - an odd finder: treat as not installed
            continue
        if os.path.isdir(where):
            return True
    return False


def wheel_candidates(next_to: str | None = None, folders=()) -> list:
    """Wheels (``*.whl``, ``*.whl.zip``) in the folder of ``next_to``, in
    ``folders``, in ``$KAFKAREC_WHEELHOUSE`` and on ``sys.path``."""
    dirs = []
    if next_to:
        dirs.append(os.path.dirname(os.path.abspath(next_to)))
    dirs += [f for f in folders if f]
    if os.environ.get("KAFKAREC_WHEELHOUSE"):
        dirs.append(os.environ["KAFKAREC_WHEELHOUSE"])
    seen, out = set(), []
    files = []
    for d in dirs:
        try:
            files += [os.path.join(d, n) for n in sorted(os.listdir(d))]
        except OSError:
            continue
    files += [p for p in sys.path if isinstance(p, str)]
    for f in files:
        w = parse_wheel_name(f)
        if w is None or not os.path.isfile(f):
            continue
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            out.append(w)
    return out


class Resolution(NamedTuple):
    wheels: dict      # project -> WheelName to unpack and put on sys.path
    installed: list   # projects already installed in this interpreter
    problems: list    # one line per missing or unusable dependency
    projects: list    # every project of the dependency tree that was looked at


def resolve(root_metadata: str | None, candidates: list, interp: dict | None = None,
            *, root: str = "kafkarec") -> Resolution:
    """Which wheels of ``candidates`` give ``root`` (whose METADATA text is
    ``root_metadata``) every runtime dependency it lacks in ``interp`` (default:
    this process): for each requirement, the newest wheel that fits ``interp`` and
    that its version specifier allows (pre-releases only when nothing else is);
    what is missing or built for something else is listed in ``problems``."""
    check_installed = interp is None
    interp = interp or interpreter()
    by_project: dict = {}
    for w in candidates:
        by_project.setdefault(w.project, []).append(w)
    chosen, installed, problems = {}, [], []
    todo = [(root, r) for r in requirements(root_metadata or "", interp["markers"])]
    seen = set()
    while todo:
        parent, req = todo.pop(0)
        project = canonicalize_name(req.name)
        if project in seen:
            continue
        seen.add(project)
        if check_installed and _installed(project):
            installed.append(project)
            continue
        options = sorted(by_project.get(project, ()), key=lambda w: w.version, reverse=True)
        fit = [w for w in options if incompatibility(w, interp) is None]
        allowed = set(req.specifier.filter(w.version for w in fit))
        usable = [w for w in fit if w.version in allowed]
        if usable:
            chosen[project] = usable[0]
            meta = archive_metadata(usable[0].path, project)
            todo += [(project, r) for r in requirements(meta or "", interp["markers"])]
            continue
        needed = f"{project} (needed by {parent})"
        if fit:
            problems.append(f"{needed}: no wheel is {project}{req.specifier}: "
                            + ", ".join(w.filename for w in fit))
        elif options:
            problems.append(f"{needed}: no wheel fits " + "; ".join(
                f"{w.filename} is {incompatibility(w, interp)}" for w in options))
        else:
            problems.append(f"{needed}: not installed and no {project} wheel was found")
    return Resolution(chosen, installed, problems, sorted(seen))


_activated: dict = {}


def activate(wheels, cache: str) -> list:
    """Unpack ``wheels`` (WheelName or paths) into ``cache`` (:func:`unpack`) and put
    their folders first on ``sys.path`` (replacing the archives themselves there)."""
    added = []
    for w in wheels:
        path = w.path if isinstance(w, WheelName) else w
        folder = _activated.get(path)
        if folder is None:
            folder = _activated[path] = unpack(path, cache)
        if path in sys.path:
            sys.path[:] = [p for p in sys.path if p != path]
        if folder not in sys.path:
            sys.path.insert(0, folder)
        added.append(folder)
    if added:
        importlib.invalidate_caches()
    return added


def zip_dependencies(archive: str, interp: dict | None = None) -> Resolution:
    """The dependency wheels kafkarec imported from ``archive`` needs in this process."""
    return resolve(archive_metadata(archive, "kafkarec"), wheel_candidates(next_to=archive), interp)


def requires_dist(projects) -> str:
    """METADATA text requiring ``projects`` (what :func:`resolve` takes as the root's)."""
    return "".join(f"Requires-Dist: {p}\n" for p in projects)


def extra_projects(extras) -> tuple:
    """The projects of the extras named (:data:`SHIPPED_EXTRAS`), in order; an unknown name is a
    ``ValueError`` naming the known ones."""
    out = []
    for extra in extras:
        if extra not in SHIPPED_EXTRAS:
            raise ValueError(f"unknown kafkarec extra {extra!r} to ship: one of {sorted(SHIPPED_EXTRAS)}")
        out += [p for p in SHIPPED_EXTRAS[extra] if p not in out]
    return tuple(out)


def activate_projects(projects, archive: str | None, cache: str, *,
                      root: str = "the Protobuf schema compiler") -> Resolution:
    """Put wheels of ``projects`` (and of what they require) on ``sys.path`` when
    they are not installed: wheels next to ``archive`` (the zip kafkarec was
    imported from), in ``$KAFKAREC_WHEELHOUSE`` or on ``sys.path``, unpacked into
    ``cache``.  Returns the resolution; its ``problems`` say what is still missing
    (``root``: who needs them, in those lines)."""
    res = resolve(requires_dist(projects), wheel_candidates(next_to=archive), root=root)
    if not res.problems:
        activate(res.wheels.values(), cache)
    return res
