"""The decode pool of a read: pieces decoded on threads ahead of the consumer and handed on in log
order (:class:`DecodePool`, which :class:`kafkarec.scan._read.Read` starts when the config has
``threads``).  The pool asks the read three things only (:class:`Decodes`): a piece's windows, a
window part's items, and how many windows to keep ahead."""
from __future__ import annotations

import collections
import itertools
import threading
from typing import Iterator, NamedTuple, Protocol

from kafkarec.scan._plan import without_skips

__all__ = ["Decodes", "DecodePool"]


class Decodes(Protocol):
    """What the pool asks of the read it decodes for."""

    def cut(self, piece) -> list:
        """The windows of a piece (:meth:`~kafkarec.scan._plan.SegmentPiece.windows` and
        :meth:`~kafkarec.scan._plan.SegmentPiece.parts`), asked on the pool's planner thread."""

    def decode_ahead(self, part, where, topic, partition) -> Iterator:
        """A window part's items (a :func:`kafkarec.scan.decode.decode_range`'s), asked on a
        decoding thread."""

    def depth(self) -> int:
        """How many windows to keep decoded ahead of the consumer (at most the pool's threads,
        at least one), asked each time the consumer takes a window."""


def _replay(items, failure):
    """``items`` decoded ahead, then ``failure`` raised if decoding raised it (a generator, as
    :func:`kafkarec.scan.decode.decode_range`'s: what :class:`kafkarec.scan._order.OffsetOrder` takes)."""
    yield from items
    if failure is not None:
        raise failure


class _Uncut(NamedTuple):
    """A piece the planner could not cut into windows, and why."""
    slice: object
    error: BaseException


