"""The typed stream reader's schema rules, micro-batch by micro-batch, without a cluster (the
planner's and an executor's calls made in this process): the reader version is fixed when the
stream starts; the registry is read again when ``_schemas`` grows and shipped with the tasks;
without that, records written with the new schema would be ``unknown writer schema id`` rows.
The user's way (bare Python, spark-submit, restart) is tests/spark/test_typed_stream.py."""
from __future__ import annotations

import os
import pickle

import pytest

from support.spark import spark_helpers as H

_why = H.spark_available()
if _why:
    pytest.skip(_why, allow_module_level=True)

from support.registry.typed_stream_log import V1_FIELDS, TypedStreamLog  # noqa: E402


def _apply(root, step):
    for rel, data in step["files"]:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "ab") as fh:
            fh.write(data)


def _rows(reader, parts):
    import pyarrow as pa
    batches = [rb for p in parts for rb in reader.read(pickle.loads(pickle.dumps(p)))]
    return pa.Table.from_batches(batches).to_pylist() if batches else []


def test_new_schema_mid_stream_is_read_with_the_start_version(tmp_path):
    from spark_udfs.read.datasource import KafkaRecDataSource
    root = str(tmp_path / "logs")
    log = TypedStreamLog()
    log.step(1, [log.v1(i) for i in range(3)])
    _apply(root, log.steps[-1])
    ds = KafkaRecDataSource({"path": root, "subscribe": "orders", "valueFormat": "registry",
                             "registry": root, "startingOffsets": "earliest"})
    schema = ds.schema()
    reader = ds.streamReader(schema)
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    first = reader.partitions(start, end)
    rows = _rows(reader, first)
    assert [r["offset"] for r in rows] == [0, 1, 2]
    assert all(r["_corrupt_record"] is None for r in rows)

    # v2 is registered (_schemas grows) and records written with it arrive
    log.step(1, [log.v2(i) for i in range(10, 13)])
    _apply(root, log.steps[-1])
    v2_id = log.client.get_version("orders-value", 2).schema_id
    end2 = reader.latestOffset(end, None)
    second = reader.partitions(end, end2)
    assert second[0].typed[0] != first[0].typed[0]          # a new registry snapshot
    rows = _rows(reader, second)
    assert [r["offset"] for r in rows] == [3, 4, 5]
    assert all(r["_corrupt_record"] is None and r["valueSchemaId"] == v2_id for r in rows), rows
    assert [list(r["value"]) for r in rows] == [V1_FIELDS] * 3   # still v1's columns
    assert [r["value"]["id"] for r in rows] == [10, 11, 12]

    # the control: the registry the stream started with does not know v2's id
    stale = pickle.loads(pickle.dumps(second[0]))
    stale.typed = ("stale-snapshot", first[0].typed[1])
    rows = _rows(reader, [stale])
    assert all(r["value"] is None and f"unknown writer schema id {v2_id}" in r["_corrupt_record"]
               for r in rows), rows

    # nothing new in _schemas: the snapshot (and the executors' decoders) stay
    log.step(1, [log.v2(20)])
    _apply(root, log.steps[-1])
    end3 = reader.latestOffset(end2, None)
    third = reader.partitions(end2, end3)
    assert third[0].typed[0] == second[0].typed[0]


def test_failfast_and_dropmalformed_on_a_stream(tmp_path):
    from spark_udfs.read.datasource import KafkaRecDataSource
    from kafkarec.errors import MalformedBatchError
    root = str(tmp_path / "logs")
    log = TypedStreamLog()
    log.step(1, [log.v1(0), (None, b"plain text", [], None, "Unknown magic byte", None), log.v1(2)])
    _apply(root, log.steps[-1])
    opts = {"path": root, "subscribe": "orders", "valueFormat": "registry", "registry": root,
            "startingOffsets": "earliest"}
    for mode, want in (("DROPMALFORMED", [0, 2]), ("FAILFAST", None)):
        ds = KafkaRecDataSource({**opts, "mode": mode})
        reader = ds.streamReader(ds.schema())
        start = reader.initialOffset()
        parts = reader.partitions(start, reader.latestOffset(start, None))
        if want is None:
            with pytest.raises(MalformedBatchError, match="topic orders partition 0 offset 1: "
                                                          "value: .*Unknown magic byte"):
                _rows(reader, parts)
        else:
            assert [r["offset"] for r in _rows(reader, parts)] == want


def test_spark_types_kafkarecs_one_typed_side():
    """Spark's typed side is kafkarec's (kafkarec.scan.typed.TypedSide) with Spark's types and
    option texts only: the same column, pins and pickling; values cast to Spark's Arrow type."""
    import json

    import pyarrow as pa

    from kafkarec.errors import UsageError
    from kafkarec.scan.typed import TypedSide as OneSide
    from spark_udfs.read.typed import TypedSide
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
    side = TypedSide("value", "JSON", None, reader_schema=schema, topic="t")
    assert isinstance(side, OneSide) and side.format == "json"
    assert side.spark_type.simpleString() == "struct<n:bigint>"
    typed, _ids, errs = pickle.loads(pickle.dumps(side)).decode(pa.array([b'{"n": 2}', b"x"], pa.binary()))
    assert typed.type == side.arrow_type and typed.to_pylist() == [{"n": 2}, None]
    assert errs[0].as_py() is None and errs[1].as_py()
    assert type(side.with_registry(None)) is TypedSide
    with pytest.raises(UsageError, match="option valueFormat=registry needs option registry"):
        TypedSide("value", "registry", None)


def test_the_typed_read_finds_its_topic_and_schemas_in_the_readers_listing(tmp_path):
    """Without subscribe or assign, a typed read decodes the one topic under its path other than
    ``_schemas``, and a registry log dir's state is its ``_schemas`` segments' names and sizes: both
    read off the reader's one listing (kafkarec.scan.listings), not a listing of their own."""
    from spark_udfs.read import typed as _typed
    from spark_udfs.read.spec import read_spec
    root = str(tmp_path / "logs")
    log = TypedStreamLog()
    log.step(1, [log.v1(i) for i in range(3)])
    _apply(root, log.steps[-1])
    assert _typed._topic_of(read_spec({"path": root})) == "orders"
    state = _typed.registry_state(root)
    schemas = os.path.join(root, "_schemas-0", "00000000000000000000.log")
    assert state == ("schemas", ((schemas, os.path.getsize(schemas)),))
    assert _typed.registry_state(str(tmp_path / "nothing")) is None        # no log there
