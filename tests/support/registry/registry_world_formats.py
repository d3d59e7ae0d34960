"""Protobuf and JSON Schema topics as a Confluent deployment leaves them, next to ``_schemas-0``.

* ``shipments-0``: Protobuf values written by confluent-kafka's own ``ProtobufSerializer``
  (against an in-memory registry client) with two versions of ``shipments-value``: v1 has one
  message; v2 adds fields (a repeated message, a map, a proto3 ``optional``) and puts another
  message first, so its records carry message indexes ``[1]``.  Both import a user file,
  ``kr/money.proto`` (its own subject, a schema reference) and a well-known type
  (``google/protobuf/timestamp.proto``, which the serializer does not register).
* ``people-0``: JSON Schema values written by ``JSONSerializer`` with two versions of
  ``people-value`` (v2 adds an array, a nested object and a date-time string).

Each topic also holds a record written under another subject whose field has another type (a
per-record type mismatch), one whose id the registry does not know, a truncated payload, a
value that is not a registry payload and a tombstone.  ``_schemas-0`` holds what the client
registered, as Confluent's registry writes it (references included).

The expected rows are computed from what the writers were given, without kafkarec: Protobuf
as Spark's ``from_protobuf`` maps a message with the column's (latest) descriptor and its
default options (``tests/support/oracles/protobuf_oracle.py`` over the protobuf package's own parse of the
payload with that descriptor), JSON as the records typed by the reader schema.
"""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile

from support.registry.schemas_log import confluent_key, schema_value, write_partition


MONEY = """syntax = "proto3";
package kr.money;
message Money { int64 units = 1; string currency = 2; }
"""
SHIP_V1 = """syntax = "proto3";
package kr.ship;
import "google/protobuf/timestamp.proto";
import "kr/money.proto";
message Shipment {
  enum Status { UNKNOWN = 0; SENT = 1; LOST = 2; }
  int64 id = 1;
  string carrier = 2;
  google.protobuf.Timestamp sent = 3;
  Status status = 4;
  kr.money.Money cost = 5;
}
"""
# v2: another message first (Shipment is now [1]), fields added, an enum symbol added.
SHIP_V2 = """syntax = "proto3";
package kr.ship;
import "google/protobuf/timestamp.proto";
import "kr/money.proto";
message Parcel { string code = 1; double kg = 2; }
message Shipment {
  enum Status { UNKNOWN = 0; SENT = 1; LOST = 2; RETURNED = 3; }
  int64 id = 1;
  string carrier = 2;
  google.protobuf.Timestamp sent = 3;
  Status status = 4;
  kr.money.Money cost = 5;
  repeated Parcel parcels = 6;
  map<string, string> labels = 7;
  optional int32 weight = 8;
}
"""
# v3, registered as .proto text (as Java's KafkaProtobufSerializer registers it; the Python one
# registers a base64 FileDescriptorProto) with kr/money.proto as a schema reference: a field added.
SHIP_V3 = SHIP_V2.replace("  optional int32 weight = 8;\n", "  optional int32 weight = 8;\n  string note = 9;\n")
# Written under another subject by a misconfigured producer: `id` is a string there.
SHIP_OTHER = """syntax = "proto3";
package kr.other;
message Shipment { string id = 1; string carrier = 2; }
"""
MESSAGE = "kr.ship.Shipment"

PEOPLE_V1 = {"type": "object", "title": "Person",
             "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
             "required": ["id"]}
PEOPLE_V2 = {"type": "object", "title": "Person",
             "properties": {
                 "id": {"type": "integer"}, "name": {"type": "string"},
                 "tags": {"type": "array", "items": {"type": "string"}},
                 "address": {"type": "object", "properties": {
                     "city": {"type": "string"}, "zip": {"type": ["null", "string"]}}},
                 "score": {"type": "number"},
                 "seen": {"type": "string", "format": "date-time"}},
             "required": ["id"]}
PEOPLE_OTHER = {"type": "object", "properties": {"id": {"type": "string"}}}

UTC = datetime.timezone.utc


