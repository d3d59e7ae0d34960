"""readStream.format("kafkarec") as a user runs it: ``run(spark, WORK, phase)``, a part of streams_job.py's
applications (``spark-submit --py-files <kafkarec wheel> streams_job.py --phase N``; phase 2 is
a new application: a restart from the checkpoints).  Driver and executors have only pyspark, pyarrow and pandas.

Phase 1 grows a log directory (tests/support/logs/growing_log.py) while three queries read
it: every data record (``subscribePattern``, ``maxOffsetsPerTrigger``) and the committed
ones (``kafka.isolation.level=read_committed``) into Parquet file sinks, plus a third that
reads a little of another log.  Between the micro-batches: appends, a half-written batch,
a new segment, a new partition, transactions open across micro-batches and segments, one
aborted.  The queries stop; the log grows on (the half batch completes, a transaction
commits) and the third log's unread segments are deleted.  Phase 2 restarts every query
from its checkpoint: the third fails with failOnDataLoss=true and goes on with false.
WORK/result-<phase>.json says what each sink holds against what was written.
"""
from __future__ import annotations

import glob
import json
import os
import pickle
import sys

# a spark-submit script: tests/ on the import path for the suite's helpers (support.logs.growing_log)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))

from support.logs.growing_log import GrowingLog  # noqa: E402

MAX_OFFSETS = 7


