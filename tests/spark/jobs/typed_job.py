"""A job of the one user-way application (tests/support/spark/user_app.py), for tests/spark/test_typed.py:
typed values from a log directory that holds ``_schemas-0`` and an evolved Avro topic, on bare
executors (kafkarec from the ``--py-files`` wheel).

``run(spark, LOGDIR, CORRUPT_LOGDIR)``: CORRUPT_LOGDIR is a copy of LOGDIR where one batch of orders-0
fails its CRC (read with badRecordsPath).
"""
import os

from pyspark.sql import functions as F

import spark_udfs


def run(spark, root, corrupt_root):
    spark_udfs.register(spark)
    result = {}

    # 1. The data source: valueFormat/keyFormat=registry, the registry read from the log itself.
    df = (spark.read.format("kafkarec").option("valueFormat", "registry").option("keyFormat", "registry")
          .option("registry", root).option("topics", "orders").load(root))
    result["schema"] = df.schema.jsonValue()
    result["rows"] = [r.asDict(recursive=True) for r in df.orderBy("offset").collect()]

    # 2. The same on the partition folder (local reader, no selection options).
    df2 = (spark.read.format("kafkarec").option("valueFormat", "registry").option("registry", root)
           .load(root + "/orders-0"))
    result["local_rows"] = [r.asDict(recursive=True) for r in df2.select(
        "offset", "value", "valueSchemaId", "_corrupt_record").orderBy("offset").collect()]

    # 3. DROPMALFORMED leaves out what cannot be decoded.
    # with badRecordsPath: the records left out are kept whole (read twice: a retry writes the same files)
    bad_path = os.path.join(os.path.dirname(os.path.abspath(root)), "bad")
    for _ in range(2):
        result["dropmalformed"] = (spark.read.format("kafkarec").option("valueFormat", "registry")
                                   .option("registry", root).option("topics", "orders")
                                   .option("badRecordsPath", bad_path)
                                   .option("mode", "DROPMALFORMED").load(root).count())
    result["bad_path"] = bad_path

    # 4. FAILFAST names topic, partition, offset and reason.
    try:
        (spark.read.format("kafkarec").option("valueFormat", "registry").option("registry", root)
         .option("topics", "orders").option("mode", "FAILFAST").load(root).collect())
        result["failfast"] = None
    except Exception as exc:       # noqa: BLE001 - the message is what is checked
        result["failfast"] = str(exc)[:4000]

    # 5. from_registry over a plain binary column (as Spark's Kafka source gives).
    raw = spark.read.format("kafkarec").option("topics", "orders").option("includeHeaders", "true").load(root)
    dec = raw.select("offset", spark_udfs.from_registry("value", registry=root, subject="orders-value",
                                                        headers="headers").alias("v"))
    result["from_registry"] = [r.asDict(recursive=True) for r in dec.orderBy("offset").collect()]
    try:
        raw.select(spark_udfs.from_registry(F.col("value"), registry=root, subject="orders-value",
                                            mode="FAILFAST").alias("v")).collect()
        result["from_registry_failfast"] = None
    except Exception as exc:       # noqa: BLE001
        result["from_registry_failfast"] = str(exc)[:4000]

    # 6. The topic's keyed state (view=latest) with typed key and value: each key's last record.
    latest = (spark.read.format("kafkarec").option("view", "latest").option("valueFormat", "registry")
              .option("keyFormat", "registry").option("registry", root).option("topics", "orders").load(root))
    result["latest_rows"] = [r.asDict(recursive=True) for r in latest.orderBy("offset").collect()]

    # 7. A batch that cannot be decoded at all: with badRecordsPath it is copied byte for byte beside the
    # failed records, by the local reader, the reader of selection options, a plain read and a stream.
    kept_in = {}
    for name, opts, path in (("local", {}, corrupt_root + "/orders-0"),
                             ("selection", {"topics": "orders"}, corrupt_root)):
        q = os.path.join(os.path.dirname(os.path.abspath(root)), "undecodable-" + name)
        reader = (spark.read.format("kafkarec").option("valueFormat", "registry").option("registry", root)
                  .option("badRecordsPath", q).option("mode", "DROPMALFORMED"))
        for k, v in opts.items():
            reader = reader.option(k, v)
        result["undecodable_" + name] = reader.load(path).count()
        kept_in[name] = q
    q = os.path.join(os.path.dirname(os.path.abspath(root)), "undecodable-plain")
    plain = (spark.read.format("kafkarec").option("badRecordsPath", q).load(corrupt_root + "/orders-0"))
    result["undecodable_plain"] = plain.filter(F.col("_corrupt_record").isNotNull()).count()
    kept_in["plain"] = q
    q = os.path.join(os.path.dirname(os.path.abspath(root)), "undecodable-stream")
    stream = (spark.readStream.format("kafkarec").option("startingOffsets", "earliest").option("subscribe", "orders")
              .option("valueFormat", "registry").option("registry", root).option("badRecordsPath", q)
              .load(corrupt_root))
    sink = os.path.join(os.path.dirname(os.path.abspath(root)), "undecodable-stream-out")
    (stream.select("offset").writeStream.format("parquet").option("path", sink)
     .option("checkpointLocation", sink + "-checkpoint").trigger(availableNow=True).start()
     .awaitTermination(600))
    result["undecodable_stream"] = spark.read.parquet(sink).count()
    kept_in["stream"] = q
    result["undecodable_paths"] = kept_in

    return result
