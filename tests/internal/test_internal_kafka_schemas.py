"""The current schema set against the Kafka the tests run (jvm/kafka): every record type of the internal
topics (the coordinators' CoordinatorRecordType enums, MetadataRecordType) is there with its id and
schemas, and every message at every version has Kafka's fields, kinds, nullability and tags, as Kafka's
generated classes hold them (tests/java/KafkaMessageOracle.java)."""
import json

import pytest

from kafkarec import internal
from kafkarec.internal import schema

from support.paths import ROOT

#: what the current set has that Kafka 4.3 did not: 4.4's StreamsGroupMetadataValue tags 2 and 3, and its
#: UnregisterControllerRecord (metadata record type 29)
NEWER_THAN_43 = {"StreamsGroupMetadataValue": ("storedDescriptionTopologyEpoch", "failedDescriptionTopologyEpoch"),
                 "UnregisterControllerRecord": None}


@pytest.fixture(scope="module")
def kafka():
    from support.jvm import classpath
    from support.java import LineOracle, compiled
    program = compiled(f"{ROOT}/tests/java/KafkaMessageOracle.java", classpath("jvm/kafka"))
    oracle = LineOracle(program.command(jvm_flags=["-XX:+UseSerialGC", "-Xmx256m"]), "KafkaMessageOracle")
    yield lambda requests: [json.loads(a) for a in oracle.ask(requests, timeout=300)]
    oracle.close()


def _describe(fields, version, flexible, skip=()):
    plain, tagged = [], []
    for f in fields:
        if not schema._in(version, f.versions) or f.name in skip:
            continue
        kind = "array" if f.is_array else "struct" if f.is_struct else f.type
        text = kind + ("?" if schema._in(version, f.nullable) else "")
        if f.is_array:
            elem = f.base_type if not f.is_struct else "struct" + _describe(f.fields, version, flexible)
            text += f"[{elem}]"
        elif f.is_struct:
            text += _describe(f.fields, version, flexible)
        if flexible and schema._in(version, f.tagged):
            tagged.append((f.tag, f"{f.name.lower()}@{f.tag}:{text}"))
        else:
            plain.append(f"{f.name.lower()}:{text}")
    return "{" + ",".join(plain + [t for _, t in sorted(tagged)]) + "}"


def test_every_record_type_of_kafka_is_known(kafka):
    from support import versions
    (types,) = kafka(["types"])
    for topic in ("__consumer_offsets", "__share_group_state", "__transaction_state"):
        ours = internal.record_types(topic)
        for type_id, key_class, value_class in types[topic]:
            assert type_id in ours, (topic, type_id, key_class)
            assert (ours[type_id].key_schema, ours[type_id].value_schema) == (key_class, value_class)
    ours = internal.record_types("__cluster_metadata")
    for type_id, value_class in types["__cluster_metadata"]:
        assert ours[type_id].value_schema == value_class, (type_id, value_class)
    assert len(types["__consumer_offsets"]) >= 22
    assert len(types["__cluster_metadata"]) >= (27 if versions.KAFKA >= "4.4" else 26)


def test_every_message_has_kafkas_fields(kafka):
    """Field names compared without case (Kafka's SCHEMAS hold snake_case names: ``kraft_version`` for JSON's
    ``kRaftVersion``)."""
    from support import versions
    older = versions.KAFKA < "4.4"
    messages = [m for m in schema.messages("current").values()
                if not (older and m.name in NEWER_THAN_43 and NEWER_THAN_43[m.name] is None)]
    answers = kafka([f"schema {m.name}" for m in messages])
    for m, answer in zip(messages, answers):
        assert "error" not in answer, (m.name, answer)
        assert tuple(answer["versions"]) == m.versions, m.name
        skip = (NEWER_THAN_43.get(m.name) or ()) if older else ()
        for v in m.valid_versions:
            got = "struct" + _describe(m.fields, v, schema._in(v, m.flexible), skip)
            assert got == answer["schemas"][str(v)].lower(), (m.name, v)
