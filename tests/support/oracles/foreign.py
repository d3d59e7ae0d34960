"""Kafka record batches built and read by implementations other than kafkarec.

The interop tests decode bytes that kafkarec did not write and compare the
result field by field with what other readers make of the same bytes:

* builders: kafka-python (``DefaultRecordBatchBuilder``, ``MemoryRecordsBuilder``,
  ``LegacyRecordBatchBuilder``) and aiokafka (compiled ``_crecords`` builders and
  the pure-Python fallbacks);
* header surgery and a small record/message encoder, the tests' reference
  encoder in ``reference.py`` (``struct``, the ``crc32c`` package and
  ``zlib.crc32``, never kafkarec's own code), re-exported here, for what the
  builders cannot produce (control batches, LogAppendTime, empty batches,
  nonzero legacy wrapper offsets, broken wrappers);
* readers: kafkarec, kafka-python's ``MemoryRecords`` and aiokafka's readers,
  each turned into plain dicts (``*_view``) so ``assert_agrees`` can compare
  any two of them.

Field names in the views follow kafkarec's; a reader only reports the fields
it has.  Legacy readers' ``None`` timestamps and timestamp types (magic 0)
are mapped to Kafka's ``-1`` sentinels, which is what Java reports.
"""

from __future__ import annotations

from typing import NamedTuple

import kafkarec

# ------------------------------------------- the reference encoder (re-exported)

from support.oracles.reference import (  # noqa: E402,F401
    ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL, CODEC_IDS,
    GZIP, INT32_MAX, LEGACY_HEADER_V0, LEGACY_HEADER_V1, LEGACY_MAGIC_OFFSET, LZ4, NONE,
    SNAPPY, V2_ATTRIBUTES_OFFSET, V2_CRC_OFFSET, V2_FIELDS, V2_HEADER, V2_HEADER_SIZE, ZSTD,
    compact_array, compact_bytes, control_key, control_record_batch, corrupt_commit_into_abort,
    crc32c, encode_record, end_txn_value, leader_change_value, legacy_fields, legacy_frame,
    legacy_message, patch_legacy, patch_v2, records_section, set_legacy_offset,
    single_record_batch, sized_record, split_batches, uvarint, v2_batch, v2_fields, varint,
    varlong, voter_bytes, voters_value, with_crc, with_legacy_crc, with_v2_crc,
)


class Rec(NamedTuple):
    """One record to append: absolute offset (or offset delta for v2 builders)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list = []


# ------------------------------------------------------ Java's arithmetic


def java_increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence (Java int arithmetic)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def java_sequence(base_sequence: int, offset_delta: int) -> int:
    """The sequence Java gives a v2 record (DefaultRecord.readFrom)."""
    return java_increment_sequence(base_sequence, offset_delta) if base_sequence >= 0 else -1


# ---------------------------------------------------------------- builders


def kp_v2(records, codec: int = NONE, *, producer_id: int = -1, producer_epoch: int = -1,
          base_sequence: int = -1, transactional: bool = False) -> bytes:
    """A v2 batch from kafka-python's DefaultRecordBatchBuilder (base offset 0:
    each Rec.offset is written as the offset delta)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, batch_size=1 << 30)
    for rec in records:
        assert builder.append(rec.offset, rec.timestamp, rec.key, rec.value,
                              list(rec.headers)) is not None
    return bytes(builder.build())


def kp_memory_records(records, codec: int = NONE, *, magic: int = 2, offset: int = 0,
                      **producer) -> bytes:
    """kafka-python's MemoryRecordsBuilder (offsets assigned from ``offset``;
    Rec.offset is ignored)."""
    from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 30,
                                   offset=offset, **producer)
    for rec in records:
        assert builder.append(rec.timestamp, rec.key, rec.value, list(rec.headers)) is not None
    builder.close()
    return bytes(builder.buffer())


def aio_v2(records, codec: int = NONE, *, producer_id: int = -1, producer_epoch: int = -1,
           base_sequence: int = -1, transactional: bool = False, impl: str = "c") -> bytes:
    """A v2 batch from aiokafka's DefaultRecordBatchBuilder (compiled or pure Python)."""
    from aiokafka.record import _crecords
    from aiokafka.record.default_records import _DefaultRecordBatchBuilderPy

    cls = _crecords.DefaultRecordBatchBuilder if impl == "c" else _DefaultRecordBatchBuilderPy
    builder = cls(2, codec, int(transactional), producer_id, producer_epoch, base_sequence,
                  1 << 30)
    for rec in records:
        assert builder.append(rec.offset, rec.timestamp, rec.key, rec.value,
                              list(rec.headers)) is not None
    return bytes(builder.build())


