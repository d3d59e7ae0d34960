"""Session fixtures of the broker tests (issue 27): one real KRaft broker, the topics
written through it, and a copy of its log dir after a clean shutdown.

* ``kafka_broker`` -- a started :class:`kafka_broker.KafkaBroker` (``.bootstrap``,
  ``.log_dir``, ``.stop()``, ``.start()``, ``.dump_log()``); stopped at the session's end.
* ``broker_data`` -- :class:`produce.BrokerData`: every topic of :func:`produce.topic_plan`
  written through ``kafka_broker`` (the broker stays live).
* ``stopped_log_dir`` -- the broker's log dir as a clean shutdown left it, copied after
  ``broker_data`` was written (the broker is started again afterwards and serves the same data).
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    from kafka_broker import KafkaBroker
    broker = KafkaBroker(str(tmp_path_factory.mktemp("kafka-broker")))
    try:
        broker.start()
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def broker_data(kafka_broker, tmp_path_factory):
    import produce
    return produce.produce_all(kafka_broker, work_dir=str(tmp_path_factory.mktemp("produce")))


@pytest.fixture(scope="session")
def stopped_log_dir(kafka_broker, broker_data, tmp_path_factory):
    return kafka_broker.snapshot_stopped(str(tmp_path_factory.mktemp("stopped") / "data"))
