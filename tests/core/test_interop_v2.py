"""v2 batches written by kafka-python and aiokafka decode identically in kafkarec.

Every batch here was produced by another implementation's builder (header
patches, where the builders cannot express something a broker writes, are
made by tests/support/oracles/foreign.py with struct + crc32c).  Each test compares kafkarec
field by field with kafka-python's reader, aiokafka's readers (compiled and
pure Python) and with the values the records were built from, using Java's
rules (DefaultRecordBatch / DefaultRecord) for derived fields.

aiokafka and kafka-python read the v2 record attributes as a varint; the
builders only write 0 there, so that difference never shows in these bytes.
"""

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkarec
from kafkarec import Compression, ControlRecordType, TimestampType

from support.oracles import foreign as F

Rec = F.Rec
T0 = 1_700_000_000_000

# ------------------------------------------------------------------ shapes


def _filler(start: int, n: int = 60) -> list:
    """Compressible records appended so the builders really compress."""
    return [Rec(start + i, T0 + i, b"filler-key-%d" % (i % 5),
                b"filler value, the same words again and again %d " % (i % 3) * 4,
                [("trace", b"abcdef" * 3)]) for i in range(n)]


SHAPES = {
    "single": [Rec(0, T0, b"key", b"value")],
    "null-key": [Rec(0, T0, None, b"v1"), Rec(1, T0 + 1, None, b"v2")],
    "null-value-tombstones": [Rec(0, T0, b"k1", None), Rec(1, T0 + 1, b"k2", None)],
    "null-key-and-value": [Rec(0, T0, None, None), Rec(1, T0, None, None)],
    "empty-key-and-value": [Rec(0, T0, b"", b""), Rec(1, T0 + 5, b"", None), Rec(2, T0, None, b"")],
    "binary": [Rec(0, T0, bytes(range(256)), bytes(range(255, -1, -1)) * 3),
               Rec(1, T0, b"\x00", b"\x00\xff\x80\x7f")],
    "header-null-values": [Rec(0, T0, b"k", b"v", [("a", None), ("b", b""), ("c", b"x")]),
                           Rec(1, T0, b"k", b"v", [("only-null", None)])],
    "duplicate-header-keys": [Rec(0, T0, b"k", b"v",
                                  [("dup", b"1"), ("dup", b"2"), ("dup", None), ("x", b""),
                                   ("dup", b"3")])],
    "non-ascii-header-keys": [Rec(0, T0, b"k", b"v",
                                  [("ключ", b"value"), ("日本語", b"\xe6\x97\xa5"),
                                   ("emoji-\U0001f389", None), ("", b"empty key"),
                                   ("caf\u00e9", b"1"), ("cafe\u0301", b"2")])],
    "many-headers": [Rec(0, T0, b"k", b"v", [("h%03d" % i, b"%d" % i) for i in range(200)])],
    "negative-timestamp-deltas": [Rec(0, T0, b"a", b"1"), Rec(1, T0 - 86_400_000, b"b", b"2"),
                                  Rec(2, 0, b"c", b"3"), Rec(3, -1, b"d", b"4"),
                                  Rec(4, T0 + 5, b"e", b"5")],
    "first-timestamp-minus-one": [Rec(0, -1, b"a", b"1"), Rec(1, T0, b"b", b"2")],
    "huge-timestamps": [Rec(0, 0, b"a", b"1"), Rec(1, 2**62, b"b", b"2"),
                        Rec(2, 2**63 - 1, b"c", b"3")],
    "offset-gaps": [Rec(0, T0, b"a", b"1"), Rec(1, T0, b"b", b"2"), Rec(1000, T0, b"c", b"3"),
                    Rec(70_000, T0, b"d", b"4"), Rec(2**31 - 2, T0, b"e", b"5")],
    "max-offset-delta": [Rec(0, T0, b"a", b"1"), Rec(2**31 - 1, T0, b"z", b"2")],
    "first-delta-nonzero": [Rec(7, T0, b"a", b"1"), Rec(9, T0, b"b", b"2")],
    "large-value": [Rec(0, T0, b"big", bytes(range(256)) * 1200),
                    Rec(1, T0, b"k" * 20_000, b"small")],
    "many-records": [Rec(i, T0 + (i * 7919) % 1000 - 500, b"key-%d" % (i % 13) if i % 4 else None,
                         b"value-%d" % i if i % 5 else None,
                         [("i", b"%d" % i)] if i % 3 == 0 else [])
                     for i in range(1500)],
}
builder_params = pytest.mark.parametrize("builder", list(F.V2_BUILDERS))
CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"]
codec_params = pytest.mark.parametrize("codec", CODEC_NAMES)


