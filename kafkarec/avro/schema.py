"""Avro schemas: the parsed type graph (``AvroSchema``), the parser with Avro 1.12's rules, and
default values encoded as Avro binary (checked when parsing, replayed by the resolver)."""
from __future__ import annotations

import json
import math
import re
import struct
from typing import Any, Iterable, Mapping, NoReturn, Optional, Union

from kafkarec._core import encode_varlong
from kafkarec.errors import SchemaResolutionError, AvroSchemaError

#: Deepest nesting of schema JSON accepted (records in arrays in unions...).
MAX_DEPTH = 64
#: Most type nodes one schema may hold (after named-type reuse is expanded).
MAX_SCHEMA_NODES = 20000
#: Longest schema text accepted, in characters.
MAX_SCHEMA_TEXT = 4 * 1024 * 1024

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_NAMED = ("record", "error", "enum", "fixed")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _Node:
    """One type of a parsed schema."""
    __slots__ = ("type", "name", "aliases", "logical", "fields", "symbols", "enum_default",
                 "size", "items", "values", "branches", "doc", "props")

    def __init__(self, type_: str) -> None:
        self.type = type_
        self.name: Optional[str] = None       # full name for named types
        self.aliases: tuple = ()              # full names
        self.logical: Any = None              # None or {"name": ..., "precision": ..., "scale": ...}
        self.fields: list = []
        self.symbols: list = []
        self.enum_default: Optional[str] = None
        self.size = 0
        self.items: Any = None                # _Node of an array
        self.values: Any = None               # _Node of a map
        self.branches: list = []

    @property
    def short_name(self) -> Optional[str]:
        return None if self.name is None else self.name.rsplit(".", 1)[-1]


class _Field:
    __slots__ = ("name", "type", "has_default", "default", "aliases", "pos")

    def __init__(self, name, type_, has_default, default, aliases, pos):
        self.name = name
        self.type = type_
        self.has_default = has_default
        self.default = default
        self.aliases = aliases
        self.pos = pos


class AvroSchema:
    """A parsed Avro schema.  ``json`` is the schema as JSON-compatible Python
    objects (as given); ``named`` maps every named type's full name to its
    definition, including those taken from ``named_types``."""

    __slots__ = ("root", "named", "json", "_text", "recursive")

    def __init__(self, root: _Node, named: dict, source: Any) -> None:
        self.root = root
        self.named = named
        self.json = source
        self._text: Optional[str] = None
        #: whether a record type contains itself (Spark reads it only with recursiveFieldMaxDepth)
        self.recursive = False

    @property
    def type(self) -> str:
        """The top-level Avro type (``"record"``, ``"string"``, ``"union"``...)."""
        return self.root.type

    @property
    def name(self) -> Optional[str]:
        """Full name of the top-level named type, or None."""
        return self.root.name

    def __str__(self) -> str:
        if self._text is None:
            self._text = json.dumps(self.json, separators=(",", ":"))
        return self._text

    def to_json(self) -> Any:
        """The schema as self-contained JSON objects: named types taken from
        ``named_types`` are written inline where first used, so the result
        parses on its own (to ship a schema to Spark executors)."""
        return _node_json(self.root, set())

    def __reduce__(self):
        return (parse_schema, (json.dumps(self.to_json()),))

    def __repr__(self) -> str:
        text = str(self)
        return f"AvroSchema({text[:80] + '...' if len(text) > 80 else text})"


# ----------------------------------------------------------------------------- parsing

