"""One Spark standalone cluster and one Spark Connect server over it for the pytest session,
in the style of asyncpg's test cluster: started on first use, bounded in time, stopped at the
end with nothing left in their process groups.

The cluster is a master and two workers (``spark-class``, 127.0.0.1, own work dirs) from the
bare Python 3.12 (pyspark, pyarrow, pandas only; ``spark_helpers.bare_python``); every
application on it is submitted from that Python with kafkarec's cp312 wheel.  Each worker has
2 cores and 2g and an application gets 2 cores (``spark.deploy.defaultCores``), one on each
worker: the Connect server keeps its executors for the whole session and an application
submitted beside it still runs on both workers.

The test that kills a worker (marker ``kills_a_spark_worker``) runs after every other test
of the session and starts the worker again.

For fast local loops, point the tests at a cluster and a Connect server already running:
``KAFKAREC_TEST_SPARK_MASTER=spark://...`` and ``KAFKAREC_TEST_SPARK_CONNECT=sc://...``
(``PYTHONPATH=tests .venv/bin/python -m support.spark.spark_cluster`` starts both as the fixtures
do and prints those two lines); the killed-worker test skips then.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from typing import Optional

import pytest

from support.spark import spark_helpers as H
from support.net import free_port, free_ports
from support.procs import kill_group, stop_group
from support.spark.spark_submit import spark_submit

MASTER_VARIABLE = "KAFKAREC_TEST_SPARK_MASTER"
CONNECT_VARIABLE = "KAFKAREC_TEST_SPARK_CONNECT"
KILLS_A_WORKER = "kills_a_spark_worker"


class StandaloneCluster:
    """A Spark standalone master and ``workers`` workers (``spark-class``, all on
    127.0.0.1, each worker with its own work dir), started from the pyspark of
    ``python``'s venv.  Each daemon runs in its own process group (its executors too),
    which :meth:`kill_worker` and :meth:`stop` end by id; :attr:`groups` holds every
    group it started, for the leak check.  ``app_cores``: the cores an application gets
    when it does not set ``spark.cores.max``."""

    def __init__(self, workdir: str, python: str, *, workers: int = 2, cores: int = 1,
                 memory: str = "1g", app_cores: Optional[int] = None, env=None):
        self.workdir = workdir
        self.python = python
        self.spark_class = os.path.join(os.path.dirname(python), "spark-class")
        self.env = H.bare_env(python, env)
        self.env["SPARK_LOG_DIR"] = os.path.join(workdir, "logs")
        # the executors' scratch folders (their files, their shuffle): in /tmp by default, where a
        # worker that is killed (a test kills one) leaves them, ~150 MB a run
        self.env["SPARK_LOCAL_DIRS"] = os.path.join(workdir, "local")
        self.env["SPARK_DAEMON_JAVA_OPTS"] = H.SPARK_JVM_FLAGS     # the master's and workers' JVMs
        if app_cores:
            self.env["SPARK_MASTER_OPTS"] = f"-Dspark.deploy.defaultCores={app_cores}"
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.procs: dict = {}          # name -> Popen of each daemon running
        self.groups: set = set()
        #: name -> where this start of the daemon begins in its log (a restarted worker appends)
        self.log_starts: dict = {}
        self.port, self.ui_port = free_ports(2)
        self.master_url = f"spark://127.0.0.1:{self.port}"

    def _start(self, name, args):
        log = open(os.path.join(self.workdir, f"{name}.log"), "ab")
        self.log_starts[name] = log.tell()
        proc = subprocess.Popen([self.spark_class] + args, cwd=self.workdir, env=self.env,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        log.close()
        self.procs[name] = proc
        self.groups.add(proc.pid)
        return proc

    def start(self, timeout: float = 120):
        os.makedirs(self.workdir, exist_ok=True)
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(self.ui_port)])
        # The ports were free when picked, not when bound: a daemon that finds its port taken
        # takes the next one (Spark's spark.port.maxRetries), so the master's URL and its UI,
        # and each worker's port, are what the daemon says it bound.
        deadline = time.monotonic() + timeout
        self.port = self._wait_bound("master", "sparkMaster", deadline)
        self.ui_port = self._wait_bound("master", "MasterUI", deadline)
        self.master_url = f"spark://127.0.0.1:{self.port}"
        for i in range(self.n_workers):
            self.add_worker(i)
        self.wait_workers(max(1.0, deadline - time.monotonic()))
        return self

    def bound_port(self, name: str, service: str) -> Optional[int]:
        """The port daemon ``name``'s current start bound for ``service`` (None: not yet)."""
        try:
            with open(os.path.join(self.workdir, f"{name}.log"), "rb") as fh:
                fh.seek(self.log_starts.get(name, 0))
                text = fh.read().decode(errors="replace")
        except OSError:
            return None
        found = re.findall(rf"Successfully started service '{re.escape(service)}' on port (\d+)", text)
        return int(found[-1]) if found else None

    def _wait_bound(self, name: str, service: str, deadline: float) -> int:
        while time.monotonic() < deadline:
            port = self.bound_port(name, service)
            if port is not None:
                return port
            if self.procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited with {self.procs[name].returncode}:\n{self.log(name)[-3000:]}")
            time.sleep(0.2)
        raise TimeoutError(f"{name} did not start its {service} in time:\n{self.log(name)[-3000:]}")

    def add_worker(self, i: int):
        name, port = f"worker-{i}", free_port()
        work = os.path.join(self.workdir, name)
        os.makedirs(work, exist_ok=True)
        return self._start(name, [
            "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port",
            str(port), "--webui-port", str(free_port()), "--cores", str(self.cores),
            "--memory", self.memory, "--work-dir", work, self.master_url])

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
            return json.load(r)

    def wait_workers(self, timeout: float = 120):
        """Until the master lists exactly the running workers as alive (a killed one no
        longer); fails at once when a daemon exits."""
        deadline = time.monotonic() + timeout
        last = want = None
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited with {p.returncode}:\n{self.log(name)[-3000:]}")
            want = {self.bound_port(n, "sparkWorker") for n in self.procs if n.startswith("worker-")}
            try:
                last = self.status()
                alive = {w["port"] for w in last.get("workers", []) if w.get("state") == "ALIVE"}
                if None not in want and alive == want:
                    return last
            except (OSError, ValueError):    # not listening yet, or a page before /json/ is up
                pass
            time.sleep(0.5)
        raise TimeoutError(f"the master did not list workers {sorted(want or (), key=str)} as the alive ones in "
                           f"{timeout} s: {last}\n{self.log('master')[-3000:]}")

    def log(self, name: str) -> str:
        try:
            with open(os.path.join(self.workdir, f"{name}.log"), errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    def kill_worker(self, i: int):
        """SIGKILL worker ``i``'s process group: the worker, its executor JVMs and
        their Python workers, at once (a machine lost mid-job)."""
        kill_group(self.procs.pop(f"worker-{i}"))

    def restart_worker(self, i: int, timeout: float = 120):
        """Worker ``i`` started again, back once the master lists it (and no longer the
        killed one) among the alive workers."""
        self.add_worker(i)
        return self.wait_workers(timeout)

    def stop(self):
        procs = list(self.procs.values())
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        # whatever is left in those groups (executors slow to notice): SIGKILL by group id
        for pgid in self.groups:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in procs:
            p.wait(timeout=30)
        self.procs.clear()


class ConnectServer:
    """A Spark Connect server started on its own (``spark-submit --class
    org.apache.spark.sql.connect.service.SparkConnectServer``) over ``master_url``, its
    Python workers on ``python``, listening on 127.0.0.1; in its own process group.  ``args``:
    more spark-submit arguments (jars, catalogs); ``bytes_read_dir``: a folder every Python
    worker of the server (the planner's and the executors') counts the bytes it reads into
    (kafkarec.log.storage.BYTES_READ_ENV)."""

    def __init__(self, workdir: str, python: str, master_url: str, env=None, args=(),
                 bytes_read_dir: Optional[str] = None):
        self.workdir, self.python, self.master_url = workdir, python, master_url
        self.args = list(args)
        self.env = H.bare_env(python, env)
        self.bytes_read_dir = bytes_read_dir
        self.conf: dict = {}
        if bytes_read_dir:
            from kafkarec.log.storage import BYTES_READ_ENV
            # the planner's Python workers are the server JVM's children; the executors' are
            # the workers' children, which pass on spark.executorEnv
            self.env[BYTES_READ_ENV] = bytes_read_dir
            self.conf[f"spark.executorEnv.{BYTES_READ_ENV}"] = bytes_read_dir
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.proc = None
        self.groups: set = set()

    def start(self, timeout: float = 180, attempts: int = 3):
        """Start the server and wait until it listens (``timeout`` s an attempt).  Its port was
        only free when picked: when the server says another process bound it first, it starts
        again on a new one (``attempts`` in all); ``url`` names the port it got."""
        os.makedirs(self.workdir, exist_ok=True)
        for attempt in range(1, attempts + 1):
            if self._start_once(timeout):
                return self
            failed = os.path.join(self.workdir, f"connect-server.attempt-{attempt}.log")
            os.replace(os.path.join(self.workdir, "connect-server.log"), failed)
            with open(failed, errors="replace") as fh:
                text = fh.read()
            if "java.net.BindException" not in text or attempt == attempts:
                raise RuntimeError(f"the Connect server did not start on {self.port} in {timeout} s "
                                   f"(attempt {attempt}, exit status {self.proc.poll()}; log {failed}):\n"
                                   f"{text[-5000:]}")
            self.port = free_port()
            self.url = f"sc://127.0.0.1:{self.port}"
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> bool:
        log = open(os.path.join(self.workdir, "connect-server.log"), "wb")
        cmd, _ = spark_submit(
            self.python, master=self.master_url, main_class="org.apache.spark.sql.connect.service.SparkConnectServer",
            conf={"spark.connect.grpc.binding.port": self.port, "spark.connect.grpc.binding.address": "127.0.0.1",
                  "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                  "spark.executor.memory": "768m", "spark.sql.shuffle.partitions": 2,
                  "spark.sql.session.timeZone": "UTC", "spark.pyspark.python": self.python,
                  **self.conf},
            extra=self.args)
        self.proc = subprocess.Popen(
            cmd, cwd=self.workdir, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.groups.add(self.proc.pid)
        # ready when the server says it bound the port: a port that answers may be another
        # process's (an application started beside the lakehouse server took its port once; the
        # port answered, and the client waited its whole timeout on a socket that was no server)
        started = f"Spark Connect server started at: 127.0.0.1:{self.port}"
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            log_text = self._log()
            if "Error starting Spark Connect server" in log_text:
                break
            if started in log_text:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                        return True
                except OSError:
                    pass
            time.sleep(0.5)
        self.stop()         # a server that failed may linger: its group ends here
        return False

    def _log(self) -> str:
        with open(os.path.join(self.workdir, "connect-server.log"), errors="replace") as fh:
            return fh.read()

    def stop(self):
        if self.proc is not None:
            stop_group(self.proc)




def alive_in_groups(pgids) -> list:
    """Processes still alive in the given process groups (for leak checks)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) in pgids and fields[0] != "Z":
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def shared_cluster(workdir: str, bare: str) -> StandaloneCluster:
    """The session's cluster, not started: two workers of 2 cores and 2g, 2 cores per
    application, the workers' native cache in ``workdir``."""
    return StandaloneCluster(workdir, bare, workers=2, cores=2, memory="2g", app_cores=2,
                             env={"KAFKAREC_NATIVE_CACHE": os.path.join(workdir, "native-cache")})


@dataclasses.dataclass
class SparkCluster:
    """What an application needs to run on the session's cluster."""
    master_url: str
    python: str             # the bare 3.12: spark-submit's, the driver's and every executor's
    own: Optional[StandaloneCluster]   # None: KAFKAREC_TEST_SPARK_MASTER names one running


# -- fixtures ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def py312():
    """The Python 3.12 of the cluster and Connect tests (the Spark workers' Python)."""
    python = H.python_for("3.12")
    if python is None:
        pytest.fail("no Python 3.12 found (python3.12 on PATH or ~/.pyenv/versions/3.12.*)")
    return python


@pytest.fixture(scope="session")
def bare312(py312):
    return H.bare_python(py312)


@pytest.fixture(scope="session")
def wheel312(py312):
    return H.wheelhouse(py312)


@pytest.fixture(scope="session")
def spark_cluster(bare312, tmp_path_factory):
    """The session's standalone cluster (or KAFKAREC_TEST_SPARK_MASTER's); stopped at the end,
    nothing left running in its process groups."""
    external = os.environ.get(MASTER_VARIABLE)
    if external:
        yield SparkCluster(external, bare312, None)
        return
    cluster = shared_cluster(str(tmp_path_factory.mktemp("spark-cluster")), bare312)
    try:
        cluster.start()
        yield SparkCluster(cluster.master_url, bare312, cluster)
    finally:
        cluster.stop()
        left = alive_in_groups(cluster.groups)
        assert not left, f"processes left running after the cluster stopped: {left}"


@dataclasses.dataclass(frozen=True)
class SparkConnect:
    """The session's Connect server as its tests reach it."""
    url: str                          # sc://127.0.0.1:PORT
    #: the folder its Python workers (the planner's and the executors') count the bytes they read
    #: into (kafkarec.log.storage.bytes_read); None for KAFKAREC_TEST_SPARK_CONNECT's server
    bytes_read_dir: Optional[str]


@pytest.fixture(scope="session")
def spark_connect(request, tmp_path_factory):
    """The session's Spark Connect server over the session's cluster (or
    KAFKAREC_TEST_SPARK_CONNECT's), a :class:`SparkConnect`; stopped at the end, before the
    cluster, nothing left running in its process group."""
    external = os.environ.get(CONNECT_VARIABLE)
    if external:
        yield SparkConnect(external, None)
        return
    cluster = request.getfixturevalue("spark_cluster")
    work = str(tmp_path_factory.mktemp("spark-connect"))
    counter = os.path.join(work, "bytes-read")
    os.makedirs(counter)
    server = ConnectServer(work, cluster.python, cluster.master_url,
                           {"KAFKAREC_NATIVE_CACHE": os.path.join(work, "native-cache")},
                           bytes_read_dir=counter)
    try:
        yield SparkConnect(server.start().url, counter)
    finally:
        server.stop()
        left = alive_in_groups(server.groups)
        assert not left, f"processes left running after the Connect server stopped: {left}"


# -- the killed worker runs last --------------------------------------------------------------

def pytest_configure(config):
    config.addinivalue_line("markers", f"{KILLS_A_WORKER}: kills a worker of the session's "
                            "standalone cluster (and starts it again); runs after every other test")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """The tests that kill a worker of the shared cluster run after every other test of the
    session, so no other user of the cluster (nor of the Connect server, whose executors die
    with it) ever runs beside a lost worker.  The end of the session, not after the last
    test whose fixtures name the cluster: test_connect reaches its server through
    ``request.getfixturevalue``, which no fixture closure shows."""
    last = [item for item in items if item.get_closest_marker(KILLS_A_WORKER)]
    if last:
        items[:] = [item for item in items if item not in last] + last


# -- for local loops --------------------------------------------------------------------------

def main():
    """Start the cluster and the Connect server as the fixtures do, print the variables that
    point the tests at them, stop both on Ctrl-C."""
    import tempfile
    python = H.python_for("3.12")
    if python is None:
        raise SystemExit("no Python 3.12 found (python3.12 on PATH or ~/.pyenv/versions/3.12.*)")
    bare = H.bare_python(python)
    work = tempfile.mkdtemp(prefix="kafkarec-spark-cluster-")
    cluster = shared_cluster(os.path.join(work, "cluster"), bare)
    server = ConnectServer(os.path.join(work, "connect"), bare, cluster.master_url,
                           {"KAFKAREC_NATIVE_CACHE": os.path.join(work, "connect", "native-cache")})
    # Ctrl-C, or SIGINT/SIGTERM when started in the background (where SIGINT is ignored),
    # reach the finally below
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        cluster.start()
        server.start()
        print(f"export {MASTER_VARIABLE}={cluster.master_url} {CONNECT_VARIABLE}={server.url}")
        print(f"(logs in {work}; Ctrl-C stops both)", flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        cluster.stop()


if __name__ == "__main__":
    main()
