"""Load the compiled core, also when kafkarec is imported from a zip.

Python cannot import extension modules from a zip archive, and Spark ships
``--py-files`` as zips to its executors.  When the regular import fails and
kafkarec is being imported by zipimport, the ``_core`` shared object is copied
out of the archive into a per-user cache keyed by its content hash (written
atomically, so concurrent workers are safe) and loaded from there.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import zipimport

_CORE = "kafkarec._core"


def _cache_root() -> str:
    env = os.environ.get("KAFKAREC_NATIVE_CACHE")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kafkarec-native")


def _package_prefix(loader: zipimport.zipimporter) -> str:
    """The package's folder inside the archive, e.g. "kafkarec/".  (The loader's
    own prefix is the sys.path entry's folder: "" for a wheel or zip root.)"""
    pkg = sys.modules["kafkarec"]
    for path in getattr(pkg, "__path__", ()):
        if path.startswith(loader.archive + os.sep):
            return path[len(loader.archive) + 1:].replace(os.sep, "/").rstrip("/") + "/"
    return loader.prefix + "kafkarec/"


def _extract_from_zip(loader: zipimport.zipimporter) -> str:
    prefix = _package_prefix(loader)
    names = []
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        member = f"{prefix}_core{suffix}"
        try:
            data = loader.get_data(os.path.join(loader.archive, member))
        except OSError:
            names.append(member)
            continue
        digest = hashlib.sha256(data).hexdigest()[:24]
        target_dir = os.path.join(_cache_root(), digest)
        os.makedirs(target_dir, mode=0o700, exist_ok=True)
        if os.stat(target_dir).st_uid != os.getuid():
            raise ImportError(f"kafkarec native cache {target_dir} belongs to another user")
        target = os.path.join(target_dir, f"_core{suffix}")
        if not os.path.exists(target):
            fd, tmp = tempfile.mkstemp(dir=target_dir, prefix=".part-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, target)  # atomic: racing workers all end with one good file
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        return target
    raise ImportError(
        f"{loader.archive} has no kafkarec/_core built for this interpreter "
        f"({sys.implementation.cache_tag}, suffixes {importlib.machinery.EXTENSION_SUFFIXES}); "
        f"build a wheel for this platform")


def load_core():
    pkg = sys.modules["kafkarec"]
    loader = getattr(pkg, "__loader__", None)
    if not isinstance(loader, zipimport.zipimporter):
        from kafkarec import _core
        return _core
    # Imported from a zip: take the core from the same archive, never from
    # another kafkarec that an import hook (an editable install) might offer.
    path = _extract_from_zip(loader)
    spec = importlib.util.spec_from_file_location(
        _CORE, path, loader=importlib.machinery.ExtensionFileLoader(_CORE, path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[_CORE] = module
    spec.loader.exec_module(module)
    pkg._core = module
    return module
