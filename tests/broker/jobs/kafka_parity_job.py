"""The broker tests' spark-submit job (tests/support/spark/spark_app.py submits it for
tests/broker/test_spark_kafka_parity.py and tests/broker/test_broker_tiered.py), run as a user
runs kafkarec: a bare Python (pyspark, pyarrow, pandas), ``--py-files <kafkarec wheel>`` and
Spark's Kafka source from ``--jars``.

    kafka_parity_job.py BOOTSTRAP LIVE_LOG_DIR SPEC.json OUT

For each case of SPEC (``{"cases": [{"name", "topics", "options"}], "typed": {...}}``) it writes
Parquet folders under OUT/<name>/: ``kafka`` (Spark's Kafka source against the live broker),
``live`` (format("kafkarec") on the broker's log dir while it runs).  SPEC's ``typed``
(``topic``, ``writers``: schema id -> writer schema text, ``reader``: the subject's latest
schema) adds OUT/typed/``from_avro`` (the Kafka source's values past Confluent's 5-byte prefix
through spark-avro's ``from_avro`` with the writer schema and ``avroSchema`` = the reader
schema, per writer id) and OUT/typed/``kafkarec`` (``valueFormat=registry`` on the log dir).  SPEC's ``stream`` (``topics``) adds a
``readStream`` of each source (Trigger.AvailableNow, Parquet sink, checkpoint), run again after
the test produced more records: OUT/stream/``kafka`` and OUT/stream/``kafkarec``.  SPEC's
``state`` (``topics``) adds each topic-partition's keyed state: a window over the Kafka
source and ``view=latest`` (OUT/state-<isolation>/``kafka``, ``live``, ``stopped``).  SPEC's
``stopped`` (a copy of the broker's log dir after a clean shutdown) gives ``stopped`` for every
case.  SPEC's ``tiered`` (``topic``; the broker's tiered storage ``remote``, the stopped copy's
``stopped_remote``, and ``gappy_remote``, that copy with one segment removed) adds
OUT/tiered/kafka_source.json (Spark's Kafka source on the live broker, which serves the early
offsets from its remote storage, and kafkarec's read of the live log dir stitched with
``remote``) and OUT/tiered/stitched.json (the stopped copy stitched, split into several tasks;
the gappy one failing, then read with failOnDataLoss=false).  SPEC's ``log_start`` (``topics``:
those whose log start offset deleteRecords moved) adds OUT/log-start/``<where>-<reading>``: the
topics' partition folders loaded without a selection (the local reader), both isolation levels,
and with ``includeDeletedRecords`` (every record of the files; ``<where>-included.error.txt``
when that read fails).  SPEC's ``restore`` (``source``, ``target``: the restore tests' history and
second broker; ``options``: RestoreSpec.of's keywords; ``partial``: what an earlier, part-way run
under the same restore id changes) adds OUT/restore/: that part-way run (kafkarec.restore on the
driver), then ``spark_udfs.restore`` twice, ``run-<i>/`` holding each run's offset map, groups' and
share groups' CSV, and ``runs.json`` what each did (``error.txt`` when it raised: only the restore's
tests fail then).
"""
import json
import os
import sys
import time

from pyspark.sql import SparkSession

import spark_udfs

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
STARTED = time.monotonic()


def say(what):
    """A step done, with the seconds since the job started (job.log shows where the time went)."""
    print(f"parity job: {what} ({time.monotonic() - STARTED:.0f} s)", flush=True)


def reader(spark, fmt, topics, options):
    r = spark.read.format(fmt).option("subscribe", ",".join(topics)).option("includeHeaders", "true")
    for k, v in options.items():
        r = r.option(k, v)
    return r


def typed(spark, bootstrap, live_dir, spec, out):
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro
    raw = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", spec["topic"]).load())
    writer_id = F.conv(F.hex(F.substring("value", 2, 4)), 16, 10).cast("int")
    parts = []
    for wid, writer in sorted(spec["writers"].items()):
        body = F.expr("substring(value, 6, length(value) - 5)")
        parts.append(raw.where(writer_id == int(wid)).select(
            "offset", from_avro(body, writer, {"avroSchema": spec["reader"], "mode": "FAILFAST"}).alias("value")))
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    union.write.parquet(os.path.join(out, "from_avro"))
    (spark.read.format("kafkarec").option("subscribe", spec["topic"]).option("valueFormat", "registry")
     .option("registry", live_dir).load(live_dir)
     .select("offset", "value", "_corrupt_record").write.parquet(os.path.join(out, "kafkarec")))
    say("typed written")


