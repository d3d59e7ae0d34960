"""What a Protobuf message is as a row of Spark's from_protobuf (default options), computed from the protobuf
package's own parse: the oracle the decoder is compared with."""
from __future__ import annotations

import datetime as dt

from google.protobuf import descriptor as _d

_SIGNED32 = {_d.FieldDescriptor.TYPE_UINT32, _d.FieldDescriptor.TYPE_FIXED32}
_SIGNED64 = {_d.FieldDescriptor.TYPE_UINT64, _d.FieldDescriptor.TYPE_FIXED64}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _value(fd, v):
    if fd.type == fd.TYPE_MESSAGE or fd.type == fd.TYPE_GROUP:
        name = fd.message_type.name
        if name in ("Timestamp", "Duration") and [f.name for f in fd.message_type.fields] == ["seconds", "nanos"]:
            micros = v.seconds * 1_000_000 + int(v.nanos / 1000)
            return EPOCH + dt.timedelta(microseconds=micros) if name == "Timestamp" \
                else dt.timedelta(microseconds=micros)
        return row(v)
    if fd.type == fd.TYPE_ENUM:
        ev = fd.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else f"UNKNOWN_ENUM_VALUE_{fd.enum_type.name}_{v}"
    if fd.type in _SIGNED32 and v >= 2**31:
        return v - 2**32            # Spark keeps the bits of an unsigned int in a signed one
    if fd.type in _SIGNED64 and v >= 2**63:
        return v - 2**64
    return v


def _is_zero(fd, v) -> bool:
    if fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        return v == 0 and str(v)[0] != "-"
    return not v


def row(msg) -> dict:
    out = {}
    for fd in msg.DESCRIPTOR.fields:
        v = getattr(msg, fd.name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            out[fd.name] = sorted((k, _value(vfd, v[k])) for k in v)
        elif fd.is_repeated:
            out[fd.name] = [_value(fd, x) for x in v]
        elif fd.has_presence:
            # Spark reads an unset field with an explicit (proto2) default as that default
            out[fd.name] = _value(fd, v) if msg.HasField(fd.name) or fd.has_default_value else None
        else:
            out[fd.name] = None if _is_zero(fd, v) else _value(fd, v)
    return out


def normalize(decoded: dict | None, msg_descriptor) -> dict | None:
    """Sort map entries of a decoded row (the wire keeps no order the oracle could know)."""
    if decoded is None:
        return None
    out = dict(decoded)
    for fd in msg_descriptor.fields:
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            entries = out[fd.name]
            if vfd.message_type is not None:
                entries = [(k, normalize(v, vfd.message_type)) for k, v in entries]
            out[fd.name] = sorted(entries)
        elif fd.message_type is not None and out.get(fd.name) is not None \
                and fd.message_type.name not in ("Timestamp", "Duration"):
            if fd.is_repeated:
                out[fd.name] = [normalize(x, fd.message_type) for x in out[fd.name]]
            else:
                out[fd.name] = normalize(out[fd.name], fd.message_type)
    return out
