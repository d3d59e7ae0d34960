"""JSON Schema Schema Registry payloads to typed Arrow columns.

The column's type comes from the reader JSON Schema, as Spark's ``from_json`` would type it with the matching
Spark schema: object (with ``properties``) -> struct of its properties in order, array (with ``items``) -> list,
integer -> int64, number -> double (``integer`` or ``number`` together -> double), string -> string, a string
of ``format: date-time`` -> timestamp[us, UTC] (RFC 3339 texts, their offsets applied; Spark's from_json reads
such a field as a timestamp too), boolean -> bool, enum / const -> the type of their values.  ``["null", X]``
and ``oneOf`` / ``anyOf`` of ``{"type": "null"}`` and X are a nullable X; every Arrow field is nullable (a
missing property is null, as ``from_json`` gives, ``required`` is not enforced).  ``$ref`` resolves inside the
document (``#/definitions/..``, ``#/$defs/..``) and into referenced schemas by name; a recursive schema is
refused.  What has no single Arrow type (free-form objects, tuples, unions of unrelated types) is refused when
the decoder is made, with the path in the schema.

Values are parsed by ``pyarrow.json`` (Arrow's own C++ JSON reader, driven by the explicit Arrow type), not by
Python: executors need nothing beyond pyarrow, and no Python object is made per record.  A batch is parsed as
one newline-delimited document (each value wrapped as ``{"v": value}``, its raw newlines, which JSON only
allows as whitespace, turned into spaces).  First the core checks that each payload is exactly one JSON value,
so that no payload can continue the wrapper (``1, "x": 2`` is an error, not 1), and that no string holds a raw
control character (a raw newline inside a string is an error, not a space); when the document fails, it is split in halves until each failing
record is alone, so each invalid JSON text or value that does not fit the type becomes that record's error and
the others decode.  Only the Arrow type is checked, not the schema's other constraints (``minimum``,
``pattern``...).
"""
from __future__ import annotations

import json
import threading
from typing import Any, Mapping

from kafkarec._extras import require
from kafkarec._core import json_value_problems, value_problem
from kafkarec.errors import JsonSchemaError, KafkaRecError, SchemaResolutionError  # noqa: F401 (re-exported)

__all__ = ["JsonSchema", "JsonSchemaDecoder", "JsonSchemaError"]




class JsonSchema:
    """A JSON Schema document with the documents it references by name (plain data, picklable)."""

    def __init__(self, document: Any, references: Mapping[str, Any] | None = None) -> None:
        self.document = document
        self.references = dict(references or {})

    @classmethod
    def from_text(cls, text: str, references: Mapping[str, str] | None = None) -> "JsonSchema":
        return cls(_load("schema", text), {n: _load(f"reference {n!r}", t) for n, t in (references or {}).items()})

    def __repr__(self) -> str:
        return f"JsonSchema({json.dumps(self.document)[:60]!r}...)"