def state(spark, bootstrap, log_dir, topics, out, where):
    """Each topic-partition's keyed state, both isolation levels: the window a user writes over
    the Kafka source (each key's last record by offset, tombstones and null keys left out) into
    OUT/state-<isolation>/kafka, and ``view=latest`` on the log dir into .../``where``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    last_first = Window.partitionBy("topic", "partition", "key").orderBy(F.col("offset").desc())
    for isolation in ("read_uncommitted", "read_committed"):
        base = os.path.join(out, "state-" + isolation)
        if where == "live":
            (reader(spark, "kafka", topics, {"kafka.isolation.level": isolation})
             .option("kafka.bootstrap.servers", bootstrap).load()
             .where("key IS NOT NULL").withColumn("_n", F.row_number().over(last_first))
             .where("_n = 1 AND value IS NOT NULL").select(*COLUMNS)
             .write.parquet(os.path.join(base, "kafka")))
        (reader(spark, "kafkarec", topics, {"kafka.isolation.level": isolation, "view": "latest"})
         .load(log_dir).select(*COLUMNS).write.parquet(os.path.join(base, where)))
    say(f"state {where} written")


TIERED_COLUMNS = ["topic", "partition", "offset", "hex(key) AS key", "hex(value) AS value",
                  "unix_millis(timestamp) AS ts", "timestampType"]


def tiered_kafka_source(spark, bootstrap, live_dir, spec, out):
    """Spark's Kafka source and kafkarec's stitched read of the live broker's tiered topic."""
    kafka = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", spec["topic"]).option("startingOffsets", "earliest")
             .option("endingOffsets", "latest").load())
    ours = (spark.read.format("kafkarec").option("tieredStorage", spec["remote"])
            .option("subscribe", spec["topic"]).load(live_dir))
    result = {name: [list(r) for r in df.selectExpr(*TIERED_COLUMNS).orderBy("offset").collect()]
              for name, df in (("kafka", kafka), ("kafkarec", ours))}
    with open(os.path.join(out, "kafka_source.json"), "w") as f:
        json.dump(result, f)
    say("tiered kafka source written")


def tiered_stitched(spark, stopped_dir, spec, out):
    """The stopped copy stitched with its tiered storage, and with the gappy copy of it."""
    def read(remote):
        return spark.read.format("kafkarec").option("tieredStorage", remote).option("subscribe", spec["topic"])

    result = {}
    df = read(spec["stopped_remote"]).option("maxPartitionBytes", "8192").load(stopped_dir)
    result["rows"] = [[r.offset, r.key, r.value] for r in df.selectExpr(
        "offset", "hex(key) AS key", "hex(value) AS value").orderBy("offset").collect()]
    result["tasks"] = df.rdd.getNumPartitions()
    try:
        read(spec["gappy_remote"]).load(stopped_dir).count()
        result["gap"] = None
    except Exception as exc:  # noqa: BLE001 - the message is the result
        result["gap"] = str(exc)[-2000:]
    lenient = read(spec["gappy_remote"]).option("failOnDataLoss", "false").load(stopped_dir)
    result["lenient"] = [r.offset for r in lenient.select("offset").orderBy("offset").collect()]
    with open(os.path.join(out, "stitched.json"), "w") as f:
        json.dump(result, f)
    say("tiered stitched written")


def log_start(spark, log_dir, topics, out, where):
    """The topics whose log start deleteRecords moved, read by the local reader (their partition
    folders by globs, no selection option) in both isolation levels, and with
    ``includeDeletedRecords`` (a selection option: the listed reader)."""
    folders = [os.path.join(log_dir, f"{t}-*") for t in topics]
    base = os.path.join(out, "log-start")
    for isolation in ("read_uncommitted", "read_committed"):
        (spark.read.format("kafkarec").option("includeHeaders", "true").option("kafka.isolation.level", isolation)
         .load(folders).select(*COLUMNS).write.parquet(os.path.join(base, f"{where}-local-{isolation}")))
    included = os.path.join(base, f"{where}-included")
    try:
        (reader(spark, "kafkarec", topics, {"includeDeletedRecords": "true"}).load(log_dir)
         .select(*COLUMNS).write.parquet(included))
    except Exception as exc:  # noqa: BLE001 - the option's own test reports it; the other cases go on
        with open(included + ".error.txt", "w") as f:
            f.write(str(exc)[-4000:])
    say(f"log start {where} written")


def wait_for(path, what, timeout=300):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"parity job: {what} not within {timeout} s")
        time.sleep(0.2)


