"""In-place re-stamping (restamp) and message-format conversion (convert).

restamp does what a broker does when it appends a batch (reference §1.0, §1.5
item 11, §1.7, §1.10): base offset and partition leader epoch are outside the
CRC, so the CRC stays; LogAppendTime sets attribute bit 3 and the max
timestamp (v2) or the message timestamp (v1) and recomputes the CRC (CRC-32C
over attributes..end for v2, CRC-32 over magic..end for v1).  Magic 0 has no
timestamp and legacy formats no leader epoch.

convert rewrites every batch as another magic (RecordsUtil.downConvert /
LogValidator up-conversion): offsets, keys, values and timestamps are kept
(v0 -> -1); down-conversion drops headers, control batches and producer state
and reports how much; zstd cannot be down-converted.  Results are checked
against kafka-python's and aiokafka's readers, and the sources include
batches written by kafka-python's legacy builders.
"""

from __future__ import annotations

import mmap
import zlib

import pytest

from kafkarec import (ChecksumError, Compression, ControlRecordType as CT, CorruptBatchError,
                      EncodeError, TimestampType)
from kafkarec._core import LegacyBatchBuilder, RecordBatchBuilder, restamp
from kafkarec.convert import ConversionResult, convert

from support.oracles import foreign as F

T0 = 1_650_000_000_000
LAT = 1_650_000_123_456
CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
LEGACY_CODECS = CODECS[:4]


def v2(records, **options):
    """records: (offset, timestamp, key, value, headers)"""
    builder = RecordBatchBuilder(**options)
    for offset, ts, key, value, headers in records:
        builder.append(value, key, timestamp=ts, headers=headers, offset=offset)
    return builder.build()


def legacy(magic, records, **options):
    builder = LegacyBatchBuilder(magic=magic, **options)
    for offset, ts, key, value in records:
        builder.append(value, key, timestamp=None if magic == 0 else ts, offset=offset)
    return builder.build()


def records_of(data):
    return [(r["offset"], r["timestamp"], r["timestamp_type"], r["key"], r["value"], r["headers"])
            for _, recs in F.kr_view(data) for r in recs]


def assert_other_readers_agree(data, *, aiokafka=True):
    ours = F.kr_view(data)
    F.assert_agrees(ours, F.kp_view(data), "kafka-python")
    if aiokafka:
        F.assert_agrees(ours, _aio_view(ours, data, "py"), "aiokafka (pure Python)")
        if len({b["magic"] for b, _ in ours}) == 1:   # its compiled reader needs one magic
            F.assert_agrees(ours, _aio_view(ours, data, "c"), "aiokafka (_crecords)")
    return ours


def _aio_view(ours, data, impl):
    """aiokafka's view, with one quirk of its own normalized: a v1 message whose timestamp
    is -1 comes back with timestamp None and no timestamp type, where Java and
    kafka-python report CreateTime."""
    view = F.aio_view(data, impl=impl)
    for (batch, _), (_, recs) in zip(ours, view):
        for rec in recs:
            if batch["magic"] == 1 and rec["timestamp"] == -1 and rec["timestamp_type"] == -1:
                rec["timestamp_type"] = TimestampType.CREATE_TIME
    return view


V2_RECORDS = [(100, T0, b"k0", b"v0", [("h", b"x")]), (101, T0 + 7, b"k1", b"v1", []),
              (105, T0 - 3, b"k2", b"v2", [("a", None), ("b", b"")])]


# =================================================================== restamp


@pytest.mark.parametrize("codec", CODECS, ids=str)
def test_restamp_v2_offset_and_epoch_keep_the_crc(codec):
    original = v2(V2_RECORDS, compression=codec, base_offset=100, producer_id=9, producer_epoch=1,
                  base_sequence=0)
    buf = bytearray(original)
    crc = F.v2_fields(original)["crc"]
    assert restamp(buf, base_offset=5_000_000_000, partition_leader_epoch=77) == crc
    # only bytes 0-7 (base offset) and 12-15 (partition leader epoch) changed
    changed = {i for i in range(len(buf)) if buf[i] != original[i]}
    assert changed and changed <= set(range(0, 8)) | set(range(12, 16))
    ((batch, recs),) = assert_other_readers_agree(buf)
    assert batch["base_offset"] == 5_000_000_000 and batch["partition_leader_epoch"] == 77
    assert batch["crc"] == crc and batch["crc_valid"]
    assert [r["offset"] for r in recs] == [5_000_000_000, 5_000_000_001, 5_000_000_005]
    assert [r["sequence"] for r in recs] == [0, 1, 5]
    assert [r["timestamp"] for r in recs] == [T0, T0 + 7, T0 - 3]
    (kp_batch, _), = F.kp_view(buf)
    assert kp_batch["partition_leader_epoch"] == 77


