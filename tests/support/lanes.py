"""Two lanes (pytest-xdist, ``--dist loadgroup``), and the fast tier's marker.

The suite's real components (the in-process SparkSession, the one user-way Spark application, the
standalone cluster and Spark Connect, the broker, PostgreSQL and Debezium, SeaweedFS) are started
once per pytest process and shared by every test that needs them (``tests/support``).  Under
pytest-xdist each worker is such a process, so the tests that share a component must run in the same
worker: every component test gets an ``xdist_group``, and two tests share a group when they share a
component or a module (a module's own fixtures, such as a ``spark-submit`` of its job, then run once).
Groups that share nothing run side by side in the two workers, and the tests of no component (the
core, log files, the CLI, internal topics, typed decoders: CPU-bound) fill both workers around them.

Every component test is also ``slow``: ``-m "not slow"`` is the fast tier of the inner loop.
"""
from __future__ import annotations

from typing import Dict, Iterable, List

import pytest

#: Markers that mean a test runs a real component (a JVM, a server).
COMPONENT_MARKERS = ("spark", "broker")

#: Session fixtures that start a real component, each started once per pytest process.
COMPONENT_FIXTURES = frozenset({
    "spark", "s3", "kafka_broker", "broker_data", "stopped_log_dir", "debezium_capture",
    "user_app", "spark_cluster", "spark_connect",
})


class _Groups:
    """Union-find over names: modules and component fixtures."""

    def __init__(self):
        self.parent: Dict[str, str] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def union(self, names: Iterable[str]) -> None:
        roots = sorted({self.find(n) for n in names})
        for other in roots[1:]:
            self.parent[other] = roots[0]


def components_of(item: pytest.Item) -> List[str]:
    """The component fixtures ``item`` uses (through any fixture), or ``[]`` for a test of no
    component; a test marked ``spark``/``broker`` without one still counts as a component test."""
    used = sorted(COMPONENT_FIXTURES.intersection(getattr(item, "fixturenames", ())))
    if used or any(item.get_closest_marker(name) for name in COMPONENT_MARKERS):
        return ["fixture:" + name for name in used] or ["-"]
    return []


def pytest_configure(config):
    # known with or without pytest-xdist installed (--strict-markers)
    config.addinivalue_line("markers", "xdist_group(name): run in the named pytest-xdist group")


# before pytest's own -m/-k selection, which then sees the added marks
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    groups = _Groups()
    chosen = []
    for item in items:
        used = components_of(item)
        if not used:
            continue
        module = "module:" + item.nodeid.split("::", 1)[0]
        groups.union([module] + [u for u in used if u != "-"])
        chosen.append((item, module))
    for item, module in chosen:
        group = groups.find(module).split(":", 1)[1]
        item.add_marker(pytest.mark.xdist_group(group))
        item.add_marker(pytest.mark.slow)
