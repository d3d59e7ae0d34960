"""Reproducible sample data: a Kafka log directory written with kafkarec's builder.

    python -m kafkarec.sample OUT_DIR [--clean] [--seed N] [--scale N]

Topics and partitions as ``<topic>-<partition>/`` folders of ``%020d.log``
segments: every codec, headers, a transaction that aborts and one that
commits (with their control markers), a compacted partition (offset gaps and
an empty batch), and one batch whose CRC is deliberately broken.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys

from kafkarec._core import RecordBatchBuilder
from kafkarec.enums import Compression, ControlRecordType

BASE_TIME = 1_700_000_000_000
CODECS = list(Compression)


def _value(rng: random.Random, i: int) -> bytes:
    words = ("order", "paid", "shipped", "eur", "usd", "item", "qty", "user", "ok", "retry")
    text = " ".join(rng.choice(words) for _ in range(rng.randint(4, 20)))
    return f'{{"id":{i},"text":"{text}"}}'.encode()


class _Partition:
    """Appends batches to the segments of one partition, rolling segments by size."""

    def __init__(self, root: str, topic: str, partition: int, segment_bytes: int) -> None:
        self.dir = os.path.join(root, f"{topic}-{partition}")
        os.makedirs(self.dir, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.next_offset = 0
        self.file = None
        self.file_size = 0

    def write(self, batch: bytes, next_offset: int) -> None:
        if self.file is None or self.file_size >= self.segment_bytes:
            if self.file:
                self.file.close()
            self.file = open(os.path.join(self.dir, f"{self.next_offset:020d}.log"), "wb")
            self.file_size = 0
        self.file.write(batch)
        self.file_size += len(batch)
        self.next_offset = next_offset

    def close(self) -> None:
        if self.file:
            self.file.close()


def _data_batch(rng, part: _Partition, n: int, codec, *, headers=True, **kw) -> bytes:
    b = RecordBatchBuilder(compression=codec, base_offset=part.next_offset, **kw)
    for i in range(n):
        off = part.next_offset + i
        hs = [("trace-id", b"%016x" % rng.getrandbits(64)), ("source", b"sample")] if headers and i % 3 else []
        b.append(_value(rng, off), key=b"user-%d" % rng.randint(0, 50),
                 timestamp=BASE_TIME + off * 10, headers=hs)
    return b.build()


def generate(root: str, *, seed: int = 7, scale: int = 1) -> dict:
    """Write the sample log directory under ``root``; returns what was written."""
    rng = random.Random(seed)
    written = {"records": 0, "batches": 0, "corrupt_batches": 0}
    os.makedirs(root, exist_ok=True)

    # orders: 3 partitions, every codec, several segments each.
    for p in range(3):
        part = _Partition(root, "orders", p, segment_bytes=64 * 1024)
        for k in range(20 * scale):
            codec = CODECS[(k + p) % len(CODECS)]
            n = rng.randint(20, 200)
            part.write(_data_batch(rng, part, n, codec), part.next_offset + n)
            written["records"] += n
            written["batches"] += 1
        part.close()

    # payments: idempotent transactional producer, one aborted and one committed txn.
    part = _Partition(root, "payments", 0, segment_bytes=1 << 20)
    seq = 0
    for txn, outcome in enumerate((ControlRecordType.ABORT, ControlRecordType.COMMIT, ControlRecordType.COMMIT)):
        for _ in range(2):
            n = 25
            batch = _data_batch(rng, part, n, Compression.LZ4, producer_id=1000, producer_epoch=0,
                                base_sequence=seq, is_transactional=True)
            part.write(batch, part.next_offset + n)
            seq += n
            written["records"] += n
            written["batches"] += 1
        marker = RecordBatchBuilder(base_offset=part.next_offset, producer_id=1000, producer_epoch=0,
                                    is_transactional=True, is_control=True)
        marker.append_control(outcome, {"coordinatorEpoch": 3}, timestamp=BASE_TIME + part.next_offset * 10)
        part.write(marker.build(), part.next_offset + 1)
        written["batches"] += 1
    part.close()

    # compacted: gaps inside batches and an empty batch kept for producer state.
    part = _Partition(root, "compacted", 0, segment_bytes=1 << 20)
    for k in range(6):
        b = RecordBatchBuilder(compression=Compression.ZSTD if k % 2 else Compression.NONE,
                               base_offset=part.next_offset)
        kept = [o for o in range(part.next_offset, part.next_offset + 50) if rng.random() < 0.4]
        for off in kept:
            b.append(_value(rng, off), key=b"key-%d" % (off % 7), timestamp=BASE_TIME + off, offset=off)
        part.write(b.build(), part.next_offset + 50)
        written["records"] += len(kept)
        written["batches"] += 1
    empty = _empty_batch(part.next_offset, 10, producer_id=77, producer_epoch=1, base_sequence=0)
    part.write(empty, part.next_offset + 10)
    written["batches"] += 1
    part.close()

    # clicks: plain data, with one batch whose CRC no longer matches.
    part = _Partition(root, "clicks", 0, segment_bytes=1 << 20)
    for k in range(8):
        batch = bytearray(_data_batch(rng, part, 40, Compression.NONE, headers=False))
        if k == 5:
            batch[-5] ^= 0xFF       # one flipped byte in a value: the CRC catches it
            written["corrupt_batches"] += 1
        else:
            written["records"] += 40
        part.write(bytes(batch), part.next_offset + 40)
        written["batches"] += 1
    part.close()
    return written


def _empty_batch(base_offset: int, span: int, **producer) -> bytes:
    """A 61-byte batch with no records, as the log cleaner keeps for producer state."""
    import struct
    from kafkarec._core import crc32c
    body = struct.pack(">hiqqqhii", 0, span - 1, -1, BASE_TIME + base_offset, producer["producer_id"],
                       producer["producer_epoch"], producer["base_sequence"], 0)
    return struct.pack(">qiibI", base_offset, len(body) + 9, 0, 2, crc32c(body)) + body


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kafkarec.sample", description=__doc__.splitlines()[0])
    ap.add_argument("out", help="directory to write the log directory into")
    ap.add_argument("--clean", action="store_true", help="delete OUT first")
    ap.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    ap.add_argument("--scale", type=int, default=1, help="multiply the data volume (default 1)")
    args = ap.parse_args(argv)
    if args.clean and os.path.isdir(args.out):
        shutil.rmtree(args.out)
    info = generate(args.out, seed=args.seed, scale=args.scale)
    print(f"wrote {info['records']} good records in {info['batches']} batches "
          f"({info['corrupt_batches']} corrupt) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
