"""``google.protobuf.Any`` as the JSON text Spark's ``from_protobuf`` gives with ``convert.any.fields.to.json``.

Spark (``ProtobufDeserializer``) prints an Any field's message with protobuf-java-util's
``JsonFormat.printer().omittingInsignificantWhitespace().preservingProtoFieldNames()`` (plus
``.printingEnumsAsInts()`` with ``enums.as.ints``), ``.usingTypeRegistry(...)`` of every message of the
descriptor set it was given (``ProtobufUtils.buildTypeRegistry``: nested messages and map entries included).
:class:`AnyJson` does the same over the plain data of a :class:`~.schema.ProtobufSchema` (the column's
schema), without the protobuf package, so executors need nothing more:

* the Any's ``value`` is parsed as Java's ``DynamicMessage`` parses it (last value wins, embedded messages
  merge, a oneof keeps its last member, a proto3 field set to its zero value is unset, an open enum keeps an
  unknown number, a closed one drops it, strings are checked where Java checks them and otherwise decoded
  with Java's replacement rules, required fields are checked);
* it is printed as ``JsonFormat`` prints: fields in number order under their .proto names, ``"@type"`` first,
  64-bit integers quoted, unsigned ones unsigned, bytes as base64, enums by name (an unknown number as the
  number), floats as ``Float.toString`` / ``Double.toString`` (:mod:`.java_numbers`), NaN and infinities
  quoted, strings escaped as Gson escapes them (HTML-safe), maps as objects (keys quoted, wire order), and the
  well-known types in their own forms (Timestamp, Duration, FieldMask, Struct, Value, ListValue, the wrappers,
  Any in Any).

What Java throws for (a type URL no message of the schema answers, bytes that do not parse, a Timestamp out of
range, a NaN in a Value...) is a :class:`~kafkarec.errors.ProtobufDecodeError` whose ``position`` counts from
the Any's first byte: the record fails, as Spark's row does.
"""
from __future__ import annotations

import base64
import datetime as _dt
import struct

from kafkarec.errors import ProtobufDecodeError
from kafkarec.protobuf.java_numbers import java_double, java_float_bits
from kafkarec.protobuf.schema import (_BOOL, _BYTES, _DOUBLE, _ENUM, _FIXED32, _FIXED64, _FLOAT, _GROUP, _INT32,
                                      _INT64, _MESSAGE, _SFIXED32, _SFIXED64, _SINT32, _SINT64, _STRING, _UINT32,
                                      _UINT64, ProtobufSchema)

__all__ = ["AnyJson", "ANY"]

ANY = "google.protobuf.Any"
#: Java's DynamicMessage parser's recursion limit, per parse (an Any's value is parsed on its own).
MAX_PARSE_DEPTH = 100
#: How deep printed messages may nest, Any values included (Python's stack; Java has no bound).
MAX_PRINT_DEPTH = 150

_VARINT, _I64, _LEN, _SGROUP, _EGROUP, _I32 = 0, 1, 2, 3, 4, 5
_WIRE = {_DOUBLE: _I64, _FIXED64: _I64, _SFIXED64: _I64, _FLOAT: _I32, _FIXED32: _I32, _SFIXED32: _I32,
         _STRING: _LEN, _BYTES: _LEN, _MESSAGE: _LEN, _GROUP: _SGROUP}
_PACKABLE = {_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _UINT32, _ENUM, _SFIXED32,
             _SFIXED64, _SINT32, _SINT64}
_WRAPPERS = {"google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
             "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.StringValue",
             "google.protobuf.BytesValue", "google.protobuf.FloatValue", "google.protobuf.DoubleValue"}
_SPECIAL = _WRAPPERS | {ANY, "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask",
                        "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}

# Gson's (and JsonFormat's) string escapes: control characters as \u00xx (short forms for \t \b \n \r \f),
# the quote and backslash, and for HTML safety < > & = ' and the two line separators JavaScript rejects.
_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\", ord("\t"): "\\t", ord("\b"): "\\b", ord("\n"): "\\n",
                 ord("\r"): "\\r", ord("\f"): "\\f", 0x2028: "\\u2028", 0x2029: "\\u2029"})
_ESCAPES.update({ord(c): f"\\u{ord(c):04x}" for c in "<>&='"})

