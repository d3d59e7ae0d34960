"""Load the compiled core, also when kafkarec is imported from a zip.

Python cannot import extension modules from a zip archive, and Spark ships
``--py-files`` to executors as zips.  An installed kafkarec (a folder) imports
its core directly and never touches the code below.  When kafkarec is imported
by zipimport (a ``kafkarec-*.whl`` on ``sys.path``, or the ``.whl.zip`` copy
that ``spark_udfs.register`` ships), :mod:`kafkarec._boot.wheels` (the wheel
rules) is imported then, and only then:

1. its runtime dependencies (``Requires-Dist`` in the wheel's METADATA,
   followed through the dependencies' own METADATA) that are not installed are
   taken from wheels next to the archive, on ``sys.path`` or in
   ``$KAFKAREC_WHEELHOUSE``; a wheel is used only if its tags fit this
   interpreter (Python, ABI, machine, glibc);
2. each such wheel, and kafkarec's own archive, is unpacked once into the
   per-user cache (:func:`kafkarec._boot.files.cache_root`) keyed by the archive's
   contents, so concurrent workers on one machine share one copy safely;
3. the unpacked dependency folders go to the front of ``sys.path`` and the
   core is loaded from kafkarec's unpacked copy.

Anything missing or built for another interpreter is one ``ImportError``
naming all of it and the command that fixes it.

The one ``sys.modules`` entry written here is the extension module itself
(``kafkarec._core``), as loading an extension from a file requires.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import zipimport

__all__ = ["load_core"]

_CORE = "kafkarec._core"


def _package_prefix(loader: zipimport.zipimporter) -> str:
    """The package's folder inside the archive, e.g. "kafkarec/".  (The loader's
    own prefix is the sys.path entry's folder: "" for a wheel or zip root.)"""
    pkg = sys.modules["kafkarec"]
    for path in getattr(pkg, "__path__", ()):
        if path.startswith(loader.archive + os.sep):
            return path[len(loader.archive) + 1:].replace(os.sep, "/").rstrip("/") + "/"
    return loader.prefix + "kafkarec/"


def _core_from_zip(loader: zipimport.zipimporter, wheels, cache: str) -> str:
    import zipfile
    prefix = _package_prefix(loader)
    with zipfile.ZipFile(loader.archive) as zf:
        names = set(zf.namelist())
    member = next((f"{prefix}_core{s}" for s in importlib.machinery.EXTENSION_SUFFIXES
                   if f"{prefix}_core{s}" in names), None)
    if member is None:
        interp = wheels.interpreter()
        built = sorted(n.rsplit("/", 1)[-1] for n in names if n.startswith(f"{prefix}_core."))
        raise ImportError(
            f"{loader.archive} has no kafkarec/_core built for this interpreter "
            f"({sys.implementation.cache_tag}, suffixes {importlib.machinery.EXTENSION_SUFFIXES}; "
            f"{wheels.describe_interpreter(interp)}); it holds {built or 'no core'}. Build a wheel for it: "
            f"{wheels.FIX_COMMAND}")
    return os.path.join(wheels.unpack(loader.archive, cache), member)


def load_core():
    """The compiled core, ``kafkarec._core`` (see the module docstring)."""
    pkg = sys.modules["kafkarec"]
    loader = getattr(pkg, "__loader__", None)
    if not isinstance(loader, zipimport.zipimporter):
        from kafkarec import _core
        return _core
    # Imported from a zip: dependencies from wheels next to it, the core from
    # the same archive (never from another kafkarec that an import hook, e.g. an
    # editable install, might offer).
    from kafkarec._boot.files import cache_root
    from kafkarec._boot import wheels
    deps = wheels.zip_dependencies(loader.archive)
    if deps.problems:
        raise ImportError(
            f"kafkarec imported from {loader.archive} lacks dependencies in "
            f"{wheels.describe_interpreter(wheels.interpreter())}: " + " | ".join(deps.problems)
            + f". Put wheels for this interpreter next to the kafkarec wheel: {wheels.FIX_COMMAND}")
    cache = cache_root()
    wheels.activate(deps.wheels.values(), cache)
    path = _core_from_zip(loader, wheels, cache)
    spec = importlib.util.spec_from_file_location(
        _CORE, path, loader=importlib.machinery.ExtensionFileLoader(_CORE, path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[_CORE] = module
    spec.loader.exec_module(module)
    pkg._core = module
    return module
