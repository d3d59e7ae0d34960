"""Java's consumer path, exactly: the edge cases where kafkarec once disagreed with
Kafka's own reader (../shared/tools/kafka-java, Kafka's record classes compiled from
its source), each checked against that reader."""
from __future__ import annotations

import random

import pytest

import kafkarec
import foreign as F
import kafka_java as J


def _header_key_batch(key: bytes) -> bytes:
    rec = F.encode_record(0, 0, b"k", b"v", headers=[(key, b"v")])
    return F.v2_batch(rec, record_count=1, last_offset_delta=0,
                      base_timestamp=1_700_000_000_000, max_timestamp=1_700_000_000_000)


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
