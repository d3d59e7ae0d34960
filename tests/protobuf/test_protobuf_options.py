"""from_protobuf's options with Spark's names (enums.as.ints, emit.default.values, upcast.unsigned.ints,
unwrap.primitive.wrapper.types, recursive.fields.max.depth, retain.empty.message.types,
convert.any.fields.to.json, whose JSON text is compared here as JSON values with the protobuf package's
json_format, and text for text with Java's JsonFormat in test_any_json.py): the decoder's rows
equal what Spark's ProtobufDeserializer gives for the same messages, computed from the protobuf package's own
parse (tests/support/oracles/protobuf_oracle.py ``row_with``, Spark's SchemaConverters/ProtobufDeserializer rules), for random
messages under every combination.  Spark's own from_protobuf jar is not served by the registry this project
reaches (spark-protobuf_2.13 4.0.0 to 4.3.0 refused), so Spark's rules are the oracle here."""
from __future__ import annotations

import itertools
import random

import pyarrow as pa
import pytest

from kafkarec import protobuf as kp
from kafkarec.errors import ProtobufSchemaError
from kafkarec.registry.typed import message_indexes

from support.oracles.protobuf_oracle import row_with, sorted_maps  # noqa: E402
from support.oracles.protos import Generated  # noqa: E402

OPTIONS_PROTO = """
syntax = "proto3";
package kr.opt;
import "google/protobuf/wrappers.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/any.proto";

message Nothing {}

enum Mood { CALM = 0; HAPPY = 1; SAD = 2; }

message Flat {
  string name = 1;
  int64 age = 2;
  optional string middle = 3;
  Mood mood = 4;
  repeated Mood moods = 5;
  uint32 u32 = 6;
  uint64 u64 = 7;
  repeated uint64 u64s = 8;
  google.protobuf.Int32Value w_i32 = 9;
  google.protobuf.UInt32Value w_u32 = 10;
  google.protobuf.UInt64Value w_u64 = 11;
  google.protobuf.StringValue w_str = 12;
  google.protobuf.BoolValue w_bool = 13;
  google.protobuf.DoubleValue w_dbl = 14;
  google.protobuf.BytesValue w_bytes = 15;
  Nothing nothing = 16;
  oneof pick { int32 a = 17; string b = 18; }
  double score = 19;
  bool ok = 20;
  bytes raw = 21;
  google.protobuf.Timestamp at = 22;
  map<string, google.protobuf.Int64Value> w_map = 23;
  map<string, Mood> moods_by = 24;
  repeated Nothing nothings = 25;
  fixed32 f32 = 26;
  google.protobuf.Any extra = 27;
  repeated google.protobuf.Any extras = 28;
}

message Person {
  string name = 1;
  Person bff = 2;
  repeated Person friends = 3;
  map<string, Person> by_name = 4;
  Flat card = 5;
  Mood mood = 6;
}
"""

FLAGS = ("enums.as.ints", "emit.default.values", "upcast.unsigned.ints", "unwrap.primitive.wrapper.types",
         "retain.empty.message.types", "convert.any.fields.to.json")


@pytest.fixture(scope="module")
def world():
    gen = Generated({"kropt/options.proto": OPTIONS_PROTO})
    schema = kp.ProtobufSchema.from_text(OPTIONS_PROTO, name="kropt/options.proto")
    return gen.modules["kropt/options.proto"], schema


