"""Spark's type mapping: the column a message builds, as ``from_protobuf`` types it with the given options
(:class:`_Shape`, its core column from ``_core.pb_column``), and a decoded column as users see it
(:func:`_logical`)."""
from __future__ import annotations

from typing import Any

from kafkarec._extras import require
from kafkarec.errors import ProtobufSchemaError
from kafkarec.protobuf.options import EMPTY_MESSAGE_FIELD, MAX_RECURSIVE_FIELDS_DEPTH, MAX_STRUCT_COLUMNS, _Options
from kafkarec.protobuf.schema import (_BOOL, _BYTES, _DOUBLE, _ENUM, _FLOAT, _GROUP, _INT32_TYPES, _INT64_TYPES,
                                      _MESSAGE, _STRING, _UINT32, _UINT64, ProtobufSchema)


def _is_time(messages: dict, name: str, short: str) -> bool:
    # Spark's SchemaConverters: a message named Timestamp / Duration with fields seconds, nanos.
    m = messages.get(name)
    return (m is not None and m["name"] == short and len(m["fields"]) == 2
            and m["fields"][0]["name"] == "seconds" and m["fields"][1]["name"] == "nanos")


class _Shape:
    """The column a reader field builds, with what it came from (for matching writer fields).  ``column`` is
    the physical column the core fills; ``logical`` names a conversion of that column to the type users see
    (``unwrap``: a wrapper message's ``value``; ``udecimal``: uint64 bits as decimal(20, 0)), ``arrow_type``
    is that type."""
    __slots__ = ("kind", "column", "ptype", "message", "enum", "children", "names", "element", "key", "value",
                 "logical", "arrow_type", "converts")

    def __init__(self, kind: str, ptype: int = 0, message: str | None = None, enum: str | None = None):
        self.kind = kind
        self.ptype = ptype
        self.message = message
        self.enum = enum
        self.children: list[_Shape] = []
        self.names: dict[str, int] = {}
        self.element: _Shape | None = None
        self.key: _Shape | None = None
        self.value: _Shape | None = None
        self.column: Any = None
        self.logical: str | None = None
        self.arrow_type: Any = None
        self.converts = False


def _physical_type(kind: str, pa):
    return {"int32": pa.int32(), "int64": pa.int64(), "float": pa.float32(), "double": pa.float64(),
            "bool": pa.bool_(), "string": pa.string(), "binary": pa.binary(), "anyjson": pa.string(),
            "timestamp": pa.timestamp("us", tz="UTC"), "duration": pa.duration("us")}[kind]


def _finish(shape: _Shape, pa, children: tuple = ()) -> _Shape:
    """Give ``shape`` its core column (over its children's) and the Arrow type users see."""
    from kafkarec import _core
    k = shape.kind
    if k == "struct":
        physical = pa.struct([pa.field(n, c.column.arrow_type) for n, c in zip(shape.names, shape.children)])
        shape.arrow_type = pa.struct([pa.field(n, c.arrow_type) for n, c in zip(shape.names, shape.children)])
    elif k == "list":
        physical = pa.list_(shape.element.column.arrow_type)
        shape.arrow_type = pa.list_(shape.element.arrow_type)
    elif k == "map":
        physical = pa.map_(shape.key.column.arrow_type, shape.value.column.arrow_type)
        shape.arrow_type = pa.map_(shape.key.arrow_type, shape.value.arrow_type)
    else:
        physical = shape.arrow_type = _physical_type(k, pa)
    shape.column = _core.pb_column(_core.PB_COLUMN_KINDS[k], physical, list(children)) if children else \
        _core.pb_column(_core.PB_COLUMN_KINDS[k], physical)
    if shape.logical == "unwrap":
        shape.arrow_type = shape.children[0].arrow_type
    elif shape.logical == "udecimal":
        shape.arrow_type = pa.decimal128(20, 0)
    shape.converts = shape.logical is not None or any(
        c is not None and c.converts for c in (*shape.children, shape.element, shape.key, shape.value))
    return shape


# google.protobuf wrapper messages -> the kind of their `value` (unwrap.primitive.wrapper.types)
_WRAPPERS = {"google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
             "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.StringValue",
             "google.protobuf.BytesValue", "google.protobuf.FloatValue", "google.protobuf.DoubleValue"}


def _message_shape(schema: ProtobufSchema, message: str, o: _Options, depth_of: dict) -> _Shape | None:
    """The struct column of ``message`` (its columns built fresh), or None when Spark leaves it out: no field
    left (empty, or every field cut by the recursion depth) and not ``retain.empty.message.types``."""
    pa = require("pyarrow")
    m = schema.messages[message]
    o.structs += 1
    if o.structs > MAX_STRUCT_COLUMNS:
        raise ProtobufSchemaError(f"{message}: the column's type would hold more than {MAX_STRUCT_COLUMNS} "
                                  "structs (a recursive message read to a large recursive.fields.max.depth)")
    shape = _Shape("struct", _MESSAGE, message)
    for fd in m["fields"]:
        child = _field_shape(schema, fd, o, depth_of)
        if child is not None:
            shape.names[fd["name"]] = len(shape.children)
            shape.children.append(child)
    if not shape.children:
        if not o.retain_empty_message_types:
            return None
        dummy = _finish(_Shape("string"), pa)
        shape.names[EMPTY_MESSAGE_FIELD] = 0
        shape.children.append(dummy)
    return _finish(shape, pa, tuple(c.column for c in shape.children))


