"""Every kafkarec surface over one Spark Connect session, run by a client Python that holds
only ``pyspark[connect]`` and kafkarec installed from the wheelhouse (tests/spark/test_connect.py).

    python connect_job.py CONFIG.json

CONFIG: ``remote`` (``local[2]`` or ``sc://host:port``), ``work`` (outputs go there),
``docs_only`` (run docs/spark.md's ``connect.py`` block alone, which makes its own session),
``bytes_read_dir`` (where the server's Python workers count the bytes they read, if they do),
``wheelhouse``, ``sample`` (a log dir with corrupt batches), ``s3`` (``uri`` and storage
``options``), ``typed`` (a log dir with ``_schemas``), ``formats`` (one with Protobuf and JSON
Schema topics), ``stream`` (an empty folder the job
grows).  Writes Parquet files under ``work`` and ``work/result.json``.

``spark.sparkContext``, ``_jvm`` and ``_jsc`` of the Connect session class are replaced by
properties that record the access before raising: ``result["touched"]`` must stay empty.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback

from support.logs.growing_log import GrowingLog


def save(spark, work, df, name):
    df.write.mode("overwrite").parquet(os.path.join(work, name))


def failure(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the message is the result
        return f"{type(exc).__name__}: {exc}"[:4000]
    return None


def surfaces(spark, cfg, work, result):
    """The batch surfaces, written to Parquet under ``work`` (the test runs this on a classic
    session too, and compares the files)."""
    import spark_udfs

    def out(df, name):
        save(spark, work, df, name)
    # 1. batch reads: local and s3://
    sample = cfg["sample"]
    out(spark.read.format("kafkarec").option("includeHeaders", "true").load(sample), "batch_local")
    # a user schema without the records' bytes: the core's meta-only walk, planned by the server
    out(spark.read.format("kafkarec").schema("topic string, partition int, offset long, timestamp timestamp, "
                                             "_corrupt_record string").load(sample), "batch_meta")
    s3 = cfg["s3"]
    out(spark.read.format("kafkarec").options(**s3["options"]).option("includeHeaders", "true")
        .load(s3["uri"]), "batch_s3")
    # 2. error modes
    result["dropmalformed"] = (spark.read.format("kafkarec").option("mode", "DROPMALFORMED")
                               .load(sample).count())
    result["failfast"] = failure(lambda: spark.read.format("kafkarec").option("mode", "FAILFAST")
                                 .load(sample).collect())
    # 3. SQL: kafkarec_decode and kafkarec_explode over the segment files' bytes
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(sample) for f in fs
                   if f.endswith(".log"))
    blobs = spark.createDataFrame([("file:" + p, open(p, "rb").read()) for p in files],
                                  "path string, blob binary")
    blobs.createOrReplaceTempView("blobs")
    out(spark.sql("SELECT path, d.error, r.* FROM (SELECT path, kafkarec_decode(blob) AS d "
                  "FROM blobs) LATERAL VIEW OUTER inline(d.records) r"), "decode")
    out(spark.sql("SELECT b.path, r.* FROM blobs b, LATERAL kafkarec_explode(b.blob) r"), "explode")
    # 4. typed values: valueFormat=registry and from_registry
    typed = cfg["typed"]
    out(spark.read.format("kafkarec").option("valueFormat", "registry")
        .option("keyFormat", "registry").option("registry", typed).option("topics", "orders")
        .load(typed), "typed")
    raw = (spark.read.format("kafkarec").option("topics", "orders")
           .option("includeHeaders", "true").load(typed))
    out(raw.select("offset", spark_udfs.from_registry("value", registry=typed,
                                                      subject="orders-value",
                                                      headers="headers").alias("v")),
        "from_registry")
    # 4b. Protobuf and JSON Schema values (confluent-kafka's serializers): the .proto text is
    # compiled where the column is planned, from the wheels register() shipped
    for topic, message in (("shipments", "kr.ship.Shipment"), ("people", None)):
        r = (spark.read.format("kafkarec").option("valueFormat", "registry")
             .option("registry", cfg["formats"]).option("topics", topic))
        if message:
            r = r.option("valueMessage", message)
        out(r.load(cfg["formats"]), f"typed_{topic}")
    # 5. a keyed topic's state (view=latest): plain, and with typed key and value
    out(spark.read.format("kafkarec").option("view", "latest").load(sample), "latest")
    out(spark.read.format("kafkarec").option("view", "latest").option("valueFormat", "registry")
        .option("keyFormat", "registry").option("registry", typed).option("topics", "orders")
        .load(typed), "typed_latest")
    # 6. cdc=debezium: the change-event columns (the sample's values are no envelopes: cdcError)
    out(spark.read.format("kafkarec").option("cdc", "debezium").option("subscribe", "compacted")
        .load(sample), "cdc")
    # 7. tiered storage: segments Aiven's plugin stored (zstd + AES-GCM chunks, a key prefix).  On the
    # Connect session (bare executors) refused where it is planned while the session has not shipped
    # the tiered extra (cryptography), read once a second register() shipped it
    tiered = cfg["tiered"]
    from spark_udfs.ship import shipping
    if shipping.is_connect(spark):
        try:
            spark.read.format("kafkarec").option("tieredStorageConfig", f"{tiered}/both/rsm.properties") \
                .load(f"{tiered}/both/objects").schema
            result["tiered_unshipped"] = None
        except Exception as exc:  # noqa: BLE001 - the message is the result
            result["tiered_unshipped"] = str(exc)[:20000]     # the Python error first, the JVM stack after
        result["tiered_shipped"] = [os.path.basename(s.shipped_as) for s in spark_udfs.register(
            spark, wheelhouse=cfg["wheelhouse"], extras=["tiered"], verify=False).shipped]
    out(spark.read.format("kafkarec").option("tieredStorageConfig", f"{tiered}/both/rsm.properties")
        .load(f"{tiered}/both/objects"), "tiered")
    # 8. a log dir whose log start deleteRecords moved: from the checkpoint, and every record of the
    # files with includeDeletedRecords (issue 40)
    out(spark.read.format("kafkarec").load(cfg["log_start"]), "log_start")
    out(spark.read.format("kafkarec").option("startingOffsets", "earliest").option("subscribe", "t")
        .load(cfg["log_start"]), "log_start_listed")
    out(spark.read.format("kafkarec").option("includeDeletedRecords", "true").load(cfg["log_start"]),
        "log_start_all")
    # 9. an object shorter than its manifest says: the read fails naming the object and the chunk
    lying = cfg["lying"]
    try:
        spark.read.format("kafkarec").option("tieredStorageConfig", f"{lying}/rsm.properties") \
            .load(f"{lying}/objects").count()
        result["lying"] = None
    except Exception as exc:  # noqa: BLE001 - the message is the result: its end holds the worker's error
        result["lying"] = str(exc)[-3000:]


def main():
    cfg = json.load(open(sys.argv[1]))
    work = cfg["work"]
    if cfg.get("docs_only"):
        # remote("local[2]"): the docs' block alone makes the session (the client starts the server)
        with open(os.path.join(work, "result.json"), "w") as fh:
            json.dump({"docs_example": docs_example(cfg)}, fh)
        from pyspark.sql import SparkSession
        SparkSession.builder.remote(cfg["remote"]).getOrCreate().stop()     # the block's session
        return
    result: dict = {"touched": [], "exceptions": []}
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.remote(cfg["remote"])
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    result["session_class"] = f"{type(spark).__module__}.{type(spark).__qualname__}"
    result["client_kafkarec"] = __import__("kafkarec").__file__

    cls = type(spark)
    for attr in ("sparkContext", "_jvm", "_jsc"):
        def _raise(self, _attr=attr):
            result["touched"].append(f"{_attr}: " + "".join(traceback.format_stack(limit=6)))
            raise AssertionError(f"spark_udfs touched {_attr} on a Connect session")
        setattr(cls, attr, property(_raise))

    import spark_udfs

    t0 = time.monotonic()
    reg = spark_udfs.register(spark, wheelhouse=cfg["wheelhouse"])
    result["register_s"] = time.monotonic() - t0
    result["fingerprint"] = reg.fingerprint
    result["executors"] = reg.executors
    result["shipped"] = [os.path.basename(s.shipped_as) for s in reg.shipped]
    result["parallelism"] = reg.data_source.default_min_partitions
    # again, without the check job: the parallelism from conf or a spark.range job
    result["parallelism_unverified"] = spark_udfs.register(
        spark, wheelhouse=cfg["wheelhouse"], verify=False).data_source.default_min_partitions
    surfaces(spark, cfg, work, result)
    pushdown(spark, cfg, result)
    stream(spark, cfg, work, result)
    # a stream from earliest over a log whose log start deleteRecords moved: from the log start
    q = (spark.readStream.format("kafkarec").option("startingOffsets", "earliest").load(cfg["log_start"])
         .writeStream.format("parquet").option("checkpointLocation", os.path.join(work, "ck-log_start"))
         .trigger(availableNow=True).start(os.path.join(work, "stream_log_start")))
    q.awaitTermination(300)
    if q.exception() is not None:
        result["exceptions"].append(str(q.exception())[:4000])
    if cfg.get("docs"):
        result["docs_example"] = docs_example(cfg)
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)
    spark.stop()


def pushdown(spark, cfg, result):
    """DataFrame filters pushed into the read (jobs/pushdown_job.py's queries); the bytes the
    server's Python workers read when the server counts them into ``bytes_read_dir`` (the
    session's Connect server: its planner's and executors' environment name the folder)."""
    import pushdown_job
    folder = cfg.get("bytes_read_dir")
    counted = None
    if folder:
        from kafkarec.log.storage import bytes_read

        def counted():
            return bytes_read(folder)
    result["pushdown"] = pushdown_job.queries(spark, cfg["events"], counted)
    result["pushdown_counted"] = counted is not None


def docs_example(cfg):
    """docs/spark.md's ``# connect.py`` block, run as written (its ``getOrCreate()`` returns
    this job's session); what it prints."""
    import contextlib
    import io
    import re
    text = open(cfg["docs"], encoding="utf-8").read()
    m = re.search(r"^```python\n(# connect\.py.*?)^```", text, re.S | re.M)
    if m is None:
        raise SystemExit("docs/spark.md has no # connect.py block")
    out = io.StringIO()
    argv = sys.argv
    sys.argv = ["connect.py", cfg["remote"], cfg["wheelhouse"], cfg["sample"]]
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(m.group(1), "connect.py", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = argv
    return out.getvalue()


def stream(spark, cfg, work, result):
    import spark_udfs
    # 5. a stream to a Parquet sink, stopped and restarted from its checkpoint; read_committed
    root = cfg["stream"]
    g = GrowingLog(root)
    g.append("orders", 0, 40)
    g.append("orders", 1, 25)
    g.txn_append("orders", 1, 5, producer_id=7)
    g.txn_end("orders", 1, 7, commit=False)
    g.txn_append("orders", 0, 6, producer_id=8)          # open: read_committed stops before it


    def run_stream(name, **options):
        q = (spark.readStream.format("kafkarec").option("startingOffsets", "earliest")
             .options(**options).load(root)
             .writeStream.format("parquet").option("checkpointLocation", os.path.join(work, "ck-" + name))
             .trigger(availableNow=True).start(os.path.join(work, name)))
        q.awaitTermination(300)
        progress = [json.loads(p.json) for p in q.recentProgress]
        if q.exception() is not None:
            result["exceptions"].append(str(q.exception())[:4000])
        return progress

    p1 = run_stream("stream", maxOffsetsPerTrigger="30")
    run_stream("committed", **{"kafka.isolation.level": "read_committed"})
    result["progress"] = p1
    result["lag"] = [spark_udfs.offsets_behind_latest(p) for p in p1]
    g.append("orders", 0, 10)
    g.txn_end("orders", 0, 8, commit=True)
    g.append("pay", 0, 12)                                # a new partition after the restart
    p2 = run_stream("stream", maxOffsetsPerTrigger="30")
    run_stream("committed", **{"kafka.isolation.level": "read_committed"})
    result["progress2"] = p2
    result["written"] = [[t, p, o, v.decode()] for t, p, o, v in g.written]
    result["committed"] = [[t, p, o, v.decode()] for t, p, o, v in g.committed()]
    result["stream_batches"] = [len(p1), len(p2)]


if __name__ == "__main__":
    main()
