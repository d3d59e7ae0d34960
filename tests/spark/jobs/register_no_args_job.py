"""``spark_udfs.register(spark)`` with no arguments, as a notebook user calls it: run by a client
Python where kafkarec was pip-installed from the wheelhouse (no wheelhouse folder given, none
in the environment), against the session's standalone cluster (a classic session) and its Spark
Connect server, whose workers are bare Pythons (tests/spark/test_connect.py).

Usage: register_no_args_job.py CONFIG.json classic|connect (CONFIG: ``master``, ``remote``,
``sample``, ``work``); writes ``work``/KIND.json: what register shipped and saw, and the records read.
"""
import json
import os
import sys


def read(spark, cfg):
    import spark_udfs
    reg = spark_udfs.register(spark)
    df = spark.read.format("kafkarec").load(cfg["sample"])
    return {"shipped": [os.path.basename(s.shipped_as) for s in reg.shipped],
            "fingerprint": reg.fingerprint, "executors": reg.executors,
            "records": df.where(df["_corrupt_record"].isNull()).count()}


def main(path, kind):
    with open(path) as fh:
        cfg = json.load(fh)
    from pyspark.sql import SparkSession
    if kind == "classic":
        builder = (SparkSession.builder.master(cfg["master"]).appName("register-no-args")
                   .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1").config("spark.executor.memory", "768m"))
    else:
        builder = SparkSession.builder.remote(cfg["remote"])
    spark = builder.getOrCreate()
    try:
        result = dict(read(spark, cfg), client_kafkarec=__import__("kafkarec").__file__)
    finally:
        spark.stop()
    with open(os.path.join(cfg["work"], f"{kind}.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