def _load(what: str, text):
    """A schema document from its text (a parsed document passes through)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError as exc:
        raise JsonSchemaError(f"{what} is not JSON: {exc}") from None
    except RecursionError:
        raise JsonSchemaError(f"{what} is nested deeper than Python's JSON reader goes") from None


def _schema(obj) -> JsonSchema:
    if isinstance(obj, JsonSchema):
        return obj
    if isinstance(obj, str):
        return JsonSchema.from_text(obj)
    if isinstance(obj, (dict, bool)):
        return JsonSchema(obj)
    if obj is None or isinstance(obj, (int, float, list)):
        raise JsonSchemaError(f"a JSON Schema is an object or a boolean, not {json.dumps(obj)[:40]}")
    raise TypeError(f"a JSON Schema is a JsonSchema, its text or a dict, not {type(obj).__name__}")


def _pointer(doc: Any, fragment: str, path: str) -> Any:
    node = doc
    if fragment in ("", "/"):
        return doc
    if not fragment.startswith("/"):
        raise JsonSchemaError(f"{path}: $ref fragment {fragment!r} is not a JSON pointer")
    for part in fragment[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise JsonSchemaError(f"{path}: $ref #{fragment} points at nothing") from None
    return node


def arrow_type(schema) -> "Any":
    """The Arrow type of values of a JSON Schema (see the module docstring)."""
    s = _schema(schema)
    return _Typer(s).type(s.document, s.document, "#", ())


class _Typer:
    def __init__(self, schema: JsonSchema):
        self.schema = schema
        pa = require("pyarrow")
        self.pa = pa

    def type(self, node, doc, path: str, stack: tuple, depth: int = 0):
        pa = self.pa
        if depth > 64:
            raise JsonSchemaError(f"{path[:200]}: nested deeper than 64")
        if node is True or node == {}:
            raise JsonSchemaError(f"{path}: a schema that allows any value has no single Arrow type")
        if not isinstance(node, dict):
            raise JsonSchemaError(f"{path}: {node!r} is not a schema")
        for key, kind in (("oneOf", list), ("anyOf", list), ("allOf", list), ("enum", list), ("$ref", str),
                          ("properties", dict)):
            if key in node and not isinstance(node[key], kind):
                raise JsonSchemaError(f"{path}: {key} must be a JSON {kind.__name__.replace('dict', 'object')}")
        t = node.get("type")
        if not (t is None or isinstance(t, str) or (isinstance(t, list) and all(isinstance(x, str) for x in t))):
            raise JsonSchemaError(f"{path}: type must be a string or a list of strings")
        if "$ref" in node:
            ref = node["$ref"]
            name, _, fragment = ref.partition("#")
            if name:
                if name not in self.schema.references:
                    raise JsonSchemaError(f"{path}: $ref {ref!r} names no reference")
                doc = self.schema.references[name]
            key = (id(doc), fragment)
            if key in stack:
                raise JsonSchemaError(f"{path}: recursive $ref {ref!r} has no Arrow type "
                                      "(Spark's from_json has no recursive types either)")
            return self.type(_pointer(doc, fragment, path), doc, f"{path}/$ref", stack + (key,), depth + 1)
        for key in ("oneOf", "anyOf"):
            if key in node:
                members = [m for m in node[key] if not _is_null(m)]
                types = [self.type(m, doc, f"{path}/{key}/{i}", stack, depth + 1) for i, m in enumerate(members)]
                return self.union(types, path)
        if "allOf" in node and len(node["allOf"]) == 1:
            return self.type(node["allOf"][0], doc, f"{path}/allOf/0", stack, depth + 1)
        if isinstance(t, list):
            named = list(dict.fromkeys(x for x in t if x != "null"))
            if not named:
                return pa.null()
            return self.union([self.type({**node, "type": x}, doc, path, stack, depth + 1) for x in named], path)
        if t is None:
            if "properties" in node:
                t = "object"
            elif "items" in node:
                t = "array"
            elif "enum" in node or "const" in node:
                values = node.get("enum", [node.get("const")])
                kinds = {_json_kind(v) for v in values if v is not None}
                if len(kinds) == 1:
                    t = kinds.pop()
                else:
                    raise JsonSchemaError(f"{path}: enum / const values of several types")
            else:
                raise JsonSchemaError(f"{path}: no type, properties or items: no single Arrow type")
        if t == "object":
            props = node.get("properties")
            if not isinstance(props, dict) or not props:
                raise JsonSchemaError(f"{path}: an object without properties (a free-form map) has no struct "
                                      "type; pyarrow's JSON reader has no map type")
            return pa.struct([pa.field(k, self.type(v, doc, f"{path}/properties/{k}", stack, depth + 1))
                              for k, v in props.items()])
        if t == "array":
            items = node.get("items")
            if not isinstance(items, dict):
                raise JsonSchemaError(f"{path}: an array needs one items schema (tuples have no list type)")
            return pa.list_(self.type(items, doc, f"{path}/items", stack, depth + 1))
        if t == "string":
            return pa.timestamp("us", tz="UTC") if node.get("format") == "date-time" else pa.string()
        simple = {"integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_(), "null": pa.null()}
        if t in simple:
            return simple[t]
        raise JsonSchemaError(f"{path}: unknown type {t!r}")

    def union(self, types: list, path: str):
        pa = self.pa
        distinct = []
        for t in types:
            if t not in distinct:
                distinct.append(t)
        if not distinct:
            return pa.null()
        if len(distinct) == 1:
            return distinct[0]
        if set(distinct) == {pa.int64(), pa.float64()}:
            return pa.float64()
        raise JsonSchemaError(f"{path}: a union of {', '.join(map(str, distinct))} has no single Arrow type")


def _is_null(node) -> bool:
    return isinstance(node, dict) and (node.get("type") == "null" or node.get("const", 0) is None)


def _json_kind(v) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


class JsonSchemaDecoder:
    """JSON Schema payloads of Schema Registry records -> one Arrow column typed by the reader schema."""

    def __init__(self, reader_schema, references: Mapping[str, Any] | None = None) -> None:
        s = _schema(reader_schema)
        if references:
            s = JsonSchema(s.document, {**s.references, **{n: _load(f"reference {n!r}", t)
                                                            for n, t in references.items()}})
        self.reader_schema = s
        self.arrow_type = arrow_type(s)
        pa = require("pyarrow")
        pj = require("pyarrow.json")
        self._parse_options = pj.ParseOptions(explicit_schema=pa.schema([("v", self.arrow_type)]),
                                              unexpected_field_behavior="ignore")
        self._writers: set[int] = set()
        self._lock = threading.Lock()

    def __reduce__(self):
        return (_rebuild, (self.reader_schema, sorted(self._writers)))

    def add_writer(self, writer_id: int, writer_schema) -> None:
        """Register writer id ``writer_id``.  JSON names its own fields, so values are typed by the reader
        schema alone; the writer schema is only checked to be a JSON Schema."""
        try:
            _schema(writer_schema)
        except (TypeError, JsonSchemaError) as exc:
            raise SchemaResolutionError(f"writer schema {writer_id} is not a JSON Schema: {exc}") from None
        self._writers.add(int(writer_id))

    def decode(self, values, writer_ids, body_offsets):
        """(typed array, string array of per-row errors); null values / writer ids give null rows, no error."""
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        values, writer_ids, body_offsets = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
                                            for a in (values, writer_ids, body_offsets)]
        n = len(values)
        if len(writer_ids) != n or len(body_offsets) != n:
            raise ValueError("values, writer_ids and body_offsets must have the same length")
        if pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type):
            values = values.cast(pa.large_binary())
        else:
            values = values.cast(pa.binary())
        writer_ids = writer_ids.cast(pa.int64())
        body_offsets = body_offsets.cast(pa.int32())
        error_rows: dict[int, str] = {}
        present = pc.and_(values.is_valid(), writer_ids.is_valid())
        known = pc.is_in(writer_ids, value_set=pa.array(sorted(self._writers), pa.int64()))
        unknown = pc.and_(present, pc.invert(known))
        for i in pc.indices_nonzero(unknown).to_pylist():
            error_rows[i] = value_problem(body_offsets[i].as_py() or 0,
                                          f"unknown writer schema id {writer_ids[i].as_py()}")
        lengths = pc.binary_length(values)
        bad_offset = pc.and_(pc.and_(present, known),
                             pc.or_kleene(pc.is_null(body_offsets),
                                          pc.or_(pc.less(body_offsets, 0),
                                                 pc.greater(pc.cast(body_offsets, lengths.type), lengths))))
        for i in pc.indices_nonzero(pc.fill_null(bad_offset, False)).to_pylist():
            error_rows[i] = value_problem(body_offsets[i].as_py(),
                                          f"the body starts past the end of a {lengths[i].as_py()}-byte value")
        keep = pc.and_(pc.and_(present, known), pc.invert(pc.fill_null(bad_offset, True)))
        rows = pc.indices_nonzero(keep)
        with self._lock:
            parsed, row_errors = self._parse(values.take(rows), body_offsets.take(rows))
        for j, why in row_errors.items():
            error_rows[rows[j].as_py()] = why
        # scatter the parsed values back to their rows (null elsewhere; a record that failed is null in parsed)
        positions = pc.subtract(pc.cumulative_sum(pc.cast(keep, pa.int64())), 1)
        out = parsed.take(pc.if_else(keep, positions, pa.scalar(None, pa.int64())))
        if error_rows:
            errs = [None] * n
            for i, why in error_rows.items():
                errs[i] = why
            return out, pa.array(errs, pa.string())
        return out, pa.nulls(n, pa.string())

    def _parse(self, values, offsets):
        """Parse kept payloads; returns (array of their values, {index: error})."""
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        n = len(values)
        if n == 0:
            return pa.array([], self.arrow_type), {}
        bodies = _bodies(values, offsets)
        errors: dict[int, str] = {}
        typ = bodies.type
        # JSON text is UTF-8 (RFC 8259); pyarrow's reader does not check it inside strings.
        bad_utf8: list[int] = []
        _find_invalid_utf8(bodies, 0, n, bad_utf8)
        if bad_utf8:
            for i in bad_utf8:
                errors[i] = "invalid JSON: the text is not valid UTF-8"
            mask = pc.is_in(pa.array(range(n), pa.int64()), value_set=pa.array(bad_utf8, pa.int64()))
            bodies = pc.if_else(mask, pa.scalar(b"null", typ), bodies)
        # one JSON value per payload, no raw control character in a string: then the
        # raw newlines left are whitespace, and one record per line after this
        problems = json_value_problems(bodies)
        if problems:
            rows = []
            for i, at, why in problems:
                if i not in errors:
                    errors[i] = value_problem(offsets[i].as_py() + at, f"invalid JSON: {why}")
                    rows.append(i)
            if rows:
                mask = pc.is_in(pa.array(range(n), pa.int64()), value_set=pa.array(rows, pa.int64()))
                bodies = pc.if_else(mask, pa.scalar(b"null", typ), bodies)
        if pc.any(pc.match_substring_regex(bodies, "[\\r\\n]")).as_py():
            bodies = pc.replace_substring_regex(bodies, "[\\r\\n]", " ")
        lines = pc.binary_join_element_wise(pa.scalar(b'{"v":', typ), bodies, pa.scalar(b"}\n", typ),
                                            pa.scalar(b"", typ))
        parts: list = []
        self._parse_range(lines, 0, n, parts, errors)
        chunks = [p for p in parts if len(p)]
        out = pa.concat_arrays(chunks) if chunks else pa.array([], self.arrow_type)
        return out, errors

    def _parse_range(self, lines, lo: int, hi: int, parts: list, errors: dict) -> None:
        pa = require("pyarrow")
        pj = require("pyarrow.json")
        _, offsets, data = lines.buffers()
        width = 8 if pa.types.is_large_binary(lines.type) else 4
        base = lines.offset
        start = int.from_bytes(offsets[(base + lo) * width:(base + lo + 1) * width], "little", signed=True)
        stop = int.from_bytes(offsets[(base + hi) * width:(base + hi + 1) * width], "little", signed=True)
        try:
            table = pj.read_json(pa.BufferReader(data[start:stop]),
                                 read_options=pj.ReadOptions(use_threads=False, block_size=max(stop - start, 1)),
                                 parse_options=self._parse_options)
            column = table.column(0).combine_chunks()
            if len(column) != hi - lo:
                raise ValueError(f"{len(column)} values in {hi - lo} records")
            parts.append(column)
            return
        except (pa.ArrowInvalid, UnicodeDecodeError, ValueError) as exc:
            if hi - lo == 1:
                # (pyarrow names the wrapped value /v; the record is the root)
                why = str(exc).replace(" in row 0", "").replace("Column(/v/", "Column(/").replace(
                    "Column(/v)", "Column(/)")
                if isinstance(exc, UnicodeDecodeError):
                    why = "a string is not valid UTF-8"
                errors[lo] = f"invalid JSON, or a value that does not fit the schema's type: {why}"
                parts.append(pa.nulls(1, self.arrow_type))
                return
        mid = (lo + hi) // 2
        self._parse_range(lines, lo, mid, parts, errors)
        self._parse_range(lines, mid, hi, parts, errors)


def _bodies(values, offsets):
    """The payloads (each value from its body offset on), by pyarrow's binary_slice: one call per distinct
    offset (usually one: every value has the same prefix)."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    values = values.cast(pa.large_binary())
    distinct = pc.unique(offsets)
    if len(distinct) == 1:
        # (an explicit stop: pyarrow 26's binary_slice fails without one)
        return pc.binary_slice(values, distinct[0].as_py(), 2**31 - 1)
    parts, rows = [], []
    for o in distinct.to_pylist():
        where = pc.indices_nonzero(pc.equal(offsets, o))
        parts.append(pc.binary_slice(values.take(where), o, 2**31 - 1))
        rows.append(where)
    order = pc.sort_indices(pa.concat_arrays(rows))
    return pa.concat_arrays(parts).take(order)


def _find_invalid_utf8(bodies, lo: int, hi: int, out: list) -> None:
    """Indexes of the bodies in [lo, hi) that are not UTF-8 (one cast per range, halves when it fails)."""
    pa = require("pyarrow")
    if lo >= hi:
        return
    target = pa.large_string() if pa.types.is_large_binary(bodies.type) else pa.string()
    try:
        bodies.slice(lo, hi - lo).cast(target)
        return
    except pa.ArrowInvalid:
        if hi - lo == 1:
            out.append(lo)
            return
    mid = (lo + hi) // 2
    _find_invalid_utf8(bodies, lo, mid, out)
    _find_invalid_utf8(bodies, mid, hi, out)


def _rebuild(reader_schema, writers):
    d = JsonSchemaDecoder(reader_schema)
    for w in writers:
        d._writers.add(w)
    return d
