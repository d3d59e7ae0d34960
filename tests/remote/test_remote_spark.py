"""The data source over an object store: the same log directory read from S3 (SeaweedFS) and
from local disk gives the same rows as kafkarec's decoder, split into many tasks or not,
and a Kafka-source selection through Spark equals filtering the full read."""
from __future__ import annotations

import json
import os

import pytest

from support.spark import spark_helpers as H
from support.spark.user_app import UserAppJob

pytestmark = [pytest.mark.spark]


def _split(table, corrupt="_corrupt_record"):
    import pyarrow.compute as pc
    bad = pc.is_valid(table.column(corrupt))
    return table.filter(pc.invert(bad)), table.filter(bad).column(corrupt).to_pylist()


def test_s3_equals_local_equals_decoder(spark, s3, sample):
    s3.upload_dir(sample, "spark-logs", "prod/kafka")
    oracle, oracle_errors = H.oracle_dir(sample)
    local, local_err = _split(H.read(spark, sample).toArrow())
    remote, remote_err = _split(H.read(spark, "s3://spark-logs/prod/kafka", **s3.options(),
                                      maxPartitionBytes="64k").toArrow())
    H.assert_same_rows(local, oracle, H.KAFKA_COLUMNS)
    H.assert_same_rows(remote, oracle, H.KAFKA_COLUMNS)
    # the same corrupt batches reported, named by their s3:// URI
    assert len(remote_err) == len(local_err) == sum(len(v) for v in oracle_errors.values()) > 0
    assert all(e.startswith("s3://spark-logs/prod/kafka/") for e in remote_err)


def test_selection_through_spark(spark, s3, sample):
    import pyarrow.compute as pc
    s3.upload_dir(sample, "spark-selection", "")
    oracle, _ = H.oracle_dir(sample)
    tps = sorted({(t, p) for t, p in zip(oracle.column("topic").to_pylist(),
                                         oracle.column("partition").to_pylist())})
    topic = tps[0][0]
    parts = sorted(p for t, p in tps if t == topic)
    starting = {topic: {str(p): 3 + p for p in parts}}
    ending = {topic: {str(p): 40 + 2 * p for p in parts}}
    got, _ = _split(H.read(spark, "s3://spark-selection", **s3.options(), topics=topic,
                          startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending),
                          maxPartitionBytes="16k").toArrow())
    mask = None
    for p in parts:
        m = pc.and_(pc.and_(pc.equal(oracle.column("topic"), topic), pc.equal(oracle.column("partition"), p)),
                    pc.and_(pc.greater_equal(oracle.column("offset"), 3 + p),
                            pc.less(oracle.column("offset"), 40 + 2 * p)))
        mask = m if mask is None else pc.or_(mask, m)
    want = oracle.filter(mask)
    assert want.num_rows > 0
    H.assert_same_rows(got, want, H.KAFKA_COLUMNS)


def test_read_committed_s3_equals_local(spark, s3, sample):
    """readCommitted on an object store: the same rows as the local reader, also when every
    batch is its own task and when a selection starts inside an aborted transaction (the
    transaction is judged over the partition's whole log, not the part selected)."""
    import pyarrow.compute as pc
    s3.upload_dir(sample, "spark-committed", "")
    local = H.read(spark, sample, readCommitted="true", mode="DROPMALFORMED").toArrow()
    everything = H.read(spark, sample, mode="DROPMALFORMED").toArrow()
    assert 0 < local.num_rows < everything.num_rows
    for split in ("1m", "1k"):
        remote = H.read(spark, "s3://spark-committed", **s3.options(), readCommitted="true",
                       mode="DROPMALFORMED", maxPartitionBytes=split).toArrow()
        H.assert_same_rows(remote, local, H.KAFKA_COLUMNS)
    # payments: offsets 0-49 are an aborted transaction (marker at 50); start at 20
    got = H.read(spark, "s3://spark-committed", **s3.options(), readCommitted="true", topics="payments",
                startingOffsets=json.dumps({"payments": {"0": 20}})).toArrow()
    want = local.filter(pc.and_(pc.equal(local.column("topic"), "payments"),
                                pc.greater_equal(local.column("offset"), 20)))
    H.assert_same_rows(got.drop_columns(["_corrupt_record"]), want, H.KAFKA_COLUMNS)
    assert min(got.column("offset").to_pylist()) == 51 and got.num_rows == 100


def test_remote_read_refuses_unknown_options(spark, s3, sample):
    s3.upload_dir(sample, "spark-options", "")
    with pytest.raises(Exception, match="pathglobfilter"):
        H.read(spark, "s3://spark-options", **s3.options(), pathGlobFilter="*.log").toArrow()


