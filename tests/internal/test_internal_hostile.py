"""Hostile internal-topic bytes: typed errors with positions, no allocation by a lying count, no crash."""
import random
import struct
import time

import pytest

from kafkarec import _core, internal
from kafkarec.errors import DecodeError, InternalRecordError, UnknownRecordTypeError
from kafkarec.internal import schema
from support.logs.internal_fixtures import expected_files, load, records


def _fixture_records():
    out = []
    for path in expected_files():
        exp = load(path)
        for r, e, _b in records(exp):
            if not e["control"]:
                out.append((exp["topic"], r.key, r.value))
    return out


RECORDS = _fixture_records()


def test_every_truncation_of_every_fixture_record_is_a_typed_error():
    n = 0
    for topic, key, value in RECORDS:
        rec = internal.decode(topic, key, value, schemas="1eb7644")
        if rec.unknown:
            continue
        framed_value = topic in ("__cluster_metadata", "__remote_log_metadata")
        data = value if framed_value else key
        for cut in range(len(data)):
            with pytest.raises(InternalRecordError) as ei:
                if framed_value:
                    internal.decode(topic, key, data[:cut], schemas="1eb7644")
                else:
                    internal.decode(topic, data[:cut], value, schemas="1eb7644")
            assert 0 <= ei.value.position <= cut
            n += 1
        if value is not None and not framed_value:
            for cut in range(len(value)):
                with pytest.raises(InternalRecordError):
                    internal.decode(topic, key, value[:cut], schemas="1eb7644")
                n += 1
    assert n > 10_000


def test_random_corruption_only_raises_decode_errors():
    rng = random.Random(14)
    decoded = failed = 0
    for _ in range(20_000):
        topic, key, value = rng.choice(RECORDS)
        key = bytearray(key) if key is not None else None
        value = bytearray(value) if value is not None else None
        target = value if value and (key is None or rng.random() < 0.7) else key
        for _ in range(rng.randrange(1, 4)):
            target[rng.randrange(len(target))] = rng.randrange(256)
        for strict, schemas in ((False, "current"), (True, "1eb7644")):
            try:
                internal.decode(topic, key, value, strict=strict, schemas=schemas)
                decoded += 1
            except DecodeError as e:
                assert isinstance(e, InternalRecordError)
                failed += 1
    assert decoded and failed


@pytest.mark.parametrize("count", [0x7FFFFFFF, 1 << 20])
def test_lying_array_count_fails_before_reading(count):
    # GroupMetadataValue v0 (not flexible): protocolType, generation, protocol, leader, members count
    head = struct.pack(">h", 0) + b"\x00\x08consumer" + struct.pack(">i", 1) + b"\xff\xff\xff\xff"
    value = head + struct.pack(">i", count) + b"\x00" * 16
    t = time.perf_counter()
    with pytest.raises(InternalRecordError, match="cannot fit") as ei:
        internal.decode("__consumer_offsets", struct.pack(">hh", 2, 1) + b"g", value)
    assert time.perf_counter() - t < 0.5
    assert ei.value.position == len(head)


def test_lying_compact_counts_and_lengths():
    # PartitionChangeRecord v0 (flexible): partitionId, topicId, then tagged fields
    body = struct.pack(">i", 0) + b"\x01" * 16
    frame = b"\x01\x05\x00"
    # 2^31 tagged fields
    with pytest.raises(InternalRecordError, match="tagged fields cannot fit"):
        internal.decode("__cluster_metadata", None, frame + body + b"\xff\xff\xff\xff\x07")
    # a tagged isr whose compact array says 2^28 elements in a 5-byte field
    tagged = b"\x01" + b"\x00" + b"\x05" + b"\x80\x80\x80\x80\x01"
    with pytest.raises(InternalRecordError, match="cannot fit"):
        internal.decode("__cluster_metadata", None, frame + body + tagged)
    # a tagged field longer than what is left
    with pytest.raises(InternalRecordError, match="size 100"):
        internal.decode("__cluster_metadata", None, frame + body + b"\x01\x00\x64\x00")
    # a varint of 6 bytes
    with pytest.raises(InternalRecordError, match="unsigned varint is too long"):
        internal.decode("__cluster_metadata", None, frame + body + b"\x81\x81\x81\x81\x81\x01")
    # a frame whose varints run off the end
    with pytest.raises(InternalRecordError, match="unsigned varint runs past the end"):
        internal.decode("__cluster_metadata", None, b"\x01\x85")


