"""Avro: schemas, writer -> reader resolution and a compiled decoder to Arrow.

* :func:`parse_schema` parses an Avro 1.12 schema (JSON text or the parsed
  JSON object) into an :class:`AvroSchema`.  Named types defined elsewhere
  (Schema Registry references) are passed in ``named_types``.  Recursive types
  parse (``AvroSchema.recursive``); a decoder reads them as Spark's ``from_avro``
  does, only with ``recursive_field_max_depth`` (``recursiveFieldMaxDepth``, see
  :func:`unroll`); nesting depth, schema size, names and defaults are checked.
* :class:`AvroDecoder` resolves each writer schema to one reader schema with
  Apache Avro's rules (Java's ``Resolver``: promotions int->long->float->double,
  string<->bytes, defaults, skipped fields, aliases, enum defaults, union
  branches) and compiles the result to a flat program that the core
  (``_core_src/_avro.pxi``) runs over the one checked cursor of the core,
  writing Arrow buffers directly: no Python object per record.
* The Arrow type is Spark's ``from_avro`` mapping (``SchemaConverters``),
  keeping Arrow's full precision: record -> struct (fields not nullable unless
  their union has null), enum -> string, ``[null, X]`` -> nullable X,
  ``[int, long]`` -> int64, ``[float, double]`` -> float64, any other union ->
  struct ``member0..memberN`` (nullable members, one set), bytes/fixed ->
  binary, decimal -> decimal128 (decimal256 above precision 38), date ->
  date32, timestamp-millis/micros/nanos -> timestamp ms/us/ns in UTC,
  local-timestamp-* -> timestamp without a time zone, array -> list, map ->
  map<string, X>; time-millis/time-micros stay int32/int64 and duration and
  uuid-on-fixed stay binary, as Spark keeps them.  A primitive schema gives a
  primitive column.  Logical types that Java ignores as invalid (a decimal
  whose scale exceeds its precision...) are ignored here too.
* String columns are valid UTF-8 (Arrow requires it): a string, or bytes read
  as a string, that is not UTF-8 is a per-record error, where Java would
  substitute U+FFFD.

Resolution errors that every record would hit raise
:class:`~kafkarec.errors.SchemaResolutionError` when the writer is added;
errors that only some data reaches (a writer union branch the reader cannot
take, an enum symbol the reader lacks and has no default for) are per-record
errors, as in Java, which reports them lazily.

Trailing bytes after the Avro body are ignored, as Confluent's
``AbstractKafkaAvroDeserializer`` and Java's ``GenericDatumReader`` ignore
them.  A writer schema that is the primitive ``bytes`` takes the rest of the
value with no length prefix in :meth:`AvroDecoder.decode` (Confluent's
framing rule), and a length-prefixed Avro ``bytes`` in :func:`decode_values`.
"""
from __future__ import annotations

import json
import math
import re
import struct
from typing import Any, Iterable, Mapping, NoReturn, Optional, Union

from kafkarec._core import encode_varlong
from kafkarec.errors import SchemaResolutionError, AvroSchemaError

__all__ = [
    "AvroSchema",
    "AvroDecoder",
    "parse_schema",
    "decode_values",
    "arrow_type_of",
    "spark_options",
    "SPARK_OPTIONS",
    "unroll",
    "MAX_DEPTH",
    "MAX_SCHEMA_NODES",
    "MAX_SCHEMA_TEXT",
]

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


# ----------------------------------------------------------------------------- Arrow types

def _pa():
    import pyarrow
    return pyarrow


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


# ----------------------------------------------------------------------------- columns

# column kinds (as _avro.pxi numbers them)
CK_NULL, CK_BOOL, CK_I32, CK_I64, CK_F32, CK_F64, CK_BIN, CK_DEC16, CK_DEC32, CK_STRUCT, CK_LIST = range(11)
# numeric kinds for promotion
NK_INT, NK_LONG, NK_FLOAT, NK_DOUBLE = range(4)
_NK = {"int": NK_INT, "long": NK_LONG, "float": NK_FLOAT, "double": NK_DOUBLE}

