"""Where the Spark data source's time goes, stage by stage, for the plain and the typed read (issue 52, items 1 and 2).

    .venv/bin/python benchmarks/profile_spark_stages.py                    # 1M plain + 1M typed rows, 5 rounds in Spark
    .venv/bin/python benchmarks/profile_spark_stages.py --records 200000 --typed 100000 --repeats 1   # quick
    .venv/bin/python benchmarks/profile_spark_stages.py --no-spark         # the stages outside Spark only
    .venv/bin/python benchmarks/profile_spark_stages.py --conf spark.buffer.size=1048576   # a Spark setting tried
    .venv/bin/python benchmarks/profile_spark_stages.py --only typed --columns offset,value   # a user's .schema()

The data are the Spark benchmarks' own, built and cached by their functions under the same
folders: ``bench_spark.py``'s log directory (5 partitions, one per codec, 1000 records a batch,
100-byte values, a header) with its floor and Parquet copy, and ``bench_spark_typed.py``'s
(Confluent-framed Avro orders in 4 uncompressed partitions) with its typed floor; a Parquet copy
of the typed rows is written here from that floor.

Outside Spark (this process, one thread, ``time.process_time``; CPU-seconds per million rows,
best of ``--outside-repeats``):

* plain read: **planning** (the data source's reader and its tasks: ``spark_udfs.read.datasource``'s
  planner over the scan's pieces), **reading** (each segment memory-mapped and every page touched),
  **decoding to Arrow** (``kafkarec.iter_arrow``, kafkarec's core, over the same segments, CRCs
  not checked; and each codec's partition apart, here and in a new process: a compressed
  partition's cost over the uncompressed one's is its **decompression**), the **CRC32C check** (what the same call costs more
  with it, the data source's default), and
  the data source's whole task read (``reader.read`` of every task); what the task read costs
  above reading and decoding is **conforming** (the rows put in Spark's schema, the scan's
  bookkeeping);
* typed read: **planning** (reader made - the registry read and the decoder built - and its
  tasks), **the plain read under it** (binary values, the same task read as above), **Confluent
  framing + registry lookup** (``kafkarec.registry.wire.parse_ids``: magic byte, schema id, body
  offset per record; the writer looked up once per distinct id a batch), **the Avro program**
  (``AvroDecoder.decode``: the compiled program run by the core, writing the Arrow buffers), and
  **Arrow building** (the rest of ``TypedBatches.convert``: the typed column cast to Spark's Arrow
  types, the batch assembled in the read's schema).

Inside Spark (``local[2]``, interleaved rounds, medians of ``--repeats`` after a warm-up;
``bench_spark.measure``): the data source, its **floor** (a Python data source yielding the
same Arrow batches ready-made, memory-mapped) and **Parquet** (the same rows, JVM only), CPU-s
per million rows with the JVM and the Python processes (Spark's Python workers and this driver)
apart.  The hand-over's cost is floor - Parquet (what moving ready Arrow batches through a
Python data source costs Spark), decoding's is data source - floor.  Each read ends in a table
and a one-line verdict of where its time goes.

``--columns offset,value`` gives the typed read only those columns, as a user's
``.schema(...)`` does (Spark prunes no column of a Python data source: a ``.select`` after
``load()`` still has every column built and handed over); its floor and Parquet the same.
``--max-records-per-batch N`` and ``--conf key=value`` try a setting.
"""
from __future__ import annotations

import argparse
import glob
import json
import mmap
import os
import statistics
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

PAGE = mmap.PAGESIZE


def _cpu(fn, repeats: int) -> float:
    """Best CPU-seconds (this process) of ``repeats`` calls of ``fn``."""
    best = None
    for _ in range(max(1, repeats)):
        c0 = time.process_time()
        fn()
        c = time.process_time() - c0
        best = c if best is None or c < best else best
    return best


def _touch(path: str) -> int:
    """Map a segment and touch every page (what reading its bytes costs); returns its size."""
    import numpy as np
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if not size:
            return 0
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            int(np.frombuffer(mm, dtype=np.uint8)[::PAGE].sum())
    return size


