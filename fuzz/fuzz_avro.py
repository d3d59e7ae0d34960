"""Avro schema texts and bodies: parse_schema, writer -> reader resolution and
the compiled decoder on arbitrary input.  Allowed outcomes: a result whose
Arrow column validates and has one row per body (a bad body is an error row),
or a typed error (AvroSchemaError, SchemaResolutionError)."""
import atheris

from _harness import EXPECTED, run

import pyarrow as pa

from kafkarec import avro

# writer/reader pairs whose resolution exercises every op: promotions, skips,
# defaults, enum adjustments, unions on both sides, containers, decimals
_LINE = {"type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"},
                                                      {"name": "qty", "type": "int"}]}
_W = {"type": "record", "name": "R", "fields": [
    {"name": "i", "type": "int"}, {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
    {"name": "s", "type": "string"}, {"name": "b", "type": "bytes"}, {"name": "t", "type": "boolean"},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
    {"name": "x", "type": {"type": "fixed", "name": "X", "size": 3}},
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}},
    {"name": "a", "type": {"type": "array", "items": _LINE}},
    {"name": "m", "type": {"type": "map", "values": ["null", "long", "string"]}},
    {"name": "n", "type": {"type": "array", "items": "null"}},
    {"name": "u", "type": ["null", "int", "string", "Line"]},
    {"name": "gone", "type": {"type": "map", "values": {"type": "array", "items": "double"}}},
]}
_R = {"type": "record", "name": "R", "fields": [
    {"name": "i", "type": "double"}, {"name": "l", "type": ["null", "float"]}, {"name": "f", "type": "double"},
    {"name": "s", "type": "bytes"}, {"name": "b", "type": "string"}, {"name": "t", "type": "boolean"},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["C", "A"], "default": "A"}},
    {"name": "x", "type": ["null", {"type": "fixed", "name": "X", "size": 3}]},
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}},
    {"name": "a", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "qty", "type": "long"}, {"name": "extra", "type": {"type": "map", "values": "int"},
                                          "default": {"k": 1}}]}}},
    {"name": "m", "type": {"type": "map", "values": ["null", "double", "bytes"]}},
    {"name": "n", "type": {"type": "array", "items": "null"}},
    {"name": "u", "type": ["string", "Line", "long", "null"]},
    {"name": "new", "type": ["null", "string"], "default": None},
]}
# renamed by reader aliases (record and field), and items that take no bytes
_ALIASED_W = {"type": "record", "name": "Old", "fields": [
    {"name": "a", "type": "int"}, {"name": "c", "type": {"type": "array", "items": "null"}},
    {"name": "z", "type": {"type": "array", "items": {"type": "record", "name": "Empty", "fields": []}}}]}
_ALIASED_R = {"type": "record", "name": "New", "aliases": ["Old"], "fields": [
    {"name": "b", "type": "long", "aliases": ["a"]}, {"name": "c", "type": {"type": "array", "items": "null"}},
    {"name": "z", "type": {"type": "array", "items": {"type": "record", "name": "Empty", "fields": []}}}]}
PAIRS = [(avro.parse_schema(_W), avro.parse_schema(_R)), (avro.parse_schema(_W), avro.parse_schema(_W)),
         (avro.parse_schema("string"), avro.parse_schema(["null", "bytes"])),
         (avro.parse_schema(_ALIASED_W), avro.parse_schema(_ALIASED_R))]
DECODERS = []
for _w, _r in PAIRS:
    _d = avro.AvroDecoder(_r, max_items=10000)
    _d.add_writer(1, _w)
    DECODERS.append(_d)
# a recursive writer read to recursiveFieldMaxDepth 2: deeper records are skipped (bounded nesting)
_NODE = avro.parse_schema({"type": "record", "name": "Node", "fields": [
    {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]},
    {"name": "kids", "type": {"type": "array", "items": "Node"}}, {"name": "m", "type": {"type": "map", "values": "Node"}}]})
_d = avro.AvroDecoder(_NODE, max_items=10000, recursive_field_max_depth=2)
_d.add_writer(1, _NODE)
DECODERS.append(_d)


