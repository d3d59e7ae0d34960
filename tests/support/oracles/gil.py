"""Whether a call lets go of Python's lock: another thread ticks every 0.5 ms while it runs, and the
longest the ticker waited is the longest stretch the call held the lock (a call that holds it
throughout makes the ticker wait about as long as the call)."""
from __future__ import annotations

import threading
import time
from typing import Callable, List


def _ticks(done: threading.Event, gaps: list) -> None:
    last = time.perf_counter()
    while not done.is_set():
        time.sleep(0.0005)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


def longest_waits(call: Callable[[], object], under: float, tries: int = 5) -> List[float]:
    """The ticker's longest wait during each ``call()``, up to ``tries`` calls, stopping at the
    first under ``under`` seconds (a loaded machine may stall a thread anyway: the test asserts on
    the least of them)."""
    waits: List[float] = []
    while len(waits) < tries and not (waits and min(waits) < under):
        done, gaps = threading.Event(), []
        ticker = threading.Thread(target=_ticks, args=(done, gaps))
        ticker.start()
        try:
            time.sleep(0.01)
            call()
        finally:
            done.set()
            ticker.join()
        waits.append(max(gaps))
    return waits


def assert_lets_go(timed: Callable[[], float], share: int) -> None:
    """``timed()`` (a call that returns the seconds of the part under test) lets another thread
    run: the ticker's least longest wait over a few calls is under ``1/share`` of the call alone
    (best of two)."""
    alone = min(timed() for _ in range(2))
    stalls = longest_waits(timed, alone / share)
    assert min(stalls) < alone / share, (stalls, alone)


def assert_column_decode_lets_go(decoder, values, writer_ids, body_offsets, share: int = 6) -> None:
    """A typed decoder's ``decode(values, writer_ids, body_offsets)`` of a column that decodes without
    errors lets another thread run (:func:`assert_lets_go`)."""
    def decode() -> float:
        started = time.perf_counter()
        _rows, errors = decoder.decode(values, writer_ids, body_offsets)
        assert errors.null_count == len(values)
        return time.perf_counter() - started
    assert_lets_go(decode, share)