class _Parser:
    def __init__(self, named_types) -> None:
        self.named: dict = {}
        self.nodes = 0
        if named_types is not None:
            schemas = named_types.values() if isinstance(named_types, Mapping) else named_types
            for s in schemas:
                if not isinstance(s, AvroSchema):
                    s = parse_schema(s)
                for full, node in s.named.items():
                    if full in self.named and self.named[full] is not node:
                        raise AvroSchemaError(f"named type {full!r} is defined twice in named_types")
                    self.named[full] = node

    def fail(self, path: str, reason: str) -> NoReturn:
        raise AvroSchemaError(f"{path or '<root>'}: {reason}")

    def fullname(self, name: Any, namespace: Any, enclosing: str, path: str) -> tuple:
        if not isinstance(name, str) or not name:
            self.fail(path, f"invalid name {name!r}")
        if "." in name:
            full = name
            ns = name.rsplit(".", 1)[0]
        else:
            if namespace is None:
                ns = enclosing
            elif isinstance(namespace, str):
                ns = namespace
            else:
                self.fail(path, f"invalid namespace {namespace!r}")
            full = f"{ns}.{name}" if ns else name
        for part in full.split("."):
            if not _NAME_RE.match(part):
                self.fail(path, f"invalid name {full!r}")
        if full in PRIMITIVES or full.rsplit(".", 1)[-1] in PRIMITIVES and "." not in full:
            self.fail(path, f"cannot redefine primitive type {full!r}")
        return full, ns

    def aliases(self, obj: dict, ns: str, path: str) -> tuple:
        raw = obj.get("aliases", [])
        if not isinstance(raw, list) or not all(isinstance(a, str) and a for a in raw):
            self.fail(path, "aliases must be a list of names")
        out = []
        for a in raw:
            full = a if "." in a else (f"{ns}.{a}" if ns else a)
            for part in full.split("."):
                if not _NAME_RE.match(part):
                    self.fail(path, f"invalid alias {a!r}")
            out.append(full)
        return tuple(out)

    def lookup(self, name: str, ns: str, path: str) -> _Node:
        candidates = [name] if "." in name else ([f"{ns}.{name}", name] if ns else [name])
        for full in candidates:
            node = self.named.get(full)
            if node is not None:
                return node
        self.fail(path, f"undefined type name {name!r}")

    def parse(self, obj: Any, ns: str, depth: int, path: str) -> _Node:
        if depth > MAX_DEPTH:
            self.fail(path, f"schema nests deeper than {MAX_DEPTH} levels")
        self.nodes += 1
        if self.nodes > MAX_SCHEMA_NODES:
            self.fail(path, f"schema has more than {MAX_SCHEMA_NODES} types")
        if isinstance(obj, str):
            if obj in PRIMITIVES:
                return _Node(obj)
            return self.lookup(obj, ns, path)
        if isinstance(obj, list):
            return self.union(obj, ns, depth, path)
        if not isinstance(obj, dict):
            self.fail(path, f"a schema is a name, a list or an object, not {type(obj).__name__}")
        t = obj.get("type")
        if isinstance(t, (dict, list)):
            # {"type": {...}} is a schema wrapped once (the JSON of some tools)
            return self.parse(t, ns, depth + 1, path)
        if not isinstance(t, str):
            self.fail(path, "missing or invalid \"type\"")
        if t in PRIMITIVES:
            node = _Node(t)
        elif t in ("record", "error"):
            node = self.record(obj, ns, depth, path)
        elif t == "enum":
            node = self.enum(obj, ns, path)
        elif t == "fixed":
            node = self.fixed(obj, ns, path)
        elif t == "array":
            if "items" not in obj:
                self.fail(path, "array without \"items\"")
            node = _Node("array")
            node.items = self.parse(obj["items"], ns, depth + 1, path + "[]")
        elif t == "map":
            if "values" not in obj:
                self.fail(path, "map without \"values\"")
            node = _Node("map")
            node.values = self.parse(obj["values"], ns, depth + 1, path + "{}")
        else:
            # a reference written as {"type": "Name"}
            return self.lookup(t, ns, path)
        lt = obj.get("logicalType")
        if isinstance(lt, str):
            logical = _logical(node, lt, obj)
            if logical is not None:
                if node.logical is not None or node.name is not None and node.type != "fixed":
                    node = _copy(node)
                node.logical = logical
        return node

    def union(self, obj: list, ns: str, depth: int, path: str) -> _Node:
        if not obj:
            self.fail(path, "empty union")
        node = _Node("union")
        seen = set()
        for i, b in enumerate(obj):
            bn = self.parse(b, ns, depth + 1, f"{path}<{i}>")
            if bn.type == "union":
                self.fail(path, "a union may not directly contain a union")
            key = bn.name if bn.name is not None else bn.type
            if key in seen:
                self.fail(path, f"union contains {key!r} twice")
            seen.add(key)
            node.branches.append(bn)
        return node

    def define(self, node: _Node, path: str) -> None:
        if node.name in self.named:
            self.fail(path, f"type {node.name!r} is defined twice")
        self.named[node.name] = node

    def record(self, obj: dict, ns: str, depth: int, path: str) -> _Node:
        node = _Node("record")
        node.name, rns = self.fullname(obj.get("name"), obj.get("namespace"), ns, path)
        node.aliases = self.aliases(obj, rns, path)
        path = node.name
        fields = obj.get("fields")
        if not isinstance(fields, list):
            self.fail(path, "record without a \"fields\" list")
        self.define(node, path)          # before its fields: a field may name the record (recursion)
        names = set()
        for pos, f in enumerate(fields):
            if not isinstance(f, dict):
                self.fail(path, "a field must be an object")
            fname = f.get("name")
            if not isinstance(fname, str) or not _NAME_RE.match(fname):
                self.fail(path, f"invalid field name {fname!r}")
            if fname in names:
                self.fail(path, f"duplicate field {fname!r}")
            names.add(fname)
            if "type" not in f:
                self.fail(f"{path}.{fname}", "field without \"type\"")
            ftype = self.parse(f["type"], rns, depth + 1, f"{path}.{fname}")
            faliases = f.get("aliases", [])
            if not isinstance(faliases, list) or not all(isinstance(a, str) for a in faliases):
                self.fail(f"{path}.{fname}", "field aliases must be a list of names")
            has_default = "default" in f
            default = f.get("default")
            if has_default:
                try:
                    _encode_default(ftype, default)
                except _BadDefault as exc:
                    self.fail(f"{path}.{fname}", f"invalid default {default!r}: {exc}")
            node.fields.append(_Field(fname, ftype, has_default, default, tuple(faliases), pos))
        return node

    def enum(self, obj: dict, ns: str, path: str) -> _Node:
        node = _Node("enum")
        node.name, ens = self.fullname(obj.get("name"), obj.get("namespace"), ns, path)
        node.aliases = self.aliases(obj, ens, path)
        symbols = obj.get("symbols")
        if not isinstance(symbols, list):
            self.fail(node.name, "enum without a \"symbols\" list")
        for s in symbols:
            if not isinstance(s, str) or not _NAME_RE.match(s):
                self.fail(node.name, f"invalid enum symbol {s!r}")
        if len(set(symbols)) != len(symbols):
            self.fail(node.name, "duplicate enum symbol")
        node.symbols = list(symbols)
        if "default" in obj:
            d = obj["default"]
            if d not in node.symbols:
                self.fail(node.name, f"enum default {d!r} is not one of its symbols")
            node.enum_default = d
        self.define(node, path)
        return node

    def fixed(self, obj: dict, ns: str, path: str) -> _Node:
        node = _Node("fixed")
        node.name, fns = self.fullname(obj.get("name"), obj.get("namespace"), ns, path)
        node.aliases = self.aliases(obj, fns, path)
        size = obj.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or size > 0x7FFFFFFF:
            self.fail(node.name, f"invalid fixed size {size!r}")
        node.size = size
        self.define(node, path)
        return node


