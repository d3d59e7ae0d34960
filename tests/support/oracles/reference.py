"""The tests' one reference encoder of Kafka's record format.

Written from Kafka's own description of the format (``DefaultRecord``,
``DefaultRecordBatch``, ``LegacyRecord``, ``ControlRecordType``,
``EndTransactionMarker``) with ``struct``, the ``crc32c`` package (CRC-32C)
and ``zlib.crc32`` (CRC-32) only: it never imports kafkarec, so the bytes it
makes are independent of the code under test.  Every test that needs bytes
kafkarec did not write itself (hand-made records and batches, header
surgery, broken lengths, recomputed or stale CRCs) takes them from here;
``foreign.py`` re-exports these names next to the other implementations'
builders and readers.
"""

from __future__ import annotations

import struct
import zlib

import crc32c as _crc32c

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
V2_ATTRIBUTES_OFFSET = 21       # the CRC-32C covers attributes..end

# Legacy message: offset | size | crc | magic | attributes | [timestamp] | key | value.
LEGACY_HEADER_V0 = struct.Struct(">qiIbb")
LEGACY_HEADER_V1 = struct.Struct(">qiIbbq")
LEGACY_CRC_OFFSET = 12
LEGACY_MAGIC_OFFSET = 16        # the CRC-32 covers magic..end
MAGIC_OFFSET = 16               # where every entry (legacy or v2) keeps its magic byte

# --------------------------------------------------------------- checksums


def crc32c(data) -> int:
    return _crc32c.crc32c(bytes(data))


def with_v2_crc(batch) -> bytes:
    """A v2 batch with its CRC-32C (over attributes..end) recomputed, whatever its magic byte says."""
    batch = bytearray(batch)
    struct.pack_into(">I", batch, V2_CRC_OFFSET, crc32c(batch[V2_ATTRIBUTES_OFFSET:]))
    return bytes(batch)


def with_legacy_crc(entry) -> bytes:
    """A legacy message with its CRC-32 (over magic..end) recomputed."""
    entry = bytearray(entry)
    struct.pack_into(">I", entry, LEGACY_CRC_OFFSET,
                     zlib.crc32(bytes(entry[LEGACY_MAGIC_OFFSET:])) & 0xFFFFFFFF)
    return bytes(entry)


def with_crc(entry) -> bytes:
    """One log entry with the checksum its magic byte calls for recomputed."""
    return with_v2_crc(entry) if entry[MAGIC_OFFSET] >= 2 else with_legacy_crc(entry)


# ----------------------------------------------------------------- varints


def uvarint(n: int) -> bytes:
    """Unsigned varint (ByteUtils.writeUnsignedVarint)."""
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


# ---------------------------------------------------------------- v2 records


