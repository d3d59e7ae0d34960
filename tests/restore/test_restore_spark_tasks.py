"""``spark_udfs.restore``'s driver and task functions without a cluster: a task's kafkarec error (a
bare executor without confluent-kafka) comes back to the driver as itself, naming the extra, and
the options Spark cannot honour are refused before anything runs.  The restore on real executors
is tests/broker/test_broker_restore_spark.py's."""
from __future__ import annotations

import concurrent.futures

import pyarrow as pa
import pytest

from kafkarec.errors import MissingExtraError, UsageError
from kafkarec.restore import RestoreSpec, SourcePartition


class _SparkJobFailed(Exception):
    """What Py4J raises on the driver for a failed job (Py4JJavaError), as far as kafkarec sees it."""


class _Frame:
    """What ``spark.range(n, numPartitions=n).mapInArrow(f, schema).collect()`` gives, task by task:
    ``f`` over one batch holding the task's one id; a task that raises is tried again, up to
    ``attempts`` times (spark.task.maxFailures), then the job fails with Spark's own exception."""

    def __init__(self, n: int, fn=None, attempts: int = 1):
        self.n, self.fn, self.attempts = n, fn, attempts

    def mapInArrow(self, fn, schema):
        return _Frame(self.n, fn, self.attempts)

    def collect(self):
        rows = []
        for i in range(self.n):
            batch = pa.RecordBatch.from_arrays([pa.array([i], pa.int64())], names=["id"])
            for attempt in range(1, self.attempts + 1):
                try:
                    out = [r for b in self.fn(iter([batch])) for r in b.to_pylist()]
                    break
                except Exception as exc:
                    if attempt == self.attempts:
                        # Py4JJavaError's shape: the call first, Spark's reason, the worker's traceback
                        raise _SparkJobFailed(
                            "An error occurred while calling o93.collectToPython.\n"
                            f": org.apache.spark.SparkException: Job aborted due to stage failure: Task {i} "
                            f"failed {attempt} times, most recent failure: Lost task {i}.3 in stage 0.0: "
                            "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
                            '  File "/w/spark_udfs/_restore.py", line 140, in _answers\n'
                            f"{type(exc).__module__}.{type(exc).__name__}: {exc}\n"
                            "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException") from exc
            rows += out
        return rows


class _Spark:
    attempts = 1

    def __init__(self, conf=None):
        self.conf = dict(conf or {})
        self.ranges = []

    def range(self, n, numPartitions):
        assert n == numPartitions       # one partition index per task
        self.ranges.append(n)
        return _Frame(n, attempts=self.attempts)


class _TriesSpark(_Spark):
    attempts = 4


def _spec() -> RestoreSpec:
    return RestoreSpec.of("no-such-history", "127.0.0.1:1", restore_id="units")


def test_a_task_without_the_client_raises_its_extra_on_the_driver(monkeypatch):
    import sys
    from spark_udfs._restore import _run
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)      # as on an executor without it
    parts = [SourcePartition("orders", p, 0, 10, 10, "orders") for p in range(2)]
    spark = _Spark()
    with pytest.raises(MissingExtraError) as info:
        _run(spark, _spec(), parts, None)
    assert spark.ranges == [2]
    assert str(info.value) == "confluent-kafka is not installed: pip install 'kafkarec[restore]'"
    assert info.value.extra == "restore"


def test_speculation_and_a_spec_with_options_are_refused_before_anything_runs():
    import spark_udfs
    spark = _Spark({"spark.speculation": "true"})
    with pytest.raises(UsageError, match="spark.speculation is on"):
        spark_udfs.restore(spark, _spec())
    with pytest.raises(UsageError, match="not both"):
        spark_udfs.restore(_Spark(), _spec(), topics="orders")
    assert spark.ranges == []


# --- the tasks' errors: retriable ones retried by Spark, permanent ones answered ---------------

def _kafka_error(code_name: str):
    import confluent_kafka as ck
    return ck.KafkaException(ck.KafkaError(getattr(ck.KafkaError, code_name), f"{code_name} (broker)"))


def _store_error(text: str):
    from kafkarec.log.storage import storage_error
    return storage_error("s3://backup/orders-0/00000000000000000000.log", OSError(text))


