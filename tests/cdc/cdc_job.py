"""A job of the one user-way application (tests/support/spark/user_app.py), for tests/cdc/test_cdc_spark.py:
Debezium's change events on bare executors (kafkarec from the ``--py-files`` wheel), as rows
(view=log), as the mirrored table (view=latest) and as a stream.

``run(spark, LOGDIR, MARIADB_LOGDIR)``: the PostgreSQL capture's log dir and the MariaDB
capture's ("" when MariaDB is not installed).
"""
import spark_udfs


def run(spark, root, mariadb_root=""):
    spark_udfs.register(spark)
    result = {}
    # A truncate on one partition of a 3-partition topic applies to all of them (issue 40).
    topics = [(root, f"parted.public.{table}") for table in ("customers", "orders")]
    if mariadb_root:
        topics += [(mariadb_root, f"{prefix}.shop.{table}") for prefix in ("plain", "dbz")
                   for table in ("items", "orders", "order_lines")]
    for where, topic in topics:
        state = (spark.read.format("kafkarec").option("cdc", "debezium").option("view", "latest")
                 .option("subscribe", topic).load(where))
        result[f"{topic} latest"] = [r.asDict() for r in state.select("partition", "offset", "op", "after",
                                                                      "cdcError").collect()]
    if mariadb_root:
        for name, stream in (("batch", spark.read), ("stream", spark.readStream)):
            frame = (stream.format("kafkarec").option("cdc", "debezium").option("subscribe", "plain.shop.orders")
                     .option("startingOffsets", "earliest").load(mariadb_root)
                     .select("partition", "offset", "op", "before", "after", "source", "cdcError"))
            if name == "stream":
                query = (frame.writeStream.format("memory").queryName("mariadb_changes")
                         .trigger(availableNow=True).start())
                query.awaitTermination(300)
                frame = spark.sql("SELECT * FROM mariadb_changes")
            result[f"mariadb {name}"] = [r.asDict() for r in frame.orderBy("partition", "offset").collect()]
    for prefix in ("plain", "dbz"):
        for table in ("customers", "orders"):
            topic = f"{prefix}.public.{table}"
            state = (spark.read.format("kafkarec").option("cdc", "debezium").option("view", "latest")
                     .option("subscribe", topic).load(root))
            result[f"{topic} latest"] = [r.asDict() for r in state.select("offset", "op", "after", "cdcError")
                                         .orderBy("offset").collect()]
            log = spark.read.format("kafkarec").option("cdc", "debezium").option("subscribe", topic).load(root)
            result[f"{topic} log"] = [r.asDict() for r in log.select("offset", "op", "before", "after", "ts_ms",
                                                                     "cdcError").orderBy("offset").collect()]
    # Debezium's Avro through the registry (the capture's own _schemas log): typed keys and values.
    for table in ("customers", "orders"):
        topic = f"avro.public.{table}"

        def typed(view):
            return (spark.read.format("kafkarec").option("cdc", "debezium").option("view", view)
                    .option("valueFormat", "registry").option("keyFormat", "registry").option("registry", root)
                    .option("subscribe", topic).load(root))
        result[f"{topic} latest"] = [r.asDict(recursive=True) for r in typed("latest").select(
            "offset", "key", "op", "after", "cdcError", "_corrupt_record").orderBy("offset").collect()]
        result[f"{topic} log"] = [r.asDict(recursive=True) for r in typed("log").select(
            "offset", "op", "before", "after", "ts_ms", "cdcError", "_corrupt_record").orderBy("offset").collect()]
    query = (spark.readStream.format("kafkarec").option("cdc", "debezium")
             .option("subscribe", "avro.public.customers")
             .option("valueFormat", "registry").option("registry", root)
             .option("startingOffsets", "earliest").load(root)
             .select("offset", "op", "before", "after", "ts_ms", "cdcError", "_corrupt_record")
             .writeStream.format("memory").queryName("avro_changes").trigger(availableNow=True).start())
    query.awaitTermination(300)
    result["avro stream"] = [r.asDict(recursive=True)
                             for r in spark.sql("SELECT * FROM avro_changes ORDER BY offset").collect()]

    # A stream of change events (Trigger.AvailableNow): the same rows as the batch read.
    query = (spark.readStream.format("kafkarec").option("cdc", "debezium")
             .option("subscribe", "plain.public.customers")
             .option("startingOffsets", "earliest").load(root)
             .select("offset", "op", "before", "after", "ts_ms", "cdcError")
             .writeStream.format("memory").queryName("changes").trigger(availableNow=True).start())
    query.awaitTermination(300)
    result["stream"] = [r.asDict() for r in spark.sql("SELECT * FROM changes ORDER BY offset").collect()]
    return result
