"""Spark's data source against its true floor (issue 80, item 4): CPU per row, side by side in one run.

    .venv/bin/python benchmarks/bench_spark_floor.py                       # 1M plain + 1M typed rows
    .venv/bin/python benchmarks/bench_spark_floor.py --records 200000 --typed 200000 --repeats 3   # quick
    .venv/bin/python benchmarks/bench_spark_floor.py --master 'local[1]'   # one task slot

The floor of ``bench_spark.py`` / ``bench_spark_typed.py`` (a Python data source that hands
Spark the data source's own rows as ready Arrow batches, memory-mapped) does no decoding, so
the data source cannot reach it.  The comparison that can be met is against the floor **plus**
kafkarec's own decoding of the same rows:

    data source CPU per row  /  (floor CPU per row in Spark  +  decode CPU per row in a plain process)

* **data source** and **floor**: ``spark.read.format(...)`` forced with ``write.format("noop")``,
  CPU-seconds of the whole process tree (driver, JVM, Spark's Python workers; ``/proc``'s
  utime + stime of each process and of its reaped children, so workers that Spark ended
  are counted: ``bench_spark._tree_cpu``), medians of ``--repeats`` interleaved rounds after
  one warm-up round (``bench_spark.measure``).  The Python workers' share is given apart.
* **decode**: kafkarec's read of the same log with the same columns on one thread
  (``kafkarec.scan.LogScan`` over the data source's own ``ScanConfig`` with ``threads=1``;
  typed: with the registry decode, ``ScanConfig.typed``), ``time.process_time`` of this driver
  process, which is idle between Spark jobs, run once in each round after the Spark reads, so
  that the machine's load falls on it as on them; the median of the rounds is the figure.  A
  Spark Python worker is reused between tasks (``spark.python.worker.reuse``), so a warm process
  is its fair counterpart.  The same decode in a new plain process (best of
  ``--decode-repeats`` after a first run) is printed first as a cross-check, beside the data
  source's own task read there without Spark (its reader and tasks pickled and unpickled as
  Spark ships them): task read / decode is the data source's Python work beyond kafkarec's.

Plain read: ``bench_spark.py``'s log (5 partitions, one per codec; 16-byte keys, 100-byte values,
a header).  Typed read: ``bench_spark_typed.py``'s (Confluent-framed Avro orders, the registry in
the log).  The target: the ratio at most 1.10 for both.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(1, ROOT)

import bench_spark  # noqa: E402
import bench_spark_typed  # noqa: E402

TARGET = 1.10


def _plain_options(logdir: str) -> dict:
    return {"path": logdir, "includeHeaders": "true"}


def decode_config(options: dict):
    """The data source's own :class:`kafkarec.scan.ScanConfig` for ``options`` on one thread
    (typed: with kafkarec's registry decode of the values)."""
    import dataclasses
    from spark_udfs.read import datasource as _datasource
    ds = _datasource.KafkaRecDataSource(options)
    reader = ds.reader(ds.schema())
    if ds.spec.typed is None:
        return dataclasses.replace(reader.config, threads=1)
    from kafkarec.scan.config import TypedSettings
    topic = options["subscribe"]
    return dataclasses.replace(reader.inner.config, threads=1, typed=TypedSettings(
        value_format=options["valueFormat"], registry=options["registry"], options={"topic": topic}))


def decode_cpu(options: dict, repeats: int) -> tuple:
    """(rows, best CPU-seconds of kafkarec's decode of ``options``' read, best CPU-seconds of the
    data source's own task read of it) in this process, alternating: the task read is the
    reader and its tasks pickled as Spark ships them, unpickled and read (one thread, as in a
    Spark task), without Spark; what it costs over the decode is the data source's Python work
    beyond kafkarec's (its conversions to Spark's types)."""
    import dataclasses
    import pickle
    from kafkarec.scan import LogScan
    from spark_udfs.read import datasource as _datasource
    scan = LogScan(decode_config(options))
    ds = _datasource.KafkaRecDataSource(options)
    ds.default_min_partitions = 2          # local[2]'s aim
    reader = ds.reader(ds.schema())
    inner = getattr(reader, "inner", reader)
    inner.config = dataclasses.replace(inner.config, threads=1)
    shipped = pickle.dumps((reader, reader.partitions()))

    def task_read():
        r, tasks = pickle.loads(shipped)
        return sum(rb.num_rows for t in tasks for rb in r.read(t))
    best, best_task, rows = None, None, 0
    for i in range(repeats + 1):
        c0 = time.process_time()
        rows = sum(rb.num_rows for rb in scan)
        c1 = time.process_time()
        got = task_read()
        c2 = time.process_time()
        if got != rows:
            raise SystemExit(f"task read: {got} rows, the decode {rows}")
        if i:
            best = c1 - c0 if best is None else min(best, c1 - c0)
            best_task = c2 - c1 if best_task is None else min(best_task, c2 - c1)
    return rows, best, best_task


def fresh_decode_cpu(options: dict, repeats: int) -> tuple:
    """:func:`decode_cpu` in a new plain Python process."""
    code = (f"import sys, json; sys.path[:0] = [{HERE!r}, {ROOT!r}]; import bench_spark_floor as b; "
            f"print(json.dumps(b.decode_cpu({options!r}, {repeats})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def measure(mechanisms: dict, options: dict, repeats: int, rows: int) -> tuple:
    """One warm-up round, then ``repeats`` rounds; each round runs every Spark mechanism once
    (CPU of the process tree, :func:`bench_spark._tree_cpu`) and then kafkarec's decode in this
    process (``time.process_time``; this driver is idle between jobs, so its CPU is the decode's),
    so that load from elsewhere falls on all alike.  Returns ({mechanism: medians}, decode's
    median CPU-seconds)."""
    import statistics
    from kafkarec.scan import LogScan
    scan = LogScan(decode_config(options))
    cpus: dict = {n: [] for n in mechanisms}
    walls: dict = {n: [] for n in mechanisms}
    decodes = []
    for i in range(repeats + 1):
        for name, make_df in mechanisms.items():
            df = make_df()
            c0, t0 = bench_spark._tree_cpu(os.getpid()), time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            wall, c1 = time.perf_counter() - t0, bench_spark._tree_cpu(os.getpid())
            if i:
                walls[name].append(wall)
                cpus[name].append({k: c1[k] - c0[k] for k in c1})
        c0 = time.process_time()
        got = sum(rb.num_rows for rb in scan)
        if i:
            decodes.append(time.process_time() - c0)
        if got != rows:
            raise SystemExit(f"decode: {got} rows, expected {rows}")
    out = {}
    for name in mechanisms:
        med = statistics.median(walls[name])
        out[name] = {"mechanism": name, "median_s": med, "rows_per_s": rows / med,
                     "cpu_s": statistics.median(sum(c.values()) for c in cpus[name]),
                     "cpu_jvm_s": statistics.median(c["jvm"] for c in cpus[name]),
                     "cpu_python_s": statistics.median(c["python"] for c in cpus[name])}
        m = out[name]
        print(f"  {name:<18} median {med:7.3f} s  cpu {m['cpu_s']:5.2f} s (jvm {m['cpu_jvm_s']:4.2f}, "
              f"python {m['cpu_python_s']:4.2f})", flush=True)
    dec = statistics.median(decodes)
    print(f"  {'decode (driver)':<18} cpu {dec:5.3f} s  runs {', '.join(f'{d:.3f}' for d in decodes)}", flush=True)
    return out, dec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="plain read's records (bench_spark.py's data)")
    ap.add_argument("--typed", type=int, default=1_000_000, help="typed read's records (bench_spark_typed.py's data)")
    ap.add_argument("--repeats", type=int, default=5, help="rounds in Spark (medians), after one warm-up")
    ap.add_argument("--decode-repeats", type=int, default=5, help="decode runs in the plain process (best)")
    ap.add_argument("--only", default="plain,typed", help="plain, typed or both")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--data", default=tempfile.gettempdir(),
                    help="where the Spark benchmarks cache their data (their --data's parent)")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)
    reads = [r.strip() for r in args.only.split(",") if r.strip()]

    import warnings
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    t0 = time.time()
    plain_data = os.path.join(args.data, "kafkarec-bench-spark")
    typed_data = os.path.join(args.data, "kafkarec-bench-spark-typed")
    tag = f"{args.records}-{'-'.join(bench_spark.CODECS)}"
    logdir = os.path.join(plain_data, f"logdir-{tag}")
    typed_logdir = os.path.join(typed_data, f"logdir-{args.typed}")
    want = typed_want = None
    options = {}
    if "plain" in reads:
        want = bench_spark.build_logdir(logdir, args.records)
        options["plain"] = _plain_options(logdir)
    if "typed" in reads:
        typed_want = bench_spark_typed.build_logdir(typed_logdir, args.typed)
        options["typed"] = bench_spark_typed._typed_options(typed_logdir)
    load0 = os.getloadavg()
    print(f"data ready ({time.time() - t0:.1f} s); load average {load0[0]:.2f} on {os.cpu_count()} cores", flush=True)

    decode, outside = {}, {}
    for read, opts in options.items():
        rows, cpu, task = fresh_decode_cpu(opts, args.decode_repeats)
        expected = want["records"] if read == "plain" else typed_want["records"]
        if rows != expected:
            raise SystemExit(f"{read} decode: {rows} rows, expected {expected}")
        outside[read] = {"decode_cpu_s": cpu, "task_read_cpu_s": task}
        print(f"  {read}, a new plain process, 1 thread, best of {args.decode_repeats}: decode {cpu:.3f} CPU-s "
              f"({cpu / rows * 1e9:.0f} ns/row), the data source's task read without Spark {task:.3f} "
              f"({task / rows * 1e9:.0f} ns/row): task read / decode {task / cpu:.3f}", flush=True)

    import spark_udfs
    from spark_udfs.read import spec as _spec
    spark = spark_udfs.session_builder("kafkarec-bench-spark-floor", master=args.master,
                                       conf={"spark.sql.session.timeZone": "UTC"}).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    reg = spark_udfs.register(spark)
    print(f"Spark {spark.version}, master {spark.sparkContext.master}, kafkarec {reg.fingerprint}", flush=True)
    mechanisms = {}
    if want:
        floor_dir = os.path.join(plain_data, f"floor-{tag}-{_spec.DEFAULT_MAX_RECORDS_PER_BATCH}")
        bench_spark.build_floor(logdir, floor_dir)
        spark.dataSource.register(bench_spark.floor_source())
        mechanisms["plain"] = {
            "datasource": lambda: spark.read.format("kafkarec").options(**options["plain"]).load(),
            "floor": lambda: spark.read.format("kafkarec_floor").option("arrow", floor_dir).option(
                "parallelism", spark.sparkContext.defaultParallelism).load(logdir),
        }
        for name, make in mechanisms["plain"].items():
            bench_spark.check(name, make(), want)
    if typed_want:
        typed_floor_dir = os.path.join(typed_data, f"typed-floor-{args.typed}")
        floor_schema = bench_spark_typed.build_typed_floor(typed_logdir, typed_floor_dir, options["typed"])
        spark.dataSource.register(bench_spark_typed.typed_floor_source())
        mechanisms["typed"] = {
            "typed datasource": lambda: spark.read.format("kafkarec").options(**options["typed"]).load(),
            "typed floor": lambda: spark.read.format("kafkarec_typed_floor").option("arrow", typed_floor_dir)
            .option("schema", floor_schema).load(),
        }
        from pyspark.sql import functions as F
        for name, make in mechanisms["typed"].items():
            r = make().agg(F.count(F.lit(1)).alias("n"), F.sum("offset").alias("o"),
                           F.sum("value.order_id").alias("ids")).first()
            got = (r["n"], r["o"], r["ids"])
            exp = (typed_want["records"], typed_want["offset_sum"], typed_want["order_id_sum"])
            if got != exp:
                raise SystemExit(f"{name}: wrong result {got}, expected {exp}")
    inside = {}
    for read, mechs in mechanisms.items():
        rows = want["records"] if read == "plain" else typed_want["records"]
        print(f"{read}: noop write of {rows} rows and the decode, interleaved, median of {args.repeats} after "
              f"1 warm-up round; load average {os.getloadavg()[0]:.2f}", flush=True)
        inside[read], decode[read] = measure(mechs, options[read], args.repeats, rows)
    spark.stop()
    load1 = os.getloadavg()

    print()
    print("| read | data source CPU ns/row (Python) | floor (Python) | decode, plain process | "
          "floor + decode | data source / (floor + decode) |")
    print("|---|---:|---:|---:|---:|---:|")
    verdicts = {}
    for read, by in inside.items():
        rows = want["records"] if read == "plain" else typed_want["records"]
        ds, fl = by["datasource" if read == "plain" else "typed datasource"], by["floor" if read == "plain" else "typed floor"]
        per = 1e9 / rows
        dec = decode[read] * per
        bound = fl["cpu_s"] * per + dec
        ratio = ds["cpu_s"] * per / bound
        verdicts[read] = ratio
        print(f"| {read} | {ds['cpu_s'] * per:.0f} ({ds['cpu_python_s'] * per:.0f}) | "
              f"{fl['cpu_s'] * per:.0f} ({fl['cpu_python_s'] * per:.0f}) | {dec:.0f} | {bound:.0f} | "
              f"**{ratio:.2f}** |")
    print()
    print(f"load average at the start {load0[0]:.2f}, at the end {load1[0]:.2f}; total {time.time() - t0:.0f} s")
    for read, ratio in verdicts.items():
        print(f"{read}: data source / (floor + decode) = {ratio:.2f}: target <= {TARGET:.2f} "
              f"{'met' if ratio <= TARGET else 'NOT met'}")
    print("command: .venv/bin/python benchmarks/bench_spark_floor.py " + " ".join(
        argv if argv is not None else sys.argv[1:]))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"load_average": [load0, load1], "decode_cpu_s": decode, "outside": outside, "inside": inside,
                       "ratios": verdicts, "args": vars(args)}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
