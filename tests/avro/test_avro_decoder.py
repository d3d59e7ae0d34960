"""AvroDecoder over Confluent-framed values (written by confluent-kafka's own
AvroSerializer), per-row errors, hostile bodies and hostile schemas."""
from __future__ import annotations

import json
import struct
import time

import pyarrow as pa
import pytest

from support.oracles.avro_helpers import fastavro_write
from kafkarec import avro
from kafkarec.errors import AvroSchemaError, KafkaRecError, SchemaResolutionError

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
]}
ORDER_V2 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"],
                                "default": "NEW"}},
    {"name": "note", "type": ["null", "string"], "default": None},
]}


_CLIENT = None


def _confluent(schema: dict, records: list):
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext
    global _CLIENT
    if _CLIENT is None:     # one registry, so that each schema gets its own id
        _CLIENT = MockSchemaRegistryClient({"url": "mock://avro-tests"})
    client = _CLIENT
    ser = AvroSerializer(client, json.dumps(schema))
    ctx = SerializationContext("orders", MessageField.VALUE)
    return [ser(r, ctx) for r in records]


def _frame(values):
    """Split Confluent framing (what the registry helper does): ids and body offsets."""
    ids = [None if v is None or len(v) < 5 or v[0] != 0 else struct.unpack(">i", v[1:5])[0] for v in values]
    return (pa.array(values, pa.binary()), pa.array(ids, pa.int64()), pa.array([5] * len(values), pa.int32()))


def test_confluent_serializer_payloads_two_writer_versions():
    import decimal
    v1 = _confluent(ORDER_V1, [{"id": 1, "amount": decimal.Decimal("1.50"), "status": "PAID"}])
    v2 = _confluent(ORDER_V2, [{"id": 2, "amount": decimal.Decimal("-3.25"), "status": "SHIPPED", "note": "x"}])
    id1 = struct.unpack(">i", v1[0][1:5])[0]
    id2 = struct.unpack(">i", v2[0][1:5])[0]
    dec = avro.AvroDecoder(avro.parse_schema(ORDER_V2))
    dec.add_writer(id1, avro.parse_schema(ORDER_V1))
    dec.add_writer(id2, avro.parse_schema(ORDER_V2))
    values = [v1[0], None, v2[0], b"\x00\x00\x00\x03\xe7\x02", v1[0][:6]]
    vals, errs = dec.decode(*_frame(values))
    assert vals.type == dec.arrow_type
    assert len(vals) == len(errs) == 5
    out = vals.to_pylist()
    assert out[0] == {"id": 1, "amount": decimal.Decimal("1.50"), "status": "PAID", "note": None}
    assert out[1] is None and errs[1].as_py() is None                    # tombstone: no error
    assert out[2] == {"id": 2, "amount": decimal.Decimal("-3.25"), "status": "SHIPPED", "note": "x"}
    assert out[3] is None and errs[3].as_py() == "at byte 5 of the value: unknown writer schema id 999"
    assert out[4] is None and errs[4].as_py().startswith("at byte 6 of the value: decimal length: long runs past")
    vals.validate(full=True)


def test_reader_older_than_writer_enum_default_and_skip():
    import decimal
    v2 = _confluent(ORDER_V2, [{"id": 7, "amount": decimal.Decimal("0.01"), "status": "SHIPPED", "note": None}])
    dec = avro.AvroDecoder(avro.parse_schema(
        dict(ORDER_V1, fields=ORDER_V1["fields"][:2] + [
            {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}}])))
    dec.add_writer(struct.unpack(">i", v2[0][1:5])[0], avro.parse_schema(ORDER_V2))
    vals, errs = dec.decode(*_frame(v2))
    # SHIPPED is not a reader symbol and the reader enum has no default: a per-record error
    assert vals.to_pylist() == [None]
    assert "enum shop.Status has no symbol for writer symbols 2=SHIPPED" in errs[0].as_py()


