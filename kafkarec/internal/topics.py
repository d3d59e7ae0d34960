"""Framing of Kafka's internal topics: which schema a record's key and value follow, and decoding them.

* coordinator topics (``__consumer_offsets``, ``__share_group_state``): key = int16 record type + key struct
  at version = record type; value = int16 value version + value struct, or null (a tombstone);
* ``__transaction_state``: key = int16 version (0) + TransactionLogKey; value = int16 version + value, or null;
* metadata-style topics (``__cluster_metadata``, ``__remote_log_metadata``): key null; value = unsigned
  varint frame version (1), unsigned varint api key, unsigned varint version, then the struct;
* KRaft control records (in control batches of ``__cluster_metadata`` and ``.checkpoint`` files): key =
  int16 0 + int16 control type, value = the struct at version 0 (no version prefix).
"""
from __future__ import annotations

import re
import struct as _struct
from typing import Any, Dict, NamedTuple, Optional, Tuple

from kafkarec import _core
from kafkarec.enums import ControlRecordType
from kafkarec.errors import InternalRecordError, UnknownRecordTypeError
from kafkarec.internal import schema as _schema
from kafkarec.internal.schemas import DEFAULT as DEFAULT_SCHEMAS

__all__ = ["InternalRecord", "RecordType", "TOPICS", "DEFAULT_SCHEMAS", "decoder_for", "decode", "decode_control", "record_types", "encode_record",
           "decode_consumer_protocol", "SEGMENT_STATES", "PARTITION_DELETE_STATES"]

# topic name -> (framing, schema set)
TOPICS: Dict[str, Tuple[str, str]] = {
    "__consumer_offsets": ("coordinator", "group_coordinator"),
    "__share_group_state": ("coordinator", "share_coordinator"),
    "__transaction_state": ("transaction", "transaction_coordinator"),
    "__cluster_metadata": ("metadata", "metadata"),
    "__remote_log_metadata": ("metadata", "remote_log_metadata"),
}
# the names a user may give instead of the topic (kafka-dump-log's decoder options, the `decode=` option)
ALIASES = {
    "consumer_offsets": "__consumer_offsets", "offsets": "__consumer_offsets",
    "share_group_state": "__share_group_state",
    "transaction_state": "__transaction_state", "transaction_log": "__transaction_state",
    "cluster_metadata": "__cluster_metadata", "metadata": "__cluster_metadata",
    "remote_log_metadata": "__remote_log_metadata",
}
# MetadataRecordType names that are not the snake-cased schema name
_ENUM_NAMES = {"ZkMigrationRecord": "ZK_MIGRATION_STATE_RECORD"}
# KRaft control record types with a struct value -> (schema, the label kafka-dump-log prints)
CONTROL_SCHEMAS = {ControlRecordType.LEADER_CHANGE: ("LeaderChangeMessage", None),
                   ControlRecordType.SNAPSHOT_HEADER: ("SnapshotHeaderRecord", "SnapshotHeader"),
                   ControlRecordType.SNAPSHOT_FOOTER: ("SnapshotFooterRecord", "SnapshotFooter"),
                   ControlRecordType.KRAFT_VERSION: ("KRaftVersionRecord", "KRaftVersion"),
                   ControlRecordType.KRAFT_VOTERS: ("VotersRecord", "KRaftVoters")}
# Kafka's RemoteLogSegmentState and RemotePartitionDeleteState, by their wire ids in
# __remote_log_metadata's records: what kafka-dump-log prints (dumplog) and the states the replay of
# the remote copies moves through (kafkarec/log/remote_metadata.py)
SEGMENT_STATES = ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED",
                  "DELETE_SEGMENT_FINISHED")
PARTITION_DELETE_STATES = ("DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED")


def decoder_for(topic: str) -> str:
    """The internal topic a name stands for: a topic name, a partition folder name
    (``__consumer_offsets-7``), or an alias (``consumer_offsets``, ``cluster_metadata``, ...)."""
    if topic in TOPICS:
        return topic
    if topic in ALIASES:
        return ALIASES[topic]
    m = re.fullmatch(r"(.+)-\d+", topic)
    if m and m.group(1) in TOPICS:
        return m.group(1)
    raise ValueError(f"{topic!r} is not an internal topic kafkarec decodes (one of {', '.join(TOPICS)})")


