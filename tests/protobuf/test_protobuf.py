"""ProtobufDecoder against bytes written by confluent-kafka's ProtobufSerializer and the protobuf package,
compared with the protobuf package's own parse (oracle.row: Spark from_protobuf's mapping)."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import struct
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkarec.errors import SchemaResolutionError
from kafkarec.protobuf import ProtobufDecoder, ProtobufSchema, ProtobufSchemaError

from support.oracles.protobuf_oracle import normalize, row
from support.oracles.protos import COMMON, ORDERS, ORDERS_V2, PROTO2, generated


@pytest.fixture(scope="module")
def pb():
    return generated().modules["kr/orders.proto"]


@pytest.fixture(scope="module")
def schema():
    return ProtobufSchema.from_text(ORDERS, {"kr/common.proto": COMMON}, name="kr/orders.proto")


def decode(decoder, payloads, ids=None, body=0):
    n = len(payloads)
    ids = [1] * n if ids is None else ids
    arr, err = decoder.decode(pa.array(payloads, pa.binary()), pa.array(ids, pa.int64()),
                              pa.array([body] * n, pa.int32()))
    assert len(arr) == len(err) == n
    return arr.to_pylist(), err.to_pylist()


def full_order(pb):
    m = pb.Order(id=5, customer="bøb", quantities=[1, 2, 300, -1], unpacked=[4, 5], counts={"a": 1, "b": -2},
                 status=pb.Order.DONE, main_item=pb.Order.Item(sku="x", qty=3),
                 items=[pb.Order.Item(sku="y"), pb.Order.Item()], card="visa", maybe=0, blob=b"\x00\x01",
                 price=1.5, ratio=-0.0, flag=True, delta=-7, u32=2**32 - 1, u64=2**64 - 1, f32=7, sf64=-9,
                 tags=["p", "q"], statuses=[1, 2, 0], big_delta=-2**63)
    m.created.FromMicroseconds(1_700_000_000_123_456)
    m.total.units = 10
    m.by_id[3].sku = "z"
    m.by_id[-4].qty = 1
    m.took.FromMicroseconds(-1500)
    return m


def test_arrow_type_is_sparks_mapping(schema):
    t = ProtobufDecoder(schema).arrow_type
    assert t.field("id").type == pa.int64() and t.field("u32").type == pa.int32()
    assert t.field("u64").type == pa.int64() and t.field("status").type == pa.string()
    assert t.field("created").type == pa.timestamp("us", tz="UTC")
    assert t.field("took").type == pa.duration("us")
    assert t.field("counts").type == pa.map_(pa.string(), pa.int64())
    assert t.field("items").type == pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int32())]))
    assert t.field("blob").type == pa.binary() and t.field("ratio").type == pa.float32()
    # the column's message by name, nested messages too
    assert ProtobufDecoder(schema, "kr.test.Other").arrow_type.names == ["name", "item"]
    assert ProtobufDecoder(schema, ".kr.test.Order.Item").arrow_type.names == ["sku", "qty"]
    with pytest.raises(ProtobufSchemaError):
        ProtobufDecoder(schema, "kr.test.Nope")


def test_confluent_serializer_payloads(pb, schema):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = SchemaRegistryClient.new_client({"url": "mock://kafkarec-protobuf"})   # the in-memory registry
    ser = ProtobufSerializer(pb.Order, client, {"use.deprecated.format": False})
    ctx = SerializationContext("orders", MessageField.VALUE)
    msgs = [full_order(pb), pb.Order(), pb.Order(id=-1, account=77, status=pb.Order.NEW),
            pb.Order(customer="c", main_item=pb.Order.Item())]
    payloads = [ser(m, ctx) for m in msgs]
    other = ProtobufSerializer(pb.Other, client, {"use.deprecated.format": False})
    o = pb.Other(name="n", item=pb.Order.Item(sku="s", qty=-5))
    payloads.append(other(o, SerializationContext("others", MessageField.VALUE)))
    assert all(p[0] == 0 for p in payloads)
    ids = [struct.unpack(">i", p[1:5])[0] for p in payloads]
    # the writer schemas as the registry gives them (with their references)
    decoder = ProtobufDecoder(schema)
    for sid in set(ids):
        registered = client.get_schema(sid)
        refs = {r.name: client.get_version(r.subject, r.version).schema.schema_str
                for r in registered.references or []}
        decoder.add_writer(sid, ProtobufSchema.from_text(registered.schema_str, refs))
    rows, errors = decode(decoder, payloads, ids, body=5)
    assert errors == [None] * len(payloads)
    for m, got in zip(msgs, rows):
        assert normalize(got, pb.Order.DESCRIPTOR) == row(m)
    # pb.Other (message index [1]) mapped to Order by field name: nothing in common but nothing wrong
    assert rows[-1]["id"] is None and rows[-1]["items"] == []
    oth = ProtobufDecoder(schema, "kr.test.Other")
    for sid in set(ids):
        oth.add_writer(sid, decoder._writer_schemas[sid])
    rows, errors = decode(oth, payloads[-1:], ids[-1:], body=5)
    assert errors == [None] and rows == [row(o)]


def test_message_indexes(pb, schema):
    d = ProtobufDecoder(schema, "kr.test.Order.Item")
    d.add_writer(1, schema)
    item = pb.Order.Item(sku="s", qty=2).SerializeToString()
    # [0, 0] names Order.Item (first nested message of Order); [0] names Order, whose fields differ
    other = pb.Other(name="n").SerializeToString()
    rows, errors = decode(d, [b"\x04\x00\x00" + item, b"\x02\x02" + other, b"\x02\x00" + item,
                              b"\x02\x08", b"\x03", b"\x04\x00\x06"])
    assert rows[0] == {"sku": "s", "qty": 2} and errors[0] is None
    assert rows[1] == {"sku": None, "qty": None} and errors[1] is None   # [1]: Other, no field in common
    assert errors[2] is None          # Apicurio's `02 00` == [0]: Order, its fields 1, 2 are id / customer
    assert "message index 4" in errors[3]
    assert "message index count" in errors[4]
    assert "message index 3 names no message" in errors[5]


def test_tombstones_missing_ids_and_unknown_writers(pb, schema):
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    body = b"\x00" + pb.Order(id=3).SerializeToString()
    arr, err = d.decode(pa.array([None, body, body, body], pa.large_binary()),
                        pa.array([1, None, 9, 1], pa.int64()), pa.array([0, 0, 0, 99], pa.int32()))
    assert arr.to_pylist()[:3] == [None, None, None] and arr.to_pylist()[3] is None
    assert err.to_pylist()[:2] == [None, None]
    assert "unknown writer schema id 9" in err[2].as_py()
    assert "the body starts past the end" in err[3].as_py()


def test_wire_rules(pb, schema):
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    one = pb.Order(id=1, customer="a", card="c", main_item=pb.Order.Item(sku="s")).SerializeToString()
    two = pb.Order(id=2, account=5, main_item=pb.Order.Item(qty=4)).SerializeToString()
    unknown = b"\xa8\x1f\x01" + b"\xb2\x1f\x02hi" + b"\xbd\x1f\x00\x00\x00\x00" + b"\xb9\x1f" + bytes(8) \
        + b"\xbb\x1f\x08\x01\xbc\x1f"            # fields 501.. of every wire type, a group among them
    unpacked = b"\x18\x01\x18\x02" + b"\x1a\x02\x03\x04" + b"\x20\x07"   # quantities unpacked, then packed
    packed_unpacked = b"\x22\x02\x08\x09"        # field 4 declared [packed=false], sent packed
    wrong_wire = b"\x0d\x01\x00\x00\x00"         # id (varint) sent as fixed32: an unknown field, as protobuf reads it
    rows, errors = decode(d, [b"\x00" + one + two, b"\x00" + unknown + one, b"\x00" + unpacked,
                              b"\x00" + packed_unpacked, b"\x00" + wrong_wire])
    assert errors == [None] * 5
    merged = pb.Order()
    merged.MergeFromString(one + two)
    assert normalize(rows[0], pb.Order.DESCRIPTOR) == row(merged)
    assert rows[0]["id"] == 2 and rows[0]["card"] is None and rows[0]["account"] == 5   # last one wins, oneof
    assert rows[0]["main_item"] == {"sku": "s", "qty": 4}                               # messages merge
    assert rows[1]["id"] == 1 and rows[1]["customer"] == "a"
    assert rows[2]["quantities"] == [1, 2, 3, 4] and rows[2]["unpacked"] == [7]
    assert rows[3]["unpacked"] == [8, 9]
    assert rows[4]["id"] is None


def test_proto2_presence_closed_enums_and_groups():
    gen = generated().modules["kr/legacy.proto"]
    schema = ProtobufSchema.from_text(PROTO2, name="kr/legacy.proto")
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    assert d.arrow_type.field("grp").type == pa.struct([("x", pa.int32())])   # groups are messages
    m = gen.Legacy(a=0, b="", color=gen.Legacy.RED, colors=[2, 1], r=0)
    m.grp.x = 9
    bad_enum = b"\x18\x07" + b"\x20\x07\x20\x02" + b"\x38\x00"  # color 7 (unknown: kept aside), colors [7, 2]
    no_r = b"\x08\x01"                                           # required r missing: Java's parseFrom fails
    rows, errors = decode(d, [b"\x00" + m.SerializeToString(), b"\x00" + bad_enum, b"\x00" + no_r])
    assert errors[:2] == [None, None] and rows[2] is None
    assert "required field 7 is missing" in errors[2]
    defaults = {"d": -5, "s": "hi", "dc": "GREEN", "by": b"\x01x", "big": -1, "dd": float("inf"), "bb": True}
    assert rows[0] == {"a": 0, "b": "", "color": "RED", "colors": ["GREEN", "RED"], "grp": {"x": 9}, "r": 0,
                       **defaults}
    assert rows[0] == row(m)
    parsed = gen.Legacy()
    parsed.ParseFromString(bad_enum)
    m2 = gen.Legacy(d=1, s="", dc=gen.Legacy.RED, by=b"", big=0, dd=0.0, bb=False, r=3)
    rows2, errors2 = decode(d, [b"\x00" + m2.SerializeToString()])
    assert errors2 == [None] and rows2[0] == row(m2)
    assert rows[1]["color"] is None and rows[1]["colors"] == ["GREEN"] == [
        gen.Legacy.Color.Name(c) for c in parsed.colors]


def test_evolution_by_field_name(pb, schema):
    v2 = ProtobufSchema.from_text(ORDERS_V2, name="kr/orders_v2.proto")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    pool = descriptor_pool.DescriptorPool()
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(v2.descriptor_set)
    for f in fds.file:
        pool.Add(f)
    Order2 = message_factory.GetMessageClass(pool.FindMessageTypeByName("kr.test.Order"))
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    d.add_writer(2, v2)
    w2 = Order2(id=7, quantities=[1], status=3, extra="new", items=[{"sku": "a", "note": "skipped"}])
    w2_price = Order2(id=8, price=3)
    w1 = full_order(pb)
    rows, errors = decode(d, [b"\x00" + w2.SerializeToString(), b"\x00" + w2_price.SerializeToString(),
                              b"\x00" + w1.SerializeToString()], ids=[2, 2, 1])
    assert errors[0] is None and errors[2] is None
    assert rows[0]["id"] == 7 and rows[0]["quantities"] == [1] and rows[0]["customer"] is None
    assert rows[0]["status"] == "CANCELLED"          # the writer's own enum names the number
    assert rows[0]["items"] == [{"sku": "a", "qty": None}]
    assert rows[1] is None and "'price'" in errors[1] and "int32 does not fit" in errors[1]
    assert normalize(rows[2], pb.Order.DESCRIPTOR) == row(w1)


def test_an_error_in_a_message_set_twice_names_the_values_byte(schema):
    """A singular message field set twice is parsed as its occurrences merged; a byte that fails there is
    reported where it is in the value (it once was where the merged copy sat in memory)."""
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    first = b"\x42\x02\x10\x01"                                  # main_item {qty: 1}
    rows, errors = decode(d, [b"\x00" + first + b"\x42\x03\x10\xff\xff",     # qty's varint cut short
                              b"\x00" + first + b"\x0a\x01x" + b"\x42\x03\x10\x05\x0a",   # sku without length
                              b"\x00" + first + b"\x42\x02\x10\x07"])
    assert errors[0] == "at byte 8 of the value: field 2: varlong runs past the end of the value"
    assert errors[1] == "at byte 13 of the value: field 1 length: varlong runs past the end of the value"
    assert errors[2] is None and rows[2]["main_item"] == {"sku": None, "qty": 7}


def test_a_message_set_twice_frames_each_occurrence_alone(schema):
    """protobuf parses each occurrence of a message field on its own and merges the results: a field that
    starts in one occurrence and ends in the next does not parse (read glued together, the two occurrences
    once gave sku "abc"; the protobuf package refuses the bytes too)."""
    from google.protobuf.message import DecodeError
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    glued = b"\x42\x02\x0a\x03" + b"\x42\x03abc"             # main_item {sku: <3 bytes...}, main_item {"abc"}
    rows, errors = decode(d, [b"\x00" + glued, b"\x00\x42\x02\x0a\x00\x42\x05\x0a\x03abc"])
    assert rows[0] is None and errors[0] == \
        "at byte 5 of the value: field 1 declares 3 bytes but only 0 remain", errors
    assert errors[1] is None and rows[1]["main_item"]["sku"] == "abc"     # each occurrence whole: merged
    pb = generated().modules["kr/orders.proto"]
    with pytest.raises(DecodeError):
        pb.Order.FromString(glued)


def test_an_enum_that_does_not_fit_its_column_takes_no_default():
    """emit_default_values with a writer whose enum field sits where the column holds a double: the writer is
    added, a row that sets the field fails on the mismatch, one that leaves it unset reads null (the enum's zero
    name was once the double column's default: add_writer raised TypeError, and before that, decode did)."""
    reader = ProtobufSchema.from_text('syntax = "proto3"; package t; message M { double x = 1; int32 y = 2; }')
    writer = ProtobufSchema.from_text('syntax = "proto3"; package t; enum E { A = 0; B = 1; } '
                                      'message M { E x = 1; int32 y = 2; }')
    d = ProtobufDecoder(reader, emit_default_values=True)
    d.add_writer(1, writer)
    rows, errors = decode(d, [b"\x00\x10\x05", b"\x00\x08\x01"])
    assert rows[0] == {"x": None, "y": 5} and errors[0] is None
    assert rows[1] is None and "does not fit the column's type" in errors[1]


def test_recursive_messages_refused():
    text = 'syntax = "proto3"; message Node { int32 v = 1; Node next = 2; }'
    with pytest.raises(ProtobufSchemaError, match="recursive"):
        ProtobufDecoder(ProtobufSchema.from_text(text))
    # google.protobuf.Struct is recursive too (Struct -> Value -> ListValue -> Value)
    text = 'syntax = "proto3"; import "google/protobuf/struct.proto"; message M { google.protobuf.Struct s = 1; }'
    with pytest.raises(ProtobufSchemaError, match="recursive"):
        ProtobufDecoder(ProtobufSchema.from_text(text))


def test_schema_errors(schema):
    with pytest.raises(ProtobufSchemaError, match="protoc"):
        ProtobufSchema.from_text("syntax = 'proto3'; message { }")
    with pytest.raises(ProtobufSchemaError):
        ProtobufSchema.from_text('syntax = "proto3"; import "missing.proto"; message A {}')
    with pytest.raises(ProtobufSchemaError):
        ProtobufSchema.from_descriptor_set(b"\xff\xff")
    d = ProtobufDecoder(schema)
    with pytest.raises(SchemaResolutionError):
        d.add_writer(1, object())
    # from a descriptor set directly
    again = ProtobufSchema.from_descriptor_set(schema.descriptor_set, "kr/orders.proto")
    assert again.top_level == schema.top_level


def test_pickles_for_executors(pb, schema):
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    blob = pickle.dumps(d)
    m = full_order(pb)
    d2 = pickle.loads(blob)
    assert decode(d2, [b"\x00" + m.SerializeToString()]) == decode(d, [b"\x00" + m.SerializeToString()])
    # an executor without the protobuf package or grpcio-tools unpickles and decodes
    payload = b"\x00" + m.SerializeToString()
    script = (
        "import sys, pickle, pyarrow as pa\n"
        "for name in ('google', 'google.protobuf', 'grpc_tools'): sys.modules[name] = None\n"
        "d = pickle.loads(sys.stdin.buffer.read())\n"
        f"arr, err = d.decode(pa.array([{payload!r}]), pa.array([1]), pa.array([0], pa.int32()))\n"
        "assert err.null_count == 1, err\n"
        "print(arr[0]['id'].as_py())\n")
    out = subprocess.run([sys.executable, "-c", script], input=blob, capture_output=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == b"5"


def test_hostile_payloads_are_bounded_per_record_errors(pb, schema):
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    good = b"\x00" + full_order(pb).SerializeToString()
    cuts = [good[:i] for i in range(1, len(good))]
    rows, errors = decode(d, cuts)
    for cut, r, e in zip(cuts, rows, errors):
        parsed = pb.Order()
        try:
            parsed.ParseFromString(cut[1:])
        except Exception:
            assert r is None and e, cut
        else:
            assert e is None and normalize(r, pb.Order.DESCRIPTOR) == row(parsed)
    hostile = [
        b"\x00\x12\xff\xff\xff\xff\x0f",                       # customer: 4 GiB length
        b"\x00\x4a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",   # items: 10-byte length past 2^63
        b"\x00" + b"\xab\x1f" * 200_000,                       # 200k nested unknown groups
        b"\x00" + b"\x0f",                                     # wire type 7
        b"\x00\x00",                                            # field number 0
        b"\x00\x12\x02\xff\xfe",                                # customer: not UTF-8
        b"\x00\xac\x1f",                                        # end-group outside a group
        b"\x00\x3a\x02\x08\xff",                               # created: truncated nested varint
        b"\x00" + b"\x42\x00" * 300_000,                       # main_item merged 300k times: fine
    ]
    t = time.perf_counter()
    rows, errors = decode(d, hostile)
    assert time.perf_counter() - t < 5
    assert all(e for e in errors[:-1]), errors
    assert "declares 4294967295 bytes" in errors[0]
    assert "deeper than 100" in errors[2]
    assert "wire type 7" in errors[3]
    assert "out of range" in errors[4]
    assert "UTF-8" in errors[5]
    assert "outside any group" in errors[6]
    assert errors[-1] is None and rows[-1]["main_item"] == {"sku": None, "qty": None}


def test_rows_after_an_error_are_intact(pb, schema):
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    a, b = full_order(pb), pb.Order(id=4, items=[pb.Order.Item(sku="k")], counts={"q": 1})
    bad = b"\x00" + a.SerializeToString()[:-1] + b"\x12\x05ab"     # fails after nested columns were filled
    rows, errors = decode(d, [b"\x00" + a.SerializeToString(), bad, b"\x00" + b.SerializeToString()] * 3)
    for i in range(3):
        assert normalize(rows[3 * i], pb.Order.DESCRIPTOR) == row(a)
        assert rows[3 * i + 1] is None and errors[3 * i + 1]
        assert normalize(rows[3 * i + 2], pb.Order.DESCRIPTOR) == row(b)


_ints = st.integers(-2**31, 2**31 - 1)
_items = st.builds(dict, sku=st.text(max_size=5), qty=_ints)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.fixed_dictionaries({}, optional={
    "id": st.integers(-2**63, 2**63 - 1), "customer": st.text(max_size=8), "quantities": st.lists(_ints),
    "unpacked": st.lists(_ints), "counts": st.dictionaries(st.text(max_size=4), st.integers(-2**63, 2**63 - 1)),
    "status": st.integers(0, 5), "items": st.lists(_items, max_size=3), "card": st.text(max_size=3),
    "account": st.integers(-2**63, 2**63 - 1), "maybe": _ints, "blob": st.binary(max_size=5),
    "price": st.floats(allow_nan=False), "ratio": st.floats(width=32, allow_nan=False), "flag": st.booleans(),
    "delta": _ints, "u32": st.integers(0, 2**32 - 1), "u64": st.integers(0, 2**64 - 1),
    "f32": st.integers(0, 2**32 - 1), "sf64": st.integers(-2**63, 2**63 - 1), "tags": st.lists(st.text(max_size=3)),
    "statuses": st.lists(st.integers(0, 4), max_size=3), "big_delta": st.integers(-2**63, 2**63 - 1),
    "by_id": st.dictionaries(_ints, _items, max_size=3), "main_item": _items}),
    st.integers(-62_135_596_800, 253_402_300_799), st.integers(0, 999_999_999))   # Python datetime years 1-9999
def test_round_trips(pb, schema, fields, seconds, nanos):
    m = pb.Order(**{k: v for k, v in fields.items() if k != "by_id"})
    for k, v in fields.get("by_id", {}).items():
        m.by_id[k].CopyFrom(pb.Order.Item(**v))
    if seconds % 3:
        m.created.seconds, m.created.nanos = seconds, nanos
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    rows, errors = decode(d, [b"\x00" + m.SerializeToString()])
    assert errors == [None]
    assert normalize(rows[0], pb.Order.DESCRIPTOR) == row(m)


def test_timestamps_out_of_range_are_errors(pb, schema):
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    far = pb.Order()
    far.created.seconds = 2**62
    near = pb.Order()
    near.created.seconds, near.created.nanos = -1, 999_999_999   # Spark: seconds * 10^6 + nanos / 1000
    arr, err = d.decode(pa.array([b"\x00" + far.SerializeToString(), b"\x00" + near.SerializeToString()]),
                        pa.array([1, 1]), pa.array([0, 0], pa.int32()))
    assert "does not fit 64-bit microseconds" in err[0].as_py()
    assert err[1].as_py() is None
    assert arr.field("created").cast(pa.int64())[1].as_py() == -1_000_000 + 999_999


def test_map_entries_without_key_or_value_read_as_zero_values(pb, schema):
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    # counts (5): an entry with no key, one with no value, an empty one; by_id (23): an entry with no value
    payload = b"\x2a\x02\x10\x07" + b"\x2a\x03\x0a\x01k" + b"\x2a\x00" + b"\xba\x01\x02\x08\x05"
    arr, err = d.decode(pa.array([b"\x00" + payload]), pa.array([1]), pa.array([0], pa.int32()))
    assert err[0].as_py() is None
    parsed = pb.Order()
    parsed.ParseFromString(payload)
    got = arr[0].as_py()
    assert got["counts"] == [("", 7), ("k", 0), ("", 0)]          # wire order, duplicates kept
    assert dict(got["counts"]) == dict(parsed.counts)             # the protobuf package: last one wins
    assert got["by_id"] == [(5, {"sku": None, "qty": None})] == [(k, row(v)) for k, v in parsed.by_id.items()]


def test_agrees_with_message_to_dict(pb, schema):
    from google.protobuf.json_format import MessageToDict
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    m = full_order(pb)
    arr, err = d.decode(pa.array([b"\x00" + m.SerializeToString()]), pa.array([1]), pa.array([0], pa.int32()))
    got = arr[0].as_py()
    as_dict = MessageToDict(m, preserving_proto_field_name=True)
    # what MessageToDict leaves out is null / empty here, and the other way round
    assert {k for k, v in got.items() if v not in (None, [])} == set(as_dict)
    assert got["status"] == as_dict["status"] and got["customer"] == as_dict["customer"]
    assert got["id"] == int(as_dict["id"]) and got["statuses"] == as_dict["statuses"]


def test_editions_presence_and_closed_enums():
    text = """edition = "2023";
    option features.enum_type = CLOSED;
    message A { int32 x = 1; int32 y = 2 [features.field_presence = IMPLICIT]; E e = 3;
                int32 r = 4 [features.field_presence = LEGACY_REQUIRED]; }
    enum E { Z = 0; O = 1; }"""
    s = ProtobufSchema.from_text(text)
    d = ProtobufDecoder(s)
    d.add_writer(1, s)
    rows, errors = decode(d, [b"\x00\x08\x00\x10\x00\x18\x05\x20\x00", b"\x00\x08\x01"])
    assert rows[0] == {"x": 0, "y": None, "e": None, "r": 0} and errors[0] is None   # explicit / implicit / closed
    assert rows[1] is None and "required field 4" in errors[1]


def test_well_known_wrappers_and_any_are_structs():
    text = """syntax = "proto3";
    import "google/protobuf/wrappers.proto";
    import "google/protobuf/any.proto";
    message W { google.protobuf.StringValue s = 1; google.protobuf.Int64Value i = 2; google.protobuf.Any a = 3; }"""
    s = ProtobufSchema.from_text(text)
    d = ProtobufDecoder(s)
    assert d.arrow_type == pa.struct([("s", pa.struct([("value", pa.string())])),
                                      ("i", pa.struct([("value", pa.int64())])),
                                      ("a", pa.struct([("type_url", pa.string()), ("value", pa.binary())]))])
    d.add_writer(1, s)
    rows, errors = decode(d, [b"\x00\x0a\x03\x0a\x01x\x12\x00"])
    assert errors == [None] and rows == [{"s": {"value": "x"}, "i": {"value": None}, "a": None}]


def test_nanos_of_int32_min_truncate_toward_zero_as_spark(pb, schema):
    # fuzzing: -nanos overflowed 32 bits and the microseconds got the wrong sign
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    m = pb.Order()
    m.created.seconds, m.created.nanos = 5, -2**31
    m.took.seconds, m.took.nanos = -5, -2**31
    arr, err = d.decode(pa.array([b"\x00" + m.SerializeToString()]), pa.array([1]), pa.array([0], pa.int32()))
    assert err.to_pylist() == [None]
    java_div = -(2**31 // 1000)                                   # Java: -2147483648 / 1000 == -2147483
    created = arr.field("created").cast(pa.int64())[0].as_py()
    took = arr.field("took").cast(pa.int64())[0].as_py()
    assert created == 5_000_000 + java_div and took == -5_000_000 + java_div


def test_ten_byte_varint_drops_the_bits_past_64_as_protobuf_java(pb, schema):
    # protobuf-java's CodedInputStream and upb keep the low 64 bits; only a continuation bit on
    # the 10th byte is malformed
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    high = b"\x08" + b"\xff" * 9 + b"\x7f"                           # id: 10th byte 0x7f
    too_long = b"\x08" + b"\xff" * 10 + b"\x01"
    rows, errors = decode(d, [b"\x00" + high, b"\x00" + too_long])
    expected = pb.Order()
    expected.ParseFromString(high)
    assert errors[0] is None and rows[0]["id"] == expected.id == -1
    assert rows[1] is None and errors[1]


def test_repeated_group_shaped_like_a_timestamp_is_a_time_list():
    # fuzzing: the repeated-group path decoded a time-shaped group with a message plan into a
    # timestamp column (misaligned access: the process died)
    text = """syntax = "proto2";
package kr;
message Times {
  repeated group Timestamp = 1 { optional int64 seconds = 1; optional int32 nanos = 2; }
  optional group Duration = 4 { optional int64 seconds = 1; optional int32 nanos = 2; }
}
"""
    schema = ProtobufSchema.from_text(text, name="kr/times.proto")
    d = ProtobufDecoder(schema)
    d.add_writer(1, schema)
    assert d.arrow_type.field("timestamp").type == pa.list_(pa.timestamp("us", "UTC"))
    ts = lambda s, n: b"\x0b" + b"\x08" + bytes([s]) + b"\x10" + bytes([n]) + b"\x0c"   # group 1: seconds, nanos
    body = ts(3, 0) + ts(1, 0x7f) + b"\x23\x08\x02\x24"                               # then Duration: 2 s
    arr, err = d.decode(pa.array([b"\x00" + body, b"\x00" + ts(7, 0)[:-1]]), pa.array([1, 1]),
                        pa.array([0, 0], pa.int32()))
    assert err[0].as_py() is None and err[1].as_py()
    assert arr.field("timestamp").cast(pa.list_(pa.int64()))[0].as_py() == [3_000_000, 1_000_000]
    assert arr.field("duration").cast(pa.int64())[0].as_py() == 2_000_000


TIME_SHAPES = """syntax = "proto2";
package kr.shapes;
message Timestamp { optional sint64 seconds = 9; optional sfixed32 nanos = 3 [default = 5000]; }
message Duration { optional sfixed64 seconds = 2; optional sint32 nanos = 1; }
message Event {
  optional Timestamp at = 1;
  repeated Duration took = 2;
  map<string, Timestamp> seen = 3;
  optional Legacy legacy = 4;
}
message Legacy { repeated group Timestamp = 1 { optional uint64 seconds = 7 [default = 18446744073709551615]; optional fixed32 nanos = 8; } }
"""


def test_time_shaped_messages_read_their_first_two_declared_fields_by_number_and_type():
    # Spark reads a message named Timestamp/Duration whose first two declared fields are seconds and nanos as
    # a time, taking those fields by their own numbers and types (fuzzing: the core read fields 1 and 2 as
    # plain varints, so other numbers or sint/fixed types gave a wrong time, silently)
    from support.oracles.protos import Generated
    gen = Generated({"shapes/time.proto": TIME_SHAPES}).modules["shapes/time.proto"]
    schema = ProtobufSchema.from_text(TIME_SHAPES, name="shapes/time.proto")
    d = ProtobufDecoder(schema, message="kr.shapes.Event")
    d.add_writer(1, schema)
    m = gen.Event()
    m.at.seconds = -7
    m.took.add(seconds=-3, nanos=-1500)
    m.took.add(seconds=2**40, nanos=999_999_999)
    m.seen["k"].seconds = 11
    g = m.legacy.timestamp.add()
    g.seconds, g.nanos = 5, 2_000
    m.legacy.timestamp.add(nanos=3_000)     # seconds: its default, uint64 max, which Java reads as -1
    bare = gen.Event()
    bare.at.SetInParent()                   # seconds unset, nanos its proto2 default (5000 ns)
    payloads = [m.SerializeToString(), bare.SerializeToString()]
    rows, errors = decode(d, [b"\x02\x04" + p for p in payloads])     # message indexes [2]: Event
    assert errors == [None, None]
    for got, p in zip(rows, payloads):
        parsed = gen.Event()
        parsed.ParseFromString(p)
        assert normalize(got, gen.Event.DESCRIPTOR) == row(parsed)
    assert rows[1]["at"] == row(bare)["at"] and row(bare)["at"].microsecond == 5


def test_time_shaped_message_of_other_field_types_fails_the_rows_holding_one():
    # Spark casts seconds to a long and nanos to an int: any other type fails every row where the message is set
    text = """syntax = "proto3";
package kr.bad;
message Timestamp { int32 seconds = 1; int32 nanos = 2; }
message Event { Timestamp at = 1; string name = 2; }
"""
    schema = ProtobufSchema.from_text(text, name="kr/bad.proto")
    d = ProtobufDecoder(schema, message="kr.bad.Event")
    d.add_writer(1, schema)
    rows, errors = decode(d, [b"\x02\x02" + b"\x0a\x02\x08\x01", b"\x02\x02" + b"\x12\x01x"])  # [1]: Event
    assert rows[0] is None and "seconds (a 64-bit integer)" in errors[0] and "int32" in errors[0]
    assert errors[1] is None and rows[1] == {"at": None, "name": "x"}


def test_a_required_field_is_set_only_by_a_value_protobuf_keeps():
    # fuzzing: a required field sent with another wire type, or a closed enum's unknown number, is an unknown
    # field to protobuf, so the field stays unset and Java's parse (Spark's) refuses the message; kafkarec took
    # either as the field being set
    text = """syntax = "proto2";
package kr.req;
message M {
  enum Color { RED = 1; GREEN = 2; }
  required int32 r = 1;
  required Color c = 2;
  optional string s = 3;
}
"""
    schema = ProtobufSchema.from_text(text, name="kr/req.proto")
    reader = ProtobufSchema.from_text(text.replace("  required Color c = 2;\n", ""), name="kr/req.proto")
    good = b"\x08\x01\x10\x02"
    payloads = [good, b"\x09" + bytes(8) + b"\x10\x02",     # r as fixed64: unknown
                b"\x08\x01\x10\x07",                        # c = 7: not a Color
                b"\x08\x01\x15" + bytes(4)]                 # c as fixed32: unknown
    for decoder_schema in (schema, reader):                 # c in the column, and c left out of it
        d = ProtobufDecoder(decoder_schema)
        d.add_writer(1, schema)
        rows, errors = decode(d, [b"\x00" + p for p in payloads])
        assert errors[0] is None and rows[0]["r"] == 1
        assert all(e is not None and "required field" in e for e in errors[1:]), errors
