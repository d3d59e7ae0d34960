"""Plans: how one writer message's fields land in the column's (Java's field-name matching, what fits,
defaults), as ``_core._PbMsgPlan`` trees the core's per-row step follows."""
from __future__ import annotations

from typing import Any

from kafkarec.protobuf.arrow_types import _is_time, _Shape
from kafkarec.protobuf.options import _Options
from kafkarec.protobuf.schema import (_BOOL, _BYTES, _DOUBLE, _ENUM, _FLOAT, _GROUP, _INT32_TYPES, _INT64_TYPES,
                                      _MESSAGE, _STRING, _TYPE_NAMES, ProtobufSchema)


def _describe(schema: ProtobufSchema, fd: dict) -> str:
    t = _TYPE_NAMES.get(fd["type"], str(fd["type"]))
    if fd["type"] in (_MESSAGE, _ENUM, _GROUP):
        t = fd["type_name"]
        entry = schema.messages.get(fd["type_name"])
        if entry is not None and entry["map_entry"]:
            t = "map"
    return ("repeated " if fd["repeated"] and t != "map" else "") + t


def _fits(schema: ProtobufSchema, fd: dict, shape: _Shape) -> bool:
    """Whether writer field fd can be read into column `shape` (repeatedness checked by the caller)."""
    t = fd["type"]
    k = shape.kind
    if k == "int32":
        return t == _ENUM if shape.ptype == _ENUM else t in _INT32_TYPES      # enums.as.ints: enums only
    if k == "int64":
        return t in _INT32_TYPES or t in _INT64_TYPES
    if k == "float":
        return t == _FLOAT
    if k == "double":
        return t in (_FLOAT, _DOUBLE)
    if k == "bool":
        return t == _BOOL
    if k == "string":
        return t == (_ENUM if shape.ptype == _ENUM else _STRING)
    if k == "binary":
        return t in (_BYTES, _STRING)
    if k == "anyjson":
        return t == _MESSAGE and fd["type_name"] == "google.protobuf.Any"
    if k in ("timestamp", "duration"):
        return t in (_MESSAGE, _GROUP) and _is_time(schema.messages, fd["type_name"],
                                                    "Timestamp" if k == "timestamp" else "Duration")
    if k == "struct":
        m = schema.messages.get(fd["type_name"]) if t in (_MESSAGE, _GROUP) else None
        return m is not None and not m["map_entry"]
    return False


class _Planner:
    """Plans of one writer schema against one column, memoized per (writer message, column).  ``layout``: the
    column's ``_core._PbLayout`` (plans name the columns they fill by its numbers; each decode builds its own
    columns).  ``any_json``: what prints an Any field's bytes as JSON (``convert.any.fields.to.json``: the
    column's :class:`~.json_print.AnyJson`), which a plan holds in place of an Any field's subplan."""

    def __init__(self, writer: ProtobufSchema, options: _Options, layout, any_json=None):
        self.options = options
        self.layout = layout
        self.writer = writer
        self.any_json = any_json
        self.plans: dict[tuple[str, int], Any] = {}

    def plan(self, message: str, shape: _Shape, emit_defaults: bool = False):
        from kafkarec import _core
        key = (message, id(shape))
        if key in self.plans:
            return self.plans[key]
        m = self.writer.messages[message]
        fields = []
        slot_defaults: list = [None] * len(shape.children)
        self.plans[key] = None      # (a writer recursion that reaches the same column again cannot happen:
        for fd in m["fields"]:      # each column sits at one depth)
            slot = shape.names.get(fd["name"], -1)
            sub = names = unknown = why = None
            closed = False
            # emit.default.values: a singular field without presence reads its zero value when unset (Spark's
            # getFieldValue), fields with presence (messages, oneofs, optional, proto2) stay null
            zero_when_unset = (self.options.emit_default_values and not fd["presence"] and not fd["repeated"]
                               and fd["type"] not in (_MESSAGE, _GROUP))
            e = self.writer.enums.get(fd["type_name"]) if fd["type"] == _ENUM else None
            if e is not None:       # (a required closed enum outside the column is checked too)
                names = {n: v.encode() for n, v in e["values"].items()}
                closed = e["closed"]
            if slot >= 0:
                target = shape.children[slot]
                why, sub = self._match(message, fd, target)
                if e is not None:
                    unknown = f"UNKNOWN_ENUM_VALUE_{e['name']}_".encode()
                    if (emit_defaults or zero_when_unset) and why is None:
                        # (a column the writer's enum does not fit takes no enum value: a double column
                        # would be handed a name)
                        slot_defaults[slot] = _enum_zero(e, target)
                elif zero_when_unset and why is None:
                    slot_defaults[slot] = _zero(target)
                if emit_defaults and sub is not None and target.kind in ("struct", "anyjson"):
                    # a map entry's unset message value: an empty message (an Any's JSON of it: {})
                    slot_defaults[slot] = b"{}" if target.kind == "anyjson" else sub
                if why is None and fd.get("default") is not None and not fd["repeated"]:
                    slot_defaults[slot] = _default_value(fd, target, self.writer)
            fields.append((fd["number"], fd["type"], slot, fd["repeated"], not fd["presence"] and not zero_when_unset,
                           closed, fd["oneof"], sub, names, unknown, why))
        plan = _core._PbMsgPlan(self.layout, shape.column, fields, emit_defaults, slot_defaults,
                                [fd["number"] for fd in m["fields"] if fd.get("required")])
        self.plans[key] = plan
        return plan

    def _match(self, message: str, fd: dict, target: _Shape):
        """(why it does not fit or None, subplan or None) for writer field fd into column `target`."""
        where = f"field {fd['name']!r} (number {fd['number']}) of writer message {message}"
        wtype = _describe(self.writer, fd)
        bad = (f"{where}: its writer type {wtype} does not fit the column's type "
               f"{target.arrow_type}", None)
        entry = self.writer.messages.get(fd["type_name"]) if fd["type"] == _MESSAGE else None
        is_map = fd["repeated"] and entry is not None and entry["map_entry"]
        if target.kind == "map":
            if not is_map:
                return bad
            kf, vf = entry["fields"][0], entry["fields"][1]
            if not (_fits(self.writer, kf, target.key) and _fits(self.writer, vf, target.value)):
                return bad
            return None, self.plan(fd["type_name"], target.element, emit_defaults=True)
        if target.kind == "list":
            if not fd["repeated"] or is_map or not _fits(self.writer, fd, target.element):
                return bad
            if target.element.kind == "struct":
                return None, self.plan(fd["type_name"], target.element)
            if target.element.kind in ("timestamp", "duration"):
                return _time_layout(self.writer, fd["type_name"], where)
            if target.element.kind == "anyjson":
                return None, self.any_json
            return None, None
        if fd["repeated"] or not _fits(self.writer, fd, target):
            return bad
        if target.kind == "struct":
            return None, self.plan(fd["type_name"], target)
        if target.kind in ("timestamp", "duration"):
            return _time_layout(self.writer, fd["type_name"], where)
        if target.kind == "anyjson":
            return None, self.any_json
        return None, None


