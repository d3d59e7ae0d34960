"""Local windows kept mapped between the reads of one registered source (issue 80).

A local read maps each window of a segment (:func:`kafkarec.log.local.iter_pieces`), decodes it
and unmaps it: for a query repeated over a registered table the kernel then sets up and tears down
the page tables of every window, every query (64 MiB a window, ~16,000 pages), a large share of the
query's CPU once the file's pages are in the page cache.  :class:`WindowMaps` keeps the maps of the
windows a source's reads used open for its next read: a read asks it (:meth:`WindowMaps.begin`, a
:class:`MapUse`) for each window, and a window it holds is decoded from the map already made.

Its rules, all here:

* a map is known by its file's identity and the range it maps: ``(st_dev, st_ino, first byte
  mapped, end)``; it is used only for a file opened by this read that is the same inode and still
  at least as long as the window (the caller checks the length it found with ``fstat``: a file that
  shrank is its FileChangedError, and the maps of that inode past the new length are dropped,
  :meth:`MapUse.shrank`); a replaced file (a new inode) never finds the old map;
* at most ``max_bytes`` are mapped at once: a window that does not fit, once the maps the running
  read has not used are closed, is mapped and closed as without the cache (:meth:`MapUse.window`
  says so);
* a read's maps are released when it is done with them, and at its end (:meth:`MapUse.done`) the
  maps it did not use are closed unless they are of a file it planned, unchanged (the same inode, as
  long) and not overlapped by a window it used: a segment deleted by retention (or replaced, cut
  shorter, grown past the old window, left out by the read's bounds) is not held past the next
  read, while a read that maps nothing of those files (a view read of values, a limit met early)
  leaves the maps for the next (a view read between two reads of offsets unmapped and remapped the
  whole log: DuckDB's and Polars' reads of ``offset, timestamp`` ~1.2x as slow);
* a map in use by a decode (a pool thread's window) is never closed under it: closing one in use
  (dropped, evicted, or the cache closed) waits for its last user to let it go;
* :meth:`WindowMaps.close` (and the cache's finalizer, when its owner is collected) closes them all.

A file larger than a window is cut into windows where its batches start, found by a walk of its
batch headers (:func:`kafkarec.log.local.iter_windows`): a page fault at each batch (a broker's
1 GiB segments: some 7,000 a GiB of 150 KB batches, ~25 ms).  The cuts are kept too: the same file
(its inode, size and modification time unchanged, framed as strictly) is not walked again; a file
that changed in any of those is walked anew, and at most :data:`CUTS_KEPT` files' cuts are kept
(:meth:`MapUse.kept_cuts`, :meth:`MapUse.keep_cuts`).

The memory is the page cache's, mapped: it shows in the process's RSS as shared file pages, and
each GiB mapped costs ~2 MiB of page tables once faulted in (docs/engines.md).
"""
from __future__ import annotations

import itertools
import mmap
import os
import threading
import weakref
from typing import Callable, Dict, Iterable, List, Tuple

from kafkarec.log.storage import count_map_hit

__all__ = ["WindowMaps", "MapUse", "CUTS_KEPT"]

#: the most files whose window cuts a source keeps (a few ints each; the oldest go first)
CUTS_KEPT = 65536


class _Entry:
    """One window's map: ``(map, its first byte's file position)``, how many users hold it, the
    latest read that used it, and whether it is dropped (closed once its last user lets it go)."""
    __slots__ = ("key", "path", "mm", "at", "size", "pins", "last", "dropped")

    def __init__(self, key, path: str, mm, at: int, size: int, last: int):
        self.key, self.path, self.mm, self.at, self.size = key, path, mm, at, size
        self.pins, self.last, self.dropped = 1, last, False


def _close(mm) -> None:
    try:
        mm.close()
    except BufferError:     # a view still exported (an error's traceback): the collector unmaps it
        pass