@pytest.mark.parametrize("codec", CODECS, ids=str)
def test_restamp_v2_log_append_time(codec):
    original = v2(V2_RECORDS, compression=codec, base_offset=100, partition_leader_epoch=2)
    buf = bytearray(original)
    new_crc = restamp(buf, log_append_time=LAT)
    fields = F.v2_fields(buf)
    assert fields["attributes"] == int(codec) | 0x08
    assert fields["max_timestamp"] == LAT
    assert new_crc == fields["crc"] == F.crc32c(buf[21:])     # CRC-32C, independently
    assert new_crc != F.v2_fields(original)["crc"]
    # the payload (compressed or not) and the record deltas are untouched
    assert buf[61:] == original[61:] and buf[:17] == original[:17]
    assert buf[23:35] == original[23:35] and buf[43:61] == original[43:61]
    ((batch, recs),) = assert_other_readers_agree(buf)
    assert batch["timestamp_type"] is TimestampType.LOG_APPEND_TIME and batch["crc_valid"]
    assert [(r["timestamp"], r["timestamp_type"]) for r in recs] == \
        [(LAT, TimestampType.LOG_APPEND_TIME)] * 3
    assert [r["value"] for r in recs] == [b"v0", b"v1", b"v2"]


def test_restamp_v2_all_at_once_at_a_position():
    first = v2([(0, T0, b"a", b"1", [])])
    second = v2(V2_RECORDS, base_offset=100, compression=Compression.GZIP)
    buf = bytearray(first + second)
    restamp(buf, len(first), base_offset=1, partition_leader_epoch=4, log_append_time=LAT)
    assert buf[:len(first)] == first
    ours = assert_other_readers_agree(buf)
    assert [b["base_offset"] for b, _ in ours] == [0, 1]
    assert ours[1][0]["partition_leader_epoch"] == 4
    assert ours[1][0]["max_timestamp"] == LAT and ours[1][0]["crc_valid"]
    assert [r["offset"] for r in ours[1][1]] == [1, 2, 6]


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=str)
def test_restamp_v1_log_append_time(codec):
    records = [(0, T0, b"a", b"1"), (1, T0 + 4, None, b"2")]
    original = legacy(1, records, compression=codec)
    entry = F.split_batches(original)[0]
    buf = bytearray(original)
    new_crc = restamp(buf, log_append_time=LAT)
    fields = F.legacy_fields(F.split_batches(buf)[0])
    assert fields["attributes"] == int(codec) | 0x08
    assert fields["timestamp"] == LAT
    assert new_crc == fields["crc"] == zlib.crc32(bytes(buf[16:len(entry)])) & 0xFFFFFFFF  # CRC-32
    assert fields["value"] == F.legacy_fields(entry)["value"]
    ours = assert_other_readers_agree(buf)
    assert ours[0][0]["timestamp_type"] is TimestampType.LOG_APPEND_TIME and ours[0][0]["crc_valid"]
    first_batch_records = ours[0][1]
    assert all(r["timestamp"] == LAT for r in first_batch_records)
    assert all(r["timestamp_type"] is TimestampType.LOG_APPEND_TIME for r in first_batch_records)
    if codec is Compression.NONE:     # the second entry was not touched
        assert ours[1][1][0]["timestamp"] == T0 + 4
        assert buf[len(entry):] == original[len(entry):]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=str)
def test_restamp_legacy_offset_keeps_the_crc(magic, codec):
    records = [(10, T0, b"a", b"1"), (12, T0 + 1, b"b", b"2")]
    original = legacy(magic, records, compression=codec, base_offset=10)
    buf = bytearray(original)
    crc = F.legacy_fields(original)["crc"]
    assert restamp(buf, base_offset=1000) == crc
    assert buf[8:] == original[8:]
    ours = assert_other_readers_agree(buf, aiokafka=not (magic == 0 and codec is Compression.LZ4))
    assert ours[0][0]["last_offset"] == 1000 and ours[0][0]["crc_valid"]
    if codec is not Compression.NONE and magic == 1:
        # relative inner offsets follow the wrapper: absolute = wrapper - last inner + inner
        assert [r["offset"] for r in ours[0][1]] == [998, 1000]
    elif codec is not Compression.NONE:
        assert [r["offset"] for r in ours[0][1]] == [10, 12]   # magic 0: inner offsets absolute


