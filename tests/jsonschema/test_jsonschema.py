"""JsonSchemaDecoder against payloads written by confluent-kafka's JSONSerializer, compared with json.loads typed
by the same Arrow type (pyarrow.array of the parsed values)."""
from __future__ import annotations

import datetime as dt
import json
import pickle
import struct
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkarec.errors import SchemaResolutionError
from kafkarec.jsonschema import JsonSchema, JsonSchemaDecoder, JsonSchemaError, arrow_type

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "customer": {"type": ["null", "string"]},
        "price": {"type": "number"},
        "paid": {"type": "boolean"},
        "created": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "items": {"type": "array", "items": {"$ref": "#/definitions/Item"}},
        "note": {"oneOf": [{"type": "null"}, {"type": "string"}]},
        "status": {"enum": ["NEW", "DONE"]},
        "ratio": {"type": ["integer", "number"]},
    },
    "required": ["id"],
    "definitions": {"Item": {"type": "object", "properties": {"sku": {"type": "string"},
                                                             "qty": {"type": "integer"}}}},
}


def expected(value, typ):
    """json value -> what the typed column holds (timestamps parsed as RFC 3339)."""
    if value is None:
        return None
    if pa.types.is_struct(typ):
        return {f.name: expected(value.get(f.name), f.type) for f in typ}
    if pa.types.is_list(typ):
        return [expected(v, typ.value_type) for v in value]
    if pa.types.is_timestamp(typ):
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(dt.timezone.utc)
    if pa.types.is_floating(typ):
        return float(value)
    return value


def decode(decoder, payloads, ids, body=5):
    arr, err = decoder.decode(pa.array(payloads, pa.binary()), pa.array(ids, pa.int64()),
                              pa.array([body] * len(payloads), pa.int32()))
    assert len(arr) == len(err) == len(payloads)
    return arr, err.to_pylist()


def same(arr, values):
    got = arr.to_pylist()
    for g, v in zip(got, values):
        if g is not None and "created" in g and g["created"] is not None:
            g["created"] = g["created"].astimezone(dt.timezone.utc)
        assert g == v


def test_arrow_type():
    t = arrow_type(ORDER)
    assert t == pa.struct([("id", pa.int64()), ("customer", pa.string()), ("price", pa.float64()),
                           ("paid", pa.bool_()), ("created", pa.timestamp("us", tz="UTC")),
                           ("tags", pa.list_(pa.string())),
                           ("items", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int64())]))),
                           ("note", pa.string()), ("status", pa.string()), ("ratio", pa.float64())])
    assert arrow_type({"type": "string"}) == pa.string()      # a primitive schema gives a primitive column
    assert arrow_type({"type": "array", "items": {"type": "integer"}}) == pa.list_(pa.int64())
    for bad, why in [({"type": "object"}, "free-form"), ({"type": ["string", "integer"]}, "union"),
                     ({"$ref": "#"}, "recursive"), ({}, "any value"),
                     ({"type": "object", "properties": {"n": {"$ref": "#"}}}, "recursive"),
                     ({"type": "array", "items": [{"type": "string"}]}, "tuples")]:
        with pytest.raises(JsonSchemaError, match=why):
            arrow_type(bad)
    # references by name, as the registry's schema references give them
    s = JsonSchema.from_text('{"type": "object", "properties": {"i": {"$ref": "item.json"}}}',
                             {"item.json": json.dumps(ORDER["definitions"]["Item"])})
    assert arrow_type(s) == pa.struct([("i", pa.struct([("sku", pa.string()), ("qty", pa.int64())]))])


def confluent_payloads(records, schema=ORDER, subject_topic="orders"):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = SchemaRegistryClient.new_client({"url": "mock://kafkarec-json"})   # the in-memory registry
    ser = JSONSerializer(json.dumps(schema), client)
    ctx = SerializationContext(subject_topic, MessageField.VALUE)
    payloads = [ser(r, ctx) for r in records]
    return payloads, [struct.unpack(">i", p[1:5])[0] for p in payloads], client


