"""Control records: writing every type with append_control, decoding them back.

Reference §2: key = ``version int16 | type int16``; ABORT/COMMIT values are
EndTxnMarker ``version int16 | coordinatorEpoch int32``; the KRaft types are
Kafka's generated v0 encodings (flexible: compact arrays/strings and a tagged
field section ending each struct).  Byte layouts below are computed by hand
from the reference, never by kafkarec.  Parse rules (ControlRecordType /
EndTransactionMarker): short key or value and negative versions are
InvalidRecordError, higher versions are read as version 0, trailing bytes are
ignored, unknown type ids are UNKNOWN.
"""

from __future__ import annotations

import base64
import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import Compression, ControlRecordType as CT, EncodeError, InvalidRecordError
from kafkarec._core import RecordBatchBuilder
from kafkarec.control import (encode_control_key, encode_control_value, parse_control_key,
                              parse_control_value, parse_end_txn_marker)

from support.oracles import foreign as F
from support.oracles.builder_checks import assert_encode_error

T0 = 1_700_000_000_000
PRODUCER = {"producer_id": 4242, "producer_epoch": 7}
# Kafka's Uuid text (URL-safe base64 of the 16 bytes, unpadded), as its JSON converters write it
DIR_A_BYTES = uuid.UUID("12345678-1234-5678-1234-567812345678").bytes
DIR_B_BYTES = uuid.UUID("00000000-0000-0000-0000-0000000000ff").bytes
DIR_A = "EjRWeBI0VngSNFZ4EjRWeA"
DIR_B = "AAAAAAAAAAAAAAAAAAAA_w"

VOTERS_VALUE = {"voters": [
    {"voterId": 1, "voterDirectoryId": DIR_A,
     "endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}],
     "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}},
    {"voterId": 2, "voterDirectoryId": DIR_B, "endpoints": [],
     "kRaftVersionFeature": {"minSupportedVersion": 1, "maxSupportedVersion": 1}},
]}


# type -> (value dict, hand-computed value bytes)
VALUES = {
    CT.ABORT: ({"coordinatorEpoch": 7}, b"\x00\x00" + b"\x00\x00\x00\x07"),
    CT.COMMIT: ({"coordinatorEpoch": 2**31 - 1}, b"\x00\x00" + b"\x7f\xff\xff\xff"),
    CT.LEADER_CHANGE: (
        {"leaderId": 3, "voters": [{"voterId": 1}, {"voterId": 3}],
         "grantingVoters": [{"voterId": 3}]},
        b"\x00\x00" + b"\x00\x00\x00\x03"
        + b"\x03" + b"\x00\x00\x00\x01\x00" + b"\x00\x00\x00\x03\x00"
        + b"\x02" + b"\x00\x00\x00\x03\x00"
        + b"\x00"),
    CT.SNAPSHOT_HEADER: ({"lastContainedLogTimestamp": T0},
                         b"\x00\x00" + struct.pack(">q", T0) + b"\x00"),
    CT.SNAPSHOT_FOOTER: ({}, b"\x00\x00\x00"),
    CT.KRAFT_VERSION: ({"kRaftVersion": 1}, b"\x00\x00" + b"\x00\x01" + b"\x00"),
    CT.KRAFT_VOTERS: (
        VOTERS_VALUE,
        b"\x00\x00" + b"\x03"
        + F.voter_bytes(1, DIR_A_BYTES, [(b"CONTROLLER", b"h", 9093)], 0, 1)
        + F.voter_bytes(2, DIR_B_BYTES, [], 1, 1)
        + b"\x00"),
}
MARKERS = (CT.ABORT, CT.COMMIT)


def control_builder(kind, **options):
    if kind in MARKERS:
        options = {**PRODUCER, "is_transactional": True, **options}
    return RecordBatchBuilder(is_control=True, partition_leader_epoch=5, **options)


def single_control(kind, value, **options):
    builder = control_builder(kind, **options)
    assert builder.is_control
    builder.append_control(kind, value, timestamp=T0, offset=options.get("base_offset", 0))
    return builder.build()


def decoded(value: dict) -> dict:
    """What control_value returns: the written dict with version 0 filled in."""
    return {"version": 0, **value}


# ------------------------------------------------ 5. write and decode every type


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.LZ4,
                                   Compression.ZSTD, Compression.SNAPPY], ids=str)
