"""Two lanes (pytest-xdist, ``--dist loadgroup``), and the fast tier's marker.

The suite's real components (the in-process SparkSession, the one user-way Spark application, the
standalone cluster and Spark Connect, the Sail server, the broker, PostgreSQL, MariaDB and Debezium, SeaweedFS) are started
once per pytest process and shared by every test that needs them (``tests/support``).  Under
pytest-xdist each worker is such a process, so the tests that share a component must run in the same
worker: every component test gets an ``xdist_group``, and two tests share a group when they share a
component or a module-scoped fixture (a module's own fixtures, such as a ``spark-submit`` of its job,
then run once).  A component test that uses neither (only a per-lane component, or only a marker) goes
with its module.  So a module whose local-mode tests and whose cluster test share no fixture is two
groups, and its local-mode half runs in the other worker than the cluster's tests: the standalone
cluster's group was the suite's longest lane.
The in-process SparkSession and SeaweedFS are the exceptions (``PER_LANE_FIXTURES``): one per worker
that uses them.
Groups that share nothing run side by side in the two workers, and the tests of no component (the
core, log files, the CLI, internal topics, typed decoders: CPU-bound) fill both workers around them.

Every component test is also ``slow``: ``-m "not slow"`` is the fast tier of the inner loop.
"""
from __future__ import annotations

from typing import Dict, Iterable, List

import pytest

#: Markers that mean a test runs a real component (a JVM, a server).
COMPONENT_MARKERS = ("spark", "broker", "registry")

#: Session fixtures that start a real component, once per pytest process; the tests that use
#: one run in one worker, so it starts once per run.
COMPONENT_FIXTURES = frozenset({
    "kafka_broker", "broker_data", "stopped_broker", "stopped_log_dir", "broker_spark", "debezium_capture",
    "mariadb_capture", "user_app", "spark_cluster", "spark_connect", "postgres_server", "iceberg_catalog",
    "connect_worker", "restore_target_broker", "stream_apps_cluster", "apicurio_registry", "dask_cluster",
    "sail_server",
})

#: Components cheap enough to start in each worker that uses one (an in-process SparkSession:
#: ~10 s; SeaweedFS: ~2 s): grouping their users would put nearly every Spark test in one lane
#: (test_connect alone uses the SparkSession, SeaweedFS, the cluster and Connect).  Their tests
#: are component tests all the same (slow, grouped by module).
PER_LANE_FIXTURES = frozenset({"spark", "s3"})


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
    """The component fixtures ``item`` uses (through any fixture, or named by its ``components``
    marker), or ``[]`` for a test of no component; a test marked ``spark``/``broker`` without one
    still counts as a component test."""
    named = [name for mark in item.iter_markers("components") for name in mark.args]
    unknown = set(named) - COMPONENT_FIXTURES - PER_LANE_FIXTURES
    if unknown:
        raise pytest.UsageError(f"{item.nodeid}: components({', '.join(sorted(unknown))}): not one of "
                                f"{sorted(COMPONENT_FIXTURES | PER_LANE_FIXTURES)}")
    fixtures = {*getattr(item, "fixturenames", ()), *named}
    used = sorted(COMPONENT_FIXTURES.intersection(fixtures))
    if used or PER_LANE_FIXTURES.intersection(fixtures) or \
            any(item.get_closest_marker(name) for name in COMPONENT_MARKERS):
        return ["fixture:" + name for name in used] or ["-"]
    return []


def scoped_fixtures(item: pytest.Item, module: str) -> List[str]:
    """The module-, class- and package-scoped fixtures ``item``'s closure holds, each named by the
    instance it gets (``scoped:<module>::<fixture>``; a package's per package): the tests that share
    one must share a worker, or it runs once in each.  Session-scoped ones other than the
    components are caches each worker may fill (bare Pythons, wheelhouses: built once, locked)."""
    info = getattr(item, "_fixtureinfo", None)
    names = []
    for name, defs in (info.name2fixturedefs.items() if info is not None else ()):
        scope = str(getattr(defs[-1], "scope", "function"))
        if scope in ("module", "class"):
            names.append(f"scoped:{module}::{name}")
        elif scope == "package":
            names.append(f"scoped:{defs[-1].baseid}::{name}")
    return sorted(names)


def pytest_configure(config):
    # known with or without pytest-xdist installed (--strict-markers)
    config.addinivalue_line("markers", "xdist_group(name): run in the named pytest-xdist group")
    config.addinivalue_line("markers", "components(*fixtures): the component fixtures a test reaches "
                            "through request.getfixturevalue, which its fixture closure does not show")