def run(spark, work, phase):
    """Phase ``phase`` of the job in ``spark`` (spark_udfs.register'd); writes and returns its result."""
    import kafkarec

    root, loss_root = os.path.join(work, "logs"), os.path.join(work, "loss-logs")
    state_path = os.path.join(work, "state.pickle")

    def query(name, **options):
        df = spark.readStream.format("kafkarec")
        for k, v in {"startingOffsets": "earliest", **options}.items():
            df = df.option(k, v)
        df = df.load(loss_root if name == "loss" else root)
        return (df.select("topic", "partition", "offset", "value").writeStream.format("parquet")
                .option("path", os.path.join(work, "out", name))
                .option("checkpointLocation", os.path.join(work, "checkpoint", name))
                .queryName(name).trigger(processingTime="200 milliseconds").start())

    def every(**extra):
        return query("all", subscribePattern="orders|payments",
                     maxOffsetsPerTrigger=str(MAX_OFFSETS), **extra)

    def committed():
        return query("committed", subscribe="orders,payments",
                     **{"kafka.isolation.level": "read_committed", "kafka.bootstrap.servers": "unused:9092"})

    def sink(name):
        files = glob.glob(os.path.join(work, "out", name, "*.parquet"))
        if not files:
            return []
        rows = spark.read.parquet(os.path.join(work, "out", name)).collect()
        return [(r.topic, r.partition, r.offset, bytes(r.value)) for r in rows]

    def start_one_by_one(makers):
        # each query starts its own planner Python (python_streaming_source_runner), which
        # must connect back within 10 s: on a loaded machine, one at a time
        out = []
        for make in makers:
            out.append(make())
            out[-1].processAllAvailable()
        return out

    def drain(queries):
        for q in queries:
            q.processAllAvailable()

    def summary(log, progress):
        """What the sinks hold against what the log holds now (whole batches)."""
        got_a, got_c = sink("all"), sink("committed")
        return {
            "written": len(log.written), "rows": len(got_a), "distinct": len(set(got_a)),
            "all_ok": sorted(got_a) == sorted(log.written),
            "committed_expected": len(log.committed()), "committed_rows": len(got_c),
            "committed_distinct": len(set(got_c)),
            "committed_ok": sorted(got_c) == sorted(log.committed()),
            "aborted_emitted": sum(1 for r in got_c if r[:3] in log.aborted),
            "open_emitted": sum(1 for r in got_c
                                if r[:3] in {x[:3] for recs in log.txns.values() for x in recs}),
            "max_rows_per_batch": max(progress or [0]), "batches": len(progress),
            "max_offsets_per_trigger": MAX_OFFSETS,
        }

    result = {"phase": phase}
    progress = []
    if phase == 3:
        # minPartitions: a micro-batch's offset ranges cut into tasks as the Kafka source cuts
        # them; each row carries the task (input partition) that read it
        from pyspark.sql import functions as F
        split_root = os.path.join(work, "split-logs")
        log = GrowingLog(split_root)
        for _ in range(4):
            log.append("orders", 0, 10, codec=kafkarec.Compression.ZSTD)
        log.append("orders", 1, 2)
        for name, extra in (("split", {"minPartitions": "5"}), ("unsplit", {})):
            df = spark.readStream.format("kafkarec").option("startingOffsets", "earliest")
            for k, v in extra.items():
                df = df.option(k, v)
            q = (df.load(split_root)
                 .select("topic", "partition", "offset", "value",
                         F.spark_partition_id().alias("task"))
                 .writeStream.format("parquet").option("path", os.path.join(work, "out", name))
                 .option("checkpointLocation", os.path.join(work, "checkpoint", name))
                 .trigger(availableNow=True).start())
            q.awaitTermination(300)
            rows = spark.read.parquet(os.path.join(work, "out", name)).collect()
            tasks: dict = {}
            for r in rows:
                tasks.setdefault(r.task, []).append((r.topic, r.partition, r.offset))
            result[name] = {
                "exception": str(q.exception()) if q.exception() else None,
                "batches": len(q.recentProgress),
                "rows_ok": sorted((r.topic, r.partition, r.offset, bytes(r.value)) for r in rows)
                == sorted(log.written),
                "rows": len(rows),
                # each task's (topic, partition, first offset, last offset, rows)
                "tasks": sorted((v[0][0], v[0][1], min(o for _, _, o in v),
                                 max(o for _, _, o in v), len(v)) for v in tasks.values()),
                "tasks_single_partition": all(len({(t, p) for t, p, _ in v}) == 1
                                              for v in tasks.values()),
            }
    elif phase == 0:
        # the control: without register()'s streaming_job link the planner cannot import us
        from pyspark import SparkFiles
        link = os.path.join(SparkFiles.getRootDirectory(), "streaming_job")
        result["link"] = os.readlink(link)
        os.remove(link)
        GrowingLog(root).append("orders", 0, 3)
        try:
            q = query("all")
            q.processAllAvailable()
            q.stop()
            result["error"] = None
        except Exception as exc:  # noqa: BLE001 - the failure is the point
            result["error"] = f"{type(exc).__name__}: {exc}"[:3000]
    elif phase == 1:
        log, loss = GrowingLog(root), GrowingLog(loss_root)
        log.append("orders", 0, 5)
        log.append("orders", 1, 3, codec=kafkarec.Compression.ZSTD)
        loss.append("orders", 0, 5)
        queries = start_one_by_one([every, committed, lambda: query("loss")])
        try:
            log.append("orders", 0, 4)                       # new batches in the active segment
            log.append_half("orders", 1, 5)                  # a batch still being written
            log.txn_append("orders", 0, 3, producer_id=7)    # a transaction opens...
            log.append("orders", 0, 2)                       # ... data past its LSO waits
            log.txn_append("orders", 0, 1, producer_id=8)    # a second one
            drain(queries)
            log.roll("orders", 0)                            # a new segment
            log.txn_append("orders", 0, 2, producer_id=7)    # ... 7 goes on in it
            log.txn_end("orders", 0, 8, commit=False)        # 8 aborts: never emitted
            log.append("orders", 0, 6, codec=kafkarec.Compression.LZ4)
            log.append("payments", 0, 2)                     # a new partition
            log.txn_append("payments", 0, 2, producer_id=9)
            log.txn_end("payments", 0, 9, commit=False)
            drain(queries)
            progress = [p["numInputRows"] for q in queries[:1] for p in q.recentProgress]
        finally:
            for q in queries:
                q.stop()
        result["exceptions"] = [str(q.exception()) for q in queries if q.exception() is not None]
        result["open_transactions"] = len(log.txns)
        result.update(summary(log, progress))
        # while the queries are down
        log.finish_half("orders", 1)
        log.txn_end("orders", 0, 7, commit=True)             # commits in a later micro-batch
        log.append("orders", 1, 3)
        log.roll("payments", 0)
        log.append("payments", 0, 4)
        loss.append("orders", 0, 5)                          # offsets 5..9: never read ...
        loss.roll("orders", 0)
        loss.append("orders", 0, 10)                         # 10..19: never read ...
        loss.roll("orders", 0)
        loss.append("orders", 0, 4)                          # 20..23
        for seg in sorted(glob.glob(os.path.join(loss_root, "orders-0", "*.log")))[:2]:
            os.remove(seg)                                   # ... retention deleted them
        loss.written = [w for w in loss.written if w[2] < 5 or w[2] >= 20]
        with open(state_path, "wb") as fh:
            pickle.dump((log, loss), fh)
    else:
        with open(state_path, "rb") as fh:
            log, loss = pickle.load(fh)
        queries = start_one_by_one([every, committed])
        try:
            progress = [p["numInputRows"] for q in queries[:1] for p in q.recentProgress]
        finally:
            for q in queries:
                q.stop()
        result["exceptions"] = [str(q.exception()) for q in queries if q.exception() is not None]
        # failOnDataLoss=true (the default): the restarted query fails
        q = query("loss")
        try:
            q.awaitTermination(120)
        except Exception as exc:  # noqa: BLE001 - the failure is the point
            result["loss_true"] = f"{type(exc).__name__}: {exc}"[:2000]
        finally:
            q.stop()
        # failOnDataLoss=false: it goes on from what is there
        q = query("loss", failOnDataLoss="false")
        try:
            q.processAllAvailable()
        finally:
            q.stop()
        result["loss_false_exception"] = str(q.exception()) if q.exception() else None
        got_l = sink("loss")
        result["loss_rows"] = len(got_l)
        result["loss_ok"] = sorted(got_l) == sorted(loss.written)
        result.update(summary(log, progress))
    with open(os.path.join(work, f"result-{phase}.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    print("stream_job:", json.dumps(result))
    return result