def _flat(m, r: random.Random):
    f = m.Flat()
    pick = lambda *xs: r.choice(xs)  # noqa: E731
    if r.random() < 0.7:
        f.name = pick("", "ann", "bø")
    f.age = pick(0, 0, 5, -2**63)
    if r.random() < 0.5:
        f.middle = pick("", "m")
    f.mood = pick(0, 1, 2, 7)                       # 7: a number the (open) enum does not define
    f.moods.extend(r.choice([[], [0, 2], [1, 9]]))
    f.u32 = pick(0, 1, 2**31, 2**32 - 1)
    f.u64 = pick(0, 3, 2**63, 2**64 - 1)
    f.u64s.extend(r.choice([[], [0, 2**64 - 1]]))
    for name, values in (("w_i32", (0, -5)), ("w_u32", (0, 2**32 - 1)), ("w_u64", (0, 2**64 - 2)),
                         ("w_str", ("", "s")), ("w_bool", (False, True)), ("w_dbl", (0.0, -0.0, 2.5)),
                         ("w_bytes", (b"", b"\x00"))):
        if r.random() < 0.6:
            getattr(f, name).value = r.choice(values)
    if r.random() < 0.3:
        f.nothing.SetInParent()
    choice = r.random()
    if choice < 0.3:
        f.a = pick(0, 4)
    elif choice < 0.6:
        f.b = pick("", "x")
    f.score = pick(0.0, -0.0, 1.25)
    f.ok = pick(False, True)
    f.raw = pick(b"", b"r")
    if r.random() < 0.4:
        f.at.FromMicroseconds(r.choice([0, 1_700_000_000_000_001, -5]))
    for k in r.sample(["a", "b", "c"], r.randint(0, 2)):
        f.w_map[k].value = r.choice([0, 9])
    for k in r.sample(["x", "y"], r.randint(0, 2)):
        f.moods_by[k] = r.choice([0, 2, 5])
    for _ in range(r.randint(0, 2)):
        f.nothings.add()
    f.f32 = pick(0, 2**32 - 1)
    if r.random() < 0.5:
        from google.protobuf import timestamp_pb2, wrappers_pb2
        f.extra.Pack(r.choice([m.Person(name=pick("", "zoë <&>"), mood=pick(0, 2, 9)), m.Nothing(),
                               timestamp_pb2.Timestamp(seconds=pick(0, -5, 1700000000), nanos=pick(0, 1000)),
                               wrappers_pb2.Int64Value(value=pick(0, -2**63))]))
    for _ in range(r.randint(0, 2)):
        f.extras.add().Pack(m.Flat(name=pick("", "in"), age=pick(0, 5), score=pick(0.0, 2.5), mood=pick(1, 7),
                                   u64=pick(0, 2**64 - 1)))
    return f


def _person(m, r: random.Random, depth: int):
    p = m.Person(name=r.choice(["", "p%d" % depth]), mood=r.choice([0, 1]))
    if r.random() < 0.5:
        p.card.CopyFrom(_flat(m, r))
    if depth > 0:
        if r.random() < 0.7:
            p.bff.CopyFrom(_person(m, r, depth - 1))
        for _ in range(r.randint(0, 2)):
            p.friends.add().CopyFrom(_person(m, r, depth - 1))
        for k in r.sample(["k1", "k2"], r.randint(0, 2)):
            p.by_name[k].CopyFrom(_person(m, r, depth - 1))
    return p


def _decode(schema, message: str, payloads: list, options: dict):
    dec = kp.ProtobufDecoder(schema, message, **kp.spark_options(options))
    dec.add_writer(1, schema)
    prefix = message_indexes(schema, message)
    values = pa.array([prefix + p for p in payloads], pa.binary())
    arr, err = dec.decode(values, pa.array([1] * len(payloads), pa.int64()),
                          pa.array([0] * len(payloads), pa.int32()))
    assert arr.type == dec.arrow_type
    return dec, arr.to_pylist(), err.to_pylist()


@pytest.mark.parametrize("flags", [c for n in range(len(FLAGS) + 1) for c in itertools.combinations(FLAGS, n)],
                         ids=lambda c: "+".join(f.split(".")[0] for f in c) or "defaults")
def test_flat_messages_under_every_option_set(world, flags):
    m, schema = world
    options = {f: "true" for f in flags}
    r = random.Random(hash(flags) & 0xFFFF)
    msgs = [_flat(m, r) for _ in range(120)]
    dec, rows, errors = _decode(schema, "kr.opt.Flat", [x.SerializeToString() for x in msgs], options)
    assert errors == [None] * len(msgs)
    for msg, got in zip(msgs, rows):
        assert sorted_maps(got) == sorted_maps(row_with(msg, options)), msg


