"""What this process has memory-mapped, as Linux's ``/proc/self/maps`` lists it: the tests of kept
maps and of the view layout ask which files of a log dir are still mapped."""
from __future__ import annotations

import os
from typing import List

__all__ = ["MAPS", "mapped_files"]

#: the kernel's list of this process's maps (Linux only: tests reading it skip elsewhere)
MAPS = "/proc/self/maps"


def mapped_files(folder: str) -> List[str]:
    """The lines of ``/proc/self/maps`` of files under ``folder`` (deleted ones too: the kernel
    keeps their path, marked ``(deleted)``)."""
    prefix = os.path.realpath(folder) + os.sep
    with open(MAPS) as fh:
        return [line.rstrip("\n") for line in fh if prefix in line]