def _segments(logdir: str, topic_glob: str = "*") -> list:
    return sorted(glob.glob(os.path.join(logdir, topic_glob, "*.log")))


def _tasks_rows(reader, tasks) -> int:
    return sum(rb.num_rows for t in tasks for rb in reader.read(t))


# -- outside Spark -----------------------------------------------------------------------------

def plain_stages(logdir: str, rows: int, repeats: int, options: dict, parallelism: int) -> dict:
    """CPU-s per million rows of the plain read's stages, outside Spark."""
    import kafkarec
    from spark_udfs.read import datasource as _datasource
    opts = {"path": logdir, "includeHeaders": "true", **options}
    per = 1e6 / rows

    def make():
        ds = _datasource.KafkaRecDataSource(opts)
        ds.default_min_partitions = parallelism
        reader = ds.reader(ds.schema())
        return reader, reader.partitions()

    reader, tasks = make()
    got = _tasks_rows(reader, tasks)
    if got != rows:
        raise SystemExit(f"plain read outside Spark: {got} rows, expected {rows}")
    segs = _segments(logdir)

    max_rows = reader.config.rows_per_batch(False)      # the data source's rows per Arrow batch

    def decode_rows(verify_crc, these):
        return _decode_rows(these, max_rows, verify_crc)

    def decode(verify_crc):
        n = decode_rows(verify_crc, segs)
        assert n == rows, n

    out = {
        "planning": _cpu(make, repeats * 3) * per,
        "reading": _cpu(lambda: [_touch(s) for s in segs], repeats) * per,
        "decoding": _cpu(lambda: decode(False), repeats) * per,
        "crc": _cpu(lambda: decode(True), repeats) * per,
        "task read": _cpu(lambda: _tasks_rows(reader, tasks), repeats) * per,
    }
    # the CRC check (the data source's default, option verifyCrc) is what iter_arrow costs
    # more with it; iter_arrow touches the mapped pages itself: its figure includes reading's
    out["crc"] = max(0.0, out["crc"] - out["decoding"])
    out["decoding"] = max(0.0, out["decoding"] - out["reading"])
    out["conforming"] = max(0.0, out["task read"] - out["reading"] - out["decoding"] - out["crc"])
    out["tasks"] = len(tasks)
    # decoding by codec: bench_spark's partition p holds CODECS[p]'s batches (the same records' shape);
    # what a compressed partition costs over the uncompressed one is its decompression
    by_codec, fresh = {}, {}
    for p, codec in enumerate(bench_spark.CODECS):
        part = [s for s in segs if os.path.basename(os.path.dirname(s)) == f"bench-{p}"]
        n = decode_rows(False, part)
        if n:
            by_codec[codec] = _cpu(lambda: decode_rows(False, part), repeats) * 1e6 / n
            fresh[codec] = _fresh_decode(part, max_rows, repeats) * 1e6 / n
    out["decoding by codec"] = by_codec
    out["decoding by codec, fresh process"] = fresh
    if "none" in by_codec:
        out["decompression"] = sum(max(0.0, v - by_codec["none"]) for c, v in by_codec.items()
                                   if c != "none") / len(by_codec)
    return out


def _decode_rows(segs: list, max_rows: int, verify_crc: bool) -> int:
    """kafkarec.iter_arrow over the segment files ``segs``, memory-mapped; returns the rows."""
    import kafkarec
    n = 0
    kw = {"max_rows": max_rows} if max_rows else {}
    for seg in segs:
        with open(seg, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for rb in kafkarec.iter_arrow(mm, verify_crc=verify_crc, **kw):
                n += rb.num_rows
            del rb
    return n


def _fresh_decode(segs: list, max_rows: int, repeats: int) -> float:
    """Best CPU-seconds of iter_arrow over ``segs`` in a new interpreter (a first read: its memory
    not yet reused from an earlier one, as in a short script or a new Spark Python worker)."""
    import subprocess
    code = (f"import sys; sys.path[:0] = [{HERE!r}, {ROOT!r}]; import profile_spark_stages as p; "
            f"print(p._cpu(lambda: p._decode_rows({list(segs)!r}, {max_rows!r}, False), {max(1, repeats)}))")
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                text=True).stdout.strip().splitlines()[-1])


