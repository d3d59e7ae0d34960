"""Shared helpers for the Avro tests: Apache Avro's Java library as an oracle
(tests/java/AvroOracle.java, one JVM for every case of a session), fastavro writers, and the
canonical form both sides are compared in."""
from __future__ import annotations

import io
import json
import math
import os
import struct
from typing import Any

import fastavro
import pyarrow as pa

from kafkarec import avro
from support.paths import ROOT
from support.java import LineOracle, compiled

ORACLE = os.path.join(ROOT, "tests", "java", "AvroOracle.java")


def _classpath() -> str:
    from support.oracles.javacodec import find_jars_dir
    jars = find_jars_dir()
    names = [n for n in os.listdir(jars)
             if n.startswith("avro-1.") or n.startswith("jackson-core-") or n.startswith("jackson-databind-")
             or n.startswith("jackson-annotations-") or n.startswith("commons-compress-")
             or n.startswith("slf4j-api-")]
    return os.pathsep.join(os.path.join(jars, n) for n in sorted(names))


class AvroJava:
    """AvroOracle.java kept running: ``avro_java(cases)`` is one result per case, every call of
    a session answered by the same JVM (the ``avro_java`` fixture, tests/avro/conftest.py)."""

    def __init__(self):
        program = compiled(ORACLE, _classpath())
        self._oracle = LineOracle(program.command(jvm_flags=["-Xss16m"]), program.main)

    def __call__(self, cases: list[dict], timeout: float = 600) -> list[dict]:
        return [json.loads(answer) for answer in self._oracle.ask([json.dumps(c) for c in cases], timeout)]

    def close(self) -> None:
        self._oracle.close()


def fastavro_write(schema: Any, records: list) -> list[bytes]:
    parsed = fastavro.parse_schema(schema, named_schemas={})
    out = []
    for r in records:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed, r)
        out.append(b.getvalue())
    return out


def fastavro_json(schema: Any, records: list) -> list[str]:
    """Avro's JSON encoding of each record (fastavro.json_writer), for Java to read."""
    parsed = fastavro.parse_schema(schema, named_schemas={})
    out = []
    for r in records:
        s = io.StringIO()
        fastavro.json_writer(s, parsed, [r])
        out.append(s.getvalue().strip())
    return out


def _dbits(x: float) -> str:
    if math.isnan(x):
        return "7ff8000000000000"
    return format(struct.unpack("<Q", struct.pack("<d", x))[0], "x")


def raw_type(t: pa.DataType) -> pa.DataType:
    """t with timestamps and dates as plain integers (what the Java oracle prints)."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, raw_type(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field, pa.field(t.item_field.name, raw_type(t.item_type), t.item_field.nullable))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, raw_type(t.value_type), t.value_field.nullable))
    return t


def canon(v: Any, node) -> Any:
    """The canonical form (AvroOracle.java's) of one decoded Arrow value (as_py of
    the raw_type cast) for a reader schema node."""
    t = node.type
    if t == "union":
        mode, nonnull, _ = avro.arrow_types._union_mode(node)
        if v is None:
            return None
        if mode == "struct":
            for m, i in enumerate(nonnull):
                mv = v[f"member{m}"]
                if mv is not None:
                    return canon(mv, node.branches[i])
            raise AssertionError("struct union with no member set")
        if mode == "double":
            return _dbits(v)
        if mode == "long":
            return v
        return canon(v, node.branches[nonnull[0]])
    if v is None and t != "null":
        raise AssertionError(f"null for non-null {t}")
    if t == "null":
        return None
    if t in ("boolean", "int", "long", "string", "enum"):
        return v
    if t in ("float", "double"):
        return _dbits(v)
    if t in ("bytes", "fixed"):
        if node.logical and node.logical["name"] == "decimal":
            return str(int(v.scaleb(node.logical["scale"])))
        return v.hex()
    if t == "record":
        return {f.name: canon(v[f.name], f.type) for f in node.fields}
    if t == "array":
        return [canon(x, node.items) for x in v]
    if t == "map":
        return {k: canon(x, node.values) for k, x in v}
    raise AssertionError(t)


def decoded_canon(values: pa.Array, reader: avro.AvroSchema) -> list:
    raw = values.cast(raw_type(values.type)) if values.type != raw_type(values.type) else values
    return [canon(v, reader.root) if v is not None or reader.root.type in ("null", "union") else None
            for v in raw.to_pylist()]


def ours(writer: Any, reader: Any, bodies: list[bytes]) -> list:
    """kafkarec's decode of plain bodies, canonical, errors as {"error": ...}."""
    w = avro.parse_schema(writer)
    r = avro.parse_schema(reader)
    vals, errs = avro.decode_values(pa.array(bodies, pa.binary()), w, r)
    vals.validate(full=True)
    out = []
    can = decoded_canon(vals, r)
    for c, e in zip(can, errs.to_pylist()):
        out.append({"error": e} if e is not None else c)
    return out
