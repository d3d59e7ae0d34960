"""Wheels for an interpreter: which wheel fits which Python (tags, glibc), which of a
wheel's ``Requires-Dist`` apply (PEP 508 markers), which dependency wheels a shipped
kafkarec needs, and their unpacking into a per-user cache shared safely by concurrent
processes.

Imported only when kafkarec is loaded from a zip (a wheel on ``sys.path``, or the
``.whl.zip`` copy ``spark_udfs.register`` ships: :func:`kafkarec._loader.load_core`),
and by ``spark_udfs`` on the driver to check executors before anything is decoded
(``spark_udfs._runtime.loader_module`` loads it without the kafkarec package).  An
ordinary ``import kafkarec`` never imports it.  Pure standard library, except that
environment markers are evaluated by the ``packaging`` library when it is installed
(see :func:`marker_holds`).
"""
from __future__ import annotations

import hashlib
import importlib
import os
import platform
import re
import shutil
import sys
import tempfile
import zipfile
from typing import NamedTuple

__all__ = ["atomic_write", "cache_root", "WheelName", "parse_wheel_name", "interpreter",
           "describe_interpreter", "incompatibility", "marker_holds", "requirements", "wheel_candidates",
           "resolve", "Resolution", "unpack", "activate", "zip_dependencies", "FIX_COMMAND",
           "PROTOBUF_COMPILER", "activate_projects", "requires_dist"]
# What compiling Protobuf schema text needs (kafkarec.protobuf): protoc as grpcio-tools bundles it, and
# the protobuf runtime that reads its FileDescriptorSet.  Optional: scripts/wheelhouse.sh puts their wheels
# (and their own dependencies') next to kafkarec's, spark_udfs ships them with the others, and a process
# that lacks them takes them from there only when it compiles a schema.
PROTOBUF_COMPILER = ("grpcio-tools", "protobuf")
FIX_COMMAND = ("bash scripts/wheelhouse.sh DIR --python PYTHON   (in a kafkarec checkout: kafkarec's wheel "
               "and every dependency wheel for that interpreter), or: PYTHON -m pip download "
               "--only-binary=:all: -d DIR <kafkarec wheel>")


# -- files ---------------------------------------------------------------------------

def atomic_write(path: str, data=None, *, source: str | None = None, fsync: bool = True,
                 mode: int | None = None) -> str:
    """Write ``data`` (bytes) or a copy of the file ``source`` to ``path``
    atomically: a temporary file in the same folder, renamed over ``path``.
    Concurrent writers of the same content all end with one whole file.
    ``mode``: the file's permissions (default 0600, as for the private caches)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out:
            if source is not None:
                with open(source, "rb") as inp:
                    shutil.copyfileobj(inp, out, 1 << 20)
            else:
                out.write(data)
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def cache_root() -> str:
    """``$KAFKAREC_NATIVE_CACHE``, else ``$XDG_CACHE_HOME/kafkarec-native`` or
    ``~/.cache/kafkarec-native``; a folder of the temp dir when that is not writable."""
    env = os.environ.get("KAFKAREC_NATIVE_CACHE")
    if env:
        candidates = [env]
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        candidates = [os.path.join(base, "kafkarec-native"),
                      os.path.join(tempfile.gettempdir(), f"kafkarec-native-{os.getuid()}")]
    last = None
    for root in candidates:
        try:
            os.makedirs(root, mode=0o700, exist_ok=True)
            if os.stat(root).st_uid != os.getuid():
                raise PermissionError(f"kafkarec native cache {root} belongs to another user")
            if not os.access(root, os.W_OK | os.X_OK):
                raise PermissionError(f"kafkarec native cache {root} is not writable")
            return root
        except OSError as exc:
            last = exc
    raise ImportError(f"no usable kafkarec native cache (set KAFKAREC_NATIVE_CACHE): {last}")


def _zip_digest(zf: zipfile.ZipFile) -> str:
    """A digest of a zip's directory (member names, sizes, CRCs): its contents,
    without reading them."""
    h = hashlib.sha256()
    for info in sorted(zf.infolist(), key=lambda i: i.filename):
        h.update(f"{info.filename}\0{info.file_size}\0{info.CRC}\n".encode())
    return h.hexdigest()


def unpack(archive: str) -> str:
    """The folder holding ``archive``'s files, unpacked once per content into the cache."""
    with zipfile.ZipFile(archive) as zf:
        stem = os.path.basename(archive)
        for ext in (".zip", ".whl"):
            stem = stem[:-len(ext)] if stem.endswith(ext) else stem
        root = os.path.join(cache_root(), "unpacked")
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
    project: str          # normalized: lower case, runs of -_. as "-"
    version: str
    python: tuple
    abi: tuple
    platform: tuple

    @property
    def filename(self) -> str:
        """The wheel's name (also for the ``.whl.zip`` copy register() ships)."""
        name = os.path.basename(self.path)
        return name[:-4] if name.endswith(".whl.zip") else name


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_wheel_name(path: str) -> WheelName | None:
    """``crc32c-2.7.1-cp312-cp312-manylinux_2_17_x86_64.whl`` (also ``....whl.zip``)."""
    name = os.path.basename(path)
    if name.endswith(".whl.zip"):
        name = name[:-4]
    if not name.endswith(".whl"):
        return None
    parts = name[:-4].split("-")
    if len(parts) not in (5, 6):
        return None
    project, version, py, abi, plat = parts[0], parts[1], parts[-3], parts[-2], parts[-1]
    return WheelName(path, _normalize(project), version, tuple(py.split(".")),
                     tuple(abi.split(".")), tuple(plat.split(".")))


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
        "py_tag": f"cp{v.major}{v.minor}" if sys.implementation.name == "cpython" else
                  f"{sys.implementation.name[:2]}{v.major}{v.minor}",
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