RECORDS = [
    {"id": 1, "customer": "bøb", "price": 1.5, "paid": True, "created": "2024-05-06T07:08:09.123456Z",
     "tags": ["a", "b"], "items": [{"sku": "x", "qty": 2}, {"sku": "y"}], "note": None, "status": "NEW",
     "ratio": 3},
    {"id": -2**63, "created": "2024-05-06T07:08:09+02:00", "ratio": 0.25, "items": []},
    {"id": 2**63 - 1, "customer": None, "price": -0.0, "paid": False},
]


def test_confluent_serializer_payloads():
    payloads, ids, client = confluent_payloads(RECORDS)
    d = JsonSchemaDecoder(ORDER)
    for sid in set(ids):
        d.add_writer(sid, client.get_schema(sid).schema_str)
    arr, errors = decode(d, payloads, ids)
    assert errors == [None] * len(RECORDS)
    same(arr, [expected(r, d.arrow_type) for r in RECORDS])


def test_per_record_errors_keep_the_other_rows():
    payloads, ids, client = confluent_payloads(RECORDS)
    d = JsonSchemaDecoder(ORDER)
    d.add_writer(ids[0], client.get_schema(ids[0]).schema_str)
    prefix = payloads[0][:5]
    bad = [prefix + b"{bad", prefix + b'{"id": "7"}', prefix + b'{"id": 1.5}', prefix + b'{"customer": "\xff"}',
           prefix + b'{"id": 1}{"id": 2}', prefix + b"", prefix + b'{"id": 99999999999999999999}',
           prefix + b'{"tags": "x"}', prefix + b'{"created": "yesterday"}', prefix + b'1}\n{"v": 2']
    mixed = []
    for b in bad:
        mixed += [payloads[0], b]
    mixed += [None, payloads[1], payloads[2], payloads[2]]
    wids = [ids[0]] * len(mixed)
    wids[-3] = None                  # no writer id: null, no error (the registry layer reports why)
    wids[-1] = 424242
    arr, errors = decode(d, mixed, wids)
    rows = arr.to_pylist()
    for i in range(len(bad)):
        assert rows[2 * i] is not None and errors[2 * i] is None
        assert rows[2 * i + 1] is None and errors[2 * i + 1], (i, bad[i])
    assert "Column(/id) changed from number to string" in errors[3]
    assert "UTF-8" in errors[7]
    assert rows[-4:] == [None, None, rows[-2], None] and rows[-2] is not None
    assert errors[-4:-1] == [None, None, None] and "unknown writer schema id 424242" in errors[-1]


def test_tombstones_offsets_and_pickling():
    d = JsonSchemaDecoder({"type": "string"})
    d.add_writer(3, '{"type": "string"}')
    with pytest.raises(SchemaResolutionError):
        d.add_writer(4, 12)
    values = pa.array([b'\x00\x00\x00\x00\x03"x"', None, b'"y"', b'\x00\x00\x00\x00\x03"z"'], pa.large_binary())
    arr, err = d.decode(values, pa.array([3, 3, 3, 3]), pa.array([5, 5, 0, 50], pa.int32()))
    assert arr.to_pylist() == ["x", None, "y", None]
    assert err.to_pylist()[:3] == [None, None, None] and "at byte 50 of the value: the body starts past the end" in err[3].as_py()
    d2 = pickle.loads(pickle.dumps(d))
    assert d2.decode(values, pa.array([3, 3, 3, 3]), pa.array([5, 5, 0, 50], pa.int32()))[0].equals(arr)


def test_many_bad_records_in_bounded_time():
    d = JsonSchemaDecoder(ORDER)
    d.add_writer(1, ORDER)
    good = b'{"id": 1, "tags": ["a"]}'
    values = [good if i % 3 else b"{" * (i % 50) for i in range(20_000)]
    t = time.perf_counter()
    arr, errors = decode(d, values, [1] * len(values), body=0)
    assert time.perf_counter() - t < 20
    assert sum(e is not None for e in errors) == len([v for v in values if v != good])
    assert arr.null_count == len([v for v in values if v != good])


