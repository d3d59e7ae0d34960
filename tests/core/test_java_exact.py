"""Java's consumer path, exactly: the edge cases where kafkarec once disagreed with
Kafka's own reader (../shared/tools/kafka-java, Kafka's record classes compiled from
its source), each checked against that reader."""
from __future__ import annotations

import random

import pytest

import kafkarec
from support.oracles import foreign as F
from support.oracles import kafka_java as J


def _header_key_batch(key: bytes) -> bytes:
    return F.single_record_batch(F.encode_record(0, 0, b"k", b"v", headers=[(key, b"v")]),
                                 timestamp=1_700_000_000_000)


def _invalid_utf8_samples() -> list:
    rng = random.Random(20261122)
    fixed = [b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\x80", b"\xe0\x80\x80", b"\xf0\x80\x80\x80",
             b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98",
             b"ok\xc3", b"\xe2\x82x", b"\xf0\x9fx", b"\xf0\x9f\x98x", b"\x80\x80", b"\xc3\xa9\xed\xa0",
             b"\xe0\xa0", b"\xe0\x9f\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x8f\xbf\xbf\xf4\x90"]
    lead = [0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0x41]
    cont = [0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0x41]
    out = list(fixed)
    while len(out) < 600:
        n = rng.randrange(1, 7)
        out.append(bytes(rng.choice(lead) if rng.random() < 0.4 else rng.choice(cont) for _ in range(n)))
    return [s for s in out if not _valid(s)]


def _valid(s: bytes) -> bool:
    try:
        s.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_invalid_utf8_header_keys_are_replaced_as_java_does():
    samples = _invalid_utf8_samples()
    answers = J.decode_many([_header_key_batch(s) for s in samples])
    mismatches = []
    for s, answer in zip(samples, answers):
        (batch,) = answer["batches"]
        java_key = batch["records"][0]["headers"][0][0]
        ours = next(iter(kafkarec.iter_batches(_header_key_batch(s)))).records()[0].headers[0][0]
        if ours != java_key or kafkarec._core.java_utf8_decode(s) != java_key:
            mismatches.append((s.hex(), java_key, ours))
        # to_arrow gives the same key as UTF-8
        table = kafkarec.to_arrow(_header_key_batch(s))
        assert table.column("headers").to_pylist()[0][0]["key"] == java_key
    assert not mismatches, mismatches[:10]
    assert len(samples) > 300


def test_surrogate_in_header_key_is_one_replacement():
    data = bytes.fromhex("0000000000000000000000400000000002b85443b10000000000000000018bcfe568000000018"
                         "bcfe56800ffffffffffffffffffffffffffff000000011c000000026b02760206eda0800276")
    (record,) = next(iter(kafkarec.iter_batches(data))).records()
    assert record.headers == [("\ufffd", b"v")]


def _control_batch(type_id: int, value: bytes) -> bytes:
    return F.control_record_batch(F.control_key(type_id), value, timestamp=1_700_000_000_000)


def _voters_value(name: bytes | None, host: bytes) -> bytes:
    return F.voters_value([F.voter_bytes(3, bytes(16), [(name, host, 9093)], 0, 1)])


@pytest.mark.parametrize("value, error", [
    (F.leader_change_value([1, 2], None), "non-nullable field grantingVoters was serialized as null"),
    (F.leader_change_value(None, [1]), "non-nullable field voters was serialized as null"),
    (F.leader_change_value([1, 2], [1]), None),
])
def test_leader_change_null_arrays_as_kafkas_generated_reader(value, error):
    data = _control_batch(2, value)
    (answer,) = J.decode_many([data])
    (jrec,) = answer["batches"][0]["records"]
    (record,) = next(iter(kafkarec.iter_batches(data))).records()
    if error is None:
        assert "java_value_error" not in jrec
        assert record.control_value["grantingVoters"] == [{"voterId": 1}]
    else:
        assert error in jrec["java_value_error"]
        with pytest.raises(kafkarec.InvalidRecordError, match=error):
            record.control_value


