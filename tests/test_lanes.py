"""The lanes hold: under ``--dist loadgroup`` every test of one xdist group runs in one worker
(tests/support/lanes.py relies on it to start each component once), and the lanes plugin groups
tests that share a component or a module-scoped fixture and leaves the rest free."""
from __future__ import annotations

import os
import subprocess
import sys

PROBE = '''
import os
import pytest


def note(*words):
    with open(os.environ["LANES_PROBE_OUT"], "a") as fh:
        print("WORKER", os.environ["PYTEST_XDIST_WORKER"], *words, file=fh)

@pytest.fixture(scope="session")
def kafka_broker():
    return "a stand-in: only the fixture's name matters to the lanes"

@pytest.mark.parametrize("i", range(6))
def test_uses_the_component(i, kafka_broker):
    note("component", i)

@pytest.mark.components("kafka_broker")
def test_reaches_it_through_getfixturevalue(request):
    request.getfixturevalue("kafka_broker")
    note("component", "named")

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    note("free", i)
'''


def _run_probe(tmp_path, probe, *args):
    (tmp_path / "test_probe.py").write_text(probe)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["support.lanes"]\n')
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    out = tmp_path / "workers.txt"
    env = dict(os.environ, PYTHONPATH=tests_dir + os.pathsep + os.environ.get("PYTHONPATH", ""),
               LANES_PROBE_OUT=str(out))
    proc = subprocess.run([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-q", "-c",
                           os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [line.split()[1:] for line in out.read_text().splitlines()]


def test_a_group_runs_in_one_worker(tmp_path):
    seen = _run_probe(tmp_path, PROBE, "-n", "2", "--dist", "loadgroup")
    component = {worker for worker, kind, _ in seen if kind == "component"}
    assert len([s for s in seen if s[1] == "component"]) == 7
    assert len(component) == 1, f"one group ran in workers {sorted(component)}: {seen}"
    assert len([s for s in seen if s[1] == "free"]) == 6


STOP_PROBE = '''
import os
import pytest


def note(*words):
    with open(os.environ["LANES_PROBE_OUT"], "a") as fh:
        print("WORKER", os.environ.get("PYTEST_XDIST_WORKER", "main"), *words, file=fh)

@pytest.fixture(scope="session")
def kafka_broker():
    note("start")
    yield "a stand-in"
    note("stop")

@pytest.fixture(scope="session")
def broker_data(kafka_broker):
    yield "depends on the broker"
    note("stop-data")

@pytest.fixture(scope="session")
def spark_cluster():
    yield "a stand-in"
    note("stop-cluster")

@pytest.fixture(scope="session")
def spark_connect(request):
    # as the real one: it reaches the cluster through getfixturevalue, which pytest does not
    # record as a dependency
    request.getfixturevalue("spark_cluster")
    yield "a stand-in"
    note("stop-connect")

@pytest.mark.components("spark_cluster")
@pytest.mark.parametrize("i", range(3))
def test_uses_the_component(i, broker_data, spark_connect):
    note("component", i)

@pytest.mark.parametrize("i", range(60))
def test_free(i):
    note("free", i)
'''


def test_a_component_stops_when_its_group_is_done(tmp_path):
    """The group is the first work unit (its tests come first), so its worker runs free tests
    after it (xdist hands each worker several units at the start): the components, and the fixture
    over them first, stop before the first of them, not at the worker's end."""
    seen = _run_probe(tmp_path, STOP_PROBE, "-n", "2", "--dist", "loadgroup")
    worker = next(w for w, kind, *_ in seen if kind == "component")
    mine = [s[1:] for s in seen if s[0] == worker]
    kinds = [s[0] for s in mine]
    assert kinds.count("start") == kinds.count("stop") == kinds.count("stop-data") == 1, mine
    last_component = max(i for i, k in enumerate(kinds) if k == "component")
    # in the reverse of their set-up order: Connect before the cluster it reached
    assert kinds[last_component + 1:last_component + 5] == ["stop-connect", "stop-cluster", "stop-data",
                                                            "stop"], mine
    assert "free" in kinds[last_component + 5:], f"no free test ran after the group: {mine}"
    assert len([s for s in seen if s[1] == "free"]) == 60


def test_without_lanes_a_component_lives_to_the_end(tmp_path):
    """In one process a group's tests need not be contiguous: nothing stops early."""
    seen = _run_probe(tmp_path, STOP_PROBE, "-p", "no:xdist")
    kinds = [s[1] for s in seen]
    assert kinds[-4:] == ["stop-connect", "stop-cluster", "stop-data", "stop"], kinds
    assert kinds.count("stop") == 1, kinds


UNNAMED_PROBE = '''
import pytest

@pytest.fixture(scope="session")
def kafka_broker():
    yield "a stand-in"

def test_uses_the_component(kafka_broker):
    pass

def test_reaches_it_unnamed(request):
    request.getfixturevalue("kafka_broker")
'''


def test_a_component_reached_unnamed_is_a_usage_error(tmp_path):
    """A test of no group that reaches a component through getfixturevalue without the
    ``components`` marker: its group does not know it, so it is refused with what to write."""
    (tmp_path / "test_probe.py").write_text(UNNAMED_PROBE)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["support.lanes"]\n')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p",
                           "no:cacheprovider", "-q", "-c", os.devnull, "--rootdir", str(tmp_path),
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "reaches the component kafka_broker without naming it: mark it " \
           "@pytest.mark.components('kafka_broker')" in proc.stdout, proc.stdout[-3000:]
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout[-3000:]


SPLIT_PROBE = '''
import pytest

@pytest.fixture(scope="session")
def kafka_broker():
    return "a stand-in"

@pytest.fixture(scope="module")
def local_app():
    return "this module's own spark-submit, run once"

@pytest.fixture(scope="module")
def topic(kafka_broker):
    return "a module fixture over the component"

@pytest.mark.spark
@pytest.mark.parametrize("i", range(3))
def test_local_mode(i, local_app):
    pass

def test_on_the_broker(kafka_broker):
    pass

def test_on_the_topic(topic):
    pass

@pytest.fixture(scope="module")
def local_engine():
    return "a module fixture of no component (a local Ray): made once in a worker"

def test_engine_on_the_broker(local_engine, kafka_broker):
    pass

def test_engine_alone(local_engine):
    pass

@pytest.mark.spark
def test_marked_only():
    pass
'''

GROUPS_CONFTEST = '''
import os
pytest_plugins = ["support.lanes"]

def pytest_collection_finish(session):
    with open(os.environ["LANES_PROBE_OUT"], "w") as fh:
        for item in session.items:
            mark = item.get_closest_marker("xdist_group")
            print(item.name, mark.args[0] if mark else "-", file=fh)
'''


def test_a_module_splits_where_its_tests_share_no_fixture(tmp_path):
    """A module's local-mode tests and its component test share no fixture: two groups, so the
    local half can run in the other worker than the component's (the standalone cluster's group
    was the suite's longest lane); the tests of a module-scoped fixture stay together."""
    (tmp_path / "test_probe.py").write_text(SPLIT_PROBE)
    (tmp_path / "conftest.py").write_text(GROUPS_CONFTEST)
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    out = tmp_path / "groups.txt"
    env = dict(os.environ, PYTHONPATH=tests_dir + os.pathsep + os.environ.get("PYTHONPATH", ""),
               LANES_PROBE_OUT=str(out))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider",
                           "--collect-only", "-q", "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    group = dict(line.split() for line in out.read_text().splitlines())
    assert {group[f"test_local_mode[{i}]"] for i in range(3)} == {"test_probe.py::local_app"}
    assert group["test_on_the_broker"] == group["test_on_the_topic"] == "kafka_broker"
    assert group["test_marked_only"] == "test_probe.py"     # no fixture to go by: its module
    # a free test sharing a module fixture with a component's group joins that group's worker
    assert group["test_engine_alone"] == group["test_engine_on_the_broker"] == "kafka_broker"


def test_marks_slow_and_groups_by_shared_component():
    import pytest
    from support import lanes

    class Item:
        def __init__(self, nodeid, fixtures=(), markers=()):
            self.nodeid, self.fixturenames, self._markers, self.added = nodeid, list(fixtures), list(markers), []

        def iter_markers(self, name):
            return [m for m in self._markers + self.added if m.name == name]

        def get_closest_marker(self, name):
            found = self.iter_markers(name)
            return found[0] if found else None

        def add_marker(self, mark):
            self.added.append(mark.mark)

    a = Item("tests/a/test_x.py::t1", ["kafka_broker"])
    b = Item("tests/b/test_y.py::t2", ["broker_data", "kafka_broker"])
    c = Item("tests/b/test_y.py::t3")                     # no component, but b's module
    d = Item("tests/c/test_z.py::t4", ["spark"])          # a per-lane component: its module only
    e = Item("tests/core/test_w.py::t5")                  # nothing: free, not slow
    f = Item("tests/d/test_v.py::t6", markers=[pytest.mark.spark.mark])
    lanes.pytest_collection_modifyitems(None, [a, b, c, d, e, f])
    group = {i.nodeid: i.get_closest_marker("xdist_group").args[0] for i in (a, b, d, f)}
    assert group["tests/a/test_x.py::t1"] == group["tests/b/test_y.py::t2"]
    assert group["tests/c/test_z.py::t4"] == "tests/c/test_z.py"
    assert group["tests/d/test_v.py::t6"] == "tests/d/test_v.py"
    assert c.get_closest_marker("xdist_group") is None and e.get_closest_marker("xdist_group") is None
    assert all(i.get_closest_marker("slow") for i in (a, b, d, f))
    assert e.get_closest_marker("slow") is None
