"""The restore's broker calls retry Kafka's retriable errors as Kafka's clients do (issue 67: a restore
into topics it had just created exited 1 on ``ListOffsets: Broker: Not leader for partition``), against
fake clients that fail a given number of times: the backoff (100 ms doubling, to 1 s, 20% jitter), the
bound (``--timeout``), an error that is not retriable failing at once, a transaction an abortable error
left redone whole.  The 20 restores into topics created just before live in
tests/broker/test_broker_restore.py."""
import concurrent.futures
from types import SimpleNamespace

import pytest

ck = pytest.importorskip("confluent_kafka")

from kafkarec import _client  # noqa: E402
from kafkarec.errors import RestoreError  # noqa: E402
from kafkarec.restore import RestoreSpec, groups, produce, target  # noqa: E402
from kafkarec.restore.source import Record, SourcePartition, SourcePlan, TopicDescription  # noqa: E402

NOT_LEADER = ck.KafkaError.NOT_LEADER_FOR_PARTITION


def _error(code, **flags):
    return ck.KafkaException(ck.KafkaError(code, **flags))


def _future(answer=None, error=None):
    f = concurrent.futures.Future()
    if error is not None:
        f.set_exception(error)
    else:
        f.set_result(answer)
    return f


class _Admin:
    """An admin client whose every call fails with ``failures[call]``'s errors first, one a call, then
    answers as a target whose partitions all end at offset 7."""

    def __init__(self, failures=None, leaderless=0):
        self.failures = {k: list(v) for k, v in (failures or {}).items()}
        self.calls = {}
        self.leaderless = leaderless        # metadata answers with a partition without a leader first
        self.created = {}

    def _next(self, call):
        self.calls[call] = self.calls.get(call, 0) + 1
        left = self.failures.get(call)
        return left.pop(0) if left else None

    def list_offsets(self, request, isolation_level=None, request_timeout=None):
        err = self._next("list_offsets")
        return {tp: _future(SimpleNamespace(offset=7), err) for tp in request}

    def list_topics(self, *names, timeout=None):
        err = self._next("list_topics")
        if err is not None:
            raise err
        leader = -1 if self.created and self.leaderless > 0 else 0
        self.leaderless -= bool(self.created)
        topics = {n: SimpleNamespace(error=None, partitions={i: SimpleNamespace(leader=leader, error=None)
                                                             for i in range(count)})
                  for n, count in self.created.items()}
        return SimpleNamespace(topics=topics)

    def create_topics(self, new, request_timeout=None):
        err = self._next("create_topics")
        for t in new:
            self.created[t.topic] = t.num_partitions
        return {t.topic: _future(None, err) for t in new}

    def list_consumer_group_offsets(self, request, require_stable=False, request_timeout=None):
        err = self._next("list_consumer_group_offsets")
        tps = [ck.TopicPartition(tp.topic, tp.partition, 5) for tp in request[0].topic_partitions]
        return {request[0].group_id: _future(SimpleNamespace(topic_partitions=tps), err)}

    def describe_consumer_groups(self, names, request_timeout=None):
        err = self._next("describe_consumer_groups")
        return {g: _future(SimpleNamespace(members=[]), err) for g in names}

    def alter_consumer_group_offsets(self, request, request_timeout=None):
        err = self._next("alter_consumer_group_offsets")
        return {request[0].group_id: _future(SimpleNamespace(topic_partitions=request[0].topic_partitions), err)}


@pytest.fixture
def pauses(monkeypatch):
    """The backoff's pauses, taken on a fake clock that only they move (not slept)."""
    taken = []
    monkeypatch.setattr(_client, "pause", taken.append)
    monkeypatch.setattr(_client, "clock", lambda: sum(taken))
    return taken


def _spec(timeout=30.0):
    return RestoreSpec.of("logs", "b:9092", restore_id="r", timeout=timeout)


def test_list_offsets_not_leader_three_times_then_answered_with_kafkas_backoff(monkeypatch, pauses):
    fake = _Admin({"list_offsets": [_error(NOT_LEADER)] * 3})
    monkeypatch.setattr(target, "admin", lambda spec: fake)
    assert target.ends(_spec(), [("orders-t", 0)]) == {("orders-t", 0): 7}
    assert fake.calls["list_offsets"] == 4
    # retry.backoff.ms 100, doubled each try, each within 20%
    assert len(pauses) == 3 and all(0.8 * b <= p <= 1.2 * b for p, b in zip(pauses, (0.1, 0.2, 0.4))), pauses
    assert [min(target.backoff(n) for _ in range(20)) for n in (5, 9)] == [target.RETRY_BACKOFF_MAX_S] * 2


