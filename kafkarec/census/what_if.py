"""The compression what-if: a partition's committed records re-batched as Kafka's Java producer
batches them, each batch built by kafkarec's batch writer (:class:`kafkarec.RecordBatchBuilder`:
Kafka's framing of every codec) with each codec and level asked for.

Batching: records in offset order, one partition at a time; a batch is closed when the next
record would take it past ``batch_size`` bytes (``batch.size``, 16384 by default), computed
as Kafka's ``MemoryRecordsBuilder.hasRoomFor`` computes it (the first record always fits);
``linger.ms`` plays no part offline.  A compressed batch's size is estimated as the Java
producer estimates it: its uncompressed records times the topic's running compression ratio
for that codec times 1.05 (Kafka's ``CompressionRatioEstimator``: 1.0 at first, after each
batch raised to at least the ratio that batch reached, by 0.05 at least, or lowered by 0.005
towards it), so compressed batches hold more records than ``batch_size`` uncompressed bytes,
as a producer's do.  The producer updates the ratio when its sender drains a batch; here,
when the batch is closed.  ``keep_batches`` keeps the log's own batch boundaries instead.
Offsets start at 0 in each batch and timestamps are the records' own, as a producer writes
them.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from kafkarec.census._scan import base_config, open_scan

__all__ = ["Codec", "parse_codecs", "what_if", "WhatIf", "DEFAULT_BATCH_SIZE"]

#: the Java producer's batch.size default
DEFAULT_BATCH_SIZE = 16384

_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers", "batchBaseOffset")


class Codec(NamedTuple):
    """One codec and level of the what-if: ``name`` as Kafka names it (``compression.type``)."""
    name: str
    level: Optional[int]

    @property
    def label(self) -> str:
        return self.name if self.level is None else f"{self.name}:{self.level}"


def parse_codecs(spec: str) -> List[Codec]:
    """``"zstd:3,zstd:9,lz4,snappy,gzip:6,none"`` as codecs; a codec Kafka has not or a level
    outside its range (KIP-390: gzip 1-9, lz4 1-17, zstd -131072..22; the batch writer's rule)
    is a :class:`kafkarec.errors.UsageError` naming the range."""
    from kafkarec import RecordBatchBuilder
    from kafkarec.enums import Compression
    from kafkarec.errors import EncodeError, UsageError
    out = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        name, sep, level_text = item.partition(":")
        name = name.strip().lower()
        try:
            codec = Compression[name.upper()]
        except KeyError:
            raise UsageError(f"what-if codec {name!r}: one of "
                             f"{', '.join(c.name.lower() for c in Compression)}") from None
        level = None
        if sep:
            try:
                level = int(level_text)
            except ValueError:
                raise UsageError(f"what-if {item!r}: the level is a whole number") from None
        try:
            RecordBatchBuilder(compression=codec, compression_level=level)   # the writer's own check
        except EncodeError as e:
            raise UsageError(f"what-if {item!r}: {e}") from None
        out.append(Codec(name, level))
    if not out:
        raise UsageError("what-if: no codec given")
    return out


def _batch_overhead() -> int:
    """A v2 batch's header, the part its records' compression leaves out (the core's figure)."""
    from kafkarec._core import V2_HEADER_SIZE
    return V2_HEADER_SIZE


class RatioEstimate:
    """Kafka's ``CompressionRatioEstimator`` for one topic and codec: the producer's running
    estimate of a batch's compressed-to-uncompressed ratio, in Java's single precision."""

    def __init__(self) -> None:
        from kafkarec._extras import require
        self._f32 = require("numpy").float32
        self.value = self._f32(1.0)

    def update(self, batch_bytes: int, uncompressed_records: int) -> None:
        """After a batch of ``batch_bytes`` whose records took ``uncompressed_records`` bytes."""
        f32 = self._f32
        observed = f32(batch_bytes - _batch_overhead()) / f32(uncompressed_records)
        if observed > self.value:
            self.value = max(self.value + f32(0.05), observed)
        elif observed < self.value:
            self.value = max(self.value - f32(0.005), observed)


def _varint_size(n: int) -> int:
    """Bytes of ``n`` as Kafka's zigzag varint."""
    z = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def _batch_upper_bound(value, key, headers) -> int:
    """Kafka's ``AbstractRecords.estimateSizeInBytesUpperBound`` of a v2 batch holding this record
    alone (its header, the record's 21-byte overhead bound, its key, value and headers): the
    producer's buffer for a batch is at least this, so a record larger than ``batch.size`` gets a
    batch of its own size, which takes more records while they fit."""
    size = _batch_overhead() + 21
    for field in (key, value):
        size += 1 if field is None else _varint_size(len(field)) + len(field)
    size += _varint_size(len(headers))
    for name, data in headers:
        encoded = name.encode() if isinstance(name, str) else name
        size += _varint_size(len(encoded)) + len(encoded)
        size += 1 if data is None else _varint_size(len(data)) + len(data)
    return size


class _Writer:
    """One codec's batches of one partition: bytes, batches, time spent building."""

    def __init__(self, codec: Codec, batch_size: Optional[int], ratio: Optional[RatioEstimate] = None,
                 sink: Optional[List[bytes]] = None):
        from kafkarec._core import zstd_context
        from kafkarec.enums import Compression
        self.codec = codec
        self.compression = Compression[codec.name.upper()]
        self.batch_size = batch_size
        self.ratio = ratio
        self.bytes = self.batches = 0
        self.seconds = 0.0
        self.builder: Any = None
        self.batch_bytes: List[int] = []        # each batch's size and records, in order
        self.batch_records: List[int] = []
        self.sink = sink                        # each batch's bytes, when kept (the Java oracle's test)
        # zstd's context made once for all this writer's batches, its memory given back with the
        # writer (a context of zstd 19-22 holds 90-850 MB; the core frees it per batch otherwise)
        self.context = zstd_context(codec.level) if codec.name == "zstd" else None

    def _new(self, value, key, headers):
        from kafkarec import RecordBatchBuilder
        # the producer's write limit: its buffer, batch.size or the first record's upper bound
        limit = None if self.batch_size is None else max(self.batch_size, _batch_upper_bound(value, key, headers))
        self.builder = RecordBatchBuilder(compression=self.compression, compression_level=self.codec.level,
                                          max_batch_size=limit,
                                          estimated_compression_ratio=1.0 if self.ratio is None
                                          else float(self.ratio.value))

    def append(self, value, key, timestamp, headers) -> None:
        if self.builder is None:
            self._new(value, key, headers)
        elif self.batch_size is not None and not self.builder.has_room_for(value, key, timestamp=timestamp,
                                                                           headers=headers):
            self.close()
            self._new(value, key, headers)
        self.builder.append(value, key, timestamp=timestamp, headers=headers)

    def append_all(self, records: List[tuple], starts: List[int]) -> None:
        """``records`` (value, key, timestamp, headers) in order; a batch is closed before each
        index of ``starts`` (the log's own boundaries, with ``keep_batches``)."""
        append = self.append
        cut = 0
        for start in starts + [len(records)]:
            for value, key, timestamp, headers in records[cut:start]:
                append(value, key, timestamp, headers)
            if start < len(records):
                self.close()
            cut = start

    def close(self) -> None:
        if self.builder is not None and self.builder.record_count:
            uncompressed = self.builder.size_in_bytes - _batch_overhead()
            t0 = time.perf_counter()
            data = self.builder.build()
            self.seconds += time.perf_counter() - t0
            if self.ratio is not None:
                self.ratio.update(len(data), uncompressed)
            self.bytes += len(data)
            self.batches += 1
            self.batch_bytes.append(len(data))
            self.batch_records.append(self.builder.record_count)
            if self.sink is not None:
                self.sink.append(data)
        self.builder = None


class WhatIf:
    """The what-if's running state: handed the committed records partition by partition, in log
    order (:meth:`add`: a read_committed read's record batches, error rows too), from the census's
    one pass (:func:`kafkarec.census.census`'s ``what_if``) or a read of its own (:func:`what_if`);
    :meth:`result` is the document."""

    def __init__(self, codecs: Sequence[Codec], *, batch_size: int = DEFAULT_BATCH_SIZE, keep_batches: bool = False,
                 detail: bool = False):
        from kafkarec.errors import UsageError
        if not keep_batches and batch_size <= 0:
            raise UsageError(f"batch size {batch_size}: at least 1")
        self.codecs = list(codecs)
        self.every = list(codecs)
        if not any(c.name == "none" for c in self.every):
            self.every.append(Codec("none", None))
        self.batch_size = batch_size
        self.keep_batches = keep_batches
        self.detail = detail
        self.limit = None if keep_batches else batch_size
        self.parts: Dict[Tuple, Dict[Codec, _Writer]] = {}
        # the producer's estimate is per topic and codec, across the topic's partitions
        self.ratios: Dict[Tuple, RatioEstimate] = {}
        self.last_base: Dict[Tuple, int] = {}
        self.errors: List[dict] = []

    def add(self, tp: Tuple, rb) -> None:
        """The next record batch (pyarrow) of topic-partition ``tp``'s committed records."""
        if tp not in self.parts:
            self.parts[tp] = {c: _Writer(c, self.limit, None if c.name == "none" or self.limit is None
                                         else self.ratios.setdefault((tp[0], c), RatioEstimate()))
                              for c in self.every}
        writers = self.parts[tp]
        keep_batches, last_base = self.keep_batches, self.last_base
        # the times as the integers they are, never as pyarrow's datetimes: those hold no
        # time past the year 9999, Kafka's longs do
        stamps = rb.column(rb.schema.get_field_index("timestamp")).cast("int64").to_pylist()
        d = rb.select([c for c in _COLUMNS if c != "timestamp"] + ["_corrupt_record"]).to_pydict()
        records, starts = [], []            # starts: where the log's own batches begin
        for i in range(rb.num_rows):
            if d["_corrupt_record"][i] is not None:
                self.errors.append({"topic": tp[0], "partition": tp[1], "message": d["_corrupt_record"][i]})
                continue
            if keep_batches and last_base.get(tp) != d["batchBaseOffset"][i]:
                starts.append(len(records))
                last_base[tp] = d["batchBaseOffset"][i]
            records.append((d["value"][i], d["key"][i], stamps[i],
                            [(h["key"], h["value"]) for h in (d["headers"][i] or ())]))
        # One codec at a time over the whole record batch, not every codec per record: a
        # compressor's state (zstd's tables and window, zlib's) then stays in the CPU's
        # caches from one of its batches to the next; the bytes are the same.
        for w in writers.values():
            w.append_all(records, starts)

    def mark(self, tp: Tuple) -> tuple:
        """What :meth:`rewind` needs to take back every record handed for ``tp`` from here on: the
        topic's running ratios (the producer's estimate, shared by its partitions), ``tp``'s last
        batch and the errors so far.  ``tp`` is one no record was handed for yet."""
        ratios = {k: r.value for k, r in self.ratios.items() if k[0] == tp[0]}
        return ratios, self.last_base.get(tp), len(self.errors)

    def rewind(self, tp: Tuple, mark: tuple) -> None:
        """Take back what was handed for ``tp`` since :meth:`mark` (a census pass of a partition
        that turned out damaged, whose records a read of their own hands again)."""
        ratios, last_base, errors = mark
        self.parts.pop(tp, None)
        for k, value in ratios.items():
            self.ratios[k].value = value
        for k in [k for k in self.ratios if k[0] == tp[0] and k not in ratios]:
            del self.ratios[k]
        if last_base is None:
            self.last_base.pop(tp, None)
        else:
            self.last_base[tp] = last_base
        del self.errors[errors:]

    def result(self) -> dict:
        """The document (see :func:`what_if`)."""
        every, codecs = self.every, self.codecs
        totals: Dict[Codec, List[float]] = {c: [0, 0, 0.0] for c in every}
        rows = []
        for (topic, partition), writers in self.parts.items():
            row = {"topic": topic, "partition": partition, "codecs": []}
            for c, w in writers.items():
                w.close()
                t = totals[c]
                t[0] += w.batches
                t[1] += w.bytes
                t[2] += w.seconds
                row["codecs"].append({"codec": c.label, "batches": w.batches, "bytes": w.bytes,
                                      **({"batch_bytes": w.batch_bytes, "batch_records": w.batch_records}
                                         if self.detail else {})})
            rows.append(row)
        plain = next(t[1] for c, t in totals.items() if c.name == "none")
        out = [{"codec": c.label, "batches": int(totals[c][0]), "bytes": int(totals[c][1]),
                "ratio": (plain / totals[c][1]) if totals[c][1] else None, "compress_seconds": totals[c][2]}
               for c in every if c in codecs or c.name == "none"]
        return {"batch_size": None if self.keep_batches else self.batch_size, "keep_batches": self.keep_batches,
                "codecs": out, "partitions": rows, "errors": self.errors}


def what_if(source, codecs: Sequence[Codec], *, batch_size: int = DEFAULT_BATCH_SIZE, keep_batches: bool = False,
            bounds=None, selection=None, storage_options: Optional[dict] = None,
            tiered_storage: Optional[str] = None, detail: bool = False,
            progress: Optional[Callable[[int, int], None]] = None) -> dict:
    """The committed records of ``source`` re-batched and written with each of ``codecs`` (see
    the module doc).  Returns ``{"batch_size", "keep_batches", "codecs": [{"codec", "batches",
    "bytes", "ratio", "compress_seconds"}], "partitions": [...]}``: ``ratio`` is the bytes
    without compression (``none``, always computed) over the codec's bytes; ``detail``: each
    partition's codecs also give ``batch_bytes`` and ``batch_records``, batch by batch;
    ``progress(done, total)``: bytes of the pieces read so far, of all.  (A census asked for
    the what-if too re-batches the records of its own pass: :func:`kafkarec.census.census`'s
    ``what_if``.)"""
    state = WhatIf(codecs, batch_size=batch_size, keep_batches=keep_batches, detail=detail)
    config = base_config(source, bounds=bounds, selection=selection, storage_options=storage_options,
                         tiered_storage=tiered_storage)
    scan = open_scan(config, read_committed=True, columns=_COLUMNS)
    pieces = list(scan.pieces())
    total, done = sum(p.bytes for p in pieces), 0
    for piece in pieces:
        tp = (piece.topic, piece.partition)
        for rb in scan.read_piece(piece):
            state.add(tp, rb)
        done += piece.bytes
        if progress is not None:
            progress(done, total)
    return state.result()
