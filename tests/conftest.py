import os
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
# the repository (for spark_udfs, benchmarks) and tests/ (shared test helpers:
# paths, foreign, logdir, spark_helpers, ...) for tests in every subfolder
for _path in (ROOT, TESTS):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from javacodec import java_codec  # noqa: E402,F401  (session fixture: one Java codec oracle JVM)


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
    """A SeaweedFS S3 server on 127.0.0.1 for the session: started on first use (tests/s3server.py),
    always stopped."""
    from s3server import S3Server
    server = S3Server(startup_timeout=60)
    server.start()
    try:
        yield server
    finally:
        server.stop()
