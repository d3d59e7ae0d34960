"""A log directory as a Confluent deployment leaves it: ``_schemas-0`` (the registry's topic, in
the JSON Confluent's registry writes) and an ``orders-0`` topic whose Avro schema evolved, its
values written by confluent-kafka's own ``AvroSerializer`` (id prefix and header ids) against
an in-memory registry client, plus records that are not registry payloads."""
from __future__ import annotations

import base64
import datetime
import decimal
import json
import os
import uuid

from support.registry.schemas_log import confluent_key, schema_value, write_partition

ORDER_V1 = {
    "type": "record", "name": "Order", "namespace": "com.acme",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "qty", "type": "int"},
    ]}
ORDER_V2 = {
    "type": "record", "name": "Order", "namespace": "com.acme",
    "fields": ORDER_V1["fields"][:4] + [
        {"name": "qty", "type": "long"},                                   # int -> long promotion
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "lines", "type": {"type": "array", "items": {
            "type": "record", "name": "Line", "fields": [
                {"name": "sku", "type": "string"}, {"name": "n", "type": "int"}]}}, "default": []},
    ]}
KEY_SCHEMA = '"string"'

UTC = datetime.timezone.utc


def v1_record(i: int) -> dict:
    return {"id": i, "amount": decimal.Decimal(f"{i}.{i % 100:02d}"), "status": "NEW",
            "ts": datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=i), "qty": i}


def v2_record(i: int) -> dict:
    r = v1_record(i)
    r.update(status="PAID", note=None if i % 2 else f"note {i}",
             lines=[{"sku": f"s{i}", "n": 1}, {"sku": "x", "n": i}])
    return r


def expected_v2(rec: dict) -> dict:
    """What the reader schema (v2) gives for a record written with v1 or v2."""
    out = dict(rec)
    out.setdefault("note", None)
    out.setdefault("lines", [])
    return out


def build(root: str, *, n1: int = 5, n2: int = 5) -> dict:
    """Write the log directory; returns the expected decoded rows (by offset) and facts."""
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = MockSchemaRegistryClient({"url": "mock://world"})
    ser1 = AvroSerializer(client, json.dumps(ORDER_V1), conf={"auto.register.schemas": True})
    ser2 = AvroSerializer(client, json.dumps(ORDER_V2), conf={"auto.register.schemas": True})
    ser2h = AvroSerializer(client, json.dumps(ORDER_V2), conf={
        "auto.register.schemas": True, "schema.id.serializer": header_schema_id_serializer})
    kser = AvroSerializer(client, KEY_SCHEMA, conf={"auto.register.schemas": True})

    records, expected = [], []
    for i in range(n1):
        ctx = SerializationContext("orders", MessageField.VALUE, [])
        kctx = SerializationContext("orders", MessageField.KEY, [])
        records.append((kser(f"k{i}", kctx), ser1(v1_record(i), ctx), []))
        expected.append((f"k{i}", expected_v2(v1_record(i)), None))
    for i in range(n1, n1 + n2):
        ctx = SerializationContext("orders", MessageField.VALUE, [])
        records.append((None, ser2(v2_record(i), ctx), []))
        expected.append((None, expected_v2(v2_record(i)), None))
    # Header ids (magic 1 + GUID in __value_schema_id, bare payload).
    hdrs = []
    ctx = SerializationContext("orders", MessageField.VALUE, hdrs)
    payload = ser2h(v2_record(99), ctx)
    records.append((None, payload, list(hdrs)))
    expected.append((None, expected_v2(v2_record(99)), None))
    # Not registry payloads, an unknown id, a truncated body, a tombstone.
    records.append((None, b"plain text", []))
    expected.append((None, None, "Unknown magic byte"))
    records.append((None, b"\x00\x00\x00\x03\xe7" + b"\x02", []))
    expected.append((None, None, "unknown writer schema id 999"))
    good = ser1(v1_record(1), SerializationContext("orders", MessageField.VALUE, []))
    records.append((None, good[:7], []))
    expected.append((None, None, ""))
    records.append((None, None, []))
    expected.append((None, None, None))

    # The registry's own topic: what Confluent's registry would have written for these.
    sch = [(0, confluent_key("NOOP"), None)]
    off = 1
    for subject in sorted(client.get_subjects()):
        for v in client.get_versions(subject):
            rs = client.get_version(subject, v)
            val = json.loads(schema_value(subject, v, rs.schema_id, rs.schema.schema_str))
            # The mock hands out random GUIDs; a registry stores/derives one per schema: keep
            # the mock's (the md5 field) so header ids written with it resolve.
            val["md5"] = base64.b64encode(uuid.UUID(rs.guid).bytes).decode()
            sch.append((off, confluent_key("SCHEMA", subject, v), json.dumps(val).encode()))
            off += 1
    write_partition(os.path.join(root, "_schemas-0"), [(k, v) for _, k, v in sch],
                    [o for o, _, _ in sch])
    write_partition(os.path.join(root, "orders-0"), [(k, v) for k, v, _ in records],
                    headers=[h for _, _, h in records], split_every=4)
    ids = {s: [client.get_version(s, v).schema_id for v in client.get_versions(s)]
           for s in client.get_subjects()}
    return {"expected": expected, "ids": ids, "records": records}


if __name__ == "__main__":
    # PYTHONPATH=tests python -m support.registry.registry_world DIR: the log directory the README's typed-value
    # examples read (needs the test extra: confluent-kafka[schemaregistry], fastavro)
    import sys
    if len(sys.argv) != 2:
        sys.exit("usage: PYTHONPATH=tests python -m support.registry.registry_world DIR")
    build(sys.argv[1])
    print(f"wrote {sys.argv[1]}: _schemas-0 and orders-0")
