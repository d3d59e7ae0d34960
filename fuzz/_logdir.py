"""A Kafka log dir written from a fuzzer's bytes, for the targets that read whole logs
(``fuzz_threads``, ``fuzz_census``): one or two partitions of topic ``t``, each of one to three
segments of one to four batches, each batch

* a v2 batch of kafkarec's builder, at any codec, of one to four records whose keys, values,
  headers (repeated names among them, as ``Headers.add`` allows) and timestamps come from small
  alphabets, so that finds and counts have something to match;
* a legacy v0/v1 message set (uncompressed or gzip);
* a transaction's records (producer 7 or 8) and its end, a COMMIT or ABORT marker;
* any of these damaged: a byte changed (a broken CRC, or a length, or framing), or cut short;
* or the fuzzer's bytes as they come.

Offsets increase from batch to batch, as a broker writes them.
"""
from __future__ import annotations

import os
import shutil

import kafkarec
from kafkarec import Compression, ControlRecordType
from kafkarec._core import LegacyBatchBuilder

TOPIC = "t"
KEYS = (None, b"a", b"b", b"ab")
VALUES = (None, b"", b"x", b"needle", b"\xffneedle\x00", b"aaaa" * 20)
HEADERS = ((), (("h", b"x"),), (("h", b"x"), ("h", b"y")), (("g", None),), (("h", b"needle"), ("g", b"x")))
CODECS = (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD)


def pick(fdp, choices):
    """One of ``choices`` (any sequence; atheris' PickValueInList takes lists only)."""
    return choices[fdp.ConsumeIntInRange(0, len(choices) - 1)]


def _records(fdp, n):
    return [(pick(fdp, VALUES), pick(fdp, KEYS), fdp.ConsumeIntInRange(-1, 3000),
             list(pick(fdp, HEADERS))) for _ in range(n)]


def _v2(fdp, base: int):
    records = _records(fdp, fdp.ConsumeIntInRange(1, 4))
    # a transaction's records (producer 7 or 8), ended by a marker of _marker, or plain ones
    producer = pick(fdp, (-1, -1, 7, 8))
    b = kafkarec.RecordBatchBuilder(compression=pick(fdp, CODECS), base_offset=base, producer_id=producer,
                                    producer_epoch=0 if producer >= 0 else -1, base_sequence=0 if producer >= 0 else -1,
                                    is_transactional=producer >= 0)
    for value, key, ts, headers in records:
        b.append(value, key, timestamp=ts, headers=headers)
    return b.build(), len(records)


def _marker(fdp, base: int):
    """A transaction's end: COMMIT or ABORT of producer 7 or 8 (one may end none)."""
    b = kafkarec.RecordBatchBuilder(base_offset=base, producer_id=pick(fdp, (7, 8)), producer_epoch=0,
                                    is_transactional=True, is_control=True)
    b.append_control(pick(fdp, (ControlRecordType.COMMIT, ControlRecordType.ABORT)), {"coordinatorEpoch": 1},
                     timestamp=fdp.ConsumeIntInRange(0, 3000))
    return b.build(), 1


def _legacy(fdp, base: int):
    magic = fdp.ConsumeIntInRange(0, 1)
    codec = pick(fdp, (Compression.NONE, Compression.GZIP))
    records = _records(fdp, fdp.ConsumeIntInRange(1, 3))
    b = LegacyBatchBuilder(magic=magic, compression=codec, base_offset=base)
    for value, key, ts, _ in records:
        b.append(value, key, timestamp=None if magic == 0 else max(ts, 0))
    return b.build(), len(records)


def _batch(fdp, base: int):
    """One batch's bytes and how many offsets it takes."""
    kind = fdp.ConsumeIntInRange(0, 10)
    if kind == 9:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 80)), 1
    data, n = _legacy(fdp, base) if kind == 8 else _marker(fdp, base) if kind == 10 else _v2(fdp, base)
    damage = fdp.ConsumeIntInRange(0, 7)
    if damage == 6 and data:                       # a byte changed
        raw = bytearray(data)
        raw[fdp.ConsumeIntInRange(0, len(raw) - 1)] ^= fdp.ConsumeIntInRange(1, 255)
        data = bytes(raw)
    elif damage == 7:                              # cut short
        data = data[:fdp.ConsumeIntInRange(0, len(data))]
    return data, n


def write(fdp, root: str) -> int:
    """The log dir under ``root`` (emptied first); how many segment files it wrote."""
    shutil.rmtree(root, ignore_errors=True)
    files = 0
    for partition in range(fdp.ConsumeIntInRange(1, 2)):
        folder = os.path.join(root, f"{TOPIC}-{partition}")
        os.makedirs(folder)
        nxt = 0
        for _ in range(fdp.ConsumeIntInRange(1, 3)):
            base, parts = nxt, []
            for _ in range(fdp.ConsumeIntInRange(1, 4)):
                data, n = _batch(fdp, nxt)
                parts.append(data)
                nxt += n + fdp.ConsumeIntInRange(0, 1)
            with open(os.path.join(folder, f"{base:020d}.log"), "wb") as fh:
                fh.write(b"".join(parts))
            files += 1
    return files
