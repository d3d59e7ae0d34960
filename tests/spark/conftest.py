"""Fixtures shared by the Spark tests: the sample log directory, a corrupt copy
and one local SparkSession (local[2], 127.0.0.1, UI off) for the whole run,
kafkarec shipped to its Python workers by spark_udfs.register."""
from __future__ import annotations

import pytest

import spark_helpers as H


@pytest.fixture(scope="session")
def py312():
    """The Python 3.12 of the cluster and Connect tests (the Spark workers' Python)."""
    python = H.python_for("3.12")
    if python is None:
        pytest.fail("no Python 3.12 found (python3.12 on PATH or ~/.pyenv/versions/3.12.*)")
    return python


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
