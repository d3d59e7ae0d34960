"""Tagged fields, every one of every schema set at every version, as Kafka's generated code reads and
writes them: absent (the default), at the default (not written), another value (written, read back), and
null where nullable (a nullable struct's marker inside a tagged field is an unsigned varint, 0 for null;
a null whose default is not null is written as the tag, size 1 and that 0). And issue 49's reproducer: a
consumer-protocol member's ``classicMemberMetadata`` written by a 4.4 broker as one byte ``00``."""
import base64

import pytest

import kafkarec
from kafkarec import _core, internal
from kafkarec.internal import dumplog, schema

SETS = ("current", "1eb7644")

# issue 49: a KIP-848 member (consumer protocol: classicMemberMetadata null), as a Kafka 4.4.0 broker wrote it
MEMBER_KEY = bytes.fromhex("0005000d6b69703834382d6f72646572730016544a7052543769755463534451385857647666774c51")
MEMBER_VALUE = bytes.fromhex("000000077261636b2d61076b3834382d310b2f3132372e302e302e3103076576656e7473076f72646572"
                             "7301000493e00001000100")
MEMBER = {"instanceId": None, "rackId": "rack-a", "clientId": "k848-1", "clientHost": "/127.0.0.1",
          "subscribedTopicNames": ["events", "orders"], "subscribedTopicRegex": "", "rebalanceTimeoutMs": 300000,
          "serverAssignor": None, "classicMemberMetadata": None}


def _other(f, kind, elem=False):
    """A value of field `f` (of `kind`) other than its default."""
    if kind == schema.KM_ARRAY:
        return [_other(f, f.elem_kind, elem=True)]
    if kind == schema.KM_STRUCT:
        return {g.name: _other(g, g.kind) for g in f.struct.fields}
    d = None if elem else f.default
    if kind == schema._BOOL:
        return not d
    if kind in schema._INT_RANGES:
        return 7 if d != 7 else 8
    if kind == schema._FLOAT64:
        return 2.5
    if kind == schema._STRING:
        return "tagged-✓"
    if kind == schema._BYTES:
        return b"\x00\xff"
    if kind == schema._UUID:
        return base64.urlsafe_b64encode(bytes(range(1, 17)))[:22].decode()
    raise AssertionError(kind)


def _base(st):
    """An object of plan `st` with every plain field set (arrays of structs with one element, so that the
    tagged fields of the element's struct have somewhere to be) and no tagged field."""
    out = {}
    for f in st.fields:
        if f.kind == schema.KM_ARRAY and f.elem_kind == schema.KM_STRUCT:
            out[f.name] = [_base(f.struct)]
        elif f.kind == schema.KM_STRUCT:
            out[f.name] = _base(f.struct)
        else:
            out[f.name] = _other(f, f.kind)
    return out


def _tagged_paths(st, path=()):
    """(path, field) of every tagged field reachable in plan `st`; a path is field names and array index 0."""
    for f in st.tagged_fields:
        yield path + (f.name,), f
    for f in st.fields:
        if f.kind == schema.KM_STRUCT:
            yield from _tagged_paths(f.struct, path + (f.name,))
        elif f.kind == schema.KM_ARRAY and f.elem_kind == schema.KM_STRUCT:
            yield from _tagged_paths(f.struct, path + (f.name, 0))