_MANYLINUX_ALIASES = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def _platform_fits(tag: str, interp: dict) -> bool:
    if tag == "any":
        return True
    machine = interp["machine"]
    if interp["system"] != "Linux":
        return False
    if tag == f"linux_{machine}":
        return True
    for alias, version in _MANYLINUX_ALIASES.items():
        if tag == f"{alias}_{machine}":
            return interp["glibc"] is not None and interp["glibc"] >= version
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(.+)", tag)
    if m and m.group(3) == machine:
        return interp["glibc"] is not None and interp["glibc"] >= (int(m.group(1)), int(m.group(2)))
    return False


def incompatibility(wheel: WheelName, interp: dict) -> str | None:
    """Why ``wheel`` cannot be used by ``interp`` (None when it can)."""
    py_tag = interp["py_tag"]
    major = py_tag[2]
    minor = int(py_tag[3:]) if py_tag[3:].isdigit() else 0
    fits = False
    for py in wheel.python:
        for abi in wheel.abi:
            if abi == "none" and py in ("py3", f"py{major}{minor}", py_tag, "py2.py3"):
                fits = True
            elif abi == "none" and py.startswith("py") and py[2:] == major:
                fits = True
            elif abi == py_tag and py == py_tag:
                fits = True
            elif abi == "abi3" and py.startswith("cp3") and py[3:].isdigit() and \
                    int(py[3:]) <= minor and interp["implementation"] == "cpython":
                fits = True
    if not fits:
        return (f"built for {'.'.join(wheel.python)}-{'.'.join(wheel.abi)}, this interpreter is "
                f"{py_tag}")
    if not any(_platform_fits(p, interp) for p in wheel.platform):
        glibc = ".".join(map(str, interp["glibc"])) if interp.get("glibc") else "none"
        return (f"built for {'.'.join(wheel.platform)}, this machine is {interp['system']} "
                f"{interp['machine']} with glibc {glibc}")
    return None


# -- requirements (PEP 508 markers, the parts wheels' METADATA use) --------------------------
#
# The ``packaging`` library evaluates markers when it is installed (pip's own rules).  A
# bare Spark executor may not have it (pyspark, pyarrow and pandas do not need it), and
# nothing is vendored: the fallback below implements what METADATA markers use, with
# PEP 440's meaning of each operator on release numbers (``~=`` is a compatible release,
# ``==``/``!=`` take ``.*``), and refuses what it does not know rather than guess.
# tests/spark/test_wheels.py checks it against packaging on a table of markers.

