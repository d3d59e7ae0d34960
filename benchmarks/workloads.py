"""Reproducible Kafka v2 record-batch workloads for the kafkarec benchmarks.

The bytes are produced by kafka-python's pure-Python builder
(``kafka.record.memory_records.MemoryRecordsBuilder``), so they do not depend on
kafkarec.  Everything is derived from a fixed seed: the same ``WorkloadSpec``
always yields the same bytes (given the same kafka-python and codec library
versions -- compressed output may differ across library versions, the
records themselves never do).

Each batch holds ``records_per_batch`` records (1000 by default).  The builder
writes base offset 0 into every batch, as a producer does; like a broker, we
then stamp the base offset and partition leader epoch into the header (both lie
outside the CRC-covered range, so the CRC stays valid).

Codec variants of a workload share its ``record_seed`` and so hold exactly the
same records as the uncompressed workload; the benchmark uses this to compare
"decode compressed" with "decompress + decode uncompressed".
"""
from __future__ import annotations

import random
import struct
import zlib
from dataclasses import dataclass, field

from kafka.record.memory_records import MemoryRecordsBuilder

SEED = 0x4B41464B  # "KAFK"

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}

V2_HEADER_SIZE = 61
CRC_START = 21  # CRC-32C covers bytes 21..end of a v2 batch
BASE_TIMESTAMP = 1_700_000_000_000


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    value_size: int
    n_batches: int
    key_size: int = 16
    n_headers: int = 0
    codec: str = "none"
    records_per_batch: int = 1000
    record_seed: str = ""  # records are identical for specs sharing this

    @property
    def seed_name(self) -> str:
        return self.record_seed or self.name


@dataclass
class Workload:
    spec: WorkloadSpec
    data: bytes
    batch_ranges: list          # (start, end) of each batch in `data`
    n_records: int
    uncompressed_bytes: int     # sum of batch sizes had the batches been uncompressed
    checksum: int               # checksum_records() over the generated records
    extra: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def codec(self) -> str:
        return self.spec.codec

    @property
    def n_batches(self) -> int:
        return len(self.batch_ranges)

    def crc_ranges(self):
        """(start, end) of the CRC-32C-covered bytes of each batch."""
        return [(s + CRC_START, e) for s, e in self.batch_ranges]

    def payload_ranges(self):
        """(start, end) of the records section (compressed if the batch is) of each batch."""
        return [(s + V2_HEADER_SIZE, e) for s, e in self.batch_ranges]


def _stable_seed(*parts) -> int:
    return zlib.crc32(repr((SEED,) + parts).encode()) & 0xFFFFFFFF


# --- record content ------------------------------------------------------------

_CORPUS_CACHE: dict = {}


def _corpus(rng_seed: int, size: int = 1 << 21) -> bytes:
    """~2 MiB of printable pseudo-text: words from a 3000-word vocabulary with a
    Zipf-ish frequency skew, some numbers and punctuation.  Compresses roughly
    like log lines or JSON text (2-4x), not like random bytes or zeros."""
    key = (rng_seed, size)
    if key in _CORPUS_CACHE:
        return _CORPUS_CACHE[key]
    rng = random.Random(rng_seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(3000)]
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(vocab))]
    out = []
    total = 0
    while total < size:
        words = rng.choices(vocab, weights=weights, k=4096)
        for j in range(0, 4096, 16):
            words[j] = str(rng.randrange(100000))
        for j in range(7, 4096, 23):
            words[j] = words[j] + rng.choice(",.;:")
        chunk = " ".join(words) + " "
        out.append(chunk)
        total += len(chunk)
    corpus = "".join(out).encode("ascii")[:size]
    _CORPUS_CACHE[key] = corpus
    return corpus


_EVENT_TYPES = ("click", "view", "purchase", "login", "logout", "search", "add_to_cart", "error")
_SOURCES = [b"svc-%02d" % i for i in range(12)]


