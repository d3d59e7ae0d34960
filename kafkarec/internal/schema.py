"""kafkarec's compact schema format for Kafka's message protocol, and its compiler into decoding plans.

The schema texts (kafkarec/internal/schemas/*.py) hold Kafka's message definitions, one block a message::

    @GroupMetadataValue versions=0-4 flexible=4+          (apikey=N for metadata-style records)
      protocolType string 0+
      protocol string 0+ null=0+
      currentStateTimestamp int64 2+ default=-1
      members []MemberMetadata 0+                          (a struct array: its fields follow, indented)
        memberId string 0+
      isr []int32 0+ null=0+ tag=0@0+ default=null         (tagged field: tag number @ tagged versions)

A field line is ``name type versions [null=<versions>] [tag=<tag>@<versions>] [default=<value>]``;
versions are ``N``, ``N-M``, ``N+`` or ``none``. Without ``default=`` a field's default is its type's empty
value (0, false, "", the zero UUID, an empty array, a struct of its fields' defaults); ``default=null`` is
Kafka's ``"default": "null"`` (Kafka's JSON ``"default": null`` means no default, as its generator reads
it). Names are Kafka's JSON names (first letter lower-cased, as its JsonConverter writes them). ``plan(schema, version)`` compiles one struct at one version into the
compiled core's ``_KStruct`` (decoded by ``kafkarec._core.kmsg_decode``); ``encode`` writes a dict back.
"""
from __future__ import annotations

import base64
import struct as _struct
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from kafkarec import _core
from kafkarec.errors import EncodeError
from kafkarec.internal import schemas as _schemas

__all__ = ["Message", "Field", "messages", "message", "plan", "encode", "kafka_commit", "ZERO_UUID"]

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

_uvarint = _core.kmsg_encode_uvarint
# The field kinds are the compiled core's (one enum, kafkarec/_core_src/_kmsg.pxi); scalar type names here.
KM_STRUCT = _core.KMSG_KINDS["struct"]
KM_ARRAY = _core.KMSG_KINDS["array"]
_KINDS = {name: kind for name, kind in _core.KMSG_KINDS.items() if kind not in (KM_STRUCT, KM_ARRAY)}
_BOOL, _INT8, _INT16, _UINT16, _INT32, _UINT32, _INT64, _FLOAT64, _STRING, _BYTES, _UUID = (
    _KINDS[n] for n in ("bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string",
                        "bytes", "uuid"))
_INT_RANGES = {_INT8: (-1 << 7, 1 << 7), _INT16: (-1 << 15, 1 << 15), _UINT16: (0, 1 << 16),
               _INT32: (-1 << 31, 1 << 31), _UINT32: (0, 1 << 32), _INT64: (-1 << 63, 1 << 63)}
_PACK = {_INT8: ">b", _INT16: ">h", _UINT16: ">H", _INT32: ">i", _UINT32: ">I", _INT64: ">q"}


def _versions(text: str) -> Tuple[int, int]:
    """'0+' -> (0, 32767); '1-3' -> (1, 3); '2' -> (2, 2); 'none' -> (1, 0) (empty)."""
    if text == "none":
        return (1, 0)
    if text.endswith("+"):
        return (int(text[:-1]), 0x7FFF)
    if "-" in text:
        lo, hi = text.split("-")
        return (int(lo), int(hi))
    return (int(text), int(text))


def _in(v: int, rng: Optional[Tuple[int, int]]) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


class Field:
    __slots__ = ("name", "type", "versions", "nullable", "tag", "tagged", "default", "fields")

    def __init__(self, name, type_, versions, nullable=None, tag=None, tagged=None, default=None):
        self.name: str = name
        self.type: str = type_
        self.versions = versions
        self.nullable = nullable
        self.tag: Optional[int] = tag
        self.tagged = tagged
        self.default: Optional[str] = default
        self.fields: List[Field] = []

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def base_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.base_type not in _KINDS

    def __repr__(self):
        return f"Field({self.name!r}, {self.type!r})"


class Message:
    """One message definition (a record key, value, or other struct) from the schema text."""

    __slots__ = ("name", "versions", "flexible", "api_key", "fields", "schema_set", "kind")

    def __init__(self, name, versions, flexible, api_key, schema_set, kind=None):
        self.name: str = name
        self.versions: Tuple[int, int] = versions
        self.flexible = flexible
        self.api_key: Optional[int] = api_key
        self.fields: List[Field] = []
        self.schema_set: str = schema_set
        #: "coordinator-key" / "coordinator-value" when the record type is the api key (newer Kafka)
        self.kind: Optional[str] = kind

    @property
    def valid_versions(self) -> range:
        return range(self.versions[0], self.versions[1] + 1)

    def __repr__(self):
        return f"Message({self.name!r}, versions={self.versions[0]}-{self.versions[1]})"