@pytest.mark.parametrize("magic,kwargs,message", [
    (0, {"log_append_time": LAT}, r"Cannot set timestamp for a record with magic = 0"),
    (0, {"partition_leader_epoch": 1}, r"Magic versions prior to 2 do not support partition leader epoch"),
    (1, {"partition_leader_epoch": 1}, r"Magic versions prior to 2 do not support partition leader epoch"),
])
def test_restamp_legacy_rejects(magic, kwargs, message):
    buf = bytearray(legacy(magic, [(0, T0, b"a", b"1")]))
    before = bytes(buf)
    with pytest.raises(EncodeError, match=message):
        restamp(buf, **kwargs)
    assert buf == before


@pytest.mark.parametrize("magic,kwargs", [
    (0, {"base_offset": 99, "log_append_time": LAT}),
    (1, {"base_offset": 99, "partition_leader_epoch": 3}),
])
def test_failed_restamp_leaves_the_buffer_unchanged(magic, kwargs):
    buf = bytearray(legacy(magic, [(0, T0, b"a", b"1")]))
    before = bytes(buf)
    with pytest.raises(EncodeError):
        restamp(buf, **kwargs)
    assert buf == before, "a rejected restamp must not half-apply (base offset was written)"


def test_restamp_works_on_an_mmap_of_a_file(tmp_path):
    first = v2(V2_RECORDS, base_offset=100, compression=Compression.LZ4)
    second = legacy(1, [(200, T0, b"x", b"y")], base_offset=200)
    third = v2([(201, T0, b"k", b"v", [("h", b"1")])], base_offset=201)
    path = tmp_path / "00000000000000000100.log"
    path.write_bytes(first + second + third)
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        restamp(m, 0, base_offset=300, partition_leader_epoch=8, log_append_time=LAT)
        restamp(m, len(first), base_offset=303, log_append_time=LAT + 1)
        restamp(m, len(first) + len(second), base_offset=304)
        m.flush()
        ours = F.kr_view(m)
        assert [b["crc_valid"] for b, _ in ours] == [True, True, True]
    data = path.read_bytes()
    ours = assert_other_readers_agree(data)
    assert [[r["offset"] for r in recs] for _, recs in ours] == [[300, 301, 305], [303], [304]]
    assert [r["timestamp"] for r in ours[0][1]] == [LAT] * 3
    assert ours[1][1][0]["timestamp"] == LAT + 1
    assert ours[0][0]["partition_leader_epoch"] == 8


def test_restamp_needs_a_writable_buffer_and_a_batch():
    data = v2([(0, T0, b"a", b"1", [])])
    for readonly in (data, memoryview(data)):
        with pytest.raises((BufferError, TypeError)):
            restamp(readonly, base_offset=1)
    buf = bytearray(data)
    for position in (-1, len(buf), len(buf) - 10, 5):
        with pytest.raises(CorruptBatchError):
            restamp(buf, position, base_offset=1)
    with pytest.raises(CorruptBatchError):
        restamp(bytearray(data[:-1]), base_offset=1)
    assert buf == data


def test_restamped_payload_still_decompresses_with_java(java_codec):
    plain = v2(V2_RECORDS, base_offset=100)
    buf = bytearray(v2(V2_RECORDS, base_offset=100, compression=Compression.ZSTD))
    restamp(buf, base_offset=7, partition_leader_epoch=1, log_append_time=LAT)
    assert java_codec.decompress("zstd", bytes(buf[61:])) == plain[61:]


# =================================================================== convert

LEGACY_RECORDS = [(0, T0, b"k0", b"v0"), (1, T0 + 9, b"k1", b"value one"),
                  (2, T0 - 4, b"", b"v2"), (3, 0, b"k3", b"")]


def legacy_sources(magic, codec):
    """The same records as a legacy set from kafka-python's builder and from ours."""
    kp = F.kp_legacy(magic, [F.Rec(*r) for r in LEGACY_RECORDS], int(codec))
    ours = legacy(magic, LEGACY_RECORDS, compression=codec)
    return {"kafka-python": kp, "kafkarec": ours}


