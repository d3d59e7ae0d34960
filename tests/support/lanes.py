"""Two lanes (pytest-xdist, ``--dist loadgroup``), and the fast tier's marker.

The suite's real components (a SparkSession, Spark applications and clusters, the broker, PostgreSQL
and Debezium, SeaweedFS) are started once per pytest process and shared by every test that needs them
(``tests/support``).  Under pytest-xdist each worker is such a process, so every test that touches a
component goes into one ``xdist_group``: one worker runs them all, one after another, and each
component starts once; the other worker takes the CPU-bound rest (the core, log files, the CLI,
internal topics, typed decoders) and helps with the component lane's leftovers when it runs dry.

Every component test is also ``slow``: ``-m "not slow"`` is the fast tier of the inner loop.
"""
from __future__ import annotations

import pytest

#: The one group every component test joins.
COMPONENT_GROUP = "components"

#: Markers that mean a test runs a real component.
COMPONENT_MARKERS = ("spark", "broker")

#: Session fixtures that start a real component (a test whose fixture closure holds one joins the group).
COMPONENT_FIXTURES = frozenset({
    "spark", "s3", "kafka_broker", "broker_data", "stopped_log_dir", "debezium_capture",
    "user_app", "spark_cluster", "spark_connect",
})


def is_component_test(item: pytest.Item) -> bool:
    if any(item.get_closest_marker(name) for name in COMPONENT_MARKERS):
        return True
    return bool(COMPONENT_FIXTURES.intersection(getattr(item, "fixturenames", ())))


def pytest_configure(config):
    # known with or without pytest-xdist installed (--strict-markers)
    config.addinivalue_line("markers", "xdist_group(name): run in the named pytest-xdist group")


# before pytest's own -m/-k selection, which then sees the added marks
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_component_test(item):
            item.add_marker(pytest.mark.xdist_group(COMPONENT_GROUP))
            item.add_marker(pytest.mark.slow)