def kp_legacy(magic: int, records, codec: int = NONE) -> bytes:
    """kafka-python's LegacyRecordBatchBuilder: uncompressed → one entry per record;
    compressed → one wrapper (offset 0, timestamp 0) around the inner set."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for rec in records:
        assert builder.append(rec.offset, rec.timestamp, rec.key, rec.value) is not None
    return bytes(builder.build())


def aio_legacy(magic: int, records, codec: int = NONE, *, impl: str = "c") -> bytes:
    from aiokafka.record import _crecords
    from aiokafka.record.legacy_records import _LegacyRecordBatchBuilderPy

    cls = _crecords.LegacyRecordBatchBuilder if impl == "c" else _LegacyRecordBatchBuilderPy
    builder = cls(magic, codec, 1 << 30)
    for rec in records:
        assert builder.append(rec.offset, rec.timestamp, rec.key, rec.value) is not None
    return bytes(builder.build())


V2_BUILDERS = {
    "kafka-python": kp_v2,
    "aiokafka-c": lambda *a, **k: aio_v2(*a, impl="c", **k),
    "aiokafka-py": lambda *a, **k: aio_v2(*a, impl="py", **k),
}
LEGACY_BUILDERS = {
    "kafka-python": kp_legacy,
    "aiokafka-c": lambda *a, **k: aio_legacy(*a, impl="c", **k),
    "aiokafka-py": lambda *a, **k: aio_legacy(*a, impl="py", **k),
}


# ------------------------------------------------------------------ views


def _ts(value):
    return -1 if value is None else value


def _client_record(r) -> dict:
    """The fields kafka-python's and aiokafka's records share, as plain values."""
    return {
        "offset": r.offset, "timestamp": _ts(r.timestamp),
        "timestamp_type": _ts(r.timestamp_type), "key": r.key, "value": r.value,
        "headers": list(r.headers),
    }


def kr_view(data, **kwargs) -> list[tuple[dict, list[dict]]]:
    """kafkarec's reading of a buffer, as plain values."""
    out = []
    for batch in kafkarec.iter_batches(data, **kwargs):
        b = {name: getattr(batch, name) for name in (
            "base_offset", "last_offset_delta", "last_offset", "next_offset",
            "partition_leader_epoch", "magic", "crc", "crc_valid", "attributes",
            "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
            "base_sequence", "last_sequence", "record_count", "compression",
            "timestamp_type", "is_transactional", "is_control", "size_in_bytes",
            "position", "delete_horizon_ms")}
        records = []
        for r in batch:
            rec = {name: getattr(r, name) for name in (
                "offset", "timestamp", "timestamp_type", "key", "value", "headers",
                "sequence", "attributes", "magic", "checksum", "is_control")}
            if r.is_control:
                rec["control_type_id"] = r.control_type_id
                rec["control_key_version"] = r.control_key_version
            records.append(rec)
        out.append((b, records))
    return out


def kr_only_record(data, **kwargs):
    """kafkarec's reading of a buffer of one batch holding one record: that record."""
    (batch,) = kafkarec.iter_batches(data, **kwargs)
    (record,) = batch.records()
    return record


def kp_view(data) -> list[tuple[dict, list[dict]]]:
    """kafka-python's MemoryRecords reading of a buffer (dispatches per batch magic)."""
    from kafka.record.default_records import ControlRecord
    from kafka.record.memory_records import MemoryRecords

    out, position = [], 0
    records_reader = MemoryRecords(bytes(data))
    while records_reader.has_next():
        batch = records_reader.next_batch()
        crc_valid = batch.validate_crc()
        if batch.magic >= 2:
            b = {
                "base_offset": batch.base_offset, "last_offset_delta": batch.last_offset_delta,
                "last_offset": batch.last_offset, "next_offset": batch.next_offset,
                "partition_leader_epoch": batch.leader_epoch, "magic": batch.magic,
                "crc": batch.crc, "crc_valid": crc_valid, "attributes": batch.attributes,
                "base_timestamp": batch.first_timestamp, "max_timestamp": batch.max_timestamp,
                "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence, "last_sequence": batch.last_sequence,
                "record_count": batch.records_count, "compression": batch.compression_type,
                "timestamp_type": batch.timestamp_type,
                "is_transactional": batch.is_transactional,
                "is_control": batch.is_control_batch, "size_in_bytes": batch.size_in_bytes,
                "position": position,
            }
        else:
            b = {
                "last_offset": batch.base_offset,  # kafka-python: the wrapper's (= last) offset
                "magic": batch.magic, "crc": batch._crc, "crc_valid": crc_valid,
                "attributes": batch._attributes, "max_timestamp": _ts(batch._timestamp),
                "compression": batch.compression_type,
                "timestamp_type": _ts(batch.timestamp_type),
                "size_in_bytes": batch.size_in_bytes, "position": position,
            }
        records = []
        for r in batch:
            rec = _client_record(r)
            if batch.magic < 2:
                rec["checksum"] = r.checksum
                rec["magic"] = r.magic
            if isinstance(r, ControlRecord):
                rec["control_type_id"] = r.type
                rec["control_key_version"] = r.version
            records.append(rec)
        out.append((b, records))
        position += b["size_in_bytes"]
    return out