def _time_layout(writer: ProtobufSchema, type_name: str, where: str):
    """(why it cannot be read or None, layout) of a writer message shaped like Timestamp / Duration.  Spark reads
    its first declared field as seconds (a Java long) and its second as nanos (a Java int), whatever their numbers,
    so the core is told both fields' numbers, types and proto2 defaults.  Other types make Spark's cast fail on
    every message present, so such a message fails its row."""
    seconds, nanos = writer.messages[type_name]["fields"]
    if seconds["repeated"] or seconds["type"] not in _INT64_TYPES \
            or nanos["repeated"] or nanos["type"] not in _INT32_TYPES:
        return (f"{where}: Spark's from_protobuf reads {type_name} as a time of seconds (a 64-bit integer) and "
                f"nanos (a 32-bit integer), not {_describe(writer, seconds)} and {_describe(writer, nanos)}"), None
    from kafkarec import _core

    def default(fd: dict, bits: int) -> int:        # an unsigned default keeps its bits, as the values do
        value = int(fd["default"]) & ((1 << bits) - 1) if fd.get("default") is not None else 0
        return value - (1 << bits) if value >= 1 << (bits - 1) else value
    return None, _core._PbTimeLayout(seconds["number"], seconds["type"], default(seconds, 64),
                                     nanos["number"], nanos["type"], default(nanos, 32))


def _zero(target: _Shape):
    """The zero value of a scalar column, as the core takes a slot default."""
    return {"int32": 0, "int64": 0, "float": 0.0, "double": 0.0, "bool": False, "string": b"",
            "binary": b""}.get(target.kind)


def _enum_zero(e: dict, target: _Shape):
    """An unset enum: the value numbered 0 of an open enum, the first value of a closed one (Java's default);
    its name, or its number with enums.as.ints."""
    if target.kind == "int32":
        if not e["closed"] or not e["first"]:
            return 0
        return next((n for n, v in e["values"].items() if v == e["first"]), 0)
    return ((e["values"].get(0) if not e["closed"] else e["first"]) or "").encode()


def _default_value(fd: dict, target: _Shape, writer: ProtobufSchema):
    """A proto2 [default = ...] (descriptor text) as the column holds it."""
    import codecs
    text = fd["default"]
    t = fd["type"]
    if t == _ENUM:
        if target.kind == "int32":          # enums.as.ints: the number of the named value
            e = writer.enums.get(fd["type_name"]) or {"values": {}}
            return next((n for n, v in e["values"].items() if v == text), 0)
        return text.encode()
    if t == _STRING:
        return text.encode()
    if t == _BYTES:
        return codecs.escape_decode(text.encode("latin-1", "backslashreplace"))[0]
    if t == _BOOL:
        return text == "true"
    if t in (_FLOAT, _DOUBLE):
        return float(text)
    value = int(text)
    bits = 32 if target.kind == "int32" else 64
    value &= (1 << bits) - 1                    # unsigned defaults keep their bits, as the values do
    return value - (1 << bits) if value >= 1 << (bits - 1) else value
