"""Schema Registry payload decoders on arbitrary bytes: ProtobufDecoder (a message with every field kind,
and a proto2 message of groups, some shaped like the well-known Timestamp/Duration, and a required field;
several records per call) and JsonSchemaDecoder (values, and schema documents).  Every record gives a row or
that row's error (nothing raised, nothing dropped, rows that failed are null); a Protobuf payload that the
protobuf package parses decodes to the row the protobuf package's parse gives (tests/support/oracles/protobuf_oracle.py),
and a Protobuf column decodes to the rows and errors of its values decoded one at a time (each decode writes its own
columns and cuts a failed row out of every one)."""
import json
import os
import sys

import atheris

from _harness import EXPECTED, ROOT, run

import pyarrow as pa

sys.path.insert(0, os.path.join(ROOT, "tests"))
from support.oracles.protobuf_oracle import normalize, row, row_with, same_values, sorted_maps  # noqa: E402
from support.oracles.protos import COMMON, ORDERS, Generated, generated  # noqa: E402
from support.oracles.any_messages import ANY_PROTO, LEGACY_PROTO, WKT_NAMES  # noqa: E402

from kafkarec.jsonschema import JsonSchemaDecoder, arrow_type  # noqa: E402
from kafkarec.protobuf import ProtobufDecoder, ProtobufSchema, spark_options  # noqa: E402
from kafkarec.registry.typed import message_indexes  # noqa: E402

SCHEMA = ProtobufSchema.from_text(ORDERS, {"kr/common.proto": COMMON}, name="kr/orders.proto")
PB = ProtobufDecoder(SCHEMA)
PB.add_writer(1, SCHEMA)
# every from_protobuf option that changes values at once (tests/protobuf/oracle.row_with is Spark's rule)
OPTIONS = {"enums.as.ints": "true", "emit.default.values": "true", "upcast.unsigned.ints": "true",
           "unwrap.primitive.wrapper.types": "true", "retain.empty.message.types": "true"}
PB_OPTIONS = ProtobufDecoder(SCHEMA, **spark_options(OPTIONS))
PB_OPTIONS.add_writer(1, SCHEMA)
ORDER = generated().modules["kr/orders.proto"].Order

# proto2 groups: Spark reads a message named Timestamp/Duration with fields seconds, nanos as a time,
# and a group is such a message (a repeated one of those once crashed the process)
GROUPS = """syntax = "proto2";
package kr.fz;
import "google/protobuf/timestamp.proto";
message Groups {
  repeated group Timestamp = 1 { optional int64 seconds = 1; optional int32 nanos = 2; }
  optional group Duration = 2 { optional int64 seconds = 1; optional int32 nanos = 2; }
  repeated group Line = 3 {
    optional string sku = 4;
    repeated int32 n = 5 [packed = true];
    optional group Inner = 6 { optional sint64 z = 7; repeated group Timestamp = 8 { optional int64 seconds = 9; optional int32 nanos = 10; } }
  }
  optional google.protobuf.Timestamp at = 11;
  required int32 r = 12;
  optional int32 d = 13 [default = -5];
  map<string, int64> m = 14;
  oneof pick { string s = 15; fixed64 f = 16; }
}
"""
GROUPS_SCHEMA = ProtobufSchema.from_text(GROUPS, name="fz/groups.proto")
PB_GROUPS = ProtobufDecoder(GROUPS_SCHEMA)
PB_GROUPS.add_writer(1, GROUPS_SCHEMA)
GROUPS_MESSAGE = Generated({"fz/groups.proto": GROUPS}).modules["fz/groups.proto"].Groups

# convert.any.fields.to.json: an Any's bytes printed as Java's JsonFormat (kafkarec/protobuf/json_print.py);
# a Holder whose Any (field 2) names a type of the schema, a well-known type or nothing known, holding fuzzed bytes
ANY_SCHEMA = ProtobufSchema.from_text(ANY_PROTO, {"kranyjson/legacy2.proto": LEGACY_PROTO}, name="kranyjson/any.proto")
ANY_OPTIONS = {"convert.any.fields.to.json": "true", "recursive.fields.max.depth": "2"}
PB_ANY = ProtobufDecoder(ANY_SCHEMA, "kr.any.Holder", **spark_options(ANY_OPTIONS))
PB_ANY.add_writer(1, ANY_SCHEMA)
HOLDER_INDEXES = message_indexes(ANY_SCHEMA, "kr.any.Holder")
ANY_TYPES = ["kr.any.Inner", "kr.any.Holder", "kr.any.Inner.Deep", "kr.legacy2.Old", "kr.any.Nope", ""] + WKT_NAMES
JSON_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": ["null", "string"]}, "x": {"type": "number"},
    "t": {"type": "string", "format": "date-time"}, "tags": {"type": "array", "items": {"type": "string"}},
    "o": {"type": "object", "properties": {"b": {"type": "boolean"}}}}}
