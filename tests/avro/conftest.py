"""The Avro tests' Java oracle, started once for the session."""
from __future__ import annotations

import pytest

from support.oracles.avro_helpers import AvroJava


@pytest.fixture(scope="session")
def avro_java():
    """Apache Avro's Java library (tests/java/AvroOracle.java): one JVM answers every case."""
    oracle = AvroJava()
    try:
        yield oracle
    finally:
        oracle.close()