def test_null_writer_id_is_null_without_error_and_slices():
    body = fastavro_write("long", [5, -6, 7])
    values = pa.array([b"\x00\x00\x00\x00\x01" + b for b in body], pa.large_binary()).slice(1)
    ids = pa.array([1, None, 1], pa.int64()).slice(1)
    offs = pa.array([5, 5, 5], pa.int32()).slice(1)
    dec = avro.AvroDecoder(avro.parse_schema("long"))
    dec.add_writer(1, avro.parse_schema("long"))
    vals, errs = dec.decode(values, ids, offs)
    assert vals.type == pa.int64()          # a primitive schema gives a primitive column
    assert vals.to_pylist() == [None, 7]
    assert errs.to_pylist() == [None, None]


def test_confluent_raw_bytes_schema_and_string_key():
    dec = avro.AvroDecoder(avro.parse_schema("bytes"))
    dec.add_writer(3, avro.parse_schema("bytes"))
    raw = [b"\x00\x00\x00\x00\x03hello", b"\x00\x00\x00\x00\x03"]
    vals, errs = dec.decode(*_frame(raw))
    assert vals.to_pylist() == [b"hello", b""] and errs.null_count == 2
    s = avro.AvroDecoder(avro.parse_schema("string"))
    s.add_writer(3, avro.parse_schema("string"))
    vals, errs = s.decode(*_frame(_confluent("string", ["k1"])[:0] + [b"\x00\x00\x00\x00\x03\x04k1"]))
    assert vals.type == pa.string() and vals.to_pylist() == ["k1"]


def test_body_offset_past_the_end():
    dec = avro.AvroDecoder(avro.parse_schema("int"))
    dec.add_writer(0, avro.parse_schema("int"))
    vals, errs = dec.decode(pa.array([b"\x02"], pa.binary()), pa.array([0], pa.int64()),
                            pa.array([9], pa.int32()))
    assert vals.to_pylist() == [None]
    assert errs[0].as_py() == "at byte 9 of the value: the body starts past the end of a 1-byte value"


def test_trailing_bytes_are_ignored_as_confluent_does():
    vals, errs = avro.decode_values([b"\x02\xff\xff"], avro.parse_schema("int"))
    assert vals.to_pylist() == [1] and errs.to_pylist() == [None]


def test_failed_rows_leave_nested_columns_aligned():
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "array", "items": {"type": "record", "name": "I", "fields": [
            {"name": "s", "type": "string"}, {"name": "m", "type": {"type": "map", "values": "int"}}]}}},
        {"name": "u", "type": ["null", "string", "I"]},
        {"name": "last", "type": "string"}]}
    good = fastavro_write(schema, [{"a": [{"s": "x", "m": {"k": 1}}], "u": "v", "last": "z"}])[0]
    cut = [good[:n] for n in range(len(good))]
    vals, errs = avro.decode_values([good] + cut + [good], avro.parse_schema(schema))
    vals.validate(full=True)
    got = vals.to_pylist()
    assert got[0] == got[-1] == {"a": [{"s": "x", "m": [("k", 1)]}], "u": {"member0": "v", "member1": None},
                                 "last": "z"}
    assert all(v is None for v in got[1:-1])
    assert all(e is not None for e in errs.to_pylist()[1:-1])


# ----------------------------------------------------------------------------- hostile bodies

