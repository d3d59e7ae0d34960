"""to_arrow(..., decode=...): typed columns equal what the record-by-record API decodes, on Kafka's bytes."""
import glob
import os
import struct

import pytest

pa = pytest.importorskip("pyarrow")

from kafkarec import internal
from kafkarec.errors import InternalRecordError, UnknownRecordTypeError
from kafkarec.internal import columns
from support.logs.internal_fixtures import DATA

OFFSETS_LOGS = sorted(glob.glob(os.path.join(DATA, "logs", "__consumer_offsets-*", "*.log")))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("path", OFFSETS_LOGS, ids=[os.path.basename(os.path.dirname(p)) for p in OFFSETS_LOGS])
def test_consumer_offsets_columns_match_record_decoding(path):
    t = columns.to_arrow(_read(path), decode="consumer_offsets", schemas="1eb7644")
    assert t.num_rows > 0
    for row in t.to_pylist():
        rec = internal.decode("__consumer_offsets", row["key"], row["value"], schemas="1eb7644")
        assert row["recordType"] == struct.unpack(">h", row["key"][:2])[0]
        assert row["recordTypeName"] == rec.record_type
        assert row["tombstone"] == rec.tombstone
        assert row["valueVersion"] == (None if rec.tombstone else rec.value_version)
        if rec.key is not None:
            assert row["group"] == rec.key.get("group", rec.key.get("groupId"))
        if rec.record_type == "OffsetCommit":
            assert (row["committedTopic"], row["committedPartition"]) == (rec.key["topic"], rec.key["partition"])
        else:
            assert row["committedTopic"] is None and row["committedPartition"] is None
        if rec.record_type == "OffsetCommit" and not rec.tombstone and not rec.unknown:
            v = rec.value
            assert (row["committedOffset"], row["leaderEpoch"], row["metadata"], row["commitTimestamp"],
                    row["expireTimestamp"]) == (v["offset"], v.get("leaderEpoch", -1), v["metadata"],
                                                v["commitTimestamp"], v.get("expireTimestamp", -1))
        else:
            assert row["committedOffset"] is None and row["metadata"] is None


def test_strictness_and_malformed_records():
    import kafkarec
    b = kafkarec.RecordBatchBuilder(base_offset=7)
    b.append(b"\x00\x00", key=struct.pack(">h", 99) + b"x", timestamp=1)
    data = b.build()
    t = columns.to_arrow(data, decode="consumer_offsets")
    assert t.column("recordTypeName").to_pylist() == ["Unknown"] and t.column("group").to_pylist() == [None]
    with pytest.raises(UnknownRecordTypeError, match="offset 7"):
        columns.to_arrow(data, decode="consumer_offsets", strict=True)
    b = kafkarec.RecordBatchBuilder(base_offset=8)
    b.append(b"\x00\x03" + b"\x00" * 5, key=struct.pack(">hh", 1, 1) + b"g" + struct.pack(">h", 1) + b"t"
             + struct.pack(">i", 0), timestamp=1)
    with pytest.raises(InternalRecordError, match="offset 8: OffsetCommitValue: offset needs 8 bytes") as ei:
        columns.to_arrow(b.build(), decode="consumer_offsets")
    assert ei.value.position == 2            # in the value: right after its version
    # invalid UTF-8 in a group name: replaced as Java's String does, as the record API does
    b = kafkarec.RecordBatchBuilder()
    key = struct.pack(">hh", 2, 3) + b"a\xffb"
    b.append(None, key=key, timestamp=1)
    t = columns.to_arrow(b.build(), decode="consumer_offsets")
    assert t.column("group").to_pylist() == [internal.decode("__consumer_offsets", key, None).key["group"]]


@pytest.mark.parametrize("topic", ["__cluster_metadata", "__transaction_state", "__share_group_state",
                                   "__remote_log_metadata"])
def test_other_topics_columns(topic):
    from kafkarec.internal.dumplog import java_json
    paths = sorted(glob.glob(os.path.join(DATA, "logs", topic + "-*", "*.log")))
    assert paths
    for path in paths:
        t = columns.to_arrow(_read(path), decode=topic, schemas="1eb7644")
        for row in t.to_pylist():
            rec = internal.decode(topic, row["key"], row["value"], json=True, schemas="1eb7644")
            assert row["recordTypeName"] == rec.record_type
            assert row["decodedValue"] == (None if rec.value is None else java_json(rec.value))
            assert row["decodedKey"] == (None if rec.key is None else java_json(rec.key))


def test_corrupted_offset_commits_give_typed_errors_or_the_record_apis_answer():
    import random
    import kafkarec
    from kafkarec.errors import DecodeError
    rng = random.Random(5)
    base = []
    for path in OFFSETS_LOGS:
        t = kafkarec.to_arrow(_read(path))
        base += [(k, v) for k, v in zip(t.column("key").to_pylist(), t.column("value").to_pylist())]
    agreed = raised = 0
    for _ in range(3000):
        k, v = rng.choice(base)
        k = bytearray(k)
        v = None if v is None else bytearray(v)
        target = v if v and rng.random() < 0.6 else k
        for _ in range(rng.randrange(1, 3)):
            target[rng.randrange(len(target))] = rng.randrange(256)
        if rng.random() < 0.2:
            del target[rng.randrange(len(target)):]
        data = kafkarec.build_batch([None if v is None else bytes(v)], [bytes(k)], [1])
        try:
            row = columns.to_arrow(data, decode="consumer_offsets", schemas="1eb7644").to_pylist()[0]
        except DecodeError:
            raised += 1
            continue
        try:
            rec = internal.decode("__consumer_offsets", bytes(k), None if v is None else bytes(v), schemas="1eb7644")
        except DecodeError:
            continue                     # the columns read fewer fields than the record API checks
        if rec.record_type == "OffsetCommit" and rec.value is not None and not rec.unknown:
            assert (row["group"], row["committedTopic"], row["committedPartition"], row["committedOffset"],
                    row["metadata"]) == (rec.key["group"], rec.key["topic"], rec.key["partition"],
                                         rec.value["offset"], rec.value["metadata"])
            agreed += 1
    assert agreed > 100 and raised > 100


