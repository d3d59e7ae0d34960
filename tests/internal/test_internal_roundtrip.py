"""Every message of every schema set, at every version: encode -> decode gives the object back; framed
records of every record type of every internal topic round-trip through encode_record/decode."""
import random

import pytest

from kafkarec import _core, internal
from kafkarec.internal import schema

SETS = ("current", "1eb7644")
ALL = [(k, m.name, v) for k in SETS for m in schema.messages(k).values() for v in m.valid_versions]


def _value(f, kind, version, rng, elem=False):
    nullable = (not elem) and f.nullable
    if nullable and rng.random() < 0.2:
        return None
    if kind == schema.KM_ARRAY:
        return [_value(f, f.elem_kind, version, rng, elem=True) for _ in range(rng.randrange(0, 4))]
    if kind == schema.KM_STRUCT:
        return _sample(f.struct, rng)
    if kind == 1:
        return rng.random() < 0.5
    if kind in schema._INT_RANGES:
        lo, hi = schema._INT_RANGES[kind]
        return rng.choice([lo, hi - 1, 0, -1 if lo < 0 else 1, rng.randrange(lo, hi)])
    if kind == 8:
        return rng.choice([0.5, -1e-4, 1048576.0, 3.25])
    if kind == 9:
        return rng.choice(["", "orders", "grüße-✓", "x" * 300])
    if kind == 10:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 20)))
    if kind == 11:
        import base64
        return base64.urlsafe_b64encode(bytes(rng.randrange(256) for _ in range(16)))[:22].decode()
    raise AssertionError(kind)


def _sample(plan, rng):
    out = {}
    for f in plan.fields + plan.tagged_fields:
        out[f.name] = _value(f, f.kind, plan.version, rng)
    return {k: out[k] for k in plan.order}


def test_every_schema_set_is_present():
    import importlib
    from kafkarec.internal import schemas
    for k in SETS:
        package = importlib.import_module(schemas.profile_package(k))
        assert {m.schema_set for m in schema.messages(k).values()} == set(package.SETS)
    names = set(schema.messages("current"))
    # current Kafka's group types (consumer, share, streams groups), regular expressions, and the rest
    for n in ("ConsumerGroupMetadataValue", "ConsumerGroupRegularExpressionValue", "StreamsGroupTopologyValue",
              "StreamsGroupCurrentMemberAssignmentValue", "ShareGroupStatePartitionMetadataValue", "ShareUpdateValue",
              "LegacyOffsetCommitValue", "TransactionLogValue", "PartitionChangeRecord", "ClearElrRecord",
              "UnregisterControllerRecord", "RemoteLogSegmentMetadataSnapshotRecord", "VotersRecord",
              "ConsumerProtocolSubscription"):
        assert n in names
    types = internal.record_types("__consumer_offsets", "current")
    assert types[17].name == "StreamsGroupMetadata" and types[16].name == "ConsumerGroupRegularExpression"
    assert types[0].name == "LegacyOffsetCommit" and 9 not in types
    old = internal.record_types("__consumer_offsets", "1eb7644")
    assert old[0].name == old[1].name == "OffsetCommit" and 16 not in old
    assert len(ALL) >= 200


@pytest.mark.parametrize("schemas,name,version", ALL, ids=[f"{k}-{n}-v{v}" for k, n, v in ALL])
def test_roundtrip(schemas, name, version):
    rng = random.Random(f"{name}/{version}")
    plan = schema.plan(name, version, False, schemas)
    for _ in range(8):
        obj = _sample(plan, rng)
        data = schema.encode(name, version, obj, schemas)
        back, end = _core.kmsg_decode(plan, data, strict=True, exact=True)
        assert end == len(data)
        assert back == obj
        # every strict prefix is refused with a typed error carrying a position inside the bytes
        for cut in {0, len(data) // 2, len(data) - 1} if data else ():
            with pytest.raises(internal_errors().InternalRecordError) as ei:
                _core.kmsg_decode(plan, data[:cut], exact=True)
            assert 0 <= ei.value.position <= cut


def internal_errors():
    import kafkarec.errors
    return kafkarec.errors


TOPIC_TYPES = [(k, t, rt) for k in SETS for t in internal.TOPICS for rt in internal.record_types(t, k)]


@pytest.mark.parametrize("schemas,topic,record_type", TOPIC_TYPES, ids=[f"{k}-{t}-{r}" for k, t, r in TOPIC_TYPES])
def test_framed_roundtrip(schemas, topic, record_type):
    kschema, kversion, vschema, name = internal.record_types(topic, schemas)[record_type]
    rng = random.Random(f"{topic}/{record_type}")
    for version in schema.message(vschema, schemas).valid_versions:
        key = _sample(schema.plan(kschema, kversion, False, schemas), rng) if kschema else None
        value = _sample(schema.plan(vschema, version, False, schemas), rng)
        if vschema == "GroupMetadataValue":
            value["protocolType"] = "other"      # keep member bytes as bytes
        k, v = internal.encode_record(topic, record_type, key, value, version, schemas=schemas)
        rec = internal.decode(topic, k, v, strict=True, schemas=schemas)
        assert (rec.record_type, rec.key, rec.value, rec.value_version, rec.unknown) == (name, key, value, version,
                                                                                          False)
        if kschema:
            k2, v2 = internal.encode_record(topic, record_type, key, None, schemas=schemas)
            assert v2 is None
            tomb = internal.decode(topic, k2, None, strict=True, schemas=schemas)
            assert tomb.tombstone and tomb.value is None and tomb.key == key
