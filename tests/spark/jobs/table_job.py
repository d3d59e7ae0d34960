"""A job of the one user-way application (tests/support/spark/user_app.py), for
tests/spark/test_table_view.py: ``view=latest`` with each case's options, on bare executors
(kafkarec from the ``--py-files`` wheel); rows as JSON (keys and values in base64).

``run(spark, LOGDIR, CASES.json)``.
"""
import base64
import json

import spark_udfs


def b64(v):
    return None if v is None else base64.b64encode(bytes(v)).decode()


def run(spark, root, cases_path):
    spark_udfs.register(spark)
    with open(cases_path) as fh:
        cases = json.load(fh)
    result = {}
    for name, options in cases.items():
        reader = spark.read.format("kafkarec").option("view", "latest")
        for k, v in options.items():
            reader = reader.option(k, v)
        rows = reader.load(root).select("topic", "partition", "offset", "key", "value").collect()
        result[name] = sorted([[r.topic, r.partition, r.offset, b64(r.key), b64(r.value)] for r in rows])
    return result
