"""kafkarec's one typed side and batch decoder (kafkarec.scan.typed.TypedSide, decode_sides), which
Spark's typed reads and ``from_registry`` build on (spark_udfs.read.typed adds Spark's types only):
a batch of several topics decoded topic by topic, back in row order; each failed row keeps its
first failing side's reason and writer id, as decode_table merges them; a side pickles without its
compiled decoders and decodes the same after."""
from __future__ import annotations

import json
import pickle

import pytest

pa = pytest.importorskip("pyarrow")

from kafkarec.registry.typed import decode_table  # noqa: E402
from kafkarec.scan.typed import TypedSide, decode_sides

SCHEMA = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})


def _batch():
    values = [json.dumps({"n": 1}).encode(), b"not json", json.dumps({"n": 3}).encode(), None,
              json.dumps({"n": 5}).encode()]
    keys = [json.dumps("a").encode(), json.dumps("b").encode(), b"{", json.dumps("d").encode(), b"["]
    return {"topic": pa.array(["t", "u", "t", "u", "u"]), "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()), "headers": None}


def test_a_batch_of_several_topics_is_decoded_topic_by_topic_in_row_order():
    value = TypedSide("value", "json", None, reader_schema=SCHEMA)
    got = decode_sides([value], _batch())
    typed, ids, errs = got.sides["value"]
    assert typed.to_pylist() == [{"n": 1}, None, {"n": 3}, None, {"n": 5}]
    assert [e is not None for e in errs.to_pylist()] == [False, True, False, False, False]
    assert got.reasons.to_pylist()[1].startswith("value: ") and got.reasons.null_count == 4
    assert len(ids) == 5


def test_reasons_merge_as_decode_table_merges_them():
    """Key before value: a row failing both keeps the key's reason; every failed row is tagged."""
    batch = _batch()
    key = TypedSide("key", "json", None, reader_schema='{"type": "string"}')
    value = TypedSide("value", "json", None, reader_schema=SCHEMA)
    got = decode_sides([key, value], {**batch, "topic": pa.array(["t"] * 5)})
    table = pa.table({"topic": pa.array(["t"] * 5), "key": batch["key"], "value": batch["value"]})
    want = decode_table(table, None, key=True, key_format="json", value_format="json",
                        key_reader_schema='{"type": "string"}', value_reader_schema=SCHEMA)
    assert got.reasons.to_pylist() == want.column("_corrupt_record").to_pylist()
    assert [r.split(":")[0] if r else None for r in got.reasons.to_pylist()] == [
        None, "value", "key", None, "key"]


def test_a_side_pickles_without_its_decoders_and_decodes_the_same():
    value = TypedSide("value", "json", None, reader_schema=SCHEMA, topic="t")
    before = value.decode(_batch()["value"])
    again = pickle.loads(pickle.dumps(value))
    assert again._columns == {} and again.kw == value.kw
    assert [a.to_pylist() for a in again.decode(_batch()["value"])] == [a.to_pylist() for a in before]
    assert type(again.with_registry(None)) is TypedSide
