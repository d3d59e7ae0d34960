"""Planning a read of many small partitions: seconds and driver memory, local and on S3.

    .venv/bin/python benchmarks/bench_planning.py                       # 1k, 5k, 10k partitions
    .venv/bin/python benchmarks/bench_planning.py --partitions 1000,10000 --no-s3
    .venv/bin/python benchmarks/bench_planning.py --large-segment 2     # peak RSS of one 2 GiB segment

A log directory of ``N`` partitions (topic ``events``), ``--segments`` segments each
(one batch of 10 records of 100 bytes: about 1.7 kB), with an empty ``.index`` and
``.timeindex`` beside every segment, as a broker leaves a small rolled segment.  The same
directory is planned:

* local: the data source's planner (:func:`spark_udfs.read.datasource.plan`) on the local path
  (:func:`kafkarec.log.directory.find_segment_files`, cut by :mod:`kafkarec.log.local`);
* remote: the same planner on a SeaweedFS S3 server on 127.0.0.1 (tests/support/servers/s3server.py): one
  recursive listing (:mod:`kafkarec.log.layout`), then :mod:`spark_udfs.read.planning`.

Reported per size: planning seconds (median of ``--runs``), seconds per 1,000 partitions,
tasks, listing requests (remote), the peak of Python memory allocated while planning
(tracemalloc, a separate run), the process's peak RSS while planning (VmHWM, reset before
a run) and the pickled size of all tasks (what goes to the JVM).
Default parallelism 2 (``local[2]``), Spark's defaults otherwise (128 MiB, 4 MiB).
"""
from __future__ import annotations

import argparse
import os
import pickle
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

RECORDS_PER_SEGMENT = 10


def segment_bytes(index: int, records: int = RECORDS_PER_SEGMENT, value_size: int = 100) -> bytes:
    """Segment number ``index`` of a partition: one v2 batch at offset ``index * records``
    (kafkarec's bulk builder; the bytes are the same in every partition)."""
    import kafkarec
    base = index * records
    return kafkarec.build_batch([b"v" * value_size] * records, keys=[b"k%07d" % i for i in range(records)],
                                timestamps=[1_700_000_000_000 + base + i for i in range(records)],
                                offsets=list(range(base, base + records)))


def layout_files(partitions: int, segments: int, *, topic: str = "events", side_files: bool = True):
    """``(relative path, bytes)`` of every file of the log directory."""
    logs = [segment_bytes(s) for s in range(segments)]
    for p in range(partitions):
        for s, data in enumerate(logs):
            name = f"{topic}-{p}/{s * RECORDS_PER_SEGMENT:020d}"
            yield name + ".log", data
            if side_files:
                yield name + ".index", b""
                yield name + ".timeindex", b""


def write_local(root: str, partitions: int, segments: int, **kw) -> int:
    n = 0
    made = set()
    for rel, data in layout_files(partitions, segments, **kw):
        folder = os.path.join(root, rel.split("/")[0])
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        with open(os.path.join(root, rel), "wb") as fh:
            fh.write(data)
        n += 1
    return n


def write_s3(fs, bucket: str, partitions: int, segments: int, *, threads: int = 16, **kw) -> int:
    """Upload the log directory to ``s3://bucket/`` through ``fs`` (pyarrow S3FileSystem)."""
    fs.create_dir(bucket)

    def put(item):
        rel, data = item
        with fs.open_output_stream(f"{bucket}/{rel}") as out:
            out.write(data)
    with ThreadPoolExecutor(threads) as pool:
        return sum(1 for _ in pool.map(put, layout_files(partitions, segments, **kw)))


class CountingHandler:
    """A pyarrow file system handler that counts listings and opens, delegating to ``fs``."""

    def __new__(cls, fs):
        import pyarrow.fs as pafs

        class _Handler(pafs.FileSystemHandler):
            def __init__(self, inner):
                self.fs = inner
                self.calls = {"list": 0, "info": 0, "open": 0}

            def __eq__(self, other):
                return self is other

            def __ne__(self, other):
                return self is not other

            def get_type_name(self):
                return "counting"

            def normalize_path(self, path):
                return self.fs.normalize_path(path)

            def get_file_info(self, paths):
                self.calls["info"] += len(paths)
                return self.fs.get_file_info(paths)

            def get_file_info_selector(self, selector):
                self.calls["list"] += 1
                return self.fs.get_file_info(selector)

            def open_input_file(self, path):
                self.calls["open"] += 1
                return self.fs.open_input_file(path)

            def open_input_stream(self, path):
                self.calls["open"] += 1
                return self.fs.open_input_stream(path)

            def create_dir(self, path, recursive):
                raise NotImplementedError

            def delete_dir(self, path):
                raise NotImplementedError

            def delete_dir_contents(self, path, missing_dir_ok=False):
                raise NotImplementedError

            def delete_root_dir_contents(self):
                raise NotImplementedError

            def delete_file(self, path):
                raise NotImplementedError

            def move(self, src, dest):
                raise NotImplementedError

            def copy_file(self, src, dest):
                raise NotImplementedError

            def open_output_stream(self, path, metadata):
                raise NotImplementedError

            def open_append_stream(self, path, metadata):
                raise NotImplementedError
        return _Handler(fs)


