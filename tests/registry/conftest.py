"""A SeaweedFS S3 server for the registry's remote-source test (started on first use, always
stopped), as tests/remote/conftest.py starts it."""
import pytest


@pytest.fixture(scope="session")
def s3():
    from s3server import S3Server
    server = S3Server(startup_timeout=60)
    server.start()
    try:
        yield server
    finally:
        server.stop()