def _pruned(schema, columns):
    """The read's schema cut to ``columns`` (a user's ``.schema(...)``), or itself."""
    if not columns:
        return schema
    from pyspark.sql import types as T
    return T.StructType([schema[c] for c in columns])


def typed_stages(logdir: str, rows: int, repeats: int, options: dict, parallelism: int, columns=()) -> dict:
    """CPU-s per million rows of the typed read's stages, outside Spark."""
    import pyarrow.compute as pc
    from kafkarec.registry import wire
    from spark_udfs.read import datasource as _datasource
    from spark_udfs.read import schema as _schema
    opts = {**bench_spark_typed._typed_options(logdir), **options}
    per = 1e6 / rows

    def make():
        ds = _datasource.KafkaRecDataSource(opts)
        ds.default_min_partitions = parallelism
        reader = ds.reader(_pruned(ds.schema(), columns))
        return reader, reader.partitions()

    reader, tasks = make()
    typed_rows = reader.rows
    target = _schema.arrow_schema_for(reader.schema)
    plain = [rb for t in tasks for rb in reader.inner.read(t)]
    if sum(rb.num_rows for rb in plain) != rows:
        raise SystemExit(f"typed read outside Spark: {sum(rb.num_rows for rb in plain)} rows, expected {rows}")
    side = next(s for s in typed_rows.sides if s.side == "value")
    column = side.column(typed_rows.topic)
    framed = []

    def framing():
        framed.clear()
        for rb in plain:
            w = wire.parse_ids(rb.column("value"), id_format=column.id_format)
            for sid in pc.unique(w.writer_ids).drop_null().to_pylist():     # the registry lookup
                column._writer(int(sid))
            framed.append(w)

    def program():
        for w in framed:
            column.decoder.decode(w.values, w.writer_ids, w.body_offsets)

    def convert():
        for rb in plain:
            typed_rows.convert(rb, target)

    out = {
        "planning": _cpu(make, repeats) * per,
        "plain read": _cpu(lambda: [rb for t in tasks for rb in reader.inner.read(t)], repeats) * per,
        "framing + registry": _cpu(framing, repeats) * per,
        "avro program": _cpu(program, repeats) * per,
        "typing (convert)": _cpu(convert, repeats) * per,
        "task read": _cpu(lambda: _tasks_rows(reader, tasks), repeats) * per,
    }
    out["arrow building"] = max(0.0, out["typing (convert)"] - out["framing + registry"] - out["avro program"])
    out["tasks"] = len(tasks)
    return out


# -- inside Spark ------------------------------------------------------------------------------

def spark_rows(results: list, rows: int) -> dict:
    per = 1e6 / rows
    return {r["mechanism"]: {"median_s": r["median_s"], "rows_per_s": r["rows_per_s"],
                             "cpu": r["cpu_s"] * per, "jvm": r["cpu_jvm_s"] * per,
                             "python": r["cpu_python_s"] * per, "runs_s": r["runs_s"]} for r in results}


def _table(title: str, outside: dict, inside: dict, names: tuple, stage_rows: list) -> list:
    lines = [f"### {title}", "", "| stage | CPU-s per M rows | of which JVM | of which Python | rows/s |",
             "|---|---:|---:|---:|---:|"]
    for label, key in stage_rows:
        if key in outside:
            lines.append(f"| outside Spark: {label} | {outside[key]:.3f} | - | {outside[key]:.3f} | - |")
    if inside:
        ds, fl, pq = (inside.get(n) for n in names)
        for label, m in (("Spark: data source", ds), ("Spark: floor (ready Arrow batches)", fl),
                         ("Spark: Parquet", pq)):
            if m:
                lines.append(f"| {label} | {m['cpu']:.3f} | {m['jvm']:.3f} | {m['python']:.3f} | "
                             f"{m['rows_per_s'] / 1e6:.3f} M |")
        if fl and pq:
            lines.append(f"| hand-over (floor - Parquet) | {fl['cpu'] - pq['cpu']:+.3f} | {fl['jvm'] - pq['jvm']:+.3f} | "
                         f"{fl['python'] - pq['python']:+.3f} | |")
        if ds and fl:
            lines.append(f"| decoding in Spark (data source - floor) | {ds['cpu'] - fl['cpu']:+.3f} | "
                         f"{ds['jvm'] - fl['jvm']:+.3f} | {ds['python'] - fl['python']:+.3f} | |")
    return lines


