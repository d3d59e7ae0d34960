"""Wire formats (id prefix, header ids, Apicurio ids) and the dispatch of TypedColumn /
decode_table, with a stand-in decoder (fakedec.py) so only the registry's part is tested."""
from __future__ import annotations

import hashlib
import struct

import numpy as np
import pyarrow as pa
import pytest

import kafkarec
import kafkarec.registry as kr
from kafkarec.registry import wire

from support.registry.fakedec import FAKE
from support.registry.schemas_log import confluent_key, schema_value

HEADERS_T = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def prefix(sid: int, body: bytes) -> bytes:
    return b"\x00" + struct.pack(">i", sid) + body


def test_prefix_ids_errors_and_tombstones():
    vals = pa.array([prefix(7, b"abc"), None, b"", b"\x05xx", b"\x00\x00", prefix(-1, b""),
                     prefix(2**31 - 1, b"z")])
    w = wire.parse_ids(vals)
    assert w.writer_ids.to_pylist() == [7, None, None, None, None, -1, 2**31 - 1]
    assert w.body_offsets.to_pylist()[0] == 5
    errs = w.errors.to_pylist()
    assert errs[0] is None and errs[1] is None          # a tombstone is no error
    assert "empty" in errs[2]
    assert errs[3].startswith("Unknown magic byte 0x05")
    assert "truncated" in errs[4]
    # Sliced and large_binary inputs give the same answers.
    big = vals.cast(pa.large_binary())
    assert wire.parse_ids(big).writer_ids.to_pylist() == w.writer_ids.to_pylist()
    assert wire.parse_ids(vals.slice(3)).writer_ids.to_pylist() == w.writer_ids.to_pylist()[3:]
    assert wire.parse_ids(pa.chunked_array([vals[:2], vals[2:]])).errors.to_pylist() == errs


def test_apicurio_eight_byte_ids():
    vals = pa.array([b"\x00" + struct.pack(">q", 12345678901) + b"x", b"\x00\x00\x00\x00\x01"])
    w = wire.parse_ids(vals, id_format="apicurio")
    assert w.writer_ids.to_pylist() == [12345678901, None]
    assert w.body_offsets.to_pylist()[0] == 9
    with pytest.raises(ValueError):
        wire.parse_ids(vals, id_format="nope")


def test_header_ids_win_over_prefix_last_header_wins():
    guid = hashlib.md5(b"schema").digest()
    vals = pa.array([b"body0", prefix(3, b"body1"), prefix(4, b"body2"), b"body3", b"body4", None])
    hdrs = pa.array([
        [{"key": "__value_schema_id", "value": b"\x00\x00\x00\x00\x09"}],
        [{"key": "__value_schema_id", "value": None}],          # null header value: prefix read
        [{"key": "other", "value": b"\x01"}],
        [{"key": "__value_schema_id", "value": b"\x01" + bytes(16)},
         {"key": "__value_schema_id", "value": b"\x01" + guid}],  # the last one wins
        [{"key": "__value_schema_id", "value": b"\x07abc"}],
        [{"key": "__value_schema_id", "value": b"\x00\x00\x00\x00\x01"}],  # tombstone stays null
    ], HEADERS_T)
    w = wire.parse_ids(vals, headers=hdrs, guid_to_id={guid: 11}.get)
    assert w.writer_ids.to_pylist() == [9, 3, 4, 11, None, None]
    assert w.body_offsets.to_pylist()[:4] == [0, 5, 5, 0]
    errs = w.errors.to_pylist()
    assert errs[:4] == [None] * 4 and "magic byte 0x07 in the schema id header" in errs[4]
    assert errs[5] is None
    # Keys read __key_schema_id, not the value's header.
    k = wire.parse_ids(vals, headers=hdrs, header_name=wire.KEY_HEADER)
    assert k.writer_ids.to_pylist()[0] is None and "Unknown magic byte" in k.errors.to_pylist()[0]


def test_protobuf_header_indexes_move_in_front_of_the_payload():
    vals = pa.array([b"PAYLOAD", prefix(5, b"\x00PAY")])
    hdrs = pa.array([[{"key": "__value_schema_id", "value": b"\x00\x00\x00\x00\x08\x02\x02"}], []], HEADERS_T)
    w = wire.parse_ids(vals, headers=hdrs, protobuf=True)
    assert w.values.to_pylist() == [b"\x02\x02PAYLOAD", prefix(5, b"\x00PAY")]
    assert w.body_offsets.to_pylist() == [0, 5]


def _registry():
    recs = [
        (0, confluent_key("SCHEMA", "orders-value", 1), schema_value("orders-value", 1, 1, "R1")),
        (1, confluent_key("SCHEMA", "orders-value", 2), schema_value("orders-value", 2, 2, "R2")),
        (2, confluent_key("SCHEMA", "orders-value", 3), schema_value("orders-value", 3, 3, "INCOMPATIBLE")),
        (3, confluent_key("SCHEMA", "pings-value", 1), schema_value("pings-value", 1, 4, "P", schema_type="PROTOBUF")),
        (4, confluent_key("SCHEMA", "orders-key", 1), schema_value("orders-key", 1, 5, "K")),
        (5, confluent_key("SCHEMA", "com.acme.Order", 1), schema_value("com.acme.Order", 1, 6, "O")),
        (6, confluent_key("SCHEMA", "orders-com.acme.Order", 1), schema_value("orders-com.acme.Order", 1, 7, "TO")),
        (7, confluent_key("SCHEMA", ":.eu:orders-value", 1), schema_value(":.eu:orders-value", 1, 1, "EU")),
    ]
    return kr.replay(recs)


