"""Typed values in Spark, as a user runs them: ``spark-submit --py-files <kafkarec wheel>`` from a
bare Python (pyspark, pyarrow, pandas only; a job of the one user-way application,
tests/support/spark/user_app.py) over a log directory holding ``_schemas-0`` and an ``orders`` topic
written by confluent-kafka's AvroSerializer with an evolved schema.  The data source
(valueFormat=registry, every mode) and from_registry give the values kafkarec's own Python
surface gives (itself checked against the serializer's input in tests/registry)."""
from __future__ import annotations

import json
import os

import pytest

from support.spark import spark_helpers as H
from support.spark.user_app import UserAppJob

pytestmark = [pytest.mark.spark]

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

from support.registry import registry_world as world  # noqa: E402


def _corrupt_one_batch(root, corrupt_root):
    """A copy of the log directory where the second batch of orders-0 fails its CRC: its position,
    its bytes as the file holds them and its offsets."""
    import shutil
    import kafkarec
    shutil.copytree(root, corrupt_root)
    seg = os.path.join(corrupt_root, "orders-0", "00000000000000000000.log")
    data = bytearray(open(seg, "rb").read())
    batch = list(kafkarec.iter_batches(bytes(data)))[1]
    data[batch.position + batch.size_in_bytes - 1] ^= 0xFF     # the last record's last byte
    with open(seg, "wb") as f:
        f.write(data)
    return {"position": batch.position, "offsets": [r.offset for r in batch],
            "bytes": bytes(data[batch.position:batch.position + batch.size_in_bytes]).hex()}


def _prepare(request, work):
    root = str(work / "logs")
    facts = world.build(root)
    corrupt_root = str(work / "logs-corrupt")
    facts["victim"] = _corrupt_one_batch(root, corrupt_root)
    return [root, corrupt_root], (facts, root)


JOB = UserAppJob("typed", os.path.join(H.ROOT, "tests", "spark", "jobs", "typed_job.py"), _prepare,
                 driver_memory_gb=2)


@pytest.fixture(scope="module")
def submitted(user_app):
    result, (facts, root) = user_app.outcome(JOB)
    return result, facts, root


def _expected_values(root):
    import kafkarec
    import kafkarec.registry as kr
    data = open(os.path.join(root, "orders-0", "00000000000000000000.log"), "rb").read()
    t = kr.decode_table(kafkarec.to_arrow(data, topic="orders"), kr.load(root), key=True)
    return t.to_pylist()


def test_data_source_value_format_registry(submitted):
    result, facts, root = submitted
    want = _expected_values(root)
    rows = result["rows"]
    assert len(rows) == len(want) == len(facts["expected"])
    names = [f["name"] for f in result["schema"]["fields"]]
    # headers only with includeHeaders=true, as the Kafka source (header schema ids are read all the same)
    assert names[:8] == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                         "timestampMs"]
    assert {"keySchemaId", "valueSchemaId", "_corrupt_record"} <= set(names)
    value_type = next(f["type"] for f in result["schema"]["fields"] if f["name"] == "value")
    assert [f["name"] for f in value_type["fields"]] == ["id", "amount", "status", "ts", "qty", "note", "lines"]
    for got, exp in zip(rows, want):
        assert got["offset"] == exp["offset"] and got["topic"] == "orders" and got["partition"] == 0
        assert H.plain(got["value"]) == H.plain(exp["value"]), got["offset"]
        assert got["valueSchemaId"] == exp["value_schema_id"]
        assert got["key"] == exp["key"]
        if exp["_corrupt_record"] is None:
            assert got["_corrupt_record"] is None
        else:
            assert got["_corrupt_record"] == exp["_corrupt_record"]
    local = result["local_rows"]
    assert [(r["offset"], H.plain(r["value"]), r["valueSchemaId"], r["_corrupt_record"]) for r in local] == \
        [(r["offset"], H.plain(r["value"]), r["valueSchemaId"], r["_corrupt_record"]) for r in rows]


def test_keyed_state_with_typed_key_and_value(submitted):
    """view=latest composes with keyFormat/valueFormat: the state's rows are the records that
    are their key's last (keys compared as bytes, as Kafka's cleaner does), decoded as the log
    view decodes them."""
    import kafkarec
    result, facts, root = submitted
    want = {r["offset"]: r for r in _expected_values(root)}
    raw = kafkarec.to_arrow(open(os.path.join(root, "orders-0", "00000000000000000000.log"), "rb").read())
    last = {}
    for r in raw.select(["key", "value", "offset"]).to_pylist():
        if r["key"] is not None:
            last[r["key"]] = r if r["value"] is not None else None
    offsets = sorted(r["offset"] for r in last.values() if r is not None)
    assert len(offsets) == 5
    rows = result["latest_rows"]
    assert [r["offset"] for r in rows] == offsets
    for got in rows:
        exp = want[got["offset"]]
        assert got["key"] == exp["key"] and H.plain(got["value"]) == H.plain(exp["value"])
        assert got["valueSchemaId"] == exp["value_schema_id"]
    # Python composes the same way: the state's table is the log view's shape, so the
    # registry decodes it as it decodes any read
    import kafkarec.registry as kr
    from kafkarec import table
    state = kr.decode_table(table.latest(root, topics=["orders"]).table, kr.load(root), key=True).to_pylist()
    assert [(r["offset"], r["key"], H.plain(r["value"])) for r in state] == \
        [(r["offset"], r["key"], H.plain(r["value"])) for r in rows]