def _partition_map(part, holes=(), records=10):
    from kafkarec.restore import OffsetMap, PartitionSummary
    omap, target = OffsetMap(), 0
    for s in range(part.start, part.start + records):
        if s not in holes:
            omap.add(part.topic, part.partition, part.target_topic, s, target)
            target += 1
    omap.set_end(part.topic, part.partition, part.target_topic, part.end, target)
    return PartitionSummary(part.topic, part.partition, part.start, part.end, part.target_topic,
                            omap.records(part.topic, part.partition), "written"), omap


def _failing_first(monkeypatch, make_error, failures: int):
    """restore_partition failing ``failures`` times with ``make_error()``'s error, then restoring."""
    import kafkarec.restore as R
    from kafkarec.restore import target
    calls = []

    class FailedFuture:         # a client future that failed, as the restore asks the target
        def __init__(self, exc):
            self.exc = exc

        def result(self, timeout=None):
            raise self.exc

    def restore_partition(spec, part):
        calls.append(part.partition)
        if len(calls) <= failures:
            exc = make_error()
            if not hasattr(exc, "uri"):     # a client failure: through the restore's own conversion
                target.result(spec, FailedFuture(exc), "ListOffsets LATEST", topic=part.target_topic,
                              partition=part.partition)
            raise exc
        return _partition_map(part)
    monkeypatch.setattr(R, "restore_partition", restore_partition)
    return calls


@pytest.mark.parametrize("make_error", [
    lambda: _kafka_error("COORDINATOR_LOAD_IN_PROGRESS"),
    lambda: _kafka_error("NOT_COORDINATOR"),
    lambda: _kafka_error("LEADER_NOT_AVAILABLE"),
    lambda: _kafka_error("REQUEST_TIMED_OUT"),
    lambda: _kafka_error("_TRANSPORT"),
    lambda: _kafka_error("_TIMED_OUT"),
    lambda: TimeoutError(),
    lambda: concurrent.futures.TimeoutError(),
    lambda: _store_error("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate."),
    lambda: _store_error("AWS Error INTERNAL_FAILURE during GetObject operation: We encountered an internal "
                         "error. Please try again. (HTTP status 500)"),
    lambda: _store_error("AWS Error SERVICE_UNAVAILABLE during GetObject operation (HTTP status 503)"),
    lambda: _store_error("When reading information for key 'x' in bucket 'b': AWS Error NETWORK_CONNECTION "
                         "during HeadObject operation: curlCode: 28, Timeout was reached"),
], ids=["coordinator-loading", "not-coordinator", "leader-not-available", "request-timed-out", "transport",
        "client-timed-out", "timeout", "future-timeout", "s3-slow-down", "s3-500", "s3-503", "s3-timeout"])
def test_a_transient_error_fails_the_task_and_spark_tries_it_again(monkeypatch, make_error):
    from spark_udfs._restore import _run
    calls = _failing_first(monkeypatch, make_error, failures=2)
    parts = [SourcePartition("orders", 0, 0, 10, 10, "orders")]
    ((summary, omap),) = _run(_TriesSpark(), _spec(), parts, None)
    assert calls == [0, 0, 0]               # two failed attempts, then the one that restored
    assert summary.records == 10 and omap.target_offset("orders", 0, 10) == 10


@pytest.mark.parametrize("make_error, error", [
    (lambda: _kafka_error("TOPIC_AUTHORIZATION_FAILED"), "RestoreError"),
    (lambda: _kafka_error("_FENCED"), "RestoreError"),
    (lambda: _store_error("AWS Error ACCESS_DENIED during GetObject operation: Access Denied"), "StorageError"),
    (lambda: _store_error("AWS Error NO_SUCH_BUCKET during HeadObject operation"), "StorageError"),
], ids=["authorization", "fenced", "s3-access-denied", "s3-no-bucket"])
def test_a_permanent_error_is_answered_once_and_raised_on_the_driver_as_itself(monkeypatch, make_error, error):
    from spark_udfs._restore import _run
    calls = _failing_first(monkeypatch, make_error, failures=99)
    parts = [SourcePartition("orders", 0, 0, 10, 10, "orders")]
    with pytest.raises(Exception) as info:
        _run(_TriesSpark(), _spec(), parts, None)
    assert type(info.value).__name__ == error and not info.value.retriable
    assert calls == [0]                     # answered, not retried: the same again on every attempt