# valid bodies of the first writer (Avro binary, by the default-value encoder),
# which the fuzzer then corrupts: an uninstrumented core gives atheris no
# coverage to climb, so deep structure comes from these
_VALUES = [
    {"i": 1, "l": -2, "f": 1.5, "s": "h\u00e9", "b": "ok", "t": True, "e": "B", "x": "abc",
     "d": "\u0001\u0000", "a": [{"sku": "k", "qty": 3}, {"sku": "", "qty": -1}],
     "m": {"a": None, "b": 5, "c": "s"}, "n": [None, None], "u": None, "gone": {"z": [1.0, 2.0]}},
    {"i": 0, "l": 0, "f": 0.0, "s": "", "b": "", "t": False, "e": "C", "x": "xyz", "d": "", "a": [], "m": {},
     "n": [], "u": {"sku": "q", "qty": 9}, "gone": {}},
]
VALID = [avro.schema._encode_default(PAIRS[0][0].root, v) for v in _VALUES]


def _mutated(fdp):
    body = bytearray(VALID[fdp.ConsumeIntInRange(0, len(VALID) - 1)])
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        if not body:
            break
        at = fdp.ConsumeIntInRange(0, len(body) - 1)
        how = fdp.ConsumeIntInRange(0, 3)
        if how == 0:
            body[at] = fdp.ConsumeInt(1) & 0xFF
        elif how == 1:
            del body[at:]
        elif how == 2:
            body[at:at] = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 10))
        else:
            del body[at]
    return bytes(body)


def _bodies(fdp, limit=8):
    return [fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64)) for _ in range(fdp.ConsumeIntInRange(1, limit))]


def _check(dec, bodies, body_offset=0):
    vals, errs = dec.decode(pa.array(bodies, pa.binary()), pa.array([1] * len(bodies), pa.int64()),
                            pa.array([body_offset] * len(bodies), pa.int32()))
    assert len(vals) == len(errs) == len(bodies)
    assert vals.type == dec.arrow_type
    vals.validate(full=True)
    for v, e in zip(vals.is_null().to_pylist(), errs.to_pylist()):
        assert e is None or v, "an error row must be null"
    # rows are independent: each decoded alone gives what it gave in the batch (a budget or
    # column shared across rows, or one row writing into another's column, shows here)
    together = list(zip(vals.to_pylist(), errs.to_pylist()))
    for i, body in enumerate(bodies):
        v1, e1 = dec.decode(pa.array([body], pa.binary()), pa.array([1], pa.int64()),
                            pa.array([body_offset], pa.int32()))
        # (compared as text: a NaN double equals itself there)
        assert repr((v1.to_pylist()[0], e1.to_pylist()[0])) == repr(together[i]), (i, body)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    mode = fdp.ConsumeIntInRange(0, 3)
    try:
        if mode == 3:
            # valid bodies of the first pair, corrupted
            _check(DECODERS[fdp.ConsumeIntInRange(0, 1)], [_mutated(fdp) for _ in range(fdp.ConsumeIntInRange(1, 6))])
        elif mode == 0:
            # a fixed resolution program over arbitrary bodies
            _check(DECODERS[fdp.ConsumeIntInRange(0, len(DECODERS) - 1)], _bodies(fdp))
        elif mode == 1:
            # an arbitrary schema text, read by itself
            text = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 400))
            schema = avro.parse_schema(text)
            dec = avro.AvroDecoder(schema, max_items=10000,
                                   recursive_field_max_depth=fdp.ConsumeIntInRange(-1, 13))
            dec.add_writer(1, schema)
            _check(dec, _bodies(fdp))
        else:
            # an arbitrary reader schema text against a fixed writer
            text = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 400))
            reader = avro.parse_schema(text)
            dec = avro.AvroDecoder(reader, max_items=10000)
            dec.add_writer(1, PAIRS[0][0])
            _check(dec, _bodies(fdp))
    except EXPECTED:
        pass


if __name__ == "__main__":
    run(test_one_input)
