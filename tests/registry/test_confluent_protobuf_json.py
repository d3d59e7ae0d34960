"""Protobuf and JSON Schema through the registry: payloads from confluent-kafka's ProtobufSerializer
(a .proto importing another subject's file and a well-known type) and JSONSerializer, the registry
replayed from a ``_schemas`` topic holding what the in-memory client registered (references
included), decoded by TypedColumn / decode_table and compared with the protobuf package's own
parse (tests/support/oracles/protobuf_oracle.py) and with the records given to the serializer."""
from __future__ import annotations

import json
import struct

import pyarrow as pa
import pytest

import kafkarec
import kafkarec.registry as kr

from support.registry.schemas_log import confluent_key, schema_value

pytest.importorskip("confluent_kafka.schema_registry.protobuf")
pytest.importorskip("grpc_tools")

from support.oracles.protobuf_oracle import normalize, row  # noqa: E402
from support.oracles.protos import generated  # noqa: E402


def _schemas_records(client) -> list:
    """The client's registrations as a _schemas topic (Confluent's SchemaValue JSON)."""
    recs = [(0, confluent_key("NOOP"), None)]
    for subject in sorted(client.get_subjects()):
        for v in sorted(client.get_versions(subject)):
            rs = client.get_version(subject, v)
            s = rs.schema
            refs = [{"name": r.name, "subject": r.subject, "version": r.version} for r in (s.references or [])]
            recs.append((len(recs), confluent_key("SCHEMA", subject, v),
                         schema_value(subject, v, rs.schema_id, s.schema_str, schema_type=s.schema_type,
                                      references=refs)))
    return recs


def test_protobuf_serializer_payloads_through_the_registry():
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    pb = generated().modules["kr/orders.proto"]
    client = SchemaRegistryClient.new_client({"url": "mock://kafkarec-registry-pb"})
    ser = ProtobufSerializer(pb.Order, client, {"use.deprecated.format": False})
    ctx = SerializationContext("orders", MessageField.VALUE)
    msgs = [pb.Order(id=5, customer="c", quantities=[1, 2], status=pb.Order.DONE,
                     main_item=pb.Order.Item(sku="x", qty=3), counts={"a": 1}),
            pb.Order(), pb.Order(id=-1, account=77)]
    payloads = [ser(m, ctx) for m in msgs]
    reg = kr.replay(_schemas_records(client))
    assert not reg.problems
    entry = reg.get("orders-value")
    assert entry.schema_type == "PROTOBUF" and entry.references        # imports another subject
    data = kafkarec.build_batch(payloads + [b"\x00\x00\x00\x00\x63\x00", None])
    out = kr.decode_table(kafkarec.to_arrow(data, topic="orders"), reg)
    got = out.column("value").to_pylist()
    for m, g in zip(msgs, got):
        assert normalize(g, pb.Order.DESCRIPTOR) == row(m)
    ids = out.column("value_schema_id").to_pylist()
    assert ids[:3] == [struct.unpack(">i", p[1:5])[0] for p in payloads]
    corrupt = out.column("_corrupt_record").to_pylist()
    assert corrupt[:3] == [None] * 3 and "unknown writer schema id 99" in corrupt[3] and corrupt[4] is None
    assert got[4] is None
    # The column's message by name: a nested message types the column.
    col = kr.TypedColumn(reg, "orders-value", message="kr.test.Order.Item")
    assert [f.name for f in col.arrow_type] == ["sku", "qty"]
    # Compiled once on the driver, the column rebuilds without protoc (what executors do).
    compiled = kr.TypedColumn(reg, "orders-value").precompile()
    import kafkarec.protobuf as kp
    saved = kp.ProtobufSchema.from_text
    try:
        def no_protoc(*a, **k):
            raise AssertionError("protoc called on an executor")
        kp.ProtobufSchema.from_text = no_protoc
        again = kr.TypedColumn(reg, "orders-value", compiled=compiled)
        typed, _, errs = again.decode(pa.array(payloads, pa.binary()))
        assert errs.null_count == len(payloads)
        assert [normalize(g, pb.Order.DESCRIPTOR) for g in typed.to_pylist()] == [row(m) for m in msgs]
    finally:
        kp.ProtobufSchema.from_text = saved


def test_json_serializer_payloads_through_the_registry():
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    schema = {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["id"]}
    client = SchemaRegistryClient.new_client({"url": "mock://kafkarec-registry-json"})
    ser = JSONSerializer(json.dumps(schema), client)
    ctx = SerializationContext("people", MessageField.VALUE)
    records = [{"id": 1, "name": "a", "tags": ["x"]}, {"id": 2}, {"id": 3, "name": "ø", "tags": []}]
    payloads = [ser(r, ctx) for r in records]
    reg = kr.replay(_schemas_records(client))
    assert reg.get("people-value").schema_type == "JSON"
    data = kafkarec.build_batch(payloads + [b"\x00" + payloads[0][1:5] + b"{not json", b"\x07"])
    out = kr.decode_table(kafkarec.to_arrow(data, topic="people"), reg)
    got = out.column("value").to_pylist()
    want = [{"id": r["id"], "name": r.get("name"), "tags": r.get("tags")} for r in records]
    assert got[:3] == want
    corrupt = out.column("_corrupt_record").to_pylist()
    assert corrupt[:3] == [None] * 3 and corrupt[3] is not None and got[3] is None
    assert "Unknown magic byte 0x07" in corrupt[4]


BARE = """
syntax = "proto3";
package kr.bare;
message A { int64 x = 1; message B { string s = 1; int32 n = 2; } }
message C { string name = 1; }
"""


def test_bare_protobuf_payloads_with_a_reader_schema():
    from kafkarec.registry.typed import message_indexes
    from kafkarec.protobuf import ProtobufSchema
    from support.oracles.protos import Generated
    mod = Generated({"krbare/bare.proto": BARE}).modules["krbare/bare.proto"]
    schema = ProtobufSchema.from_text(BARE, name="krbare/bare.proto")
    assert message_indexes(schema, None) == b"\x00"                 # [0]: the one-byte form
    assert message_indexes(schema, "kr.bare.C") == b"\x02\x02"       # [1]
    assert message_indexes(schema, "kr.bare.A.B") == b"\x04\x00\x00"  # [0, 0]
    for message, msg in (("kr.bare.A.B", mod.A.B(s="s", n=4)), ("kr.bare.C", mod.C(name="c")),
                         (None, mod.A(x=-3))):
        col = kr.TypedColumn(None, value_format="protobuf", reader_schema=BARE, message=message)
        typed, _, errs = col.decode(pa.array([msg.SerializeToString(), None], pa.binary()))
        assert errs.to_pylist() == [None, None]
        got = typed.to_pylist()
        assert got[1] is None and normalize(got[0], msg.DESCRIPTOR) == row(msg)
