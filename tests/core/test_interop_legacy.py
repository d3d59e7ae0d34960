"""Legacy (magic 0/1) message sets written by kafka-python and aiokafka.

kafkarec must read them as Kafka's Java reader does (reference §1.4-1.5):
an uncompressed entry is a batch of one record; a compressed entry is a
wrapper whose inner offsets are relative for magic 1 (absolute = wrapper
offset - last inner offset + inner offset, wrapper offset 0 taken as-is) and
absolute for magic 0; LogAppendTime wrappers give inner records the wrapper's
timestamp; magic 0 has timestamp -1 / NO_TIMESTAMP_TYPE; legacy batches report
-1 for the v2-only producer fields.

Each test compares kafkarec with kafka-python's and aiokafka's readers and
with the values the records were built from.  Broken wrappers are made from
builder output by tests/support/oracles/foreign.py (struct + zlib.crc32).
"""

import gzip
import struct
import zlib

import lz4.frame
import pytest
import snappy
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import Compression, TimestampType

from support.oracles import foreign as F

Rec = F.Rec
T0 = 1_600_000_000_000
CODEC_NAMES = ["none", "gzip", "snappy", "lz4"]


def _values(n, start=0, *, ts=T0):
    return [Rec(start + i, ts + i, b"key-%d" % (i % 4), b"legacy value %d, repeated words " % i * 3)
            for i in range(n)]


SHAPES = {
    "single": [Rec(0, T0, b"k", b"v")],
    "null-key": [Rec(0, T0, None, b"v1"), Rec(1, T0 + 1, None, b"v2")],
    "null-value": [Rec(0, T0, b"k1", None), Rec(1, T0 + 1, b"k2", None)],
    "null-key-and-value": [Rec(0, T0, None, None), Rec(1, T0 + 2, None, None)],
    "empty-key-and-value": [Rec(0, T0, b"", b""), Rec(1, T0, b"", None), Rec(2, T0, None, b"")],
    "binary": [Rec(0, T0, bytes(range(256)), bytes(range(255, -1, -1)) * 4)],
    "timestamps": [Rec(0, 0, b"a", b"1"), Rec(1, T0, b"b", b"2"), Rec(2, T0 - 5000, b"c", b"3"),
                   Rec(3, 2**62, b"d", b"4")],
    "large-value": [Rec(0, T0, b"big", bytes(range(256)) * 1000)],
    "many": _values(400),
}


def legacy_cases():
    for builder in F.LEGACY_BUILDERS:
        for magic in (0, 1):
            for codec in CODEC_NAMES:
                if builder.startswith("aiokafka") and magic == 0 and codec == "lz4":
                    continue  # aiokafka cannot write LZ4 for magic 0 (KAFKA-3160)
                for shape in SHAPES:
                    yield pytest.param(builder, magic, codec, shape,
                                       id=f"{shape}-v{magic}-{codec}-{builder}")


def assert_all_readers_agree(data, *, aio=True):
    ours = F.kr_view(data)
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    if aio:
        F.assert_agrees(ours, F.aio_view(data, impl="py"), "aiokafka (pure Python)")
        if len({b["magic"] for b, _ in ours}) == 1:
            # The compiled MemoryRecords takes the magic of the first batch for all.
            F.assert_agrees(ours, F.aio_view(data, impl="c"), "aiokafka (compiled)")
    return ours


def expected_legacy(magic, rec, *, offset=None, log_append_time=None):
    """A record as Java's LegacyRecord presents it; the checksum comes from an
    independent encoding of the same message."""
    msg = F.legacy_message(magic, rec.offset, key=rec.key, value=rec.value,
                           timestamp=rec.timestamp if magic else -1)
    if magic == 0:
        ts, ts_type = -1, TimestampType.NO_TIMESTAMP_TYPE
    elif log_append_time is not None:
        ts, ts_type = log_append_time, TimestampType.LOG_APPEND_TIME
    else:
        ts, ts_type = rec.timestamp, TimestampType.CREATE_TIME
    return {
        "offset": rec.offset if offset is None else offset, "timestamp": ts,
        "timestamp_type": ts_type, "key": rec.key, "value": rec.value, "headers": [],
        "sequence": -1, "magic": magic, "checksum": F.legacy_fields(msg)["crc"],
        "is_control": False,
    }