def expected_legacy(magic, records):
    ts_type = TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else TimestampType.CREATE_TIME
    return [(o, -1 if magic == 0 else ts, ts_type, k, v, []) for o, ts, k, v in records]


@pytest.mark.parametrize("target_codec", [None, *CODECS], ids=str)
@pytest.mark.parametrize("source_codec", LEGACY_CODECS, ids=str)
@pytest.mark.parametrize("magic", [0, 1])
def test_up_convert_legacy_to_v2(magic, source_codec, target_codec):
    for who, source in legacy_sources(magic, source_codec).items():
        assert records_of(source) == expected_legacy(magic, LEGACY_RECORDS), who
        result = convert(source, 2, compression=target_codec)
        assert isinstance(result, ConversionResult)
        ours = assert_other_readers_agree(result.data)
        # v0 timestamps stay -1, with CreateTime in v2 (Kafka's up-conversion)
        expected = [(o, ts, TimestampType.CREATE_TIME, k, v, []) for o, ts, _, k, v, _ in
                    expected_legacy(magic, LEGACY_RECORDS)]
        assert records_of(result.data) == expected, who
        codec = source_codec if target_codec is None else target_codec
        assert all(b["magic"] == 2 and b["compression"] is codec for b, _ in ours), who
        n_batches = len(LEGACY_RECORDS) if source_codec is Compression.NONE else 1
        assert (result.batches, result.records) == (n_batches, len(LEGACY_RECORDS)), who
        assert sum(result.lost.values()) == 0, (who, result.lost)


@pytest.mark.parametrize("source_codec", LEGACY_CODECS, ids=str)
def test_up_convert_v0_to_v1(source_codec):
    for who, source in legacy_sources(0, source_codec).items():
        result = convert(source, 1)
        assert_other_readers_agree(result.data)
        assert records_of(result.data) == [(o, -1, TimestampType.CREATE_TIME, k, v, [])
                                           for o, _, k, v in LEGACY_RECORDS], who
        assert all(b["magic"] == 1 for b, _ in F.kr_view(result.data))


@pytest.mark.parametrize("magic", [0, 1])
def test_up_convert_tombstones(magic):
    # null keys/values (tombstones) are common in old compacted topics
    records = [(0, T0, b"k", None), (1, T0, None, b"v"), (2, T0, None, None)]
    for source in (F.kp_legacy(magic, [F.Rec(*r) for r in records]),
                   legacy(magic, records, compression=Compression.GZIP)):
        for codec in (Compression.NONE, Compression.LZ4):
            result = convert(source, 2, compression=codec)
            assert_other_readers_agree(result.data)
            assert [(o, k, v) for o, _, _, k, v, _ in records_of(result.data)] == \
                [(o, k, v) for o, _, k, v in records]


def test_up_convert_keeps_gaps_and_wrapper_offsets():
    # compacted v1 set with gaps, wrapper at the last offset, and a librdkafka-style set
    records = [(1000, T0, b"a", b"1"), (1004, T0 + 1, b"b", b"2"), (1010, T0 + 2, b"c", b"3")]
    for wrapper_offset in ("last", "zero"):
        source = legacy(1, records, compression=Compression.SNAPPY, base_offset=1000,
                        wrapper_offset=wrapper_offset)
        before = [r[0] for r in records_of(source)]
        result = convert(source, 2)
        assert [r[0] for r in records_of(result.data)] == before
        (batch, _), = assert_other_readers_agree(result.data)
        assert batch["base_offset"] == before[0] and batch["last_offset"] == before[-1]


def test_up_convert_log_append_time():
    source = legacy(1, [(5, T0, b"a", b"1"), (6, T0 + 1, b"b", b"2")], base_offset=5,
                    compression=Compression.GZIP, timestamp_type=TimestampType.LOG_APPEND_TIME,
                    log_append_time=LAT)
    result = convert(source, 2)
    ((batch, recs),) = assert_other_readers_agree(result.data)
    assert batch["timestamp_type"] is TimestampType.LOG_APPEND_TIME
    assert batch["max_timestamp"] == LAT
    assert [(r["offset"], r["timestamp"]) for r in recs] == [(5, LAT), (6, LAT)]