def _enum_name(schema_name: str) -> str:
    return _ENUM_NAMES.get(schema_name) or re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", schema_name).upper()


class RecordType(NamedTuple):
    """One record type of an internal topic: the key schema and the version its key is read at (None for
    metadata-style topics), the value schema, and the name (schema base name or MetadataRecordType name)."""
    key_schema: Optional[str]
    key_version: Optional[int]
    value_schema: str
    name: str


_TYPES_CACHE: Dict[Tuple[str, str], Dict[int, RecordType]] = {}


def record_types(topic: str, schemas: str = DEFAULT_SCHEMAS) -> Dict[int, RecordType]:
    """Record type (coordinator topics and __transaction_state's key version) or api key (metadata-style
    topics) -> :class:`RecordType`, in schema set `schemas` ("current" or "1eb7644")."""
    topic = decoder_for(topic)
    if (topic, schemas) in _TYPES_CACHE:
        return _TYPES_CACHE[(topic, schemas)]
    framing, set_name = TOPICS[topic]
    out: Dict[int, RecordType] = {}
    msgs = [m for m in _schema.messages(schemas).values() if m.schema_set == set_name]
    if framing == "metadata":
        for m in msgs:
            if m.api_key is not None:
                out[m.api_key] = RecordType(None, None, m.name, _enum_name(m.name))
    else:
        for m in msgs:
            if not m.name.endswith("Key"):
                continue
            base = m.name[:-3]
            if m.kind == "coordinator-key":
                # newer Kafka: the record type is the api key; the key's fields are in every version
                out[m.api_key] = RecordType(m.name, 0, base + "Value", base)
            else:
                # older Kafka: the key's version is the record type
                for t in m.valid_versions:
                    out[t] = RecordType(m.name, t, base + "Value", base)
    _TYPES_CACHE[(topic, schemas)] = out
    return out


class InternalRecord:
    """One decoded internal-topic record.

    ``record_type``: the schema base name (``OffsetCommit``, ``GroupMetadata``, ...), ``TransactionLog``, a
    MetadataRecordType name (``TOPIC_RECORD``), or ``Unknown``. ``key`` / ``value``: dicts (``value`` None
    for a tombstone); ``key_version`` is the record type for coordinator topics; ``api_key`` for
    metadata-style topics. An unknown type or version (default mode) has ``unknown=True`` and keeps
    ``raw_key`` / ``raw_value``.
    """

    __slots__ = ("topic", "record_type", "key_schema", "key_version", "value_schema", "value_version",
                 "api_key", "key", "value", "tombstone", "unknown", "raw_key", "raw_value")

    def __init__(self, topic, record_type, key_schema=None, key_version=None, value_schema=None,
                 value_version=None, api_key=None, key=None, value=None, tombstone=False, unknown=False,
                 raw_key=None, raw_value=None):
        self.topic: str = topic
        self.record_type: str = record_type
        self.key_schema: Optional[str] = key_schema
        self.key_version: Optional[int] = key_version
        self.value_schema: Optional[str] = value_schema
        self.value_version: Optional[int] = value_version
        self.api_key: Optional[int] = api_key
        self.key: Optional[Dict[str, Any]] = key
        self.value: Optional[Dict[str, Any]] = value
        self.tombstone: bool = tombstone
        self.unknown: bool = unknown
        self.raw_key: Optional[bytes] = raw_key
        self.raw_value: Optional[bytes] = raw_value

    def as_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return (f"InternalRecord({self.record_type}, key={self.key!r}, value_version={self.value_version}, "
                f"value={self.value!r})")


def _int16(data, pos: int, what: str) -> int:
    if len(data) < pos + 2:
        raise InternalRecordError(f"{what}: needs 2 bytes but {max(0, len(data) - pos)} are left", pos)
    return _struct.unpack_from(">h", data, pos)[0]


def _struct_at(name: str, version: int, data, start: int, json: bool, strict: bool,
               schemas: str = DEFAULT_SCHEMAS):
    plan = _schema.plan(name, version, json, schemas)
    value, _end = _core.kmsg_decode(plan, data, start, json=json, strict=strict, exact=strict)
    return value