def _parse(text: str, schema_set: str) -> List[Message]:
    out: List[Message] = []
    stack: List[Tuple[int, Any]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("@"):
            head = line[1:].split()
            opts = dict(p.split("=", 1) for p in head[1:])
            msg = Message(head[0], _versions(opts["versions"]), _versions(opts["flexible"]),
                          int(opts["apikey"]) if "apikey" in opts else None, schema_set, opts.get("kind"))
            out.append(msg)
            stack = [(0, msg)]
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        parts = line.split()
        name, type_, versions = parts[0], parts[1], _versions(parts[2])
        nullable = tag = tagged = default = None
        for p in parts[3:]:
            k, v = p.split("=", 1)
            if k == "null":
                nullable = _versions(v)
            elif k == "tag":
                t, tv = v.split("@")
                tag, tagged = int(t), _versions(tv)
            elif k == "default":
                default = v
        f = Field(name, type_, versions, nullable, tag, tagged, default)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        stack[-1][1].fields.append(f)
        stack.append((depth, f))
    return out


@lru_cache(maxsize=None)
def messages(schemas: str = _schemas.DEFAULT) -> Dict[str, Message]:
    """Every message definition of schema set `schemas` ("current" or "1eb7644"), by name."""
    import importlib
    package = importlib.import_module(_schemas.profile_package(schemas))
    out: Dict[str, Message] = {}
    for set_name in package.SETS:
        mod = importlib.import_module(package.__name__ + "." + set_name)
        for m in _parse(mod.TEXT, set_name):
            out[m.name] = m
    return out


def kafka_commit(schemas: str = _schemas.DEFAULT) -> str:
    """The Apache Kafka commit schema set `schemas` was written from."""
    import importlib
    return importlib.import_module(_schemas.profile_package(schemas)).KAFKA_COMMIT


def message(name: str, schemas: str = _schemas.DEFAULT) -> Message:
    try:
        return messages(schemas)[name]
    except KeyError:
        raise KeyError(f"no schema named {name!r} in schema set {schemas!r}") from None


def _default(f: Field, kind: int, json: bool, sub=None) -> Tuple[Any, bool]:
    d = f.default
    if kind == KM_ARRAY:
        if d == "null":
            return None, True
        return [], True
    if d == "null":
        return None, True
    if kind == _BOOL:
        return (d == "true"), True
    if kind in _INT_RANGES:
        return (int(d, 0) if d is not None else 0), True
    if kind == _FLOAT64:
        return (float(d) if d is not None else 0.0), True
    if kind == _STRING:
        return (d if d is not None else ""), True
    if kind == _UUID:
        return ZERO_UUID, True
    if kind == _BYTES:
        return ("" if json else b""), True
    if kind == KM_STRUCT and sub is not None:
        # the struct Kafka's no-argument constructor makes; the JSON view leaves out its tagged fields, as
        # it leaves out every tagged field at its default
        fields = {kf.name: kf for kf in sub.fields + (() if json else sub.tagged_fields)}
        if all(kf.has_default for kf in fields.values()):
            return {n: fields[n].default for n in sub.order if n in fields}, True
    return None, False


def _compile_struct(name: str, fields: List[Field], version: int, flexible: bool, json: bool):
    st = _core._KStruct(name, version, flexible)
    plain, tagged, order = [], [], []
    for f in fields:
        if not _in(version, f.versions):
            continue
        nullable = _in(version, f.nullable)
        sub = None
        if f.is_array:
            kind = KM_ARRAY
            elem = KM_STRUCT if f.is_struct else _KINDS[f.base_type]
        elif f.is_struct:
            kind = elem = KM_STRUCT
        else:
            kind = elem = _KINDS[f.type]
        if f.is_struct:
            sub = _compile_struct(f.base_type, f.fields, version, flexible, json)
        is_tagged = flexible and _in(version, f.tagged)
        default, has_default = _default(f, kind, json, sub if kind == KM_STRUCT else None)
        kf = _core._KField(f.name, kind, nullable, elem, sub, f.tag if is_tagged else -1, default, has_default)
        (tagged if is_tagged else plain).append(kf)
        order.append(f.name)
    st.set_fields(tuple(plain), tuple(tagged), tuple(order))
    return st


@lru_cache(maxsize=None)
def plan(name: str, version: int, json: bool = False, schemas: str = _schemas.DEFAULT):
    """The compiled plan of message `name` at `version` (KeyError / ValueError if unknown)."""
    m = message(name, schemas)
    if version not in m.valid_versions:
        raise ValueError(f"{name} has no version {version} (valid: {m.versions[0]}-{m.versions[1]})")
    return _compile_struct(m.name, m.fields, version, _in(version, m.flexible), json)


# ----------------------------------------------------------------------------------------------- encoding



def _uuid_bytes(v: str) -> bytes:
    raw = base64.urlsafe_b64decode(v + "==")
    if len(raw) != 16:
        raise EncodeError(f"UUID {v!r} is not 16 bytes")
    return raw


def _enc_value(out: bytearray, kind: int, v: Any, nullable: bool, flexible: bool, sub, name: str,
               tagged: bool = False) -> None:
    if kind in _INT_RANGES:
        lo, hi = _INT_RANGES[kind]
        if not isinstance(v, int) or not lo <= v < hi:
            raise EncodeError(f"{name}: {v!r} does not fit")
        out += _struct.pack(_PACK[kind], v)
    elif kind == _BOOL:
        out.append(1 if v else 0)
    elif kind == _FLOAT64:
        out += _struct.pack(">d", v)
    elif kind == _UUID:
        out += _uuid_bytes(v)
    elif kind in (_STRING, _BYTES):
        if v is None:
            if not nullable:
                raise EncodeError(f"non-nullable field {name} cannot be null")
            out += _uvarint(0) if flexible else (b"\xff\xff" if kind == _STRING else b"\xff\xff\xff\xff")
            return
        raw = v.encode("utf-8") if kind == _STRING else bytes(v)
        if flexible:
            out += _uvarint(len(raw) + 1)
        else:
            out += _struct.pack(">h" if kind == _STRING else ">i", len(raw))
        out += raw
    elif kind == KM_STRUCT:
        if nullable:
            # Kafka's null marker: int8 -1 / 1 among a struct's fields, unsigned varint 0 / 1 as a tagged
            # field's value (the core's _km_struct_null reads both)
            if v is None:
                out += _uvarint(0) if tagged else b"\xff"
                return
            out += _uvarint(1) if tagged else b"\x01"
        elif v is None:
            raise EncodeError(f"non-nullable field {name} cannot be null")
        _enc_struct(out, sub, v)
    else:
        raise EncodeError(f"{name}: unsupported kind {kind}")


def _enc_field(out: bytearray, f, v: Any, flexible: bool, tagged: bool = False) -> None:
    if f.kind == KM_ARRAY:
        if v is None:
            if not f.nullable:
                raise EncodeError(f"non-nullable field {f.name} cannot be null")
            out += _uvarint(0) if flexible else b"\xff\xff\xff\xff"
            return
        out += _uvarint(len(v) + 1) if flexible else _struct.pack(">i", len(v))
        for item in v:
            _enc_value(out, f.elem_kind, item, False, flexible, f.struct, f.name)
    else:
        _enc_value(out, f.kind, v, f.nullable, flexible, f.struct, f.name, tagged)


def _missing(f) -> Any:
    if f.has_default:
        return f.default
    return None


def _enc_struct(out: bytearray, st, obj: Dict[str, Any]) -> None:
    for f in st.fields:
        _enc_field(out, f, obj[f.name] if f.name in obj else _missing(f), st.flexible)
    if not st.flexible:
        return
    items = []
    for f in sorted(st.tagged_fields, key=lambda f: f.tag):
        if f.name not in obj:
            continue
        v = obj[f.name]
        # Kafka's writer leaves out a tagged field at its default; a null whose default is not null is
        # written (tag, size 1, the null marker 0)
        if (v == f.default and type(v) is type(f.default)) if f.has_default else v is None:
            continue
        body = bytearray()
        _enc_field(body, f, v, True, True)
        items.append(_uvarint(f.tag) + _uvarint(len(body)) + bytes(body))
    out += _uvarint(len(items))
    for it in items:
        out += it


def encode(name: str, version: int, obj: Dict[str, Any], schemas: str = _schemas.DEFAULT) -> bytes:
    """Write `obj` (the dict form that decoding gives: bytes as bytes, UUIDs as Kafka's base64 text) as
    message `name` at `version`. Missing fields take their default; tagged fields are written when present
    and not their default."""
    out = bytearray()
    _enc_struct(out, plan(name, version, False, schemas), obj)
    return bytes(out)