# op codes (as _avro.pxi numbers them)
(OP_NULL_COL, OP_SET_NULL, OP_BOOL, OP_INT, OP_LONG, OP_NUM, OP_STR, OP_BYTES, OP_FIXED,
 OP_DEC_BYTES, OP_DEC_FIXED, OP_ENUM, OP_RECORD, OP_ARRAY, OP_MAP, OP_WUNION, OP_MEMBER,
 OP_ERROR, OP_DEFAULT, OP_SKIP_BOOL, OP_SKIP_INT, OP_SKIP_LONG, OP_SKIP_N,
 OP_SKIP_BYTES, OP_SKIP_RECORD, OP_SKIP_ARRAY, OP_SKIP_MAP, OP_SKIP_UNION, OP_NOP) = range(29)


class _Col:
    """The reader-side position of a value: its column and how it is stored."""
    __slots__ = ("node", "col", "store", "children", "branches", "mode", "member_of", "nonnull")

    def __init__(self, node, col, store):
        self.node = node
        self.col = col
        self.store = store
        self.children: list = []
        self.branches: list = []   # union: per reader branch, _Col or None (null)
        self.mode = None
        self.nonnull: list = []


class _Layout:
    """Every column of a reader schema, in the order the core allocates them.
    specs[i] = (kind, children column ids)."""

    def __init__(self, reader: AvroSchema) -> None:
        self.specs: list = []
        self.root = self.place(reader.root, None)

    def new(self, kind: int, nullable: bool = False) -> int:
        self.specs.append([kind, [], nullable])
        return len(self.specs) - 1

    def place(self, node: _Node, col: Optional[int], store: Optional[int] = None) -> _Col:
        """Place node; `col` is given when the node shares a union's column."""
        t = node.type
        lg = node.logical["name"] if node.logical else None
        if t == "union":
            mode, nonnull, has_null = _union_mode(node)
            if mode == "struct":
                c = _Col(node, self.new(CK_STRUCT, has_null), CK_STRUCT)
                for b in node.branches:
                    if b.type == "null":
                        c.branches.append(None)
                    else:
                        m = self.place(b, None)
                        self.specs[m.col][2] = True       # Spark's member fields are nullable
                        self.specs[c.col][1].append(m.col)
                        c.branches.append(m)
            else:
                kind = {"null": CK_NULL, "long": CK_I64, "double": CK_F64}.get(mode, CK_STRUCT)
                if mode == "single":
                    first = self.place(node.branches[nonnull[0]], None)
                    cid, kind = first.col, first.store
                else:
                    cid = self.new(kind)
                    first = None
                self.specs[cid][2] = has_null or mode == "null"
                c = _Col(node, cid, kind)
                for i, b in enumerate(node.branches):
                    if b.type == "null":
                        c.branches.append(None)
                    elif first is not None:
                        c.branches.append(first)
                    else:
                        c.branches.append(self.place(b, cid, kind))
            c.mode = mode
            c.nonnull = nonnull
            return c
        if t == "null":
            kind = CK_NULL
        elif t == "boolean":
            kind = CK_BOOL
        elif t in ("int", "long", "float", "double"):
            kind = store if store is not None else {"int": CK_I32, "long": CK_I64, "float": CK_F32,
                                                    "double": CK_F64}[t]
        elif t in ("bytes", "fixed") and lg == "decimal":
            kind = CK_DEC16 if node.logical["precision"] <= 38 else CK_DEC32
        elif t in ("string", "bytes", "fixed", "enum"):
            kind = CK_BIN
        elif t == "record":
            kind = CK_STRUCT
        else:
            kind = CK_LIST
        if col is None:
            col = self.new(kind, kind == CK_NULL)
        c = _Col(node, col, kind)
        if t == "record":
            for f in node.fields:
                fc = self.place(f.type, None)
                self.specs[col][1].append(fc.col)
                c.children.append(fc)
        elif t == "array":
            ic = self.place(node.items, None)
            self.specs[col][1].append(ic.col)
            c.children.append(ic)
        elif t == "map":
            entries = self.new(CK_STRUCT)
            keys = self.new(CK_BIN)
            vc = self.place(node.values, None)
            self.specs[entries][1] += [keys, vc.col]
            self.specs[col][1].append(entries)
            c.children += [entries, keys, vc]
        return c