def _corrupt_with_index(sample: str, root: str) -> dict:
    """H.make_corrupt_dir, with an offset index (an entry per batch, as a broker with
    index.interval.bytes 1 writes) next to the CRC-damaged and the untouched copies, so that
    the remote planner cuts them into ranges that start inside the file."""
    import kafkarec
    from support.logs.logdir import write_offset_index
    info = H.make_corrupt_dir(sample, root)
    for name in ("crc", "ok"):
        path = info[name]["path"]
        data = open(path, "rb").read()
        write_offset_index(path[:-len(".log")] + ".index", 0,
                           [(b.last_offset, b.position) for b in kafkarec.iter_batches(data, verify_crc=False)])
    return info


def _error_rows(table, root: str):
    """{(topic, partition): [(batchPosition, the message after its file name)]} of the error rows."""
    out = {}
    for r in table.to_pylist():
        if r["_corrupt_record"] is not None:
            where, _, what = r["_corrupt_record"].partition(": ")
            assert where.startswith(root), where
            out.setdefault((r["topic"], r["partition"]), []).append((r["batchPosition"], what))
    return {k: sorted(v) for k, v in out.items()}


def test_remote_piece_errors_name_the_positions_a_local_whole_file_read_names(spark, s3, sample,
                                                                            tmp_path):
    """An error in a range that starts inside a segment (a piece read from byte N of the object)
    is reported at its position in the file: the error row's batchPosition and the byte in
    _corrupt_record are those of a local read of the whole file, and where the damage is."""
    root = str(tmp_path / "logs")
    info = _corrupt_with_index(sample, root)
    s3.upload_dir(root, "spark-positions", "")
    local = _error_rows(H.read(spark, root, batchColumns="true", maxPartitionBytes="64m").toArrow(), root)
    remote_df = H.read(spark, "s3://spark-positions", **s3.options(), batchColumns="true",
                       maxPartitionBytes="8k")
    assert remote_df.rdd.getNumPartitions() > 8         # the segments were cut into pieces
    remote = _error_rows(remote_df.toArrow(), "s3://spark-positions/")
    assert remote == local
    crc, framing, truncated = info["crc"]["position"], info["framing"]["position"], info["truncated"]["position"]
    assert crc > 8192                                    # in a piece that does not start the file
    assert remote[("crc", 0)] == [(crc, remote[("crc", 0)][0][1])]
    assert remote[("crc", 0)][0][1].startswith(f"byte {crc} (batch base offset ")
    assert "ChecksumError" in remote[("crc", 0)][0][1]
    assert [p for p, _ in remote[("framing", 0)]] == [framing]
    assert [p for p, _ in remote[("truncated", 0)]] == [truncated]
    assert ("ok", 0) not in remote
    # kafkarec's decoder over the whole local file names the same byte
    _, sink = H.oracle_file(info["crc"]["path"])
    assert [e["position"] for e in sink] == [crc]


def _prepare_submitted(request, work):
    """The corrupt copy with an offset index (as the test above has it) on S3, for the job."""
    s3 = request.getfixturevalue("s3")
    sample = H.sample_logs(request.getfixturevalue("tmp_path_factory"), seed=7)
    root = str(work / "logs")
    info = _corrupt_with_index(sample, root)
    s3.upload_dir(root, "submit-positions", "")
    options = dict(s3.options(), batchColumns="true", maxPartitionBytes="8k")
    return ["s3://submit-positions", json.dumps(options)], info


JOB = UserAppJob("remote-errors", os.path.join(H.ROOT, "tests", "spark", "jobs", "remote_errors_job.py"),
                 _prepare_submitted, driver_memory_gb=2)


def test_remote_piece_error_positions_with_spark_submit_and_a_bare_python(user_app):
    """The same, as a user runs it: spark-submit --py-files <kafkarec wheel> from a bare Python
    (driver, planner and executors load kafkarec from the shipped wheel, which must hold the
    core that reads pieces with their origin; a job of the one user-way application,
    tests/support/spark/user_app.py)."""
    got, info = user_app.outcome(JOB)
    assert got["tasks"] > 8
    errors = {}
    for e in got["errors"]:
        where, _, what = e["_corrupt_record"].partition(": ")
        assert where.startswith("s3://submit-positions/"), where
        errors.setdefault((e["topic"], e["partition"]), []).append((e["batchPosition"], what))
    # what the local reader, over each whole file, names
    local = {}
    for name in ("crc", "truncated", "framing"):
        for kind, item in _decode_whole(info[name]["path"]):
            local.setdefault((name, 0), []).append((item["position"], item["message"]))
    assert {k: sorted(v) for k, v in errors.items()} == {k: sorted(v) for k, v in local.items()}
    assert [p for p, _ in errors[("crc", 0)]] == [info["crc"]["position"]]
    assert [p for p, _ in errors[("framing", 0)]] == [info["framing"]["position"]]
    assert [p for p, _ in errors[("truncated", 0)]] == [info["truncated"]["position"]]


def _decode_whole(path: str):
    """The errors spark_udfs' decoding reports for a whole local file (byte 0 at position 0)."""
    import kafkarec
    from kafkarec.scan.decode import decode_range
    data = open(path, "rb").read()
    return [(k, x) for k, x in decode_range(memoryview(data)) if k == "error"]