@pytest.mark.parametrize("kind", list(VALUES), ids=lambda k: k.name)
def test_write_and_decode_every_control_type(kind, codec):
    value, value_bytes = VALUES[kind]
    data = single_control(kind, value, compression=codec, base_offset=900)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.is_control and batch.crc_valid
    assert batch.compression is codec
    assert batch.partition_leader_epoch == 5
    assert batch.base_sequence == -1        # allowed for control batches
    if kind in MARKERS:
        assert batch.is_transactional
        assert (batch.producer_id, batch.producer_epoch) == (4242, 7)
    else:
        assert not batch.is_transactional and batch.producer_id == -1
    (record,) = list(batch)
    assert record.offset == 900 and record.timestamp == T0
    assert record.is_control
    assert record.control_type is kind
    assert record.control_type_id == int(kind)
    assert record.control_key_version == 0
    # hand-computed bytes from reference §2.1 / §2.2
    assert record.key == struct.pack(">hh", 0, int(kind))
    assert record.value == value_bytes
    assert record.control_value == decoded(value)
    if kind in MARKERS:
        assert record.coordinator_epoch == value["coordinatorEpoch"]
        assert len(record.value) == 6
    else:
        assert record.coordinator_epoch is None
    assert record.headers == []


@pytest.mark.parametrize("kind", list(VALUES), ids=lambda k: k.name)
def test_control_batches_read_by_kafka_python_and_aiokafka(kind):
    value, _ = VALUES[kind]
    data = single_control(kind, value)
    ours = F.kr_view(data)
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    F.assert_agrees(ours, F.aio_view(data, impl="c"), "aiokafka (_crecords)")
    F.assert_agrees(ours, F.aio_view(data, impl="py"), "aiokafka (pure Python)")
    # kafka-python parses the key itself (ControlRecord): type and version agree
    (_, (rec,)), = F.kp_view(data)
    assert (rec["control_type_id"], rec["control_key_version"]) == (int(kind), 0)


def test_snapshot_header_batch_like_raft_snapshot_writer():
    # RecordsSnapshotWriter: SnapshotHeader, KRaftVersion, Voters in one control batch;
    # the footer in the last batch.
    builder = RecordBatchBuilder(is_control=True, base_offset=0, partition_leader_epoch=3)
    builder.append_control(CT.SNAPSHOT_HEADER, VALUES[CT.SNAPSHOT_HEADER][0], timestamp=T0)
    builder.append_control(CT.KRAFT_VERSION, VALUES[CT.KRAFT_VERSION][0], timestamp=T0)
    builder.append_control(CT.KRAFT_VOTERS, VOTERS_VALUE, timestamp=T0)
    footer = RecordBatchBuilder(is_control=True, base_offset=10, partition_leader_epoch=3)
    footer.append_control(CT.SNAPSHOT_FOOTER, timestamp=T0 + 1)
    data = builder.build() + footer.build()
    got = [(r.offset, r.control_type, r.control_value) for b in kafkarec.iter_batches(data) for r in b]
    assert got == [
        (0, CT.SNAPSHOT_HEADER, decoded(VALUES[CT.SNAPSHOT_HEADER][0])),
        (1, CT.KRAFT_VERSION, decoded(VALUES[CT.KRAFT_VERSION][0])),
        (2, CT.KRAFT_VOTERS, decoded(VOTERS_VALUE)),
        (10, CT.SNAPSHOT_FOOTER, {"version": 0}),
    ]
    F.assert_agrees(F.kr_view(data), F.kp_view(data), "kafka-python")


