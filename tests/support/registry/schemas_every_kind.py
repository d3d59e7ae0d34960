"""A ``_schemas`` log with every record kind Confluent's registry (and Karapace, Redpanda) writes, and
what a replay of it must give (tests/registry/test_schemas_topic.py, test_remote_schemas.py)."""
from __future__ import annotations

import json

import pytest

import kafkarec.registry as kr

from support.registry.schemas_log import confluent_key, karapace_key, schema_value

A1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
A2 = ('{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},'
      '{"name":"note","type":["null","string"],"default":null}]}')
P1 = 'syntax = "proto3";\nmessage Ping { int64 id = 1; }\n'
J1 = '{"type":"object","properties":{"a":{"type":"integer"}}}'


def every_kind():
    """(offset, key, value) of a _schemas log with every record kind, and what must hold after."""
    recs = [
        (0, confluent_key("NOOP"), None),
        (1, confluent_key("CONFIG", None), b'{"compatibilityLevel":"BACKWARD"}'),
        (2, confluent_key("MODE", None), b'{"mode":"READWRITE"}'),
        (3, confluent_key("SCHEMA", "orders-value", 1), schema_value("orders-value", 1, 1, A1)),
        # Karapace's field order: the same logical key, other bytes.
        (4, karapace_key("SCHEMA", "orders-value", 2), schema_value("orders-value", 2, 2, A2)),
        (5, confluent_key("SCHEMA", "pings-value", 1), schema_value("pings-value", 1, 3, P1, schema_type="PROTOBUF")),
        (6, confluent_key("SCHEMA", "js-value", 1), schema_value("js-value", 1, 4, J1, schema_type="JSON")),
        # The same schema under another subject shares its id.
        (7, confluent_key("SCHEMA", "orders2-value", 1), schema_value("orders2-value", 1, 2, A2)),
        # Duplicate id with other text: ignored and reported.
        (8, confluent_key("SCHEMA", "evil-value", 1), schema_value("evil-value", 1, 1, '"string"')),
        # Soft delete of a version: the id still resolves.
        (9, confluent_key("SCHEMA", "js-value", 1), schema_value("js-value", 1, 4, J1, schema_type="JSON", deleted=True)),
        # Hard delete (tombstone) of a version used by nobody else: its id goes.
        (10, confluent_key("SCHEMA", "gone-value", 1), schema_value("gone-value", 1, 9, '"int"')),
        (11, confluent_key("SCHEMA", "gone-value", 1), None),
        # DELETE_SUBJECT marks versions 1..N deleted.
        (12, confluent_key("SCHEMA", "del-value", 1), schema_value("del-value", 1, 10, '"long"')),
        (13, confluent_key("SCHEMA", "del-value", 2), schema_value("del-value", 2, 11, '"double"')),
        (14, confluent_key("DELETE_SUBJECT", "del-value"), b'{"subject":"del-value","version":2}'),
        # CLEAR_SUBJECT forgets soft-deleted versions (and their ids when no one else uses them).
        (15, confluent_key("SCHEMA", "clr-value", 1), schema_value("clr-value", 1, 12, '"float"')),
        (16, confluent_key("DELETE_SUBJECT", "clr-value"), b'{"subject":"clr-value","version":1}'),
        (17, confluent_key("CLEAR_SUBJECT", "clr-value"), b'{"subject":"clr-value"}'),
        # Context-qualified subjects: ids per context (id 1 again, other text, no conflict).
        (18, confluent_key("SCHEMA", ":.staging:orders-value", 1),
         schema_value(":.staging:orders-value", 1, 1, '"bytes"')),
        (19, confluent_key("CONTEXT", None), b'{}'),
        # Tombstones of other key types are ignored.
        (20, confluent_key("CONFIG", "orders-value"), None),
        # Records the registry logs and skips.
        (21, b"not json", b"{}"),
        (22, b'{"keytype":"WHAT","magic":0}', b"{}"),
        (23, confluent_key("SCHEMA", "bad-value", 1, magic=7), schema_value("bad-value", 1, 30, '"int"')),
        (24, confluent_key("SCHEMA", "bad-value", 2), b"{not json"),
        (25, None, b"{}"),
        # Redpanda: a key whose seq is not its own offset lost the race: skipped.
        (26, json.dumps({"keytype": "SCHEMA", "subject": "rp-value", "version": 1, "magic": 1,
                         "seq": 3, "node": 1}).encode(), schema_value("rp-value", 1, 40, '"int"')),
        (27, json.dumps({"keytype": "SCHEMA", "subject": "rp-value", "version": 1, "magic": 1,
                         "seq": 27, "node": 0}).encode(), schema_value("rp-value", 1, 41, '"long"')),
        # References (Avro named type defined under another subject).
        (28, confluent_key("SCHEMA", "com.acme.Money", 1),
         schema_value("com.acme.Money", 1, 50, '{"type":"fixed","name":"Money","namespace":"com.acme","size":8}')),
        (29, confluent_key("SCHEMA", "pay-value", 1),
         schema_value("pay-value", 1, 51, '{"type":"record","name":"Pay","fields":[{"name":"m","type":"com.acme.Money"}]}',
                      references=[{"name": "com.acme.Money", "subject": "com.acme.Money", "version": 1}])),
    ]
    return recs


def check_every_kind(reg):
    assert reg.subjects() == sorted([":.staging:orders-value", "com.acme.Money", "orders-value",
                                     "orders2-value", "pay-value", "pings-value", "rp-value"])
    assert reg.subjects(deleted=True) == sorted(reg.subjects() + ["del-value", "js-value"])
    assert reg.get("orders-value").version == 2
    assert reg.by_id(1).schema == A1                      # the duplicate did not replace it
    assert reg.by_id(1, ".staging").schema == '"bytes"'  # ids per context
    assert reg.by_id(2).schema == A2
    assert reg.by_id(3).schema_type == "PROTOBUF"
    js = reg.by_id(4)                                     # soft-deleted: still resolves
    assert js.deleted and js.schema_type == "JSON"
    assert reg.by_id(9) is None                           # hard-deleted
    assert reg.by_id(10).deleted and reg.by_id(11).deleted  # DELETE_SUBJECT 1..2
    assert reg.versions("del-value") == [] and reg.versions("del-value", deleted=True) == [1, 2]
    assert reg.by_id(12) is None and reg.versions("clr-value", deleted=True) == []
    assert reg.by_id(40) is None and reg.by_id(41).schema == '"long"'   # Redpanda seq rule
    assert reg.by_id(30) is None
    with pytest.raises(kr.RegistryError):
        reg.get("js-value")                               # no live version
    assert reg.get("js-value", 1).deleted
    refs = reg.references(reg.get("pay-value"))
    assert [(n, e.subject, e.version) for n, e in refs] == [("com.acme.Money", "com.acme.Money", 1)]
    problems = "\n".join(reg.problems)
    for offset, text in ((8, "duplicate id 1"), (21, "key is not JSON"), (22, "unknown keytype 'WHAT'"),
                         (23, "magic 7"), (24, "schema value is not JSON"), (25, "without a key")):
        assert f"offset {offset}: " in problems and text in problems, (offset, text, problems)
    assert len(reg.problems) == 6
