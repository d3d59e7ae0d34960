"""The one in-process SparkSession of the pytest session, for every test folder, and the sample
log directories the Spark tests read.

``spark``: local[2] on 127.0.0.1, UI off, UTC (``spark_helpers.make_session``), kafkarec
shipped to its Python workers and ``format("kafkarec")``, ``kafkarec_decode`` and
``kafkarec_explode`` registered once by ``spark_udfs.register``; stopped at the end of the
session.  A test neither stops it nor registers another data source over it (later tests
would read through that one).
"""
from __future__ import annotations

import pytest

from support.spark import spark_helpers as H


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    why = H.spark_available()
    if why:
        pytest.fail(f"Spark is part of the test extra: {why}")
    import spark_udfs
    session = H.make_session(str(tmp_path_factory.mktemp("spark-cache")))
    session._kafkarec_registration = spark_udfs.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    return H.sample_logs(tmp_path_factory, seed=7)


@pytest.fixture(scope="session")
def corrupt(tmp_path_factory, sample):
    root = str(tmp_path_factory.mktemp("corrupt") / "logs")
    info = H.make_corrupt_dir(sample, root)
    info["root"] = root
    return info