def test_kraft_voters_strings_replaced_and_null_refused():
    bad_host = b"h\xed\xa0\x80st"
    data = _control_batch(6, _voters_value(b"CONTROLLER", bad_host))
    (answer,) = J.decode_many([data])
    (jrec,) = answer["batches"][0]["records"]
    assert "java_value_error" not in jrec and "h\ufffdst" in jrec["java_value"]
    (record,) = next(iter(kafkarec.iter_batches(data))).records()
    assert record.control_value["voters"][0]["endpoints"][0]["host"] == "h\ufffdst"
    data = _control_batch(6, _voters_value(None, b"host"))
    (answer,) = J.decode_many([data])
    assert "non-nullable field name was serialized as null" in answer["batches"][0]["records"][0]["java_value_error"]
    (record,) = next(iter(kafkarec.iter_batches(data))).records()
    with pytest.raises(kafkarec.InvalidRecordError, match="non-nullable field name"):
        record.control_value


JAVA_CASES = {
    # 0 records with a gzip codec and no payload: Java opens the decompressor and fails
    "gzip, 0 records, no payload": ("000000000000000000000031000000000253621aea0001000000000000018bcfe5680000"
                                    "00018bcfe56800ffffffffffffffffffffffffffff00000000", kafkarec.DecompressionError),
    "codec 5, 0 records": ("0000000000000000000000310000000002d09a1f120005000000000000018bcfe568000000018bcf"
                           "e56800ffffffffffffffffffffffffffff00000000", kafkarec.UnsupportedCodecError),
    "size + 12 overflows": ("00000000000000647fffffff00000005025120862b000000000004ffffffffffffffff0000018bc"
                            "fe56800000000000000004d00020000000a00000000", kafkarec.CorruptBatchError),
}


@pytest.mark.parametrize("name", sorted(JAVA_CASES))
def test_java_rejects_and_so_do_we(name):
    hexdata, error = JAVA_CASES[name]
    data = bytes.fromhex(hexdata)
    (answer,) = J.decode_many([data])
    assert "error" in answer, answer
    with pytest.raises(error):
        for batch in kafkarec.iter_batches(data):
            batch.records()
    with pytest.raises(error):
        kafkarec.to_arrow(data)


def test_size_overflow_ends_a_file_silently_like_file_log_input_stream():
    data = bytes.fromhex(JAVA_CASES["size + 12 overflows"][0])
    it = kafkarec.iter_batches(data, file_rules=True)
    assert list(it) == [] and it.trailing_bytes == len(data)


def _empty_compressed(codec: int, payload: bytes) -> bytes:
    return F.v2_batch(payload, record_count=0, last_offset_delta=0, attributes=codec,
                      base_timestamp=1000, max_timestamp=1000)


def _compress(codec: int, data: bytes) -> bytes:
    import gzip as _gzip
    import lz4.frame
    import snappy
    import zstandard
    return {1: lambda d: _gzip.compress(d, mtime=0), 2: snappy.compress,
            3: lambda d: lz4.frame.compress(d, block_linked=False, content_checksum=False),
            4: lambda d: zstandard.ZstdCompressor().compress(d)}[codec](data)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.parametrize("payload", ["empty", "garbage", "empty stream"])
def test_zero_record_compressed_batches_as_java(codec, payload):
    body = {"empty": b"", "garbage": b"\x00not a compressed stream\xff" * 2,
            "empty stream": _compress(codec, b"")}[payload]
    data = _empty_compressed(codec, body)
    (answer,) = J.decode_many([data])
    java_ok = "error" not in answer
    try:
        for batch in kafkarec.iter_batches(data):
            assert batch.records() == []
        ours_ok = True
    except kafkarec.KafkaRecError:
        ours_ok = False
    assert ours_ok == java_ok, (codec, payload, answer)
    # strict: an empty records section is accepted compressed or not; a payload
    # that is no valid stream (only zstd's lazy reader lets it through) is not
    (batch,) = kafkarec.iter_batches(data, strict=True)
    if payload == "empty stream":
        assert batch.records() == []
    else:
        with pytest.raises(kafkarec.KafkaRecError):
            batch.records()