class _State:
    """The maps and their lock: what the finalizer closes (it must not hold the cache itself)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.entries: Dict[tuple, _Entry] = {}
        self.mapped = 0         # bytes of the maps held (in use or not)
        self.peak = 0           # the most ever held at once
        self.closed = False
        self.reads = itertools.count(1)
        # (st_dev, st_ino) -> ((size, mtime_ns, strict, first byte, end, window bytes), [(start, end)])
        self.cuts: Dict[tuple, tuple] = {}

    def drop(self, entry: _Entry, out: List) -> None:
        """(Under the lock.) ``entry`` out of the cache: closed now (into ``out``, closed after the
        lock is let go) or, in use, by its last user."""
        if self.entries.get(entry.key) is entry:
            del self.entries[entry.key]
        if not entry.dropped:
            entry.dropped = True
            self.mapped -= entry.size
        if entry.pins == 0:
            out.append(entry.mm)

    def close_all(self) -> None:
        out: List = []
        with self.lock:
            self.closed = True
            for entry in list(self.entries.values()):
                self.drop(entry, out)
            self.cuts.clear()
        for mm in out:
            _close(mm)


class WindowMaps:
    """The maps of a source's windows kept open between its reads, at most ``max_bytes`` at once
    (see the module docstring).  Made by the scan of a config whose ``map_cache_bytes`` is above 0
    (:class:`kafkarec.scan.LogScan`: DuckDB's and Polars' sources), shared by its narrowed scans."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._state = _State(self.max_bytes)
        # closing the maps when the owner is gone (a source unregistered, a LazyFrame dropped)
        self._finalizer = weakref.finalize(self, self._state.close_all)

    def begin(self) -> "MapUse":
        """A read's use of the maps (one per read, :meth:`MapUse.done` at its end)."""
        return MapUse(self._state, next(self._state.reads))

    def close(self) -> None:
        """Every map closed (those in use when their users let them go); later reads map their
        windows as without the cache."""
        self._finalizer()

    @property
    def mapped_bytes(self) -> int:
        """The bytes of the maps held now."""
        return self._state.mapped

    @property
    def peak_bytes(self) -> int:
        """The most bytes held at once since it was made."""
        return self._state.peak

    def __len__(self) -> int:
        return len(self._state.entries)

    def held(self) -> List[Tuple[str, int, int, int]]:
        """``(path, inode, first byte mapped, end)`` of each map held, in no order (what a test or
        a diagnosis asks: which files' windows stay mapped)."""
        with self._state.lock:
            return [(e.path, e.key[1], e.at, e.key[3]) for e in self._state.entries.values()]

    def __reduce__(self):
        raise TypeError("WindowMaps holds this process's maps: it is not pickled (a scan leaves it behind)")