def assert_legacy_batch_sentinels(batch):
    assert batch["partition_leader_epoch"] == -1
    assert batch["producer_id"] == -1 and batch["producer_epoch"] == -1
    assert batch["base_sequence"] == -1 and batch["last_sequence"] == -1
    assert batch["is_transactional"] is False and batch["is_control"] is False
    assert batch["delete_horizon_ms"] is None
    assert batch["crc_valid"] is True


# ------------------------------------------------------ builders x shapes


@pytest.mark.parametrize("builder,magic,codec,shape", list(legacy_cases()))
def test_legacy_builder_output_decodes_like_every_reader(builder, magic, codec, shape):
    codec_id = F.CODEC_IDS[codec]
    records = SHAPES[shape]
    data = F.LEGACY_BUILDERS[builder](magic, records, codec_id)
    # aiokafka's reader cannot read magic-0 LZ4 either (it raises UnsupportedCodecError).
    ours = assert_all_readers_agree(data, aio=not (magic == 0 and codec == "lz4"))
    for batch, _ in ours:
        assert_legacy_batch_sentinels(batch)
        assert batch["magic"] == magic and batch["compression"] == codec_id
        assert batch["timestamp_type"] == (TimestampType.CREATE_TIME if magic else
                                           TimestampType.NO_TIMESTAMP_TYPE)
    if codec_id == F.NONE:
        # One entry per record, each its own batch, offsets absolute.
        assert len(ours) == len(records)
        for (batch, got), rec in zip(ours, records):
            assert batch["record_count"] == 1
            assert batch["base_offset"] == batch["last_offset"] == rec.offset
            assert batch["max_timestamp"] == (rec.timestamp if magic else -1)
            F.assert_records_equal(got, [expected_legacy(magic, rec)])
        assert sum(b["size_in_bytes"] for b, _ in ours) == len(data)
    else:
        # One wrapper at offset 0 (the builders' choice): inner offsets as-is.
        ((batch, got),) = ours
        assert batch["size_in_bytes"] == len(data)
        assert batch["record_count"] == len(records)
        assert batch["last_offset"] == 0 == F.legacy_fields(data)["offset"]
        assert batch["base_offset"] == records[0].offset
        assert batch["max_timestamp"] == (0 if magic else -1)
        F.assert_records_equal(got, [expected_legacy(magic, r) for r in records])


def test_kafka_python_magic0_lz4_wrapper_has_the_kafka_3160_checksum():
    # kafka-python writes magic-0 LZ4 with the header checksum over magic+FLG+BD,
    # as Kafka 0.8/0.9 did; Java ignores the checksum for magic 0.
    records = _values(50)
    data = F.kp_legacy(0, records, F.LZ4)
    frame = F.legacy_fields(data)["value"]
    broken = (xxhash.xxh32_intdigest(frame[0:6]) >> 8) & 0xFF
    proper = (xxhash.xxh32_intdigest(frame[4:6]) >> 8) & 0xFF
    assert frame[6] == broken != proper
    ((batch, got),) = assert_all_readers_agree(data, aio=False)
    F.assert_records_equal(got, [expected_legacy(0, r) for r in records])
    # The same frame in a magic-1 wrapper is rejected: there the checksum is verified.
    v1 = F.legacy_message(1, 0, key=None, value=frame, attributes=F.LZ4, timestamp=0)
    (b1,) = kafkarec.iter_batches(v1)
    with pytest.raises(kafkarec.DecompressionError):
        list(b1)


# -------------------------------------------------------- mixed magics


