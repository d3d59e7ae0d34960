"""The decode pool of a read: pieces decoded on threads ahead of the consumer and handed on in log
order (:func:`decoded_ahead`, used by :func:`kafkarec.scan._read.decoded` when the config has
``threads``)."""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from kafkarec.scan._plan import without_skips

__all__ = ["decoded_ahead"]


def _replay(items, failure):
    """``items`` decoded ahead, then ``failure`` raised if decoding raised it (a generator, as
    :func:`kafkarec.scan.decode.decode_range`'s: what :class:`kafkarec.scan._order.OffsetOrder` takes)."""
    yield from items
    if failure is not None:
        raise failure


class _Uncut(NamedTuple):
    """A piece the planner could not cut into windows (:func:`decoded_ahead`), and why."""
    slice: object
    error: BaseException


def decoded_ahead(slices, decode, threads: int, cut: Optional[Callable] = None,
                  depth: Optional[Callable[[], int]] = None):
    """``(window, its buffers)`` (as :func:`kafkarec.scan._read.ranges_read`'s) of ``slices``
    (:class:`kafkarec.scan._plan.SegmentPiece` s: a local slice's window is one map, a listed
    range's part is read in its pieces by the thread that decodes it), each buffer paired
    with its items already decoded (``decode(piece, where, topic, partition)``, a
    :func:`kafkarec.scan.decode.decode_range`) on ``threads`` threads, ahead of the consumer.
    ``cut(slice)``: the windows of a piece (:meth:`~kafkarec.scan._plan.SegmentPiece.windows`
    and :meth:`~kafkarec.scan._plan.SegmentPiece.parts`; None: the pieces are windows already),
    called on a planner thread of the pool's own, piece after piece and a few ahead of the
    decoding: the first window decodes while later files are walked, and the consumer's thread
    walks none.

    The consumer gets the windows in order, and each one's items as one thread decoded them,
    an error where decoding raised it (nothing after it), so what it sees is what decoding one
    after the other gives (a slice that could not be cut: its error when its turn comes, nothing
    after it).  At most ``threads`` windows are mapped and decoded ahead of the one the consumer
    holds (memory: ``threads + 1`` windows and their rows); ``depth()``, asked each time the
    consumer takes a window, can keep fewer ahead (a read with a row limit: no more than the
    rows still wanted need; at most ``threads`` whatever it says).  A window's map is closed on the
    pool once the consumer is done with it: by the thread that takes the next window, before it
    maps that one (so the count holds), or past the last window by a task of its own.  A consumer
    that stops (the generator closed) stops the threads after the Arrow batch each is building (and
    the planner after the file it is walking) and closes every map before the close returns, an
    interrupt in any of its waits included."""
    import collections
    import inspect
    import itertools
    import threading
    from concurrent.futures import ThreadPoolExecutor
    stop = threading.Event()

    def decode_parts(parts, where, topic, partition, entries):
        """Each part with its items decoded into ``entries``; a part whose decoding raised keeps
        its items and the error (raised to the consumer where it was met), and ends the parts.
        An error dict (the local file shrank after the read was planned) is handed on as it is."""
        for part in parts:
            if isinstance(part, dict):
                entries.append((part, None))
                continue
            items, failure = [], None
            try:
                for item in decode(part, where, topic, partition):
                    items.append(item)
                    if stop.is_set():
                        break
            except Exception as exc:
                failure = exc
            entries.append((part, _replay(items, failure)))
            if failure is not None or stop.is_set():
                break

    def work(sl, closing):
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
        entries = []
        try:
            decode_parts(without_skips(sl, opened), sl.where, sl.topic, sl.partition, entries)
        except Exception as exc:
            entries.append((exc, None))
        except BaseException:       # (an interrupt): nobody will be handed this map
            opened.close()
            raise
        return entries, opened

    done = collections.deque()      # maps the consumer is done with, for the pool to close
    over = []                       # set once the pool is shut down

    def handed(entries, mapped):
        try:
            for piece, ready in entries:
                if isinstance(piece, BaseException):
                    raise piece
                yield piece, ready
        finally:
            if mapped is not None:
                if over:            # the window a closed consumer held, let go after the pool stopped
                    mapped.close()
                else:
                    done.append(mapped)

    pool = ThreadPoolExecutor(threads, thread_name_prefix="kafkarec-decode")
    planner = None if cut is None else ThreadPoolExecutor(1, thread_name_prefix="kafkarec-decode-plan")
    planned = collections.deque()   # (slice, its windows' future), in order

    def windows():
        """The windows in order: each slice cut on the planner thread, ``threads + 1`` slices
        ahead of the one whose windows are being handed out."""
        todo = iter(slices)
        while True:
            for sl in itertools.islice(todo, max(0, threads + 1 - len(planned))):
                planned.append((sl, planner.submit(cut, sl)))
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

    ahead = collections.deque()     # (window, future, the map its task closes first)
    held = None                     # (the items handed out last, its map)
    closers = []                    # (future, map) of the maps closed past the last window
    todo = iter(slices) if cut is None else windows()

    # Every map is on one of the deques until a task that closes it is submitted, or until the
    # consumer has its window's items: an interrupt in any wait leaves none for the collector.
    def submit(sl):
        closing = done[0] if done else None
        future = pool.submit(work, sl, closing)
        if closing is not None:
            done.popleft()
        ahead.append((sl, future, closing))

    def close_done():
        while done:             # no window left to close it before: a task of its own
            mapped = done[0]
            try:
                closers.append((pool.submit(mapped.close), mapped))
            except RuntimeError:        # the pool takes no work (the interpreter is exiting)
                mapped.close()
            done.popleft()
    try:
        while True:
            # the pool keeps `threads` windows (or depth()'s) ahead of the one handed out next
            keep = threads if depth is None else max(1, min(threads, depth()))
            for later in itertools.islice(todo, max(0, keep + 1 - len(ahead))):
                submit(later)
            if not ahead:
                break
            sl, future, _closing = ahead[0]
            close_done()
            entries, mapped = future.result()
            ahead.popleft()
            sl = sl.slice if isinstance(sl, _Uncut) else sl
            held = (handed(entries, mapped), mapped)
            yield sl, held[0]
    finally:
        stop.set()
        try:
            for _sl, f, _closing in ahead:
                f.cancel()
            close_done()        # the last window's (or the one a closed consumer held)
            if planner is not None:
                for _sl, f in planned:
                    f.cancel()
                planner.shutdown(wait=True)
        finally:
            try:
                pool.shutdown(wait=True)
            finally:
                # (a task still running, after a second interrupt, keeps its maps for the collector)
                for _sl, f, closing in ahead:
                    if f.cancelled():
                        if closing is not None:
                            closing.close()
                    elif f.done() and f.exception() is None and f.result()[1] is not None:
                        f.result()[1].close()
                for f, mapped in closers:
                    if f.cancelled():
                        mapped.close()
                while done:
                    done.popleft().close()
                # a window handed out but never read: its finally (which lets the map go) never runs
                if held is not None and held[1] is not None and \
                        inspect.getgeneratorstate(held[0]) == inspect.GEN_CREATED:
                    held[1].close()
                over.append(True)
