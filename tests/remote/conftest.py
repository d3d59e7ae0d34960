"""A SeaweedFS S3 server for the session (started on first use, always stopped)."""
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
