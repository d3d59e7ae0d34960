"""Importing kafkarec inside Spark's Python processes, and checking it is the driver's build.

No pyspark here: this runs in executors' Python workers and in the Python Data
Source planner before anything else touches kafkarec.

* :func:`import_kafkarec` puts the archives that :func:`spark_udfs.register`
  shipped ahead of other ``sys.path`` entries (in local mode a worker's
  ``sys.path[0]`` is the driver's working directory, which may hold another
  kafkarec, e.g. a source checkout), then imports kafkarec.
* :func:`fingerprint` names a kafkarec build: ``<__version__>+<sha256 of the
  compiled core, 16 hex digits>``.
* :func:`ensure` (called by every function and reader before decoding) raises
  :class:`KafkarecMismatchError` when the worker's build is not the driver's.
"""
from __future__ import annotations

import os
import sys

__all__ = ["ShippingError", "KafkarecMismatchError", "import_kafkarec", "fingerprint", "describe",
           "ensure", "boot_module", "shipped_kafkarec_archive", "SHIPPED_MARKERS", "use_wheelhouse",
           "require_shipped_extra"]

# File names of the archives register() ships: "<name>.whl.zip" copies of wheels and
# "kafkarec-<version>-<hash>.pyfiles.zip" built from an installed package.
SHIPPED_MARKERS = (".whl.zip", ".pyfiles.zip")

_fingerprint_cache: dict = {}
_ensured: set = set()


class ShippingError(RuntimeError):
    """kafkarec, or a dependency it needs, cannot be loaded on the driver or an
    executor: raised once by :func:`spark_udfs.register`, naming every missing
    or mismatched piece and the command that fixes it."""


class KafkarecMismatchError(ShippingError):
    """The kafkarec build in a Spark Python worker is not the one on the driver."""


def boot_module(name: str):
    """``kafkarec._boot.<name>``, imported where ``import kafkarec`` would find the package (the
    shipped archives first), without loading the compiled core (``import kafkarec`` is lazy):
    :mod:`kafkarec._boot.wheels` checks what the core needs before it loads, and
    :mod:`kafkarec._boot.files` writes the archives that ship it.  Imported when first needed, so
    that a Python lacking ``packaging`` fails where its problems are reported (the probe)."""
    import importlib
    _prefer_shipped_archives()
    return importlib.import_module(f"kafkarec._boot.{name}")


def shipped_kafkarec_archive():
    """The zip (wheel) kafkarec would be imported from here, or None when it is
    installed in a folder (or absent)."""
    try:
        loader = boot_module("loader")      # imports kafkarec (lazy: not its core), shipped archives first
    except ImportError:                     # absent here: nothing to come from
        return None
    return loader.kafkarec_archive()


def _is_shipped(entry: str) -> bool:
    return entry.endswith(SHIPPED_MARKERS) and os.path.isfile(entry)


def _prefer_shipped_archives() -> None:
    shipped = [p for p in sys.path if isinstance(p, str) and _is_shipped(p)]
    if not shipped:
        return
    rest = [p for p in sys.path if p not in shipped]
    sys.path[:] = shipped + rest


def import_kafkarec():
    """Import kafkarec (shipped archives first) with its compiled core loaded, and return the
    module: a worker that cannot load the core (and the dependencies it takes from wheels) fails
    here, before it reads anything."""
    if "kafkarec._core" not in sys.modules:
        _prefer_shipped_archives()
    import kafkarec._core
    return kafkarec


def _core_path(kafkarec) -> str:
    return kafkarec._core.__file__


def fingerprint(kafkarec=None) -> str:
    """``<version>+<core sha256[:16]>`` of the imported kafkarec."""
    if kafkarec is None:
        kafkarec = import_kafkarec()
    path = _core_path(kafkarec)
    key = (path, kafkarec.__version__)
    fp = _fingerprint_cache.get(key)
    if fp is None:
        from kafkarec._boot.files import file_sha256     # kafkarec is imported: its _boot is there
        fp = f"{kafkarec.__version__}+{file_sha256(path)[:16]}"
        _fingerprint_cache[key] = fp
    return fp


def describe(kafkarec=None) -> str:
    """Where this process's kafkarec comes from (for error messages)."""
    if kafkarec is None:
        kafkarec = import_kafkarec()
    return (f"kafkarec {fingerprint(kafkarec)} from {os.path.dirname(kafkarec.__file__)} "
            f"(core {_core_path(kafkarec)}), Python {sys.version.split()[0]} at {sys.executable}, "
            f"pid {os.getpid()}")


def ensure(expected: str | None):
    """Import kafkarec in a Spark Python worker and check it is the driver's build."""
    kafkarec = import_kafkarec()
    if expected is None or expected in _ensured:
        return kafkarec
    actual = fingerprint(kafkarec)
    if actual != expected:
        raise KafkarecMismatchError(
            f"kafkarec in this Spark Python worker is not the driver's build: "
            f"driver has kafkarec {expected}, this worker has {describe(kafkarec)}. "
            f"Ship one build to every process: pass the kafkarec wheel with "
            f"`spark-submit --py-files <kafkarec wheel>` and call spark_udfs.register(spark), "
            f"which re-ships it as a .zip executors can import (or install that same wheel in "
            f"every executor's Python).")
    _ensured.add(expected)
    return kafkarec


def use_wheelhouse(folder: str | None) -> None:
    """In the Data Source planner: the driver's wheelhouse (:attr:`Shipping.folder`, given to the
    registered class) is where an extra used only where a read is planned is taken from when it
    was not shipped (the Protobuf schema compiler, ``kafkarec.protobuf.compiler``): the planner
    runs on the driver's machine in a classic session; where the folder is not there (a Connect
    server elsewhere) nothing changes."""
    if folder and not os.environ.get("KAFKAREC_WHEELHOUSE") and os.path.isdir(folder):
        os.environ["KAFKAREC_WHEELHOUSE"] = folder


def require_shipped_extra(extra: str, why: str) -> None:
    """In the Data Source planner, before any task: raise :class:`ShippingError` when the session
    ships kafkarec (it is imported from a shipped archive here) but not the wheels of ``extra``
    (:data:`kafkarec._boot.wheels.SHIPPED_EXTRAS`) that its executors need for this read (``why``),
    nor has them installed.  Only the wheels beside the shipped archive count: they are what
    every executor gets."""
    archive = shipped_kafkarec_archive()
    if archive is None:
        return
    loader = boot_module("wheels")
    folder = os.path.dirname(os.path.abspath(archive))
    beside = [w for w in loader.wheel_candidates(next_to=archive)
              if os.path.dirname(os.path.abspath(w.path)) == folder]
    projects = loader.SHIPPED_EXTRAS[extra]
    res = loader.resolve(loader.requires_dist(projects), beside, root=f"the {extra} extra")
    if res.problems:
        raise ShippingError(
            f"{why} needs the {extra} extra ({', '.join(projects)}) on every executor, and this session did "
            f"not ship it ({'; '.join(res.problems)}). Ship it before the read: "
            f"spark_udfs.register(spark, extras=['{extra}']) (its wheels next to kafkarec's in the "
            f"wheelhouse: bash scripts/wheelhouse.sh DIR --extras {extra}), or install kafkarec[{extra}] "
            f"in every executor's Python.")