def _mixed_buffer():
    """Entries with magic 0, 1 and 2, consecutive offsets 0..23, all builder-made."""
    parts = []
    parts += [F.kp_legacy(0, [Rec(0, T0, b"a", b"v0-0"), Rec(1, T0, None, b"v0-1")])]
    # magic 0 wrapper: inner offsets absolute; wrapper offset = last inner.
    parts += [F.set_legacy_offset(F.aio_legacy(0, _values(3, 2), F.GZIP, impl="py"), 4)]
    parts += [F.aio_legacy(1, [Rec(5, T0 + 5, b"k", None), Rec(6, T0 + 6, b"k", b"v")])]
    # magic 1 wrapper: inner offsets relative 0..2, wrapper offset 9 -> 7..9.
    parts += [F.set_legacy_offset(F.kp_legacy(1, _values(3), F.SNAPPY), 9)]
    parts += [F.patch_v2(F.kp_v2(_values(4), F.ZSTD), base_offset=10)]
    parts += [F.set_legacy_offset(F.aio_legacy(1, _values(2), F.LZ4), 15)]
    parts += [F.set_legacy_offset(F.kp_legacy(0, _values(2, 16), F.LZ4), 17)]
    parts += [F.patch_v2(F.aio_v2(_values(3), F.NONE, impl="py"), base_offset=18)]
    parts += [F.set_legacy_offset(F.kp_legacy(1, _values(3), F.GZIP), 23)]
    return parts


def test_buffer_mixing_magic_0_1_and_2_decodes_batch_by_batch():
    parts = _mixed_buffer()
    buffer = b"".join(parts)
    ours = assert_all_readers_agree(buffer, aio=False)
    # aiokafka: its Python reader dispatches per batch (its compiled one does not)
    # but cannot read magic-0 LZ4, so compare it on the buffer without that entry.
    entries = F.split_batches(buffer)
    v0_lz4 = [i for i, e in enumerate(entries) if e[16] == 0 and e[17] & 7 == F.LZ4]
    assert v0_lz4 == [8]
    F.assert_agrees(ours[:8] + ours[9:], F.aio_view(b"".join(entries[:8] + entries[9:]), impl="py"),
                    "aiokafka (pure Python)")
    assert [b["magic"] for b, _ in ours] == [0, 0, 0, 1, 1, 1, 2, 1, 0, 2, 1]
    offsets = [r["offset"] for _, recs in ours for r in recs]
    assert offsets == list(range(24))
    assert [b["next_offset"] for b, _ in ours] == [1, 2, 5, 6, 7, 10, 14, 16, 18, 21, 24]
    assert [b["position"] for b, _ in ours] == [
        sum(len(e) for e in F.split_batches(buffer)[:i]) for i in range(len(ours))]
    for batch, recs in ours:
        if batch["magic"] == 0:
            assert all(r["timestamp"] == -1 for r in recs)
        else:
            assert all(r["timestamp"] >= T0 for r in recs)
    it = kafkarec.iter_batches(buffer)
    assert len(list(it)) == len(ours) and it.trailing_bytes == 0


# ------------------------------------------------- wrapper offset rules


@pytest.mark.parametrize("builder", list(F.LEGACY_BUILDERS))
@pytest.mark.parametrize("codec", CODEC_NAMES[1:])
@pytest.mark.parametrize("wrapper_offset", [4, 1004, 2**40])
def test_v1_wrapper_with_nonzero_offset_has_relative_inner_offsets(builder, codec, wrapper_offset):
    records = _values(5)
    built = F.LEGACY_BUILDERS[builder](1, records, F.CODEC_IDS[codec])
    data = F.set_legacy_offset(built, wrapper_offset)
    # The offset is outside the CRC-32 (which covers magic..end).
    assert F.legacy_fields(data)["crc"] == zlib.crc32(data[16:]) & 0xFFFFFFFF
    ((batch, got),) = assert_all_readers_agree(data)
    base = wrapper_offset - 4
    assert batch["crc_valid"]
    assert batch["base_offset"] == base and batch["last_offset"] == wrapper_offset
    assert batch["record_count"] == 5
    F.assert_records_equal(got, [expected_legacy(1, r, offset=base + r.offset) for r in records])


@pytest.mark.parametrize("builder", list(F.LEGACY_BUILDERS))
def test_v1_wrapper_after_compaction_keeps_inner_gaps(builder):
    # Compaction keeps the surviving inner offsets: relative 0, 3, 7 under
    # wrapper offset 107 are 100, 103, 107.
    records = [Rec(o, T0 + o, b"k%d" % o, b"v%d" % o * 20) for o in (0, 3, 7)]
    data = F.set_legacy_offset(F.LEGACY_BUILDERS[builder](1, records, F.GZIP), 107)
    ((batch, got),) = assert_all_readers_agree(data)
    assert [r["offset"] for r in got] == [100, 103, 107]
    assert batch["base_offset"] == 100 and batch["next_offset"] == 108


