"""Fixtures shared by the Spark tests: the sample log directory, a corrupt copy
and one local SparkSession (local[2], 127.0.0.1, UI off) for the whole run,
kafkarec shipped to its Python workers by spark_udfs.register."""
from __future__ import annotations

import pytest

import spark_helpers as H


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    return H.sample_logs(tmp_path_factory, seed=7)


@pytest.fixture(scope="session")
def corrupt(tmp_path_factory, sample):
    root = str(tmp_path_factory.mktemp("corrupt") / "logs")
    info = H.make_corrupt_dir(sample, root)
    info["root"] = root
    return info


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    import spark_udfs
    session = H.make_session(str(tmp_path_factory.mktemp("spark-cache")))
    reg = spark_udfs.register(session)
    session._kafkarec_registration = reg
    yield session
    session.stop()