def mixed_v2_log(codec=Compression.GZIP):
    """A transactional data batch with headers, its COMMIT marker, a LogAppendTime batch
    and a plain batch."""
    txn = v2([(100, T0, b"k", b"v", [("a", b"1"), ("b", None)]),
              (103, T0 + 5, b"k", b"w", [("c", b"1")])],
             base_offset=100, producer_id=7, producer_epoch=1, base_sequence=0,
             is_transactional=True, compression=codec)
    marker = RecordBatchBuilder(base_offset=104, producer_id=7, producer_epoch=1,
                                is_transactional=True, is_control=True)
    marker.append_control(CT.COMMIT, {"coordinatorEpoch": 3}, timestamp=T0 + 10)
    log_append = v2([(105, T0, b"y", b"x", []), (106, T0 + 1, b"y", b"x2", [])], base_offset=105,
                    timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=LAT,
                    compression=codec)
    plain = v2([(107, T0 + 20, b"p", b"q", [("h", b"v")])], base_offset=107, compression=codec,
               producer_id=8, producer_epoch=0, base_sequence=5)
    return txn + marker.build() + log_append + plain


@pytest.mark.parametrize("target_codec", [None, Compression.NONE, Compression.SNAPPY, Compression.LZ4],
                         ids=str)
@pytest.mark.parametrize("magic", [0, 1])
def test_down_convert_v2(magic, target_codec):
    result = convert(mixed_v2_log(), magic, compression=target_codec)
    assert result.lost["headers"] == 4
    assert result.lost["control_batches"] == 1
    assert result.lost["producer_state_batches"] == 2
    assert result.lost["empty_batches"] == 0
    assert result.lost["timestamps"] == (5 if magic == 0 else 0)
    assert result.records == 5
    ours = assert_other_readers_agree(
        result.data, aiokafka=not (magic == 0 and target_codec is Compression.LZ4))
    assert all(b["magic"] == magic and not b["is_control"] and b["producer_id"] == -1
               for b, _ in ours)
    got = records_of(result.data)
    if magic == 0:
        assert got == [(o, -1, TimestampType.NO_TIMESTAMP_TYPE, k, v, []) for o, k, v in
                       [(100, b"k", b"v"), (103, b"k", b"w"), (105, b"y", b"x"), (106, b"y", b"x2"),
                        (107, b"p", b"q")]]
    else:
        assert got == [
            (100, T0, TimestampType.CREATE_TIME, b"k", b"v", []),
            (103, T0 + 5, TimestampType.CREATE_TIME, b"k", b"w", []),
            (105, LAT, TimestampType.LOG_APPEND_TIME, b"y", b"x", []),
            (106, LAT, TimestampType.LOG_APPEND_TIME, b"y", b"x2", []),
            (107, T0 + 20, TimestampType.CREATE_TIME, b"p", b"q", []),
        ]
    codecs = {b["compression"] for b, _ in ours}
    assert codecs == {Compression.GZIP if target_codec is None else target_codec}


def test_v2_to_v2_keeps_everything():
    source = mixed_v2_log(Compression.LZ4)
    result = convert(source, 2)
    assert sum(result.lost.values()) == 0
    assert result.batches == 4 and result.records == 6
    before, after = F.kr_view(source), assert_other_readers_agree(result.data)
    for (b0, r0), (b1, r1) in zip(before, after):
        for name in ("base_offset", "last_offset", "producer_id", "producer_epoch", "base_sequence",
                     "is_transactional", "is_control", "timestamp_type", "max_timestamp",
                     "compression", "partition_leader_epoch"):
            assert b0[name] == b1[name], name
        assert r0 == r1
    # same content, same codec: the very same bytes -- except that a LogAppendTime batch
    # is rebuilt from what its records read as (the log append time, not the stored
    # create-time deltas, which readers must ignore)
    for old_batch, new_batch in zip(F.split_batches(source), F.split_batches(result.data)):
        if F.v2_fields(old_batch)["attributes"] & 0x08:
            assert F.v2_fields(new_batch)["base_timestamp"] == LAT
        else:
            assert new_batch == old_batch


