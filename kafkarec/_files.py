"""Files kafkarec writes: whole or not at all, and the per-user cache they live in.

* :func:`atomic_write`: a temporary file in the target's folder, renamed over it, so a
  reader (or a concurrent writer of the same content) never sees part of a file.  Used
  for the compiled Protobuf schemas (``kafkarec.protobuf``), a typed read's quarantine
  (``kafkarec.log.quarantine``, local paths) and the Schema Registry's HTTP cache
  (``kafkarec.registry._sources``).
* :func:`cache_root`: the per-user cache (``$KAFKAREC_NATIVE_CACHE``, else
  ``~/.cache/kafkarec-native``), owner-checked and private: kafkarec's loader unpacks
  the archives it was imported from there (``spark_udfs._wheels.unpack``), and
  ``kafkarec.protobuf`` keeps compiled schemas in it.

``atomic_write`` itself lives in ``spark_udfs._wheels``, which must import before kafkarec's
compiled core can (it writes the wheelhouse and the archives ``spark_udfs.register`` ships, and
unpacks them for kafkarec's loader): one rule, imported here for kafkarec's own files.
"""
from __future__ import annotations

import os
import tempfile

from spark_udfs._wheels import atomic_write

__all__ = ["atomic_write", "cache_root"]


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