def _root_shape(schema: ProtobufSchema, message: str, o: _Options) -> _Shape:
    """The column's struct: an empty message is an empty struct (or the dummy field), never left out."""
    pa = require("pyarrow")
    shape = _message_shape(schema, message, o, {message: 1})
    return shape if shape is not None else _finish(_Shape("struct", _MESSAGE, message), pa)


def _scalar_shape(schema: ProtobufSchema, fd: dict, o: _Options, depth_of: dict) -> _Shape | None:
    pa = require("pyarrow")
    t = fd["type"]
    if t in (_MESSAGE, _GROUP):
        name = fd["type_name"]
        if _is_time(schema.messages, name, "Timestamp"):
            return _finish(_Shape("timestamp", t, name), pa)
        if _is_time(schema.messages, name, "Duration"):
            return _finish(_Shape("duration", t, name), pa)
        if o.convert_any_fields_to_json and name == "google.protobuf.Any":
            return _finish(_Shape("anyjson", t, name), pa)      # the Any's JSON text (json_print.py)
        if o.unwrap_primitive_wrapper_types and name in _WRAPPERS and name in schema.messages:
            shape = _message_shape(schema, name, o, dict(depth_of))
            shape.logical = "unwrap"
            return _finish(shape, pa, tuple(c.column for c in shape.children))
        if name in depth_of:
            # Spark's rule: the column's own message counts 1; a message met again at depth d is read while
            # d < recursive.fields.max.depth, then its field is left out
            if not 1 <= o.recursive_fields_max_depth <= MAX_RECURSIVE_FIELDS_DEPTH:
                raise ProtobufSchemaError(
                    f"recursive message {name} (field {fd['name']!r}): Spark's from_protobuf reads it only with "
                    f"recursive.fields.max.depth between 1 and {MAX_RECURSIVE_FIELDS_DEPTH} "
                    f"(given {o.recursive_fields_max_depth})")
            if depth_of[name] >= o.recursive_fields_max_depth:
                return None
        if len(depth_of) > 100:
            raise ProtobufSchemaError(f"messages nested deeper than 100 at {name}")
        return _message_shape(schema, name, o, {**depth_of, name: depth_of.get(name, 0) + 1})
    if t == _ENUM:
        return _finish(_Shape("int32" if o.enums_as_ints else "string", t, enum=fd["type_name"]), pa)
    if t == _UINT32 and o.upcast_unsigned_ints:
        return _finish(_Shape("int64", t), pa)
    if t == _UINT64 and o.upcast_unsigned_ints:
        shape = _Shape("int64", t)
        shape.logical = "udecimal"
        return _finish(shape, pa)
    kind = ("int32" if t in _INT32_TYPES else "int64" if t in _INT64_TYPES else
            {_FLOAT: "float", _DOUBLE: "double", _BOOL: "bool", _STRING: "string", _BYTES: "binary"}[t])
    return _finish(_Shape(kind, t), pa)


def _field_shape(schema: ProtobufSchema, fd: dict, o: _Options, depth_of: dict) -> _Shape | None:
    pa = require("pyarrow")
    if fd["repeated"]:
        entry = schema.messages.get(fd["type_name"]) if fd["type"] == _MESSAGE else None
        if entry is not None and entry["map_entry"]:
            shape = _Shape("map", _MESSAGE, fd["type_name"])
            kf, vf = entry["fields"][0], entry["fields"][1]
            shape.key = _scalar_shape(schema, kf, o, depth_of)
            shape.value = _scalar_shape(schema, vf, o, depth_of)
            if shape.key is None or shape.value is None:
                return None                 # Spark drops the map when its value is cut
            entries = _Shape("struct", _MESSAGE, fd["type_name"])
            entries.names = {"key": 0, "value": 1}
            entries.children = [shape.key, shape.value]
            from kafkarec import _core
            struct_type = pa.struct([pa.field("key", shape.key.column.arrow_type, nullable=False),
                                     pa.field("value", shape.value.column.arrow_type)])
            entries.column = _core.pb_column(_core.PB_COLUMN_KINDS["struct"], struct_type,
                                             [shape.key.column, shape.value.column])
            entries.arrow_type = struct_type
            entries.converts = shape.key.converts or shape.value.converts
            shape.element = entries
            return _finish(shape, pa, (entries.column,))
        shape = _Shape("list", fd["type"])
        shape.element = _scalar_shape(schema, fd, o, depth_of)
        if shape.element is None:
            return None
        return _finish(shape, pa, (shape.element.column,))
    return _scalar_shape(schema, fd, o, depth_of)


def _logical(arr, shape: _Shape):
    """A decoded (physical) column as users see it: wrappers unwrapped, uint64 bits as decimal(20, 0)."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    if not shape.converts:
        return arr
    if arr.offset:
        arr = pa.concat_arrays([arr])       # children and offsets from 0
    if shape.logical == "udecimal":
        return arr.view(pa.uint64()).cast(pa.decimal128(20, 0))
    k = shape.kind
    if k == "struct":
        kids = [_logical(arr.field(i), c) for i, c in enumerate(shape.children)]
        if shape.logical == "unwrap":
            return pc.if_else(arr.is_valid(), kids[0], pa.scalar(None, kids[0].type))
        return pa.StructArray.from_arrays(kids, fields=list(shape.arrow_type), mask=arr.is_null())
    if k == "list":
        return pa.ListArray.from_arrays(arr.offsets, _logical(arr.values, shape.element), type=shape.arrow_type,
                                        mask=arr.is_null())
    if k == "map":
        return pa.MapArray.from_arrays(arr.offsets, _logical(arr.keys, shape.key), _logical(arr.items, shape.value),
                                       type=shape.arrow_type, mask=arr.is_null())
    return arr
