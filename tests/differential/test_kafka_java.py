"""kafkarec's default mode against Kafka's own reader, on thousands of mutants of
Java-written inputs.

Inputs come from Kafka's MemoryRecordsBuilder (../shared/tools/kafka-java
``write``): every magic and codec, headers, transactional batches and markers,
KRaft control records, several batches back to back.  Each is mutated -
truncations, byte flips with and without CRC repair, header fields and record
varints overwritten with edge values - and both readers decode every mutant
(Kafka's in one JVM, as a consumer with check.crcs=true, plus the wrapper CRC
of legacy compressed messages, which kafkarec checks like the broker does).
They must agree on accepting or rejecting, and on every field decoded.
"""
from __future__ import annotations

import base64
import random
import struct

import pytest

import kafkarec
from support.oracles import kafka_java as J
from support.oracles import reference as R

SEED = 20261122
MUTANTS_PER_SEED = 600

SPECS = [
    {"batches": [
        {"codec": "none", "base_offset": 0, "gen": {"count": 5, "key": "k-%d", "value": {"random": 30, "seed": 1},
                                                    "headers": [["trace", "abc"]]}},
        {"codec": "gzip", "base_offset": 5, "records": [{"key": "k", "value": "v", "headers": [["h", "x"], ["n", None]]},
                                                         {"key": None, "value": {"hex": "00ff"}}]},
        {"codec": "snappy", "base_offset": 7, "gen": {"count": 4, "key": {"random": 8}, "value": {"random": 40, "seed": 2}}},
    ]},
    {"batches": [
        {"codec": "lz4", "base_offset": 100, "gen": {"count": 6, "key": "k-%d", "value": {"random": 25, "seed": 3}}},
        {"codec": "zstd", "base_offset": 106, "gen": {"count": 6, "key": None, "value": {"fill": 65, "size": 50}}},
    ]},
    {"batches": [
        {"codec": "none", "base_offset": 0, "producer_id": 42, "producer_epoch": 3, "base_sequence": 2147483646,
         "transactional": True, "gen": {"count": 3, "key": "t-%d", "value": "v"}},
        {"control": "commit", "base_offset": 3, "producer_id": 42, "producer_epoch": 3, "coordinator_epoch": 9},
        {"control": "abort", "base_offset": 4, "producer_id": 43, "producer_epoch": 0, "coordinator_epoch": 1},
    ]},
    {"batches": [
        {"control": "leader_change", "partition_leader_epoch": 4, "leader_id": 1, "voters": [1, 2, 3],
         "granting_voters": [1, 2]},
        {"control": "snapshot_header", "partition_leader_epoch": 4, "base_offset": 1,
         "last_contained_log_timestamp": 1700000000000},
        {"control": "kraft_version", "partition_leader_epoch": 4, "base_offset": 2, "kraft_version": 1},
        {"control": "snapshot_footer", "partition_leader_epoch": 4, "base_offset": 3},
    ]},
    {"batches": [
        {"magic": 1, "codec": "none", "gen": {"count": 3, "key": "a-%d", "value": {"random": 12, "seed": 4}}},
        {"magic": 1, "codec": "gzip", "base_offset": 3, "gen": {"count": 3, "key": "b-%d", "value": {"random": 12, "seed": 5}}},
        {"magic": 1, "codec": "lz4", "base_offset": 6, "timestamp_type": "log_append_time",
         "log_append_time": 1700000009999, "gen": {"count": 2, "key": "c-%d", "value": "x"}},
    ]},
    {"batches": [
        {"magic": 0, "codec": "none", "gen": {"count": 2, "key": "d-%d", "value": "y"}},
        {"magic": 0, "codec": "snappy", "base_offset": 2, "gen": {"count": 3, "key": "e-%d", "value": {"random": 16, "seed": 6}}},
        {"magic": 1, "codec": "snappy", "base_offset": 5, "gen": {"count": 2, "key": "f-%d", "value": "z"}},
    ]},
    {"batches": [
        {"codec": "gzip", "base_offset": 0, "timestamp_type": "log_append_time", "log_append_time": 1700000001234,
         "gen": {"count": 3, "key": "g-%d", "value": {"random": 10, "seed": 7}}},
        {"empty": True, "base_offset": 3, "last_offset": 9, "max_timestamp": 1700000000000},
        {"codec": "none", "base_offset": 10, "delete_horizon_ms": 1700000005000,
         "gen": {"count": 2, "key": "h-%d", "value": None}},
    ]},
]


