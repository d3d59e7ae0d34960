"""kafkarec's batch surfaces over one Sail session (tests/spark/test_sail.py), run by the Sail venv's
Python (``pyspark-client`` and kafkarec from the checkout):

    python sail_job.py CONFIG.json

CONFIG: ``remote`` (``sc://127.0.0.1:PORT``), ``work`` (outputs go there), ``sample`` (a log dir
with a corrupt batch and a transaction), ``segment`` (one clean segment file), ``docs`` (docs/spark.md).
Writes ``work/<name>.arrow`` (each surface's rows, Arrow IPC) and ``work/result.json`` (the errors'
first lines, the plans' task counts, what register said and docs/spark.md's ``sail.py`` printed).
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import sys


def first_line(fn):
    """The first line of what ``fn`` raised, or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the message is the result
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


def error_text(fn):
    """What ``fn`` raised, whole (at most 2000 characters), or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the message is the result
        return f"{type(exc).__name__}: {exc}"[:2000]
    return None


def tasks(df) -> int:
    """The Python data source's task count in ``df``'s physical plan (Sail's PythonDataSourceExec)."""
    m = re.search(r"PythonDataSourceExec: partitions=(\d+)", df._explain_string(extended=False))
    return int(m.group(1)) if m else -1


def main():
    with open(sys.argv[1]) as fh:
        cfg = json.load(fh)
    work, sample = cfg["work"], cfg["sample"]
    from pyspark.sql import SparkSession
    import spark_udfs
    result = {}
    spark = SparkSession.builder.remote(cfg["remote"]).getOrCreate()
    said = io.StringIO()
    handler = logging.StreamHandler(said)
    logging.getLogger("spark_udfs").addHandler(handler)
    reg = spark_udfs.register(spark)            # Sail takes no artifacts: a warning, ship=False
    logging.getLogger("spark_udfs").removeHandler(handler)
    result["register"] = said.getvalue().splitlines()
    result["executors"] = reg.executors

    def save(name, df):
        import pyarrow as pa
        table = df.toArrow()
        with pa.OSFile(os.path.join(work, f"{name}.arrow"), "wb") as sink, \
                pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)

    read = lambda: spark.read.format("kafkarec")    # noqa: E731
    full = read().load(sample)
    save("full", full)
    result["tasks_default"] = tasks(full)
    save("filtered", full.where("topic = 'orders' AND offset >= 100 AND offset < 900 "
                                "AND timestampMs >= 1700000005000"))
    result["tasks_filtered"] = tasks(full.where("topic = 'orders'"))
    result["limit"] = len(full.limit(3).collect())
    save("starting", read().option("subscribe", "orders")
         .option("startingOffsets", '{"orders":{"0":100,"1":-2,"2":200}}').load(sample))
    spark.sql(f"CREATE TEMPORARY VIEW sail_logs USING kafkarec OPTIONS (path '{sample}', mode 'DROPMALFORMED')")
    save("view", spark.sql("SELECT * FROM sail_logs"))
    five = read().option("minPartitions", 5).load(sample)
    result["tasks_min5"] = tasks(five)
    save("min5", five)
    save("committed", read().option("readCommitted", "true").option("mode", "DROPMALFORMED").load(sample))
    save("user_schema", read().schema("topic STRING, partition INT, offset LONG, timestamp TIMESTAMP")
         .load(sample))
    result["failfast"] = first_line(lambda: read().option("mode", "FAILFAST").load(sample).collect())
    result["stream"] = first_line(lambda: spark.readStream.format("kafkarec")
                                  .option("maxOffsetsPerTrigger", 10).load(sample)
                                  .writeStream.format("noop").start().awaitTermination(30))
    with open(cfg["segment"], "rb") as fh:
        spark.createDataFrame([(fh.read(),)], "value BINARY").createOrReplaceTempView("raw")
    # Sail 0.7.2 hands a UDTF's binary argument to Python as text: kafkarec_explode fails there
    # ("ArrowInvalid: Could not convert b'...' ... was not a utf8 string"); kept as what Sail does, the test checks that it still does
    result["explode"] = error_text(lambda: save(
        "explode", spark.sql("SELECT r.* FROM raw, LATERAL kafkarec_explode(raw.value) r")))
    result["decode"] = first_line(lambda: save(
        "decode", spark.sql("SELECT inline(kafkarec_decode(value).records) FROM raw")))
    # docs/spark.md's sail.py block, as written
    text = open(cfg["docs"], encoding="utf-8").read()
    m = re.search(r"^```python\n(# sail\.py.*?)^```", text, re.S | re.M)
    out = io.StringIO()
    argv, sys.argv = sys.argv, ["sail.py", cfg["remote"], sample]
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(m.group(1), "sail.py", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = argv
    result["docs"] = out.getvalue()
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