def _aiokafka_c_rewrites(records) -> bool:
    # aiokafka's compiled builder writes a record timestamp of -1 as the
    # batch's base timestamp (see test_aiokafka_compiled_builder_minus_one_timestamps),
    # so the input is not what its bytes say; kafkarec still agrees with every reader.
    return any(r.timestamp == -1 for r in records)


SHAPE_CASES = [
    pytest.param(builder, codec, shape, id=f"{shape}-{codec}-{builder}")
    for shape in SHAPES for codec in CODEC_NAMES for builder in F.V2_BUILDERS
    if not (builder == "aiokafka-c" and _aiokafka_c_rewrites(SHAPES[shape]))
]


def shape_records(shape: str, codec: int) -> list:
    """The shape's records, plus compressible filler when a codec is used
    (placed in the first offset gap wide enough when the end is at int32 max)."""
    records = list(SHAPES[shape])
    if codec == F.NONE:
        return records
    if records[-1].offset + 61 <= F.INT32_MAX:
        return records + _filler(records[-1].offset + 1)
    for i in range(len(records) - 1):
        if records[i + 1].offset - records[i].offset > 61:
            return records[:i + 1] + _filler(records[i].offset + 1) + records[i + 1:]
    raise AssertionError(f"no room for filler in {shape}")


def assert_all_readers_agree(data, *, aio=True):
    ours = F.kr_view(data)
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    if aio:
        F.assert_agrees(ours, F.aio_view(data, impl="c"), "aiokafka (compiled)")
        F.assert_agrees(ours, F.aio_view(data, impl="py"), "aiokafka (pure Python)")
    return ours


def assert_header_matches_input(batch: dict, records, codec: int, data) -> None:
    raw = F.v2_fields(data)  # an independent struct parse of the header
    for name in ("base_offset", "partition_leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
                 "producer_epoch", "base_sequence", "record_count"):
        assert batch[name] == raw[name], name
    assert batch["crc_valid"] is True
    assert batch["size_in_bytes"] == len(data) == raw["length"] + 12
    assert batch["compression"] == codec
    assert batch["record_count"] == len(records)
    assert batch["last_offset_delta"] == records[-1].offset
    assert batch["next_offset"] == raw["base_offset"] + records[-1].offset + 1
    assert batch["max_timestamp"] == max(r.timestamp for r in records)
    assert batch["timestamp_type"] is TimestampType.CREATE_TIME
    assert batch["is_control"] is False and batch["is_transactional"] is False
    assert batch["delete_horizon_ms"] is None


# ------------------------------------------------------- shapes x codecs


@pytest.mark.parametrize("builder,codec,shape", SHAPE_CASES)
def test_builder_batch_decodes_like_every_reader(builder, codec, shape):
    codec_id = F.CODEC_IDS[codec]
    records = shape_records(shape, codec_id)
    data = F.V2_BUILDERS[builder](records, codec_id)
    assert data[21 + 1] & 0x07 == codec_id, "the builder must really have compressed"
    ours = assert_all_readers_agree(data)
    ((batch, got),) = ours
    assert_header_matches_input(batch, records, codec_id, data)
    F.assert_records_equal(got, F.expected_v2_records(records))
    assert all(r["attributes"] == 0 and r["checksum"] is None and r["magic"] == 2 for r in got)


