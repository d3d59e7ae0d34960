"""TEST-ONLY: named points where a restore can be made to SIGKILL itself, so the crash tests kill it
at a chosen moment of its work without sleeping or racing it (tests/broker/test_broker_restore.py).

``KAFKAREC_RESTORE_KILL_AT=POINT`` or ``POINT@N`` (the N-th time the process reaches POINT, default
the first) makes :func:`kill_point` SIGKILL the restore's own process there: no ``finally``, no
``atexit``, no flush runs -- what a ``kill -9`` at that moment leaves.  Unset (always, outside the
tests), :func:`kill_point` only reads the variable and returns; nothing else of the restore reads it.

The points (:data:`POINTS`):

* ``mid-transaction`` -- inside a transaction, half of its records produced and flushed to the
  target (they are in the partition's log, uncommitted), the progress not yet sent;
* ``before-commit`` -- the transaction's records flushed and its progress sent
  (``send_offsets_to_transaction``), ``commit_transaction`` not called;
* ``between-transactions`` -- a transaction committed, the next not begun;
* ``groups-translated`` -- every record restored, the groups' positions translated, none set;
* ``group-applied`` -- after a group's positions were set on the target, before the next group's.
"""
from __future__ import annotations

import os
import signal
from typing import Callable, Dict, Optional

__all__ = ["ENV", "POINTS", "kill_point"]

ENV = "KAFKAREC_RESTORE_KILL_AT"
POINTS = ("mid-transaction", "before-commit", "between-transactions", "groups-translated", "group-applied")
_reached: Dict[str, int] = {}


def kill_point(name: str, prepare: Optional[Callable[[], object]] = None) -> None:
    """SIGKILL this process if :data:`ENV` names ``name`` and this is its N-th visit (see the module
    docstring); ``prepare`` runs just before (a producer's flush, so the records are on the target)."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition("@")
    if point not in POINTS:
        raise ValueError(f"{ENV}={wanted!r}: not one of {', '.join(POINTS)} (optionally @N)")
    if point != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] != (int(nth) if nth else 1):
        return
    if prepare is not None:
        prepare()
    os.kill(os.getpid(), signal.SIGKILL)