def _copy(node: _Node) -> _Node:
    out = _Node(node.type)
    for slot in _Node.__slots__:
        if hasattr(node, slot):
            setattr(out, slot, getattr(node, slot))
    return out


def _max_fixed_precision(size: int) -> int:
    if size <= 0:
        return 0
    return int(math.floor(math.log10(2) * (8 * size - 1)))


def _logical(node: _Node, lt: str, obj: dict) -> Optional[dict]:
    """The logical type annotation, or None where Java ignores it as invalid."""
    t = node.type
    if lt == "decimal":
        if t not in ("bytes", "fixed"):
            return None
        p = obj.get("precision")
        s = obj.get("scale", 0)
        if not isinstance(p, int) or isinstance(p, bool) or p <= 0:
            return None
        if not isinstance(s, int) or isinstance(s, bool) or s < 0 or s > p:
            return None
        if t == "fixed" and p > _max_fixed_precision(node.size):
            return None
        return {"name": "decimal", "precision": p, "scale": s}
    valid = {
        "uuid": ("string", "fixed"), "date": ("int",), "time-millis": ("int",),
        "time-micros": ("long",), "timestamp-millis": ("long",), "timestamp-micros": ("long",),
        "timestamp-nanos": ("long",), "local-timestamp-millis": ("long",),
        "local-timestamp-micros": ("long",), "local-timestamp-nanos": ("long",),
        "duration": ("fixed",),
    }.get(lt)
    if valid is None or t not in valid:
        return None
    if lt == "duration" and node.size != 12 or lt == "uuid" and t == "fixed" and node.size != 16:
        return None
    return {"name": lt}