JS = JsonSchemaDecoder(JSON_SCHEMA)
JS.add_writer(1, JSON_SCHEMA)


def check(decoder, records, offsets, alone=True):
    values, ids, offs = (pa.array(records, pa.binary()), pa.array([1] * len(records), pa.int64()),
                         pa.array(offsets, pa.int32()))
    arr, err = decoder.decode(values, ids, offs)
    assert len(arr) == len(err) == len(records)
    arr.validate(full=True)
    for i in range(len(records)):
        if err[i].is_valid:
            assert not arr[i].is_valid
        if alone:
            one, one_err = decoder.decode(values.slice(i, 1), ids.slice(i, 1), offs.slice(i, 1))
            assert one_err[0].as_py() == err[i].as_py(), (records[i], one_err[0], err[i])
            assert same_values(one[0].as_py(), arr[i].as_py()), records[i]
    return arr, err


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    mode = fdp.ConsumeIntInRange(0, 4)
    if mode == 2:
        try:
            document = json.loads(fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes()))
        except (ValueError, RecursionError):
            return
        try:
            arrow_type(document)
        except EXPECTED:
            pass
        return
    if mode == 4:
        check_any(fdp)
        return
    records = []
    while fdp.remaining_bytes() and len(records) < 8:
        records.append(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 256)))
    if not records:
        return
    if mode == 1:
        check(JS, records, [0] * len(records), alone=False)
        return
    if mode == 3:
        check_parse(PB_GROUPS, GROUPS_MESSAGE, records)
        return
    arr, err = check(PB, [b"\x00" + r for r in records], [0] * len(records))
    opt, opt_err = check(PB_OPTIONS, [b"\x00" + r for r in records], [0] * len(records))
    assert opt_err.to_pylist() == err.to_pylist()          # options change values, never which rows fail
    for i, r in enumerate(records):
        m = ORDER()
        try:
            m.ParseFromString(r)
        except Exception:
            continue
        if err[i].as_py() is not None and "field number 0 is out of range" in err[i].as_py():
            # upb skips a zero tag inside an unknown group; protobuf-java's CodedInputStream (what
            # Spark's from_protobuf parses with) throws invalidTag for it, and so does kafkarec
            continue
        assert err[i].as_py() is None, (r, err[i])
        if _map_entry_set_aside(m):
            continue
        assert same_values(normalize(arr[i].as_py(), ORDER.DESCRIPTOR), row(m)), r
        assert same_values(sorted_maps(opt[i].as_py()), sorted_maps(row_with(m, OPTIONS))), r


def check_parse(decoder, message, records) -> None:
    """Each record decodes to the row of the protobuf package's own parse; one that parses but lacks a
    required field is an error row (protobuf-java's parse, which Spark uses, refuses it)."""
    arr, err = check(decoder, [b"\x00" + r for r in records], [0] * len(records))
    for i, r in enumerate(records):
        m = message()
        try:
            m.MergeFromString(r)
        except Exception:
            continue
        if not m.IsInitialized():
            assert err[i].as_py() is not None, r
            continue
        if err[i].as_py() is not None and "field number 0 is out of range" in err[i].as_py():
            continue        # a zero tag inside an unknown group: see test_one_input
        assert err[i].as_py() is None, (r, err[i])
        if _map_entry_set_aside(m):
            continue
        assert same_values(normalize(arr[i].as_py(), message.DESCRIPTOR), row(m)), r


def _map_entry_set_aside(m) -> bool:
    """Whether upb kept a map entry aside as an unknown field of the message: it does so with an entry that
    holds a field it does not know (or one of another wire type), where protobuf-java's MapEntry parse (what
    Spark's from_protobuf reads with) skips that field and keeps the entry, and so does kafkarec."""
    from google.protobuf.unknown_fields import UnknownFieldSet
    maps = {f.number for f in m.DESCRIPTOR.fields
            if f.message_type is not None and f.message_type.GetOptions().map_entry}
    return any(u.field_number in maps for u in UnknownFieldSet(m))


def _len(field: int, body: bytes) -> bytes:
    n, out = len(body), bytearray([field << 3 | 2])
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n]) + body


def check_any(fdp) -> None:
    """Holders whose Any holds fuzzed bytes under a chosen type URL: a row (the Any as JSON text) or that
    row's error, never an exception."""
    records = []
    while fdp.remaining_bytes() and len(records) < 4:
        url = "type.googleapis.com/" + ANY_TYPES[fdp.ConsumeIntInRange(0, len(ANY_TYPES) - 1)]
        body = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 200))
        tail = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 8))          # bytes after the Any: anything
        records.append(HOLDER_INDEXES + _len(2, _len(1, url.encode()) + _len(2, body)) + tail)
    if records:
        arr, err = check(PB_ANY, records, [0] * len(records))
        for i in range(len(records)):
            if err[i].as_py() is None and arr[i]["details"].as_py() is not None:
                json.loads(arr[i]["details"].as_py())                # the text is JSON




if __name__ == "__main__":
    run(test_one_input)
