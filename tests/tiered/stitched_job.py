"""Submitted by tests/broker/test_broker_tiered.py from a bare Python with ``--py-files <kafkarec
wheel>``: a broker's log dir stitched with its tiered-storage root,
``format("kafkarec").option("tieredStorage", ROOT).load(LOGDIR)``.

    spark-submit --py-files kafkarec.whl stitched_job.py LOGDIR ROOT GAPPY_ROOT OUT.json
"""
import json
import sys

from pyspark.sql import SparkSession

import spark_udfs

log_dir, root, gappy, out_path = sys.argv[1:5]
spark = SparkSession.builder.appName("stitched").getOrCreate()
spark_udfs.register(spark)
result = {}
df = (spark.read.format("kafkarec").option("tieredStorage", root).option("subscribe", "tiered")
      .option("maxPartitionBytes", "8192").load(log_dir))
result["rows"] = [[r.offset, r.key, r.value] for r in df.selectExpr(
    "offset", "hex(key) AS key", "hex(value) AS value").orderBy("offset").collect()]
result["tasks"] = df.rdd.getNumPartitions()
try:
    spark.read.format("kafkarec").option("tieredStorage", gappy).option("subscribe", "tiered").load(log_dir).count()
    result["gap"] = None
except Exception as exc:  # noqa: BLE001 - the message is the result
    result["gap"] = str(exc)[-2000:]
lenient = (spark.read.format("kafkarec").option("tieredStorage", gappy).option("subscribe", "tiered")
           .option("failOnDataLoss", "false").load(log_dir))
result["lenient"] = [r.offset for r in lenient.select("offset").orderBy("offset").collect()]
with open(out_path, "w") as f:
    json.dump(result, f)
spark.stop()
