"""Files kafkarec writes: whole or not at all, and the per-user cache they live in.

* :func:`atomic_write`: a temporary file in the target's folder, renamed over it, so a
  reader (or a concurrent writer of the same content) never sees part of a file.  Used
  for the compiled Protobuf schemas (``kafkarec.protobuf``), a typed read's quarantine
  (``kafkarec.log.quarantine``, local paths) and the Schema Registry's HTTP cache
  (``kafkarec.registry._sources``).
* :func:`cache_root`: the per-user cache (``$KAFKAREC_NATIVE_CACHE``, else
  ``~/.cache/kafkarec-native``), owner-checked and private: kafkarec's loader unpacks
  the archives it was imported from there (:func:`kafkarec._boot.wheels.unpack`), and
  ``kafkarec.protobuf`` keeps compiled schemas in it.
* :func:`file_sha256`: a file's sha256, read a MiB at a time: the one file digest (the core's
  in a kafkarec build's fingerprint, a shipped archive's, ``spark_udfs.ship``'s).

Standard library only, and nothing of kafkarec: ``scripts/wheelhouse.py`` imports it from a
checkout whose compiled core is not built for its Python (as it does :mod:`kafkarec._boot.wheels`).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile

__all__ = ["atomic_write", "cache_root", "file_sha256"]


def file_sha256(path: str) -> str:
    """The sha256 of the file at ``path`` (hex), read a MiB at a time (a core or an archive
    can be tens of MiB)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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
