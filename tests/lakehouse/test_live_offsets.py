"""The lakehouse's ListOffsets (``bootstrap``: a running broker's log start and last stable offset) goes
through kafkarec._client, the restore's client: a retriable error is asked again with Kafka's backoff
(before, the first NOT_LEADER_OR_FOLLOWER failed the backfill), a permanent one fails at once naming
the cluster and the partition.  Against a fake admin client; the real broker's are
tests/broker/test_broker_log_start.py's."""
import concurrent.futures
from types import SimpleNamespace

import pytest

ck = pytest.importorskip("confluent_kafka")

from kafkarec import _client  # noqa: E402
from kafkarec.errors import BrokerError  # noqa: E402
from kafkarec.lakehouse import broker  # noqa: E402


class _Admin:
    """ListOffsets answering ``failures``' errors first, one a request, then EARLIEST 3, LATEST 9."""

    def __init__(self, failures):
        self.failures, self.calls = list(failures), 0

    def list_offsets(self, request, isolation_level=None, request_timeout=None):
        self.calls += 1
        err = ck.KafkaException(ck.KafkaError(self.failures.pop(0))) if self.failures else None
        out = {}
        for tp, spec in request.items():
            f = concurrent.futures.Future()
            if err is not None:
                f.set_exception(err)
            else:
                f.set_result(SimpleNamespace(offset=9 if "LATEST" in repr(spec).upper() else 3))
            out[tp] = f
        return out


@pytest.fixture
def fake(monkeypatch):
    taken = []
    monkeypatch.setattr(_client, "pause", taken.append)          # not slept: a clock only they move
    monkeypatch.setattr(_client, "clock", lambda: sum(taken))

    def use(failures):
        admin = _Admin(failures)
        monkeypatch.setattr(_client, "admin", lambda config, fail: admin)
        return admin, taken
    return use


def test_not_leader_is_asked_again_with_kafkas_backoff(fake):
    admin, pauses = fake([ck.KafkaError.NOT_LEADER_FOR_PARTITION] * 2)
    assert broker.list_offsets("b:9092", [("t", 0)]) == {("t", 0): broker.LiveOffsets(3, 9)}
    assert admin.calls == 4 and len(pauses) == 2 and 0.08 <= pauses[0] <= 0.12


def test_a_permanent_error_names_the_cluster_and_the_partition_at_once(fake):
    admin, pauses = fake([ck.KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(BrokerError) as info:
        broker.list_offsets("b:9092", [("t", 0)])
    assert str(info.value) == "broker b:9092: ListOffsets EARLIEST of t-0: Broker: Topic authorization failed"
    assert (info.value.topic, info.value.partition, info.value.retriable) == ("t", 0, False)
    assert admin.calls == 1 and pauses == []
