"""Tiered-storage plugin objects in Spark, as a user runs it: ``spark-submit --py-files <kafkarec
wheel>`` from a bare Python (a job of the one user-way application, tests/support/spark/user_app.py),
``format("kafkarec").option("tieredStorageConfig", F).load(root)``: every variant the plugin
writes gives exactly the records of the original segments."""
from __future__ import annotations

import glob
import os

import pytest

import kafkarec
from support.spark import spark_helpers as H
from support.spark.user_app import UserAppJob

HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

DATA = os.path.join(os.path.dirname(HERE), "data", "tiered", "aiven")
VARIANTS = ("plain", "zstd", "aes", "both", "small", "large")


def _prepare(request, work):
    """The fixtures, and copies whose objects disagree with their manifests (one folder per damage)."""
    from support.logs.lying_objects import lying_root
    lying = os.path.join(str(work), "lying")
    facts = {(variant, damage): lying_root(variant, os.path.join(lying, damage), damage)
             for variant, damage in (("plain", "more chunks"), ("zstd", "short"))}
    return [DATA, lying], facts


JOB = UserAppJob("tiered", os.path.join(HERE, "tiered_job.py"), _prepare)


@pytest.fixture(scope="module")
def outcome(user_app):
    return user_app.outcome(JOB)


@pytest.fixture(scope="module")
def submitted(outcome):
    return outcome[0]


def _originals():
    """What the plugin was given: every closed segment of the two input partitions."""
    rows = []
    for part in ("clicks-0", "txn-0"):
        for path in sorted(glob.glob(os.path.join(DATA, "input", part, "*.log")))[:-1]:
            with open(path, "rb") as fh:
                t = kafkarec.to_arrow(fh.read())
            for r in t.select(["offset", "key", "value"]).to_pylist():
                rows.append({"topic": part[:-2], "partition": 0, "offset": r["offset"],
                             "key": None if r["key"] is None else r["key"].hex().upper(),
                             "value": None if r["value"] is None else r["value"].hex().upper()})
    return rows


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_reads_as_the_original_records(submitted, variant):
    assert submitted[variant] == _originals()
    assert submitted[variant + " tasks"] > 2            # split by size like any read


def test_a_selection_reads_the_offsets_it_names(submitted):
    assert submitted["selection"] == list(range(300, 650))


def test_without_the_key_ring_the_error_names_the_object(submitted):
    msg = submitted["no keys"]
    assert msg is not None and "encrypted" in msg and "tieredStorageConfig" in msg and ".log" in msg


def test_a_stream_reads_the_same_records(submitted):
    assert submitted["stream"] == _originals()


@pytest.mark.parametrize("how", ["batch", "batch DROPMALFORMED", "stream"])
@pytest.mark.parametrize("variant, damage, chunk", [("plain", "more chunks", 1), ("zstd", "short", 1)])
def test_an_object_that_disagrees_with_its_manifest_fails_the_read(outcome, variant, damage, chunk, how):
    """On bare executors a segment shorter than its manifest says is data loss, not a quiet
    read of what is there (issue 40): the read fails naming the object and the chunk."""
    result, facts = outcome
    msg = result[f"lying {variant} {damage} {how}"]
    assert msg is not None, "the read of a lying object succeeded"
    assert f"{facts[(variant, damage)]}, chunk {chunk}: the manifest's chunk index covers" in msg