def counting_resolve(counters: list):
    """A stand-in for :func:`kafkarec.log.storage.resolve` whose storages count what they
    ask of the file system (one :class:`CountingHandler` per resolve, kept in ``counters``)."""
    import pyarrow.fs as pafs
    from kafkarec.log import storage
    real = storage.resolve

    def resolve(uri, options=None):
        st, path = real(uri, options)
        handler = CountingHandler(st.fs)
        counters.append(handler)
        return storage.Storage(pafs.PyFileSystem(handler), st.prefix), path
    return resolve


def plan(path: str, options: dict, parallelism: int):
    """The data source's tasks for a read of ``path`` (a local path or a URI) with ``options``."""
    from spark_udfs.read import datasource as _datasource
    from spark_udfs.read.spec import read_spec
    spec, config = _datasource.batch_read(read_spec({"path": path, **options}))
    return _datasource.plan(spec, config, default_parallelism=parallelism)


def measure(plan, runs: int) -> dict:
    times, tasks = [], None
    for _ in range(runs):
        t = time.perf_counter()
        tasks = plan()
        times.append(time.perf_counter() - t)
    tasks = None
    _reset_peak_rss()
    tasks = plan()
    peak_rss = _rss_kib("VmHWM")
    tasks = None
    tracemalloc.start()
    tasks = plan()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": statistics.median(times), "runs": times, "tasks": len(tasks),
            "peak_mib": peak / 2**20, "peak_rss_mib": peak_rss / 1024, "pickled_mib": len(pickle.dumps(tasks, protocol=5)) / 2**20}


# -- one large segment: what a task holds in memory -----------------------------------------

