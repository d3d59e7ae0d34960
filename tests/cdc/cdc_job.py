"""A job of the one user-way application (tests/support/user_app.py), for tests/cdc/test_cdc_spark.py:
Debezium's change events on bare executors (kafkarec from the ``--py-files`` wheel), as rows
(view=log), as the mirrored table (view=latest) and as a stream.

``run(spark, LOGDIR)``.
"""
import spark_udfs


def run(spark, root):
    spark_udfs.register(spark)
    result = {}
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
