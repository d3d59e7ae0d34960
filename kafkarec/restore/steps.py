"""The named steps of a restore, and the one hook called at each: where the crash tests kill a restore
at a chosen moment of its work without sleeping or racing it (tests/broker/test_broker_restore.py).

The library only calls :func:`step` at these points; what happens there is the hook's, installed by
:func:`set_step_hook` in the process that runs the restore (default: none, nothing happens).  The hook
is a process's, not a :class:`kafkarec.restore.RestoreSpec`'s: the spec is plain data read once and
pickled to Spark's executors, which never run a hook, and nothing of kafkarec reads the environment
for it.  The crash tests start the command line in a process of their own with a hook that SIGKILLs
it at ``POINT@N`` (no ``finally``, no ``atexit``, no flush runs: what a ``kill -9`` at that moment
leaves).

The points (:data:`POINTS`):

* ``mid-transaction`` -- inside a transaction, half of its records produced (``settle`` flushes
  them to the target: they are in the partition's log, uncommitted), the progress not yet sent;
* ``before-commit`` -- the transaction's records produced and its progress sent
  (``send_offsets_to_transaction``; ``settle`` flushes the records), ``commit_transaction`` not called;
* ``between-transactions`` -- a transaction committed, the next not begun;
* ``groups-translated`` -- every record restored, the groups' positions translated, none set;
* ``group-applied`` -- after a group's positions were set on the target, before the next group's;
* ``partition-written`` -- ``--same-offsets write``: a partition folder written, the next not begun
  (the log dir's checkpoints and the journal not yet final).
"""
from __future__ import annotations

from typing import Callable, Optional

__all__ = ["POINTS", "StepHook", "set_step_hook", "step"]

POINTS = ("mid-transaction", "before-commit", "between-transactions", "groups-translated", "group-applied", "partition-written")

#: ``hook(point, settle)``: ``point`` one of :data:`POINTS`; ``settle`` None, or a callable that makes
#: what the point describes true on the target (a producer's flush), for a hook that stops the process there
StepHook = Callable[[str, Optional[Callable[[], object]]], None]
_hook: Optional[StepHook] = None


def set_step_hook(hook: Optional[StepHook]) -> Optional[StepHook]:
    """Install ``hook`` (None: none) for this process's restores; returns the one it replaces."""
    global _hook
    previous, _hook = _hook, hook
    return previous


def step(point: str, settle: Optional[Callable[[], object]] = None) -> None:
    """The restore reached ``point`` (one of :data:`POINTS`): the hook is called, if one is installed."""
    if _hook is not None:
        _hook(point, settle)
