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

import hashlib
import os
import sys

__all__ = ["KafkarecMismatchError", "import_kafkarec", "fingerprint", "describe", "ensure",
           "SHIPPED_MARKERS"]

# File names of the archives register() ships: "<name>.whl.zip" copies of wheels and
# "kafkarec-<version>-<hash>.pyfiles.zip" built from an installed package.
SHIPPED_MARKERS = (".whl.zip", ".pyfiles.zip")

_fingerprint_cache: dict = {}
_ensured: set = set()


class KafkarecMismatchError(RuntimeError):
    """The kafkarec build in a Spark Python worker is not the one on the driver."""


def _is_shipped(entry: str) -> bool:
    return entry.endswith(SHIPPED_MARKERS) and os.path.isfile(entry)


def _prefer_shipped_archives() -> None:
    shipped = [p for p in sys.path if isinstance(p, str) and _is_shipped(p)]
    if not shipped:
        return
    rest = [p for p in sys.path if p not in shipped]
    sys.path[:] = shipped + rest


def import_kafkarec():
    """Import kafkarec (shipped archives first) and return the module."""
    mod = sys.modules.get("kafkarec")
    if mod is not None and getattr(mod, "_core", None) is not None:
        return mod
    _prefer_shipped_archives()
    import kafkarec
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
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        fp = f"{kafkarec.__version__}+{h.hexdigest()[:16]}"
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