@codec_params
def test_memory_records_builder_offsets_start_at_its_offset(codec):
    # kafka-python's MemoryRecordsBuilder writes base offset 0 and uses the
    # absolute offsets as deltas; Java reads base + delta, so offsets survive.
    codec_id = F.CODEC_IDS[codec]
    records = _filler(0, 40)
    data = F.kp_memory_records(records, codec_id, offset=1000)
    ((batch, got),) = assert_all_readers_agree(data)
    assert batch["compression"] == codec_id
    assert batch["base_offset"] == 0
    assert [r["offset"] for r in got] == list(range(1000, 1040))
    assert batch["last_offset"] == 1039


# ------------------------------------------------------------ LogAppendTime


@builder_params
@codec_params
def test_log_append_time_replaces_every_record_timestamp(builder, codec):
    codec_id = F.CODEC_IDS[codec]
    records = shape_records("negative-timestamp-deltas", codec_id)
    built = F.V2_BUILDERS[builder](records, codec_id)
    append_time = T0 + 123_456
    data = F.patch_v2(built, set_attributes=F.ATTR_LOG_APPEND_TIME, max_timestamp=append_time)
    ((batch, got),) = assert_all_readers_agree(data)
    assert batch["timestamp_type"] is TimestampType.LOG_APPEND_TIME
    assert batch["max_timestamp"] == append_time
    assert batch["base_timestamp"] == records[0].timestamp  # untouched by the broker
    assert batch["crc_valid"]
    F.assert_records_equal(got, F.expected_v2_records(records, log_append_time=append_time))
    assert all(r["timestamp_type"] is TimestampType.LOG_APPEND_TIME for r in got)


@builder_params
def test_attribute_patch_without_crc_update_is_a_checksum_error(builder):
    built = F.V2_BUILDERS[builder](SHAPES["null-key"])
    data = F.patch_v2(built, set_attributes=F.ATTR_LOG_APPEND_TIME, fix_crc=False)
    stored = F.v2_fields(data)["crc"]
    actual = F.crc32c(data[21:])
    assert stored != actual
    (batch,) = kafkarec.iter_batches(data)
    assert batch.crc == stored and batch.crc_valid is False
    with pytest.raises(kafkarec.ChecksumError) as info:
        list(batch)
    assert (info.value.expected, info.value.actual) == (stored, actual)
    assert info.value.position == 0
    # kafka-python agrees the CRC is wrong; without verification the records read.
    assert F.kp_view(data)[0][0]["crc_valid"] is False
    ((_, got),) = F.kr_view(data, verify_crc=False)
    assert [r["timestamp_type"] for r in got] == [TimestampType.LOG_APPEND_TIME] * 2


@builder_params
@codec_params
def test_delete_horizon_batch_keeps_record_timestamps(builder, codec):
    # KIP-534: the cleaner sets bit 6 and stores the horizon in baseTimestamp,
    # with the deltas rewritten against it, so base + delta is still each
    # record's timestamp.  Here the horizon is the builder's base timestamp.
    codec_id = F.CODEC_IDS[codec]
    records = shape_records("null-value-tombstones", codec_id)
    built = F.V2_BUILDERS[builder](records, codec_id)
    data = F.patch_v2(built, set_attributes=F.ATTR_DELETE_HORIZON)
    ((batch, got),) = assert_all_readers_agree(data)
    assert batch["delete_horizon_ms"] == batch["base_timestamp"] == F.v2_fields(data)["base_timestamp"]
    F.assert_records_equal(got, F.expected_v2_records(records))


# -------------------------------------------------- fields outside the CRC


