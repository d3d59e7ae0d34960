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
            seconds = v.seconds - 2**64 if v.seconds >= 2**63 else v.seconds    # a uint64 is a Java long
            nanos = v.nanos - 2**32 if v.nanos >= 2**31 else v.nanos            # a uint32 is a Java int
            micros = seconds * 1_000_000 + int(nanos / 1000)
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
            if vfd.message_type is not None and not _is_time(vfd.message_type):
                entries = [(k, normalize(v, vfd.message_type)) for k, v in entries]
            out[fd.name] = sorted(entries)
        elif fd.message_type is not None and out.get(fd.name) is not None and not _is_time(fd.message_type):
            if fd.is_repeated:
                out[fd.name] = [normalize(x, fd.message_type) for x in out[fd.name]]
            else:
                out[fd.name] = normalize(out[fd.name], fd.message_type)
    return out


# --- from_protobuf with options (Spark's SchemaConverters.structFieldFor and ProtobufDeserializer) ----------

WRAPPERS = {"google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
            "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.StringValue",
            "google.protobuf.BytesValue", "google.protobuf.FloatValue", "google.protobuf.DoubleValue"}


def _on(options: dict, name: str) -> bool:
    return str(options.get(name, "false")).lower() == "true"


def _is_time(mt) -> bool:
    return mt.name in ("Timestamp", "Duration") and [f.name for f in mt.fields] == ["seconds", "nanos"]


class JsonText:
    """What convert.any.fields.to.json gives for an Any: equal to a JSON text whose value is the protobuf
    package's json_format of the Any (Java's text itself is compared in test_any_json.py)."""

    def __init__(self, any_msg, enums_as_ints: bool) -> None:
        from google.protobuf import json_format
        self.value = json_format.MessageToDict(any_msg, preserving_proto_field_name=True,
                                               use_integers_for_enums=enums_as_ints)

    def __eq__(self, other) -> bool:
        import json
        return isinstance(other, str) and json.loads(other) == self.value

    def __repr__(self) -> str:
        return f"JsonText({self.value!r})"


def _is_any_json(mt, options: dict) -> bool:
    return mt.full_name == "google.protobuf.Any" and _on(options, "convert.any.fields.to.json")


def _kept(fd, options: dict, depth_of: dict):
    """None when Spark leaves the field out of the struct, else the depth map its message is read with."""
    mt = fd.message_type
    if mt is None or _is_any_json(mt, options):
        return depth_of
    if _is_time(mt) or (_on(options, "unwrap.primitive.wrapper.types") and mt.full_name in WRAPPERS):
        return depth_of
    if mt.GetOptions().map_entry:
        # the values' own message (if any) is what goes one level deeper; the entry itself does not count
        return _kept(mt.fields_by_name["value"], options, depth_of)
    name = mt.full_name
    limit = int(options.get("recursive.fields.max.depth", -1))
    if name in depth_of:
        if not 1 <= limit <= 10:
            raise ValueError(f"recursive {name}")
        if depth_of[name] >= limit:
            return None
    inner = {**depth_of, name: depth_of.get(name, 0) + 1}
    if not any(_kept(f, options, inner) is not None for f in mt.fields) and \
            not _on(options, "retain.empty.message.types"):
        return None
    return inner


def _scalar(fd, v, options: dict, depth_of: dict):
    mt = fd.message_type
    if mt is not None:
        if _is_time(mt):
            return _value(fd, v)
        if _is_any_json(mt, options):
            return JsonText(v, _on(options, "enums.as.ints"))
        if _on(options, "unwrap.primitive.wrapper.types") and mt.full_name in WRAPPERS:
            inner = mt.fields_by_name["value"]
            raw = v.value
            if not _on(options, "emit.default.values") and _is_zero(inner, raw):
                return None             # the wrapper's value has no presence: 0 is "not set"
            return _scalar(inner, raw, options, depth_of)
        return row_with(v, options, depth_of)
    if fd.type == fd.TYPE_ENUM and _on(options, "enums.as.ints"):
        return int(v)
    if fd.type == fd.TYPE_UINT32 and _on(options, "upcast.unsigned.ints"):
        return v
    if fd.type == fd.TYPE_UINT64 and _on(options, "upcast.unsigned.ints"):
        import decimal
        return decimal.Decimal(v)
    return _value(fd, v)


def row_with(msg, options: dict, depth_of: dict | None = None) -> dict:
    """What from_protobuf gives for ``msg`` with ``options`` (Spark's names), from the protobuf package's parse."""
    if depth_of is None:
        depth_of = {msg.DESCRIPTOR.full_name: 1}
    out = {}
    emit = _on(options, "emit.default.values")
    for fd in msg.DESCRIPTOR.fields:
        inner = _kept(fd, options, depth_of)
        if inner is None:
            continue
        v = getattr(msg, fd.name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            out[fd.name] = sorted((k, _scalar(vfd, v[k], options, inner)) for k in v)
        elif fd.is_repeated:
            out[fd.name] = [_scalar(fd, x, options, inner) for x in v]
        elif fd.has_presence:
            out[fd.name] = _scalar(fd, v, options, inner) if msg.HasField(fd.name) or fd.has_default_value \
                else None
        else:
            out[fd.name] = _scalar(fd, v, options, inner) if emit or not _is_zero(fd, v) else None
    if not out and _on(options, "retain.empty.message.types"):
        out["__dummy_field_in_empty_struct"] = None
    return out


def sorted_maps(v):
    """A decoded row with its map entries ((key, value) lists) sorted by key: the wire keeps an order the
    oracle cannot know."""
    if isinstance(v, dict):
        return {k: sorted_maps(x) for k, x in v.items()}
    if isinstance(v, list):
        items = [sorted_maps(x) for x in v]
        if items and all(isinstance(x, tuple) and len(x) == 2 for x in items):
            return sorted(items, key=lambda kv: kv[0])
        return items
    if isinstance(v, tuple):
        return tuple(sorted_maps(x) for x in v)
    return v


def same_values(a, b) -> bool:
    """Decoded values equal, a NaN equal to a NaN (a float field may hold one: both sides read the
    same bits), through dicts and lists."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    return a == b