@pytest.mark.parametrize("builder", list(F.LEGACY_BUILDERS))
@pytest.mark.parametrize("codec", ["gzip", "snappy"])
def test_v0_wrapper_inner_offsets_are_absolute(builder, codec):
    records = _values(4, 50)
    data = F.set_legacy_offset(F.LEGACY_BUILDERS[builder](0, records, F.CODEC_IDS[codec]), 53)
    ((batch, got),) = assert_all_readers_agree(data)
    assert [r["offset"] for r in got] == [50, 51, 52, 53]
    assert batch["base_offset"] == 50 and batch["last_offset"] == 53


def test_v1_wrapper_offset_below_last_inner_offset_is_invalid():
    # AbstractLegacyRecordBatch.DeepRecordsIterator: "Found invalid wrapper
    # offset in compressed v1 message set, wrapper offset '2' is less than the
    # last inner message offset '4' and it is not zero."
    data = F.set_legacy_offset(F.kp_legacy(1, _values(5), F.GZIP), 2)
    (batch,) = kafkarec.iter_batches(data)
    with pytest.raises(kafkarec.InvalidRecordError, match="wrapper offset '2'.*'4'") as info:
        list(batch)
    assert info.value.position == 0


# --------------------------------------------------------- LogAppendTime


@pytest.mark.parametrize("builder", list(F.LEGACY_BUILDERS))
@pytest.mark.parametrize("codec", CODEC_NAMES[1:])
def test_log_append_time_wrapper_stamps_inner_records(builder, codec):
    records = SHAPES["timestamps"]
    built = F.LEGACY_BUILDERS[builder](1, records, F.CODEC_IDS[codec])
    append_time = T0 + 999_999
    data = F.patch_legacy(F.set_legacy_offset(built, 3),
                          attributes=F.CODEC_IDS[codec] | F.ATTR_LOG_APPEND_TIME,
                          timestamp=append_time)
    ((batch, got),) = assert_all_readers_agree(data)
    assert batch["crc_valid"]
    assert batch["timestamp_type"] is TimestampType.LOG_APPEND_TIME
    assert batch["max_timestamp"] == append_time
    F.assert_records_equal(got, [expected_legacy(1, r, log_append_time=append_time)
                                 for r in records])


def test_log_append_time_uncompressed_v1_uses_its_own_field():
    # Uncompressed: the broker rewrote the record's own timestamp and CRC.
    built = F.aio_legacy(1, [Rec(8, T0, b"k", b"v")])
    data = F.patch_legacy(built, attributes=F.ATTR_LOG_APPEND_TIME, timestamp=T0 + 77)
    ((batch, got),) = assert_all_readers_agree(data)
    assert batch["timestamp_type"] is TimestampType.LOG_APPEND_TIME
    assert got[0]["timestamp"] == T0 + 77
    assert got[0]["timestamp_type"] is TimestampType.LOG_APPEND_TIME


def test_v0_wrapper_ignores_the_timestamp_type_bit():
    # Magic 0 has no timestamp at all: timestamp() is -1, NO_TIMESTAMP_TYPE.
    built = F.kp_legacy(0, _values(3), F.GZIP)
    data = F.patch_legacy(built, attributes=F.GZIP | F.ATTR_LOG_APPEND_TIME)
    ((batch, got),) = F.kr_view(data)
    assert batch["timestamp_type"] is TimestampType.NO_TIMESTAMP_TYPE
    assert all(r["timestamp"] == -1 and r["timestamp_type"] is TimestampType.NO_TIMESTAMP_TYPE
               for r in got)


def test_v1_wrapper_around_magic0_messages():
    # Inner magic may differ from the wrapper's (ensureMatchingMagic is off on
    # this path): magic-0 inner messages have no timestamp, even under a
    # LogAppendTime wrapper; the v1 wrapper still makes their offsets relative.
    records = _values(3)
    inner = F.kp_legacy(0, records)
    data = F.legacy_message(1, 52, key=None, value=gzip.compress(inner),
                            attributes=F.GZIP | F.ATTR_LOG_APPEND_TIME, timestamp=T0 + 9)
    ((batch, got),) = F.kr_view(data)
    assert batch["timestamp_type"] is TimestampType.LOG_APPEND_TIME
    F.assert_records_equal(got, [expected_legacy(0, r, offset=50 + r.offset) for r in records])


