"""Threads lent to a read's decode pool, and kept a while between reads (:class:`LentThreads`).

A read that decodes on a pool used to start its threads and end them with it.  A thread's
memory comes from its own heap in Arrow's allocator (mimalloc): a new thread at every read starts
from fresh pages, which the kernel zeroes as they are first touched, where a thread that read
before takes back the pages the consumer freed.  On 2 cores, a 2-thread read of 2 M whole rows
(``shared/bench/scale.py``'s 4 x 500 k) took 66-70 ms (median of 25) with threads kept between
reads against 73-79 ms with new ones, and 8-10 ms less CPU.

A lent thread serves one read alone, as a thread of its own did (a read's ``threads`` is how many
decode at once), and is handed back when the read's tasks are all done (:meth:`LentThreads.shutdown`),
named ``kafkarec-idle`` while it waits for the next read.  One left idle for
:data:`KEEP_IDLE_S` ends, and so does every idle thread before the process forks (a child has none
of its parent's threads, and Python warns of a fork with threads running)."""
from __future__ import annotations

import os
import queue
import threading
import weakref
from concurrent.futures import Executor, Future
from typing import List, NamedTuple, Optional

__all__ = ["LentThreads", "KEEP_IDLE_S", "idle_threads", "end_idle_threads"]

#: how long a thread handed back waits for another read before it ends
KEEP_IDLE_S = 5.0
#: at most this many threads kept idle (the rest end when handed back)
KEEP_MAX = 64

_IDLE_NAME = "kafkarec-idle"
_lock = threading.Lock()
_idle: List["_Worker"] = []         # the threads handed back and waiting, last in first out
_lent: "weakref.WeakSet[LentThreads]" = weakref.WeakSet()     # lendings not yet handed back
_exiting = False                    # the interpreter is exiting: a thread handed back ends


class _Backs:
    """The workers of one lending handed back, counted (its shutdown waits on them)."""

    def __init__(self, count: int):
        self.cond = threading.Condition()
        self.count = count
        self.back = 0

    def one_back(self) -> None:
        with self.cond:
            self.back += 1
            self.cond.notify_all()

    def wait(self, leave: int = 0) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.back >= self.count - leave)


class _Back(NamedTuple):
    """The task that hands a worker back (one a worker, after the tasks queued before it)."""
    backs: _Backs


def _hand_back(tasks: queue.SimpleQueue, count: int) -> _Backs:
    """A lending's ``count`` workers told to come back (by its shutdown, or by the collector for a
    lending never shut down: each waits on its queue until then)."""
    backs = _Backs(count)
    for _ in range(count):
        tasks.put(_Back(backs))
    return backs


class _Worker(threading.Thread):
    """A thread that runs the tasks of the read it is lent to, then waits, idle, to be lent
    again (its ``inbox``: a read's task queue, or None to end)."""

    def __init__(self):
        super().__init__(name=_IDLE_NAME)
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()

    def run(self) -> None:
        tasks = None
        while True:
            if tasks is None:
                try:
                    tasks = self.inbox.get(timeout=KEEP_IDLE_S)
                except queue.Empty:
                    with _lock:
                        if not self.inbox.empty():      # lent as it gave up waiting
                            continue
                        if self in _idle:
                            _idle.remove(self)
                    return
                if tasks is None:
                    return
            task = tasks.get()
            if isinstance(task, _Back):     # the read is done with it: back to the idle ones
                tasks = None
                self.name = _IDLE_NAME
                with _lock:
                    kept = not _exiting and len(_idle) < KEEP_MAX
                    if kept:
                        _idle.append(self)
                task.backs.one_back()
                if not kept:
                    return
                continue
            future, fn, args = task
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as exc:
                    future.set_exception(exc)
                    del exc
                else:
                    future.set_result(result)
                    del result          # (an idle thread holds nothing of the read's)
            del future, fn, args, task


class LentThreads(Executor):
    """``threads`` threads lent to one read (an idle one taken, else a new one started), named
    ``<prefix>_<n>`` while they serve it; :meth:`shutdown` hands them back once every task
    submitted is done (with ``wait``: as :class:`concurrent.futures.ThreadPoolExecutor`'s
    shutdown, the tasks queued and not cancelled are run first).  A lending dropped without a
    shutdown is handed back by the collector, and one still open at exit when the interpreter
    exits."""

    def __init__(self, threads: int, thread_name_prefix: str = "kafkarec-decode"):
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.workers: List[_Worker] = []
        self.backs: Optional[_Backs] = None     # set by shutdown
        self.lock = threading.Lock()            # submit and shutdown, one at a time
        # (refers to the queue, not to the lending: called once, by shutdown or the collector)
        self._hand_back = weakref.finalize(self, _hand_back, self.tasks, threads)
        self._hand_back.atexit = False      # (at exit _at_exit does, before the threads are joined)
        fresh = []
        try:
            with _lock:
                for n in range(threads):
                    worker = _idle.pop() if _idle else None
                    if worker is None:
                        worker = _Worker()
                        fresh.append(worker)
                    worker.name = f"{thread_name_prefix}_{n}"
                    self.workers.append(worker)
                    worker.inbox.put(self.tasks)
                _lent.add(self)
            for worker in fresh:
                worker.start()
        except BaseException:       # (no thread to start, an interrupt): those lent go back
            self.shutdown(wait=False)
            raise

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if kwargs:
            return self.submit(lambda: fn(*args, **kwargs))
        future: Future = Future()
        with self.lock:
            if self.backs is not None:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self.tasks.put((future, fn, args))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self.lock:
            if self.backs is None:
                if cancel_futures:
                    while True:
                        try:
                            task = self.tasks.get_nowait()
                        except queue.Empty:
                            break
                        task[0].cancel()
                self.backs = self._hand_back() or _Backs(0)
            backs = self.backs
        with _lock:
            _lent.discard(self)
        if wait:
            # (called on one of its own threads, from a task: that one comes back after it)
            backs.wait(leave=1 if threading.current_thread() in self.workers else 0)


def idle_threads() -> int:
    """How many threads wait, idle, to be lent to a read."""
    with _lock:
        return len(_idle)


def end_idle_threads() -> None:
    """Every idle thread ended now, and joined: before a fork, at exit, and where a caller
    wants none left."""
    with _lock:
        ending = list(_idle)
        _idle.clear()
        for worker in ending:
            worker.inbox.put(None)
    for worker in ending:
        worker.join()


def _at_exit() -> None:
    """At the interpreter's exit (before it joins its threads): idle threads ended, and the
    threads of a read never shut down handed back after what they were given, then ended."""
    global _exiting
    with _lock:
        _exiting = True
        lent = list(_lent)
    end_idle_threads()
    for lending in lent:
        lending.shutdown(wait=False)


def _after_fork_in_child() -> None:
    """A child has none of its parent's threads: none idle, and a lending's shutdown there has
    no thread to wait for."""
    global _lock
    _lock = threading.Lock()
    _idle.clear()
    for lending in list(_lent):
        lending.lock = threading.Lock()
        lending._hand_back.detach()
        if lending.backs is None:
            lending.backs = _Backs(0)
    _lent.clear()


threading._register_atexit(_at_exit)        # (as concurrent.futures' own pools end their threads)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=end_idle_threads, after_in_child=_after_fork_in_child)