def _node_json(node: _Node, defined: set) -> Any:
    t = node.type
    if t == "union":
        return [_node_json(b, defined) for b in node.branches]
    if node.name is not None:
        if node.name in defined:
            return node.name
        defined.add(node.name)
        ns, _, short = node.name.rpartition(".")
        out: dict = {"type": t, "name": short, "namespace": ns}
        if node.aliases:
            out["aliases"] = list(node.aliases)
        if t == "record":
            fields = []
            for f in node.fields:
                fj: dict = {"name": f.name, "type": _node_json(f.type, defined)}
                if f.has_default:
                    fj["default"] = f.default
                if f.aliases:
                    fj["aliases"] = list(f.aliases)
                fields.append(fj)
            out["fields"] = fields
        elif t == "enum":
            out["symbols"] = list(node.symbols)
            if node.enum_default is not None:
                out["default"] = node.enum_default
        else:
            out["size"] = node.size
    elif t == "array":
        out = {"type": t, "items": _node_json(node.items, defined)}
    elif t == "map":
        out = {"type": t, "values": _node_json(node.values, defined)}
    elif node.logical is None:
        return t
    else:
        out = {"type": t}
    if node.logical is not None:
        out["logicalType"] = node.logical["name"]
        if node.logical["name"] == "decimal":
            out["precision"] = node.logical["precision"]
            out["scale"] = node.logical["scale"]
    return out


def parse_schema(text_or_obj: Union[str, bytes, Any],
                 named_types: Union[Mapping[str, Any], Iterable[Any], None] = None) -> AvroSchema:
    """Parse an Avro schema: JSON text (``str``/``bytes``) or the parsed JSON
    (a type name, list or dict).  ``named_types`` holds schemas (AvroSchema,
    text or JSON) whose named types this one may reference by name, as Schema
    Registry references; a mapping's values are used.  Raises
    :class:`~kafkarec.errors.AvroSchemaError` (a ``ValueError``) with the path
    and reason."""
    if isinstance(text_or_obj, AvroSchema):
        return text_or_obj
    obj = text_or_obj
    if isinstance(obj, (bytes, bytearray, memoryview)):
        try:
            obj = bytes(obj).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AvroSchemaError(f"schema text is not UTF-8: {exc}") from None
    if isinstance(obj, str):
        if len(obj) > MAX_SCHEMA_TEXT:
            raise AvroSchemaError(f"schema text longer than {MAX_SCHEMA_TEXT} characters")
        stripped = obj.strip()
        if stripped in PRIMITIVES:
            obj = stripped
        else:
            try:
                obj = json.loads(obj)
            except RecursionError:
                raise AvroSchemaError(f"schema nests deeper than {MAX_DEPTH} levels") from None
            except ValueError as exc:
                raise AvroSchemaError(f"schema is not JSON: {exc}") from None
    parser = _Parser(named_types)
    try:
        root = parser.parse(obj, "", 0, "")
    except RecursionError:
        raise AvroSchemaError(f"schema nests deeper than {MAX_DEPTH} levels") from None
    if _expanded_size(root, {}) > MAX_SCHEMA_NODES:
        # a named type used twice is decoded into two columns: what counts is
        # the schema with every reference expanded (which can grow exponentially)
        raise AvroSchemaError(f"schema has more than {MAX_SCHEMA_NODES} types once its named types are "
                              "expanded where they are used")
    own = {k: v for k, v in parser.named.items()}
    schema = AvroSchema(root, own, obj)
    schema.recursive = _has_cycle(root, set(), set())
    return schema


