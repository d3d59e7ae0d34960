"""kafkarec.scan.LogScan on the session broker's log dir (issue 42): the same rows as Spark's own Kafka
source read from the broker (the one Spark application's cases, tests/support/spark/spark_app.py: every
codec, transactions under both isolation levels, compacted topics, headers, offset and timestamp
windows in the Kafka source's meaning) and as librdkafka's consumer."""
from __future__ import annotations

import pytest

from support.brokers import produce
from support.brokers.readers import arrow_rows, kafkarec_rows
from support.spark.spark_app import cases, rows

pytestmark = [pytest.mark.broker, pytest.mark.slow]

def _scan_rows(log_dir, case):
    from kafkarec.scan import LogScan
    options = dict(case["options"])
    isolation = options.pop("kafka.isolation.level", "read_uncommitted")
    table = LogScan(log_dir, topics=case["topics"], isolation_level=isolation,
                    selection=options or None).to_table()
    out = table.to_pylist()
    for r in out:
        r["headers"] = [(h["key"], h["value"]) for h in (r["headers"] or [])]
    out.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    return out


@pytest.fixture(scope="module")
def without_offset_indexes(stopped_log_dir, tmp_path_factory):
    """A copy of the stopped broker's log dir without its ``.index`` files (segment files copied
    alone): the resolver rebuilds each from the log's batch headers, as Kafka does."""
    import glob
    import os
    import shutil
    root = str(tmp_path_factory.mktemp("no-index") / "data")
    shutil.copytree(stopped_log_dir, root)
    removed = glob.glob(os.path.join(root, "*", "*.index"))
    for path in removed:
        os.remove(path)
    assert len(removed) > 20
    return root


@pytest.mark.spark
@pytest.mark.parametrize("indexes", ["kept", "removed"])
@pytest.mark.parametrize("name", ["all-uncommitted", "all-committed", "txn-offsets-committed",
                                  "txn-offsets-uncommitted", "timestamps"])
def test_same_rows_as_sparks_kafka_source(broker_spark, broker_data, stopped_log_dir, without_offset_indexes,
                                          name, indexes):
    """(``removed``: the offset windows found by each segment's offset index rebuilt from its
    batch headers, not by the broker's ``.index``.)"""
    (case,) = [c for c in cases(broker_data) if c["name"] == name]
    kafka = rows(broker_spark / name / "kafka")
    ours = _scan_rows(stopped_log_dir if indexes == "kept" else without_offset_indexes, case)
    assert kafka and len(ours) == len(kafka)
    for a, b in zip(ours, kafka):
        assert a == b


def test_an_offset_index_rebuilt_from_the_log_is_the_brokers(kafka_broker, stopped_log_dir):
    """Each segment's offset index rebuilt from its batch headers
    (:func:`kafkarec.log.sidefiles.walked_offset_index`, LogSegment.append's rule) holds the
    entries the broker wrote to its ``.index`` (one batch an append): the session's data topics'
    segments, and a topic of 6,000 records in batches of about 4 KB written here, uncompressed and
    zstd, rolled at 128 KiB (the active segment's index read as the broker preallocated it)."""
    import glob
    import os
    from kafkarec.log import sidefiles
    topic = "rebuilt-index"
    produce.create_topics(kafka_broker.bootstrap, [produce.TopicInfo(
        topic, 1, {"internal.segment.bytes": str(128 << 10)}, "confluent-kafka")])
    produce.produce_confluent(kafka_broker.bootstrap, topic, 3000, partitions=1, rounds=3)
    produce.produce_confluent(kafka_broker.bootstrap, topic, 3000, partitions=1, rounds=3,
                              **{"compression.type": "zstd"})
    produce.wait_settled(kafka_broker.log_dir, [topic])
    paths = sorted(glob.glob(os.path.join(stopped_log_dir, "*", "*.log"))) + \
        sorted(glob.glob(os.path.join(kafka_broker.log_dir, f"{topic}-0", "*.log")))
    compared = entries = 0
    for path in paths:
        if os.path.basename(os.path.dirname(path)).startswith("__") or not os.path.exists(path[:-4] + ".index"):
            continue
        with open(path[:-4] + ".index", "rb") as fh:
            data = fh.read()
        # (a preallocated slot reads as (base offset, 0), as kafka-dump-log shows it: no entry
        # Kafka made, which needs more than 4 KiB of batches before its position)
        written = [tuple(e) for e in sidefiles.OffsetIndex(path[:-4] + ".index", int(os.path.basename(path)[:-4]),
                                                            data=data).entries() if e[1] > 0]
        assert sidefiles.walked_offset_index(path) == written, path
        compared += 1
        entries += len(written)
    assert compared >= 5 and entries >= 50, (compared, entries)


@pytest.mark.parametrize("iso", ["read_uncommitted", "read_committed"])
def test_same_rows_as_the_consumer(kafka_broker, broker_data, stopped_log_dir, iso):
    """Every data topic as librdkafka's consumer reads it, and as the log layer's reading does."""
    from kafkarec.scan import LogScan
    topics = broker_data.data_topics()
    got = sorted(arrow_rows(LogScan(stopped_log_dir, topics=topics, isolation_level=iso).to_table()),
                 key=lambda r: (r[0], r[1], r[2]))
    assert got == produce.consume(kafka_broker.bootstrap, topics, iso)
    assert got == kafkarec_rows(stopped_log_dir, topics, iso == "read_committed")


