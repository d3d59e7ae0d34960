"""Submitted by tests/broker/test_broker_tiered.py while its tiered broker runs: Spark's own Kafka
source reads the topic from the broker (which serves the early offsets from its remote storage),
and kafkarec reads the broker's log dir stitched with the remote root, from a bare Python with
``--py-files <kafkarec wheel>``.

    spark-submit --jars <Kafka source> --py-files kafkarec.whl kafka_source_job.py BOOTSTRAP LOGDIR ROOT OUT.json
"""
import json
import sys

from pyspark.sql import SparkSession

import spark_udfs

bootstrap, log_dir, root, out_path = sys.argv[1:5]
spark = SparkSession.builder.appName("tiered-parity").getOrCreate()
spark_udfs.register(spark)
COLUMNS = ["topic", "partition", "offset", "hex(key) AS key", "hex(value) AS value",
           "unix_millis(timestamp) AS ts", "timestampType"]
kafka = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", "tiered")
         .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
ours = (spark.read.format("kafkarec").option("tieredStorage", root).option("subscribe", "tiered").load(log_dir))
result = {name: [list(r) for r in df.selectExpr(*COLUMNS).orderBy("offset").collect()]
          for name, df in (("kafka", kafka), ("kafkarec", ours))}
with open(out_path, "w") as f:
    json.dump(result, f)
spark.stop()
