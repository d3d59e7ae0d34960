import os
import sys

import pytest

# Ray renices its worker processes to 15 (RayConfig worker_niceness).  Beside the other lane's
# JVMs and the release check's compiles, all at nice 0, such a worker gets ~3% of a core: a
# Ray read that takes 0.6 s took two minutes, and Ray's module 5-10 minutes of the suite.  The
# workers of every Ray the tests start (and the documents' examples) inherit this.
os.environ.setdefault("RAY_worker_niceness", "0")
# Nor does Ray prestart workers of the default environment at ray.init: the tests' tasks run in
# workers of their own runtime_env (started on demand), and two prestarted workers importing Ray
# beside the raylet slowed its registration past Ray's fixed 30 s on a loaded machine ("The
# current node timed out during startup").
os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
os.environ.setdefault("RAY_enable_worker_prestart", "0")

from support.oracles.javacodec import java_codec  # noqa: F401  (session fixture: one Java codec oracle JVM)

# the lanes (xdist groups, the fast tier); session fixtures for every folder: the in-process
# SparkSession and samples, the standalone cluster and the Spark Connect server, the one user-way
# Spark application, the user-way streams' applications and what its jobs' inputs need (the Debezium capture, PostgreSQL), the broker,
# the Kafka Connect worker and the Iceberg catalog
pytest_plugins = ["support.lanes", "support.spark.spark_session", "support.spark.spark_cluster", "support.spark.sail", "support.spark.user_app",
                  "support.spark.stream_apps", "support.servers.debezium", "support.servers.dask_cluster", "support.brokers.broker", "support.servers.connect_worker",
                  "support.registry.apicurio"]


def pytest_addoption(parser):
    parser.addoption("--handoff-rounds", type=int, default=1, metavar="N",
                     help="run tests/lakehouse/test_connect_handoff.py's hand-off procedure N times in one "
                          "session, each round from scratch (its own topics, connectors and tables) on the "
                          "session's broker and Connect worker: the flakiness check of issue 48")


def pytest_report_header(config):
    import kafkarec
    return [f"kafkarec core: {kafkarec._core.__file__} (crc32c hardware: {kafkarec._core.CRC32C_HARDWARE})"]


@pytest.fixture(autouse=True)
def _no_swallowed_exceptions(capfd):
    """Fail a test whose run printed 'Exception ignored' (an error lost inside Cython)."""
    yield
    out, err = capfd.readouterr()
    sys.stdout.write(out)
    sys.stderr.write(err)
    assert "Exception ignored" not in err, err


@pytest.fixture(scope="session")
def s3():
    """A SeaweedFS S3 server on 127.0.0.1 for the session: started on first use (tests/support/servers/s3server.py),
    always stopped."""
    from support.servers.s3server import S3Server
    server = S3Server(startup_timeout=60)
    server.start()
    try:
        yield server
    finally:
        server.stop()