_items = st.lists(st.fixed_dictionaries({}, optional={"sku": st.text(max_size=4), "qty": st.integers(-2**63, 2**63 - 1)}),
                  max_size=3)
_record = st.fixed_dictionaries({"id": st.integers(-2**63, 2**63 - 1)}, optional={
    "customer": st.none() | st.text(max_size=6), "price": st.floats(allow_nan=False, allow_infinity=False),
    "paid": st.booleans(), "tags": st.lists(st.text(max_size=3), max_size=3), "items": _items,
    "note": st.none() | st.text(max_size=3), "status": st.sampled_from(["NEW", "DONE"]),
    "created": st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1),
                            timezones=st.just(dt.timezone.utc)).map(lambda t: t.isoformat())})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record, min_size=1, max_size=8))
def test_round_trips(records):
    payloads, ids, client = confluent_payloads(records)
    d = JsonSchemaDecoder(ORDER)
    d.add_writer(ids[0], ORDER)
    arr, errors = decode(d, payloads, ids)
    assert errors == [None] * len(records)
    same(arr, [expected(r, d.arrow_type) for r in records])


@pytest.mark.parametrize("body, at, why", [
    (b'1, "x": 2', 6, "text after the JSON value"),                   # fuzzing: decoded as 1
    (b'{"id": 1}, "x": {"id": 2}', 14, "text after the JSON value"),
    (b'{"id": 1, "customer": "a\nb"}', 29, "raw control character inside a string"),  # was a space
    (b'{"id": 1, "customer": "a\rb"}', 29, "raw control character inside a string"),
    (b'{"id": 1, "customer": "a\tb"}', 29, "raw control character inside a string"),
    (b'{"id": 1', 13, "not closed"),
    (b'{"id": 1, "customer": "ab', 30, "string is not closed"),
    (b'{"id": 1}}', 14, "text after the JSON value"),
    (b'}', 5, "closing bracket with nothing open"),
    (b'  \n ', 9, "no JSON value"),
    (b'{"customer": "x\\', 21, "string is not closed"),
])
def test_a_payload_is_exactly_one_json_value(body, at, why):
    payloads, ids, client = confluent_payloads(RECORDS)
    d = JsonSchemaDecoder(ORDER)
    d.add_writer(ids[0], client.get_schema(ids[0]).schema_str)
    prefix = payloads[0][:5]
    arr, errors = decode(d, [payloads[0], prefix + body, payloads[1]], [ids[0]] * 3)
    rows = arr.to_pylist()
    assert rows[1] is None and rows[0] is not None and rows[2] is not None
    assert errors[0] is None and errors[2] is None
    assert errors[1].startswith(f"at byte {at} of the value: invalid JSON: ") and why in errors[1], errors[1]


def test_newlines_between_tokens_are_whitespace():
    payloads, ids, client = confluent_payloads(RECORDS)
    d = JsonSchemaDecoder(ORDER)
    d.add_writer(ids[0], client.get_schema(ids[0]).schema_str)
    prefix = payloads[0][:5]
    arr, errors = decode(d, [prefix + b'\r\n{"id":\n 7,\r\n "customer": "a\\nb"}\n'], [ids[0]])
    assert errors == [None]
    assert arr.to_pylist()[0]["id"] == 7 and arr.to_pylist()[0]["customer"] == "a\nb"


@pytest.mark.parametrize("text", [
    '{"type":"object","properties":{"a":' * 900 + '{}' + '}}' * 900,
    "[" * 100000 + "]" * 100000,
])
def test_schema_text_nested_deeper_than_the_reader_is_a_schema_error(text):
    # fuzzing: RecursionError escaped JsonSchema.from_text (and decode_table through it)
    with pytest.raises(JsonSchemaError, match="nested deeper"):
        JsonSchema.from_text(text)
    with pytest.raises(JsonSchemaError, match="nested deeper"):
        JsonSchemaDecoder(text)
    with pytest.raises(JsonSchemaError, match="nested deeper"):
        JsonSchemaDecoder({"type": "integer"}, references={"r.json": text})