def test_string_length_past_the_end_and_negative_lengths():
    key = struct.pack(">hh", 1, 50) + b"short"
    with pytest.raises(InternalRecordError, match="length 50") as ei:
        internal.decode("__consumer_offsets", key, None)
    assert ei.value.position == 2
    with pytest.raises(InternalRecordError, match="string length -2"):
        internal.decode("__consumer_offsets", struct.pack(">hh", 1, -2), None)
    # null in a non-nullable string
    with pytest.raises(InternalRecordError, match="non-nullable field group was serialized as null"):
        internal.decode("__consumer_offsets", struct.pack(">hh", 1, -1), None)


def test_unknown_types_and_versions():
    rec = internal.decode("__consumer_offsets", struct.pack(">h", 99) + b"xyz", b"\x00\x00")
    assert rec.unknown and rec.record_type == "Unknown" and rec.key_version == 99
    assert rec.raw_key == struct.pack(">h", 99) + b"xyz" and rec.raw_value == b"\x00\x00"
    with pytest.raises(UnknownRecordTypeError, match="unknown record type 99"):
        internal.decode("__consumer_offsets", struct.pack(">h", 99) + b"xyz", b"\x00\x00", strict=True)
    k, _ = internal.encode_record("__consumer_offsets", "OffsetCommit", {"group": "g", "topic": "t",
                                                                        "partition": 0}, None)
    rec = internal.decode("__consumer_offsets", k, struct.pack(">h", 42) + b"\x00" * 30)
    assert rec.unknown and rec.record_type == "OffsetCommit" and rec.value_version == 42 and rec.key
    with pytest.raises(UnknownRecordTypeError):
        internal.decode("__consumer_offsets", k, struct.pack(">h", 42), strict=True)
    rec = internal.decode("__cluster_metadata", None, b"\x01\x63\x00")
    assert rec.unknown and rec.api_key == 99
    with pytest.raises(UnknownRecordTypeError):
        internal.decode("__cluster_metadata", None, b"\x01\x63\x00", strict=True)
    rec = internal.decode("__cluster_metadata", None, b"\x02\x02\x00")
    assert rec.unknown
    with pytest.raises(UnknownRecordTypeError, match="frame version 2"):
        internal.decode("__cluster_metadata", None, b"\x02\x02\x00", strict=True)
    with pytest.raises(ValueError, match="not an internal topic"):
        internal.decode("orders", b"", b"")


def test_strict_mode_rules():
    # invalid UTF-8: replaced by default (as Java's String does), refused in strict mode
    key = struct.pack(">hh", 2, 2) + b"\xff\xfe"
    assert internal.decode("__consumer_offsets", key, None).key == {"group": "\ufffd\ufffd"}
    with pytest.raises(InternalRecordError, match="UTF-8"):
        internal.decode("__consumer_offsets", key, None, strict=True)
    # a tagged field twice; a tagged field whose declared size is larger than its content
    frame = b"\x01\x05\x00" + struct.pack(">i", 0) + b"\x01" * 16
    twice = frame + b"\x02" + b"\x01\x04" + struct.pack(">i", 3) + b"\x01\x04" + struct.pack(">i", 4)
    assert internal.decode("__cluster_metadata", None, twice).value["leader"] == 4
    with pytest.raises(InternalRecordError, match="appears twice"):
        internal.decode("__cluster_metadata", None, twice, strict=True)
    padded = frame + b"\x01" + b"\x01\x05" + struct.pack(">i", 3) + b"\x00"
    assert internal.decode("__cluster_metadata", None, padded).value["leader"] == 3
    with pytest.raises(InternalRecordError, match="5 bytes declared, 4 read"):
        internal.decode("__cluster_metadata", None, padded, strict=True)
    # bytes after the struct
    with pytest.raises(InternalRecordError, match="left after"):
        internal.decode("__cluster_metadata", None, frame + b"\x00" + b"junk", strict=True)
    assert internal.decode("__cluster_metadata", None, frame + b"\x00" + b"junk").value["partitionId"] == 0


def test_unknown_tagged_fields_are_skipped():
    k, v = internal.encode_record("__cluster_metadata", "TOPIC_RECORD", None,
                                  {"name": "orders", "topicId": "ioNpEorxLpqqSK7HcI_9ow"})
    assert v.endswith(b"\x00")
    v2 = v[:-1] + b"\x02" + b"\x64\x03abc" + b"\xc8\x01\x00"   # tags 100 and 200
    assert internal.decode("__cluster_metadata", None, v2, strict=True).value == \
        internal.decode("__cluster_metadata", None, v).value


def test_plan_refuses_unknown_versions():
    with pytest.raises(ValueError, match="no version 9"):
        schema.plan("OffsetCommitValue", 9)
    with pytest.raises(KeyError):
        schema.plan("NoSuchValue", 0)
    with pytest.raises(ValueError):
        _core.kmsg_decode(schema.plan("OffsetCommitKey", 1), b"", 5)