# ----------------------------------------------------------------------------- resolution

class _Err:
    """A resolution error, raised at compile time unless only some data reaches it."""
    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _desc(node: _Node) -> str:
    return node.name if node.name else node.type


class _Compiler:
    """Writer -> reader resolution (Java's Resolver rules) emitted as ops."""

    def __init__(self, layout: _Layout, writer: AvroSchema, reader: AvroSchema, confluent: bool) -> None:
        self.layout = layout
        self.ops: list = []          # [kind, col, a, b, c, n]
        self.kids: list = []
        self.aux: list = []
        self.blobs: list = [b""]
        self.errors: list = []
        self.confluent = confluent
        # Schema.applyAliases: reader aliases rename writer types; reader field
        # aliases rename writer fields of the record that gets the reader's name
        self.type_alias: dict = {}
        self.field_alias: dict = {}
        for full, node in reader.named.items():
            for a in node.aliases:
                self.type_alias[a] = full
            if node.type == "record":
                fa = {a: f.name for f in node.fields for a in f.aliases}
                if fa:
                    self.field_alias[full] = fa
        self.reader = reader
        self.writer = writer
        self.skips: dict = {}        # id(writer record) -> its skip op

    def wname(self, w: _Node) -> str:
        """The full name of a writer's named type after the reader's aliases."""
        return "" if w.name is None else self.type_alias.get(w.name, w.name)

    def emit(self, kind, col=-1, a=0, b=0, c=0, n=0) -> int:
        self.ops.append([kind, col, a, b, c, n])
        return len(self.ops) - 1

    def kid_list(self, ids: list) -> int:
        start = len(self.kids)
        self.kids.extend(ids)
        return start

    def compile(self) -> int:
        # Confluent writes a `bytes` schema as the raw value with no length
        # prefix: the core then reads the rest of the value as that bytes datum.
        self.raw_bytes = self.confluent and self.writer.root.type == "bytes"
        return self.resolve(self.writer.root, self.layout.root, "<root>", lazy=False)

    def error(self, reason: str, path: str, lazy: bool) -> int:
        if not lazy:
            raise SchemaResolutionError(f"{path}: {reason}")
        self.errors.append(f"{path}: {reason}")
        return self.emit(OP_ERROR, a=len(self.errors) - 1)

    # -- resolution (returns an op index, or raises / emits OP_ERROR)
    def resolve(self, w: _Node, rc: _Col, path: str, lazy: bool) -> int:
        r = rc.node
        if w.type == "union":
            return self.writer_union(w, rc, path)
        if w.type == r.type:
            return self.same(w, rc, path, lazy)
        if r.type == "union":
            k = self.first_match(w, r)
            if k < 0:
                return self.error(f"found {_desc(w)}, expecting {self.union_desc(r)}: no union branch matches",
                                  path, lazy)
            return self.into_branch(w, rc, k, path, lazy)
        return self.promote(w, rc, path, lazy)

    @staticmethod
    def union_desc(r: _Node) -> str:
        return "[" + ", ".join(_desc(b) for b in r.branches) + "]"

    def writer_union(self, w: _Node, rc: _Col, path: str) -> int:
        r = rc.node
        equiv = r.type == "union" and self.union_equiv(w, r)
        ids = []
        for i, b in enumerate(w.branches):
            bpath = f"{path}<{i}:{_desc(b)}>"
            if equiv:
                ids.append(self.into_branch(b, rc, i, bpath, True))
            else:
                ids.append(self.resolve(b, rc, bpath, True))
        return self.emit(OP_WUNION, a=self.kid_list(ids), b=len(ids))

    def into_branch(self, w: _Node, rc: _Col, k: int, path: str, lazy: bool) -> int:
        """w read as the reader union's branch k."""
        bc = rc.branches[k]
        if bc is None:       # the null branch
            return self.emit(OP_SET_NULL, col=rc.col) if rc.mode != "null" else self.emit(OP_NULL_COL, col=rc.col)
        inner = self.resolve(w, bc, path, lazy)
        if rc.mode == "struct":
            return self.emit(OP_MEMBER, col=rc.col, a=inner, c=rc.nonnull.index(k))
        return inner

    def union_equiv(self, w: _Node, r: _Node) -> bool:
        if w.type != r.type:
            return False
        if w.type in ("record", "fixed", "enum") and w.name is not None:
            if self.wname(w).rsplit(".", 1)[-1] != r.short_name:
                return False
        if w.type == "array":
            return self.union_equiv(w.items, r.items)
        if w.type == "map":
            return self.union_equiv(w.values, r.values)
        if w.type == "fixed":
            return w.size == r.size
        if w.type == "enum":
            return w.symbols == r.symbols
        if w.type == "union":
            return len(w.branches) == len(r.branches) and all(
                self.union_equiv(a, b) for a, b in zip(w.branches, r.branches))
        if w.type == "record":
            return len(w.fields) == len(r.fields) and all(
                self.wfield(w, a) == b.name and self.union_equiv(a.type, b.type)
                for a, b in zip(w.fields, r.fields))
        return True

    def wfield(self, w: _Node, f: _Field) -> str:
        fa = self.field_alias.get(self.wname(w))
        return fa.get(f.name, f.name) if fa else f.name

    def first_match(self, w: _Node, r: _Node) -> int:
        vt = w.type
        structure = -1
        for j, b in enumerate(r.branches):
            if vt == b.type:
                if vt in ("record", "enum", "fixed"):
                    if w.name is not None and self.wname(w) == b.name:
                        return j
                    if vt == "record" and not self.record_has_match_error(w, b):
                        if structure < 0 or self.wname(w).rsplit(".", 1)[-1] == b.short_name:
                            structure = j
                else:
                    return j
        if structure >= 0:
            return structure
        promo = {"int": ("long", "double", "float"), "long": ("double", "float"), "float": ("double",),
                 "string": ("bytes",), "bytes": ("string",)}.get(vt, ())
        for j, b in enumerate(r.branches):
            if b.type in promo:
                return j
        return -1

    def record_has_match_error(self, w: _Node, r: _Node) -> bool:
        """Java's hasMatchError(RecordAdjust.resolve(w, r)): a missing required
        field or a field whose own resolution is directly an error."""
        rfields = {f.name: f for f in r.fields}
        wnames = set()
        for wf in w.fields:
            name = self.wfield(w, wf)
            wnames.add(name)
            rf = rfields.get(name)
            if rf is not None and self.direct_error(wf.type, rf.type):
                return True
        return any(f.name not in wnames and not f.has_default for f in r.fields)

    def direct_error(self, w: _Node, r: _Node) -> bool:
        if w.type == "union":
            return False
        if w.type == r.type:
            if w.type in ("fixed", "enum"):
                if w.name is not None and self.wname(w).rsplit(".", 1)[-1] != r.short_name:
                    return True
                return w.type == "fixed" and w.size != r.size
            if w.type == "record":
                return any(f.name not in {self.wfield(w, x) for x in w.fields} and not f.has_default
                           for f in r.fields)
            return False
        if r.type == "union":
            return self.first_match(w, r) < 0
        return not self.promotable(w.type, r.type)

    @staticmethod
    def promotable(wt: str, rt: str) -> bool:
        return (wt, rt) in {("int", "long"), ("int", "float"), ("long", "float"), ("int", "double"),
                            ("long", "double"), ("float", "double"), ("string", "bytes"),
                            ("bytes", "string")}

    def numeric(self, wt: str, rc: _Col) -> int:
        rt = rc.node.type
        if rc.store == CK_I32 and wt == rt == "int":
            return self.emit(OP_INT, col=rc.col)
        if rc.store == CK_I64 and wt == rt == "long":
            return self.emit(OP_LONG, col=rc.col)
        store_nk = {CK_I32: NK_INT, CK_I64: NK_LONG, CK_F32: NK_FLOAT, CK_F64: NK_DOUBLE}[rc.store]
        return self.emit(OP_NUM, col=rc.col, n=_NK[wt] | (_NK[rt] << 2) | (store_nk << 4))

    def promote(self, w: _Node, rc: _Col, path: str, lazy: bool) -> int:
        r = rc.node
        if not self.promotable(w.type, r.type):
            return self.error(f"found {_desc(w)}, expecting {_desc(r)}", path, lazy)
        if r.type in ("long", "float", "double"):
            return self.numeric(w.type, rc)
        return self.primitive_bytes(w, rc)

    def primitive_bytes(self, w: _Node, rc: _Col) -> int:
        r = rc.node
        if rc.store in (CK_DEC16, CK_DEC32):
            return self.emit(OP_DEC_BYTES, col=rc.col, n=16 if rc.store == CK_DEC16 else 32)
        # bytes read as a string column must be UTF-8 (Arrow's string type)
        return self.emit(OP_STR if r.type == "string" else OP_BYTES, col=rc.col)

    def same(self, w: _Node, rc: _Col, path: str, lazy: bool) -> int:
        r = rc.node
        t = w.type
        if t == "null":
            return self.emit(OP_NULL_COL, col=rc.col)
        if t == "boolean":
            return self.emit(OP_BOOL, col=rc.col)
        if t in ("int", "long", "float", "double"):
            return self.numeric(t, rc)
        if t in ("string", "bytes"):
            return self.primitive_bytes(w, rc)
        if t == "fixed":
            if w.name is not None and self.wname(w).rsplit(".", 1)[-1] != r.short_name:
                return self.error(f"found {w.name}, expecting {r.name}: names do not match", path, lazy)
            if w.size != r.size:
                return self.error(f"found fixed {w.name} of size {w.size}, expecting size {r.size}", path, lazy)
            if rc.store in (CK_DEC16, CK_DEC32):
                return self.emit(OP_DEC_FIXED, col=rc.col, b=16 if rc.store == CK_DEC16 else 32, n=r.size)
            return self.emit(OP_FIXED, col=rc.col, n=r.size)
        if t == "enum":
            if w.name is not None and self.wname(w).rsplit(".", 1)[-1] != r.short_name:
                return self.error(f"found {w.name}, expecting {r.name}: names do not match", path, lazy)
            default = r.symbols.index(r.enum_default) if r.enum_default is not None else -1
            table = []
            for s in w.symbols:
                j = r.symbols.index(s) if s in r.symbols else default
                table.append(j)
            # reader symbols (as UTF-8), and for writer symbols the reader lacks, their names for errors
            start = len(self.aux)
            self.aux.extend(table)
            sym = len(self.blobs)
            self.blobs.append(b"".join(s.encode() for s in r.symbols))
            offs = len(self.aux)
            o = 0
            self.aux.append(0)
            for s in r.symbols:
                o += len(s.encode())
                self.aux.append(o)
            self.errors.append(f"{path}: enum {r.name} has no symbol for writer symbols "
                               + ",".join(f"{i}={s}" for i, s in enumerate(w.symbols) if table[i] < 0)
                               + " and no default")
            return self.emit(OP_ENUM, col=rc.col, a=start, b=len(table), c=offs,
                             n=sym | (len(self.errors) - 1) << 32)
        if t == "record":
            return self.record(w, rc, path, lazy)
        # an item or map value that cannot be resolved fails only the rows that hold one:
        # Java's resolver keeps such an error as an action it throws when an item is read
        if t == "array":
            item = self.resolve(w.items, rc.children[0], path + "[]", True)
            return self.emit(OP_ARRAY, col=rc.col, a=item, n=0 if self.min_size(w.items) else 1)
        if t == "map":
            entries, keys, vc = rc.children
            val = self.resolve(w.values, vc, path + "{}", True)
            return self.emit(OP_MAP, col=rc.col, a=val, b=entries, c=keys)
        raise AssertionError(t)

    def record(self, w: _Node, rc: _Col, path: str, lazy: bool) -> int:
        r = rc.node
        rpos = {f.name: i for i, f in enumerate(r.fields)}
        ids = []
        seen = set()
        renamed = set()
        for wf in w.fields:
            name = self.wfield(w, wf)
            if name in renamed:
                # Java's Schema.applyAliases renames the whole writer before resolving: two
                # writer fields under one name is its "Duplicate field" error, for every record
                return self.error(f"writer fields of {w.name} collide as {name!r} after the reader's field "
                                  "aliases (Avro's Duplicate field)", path, False)
            renamed.add(name)
            i = rpos.get(name)
            if i is None:
                ids.append(self.skip(wf.type))
            else:
                seen.add(i)
                ids.append(self.resolve(wf.type, rc.children[i], f"{path}.{name}", lazy))
        for i, rf in enumerate(r.fields):
            if i in seen:
                continue
            if not rf.has_default:
                return self.error(f"found {w.name}, expecting {r.name}, missing required field {rf.name!r} "
                                  "(the writer lacks it and the reader gives no default)", path, lazy)
            blob = len(self.blobs)
            self.blobs.append(_encode_default(rf.type, rf.default))
            saved = self.type_alias, self.field_alias
            self.type_alias, self.field_alias = {}, {}
            try:
                prog = self.resolve(rf.type, rc.children[i], f"{path}.{rf.name}", False)
            finally:
                self.type_alias, self.field_alias = saved
            ids.append(self.emit(OP_DEFAULT, a=prog, b=blob))
        return self.emit(OP_RECORD, col=rc.col, a=self.kid_list(ids), b=len(ids))

    def min_size(self, w: _Node, open_: Optional[set] = None) -> int:
        """Fewest bytes an encoded value of w takes (0 when it can be empty)."""
        t = w.type
        if t == "null":
            return 0
        if t == "fixed":
            return min(w.size, 1)
        if t == "record":
            open_ = set() if open_ is None else open_
            if id(w) in open_:
                return 1            # a record inside itself: only a union or collection gets there
            open_.add(id(w))
            size = min(1, sum(self.min_size(f.type, open_) for f in w.fields))
            open_.discard(id(w))
            return size
        return 1

    def skip(self, w: _Node) -> int:
        t = w.type
        if t == "record":
            # one skip op per record type: a recursive writer type skips through itself
            done = self.skips.get(id(w))
            if done is not None:
                return done
            at = self.emit(OP_SKIP_RECORD)
            self.skips[id(w)] = at
            ids = [self.skip(f.type) for f in w.fields]
            self.ops[at][2], self.ops[at][3] = self.kid_list(ids), len(ids)
            return at
        if t == "null":
            return self.emit(OP_NOP)
        if t == "boolean":
            return self.emit(OP_SKIP_BOOL)
        if t in ("int", "enum"):
            return self.emit(OP_SKIP_INT)
        if t == "long":
            return self.emit(OP_SKIP_LONG)
        if t == "float":
            return self.emit(OP_SKIP_N, n=4)
        if t == "double":
            return self.emit(OP_SKIP_N, n=8)
        if t == "fixed":
            return self.emit(OP_SKIP_N, n=w.size)
        if t in ("string", "bytes"):
            return self.emit(OP_SKIP_BYTES)
        if t == "array":
            return self.emit(OP_SKIP_ARRAY, a=self.skip(w.items), n=0 if self.min_size(w.items) else 1)
        if t == "map":
            return self.emit(OP_SKIP_MAP, a=self.skip(w.values))
        if t == "union":
            ids = [self.skip(b) for b in w.branches]
            return self.emit(OP_SKIP_UNION, a=self.kid_list(ids), b=len(ids))
        raise AssertionError(t)


