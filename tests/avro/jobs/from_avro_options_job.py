"""from_avro's options side by side (tests/avro/test_from_avro_options.py): for each option set,
Spark's own ``from_avro`` (spark-avro's jar) over the raw value column, kafkarec's data source
(``valueFormat=avro``) and ``spark_udfs.from_registry`` over the same column, each row as
Spark's ``to_json`` text, with the Spark type of each.  Also Spark's own rebase constants and
``RebaseDateTime`` on a sample, for the unit-level check of kafkarec.avro.rebase.  A job of the one
user-way application (tests/support/spark/user_app.py: spark-avro's jar on its class path, kafkarec from
the ``--py-files`` wheel): ``run(spark, LOG_DIR, SPEC)``.

SPEC (JSON): {"topics": {topic: {"schema": ..., "cases": {name: options}}}, "sample": {"days", "micros"}}.
"""
import json

from pyspark.sql import functions as F


def run(spark, log_dir, spec_file):
    import spark_udfs
    spark_udfs.register(spark)
    spec = json.load(open(spec_file))
    result = {"cases": {}}
    for topic, t in spec["topics"].items():
        cases(spark, log_dir, topic, json.dumps(t["schema"]), t["cases"], result["cases"])
    R = spark._jvm.org.apache.spark.sql.catalyst.util.RebaseDateTime
    sample = spec["sample"]
    result["jvm"] = {"lastSwitchJulianTs": R.lastSwitchJulianTs(), "lastSwitchJulianDay": R.lastSwitchJulianDay(),
                     "days": [R.rebaseJulianToGregorianDays(d) for d in sample["days"]],
                     "micros": [R.rebaseJulianToGregorianMicros("UTC", m) for m in sample["micros"]]}
    return result


def cases(spark, log_dir, topic, schema, options, result):
    from pyspark.sql.avro.functions import from_avro
    import spark_udfs
    raw = spark.read.format("kafkarec").option("subscribe", topic).load(log_dir).select("offset", "value")
    for name, opts in options.items():
        fa = raw.select("offset", from_avro("value", schema, dict(opts, mode="PERMISSIVE")).alias("v"))
        kr = (spark.read.format("kafkarec").option("subscribe", topic).option("valueFormat", "avro")
              .option("valueReaderSchema", schema).options(**opts).load(log_dir).select("offset", F.col("value").alias("v"), "_corrupt_record"))
        fr = raw.select("offset", spark_udfs.from_registry("value", None, value_format="avro",
                                                          reader_schema=schema, options=opts).alias("v"))
        got = {}
        for label, df in (("from_avro", fa), ("kafkarec", kr), ("from_registry", fr)):
            cols = [F.col("offset"), F.to_json(F.struct("v")).alias("j")]
            if "_corrupt_record" in df.columns:
                cols.append("_corrupt_record")
            rows = df.select(*cols).orderBy("offset").collect()
            got[label] = {"type": df.schema["v"].dataType.simpleString(),
                          "rows": [[r["offset"], r["j"], r["_corrupt_record"] if len(r) > 2 else None]
                                   for r in rows]}
        result[name] = got
