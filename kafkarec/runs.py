"""Offsets written as runs, ``1-3,7``: how the command lines name a set of offsets (the restore's
lines, the census's dead letters), below both so that neither imports the other."""
from __future__ import annotations

from typing import Iterable, List

__all__ = ["ranges"]


def ranges(offsets: Iterable[int]) -> str:
    """``1-3,7``: offsets in order, runs joined (how the command's lines name offsets)."""
    runs: List[List[int]] = []
    for o in offsets:
        if runs and o == runs[-1][1] + 1:
            runs[-1][1] = o
        else:
            runs.append([o, o])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
