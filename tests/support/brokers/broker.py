"""The session's broker (issues 27, 38): one real KRaft broker with tiered storage, the topics
written through it, a copy of it after a clean shutdown, and one Spark application run against it.
Registered for every test folder (root tests/conftest.py's ``pytest_plugins``): the broker tests
(tests/broker), the engine tests (tests/engines) and the lakehouse tests' Connect worker
(support/servers/connect_worker.py) share it.

* ``kafka_broker`` -- a started :class:`kafka_broker.KafkaBroker` (``.bootstrap``,
  ``.log_dir``, ``.remote_dir``, ``.stop()``, ``.start()``, ``.dump_log()``) with Kafka's
  LocalTieredStorage under the session's tmp dir; stopped at the session's end.
* ``broker_data`` -- :class:`produce.BrokerData`: every topic of :func:`produce.topic_plan`,
  the tiered topic (:mod:`tiered_topic`) and the topics whose log start offset deleteRecords
  moved (:mod:`deleted_records`) written through ``kafka_broker`` (the broker stays live).
* ``stopped_broker`` -- :class:`StoppedBroker`: the broker's log dir and tiered storage as a
  clean shutdown left them, copied after ``broker_data`` was written (the broker is started
  again afterwards and serves the same data); ``stopped_log_dir`` is its log dir.
* ``restore_target_broker`` -- a second :class:`kafka_broker.KafkaBroker` (no tiered storage):
  the target cluster of ``kafkarec restore``'s tests, whose source is ``kafka_broker``.
* ``restore_history`` -- :class:`restore_history.History`: the restore tests' source history,
  written through ``kafka_broker``.
* ``kafka_cluster`` -- a :class:`kafka_cluster.KafkaCluster`: three KRaft nodes, node 3 with two
  log dirs (JBOD), replication factor 3; started on first use, stopped all at once at the session's
  end (a 3-node cluster is the costliest thing the tests start: one a session, shared).
* ``broker_spark`` -- the output folder of the one Spark application (:mod:`spark_app`), which
  restores ``restore_history`` into ``restore_target_broker`` over Spark too; skips where Spark is
  not there.
"""
from typing import NamedTuple

import pytest



class StoppedBroker(NamedTuple):
    log_dir: str
    remote_dir: str


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    from support.brokers.kafka_broker import KafkaBroker
    broker = KafkaBroker(str(tmp_path_factory.mktemp("kafka-broker")), tiered_storage=True)
    try:
        broker.start()
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def broker_data(kafka_broker, tmp_path_factory):
    from support.brokers import produce
    return produce.produce_all(kafka_broker, str(tmp_path_factory.mktemp("produce")))


@pytest.fixture(scope="session")
def stopped_broker(kafka_broker, broker_data, tmp_path_factory):
    base = tmp_path_factory.mktemp("stopped")
    log_dir, remote_dir = str(base / "data"), str(base / "remote")
    kafka_broker.snapshot_stopped(log_dir, remote_dir)
    return StoppedBroker(log_dir, remote_dir)


@pytest.fixture(scope="session")
def stopped_log_dir(stopped_broker):
    return stopped_broker.log_dir


@pytest.fixture(scope="session")
def restore_history(kafka_broker):
    from support.brokers import restore_history as RH
    return RH.write(kafka_broker)


@pytest.fixture(scope="session")
def broker_spark(kafka_broker, broker_data, stopped_broker, restore_history, restore_target_broker,
                 tmp_path_factory):
    from support.spark import spark_helpers as H
    why = H.spark_available()
    if why:
        pytest.skip(why)
    from support.spark import spark_app
    return spark_app.run(kafka_broker, broker_data, stopped_broker, tmp_path_factory.mktemp("broker-spark"),
                         restore=spark_app.restore_spec(restore_history, restore_target_broker))


@pytest.fixture(scope="session")
def restore_target_broker(tmp_path_factory):
    from support.brokers.kafka_broker import KafkaBroker
    broker = KafkaBroker(str(tmp_path_factory.mktemp("restore-target")))
    try:
        broker.start()
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory):
    from support.brokers.kafka_cluster import KafkaCluster
    cluster = KafkaCluster(str(tmp_path_factory.mktemp("kafka-cluster")), jbod={3: 2})
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
