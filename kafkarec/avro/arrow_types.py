"""Spark's ``from_avro`` mapping of Avro types to Arrow types (``SchemaConverters``), stable
union member names, and a recursive schema cut at ``recursiveFieldMaxDepth``."""
from __future__ import annotations

import json
import math
import re
import struct
from typing import Any, Iterable, Mapping, NoReturn, Optional, Union

from kafkarec._core import encode_varlong
from kafkarec._extras import require
from kafkarec.errors import SchemaResolutionError, AvroSchemaError

from kafkarec.avro.schema import AvroSchema, _Field, _Node, _copy  # noqa: F401
from kafkarec.avro.schema import _NAMED  # noqa: F401


# ----------------------------------------------------------------------------- Arrow types

def _pa():
    return require("pyarrow")


def _union_mode(node: _Node) -> tuple:
    """Spark's union mapping: (mode, non-null branch indexes)."""
    nonnull = [i for i, b in enumerate(node.branches) if b.type != "null"]
    has_null = len(nonnull) != len(node.branches)
    types = {node.branches[i].type for i in nonnull}
    if not nonnull:
        return "null", nonnull, has_null
    if len(nonnull) == 1:
        return "single", nonnull, has_null
    if len(nonnull) == 2 and types == {"int", "long"}:
        return "long", nonnull, has_null
    if len(nonnull) == 2 and types == {"float", "double"}:
        return "double", nonnull, has_null
    return "struct", nonnull, has_null


def arrow_type_of(schema: Union[AvroSchema, _Node], *, stable_union_prefix: Optional[str] = None):
    """The Arrow type of an Avro schema under Spark's ``from_avro`` mapping.  A union of several
    types is a struct of ``member0..memberN``, or, with ``stable_union_prefix`` (Spark's
    ``enableStableIdentifiersForUnionType``, prefix ``stableIdentifierPrefixForUnionType``,
    default ``member_``), of the prefix followed by each branch's type name (``member_int``,
    ``member_Address``): names that stay when branches are added or removed."""
    if isinstance(schema, AvroSchema) and schema.recursive:
        raise AvroSchemaError("a recursive schema has an Arrow type only once cut at a depth: "
                              "unroll(schema, recursiveFieldMaxDepth) first (AvroDecoder does)")
    node = schema.root if isinstance(schema, AvroSchema) else schema
    return _arrow(node, stable_union_prefix)[0]


def _member_names(node: _Node, nonnull: list, prefix: Optional[str]) -> list:
    """The struct field of each non-null union branch: positional, or prefix + the branch's
    name (a named type's short name, else its type) unique regardless of case, as Spark's."""
    if prefix is None:
        return [f"member{m}" for m in range(len(nonnull))]
    names, seen = [], set()
    for i in nonnull:
        b = node.branches[i]
        name = prefix + (b.short_name if b.name is not None else b.type)
        if name.lower() in seen:
            raise AvroSchemaError(f"cannot name the union's members by type: two branches are named "
                                  f"{name!r} regardless of case (enableStableIdentifiersForUnionType)")
        seen.add(name.lower())
        names.append(name)
    return names


