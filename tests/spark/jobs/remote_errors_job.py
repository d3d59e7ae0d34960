"""The data source over an object store as a user submits it:

    spark-submit --py-files <kafkarec wheel> remote_errors_job.py URI OPTIONS_JSON OUT_JSON

Reads ``URI`` (``s3://...``) with the data source options in ``OPTIONS_JSON`` (endpoint and keys
included) and writes to ``OUT_JSON`` the number of tasks, the number of records and every error
row (topic, partition, batchPosition, _corrupt_record).
"""
import json
import sys


def main():
    uri, options, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    import spark_udfs   # from the --py-files wheel: nothing else has kafkarec
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName("kafkarec-remote-errors").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark_udfs.register(spark)
    reader = spark.read.format("kafkarec")
    for k, v in options.items():
        reader = reader.option(k, v)
    df = reader.load(uri)
    rows = df.select("topic", "partition", "batchPosition", "_corrupt_record").collect()
    errors = [r.asDict() for r in rows if r["_corrupt_record"] is not None]
    with open(out, "w") as fh:
        json.dump({"tasks": df.rdd.getNumPartitions(), "records": len(rows) - len(errors),
                   "errors": errors}, fh)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
