#!/usr/bin/env python
"""Instructions per record of the hot paths, an earlier commit against the checkout,
counted by ``valgrind --tool=callgrind`` (the same count whatever else the machine does).

    .venv/bin/python benchmarks/count_instructions.py --ref e360790      # ~3 minutes

The earlier commit is built as in ``bench_before_after.py`` (a worktree under
``.cache/bench-ref-<sha>``).  10 batches of 1000 records (16-byte keys, 100-byte values,
every other batch with one header per record) are written once; each measure runs in a
child under callgrind with 1 and with ``--runs`` + 1 repetitions, and the difference
(start-up, imports and the first call cancel out) is divided by the records handled:

* ``fields`` - ``iter_batches`` and every field of every record;
* ``append`` - ``RecordBatchBuilder.append`` record by record;
* ``bulk`` - ``build_batch`` from lists;
* ``meta`` - ``iter_arrow(columns=["offset", "timestamp"])``, the meta-only walk (the Arrow
  columns of two int64 and what a chunk costs, no key, value or header read past its length);
* ``rows`` - ``iter_arrow(data)``, every record whole into Arrow columns (the full decode's loop,
  run without the GIL for these batches of more than 16 KiB; the chunks not concatenated);
* ``kv`` - ``iter_arrow(columns=["offset", "timestamp", "key", "value"])``, the columns analysts
  select (no header column built);
* ``views`` - ``LogScan(columns=["key", "value"], value_layout="view", threads=1)`` over the same
  batches as a segment of a log dir: DuckDB's whole rows (each key and value copied out of the
  segment's map and viewed, no header column built); the scan's own set-up cancels out as the
  interpreter's does;
* ``viewrows`` - ``LogScan(value_layout="view", threads=1)`` over the segment: a whole row in the
  view layout (Polars' ``scan_log`` of every column, DuckDB's ``SELECT *``);
* ``scan`` - ``LogScan(columns=["offset", "timestamp", "key", "value"], threads=1)`` over the
  segment: ``shared/bench/scale.py``'s reader of whole rows (the classic layout, each key and value
  copied out of the segment's map);
* ``viewed`` - ``iter_arrow(columns=["key", "value"], value_layout="view")`` of the bytes in memory:
  long keys and values viewed where they are, not copied;
* ``offsets`` - ``to_arrow(decode="consumer_offsets")`` of 10000 ``__consumer_offsets`` records as
  ``bench_internal.py`` makes them, less ``to_arrow`` of the same bytes: the typed-column step alone.

``to_arrow`` alone is not counted: pyarrow's own threads make its count differ from run to
run by more than the code under test; time it with ``bench_before_after.py``.  (numpy's
OpenBLAS threads are held to one: their spinning was counted otherwise.)
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RECORDS = 10_000

CHILD = r"""
import gc, sys
gc.disable()          # a collection landing in one run but not the other would count
# (and pyarrow allocates with malloc: jemalloc's background purging is not repeatable)
sys.path.insert(0, sys.argv[1])
import kafkarec
assert kafkarec.__file__.startswith(sys.argv[1]), kafkarec.__file__
mode, n, data_file = sys.argv[2], int(sys.argv[3]), sys.argv[4]
data = open(data_file, "rb").read()
vals = [b"x" * 100] * 1000
keys = [b"k" * 16] * 1000
for _ in range(n):
    if mode == "fields":
        for b in kafkarec.iter_batches(data):
            for r in b:
                r.offset, r.timestamp, r.key, r.value, r.headers
    elif mode == "meta":
        for rb in kafkarec.iter_arrow(data, columns=["offset", "timestamp"]):
            pass
    elif mode == "rows":
        for rb in kafkarec.iter_arrow(data):
            pass
    elif mode == "kv":
        for rb in kafkarec.iter_arrow(data, columns=["offset", "timestamp", "key", "value"]):
            pass
    elif mode == "to_arrow":
        kafkarec.to_arrow(data)
    elif mode == "viewed":
        for rb in kafkarec.iter_arrow(data, columns=["key", "value"], value_layout="view"):
            pass
    elif mode == "views":
        from kafkarec.scan import LogScan
        LogScan(sys.argv[5], columns=["key", "value"], value_layout="view", threads=1).to_table()
    elif mode == "viewrows":
        from kafkarec.scan import LogScan
        LogScan(sys.argv[5], value_layout="view", threads=1).to_table()
    elif mode == "scan":
        from kafkarec.scan import LogScan
        LogScan(sys.argv[5], columns=["offset", "timestamp", "key", "value"], threads=1).to_table()
    elif mode == "offsets":
        kafkarec.to_arrow(data, decode="consumer_offsets")
    else:
        for i in range(10):
            if mode == "append":
                b = kafkarec.RecordBatchBuilder(base_offset=i * 1000)
                for v, k in zip(vals, keys):
                    b.append(v, key=k, timestamp=1_700_000_000_000)
                b.build()
            else:
                kafkarec.build_batch(vals, keys=keys, timestamps=[1_700_000_000_000] * 1000,
                                     base_offset=i * 1000)