def write_large_segment(path: str, size_bytes: int) -> int:
    """A segment of about ``size_bytes``: one v2 batch (1000 records of 100 B, kafkarec's bulk
    builder) repeated with increasing base offsets (kafkarec.restamp).  Returns the records."""
    import kafkarec
    template = bytearray(kafkarec.build_batch([b"v" * 100] * 1000,
                                              keys=[b"k%015d" % i for i in range(1000)],
                                              timestamps=[1_700_000_000_000] * 1000))
    batches = max(1, size_bytes // len(template))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        block = bytearray()
        for i in range(batches):
            kafkarec.restamp(template, 0, base_offset=i * 1000)
            block += template
            if len(block) >= 32 << 20:
                fh.write(block)
                block = bytearray()
        fh.write(block)
    return batches * 1000


def _rss_kib(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> None:
    """Linux: start the process's RSS high-water mark (VmHWM) afresh (proc(5), clear_refs)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def read_one_task(options: dict) -> dict:
    """Plan a read as the data source does with ``options`` and run its tasks here, one
    after the other, the way an executor's Python worker runs them: the peak RSS while
    reading (the high-water mark, reset after planning: Spark plans in another process),
    rows, seconds; and the peak while planning."""
    import pyarrow as pa
    from spark_udfs.read import datasource as _datasource
    ds = _datasource.KafkaRecDataSource(options)
    schema = ds.schema()
    reader = ds.reader(schema)
    tasks = reader.partitions()
    planning_peak = _rss_kib("VmHWM")
    rows = 0
    _reset_peak_rss()
    before = _rss_kib()
    t = time.perf_counter()
    for task in tasks:
        for rb in reader.read(task):
            # what Spark's worker does with each batch: write it to the JVM as Arrow IPC
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, rb.schema) as w:
                w.write_batch(rb)
            rows += rb.num_rows
    seconds = time.perf_counter() - t
    return {"tasks": len(tasks), "rows": rows, "seconds": seconds, "rss_before_mib": before / 1024,
            "peak_rss_mib": _rss_kib("VmHWM") / 1024, "planning_peak_rss_mib": planning_peak / 1024}


def large_segment(args) -> int:
    """``--large-segment GiB``: one segment that size, read as one task (maxPartitionBytes
    above its size) locally and from SeaweedFS, each in a fresh process; deleted after."""
    import json
    import subprocess
    folder = os.path.join(args.data, "large", "big-0")
    path = os.path.join(folder, f"{0:020d}.log")
    t = time.perf_counter()
    records = write_large_segment(path, int(args.large_segment * (1 << 30)))
    size = os.path.getsize(path)
    print(f"{path}: {size / 2**30:.2f} GiB, {records} records ({time.perf_counter() - t:.1f} s to write)",
          flush=True)
    one_task = {"maxPartitionBytes": str(size + (1 << 20))}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    s3 = None
    try:
        runs = [("local, one task", {"path": path, **one_task}),
                ("local, Spark's default split", {"path": path})]
        if not args.no_s3:
            from support.servers.s3server import S3Server
            s3 = S3Server(startup_timeout=60).start()
            fs = s3.filesystem()
            fs.create_dir("large")
            t = time.perf_counter()
            with open(path, "rb") as src, fs.open_output_stream("large/big-0/" + os.path.basename(path)) as dst:
                shutil.copyfileobj(src, dst, 16 << 20)
            print(f"uploaded to SeaweedFS in {time.perf_counter() - t:.1f} s", flush=True)
            runs.append(("s3, one task", {"path": "s3://large", **s3.options(), **one_task}))
        for name, options in runs:
            out = subprocess.run([sys.executable, __file__, "--read-task", json.dumps(options)],
                                 env=env, check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            assert r["rows"] == records, (r, records)
            print(f"  {name:<30} {r['tasks']:3d} task(s) {r['rows']:,} rows in {r['seconds']:.1f} s, "
                  f"RSS before reading {r['rss_before_mib']:.0f} MiB, peak while reading "
                  f"{r['peak_rss_mib']:.0f} MiB (planning: peak {r['planning_peak_rss_mib']:.0f} MiB)",
                  flush=True)
    finally:
        shutil.rmtree(os.path.join(args.data, "large"), ignore_errors=True)
        if s3 is not None:
            s3.stop()
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", default="1000,5000,10000")
    ap.add_argument("--segments", type=int, default=2, help="segments per partition")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--no-s3", action="store_true")
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "kafkarec-bench-planning"))
    ap.add_argument("--large-segment", type=float, default=None, metavar="GIB",
                    help="instead: peak RSS of reading one segment of GIB GiB")
    ap.add_argument("--read-task", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.read_task:
        import json
        print(json.dumps(read_one_task(json.loads(args.read_task))))
        return 0
    if args.large_segment:
        return large_segment(args)
    from kafkarec.log import storage
    sizes = [int(x) for x in args.partitions.split(",")]
    s3 = None
    if not args.no_s3:
        from support.servers.s3server import S3Server
        s3 = S3Server(startup_timeout=60).start()
    rows = []
    try:
        for n in sizes:
            root = os.path.join(args.data, f"logs-{n}x{args.segments}")
            shutil.rmtree(root, ignore_errors=True)
            t = time.perf_counter()
            files = write_local(root, n, args.segments)
            print(f"{n} partitions, {n * args.segments} segments, {files} files "
                  f"({time.perf_counter() - t:.1f} s to write locally); load {os.getloadavg()[0]:.2f}",
                  flush=True)
            r = measure(lambda: plan(root, {}, args.parallelism), args.runs)
            rows.append(("local", n, r, None))
            print(f"  local  {r['seconds']:.3f} s, {r['tasks']} tasks, peak {r['peak_mib']:.1f} MiB",
                  flush=True)
            shutil.rmtree(root, ignore_errors=True)
            if s3 is not None:
                bucket = f"plan{n}"
                t = time.perf_counter()
                write_s3(s3.filesystem(), bucket, n, args.segments)
                print(f"  uploaded in {time.perf_counter() - t:.1f} s", flush=True)
                r = measure(lambda: plan(f"s3://{bucket}", s3.options(), args.parallelism),
                            args.runs)
                counters: list = []        # one more plan, its requests counted
                real = storage.resolve
                storage.resolve = counting_resolve(counters)
                try:
                    plan(f"s3://{bucket}", s3.options(), args.parallelism)
                finally:
                    storage.resolve = real
                calls = counters[-1].calls
                rows.append(("s3", n, r, calls))
                print(f"  s3     {r['seconds']:.3f} s, {r['tasks']} tasks, peak {r['peak_mib']:.1f} MiB, "
                      f"requests per plan {calls}", flush=True)
                s3.filesystem().delete_dir(bucket)
    finally:
        if s3 is not None:
            s3.stop()
    print()
    print("| where | partitions | segments | plan s | s per 1,000 partitions | tasks | "
          "peak MiB (tracemalloc) | process peak RSS MiB | tasks pickled MiB | listings |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for where, n, r, calls in rows:
        print(f"| {where} | {n:,} | {n * args.segments:,} | {r['seconds']:.3f} | "
              f"{r['seconds'] / n * 1000:.3f} | {r['tasks']} | {r['peak_mib']:.1f} | {r['peak_rss_mib']:.0f} | "
              f"{r['pickled_mib']:.2f} | {calls['list'] if calls else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