@builder_params
def test_base_offset_and_leader_epoch_are_outside_the_crc(builder):
    records = SHAPES["offset-gaps"]
    built = F.V2_BUILDERS[builder](records)
    base = 10**12 + 17
    data = F.patch_v2(built, base_offset=base, partition_leader_epoch=42, fix_crc=False)
    assert F.v2_fields(data)["crc"] == F.v2_fields(built)["crc"]
    ((batch, got),) = assert_all_readers_agree(data)
    assert batch["crc_valid"]
    assert batch["base_offset"] == base
    assert batch["partition_leader_epoch"] == 42
    assert batch["last_offset"] == base + 2**31 - 2
    F.assert_records_equal(got, F.expected_v2_records(records, base_offset=base))


# -------------------------------------------------------- producer state


@builder_params
@codec_params
def test_idempotent_producer_fields(builder, codec):
    codec_id = F.CODEC_IDS[codec]
    records = shape_records("offset-gaps", codec_id)
    pid, epoch, seq = 123_456_789_012, 7, 1000
    data = F.V2_BUILDERS[builder](records, codec_id, producer_id=pid, producer_epoch=epoch,
                                  base_sequence=seq)
    ((batch, got),) = assert_all_readers_agree(data)
    assert (batch["producer_id"], batch["producer_epoch"], batch["base_sequence"]) == (pid, epoch, seq)
    assert batch["is_transactional"] is False
    assert batch["last_sequence"] == F.java_increment_sequence(seq, records[-1].offset)
    F.assert_records_equal(got, F.expected_v2_records(records, base_sequence=seq))


WRAP_BASES = [2**31 - 1, 2**31 - 2, 2**31 - 3, 2**31 - 50]


@builder_params
@pytest.mark.parametrize("base_sequence", WRAP_BASES)
def test_sequence_wraps_past_int32_max_like_java(builder, base_sequence):
    # DefaultRecordBatch.incrementSequence: past Integer.MAX_VALUE the
    # sequence continues at 0 (base 2147483646, delta 3 -> 1).
    records = [Rec(d, T0 + d, b"k%d" % d, b"v") for d in (0, 1, 2, 3, 4, 10, 60, 1000)]
    data = F.V2_BUILDERS[builder](records, producer_id=99, producer_epoch=0,
                                  base_sequence=base_sequence)
    ((batch, got),) = assert_all_readers_agree(data)
    expected = [F.java_sequence(base_sequence, r.offset) for r in records]
    assert all(0 <= s <= F.INT32_MAX for s in expected)
    assert [r["sequence"] for r in got] == expected
    assert batch["last_sequence"] == expected[-1]


def test_sequence_wrap_example_from_the_java_source():
    # The example in reference §1.10: base 2147483646, delta 3 -> last sequence 1.
    records = [Rec(d, T0, None, b"x") for d in range(4)]
    data = F.kp_v2(records, producer_id=1, producer_epoch=0, base_sequence=2147483646)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.last_sequence == 1
    assert [r.sequence for r in batch] == [2147483646, 2147483647, 0, 1]


@builder_params
@codec_params
def test_transactional_batch(builder, codec):
    codec_id = F.CODEC_IDS[codec]
    records = shape_records("header-null-values", codec_id)
    data = F.V2_BUILDERS[builder](records, codec_id, producer_id=5, producer_epoch=3,
                                  base_sequence=0, transactional=True)
    ((batch, got),) = assert_all_readers_agree(data)
    assert batch["is_transactional"] is True
    assert batch["attributes"] & F.ATTR_TRANSACTIONAL
    assert batch["is_control"] is False
    assert [r["sequence"] for r in got] == [r.offset for r in records]
    assert all(r["is_control"] is False for r in got)


# --------------------------------------------------------- control batches


MARKERS = [(ControlRecordType.ABORT, 0), (ControlRecordType.COMMIT, 1)]


