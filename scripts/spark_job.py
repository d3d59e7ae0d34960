"""Read a Kafka log directory with Spark, write it as Parquet, print a summary.

    spark-submit --py-files wheelhouse/kafkarec-<...>.whl scripts/spark_job.py LOG_DIR OUT_DIR

(``python scripts/spark_job.py LOG_DIR OUT_DIR`` works too: it then starts a
local Spark itself.)  Writes

* ``OUT_DIR/records/topic=<t>/partition=<p>/*.parquet`` - every record, in
  Spark's Kafka source schema plus kafkarec's batch columns;
* ``OUT_DIR/errors/*.json`` - one line per batch that could not be decoded
  (mode PERMISSIVE): topic, partition, byte position, message;
* ``OUT_DIR/summary.json`` - what is printed: per topic/partition the segment
  files and bytes, records, batches, key+value+header bytes, offsets,
  timestamps, codecs and errors.

Exit status 0 when everything was read (errors found in the data are
reported, not fatal, unless ``--mode FAILFAST``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings


try:
    import spark_udfs  # noqa: F401  (from --py-files, or installed)
except ImportError:       # run from a source checkout without installing
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log_dir", help="Kafka log directory (<topic>-<partition>/*.log), folder or segment")
    ap.add_argument("out_dir", help="where to write records/, errors/ and summary.json")
    ap.add_argument("--mode", default="PERMISSIVE", choices=["PERMISSIVE", "DROPMALFORMED", "FAILFAST"])
    ap.add_argument("--read-committed", action="store_true", help="leave out aborted transactions")
    ap.add_argument("--include-control", action="store_true", help="keep transaction markers")
    ap.add_argument("--max-partition-bytes", default="128m", help="most segment bytes per task")
    ap.add_argument("--master", default=None,
                    help="Spark master when not run by spark-submit (default local[2])")
    return ap.parse_args(argv)


def _session(args):
    # The project's settings: loopback binding, 4g driver, small Arrow batches,
    # workers on this interpreter, no pandas>=3 FutureWarning noise.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                            category=FutureWarning)
    import spark_udfs
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ   # the JVM is spark-submit's
    master = None if under_submit else (args.master or "local[2]")
    spark = spark_udfs.session_builder("kafkarec-spark-job", master=master).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    memory = spark.sparkContext.getConf().get("spark.driver.memory", "1g")
    if under_submit and _gib(memory) < 4 and spark.sparkContext.master.startswith("local"):
        print(f"note: spark.driver.memory is {memory}; pass --driver-memory 4g to spark-submit "
              f"for large logs in local mode", file=sys.stderr)
    return spark


def _gib(text: str) -> float:
    text = text.strip().lower().rstrip("b")
    units = {"k": 1 / 1024 ** 2, "m": 1 / 1024, "g": 1, "t": 1024}
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text) / 1024 ** 3


def _segments_on_disk(log_dir: str) -> dict:
    """``{(topic, partition): segments and their bytes}`` as the read plans them (the reader's
    pieces of work, one a segment file: kafkarec.scan.LogScan.pieces; no record read)."""
    from kafkarec.scan import LogScan
    out: dict = {}
    for piece in LogScan.of(log_dir, columns=["offset"]).pieces():
        entry = out.setdefault((piece.topic, piece.partition), {"segments": 0, "segment_bytes": 0})
        entry["segments"] += 1
        entry["segment_bytes"] += piece.bytes
    return out


def main(argv=None) -> int:
    args = _parse(argv)
    started = time.time()
    spark = _session(args)
    import spark_udfs
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    reg = spark_udfs.register(spark)
    print(f"kafkarec {reg.fingerprint}; shipped to executors: "
          + (", ".join(os.path.basename(s.shipped_as or s.source) for s in reg.shipped) or "nothing")
          + f"; executors checked: {len(reg.executors)} worker(s)", file=sys.stderr)
    for line in reg.executors:
        print(f"  executor: {line}", file=sys.stderr)

    corrupt = "_corrupt_record"
    df = (spark.read.format("kafkarec")
          .option("batchColumns", "true")
          .option("includeHeaders", "true")
          .option("mode", args.mode)
          .option("readCommitted", str(args.read_committed).lower())
          .option("includeControl", str(args.include_control).lower())
          .option("maxPartitionBytes", args.max_partition_bytes)
          .load(os.path.abspath(args.log_dir)))
    has_errors = corrupt in df.columns
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    records = df.where(F.col(corrupt).isNull()).drop(corrupt) if has_errors else df
    out = os.path.abspath(args.out_dir)
    (records.write.mode("overwrite").partitionBy("topic", "partition")
     .parquet(os.path.join(out, "records")))
    if has_errors:
        (df.where(F.col(corrupt).isNotNull())
         .select("topic", "partition", F.col("batchPosition").alias("position"),
                 F.col("batchBaseOffset").alias("baseOffset"), F.col(corrupt).alias("error"))
         .coalesce(1).write.mode("overwrite").json(os.path.join(out, "errors")))

    header_bytes = F.aggregate(
        F.coalesce(F.col("headers"), F.array().cast("array<struct<key:string,value:binary>>")),
        F.lit(0).cast("long"),
        lambda acc, h: acc + F.coalesce(F.octet_length(h["key"]), F.lit(0))
        + F.coalesce(F.octet_length(h["value"]), F.lit(0)))
    ok = F.col(corrupt).isNull() if has_errors else F.lit(True)
    stats = (df.groupBy("topic", "partition").agg(
        F.count(F.when(ok, 1)).alias("records"),
        F.countDistinct(F.when(ok, F.col("batchBaseOffset"))).alias("batches"),
        F.sum(F.when(ok, F.coalesce(F.octet_length("key"), F.lit(0))
                     + F.coalesce(F.octet_length("value"), F.lit(0)) + header_bytes)).alias("bytes"),
        F.min("offset").alias("minOffset"), F.max("offset").alias("maxOffset"),
        F.min(F.unix_millis("timestamp")).alias("minTimestampMs"),
        F.max(F.unix_millis("timestamp")).alias("maxTimestampMs"),
        F.array_sort(F.collect_set("compression")).alias("codecs"),
        F.count(F.when(~ok, 1)).alias("errors"),
        F.collect_list(F.col(corrupt) if has_errors else F.lit(None).cast("string")).alias("messages"))
        .orderBy("topic", "partition").collect())
    df.unpersist()

    disk = _segments_on_disk(args.log_dir)
    rows = []
    for r in stats:
        d = disk.get((r["topic"], r["partition"]), {})
        rows.append({
            "topic": r["topic"], "partition": r["partition"],
            "segments": d.get("segments", 0), "segment_bytes": d.get("segment_bytes", 0),
            "records": r["records"], "batches": r["batches"], "bytes": r["bytes"] or 0,
            "min_offset": r["minOffset"], "max_offset": r["maxOffset"],
            "min_timestamp_ms": r["minTimestampMs"], "max_timestamp_ms": r["maxTimestampMs"],
            "codecs": list(r["codecs"]), "errors": r["errors"], "error_messages": list(r["messages"]),
        })
    for key, d in disk.items():   # partitions whose segments hold no record at all
        if not any((x["topic"], x["partition"]) == key for x in rows):
            rows.append({"topic": key[0], "partition": key[1], "segments": d["segments"],
                         "segment_bytes": d["segment_bytes"], "records": 0, "batches": 0, "bytes": 0,
                         "min_offset": None, "max_offset": None, "min_timestamp_ms": None,
                         "max_timestamp_ms": None, "codecs": [], "errors": 0, "error_messages": []})
    rows.sort(key=lambda x: (x["topic"] or "", -1 if x["partition"] is None else x["partition"]))
    summary = {
        "log_dir": os.path.abspath(args.log_dir), "out_dir": out, "mode": args.mode,
        "read_committed": args.read_committed, "kafkarec": reg.fingerprint,
        "records": sum(x["records"] for x in rows), "errors": sum(x["errors"] for x in rows),
        "seconds": round(time.time() - started, 2), "partitions": rows,
    }
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    _print(summary)
    spark.stop()
    return 0


def _print(summary: dict) -> None:
    head = (f"{'topic':<16} {'part':>4} {'segs':>4} {'seg bytes':>10} {'records':>9} {'batches':>7} "
            f"{'bytes':>10} {'offsets':>15} {'errors':>6}  codecs")
    print(f"kafkarec spark job: {summary['log_dir']} -> {summary['out_dir']} (mode {summary['mode']})")
    print(head)
    print("-" * len(head))
    for x in summary["partitions"]:
        offsets = "-" if x["min_offset"] is None else f"{x['min_offset']}-{x['max_offset']}"
        part = "-" if x["partition"] is None else x["partition"]
        print(f"{x['topic'] or '?':<16} {part:>4} {x['segments']:>4} {x['segment_bytes']:>10} "
              f"{x['records']:>9} {x['batches']:>7} {x['bytes']:>10} {offsets:>15} {x['errors']:>6}  "
              f"{','.join(x['codecs'])}")
    print("-" * len(head))
    print(f"total: {summary['records']} records, {summary['errors']} errors, "
          f"{summary['seconds']} s")
    if summary["mode"] == "DROPMALFORMED":
        print("mode DROPMALFORMED: batches that could not be decoded were left out and are not "
              "counted here; the executors' log names each one")
    for x in summary["partitions"]:
        for m in x["error_messages"]:
            print(f"error in {x['topic']}-{x['partition']}: {m}")


if __name__ == "__main__":
    sys.exit(main())
