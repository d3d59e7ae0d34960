"""Every Spark path of spark_udfs in one job, as the cluster tests submit it:

    spark-submit --py-files <kafkarec wheel> paths_job.py LOG_DIR OUT_DIR [--marker DIR --delay S]

Writes Parquet to OUT_DIR/ds (``spark.read.format("kafkarec")``),
OUT_DIR/meta (a user schema of topic, partition, offset, timestamp: the meta-only walk),
OUT_DIR/assign (the Kafka source's ``assign`` with specific starting/ending offsets),
OUT_DIR/explode (``spark_udfs.explode_records`` over the segment files read
with binaryFile) and OUT_DIR/decode (SQL ``kafkarec_decode`` + ``inline``), and
OUT_DIR/register.json (what register shipped and saw).  With ``--marker``,
every task of the data source write first touches a file in DIR and sleeps
``--delay`` seconds, so a test can kill a worker while the job runs.

Also a part of the session's stream applications on the same cluster (streams_job.py's ``paths``,
``run(spark, WORK, phase)``: LOG_DIR is WORK/logs, OUT_DIR WORK/out, in their SparkSession, whose
``spark_udfs.register`` is ``spark._kafkarec_registration``): the same deployment (the bare
Python 3.12, the cp312 wheel as ``--py-files``) without an application of its own.
"""
import argparse
import json
import os
import sys
import time

ASSIGN = '{"orders":[1]}'
STARTING = '{"orders":{"1":150}}'
ENDING = '{"orders":{"1":1500}}'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--marker")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--only", choices=["ds", "all"], default="all")
    ap.add_argument("--max-partition-bytes", default="24k")
    args = ap.parse_args()
    import spark_udfs   # from the --py-files wheel: nothing else has kafkarec
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName("kafkarec-paths").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    reg = spark_udfs.register(spark)
    paths(spark, reg, args.log_dir, args.out_dir, marker=args.marker, delay=args.delay, only=args.only,
          max_partition_bytes=args.max_partition_bytes)
    spark.stop()
    return 0


def run(spark, work, phase):
    """The job as a part of streams_job.py's application (every path, no marker)."""
    paths(spark, spark._kafkarec_registration, os.path.join(work, "logs"), os.path.join(work, "out"))


def paths(spark, reg, log_dir, out, *, marker=None, delay=0.0, only="all", max_partition_bytes="24k"):
    import spark_udfs   # from the --py-files wheel: nothing else has kafkarec
    from spark_udfs.ship import runtime as _runtime
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "register.json"), "w") as fh:
        json.dump({"fingerprint": reg.fingerprint, "executors": reg.executors,
                   "shipped": [s.shipped_as or s.source for s in reg.shipped],
                   "driver_kafkarec": _runtime.describe()}, fh, indent=1)

    ds = (spark.read.format("kafkarec").option("batchColumns", "true").option("includeHeaders", "true")
          .option("maxPartitionBytes", max_partition_bytes).load(log_dir))
    if marker:
        def slow(batches):
            from pyspark import TaskContext
            ctx = TaskContext.get()
            name = f"{ctx.partitionId()}-{ctx.attemptNumber()}-{os.getpid()}"
            open(os.path.join(marker, name), "w").close()
            time.sleep(delay)
            yield from batches

        ds = ds.mapInArrow(slow, ds.schema)
    ds.write.mode("overwrite").parquet(os.path.join(out, "ds"))
    if only == "ds":
        return

    # a user schema without the records' bytes: the core's meta-only walk on executors that have
    # only the wheel
    (spark.read.format("kafkarec").schema("topic string, partition int, offset long, timestamp timestamp")
     .option("mode", "DROPMALFORMED").load(log_dir)
     .write.mode("overwrite").parquet(os.path.join(out, "meta")))

    # Spark's Kafka-source option assign, with specific offsets naming just the assigned
    # partition (ranges cut inside batches and across segments): planned on the driver,
    # read by executors that have only the wheel
    (spark.read.format("kafkarec").option("assign", ASSIGN)
     .option("startingOffsets", STARTING).option("endingOffsets", ENDING).load(log_dir)
     .write.mode("overwrite").parquet(os.path.join(out, "assign")))

    files = (spark.read.format("binaryFile").option("pathGlobFilter", "*.log")
             .option("recursiveFileLookup", "true").load(log_dir).select("path", "content"))
    (spark_udfs.explode_records(files, "content", keep=["path"])
     .write.mode("overwrite").parquet(os.path.join(out, "explode")))
    files.createOrReplaceTempView("segment_files")
    (spark.sql("SELECT path, d.error AS error, d.records AS records FROM "
               "(SELECT path, kafkarec_decode(content) AS d FROM segment_files)")
     .selectExpr("path", "error", "inline_outer(records)")
     .write.mode("overwrite").parquet(os.path.join(out, "decode")))


if __name__ == "__main__":
    sys.exit(main())