def _descriptor_pool(files: dict):
    """Message classes for .proto ``files`` in a pool of their own (protoc -> FileDescriptorSet),
    so that two versions of one message can live side by side in this process."""
    import grpc_tools
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    tmp = tempfile.mkdtemp(prefix="kafkarec-world-pb-")
    for name, text in files.items():
        path = os.path.join(tmp, "src", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
    out = os.path.join(tmp, "set.pb")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{os.path.join(tmp, 'src')}",
                    f"-I{os.path.join(os.path.dirname(grpc_tools.__file__), '_proto')}",
                    "--include_imports", f"--descriptor_set_out={out}", *files], check=True)
    fds = descriptor_pb2.FileDescriptorSet()
    with open(out, "rb") as fh:
        fds.ParseFromString(fh.read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)

    def cls(full_name: str):
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))
    return cls


def _ts(i: int) -> datetime.datetime:
    return datetime.datetime(2024, 3, 1, tzinfo=UTC) + datetime.timedelta(seconds=i, microseconds=7 * i)


def _schemas_records(client, start: int = 0) -> list:
    """The client's registrations as Confluent's registry writes them to ``_schemas``."""
    recs = []
    for subject in sorted(client.get_subjects()):
        for v in sorted(client.get_versions(subject)):
            rs = client.get_version(subject, v)
            s = rs.schema
            refs = [{"name": r.name, "subject": r.subject, "version": r.version} for r in (s.references or [])]
            recs.append((confluent_key("SCHEMA", subject, v),
                         schema_value(subject, v, rs.schema_id, s.schema_str, schema_type=s.schema_type,
                                      references=refs)))
    return recs


def _bad(sid_known: int, truncated: str) -> list:
    """(value, reason fragment) of payloads that are no record of the topic's schema."""
    return [(b"plain text", "Unknown magic byte"),
            (b"\x00\x00\x00\x03\xe7" + b"\x00\x08\x01", "unknown writer schema id 999"),
            (b"\x00" + sid_known.to_bytes(4, "big"), truncated)]     # id only: the body is missing