class DecodePool:
    """``(window, its buffers)`` (as :func:`kafkarec.scan._read.ranges_read`'s) of pieces
    (:class:`kafkarec.scan._plan.SegmentPiece` s: a local slice's window is one map, a listed
    range's part is read in its pieces by the thread that decodes it), each buffer paired with its
    items already decoded (``read.decode_ahead``) on ``threads`` threads, ahead of the consumer
    (:meth:`readings`).  The pieces are cut into windows (``read.cut``) on a planner thread of the
    pool's own, piece after piece and a few ahead of the decoding: the first window decodes while
    later files are walked, and the consumer's thread walks none.

    The consumer gets the windows in order, and each one's items as one thread decoded them,
    an error where decoding raised it (nothing after it), so what it sees is what decoding one
    after the other gives (a piece that could not be cut: its error when its turn comes, nothing
    after it).  At most ``threads`` windows are mapped and decoded ahead of the one the consumer
    holds (memory: ``threads + 1`` windows and their rows); ``read.depth()``, asked each time the
    consumer takes a window, can keep fewer ahead (a read with a row limit: no more than the
    rows still wanted need).  A window's map is closed on the pool once the consumer is done with
    it: by the thread that takes the next window, before it maps that one (so the count holds), or
    past the last window by a task of its own.  A consumer that stops (the generator closed) stops
    the threads after the Arrow batch each is building (and the planner after the file it is
    walking) and closes every map before the close returns, an interrupt in any of its waits
    included."""

    def __init__(self, read: Decodes, threads: int):
        self.read = read
        self.threads = threads
        self.stop = threading.Event()
        self.done: collections.deque = collections.deque()      # maps the consumer is done with
        self.over = False               # set once the pool is shut down
        self.pool = self.planner = None
        self.planned: collections.deque = collections.deque()   # (piece, its windows' future)
        self.ahead: collections.deque = collections.deque()     # (window, future, the map it closes first)
        self.held = None                # (the items handed out last, its map)
        self.closers: list = []         # (future, map) of the maps closed past the last window

    def readings(self, pieces) -> Iterator:
        """The windows of ``pieces`` in order, each with its buffers' items (see the class)."""
        from concurrent.futures import ThreadPoolExecutor
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="kafkarec-decode")
        self.planner = ThreadPoolExecutor(1, thread_name_prefix="kafkarec-decode-plan")
        todo = self._windows(pieces)
        try:
            while True:
                # the pool keeps `threads` windows (or depth()'s) ahead of the one handed out next
                keep = max(1, min(self.threads, self.read.depth()))
                for later in itertools.islice(todo, max(0, keep + 1 - len(self.ahead))):
                    self._submit(later)
                if not self.ahead:
                    break
                sl, future, _closing = self.ahead[0]
                self._close_done()
                entries, mapped = future.result()
                self.ahead.popleft()
                sl = sl.slice if isinstance(sl, _Uncut) else sl
                self.held = (self._handed(entries, mapped), mapped)
                yield sl, self.held[0]
        finally:
            self._shut_down()

    def _windows(self, pieces):
        """The windows in order: each piece cut on the planner thread, ``threads + 1`` pieces
        ahead of the one whose windows are being handed out."""
        todo = iter(pieces)
        planned = self.planned
        while True:
            for sl in itertools.islice(todo, max(0, self.threads + 1 - len(planned))):
                planned.append((sl, self.planner.submit(self.read.cut, sl)))
            if not planned:
                return
            sl, future = planned[0]
            try:
                cut_windows = future.result()
            except Exception as exc:        # raised to the consumer when its turn comes
                planned.popleft()
                yield _Uncut(sl, exc)
                return
            planned.popleft()
            yield from cut_windows

    def _work(self, sl, closing):
        """``closing`` (a window the consumer is done with) closed, then the window opened
        (:meth:`~kafkarec.scan._plan.SegmentPiece.open`: a local slice mapped, a listed range
        read in its pieces) and decoded: ``(entries, opened)``, each of its buffers with its
        items, an error where reading or decoding raised it (nothing after it); ``opened`` (a
        map) is left open until the consumer is done with it."""
        if closing is not None:
            closing.close()
        if isinstance(sl, _Uncut):
            return [(sl.error, None)], None
        opened = sl.open()
        entries: list = []
        try:
            self._decode_parts(without_skips(sl, opened), sl.where, sl.topic, sl.partition, entries)
        except Exception as exc:
            entries.append((exc, None))
        except BaseException:       # (an interrupt): nobody will be handed this map
            opened.close()
            raise
        return entries, opened

    def _decode_parts(self, parts, where, topic, partition, entries: list) -> None:
        """Each part with its items decoded into ``entries``; a part whose decoding raised keeps
        its items and the error (raised to the consumer where it was met), and ends the parts.
        An error dict (the local file shrank after the read was planned) is handed on as it is."""
        for part in parts:
            if isinstance(part, dict):
                entries.append((part, None))
                continue
            items, failure = [], None
            try:
                for item in self.read.decode_ahead(part, where, topic, partition):
                    items.append(item)
                    if self.stop.is_set():
                        break
            except Exception as exc:
                failure = exc
            entries.append((part, _replay(items, failure)))
            if failure is not None or self.stop.is_set():
                break

    def _handed(self, entries, mapped):
        """A window's entries as the consumer takes them; its map, once the consumer is done with
        it, left for the pool to close (or closed here, when the pool is shut down already)."""
        try:
            for piece, ready in entries:
                if isinstance(piece, BaseException):
                    raise piece
                yield piece, ready
        finally:
            if mapped is not None:
                if self.over:       # the window a closed consumer held, let go after the pool stopped
                    mapped.close()
                else:
                    self.done.append(mapped)

    # Every map is on one of the deques until a task that closes it is submitted, or until the
    # consumer has its window's items: an interrupt in any wait leaves none for the collector.
    def _submit(self, sl) -> None:
        done = self.done
        closing = done[0] if done else None
        future = self.pool.submit(self._work, sl, closing)
        if closing is not None:
            done.popleft()
        self.ahead.append((sl, future, closing))

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
            for _sl, f, _closing in self.ahead:
                f.cancel()
            self._close_done()      # the last window's (or the one a closed consumer held)
            for _sl, f in self.planned:
                f.cancel()
            self.planner.shutdown(wait=True)
        finally:
            try:
                self.pool.shutdown(wait=True)
            finally:
                self._close_left()

    def _close_left(self) -> None:
        """The maps no task closed: (a task still running, after a second interrupt, keeps its
        maps for the collector)."""
        for _sl, f, closing in self.ahead:
            if f.cancelled():
                if closing is not None:
                    closing.close()
            elif f.done() and f.exception() is None and f.result()[1] is not None:
                f.result()[1].close()
        for f, mapped in self.closers:
            if f.cancelled():
                mapped.close()
        while self.done:
            self.done.popleft().close()
        # a window handed out but never read: its finally (which lets the map go) never runs
        import inspect
        held, self.held = self.held, None     # (the window's generator refers to the pool: no cycle)
        if held is not None and held[1] is not None and \
                inspect.getgeneratorstate(held[0]) == inspect.GEN_CREATED:
            held[1].close()
        self.over = True