# ----------------------------------------------------------------------------- the decoder

def _core():
    from kafkarec import _core
    return _core


class AvroDecoder:
    """Decodes Avro bodies written with any number of writer schemas into one
    Arrow column typed by the reader schema (Spark's ``from_avro`` mapping).

    ``add_writer(id, schema)`` compiles writer -> reader resolution once;
    ``decode(values, writer_ids, body_offsets)`` then decodes a whole column
    with no Python object per record.  Each row that cannot be decoded (an
    unknown writer id, a truncated or garbage body, a value the reader cannot
    take) is a null value with its reason in the error column; tombstones
    (null values) and null writer ids are null values with no error."""

    def __init__(self, reader: AvroSchema, *, max_items: int = 1 << 24,
                 stable_union_prefix: Optional[str] = None, datetime_rebase_mode: str = "CORRECTED",
                 time_zone: str = "UTC", recursive_field_max_depth: int = -1) -> None:
        """``max_items`` bounds the items that take no bytes (``array<null>``,
        records of nulls) one value may hold; a value past it is a row error and
        the rows after it are unaffected.  Any other item needs at least one
        byte of input, so work stays bounded by the input size times this.

        ``stable_union_prefix``: name union members by type (see :func:`arrow_type_of`);
        ``datetime_rebase_mode``: Spark's ``datetimeRebaseMode`` (``CORRECTED``, ``LEGACY``,
        ``EXCEPTION``, see :mod:`kafkarec.avro_rebase`), in ``time_zone`` (Spark's session
        time zone); ``recursive_field_max_depth``: Spark's ``recursiveFieldMaxDepth``, how a
        recursive reader schema is read (see :func:`unroll`; -1 refuses it, as Spark does).
        :func:`spark_options` maps ``from_avro``'s option names to these."""
        from kafkarec.avro_rebase import rebase_mode
        if not isinstance(reader, AvroSchema):
            reader = parse_schema(reader)
        self.reader = reader
        self._options = {"stable_union_prefix": stable_union_prefix,
                         "datetime_rebase_mode": rebase_mode(datetime_rebase_mode), "time_zone": time_zone,
                         "recursive_field_max_depth": int(recursive_field_max_depth)}
        # the reader as columns: a recursive one cut at the depth Spark's from_avro cuts it
        self._columns = unroll(reader, recursive_field_max_depth)
        self.arrow_type = arrow_type_of(self._columns, stable_union_prefix=stable_union_prefix)
        self._layout = _Layout(self._columns)
        # the top-level column is nullable: tombstones and records that fail are null
        self._layout.specs[self._layout.root.col][2] = True
        self._specs = [(k, list(ch), nullable) for k, ch, nullable in self._layout.specs]
        self._max_items = max_items
        self._programs: dict = {}
        self._writers: dict = {}
        self._runner = _core()._AvroRunner(self._specs, self._arrow_types(), max_items, self._layout.root.col)

    def __reduce__(self):
        # pickles as schemas (Spark ships decoders to executors); programs are recompiled there
        return (_rebuild_decoder, (self.reader, dict(self._writers), self._max_items, self._options))

    def _arrow_types(self) -> list:
        """The Arrow type of every column, by column id."""
        pa = _pa()
        types: list = [None] * len(self._specs)

        def walk(c: _Col, t) -> None:
            types[c.col] = t
            node = c.node
            if node.type == "union":
                if c.mode == "struct":
                    for m, b in enumerate(x for x in c.branches if x is not None):
                        walk(b, t.field(m).type)
                elif c.mode == "single":
                    walk(next(b for b in c.branches if b is not None), t)
                return
            if node.type == "record":
                for i, fc in enumerate(c.children):
                    walk(fc, t.field(i).type)
            elif node.type == "array":
                walk(c.children[0], t.value_type)
            elif node.type == "map":
                entries, keys, vc = c.children
                types[entries] = pa.struct([t.key_field, t.item_field])
                types[keys] = pa.string()
                walk(vc, t.item_type)

        walk(self._layout.root, self.arrow_type)
        return types

    def add_writer(self, writer_id: int, writer: AvroSchema) -> None:
        """Compile resolution from ``writer`` (schema id ``writer_id``) to the
        reader schema.  Raises SchemaResolutionError when they cannot resolve."""
        if not isinstance(writer, AvroSchema):
            writer = parse_schema(writer)
        self._programs[int(writer_id)] = self._compile(writer, confluent=True)
        self._writers[int(writer_id)] = writer
        self._runner.set_program(int(writer_id), self._programs[int(writer_id)])

    def _compile(self, writer: AvroSchema, confluent: bool):
        if not isinstance(writer, AvroSchema):
            writer = parse_schema(writer)
        comp = _Compiler(self._layout, writer, self._columns, confluent)
        root = comp.compile()
        return _core()._AvroProgram(comp.ops, comp.kids, comp.aux, comp.blobs, comp.errors, root, comp.raw_bytes)

    def decode(self, values, writer_ids, body_offsets):
        """Decode row i, ``values[i][body_offsets[i]:]``, with writer
        ``writer_ids[i]``.  Returns (values as ``arrow_type``, error strings:
        null where the row decoded, else ``"at byte N of the value: reason"``)."""
        return self._rebased(*self._runner.decode(values, writer_ids, body_offsets))

    def _rebased(self, values, errors):
        mode = self._options["datetime_rebase_mode"]
        if mode == "CORRECTED":
            return values, errors
        from kafkarec.avro_rebase import rebase_column, ANCIENT_DATETIME
        values, ancient = rebase_column(values, mode, time_zone=self._options["time_zone"])
        if not ancient.any():
            return values, errors
        pa, pc = _pa(), __import__("pyarrow.compute").compute
        flags = pa.array(ancient)
        values = pc.if_else(flags, pa.scalar(None, values.type), values)
        errors = pc.if_else(pc.and_(flags, pc.is_null(errors)), pa.scalar(ANCIENT_DATETIME), errors)
        return values, errors