def test_a_failed_spark_job_is_a_restore_error_naming_target_and_partitions(monkeypatch):
    from kafkarec.errors import RestoreError
    from spark_udfs._restore import _run
    _failing_first(monkeypatch, lambda: _kafka_error("COORDINATOR_LOAD_IN_PROGRESS"), failures=99)
    parts = [SourcePartition("orders", p, 0, 10, 10, "orders") for p in range(2)]
    with pytest.raises(RestoreError) as info:
        _run(_TriesSpark(), _spec(), parts, None)
    text = str(info.value)
    # the reason the worker's traceback names, not Py4J's "An error occurred while calling ..."
    assert text.startswith("target 127.0.0.1:1: the Spark job restoring source partition(s) orders-0, orders-1 "
                           "failed (kafkarec.errors.RestoreError: "), text
    assert "COORDINATOR_LOAD_IN_PROGRESS" in text and "An error occurred" not in text
    assert "run the restore again to resume" in text
    assert isinstance(info.value.__cause__, _SparkJobFailed)     # Spark's message kept as the cause


def test_retriable_survives_the_pickle_to_the_driver():
    import pickle
    from kafkarec.errors import RestoreError
    err = pickle.loads(pickle.dumps(RestoreError("t:1", "x", topic="a", partition=1, retriable=True)))
    assert err.retriable and (err.topic, err.partition) == ("a", 1)
    store = pickle.loads(pickle.dumps(_store_error("AWS Error SLOW_DOWN during GetObject operation")))
    assert store.retriable and store.uri.startswith("s3://")


# --- the offset maps: packed runs in rows of bounded size ----------------------------------

def _answer_rows(monkeypatch, part, omap):
    import pickle
    import kafkarec.restore as R
    from spark_udfs._restore import _answers
    from spark_udfs._tasks import _task
    summary = R.PartitionSummary(part.topic, part.partition, part.start, part.end, part.target_topic,
                                 omap.records(part.topic, part.partition), "written")
    monkeypatch.setattr(R, "restore_partition", lambda spec, p: (summary, omap))
    batch = pa.RecordBatch.from_arrays([pa.array([0], pa.int64())], names=["id"])
    shipped = pickle.dumps((_spec(), [part]))
    return [r for b in _task(iter([batch]), shipped, None, _answers) for r in b.to_pylist()]


def test_a_partition_with_holes_answers_its_map_in_bytes_of_its_runs(monkeypatch):
    from spark_udfs._restore import _joined
    n = 100_000
    part = SourcePartition("orders", 0, 0, n, n, "orders")
    _, omap = _partition_map(part, holes=(10, 5_000, 77_777), records=n)
    rows = _answer_rows(monkeypatch, part, omap)
    assert sum(len(r["answer"]) for r in rows) < 1_000          # 4 runs, not 1e5 records
    ((_, back),) = _joined(_spec(), [part], rows)
    assert back == omap
    assert list(back.pairs("orders", 0)) == list(omap.pairs("orders", 0))
    for position in (0, 10, 11, 5_000, 77_777, n - 1, n):
        assert back.target_offset("orders", 0, position) == omap.target_offset("orders", 0, position)