@builder_params
@pytest.mark.parametrize("kind,type_id", MARKERS, ids=["ABORT", "COMMIT"])
@pytest.mark.parametrize("coordinator_epoch", [0, 17, 2**31 - 1])
def test_end_txn_markers_built_then_flagged_control(builder, kind, type_id, coordinator_epoch):
    # The builders cannot write control batches (only brokers do): they write
    # the marker record, and the header gets the control bit and the marker's
    # baseSequence -1, as the coordinator writes it.
    built = F.V2_BUILDERS[builder](
        [Rec(0, T0, F.control_key(type_id), F.end_txn_value(coordinator_epoch))],
        producer_id=4242, producer_epoch=9, base_sequence=0, transactional=True)
    data = F.patch_v2(built, set_attributes=F.ATTR_CONTROL, base_sequence=-1,
                      base_offset=5000)
    ((batch, got),) = assert_all_readers_agree(data)
    assert batch["is_control"] and batch["is_transactional"]
    assert (batch["producer_id"], batch["producer_epoch"]) == (4242, 9)
    assert batch["base_sequence"] == -1 and batch["last_sequence"] == -1
    (b,) = kafkarec.iter_batches(data)
    (record,) = list(b)
    assert record.offset == 5000
    assert record.is_control and record.sequence == -1
    assert record.control_type is kind
    assert record.control_type_id == type_id
    assert record.control_key_version == 0
    assert record.coordinator_epoch == coordinator_epoch
    assert record.control_value == {"version": 0, "coordinatorEpoch": coordinator_epoch}
    assert got[0]["control_type_id"] == type_id  # also what kafka-python reads


def test_hand_built_control_batch_between_data_batches():
    # A transaction as a broker log holds it: data batch, then a COMMIT marker
    # batch written with the independent encoder, then an ABORT marker.
    data_batch = F.patch_v2(
        F.kp_v2(_filler(0, 10), producer_id=77, producer_epoch=2, base_sequence=0,
                transactional=True), base_offset=100, partition_leader_epoch=3)
    markers = []
    for offset, type_id, epoch in ((110, 1, 5), (111, 0, 6)):
        payload = F.encode_record(0, 0, F.control_key(type_id), F.end_txn_value(epoch))
        markers.append(F.v2_batch(
            payload, record_count=1, last_offset_delta=0, base_offset=offset,
            partition_leader_epoch=3, attributes=F.ATTR_CONTROL | F.ATTR_TRANSACTIONAL,
            base_timestamp=T0 + 50, max_timestamp=T0 + 50, producer_id=77, producer_epoch=2,
            base_sequence=-1))
    buffer = data_batch + b"".join(markers)
    ours = assert_all_readers_agree(buffer)
    assert [b["is_control"] for b, _ in ours] == [False, True, True]
    assert [b["next_offset"] for b, _ in ours] == [110, 111, 112]
    batches = list(kafkarec.iter_batches(buffer))
    commit, abort = (next(iter(b)) for b in batches[1:])
    assert (commit.control_type, commit.coordinator_epoch) == (ControlRecordType.COMMIT, 5)
    assert (abort.control_type, abort.coordinator_epoch) == (ControlRecordType.ABORT, 6)
    assert commit.timestamp == T0 + 50 and commit.offset == 110


def test_control_key_and_marker_with_higher_version_and_extra_bytes():
    # ControlRecordType.parse / EndTransactionMarker: version > 0 is read as
    # version 0 and extra bytes are ignored.
    key = struct.pack(">hh", 3, 1) + b"future"
    value = struct.pack(">hi", 2, 31) + b"\x00tagged"
    data = F.v2_batch(F.encode_record(0, 0, key, value), record_count=1, last_offset_delta=0,
                      attributes=F.ATTR_CONTROL | F.ATTR_TRANSACTIONAL, producer_id=1,
                      producer_epoch=0)
    (batch,) = kafkarec.iter_batches(data)
    (record,) = list(batch)
    assert record.control_type is ControlRecordType.COMMIT
    assert record.control_key_version == 3
    assert record.coordinator_epoch == 31


# ----------------------------------------------------------- empty batches