def _nullable(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + bytes(data)


def sized_record(body: bytes) -> bytes:
    """A record body (attributes..headers) behind its length varint."""
    return varint(len(body)) + bytes(body)


def encode_record(offset_delta: int = 0, timestamp_delta: int = 0, key: bytes | None = None,
                  value: bytes | None = None, headers=(), attributes: int = 0) -> bytes:
    """One v2 record (DefaultRecord.writeTo), length prefix included.  Header keys
    are str (written as UTF-8) or raw bytes (written as they are, valid or not)."""
    body = bytearray([attributes & 0xFF])
    body += varlong(timestamp_delta) + varint(offset_delta)
    body += _nullable(key) + _nullable(value)
    body += varint(len(headers))
    for hkey, hvalue in headers:
        hk = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        body += varint(len(hk)) + hk + _nullable(hvalue)
    return sized_record(body)


def control_key(type_id: int, version: int = 0) -> bytes:
    """A control record's key (ControlRecordType.recordKey): int16 version, int16 type."""
    return struct.pack(">hh", version, type_id)


def end_txn_value(coordinator_epoch: int, version: int = 0) -> bytes:
    """An ABORT/COMMIT marker's value (EndTransactionMarker): int16 version, int32 epoch."""
    return struct.pack(">hi", version, coordinator_epoch)


# ------------------------------------------------- KRaft control values
# Generated-message encoding (flexible versions): compact lengths are
# uvarint(n + 1), 0 for null; every struct ends with an empty tagged-field count.


def compact_bytes(data: bytes | None) -> bytes:
    """A COMPACT_NULLABLE_STRING / COMPACT_BYTES field."""
    return uvarint(0) if data is None else uvarint(len(data) + 1) + bytes(data)


def compact_array(items: list[bytes] | None) -> bytes:
    """A COMPACT_ARRAY of already encoded elements (None: the null array)."""
    return uvarint(0) if items is None else uvarint(len(items) + 1) + b"".join(items)


def leader_change_value(voters: list[int] | None, granting: list[int] | None, *,
                        leader_id: int = 1, version: int = 0) -> bytes:
    """A LEADER_CHANGE control value (LeaderChangeMessage)."""
    def voter_ids(ids):
        return None if ids is None else [i.to_bytes(4, "big") + b"\x00" for i in ids]
    return (struct.pack(">hi", version, leader_id) + compact_array(voter_ids(voters))
            + compact_array(voter_ids(granting)) + b"\x00")


def voter_bytes(voter_id: int, directory_id: bytes, endpoints, min_version: int,
                max_version: int) -> bytes:
    """One voter of a KRAFT_VOTERS value; endpoints are (name, host, port)."""
    return (struct.pack(">i", voter_id) + bytes(directory_id)
            + compact_array([compact_bytes(name) + compact_bytes(host) + struct.pack(">H", port)
                             + b"\x00" for name, host, port in endpoints])
            + struct.pack(">hh", min_version, max_version) + b"\x00" + b"\x00")


def voters_value(voters: list[bytes], *, version: int = 0) -> bytes:
    """A KRAFT_VOTERS control value (VotersRecord) around encoded voters."""
    return struct.pack(">h", version) + compact_array(voters) + b"\x00"


# ---------------------------------------------------------------- v2 batches


def v2_batch(payload: bytes, *, record_count: int, last_offset_delta: int, base_offset: int = 0,
             partition_leader_epoch: int = -1, attributes: int = 0, base_timestamp: int = 0,
             max_timestamp: int = 0, producer_id: int = -1, producer_epoch: int = -1,
             base_sequence: int = -1, magic: int = 2, crc: int | None = None) -> bytes:
    """A v2 batch around an (already compressed, if the codec says so) records
    section; its CRC-32C is computed unless ``crc`` is given."""
    header = V2_HEADER.pack(
        base_offset, V2_HEADER_SIZE - 12 + len(payload), partition_leader_epoch, magic,
        0 if crc is None else crc, attributes, last_offset_delta, base_timestamp,
        max_timestamp, producer_id, producer_epoch, base_sequence, record_count,
    )
    batch = header + bytes(payload)
    return with_v2_crc(batch) if crc is None else batch


def single_record_batch(record: bytes, *, timestamp: int, **fields) -> bytes:
    """A v2 batch around one encoded record (offset delta 0): count 1, base and max
    timestamp ``timestamp``; other header fields as for v2_batch."""
    return v2_batch(record, record_count=1, last_offset_delta=0, base_timestamp=timestamp,
                    max_timestamp=timestamp, **fields)


def control_record_batch(key: bytes | None, value: bytes | None, *, timestamp: int,
                         attributes: int = ATTR_CONTROL, **fields) -> bytes:
    """A control batch (attributes 0x20 unless given) around one raw record with
    this key and value; other header fields as for v2_batch."""
    return single_record_batch(encode_record(0, 0, key, value), timestamp=timestamp,
                               attributes=attributes, **fields)


def v2_fields(batch) -> dict:
    return dict(zip(V2_FIELDS, V2_HEADER.unpack_from(bytes(batch))))


def patch_v2(batch, *, payload: bytes | None = None, set_attributes: int = 0,
             clear_attributes: int = 0, fix_crc: bool = True, **fields) -> bytes:
    """Rewrite header fields (by name, V2_FIELDS) and optionally the records
    section of one v2 batch.

    The length follows the payload unless given; the CRC-32C is recomputed
    unless ``fix_crc`` is False (partitionLeaderEpoch and baseOffset are
    outside it).
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
    return with_v2_crc(out) if fix_crc else out


def records_section(batch) -> bytes:
    """The records section of an uncompressed v2 batch (what a codec compresses)."""
    batch = bytes(batch)
    assert batch[MAGIC_OFFSET] == 2 and v2_fields(batch)["attributes"] & 0x07 == 0
    return batch[V2_HEADER_SIZE:]


def corrupt_commit_into_abort(marker) -> bytes:
    """A COMMIT marker batch whose control key type (int16 1) was hit into 0
    (ABORT); the stored CRC is still the COMMIT's, so only a CRC check can tell."""
    raw = bytearray(marker)
    key = varint(4) + control_key(1)        # key length 4, version 0, type 1
    assert raw.count(key, V2_HEADER_SIZE) == 1
    raw[raw.index(key, V2_HEADER_SIZE) + 4] = 0
    return bytes(raw)


# ---------------------------------------------------------------- framing


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


# ---------------------------------------------------------------- legacy


def legacy_frame(offset: int, body: bytes, *, crc: int | None = None) -> bytes:
    """A legacy log entry around a message body (magic..value): offset, size and the
    CRC-32 over the body (computed unless given)."""
    if crc is None:
        crc = zlib.crc32(bytes(body)) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, 4 + len(body), crc) + bytes(body)


def legacy_message(magic: int, offset: int, *, key: bytes | None, value: bytes | None,
                   attributes: int = 0, timestamp: int = -1, crc: int | None = None) -> bytes:
    """One legacy log entry (LegacyRecord.write) with its CRC-32 over magic..end."""
    body = bytearray([magic & 0xFF, attributes & 0xFF])
    if magic >= 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + bytes(part)
    return legacy_frame(offset, body, crc=crc)


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