#: The ``from_avro`` options :func:`spark_options` maps (Spark's spelling; matched case-insensitively).
SPARK_OPTIONS = ("enableStableIdentifiersForUnionType", "stableIdentifierPrefixForUnionType",
                 "datetimeRebaseMode", "recursiveFieldMaxDepth")


def spark_options(options: Mapping[str, Any], *, time_zone: str = "UTC") -> dict:
    """:class:`AvroDecoder` keyword arguments from Spark ``from_avro`` option names
    (case-insensitive): ``enableStableIdentifiersForUnionType``,
    ``stableIdentifierPrefixForUnionType``, ``datetimeRebaseMode``, ``recursiveFieldMaxDepth``;
    other names are ignored."""
    from kafkarec.avro_rebase import rebase_mode
    o = {str(k).lower(): v for k, v in dict(options or {}).items()}
    stable = str(o.get("enablestableidentifiersforuniontype", "false")).strip().lower()
    depth = str(o.get("recursivefieldmaxdepth", "-1")).strip()
    if not depth.lstrip("-").isdigit():
        raise AvroSchemaError(f"recursiveFieldMaxDepth {o['recursivefieldmaxdepth']!r}: an integer")
    if stable not in ("true", "false"):
        raise AvroSchemaError(f"enableStableIdentifiersForUnionType {o['enablestableidentifiersforuniontype']!r}: "
                              "true or false")
    prefix = o.get("stableidentifierprefixforuniontype", "member_")
    return {"stable_union_prefix": str(prefix) if stable == "true" else None,
            "datetime_rebase_mode": rebase_mode(o.get("datetimerebasemode")), "time_zone": time_zone,
            "recursive_field_max_depth": int(depth)}


def _rebuild_decoder(reader: AvroSchema, writers: dict, max_items: int, options: dict) -> AvroDecoder:
    dec = AvroDecoder(reader, max_items=max_items, **options)
    for wid, w in writers.items():
        dec.add_writer(wid, w)
    return dec


def decode_values(values, writer: AvroSchema, reader: Optional[AvroSchema] = None, **options):
    """Decode a column of plain Avro bodies (no framing) written with
    ``writer``, read as ``reader`` (default: the writer schema), ``options`` as
    :class:`AvroDecoder` takes them.  Returns (values, error strings) as :meth:`AvroDecoder.decode`."""
    pa = _pa()
    writer = parse_schema(writer)
    dec = AvroDecoder(parse_schema(reader) if reader is not None else writer, **options)
    prog = dec._compile(writer, confluent=False)
    dec._runner.set_program(0, prog)
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(values, pa.binary())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return dec._rebased(*dec._runner.decode(values, None, None))
