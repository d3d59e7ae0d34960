# Control records, as Kafka's ControlRecordType / EndTransactionMarker read and write them.
#
# Key (every control type): version int16 | type int16.  ABORT/COMMIT value: version int16 |
# coordinatorEpoch int32.  Short keys or values and negative versions are errors; longer ones are read as
# far as known (strict mode refuses the extra bytes), as Kafka does.
#
# KRaft control values (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters) are Kafka generated
# messages, decoded and encoded by the internal schema plans (kafkarec.control, over _kmsg.pxi's walk).
# That codec is registered with set_control_codec() as part of this module's first load, by the one loader
# of the core (kafkarec/_boot/loader.py, its hook in kafkarec/__init__.py): the core asks it and never
# imports the outer package.

cdef object _kraft_codec = None


def set_control_codec(codec, /) -> None:
    """Register the codec of KRaft control values: an object with ``decode(type_id, value, position,
    strict) -> dict | None`` and ``encode(type_id, value: dict) -> bytes`` (kafkarec.control)."""
    global _kraft_codec
    _kraft_codec = codec


cdef object kraft_codec():
    if _kraft_codec is None:
        raise RuntimeError("no control value codec registered (kafkarec._core was loaded without kafkarec's "
                           "loader, kafkarec/_boot/loader.py, which registers it)")
    return _kraft_codec


def parse_control_key(key, /, Py_ssize_t position=0, bint strict=False) -> tuple:
    """``(version, type_id)`` of a control record key."""
    cdef _Buffer buf
    cdef int16_t version, type_id
    if key is None:
        raise InvalidRecordError("control record has a null key", position)
    buf = buffer_of(key)
    if buf.size < 4:
        raise InvalidRecordError(
            "Invalid value size found for end control record key. Must have at least 4 bytes, "
            f"but found only {buf.size}", position)
    version = <int16_t>kr_load_be16(buf.ptr)
    type_id = <int16_t>kr_load_be16(buf.ptr + 2)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for control record: {version}. May indicate data corruption", position)
    if strict and buf.size != 4:
        raise InvalidRecordError(f"control record key of {buf.size} bytes (4 expected)", position)
    return version, type_id


def parse_end_txn_marker(value, /, Py_ssize_t position=0, bint strict=False) -> tuple:
    """``(version, coordinator_epoch)`` of an ABORT/COMMIT marker value."""
    cdef _Buffer buf = buffer_of(value) if value is not None else None
    cdef int16_t version
    if buf is None or buf.size < 6:
        raise InvalidRecordError(
            "Invalid value size found for end transaction marker. Must have at least 6 bytes, "
            f"but found only {0 if buf is None else buf.size}", position)
    version = <int16_t>kr_load_be16(buf.ptr)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for end transaction marker: {version}. May indicate data corruption",
            position)
    if strict and buf.size != 6:
        raise InvalidRecordError(f"end transaction marker value of {buf.size} bytes (6 expected)", position)
    return version, <int32_t>kr_load_be32(buf.ptr + 2)


def parse_control_value(int type_id, value, /, Py_ssize_t position=0, bint strict=False):
    """The value of a control record of type `type_id` as a dict with Kafka's JSON field names (what
    kafka-dump-log prints): ABORT/COMMIT ``{"version", "coordinatorEpoch"}``; KRaft types their message's
    fields (``{"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], ...}``, UUIDs as Kafka's base64
    text), read at version 0 as Kafka reads them; None for unknown types. Malformed values raise
    InvalidRecordError at `position` (the record's)."""
    if type_id == 0 or type_id == 1:
        version, epoch = parse_end_txn_marker(value, position, strict)
        return {"version": version, "coordinatorEpoch": epoch}
    return kraft_codec().decode(type_id, value, position, strict)


def encode_control_key(control_type, /, int16_t version=0) -> bytes:
    """A control record key: version int16 | type int16."""
    kind = ControlRecordType(control_type)
    if kind is ControlRecordType.UNKNOWN:
        raise ValueError("Cannot append record with unknown control record type")
    cdef int16_t type_id = int(kind)
    cdef uint8_t out[4]
    kr_store_be16(out, <uint16_t>version)
    kr_store_be16(out + 2, <uint16_t>type_id)
    return PyBytes_FromStringAndSize(<const char *>out, 4)


def encode_control_value(control_type, dict value, /) -> bytes:
    """A control record value from the dict shape parse_control_value returns (missing fields: their
    defaults, version 0)."""
    cdef int16_t version
    cdef int32_t epoch
    cdef uint8_t out[6]
    kind = ControlRecordType(control_type)
    if kind is ControlRecordType.ABORT or kind is ControlRecordType.COMMIT:
        version = value.get("version", 0)
        epoch = value["coordinatorEpoch"]
        kr_store_be16(out, <uint16_t>version)
        kr_store_be32(out + 2, <uint32_t>epoch)
        return PyBytes_FromStringAndSize(<const char *>out, 6)
    return kraft_codec().encode(int(kind), value)