def test_v2_to_v2_keeps_the_delete_horizon():
    # a cleaned batch (KIP-534): bit 6 set, baseTimestamp = delete horizon; a v2 -> v2
    # rewrite must keep it (or at least count it as lost)
    source = v2([(0, T0, b"tombstone", b"", []), (1, T0 + 1, b"k", b"v", [])],
                delete_horizon_ms=T0 + 86_400_000)
    result = convert(source, 2, compression=Compression.GZIP)
    ((batch, _),) = assert_other_readers_agree(result.data)
    assert records_of(result.data) == records_of(source)
    assert batch["delete_horizon_ms"] == T0 + 86_400_000


@pytest.mark.parametrize("target", [Compression.NONE, Compression.GZIP, Compression.SNAPPY,
                                    Compression.ZSTD], ids=str)
def test_recompress_v2_to_another_codec(java_codec, target):
    source = v2(V2_RECORDS, base_offset=100, compression=Compression.LZ4, producer_id=1,
                producer_epoch=0, base_sequence=0)
    plain = v2(V2_RECORDS, base_offset=100, producer_id=1, producer_epoch=0, base_sequence=0)
    result = convert(source, 2, compression=target)
    ((batch, _),) = assert_other_readers_agree(result.data)
    assert batch["compression"] is target
    assert records_of(result.data) == records_of(source)
    if target is Compression.NONE:
        assert result.data == plain
    else:
        name = {Compression.GZIP: "gzip", Compression.SNAPPY: "snappy-xerial",
                Compression.ZSTD: "zstd"}[target]
        assert java_codec.decompress(name, result.data[61:]) == plain[61:]


def test_down_convert_zstd_is_refused():
    source = v2(V2_RECORDS, base_offset=100, compression=Compression.ZSTD)
    for magic in (0, 1):
        with pytest.raises(EncodeError, match="Down-conversion of zstandard-compressed batches is not supported"):
            convert(source, magic)
        with pytest.raises(EncodeError, match="Down-conversion of zstandard"):
            convert(source, magic, compression=Compression.GZIP)
    for magic in (0, 1):
        with pytest.raises(EncodeError, match=f"ZStandard compression is not supported for magic {magic}"):
            convert(v2(V2_RECORDS, base_offset=100), magic, compression=Compression.ZSTD)
        with pytest.raises(EncodeError, match=f"ZStandard compression is not supported for magic {magic}"):
            convert(legacy(1, LEGACY_RECORDS), magic, compression=Compression.ZSTD)


def test_empty_batches_are_dropped_and_counted():
    empty = F.v2_batch(b"", record_count=0, last_offset_delta=4, base_offset=50,
                       base_timestamp=-1, max_timestamp=T0, producer_id=3, producer_epoch=0,
                       base_sequence=9)
    data = v2([(40, T0, b"a", b"1", [])], base_offset=40) + empty + v2([(55, T0, b"b", b"2", [])],
                                                                        base_offset=55)
    for magic in (0, 1, 2):
        result = convert(data, magic)
        assert result.lost["empty_batches"] == 1
        assert result.batches == 2 and result.records == 2
        assert [r[0] for r in records_of(result.data)] == [40, 55]


def test_convert_checks_crcs_and_magic():
    data = bytearray(v2(V2_RECORDS, base_offset=100))
    data[data.index(b"v1")] ^= 0x20       # b"v1" -> b"V1": still well-formed, CRC now wrong
    with pytest.raises(ChecksumError):
        convert(bytes(data), 1)
    result = convert(bytes(data), 2, verify_crc=False)
    assert result.records == 3 and [r[4] for r in records_of(result.data)] == [b"v0", b"V1", b"v2"]
    with pytest.raises(EncodeError, match="Invalid magic value 3"):
        convert(b"", 3)
    assert convert(b"", 2).data == b""


def test_mixed_magic_input_converts_to_one_magic():
    data = F.kp_legacy(0, [F.Rec(0, T0, b"a", b"1")]) + legacy(1, [(1, T0, b"b", b"2")], base_offset=1) \
        + v2([(2, T0, b"c", b"3", [("h", b"x")])], base_offset=2)
    for magic in (0, 1, 2):
        result = convert(data, magic)
        ours = assert_other_readers_agree(result.data)
        assert {b["magic"] for b, _ in ours} == {magic}
        assert [(r[0], r[3], r[4]) for r in records_of(result.data)] == \
            [(0, b"a", b"1"), (1, b"b", b"2"), (2, b"c", b"3")]
        assert result.lost["headers"] == (0 if magic == 2 else 1)
