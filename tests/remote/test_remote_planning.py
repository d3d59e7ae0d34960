"""Many small partitions on an object store are read by many tasks (issue 22): 1,500
partitions of 2 small segments each on SeaweedFS, planned as Spark plans small files, spread
over at least defaultParallelism tasks, every record read once."""
from __future__ import annotations

import time

import pytest

from support.spark import spark_helpers as H
from benchmarks import bench_planning as B

pytestmark = [pytest.mark.spark]

PARTITIONS, SEGMENTS = 1500, 2


def test_1500_small_partitions_spread_over_tasks(spark, s3):
    t0 = time.perf_counter()
    assert B.write_s3(s3.filesystem(), "many", PARTITIONS, SEGMENTS, side_files=False) == 3000
    upload = time.perf_counter() - t0
    df = H.read(spark, "s3://many", **s3.options())
    cores = spark.sparkContext.defaultParallelism
    tasks = df.rdd.getNumPartitions()
    # Spark's rule for 3,000 files of ~1.7 kB: 32 files (+ 4 MiB open cost each) per task
    assert tasks == 94 >= cores
    from pyspark.sql import functions as F
    t1 = time.perf_counter()
    r = df.select("topic", "partition", "offset", F.spark_partition_id().alias("task")).agg(
        F.count(F.lit(1)).alias("n"), F.sum("offset").alias("o"),
        F.countDistinct("topic", "partition").alias("tp"),
        F.countDistinct("task").alias("tasks_used")).first()
    per_partition = SEGMENTS * B.RECORDS_PER_SEGMENT
    assert r["n"] == PARTITIONS * per_partition
    assert r["o"] == PARTITIONS * per_partition * (per_partition - 1) // 2
    assert r["tp"] == PARTITIONS
    assert r["tasks_used"] == tasks
    # bounded: generous for a loaded 2-core machine (about 2 s upload + 10 s read here)
    assert upload < 120 and time.perf_counter() - t1 < 300
