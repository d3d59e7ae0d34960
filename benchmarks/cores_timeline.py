"""Where a many-partition read's wall time goes on many cores (issue 68/80's 16-core row): the
decode pool's timeline (the planner's cuts, each window's open and decode, the consumer's waits)
of ``LogScan(...).to_table()``, against the same windows decoded by plain threads (``iter_arrow``
over each segment, mapped or in memory) and by one process a partition.

    python benchmarks/cores_timeline.py WORKDIR [--partitions 16] [--records 400000] [--threads 16]
        [--repeats 3] [--quick] [--kept] [--fresh] [--prestart] [--switch S]

WORKDIR is bench_cores.py's (its ``log`` folder is written when missing).  Best of ``--repeats``:

* ``LogScan.to_table``: a new scan each time (each window mapped, decoded, unmapped), as bench_cores.py;
* ``--kept``: also one scan read again and again with its windows' maps kept (``map_cache_bytes``);
* ``threads, mapped``: one plain thread a partition, ``iter_arrow`` over each segment's map;
* ``threads, each file read first (timed)``: the same over each segment read into memory first;
* ``procs, mapped``: one new (forked) process a partition doing the same, timed from a start signal
  (bench_cores.py's ``procs`` reuses a pool of processes from repeat to repeat instead);

without ``--quick`` (the LogScan rows alone).  Then one read's timeline (the planner's cuts, each
window's submission and decode, the consumer's waits; each chunk's decode and the offset-order
rule's pass summed).  Diagnoses, not settings kafkarec has: ``--fresh`` starts new decode threads
at every read (as the pool did before it kept its threads between reads, ``kafkarec.scan._threads``),
``--prestart`` starts all of them before the first window is handed out, ``--switch`` sets
``sys.setswitchinterval``.  The timeline ends with when each thread's last window ended (how long the
first one to end was idle while the last finished: the read's tail, issue 80).
docs/performance.md ("Sixteen cores") has what they showed.
"""
from __future__ import annotations

import argparse
import glob
import mmap
import multiprocessing as mp
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

COLUMNS = ["offset", "timestamp", "key", "value"]


def segments(log):
    return [sorted(glob.glob(os.path.join(p, "*.log"))) for p in sorted(glob.glob(os.path.join(log, "*")))
            if os.path.isdir(p)]


def decode_file(path, in_memory):
    from kafkarec import iter_arrow
    with open(path, "rb") as f:
        if in_memory:
            data = f.read()
            t0 = time.perf_counter()
            n = sum(rb.num_rows for rb in iter_arrow(data, columns=COLUMNS, max_rows=131072))
            return n, time.perf_counter() - t0
        t0 = time.perf_counter()
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        n = sum(rb.num_rows for rb in iter_arrow(mm, columns=COLUMNS, max_rows=131072))
        del mm
        return n, time.perf_counter() - t0


def threads_run(segs, in_memory):
    """One thread a partition, each decoding its segments; wall from the first start to the last end."""
    out = [None] * len(segs)

    def one(i):
        t0 = time.perf_counter()
        n = 0
        for s in segs[i]:
            n += decode_file(s, in_memory)[0]
        out[i] = (n, t0, time.perf_counter())
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(segs))]
    start = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(o[0] for o in out), time.perf_counter() - start


def _proc(paths, q, go):
    import kafkarec  # noqa: F401  (imported before the start signal)
    from kafkarec import iter_arrow  # noqa: F401
    go.wait()
    t0 = time.perf_counter()
    n = sum(decode_file(p, False)[0] for p in paths)
    q.put((n, time.perf_counter() - t0))


def procs_run(segs):
    ctx = mp.get_context("fork")
    q, go = ctx.Queue(), ctx.Event()
    ps = [ctx.Process(target=_proc, args=(s, q, go)) for s in segs]
    for p in ps:
        p.start()
    time.sleep(1.0)
    start = time.perf_counter()
    go.set()
    res = [q.get() for _ in ps]
    wall = time.perf_counter() - start
    for p in ps:
        p.join()
    return sum(r[0] for r in res), wall, max(r[1] for r in res)