def _has_cycle(node: _Node, open_: set, done: set) -> bool:
    """Whether a record reaches itself (directly, or through named types given by reference)."""
    key = id(node)
    if key in open_:
        return True
    if key in done:
        return False
    open_.add(key)
    found = any(_has_cycle(c, open_, done) for c in _children(node))
    open_.discard(key)
    done.add(key)
    return found


def _expanded_size(node: _Node, memo: dict) -> int:
    key = id(node)
    size = memo.get(key)
    if size is not None:
        return size
    memo[key] = 1                   # a recursive reference counts once
    size = 1
    for child in _children(node):
        size += _expanded_size(child, memo)
        if size > MAX_SCHEMA_NODES:
            break
    memo[key] = size
    return size


def _children(node: _Node) -> list:
    if node.type == "record":
        return [f.type for f in node.fields]
    if node.type == "array":
        return [node.items]
    if node.type == "map":
        return [node.values]
    if node.type == "union":
        return node.branches
    return []


# ----------------------------------------------------------------------------- defaults

class _BadDefault(Exception):
    pass


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _encode_default(node: _Node, v: Any) -> bytes:
    """The Avro binary encoding of a JSON default value for ``node`` (the
    spec's table: bytes/fixed as ISO-8859-1 strings; a union's default is for
    its first branch, as Java encodes it)."""
    t = node.type
    if t == "null":
        if v is not None:
            raise _BadDefault("expected null")
        return b""
    if t == "boolean":
        if not isinstance(v, bool):
            raise _BadDefault("expected a boolean")
        return b"\x01" if v else b"\x00"
    if t in ("int", "long"):
        if not _is_int(v) and not (isinstance(v, float) and v.is_integer()):
            raise _BadDefault(f"expected an {t}")
        v = int(v)
        lim = 1 << (31 if t == "int" else 63)
        if not -lim <= v < lim:
            raise _BadDefault(f"out of range for {t}")
        return encode_varlong(v)
    if t in ("float", "double"):
        if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
            v = float(v)
        if not (_is_int(v) or isinstance(v, float)):
            raise _BadDefault(f"expected a {t}")
        return struct.pack("<f" if t == "float" else "<d", float(v))
    if t in ("bytes", "string", "fixed"):
        if not isinstance(v, str):
            raise _BadDefault("expected a string")
        if t == "string":
            try:
                raw = v.encode("utf-8")
            except UnicodeEncodeError:
                raise _BadDefault("a string default must be valid Unicode (no lone surrogates)") from None
        else:
            try:
                raw = v.encode("latin-1")
            except UnicodeEncodeError:
                raise _BadDefault("bytes defaults are strings of code points 0-255") from None
        if t == "fixed":
            if len(raw) != node.size:
                raise _BadDefault(f"fixed default must have {node.size} bytes")
            return raw
        return encode_varlong(len(raw)) + raw
    if t == "enum":
        if v not in node.symbols:
            raise _BadDefault("not a symbol of the enum")
        return encode_varlong(node.symbols.index(v))
    if t == "array":
        if not isinstance(v, list):
            raise _BadDefault("expected a list")
        body = b"".join(_encode_default(node.items, x) for x in v)
        return (encode_varlong(len(v)) + body if v else b"") + b"\x00"
    if t == "map":
        if not isinstance(v, dict):
            raise _BadDefault("expected an object")
        body = b"".join(_encode_default(_STRING, k) + _encode_default(node.values, x) for k, x in v.items())
        return (encode_varlong(len(v)) + body if v else b"") + b"\x00"
    if t == "record":
        if not isinstance(v, dict):
            raise _BadDefault("expected an object")
        out = []
        for f in node.fields:
            if f.name in v:
                out.append(_encode_default(f.type, v[f.name]))
            elif f.has_default:
                out.append(_encode_default(f.type, f.default))
            else:
                raise _BadDefault(f"no value for field {f.name!r}")
        return b"".join(out)
    if t == "union":
        for i, b in enumerate(node.branches):
            try:
                return encode_varlong(i) + _encode_default(b, v)
            except _BadDefault:
                continue
        raise _BadDefault("matches no branch of the union")
    raise _BadDefault(f"unknown type {t}")


_STRING = _Node("string")