@builder_params
def test_empty_batch_from_builder(builder):
    data = F.V2_BUILDERS[builder]([])
    assert len(data) == 61
    ((batch, got),) = assert_all_readers_agree(data)
    assert got == [] and batch["record_count"] == 0
    assert batch["crc_valid"]
    assert batch["next_offset"] == 1


@builder_params
@pytest.mark.parametrize("flags", [0, F.ATTR_TRANSACTIONAL, F.ATTR_TRANSACTIONAL | F.ATTR_CONTROL],
                         ids=["plain", "transactional", "control"])
def test_compacted_empty_batch_keeps_offsets_and_producer_state(builder, flags):
    # What the cleaner leaves (DefaultRecordBatch.writeEmptyHeader): 61 bytes,
    # count 0, codec none, baseTimestamp -1, the original maxTimestamp,
    # lastOffsetDelta and producer id/epoch/baseSequence.
    records = [Rec(i, T0 + i, b"k", b"v") for i in range(5)]
    built = F.V2_BUILDERS[builder](records, F.NONE, producer_id=31, producer_epoch=4,
                                   base_sequence=2**31 - 2, transactional=bool(flags))
    data = F.patch_v2(built, payload=b"", record_count=0, base_timestamp=-1, base_offset=200,
                      set_attributes=flags)
    assert len(data) == 61
    ((batch, got),) = assert_all_readers_agree(data)
    assert got == []
    assert batch["base_offset"] == 200 and batch["last_offset"] == 204
    assert batch["next_offset"] == 205
    assert batch["base_timestamp"] == -1 and batch["max_timestamp"] == T0 + 4
    assert (batch["producer_id"], batch["producer_epoch"]) == (31, 4)
    assert batch["last_sequence"] == F.java_increment_sequence(2**31 - 2, 4)
    assert batch["is_control"] == bool(flags & F.ATTR_CONTROL)


def test_count_zero_with_record_bytes_yields_nothing_like_java():
    # DefaultRecordBatch.iterator(): count 0 returns an empty iterator without
    # looking at the records section.
    built = F.kp_v2(SHAPES["null-key"])
    data = F.patch_v2(built, record_count=0)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.record_count == 0 and batch.crc_valid
    assert list(batch) == []


def test_aiokafka_compiled_builder_minus_one_timestamps():
    # aiokafka's compiled builder does not write what it was given for
    # timestamp -1: the bytes hold base timestamp 5 and deltas 0.  Every reader
    # must read what the bytes say, so all agree on 5.
    records = [Rec(0, -1, None, b"a"), Rec(1, -1, b"k", b"b"), Rec(2, 5, None, b"c")]
    data = F.aio_v2(records, impl="c")
    raw = F.v2_fields(data)
    assert (raw["base_timestamp"], raw["max_timestamp"]) == (5, 5)
    written = b"".join(F.encode_record(r.offset, 0, r.key, r.value) for r in records)
    assert F.records_section(data) == written
    ((_, got),) = assert_all_readers_agree(data)
    assert [r["timestamp"] for r in got] == [5, 5, 5]
    # The pure-Python builder keeps -1 (delta -6 against base 5 is not used:
    # its base is the first record's -1), and kafkarec reads that too.
    ((_, got_py),) = assert_all_readers_agree(F.aio_v2(records, impl="py"))
    assert [r["timestamp"] for r in got_py] == [-1, -1, 5]


# -------------------------------------------------------- several batches


def _consecutive(batches):
    """Give each batch the base offset right after the previous one."""
    out, next_offset = [], 0
    for data in batches:
        out.append(F.patch_v2(data, base_offset=next_offset, fix_crc=False))
        next_offset += F.v2_fields(data)["last_offset_delta"] + 1
    return out


