"""A job of the one user-way application (tests/support/spark/user_app.py), for
tests/tiered/test_tiered_spark.py: segments Aiven's tiered-storage plugin stored (chunked, zstd,
AES-GCM), read on bare executors (kafkarec from the ``--py-files`` wheel) by
``format("kafkarec").option("tieredStorageConfig", <the plugin's properties>)``.

``run(spark, DATA, LYING)``: LYING holds copies whose objects disagree with their manifests
(tests/support/logs/lying_objects.py), one folder per damage.
"""
import spark_udfs


def run(spark, data, lying):
    spark_udfs.register(spark, extras=["tiered"])      # AES-GCM chunks: cryptography on the executors
    result = {}
    for variant in ("plain", "zstd", "aes", "both", "small", "large"):
        df = (spark.read.format("kafkarec").option("tieredStorageConfig", f"{data}/{variant}/rsm.properties")
              .option("maxPartitionBytes", "4096").load(f"{data}/{variant}/objects"))
        rows = df.selectExpr("topic", "partition", "offset", "hex(key) AS key",
                             "hex(value) AS value").orderBy("topic", "offset").collect()
        result[variant] = [r.asDict() for r in rows]
        result[variant + " tasks"] = df.rdd.getNumPartitions()
    # a selection: offsets from 300 in clicks, as the Kafka source's options say it
    sel = (spark.read.format("kafkarec").option("tieredStorageConfig", f"{data}/both/rsm.properties")
           .option("subscribe", "clicks").option("startingOffsets", '{"clicks":{"0":300}}')
           .option("endingOffsets", '{"clicks":{"0":650}}').load(f"{data}/both/objects"))
    result["selection"] = [r.offset for r in sel.select("offset").orderBy("offset").collect()]
    # a stream over the same objects (Trigger.AvailableNow): the batch read's rows
    query = (spark.readStream.format("kafkarec").option("tieredStorageConfig", f"{data}/both/rsm.properties")
             .option("startingOffsets", "earliest").load(f"{data}/both/objects")
             .selectExpr("topic", "partition", "offset", "hex(key) AS key", "hex(value) AS value")
             .writeStream.format("memory").queryName("tiered").trigger(availableNow=True).start())
    query.awaitTermination(300)
    result["stream"] = [r.asDict() for r in spark.sql("SELECT * FROM tiered ORDER BY topic, offset").collect()]
    # without the key ring an encrypted segment is an error naming it
    try:
        spark.read.format("kafkarec").option("subscribe", "clicks").load(f"{data}/aes/objects").count()
        result["no keys"] = None
    except Exception as exc:  # noqa: BLE001 - the message is the result
        result["no keys"] = str(exc)[-3000:]
    # objects that disagree with their manifests: the read fails naming the object and the chunk,
    # in a batch and in a stream, whatever the mode
    for variant, damage in (("plain", "more chunks"), ("zstd", "short")):
        base = f"{lying}/{damage}/{variant}"
        for how in ("batch", "batch DROPMALFORMED", "stream"):
            name = f"lying {variant} {damage} {how}"
            try:
                if how == "stream":
                    query = (spark.readStream.format("kafkarec")
                             .option("tieredStorageConfig", f"{base}/rsm.properties")
                             .option("startingOffsets", "earliest").load(f"{base}/objects")
                             .writeStream.format("memory").queryName(name.replace(" ", "_"))
                             .trigger(availableNow=True).start())
                    query.awaitTermination(300)
                else:
                    (spark.read.format("kafkarec").option("tieredStorageConfig", f"{base}/rsm.properties")
                     .option("mode", how.split(" ")[1] if " " in how else "PERMISSIVE")
                     .load(f"{base}/objects").count())
                result[name] = None
            except Exception as exc:  # noqa: BLE001 - the message is the result (a stream's holds its trace)
                result[name] = str(exc)
    return result
