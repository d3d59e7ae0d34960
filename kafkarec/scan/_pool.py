"""The decode pool of a read: pieces decoded on threads ahead of the consumer and handed on in log
order (:class:`DecodePool`, which :class:`kafkarec.scan._read.Read` starts when the config has
``threads``).  The pool asks the read three things only (:class:`Decodes`): a piece's windows, a
window part's items, and how many windows to keep ahead."""
from __future__ import annotations

import collections
import itertools
import queue
import threading
from typing import Iterable, Iterator, NamedTuple, Optional, Protocol

from kafkarec.log import local
from kafkarec.scan._plan import without_skips
from kafkarec.scan._threads import LentThreads

__all__ = ["Decodes", "DecodePool"]


class Decodes(Protocol):
    """What the pool asks of the read it decodes for."""

    def cut(self, piece, after: Optional[int] = None) -> Iterable:
        """The windows of a piece (:meth:`~kafkarec.scan._plan.SegmentPiece.windows` and
        :meth:`~kafkarec.scan._plan.SegmentPiece.parts`), asked on the pool's planner thread, which
        hands each on as it comes; ``after``: the read's bytes after it (None: not known)."""

    def decode_ahead(self, part, where, topic, partition) -> Iterator:
        """A window part's items (a :func:`kafkarec.scan.decode.decode_range`'s), asked on a
        decoding thread."""

    def depth(self) -> int:
        """How many windows to keep decoded ahead of the consumer (at most the pool's threads,
        at least one), asked each time the consumer takes a window."""


class _Window:
    """One window's entries as the thread decoding it makes them: ``("part", piece)``, each of its
    items ``("item", item)`` and ``("end", failure or None)``; ``("dict", error)`` (the local file
    shrank after the read was planned); ``("raise", exc)`` where reading or decoding raised (nothing
    after it); ``("done", None)`` last.  The consumer reads them as they come (a window's first
    batches are handed on while its later ones decode), and the window's map (``mapped``) is let go
    once both sides are done with it (:meth:`let_go`: the decoding thread may still read it after
    a consumer stopped early)."""
    __slots__ = ("events", "lock", "sides", "mapped", "in_part")

    def __init__(self):
        self.events = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.sides = 2              # the decoding thread and the consumer
        self.mapped = None          # the map the decoding thread opened (set before it lets go)
        self.in_part = False        # the consumer is between a part's "part" and its "end"

    def put(self, kind: str, what=None) -> None:
        self.events.put((kind, what))

    def get(self) -> tuple:
        return self.events.get()

    def items(self):
        """The items of the part the consumer was handed last, up to its end; then its failure
        raised, if decoding raised one (what :func:`kafkarec.scan.decode.decode_range` gives, and
        :class:`kafkarec.scan._order.OffsetOrder` takes)."""
        while True:
            kind, what = self.events.get()
            if kind == "item":
                yield what
                continue
            self.in_part = False        # ("end", failure)
            if what is not None:
                raise what
            return

    def skip_part(self) -> None:
        """The rest of the current part's items passed over (a consumer that left them)."""
        while self.in_part:
            if self.events.get()[0] == "end":
                self.in_part = False

    def let_go(self):
        """One side done with the window: its map, once both are (else None)."""
        with self.lock:
            self.sides -= 1
            return self.mapped if self.sides == 0 else None


#: at most this many times ``keep + 1`` windows submitted ahead, however small they are (each
#: holds a map and its rows until the consumer takes it)
AHEAD_MAX = 4


def _window_bytes(sl) -> int:
    """The bytes a window maps and decodes (a piece that could not be cut, or a window not yet
    taken from the planner: none)."""
    return 0 if sl is None or isinstance(sl, _Uncut) else sl.size