def _mixed_v2_batches():
    batches = [F.kp_memory_records(_filler(0, 30), F.CODEC_IDS[c]) for c in CODEC_NAMES]
    batches += [F.aio_v2(SHAPES["non-ascii-header-keys"] + _filler(1, 30), F.ZSTD),
                F.aio_v2(SHAPES["offset-gaps"], F.NONE, impl="py"),
                F.kp_v2([]),
                F.aio_v2(_filler(0, 50), F.LZ4, producer_id=8, producer_epoch=1,
                         base_sequence=2**31 - 10)]
    marker = F.kp_v2([Rec(0, T0, F.control_key(1), F.end_txn_value(2))], producer_id=8,
                     producer_epoch=1, base_sequence=0, transactional=True)
    batches.append(F.patch_v2(marker, set_attributes=F.ATTR_CONTROL, base_sequence=-1))
    batches.append(F.patch_v2(F.kp_v2(_filler(0, 20), F.SNAPPY),
                              set_attributes=F.ATTR_LOG_APPEND_TIME, max_timestamp=T0 * 2))
    return _consecutive(batches)


def test_buffer_with_several_batches():
    batches = _mixed_v2_batches()
    buffer = b"".join(batches)
    ours = assert_all_readers_agree(buffer)
    assert len(ours) == len(batches)
    positions = [sum(map(len, batches[:i])) for i in range(len(batches))]
    assert [b["position"] for b, _ in ours] == positions
    assert [b["size_in_bytes"] for b, _ in ours] == [len(b) for b in batches]
    assert [b["compression"] for b, _ in ours][:5] == [0, 1, 2, 3, 4]
    # Offsets run on from batch to batch.
    assert all(ours[i + 1][0]["base_offset"] == ours[i][0]["next_offset"]
               for i in range(len(ours) - 1))
    it = kafkarec.iter_batches(buffer)
    assert sum(1 for _ in it) == len(batches)
    assert it.position == len(buffer) and it.trailing_bytes == 0


@pytest.mark.parametrize("cut", [1, 11, 12, 16, 17, 60, 61, -1])
def test_truncated_last_batch_ends_iteration(cut):
    batches = _mixed_v2_batches()[:4]
    whole = b"".join(batches[:3])
    last = batches[3]
    partial = last[:cut]
    buffer = whole + partial
    ours = F.kr_view(buffer)
    assert len(ours) == 3
    F.assert_agrees(ours, F.kp_view(buffer), "kafka-python")
    it = kafkarec.iter_batches(buffer)
    assert len(list(it)) == 3
    assert it.trailing_bytes == len(partial)
    with pytest.raises(kafkarec.TruncatedError):
        list(kafkarec.iter_batches(buffer, strict=True))


# ------------------------------------------------------ property tests

header_keys = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
payloads = st.one_of(st.none(), st.binary(max_size=200))
headers_st = st.lists(st.tuples(header_keys, payloads), max_size=5)
timestamps = st.one_of(st.just(-1), st.integers(0, 2**45))


@st.composite
def record_lists(draw, max_records=30):
    n = draw(st.integers(1, max_records))
    gaps = draw(st.lists(st.one_of(st.just(1), st.integers(1, 5), st.integers(1, 2**20)),
                         min_size=n, max_size=n))
    first = draw(st.integers(0, 1000))
    offsets, offset = [], first
    for gap in gaps:
        offsets.append(offset)
        offset += gap
    return [Rec(o, draw(timestamps), draw(payloads), draw(payloads), draw(headers_st))
            for o in offsets]


codecs_st = st.sampled_from([0, 1, 2, 3, 4])
PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@PROPERTY
@given(records=record_lists(), codec=codecs_st)
def test_property_kafka_python_batches(records, codec):
    data = F.kp_v2(records, codec)
    ours = F.kr_view(data)
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    ((batch, got),) = ours
    assert batch["compression"] in (codec, 0)  # the builder drops codecs that don't shrink
    assert batch["record_count"] == len(records)
    assert batch["max_timestamp"] == max(r.timestamp for r in records)
    assert batch["last_offset"] == records[-1].offset
    F.assert_records_equal(got, F.expected_v2_records(records))


