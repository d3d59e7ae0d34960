"""kafkarec's optional dependencies, imported in one way: :func:`require` returns the module, or raises
ONE :class:`~kafkarec.errors.MissingExtraError` line naming the extra that installs it (the command line
prints it and exits 2) instead of a ``ModuleNotFoundError`` traceback.  A base ``pip install kafkarec``
reads and writes batches and log files; Arrow output, selections, object stores, tables, CDC and typed
values need pyarrow and numpy (``kafkarec[arrow]``).  Where kafkarec was imported from a shipped wheel (a
bare Spark executor), a missing one is first taken from the wheels shipped beside it, and one still
missing names that fix (a wheel shipped from a wheelhouse), not pip.  Compiling ``.proto`` text has its own guard, as it
can take grpcio-tools and protobuf from wheels beside kafkarec's (:mod:`kafkarec.protobuf.compiler`)."""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

from kafkarec._boot.loader import kafkarec_archive
from kafkarec.errors import MissingExtraError

__all__ = ["EXTRAS", "require"]

#: top-level module -> (its distribution, the smallest extra of pyproject.toml that installs it)
EXTRAS = {
    "pyarrow": ("pyarrow", "arrow"),
    "numpy": ("numpy", "arrow"),
    "pyiceberg": ("pyiceberg", "lakehouse"),
    "deltalake": ("deltalake", "lakehouse"),
    "confluent_kafka": ("confluent-kafka", "restore"),
    "polars": ("polars", "engines"),
    "duckdb": ("duckdb", "engines"),
    "ray": ("ray", "engines"),
    "daft": ("daft", "engines"),
    "dask": ("dask", "engines"),
    "pandas": ("pandas", "engines"),
    "datasketches": ("datasketches", "census"),
}


def require(name: str, extra: "str | None" = None) -> ModuleType:
    """The module ``name`` (``"pyarrow"``, ``"pyarrow.compute"``...) of an optional dependency;
    ``extra``: the extra a missing one names where it is not :data:`EXTRAS`' (confluent-kafka is
    the restore's and the lakehouse's)."""
    module = sys.modules.get(name)
    # imported already: what ``import`` would look up first; but a module another thread is still
    # importing is in sys.modules half made: import_module waits for it, as ``import`` does
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        return module
    top = name.partition(".")[0]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != top:         # a module missing inside an installed package is its own failure
            raise
        distribution, default_extra = EXTRAS[top]
        archive = kafkarec_archive()
        problems = _from_shipped_wheels(distribution, archive) if archive is not None else []
        if archive is not None and not problems:
            return importlib.import_module(name)
        # imported from its wheel (a bare Spark executor): the fix is a wheel shipped, not pip; a wheel
        # shipped that does not fit this Python says why
        found = [p for p in problems if "was found" not in p]
        raise MissingExtraError(top, distribution, extra or default_extra, archive=archive,
                                python=sys.executable if archive else None,
                                unfit="; ".join(found) or None) from None


#: distributions already looked for among shipped wheels in this process, with what was wrong
_looked_for: dict = {}


def _from_shipped_wheels(distribution: str, archive: str) -> list:
    """``distribution``'s wheels shipped beside ``archive``, the zip kafkarec was imported from (the
    wheel Spark ships to a bare executor; ``spark_udfs.ship(..., projects=...)``), unpacked once per
    machine into kafkarec's cache and put on ``sys.path``, as the loader does with kafkarec's own
    dependencies.  Returns what is wrong (the resolution's problems: none where it is on the path
    now); looked for once per process."""
    if distribution not in _looked_for:
        from kafkarec._boot import wheels
        from kafkarec._boot.files import cache_root
        res = wheels.activate_projects((distribution,), archive, cache_root(), root=f"kafkarec's {distribution}")
        _looked_for[distribution] = list(res.problems) or []
        if not res.problems:
            return []
        return _looked_for[distribution]
    return _looked_for[distribution] or [f"{distribution}'s wheels were put on the path but it does not import"]