def test_v0_wrapper_around_magic1_messages_keep_their_timestamps_without_a_type():
    """Kafka's deep iterator gives inner messages the wrapper's timestamp type: a v0
    wrapper has none, while each magic-1 message keeps its own timestamp
    (LegacyRecord.timestamp(); Kafka's own reader says so too: tests/core/test_java_exact.py)."""
    records = _values(3, 10)
    inner = F.aio_legacy(1, records)
    data = F.legacy_message(0, 12, key=None, value=gzip.compress(inner), attributes=F.GZIP)
    ((batch, got),) = F.kr_view(data)
    assert batch["timestamp_type"] is TimestampType.NO_TIMESTAMP_TYPE
    expected = [dict(expected_legacy(1, r), timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)
                for r in records]
    F.assert_records_equal(got, expected)


# ------------------------------------------------------- broken wrappers


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODEC_NAMES[1:])
def test_wrapper_with_null_value_is_invalid(magic, codec):
    # "Found invalid compressed record set with null value (magic = N)"
    data = F.legacy_message(magic, 0, key=None, value=None, attributes=F.CODEC_IDS[codec],
                            timestamp=0)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.crc_valid
    with pytest.raises(kafkarec.InvalidRecordError, match="null value") as info:
        list(batch)
    assert info.value.position == 0
    # kafka-python refuses it too.
    with pytest.raises(Exception, match="None"):
        F.kp_view(data)


@pytest.mark.parametrize("magic", [0, 1])
def test_wrapper_with_zstd_codec_is_rejected(magic):
    # Java: "Invalid wrapper compressionType found in legacy deep record iterator";
    # a zstd id in a legacy wrapper is a codec Kafka does not allow there.
    built = F.kp_legacy(magic, _values(3), F.GZIP)
    data = F.patch_legacy(built, attributes=F.ZSTD)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.crc_valid and batch.compression is Compression.ZSTD
    with pytest.raises(kafkarec.UnsupportedCodecError) as info:
        list(batch)
    assert isinstance(info.value, kafkarec.CorruptBatchError)
    assert info.value.position == 0


@pytest.mark.parametrize("outer_codec", [F.GZIP, F.SNAPPY, F.LZ4])
def test_nested_compressed_inner_message_is_invalid_when_reached(outer_codec):
    # "Inner messages must not be compressed", raised when that record is reached.
    first = F.kp_legacy(1, [Rec(0, T0, b"a", b"first")])
    nested = F.set_legacy_offset(F.kp_legacy(1, _values(2), F.GZIP), 1)
    last = F.kp_legacy(1, [Rec(2, T0, b"c", b"last")])
    inner = first + nested + last
    value = {F.GZIP: gzip.compress, F.SNAPPY: snappy.compress,
             F.LZ4: lambda d: lz4.frame.compress(d, block_linked=False)}[outer_codec](inner)
    data = F.legacy_message(1, 2, key=None, value=value, attributes=outer_codec, timestamp=T0)
    (batch,) = kafkarec.iter_batches(data)
    records = iter(batch)
    assert next(records).value == b"first"
    with pytest.raises(kafkarec.InvalidRecordError, match="must not be compressed"):
        next(records)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODEC_NAMES[1:])
def test_wrapper_with_empty_inner_set_is_invalid(magic, codec):
    # "Found invalid compressed record set with no inner records"
    compress = {"gzip": gzip.compress, "snappy": snappy.compress,
                "lz4": lambda d: lz4.frame.compress(d, block_linked=False)}[codec]
    empty = compress(b"")
    data = F.legacy_message(magic, 0, key=None, value=empty, attributes=F.CODEC_IDS[codec],
                            timestamp=0)
    (batch,) = kafkarec.iter_batches(data)
    with pytest.raises(kafkarec.InvalidRecordError, match="no inner records"):
        list(batch)


def test_inner_set_of_only_a_partial_entry_is_empty():
    # DataLogInputStream ends silently at a truncated entry, leaving no records.
    whole = F.kp_legacy(1, [Rec(0, T0, b"k", b"v" * 100)])
    data = F.legacy_message(1, 0, key=None, value=gzip.compress(whole[:40]),
                            attributes=F.GZIP, timestamp=0)
    (batch,) = kafkarec.iter_batches(data)
    with pytest.raises(kafkarec.InvalidRecordError, match="no inner records"):
        list(batch)