def _at(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def _set(obj, path, value):
    _at(obj, path[:-1])[path[-1]] = value


def _cases():
    for k in SETS:
        for m in schema.messages(k).values():
            for v in m.valid_versions:
                st = schema.plan(m.name, v, schemas=k)
                for path, f in _tagged_paths(st):
                    yield pytest.param(k, m.name, v, path, id=f"{k}-{m.name}-v{v}-{'.'.join(map(str, path))}")


CASES = list(_cases())


def test_the_cases_cover_every_tagged_field():
    names = {(c.values[1], c.values[3][-1]) for c in CASES}
    # plain and nested (inside array elements), nullable structs, arrays and strings, scalars
    for want in (("ConsumerGroupMemberMetadataValue", "classicMemberMetadata"),
                 ("ConsumerGroupCurrentMemberAssignmentValue", "assignmentEpochs"),
                 ("StreamsGroupMetadataValue", "lastAssignmentConfigs"), ("PartitionChangeRecord", "isr"),
                 ("TransactionLogValue", "clientTransactionVersion"), ("AbortTransactionRecord", "reason"),
                 ("RegisterBrokerRecord", "cordonedLogDirs"), ("OffsetCommitValue", "topicId")):
        assert want in names
    assert len(CASES) > 60


@pytest.mark.parametrize("k,name,version,path", CASES)
def test_tagged_field(k, name, version, path):
    st = schema.plan(name, version, schemas=k)
    f = dict(_tagged_paths(st))[path]
    obj = _base(st)
    absent = schema.encode(name, version, obj, schemas=k)

    def read(data, json=False):
        return _core.kmsg_decode(schema.plan(name, version, json, schemas=k), data, json=json, strict=True,
                                 exact=True)[0]

    # absent: its default (Kafka's no-argument constructor), left out of Kafka's JSON view
    assert _at(read(absent), path) == f.default
    assert path[-1] not in _at(read(absent, json=True), path[:-1])
    # at its default: not written
    if f.has_default:
        _set(obj, path, f.default)
        assert schema.encode(name, version, obj, schemas=k) == absent
    # another value: written and read back, and in the JSON view
    value = _other(f, f.kind)
    _set(obj, path, value)
    data = schema.encode(name, version, obj, schemas=k)
    assert len(data) > len(absent)
    assert _at(read(data), path) == value
    assert path[-1] in _at(read(data, json=True), path[:-1])
    if not f.nullable:
        return
    # null: a null default is not written; any other default makes Kafka write the tag, size 1 and 0 (the
    # compact null of a string, bytes or array, and a nullable struct's null marker in a tagged field)
    _set(obj, path, None)
    data = schema.encode(name, version, obj, schemas=k)
    if f.has_default and f.default is None:
        assert data == absent
        return
    tag = _core.kmsg_encode_uvarint(f.tag)
    assert len(data) == len(absent) + len(tag) + 2 and tag + b"\x01\x00" in data
    assert _at(read(data), path) is None
    assert _at(read(data, json=True), path) is None   # not its default: Kafka's JSON writes it


def test_a_tagged_nullable_struct_marker_is_an_unsigned_varint():
    """Kafka reads the marker of a nullable struct in a tagged field with readUnsignedVarint() <= 0: 0 (and
    an int past Integer.MAX) is null, any other count is present."""
    st = schema.plan("ConsumerGroupMemberMetadataValue", 0)
    head = MEMBER_VALUE[2:-4]                       # the plain fields; then 1 tagged field, tag 0
    struct = bytes.fromhex("0001d4c0" "01" "00")   # sessionTimeoutMs 120000, no protocols, no tagged fields
    present = {"sessionTimeoutMs": 120000, "supportedProtocols": []}
    for marker, body, want in ((b"\x00", b"", None),
                               (b"\x80\x80\x80\x80\x08", b"", None),      # 2**31 as Java's int: negative
                               (b"\x01", struct, present),
                               (b"\x02", struct, present)):
        field = marker + body
        data = head + b"\x01\x00" + _core.kmsg_encode_uvarint(len(field)) + field
        got, _end = _core.kmsg_decode(st, data, exact=True)
        assert got["classicMemberMetadata"] == want


def test_issue_49_consumer_protocol_member_decodes():
    rec = internal.decode("__consumer_offsets", MEMBER_KEY, MEMBER_VALUE)
    assert rec.record_type == "ConsumerGroupMemberMetadata"
    assert rec.key == {"groupId": "kip848-orders", "memberId": "TJpRT7iuTcSDQ8XWdvfwLQ"}
    assert rec.value == MEMBER
    strict = internal.decode("__consumer_offsets", MEMBER_KEY, MEMBER_VALUE, strict=True, json=True)
    assert strict.value == MEMBER                   # null is not the default: Kafka's JSON writes it
    # written back as the broker wrote it
    assert internal.encode("ConsumerGroupMemberMetadataValue", 0, MEMBER) == MEMBER_VALUE[2:]
    assert dumplog.format_record("__consumer_offsets", MEMBER_KEY, MEMBER_VALUE, offset=0).endswith(
        '"serverAssignor":null,"classicMemberMetadata":null}}')


def test_issue_49_migrated_member_still_decodes():
    """A classic member migrated to a consumer group: its struct is there (marker 1, then the struct)."""
    classic = {"sessionTimeoutMs": 45000,
               "supportedProtocols": [{"name": "range", "metadata": b"\x00\x03sub"}]}
    value = dict(MEMBER, classicMemberMetadata=classic)
    body = internal.encode("ConsumerGroupMemberMetadataValue", 0, value)
    struct = internal.encode("ConsumerGroupMemberMetadataValue", 0, MEMBER)[:-4]   # up to the tagged fields
    assert body.startswith(struct + b"\x01\x00")    # one tagged field, tag 0, then its size and marker 1
    assert body[len(struct) + 3] == 1
    rec = internal.decode("__consumer_offsets", MEMBER_KEY, b"\x00\x00" + body, strict=True)
    assert rec.value == value


def test_issue_49_consumer_offsets_segment_reads_whole():
    """`to_arrow(decode="consumer_offsets")` over a partition holding the member record reads every row."""
    commit_key, commit_value = internal.encode_record(
        "__consumer_offsets", "OffsetCommit", {"group": "kip848-orders", "topic": "orders", "partition": 0},
        {"offset": 5, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1_700_000_000_000}, 3)
    data = kafkarec.build_batch([MEMBER_VALUE, commit_value], [MEMBER_KEY, commit_key],
                                [1_700_000_000_000, 1_700_000_000_001])
    table = kafkarec.to_arrow(data, decode="consumer_offsets")
    rows = table.select(["recordType", "recordTypeName", "group", "committedOffset", "tombstone"]).to_pylist()
    assert rows == [
        {"recordType": 5, "recordTypeName": "ConsumerGroupMemberMetadata", "group": "kip848-orders",
         "committedOffset": None, "tombstone": False},
        {"recordType": 1, "recordTypeName": "OffsetCommit", "group": "kip848-orders", "committedOffset": 5,
         "tombstone": False}]
    strict = kafkarec.to_arrow(data, decode="consumer_offsets", strict=True, strict_types=True)
    assert strict.num_rows == 2


def _variants(k, name, version, path):
    """(label, object) of a message whose tagged field at `path` is absent, another value, and null."""
    st = schema.plan(name, version, schemas=k)
    f = dict(_tagged_paths(st))[path]
    out = [("absent", _base(st))]
    for label, value in (("value", _other(f, f.kind)),) + ((("null", None),) if f.nullable else ()):
        obj = _base(st)
        _set(obj, path, value)
        out.append((label, obj))
    return out


def test_kafkas_generated_classes_read_and_write_every_tagged_field():
    """Kafka's own generated class of each message (the Kafka the tests run, tests/java/KafkaMessageOracle.java)
    given each object (every tagged field of the current schemas absent, another value, null) writes the bytes
    kafkarec writes for it; reads what kafkarec writes, writes back the same bytes, and its JsonConverter
    writes what kafkarec's JSON view holds."""
    import json
    import subprocess
    from support.jvm import classpath
    from support.paths import ROOT
    from support.java import compiled
    from support import versions
    program = compiled(f"{ROOT}/tests/java/KafkaMessageOracle.java", classpath("jvm/kafka"))
    # fields newer than the tests' Kafka: its class keeps them as unknown tags (same bytes), its JSON lacks them
    newer = {"storedDescriptionTopologyEpoch", "failedDescriptionTopologyEpoch"} if versions.KAFKA < "4.4" else set()
    requests, expected = [], []
    for case in CASES:
        k, name, version, path = case.values
        if k != "current":
            continue
        for label, obj in _variants(k, name, version, path):
            data = schema.encode(name, version, obj)
            view = _core.kmsg_decode(schema.plan(name, version, True), data, json=True, exact=True)[0]
            text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False,
                              default=lambda b: base64.b64encode(b).decode())
            for request in ((f"{name} {version} json {text}",) if path[-1] not in newer else ()) + (
                    f"{name} {version} hex {data.hex()}",):
                requests.append(request)
                expected.append((case.id, label + request.split()[2], path, data, view))
    proc = subprocess.run(program.command(jvm_flags=["-XX:+UseSerialGC", "-Xmx256m"]), text=True,
                          input="".join(r + "\n" for r in requests), capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == len(requests)
    for (case_id, label, path, data, view), answer in zip(expected, answers):
        assert "error" not in answer, (case_id, label, answer)
        assert bytes.fromhex(answer["bytes"]) == data, (case_id, label)
        if path[-1] in newer:
            view = json.loads(json.dumps(view))
            _at(view, path[:-1]).pop(path[-1], None)
        assert answer["json"] == json.loads(json.dumps(view)), (case_id, label)