def decode_consumer_protocol(kind: str, data: Optional[bytes], *, json: bool = False,
                             schemas: str = DEFAULT_SCHEMAS) -> Optional[dict]:
    """The consumer protocol's embedded subscription or assignment (``kind`` = "subscription" or
    "assignment"): int16 version + ConsumerProtocolSubscription / ConsumerProtocolAssignment. None if the
    bytes do not parse (unknown version, empty, truncated), as kafka-dump-log then shows them raw."""
    if data is None or len(data) < 2:
        return None
    name = "ConsumerProtocolSubscription" if kind == "subscription" else "ConsumerProtocolAssignment"
    version = _struct.unpack_from(">h", data, 0)[0]
    if version not in _schema.message(name, schemas).valid_versions:
        return None
    try:
        return _struct_at(name, version, data, 2, json, False, schemas)
    except InternalRecordError:
        return None


def _with_consumer_protocol(value: dict, json: bool, schemas: str) -> dict:
    # kafka-dump-log (and the fixtures' value_json) read each member's subscription and assignment when the
    # group's protocol type is "consumer"; bytes that do not parse stay as they are.
    if value.get("protocolType") != "consumer":
        return value
    import base64
    for member in value.get("members") or ():
        for kind in ("subscription", "assignment"):
            raw = member.get(kind)
            if raw is None:
                continue
            data = base64.b64decode(raw) if json else raw
            decoded = decode_consumer_protocol(kind, data, json=json, schemas=schemas)
            if decoded is not None:
                member[kind] = decoded
    return value


def _short_uvarint(value, pos: int, what: str, strict: bool) -> Tuple[int, int]:
    # AbstractApiMessageSerde.unsignedIntToShort: an unsigned varint that must fit Java's short
    n, end = _core.kmsg_uvarint(value, pos, strict=strict)
    if n > 0x7FFF:
        raise InternalRecordError(f"{what} {n} is past 32767 (Kafka: Value for {what} was too large)", pos)
    return n, end


def _unknown(topic, strict, reason, position, **kw) -> InternalRecord:
    if strict:
        raise UnknownRecordTypeError(reason, position)
    return InternalRecord(topic, "Unknown", unknown=True, **kw)


def decode(topic: str, key: Optional[bytes], value: Optional[bytes], *, strict: bool = False,
           strict_types: Optional[bool] = None, json: bool = False, consumer_protocol: bool = True,
           schemas: str = DEFAULT_SCHEMAS) -> InternalRecord:
    """Decode one data record's key and value of an internal topic into an :class:`InternalRecord`.

    ``json=True`` gives the objects exactly as Kafka's JsonConverter writes them (bytes as base64 text,
    tagged fields only when not their default) — the ``data`` objects of kafka-dump-log's output.
    ``consumer_protocol``: decode GroupMetadataValue members' subscription/assignment when the protocol
    type is ``consumer``. Two separate options: ``strict`` (the strict format) refuses invalid UTF-8, bytes
    after a struct, repeated or mis-sized tagged fields and unsigned varints past 32 bits, which Kafka's
    readers let pass; ``strict_types`` (default: ``strict``) raises
    :class:`~kafkarec.errors.UnknownRecordTypeError` for an unknown record type or version, which otherwise
    gives an ``unknown`` record. Malformed bytes raise :class:`~kafkarec.errors.InternalRecordError` with
    the byte position in the key or value; so does an api key or version of a metadata-style record past
    32767, as Kafka's MetadataRecordSerde refuses it (both are int16 there).
    ``schemas``: the schema set, "current" (Kafka trunk d79bd502, the default) or "1eb7644" (4.0.0-SNAPSHOT)."""
    topic = decoder_for(topic)
    framing, _set = TOPICS[topic]
    types = record_types(topic, schemas)
    if strict_types is None:
        strict_types = strict
    raw_key = None if key is None else bytes(key)
    raw_value = None if value is None else bytes(value)
    if framing == "metadata":
        if value is None:
            raise InternalRecordError(f"{topic} records carry a value; this one is null", 0)
        frame, pos = _core.kmsg_uvarint(value, 0, strict=strict)
        api_key, pos = _short_uvarint(value, pos, "api key", strict)
        version, pos = _short_uvarint(value, pos, "version", strict)
        if frame != 1:
            return _unknown(topic, strict_types, f"frame version {frame} (only 1 is known)", 0, api_key=api_key,
                            value_version=version, raw_key=raw_key, raw_value=raw_value)
        if api_key not in types:
            return _unknown(topic, strict_types, f"unknown api key {api_key}", 1, api_key=api_key,
                            value_version=version, raw_key=raw_key, raw_value=raw_value)
        _k, _kv, vschema, name = types[api_key]
        if version not in _schema.message(vschema, schemas).valid_versions:
            return _unknown(topic, strict_types, f"{vschema} has no version {version}", 1, api_key=api_key,
                            value_version=version, raw_key=raw_key, raw_value=raw_value)
        data = _struct_at(vschema, version, value, pos, json, strict, schemas)
        return InternalRecord(topic, name, value_schema=vschema, value_version=version, api_key=api_key,
                              value=data)
    if key is None:
        raise InternalRecordError(f"{topic} records carry a key; this one is null", 0)
    ktype = _int16(key, 0, "record type")
    vversion = None if value is None else _int16(value, 0, "value version")
    if ktype not in types:
        return _unknown(topic, strict_types, f"unknown record type {ktype}" if framing == "coordinator"
                        else f"unknown key version {ktype}", 0, key_version=ktype, value_version=vversion,
                        raw_key=raw_key, raw_value=raw_value, tombstone=value is None)
    kschema, key_version, vschema, name = types[ktype]
    kdata = _struct_at(kschema, key_version, key, 2, json, strict, schemas)
    if value is None:
        return InternalRecord(topic, name, key_schema=kschema, key_version=ktype, key=kdata, tombstone=True)
    if vversion not in _schema.message(vschema, schemas).valid_versions:
        if strict_types:
            raise UnknownRecordTypeError(f"{vschema} has no version {vversion}", 0)
        return InternalRecord(topic, name, key_schema=kschema, key_version=ktype, key=kdata,
                              value_schema=vschema, value_version=vversion, unknown=True,
                              raw_key=raw_key, raw_value=raw_value)
    vdata = _struct_at(vschema, vversion, value, 2, json, strict, schemas)
    if consumer_protocol and vschema == "GroupMetadataValue":
        vdata = _with_consumer_protocol(vdata, json, schemas)
    return InternalRecord(topic, name, key_schema=kschema, key_version=ktype, key=kdata,
                          value_schema=vschema, value_version=vversion, value=vdata)