_TOKEN = re.compile(r"""\s*(?:(?P<op>===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b)|(?P<paren>[()])|
                        (?P<kw>and\b|or\b)|(?P<str>'[^']*'|"[^"]*")|(?P<var>[A-Za-z_][A-Za-z0-9_.]*))""",
                    re.X)
_RELEASE = re.compile(r"v?(\d+(?:\.\d+)*)")
_WILDCARD = re.compile(r"v?(\d+(?:\.\d+)*)\.\*")


def _version_key(text: str):
    """Release numbers for sorting wheel versions (``1.10.0`` after ``1.9``); -1 for a
    part that is not a number."""
    parts = []
    for p in re.split(r"[.+-]", text):
        m = re.match(r"(\d+)", p)
        parts.append(int(m.group(1)) if m else -1)
    return tuple(parts)


def _release(text: str):
    """A plain release (``3.9``, ``3.10.2``) as a tuple of ints, or None for anything else
    (pre-/post-/dev releases, local versions, words)."""
    m = _RELEASE.fullmatch(text.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def _padded(a: tuple, b: tuple):
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def _compare(left: str, op: str, right: str) -> bool:
    op = " ".join(op.split())
    if op == "in":
        return left in right
    if op == "not in":
        return left not in right
    if op == "===":
        return left == right
    if op in ("==", "!=") and right.strip().endswith(".*"):
        m, have = _WILDCARD.fullmatch(right.strip()), _release(left)
        if m is None or have is None:
            raise ValueError(f"cannot compare {left!r} {op} {right!r}")
        want = tuple(int(x) for x in m.group(1).split("."))
        match = _padded(have, want)[0][:len(want)] == want
        return match if op == "==" else not match
    a, b = _release(left), _release(right)
    if a is None or b is None:
        # Not versions: PEP 508 compares them as strings, where that means anything.
        if op in ("==", "!="):
            return (left == right) == (op == "==")
        raise ValueError(f"cannot compare {left!r} {op} {right!r} without the packaging library")
    if op == "~=":
        # compatible release: >= V and == V with its last component dropped, as a prefix
        if len(b) < 2:
            raise ValueError(f"~= needs a version with two components at least, not {right!r}")
        pa, pb = _padded(a, b)
        return pa >= pb and _padded(a, b[:-1])[0][:len(b) - 1] == b[:-1]
    pa, pb = _padded(a, b)
    return {"==": pa == pb, "!=": pa != pb, "<": pa < pb, "<=": pa <= pb, ">": pa > pb,
            ">=": pa >= pb}[op]


def _packaging_marker():
    try:
        from packaging.markers import Marker
    except ImportError:
        return None
    return Marker


def marker_holds(marker: str, env: dict) -> bool:
    """Evaluate a PEP 508 environment marker (``python_version >= "3.9" and ...``) in
    ``env``: by the ``packaging`` library when installed, else by :func:`_marker_fallback`."""
    Marker = _packaging_marker()
    if Marker is not None:
        return bool(Marker(marker).evaluate(dict(env)))
    return _marker_fallback(marker, env)


def _marker_fallback(marker: str, env: dict) -> bool:
    """PEP 508 markers without ``packaging`` (see the note above)."""
    tokens = []
    pos = 0
    marker = marker.strip()
    while pos < len(marker):
        m = _TOKEN.match(marker, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse marker {marker!r}")
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(marker) and marker[pos].isspace():
            pos += 1
    i = 0

    def value():
        nonlocal i
        kind, text = tokens[i]
        i += 1
        if kind == "str":
            return text[1:-1]
        if kind == "var":
            return str(env.get(text, ""))
        raise ValueError(f"unexpected {text!r} in marker {marker!r}")

    def atom():
        nonlocal i
        if tokens[i] == ("paren", "("):
            i += 1
            result = disjunction()
            i += 1
            return result
        left = value()
        op = tokens[i][1]
        i += 1
        return _compare(left, op, value())

    def chain(operand, word, combine):
        # operand (word operand)*: "and" binds tighter than "or" (PEP 508)
        nonlocal i
        result = operand()
        while i < len(tokens) and tokens[i] == ("kw", word):
            i += 1
            result = combine(result, operand())
        return result

    def conjunction():
        return chain(atom, "and", lambda a, b: a and b)

    def disjunction():
        return chain(conjunction, "or", lambda a, b: a or b)

    return disjunction()


def requirements(metadata: str, env: dict) -> list:
    """Normalized names of the ``Requires-Dist`` entries of ``metadata`` that apply to ``env``."""
    out = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            if not line.strip():
                break   # the body (long description) starts
            continue
        spec = line.split(":", 1)[1].strip()
        req, _, marker = spec.partition(";")
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        if not m:
            continue
        try:
            holds = not marker.strip() or marker_holds(marker, env)
        except ValueError as exc:
            raise ImportError(f"cannot tell whether Requires-Dist: {spec} applies here ({exc}); "
                              "installing the packaging library lets it be evaluated") from None
        if not holds:
            continue
        out.append(_normalize(m.group(1)))
    return out


def _archive_metadata(archive: str, project: str) -> str | None:
    try:
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                parts = name.split("/")
                if len(parts) == 2 and parts[1] == "METADATA" and parts[0].endswith(".dist-info") \
                        and _normalize(parts[0][:-len(".dist-info")].rsplit("-", 1)[0]) == project:
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
    this process); what is missing or built for something else is listed in
    ``problems``."""
    check_installed = interp is None
    interp = interp or interpreter()
    by_project: dict = {}
    for w in candidates:
        by_project.setdefault(w.project, []).append(w)
    chosen, installed, problems = {}, [], []
    todo = [(root, r) for r in requirements(root_metadata or "", interp["markers"])]
    seen = set()
    while todo:
        parent, project = todo.pop(0)
        if project in seen:
            continue
        seen.add(project)
        if check_installed and _installed(project):
            installed.append(project)
            continue
        options = sorted(by_project.get(project, ()), key=lambda w: _version_key(w.version),
                         reverse=True)
        fit = [w for w in options if incompatibility(w, interp) is None]
        if fit:
            chosen[project] = fit[0]
            meta = _archive_metadata(fit[0].path, project)
            todo += [(project, r) for r in requirements(meta or "", interp["markers"])]
            continue
        needed = f"{project} (needed by {parent})"
        if options:
            problems.append(f"{needed}: no wheel fits " + "; ".join(
                f"{w.filename} is {incompatibility(w, interp)}" for w in options))
        else:
            problems.append(f"{needed}: not installed and no {project} wheel was found")
    return Resolution(chosen, installed, problems, sorted(seen))


_activated: dict = {}


def activate(wheels) -> list:
    """Unpack ``wheels`` (WheelName or paths) into the cache and put their folders
    first on ``sys.path`` (replacing the archives themselves there)."""
    added = []
    for w in wheels:
        path = w.path if isinstance(w, WheelName) else w
        folder = _activated.get(path)
        if folder is None:
            folder = _activated[path] = unpack(path)
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
    return resolve(_archive_metadata(archive, "kafkarec"), wheel_candidates(next_to=archive), interp)


def requires_dist(projects) -> str:
    """METADATA text requiring ``projects`` (what :func:`resolve` takes as the root's)."""
    return "".join(f"Requires-Dist: {p}\n" for p in projects)


def activate_projects(projects, archive: str | None = None) -> Resolution:
    """Put wheels of ``projects`` (and of what they require) on ``sys.path`` when
    they are not installed: wheels next to ``archive`` (the zip kafkarec was
    imported from), in ``$KAFKAREC_WHEELHOUSE`` or on ``sys.path``.  Returns the
    resolution; its ``problems`` say what is still missing."""
    res = resolve(requires_dist(projects), wheel_candidates(next_to=archive), root="the Protobuf schema compiler")
    if not res.problems:
        activate(res.wheels.values())
    return res
