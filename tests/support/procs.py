"""Ending what a test started: a process started with ``start_new_session=True`` leads a process
group of its own (a JVM, its Python workers, its executors), ended as a whole by the group's id."""
from __future__ import annotations

import os
import signal
import subprocess


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s whole group at once (after a timeout, an interrupt, or to end a worker
    that outlived its JVM), then reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def stop_group(proc: subprocess.Popen, grace: float = 30) -> None:
    """End ``proc``'s group politely: SIGTERM, then SIGKILL for whatever is left after ``grace``
    seconds."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    kill_group(proc)