@pytest.mark.parametrize("body, reason", [
    (b"\x01", "negative length -1"),
    (b"\xfe\xff\xff\xff\x0f", "needs 2147483647 bytes but only 0 remain"),
    (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", "invalid long encoding"),
    (b"\x06ab", "needs 3 bytes but only 2 remain"),
])
def test_string_lengths(body, reason):
    vals, errs = avro.decode_values([body], avro.parse_schema("string"))
    assert vals.to_pylist() == [None] and reason in errs[0].as_py()


def test_huge_block_counts_are_bounded_by_remaining_bytes():
    arr = avro.parse_schema({"type": "array", "items": "long"})
    huge = b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"      # 2^63 - 1 items
    t = time.perf_counter()
    vals, errs = avro.decode_values([huge, b"\x03\x04\x02\x04\x00"], arr)
    assert time.perf_counter() - t < 1
    assert "block of 9223372036854775807 items but only 0 bytes remain" in errs[0].as_py()
    # a negative count (-2) carries the block's byte size (2), then items 1 and 2, then 0
    assert errs[1].as_py() is None and vals[1].as_py() == [1, 2]


def test_zero_size_items_are_capped():
    nulls = avro.parse_schema({"type": "array", "items": "null"})
    t = time.perf_counter()
    vals, errs = avro.decode_values([b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\x06\x00"], nulls)
    assert time.perf_counter() - t < 1
    assert "items that take no bytes in one value" in errs[0].as_py()
    assert vals[1].as_py() == [None, None, None]


def test_negative_block_count_with_bad_size():
    arr = avro.parse_schema({"type": "array", "items": "int"})
    vals, errs = avro.decode_values([b"\x01\x7f\x02"], arr)
    assert "block of -64 bytes" in errs[0].as_py()


def test_union_and_enum_index_out_of_range():
    vals, errs = avro.decode_values([b"\x04", b"\x01"], avro.parse_schema(["null", "int"]))
    assert "union branch index 2 is out of range (2 branches)" in errs[0].as_py()
    assert "union branch index -1" in errs[1].as_py()
    e = avro.parse_schema({"type": "enum", "name": "E", "symbols": ["A"]})
    vals, errs = avro.decode_values([b"\x02", b"\x00"], e)
    assert "enum index 1 is out of range (1 symbols)" in errs[0].as_py() and vals[1].as_py() == "A"


def test_decimal_that_does_not_fit():
    d = avro.parse_schema({"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0})
    ok = (-(10 ** 37)).to_bytes(20, "big", signed=True)      # sign-extended past 16 bytes: fits
    bad = (2 ** 130).to_bytes(20, "big", signed=True)
    vals, errs = avro.decode_values([bytes([40]) + ok, bytes([40]) + bad], d)
    assert int(vals[0].as_py()) == -(10 ** 37)
    assert "does not fit in 128 bits" in errs[1].as_py()


def test_invalid_utf8_string_is_a_row_error():
    vals, errs = avro.decode_values([b"\x04\xc3\x28"], avro.parse_schema("string"))
    assert vals.to_pylist() == [None] and "not valid UTF-8" in errs[0].as_py()


# ----------------------------------------------------------------------------- hostile schemas

def test_recursive_schema_parses_and_is_refused_without_a_depth():
    """As Spark's from_avro: a recursive schema is read only with recursiveFieldMaxDepth
    (tests/avro/test_from_avro_options.py reads it with one)."""
    linked = {"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}
    schema = avro.parse_schema(linked)
    assert schema.recursive
    with pytest.raises(AvroSchemaError, match="recursive type 'Node'.*recursiveFieldMaxDepth"):
        avro.AvroDecoder(schema)


def test_deep_nesting_is_refused():
    deep = "int"
    for _ in range(avro.MAX_DEPTH + 5):
        deep = {"type": "array", "items": deep}
    with pytest.raises(AvroSchemaError, match="deeper than"):
        avro.parse_schema(deep)
    text = '{"type":"array","items":' * 100000 + '"int"' + "}" * 100000
    with pytest.raises(AvroSchemaError):
        avro.parse_schema(text)


def test_too_many_nodes_is_refused():
    wide = {"type": "record", "name": "W", "fields": [{"name": f"f{i}", "type": "int"}
                                                      for i in range(avro.MAX_SCHEMA_NODES + 1)]}
    with pytest.raises(AvroSchemaError, match="more than"):
        avro.parse_schema(wide)


@pytest.mark.parametrize("schema, match", [
    ({"type": "record", "name": "1bad", "fields": []}, "invalid name"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "int"}]},
     "duplicate field"),
    ({"type": "enum", "name": "E", "symbols": ["A", "A"]}, "duplicate enum symbol"),
    ({"type": "enum", "name": "E", "symbols": ["A"], "default": "B"}, "enum default"),
    ({"type": "fixed", "name": "F", "size": -1}, "invalid fixed size"),
    (["int", "int"], "twice"),
    (["null", ["int"]], "directly contain a union"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "x"}]}, "invalid default"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]}, "undefined type name"),
    ("nonsense{", "not JSON"),
    ({"type": "record", "name": "int", "fields": []}, "redefine primitive"),
])
def test_invalid_schemas(schema, match):
    with pytest.raises(AvroSchemaError, match=match):
        avro.parse_schema(schema if isinstance(schema, str) else json.dumps(schema))