def test_truncated_last_inner_entry_ends_the_inner_set_silently():
    entries = F.kp_legacy(1, _values(4))
    cut = entries[:-10]  # the fourth message loses its last 10 bytes
    data = F.legacy_message(1, 3, key=None, value=gzip.compress(cut), attributes=F.GZIP,
                            timestamp=0)
    (batch,) = kafkarec.iter_batches(data)
    got = list(batch)
    assert [r.offset for r in got] == [1, 2, 3]  # 3 records, relative 0..2 under wrapper 3
    assert batch.trailing_bytes == len(F.split_batches(entries)[3]) - 10
    with pytest.raises(kafkarec.TruncatedError):
        list(next(kafkarec.iter_batches(data, strict=True)))


def test_inner_entry_smaller_than_the_minimum_overhead_is_corrupt():
    # DataLogInputStream: size < 14 -> "Record size is less than the minimum record overhead (14)"
    good = F.kp_legacy(1, _values(1))
    runt = struct.pack(">qi", 1, 13) + bytes(13)
    data = F.legacy_message(1, 1, key=None, value=gzip.compress(good + runt),
                            attributes=F.GZIP, timestamp=0)
    (batch,) = kafkarec.iter_batches(data)
    with pytest.raises(kafkarec.CorruptBatchError, match="minimum record overhead"):
        list(batch)


def test_corrupt_inner_crc_is_reported_when_verifying():
    entries = F.split_batches(F.kp_legacy(1, _values(3)))
    bad = F.patch_legacy(entries[1], value=b"tampered", fix_crc=False)
    inner = entries[0] + bad + entries[2]
    data = F.legacy_message(1, 2, key=None, value=gzip.compress(inner), attributes=F.GZIP,
                            timestamp=0)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.crc_valid  # the wrapper itself is fine
    with pytest.raises(kafkarec.ChecksumError) as info:
        list(batch)
    stored = F.legacy_fields(bad)["crc"]
    assert info.value.expected == stored
    assert info.value.actual == zlib.crc32(bad[16:]) & 0xFFFFFFFF
    ((_, got),) = F.kr_view(data, verify_crc=False)
    assert [r["value"] for r in got][1] == b"tampered"
    assert got[1]["checksum"] == stored


def test_legacy_wrapper_bomb_hits_the_decompression_budget():
    inner = F.kp_legacy(1, [Rec(0, T0, None, bytes(4 << 20))])
    data = F.legacy_message(1, 0, key=None, value=gzip.compress(inner), attributes=F.GZIP,
                            timestamp=0)
    assert len(data) < 10_000
    (batch,) = kafkarec.iter_batches(data, max_decompressed_bytes=1 << 20)
    with pytest.raises(kafkarec.DecompressionLimitError):
        list(batch)
    (batch,) = kafkarec.iter_batches(data, max_decompressed_bytes=8 << 20)
    assert len(list(batch)[0].value) == 4 << 20


# ------------------------------------------------------ property test

legacy_records = st.lists(
    st.tuples(st.one_of(st.just(-1), st.integers(0, 2**50)),
              st.one_of(st.none(), st.binary(max_size=100)),
              st.one_of(st.none(), st.binary(max_size=300))),
    min_size=1, max_size=20)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=legacy_records, magic=st.sampled_from([0, 1]),
       codec=st.sampled_from([0, 1, 2, 3]), wrapper_offset=st.integers(0, 2**40))
def test_property_kafka_python_legacy(rows, magic, codec, wrapper_offset):
    records = [Rec(i, ts, k, v) for i, (ts, k, v) in enumerate(rows)]
    data = F.kp_legacy(magic, records, codec)
    if codec:
        data = F.set_legacy_offset(data, wrapper_offset if wrapper_offset == 0 or magic == 0
                                   else wrapper_offset + len(records))
    ours = F.kr_view(data)
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    got = [r for _, recs in ours for r in recs]
    if codec and magic == 1 and wrapper_offset:
        base = wrapper_offset + 1
    else:
        base = 0
    F.assert_records_equal(got, [expected_legacy(magic, r, offset=base + r.offset)
                                 for r in records])