def verdict(read: str, outside: dict, inside: dict, names: tuple, stages: list) -> str:
    """One line: the largest stage outside Spark, and inside Spark how the data source's CPU-s
    split into Parquet's own, the hand-over and decoding, with the wall-time ratios."""
    parts = []
    own = [(outside[k], label) for label, k in stages if k in outside]
    if own:
        total = sum(v for v, _ in own)
        v, label = max(own)
        parts.append(f"outside Spark {label} is {v / total:.0%} of the stages' {total:.3f} CPU-s/M")
    ds, fl, pq = (inside.get(n) for n in names) if inside else (None, None, None)
    if ds and fl and pq:
        hand, dec = fl["cpu"] - pq["cpu"], ds["cpu"] - fl["cpu"]
        parts.append(f"in Spark the data source's {ds['cpu']:.3f} CPU-s/M = Parquet's {pq['cpu']:.3f} + "
                     f"hand-over {hand:+.3f} + decoding {dec:+.3f}")
        parts.append(f"rows/s: data source {ds['rows_per_s'] / pq['rows_per_s']:.1%} of Parquet, "
                     f"floor {fl['rows_per_s'] / pq['rows_per_s']:.1%} of Parquet, data source "
                     f"{ds['rows_per_s'] / fl['rows_per_s']:.1%} of the floor")
        if max(hand, dec) < 0.02:
            parts.append("neither the hand-over nor decoding costs more than 0.02 CPU-s/M above Parquet")
        else:
            limit = ("the hand-over (Spark's Python data source transfer)" if hand > dec
                     else "kafkarec's decoding (the Python workers)")
            parts.append(f"the larger cost above Parquet: {limit}")
    return f"verdict ({read}): " + "; ".join(parts)


PLAIN_STAGES = [("planning (spark_udfs' planner)", "planning"), ("reading (segments mapped, pages touched)", "reading"),
                ("decoding to Arrow (kafkarec.iter_arrow, CRC not checked)", "decoding"),
                ("CRC32C check (option verifyCrc, on by default)", "crc"),
                ("conforming to Spark's schema (task read - the above)", "conforming")]
