"""Logs of mixed batches (tests/core's runs of batches and the view layout): mostly whole
uncompressed v2 data batches, which a run takes, and some of what ends a run (compressed,
control, LogAppendTime, transactional), with the reads both compare layouts and paths over."""
from __future__ import annotations

import random

from kafkarec import Compression, ControlRecordType, RecordBatchBuilder, TimestampType


def batch(rng: random.Random, base: int, n: int, **options) -> bytes:
    b = RecordBatchBuilder(base_offset=base, **options)
    for i in range(n):
        value = None if rng.random() < 0.05 else rng.randbytes(rng.randrange(0, 260))
        key = None if rng.random() < 0.3 else b"k%d" % rng.randrange(12)
        headers = [("h", b"v"), ("n", None)] if rng.random() < 0.3 else ()
        b.append(value, key, timestamp=1_700_000_000_000 + base + i, headers=headers)
    return b.build()


def log(seed: int, batches: int = 80) -> bytes:
    """Mostly what a run takes, some of what ends one."""
    rng = random.Random(seed)
    out, base = bytearray(), 0
    for _ in range(batches):
        kind = rng.choice(["plain"] * 8 + ["lz4", "gzip", "append", "control", "transactional"])
        n = rng.choice([1, 2, 40, 150])
        if kind == "control":
            b = RecordBatchBuilder(base_offset=base, is_control=True, is_transactional=True,
                                   producer_id=7, producer_epoch=0)
            b.append_control(rng.choice([ControlRecordType.COMMIT, ControlRecordType.ABORT]),
                             {"coordinatorEpoch": 1}, timestamp=1_700_000_000_000 + base)
            out += b.build()
            n = 1
        elif kind == "append":
            out += batch(rng, base, n, timestamp_type=TimestampType.LOG_APPEND_TIME,
                         log_append_time=1_800_000_000_000 + base)
        elif kind == "transactional":
            out += batch(rng, base, n, is_transactional=True, producer_id=7, producer_epoch=0, base_sequence=base)
        else:
            out += batch(rng, base, n, compression={"plain": Compression.NONE, "lz4": Compression.LZ4,
                                                    "gzip": Compression.GZIP}[kind])
        base += n
    return bytes(out)



#: the reads compared (iter_arrow's keywords): modes, projections, key bounds, chunk limits,
#: control rows, read_committed
READS = [
    {},
    {"strict": True},
    {"verify_crc": False},
    {"columns": ["offset", "timestamp"]},
    {"columns": ["offset", "timestamp"], "strict": True},
    {"keys": [b"k1", b"k3", b"absent"]},
    {"columns": ["offset", "timestamp"], "keys": [b"k2"]},
    {"max_rows": 97},
    {"max_bytes": 3000},
    {"include_control": True},
    {"read_committed": True},
]


def damaged_copies(data: bytes, seed: int, spots: int, first: int):
    """``(position, data with one byte changed there)``: at ``spots`` random positions and at each
    of the first ``first`` bytes (headers, records, CRCs), one byte flipped a random way."""
    rng = random.Random(seed)
    for at in sorted(rng.sample(range(len(data)), spots)) + list(range(0, first)):
        damaged = bytearray(data)
        damaged[at] ^= rng.choice([0x01, 0x80, 0xFF, 0x10])
        yield at, bytes(damaged)