def build(root: str, *, n1: int = 4, n2: int = 4) -> dict:
    """Write ``_schemas-0``, ``shipments-0`` and ``people-0`` under ``root``.  Returns
    {topic: [(expected value or None, reason fragment or None), ...] by offset} and the ids."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from support.oracles.protobuf_oracle import row

    client = SchemaRegistryClient.new_client({"url": "mock://kafkarec-world-formats"})
    conf = {"auto.register.schemas": True, "use.deprecated.format": False}
    v1 = _descriptor_pool({"kr/money.proto": MONEY, "kr/ship.proto": SHIP_V1})
    v2 = _descriptor_pool({"kr/money.proto": MONEY, "kr/ship.proto": SHIP_V2})
    v3 = _descriptor_pool({"kr/money.proto": MONEY, "kr/ship.proto": SHIP_V3})
    other = _descriptor_pool({"kr/other.proto": SHIP_OTHER})
    S1, S2, P2, M1, M2 = v1(MESSAGE), v2(MESSAGE), v2("kr.ship.Parcel"), v1("kr.money.Money"), v2("kr.money.Money")
    ctx = SerializationContext("shipments", MessageField.VALUE)
    ser1, ser2 = ProtobufSerializer(S1, client, conf), ProtobufSerializer(S2, client, conf)
    ser_other = ProtobufSerializer(other("kr.other.Shipment"), client,
                                   {**conf, "subject.name.strategy": lambda c, r: "other-value"})

    S3, P3 = v3(MESSAGE), v3("kr.ship.Parcel")

    def column_row(payload_msg) -> dict:
        """What from_protobuf gives with the column's descriptor (the latest, v3 Shipment) for this body."""
        return row(S3.FromString(payload_msg.SerializeToString()))

    pb_records, pb_expected = [], []
    for i in range(n1):
        m = S1(id=i, carrier="" if i == 0 else f"c{i}", sent=_ts(i), status=i % 3,
               cost=M1(units=i * 100, currency="EUR") if i % 2 else None)
        pb_records.append(ser1(m, ctx))
        pb_expected.append((column_row(m), None))
    for i in range(n1, n1 + n2):
        m = S2(id=i, carrier=f"c{i}", status=3 if i % 2 else 0, labels={"k": f"v{i}", "z": ""},
               parcels=[P2(code=f"p{i}", kg=1.5 * i), P2()], cost=M2(units=-i, currency="USD"))
        if i % 2:
            m.weight = 0                                # set to zero: present (optional)
            m.sent.FromDatetime(_ts(-i))
        pb_records.append(ser2(m, ctx))
        pb_expected.append((column_row(m), None))
    # v3: the text schema registered by hand (the mock keeps the text as given).  confluent-kafka's
    # Python serializer reads only base64 schemas back, so these payloads are framed as Java's
    # serializer frames them: magic, id, then the message indexes the v2 serializer wrote for the
    # same message ([1]), then the body protobuf serialized.
    from confluent_kafka.schema_registry import Schema, SchemaReference
    money_version = max(client.get_versions("kr/money.proto"))
    sid_v3 = client.register_schema("shipments-value", Schema(
        SHIP_V3, "PROTOBUF", [SchemaReference("kr/money.proto", "kr/money.proto", money_version)]))
    indexes = pb_records[n1][5:7]
    assert indexes == b"\x02\x02", indexes
    for i in range(n1 + n2, n1 + n2 + 2):
        m = S3(id=i, note=f"note {i}" if i % 2 else "", parcels=[P3(code="q", kg=0.5)])
        pb_records.append(b"\x00" + sid_v3.to_bytes(4, "big") + indexes + m.SerializeToString())
        pb_expected.append((column_row(m), None))
    m = other("kr.other.Shipment")(id="x1", carrier="c")
    pb_records.append(ser_other(m, ctx))
    pb_expected.append((None, "does not fit the column's type"))
    sid_v2 = int.from_bytes(pb_records[n1][1:5], "big")
    for payload, why in _bad(sid_v2, "runs past the end of the value"):
        pb_records.append(payload)
        pb_expected.append((None, why))
    pb_records.append(None)
    pb_expected.append((None, None))

    jctx = SerializationContext("people", MessageField.VALUE)
    jser1 = JSONSerializer(json.dumps(PEOPLE_V1), client, conf={"auto.register.schemas": True})
    jser2 = JSONSerializer(json.dumps(PEOPLE_V2), client, conf={"auto.register.schemas": True})
    jser_other = JSONSerializer(json.dumps(PEOPLE_OTHER), client, conf={
        "auto.register.schemas": True, "subject.name.strategy": lambda c, r: "people-other-value"})
    fields = list(PEOPLE_V2["properties"])
    js_records, js_expected = [], []
    for i in range(n1):
        rec = {"id": i, "name": f"n{i}"} if i % 2 else {"id": -i}
        js_records.append(jser1(rec, jctx))
        js_expected.append(({f: rec.get(f) for f in fields}, None))
    for i in range(n1, n1 + n2):
        seen = datetime.datetime(2024, 5, 1, 12, 0, i, 250000, tzinfo=UTC)
        rec = {"id": 2 ** 40 + i, "name": "ø" * i, "tags": [f"t{i}", ""] if i % 2 else [],
               "address": {"city": f"city{i}", "zip": None if i % 2 else "1000"},
               "score": i + 0.25, "seen": seen.isoformat().replace("+00:00", "Z")}
        js_records.append(jser2(rec, jctx))
        want = dict(rec, seen=seen)
        js_expected.append((want, None))
    js_records.append(jser_other({"id": "not a number"}, jctx))
    js_expected.append((None, "does not fit the schema's type"))
    sid_j2 = int.from_bytes(js_records[n1][1:5], "big")
    for payload, why in _bad(sid_j2, "invalid JSON"):
        js_records.append(payload)
        js_expected.append((None, why))
    js_records.append(None)
    js_expected.append((None, None))

    sch = [(confluent_key("NOOP"), None)] + _schemas_records(client)
    write_partition(os.path.join(root, "_schemas-0"), sch)
    write_partition(os.path.join(root, "shipments-0"), [(None, v) for v in pb_records], split_every=5)
    write_partition(os.path.join(root, "people-0"), [(None, v) for v in js_records], split_every=5)
    ids = {s: [client.get_version(s, v).schema_id for v in sorted(client.get_versions(s))]
           for s in client.get_subjects()}
    # The writer id each record names: the subject's versions in order, the other subject's, then
    # the bad payloads' (none, the unknown 999, the truncated one's) and the tombstone's (none).
    sv, pv = ids["shipments-value"], ids["people-value"]
    schema_ids = {
        "shipments": [sv[0]] * n1 + [sv[1]] * n2 + [sv[2]] * 2 + ids["other-value"] + [None, 999, sv[1], None],
        "people": [pv[0]] * n1 + [pv[1]] * n2 + ids["people-other-value"] + [None, 999, pv[1], None]}
    return {"expected": {"shipments": pb_expected, "people": js_expected}, "ids": ids,
            "schema_ids": schema_ids, "message": MESSAGE}