def aio_view(data, *, impl: str = "c") -> list[tuple[dict, list[dict]]]:
    """aiokafka's reading of a buffer.

    ``impl="c"`` uses the compiled MemoryRecords, which takes every batch's
    magic from the first batch, so only use it on single-magic buffers;
    ``impl="py"`` is the pure-Python reader, which dispatches per batch.
    """
    if impl == "c":
        from aiokafka.record._crecords import MemoryRecords
    else:
        from aiokafka.record.memory_records import _MemoryRecordsPy as MemoryRecords

    out = []
    reader = MemoryRecords(bytes(data))
    while reader.has_next():
        batch = reader.next_batch()
        crc_valid = batch.validate_crc()
        if hasattr(batch, "last_offset_delta"):
            b = {
                "base_offset": batch.base_offset, "last_offset_delta": batch.last_offset_delta,
                "next_offset": batch.next_offset, "magic": batch.magic, "crc": batch.crc,
                "crc_valid": crc_valid, "attributes": batch.attributes,
                "base_timestamp": batch.first_timestamp, "max_timestamp": batch.max_timestamp,
                "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence, "compression": batch.compression_type,
                "timestamp_type": batch.timestamp_type,
                "is_transactional": batch.is_transactional,
                "is_control": batch.is_control_batch,
            }
            legacy = False
        else:
            b = {"next_offset": batch.next_offset, "crc_valid": crc_valid,
                 "is_control": batch.is_control_batch,
                 "is_transactional": batch.is_transactional}
            legacy = True
        records = []
        for r in batch:
            rec = _client_record(r)
            if legacy:
                rec["checksum"] = r.checksum
            records.append(rec)
        out.append((b, records))
    return out


# Fields every view of a v2 / legacy batch must report for a comparison to count.
CORE_V2_BATCH = {"base_offset", "next_offset", "magic", "crc", "attributes",
                 "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
                 "compression", "timestamp_type", "is_control"}
CORE_LEGACY_BATCH = {"next_offset"}
CORE_RECORD = {"offset", "timestamp", "timestamp_type", "key", "value", "headers"}


def assert_agrees(ours, theirs, who: str) -> None:
    """Every field another reader reports equals kafkarec's, batch by batch, record by record."""
    assert len(ours) == len(theirs), f"{who}: {len(theirs)} batches, kafkarec {len(ours)}"
    for i, ((kb, krecs), (ob, orecs)) in enumerate(zip(ours, theirs)):
        core = CORE_V2_BATCH if kb["magic"] >= 2 else CORE_LEGACY_BATCH
        ob = dict(ob)
        if "next_offset" not in ob and "last_offset" in ob:
            ob["next_offset"] = ob["last_offset"] + 1
        missing = core - set(ob)
        assert not missing, f"{who} view lacks {missing}"
        for name, value in ob.items():
            assert kb[name] == value, (
                f"batch {i} field {name}: kafkarec {kb[name]!r}, {who} {value!r}")
        assert len(krecs) == len(orecs), (
            f"batch {i}: kafkarec {len(krecs)} records, {who} {len(orecs)}")
        for j, (kr, orec) in enumerate(zip(krecs, orecs)):
            assert CORE_RECORD <= set(orec)
            for name, value in orec.items():
                assert kr[name] == value, (
                    f"batch {i} record {j} field {name}: kafkarec {kr[name]!r}, {who} {value!r}")


def expected_v2_records(records, *, base_offset: int = 0, base_sequence: int = -1,
                        log_append_time: int | None = None) -> list[dict]:
    """What Java's DefaultRecord.readFrom yields for records built with Rec.offset as
    the offset delta (kafka-python / aiokafka builders)."""
    out = []
    for rec in records:
        out.append({
            "offset": base_offset + rec.offset,
            "timestamp": rec.timestamp if log_append_time is None else log_append_time,
            "timestamp_type": 0 if log_append_time is None else 1,
            "key": None if rec.key is None else bytes(rec.key),
            "value": None if rec.value is None else bytes(rec.value),
            "headers": [(k, None if v is None else bytes(v)) for k, v in rec.headers],
            "sequence": java_sequence(base_sequence, rec.offset),
        })
    return out


def assert_records_equal(got: list[dict], expected: list[dict]) -> None:
    assert len(got) == len(expected)
    for j, (g, e) in enumerate(zip(got, expected)):
        for name, value in e.items():
            assert g[name] == value, f"record {j} field {name}: got {g[name]!r}, expected {value!r}"
