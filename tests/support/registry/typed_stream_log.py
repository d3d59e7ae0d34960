"""The typed-values stream's log (tests/spark/test_typed_stream.py and its units): ``_schemas-0`` as
Confluent's registry writes it and ``orders-0``, whose values confluent-kafka's own AvroSerializer
wrote with v1, then v2 (registered mid-stream), bytes per file for each step and what each offset
should give."""
from __future__ import annotations

import base64
import json
import uuid

from support.registry import registry_world as world
from support.registry.schemas_log import confluent_key, schema_value

V1 = world.ORDER_V1
V2 = {**V1, "fields": V1["fields"] + [      # forward compatible: v1 readers skip the new fields
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "lines", "type": {"type": "array", "items": {
        "type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "n", "type": "int"}]}}, "default": []}]}
V1_FIELDS = [f["name"] for f in V1["fields"]]


def _v2_record(i):
    r = world.v1_record(i)
    r.update(status="PAID", note=None if i % 2 else f"note {i}",
             lines=[{"sku": f"s{i}", "n": 1}, {"sku": "x", "n": i}])
    return r


class TypedStreamLog:
    """The steps: bytes to append per file, and what each offset of orders-0 should give."""

    def __init__(self):
        from confluent_kafka.schema_registry._sync.mock_schema_registry_client import \
            MockSchemaRegistryClient
        self.client = MockSchemaRegistryClient({"url": "mock://typed-stream"})
        self.steps = []
        self.expected = {}       # offset -> (key, input record or None, error text or None, version, header?)
        self.next = 0
        self.schemas_next = 0
        self.segment = "orders-0/00000000000000000000.log"
        self.registered = set()

    def _serializer(self, schema, header=False):
        from confluent_kafka.schema_registry import header_schema_id_serializer
        from confluent_kafka.schema_registry.avro import AvroSerializer
        conf = {"auto.register.schemas": True}
        if header:
            conf["schema.id.serializer"] = header_schema_id_serializer
        return AvroSerializer(self.client, json.dumps(schema), conf=conf)

    def _schemas_records(self):
        """_schemas records for the versions registered since the last call."""
        import kafkarec
        keys, vals, offs = [], [], []
        if self.schemas_next == 0:
            keys.append(confluent_key("NOOP"))
            vals.append(None)
            offs.append(0)
            self.schemas_next = 1
        for subject in sorted(self.client.get_subjects()):
            for v in sorted(self.client.get_versions(subject)):
                if (subject, v) in self.registered:
                    continue
                self.registered.add((subject, v))
                rs = self.client.get_version(subject, v)
                val = json.loads(schema_value(subject, v, rs.schema_id, rs.schema.schema_str))
                # the mock's GUID, so that header ids written with it resolve (as world.py)
                val["md5"] = base64.b64encode(uuid.UUID(rs.guid).bytes).decode()
                keys.append(confluent_key("SCHEMA", subject, v))
                vals.append(json.dumps(val).encode())
                offs.append(self.schemas_next)
                self.schemas_next += 1
        if not keys:
            return []
        return [("_schemas-0/00000000000000000000.log",
                 kafkarec.build_batch(vals, keys, offsets=offs))]

    def step(self, phase, records, *, new_segment=False):
        """records: (key text or None, value bytes or None, headers, expected record, error)."""
        import kafkarec
        files = self._schemas_records()
        if new_segment:
            self.segment = f"orders-0/{self.next:020d}.log"
        base = self.next
        files.append((self.segment, kafkarec.build_batch(
            [r[1] for r in records], [r[0] for r in records], base_offset=base,
            headers=[r[2] for r in records])))
        for i, r in enumerate(records):
            self.expected[base + i] = (r[5], r[3], r[4], phase)
        self.next += len(records)
        self.steps.append({"phase": phase, "files": files})

    def v1(self, i, keyed=True):
        from confluent_kafka.serialization import MessageField, SerializationContext
        ser = self._serializer(V1)
        kser = self._serializer(json.loads(world.KEY_SCHEMA))
        value = ser(world.v1_record(i), SerializationContext("orders", MessageField.VALUE, []))
        key = kser(f"k{i}", SerializationContext("orders", MessageField.KEY, [])) if keyed else None
        return (key, value, [], world.v1_record(i), None, f"k{i}" if keyed else None)

    def v2(self, i, header=False):
        from confluent_kafka.serialization import MessageField, SerializationContext
        hdrs = []
        value = self._serializer(V2, header)(_v2_record(i),
                                             SerializationContext("orders", MessageField.VALUE, hdrs))
        return (None, value, list(hdrs), _v2_record(i), None, None)


def build_steps(work: str):
    """The stream's steps (tests/spark/test_typed_stream.py's log) into ``work/steps.pickle``, as
    typed_stream_job.py reads them: ``(log, ids)``, the log and each subject's schema ids by version."""
    import os
    import pickle
    log = TypedStreamLog()
    log.step(1, [log.v1(i) for i in range(5)])
    good = log.v1(90)[1]
    log.step(1, [log.v1(i, keyed=False) for i in range(5, 8)]
             + [(None, b"plain text", [], None, "Unknown magic byte", None),
                (None, None, [], None, None, None)])                       # a tombstone
    log.step(1, [log.v2(i) for i in range(10, 14)] + [log.v2(14, header=True)])  # v2 registered
    log.step(1, [log.v2(i) for i in range(15, 18)]
             + [(None, good[:7], [], None, "", None)], new_segment=True)   # truncated
    log.step("between", [log.v2(20), log.v2(21), log.v1(22, keyed=False)])
    log.step(2, [log.v2(23), log.v2(24)])
    with open(os.path.join(work, "steps.pickle"), "wb") as fh:
        pickle.dump(log.steps, fh)
    ids = {s: [log.client.get_version(s, v).schema_id for v in sorted(log.client.get_versions(s))]
           for s in log.client.get_subjects()}
    return log, ids