"""


def _count(tree: str, mode: str, n: int, data_file: str, script: str) -> int:
    log_dir = os.path.join(os.path.dirname(data_file), "log")     # (the same batches, a segment)
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, script,
         tree, mode, str(n), data_file, log_dir], capture_output=True, text=True, check=True,
        cwd=tempfile.gettempdir(), env=dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1",
                                                 OMP_NUM_THREADS="1",
                                                 ARROW_DEFAULT_MEMORY_POOL="system"))
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise SystemExit(f"callgrind printed no count:\n{out.stderr[-2000:]}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", required=True, help="the earlier commit (any git revision)")
    ap.add_argument("--runs", type=int, default=4, help="repetitions counted (after one)")
    ap.add_argument("--modes", default="fields,append,bulk,offsets,meta",
                    help="which measures, comma-separated")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (Debian: apt-get install valgrind)")
    sys.path.insert(0, HERE)
    from bench_before_after import _worktree
    trees = {"before": _worktree(args.ref), "after": REPO}
    sys.path.insert(0, REPO)
    import kafkarec
    with tempfile.TemporaryDirectory() as tmp:
        data_file = os.path.join(tmp, "batches.bin")
        with open(data_file, "wb") as fh:
            for i in range(10):
                fh.write(kafkarec.build_batch(
                    [b"v" * 100] * 1000, keys=[b"k" * 16] * 1000,
                    timestamps=list(range(1_700_000_000_000, 1_700_000_001_000)),
                    headers=[[("h", b"x")]] * 1000 if i % 2 else None, base_offset=i * 1000))
        os.makedirs(os.path.join(tmp, "log", "records-0"))
        shutil.copyfile(data_file, os.path.join(tmp, "log", "records-0", "00000000000000000000.log"))
        script = os.path.join(tmp, "child.py")
        with open(script, "w") as fh:
            fh.write(CHILD)
        print(f"instructions per record, {args.ref} -> the checkout (callgrind, {args.runs} runs "
              f"of {RECORDS} records)")
        offsets_file = os.path.join(tmp, "offsets.bin")
        from bench_internal import build_partition
        with open(offsets_file, "wb") as fh:
            fh.write(build_partition(RECORDS))

        def per_record(tree, mode, data):
            one = _count(tree, mode, 1, data, script)
            more = _count(tree, mode, args.runs + 1, data, script)
            return (more - one) / (args.runs * RECORDS)
        for mode in args.modes.split(","):
            per = {}
            for name, tree in trees.items():
                if mode == "offsets":
                    per[name] = (per_record(tree, "offsets", offsets_file)
                                 - per_record(tree, "to_arrow", offsets_file))
                else:
                    per[name] = per_record(tree, mode, data_file)
            print(f"  {mode:9} {per['before']:8.0f} -> {per['after']:8.0f}   "
                  f"({per['after'] / per['before']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