def test_errors_are_typed():
    assert issubclass(AvroSchemaError, (KafkaRecError, ValueError))
    assert issubclass(SchemaResolutionError, (KafkaRecError, ValueError))


# ----------------------------------------------------------------------------- schemas and types

def test_named_types_from_other_subjects_and_namespaces():
    money = avro.parse_schema({"type": "fixed", "name": "Money", "namespace": "com.acme", "size": 8,
                               "logicalType": "decimal", "precision": 18, "scale": 2})
    status = avro.parse_schema({"type": "enum", "name": "Status", "namespace": "com.acme", "symbols": ["A", "B"]})
    order = avro.parse_schema(
        {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
            {"name": "m", "type": "Money"}, {"name": "s", "type": "com.acme.Status"}]},
        named_types={"com.acme.Money": money, "com.acme.Status": status})
    assert order.root.fields[0].type.logical["precision"] == 18
    assert str(avro.arrow_type_of(order)) == "struct<m: decimal128(18, 2) not null, s: string not null>"
    with pytest.raises(AvroSchemaError, match="undefined type name 'Money'"):
        avro.parse_schema({"type": "record", "name": "O", "fields": [{"name": "m", "type": "Money"}]})


def test_spark_type_mapping():
    s = avro.parse_schema({"type": "record", "name": "T", "fields": [
        {"name": "il", "type": ["int", "long", "null"]},
        {"name": "fd", "type": ["float", "double"]},
        {"name": "u", "type": ["int", "string"]},
        {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "tn", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
        {"name": "lt", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 3}},
        {"name": "bad", "type": {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3}},
        {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}},
    ]})
    t = avro.arrow_type_of(s)
    assert t.field("il").type == pa.int64() and t.field("il").nullable
    assert t.field("fd").type == pa.float64() and not t.field("fd").nullable
    assert t.field("u").type == pa.struct([pa.field("member0", pa.int32()), pa.field("member1", pa.string())])
    assert t.field("d").type == pa.date32()
    assert t.field("ts").type == pa.timestamp("us", "UTC")
    assert t.field("tn").type == pa.timestamp("ns", "UTC")
    assert t.field("lt").type == pa.timestamp("ms")
    assert t.field("big").type == pa.decimal256(50, 3)
    assert t.field("bad").type == pa.binary()             # an invalid logical type is ignored, as Java does
    assert t.field("m").type == pa.map_(pa.string(), pa.int64())
    assert t.field("f").type == pa.binary()


def test_zero_size_items_budget_is_per_value():
    # Java bounds each collection on its own: one corrupt row must not fail the rows after it
    nulls = avro.parse_schema({"type": "array", "items": "null"})
    dec = avro.AvroDecoder(nulls, max_items=10)
    dec.add_writer(0, nulls)
    body = b"\x06\x00"                                           # 3 nulls
    over = b"\x16\x00"                                           # 11 nulls: past the budget
    rows = [body, body, over, body, body, body, body]
    vals, errs = dec.decode(pa.array(rows, pa.binary()), pa.array([0] * 7, pa.int64()),
                            pa.array([0] * 7, pa.int32()))
    assert vals.to_pylist() == [[None] * 3] * 2 + [None] + [[None] * 3] * 4
    assert errs.to_pylist()[:2] == [None, None] and errs.to_pylist()[3:] == [None] * 4
    assert "more than 10 items that take no bytes" in errs[2].as_py()