TYPED_STAGES = [("planning (registry read, decoder built, tasks)", "planning"),
                ("plain read under it (binary values)", "plain read"),
                ("Confluent framing + registry lookup", "framing + registry"),
                ("the Avro program (core, writes Arrow buffers)", "avro program"),
                ("Arrow building (cast to Spark's types, batch assembled)", "arrow building")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="plain read's records (bench_spark.py's data)")
    ap.add_argument("--typed", type=int, default=1_000_000, help="typed read's records (bench_spark_typed.py's data)")
    ap.add_argument("--repeats", type=int, default=5, help="rounds in Spark (medians), after one warm-up")
    ap.add_argument("--outside-repeats", type=int, default=5, help="runs of each stage outside Spark (best)")
    ap.add_argument("--only", default="plain,typed", help="plain, typed or both")
    ap.add_argument("--no-spark", action="store_true", help="only the stages outside Spark")
    ap.add_argument("--max-records-per-batch", type=int, default=None,
                    help="the data source's maxRecordsPerBatch (and the floor's batches), default its own")
    ap.add_argument("--conf", action="append", default=[], help="a Spark setting key=value (repeatable)")
    ap.add_argument("--columns", default="",
                    help="typed read: only these columns, given as a user's .schema(...) (e.g. offset,value); "
                         "its floor and Parquet the same columns")
    ap.add_argument("--data", default=tempfile.gettempdir(),
                    help="where the Spark benchmarks cache their data (their --data's parent)")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)
    reads = [r.strip() for r in args.only.split(",") if r.strip()]
    columns = [c.strip() for c in args.columns.split(",") if c.strip()]

    import warnings
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    t0 = time.time()
    options = {}
    batch_tag = ""
    if args.max_records_per_batch:
        options["maxRecordsPerBatch"] = str(args.max_records_per_batch)
        batch_tag = f"-mrpb{args.max_records_per_batch}"
    plain_data = os.path.join(args.data, "kafkarec-bench-spark")
    typed_data = os.path.join(args.data, "kafkarec-bench-spark-typed")
    tag = f"{args.records}-{'-'.join(bench_spark.CODECS)}"
    logdir = os.path.join(plain_data, f"logdir-{tag}")
    typed_logdir = os.path.join(typed_data, f"logdir-{args.typed}")
    result = {"load_average": [os.getloadavg()], "args": vars(args)}
    want = typed_want = None
    if "plain" in reads:
        want = bench_spark.build_logdir(logdir, args.records)
        print(f"plain: {logdir}: {want['records']} records, {want['segment_bytes'] / 1e6:.1f} MB of segments")
    if "typed" in reads:
        typed_want = bench_spark_typed.build_logdir(typed_logdir, args.typed)
        print(f"typed: {typed_logdir}: {typed_want['records']} records, {typed_want['segment_bytes'] / 1e6:.1f} MB")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores ({time.time() - t0:.1f} s to prepare)",
          flush=True)
    parallelism = 2        # local[2]: the planner's aim as in Spark
    outside = {}
    if want:
        outside["plain"] = plain_stages(logdir, want["records"], args.outside_repeats, options, parallelism)
    if typed_want:
        outside["typed"] = typed_stages(typed_logdir, typed_want["records"], args.outside_repeats, options,
                                        parallelism, columns)
    print(f"outside Spark done ({time.time() - t0:.0f} s)", flush=True)

    inside = {}
    if not args.no_spark:
        import spark_udfs
        conf = {"spark.sql.session.timeZone": "UTC"}
        for kv in args.conf:
            k, _, v = kv.partition("=")
            conf[k] = v
        spark = spark_udfs.session_builder("kafkarec-profile-stages", conf=conf).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        reg = spark_udfs.register(spark)
        print(f"Spark {spark.version}, master {spark.sparkContext.master}, kafkarec {reg.fingerprint}, "
              f"settings {args.conf or 'default'}, load average {os.getloadavg()[0]:.2f}", flush=True)
        mechanisms = {}
        if want:
            from spark_udfs.read import spec as _spec
            size = args.max_records_per_batch or _spec.DEFAULT_MAX_RECORDS_PER_BATCH
            floor_dir = os.path.join(plain_data, f"floor-{tag}-{size}")
            bench_spark.build_floor(logdir, floor_dir, options)
            parquet_rows = os.path.join(plain_data, f"rows-{tag}.parquet")
            spark.dataSource.register(bench_spark.floor_source())

            def plain():
                return spark.read.format("kafkarec").option("includeHeaders", "true").options(**options).load(logdir)
            if not os.path.exists(os.path.join(parquet_rows, "_SUCCESS")):
                plain().drop("_corrupt_record").write.mode("overwrite").parquet(parquet_rows)
            mechanisms["plain"] = {
                "datasource": plain,
                "floor": lambda: spark.read.format("kafkarec_floor").option("arrow", floor_dir).option(
                    "parallelism", spark.sparkContext.defaultParallelism).load(logdir),
                "parquet": lambda: spark.read.parquet(parquet_rows),
            }
            for name, make in mechanisms["plain"].items():
                bench_spark.check(name, make(), want)
        if typed_want:
            cols_tag = f"-{'-'.join(columns)}" if columns else ""
            typed_floor_dir = os.path.join(typed_data, f"typed-floor-{args.typed}{batch_tag}{cols_tag}")
            typed_opts = {**bench_spark_typed._typed_options(typed_logdir), **options}
            from spark_udfs.read import datasource as _datasource
            user_schema = (_pruned(_datasource.KafkaRecDataSource(typed_opts).schema(), columns)
                           if columns else None)
            floor_schema = bench_spark_typed.build_typed_floor(typed_logdir, typed_floor_dir, typed_opts,
                                                               user_schema)
            spark.dataSource.register(bench_spark_typed.typed_floor_source())

            def typed_floor():
                return (spark.read.format("kafkarec_typed_floor").option("arrow", typed_floor_dir)
                        .option("schema", floor_schema).load())
            typed_parquet = os.path.join(typed_data, f"typed-rows-{args.typed}{cols_tag}.parquet")
            if not os.path.exists(os.path.join(typed_parquet, "_SUCCESS")):
                typed_floor().write.mode("overwrite").parquet(typed_parquet)
            def typed_ds():
                r = spark.read.format("kafkarec").options(**typed_opts)
                return (r.schema(user_schema) if user_schema is not None else r).load()
            mechanisms["typed"] = {
                "typed datasource": typed_ds,
                "typed floor": typed_floor,
                "typed parquet": lambda: (spark.read.parquet(typed_parquet).select(*columns) if columns
                                          else spark.read.parquet(typed_parquet)),
            }
            from pyspark.sql import functions as F
            for name, make in mechanisms["typed"].items():
                r = make().agg(F.count(F.lit(1)).alias("n"), F.sum("offset").alias("o"),
                               F.sum("value.order_id").alias("ids")).first()
                got, exp = (r["n"], r["o"], r["ids"]), (typed_want["records"], typed_want["offset_sum"],
                                                         typed_want["order_id_sum"])
                if got != exp:
                    raise SystemExit(f"{name}: wrong result {got}, expected {exp}")
        for read, mechs in mechanisms.items():
            rows = want["records"] if read == "plain" else typed_want["records"]
            print(f"{read}: noop write of {rows} rows, interleaved, median of {args.repeats} after 1 warm-up; "
                  f"load average {os.getloadavg()[0]:.2f}", flush=True)
            inside[read] = spark_rows(bench_spark.measure(mechs, args.repeats, rows), rows)
        spark.stop()
    result["load_average"].append(os.getloadavg())

    print()
    verdicts = {}
    for read, stages, names in (("plain", PLAIN_STAGES, ("datasource", "floor", "parquet")),
                                ("typed", TYPED_STAGES, ("typed datasource", "typed floor", "typed parquet"))):
        if read not in outside:
            continue
        rows = want["records"] if read == "plain" else typed_want["records"]
        extra = [("task read, whole (data source's read, no Spark)", "task read")]
        if read == "typed":
            extra.insert(0, ("typing, whole (TypedBatches.convert)", "typing (convert)"))
        print("\n".join(_table(f"{read} read, {rows} rows, {outside[read]['tasks']} tasks", outside[read],
                               inside.get(read, {}), names, stages + extra)))
        verdicts[read] = verdict(read, outside[read], inside.get(read, {}), names, stages)
        by_codec = outside[read].get("decoding by codec")
        if by_codec:
            print()
            print("decoding to Arrow by codec, one partition each (CPU-s per M of its rows): " + ", ".join(
                f"{c} {v:.3f}" for c, v in by_codec.items()))
            fresh = outside[read].get("decoding by codec, fresh process") or {}
            if fresh:
                print("the same, each in a new process: " + ", ".join(f"{c} {v:.3f}" for c, v in fresh.items()))
            if "decompression" in outside[read]:
                print(f"of the read's decoding, decompression (each codec's partition over the uncompressed "
                      f"one's rate): {outside[read]['decompression']:.3f} CPU-s/M")
        print()
        print(verdicts[read])
        print()
    la = result["load_average"]
    print(f"load average at the start {la[0][0]:.2f}, at the end {la[-1][0]:.2f}; total {time.time() - t0:.0f} s")
    print("command: .venv/bin/python benchmarks/profile_spark_stages.py " + " ".join(
        argv if argv is not None else sys.argv[1:]))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({**result, "outside": outside, "inside": inside, "verdicts": verdicts}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
