"""Writer -> reader resolution against Apache Avro's Java library: each case's
bodies are written by fastavro and by Java's GenericDatumWriter, decoded by
Java's GenericDatumReader(writer, reader) and by kafkarec; the values (and
which records fail) must be the same.  All cases run in one JVM."""
from __future__ import annotations

import json

import pytest

from support.oracles.avro_helpers import fastavro_json, fastavro_write, ours
from kafkarec import avro
from kafkarec.errors import SchemaResolutionError

DEC = {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}


def rec(name, *fields, **extra):
    return {"type": "record", "name": name, "fields": [dict(f) for f in fields], **extra}


def f(name, type_, **kw):
    return {"name": name, "type": type_, **kw}


ENUM_W = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}
ENUM_R = {"type": "enum", "name": "Color", "symbols": ["BLUE", "RED", "OTHER"], "default": "OTHER"}
ENUM_R_NODEF = {"type": "enum", "name": "Color", "symbols": ["BLUE", "RED"]}
LINE = rec("Line", f("sku", "string"), f("qty", "int"))

# (id, writer schema, reader schema, records written with the writer schema)
CASES = [
    ("identity-primitives",
     rec("P", f("n", "null"), f("b", "boolean"), f("i", "int"), f("l", "long"), f("fl", "float"),
         f("d", "double"), f("by", "bytes"), f("s", "string")),
     None,
     [{"n": None, "b": True, "i": -(2 ** 31), "l": 2 ** 63 - 1, "fl": 1.25, "d": -1e300, "by": b"\x00\xff",
       "s": "h\u00e9llo \U0001f600"},
      {"n": None, "b": False, "i": 2 ** 31 - 1, "l": -(2 ** 63), "fl": 3.4e38, "d": 5e-324,
       "by": b"", "s": ""}]),
    # Java's JSON decoder cannot read non-finite numbers: fastavro writes these alone
    ("non-finite", rec("NF", f("fl", "float"), f("d", "double")), rec("NF", f("fl", "double"), f("d", "double")),
     [{"fl": float("inf"), "d": float("nan")}, {"fl": float("-inf"), "d": float("-inf")}]),
    # fuzzing: the reader field b's alias names writer field a while the writer also has b; both
    # were written into one column (every later row shifted).  Java's applyAliases: Duplicate field
    ("alias-collides-with-a-field",
     rec("A", f("a", "int"), f("b", "int")),
     rec("A", f("b", "int", aliases=["a"])),
     [{"a": 1, "b": 2}, {"a": 3, "b": 4}]),
    ("alias-renames-a-field",
     rec("A", f("a", "int"), f("c", "string")),
     rec("A", f("c", "string"), f("b", "int", aliases=["a"])),
     [{"a": 1, "c": "x"}]),
    # an empty bytes-decimal: Java's conversion and from_avro refuse it (it decoded as 0)
    ("empty-bytes-decimal",
     rec("D", f("x", "bytes")),
     rec("D", f("x", DEC)),
     [{"x": b""}, {"x": b"\x01"}, {"x": b""}]),
    # an incompatible item/value type fails only the rows that reach an item, as Java's resolver
    ("incompatible-collection-items",
     rec("C", f("xs", {"type": "array", "items": "string"}), f("m", {"type": "map", "values": "boolean"}),
         f("rs", {"type": "array", "items": rec("In", f("a", "int"))})),
     rec("C", f("xs", {"type": "array", "items": "int"}), f("m", {"type": "map", "values": "int"}),
         f("rs", {"type": "array", "items": rec("In", f("a", "int"), f("b", "int"))})),
     [{"xs": [], "m": {}, "rs": []}, {"xs": ["a"], "m": {}, "rs": []}, {"xs": [], "m": {"k": True}, "rs": []},
      {"xs": [], "m": {}, "rs": [{"a": 1}]}, {"xs": [], "m": {}, "rs": []}]),
    ("promotions",
     rec("P", f("a", "int"), f("b", "int"), f("c", "int"), f("d", "long"), f("e", "long"), f("g", "float"),
         f("s", "string"), f("y", "bytes")),
     rec("P", f("a", "long"), f("b", "float"), f("c", "double"), f("d", "float"), f("e", "double"),
         f("g", "double"), f("s", "bytes"), f("y", "string")),
     [{"a": 2 ** 31 - 1, "b": 16777217, "c": -7, "d": 2 ** 62 + 1, "e": 2 ** 53 + 1, "g": 0.1, "s": "x\u00e9",
       "y": b"ok"}]),
    ("skip-every-type",
     rec("S", f("keep", "int"),
         f("x1", "boolean"), f("x2", "long"), f("x3", "float"), f("x4", "double"), f("x5", "bytes"),
         f("x6", "string"), f("x7", {"type": "fixed", "name": "F3", "size": 3}), f("x8", ENUM_W),
         f("x9", {"type": "array", "items": LINE}), f("x10", {"type": "map", "values": ["null", "long"]}),
         f("x11", ["null", "string", "Line"]), f("x12", rec("Inner", f("q", "double"))), f("last", "string")),
     rec("S", f("last", "string"), f("keep", "int")),
     [{"keep": 1, "x1": True, "x2": 5, "x3": 1.0, "x4": 2.0, "x5": b"ab", "x6": "cd", "x7": b"xyz", "x8": "GREEN",
       "x9": [{"sku": "a", "qty": 1}] * 3, "x10": {"k": 1, "j": None}, "x11": {"sku": "b", "qty": 2},
       "x12": {"q": 1.5}, "last": "end"},
      {"keep": 2, "x1": False, "x2": -5, "x3": 1.0, "x4": 2.0, "x5": b"", "x6": "", "x7": b"abc", "x8": "RED",
       "x9": [], "x10": {}, "x11": None, "x12": {"q": 0.0}, "last": ""}]),
    ("defaults-of-every-type",
     rec("D", f("id", "long")),
     rec("D", f("id", "long"), f("n", "null", default=None), f("b", "boolean", default=True),
         f("i", "int", default=-3), f("l", "long", default=2 ** 40), f("fl", "float", default=1.5),
         f("d", "double", default=-0.25), f("by", "bytes", default="\u00ff\u0000A"),
         f("s", "string", default="d\u00e9f"), f("fx", {"type": "fixed", "name": "F2", "size": 2}, default="ab"),
         f("e", ENUM_R, default="RED"), f("a", {"type": "array", "items": "int"}, default=[1, 2, 3]),
         f("m", {"type": "map", "values": "string"}, default={"k": "v"}),
         f("u", ["null", "int"], default=None), f("u2", ["int", "null"], default=7),
         f("r", LINE, default={"sku": "s", "qty": 4}),
         f("dec", DEC, default="\u0001\u0000"),
         f("ts", {"type": "long", "logicalType": "timestamp-millis"}, default=1700000000000)),
     [{"id": 1}, {"id": -1}]),
    ("enum-reorder-default",
     rec("E", f("c", ENUM_W)), rec("E", f("c", ENUM_R)),
     [{"c": "RED"}, {"c": "GREEN"}, {"c": "BLUE"}]),
    ("enum-unknown-symbol-no-default",
     rec("E", f("c", ENUM_W)), rec("E", f("c", ENUM_R_NODEF)),
     [{"c": "RED"}, {"c": "GREEN"}, {"c": "BLUE"}]),
    ("aliases",
     rec("Old", f("a", "int"), f("b", "string"), namespace="ns1"),
     rec("New", f("x", "int", aliases=["a"]), f("b", "string"), namespace="ns2", aliases=["ns1.Old"]),
     [{"a": 5, "b": "q"}]),
    ("writer-union-to-non-union",
     rec("U", f("v", ["null", "int", "long"]), f("w", ["string", "bytes"])),
     rec("U", f("v", ["null", "long"]), f("w", "string")),
     [{"v": None, "w": "a"}, {"v": 3, "w": b"b"}, {"v": 2 ** 40, "w": "c"}]),
    ("non-union-to-reader-union",
     rec("U", f("i", "int"), f("s", "string"), f("l", LINE), f("x", "float")),
     rec("U", f("i", ["null", "string", "double", "long"]), f("s", ["int", "bytes"]),
         f("l", ["null", rec("Other", f("z", "int")), LINE]), f("x", ["null", "double"])),
     [{"i": 5, "s": "t", "l": {"sku": "k", "qty": 1}, "x": 0.5}]),
    ("union-reorder-and-widen",
     rec("U", f("v", ["null", "string", "int", LINE])),
     rec("U", f("v", [LINE, "int", "null", "string", "boolean"])),
     [{"v": None}, {"v": "s"}, {"v": 9}, {"v": {"sku": "q", "qty": 3}}]),
    ("union-branch-reader-cannot-take",
     rec("U", f("v", ["null", "int", "boolean"])),
     rec("U", f("v", ["null", "long"])),
     [{"v": None}, {"v": 1}, {"v": True}, {"v": 2}]),
    ("record-structure-match-in-union",
     rec("U", f("v", ["null", rec("A", f("p", "int"))])),
     rec("U", f("v", ["null", rec("B", f("q", "int", default=0)), rec("C", f("p", "int"))])),
     [{"v": {"p": 4}}, {"v": None}]),
    ("nested-containers",
     rec("N", f("a", {"type": "array", "items": {"type": "map", "values": {"type": "array", "items": "int"}}}),
         f("m", {"type": "map", "values": LINE})),
     rec("N", f("a", {"type": "array", "items": {"type": "map", "values": {"type": "array", "items": "double"}}}),
         f("m", {"type": "map", "values": rec("Line", f("qty", "long"), f("extra", "string", default="e"))})),
     [{"a": [{"x": [1, 2], "y": []}, {}], "m": {"k1": {"sku": "s", "qty": 7}}}, {"a": [], "m": {}}]),
    ("logical-types",
     rec("L", f("dec", DEC), f("decf", {"type": "fixed", "name": "DF", "size": 8, "logicalType": "decimal",
                                       "precision": 18, "scale": 4}),
         f("date", {"type": "int", "logicalType": "date"}),
         f("tm", {"type": "int", "logicalType": "time-millis"}),
         f("tu", {"type": "long", "logicalType": "time-micros"}),
         f("ts", {"type": "long", "logicalType": "timestamp-millis"}),
         f("tsu", {"type": "long", "logicalType": "timestamp-micros"}),
         f("tsn", {"type": "long", "logicalType": "timestamp-nanos"}),
         f("lts", {"type": "long", "logicalType": "local-timestamp-millis"}),
         f("uuid", {"type": "string", "logicalType": "uuid"}),
         f("big", {"type": "bytes", "logicalType": "decimal", "precision": 60, "scale": 0})),
     None,
     None),
    ("fixed-size-mismatch",
     rec("X", f("v", ["null", {"type": "fixed", "name": "F", "size": 4}])),
     rec("X", f("v", ["null", {"type": "fixed", "name": "F", "size": 5}])),
     [{"v": None}, {"v": b"abcd"}]),
    ("defaults-matching-a-later-union-branch",
     rec("B", f("a", "int")),
     rec("B", f("a", "int"), f("b", ["null", "string"], default="x"), f("c", ["string", "null"], default=None),
         f("d", {"type": "array", "items": ["null", "int"]}, default=[None, 3]), f("e", "float", default=1)),
     [{"a": 1}]),
    ("enum-and-fixed-names-by-alias",
     rec("A", f("e", {"type": "enum", "name": "Old", "namespace": "x", "symbols": ["P", "Q"]}),
         f("x", {"type": "fixed", "name": "OldF", "size": 2})),
     rec("A", f("e", {"type": "enum", "name": "New", "aliases": ["x.Old"], "symbols": ["Q", "P"]}),
         f("x", {"type": "fixed", "name": "NewF", "aliases": ["OldF"], "size": 2})),
     [{"e": "P", "x": b"ab"}]),
    ("enum-name-mismatch-in-union",
     rec("A", f("e", ["null", {"type": "enum", "name": "Old", "symbols": ["P"]}])),
     rec("A", f("e", ["null", {"type": "enum", "name": "Other", "symbols": ["P"]}])),
     [{"e": None}, {"e": "P"}]),
    ("primitive-top-level", "string", ["null", "bytes"], ["k1", ""]),
    ("primitive-int-to-long-top", "int", "long", [1, -1, 2 ** 31 - 1]),
]

