"""One driver under every typed format: Avro and Protobuf columns go through the core's one loop
(_typed_rows.pxi), so a null, a missing writer, a body past the end and a row that fails halfway
through a list are handled, and worded, the same way whatever the format, on any binary layout
(binary or large_binary, sliced, chunked)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from kafkarec._core import encode_varlong
from kafkarec.avro import AvroDecoder, parse_schema

AVRO = ('{"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, '
        '{"name": "tags", "type": {"type": "array", "items": "string"}}]}')
PROTO = 'syntax = "proto3";\nmessage R {\n  int64 id = 1;\n  repeated string tags = 2;\n}\n'
PREFIX = b"\x00\x00\x00\x00\x01"          # Confluent's framing: magic byte, writer id (the ids column rules)


def avro_body(id_, tags):
    out = encode_varlong(id_) + (encode_varlong(len(tags)) if tags else b"")
    for t in tags:
        out += encode_varlong(len(t)) + t
    return out + b"\x00"


def pb_body(id_, tags):
    out = b"\x08" + bytes([id_])           # small ids: one varint byte
    for t in tags:
        out += b"\x12" + bytes([len(t)]) + t
    return b"\x00" + out                   # message indexes [0], then the message


def column(body):
    """(values, writer ids, body offsets): good, tombstone, unknown writer, body past the end,
    fails after its first list item, good, null writer id."""
    values = [PREFIX + body(1, [b"a", b"b"]), None, PREFIX + body(3, []), b"abc",
              PREFIX + body(4, [b"a", b"\xff"]), PREFIX + body(2, [b"c"]), PREFIX + body(5, [])]
    ids = [1, 1, 9, 1, 1, 1, None]
    return values, ids, [5] * len(values)


@pytest.fixture(scope="module")
def decoders():
    from kafkarec.protobuf import ProtobufDecoder, ProtobufSchema
    avro = AvroDecoder(parse_schema(AVRO))
    avro.add_writer(1, parse_schema(AVRO))
    proto = ProtobufDecoder(ProtobufSchema.from_text(PROTO))
    proto.add_writer(1, ProtobufSchema.from_text(PROTO))
    return {"avro": (avro, avro_body), "protobuf": (proto, pb_body)}


LAYOUTS = {
    "binary": lambda a: a,
    "large_binary": lambda a: a.cast(pa.large_binary()),
    "sliced": lambda a: pa.concat_arrays([pa.array([b"x"], pa.binary()), a]).slice(1),
    "chunked": lambda a: pa.chunked_array([a.slice(0, 3), a.slice(3)]),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("fmt", ["avro", "protobuf"])
def test_every_format_rides_one_driver(decoders, fmt, layout):
    decoder, body = decoders[fmt]
    values, ids, offsets = column(body)
    typed, errors = decoder.decode(LAYOUTS[layout](pa.array(values, pa.binary())), pa.array(ids, pa.int64()),
                                   pa.array(offsets, pa.int32()))
    rows, errs = typed.to_pylist(), errors.to_pylist()
    assert rows == [{"id": 1, "tags": ["a", "b"]}, None, None, None, None, {"id": 2, "tags": ["c"]}, None]
    assert errs[:4] == [None, None, "at byte 5 of the value: unknown writer schema id 9",
                        "at byte 5 of the value: the body starts past the end of a 3-byte value"]
    assert errs[4].startswith("at byte ") and "UTF-8" in errs[4]
    assert errs[5:] == [None, None]
    typed.validate(full=True)              # the failed row's list item was cut out of the child column
    assert typed.field("tags").flatten().to_pylist() == ["a", "b", "c"]