# ---------------------------------------------------------------- framing and CRCs

def _entries(data: bytes) -> list:
    """(position, size, magic) of every whole entry of ``data``."""
    out, pos = [], 0
    while len(data) - pos >= 17:
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        if size < 26 or pos + size > len(data):
            break
        out.append((pos, size, data[pos + 16]))
        pos += size
    return out


def _repair_crcs(buf: bytearray) -> None:
    """Recompute the CRC of every whole entry (v2: CRC-32C from byte 21; legacy: CRC-32 from 16)."""
    for pos, size, magic in _entries(bytes(buf)):
        if (magic == 2 and size >= 61) or magic in (0, 1):
            buf[pos:pos + size] = R.with_crc(buf[pos:pos + size])


EDGE_INTS = [0, 1, -1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, -0x8000, 0x7FFFFFFF, -0x80000000, 13, 14, 60, 61, 62]
V2_FIELDS = [(8, 4), (16, 1), (21, 2), (23, 4), (27, 8), (35, 8), (43, 8), (51, 2), (53, 4), (57, 4)]
LEGACY_FIELDS = [(8, 4), (16, 1), (17, 1), (22, 4)]
VARINTS = [b"\x00", b"\x01", b"\x02", b"\x7f", b"\x80\x01", b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f",
           b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\x80\x80\x80\x80\x80\x01"]


def _mutants(seed: bytes, rng: random.Random) -> list:
    out = []
    n = len(seed)
    cuts = sorted(set([0, 1, 11, 12, 16, 17, 60, 61, n - 1] + [rng.randrange(n) for _ in range(20)]))
    out += [seed[:c] for c in cuts if 0 <= c < n]
    entries = _entries(seed)
    while len(out) < MUTANTS_PER_SEED:
        buf = bytearray(seed)
        kind = rng.random()
        if kind < 0.35:                                        # byte flips, CRC repaired or not
            for _ in range(rng.choice([1, 1, 2, 3])):
                buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
            if rng.random() < 0.7:
                _repair_crcs(buf)
        elif kind < 0.7:                                       # a header field set to an edge value
            pos, size, magic = rng.choice(entries)
            off, width = rng.choice(V2_FIELDS if magic == 2 else LEGACY_FIELDS)
            value = rng.choice(EDGE_INTS) if width > 1 else rng.choice([0, 1, 2, 3, 0x7F, 0x80, 0xFF])
            mask = (1 << (8 * width)) - 1
            buf[pos + off:pos + off + width] = (value & mask).to_bytes(width, "big")
            if off not in (8, 16) or rng.random() < 0.5:
                _repair_crcs(buf)
        else:                                                  # a varint inside the records, overwritten
            pos, size, magic = rng.choice(entries)
            start = pos + (61 if magic == 2 else 26)
            if start >= pos + size:
                continue
            at = rng.randrange(start, pos + size)
            v = rng.choice(VARINTS)
            buf[at:at + len(v)] = v
            buf = buf[:n] if len(buf) > n else buf
            _repair_crcs(buf)
        out.append(bytes(buf))
    return out


# ---------------------------------------------------------------- the two readers' answers

def _ts_type(t) -> str | None:
    return {kafkarec.TimestampType.CREATE_TIME: "create_time",
            kafkarec.TimestampType.LOG_APPEND_TIME: "log_append_time"}.get(t)


def _ours(data: bytes) -> dict:
    try:
        it = kafkarec.iter_batches(data)
        batches = []
        for b in it:
            records = []
            for r in b:
                if b.magic == 2 and b.is_control:
                    # As the consumer (and the oracle) do: parse the control key, and a
                    # transaction marker's value; KRaft values fail only on access.
                    if r.control_type in (kafkarec.ControlRecordType.ABORT, kafkarec.ControlRecordType.COMMIT):
                        r.control_value
                rec = {"offset": r.offset, "key": J.b64(r.key), "value": J.b64(r.value),
                       "headers": [[k, J.b64(v)] for k, v in r.headers],
                       "timestamp_type": _ts_type(r.timestamp_type),
                       "timestamp": r.timestamp if r.timestamp_type is not kafkarec.TimestampType.NO_TIMESTAMP_TYPE else None}
                if b.magic == 2:
                    rec["sequence"] = r.sequence
                records.append(rec)
            batches.append({"magic": b.magic, "position": b.position, "size_in_bytes": b.size_in_bytes,
                            "last_offset": b.last_offset, "crc": b.crc, "records": records,
                            **({"base_offset": b.base_offset, "record_count": b.record_count,
                                "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
                                "base_sequence": b.base_sequence, "transactional": b.is_transactional,
                                "control": b.is_control, "max_timestamp": b.max_timestamp,
                                "partition_leader_epoch": b.partition_leader_epoch}
                               if b.magic == 2 else {})})
        return {"batches": batches, "trailing_bytes": it.trailing_bytes}
    except kafkarec.KafkaRecError as e:
        return {"error": f"{type(e).__name__}: {e}"}


def _java(answer: dict) -> dict:
    if "error" in answer:
        return {"error": answer["error"]}
    batches = []
    for b in answer["batches"]:
        records = []
        for r in b["records"]:
            rec = {k: r[k] for k in ("offset", "key", "value", "timestamp_type", "timestamp")}
            rec["headers"] = r["headers"]
            if b["magic"] == 2:
                rec["sequence"] = r["sequence"]
            records.append(rec)
        out = {k: b[k] for k in ("magic", "position", "size_in_bytes", "last_offset", "crc")}
        out["records"] = records
        if b["magic"] == 2:
            out.update({k: b[k] for k in ("base_offset", "record_count", "producer_id", "producer_epoch",
                                          "base_sequence", "transactional", "control", "max_timestamp",
                                          "partition_leader_epoch")})
        batches.append(out)
    return {"batches": batches, "trailing_bytes": answer["trailing_bytes"]}


@pytest.fixture(scope="module")
def corpus():
    rng = random.Random(SEED)
    inputs = []
    for spec in SPECS:
        seed = J.write(spec)
        inputs.append(seed)
        inputs += _mutants(seed, rng)
    answers = J.decode_many(inputs, wrapper_crc=True)
    return inputs, answers


def test_java_written_seeds_decode_identically(corpus):
    inputs, answers = corpus
    seeds = [inputs[i * (MUTANTS_PER_SEED + 1)] for i in range(len(SPECS))]
    for data, answer in zip(seeds, answers[::MUTANTS_PER_SEED + 1]):
        assert "error" not in answer
        assert _ours(data) == _java(answer)


def test_mutants_accepted_rejected_and_decoded_identically(corpus):
    inputs, answers = corpus
    accept_disagree, content_disagree = [], []
    rejected = 0
    oracle_out_of_memory = 0
    for data, answer in zip(inputs, answers):
        ours, java = _ours(data), _java(answer)
        if "OutOfMemoryError" in java.get("error", ""):
            # Kafka's reader ran out of heap (it allocates by sizes read from the
            # input); that is no verdict on the bytes.  kafkarec answered (_ours
            # returns a result or a KafkaRecError, anything else fails the test).
            oracle_out_of_memory += 1
            continue
        if ("error" in ours) != ("error" in java):
            accept_disagree.append((data.hex(), ours.get("error"), java.get("error")))
        elif "error" in java:
            rejected += 1
        elif ours != java:
            content_disagree.append((data.hex(), ours, java))
    assert len(inputs) >= len(SPECS) * MUTANTS_PER_SEED
    assert oracle_out_of_memory < len(inputs) // 100
    assert 0.05 < rejected / len(inputs) < 0.95          # the mutants do reach both outcomes
    assert not accept_disagree, f"{len(accept_disagree)} accept/reject differences, e.g. {accept_disagree[:3]}"
    assert not content_disagree, f"{len(content_disagree)} content differences, e.g. {content_disagree[:2]}"