# logical-types records: written as raw values (fastavro would convert otherwise)
LOGICAL_RAW = [
    {"dec": (12345).to_bytes(3, "big", signed=True), "decf": (-5).to_bytes(8, "big", signed=True),
     "date": 19000, "tm": 1000, "tu": 10 ** 9, "ts": 1_700_000_000_123, "tsu": 1_700_000_000_123_456,
     "tsn": 1_700_000_000_123_456_789, "lts": -1, "uuid": "00000000-0000-0000-0000-000000000001",
     "big": (-(10 ** 50)).to_bytes(22, "big", signed=True)},
]


def _strip_logical(schema):
    if isinstance(schema, dict):
        return {k: _strip_logical(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_strip_logical(x) for x in schema]
    return schema


@pytest.fixture(scope="module")
def results(avro_java):
    """Bodies by fastavro and by Java, then Java's decode of both (the session's Avro JVM)."""
    plans = []
    writes = []
    for cid, w, r, records in CASES:
        r = w if r is None else r
        if records is None:
            records = LOGICAL_RAW
            plain = _strip_logical(w)
        else:
            plain = w
        fa = fastavro_write(plain, records)
        writes.append({"op": "write", "schema": json.dumps(plain), "json": fastavro_json(plain, records)})
        plans.append((cid, w, r, fa))
    written = avro_java(writes)
    reads = []
    out = {}
    for (cid, w, r, fa), jw in zip(plans, written):
        if cid == "non-finite":
            jbodies = []
        else:
            assert "hex" in jw, (cid, jw)
            jbodies = [bytes.fromhex(h) for h in jw["hex"]]
        out[cid] = (w, r, fa, jbodies)
        reads.append({"op": "read", "writer": json.dumps(w), "reader": json.dumps(r),
                      "hex": [b.hex() for b in fa + jbodies]})
    for cid, res in zip(list(out), avro_java(reads)):
        out[cid] = out[cid] + (res,)
    return out


@pytest.mark.parametrize("cid", [c[0] for c in CASES])
def test_resolution_matches_java(results, cid):
    w, r, fa, jbodies, res = results[cid]
    assert "values" in res, res
    expected = res["values"]
    try:
        got = ours(w, r, fa + jbodies)
    except SchemaResolutionError:
        # refused when the writer is added: Java must fail every record too
        assert all(isinstance(e, dict) and "error" in e for e in expected), expected
        return
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, dict) and set(e) == {"error"}:
            assert isinstance(g, dict) and "error" in g, (g, e)
        else:
            assert g == e