def _arrow(node: _Node, prefix: Optional[str] = None):
    """(arrow type, nullable) for a node; ``prefix``: stable union member names (see
    :func:`arrow_type_of`)."""
    pa = _pa()
    t = node.type
    lg = node.logical["name"] if node.logical else None
    if t == "null":
        return pa.null(), True
    if t == "boolean":
        return pa.bool_(), False
    if t == "int":
        return (pa.date32() if lg == "date" else pa.int32()), False
    if t == "long":
        if lg and "timestamp" in lg:
            unit = {"millis": "ms", "micros": "us", "nanos": "ns"}[lg.rsplit("-", 1)[1]]
            return pa.timestamp(unit, None if lg.startswith("local-") else "UTC"), False
        return pa.int64(), False
    if t == "float":
        return pa.float32(), False
    if t == "double":
        return pa.float64(), False
    if t == "string":
        return pa.string(), False
    if t in ("bytes", "fixed"):
        if lg == "decimal":
            p, s = node.logical["precision"], node.logical["scale"]
            if p > 76:
                raise AvroSchemaError(f"decimal precision {p} is over Arrow's 76")
            return (pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)), False
        return pa.binary(), False
    if t == "enum":
        return pa.string(), False
    if t == "record":
        fields = []
        for f in node.fields:
            ft, fn = _arrow(f.type, prefix)
            fields.append(pa.field(f.name, ft, nullable=fn))
        return pa.struct(fields), False
    if t == "array":
        it, inull = _arrow(node.items, prefix)
        return pa.list_(pa.field("element", it, nullable=inull)), False
    if t == "map":
        vt, vnull = _arrow(node.values, prefix)
        return pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", vt, nullable=vnull)), False
    if t == "union":
        mode, nonnull, has_null = _union_mode(node)
        if mode == "null":
            return pa.null(), True
        if mode == "single":
            return _arrow(node.branches[nonnull[0]], prefix)[0], has_null
        if mode == "long":
            return pa.int64(), has_null
        if mode == "double":
            return pa.float64(), has_null
        names = _member_names(node, nonnull, prefix)
        return pa.struct([pa.field(names[m], _arrow(node.branches[i], prefix)[0], nullable=True)
                          for m, i in enumerate(nonnull)]), has_null
    raise AvroSchemaError(f"unknown type {t}")


#: Spark's bounds of recursiveFieldMaxDepth (from_avro refuses a recursive schema outside them).
MAX_RECURSIVE_FIELD_DEPTH = 12


def unroll(schema: AvroSchema, max_depth: int) -> AvroSchema:
    """A recursive ``schema`` as Spark's ``from_avro`` reads it with ``recursiveFieldMaxDepth``:
    each record type may enter itself ``max_depth - 1`` times; below that the field that would
    enter it again is left out (an array, map or union of nothing but it too).  A schema that is
    not recursive is returned as it is; a recursive one with ``max_depth`` outside
    1..12 is refused as Spark refuses it."""
    if not schema.recursive:
        return schema
    root = _unroll(schema.root, {}, int(max_depth))
    assert root is not None             # the root record is at depth 0: never cut
    return AvroSchema(root, schema.named, schema.json)


def _unroll(node: _Node, depth_of: dict, max_depth: int) -> Optional[_Node]:
    t = node.type
    if t == "record":
        d = depth_of.get(node.name, 0)
        if d > 0 and not 1 <= max_depth <= MAX_RECURSIVE_FIELD_DEPTH:
            raise AvroSchemaError(
                f"recursive type {node.name!r} (a record that contains itself): Spark's from_avro reads it "
                f"only with recursiveFieldMaxDepth between 1 and {MAX_RECURSIVE_FIELD_DEPTH} "
                f"(given {max_depth})")
        if d > 0 and d >= max_depth:
            return None
        inner = dict(depth_of)
        inner[node.name] = d + 1
        copy = _copy(node)
        copy.fields = []
        for f in node.fields:
            ft = _unroll(f.type, inner, max_depth)
            if ft is not None:
                copy.fields.append(_Field(f.name, ft, f.has_default, f.default, f.aliases, f.pos))
        return copy
    if t in ("array", "map"):
        child = _unroll(node.items if t == "array" else node.values, depth_of, max_depth)
        if child is None:
            return None
        copy = _Node(t)
        copy.logical = node.logical
        if t == "array":
            copy.items = child
        else:
            copy.values = child
        return copy
    if t == "union":
        branches = [b if b.type == "null" else _unroll(b, depth_of, max_depth) for b in node.branches]
        kept = [b for b in branches if b is not None]
        if not any(b.type != "null" for b in kept) and any(b.type != "null" for b in node.branches):
            return None
        copy = _Node("union")
        copy.branches = kept
        return copy
    return node
