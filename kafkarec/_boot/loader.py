"""The one loader of the compiled core, ``kafkarec._core``, also when kafkarec is imported from a zip.

``import kafkarec`` does not load the core: it puts :class:`CoreFinder` on ``sys.meta_path``
(:func:`install`), and the first import of ``kafkarec._core`` (``kafkarec.iter_batches``, a module's
``from kafkarec._core import ...``, anything that needs it) is found here and loaded by
:class:`CoreLoader`, which runs the package's hook as soon as the module has run: kafkarec registers
there the codec the core asks for (KRaft control values), so that registration is part of the core's
first load, whichever import loads it.  The import system writes ``sys.modules`` from the spec returned
here, as for any module.

Python cannot import extension modules from a zip archive, and Spark ships
``--py-files`` to executors as zips.  An installed kafkarec (a folder) finds
its core where the import system would.  When kafkarec is imported
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

Nothing here imports kafkarec outside :mod:`kafkarec._boot`.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
import zipimport

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing, which import kafkarec does not need
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any, Callable, Optional, Sequence

__all__ = ["CoreFinder", "CoreLoader", "ShippedWheelFinder", "install", "kafkarec_archive", "SHIPPED_ON_IMPORT",
           "RUNTIME_ON_IMPORT"]

_CORE = "kafkarec._core"
# Optional dependencies that kafkarec imports by their own name where it needs them (kafkarec.log.rsm:
# ``from cryptography...`` for encrypted tiered objects), top-level module -> distribution: where kafkarec
# came from a zip, their wheels shipped beside it (spark_udfs.register(spark, extras=["tiered"])) are put on
# sys.path on their first import (:class:`ShippedWheelFinder`), not when the core loads.
SHIPPED_ON_IMPORT = {"cryptography": "cryptography"}
# Runtime dependencies (the wheel's Requires-Dist) that kafkarec's Python modules import by their own
# name, before anything loads the core (msgspec: the options' and outside documents' typed checks, which
# a Spark driver's data-source planner runs in a bare Python that never loads the core): where kafkarec
# came from a zip, their first import puts every runtime dependency's wheel on sys.path, as the core's
# first load does (:class:`ShippedWheelFinder`).
RUNTIME_ON_IMPORT = frozenset({"msgspec"})


def kafkarec_archive() -> "Optional[str]":
    """The zip the imported kafkarec package came from (its wheel, or the ``.whl.zip`` copy Spark
    ships), or None where it is imported from a folder (installed) or not imported: where the
    wheels shipped beside it are looked for (its core's dependencies, the Protobuf compiler's,
    an extra's on a bare executor)."""
    loader = getattr(sys.modules.get("kafkarec"), "__loader__", None)
    return loader.archive if isinstance(loader, zipimport.zipimporter) else None


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


def _core_out_of_zip(loader: zipimport.zipimporter) -> str:
    """The core's file in the unpacked copy of the archive kafkarec was imported from, its
    dependencies from wheels next to it (never from another kafkarec that an import hook, e.g. an
    editable install, might offer)."""
    from kafkarec._boot import wheels
    cache = _activate_runtime(loader.archive)
    return _core_from_zip(loader, wheels, cache)


def _activate_runtime(archive: str) -> str:
    """Every runtime dependency of the kafkarec in ``archive`` from the wheels beside it, unpacked
    into the cache and put on ``sys.path`` (once a process: activating again finds them there);
    the cache's folder.  Any missing is one ``ImportError`` naming all of them."""
    from kafkarec._boot.files import cache_root
    from kafkarec._boot import wheels
    deps = wheels.zip_dependencies(archive)
    if deps.problems:
        raise ImportError(
            f"kafkarec imported from {archive} lacks dependencies in "
            f"{wheels.describe_interpreter(wheels.interpreter())}: " + " | ".join(deps.problems)
            + f". Put wheels for this interpreter next to the kafkarec wheel: {wheels.FIX_COMMAND}")
    cache = cache_root()
    wheels.activate(deps.wheels.values(), cache)
    return cache


class CoreLoader(importlib.machinery.ExtensionFileLoader):
    """The core's extension module, then ``on_load(core)``: one step of its first load."""

    def __init__(self, name: str, path: str, on_load: Callable[[Any], None]):
        super().__init__(name, path)
        self.on_load = on_load

    def exec_module(self, module: ModuleType) -> None:
        super().exec_module(module)
        self.on_load(module)


class CoreFinder:
    """Finds ``kafkarec._core`` for the import system (a meta path finder: no other name)."""

    def __init__(self, on_load: Callable[[Any], None]):
        self.on_load = on_load

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
        if fullname != _CORE:
            return None
        pkg = sys.modules["kafkarec"]
        loader = getattr(pkg, "__loader__", None)
        if isinstance(loader, zipimport.zipimporter):
            origin = _core_out_of_zip(loader)
        else:
            found = importlib.machinery.PathFinder.find_spec(fullname, path or pkg.__path__)
            if (found is None or found.origin is None
                    or not isinstance(found.loader, importlib.machinery.ExtensionFileLoader)):
                return None     # not built: the import system's "No module named 'kafkarec._core'"
            origin = found.origin
        from importlib import util      # here: import kafkarec does not need it
        return util.spec_from_file_location(
            fullname, origin, loader=CoreLoader(fullname, origin, self.on_load))

    def invalidate_caches(self) -> None:
        """Nothing cached here (the import system asks every meta path finder)."""


class ShippedWheelFinder:
    """Last on ``sys.meta_path``: a module of :data:`SHIPPED_ON_IMPORT` that no other finder found
    (not installed) is looked for among the wheels beside the zip kafkarec was imported from (one
    of :data:`RUNTIME_ON_IMPORT`: every runtime dependency's wheel, as the core's load takes them);
    found, they are unpacked and put on ``sys.path`` (:func:`kafkarec._boot.wheels.activate_projects`)
    and the import goes on from there.  Otherwise the import fails as it would, and the importer's
    own error names what to install; a later import looks again (a reused Spark worker, after the
    session shipped the extra)."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[ModuleSpec]:
        if path is not None or (fullname not in SHIPPED_ON_IMPORT and fullname not in RUNTIME_ON_IMPORT):
            return None
        archive = kafkarec_archive()
        if archive is None:
            return None
        if fullname in RUNTIME_ON_IMPORT:
            _activate_runtime(archive)
            return importlib.machinery.PathFinder.find_spec(fullname)
        from kafkarec._boot import wheels
        from kafkarec._boot.files import cache_root
        res = wheels.activate_projects((SHIPPED_ON_IMPORT[fullname],), archive, cache_root(),
                                       root=f"kafkarec's {fullname}")
        if res.problems:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname)

    def invalidate_caches(self) -> None:
        """Nothing cached here."""


def install(on_load: Callable[[Any], None]) -> None:
    """Put a :class:`CoreFinder` calling ``on_load`` first on ``sys.meta_path`` (once: a package
    imported again replaces its finder), and a :class:`ShippedWheelFinder` last (once)."""
    sys.meta_path[:] = [CoreFinder(on_load)] + [f for f in sys.meta_path if not isinstance(f, CoreFinder)]
    if not any(isinstance(f, ShippedWheelFinder) for f in sys.meta_path):
        sys.meta_path.append(ShippedWheelFinder())
