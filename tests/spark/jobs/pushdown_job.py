"""A job of the one user-way application (tests/support/spark/user_app.py), for
tests/spark/test_pushdown.py: DataFrame filters pushed into ``format("kafkarec")`` (Spark 4.1+,
``spark.sql.python.filterPushdown.enabled``) on bare executors, each query's rows and the bytes
every process read (kafkarec.log.storage's counter, ``KAFKAREC_BYTES_READ_DIR``); and the census of
the log over Spark (``spark_udfs.census``).

``run(spark, LOGDIR, COUNTER_DIR)``: LOGDIR is tests/support/logs/events_log.py's (its slices are
taken from there); ``queries`` is also run by jobs/connect_job.py on a Connect session.
"""
import json
import os
import sys

# a script of the user-way application (spark-submit): tests/ on the import path for the suite's helpers
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))
from support.logs import events_log as E  # noqa: E402

ROW = ["topic", "partition", "offset", "timestampMs"]
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def _rows(df):
    return sorted([list(r) for r in df.select(*ROW).collect()])


def queries(spark, root, counted=None):
    """{name: {"rows": [...], "bytes": {path: n} or None}}: queries with filter pushdown on, then
    the slices with pushdown off (Spark filters every row) and by the options' bounds."""
    out = {}

    def run(name, df):
        before = counted() if counted else None
        rows = _rows(df)
        after = counted() if counted else None
        out[name] = {"rows": rows, "bytes": None if counted is None else
                     {p: n - before.get(p, 0) for p, n in after.items() if n != before.get(p, 0)}}

    def read(**options):
        r = spark.read.format("kafkarec")
        for k, v in options.items():
            r = r.option(k, v)
        return r.load(root)

    offset_from, offset_to = E.OFFSET_FROM, E.OFFSET_TO
    by_offset = f"partition = 0 AND offset >= {offset_from} AND offset < {offset_to}"
    by_time = f"timestamp >= '{E.time_literal()}'"
    by_other = f"offset >= {offset_from} AND length(value) % 2 = 1 AND partition < 1"
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", E.ZONE)   # a literal's zone: the session's
    try:
        spark.conf.set(PUSHDOWN, "true")
        run("offset", read().where(by_offset))
        run("time", read().where(by_time))
        run("other", read().where(by_other))
        run("dropmalformed", read(mode="DROPMALFORMED").where(by_offset))
        run("latest", read(view="latest").where(f"partition = 0 AND offset >= {offset_from}"))
        run("with_options", read(startingOffsets=json.dumps({"events": {"0": offset_from - 50, "1": 0}}))
            .where(f"offset < {offset_to} AND topic = 'events'"))
        # key pushdown: the core builds only that key's records; with partitioner=murmur2 only the
        # partition murmur2 names for it is opened (this topic's keys are not placed by it: the
        # option is the user's word, and the rows show it was taken)
        run("key", read().where(f"key = X'{E.KEY.hex()}'"))
        run("key_murmur2", read(partitioner="murmur2").where(f"key IN (X'{E.KEY.hex()}')"))
        # the same slices with pushdown off (Spark filters every row) and by the options' bounds
        spark.conf.set(PUSHDOWN, "false")
        run("offset_spark", read().where(by_offset))
        run("time_spark", read().where(by_time))
        run("offset_options", read(assign=json.dumps({"events": [0]}),
                                   startingOffsets=json.dumps({"events": {"0": offset_from}}),
                                   endingOffsets=json.dumps({"events": {"0": offset_to}})))
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
        spark.conf.unset(PUSHDOWN)
    return out


def run(spark, root, counter_dir):
    # the counter's folder reaches every Python worker of the data source: the planner's and
    # the executors' (a registered data source carries the context's executor environment)
    environment = spark.sparkContext.environment
    environment["KAFKAREC_BYTES_READ_DIR"] = counter_dir
    try:
        import spark_udfs
        spark_udfs.register(spark)
        from kafkarec.log.storage import bytes_read
        out = queries(spark, root, counted=lambda: bytes_read(counter_dir))
        # the census over Spark, a task per topic-partition (the test compares the local census)
        out["census"] = spark_udfs.census(spark, root)
        return out
    finally:
        del environment["KAFKAREC_BYTES_READ_DIR"]