class MapUse:
    """One read's use of a :class:`WindowMaps` (see the module docstring)."""
    __slots__ = ("_state", "_read")

    def __init__(self, state: _State, read: int):
        self._state, self._read = state, read

    def window(self, fileno: int, st, start: int, end: int, path: str,
               map_window: Callable[[int, int, int, str], Tuple[object, int]]):
        """``(map, its first byte's file position, release)`` of bytes ``[start, end)`` of the open
        file ``fileno`` (``path``; ``st``: its ``fstat``, its size at least ``end``): the map the
        cache holds for that inode and range (counted, :func:`kafkarec.log.storage.count_map_hit`),
        or one made by ``map_window(fileno, start, end, path)`` and kept when it fits.  ``release()`` lets the map go once decoded (a map not kept is closed then)."""
        state = self._state
        at = start - start % mmap.ALLOCATIONGRANULARITY
        key = (st.st_dev, st.st_ino, at, end)
        with state.lock:
            entry = state.entries.get(key)
            if entry is not None:
                entry.pins += 1
                entry.last = max(entry.last, self._read)
        if entry is not None:
            count_map_hit(end - start, path)
            return entry.mm, entry.at, lambda: self._release(entry)
        mm, at = map_window(fileno, start, end, path)
        size = end - at
        out: List = []
        kept = None
        with state.lock:
            if not state.closed and key not in state.entries and size <= state.max_bytes:
                if state.mapped + size > state.max_bytes:
                    # the maps no running read used since this one began: oldest read first
                    for old in sorted((e for e in state.entries.values() if e.pins == 0 and e.last < self._read),
                                      key=lambda e: e.last):
                        state.drop(old, out)
                        if state.mapped + size <= state.max_bytes:
                            break
                if state.mapped + size <= state.max_bytes:
                    kept = state.entries[key] = _Entry(key, path, mm, at, size, self._read)
                    state.mapped += size
                    state.peak = max(state.peak, state.mapped)
        for old in out:
            _close(old)
        if kept is None:
            return mm, at, lambda: _close(mm)
        return mm, at, lambda: self._release(kept)

    def _release(self, entry: _Entry) -> None:
        state = self._state
        with state.lock:
            entry.pins -= 1
            last_user = entry.pins == 0 and entry.dropped
        if last_user:
            _close(entry.mm)

    def kept_cuts(self, path: str, shape: tuple):
        """``(stamp, cuts)``: the window cuts ``(start, end)`` the source kept of the file ``path``
        for ``shape`` (how it is framed and cut: strict, the slice's first byte and end, the
        window's bytes) if it did not change since (its inode, size and modification time), else
        None; ``stamp``, what :meth:`keep_cuts` keeps them under."""
        state = self._state
        st = os.stat(path)
        key, known = (st.st_dev, st.st_ino), (st.st_size, st.st_mtime_ns) + tuple(shape)
        with state.lock:
            kept = state.cuts.get(key)
        return (key, known), (kept[1] if kept is not None and kept[0] == known else None)

    def keep_cuts(self, path: str, stamp: tuple, cuts: List[Tuple[int, int]]) -> None:
        """``cuts`` of the file ``path``, walked since :meth:`kept_cuts` gave ``stamp``, kept for the
        next read unless the file changed meanwhile."""
        state = self._state
        key, known = stamp
        try:
            st = os.stat(path)
        except OSError:
            return
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != key + known[:2]:
            return
        with state.lock:
            if not state.closed:
                state.cuts.pop(key, None)
                while len(state.cuts) >= CUTS_KEPT:
                    del state.cuts[next(iter(state.cuts))]
                state.cuts[key] = (known, list(cuts))

    def shrank(self, st, size: int) -> None:
        """The file of ``st`` is ``size`` bytes now, shorter than planned: its maps past that
        dropped (a map past the end of its file kills the reader with SIGBUS when touched)."""
        state = self._state
        out: List = []
        with state.lock:
            for entry in [e for e in state.entries.values()
                          if e.key[:2] == (st.st_dev, st.st_ino) and e.key[3] > size]:
                state.drop(entry, out)
        for mm in out:
            _close(mm)

    def done(self, planned: Iterable[str] = ()) -> None:
        """The read is over; ``planned``: the paths of the files it planned to read.  A map it did
        not use is closed unless its file is one the read planned, still that inode and at least as
        long as the map, and no map of that file the read used overlaps it: a window of a segment
        deleted (retention), replaced or cut shorter since, or of a segment the read's bounds left
        out, is not held past the read, nor the old window of a segment that grew (its end moved);
        the windows of a read that took no map (a view read of values, a read stopped by a limit)
        stay for the next."""
        state = self._state
        with state.lock:
            unused = [e for e in state.entries.values() if e.last < self._read]
            used: Dict[tuple, list] = {}
            for e in state.entries.values():
                if e.last >= self._read:
                    used.setdefault(e.key[:2], []).append((e.at, e.key[3]))
        if not unused:
            return
        sizes: Dict[tuple, int] = {}
        for path in set(planned):
            try:
                st = os.stat(path)
            except OSError:         # (not a local file: a listed range of an object store)
                continue
            sizes[(st.st_dev, st.st_ino)] = st.st_size
        out: List = []
        with state.lock:
            for e in unused:
                if e.dropped or e.last >= self._read:       # (used meanwhile by a later read)
                    continue
                size = sizes.get(e.key[:2])
                if size is not None and e.key[3] <= size and \
                        not any(a < e.key[3] and e.at < b for a, b in used.get(e.key[:2], ())):
                    continue
                state.drop(e, out)
        for mm in out:
            _close(mm)