def test_modes(submitted):
    result, facts, root = submitted
    bad = sum(1 for _, _, err in facts["expected"] if err is not None)
    assert result["dropmalformed"] == len(facts["expected"]) - bad
    msg = result["failfast"]
    assert msg and "topic orders partition 0 offset 11" in msg and "Unknown magic byte" in msg, msg


def test_bad_records_path_keeps_what_dropmalformed_leaves_out(submitted):
    """badRecordsPath on bare executors: every record DROPMALFORMED left out is in the quarantine
    log once (the read ran twice), byte for byte, with the reason Python's decode_table gives."""
    import glob
    import kafkarec
    from kafkarec.log.quarantine import REASON_HEADER
    result, facts, root = submitted
    kept = {}
    for f in sorted(glob.glob(os.path.join(result["bad_path"], "orders-0", "*.log"))):
        for batch in kafkarec.iter_batches(open(f, "rb").read()):
            for rec in batch:
                assert rec.offset not in kept, f"offset {rec.offset} kept twice"
                kept[rec.offset] = rec
    import kafkarec.registry as kr
    data = open(os.path.join(root, "orders-0", "00000000000000000000.log"), "rb").read()
    values = kr.decode_table(kafkarec.to_arrow(data, topic="orders"), kr.load(root)).to_pylist()
    expected = {r["offset"]: r["_corrupt_record"] for r in values if r["_corrupt_record"]}
    assert sorted(kept) == sorted(expected) and len(kept) == len(facts["expected"]) - result["dropmalformed"]
    original = {r.offset: r for b in kafkarec.iter_batches(
        open(os.path.join(root, "orders-0", "00000000000000000000.log"), "rb").read()) for r in b}
    for o, rec in kept.items():
        src = original[o]
        assert (rec.key, rec.value, rec.timestamp) == (src.key, src.value, src.timestamp)
        assert dict(list(rec.headers)[len(src.headers):])[REASON_HEADER].decode() == expected[o]


def test_bad_records_path_keeps_undecodable_batches_whole(submitted):
    """A batch that fails its CRC has no records to recover: with badRecordsPath every Spark read
    (the local reader, selection options, a plain read, a stream, on bare executors) copies it byte
    for byte, named by its position, with the reason; typed failures of other batches are still
    kept as records; nothing is copied twice."""
    import glob
    import kafkarec
    result, facts, root = submitted
    victim = facts["victim"]
    offsets = set(victim["offsets"])
    typed_bad = sum(1 for off, (_, _, err) in enumerate(facts["expected"]) if err is not None and off not in offsets)
    total = len(facts["expected"])
    assert result["undecodable_local"] == result["undecodable_selection"] == total - len(offsets) - typed_bad
    assert result["undecodable_plain"] == 1                   # PERMISSIVE: one error row for the batch
    assert result["undecodable_stream"] == total - len(offsets)  # a stream has no mode: the rest flows on
    for name, q in result["undecodable_paths"].items():
        copies = sorted(glob.glob(os.path.join(q, "_undecodable", "orders-0", "*.batch")))
        assert [os.path.basename(c) for c in copies] == [f"{victim['position']:020d}.batch"], name
        assert open(copies[0], "rb").read().hex() == victim["bytes"], name
        meta = json.load(open(copies[0] + ".json"))
        assert meta["position"] == victim["position"] and "Record is corrupt" in meta["reason"], (name, meta)
        kept = [r.offset for f in sorted(glob.glob(os.path.join(q, "orders-0", "*.log")))
                for b in kafkarec.iter_batches(open(f, "rb").read()) for r in b]
        if name == "plain":
            assert kept == [], name         # no typed values: nothing fails record by record
        else:
            assert len(kept) == typed_bad and not offsets & set(kept), (name, kept)


def test_from_registry_on_a_binary_column(submitted):
    result, facts, root = submitted
    want = _expected_values(root)
    got = result["from_registry"]
    assert [H.plain(r["v"]) for r in got] == [H.plain(w["value"]) for w in want]
    assert "from_registry (mode FAILFAST)" in (result["from_registry_failfast"] or "")