_EPOCH = _dt.datetime(1970, 1, 1)


def _quoted(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


class _Msg:
    """A parsed message: field number -> value (a list for repeated fields and maps), as DynamicMessage holds
    it; ``unknown``: it kept unknown fields (so it is not its type's default instance)."""
    __slots__ = ("name", "values", "unknown")

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: dict = {}
        self.unknown = False


class _Fail(Exception):
    def __init__(self, reason: str, at: int) -> None:
        self.reason, self.at = reason, at


class AnyJson:
    """``google.protobuf.Any`` bytes -> Spark's JSON text of them (UTF-8), for the messages of ``schema``;
    ``enums_as_ints``: enums as numbers (``enums.as.ints``)."""

    def __init__(self, schema: ProtobufSchema, enums_as_ints: bool = False) -> None:
        self.schema = schema
        self.enums_as_ints = bool(enums_as_ints)
        self._layouts: dict = {}

    def __reduce__(self):
        return (AnyJson, (self.schema, self.enums_as_ints))

    def __call__(self, data) -> bytes:
        data = bytes(data)
        try:
            out: list = []
            self._print_any(self._parse(ANY, data, 0, len(data), 0, None), data, out, 0)
            return "".join(out).encode("utf-8")
        except _Fail as exc:
            raise ProtobufDecodeError(f"{ANY} as JSON: {exc.reason}", exc.at) from None
        except RecursionError:
            raise ProtobufDecodeError(f"{ANY} as JSON: messages nested too deep to print", 0) from None

    # ---------------------------------------------------------------- parsing (Java's DynamicMessage)

    def _layout(self, name: str):
        found = self._layouts.get(name)
        if found is None:
            m = self.schema.messages[name]
            found = ({fd["number"]: fd for fd in m["fields"]}, [fd for fd in m["fields"] if fd.get("required")])
            self._layouts[name] = found
        return found

    def _parse(self, name: str, data: bytes, pos: int, end: int, depth: int, at) -> _Msg:
        """Parse data[pos:end] as message ``name``; ``at``: the position every error reports (bytes that are
        not where the Any's were: merged occurrences), else None (the position itself)."""
        if depth > MAX_PARSE_DEPTH:
            raise _Fail(f"messages nested deeper than {MAX_PARSE_DEPTH} (Java's parser's limit)", _at(at, pos))
        fields, required = self._layout(name)
        msg = _Msg(name)
        values = msg.values
        chunks: dict = {}              # singular message field number -> [(data, start, end, at)]
        oneofs: dict = {}              # oneof index -> the member set last
        while pos < end:
            tag_at = pos
            tag, pos = _varint(data, pos, end, at)
            tag &= 0xFFFFFFFF           # Java reads a tag as a 32-bit varint
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise _Fail("field number 0 (an invalid tag)", _at(at, tag_at))
            if wire == _EGROUP:
                raise _Fail(f"end-group tag of field {number} outside any group", _at(at, tag_at))
            if wire in (6, 7):
                raise _Fail(f"field {number} has wire type {wire}, which protobuf does not define", _at(at, tag_at))
            fd = fields.get(number)
            t = fd["type"] if fd is not None else None
            want = _WIRE.get(t, _VARINT)
            packed = (fd is not None and fd["repeated"] and t in _PACKABLE and wire == _LEN and want != _LEN)
            value_at = pos
            if wire == _LEN:
                size, pos = _varint(data, pos, end, at)
                size &= 0xFFFFFFFF
                if size >= 1 << 31:
                    raise _Fail(f"field {number} claims a negative size", _at(at, value_at))
                if size > end - pos:
                    raise _Fail(f"field {number} declares {size} bytes but only {end - pos} remain",
                                _at(at, value_at))
                start, pos = pos, pos + size
            elif wire == _SGROUP:
                start, body_end, pos = _group(data, pos, end, number, depth, at)
            elif wire == _VARINT:
                raw, pos = _varint(data, pos, end, at)
            else:
                width = 8 if wire == _I64 else 4
                if end - pos < width:
                    raise _Fail(f"field {number}: {width}-byte value needs {width} bytes but only {end - pos} "
                                "remain", _at(at, pos))
                raw = int.from_bytes(data[pos:pos + width], "little")
                pos += width
            if fd is None or (wire != want and not packed):
                msg.unknown = True     # unknown, or a wire type its type does not have: kept as unknown
                continue
            if packed:
                items = []
                p = start
                while p < pos:
                    if want == _VARINT:
                        raw, p = _varint(data, p, pos, at)
                    else:
                        width = 8 if want == _I64 else 4
                        if pos - p < width:
                            raise _Fail(f"field {number}: a packed value runs past its length", _at(at, p))
                        raw, p = int.from_bytes(data[p:p + width], "little"), p + width
                    item = self._scalar(fd, raw)
                    if item is None:
                        msg.unknown = True
                    else:
                        items.append(item)
                values.setdefault(number, []).extend(items)
                continue
            if t in (_MESSAGE, _GROUP):
                stop = pos if wire == _LEN else body_end
                if fd["repeated"]:
                    values.setdefault(number, []).append(
                        self._parse(fd["type_name"], data, start, stop, depth + 1, at))
                    continue
                self._oneof(fd, number, oneofs, values, chunks)
                chunks.setdefault(number, []).append((start, stop))
                values[number] = None          # (its message is parsed once its occurrences are all known)
                continue
            if t == _STRING:
                value = self._string(fd, data, start, pos, at)
            elif t == _BYTES:
                value = data[start:pos]
            else:
                value = self._scalar(fd, raw)
                if value is None:              # a closed enum's unknown number: an unknown field
                    msg.unknown = True
                    continue
            if fd["repeated"]:
                values.setdefault(number, []).append(value)
            else:
                self._oneof(fd, number, oneofs, values, chunks)
                values[number] = value
        for number, parts in chunks.items():
            fd = fields[number]
            if number not in values:
                continue                       # cleared by a later oneof member
            if len(parts) == 1:
                values[number] = self._parse(fd["type_name"], data, parts[0][0], parts[0][1], depth + 1, at)
            else:                              # occurrences merge: parsed as one message
                joined = b"".join(data[s:e] for s, e in parts)
                values[number] = self._parse(fd["type_name"], joined, 0, len(joined), depth + 1,
                                             _at(at, parts[0][0]))
        for number in [n for n, v in values.items() if not fields[n]["presence"] and not fields[n]["repeated"]
                       and _is_zero(fields[n], v)]:
            del values[number]                 # proto3: a field set to its zero value is not set
        if self.schema.messages[name]["map_entry"]:
            for number, fd in fields.items():     # DynamicMessage builds a map entry with both fields set
                if number not in values:
                    values[number] = _Msg(fd["type_name"]) if fd["type"] in (_MESSAGE, _GROUP) else self._zero(fd)
        for fd in required:
            if fd["number"] not in values:
                raise _Fail(f"message {name} lacks its required field {fd['name']!r} (Java's parser refuses it)",
                            _at(at, end))
        return msg

    @staticmethod
    def _oneof(fd: dict, number: int, oneofs: dict, values: dict, chunks: dict) -> None:
        """Setting a oneof member clears the member set before it."""
        o = fd["oneof"]
        if o < 0:
            return
        before = oneofs.get(o)
        if before is not None and before != number:
            values.pop(before, None)
            chunks.pop(before, None)
        oneofs[o] = number

    def _string(self, fd: dict, data: bytes, start: int, end: int, at) -> str:
        raw = data[start:end]
        if fd.get("utf8", True):
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _Fail(f"field {fd['name']!r}: string is not valid UTF-8", _at(at, start)) from None
        from kafkarec._core import java_utf8_decode
        return java_utf8_decode(raw)

    def _zero(self, fd: dict):
        """An unset field's value: its type's zero; an enum's is its first value (0 in an open enum)."""
        if fd["type"] == _ENUM:
            e = self.schema.enums.get(fd["type_name"])
            if e is not None and e["closed"] and e["first"]:
                return next((n for n, v in e["values"].items() if v == e["first"]), 0)
        return _zero(fd)

    def _scalar(self, fd: dict, raw: int):
        """A varint / fixed value as Java holds it (None: a closed enum's unknown number)."""
        t = fd["type"]
        if t in (_INT32, _SFIXED32, _ENUM):
            v = raw & 0xFFFFFFFF
            v = v - (1 << 32) if v >= 1 << 31 else v
            if t == _ENUM:
                e = self.schema.enums.get(fd["type_name"])
                if e is not None and e["closed"] and v not in e["values"]:
                    return None
            return v
        if t in (_INT64, _SFIXED64):
            return raw - (1 << 64) if raw >= 1 << 63 else raw
        if t in (_UINT32, _FIXED32):
            return raw & 0xFFFFFFFF
        if t == _SINT32:
            v = raw & 0xFFFFFFFF
            return (v >> 1) ^ -(v & 1)
        if t == _SINT64:
            return (raw >> 1) ^ -(raw & 1)
        if t == _BOOL:
            return raw != 0
        if t == _FLOAT:
            return ("f", raw & 0xFFFFFFFF)     # the float's bits: printed exactly
        if t == _DOUBLE:
            return struct.unpack("<d", raw.to_bytes(8, "little"))[0]
        return raw                             # uint64, fixed64

    # ---------------------------------------------------------------- printing (JsonFormat's printer)

    def _print_any(self, msg: _Msg, data: bytes, out: list, depth: int) -> None:
        if not msg.values and not msg.unknown:
            out.append("{}")                   # the default instance
            return
        url = msg.values.get(1, "")
        parts = url.split("/")
        while parts and parts[-1] == "":       # Java's String.split drops trailing empty strings
            parts.pop()
        if len(parts) <= 1:
            raise _Fail(f"invalid type url {url!r}", 0)
        name = parts[-1]
        if name not in self.schema.messages:
            raise _Fail(f"cannot find type for url {url!r}: the schema has no message {name}", 0)
        value = msg.values.get(2, b"")
        try:
            content = self._parse(name, value, 0, len(value), 0, None)
        except _Fail as exc:
            raise _Fail(f"the value of type {name}: {exc.reason}", exc.at + _value_offset(data, value)) from None
        if name in _SPECIAL:
            out.append('{"@type":' + _quoted(url) + ',"value":')
            self._print_message(content, data, out, depth + 1)
            out.append("}")
        else:
            self._print_fields(content, data, out, depth + 1, url)

    def _print_message(self, msg: _Msg, data: bytes, out: list, depth: int) -> None:
        if depth > MAX_PRINT_DEPTH:
            raise _Fail(f"messages nested deeper than {MAX_PRINT_DEPTH}", 0)
        name = msg.name
        if name not in _SPECIAL:
            self._print_fields(msg, data, out, depth, None)
        elif name == ANY:
            self._print_any(msg, data, out, depth)
        elif name in _WRAPPERS:
            fields, _ = self._layout(name)
            fd = fields[1]
            self._print_value(fd, msg.values.get(1, _zero(fd)), data, out, depth)
        elif name == "google.protobuf.Timestamp":
            out.append('"' + _timestamp(msg.values.get(1, 0), msg.values.get(2, 0)) + '"')
        elif name == "google.protobuf.Duration":
            out.append('"' + _duration(msg.values.get(1, 0), msg.values.get(2, 0)) + '"')
        elif name == "google.protobuf.FieldMask":
            out.append(_quoted(",".join(_lower_camel(p) for p in msg.values.get(1, ()) if p)))
        elif name == "google.protobuf.Struct":
            fields, _ = self._layout(name)
            self._print_map(fields[1], msg.values.get(1, []), data, out, depth)
        elif name == "google.protobuf.ListValue":
            fields, _ = self._layout(name)
            self._print_list(fields[1], msg.values.get(1, []), data, out, depth)
        else:                                  # google.protobuf.Value: its one field set, or null
            if not msg.values:
                out.append("null")
                return
            if len(msg.values) != 1:
                raise _Fail("google.protobuf.Value with more than one field set", 0)
            fields, _ = self._layout(name)
            (number, value), = msg.values.items()
            fd = fields[number]
            if fd["type"] == _DOUBLE and (value != value or value in (float("inf"), float("-inf"))):
                raise _Fail("google.protobuf.Value cannot hold NaN or an infinity", 0)
            self._print_value(fd, value, data, out, depth)

    def _print_fields(self, msg: _Msg, data: bytes, out: list, depth: int, url) -> None:
        fields, _ = self._layout(msg.name)
        out.append("{")
        first = True
        if url is not None:
            out.append('"@type":' + _quoted(url))
            first = False
        for number in sorted(msg.values):
            fd = fields[number]
            value = msg.values[number]
            out.append(('"' if first else ',"') + fd["name"] + '":')
            first = False
            entry = self.schema.messages.get(fd["type_name"]) if fd["type"] == _MESSAGE else None
            if fd["repeated"] and entry is not None and entry["map_entry"]:
                self._print_map(fd, value, data, out, depth)
            elif fd["repeated"]:
                self._print_list(fd, value, data, out, depth)
            else:
                self._print_value(fd, value, data, out, depth)
        out.append("}")

    def _print_list(self, fd: dict, items: list, data: bytes, out: list, depth: int) -> None:
        out.append("[")
        for i, item in enumerate(items):
            if i:
                out.append(",")
            self._print_value(fd, item, data, out, depth)
        out.append("]")

    def _print_map(self, fd: dict, entries: list, data: bytes, out: list, depth: int) -> None:
        efields, _ = self._layout(fd["type_name"])
        kfd, vfd = efields[1], efields[2]
        out.append("{")
        for i, entry in enumerate(entries):
            if i:
                out.append(",")
            self._print_value(kfd, entry.values.get(1, _zero(kfd)), data, out, depth, key=True)
            out.append(":")
            value = entry.values.get(2)
            if value is None:
                value = _Msg(vfd["type_name"]) if vfd["type"] in (_MESSAGE, _GROUP) else self._zero(vfd)
            self._print_value(vfd, value, data, out, depth)
        out.append("}")

    def _print_value(self, fd: dict, v, data: bytes, out: list, depth: int, key: bool = False) -> None:
        t = fd["type"]
        if t in (_MESSAGE, _GROUP):
            self._print_message(v, data, out, depth + 1)
        elif t in (_INT32, _SINT32, _SFIXED32, _UINT32, _FIXED32):
            out.append(f'"{v}"' if key else str(v))
        elif t in (_INT64, _SINT64, _SFIXED64, _UINT64, _FIXED64):
            out.append(f'"{v}"')
        elif t == _BOOL:
            text = "true" if v else "false"
            out.append(f'"{text}"' if key else text)
        elif t == _STRING:
            out.append(_quoted(v))
        elif t == _BYTES:
            out.append('"' + base64.b64encode(v).decode("ascii") + '"')
        elif t == _ENUM:
            e = self.schema.enums.get(fd["type_name"]) or {"values": {}}
            if fd["type_name"] == "google.protobuf.NullValue":
                out.append('"null"' if key else "null")
            elif self.enums_as_ints or v not in e["values"]:
                out.append(str(v))
            else:
                out.append('"' + e["values"][v] + '"')
        else:
            if t == _FLOAT:
                text = java_float_bits(v[1])
            else:
                text = java_double(v)
            if text in ("NaN", "Infinity", "-Infinity"):
                out.append('"' + text + '"')
            else:
                out.append(f'"{text}"' if key else text)


def _at(at, pos: int) -> int:
    return pos if at is None else at


def _value_offset(data: bytes, value: bytes) -> int:
    """Where an Any's value starts in the bytes being printed (its last occurrence holds it)."""
    if not value:
        return 0
    found = data.rfind(value)
    return max(found, 0)


def _varint(data: bytes, pos: int, end: int, at) -> tuple[int, int]:
    """A varint as Java reads it: up to 10 bytes, the bits past 64 dropped."""
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise _Fail("a varint runs past the end of its message", _at(at, start))
        b = data[pos]
        pos += 1
        if shift < 64:
            result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise _Fail("a varint longer than 10 bytes", _at(at, start))


def _group(data: bytes, pos: int, end: int, number: int, depth: int, at) -> tuple[int, int, int]:
    """(body start, body end, position after the end tag) of a group that starts at ``pos``."""
    start = pos
    while True:
        if pos >= end:
            raise _Fail(f"group {number} has no end tag", _at(at, start))
        tag_at = pos
        tag, pos = _varint(data, pos, end, at)
        inner, wire = (tag & 0xFFFFFFFF) >> 3, tag & 7
        if wire == _EGROUP:
            if inner != number:
                raise _Fail(f"group {number} ends with the end tag of group {inner}", _at(at, tag_at))
            return start, tag_at, pos
        if wire == _VARINT:
            _, pos = _varint(data, pos, end, at)
        elif wire in (_I64, _I32):
            pos += 8 if wire == _I64 else 4
            if pos > end:
                raise _Fail(f"field {inner} runs past the end of group {number}", _at(at, tag_at))
        elif wire == _LEN:
            size, pos = _varint(data, pos, end, at)
            size &= 0xFFFFFFFF
            if size >= 1 << 31 or size > end - pos:
                raise _Fail(f"field {inner} declares {size} bytes past the end of group {number}", _at(at, tag_at))
            pos += size
        elif wire == _SGROUP:
            if depth >= MAX_PARSE_DEPTH:
                raise _Fail(f"groups nested deeper than {MAX_PARSE_DEPTH}", _at(at, tag_at))
            _, _, pos = _group(data, pos, end, inner, depth + 1, at)
        else:
            raise _Fail(f"field {inner} has wire type {wire}, which protobuf does not define", _at(at, tag_at))


def _zero(fd: dict):
    t = fd["type"]
    if t == _STRING:
        return ""
    if t == _BYTES:
        return b""
    if t == _BOOL:
        return False
    if t == _FLOAT:
        return ("f", 0)
    if t == _DOUBLE:
        return 0.0
    return 0


def _is_zero(fd: dict, v) -> bool:
    t = fd["type"]
    if t == _DOUBLE:
        return struct.pack("<d", v) == b"\0" * 8        # -0.0 is not the default
    if t == _FLOAT:
        return v[1] == 0
    if t in (_MESSAGE, _GROUP):
        return False
    return not v


def _timestamp(seconds: int, nanos: int) -> str:
    """``Timestamps.toString``: RFC 3339 in UTC, 0, 3, 6 or 9 fractional digits."""
    nanos = _int32(nanos)
    if not (-62135596800 <= seconds <= 253402300799 and 0 <= nanos <= 999999999):
        raise _Fail(f"Timestamp of {seconds} s and {nanos} ns is out of range (0001-01-01 to 9999-12-31, "
                    "nanos 0 to 999999999)", 0)
    d = _EPOCH + _dt.timedelta(seconds=seconds)             # proleptic Gregorian, as Java's formatter is set
    text = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
    return text + (("." + _nanos(nanos)) if nanos else "") + "Z"


def _duration(seconds: int, nanos: int) -> str:
    """``Durations.toString``: seconds with 0, 3, 6 or 9 fractional digits and an ``s``."""
    nanos = _int32(nanos)
    if not (-315576000000 <= seconds <= 315576000000 and -999999999 <= nanos <= 999999999) or \
            (seconds < 0 < nanos) or (nanos < 0 < seconds):
        raise _Fail(f"Duration of {seconds} s and {nanos} ns is out of range (315576000000 s at most, nanos "
                    "of the seconds' sign)", 0)
    sign = "-" if seconds < 0 or nanos < 0 else ""
    return sign + str(abs(seconds)) + (("." + _nanos(abs(nanos))) if nanos else "") + "s"


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _nanos(nanos: int) -> str:
    if nanos % 1000000 == 0:
        return f"{nanos // 1000000:03d}"
    if nanos % 1000 == 0:
        return f"{nanos // 1000:06d}"
    return f"{nanos:09d}"


def _lower_camel(path: str) -> str:
    """FieldMaskUtil's lower_underscore -> lowerCamel, character by character as Java's
    ``Character.toUpperCase`` / ``toLowerCase`` of a UTF-16 char map them."""
    out = []
    upper = False
    for ch in path:
        if ch == "_":
            upper = True
            continue
        out.append(_java_case(ch, upper))
        upper = False
    return "".join(out)


def _java_case(ch: str, upper: bool) -> str:
    if ord(ch) > 0xFFFF:
        return ch                       # a surrogate pair: Java maps each half, which maps to itself
    if not upper and ch == "\u0130":
        return "i"                      # Character.toLowerCase(U+0130) (Python's full mapping adds a dot)
    mapped = ch.upper() if upper else ch.lower()
    return mapped if len(mapped) == 1 and ord(mapped) <= 0xFFFF else ch