# before pytest's own -m/-k selection, which then sees the added marks
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    groups = _Groups()
    chosen, free = [], []
    for item in items:
        used = components_of(item)
        module = item.nodeid.split("::", 1)[0]
        if not used:
            free.append((item, scoped_fixtures(item, module)))
            continue
        names = [u for u in used if u != "-"] + scoped_fixtures(item, module)
        groups.union(names or ["module:" + module])
        chosen.append((item, (names or ["module:" + module])[0]))
    for item, name in chosen:
        group = groups.find(name).split(":", 1)[1]
        item.add_marker(pytest.mark.xdist_group(group))
        item.add_marker(pytest.mark.slow)
    # A test of no component that shares a module-scoped fixture with a component's group runs in
    # that group's worker: elsewhere the fixture (a local Ray, a written log) is made a second time.
    # It stays in whatever tier it was.
    for item, scoped in free:
        shared = [name for name in scoped if name in groups.parent]
        # one worker: where its fixtures are shared with two groups, the first's (the other's fixture
        # is made again for it, as before)
        if shared:
            item.add_marker(pytest.mark.xdist_group(groups.find(shared[0]).split(":", 1)[1]))


# --- a component stops when its group is done ------------------------------------------------
# A session fixture lives to the end of its pytest process; in a lane that is long after the last
# test of its group (an idle KRaft broker costs ~4.5 CPU-s a minute, the standalone cluster and
# Spark Connect a few more), CPU the other lane's tests wait for on 2 cores.  Under ``--dist
# loadgroup`` a group is handed to one worker whole and runs there contiguously (xdist's
# LoadScopeScheduling sends a scope's tests in one message; the worker runs them in that order and
# always knows the next test), so the first test of another group or a free test after it means no
# test of this worker needs the group's components again: their fixtures are finished there,
# dependents first (pytest's own teardown, run once; the session's end then finds them finished).

def _group(item) -> str | None:
    """The xdist group ``item`` runs in, as xdist names it (the suffix it puts on a grouped test's
    node id: every ``xdist_group`` name the test carries, joined), or None."""
    if item is None or item.get_closest_marker("xdist_group") is None or "@" not in item.nodeid:
        return None
    return item.nodeid.rsplit("@", 1)[-1]


def _stops_groups(config) -> bool:
    """Only in a worker of ``--dist loadgroup``: elsewhere a group's tests need not be contiguous."""
    # (xdist sets a worker's own ``dist`` to "no" and keeps the run's choice as ``loadgroup``)
    return hasattr(config, "workerinput") and bool(getattr(config.option, "loadgroup", False))


#: The component fixtures set up in this process, each with the request it was set up for, in
#: their set-up order: they are finished in the reverse order, as pytest's own end of session
#: does, so a component that reached another through ``request.getfixturevalue`` (Spark Connect,
#: the standalone cluster it runs on), which pytest does not record as a dependency, stops before
#: the one it uses.  The request is the one pytest's own finalizer would pass.
_SET_UP: List[tuple] = []
#: The test being run in this process (its fixtures are set up for it).
_RUNNING: List[pytest.Item] = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _RUNNING[:] = [item]


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    component = fixturedef.argname in COMPONENT_FIXTURES and fixturedef.scope == "session"
    if component and _RUNNING and _group(_RUNNING[0]) is None and _stops_groups(request.config):
        # its group would not know it: it could be finished under a later test of this worker
        raise pytest.UsageError(
            f"{_RUNNING[0].nodeid} reaches the component {fixturedef.argname} without naming it: "
            f"mark it @pytest.mark.components({fixturedef.argname!r}) (tests/support/lanes.py)")
    yield
    if component:
        _SET_UP[:] = [(d, r) for d, r in _SET_UP if d is not fixturedef]   # set up again: now the latest
        _SET_UP.append((fixturedef, request))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    group = _group(item)
    if nextitem is None or group is None or _group(nextitem) == group or not _stops_groups(item.config):
        return   # (at the worker's end pytest finishes everything itself)
    finishing, _SET_UP[:] = list(reversed(_SET_UP)), []
    errors = []
    for fixturedef, request in finishing:     # each one, whatever the others do
        if fixturedef.cached_result is not None:
            try:
                fixturedef.finish(request)
            except BaseException as exc:      # noqa: BLE001 - raised together below
                errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise RuntimeError(f"finishing the components of group {group}: "
                           + "; ".join(f"{type(e).__name__}: {e}" for e in errors)) from errors[0]
