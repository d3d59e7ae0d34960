"""The one rule for ../shared (tests/support/paths.py): tests that need Kafka's Java reader or
the Kafka-written fixtures SKIP with one reason on a clone without ../shared, and FAIL
under CI=true (or KAFKAREC_REQUIRE_SHARED=1) so CI never passes by skipping them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from support import paths
from support.paths import TESTS, shared_decision, shared_required


@pytest.mark.parametrize("env, required", [
    ({}, False), ({"CI": "true"}, True), ({"CI": "TRUE"}, True), ({"CI": "1"}, True),
    ({"CI": "false"}, False), ({"CI": ""}, False), ({"KAFKAREC_REQUIRE_SHARED": "1"}, True),
    ({"KAFKAREC_REQUIRE_SHARED": "0", "CI": "no"}, False),
])
def test_when_shared_is_required(env, required):
    assert shared_required(env) is required


def test_decision(tmp_path):
    there = tmp_path / "tool"
    there.write_text("")
    assert shared_decision("Kafka's reader", str(there), {}) is None
    assert shared_decision("Kafka's reader", str(there), {"CI": "true"}) is None
    missing = str(tmp_path / "absent")
    kind, reason = shared_decision("Kafka's reader", missing, {})
    assert kind == "skip" and "Kafka's reader is missing" in reason and missing in reason
    kind, reason = shared_decision("Kafka's reader", missing, {"CI": "true"})
    assert kind == "fail" and "required: CI=true" in reason


def _clone_without_shared(tmp_path) -> str:
    """A checkout's tests/ helpers with nothing next to the checkout (no ../shared)."""
    repo = tmp_path / "clone"
    tests = repo / "tests"
    tests.mkdir(parents=True)
    # the helpers whole, whatever room of tests/support/ kafka_java.py lives in
    shutil.copytree(os.path.join(TESTS, "support"), tests / "support",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tests / "test_needs_java.py").write_text(
        "from support.oracles import kafka_java as J\n\n"
        "def test_reads_with_kafka():\n"
        "    J.decode_many([b''])\n")
    assert not (tmp_path / "shared").exists()
    return str(repo)


@pytest.mark.parametrize("ci, outcome", [(None, "1 skipped"), ("true", "1 failed")])
def test_a_clone_without_shared(tmp_path, ci, outcome):
    repo = _clone_without_shared(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in paths.REQUIRE_SHARED_VARIABLES}
    env["PYTHONPATH"] = os.path.join(repo, "tests")
    if ci:
        env["CI"] = ci
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider",
                          "tests/test_needs_java.py"], cwd=repo, env=env, capture_output=True,
                         text=True, timeout=300)
    out = run.stdout + run.stderr
    assert outcome in out, out
    assert "Kafka's reader (tools/kafka-java) is missing" in out, out
    assert "Traceback" not in out and "RuntimeError" not in out, out