def test_zero_size_block_count_near_int64_max_is_refused_at_once():
    # fuzzing: a second block claiming 2**63-1 items overflowed the budget's sum and looped
    nulls = avro.parse_schema({"type": "array", "items": "null"})
    dec = avro.AvroDecoder(nulls)
    dec.add_writer(0, nulls)
    zigzag_max = b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"   # 2**63-1
    body = b"\x02" + zigzag_max + b"\x00"                       # 1 item, then 2**63-1 items
    started = time.monotonic()
    vals, errs = dec.decode(pa.array([body, b"\x02\x00"], pa.binary()), pa.array([0, 0], pa.int64()),
                            pa.array([0, 0], pa.int32()))
    assert time.monotonic() - started < 5
    assert vals.to_pylist() == [None, [None]]
    assert "items that take no bytes" in errs[0].as_py() and errs[1].as_py() is None


def test_schemas_and_decoders_pickle_self_contained():
    import pickle
    money = avro.parse_schema({"type": "fixed", "name": "Money", "namespace": "com.acme", "size": 8,
                               "logicalType": "decimal", "precision": 18, "scale": 2, "aliases": ["Cash"]})
    order = avro.parse_schema(
        {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
            {"name": "m", "type": "Money", "aliases": ["amount"]},
            {"name": "inner", "type": {"type": "record", "name": "Inner", "namespace": "", "fields": [
                {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"], "default": "A"}}]}},
            {"name": "again", "type": ["null", "com.acme.Money", "Inner"], "default": None}]},
        named_types=[money])
    again = pickle.loads(pickle.dumps(order))
    assert again.to_json() == order.to_json()
    assert avro.arrow_type_of(again) == avro.arrow_type_of(order)
    dec = avro.AvroDecoder(order)
    dec.add_writer(4, order)
    body = (250).to_bytes(8, "big") + b"\x02" + b"\x02" + (7).to_bytes(8, "big")
    args = (pa.array([b"\x00\x00\x00\x00\x04" + body], pa.binary()), pa.array([4], pa.int64()),
            pa.array([5], pa.int32()))
    d2 = pickle.loads(pickle.dumps(dec))
    assert d2.arrow_type == dec.arrow_type
    assert d2.decode(*args)[0].to_pylist() == dec.decode(*args)[0].to_pylist()
    import decimal
    assert dec.decode(*args)[0].to_pylist()[0]["m"] == decimal.Decimal("2.50")


def test_named_type_reuse_cannot_blow_up():
    # each record uses the previous one twice: 2^40 columns once expanded
    types = [{"type": "record", "name": "R0", "fields": [{"name": "v", "type": "int"}]}]
    for i in range(1, 41):
        types.append({"type": "record", "name": f"R{i}", "fields": [
            {"name": "a", "type": types[-1] if i == 1 else f"R{i - 1}"},
            {"name": "b", "type": f"R{i - 1}"}]})
    # nest the definitions: R40 defines R39 inline in its first field, and so on
    schema = types[1]
    for i in range(2, 41):
        schema = {"type": "record", "name": f"R{i}", "fields": [{"name": "a", "type": schema},
                                                               {"name": "b", "type": f"R{i - 1}"}]}
    t = time.perf_counter()
    with pytest.raises(AvroSchemaError, match="once its named types are expanded"):
        avro.parse_schema(schema)
    assert time.perf_counter() - t < 1


def test_string_default_with_a_lone_surrogate_is_refused():
    text = '{"type":"record","name":"R","fields":[{"name":"a","type":"string","default":"\\ud800"}]}'
    with pytest.raises(AvroSchemaError, match="lone surrogates"):
        avro.parse_schema(text)


def test_decimal_past_its_precision_is_a_row_error():
    """An unscaled value with more digits than the schema's precision cannot be an Arrow decimal:
    that row is an error (Spark's from_avro fails it too), its neighbours decode."""
    import pyarrow as pa
    from kafkarec import avro
    schema = avro.parse_schema({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 2})
    # Avro bytes: zig-zag length, then the big-endian two's complement unscaled value
    values = pa.array([b"\x02\x63", b"\x04\x01\x02", b"\x02\x9d"], pa.binary())   # 99, 258, -99
    out, errors = avro.decode_values(values, schema)
    assert [None if v is None else str(v) for v in out.to_pylist()] == ["0.99", None, "-0.99"]
    assert errors.to_pylist()[0] is None and errors.to_pylist()[2] is None
    assert "more than 2 digits" in errors.to_pylist()[1]
    out.validate(full=True)