def test_marker_batch_layout():
    # A COMMIT marker batch as the coordinator writes it: control + transactional, the
    # producer id/epoch of the transaction, base sequence -1.
    data = single_control(CT.COMMIT, {"coordinatorEpoch": 9}, base_offset=42)
    fields = F.v2_fields(data)
    assert fields["attributes"] == 0x20 | 0x10
    assert (fields["producer_id"], fields["producer_epoch"], fields["base_sequence"]) == (4242, 7, -1)
    assert (fields["base_offset"], fields["last_offset_delta"], fields["record_count"]) == (42, 0, 1)
    assert data[61:] == F.encode_record(0, 0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x09")
    assert fields["crc"] == F.crc32c(data[21:])


def test_key_version_is_written_and_read_as_version_0():
    builder = control_builder(CT.COMMIT)
    builder.append_control(CT.COMMIT, {"coordinatorEpoch": 1}, timestamp=T0, key_version=3)
    (record,) = [r for b in kafkarec.iter_batches(builder.build()) for r in b]
    assert record.key == b"\x00\x03\x00\x01"
    assert record.control_key_version == 3
    assert record.control_type is CT.COMMIT
    assert record.coordinator_epoch == 1


def test_value_version_field_round_trips():
    for kind, (value, value_bytes) in VALUES.items():
        encoded = encode_control_value(kind, {**value, "version": 1})
        assert encoded[:2] == b"\x00\x01" and encoded[2:] == value_bytes[2:]
        assert parse_control_value(int(kind), encoded) == {**value, "version": 1}


def test_null_arrays_and_strings_are_refused_both_ways():
    """Every array and string of these messages is non-nullable in Kafka's schemas:
    the encoder refuses null, and the decoder rejects it as Kafka's generated readers do."""
    with pytest.raises(EncodeError, match="cannot be null"):
        encode_control_value(CT.LEADER_CHANGE, {"leaderId": -1, "voters": None, "grantingVoters": []})
    encoded = b"\x00\x00\xff\xff\xff\xff\x00\x01\x00"       # voters: null
    with pytest.raises(InvalidRecordError, match="non-nullable field voters was serialized as null"):
        parse_control_value(int(CT.LEADER_CHANGE), encoded)
    voters = {"voters": [{"voterId": 4, "voterDirectoryId": DIR_A,
                          "endpoints": [{"name": None, "host": "h\u00f6st", "port": 65535}],
                          "kRaftVersionFeature": {"minSupportedVersion": -1,
                                                    "maxSupportedVersion": 32767}}]}
    with pytest.raises(EncodeError, match="cannot be null"):
        encode_control_value(CT.KRAFT_VOTERS, voters)
    encoded = (b"\x00\x00\x02" + struct.pack(">i", 4) + DIR_A_BYTES + b"\x02"
               + b"\x00" + b"\x06h\xc3\xb6st" + b"\xff\xff" + b"\x00"
               + b"\xff\xff\x7f\xff" + b"\x00\x00" + b"\x00")
    with pytest.raises(InvalidRecordError, match="non-nullable field name was serialized as null"):
        parse_control_value(int(CT.KRAFT_VOTERS), encoded)


VOTER = st.fixed_dictionaries({
    "voterId": st.integers(-(2**31), 2**31 - 1),
    "voterDirectoryId": st.uuids().map(lambda u: base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()),
    "endpoints": st.lists(st.fixed_dictionaries({
        "name": st.text(max_size=140), "host": st.text(max_size=20),
        "port": st.integers(0, 65535)}), max_size=3),
    "kRaftVersionFeature": st.fixed_dictionaries({
        "minSupportedVersion": st.integers(-(2**15), 2**15 - 1),
        "maxSupportedVersion": st.integers(-(2**15), 2**15 - 1)}),
})
INT32 = st.integers(-(2**31), 2**31 - 1)
VALUE_STRATEGIES = {
    CT.ABORT: st.fixed_dictionaries({"coordinatorEpoch": INT32}),
    CT.COMMIT: st.fixed_dictionaries({"coordinatorEpoch": INT32}),
    CT.LEADER_CHANGE: st.fixed_dictionaries({
        "leaderId": INT32,
        "voters": st.lists(st.fixed_dictionaries({"voterId": INT32}), max_size=200),
        "grantingVoters": st.lists(st.fixed_dictionaries({"voterId": INT32}), max_size=5)}),
    CT.SNAPSHOT_HEADER: st.fixed_dictionaries({"lastContainedLogTimestamp": st.integers(-(2**63), 2**63 - 1)}),
    CT.SNAPSHOT_FOOTER: st.just({}),
    CT.KRAFT_VERSION: st.fixed_dictionaries({"kRaftVersion": st.integers(-(2**15), 2**15 - 1)}),
    CT.KRAFT_VOTERS: st.fixed_dictionaries({"voters": st.lists(VOTER, max_size=4)}),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(list(VALUES)).flatmap(lambda k: st.tuples(st.just(k), VALUE_STRATEGIES[k])),
       st.sampled_from([Compression.NONE, Compression.GZIP, Compression.ZSTD]))
def test_control_values_round_trip(kind_value, codec):
    kind, value = kind_value
    data = single_control(kind, value, compression=codec)
    (record,) = [r for b in kafkarec.iter_batches(data) for r in b]
    assert record.control_type is kind
    assert record.control_value == decoded(value)


# -------------------------------------------------------------- parse rules


def control_batch_with(key, value, *, attributes=0x20):
    """A control batch around one raw record, built by the reference encoder (not kafkarec)."""
    return F.control_record_batch(key, value, timestamp=T0, attributes=attributes)


@pytest.mark.parametrize("key", [b"", b"\x00", b"\x00\x00\x00"], ids=len)
def test_short_key_is_invalid(key):
    record = F.kr_only_record(control_batch_with(key, b"\x00\x00\x00"))
    with pytest.raises(InvalidRecordError,
                       match=f"Must have at least 4 bytes, but found only {len(key)}"):
        record.control_type
    with pytest.raises(InvalidRecordError):
        parse_control_key(key)


def test_null_key_is_invalid():
    record = F.kr_only_record(control_batch_with(None, b"\x00\x00\x00"))
    with pytest.raises(InvalidRecordError, match="null key"):
        record.control_type_id


@pytest.mark.parametrize("version", [-1, -32768])
def test_negative_key_version_is_invalid(version):
    record = F.kr_only_record(control_batch_with(struct.pack(">hh", version, 1), b"\x00\x00\x00\x00\x00\x01"))
    with pytest.raises(InvalidRecordError, match=f"Invalid version found for control record: {version}"):
        record.control_type


@pytest.mark.parametrize("version", [1, 7, 32767])
def test_higher_key_version_reads_as_version_0(version):
    record = F.kr_only_record(control_batch_with(struct.pack(">hh", version, 1) + b"trailing",
                                            b"\x00\x00\x00\x00\x00\x05"))
    assert record.control_type is CT.COMMIT
    assert record.control_key_version == version
    assert record.coordinator_epoch == 5


def test_trailing_key_bytes_are_ignored():
    assert parse_control_key(b"\x00\x00\x00\x04\xff\xff\xff") == (0, 4)
    record = F.kr_only_record(control_batch_with(b"\x00\x00\x00\x04" + b"\xff" * 9, b"\x00\x00\x00"))
    assert record.control_type is CT.SNAPSHOT_FOOTER
    assert record.control_value == {"version": 0}


@pytest.mark.parametrize("value", [None, b"", b"\x00\x00\x00\x00\x00"], ids=repr)
def test_short_end_txn_marker_is_invalid(value):
    record = F.kr_only_record(control_batch_with(b"\x00\x00\x00\x00", value))
    assert record.control_type is CT.ABORT
    n = 0 if value is None else len(value)
    with pytest.raises(InvalidRecordError, match=f"Must have at least 6 bytes, but found only {n}"):
        record.control_value
    with pytest.raises(InvalidRecordError):
        record.coordinator_epoch


def test_negative_end_txn_marker_version_is_invalid():
    record = F.kr_only_record(control_batch_with(b"\x00\x00\x00\x01", b"\xff\xff\x00\x00\x00\x01"))
    with pytest.raises(InvalidRecordError, match="Invalid version found for end transaction marker: -1"):
        record.control_value
    with pytest.raises(InvalidRecordError):
        parse_end_txn_marker(b"\x80\x00\x00\x00\x00\x01")


def test_end_txn_marker_higher_version_and_trailing_bytes():
    record = F.kr_only_record(control_batch_with(b"\x00\x00\x00\x01",
                                            b"\x00\x02\x00\x00\x01\x00" + b"future fields"))
    assert record.control_value == {"version": 2, "coordinatorEpoch": 256}
    assert record.coordinator_epoch == 256


def test_kraft_values_ignore_trailing_bytes_and_reject_truncation():
    header = VALUES[CT.SNAPSHOT_HEADER][1]
    assert parse_control_value(3, header + b"\x00\x01\x02") == decoded(VALUES[CT.SNAPSHOT_HEADER][0])
    for cut in range(len(header)):
        with pytest.raises(InvalidRecordError):
            parse_control_value(3, header[:cut])
    voters = VALUES[CT.KRAFT_VOTERS][1]
    for cut in range(len(voters)):
        with pytest.raises(InvalidRecordError):
            parse_control_value(6, voters[:cut])
    with pytest.raises(InvalidRecordError, match="null value"):
        parse_control_value(4, None)


def test_unknown_type_reads_as_unknown():
    record = F.kr_only_record(control_batch_with(b"\x00\x00\x00\x63", b"whatever"))
    assert record.control_type is CT.UNKNOWN
    assert record.control_type_id == 99
    assert record.control_value is None
    assert record.coordinator_epoch is None


def test_data_records_have_no_control_fields():
    data = RecordBatchBuilder().extend([b"v"], [b"\x00\x00\x00\x01"], [T0]).build()
    (record,) = [r for b in kafkarec.iter_batches(data) for r in b]
    assert not record.is_control
    assert record.control_type is None and record.control_value is None
    assert record.control_type_id is None and record.coordinator_epoch is None


def test_encode_control_key():
    assert encode_control_key(CT.ABORT) == b"\x00\x00\x00\x00"
    assert encode_control_key(CT.KRAFT_VOTERS, 2) == b"\x00\x02\x00\x06"
    with pytest.raises(ValueError):
        encode_control_key(CT.UNKNOWN)


# --------------------------------------------------- 6. invalid arguments

INVALID = {
    "control record in a data batch": (
        lambda: RecordBatchBuilder().append_control(CT.COMMIT, {"coordinatorEpoch": 1}),
        r"Control records can only be appended to control batches"),
    "control record in a transactional data batch": (
        lambda: RecordBatchBuilder(is_transactional=True, base_sequence=0, **PRODUCER)
        .append_control(CT.ABORT, {"coordinatorEpoch": 1}),
        r"Control records can only be appended to control batches"),
    "data record in a control batch": (
        lambda: RecordBatchBuilder(is_control=True).append(b"v"),
        r"control batch takes control records only"),
    "UNKNOWN control type": (
        lambda: RecordBatchBuilder(is_control=True).append_control(CT.UNKNOWN),
        r"Cannot append record with unknown control record type"),
    "unknown control type id": (
        lambda: RecordBatchBuilder(is_control=True).append_control(99),
        r"99"),
    "marker without producer id": (
        lambda: RecordBatchBuilder(is_control=True).append_control(CT.COMMIT, {"coordinatorEpoch": 1}),
        r"End transaction marker requires a valid producerId and a transactional batch"),
    "marker in a non-transactional batch": (
        lambda: RecordBatchBuilder(is_control=True, **PRODUCER)
        .append_control(CT.ABORT, {"coordinatorEpoch": 1}),
        r"End transaction marker requires a valid producerId and a transactional batch"),
    "leader change without partition leader epoch": (
        lambda: RecordBatchBuilder(is_control=True)
        .append_control(CT.LEADER_CHANGE, VALUES[CT.LEADER_CHANGE][0]),
        r"LeaderChange message requires a valid partition leader epoch"),
    "marker without coordinator epoch": (
        lambda: control_builder(CT.COMMIT).append_control(CT.COMMIT, {}),
        r"invalid COMMIT control value"),
    "coordinator epoch out of range": (
        lambda: control_builder(CT.ABORT).append_control(CT.ABORT, {"coordinatorEpoch": 2**31}),
        r"invalid ABORT control value"),
    "voters with a bad directory id": (
        lambda: control_builder(CT.KRAFT_VOTERS).append_control(
            CT.KRAFT_VOTERS, {"voters": [{**VOTERS_VALUE["voters"][0], "voterDirectoryId": "nope"}]}),
        r"invalid KRAFT_VOTERS control value"),
    # (a missing field takes its schema default, as in Kafka's generated messages)
    "snapshot header with a text timestamp": (
        lambda: control_builder(CT.SNAPSHOT_HEADER).append_control(
            CT.SNAPSHOT_HEADER, {"lastContainedLogTimestamp": "yesterday"}),
        r"invalid SNAPSHOT_HEADER control value"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_control_arguments_raise_encode_error(case):
    assert_encode_error(INVALID, case)


def test_leader_change_with_epoch_and_markers_with_producer_are_accepted():
    # the positive side of the rules above
    builder = RecordBatchBuilder(is_control=True, partition_leader_epoch=0)
    builder.append_control(CT.LEADER_CHANGE, VALUES[CT.LEADER_CHANGE][0], timestamp=T0)
    assert F.kr_only_record(builder.build()).control_type is CT.LEADER_CHANGE
    builder = RecordBatchBuilder(is_control=True, is_transactional=True, producer_id=0, producer_epoch=0)
    builder.append_control(CT.ABORT, {"coordinatorEpoch": 0}, timestamp=T0)
    assert F.kr_only_record(builder.build()).coordinator_epoch == 0
