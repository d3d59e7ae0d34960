"""Aiven's tiered-storage plugin objects the tiered tests read (tests/data/tiered/aiven: one variant
per plugin setting, and ``input``, the broker's segments the plugin copied)."""
from __future__ import annotations

import glob
import os

import kafkarec
from support.paths import TESTS

DATA = os.path.join(TESTS, "data", "tiered", "aiven")


def originals(part, start=0, end=None):
    """The records of the original segments of partition folder ``part`` (the active one left out),
    ``start <= offset < end``."""
    out = []
    for path in sorted(glob.glob(os.path.join(DATA, "input", part, "*.log")))[:-1]:
        with open(path, "rb") as fh:
            out += kafkarec.to_arrow(fh.read()).select(["offset", "key", "value", "timestamp"]).to_pylist()
    return [r for r in out if r["offset"] >= start and (end is None or r["offset"] < end)]