def streams(spark, bootstrap, live_dir, spec, out):
    """readStream of each source with Trigger.AvailableNow into a Parquet sink, twice: the test
    produces more records in between (OUT/_stream1_done, then it writes OUT/_more_data)."""
    base = os.path.join(out, "stream")

    def run(fmt):
        r = (spark.readStream.format(fmt).option("subscribe", ",".join(spec["topics"]))
             .option("includeHeaders", "true")
             .option("startingOffsets", "earliest"))
        if fmt == "kafka":
            r = r.option("kafka.bootstrap.servers", bootstrap).load()
        else:
            r = r.load(live_dir)
        q = (r.select(*COLUMNS).writeStream.format("parquet").option("path", os.path.join(base, fmt))
             .option("checkpointLocation", os.path.join(base, fmt + "-checkpoint"))
             .trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert not q.isActive, f"{fmt} stream still running after 300 s"
        if q.exception() is not None:
            raise q.exception()

    for fmt in ("kafka", "kafkarec"):
        run(fmt)
    open(os.path.join(out, "_stream1_done"), "w").close()
    wait_for(os.path.join(out, "_more_data"), "more stream data")
    for fmt in ("kafka", "kafkarec"):
        run(fmt)
    say("streams written")


def restore(spark, spec, out):
    import traceback
    from kafkarec import restore as R
    os.makedirs(out)
    try:
        # an earlier run that stopped part-way (an earlier end) under the same restore id
        R.restore(R.RestoreSpec.of(spec["source"], spec["target"], **{**spec["options"], **spec["partial"]}))
        runs = []
        for i in range(2):
            folder = os.path.join(out, f"run-{i}")
            os.makedirs(folder)
            started, cpu = time.monotonic(), time.process_time()
            done = spark_udfs.restore(spark, spec["source"], spec["target"],
                                      offset_map=os.path.join(folder, "map.csv"),
                                      groups_csv=os.path.join(folder, "groups.csv"),
                                      share_groups_csv=os.path.join(folder, "shares.csv"), **spec["options"])
            runs.append({"seconds": time.monotonic() - started, "driver_cpu_seconds": time.process_time() - cpu,
                         "created": done.result.created_topics,
                         "partitions": [s._asdict() for s in done.result.partitions],
                         "groups": len(done.finished.groups), "share_groups": len(done.finished.share_groups)})
            say(f"restore run {i} done")
        with open(os.path.join(out, "runs.json"), "w") as fh:
            json.dump(runs, fh)
    except Exception:       # noqa: BLE001 - the restore's tests read it; the other checks go on
        with open(os.path.join(out, "error.txt"), "w") as fh:
            fh.write(traceback.format_exc())
        say("restore raised")


def main():
    bootstrap, live_dir, spec_path, out = sys.argv[1:5]
    with open(spec_path) as fh:
        spec = json.load(fh)
    spark = SparkSession.builder.appName("kafkarec-kafka-parity").getOrCreate()
    spark_udfs.register(spark)
    for case in spec["cases"]:
        base = os.path.join(out, case["name"])
        (reader(spark, "kafka", case["topics"], case["options"])
         .option("kafka.bootstrap.servers", bootstrap).load()
         .select(*COLUMNS).write.parquet(os.path.join(base, "kafka")))
        (reader(spark, "kafkarec", case["topics"], case["options"]).load(live_dir)
         .select(*COLUMNS).write.parquet(os.path.join(base, "live")))
        say(f"{case['name']} kafka and live written")
    if spec.get("typed"):
        typed(spark, bootstrap, live_dir, spec["typed"], os.path.join(out, "typed"))
    if spec.get("state"):
        state(spark, bootstrap, live_dir, spec["state"]["topics"], out, "live")
    if spec.get("log_start"):
        log_start(spark, live_dir, spec["log_start"]["topics"], out, "live")
    stopped_dir = spec["stopped"]
    for case in spec["cases"]:
        (reader(spark, "kafkarec", case["topics"], case["options"]).load(stopped_dir)
         .select(*COLUMNS).write.parquet(os.path.join(out, case["name"], "stopped")))
    if spec.get("state"):
        state(spark, bootstrap, stopped_dir, spec["state"]["topics"], out, "stopped")
    if spec.get("log_start"):
        log_start(spark, stopped_dir, spec["log_start"]["topics"], out, "stopped")
    if spec.get("tiered"):
        os.makedirs(os.path.join(out, "tiered"))
        tiered_kafka_source(spark, bootstrap, live_dir, spec["tiered"], os.path.join(out, "tiered"))
        tiered_stitched(spark, stopped_dir, spec["tiered"], os.path.join(out, "tiered"))
    if spec.get("restore"):
        restore(spark, spec["restore"], os.path.join(out, "restore"))
    if spec.get("stream"):
        streams(spark, bootstrap, live_dir, spec["stream"], out)
    say("done")
    spark.stop()


if __name__ == "__main__":
    main()
