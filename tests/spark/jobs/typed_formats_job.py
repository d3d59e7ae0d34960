"""A job of the one user-way application (tests/support/spark/user_app.py), for
tests/spark/test_typed_formats.py: Protobuf and JSON Schema topics of a log directory that holds
``_schemas-0``, on bare executors (kafkarec from the ``--py-files`` wheel).

``run(spark, LOGDIR)``.
"""
from pyspark.sql import functions as F

import spark_udfs

MESSAGES = {"shipments": "kr.ship.Shipment", "people": None}
# from_protobuf's options by Spark's names, through the data source and from_registry
# (the shipments hold no google.protobuf.Any: convert.any.fields.to.json is only accepted and carried)
OPTS = {"enums.as.ints": "true", "emit.default.values": "true", "upcast.unsigned.ints": "true",
        "convert.any.fields.to.json": "true"}


def run(spark, root):
    spark_udfs.register(spark)
    result = {}

    def typed(topic, mode="PERMISSIVE"):
        r = (spark.read.format("kafkarec").option("valueFormat", "registry").option("registry", root)
             .option("topics", topic).option("mode", mode))
        if MESSAGES[topic]:
            r = r.option("valueMessage", MESSAGES[topic])
        return r.load(root)

    for topic in MESSAGES:
        out = result[topic] = {}
        df = typed(topic)
        out["schema"] = df.schema.jsonValue()
        out["rows"] = [r.asDict(recursive=True) for r in
                       df.select("offset", "value", "valueSchemaId", "_corrupt_record").orderBy("offset").collect()]
        try:
            typed(topic, "FAILFAST").collect()
            out["failfast"] = None
        except Exception as exc:       # noqa: BLE001 - the message is what is checked
            out["failfast"] = str(exc)[:4000]
        raw = spark.read.format("kafkarec").option("topics", topic).load(root)
        dec = raw.select("offset", spark_udfs.from_registry("value", registry=root, subject=f"{topic}-value",
                                                            message=MESSAGES[topic]).alias("v"))
        out["from_registry"] = [r.asDict(recursive=True) for r in dec.orderBy("offset").collect()]
        try:
            raw.select(spark_udfs.from_registry(F.col("value"), registry=root, subject=f"{topic}-value",
                                                message=MESSAGES[topic], mode="FAILFAST")).collect()
            out["from_registry_failfast"] = None
        except Exception as exc:       # noqa: BLE001
            out["from_registry_failfast"] = str(exc)[:4000]

    opt = (spark.read.format("kafkarec").option("valueFormat", "registry").option("registry", root)
           .option("topics", "shipments").option("valueMessage", MESSAGES["shipments"]).options(**OPTS).load(root))
    result["options"] = {
        "schema": opt.schema["value"].dataType.simpleString(),
        "rows": [r.asDict(recursive=True) for r in opt.select("offset", "value").orderBy("offset").collect()],
        "from_registry": [r.asDict(recursive=True) for r in spark.read.format("kafkarec")
                          .option("topics", "shipments").load(root).select("offset", spark_udfs.from_registry(
                              "value", registry=root, subject="shipments-value", message=MESSAGES["shipments"],
                              options=OPTS).alias("value")).orderBy("offset").collect()]}

    # Executors decode with what the driver compiled (as from_registry ships it): does decoding there
    # load the schema compiler?  (It should not: compiled schemas travel with the column.)
    from spark_udfs.read.typed import TypedSide, load_registry

    side = TypedSide("value", "registry", load_registry(root), subject="shipments-value",
                     message=MESSAGES["shipments"])

    def probe(batches):
        import os as _os
        import sys as _sys
        import pyarrow as pa
        decoded = 0
        for rb in batches:
            typed, _ids, _errs = side.decode(rb.column(0))
            decoded += len(typed) - typed.null_count
        yield pa.RecordBatch.from_pylist([{
            "pid": _os.getpid(), "decoded": decoded,
            "compiler_loaded": any(m in _sys.modules for m in ("grpc_tools", "google.protobuf"))}])

    raw = spark.read.format("kafkarec").option("topics", "shipments").load(root).select("value")
    result["executors"] = [r.asDict() for r in raw.repartition(2).mapInArrow(
        probe, "pid long, decoded long, compiler_loaded boolean").collect()]
    return result
