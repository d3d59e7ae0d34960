"""Control records: keys and values as Kafka writes them.

Key (every control type): ``version int16 | type int16``.  Values:

* ABORT / COMMIT (EndTxnMarker): ``version int16 | coordinatorEpoch int32``.
* KRaft types (LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion,
  Voters): Kafka's generated message encoding at version 0 without a version
  prefix; the first field is a data field named Version.  All are "flexible":
  compact arrays/strings (uvarint length+1) and a tagged-field section ending
  every struct.

Parsing follows Kafka's ControlRecordType / EndTransactionMarker rules and its
generated readers: short keys or values, negative versions and null arrays or
strings are errors; higher versions are read as version 0; extra bytes are
ignored and invalid UTF-8 in strings is replaced.  ``strict=True`` (what a
record read with ``strict=True`` passes) rejects the extra bytes, the invalid
UTF-8 and unsigned varints with bits past 32, as Kafka's writers never write them.
"""
from __future__ import annotations

import struct
import uuid

from kafkarec._core import java_utf8_decode
from kafkarec.enums import ControlRecordType
from kafkarec.errors import EncodeError, InvalidRecordError

__all__ = [
    "parse_control_key", "parse_end_txn_marker", "parse_control_value",
    "encode_control_key", "encode_control_value",
]

_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")


def parse_control_key(key: bytes | None, position: int = 0, strict: bool = False) -> tuple[int, int]:
    """Return ``(version, type_id)`` of a control record key."""
    if key is None:
        raise InvalidRecordError("control record has a null key", position)
    if len(key) < 4:
        raise InvalidRecordError(
            "Invalid value size found for end control record key. Must have at least 4 bytes, "
            f"but found only {len(key)}", position)
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for control record: {version}. May indicate data corruption",
            position)
    if strict and len(key) != _KEY.size:
        raise InvalidRecordError(f"control record key of {len(key)} bytes (4 expected)", position)
    return version, type_id


def parse_end_txn_marker(value: bytes | None, position: int = 0,
                         strict: bool = False) -> tuple[int, int]:
    """Return ``(version, coordinator_epoch)`` of an ABORT/COMMIT marker value."""
    if value is None or len(value) < _END_TXN.size:
        raise InvalidRecordError(
            "Invalid value size found for end transaction marker. Must have at least 6 bytes, "
            f"but found only {0 if value is None else len(value)}", position)
    version, epoch = _END_TXN.unpack_from(value)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for end transaction marker: {version}. "
            "May indicate data corruption", position)
    if strict and len(value) != _END_TXN.size:
        raise InvalidRecordError(
            f"end transaction marker value of {len(value)} bytes (6 expected)", position)
    return version, epoch


