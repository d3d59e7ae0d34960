"""Kafka record batches built and read by implementations other than kafkarec.

The interop tests decode bytes that kafkarec did not write and compare the
result field by field with what other readers make of the same bytes:

* builders: kafka-python (``DefaultRecordBatchBuilder``, ``MemoryRecordsBuilder``,
  ``LegacyRecordBatchBuilder``) and aiokafka (compiled ``_crecords`` builders and
  the pure-Python fallbacks);
* header surgery and a small record/message encoder written here with
  ``struct``, the ``crc32c`` package (CRC-32C) and ``zlib.crc32`` (CRC-32) —
  never kafkarec's own code — for what the builders cannot produce (control
  batches, LogAppendTime, empty batches, nonzero legacy wrapper offsets, broken
  wrappers);
* readers: kafkarec, kafka-python's ``MemoryRecords`` and aiokafka's readers,
  each turned into plain dicts (``*_view``) so ``assert_agrees`` can compare
  any two of them.

Field names in the views follow kafkarec's; a reader only reports the fields
it has.  Legacy readers' ``None`` timestamps and timestamp types (magic 0)
are mapped to Kafka's ``-1`` sentinels, which is what Java reports.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import crc32c as _crc32c

import kafkarec

# --------------------------------------------------------------- constants

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4

ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

INT32_MAX = 2**31 - 1

# v2 header, as DefaultRecordBatch.java lays it out (61 bytes, big-endian).
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_FIELDS = (
    "base_offset", "length", "partition_leader_epoch", "magic", "crc", "attributes",
    "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
    "producer_epoch", "base_sequence", "record_count",
)
V2_HEADER_SIZE = V2_HEADER.size
assert V2_HEADER_SIZE == 61
V2_CRC_OFFSET = 17
V2_ATTRIBUTES_OFFSET = 21

# Legacy message: offset | size | crc | magic | attributes | [timestamp] | key | value.
LEGACY_HEADER_V0 = struct.Struct(">qiIbb")
LEGACY_HEADER_V1 = struct.Struct(">qiIbbq")
LEGACY_MAGIC_OFFSET = 16


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


# ------------------------------------------------------ independent encoder


def crc32c(data) -> int:
    return _crc32c.crc32c(bytes(data))


def uvarint(n: int) -> bytes:
    assert n >= 0
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def varint(n: int) -> bytes:
    """Zig-zag varint (int32)."""
    assert -(2**31) <= n < 2**31
    return uvarint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def varlong(n: int) -> bytes:
    """Zig-zag varlong (int64)."""
    assert -(2**63) <= n < 2**63
    return uvarint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _nullable(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + bytes(data)


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None,
                  value: bytes | None, headers=(), attributes: int = 0) -> bytes:
    """One v2 record (DefaultRecord.writeTo), length prefix included."""
    body = bytearray([attributes & 0xFF])
    body += varlong(timestamp_delta) + varint(offset_delta)
    body += _nullable(key) + _nullable(value)
    body += varint(len(headers))
    for hkey, hvalue in headers:
        hk = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        body += varint(len(hk)) + hk + _nullable(hvalue)
    return varint(len(body)) + bytes(body)


def v2_batch(payload: bytes, *, record_count: int, last_offset_delta: int, base_offset: int = 0,
             partition_leader_epoch: int = -1, attributes: int = 0, base_timestamp: int = 0,
             max_timestamp: int = 0, producer_id: int = -1, producer_epoch: int = -1,
             base_sequence: int = -1, magic: int = 2) -> bytes:
    """A v2 batch around an (already compressed, if the codec says so) records section."""
    header = V2_HEADER.pack(
        base_offset, V2_HEADER_SIZE - 12 + len(payload), partition_leader_epoch, magic, 0,
        attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
        producer_epoch, base_sequence, record_count,
    )
    return _with_v2_crc(header + bytes(payload))


def _with_v2_crc(batch: bytes) -> bytes:
    crc = crc32c(batch[V2_ATTRIBUTES_OFFSET:])
    return batch[:V2_CRC_OFFSET] + struct.pack(">I", crc) + batch[V2_ATTRIBUTES_OFFSET:]


def v2_fields(batch) -> dict:
    return dict(zip(V2_FIELDS, V2_HEADER.unpack_from(bytes(batch))))


def patch_v2(batch, *, payload: bytes | None = None, set_attributes: int = 0,
             clear_attributes: int = 0, fix_crc: bool = True, **fields) -> bytes:
    """Rewrite header fields (and optionally the records section) of one v2 batch.

    The length follows the payload; the CRC-32C is recomputed unless
    ``fix_crc`` is False (partitionLeaderEpoch and baseOffset are outside it).
    """
    batch = bytes(batch)
    values = v2_fields(batch)
    unknown = set(fields) - set(V2_FIELDS)
    assert not unknown, unknown
    values.update(fields)
    values["attributes"] = (values["attributes"] | set_attributes) & ~clear_attributes
    body = batch[V2_HEADER_SIZE:] if payload is None else bytes(payload)
    if "length" not in fields:
        values["length"] = V2_HEADER_SIZE - 12 + len(body)
    out = V2_HEADER.pack(*(values[name] for name in V2_FIELDS)) + body
    return _with_v2_crc(out) if fix_crc else out


def records_section(batch) -> bytes:
    """The records section of an uncompressed v2 batch (what a codec compresses)."""
    batch = bytes(batch)
    assert batch[16] == 2 and v2_fields(batch)["attributes"] & 0x07 == 0
    return batch[V2_HEADER_SIZE:]


def v2_patch(batch: bytes, *, payload: bytes | None = None, fix_crc: bool = True, **fields) -> bytes:
    """``batch`` with header fields replaced by name (V2_FIELDS); ``payload``
    replaces the records section; length follows the payload and the CRC-32C is
    recomputed unless fix_crc is False."""
    values = dict(zip(V2_FIELDS, V2_HEADER.unpack_from(batch)))
    assert not set(fields) - set(V2_FIELDS)
    values.update(fields)
    body = batch[61:] if payload is None else payload
    values["length"] = 49 + len(body)
    out = bytearray(V2_HEADER.pack(*(values[f] for f in V2_FIELDS)) + body)
    if fix_crc:
        struct.pack_into(">I", out, 17, _crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def split_batches(buffer) -> list[bytes]:
    """Cut a buffer into its entries using only the size field (no decoding)."""
    buffer, out, pos = bytes(buffer), [], 0
    while len(buffer) - pos >= 12:
        (size,) = struct.unpack_from(">i", buffer, pos + 8)
        if pos + 12 + size > len(buffer):
            break
        out.append(buffer[pos:pos + 12 + size])
        pos += 12 + size
    return out


def legacy_message(magic: int, offset: int, *, key: bytes | None, value: bytes | None,
                   attributes: int = 0, timestamp: int = -1, crc: int | None = None) -> bytes:
    """One legacy log entry (LegacyRecord.write) with its CRC-32 over magic..end."""
    body = bytearray([magic & 0xFF, attributes & 0xFF])
    if magic >= 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + bytes(part)
    if crc is None:
        crc = zlib.crc32(body) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, 4 + len(body), crc) + bytes(body)


def legacy_fields(entry) -> dict:
    entry = bytes(entry)
    magic = entry[LEGACY_MAGIC_OFFSET]
    head = (LEGACY_HEADER_V0 if magic == 0 else LEGACY_HEADER_V1).unpack_from(entry)
    fields = dict(zip(("offset", "size", "crc", "magic", "attributes", "timestamp"), head))
    pos = (LEGACY_HEADER_V0 if magic == 0 else LEGACY_HEADER_V1).size
    (klen,) = struct.unpack_from(">i", entry, pos)
    pos += 4
    fields["key"] = None if klen < 0 else entry[pos:pos + klen]
    pos += max(klen, 0)
    (vlen,) = struct.unpack_from(">i", entry, pos)
    pos += 4
    fields["value"] = None if vlen < 0 else entry[pos:pos + vlen]
    fields.setdefault("timestamp", -1)
    return fields


def patch_legacy(entry, *, fix_crc: bool = True, **changes) -> bytes:
    """Rebuild one legacy entry with some fields changed (offset, attributes, timestamp,
    key, value, magic); the CRC-32 is recomputed unless fix_crc is False."""
    fields = legacy_fields(entry)
    fields.update(changes)
    crc = None if fix_crc else fields["crc"]
    return legacy_message(fields["magic"], fields["offset"], key=fields["key"],
                          value=fields["value"], attributes=fields["attributes"],
                          timestamp=fields["timestamp"], crc=crc)


def set_legacy_offset(entry, offset: int) -> bytes:
    """Change a legacy entry's offset: it is outside the CRC, so nothing else changes."""
    entry = bytes(entry)
    return struct.pack(">q", offset) + entry[8:]


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


def control_key(type_id: int, version: int = 0) -> bytes:
    return struct.pack(">hh", version, type_id)


def end_txn_value(coordinator_epoch: int, version: int = 0) -> bytes:
    return struct.pack(">hi", version, coordinator_epoch)


# ------------------------------------------------------------------ views


def _ts(value):
    return -1 if value is None else value


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
            rec = {
                "offset": r.offset, "timestamp": _ts(r.timestamp),
                "timestamp_type": _ts(r.timestamp_type), "key": r.key, "value": r.value,
                "headers": list(r.headers),
            }
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
            rec = {
                "offset": r.offset, "timestamp": _ts(r.timestamp),
                "timestamp_type": _ts(r.timestamp_type), "key": r.key, "value": r.value,
                "headers": list(r.headers),
            }
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