def test_an_error_that_is_not_retriable_fails_at_once(monkeypatch, pauses):
    fake = _Admin({"list_offsets": [_error(ck.KafkaError.TOPIC_AUTHORIZATION_FAILED)]})
    monkeypatch.setattr(target, "admin", lambda spec: fake)
    with pytest.raises(RestoreError) as info:
        target.ends(_spec(), [("orders-t", 0)])
    assert fake.calls["list_offsets"] == 1 and pauses == []
    assert not info.value.retriable and (info.value.topic, info.value.partition) == ("orders-t", 0)
    assert str(info.value) == "target b:9092, orders-t-0: ListOffsets LATEST: Broker: Topic authorization failed"


def test_retries_end_at_the_timeout_with_the_last_error_naming_call_and_partition(monkeypatch, pauses):
    fake = _Admin({"list_offsets": [_error(NOT_LEADER)] * 100})
    monkeypatch.setattr(target, "admin", lambda spec: fake)
    with pytest.raises(RestoreError) as info:
        target.ends(_spec(timeout=0.5), [("orders-t", 0)])      # pauses of about 0.1 and 0.2 s fit, 0.4 does not
    assert fake.calls["list_offsets"] == 3 and len(pauses) == 2 and info.value.retriable
    assert str(info.value).startswith("target b:9092, orders-t-0: ListOffsets LATEST: Broker: Not leader for "
                                      "partition (tried 3 times in "), str(info.value)


def test_every_call_of_the_restore_retries_a_retriable_error(monkeypatch, pauses):
    """CreateTopics, metadata, the progress' OffsetFetch, ListOffsets (earliest and latest), the
    groups' describe and alter: each fails once retriably, then answers."""
    load = ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS
    fake = _Admin({"create_topics": [_error(ck.KafkaError.REQUEST_TIMED_OUT)],
                   "list_topics": [_error(ck.KafkaError._TRANSPORT)],
                   "list_consumer_group_offsets": [_error(ck.KafkaError.NOT_COORDINATOR)],
                   "list_offsets": [_error(ck.KafkaError.LEADER_NOT_AVAILABLE)],
                   "describe_consumer_groups": [_error(load)],
                   "alter_consumer_group_offsets": [_error(ck.KafkaError.COORDINATOR_NOT_AVAILABLE)]},
                  leaderless=2)
    monkeypatch.setattr(target, "admin", lambda spec: fake)
    spec = _spec()
    plan = SourcePlan([SourcePartition("orders", 0, 0, 9, 9, "orders-t")],
                      {"orders": TopicDescription(1, {})})
    assert target.ensure_topics(spec, plan) == ["orders-t"]
    # the first metadata failed, the created topic's partition had no leader twice: waited for
    assert fake.calls["list_topics"] == 1 + 1 + 3 and fake.calls["create_topics"] == 2
    assert target.progress(spec, [("orders-t", 0)]) == {("orders-t", 0): 5}
    assert target.holds_committed_records(spec, "orders-t", 0) is False      # earliest 7 = latest 7: empty
    assert groups.apply(spec, [groups.GroupPosition("g", "orders", 0, 3, "orders-t", 2)]) == ["g"]
    assert {k: v for k, v in fake.calls.items() if k != "list_topics"} == {
        "create_topics": 2, "list_consumer_group_offsets": 2, "list_offsets": 3, "describe_consumer_groups": 2,
        "alter_consumer_group_offsets": 2}
    assert len(pauses) == 1 + 1 + 2 + 1 + 1 + 1 + 1


def test_a_creation_whose_answer_was_lost_counts_as_created(monkeypatch, pauses):
    """CreateTopics timed out after the controller created the topic: the next try finds it exists."""
    fake = _Admin({"create_topics": [_error(ck.KafkaError.REQUEST_TIMED_OUT),
                                     _error(ck.KafkaError.TOPIC_ALREADY_EXISTS)]})
    monkeypatch.setattr(target, "admin", lambda spec: fake)
    plan = SourcePlan([SourcePartition("orders", 0, 0, 9, 9, "orders-t")],
                      {"orders": TopicDescription(1, {})})
    assert target.ensure_topics(_spec(), plan) == ["orders-t"] and fake.calls["create_topics"] == 2