def decode_control(control_type_id: int, value: Optional[bytes], *, json: bool = False,
                   strict: bool = False, schemas: str = DEFAULT_SCHEMAS) -> Optional[dict]:
    """The struct of a KRaft control record (LeaderChange, SnapshotHeader/Footer, KRaftVersion, KRaftVoters),
    read at version 0 as Kafka does; None for other control types (transaction markers)."""
    if control_type_id not in CONTROL_SCHEMAS or value is None:
        return None
    return _struct_at(CONTROL_SCHEMAS[control_type_id][0], 0, value, 0, json, strict, schemas)


def encode_record(topic: str, record_type, key: Optional[Dict[str, Any]], value: Optional[Dict[str, Any]],
                  value_version: int = 0, *, schemas: str = DEFAULT_SCHEMAS) -> Tuple[Optional[bytes], Optional[bytes]]:
    """Key and value bytes of one record of `topic`, framed as Kafka writes them (the inverse of
    :func:`decode`, for tests and fixtures). ``record_type``: the record type / api key number or its name
    (``"OffsetCommit"``, ``"TOPIC_RECORD"``); ``value=None`` writes a tombstone (coordinator topics)."""
    topic = decoder_for(topic)
    framing = TOPICS[topic][0]
    types = record_types(topic, schemas)
    if not isinstance(record_type, int):
        matches = [t for t, rt in types.items() if rt.name == record_type]
        if not matches:
            raise ValueError(f"{topic} has no record type {record_type!r}")
        record_type = max(matches)
    kschema, key_version, vschema, _name = types[record_type]
    if framing == "metadata":
        if value is None:
            raise ValueError(f"{topic} records have no tombstones")
        uvarint = _core.kmsg_encode_uvarint
        head = uvarint(1) + uvarint(record_type) + uvarint(value_version)
        return None, head + _schema.encode(vschema, value_version, value, schemas)
    kbytes = _struct.pack(">h", record_type) + _schema.encode(kschema, key_version, key or {}, schemas)
    if value is None:
        return kbytes, None
    return kbytes, _struct.pack(">h", value_version) + _schema.encode(vschema, value_version, value, schemas)