def test_a_compacted_partition_answers_rows_of_bounded_size(monkeypatch):
    """Every other record compacted away: 200 000 runs.  Pickled whole in one cell they took 4.3 MB
    (21 bytes a run, one cell whatever its size); packed, rows of at most 65 536 runs each."""
    from kafkarec.restore import OffsetMap
    from kafkarec.restore.offsets import CHUNK_RUNS
    from spark_udfs._restore import _joined
    n = 400_000
    part = SourcePartition("orders", 3, 0, n, n, "orders")
    omap = OffsetMap()
    for s in range(0, n, 2):
        omap.add("orders", 3, "orders", s, s // 2 + s // 2_000)    # a commit marker every 1 000 records
    omap.set_end("orders", 3, "orders", n, n // 2 + n // 2_000)
    rows = _answer_rows(monkeypatch, part, omap)
    runs = n // 2
    assert len(rows) == 1 + -(-runs // CHUNK_RUNS)
    assert max(len(r["answer"]) for r in rows) < 64 << 10
    assert sum(len(r["answer"]) for r in rows) < runs           # under a byte a run
    ((_, back),) = _joined(_spec(), [part], rows)
    assert back == omap


def test_a_packed_chunk_that_is_not_one_is_refused():
    from kafkarec.errors import UsageError
    from kafkarec.restore import OffsetMap
    import zlib
    with pytest.raises(UsageError, match="does not decompress"):
        OffsetMap().add_packed("a", 0, "a", b"not zlib")
    with pytest.raises(UsageError, match="not whole runs"):
        OffsetMap().add_packed("a", 0, "a", zlib.compress(b"\x00" * 25))
    with pytest.raises(UsageError, match="empty run or offsets that go back"):
        OffsetMap().add_packed("a", 0, "a", zlib.compress((5).to_bytes(8, "little") * 2 + bytes(8)))


def _triples(*runs):
    return b"".join(v.to_bytes(8, "little") for run in runs for v in run)


def test_a_packed_chunk_cut_short_followed_by_bytes_or_past_the_largest_offset_is_refused():
    from kafkarec.errors import UsageError
    from kafkarec.restore import OffsetMap
    import zlib
    whole = zlib.compress(_triples((0, 0, 5), (3, 1, 5)))
    for cut in (whole[:9], whole[:-1]):              # zlib would give the runs before the cut
        with pytest.raises(UsageError, match="not one whole zlib stream"):
            OffsetMap().add_packed("a", 0, "a", cut)
    with pytest.raises(UsageError, match="not one whole zlib stream"):
        OffsetMap().add_packed("a", 0, "a", whole + b"more")
    # gaps and lengths that sum past 2**63 - 1 (numpy's cumsum would wrap to negative offsets)
    for runs in [((0, 0, 2 ** 62), (2 ** 62, 0, 2 ** 62)), ((0, 0, 2 ** 63 - 1), (0, 0, 1))]:
        with pytest.raises(UsageError, match="past the largest offset"):
            OffsetMap().add_packed("a", 0, "a", zlib.compress(_triples(*runs)))
    omap = OffsetMap()
    omap.add_packed("a", 0, "a-b", whole)
    assert [tuple(r) for r in omap._runs[("a", 0)]] == [(0, 0, 5), (8, 6, 5)]
    with pytest.raises(UsageError, match="runs_per_chunk"):
        list(omap.pack("a", 0, runs_per_chunk=(1 << 16) + 1))


@pytest.mark.spark
def test_on_local_spark_answers_come_back_and_a_failed_job_is_a_restore_error(spark):
    """The same through the session's local Spark (no broker: nothing is written).  A client
    configuration the target's client refuses is permanent: answered through mapInArrow's rows and
    raised on the driver as itself; a task that fails on its every attempt (here: a kafkarec build
    that is not the driver's) fails the job, which is a RestoreError naming the partitions with
    Spark's own exception as its cause."""
    from kafkarec.errors import RestoreError
    from spark_udfs._restore import _run
    from spark_udfs.ship import shipping
    parts = [SourcePartition("orders", p, 0, 10, 10, "orders") for p in range(2)]
    refused = RestoreSpec.of("no-such-history", "127.0.0.1:1", restore_id="units",
                             target_properties={"no.such.property": "1"})
    with pytest.raises(RestoreError, match="configuration") as info:
        _run(spark, refused, parts, shipping.expected_fingerprint())
    assert not info.value.retriable and "no.such.property" in str(info.value)
    with pytest.raises(RestoreError) as info:
        _run(spark, _spec(), parts, "0.0.0+not-the-drivers-build")
    assert str(info.value).startswith("target 127.0.0.1:1: the Spark job restoring source partition(s) "
                                      "orders-0, orders-1 failed (")
    assert info.value.__cause__ is not None and "not the driver's build" in str(info.value.__cause__)
    assert "not the driver's build" in str(info.value), str(info.value)     # the worker's reason, shown
