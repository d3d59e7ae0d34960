"""Protobuf and JSON Schema values in Spark, as a user runs them: ``spark-submit --py-files <kafkarec
wheel>`` from a bare Python (pyspark, pyarrow, pandas only: no protobuf, no grpcio-tools; a job of
the one user-way application, tests/support/spark/user_app.py) over a log directory holding
``_schemas-0`` and topics written by confluent-kafka's ProtobufSerializer and JSONSerializer with
evolved schemas (tests/support/registry/registry_world_formats.py).  The data source
(valueFormat=registry, PERMISSIVE and FAILFAST) and from_registry over the raw value column give,
record for record, what the writers were given (Protobuf as Spark's from_protobuf maps it with the
column's descriptor and default options).  The .proto text is compiled where Spark plans the column
(the Data Source planner's Python worker, the driver for from_registry) with the grpcio-tools and
protobuf wheels that scripts/wheelhouse.sh puts next to the kafkarec wheel; executors get compiled
schemas and never load the compiler."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from support.spark import spark_helpers as H
from support.spark.user_app import UserAppJob

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

from support.registry import registry_world_formats as world_formats  # noqa: E402

TOPICS = ("shipments", "people")


def _expected(topic, value):
    if value is None:
        return None
    if topic == "shipments":
        value = dict(value, labels=dict(value["labels"]))   # the oracle lists map entries sorted
    return H.plain(value)


def _prepare(request, work):
    root = str(work / "logs")
    facts = world_formats.build(root)
    facts["root"] = root
    return [root], facts


JOB = UserAppJob("typed-formats", os.path.join(H.ROOT, "tests", "spark", "jobs", "typed_formats_job.py"),
                 _prepare, driver_memory_gb=2)


@pytest.fixture(scope="module")
def submitted(user_app):
    result, facts = user_app.outcome(JOB)
    return result, facts, user_app.bare, user_app.wheel


def test_the_bare_python_has_no_protobuf_compiler(submitted):
    _, _, bare, _ = submitted
    proc = subprocess.run([bare, "-c", "import google.protobuf"], capture_output=True, text=True,
                          env=H.bare_env(bare), timeout=60, cwd=H.ROOT)
    assert proc.returncode != 0 and "No module named 'google'" in proc.stderr, proc.stderr


@pytest.mark.parametrize("topic", TOPICS)
def test_data_source_value_format_registry(submitted, topic):
    result, facts, _, _ = submitted
    got = result[topic]["rows"]
    want = facts["expected"][topic]
    assert [r["offset"] for r in got] == list(range(len(want)))
    for row, (value, why) in zip(got, want):
        assert row["value"] == _expected(topic, value), row["offset"]
        if why is None:
            assert row["_corrupt_record"] is None, row
        else:
            assert row["_corrupt_record"] and why in row["_corrupt_record"], row
    value_type = next(f["type"] for f in result[topic]["schema"]["fields"] if f["name"] == "value")
    names = [f["name"] for f in value_type["fields"]]
    if topic == "shipments":      # the latest version of kr.ship.Shipment (message index [1] there)
        assert names == ["id", "carrier", "sent", "status", "cost", "parcels", "labels", "weight", "note"]
    else:
        assert names == list(world_formats.PEOPLE_V2["properties"])
    assert [r["valueSchemaId"] for r in got] == facts["schema_ids"][topic]


@pytest.mark.parametrize("topic", TOPICS)
def test_failfast_names_topic_partition_offset_and_reason(submitted, topic):
    result, facts, _, _ = submitted
    msg = result[topic]["failfast"]
    m = re.search(rf"topic {topic} partition 0 offset (\d+): value: (.*?) \(mode FAILFAST", msg or "", re.S)
    assert m, msg
    value, why = facts["expected"][topic][int(m.group(1))]
    assert value is None and why is not None and why in m.group(2), (m.group(1), m.group(2))


@pytest.mark.parametrize("topic", TOPICS)
def test_from_registry_over_the_raw_value_column(submitted, topic):
    result, facts, _, _ = submitted
    got = result[topic]["from_registry"]
    rows = result[topic]["rows"]
    assert [r["v"] for r in got] == [r["value"] for r in rows]
    assert [r["v"] for r in got] == [_expected(topic, v) for v, _ in facts["expected"][topic]]
    msg = result[topic]["from_registry_failfast"] or ""
    m = re.search(r"from_registry \(mode FAILFAST\): row \d+ of the Arrow batch: (.*)", msg)
    assert m and any(why and why in m.group(1) for _, why in facts["expected"][topic]), msg


def test_from_protobuf_options_reach_the_decoder(submitted, tmp_path):
    """enums.as.ints, emit.default.values, upcast.unsigned.ints (and convert.any.fields.to.json, which
    these messages without an Any only carry) given to the data source and to from_registry on bare
    executors give what Python's decode_table gives with the same options."""
    import kafkarec
    import kafkarec.registry as kr
    result, facts, _, _ = submitted
    opts = {"enums.as.ints": "true", "emit.default.values": "true", "upcast.unsigned.ints": "true",
            "convert.any.fields.to.json": "true"}
    root = facts["root"]
    reg = kr.load(root)
    data = b"".join(open(os.path.join(root, "shipments-0", f), "rb").read()
                    for f in sorted(os.listdir(os.path.join(root, "shipments-0"))) if f.endswith(".log"))
    table = kr.decode_table(kafkarec.to_arrow(data, topic="shipments"), reg, value_message="kr.ship.Shipment",
                            options=opts)
    want = [None if v is None else H.plain(dict(v, labels=dict(v["labels"])))
            for v in table.column("value").to_pylist()]       # Spark's rows hold maps as dicts
    assert "status:int" in result["options"]["schema"], result["options"]["schema"]
    assert [r["value"] for r in result["options"]["rows"]] == want
    assert [r["value"] for r in result["options"]["from_registry"]] == want


