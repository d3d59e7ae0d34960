"""A job of the one user-way application (tests/support/spark/user_app.py), for
tests/remote/test_remote_spark.py: the data source over an object store on bare executors
(driver, planner and executors load kafkarec from the ``--py-files`` wheel).

``run(spark, URI, OPTIONS_JSON)`` reads ``URI`` (``s3://...``) with the data source options in
``OPTIONS_JSON`` (endpoint and keys included) and gives the number of tasks, the number of records
and every error row (topic, partition, batchPosition, _corrupt_record).
"""
import json


def run(spark, uri, options):
    import spark_udfs   # from the --py-files wheel: nothing else has kafkarec
    spark_udfs.register(spark)
    reader = spark.read.format("kafkarec")
    for k, v in json.loads(options).items():
        reader = reader.option(k, v)
    df = reader.load(uri)
    rows = df.select("topic", "partition", "batchPosition", "_corrupt_record").collect()
    errors = [r.asDict() for r in rows if r["_corrupt_record"] is not None]
    return {"tasks": df.rdd.getNumPartitions(), "records": len(rows) - len(errors), "errors": errors}