@pytest.mark.parametrize("decode", ["consumer_offsets", "transaction_state", "share_group_state",
                                    "cluster_metadata", "remote_log_metadata"])
def test_decoded_schema_is_what_decoding_appends(decode):
    topic = internal.decoder_for(decode)
    path = sorted(glob.glob(os.path.join(DATA, "logs", topic + "-*", "*.log")))[0]
    t = columns.to_arrow(_read(path), decode=decode, schemas="1eb7644")
    schema = columns.decoded_schema(decode, schemas="1eb7644")
    assert t.schema.names[-len(schema):] == schema.names
    assert all(t.schema.field(n).type == schema.field(n).type for n in schema.names)


def _offsets_batch(key, value, base_offset=0):
    import kafkarec
    return kafkarec.build_batch([value], [key], [1], base_offset=base_offset)


def _commit(metadata=b"", trailing=b"", version=3):
    key = struct.pack(">hh", 1, 1) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 0)
    value = (struct.pack(">hqi", version, 42, 7) + struct.pack(">h", len(metadata)) + metadata
             + struct.pack(">q", 5) + trailing)
    return key, value


@pytest.mark.parametrize("name, kv", [
    ("invalid UTF-8 in metadata", _commit(metadata=b"a\xed\xa0\x80b")),
    ("bytes after the value", _commit(trailing=b"\x00\x01")),
    ("bytes after the key", (_commit()[0] + b"\x00", _commit()[1])),
])
def test_strict_columns_refuse_what_strict_decode_refuses(name, kv):
    """strict means the same on both paths: the columns come from the plans internal.decode uses."""
    key, value = kv
    data = _offsets_batch(key, value, base_offset=9)
    lenient = columns.to_arrow(data, decode="consumer_offsets").to_pylist()[0]
    rec = internal.decode("__consumer_offsets", key, value)
    assert (lenient["metadata"], lenient["committedOffset"]) == (rec.value["metadata"], 42)
    with pytest.raises(InternalRecordError) as strict_decode:
        internal.decode("__consumer_offsets", key, value, strict=True)
    with pytest.raises(InternalRecordError, match="record at offset 9") as strict_columns:
        columns.to_arrow(data, decode="consumer_offsets", strict=True)
    assert strict_decode.value.reason in strict_columns.value.reason
    assert strict_decode.value.position == strict_columns.value.position
    assert not isinstance(strict_columns.value, UnknownRecordTypeError)


def test_strict_format_and_strict_types_are_separate_options():
    unknown_type = (struct.pack(">h", 99) + b"x", b"\x00\x00")
    data = _offsets_batch(*unknown_type)
    # strict format alone: an unknown type is still named Unknown
    t = columns.to_arrow(data, decode="consumer_offsets", strict=True, strict_types=False)
    assert t.column("recordTypeName").to_pylist() == ["Unknown"]
    assert internal.decode("__consumer_offsets", *unknown_type, strict=True, strict_types=False).unknown
    # strict types alone: refused, while invalid UTF-8 is replaced as Java does
    with pytest.raises(UnknownRecordTypeError):
        columns.to_arrow(data, decode="consumer_offsets", strict_types=True)
    key, value = _commit(metadata=b"\xff")
    row = columns.to_arrow(_offsets_batch(key, value), decode="consumer_offsets", strict_types=True).to_pylist()[0]
    assert row["metadata"] == "\ufffd"


def test_a_value_version_without_schema_is_not_read_with_another_layout():
    """OffsetCommitValue versions come from the schema: a version past it is Unknown's (or refused), never read
    with the last known layout."""
    key, value = _commit(version=5)
    row = columns.to_arrow(_offsets_batch(key, value), decode="consumer_offsets").to_pylist()[0]
    assert (row["recordTypeName"], row["valueVersion"], row["committedOffset"]) == ("OffsetCommit", 5, None)
    assert internal.decode("__consumer_offsets", key, value).unknown
    with pytest.raises(UnknownRecordTypeError, match="OffsetCommitValue has no version 5"):
        columns.to_arrow(_offsets_batch(key, value), decode="consumer_offsets", strict=True)


@pytest.mark.parametrize("decode", ["cluster_metadata", "remote_log_metadata"])
@pytest.mark.parametrize("value", [b"\x01\x80\x80\x02\x00", b"\x01\x00\x80\x80\x02"], ids=["api key", "version"])
def test_api_key_or_version_past_int16_is_refused_as_kafka_does(decode, value):
    """Kafka's MetadataRecordSerde reads both as unsigned varints and refuses what does not fit a short
    ("Value for API key was too large"): a typed error, on both paths, strict or not."""
    import kafkarec
    data = kafkarec.build_batch([value], None, [1], base_offset=3)
    for strict in (False, True):
        with pytest.raises(InternalRecordError, match="past 32767"):
            internal.decode(decode, None, value, strict=strict)
        with pytest.raises(InternalRecordError, match="past 32767"):
            kafkarec.to_arrow(data, decode=decode, strict=strict)
    # 32767 itself fits the int16 column (an unknown api key)
    ok = kafkarec.build_batch([b"\x01\xff\xff\x01\x00"], None, [1])
    assert kafkarec.to_arrow(ok, decode=decode).column("apiKey").to_pylist() == [32767]