class _Reader:
    """Kafka's flexible-version message encoding, read with bounds checks."""

    def __init__(self, data: bytes, position: int, what: str, strict: bool = False) -> None:
        self.data = data
        self.pos = 0
        self.position = position
        self.what = what
        self.strict = strict

    def fail(self, reason: str):
        raise InvalidRecordError(f"{self.what} value: {reason} (value byte {self.pos})",
                                 self.position)

    def take(self, n: int) -> bytes:
        if n < 0 or n > len(self.data) - self.pos:
            self.fail(f"needs {n} bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def uint16(self) -> int:
        return struct.unpack(">H", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self) -> int:
        value = 0
        for i in range(5):
            b = self.take(1)[0]
            value |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                if self.strict and value > 0xFFFFFFFF:
                    self.fail("unsigned varint has bits past 32")
                return value & 0xFFFFFFFF
        self.fail("unsigned varint is too long")

    def uuid(self) -> str:
        return str(uuid.UUID(bytes=self.take(16)))

    def compact_string(self, field: str) -> str:
        """A non-nullable string; invalid UTF-8 is replaced as Java's readString does."""
        n = self.uvarint() - 1
        if n < 0:
            self.fail(f"non-nullable field {field} was serialized as null")
        raw = self.take(n)
        if self.strict:
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                self.fail(f"field {field} is not valid UTF-8")
        return java_utf8_decode(raw)

    def compact_array(self, item, field: str) -> list:
        """A non-nullable array (Kafka's generated readers refuse a null one)."""
        n = self.uvarint() - 1
        if n < 0:
            self.fail(f"non-nullable field {field} was serialized as null")
        if n > len(self.data) - self.pos:
            self.fail(f"array of {n} items cannot fit in the remaining bytes")
        return [item() for _ in range(n)]

    def tagged_fields(self) -> dict[int, bytes]:
        tags = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            tags[tag] = self.take(self.uvarint())
        return tags


def _leader_change(r: _Reader) -> dict:
    def voter():
        v = {"voter_id": r.int32()}
        r.tagged_fields()
        return v
    out = {"version": r.int16(), "leader_id": r.int32(),
           "voters": r.compact_array(voter, "voters"),
           "granting_voters": r.compact_array(voter, "grantingVoters")}
    r.tagged_fields()
    return out


def _snapshot_header(r: _Reader) -> dict:
    out = {"version": r.int16(), "last_contained_log_timestamp": r.int64()}
    r.tagged_fields()
    return out


def _snapshot_footer(r: _Reader) -> dict:
    out = {"version": r.int16()}
    r.tagged_fields()
    return out


def _kraft_version(r: _Reader) -> dict:
    out = {"version": r.int16(), "kraft_version": r.int16()}
    r.tagged_fields()
    return out


def _voters(r: _Reader) -> dict:
    def endpoint():
        e = {"name": r.compact_string("name"), "host": r.compact_string("host"), "port": r.uint16()}
        r.tagged_fields()
        return e

    def voter():
        v = {"voter_id": r.int32(), "voter_directory_id": r.uuid(),
             "endpoints": r.compact_array(endpoint, "endpoints")}
        feature = {"min_supported_version": r.int16(), "max_supported_version": r.int16()}
        r.tagged_fields()
        v["kraft_version_feature"] = feature
        r.tagged_fields()
        return v
    out = {"version": r.int16(), "voters": r.compact_array(voter, "voters")}
    r.tagged_fields()
    return out


_VALUE_PARSERS = {
    ControlRecordType.LEADER_CHANGE: _leader_change,
    ControlRecordType.SNAPSHOT_HEADER: _snapshot_header,
    ControlRecordType.SNAPSHOT_FOOTER: _snapshot_footer,
    ControlRecordType.KRAFT_VERSION: _kraft_version,
    ControlRecordType.KRAFT_VOTERS: _voters,
}


def parse_control_value(type_id: int, value: bytes | None, position: int = 0,
                        strict: bool = False) -> dict | None:
    """Decode a control record value into a dict (None for UNKNOWN types)."""
    kind = ControlRecordType.from_id(type_id)
    if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        version, epoch = parse_end_txn_marker(value, position, strict)
        return {"version": version, "coordinator_epoch": epoch}
    parser = _VALUE_PARSERS.get(kind)
    if parser is None:
        return None
    if value is None:
        raise InvalidRecordError(f"{kind.name} control record has a null value", position)
    reader = _Reader(value, position, kind.name, strict)
    out = parser(reader)
    if strict and reader.pos != len(value):
        reader.fail(f"{len(value) - reader.pos} bytes after the value")
    return out


# --- writing -------------------------------------------------------------

def encode_control_key(kind: ControlRecordType | int, version: int = 0) -> bytes:
    kind = ControlRecordType(kind)
    if kind is ControlRecordType.UNKNOWN:
        raise ValueError("Cannot append record with unknown control record type")
    return _KEY.pack(version, int(kind))


def encode_uvarint(n: int) -> bytes:
    """An unsigned varint as Kafka's message protocol writes it (compact lengths, tags)."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _compact_array(items, encode) -> bytes:
    if items is None:
        # Every array of these messages is non-nullable: Kafka would not read it back.
        raise EncodeError("control record arrays cannot be null (Kafka's readers refuse them)")
    return encode_uvarint(len(items) + 1) + b"".join(encode(i) for i in items)


def _compact_string(s: str | None) -> bytes:
    if s is None:
        raise EncodeError("control record strings cannot be null (Kafka's readers refuse them)")
    raw = s.encode("utf-8")
    return encode_uvarint(len(raw) + 1) + raw


def encode_control_value(kind: ControlRecordType | int, value: dict) -> bytes:
    """Encode a control record value from the dict shape parse_control_value returns."""
    kind = ControlRecordType(kind)
    v = value.get("version", 0)
    if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return _END_TXN.pack(v, value["coordinator_epoch"])
    if kind is ControlRecordType.LEADER_CHANGE:
        def voter(x):
            return struct.pack(">i", x["voter_id"]) + b"\x00"
        return (struct.pack(">hi", v, value["leader_id"])
                + _compact_array(value.get("voters", []), voter)
                + _compact_array(value.get("granting_voters", []), voter) + b"\x00")
    if kind is ControlRecordType.SNAPSHOT_HEADER:
        return struct.pack(">hq", v, value["last_contained_log_timestamp"]) + b"\x00"
    if kind is ControlRecordType.SNAPSHOT_FOOTER:
        return struct.pack(">h", v) + b"\x00"
    if kind is ControlRecordType.KRAFT_VERSION:
        return struct.pack(">hh", v, value["kraft_version"]) + b"\x00"
    if kind is ControlRecordType.KRAFT_VOTERS:
        def endpoint(e):
            return (_compact_string(e["name"]) + _compact_string(e["host"])
                    + struct.pack(">H", e["port"]) + b"\x00")

        def voter(x):
            f = x["kraft_version_feature"]
            return (struct.pack(">i", x["voter_id"]) + uuid.UUID(x["voter_directory_id"]).bytes
                    + _compact_array(x["endpoints"], endpoint)
                    + struct.pack(">hh", f["min_supported_version"], f["max_supported_version"])
                    + b"\x00" + b"\x00")
        return struct.pack(">h", v) + _compact_array(value["voters"], voter) + b"\x00"
    raise ValueError(f"Cannot append record with unknown control record type {kind}")