def test_view_reads_keep_their_rows_while_retention_deletes_the_segments_under_them(kafka_broker):
    """Issue 80 item 2's safety: reads in the view layout (``key``, ``value`` as ``binary_view``
    pointing into the windows read) hold their first batches while the broker's retention deletes
    the segments the reads planned: the process lives, the rows held are the producer's, and what
    the reads meet after that (a segment gone) is what the classic layout's read meets."""
    import os
    import time
    import pyarrow as pa
    from kafkarec.scan import LogScan
    topic = "views-under-retention"
    produce.create_topics(kafka_broker.bootstrap, [produce.TopicInfo(
        topic, 1, {"internal.segment.bytes": "4096", "segment.ms": "100", "retention.bytes": "40000"},
        "confluent-kafka")])
    acked = produce.produce_confluent(kafka_broker.bootstrap, topic, 600, rounds=4, pause=0.15,
                                      **{"compression.type": "none", "batch.size": 1000})
    by_offset = {a.offset: a.value for a in acked}
    folder = os.path.join(kafka_broker.log_dir, f"{topic}-0")
    # (retention done with the first records: both reads plan the same segments)
    produce.wait_settled(kafka_broker.log_dir, [topic])
    reads = {}
    for layout in ("view", "copy"):
        reader = iter(LogScan(folder, value_layout=layout, threads=1, mode="PERMISSIVE",
                              columns=["offset", "value", "_corrupt_record"]))
        reads[layout] = (reader, [next(reader)])
    planned = sorted(f for f in os.listdir(folder) if f.endswith(".log"))
    produce.produce_confluent(kafka_broker.bootstrap, topic, 1200, rounds=4, pause=0.15,
                              **{"compression.type": "none", "batch.size": 1000})
    deadline = time.monotonic() + 60
    while os.path.exists(os.path.join(folder, planned[0])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(os.path.join(folder, planned[0])), "retention deleted no planned segment"
    produce.wait_settled(kafka_broker.log_dir, [topic])     # (both reads meet the same log)
    outcomes = {}
    for layout, (reader, held) in reads.items():
        try:
            held += list(reader)
            outcomes[layout] = None
        except Exception as exc:        # compared below: the view read meets what the copy read meets
            outcomes[layout] = type(exc).__name__
        table = pa.Table.from_batches(held)
        rows = [(o, bytes(v) if v is not None else None, e)
                for o, v, e in zip(*(table.column(c).to_pylist() for c in ("offset", "value", "_corrupt_record")))]
        first = held[0]
        assert first.num_rows and [None if v is None else bytes(v) for v in first.column("value").to_pylist()] == \
            [by_offset[o] for o in first.column("offset").to_pylist()]
        reads[layout] = [(o, v, e is not None) for o, v, e in rows]
    assert outcomes["view"] == outcomes["copy"]
    assert reads["view"] == reads["copy"]


def test_a_registered_table_lets_go_of_segments_retention_deleted_at_its_next_query(kafka_broker):
    """Issue 80: a registered DuckDB table keeps its windows mapped between queries
    (kafkarec.log.window_maps); a segment the broker's retention deletes after one query is not held
    past the next: /proc/self/maps shows no deleted file of the partition once it ran, and its rows
    are the log's as the broker left it."""
    import os
    import time
    import duckdb
    from kafkarec.engines.duckdb import register
    from kafkarec.scan import LogScan
    topic = "kept-maps-under-retention"
    produce.create_topics(kafka_broker.bootstrap, [produce.TopicInfo(
        topic, 1, {"internal.segment.bytes": "4096", "segment.ms": "100", "retention.bytes": "40000",
                   "file.delete.delay.ms": "100"}, "confluent-kafka")])
    produce.produce_confluent(kafka_broker.bootstrap, topic, 600, rounds=4, pause=0.15,
                              **{"compression.type": "none", "batch.size": 1000})
    from support.logs.proc_maps import mapped_files
    folder = os.path.join(kafka_broker.log_dir, f"{topic}-0")

    def mapped():
        return mapped_files(folder)
    produce.wait_settled(kafka_broker.log_dir, [topic])
    con = duckdb.connect()
    src = register(con, "logs", folder, mode="PERMISSIVE")
    assert con.sql("SELECT count(*) FROM logs").fetchall()[0][0] > 0
    planned = sorted(f for f in os.listdir(folder) if f.endswith(".log"))
    assert len(src.scan.window_maps) > 1 and mapped()
    produce.produce_confluent(kafka_broker.bootstrap, topic, 1200, rounds=4, pause=0.15,
                              **{"compression.type": "none", "batch.size": 1000})
    first = os.path.join(folder, planned[0])
    deadline = time.monotonic() + 60
    while (os.path.exists(first) or os.path.exists(first + ".deleted")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(first) and not os.path.exists(first + ".deleted"), "retention deleted no planned segment"
    live = set()
    for name in os.listdir(folder):
        try:
            live.add(os.stat(os.path.join(folder, name)).st_ino)
        except FileNotFoundError:       # (renamed .deleted meanwhile: gone)
            pass
    # the inodes of the deleted segments (renamed .log.deleted, or unlinked) the kept maps hold
    gone = {int(line.split()[4]) for line in mapped()} - live
    assert gone, "the kept maps held no deleted segment"
    files = sorted(os.listdir(folder))
    got = [o for (o,) in con.sql('SELECT "offset" FROM logs WHERE _corrupt_record IS NULL ORDER BY "offset"').fetchall()]
    held = mapped()
    # (a segment retention deletes while the query runs is let go at the query after it)
    assert held and not gone & {int(line.split()[4]) for line in held}, held
    # (a segment retention deletes under a read, after its listing, is that read's FileChangedError
    # row: the two reads are compared only where the log stayed the same for both)
    plain = LogScan(folder, columns=["offset"]).to_table().column("offset").to_pylist()
    if sorted(os.listdir(folder)) == files:
        assert got == plain
    src.close()
    assert not mapped()