@pytest.mark.parametrize("depth", [1, 2, 3, 5])
@pytest.mark.parametrize("flags", [(), ("emit.default.values", "enums.as.ints", "retain.empty.message.types")])
def test_recursive_messages_are_cut_where_spark_cuts_them(world, depth, flags):
    m, schema = world
    options = {"recursive.fields.max.depth": str(depth), **{f: "true" for f in flags}}
    r = random.Random(depth)
    msgs = [_person(m, r, r.randint(0, 5)) for _ in range(60)]
    dec, rows, errors = _decode(schema, "kr.opt.Person", [x.SerializeToString() for x in msgs], options)
    assert errors == [None] * len(msgs)
    for msg, got in zip(msgs, rows):
        assert sorted_maps(got) == sorted_maps(row_with(msg, options)), msg


def test_types_follow_sparks_schema_converter(world):
    _, schema = world
    t = kp.ProtobufDecoder(schema, "kr.opt.Flat").arrow_type
    assert "nothing" not in t.names and "nothings" not in t.names       # empty messages are left out
    assert t.field("mood").type == pa.string() and t.field("u64").type == pa.int64()
    assert t.field("w_i32").type == pa.struct([pa.field("value", pa.int32())])
    kw = kp.spark_options({"ENUMS.AS.INTS": "True", "upcast.unsigned.ints": "true",
                           "unwrap.primitive.wrapper.types": "true", "retain.empty.message.types": "true"})
    t = kp.ProtobufDecoder(schema, "kr.opt.Flat", **kw).arrow_type
    assert t.field("mood").type == pa.int32() and t.field("moods").type == pa.list_(pa.int32())
    assert t.field("u32").type == pa.int64() and t.field("u64").type == pa.decimal128(20, 0)
    assert t.field("f32").type == pa.int32()                             # Spark upcasts uint32/uint64 only
    assert t.field("w_u32").type == pa.int64() and t.field("w_u64").type == pa.decimal128(20, 0)
    assert t.field("w_map").type == pa.map_(pa.string(), pa.int64())
    assert t.field("nothing").type == pa.struct([pa.field("__dummy_field_in_empty_struct", pa.string())])
    with pytest.raises(ProtobufSchemaError, match="recursive.fields.max.depth between 1 and 10"):
        kp.ProtobufDecoder(schema, "kr.opt.Person")
    with pytest.raises(ProtobufSchemaError, match=r"given 11"):
        kp.ProtobufDecoder(schema, "kr.opt.Person", recursive_fields_max_depth=11)
    t1 = kp.ProtobufDecoder(schema, "kr.opt.Person", recursive_fields_max_depth=1).arrow_type
    assert t1.names == ["name", "card", "mood"]
    t2 = kp.ProtobufDecoder(schema, "kr.opt.Person", recursive_fields_max_depth=2).arrow_type
    assert t2.field("bff").type.names == ["name", "card", "mood"]
    # three recursive fields to depth 10: 3^10 structs, refused rather than built for minutes
    with pytest.raises(ProtobufSchemaError, match="more than 20000 structs"):
        kp.ProtobufDecoder(schema, "kr.opt.Person", recursive_fields_max_depth=10)


def test_option_values_are_checked(world):
    with pytest.raises(ProtobufSchemaError, match="true or false"):
        kp.spark_options({"enums.as.ints": "yes"})
    with pytest.raises(ProtobufSchemaError, match="an integer"):
        kp.spark_options({"recursive.fields.max.depth": "deep"})
    with pytest.raises(ProtobufSchemaError, match="true or false"):
        kp.spark_options({"convert.any.fields.to.json": "yes"})
    assert kp.spark_options({"convert.any.fields.to.json": "false", "mode": "FAILFAST"}) == \
        {"convert_any_fields_to_json": False}


def test_decoders_with_options_pickle(world):
    import pickle
    m, schema = world
    dec = kp.ProtobufDecoder(schema, "kr.opt.Person", recursive_fields_max_depth=3, enums_as_ints=True,
                             upcast_unsigned_ints=True, unwrap_primitive_wrapper_types=True)
    dec.add_writer(1, schema)
    again = pickle.loads(pickle.dumps(dec))
    assert again.arrow_type == dec.arrow_type
    msg = _person(m, random.Random(2), 4)
    payload = pa.array([message_indexes(schema, "kr.opt.Person") + msg.SerializeToString()], pa.binary())
    ids, body = pa.array([1], pa.int64()), pa.array([0], pa.int32())
    assert again.decode(payload, ids, body)[0].to_pylist() == dec.decode(payload, ids, body)[0].to_pylist()