def generate_records(spec: WorkloadSpec):
    """The records of a workload: a list of batches, each a list of
    (timestamp, key, value, headers) tuples."""
    rng = random.Random(_stable_seed("records", spec.seed_name))
    corpus = _corpus(_stable_seed("corpus"))
    clen = len(corpus)
    vsize = spec.value_size
    batches = []
    ts = BASE_TIMESTAMP
    seq = 0
    for _ in range(spec.n_batches):
        recs = []
        for _ in range(spec.records_per_batch):
            ts += rng.randrange(0, 4)
            seq += 1
            # Keys: a bounded key space (think user ids), so some keys repeat.
            key = (b"user-%011d" % rng.randrange(200_000))[: spec.key_size].ljust(spec.key_size, b"_")
            prefix = b'{"seq":%d,"type":"%s","text":"' % (seq, _EVENT_TYPES[rng.randrange(8)].encode())
            if vsize <= len(prefix):
                off = rng.randrange(clen - vsize)
                value = corpus[off:off + vsize]
            else:
                n = vsize - len(prefix)
                # Long values may wrap around the corpus.
                chunks = []
                while n > 0:
                    off = rng.randrange(clen - 1)
                    take = min(n, clen - off)
                    chunks.append(corpus[off:off + take])
                    n -= take
                value = prefix + b"".join(chunks)
            headers = []
            if spec.n_headers:
                headers = [
                    ("trace-id", b"%016x" % rng.getrandbits(64)),
                    ("content-type", b"application/json"),
                    ("source", _SOURCES[rng.randrange(len(_SOURCES))]),
                ][: spec.n_headers]
                for i in range(3, spec.n_headers):
                    headers.append((f"x-extra-{i}", b"%d" % rng.randrange(1000)))
            recs.append((ts, key, value, headers))
        batches.append(recs)
    return batches


def checksum_records(rows) -> tuple:
    """(count, checksum) over an iterable of (offset, timestamp, key, value, headers).

    Every decoder in the benchmark is checked against this; headers may be any
    sequence of (str, bytes | None) pairs."""
    n = 0
    c = 0
    osum = 0
    tsum = 0
    crc = zlib.crc32
    for offset, timestamp, key, value, headers in rows:
        n += 1
        osum += offset
        tsum += timestamp
        c = crc(key if key is not None else b"\xff<null>", c)
        c = crc(value if value is not None else b"\xff<null>", c)
        for hk, hv in headers:
            c = crc(hk.encode("utf-8"), c)
            c = crc(hv if hv is not None else b"\xff<null>", c)
    return n, (c, osum & 0xFFFFFFFFFFFFFFFF, tsum & 0xFFFFFFFFFFFFFFFF)


# --- building batches ------------------------------------------------------------

_RECORD_CACHE: dict = {}


def _records_for(spec: WorkloadSpec):
    key = (spec.seed_name, spec.value_size, spec.key_size, spec.n_headers,
           spec.n_batches, spec.records_per_batch)
    if key not in _RECORD_CACHE:
        _RECORD_CACHE[key] = generate_records(spec)
    return _RECORD_CACHE[key]


def build_workload(spec: WorkloadSpec, *, leader_epoch: int = 7) -> Workload:
    codec_id = CODEC_IDS[spec.codec]
    batches = _records_for(spec)
    parts = []
    ranges = []
    pos = 0
    base_offset = 0
    uncompressed = 0
    expected_rows = []
    for recs in batches:
        builder = MemoryRecordsBuilder(magic=2, compression_type=codec_id, batch_size=1 << 30)
        for ts, key, value, headers in recs:
            if builder.append(ts, key, value, headers) is None:
                raise RuntimeError("kafka-python builder refused a record (batch_size too small)")
        builder.close()
        raw = bytearray(builder.buffer())
        uncompressed += builder._bytes_written  # size before compression
        # What a broker does on append: assign offsets, stamp the leader epoch.
        struct.pack_into(">q", raw, 0, base_offset)
        struct.pack_into(">i", raw, 12, leader_epoch)
        attrs = struct.unpack_from(">h", raw, 21)[0]
        if (attrs & 0x07) != codec_id:
            raise RuntimeError(f"{spec.name}: kafka-python stored the batch with codec "
                               f"{attrs & 7}, not {codec_id} (compression did not pay off?)")
        for i, (ts, key, value, headers) in enumerate(recs):
            expected_rows.append((base_offset + i, ts, key, value, headers))
        parts.append(bytes(raw))
        ranges.append((pos, pos + len(raw)))
        pos += len(raw)
        base_offset += len(recs)
    data = b"".join(parts)
    n, chk = checksum_records(expected_rows)
    return Workload(spec=spec, data=data, batch_ranges=ranges, n_records=n,
                    uncompressed_bytes=uncompressed, checksum=chk)


def default_specs(scale: float = 1.0):
    """The benchmark's workloads.  `scale` shrinks the number of batches
    (``--quick`` uses a smaller scale); records per batch stay at 1000."""
    def nb(n, minimum=1):
        return max(minimum, int(round(n * scale)))

    base = dict(value_size=100, n_batches=nb(160, 4), record_seed="100B")
    specs = [
        WorkloadSpec(name="100B", **base),
        WorkloadSpec(name="headers", value_size=100, n_batches=nb(100, 4), n_headers=3),
        WorkloadSpec(name="tiny", value_size=10, n_batches=nb(300, 8)),
        WorkloadSpec(name="10KiB", value_size=10 * 1024, n_batches=nb(3, 1)),
    ]
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        specs.append(WorkloadSpec(name=f"100B-{codec}", codec=codec, **base))
    return specs
