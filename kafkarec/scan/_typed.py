"""Typed keys and values over a read's rows: the one wrapper of
:func:`kafkarec.registry.typed.decode_table` that :class:`kafkarec.scan.LogScan` and the
lakehouse backfill use, one decoder per side built once per read.

Two modes: ``"rows"`` (a row that does not decode keeps its reason in the corrupt column, as
Spark's PERMISSIVE) and ``"refuse"`` (the first such row raises, through ``refuse(offset,
reason)``: the backfill, whose live writer would not write it either)."""
from __future__ import annotations

from typing import Callable, Optional

from kafkarec._extras import require
from kafkarec.scan._config import CORRUPT_COLUMN, TypedSettings

__all__ = ["TypedRows", "MODES"]

MODES = ("rows", "refuse")


class TypedRows:
    """The typed rows of ``settings`` (:class:`kafkarec.scan.TypedSettings`); ``topics``: the
    read's topics (a single one is the subject's topic, known before a row is read)."""

    def __init__(self, settings: TypedSettings, topics=None, *, mode: str = "rows",
                 refuse: Optional[Callable[[int, str], Exception]] = None,
                 corrupt_column: str = CORRUPT_COLUMN):
        if mode not in MODES:
            raise ValueError(f"TypedRows mode {mode!r}: one of {MODES}")
        self.settings = settings
        self.mode = mode
        self.refuse = refuse
        self.corrupt_column = corrupt_column
        self.registry = settings.registry
        self.options = dict(settings.options)
        if topics is not None and len(topics) == 1:
            self.options.setdefault("topic", next(iter(topics)))
        self.needs = ({"topic", "headers"} | ({"value"} if settings.value_format else set())
                      | ({"key"} if settings.key_format else set()))
        self._columns: dict = {}

    def decode(self, table):
        """``table`` with its values (keys) typed; in mode ``"refuse"`` a row that does not
        decode raises ``refuse(offset, reason)``."""
        from kafkarec.registry.typed import decode_table
        s = self.settings
        out = decode_table(table, self._registry(), value=s.value_format is not None,
                           key=s.key_format is not None, value_format=s.value_format or "registry",
                           key_format=s.key_format or "registry", columns=self._columns,
                           corrupt_column=self.corrupt_column, **self.options)
        if self.mode == "refuse":
            bad = out.column(self.corrupt_column)
            if bad.null_count != len(bad):
                i = bad.is_valid().to_pylist().index(True)
                raise self.refuse(out.column("offset")[i].as_py(), bad[i].as_py())
        return out

    def _registry(self):
        from kafkarec.registry import Registry
        if self.registry is None or isinstance(self.registry, Registry):
            return self.registry
        from kafkarec.registry import load
        self.registry = load(self.registry)
        return self.registry

    def schema(self, base):
        """The typed schema of ``base`` (known before a row is read)."""
        pa = require("pyarrow")
        return self.decode(pa.Table.from_batches([], schema=base)).schema

    def value_type(self, base):
        """The Arrow type of the typed value (its decoder's)."""
        self.schema(base)
        return self._columns["value"].arrow_type

    def convert(self, rb):
        """One record batch typed (None: no rows)."""
        pa = require("pyarrow")
        table = self.decode(pa.Table.from_batches([rb]))
        return table.combine_chunks().to_batches()[0] if table.num_rows else None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_columns"] = {}
        return state
