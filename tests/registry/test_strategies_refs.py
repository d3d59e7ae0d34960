"""Subject name strategies with confluent-kafka's own serializer, Avro named types defined under
other subjects (schema references), and bare Avro payloads (valueFormat=avro) written by fastavro."""
from __future__ import annotations

import io
import json
import struct

import pyarrow as pa
import pytest

import kafkarec
import kafkarec.registry as kr

from support.registry.schemas_log import confluent_key, schema_value

fastavro = pytest.importorskip("fastavro")

MONEY = {"type": "record", "name": "Money", "namespace": "com.acme",
         "fields": [{"name": "units", "type": "long"}, {"name": "currency", "type": "string"}]}
PAY = {"type": "record", "name": "Pay", "namespace": "com.acme",
       "fields": [{"name": "id", "type": "long"}, {"name": "total", "type": "com.acme.Money"}]}


def _fastavro_bytes(schema, record) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return buf.getvalue()


def test_avro_named_type_under_another_subject():
    reg = kr.replay([
        (0, confluent_key("SCHEMA", "com.acme.Money", 1), schema_value("com.acme.Money", 1, 10, json.dumps(MONEY))),
        (1, confluent_key("SCHEMA", "pay-value", 1),
         schema_value("pay-value", 1, 11, json.dumps(PAY),
                      references=[{"name": "com.acme.Money", "subject": "com.acme.Money", "version": 1}])),
    ])
    full = dict(PAY, fields=[PAY["fields"][0], {"name": "total", "type": MONEY}])
    rec = {"id": 7, "total": {"units": 1250, "currency": "EUR"}}
    payload = b"\x00" + struct.pack(">i", 11) + _fastavro_bytes(full, rec)
    col = kr.TypedColumn(reg, topic="pay")
    typed, ids, errs = col.decode(pa.array([payload]))
    assert errs.to_pylist() == [None] and typed.to_pylist() == [rec] and ids.to_pylist() == [11]
    # A reference the registry does not hold is a clear error, not a crash.
    broken = kr.replay([(0, confluent_key("SCHEMA", "pay-value", 1),
                         schema_value("pay-value", 1, 11, json.dumps(PAY),
                                      references=[{"name": "com.acme.Money", "subject": "nope", "version": 1}]))])
    with pytest.raises(kr.RegistryError, match="nope"):
        kr.TypedColumn(broken, topic="pay")


def test_record_name_strategies_with_confluents_serializer():
    from confluent_kafka.schema_registry import (SchemaRegistryClient, record_subject_name_strategy,
                                                 topic_record_subject_name_strategy)
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = SchemaRegistryClient.new_client({"url": "mock://kafkarec-registry-strategies"})
    rec = {"units": 5, "currency": "USD"}
    payloads = {}
    for name, strategy in (("record", record_subject_name_strategy),
                           ("topic_record", topic_record_subject_name_strategy)):
        ser = AvroSerializer(client, json.dumps(MONEY), conf={"subject.name.strategy": strategy})
        payloads[name] = ser(rec, SerializationContext("money", MessageField.VALUE))
    recs = []
    for subject in sorted(client.get_subjects()):
        for v in client.get_versions(subject):
            rs = client.get_version(subject, v)
            recs.append((len(recs), confluent_key("SCHEMA", subject, v),
                         schema_value(subject, v, rs.schema_id, rs.schema.schema_str)))
    reg = kr.replay(recs)
    assert reg.subjects() == ["com.acme.Money", "money-com.acme.Money"]
    table = kafkarec.to_arrow(kafkarec.build_batch([payloads["record"], payloads["topic_record"]]),
                              topic="money")
    for strategy in ("record", "topic_record"):
        out = kr.decode_table(table, reg, strategy=strategy, record_name="com.acme.Money")
        assert out.column("value").to_pylist() == [rec, rec]
        assert out.column("_corrupt_record").null_count == 2


def test_bare_avro_payloads_with_a_reader_schema():
    rec = {"units": 3, "currency": "GBP"}
    body = _fastavro_bytes(MONEY, rec)
    table = kafkarec.to_arrow(kafkarec.build_batch([body, None, b"\xff"]), topic="money")
    out = kr.decode_table(table, None, value_format="avro", value_reader_schema=json.dumps(MONEY))
    assert out.column("value").to_pylist()[:2] == [rec, None]
    corrupt = out.column("_corrupt_record").to_pylist()
    assert corrupt[:2] == [None, None] and corrupt[2] is not None