def test_executors_never_load_the_compiler(submitted):
    result, facts, _, _ = submitted
    workers = result["executors"]
    good = sum(1 for v, _ in facts["expected"]["shipments"] if v is not None)
    assert sum(w["decoded"] for w in workers) == good, workers
    assert not any(w["compiler_loaded"] for w in workers), workers


def test_a_python_without_the_compiler_wheels_gets_one_line_naming_the_fix(submitted, tmp_path):
    """Protobuf schema text where neither grpcio-tools nor its wheels are: one ProtobufSchemaError
    line naming the interpreter, what is missing and the command that fixes it.  With the wheels next
    to kafkarec's it compiles; the result is then in the per-user cache, where a Python without
    the compiler finds it."""
    import shutil
    _, _, bare, wheel = submitted
    folder = os.path.dirname(wheel)
    alone = tmp_path / "no-compiler"
    alone.mkdir()
    for name in os.listdir(folder):
        if name.endswith(".whl") and not name.startswith(("grpcio", "protobuf", "setuptools", "typing_")):
            shutil.copy(os.path.join(folder, name), alone)
    code = ("import sys\nfrom kafkarec.protobuf import ProtobufSchema, ProtobufSchemaError\n"
            "try:\n    s = ProtobufSchema.from_text(sys.argv[1])\nexcept ProtobufSchemaError as exc:\n"
            "    print('ERROR', exc)\nelse:\n    print('COMPILED', list(s.messages))\n")

    def run(where):
        env = H.bare_env(bare, {"PYTHONPATH": os.path.join(where, os.path.basename(wheel)),
                                "KAFKAREC_NATIVE_CACHE": str(tmp_path / "cache")})
        proc = subprocess.run([bare, "-c", code, world_formats.SHIP_OTHER], capture_output=True,
                              text=True, env=env, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        return proc.stdout.strip()

    err = run(str(alone))
    assert err.startswith("ERROR ") and "\n" not in err, err
    assert f"needs grpcio-tools and protobuf in {bare}" in err, err
    assert "grpcio-tools (needed by the Protobuf schema compiler): not installed and no grpcio-tools wheel" in err
    assert "pip install 'kafkarec[registry]'" in err and f"bash scripts/wheelhouse.sh DIR --python {bare}" in err
    assert run(folder) == "COMPILED ['kr.other.Shipment']"
    assert run(str(alone)) == "COMPILED ['kr.other.Shipment']"      # from the cache
