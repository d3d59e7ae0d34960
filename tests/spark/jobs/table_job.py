"""Submitted by tests/spark/test_table_view.py from a bare Python with ``--py-files <kafkarec wheel>``:
``view=latest`` with each case's options; rows as JSON (keys and values in base64).

    spark-submit --py-files kafkarec.whl table_job.py LOGDIR CASES.json OUT.json
"""
import base64
import json
import sys

from pyspark.sql import SparkSession

import spark_udfs

root, cases_path, out_path = sys.argv[1:4]
spark = SparkSession.builder.appName("table").getOrCreate()
spark_udfs.register(spark)
with open(cases_path) as fh:
    cases = json.load(fh)


def b64(v):
    return None if v is None else base64.b64encode(bytes(v)).decode()


result = {}
for name, options in cases.items():
    reader = spark.read.format("kafkarec").option("view", "latest")
    for k, v in options.items():
        reader = reader.option(k, v)
    rows = reader.load(root).select("topic", "partition", "offset", "key", "value").collect()
    result[name] = sorted([[r.topic, r.partition, r.offset, b64(r.key), b64(r.value)] for r in rows])
with open(out_path, "w") as fh:
    json.dump(result, fh)
spark.stop()
