"""The data source over an object store: the same log directory read from S3 (SeaweedFS) and
from local disk gives the same rows as kafkarec's decoder, split into many tasks or not,
and a Kafka-source selection through Spark equals filtering the full read."""
from __future__ import annotations

import json

import pytest

import spark_helpers as H

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    why = H.spark_available()
    if why:
        pytest.fail(f"Spark is part of the test extra: {why}")
    from spark_udfs._datasource import KafkaRecDataSource
    session = H.make_session(str(tmp_path_factory.mktemp("spark-cache")))
    session.dataSource.register(KafkaRecDataSource)
    return session


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return H.sample_logs(tmp_path_factory, seed=7)



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