def test_typed_column_per_row_errors_nothing_dropped():
    reg = _registry()
    col = kr.TypedColumn(reg, topic="orders", decoders=FAKE)
    assert col.subject == "orders-value" and col.reader.version == 3 and col.reader.schema == "INCOMPATIBLE"
    col = kr.TypedColumn(reg, topic="orders", version=2, decoders=FAKE)
    vals = pa.array([prefix(1, b"a"), prefix(2, b"b"), None, b"plain", prefix(99, b"c"),
                     prefix(3, b"d"), prefix(4, b"e"), prefix(2, b"!bad"), prefix(1, b"f")])
    typed, ids, errs = col.decode(vals)
    assert typed.to_pylist() == ["1:a", "2:b", None, None, None, None, None, None, "1:f"]
    assert ids.to_pylist() == [1, 2, None, None, 99, 3, 4, 2, 1]
    e = errs.to_pylist()
    assert e[:3] == [None, None, None] and e[8] is None
    assert "Unknown magic byte 0x70" in e[3]
    assert "unknown writer schema id 99" in e[4]
    assert "cannot be read as orders-value" in e[5] and "does not resolve" in e[5]
    assert "is a PROTOBUF schema" in e[6]
    assert e[7] == "garbage body"
    assert len(typed) == len(vals)


def test_subject_strategies_and_contexts():
    reg = _registry()
    assert kr.subject_name("orders") == "orders-value"
    assert kr.subject_name("orders", is_key=True) == "orders-key"
    assert kr.subject_name("orders", strategy="record", record_name="com.acme.Order") == "com.acme.Order"
    assert kr.subject_name("orders", strategy="TopicRecordNameStrategy",
                           record_name="com.acme.Order") == "orders-com.acme.Order"
    col = kr.TypedColumn(reg, topic="orders", strategy="record", record_name="com.acme.Order", decoders=FAKE)
    assert col.reader.schema == "O"
    col = kr.TypedColumn(reg, topic="orders", strategy="topic_record", record_name="com.acme.Order", decoders=FAKE)
    assert col.reader.schema == "TO"
    # A subject in a context reads ids in that context: id 1 is "EU" there.
    col = kr.TypedColumn(reg, ":.eu:orders-value", decoders=FAKE)
    typed, _, errs = col.decode(pa.array([prefix(1, b"x"), prefix(2, b"y")]))
    assert typed.to_pylist() == ["1:x", None] and "unknown writer schema id 2 in context .eu" in errs.to_pylist()[1]
    with pytest.raises(kr.RegistryError):
        kr.TypedColumn(reg, topic="nothing", decoders=FAKE)


def test_bare_payload_formats_with_a_reader_schema():
    col = kr.TypedColumn(None, value_format="avro", reader_schema="R", decoders=FAKE)
    typed, ids, errs = col.decode(pa.array([b"abc", None]))
    assert typed.to_pylist() == ["0:abc", None] and ids.null_count == 2 and errs.null_count == 2


def test_decode_table_from_to_arrow_and_iter_arrow():
    reg = _registry()
    g = hashlib.md5(b"R1").digest()
    data = kafkarec.build_batch(
        [prefix(1, b"a"), b"bare", None, prefix(2, b"b")],
        [prefix(5, b"k0"), None, prefix(5, b"k2"), b"junk"],
        headers=[[], [("__value_schema_id", b"\x01" + g)], [], []])
    table = kafkarec.to_arrow(data, topic="orders")
    cols = {}
    for side in ("key", "value"):
        cols[side] = kr.TypedColumn(reg, topic="orders", is_key=side == "key",
                                    version=2 if side == "value" else "latest", decoders=FAKE)
    out = kr.decode_table(table, reg, key=True, columns=cols)
    assert out.column("value").to_pylist() == ["1:a", "1:bare", None, "2:b"]
    assert out.column("value_schema_id").to_pylist() == [1, 1, None, 2]
    assert out.column("key").to_pylist() == ["5:k0", None, "5:k2", None]
    corrupt = out.column("_corrupt_record").to_pylist()
    assert corrupt[:3] == [None, None, None] and corrupt[3].startswith("key: Unknown magic byte")
    assert out.column("offset").to_pylist() == [0, 1, 2, 3]
    # iter_arrow: the same columns dict reuses the decoders batch after batch.
    rows = []
    for rb in kafkarec.iter_arrow(data + data, topic="orders"):
        t = kr.decode_table(pa.Table.from_batches([rb]), reg, columns=cols)
        rows += t.column("value").to_pylist()
    assert rows == ["1:a", "1:bare", None, "2:b"] * 2


def test_no_python_object_per_record_in_parse_ids():
    # 200k framed values parse through numpy: check the answer and that it stays fast.
    import time
    n = 200_000
    body = np.frombuffer(b"".join(prefix(i % 7, b"xy") for i in range(n)), dtype=np.uint8)
    offsets = np.arange(0, 7 * (n + 1), 7, dtype=np.int32)
    vals = pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(body)])
    t = time.perf_counter()
    w = wire.parse_ids(vals)
    took = time.perf_counter() - t
    assert w.writer_ids.to_numpy()[:14].tolist() == [i % 7 for i in range(14)]
    assert w.errors.null_count == n
    assert took < 2.0, took


def test_short_values_in_a_short_buffer():
    # Fuzz finding: a column whose whole data buffer is shorter than an id read past its end.
    for vals in ([b"\x00\x04"], [b"\x00", b"\x00\x01\x02"], [b"", None], [None]):
        w = wire.parse_ids(pa.array(vals, pa.binary()))
        assert w.writer_ids.null_count == len(vals)
        for v, e in zip(vals, w.errors.to_pylist()):
            assert (e is None) == (v is None)
    w = wire.parse_ids(pa.array([b"\x00\x00\x00\x00\x01", b"\x00\x01"]), id_format="apicurio")
    assert w.writer_ids.null_count == 2