@pytest.mark.parametrize("name, hexdata, expected", [
    ("v1 CreateTime wrapper, inner LogAppendTime bit",
     "00000000000000010000004f19f2683601010000018bcfe56be7ffffffff000000391f8b08000000000002036360800309fbb8"
     "ef368c1c501e2b103326820843a8082348cd4ec54d9a70356c20d124106104006579aa0c48000000",
     [(0, 5, kafkarec.TimestampType.CREATE_TIME), (1, 6, kafkarec.TimestampType.CREATE_TIME)]),
    ("v0 wrapper around v1 messages",
     "000000000000000200000056b6c4b9550001ffffffff000000481f8b0800000000000203636080038902d6ea34462083b1fbfc"
     "d30c90086322883084ca83a424f2674414a1aa4902114650354c2035970fef764455930c228c01861e20366c000000",
     # Java's Record.timestamp() is each inner message's own; the type is the v0 wrapper's (none)
     [(i, 1700000000000, kafkarec.TimestampType.NO_TIMESTAMP_TYPE) for i in range(3)]),
])
def test_legacy_wrapper_decides_inner_timestamp_types(name, hexdata, expected):
    data = bytes.fromhex(hexdata)
    (answer,) = J.decode_many([data])
    # Record.timestamp() and the record's timestampType(), before the oracle's normalisation
    java = [(r["offset"], r["timestamp_raw"], r["timestamp_type_raw"]) for r in answer["batches"][0]["records"]]
    ours = [(r.offset, r.timestamp, r.timestamp_type) for b in kafkarec.iter_batches(data) for r in b]
    assert ours == expected
    assert [(o, t, tt.name) for o, t, tt in ours] == java
    # the Arrow columns carry the same (as Spark's Kafka source: ConsumerRecord.timestamp, timestampType)
    table = kafkarec.to_arrow(data)
    assert [(r["offset"], r["timestamp"].timestamp() * 1000 if r["timestamp"] else None, r["timestampType"])
            for r in table.to_pylist()] == [(o, t, int(tt)) for o, t, tt in ours]


@pytest.mark.parametrize("timestamps", [(-1, 2**63 - 1), (2**63 - 1, -1, 0), (0, 2**63 - 1, -1)])
def test_timestamp_deltas_wrap_as_javas_long(timestamps):
    """Issue 49: a batch whose timestamps are -1 then Long.MAX has a delta past the long range; Java's long
    subtraction wraps (to Long.MIN), and the reader's addition wraps it back. The builder's delta is the
    same wrap, made explicit (no signed overflow for UBSan), record by record and in bulk."""
    spec = {"batches": [{"base_offset": 3, "records": [{"timestamp": t, "key": "k%d" % i, "value": "v"}
                                                       for i, t in enumerate(timestamps)]}]}
    java = J.write(spec)
    b = kafkarec.RecordBatchBuilder(base_offset=3)
    for i, t in enumerate(timestamps):
        b.append(b"v", b"k%d" % i, timestamp=t)
    assert b.build() == java
    b = kafkarec.RecordBatchBuilder(base_offset=3)
    b.extend([b"v"] * len(timestamps), [b"k%d" % i for i in range(len(timestamps))], list(timestamps))
    assert b.build() == java
    # a size limit asks the same delta before each record is taken
    b = kafkarec.RecordBatchBuilder(base_offset=3, max_batch_size=1 << 20)
    for i, t in enumerate(timestamps):
        assert b.has_room_for(b"v", b"k%d" % i, timestamp=t)
        b.append(b"v", b"k%d" % i, timestamp=t)
    assert b.build() == java
    assert [r.timestamp for batch in kafkarec.iter_batches(java) for r in batch] == list(timestamps)
