"""The lakehouse Spark check's job (tests/broker/test_lakehouse_spark.py), on the Spark the
lakehouse runtimes load on, as users run it:

    spark-submit --py-files <kafkarec wheel> --jars <iceberg runtime> lakehouse_spark_job.py PLAN
    <client python> lakehouse_spark_job.py PLAN sc://127.0.0.1:PORT     # a Spark Connect client

PLAN (JSON): ``log_dir``, ``wheelhouse``, ``out`` (the result's JSON), ``plain_read`` (topics
read with ``format("kafkarec")`` and readCommitted, or null), ``writes`` (``{table, layout,
topics}``: each backfilled twice, the second a re-run), ``refused`` (a backfill over a recorded
range with other end offsets, or null), ``restore`` (or null: ``source``, ``target``, ``options`` of
``spark_udfs.restore``, ``folder`` for its offset map and groups' CSV and ``run.json``: what it did, or
``error``).  Nothing here imports kafkarec before
``spark_udfs.register``: the driver has it from the wheel (spark-submit) or the client's venv.
"""
import base64
import json
import sys


def _b64(value):
    return None if value is None else base64.b64encode(bytes(value)).decode()


def _summary(summary):
    return [[t, p, s.start, s.end, s.rows, s.status] for (t, p), s in summary.items()]


def run(spark, plan):
    import spark_udfs
    spark_udfs.register(spark, wheelhouse=plan["wheelhouse"])
    out = {"spark": spark.version}
    if plan.get("plain_read"):
        rows = (spark.read.format("kafkarec").option("readCommitted", "true")
                .option("topics", ",".join(plan["plain_read"])).load(plan["log_dir"])
                .select("topic", "partition", "offset", "key", "value", "timestampMs").collect())
        out["plain_read"] = [[r["topic"], r["partition"], r["offset"], _b64(r["key"]), _b64(r["value"]),
                              r["timestampMs"]] for r in rows]
    out["writes"] = []
    for w in plan["writes"]:
        first = spark_udfs.backfill_iceberg(spark, plan["log_dir"], w["table"], layout=w["layout"],
                                            topics=w["topics"])
        again = spark_udfs.backfill_iceberg(spark, plan["log_dir"], w["table"], layout=w["layout"],
                                            topics=w["topics"])
        out["writes"].append({"table": w["table"], "first": _summary(first), "again": _summary(again)})
    refused = plan.get("refused")
    if refused:
        try:
            spark_udfs.backfill_iceberg(spark, plan["log_dir"], refused["table"], layout=refused["layout"],
                                        topics=refused["topics"], end_offsets=refused["end_offsets"])
            out["refused"] = None
        except Exception as exc:     # noqa: BLE001 - the test asserts on its type and text
            out["refused"] = [type(exc).__name__, str(exc)]
    restore = plan.get("restore")
    if restore:
        import os
        import traceback
        folder = restore["folder"]
        try:
            done = spark_udfs.restore(spark, restore["source"], restore["target"],
                                      offset_map=os.path.join(folder, "map.csv"),
                                      groups_csv=os.path.join(folder, "groups.csv"),
                                      share_groups_csv=os.path.join(folder, "shares.csv"),
                                      wheelhouse=plan["wheelhouse"], **restore["options"])
            out["restore"] = {"created": done.result.created_topics,
                              "partitions": [s._asdict() for s in done.result.partitions],
                              "groups": len(done.finished.groups)}
        except Exception:       # noqa: BLE001 - the test shows it; the backfills' checks go on
            out["restore"] = {"error": traceback.format_exc()}
    return out


def main(plan_file, remote=None):
    from pyspark.sql import SparkSession
    with open(plan_file) as fh:
        plan = json.load(fh)
    builder = SparkSession.builder.appName("kafkarec-lakehouse")
    spark = (builder.remote(remote) if remote else builder).getOrCreate()
    try:
        result = run(spark, plan)
    finally:
        spark.stop()
    with open(plan["out"] + ".part", "w") as fh:
        json.dump(result, fh)
    import os
    os.replace(plan["out"] + ".part", plan["out"])


if __name__ == "__main__":
    main(*sys.argv[1:])