class _Producer:
    """A transactional producer whose calls fail with ``failures[call]``'s errors first; records are
    delivered at the commit, at offsets from 0 on, each transaction's after the last committed one."""

    def __init__(self, failures):
        self.failures = {k: list(v) for k, v in failures.items()}
        self.calls, self.pending, self.next_offset, self.committed = [], [], 0, []

    def _call(self, name):
        self.calls.append(name)
        left = self.failures.get(name)
        if left:
            raise left.pop(0)

    def init_transactions(self, timeout):
        self._call("init")

    def begin_transaction(self):
        self._call("begin")
        self.pending = []

    def produce(self, topic, value=None, key=None, partition=None, timestamp=None, headers=None, on_delivery=None):
        self.pending.append((value, on_delivery))

    def send_offsets_to_transaction(self, offsets, metadata, timeout):
        self._call("send_offsets")

    def commit_transaction(self, timeout):
        self._call("commit")
        for value, report in self.pending:
            report(None, SimpleNamespace(offset=lambda o=self.next_offset: o))
            self.committed.append(value)
            self.next_offset += 1
        self.pending = []

    def abort_transaction(self, timeout):
        self._call("abort")
        self.next_offset += len(self.pending) + 1       # the aborted records and the abort marker
        self.pending = []

    def flush(self, timeout=None):
        return 0

    def poll(self, timeout=None):
        return 0


def _writer(monkeypatch, failures):
    fake = _Producer(failures)
    monkeypatch.setattr(target, "client", lambda spec, kind, **extra: fake)
    part = SourcePartition("orders", 0, 0, 3, 3, "orders-t")
    return produce._Writer(_spec(), part, None), fake


RECORDS = [Record(i, b"k", b"v%d" % i, 1000 + i, []) for i in range(3)]


def test_transactional_calls_retry_retriable_errors(monkeypatch, pauses):
    timed_out = _error(ck.KafkaError._TIMED_OUT, retriable=True)
    writer, fake = _writer(monkeypatch, {"init": [_error(ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS)],
                                         "send_offsets": [_error(ck.KafkaError.NOT_COORDINATOR)],
                                         "commit": [timed_out, timed_out]})
    assert writer.transaction(RECORDS, 3) == [(0, 0), (1, 1), (2, 2)]
    assert fake.calls == ["init", "init", "begin", "send_offsets", "send_offsets", "commit", "commit", "commit"]
    assert fake.committed == [b"v0", b"v1", b"v2"] and len(pauses) == 4


def test_a_transaction_that_must_be_aborted_is_redone_whole(monkeypatch, pauses):
    """A commit failing with an abortable error (a delivery timed out): aborted, then written again;
    the target offsets are the second transaction's, past the aborted one's records and marker."""
    abortable = _error(ck.KafkaError._MSG_TIMED_OUT, txn_requires_abort=True)
    writer, fake = _writer(monkeypatch, {"commit": [abortable]})
    assert writer.transaction(RECORDS, 3) == [(0, 4), (1, 5), (2, 6)]
    assert fake.calls == ["init", "begin", "send_offsets", "commit", "abort", "begin", "send_offsets", "commit"]
    assert fake.committed == [b"v0", b"v1", b"v2"] and len(pauses) == 1


def test_a_fatal_transactional_error_is_not_retried(monkeypatch, pauses):
    fenced = _error(ck.KafkaError._FENCED, fatal=True)
    writer, fake = _writer(monkeypatch, {"commit": [fenced]})
    with pytest.raises(RestoreError, match="committing a transaction") as info:
        writer.transaction(RECORDS, 3)
    assert not info.value.retriable and fake.calls.count("commit") == 1 and fake.committed == []


def test_one_admin_client_serves_every_request_of_a_restore():
    """A new client connects and learns the metadata before its first answer: the requests of a
    restore share one (a new one for another configuration)."""
    first = target.admin(RestoreSpec.of("logs", "127.0.0.1:1", restore_id="a"))
    assert target.admin(RestoreSpec.of("logs", "127.0.0.1:1", restore_id="b")) is first    # same client settings
    assert target.admin(RestoreSpec.of("logs", "127.0.0.1:1", timeout=5)) is not first