def _with_after(pieces) -> Iterator:
    """``(piece, the bytes of the pieces after it)`` of ``pieces`` (a list: a read's plan); of
    pieces cut as they are taken (a read with a row limit: its first piece's later windows, then
    the rest), one taken ahead, and the bytes after it known for the last alone (0; None before
    it), so that nothing is walked before the pool takes it."""
    if isinstance(pieces, list):
        after = sum(piece.size for piece in pieces)
        for piece in pieces:
            after -= piece.size
            yield piece, after
        return
    todo = iter(pieces)
    piece = next(todo, _END)
    while piece is not _END:
        later = next(todo, _END)
        yield piece, (0 if later is _END else None)
        piece = later


_END = object()


class _Uncut(NamedTuple):
    """A piece the planner could not cut into windows, and why."""
    slice: object
    error: BaseException


class DecodePool:
    """``(window, its buffers)`` (as :func:`kafkarec.scan._read.ranges_read`'s) of pieces
    (:class:`kafkarec.scan._plan.SegmentPiece` s: a local slice's window is one map, a listed
    range's part is read in its pieces by the thread that decodes it), each buffer paired with its
    items decoded (``read.decode_ahead``) on ``threads`` threads, ahead of the consumer, and handed
    on as they come (:meth:`readings`: a window's first Arrow batches while its later ones
    decode).  The pieces are cut into windows (``read.cut``) on a planner thread of the pool's
    own, piece after piece and a few ahead of the decoding, each window handed on as it is found:
    the first window decodes while later files, and the rest of a large one, are walked, and the
    consumer's thread walks none.

    The consumer gets the windows in order, and each one's items as one thread decoded them,
    an error where decoding raised it (nothing after it), so what it sees is what decoding one
    after the other gives (a piece that could not be cut: its error when its turn comes, nothing
    after it).  At most ``threads`` windows' bytes are mapped and decoded ahead of the one the
    consumer holds (memory: ``threads + 1`` windows and their rows; windows smaller than a window,
    a segment's last, count by their bytes: see :meth:`_room`); ``read.depth()``, asked each time the
    consumer takes a window, can keep fewer ahead (a read with a row limit: no more than the
    rows still wanted need).  A window's map is closed on the pool once the consumer is done with
    it: by the thread that takes the next window, before it maps that one (so the count holds), or
    past the last window by a task of its own.  A consumer that stops (the generator closed) stops
    the threads after the Arrow batch each is building (and the planner after the file it is
    walking) and closes every map before the close returns, an interrupt in any of its waits
    included.  Its threads are lent to the read (:class:`kafkarec.scan._threads.LentThreads`) and
    handed back, idle, when it ends."""

    def __init__(self, read: Decodes, threads: int):
        self.read = read
        self.threads = threads
        self.stop = threading.Event()
        self.done: collections.deque = collections.deque()      # maps the consumer is done with
        self.over = False               # set once the pool is shut down
        self.pool = self.planner = None
        self.planned: collections.deque = collections.deque()   # (piece, its cut's future, its windows' queue)
        self.ahead: collections.deque = collections.deque()     # (window, future, the map it closes first, _Window)
        self.held = None                # (the items handed out last, its entry as on `ahead`)
        self.next_window = None         # the window taken from the planner, not yet submitted
        self.closers: list = []         # (future, map) of the maps closed past the last window

    def readings(self, pieces) -> Iterator:
        """The windows of ``pieces`` in order, each with its buffers' items (see the class)."""
        try:
            # (threads lent, and handed back when the read is done: kept a while for the next read)
            self.pool = LentThreads(self.threads, thread_name_prefix="kafkarec-decode")
            self.planner = LentThreads(1, thread_name_prefix="kafkarec-decode-plan")
            todo = self._windows(pieces)
            while True:
                # the pool keeps `threads` windows (or depth()'s) ahead of the one handed out next,
                # counted in bytes where the windows are smaller than a window can be (see _room)
                keep = max(1, min(self.threads, self.read.depth()))
                while True:
                    if self.next_window is None and self._room(keep, None):
                        # (taken from the planner only when there may be room: it may be walking)
                        self.next_window = next(todo, None)
                    if self.next_window is None or not self._room(keep, self.next_window):
                        break
                    self._submit(self.next_window)
                    self.next_window = None
                if not self.ahead:
                    break
                entry = self.ahead.popleft()
                self._close_done()
                sl = entry[0].slice if isinstance(entry[0], _Uncut) else entry[0]
                self.held = (self._handed(entry[3]), entry)
                yield sl, self.held[0]
        finally:
            self._shut_down()

    def _room(self, keep: int, later) -> bool:
        """Whether window ``later`` (None: the planner's next, not taken yet) may be submitted now,
        with ``keep`` windows to keep ahead of the one handed out next: ``keep + 1`` windows always
        are (the count the class states); past those, windows smaller than a window can be (a
        segment's last, a small segment: 4 MiB beside 64 MiB ones) while those submitted,
        ``later`` with them, add up to no more bytes than ``keep + 1`` full windows, and at most
        AHEAD_MAX times as many.  Counted in windows alone, a thread done with two small windows
        waited, idle, for the consumer to be done with a large one on the other thread (a read of
        64 and 4 MiB segments on two threads: one idle 3 ms in every 50)."""
        ahead = self.ahead
        if len(ahead) < keep + 1:
            return True
        return (len(ahead) < AHEAD_MAX * (keep + 1) and
                sum(_window_bytes(e[0]) for e in ahead) + _window_bytes(later)
                <= (keep + 1) * local.READ_WINDOW_BYTES)

    def _windows(self, pieces):
        """The windows in order: each piece cut on the planner thread, ``threads + 1`` pieces
        ahead of the one whose windows are being handed out, and each window handed out as the
        planner finds it (a broker's 1 GiB segment is walked a window at a time: its first window
        decodes while the planner walks on)."""
        todo = _with_after(pieces)
        planned = self.planned
        while True:
            for sl, after in itertools.islice(todo, max(0, self.threads + 1 - len(planned))):
                found: queue.SimpleQueue = queue.SimpleQueue()
                planned.append((sl, self.planner.submit(self._cut, sl, found, after), found))
            if not planned:
                return
            sl, _future, found = planned[0]
            while True:
                kind, what = found.get()
                if kind == "window":
                    yield what
                    continue
                planned.popleft()
                if kind == "raise":         # raised to the consumer when its turn comes
                    yield _Uncut(sl, what)
                    return
                break

    def _cut(self, sl, found: queue.SimpleQueue, after: Optional[int] = None) -> None:
        """``sl``'s windows put on ``found`` as they are cut (on the planner thread), then
        ``("done", None)``, or ``("raise", exc)`` where cutting raised (nothing after it).  The
        pool stopping stops the cut after the window at hand."""
        cuts = self.read.cut(sl, after)
        try:
            for window in cuts:
                found.put(("window", window))
                if self.stop.is_set():
                    break
        except BaseException as exc:    # (an interrupt too: the consumer waits on `found`)
            found.put(("raise", exc))
            if not isinstance(exc, Exception):
                raise
            return
        finally:
            getattr(cuts, "close", lambda: None)()     # (a walk stopped early lets its file go)
        found.put(("done", None))

    def _work(self, sl, closing, window: _Window) -> None:
        """``closing`` (a window the consumer is done with) closed, then the window opened
        (:meth:`~kafkarec.scan._plan.SegmentPiece.open`: a local slice mapped, a listed range
        read in its pieces) and decoded into ``window``, each of its buffers with its items as
        they are decoded, an error where opening, reading or decoding raised (nothing after it);
        the map is left open until the consumer is done with it too."""
        if closing is not None:
            closing.close()
        opened = None
        try:
            if isinstance(sl, _Uncut):
                window.put("raise", sl.error)
                return
            opened = sl.open()
            try:
                self._decode_parts(without_skips(sl, opened), sl.where, sl.topic, sl.partition, window)
            except Exception as exc:    # (its pieces handed on may still be read: the map stays open)
                window.put("raise", exc)
            except BaseException:       # (an interrupt): nobody will be handed this map
                opened.close()
                opened = None
                raise
        except BaseException as exc:   # (opening raised, or an interrupt) raised to the consumer
            window.put("raise", exc)
            raise
        finally:
            window.mapped = opened
            self._let_go(window)        # (before "done": the consumer, reading it, lets go last)
            window.put("done")

    def _decode_parts(self, parts, where, topic, partition, window: _Window) -> None:
        """Each part with its items decoded into ``window`` as they come; a part whose decoding
        raised ends with the error (raised to the consumer where it was met), and ends the parts.
        An error dict (the local file shrank after the read was planned) is handed on as it is."""
        for part in parts:
            if isinstance(part, dict):
                window.put("dict", part)
                continue
            window.put("part", part)
            failure = None
            try:
                for item in self.read.decode_ahead(part, where, topic, partition):
                    window.put("item", item)
                    if self.stop.is_set():
                        break
            except Exception as exc:
                failure = exc
            window.put("end", failure)
            if failure is not None or self.stop.is_set():
                break

    def _handed(self, window: _Window):
        """A window's entries as the consumer takes them, as its thread decodes them; its map,
        once the consumer and the thread are done with it, left for the pool to close (or closed
        here, when the pool is shut down already)."""
        try:
            while True:
                kind, what = window.get()
                if kind == "done":
                    return
                if kind == "raise":
                    raise what
                if kind == "dict":
                    yield what, None
                    continue
                window.in_part = True
                items = window.items()
                yield what, items
                items.close()
                window.skip_part()
        finally:
            self._let_go(window)

    def _let_go(self, window: _Window) -> None:
        """One side (the consumer, or the thread decoding it) done with ``window``: its map, once
        both are, left for the pool to close, or closed when the pool is shut down.  (A thread
        still running after a second interrupt may leave its map to the collector.)"""
        mapped = window.let_go()
        if mapped is None:
            return
        if self.over:
            mapped.close()
        else:
            self.done.append(mapped)

    # Every map is on one of the deques until a task that closes it is submitted, or until the
    # consumer has its window's items: an interrupt in any wait leaves none for the collector.
    def _submit(self, sl) -> None:
        done = self.done
        closing = done[0] if done else None
        window = _Window()
        future = self.pool.submit(self._work, sl, closing, window)
        if closing is not None:
            done.popleft()
        self.ahead.append((sl, future, closing, window))

    def _close_done(self) -> None:
        done = self.done
        while done:             # no window left to close it before: a task of its own
            mapped = done[0]
            try:
                self.closers.append((self.pool.submit(mapped.close), mapped))
            except RuntimeError:        # the pool takes no work (the interpreter is exiting)
                mapped.close()
            done.popleft()

    def _shut_down(self) -> None:
        """The threads stopped and every map closed (a consumer done or gone)."""
        self.stop.set()
        try:
            for _sl, f, _closing, _window in self._entries():
                f.cancel()
            self._close_done()      # the last window's (or the one a closed consumer held)
            for _sl, f, _found in self.planned:
                f.cancel()
            if self.planner is not None:
                self.planner.shutdown(wait=True)
        finally:
            try:
                if self.pool is not None:
                    self.pool.shutdown(wait=True)
            finally:
                self._close_left()

    def _close_left(self) -> None:
        """The maps no task closed: (a task still running, after a second interrupt, keeps its
        maps for the collector)."""
        for _sl, f, closing, window in self._entries():
            if f.cancelled():       # (never ran: nothing mapped)
                if closing is not None:
                    closing.close()
            elif self.held is None or window is not self.held[1][3]:
                self._let_go(window)        # never handed out: the consumer's side let go here
        for f, mapped in self.closers:
            if f.cancelled():
                mapped.close()
        self.over = True
        while self.done:
            self.done.popleft().close()
        # a window handed out but never read: its finally (which lets the map go) never runs
        import inspect
        held, self.held = self.held, None     # (the window's generator refers to the pool: no cycle)
        if held is not None and not held[1][1].cancelled() and \
                inspect.getgeneratorstate(held[0]) == inspect.GEN_CREATED:
            self._let_go(held[1][3])

    def _entries(self) -> list:
        """The windows submitted and not yet done with by the consumer: the one it holds (whose
        thread may not have started yet), and those ahead."""
        held = [] if self.held is None else [self.held[1]]
        return held + list(self.ahead)