def test_fastavro_and_java_write_the_same_bytes(results):
    for cid, (w, r, fa, jbodies, res) in results.items():
        # float text aside, the writers agree (Java keeps a map in a HashMap, so map order differs)
        if cid not in ("identity-primitives", "non-finite") and "\"map\"" not in json.dumps(w):
            assert fa == jbodies, cid


def test_fixed_size_mismatch_is_per_record():
    # Java reports a union branch the reader cannot take only when a record uses it
    w = avro.parse_schema(CASES[[c[0] for c in CASES].index("fixed-size-mismatch")][1])
    r = avro.parse_schema(CASES[[c[0] for c in CASES].index("fixed-size-mismatch")][2])
    dec = avro.AvroDecoder(r)
    dec.add_writer(1, w)


def test_missing_required_field_is_refused_at_compile_time():
    w = avro.parse_schema(rec("R", f("a", "int")))
    r = avro.parse_schema(rec("R", f("a", "int"), f("b", "string")))
    dec = avro.AvroDecoder(r)
    with pytest.raises(SchemaResolutionError, match=r"missing required field 'b'"):
        dec.add_writer(1, w)
    with pytest.raises(SchemaResolutionError, match=r"<root>.a: found int, expecting string"):
        avro.AvroDecoder(avro.parse_schema(rec("R", f("a", "string")))).add_writer(1, w)