@PROPERTY
@given(records=record_lists(), codec=codecs_st, impl=st.sampled_from(["c", "py"]))
def test_property_aiokafka_batches(records, codec, impl):
    if impl == "c" and _aiokafka_c_rewrites(records):
        records = [r._replace(timestamp=T0) if r.timestamp == -1 else r for r in records]
    data = F.aio_v2(records, codec, impl=impl)
    ours = F.kr_view(data)
    F.assert_agrees(ours, F.aio_view(data, impl=impl), f"aiokafka ({impl})")
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    F.assert_records_equal(ours[0][1], F.expected_v2_records(records))


@PROPERTY
@given(records=record_lists(max_records=8), codec=codecs_st,
       base_offset=st.integers(0, 2**62), epoch=st.integers(-1, 2**31 - 1),
       producer=st.one_of(st.none(), st.tuples(st.integers(0, 2**63 - 1),
                                               st.integers(0, 2**15 - 1),
                                               st.integers(0, 2**31 - 1))),
       append_time=st.one_of(st.none(), st.integers(0, 2**50)))
def test_property_broker_patched_headers(records, codec, base_offset, epoch, producer,
                                         append_time):
    pid, pepoch, seq = producer or (-1, -1, -1)
    built = F.kp_v2(records, codec, producer_id=pid, producer_epoch=pepoch, base_sequence=seq)
    extra = {}
    if append_time is not None:
        extra = {"set_attributes": F.ATTR_LOG_APPEND_TIME, "max_timestamp": append_time}
    data = F.patch_v2(built, base_offset=base_offset, partition_leader_epoch=epoch, **extra)
    ours = F.kr_view(data)
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    ((batch, got),) = ours
    assert batch["partition_leader_epoch"] == epoch
    assert batch["last_sequence"] == (
        -1 if seq < 0 else F.java_increment_sequence(seq, records[-1].offset))
    F.assert_records_equal(got, F.expected_v2_records(
        records, base_offset=base_offset, base_sequence=seq, log_append_time=append_time))


# ---------------------------------------------------------------- fault order


def test_strict_header_key_utf8_error_comes_before_later_faults():
    # Strict mode checks a header key as soon as it is read, before the record's
    # later checks (here: attributes set), in every decode path.
    bad_key = (b"\xff\xfe", None)
    data = F.v2_batch(F.encode_record(0, 0, b"k", b"v", [bad_key], attributes=1), record_count=1,
                      last_offset_delta=0)
    errors = []
    for decode in (lambda: [r for b in kafkarec.iter_batches(data, strict=True) for r in b],
                   lambda: kafkarec.to_arrow(data, strict=True),
                   lambda: kafkarec.to_arrow(data, strict=True, batch_columns=True)):
        with pytest.raises(kafkarec.InvalidRecordError) as info:
            decode()
        errors.append((info.value.position, info.value.reason))
    key_position = 61 + 1 + 1 + 1 + 1 + 2 + 2 + 1 + 1    # length, attrs, deltas, k, v, count, key len
    assert errors == [(key_position, "header key is not valid UTF-8")] * 3
    # Not strict: the key decodes leniently, and the attributes are not checked.
    [record] = list(next(kafkarec.iter_batches(data)))
    assert record.headers == [("\ufffd\ufffd", None)]


@pytest.mark.parametrize("first", ["utf8", "attributes"])
def test_record_iterator_ends_after_a_fault(first):
    if first == "utf8":
        bad = F.encode_record(0, 0, b"k", b"v", [(b"\xff\xfe", None)])
    else:
        bad = F.encode_record(0, 0, b"k", b"v", attributes=1)
    data = F.v2_batch(bad + F.encode_record(1, 0, b"k2", b"v2") + F.encode_record(2, 0, b"k3", b"v3"),
                    record_count=3, last_offset_delta=2)
    records = iter(next(kafkarec.iter_batches(data, strict=True)))
    with pytest.raises(kafkarec.InvalidRecordError):
        next(records)
    # The records after a bad one are not handed out as if nothing happened.
    assert list(records) == []