def timed(fn, record):
    """``fn`` with each call's arguments, start and end given to ``record(args, t0, t1)``."""
    def wrapper(*args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            record(args, t0, time.perf_counter())
    return wrapper


def timed_items(gen_fn, record):
    """``gen_fn``'s generators with the wait for each item given to ``record(t0, t1)``."""
    def wrapper(*args):
        it = gen_fn(*args)
        while True:
            t0 = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                return
            record(t0, time.perf_counter())
            yield item
    return wrapper


def _name(piece) -> str:
    return os.path.basename(os.path.dirname(getattr(piece, "path", "?") or "?"))


def timeline(log, threads):
    """LogScan(...).to_table() with the pool's events timed: a list of (what, thread, start, end)."""
    from kafkarec.scan import LogScan, _order, _pool, _read
    events, chunks = [], []
    lock = threading.Lock()
    t_zero = [0.0]

    def note(what, t0, t1):
        with lock:
            events.append((what, threading.current_thread().name, t0 - t_zero[0], t1 - t_zero[0]))

    def chunk(kind, t0, t1):
        with lock:
            chunks.append((kind, t0, t1))

    patches = [
        (_read.Read, "decode", lambda f: timed_items(f, lambda t0, t1: chunk("chunk", t0, t1))),
        (_order.OffsetOrder, "seen", lambda f: timed(f, lambda a, t0, t1: chunk("seen", t0, t1))),
        (_read.Read, "cut", lambda f: timed(f, lambda a, t0, t1: note("cut " + _name(a[1]), t0, t1))),
        (_pool.DecodePool, "_work", lambda f: timed(f, lambda a, t0, t1: note("window " + _name(a[1]), t0, t1))),
        (_pool.DecodePool, "_submit", lambda f: timed(f, lambda a, t0, t1: note("submit " + _name(a[1]), t0, t1))),
        (_pool.DecodePool, "readings", lambda f: timed_items(f, lambda t0, t1: note("consumer waits", t0, t1))),
    ]
    originals = [(cls, name, getattr(cls, name)) for cls, name, _ in patches]
    for cls, name, wrap in patches:
        setattr(cls, name, wrap(getattr(cls, name)))
    try:
        t_zero[0] = time.perf_counter()
        table = LogScan(log, columns=COLUMNS, threads=threads).to_table()
        wall = time.perf_counter() - t_zero[0]
    finally:
        for cls, name, fn in originals:
            setattr(cls, name, fn)
    for kind in ("chunk", "seen"):
        ds = sorted(t1 - t0 for k, t0, t1 in chunks if k == kind)
        if ds:
            events.append((f"{kind}s: {len(ds)}, median {ds[len(ds) // 2] * 1e3:.2f} ms, max {ds[-1] * 1e3:.2f} ms, "
                           f"sum {sum(ds) * 1e3:.1f} ms", "-", 0.0, 0.0))
    return table.num_rows, wall, events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--records", type=int, default=400000)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--switch", type=float, default=None, help="sys.setswitchinterval (diagnosis)")
    ap.add_argument("--quick", action="store_true", help="the LogScan rows only")
    ap.add_argument("--kept", action="store_true", help="also a scan whose maps stay open between reads")
    ap.add_argument("--fresh", action="store_true", help="(diagnosis) new decode threads at every read")
    ap.add_argument("--prestart", action="store_true", help="the decode pool's threads started before its work")
    a = ap.parse_args()
    from kafkarec.scan import _pool
    if a.fresh:
        import concurrent.futures as cf
        _pool.LentThreads = cf.ThreadPoolExecutor       # new threads at every read, as before 2026-11-30
    if a.prestart:
        base = _pool.LentThreads

        class Prestarted(base):
            def __init__(self, n, thread_name_prefix=""):
                super().__init__(n, thread_name_prefix=thread_name_prefix)
                if thread_name_prefix == "kafkarec-decode":
                    gate, started = threading.Event(), threading.Semaphore(0)

                    def hold():
                        started.release()
                        gate.wait()
                    fs = [self.submit(hold) for _ in range(n)]
                    for _ in range(n):
                        started.acquire()
                    gate.set()
                    for f in fs:
                        f.result()
        _pool.LentThreads = Prestarted
    if a.switch:
        sys.setswitchinterval(a.switch)
    log = os.path.join(a.workdir, "log")
    if not os.path.isdir(log):
        from bench_cores import write
        write(a.workdir, a.partitions, a.records, "none")
    segs = segments(log)
    rows = 0
    from kafkarec.scan import LogScan
    for _ in range(2):
        LogScan(log, columns=COLUMNS, threads=a.threads).to_table()
    best = {}
    if a.kept:
        kept = LogScan(log, columns=COLUMNS, threads=a.threads, map_cache_bytes=8 << 30)
        kept.to_table()
        kept.to_table()
    for r in range(a.repeats):
        t0 = time.perf_counter()
        n = LogScan(log, columns=COLUMNS, threads=a.threads).to_table().num_rows
        best["LogScan.to_table"] = min(best.get("LogScan.to_table", 9), time.perf_counter() - t0)
        if a.kept:
            t0 = time.perf_counter()
            kept.to_table()
            best["LogScan.to_table, maps kept"] = min(best.get("LogScan.to_table, maps kept", 9),
                                                       time.perf_counter() - t0)
        rows = n
        if a.quick:
            continue
        n2, w = threads_run(segs, False)
        best["threads, mapped"] = min(best.get("threads, mapped", 9), w)
        _n3, w = threads_run(segs, True)
        best["threads, each file read first (timed)"] = min(best.get("threads, each file read first (timed)", 9), w)
        n4, w, _inner = procs_run(segs)
        best["procs, mapped"] = min(best.get("procs, mapped", 9), w)
        assert n == n2 == n4, (n, n2, n4)
    print(f"{len(segs)} partitions, {rows} rows, {a.threads} threads; best of {a.repeats}")
    for k, v in best.items():
        print(f"  {k:40s} {v * 1e3:8.1f} ms  {rows / v / 1e6:8.1f} M rows/s")
    n, wall, events = timeline(log, a.threads)
    print(f"timeline of one LogScan.to_table(): {wall * 1e3:.1f} ms")
    ends = sorted(max(t1 for what, th2, _t0, t1 in events if th2 == th and what.startswith("window "))
                  for th in {th for what, th, _t0, _t1 in events if what.startswith("window ")})
    windows = sum(1 for e in events if e[0].startswith("window "))
    print(f"  {windows} windows; each thread's last window ends at (ms): {', '.join(f'{e * 1e3:.1f}' for e in ends)} "
          f"(the first thread to end idle {(ends[-1] - ends[0]) * 1e3:.1f} ms before the last ends)")
    for what, th, t0, t1 in sorted(events, key=lambda e: e[2]):
        print(f"  {t0 * 1e3:7.1f} {t1 * 1e3:7.1f} {(t1 - t0) * 1e3:6.1f} ms  {th:28s} {what}")


if __name__ == "__main__":
    main()
