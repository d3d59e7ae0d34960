"""Write Kafka log directories for tests, the way a broker writes them.

Batches come from kafka-python's builders (an implementation independent of
kafkarec); control batches (transaction markers) and compacted empty batches
are built by hand, since clients never write them.  :class:`PartitionWriter`
then does what ``UnifiedLog``/``LogSegment`` do on append:

* assigns offsets: patches the v2 base offset and partition leader epoch
  (both outside the CRC), and for legacy wrappers the wrapper offset (= last
  offset) and, for magic 1, the wrapper timestamp (inside the CRC, so the
  CRC-32 is recomputed), as LogValidator does in place;
* rolls segments at ``segment_bytes``;
* builds ``.index``/``.timeindex`` like ``LogSegment.append``: before an
  append, if more than ``index_interval_bytes`` were written since the last
  entry, add ``(batch last offset, batch position)`` and the largest
  timestamp so far with its batch's last offset; on roll/close append the
  largest timestamp once more (if new) and trim;
* writes ``.txnindex`` entries for aborted transactions with
  ``lastStableOffset`` as ``ProducerStateManager.lastStableOffset``;
* takes a producer state snapshot ``<new base>.snapshot`` on every roll;
* keeps ``leader-epoch-checkpoint`` and ``partition.metadata``.

``close(crash=True)`` leaves the active segment's indexes untrimmed (zero
tail, no final time index entry) as after an unclean shutdown.
"""
from __future__ import annotations

import base64
import os
import struct
from dataclasses import dataclass, field
from typing import List

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from support.oracles import reference as R
from support.oracles.reference import CODEC_IDS, crc32c

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


# --- batches -------------------------------------------------------------------

def v2_batch(records, *, codec="none", producer_id=-1, producer_epoch=-1, base_sequence=-1,
             transactional=False, offset_deltas=None) -> bytes:
    """A v2 batch from kafka-python's builder; records are (timestamp, key, value, headers)."""
    b = DefaultRecordBatchBuilder(2, CODEC_IDS[codec], transactional, producer_id, producer_epoch,
                                  base_sequence, 1 << 30)
    for i, (ts, key, value, headers) in enumerate(records):
        delta = i if offset_deltas is None else offset_deltas[i]
        assert b.append(delta, ts, key, value, headers or []) is not None
    return bytes(b.build())


def legacy_batch(magic, records, *, codec="none") -> bytes:
    """Legacy messages from kafka-python; records are (timestamp, key, value).

    Uncompressed: one entry per record with offsets 0..n-1 (re-based by the
    writer).  Compressed: one wrapper whose inner offsets are relative
    (0..n-1), as producers write them.
    """
    b = LegacyRecordBatchBuilder(magic, CODEC_IDS[codec], 1 << 30)
    for i, (ts, key, value) in enumerate(records):
        assert b.append(i, ts, key, value) is not None
    return bytes(b.build())


def control_batch(kind: int, *, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                  timestamp: int) -> bytes:
    """An end-transaction marker batch: attributes 0x30 (transactional | control).

    key = int16 version 0 + int16 type, value = int16 version 0 + int32 coordinator epoch.
    """
    return R.control_record_batch(R.control_key(kind), R.end_txn_value(coordinator_epoch),
                                  timestamp=timestamp, attributes=0x30, partition_leader_epoch=0,
                                  producer_id=producer_id, producer_epoch=producer_epoch)


def kraft_control_batch(records: list, *, timestamp: int) -> bytes:
    """A KRaft control batch (attributes 0x20); records are (type, value bytes)."""
    body = b"".join(R.encode_record(i, 0, R.control_key(kind), value)
                    for i, (kind, value) in enumerate(records))
    return R.v2_batch(body, record_count=len(records), last_offset_delta=len(records) - 1,
                      base_timestamp=timestamp, max_timestamp=timestamp, attributes=0x20,
                      partition_leader_epoch=0)


def empty_batch(span: int, *, max_timestamp: int, producer_id=-1, producer_epoch=-1,
                base_sequence=-1, transactional=False) -> bytes:
    """What the log cleaner keeps of a batch whose records all went: 61 bytes, count 0."""
    return R.v2_batch(b"", record_count=0, last_offset_delta=span - 1, base_timestamp=-1,
                      max_timestamp=max_timestamp, attributes=0x10 if transactional else 0,
                      producer_id=producer_id, producer_epoch=producer_epoch,
                      base_sequence=base_sequence, partition_leader_epoch=0)


def _legacy_entries(data: bytes):
    pos = 0
    while pos + 12 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0]
        yield pos, size + 12
        pos += size + 12


def _legacy_inner_count(entry: bytes) -> int:
    """How many inner messages a kafka-python legacy wrapper holds (decompressing it)."""
    magic, attrs = entry[16], entry[17]
    key_at = 18 if magic == 0 else 26
    klen = struct.unpack_from(">i", entry, key_at)[0]
    vat = key_at + 4 + max(klen, 0)
    vlen = struct.unpack_from(">i", entry, vat)[0]
    value = entry[vat + 4: vat + 4 + vlen]
    codec = attrs & 7
    from kafka import codec as kc
    inner = {1: kc.gzip_decode, 2: kc.snappy_decode,
             3: kc.lz4_decode_old_kafka if magic == 0 else kc.lz4_decode}[codec](value)
    return sum(1 for _ in _legacy_entries(inner)), inner


# --- side files -------------------------------------------------------------------

def write_offset_index(path, base_offset, entries, *, preallocated_slots=0):
    with open(path, "wb") as fh:
        for offset, position in entries:
            fh.write(struct.pack(">ii", offset - base_offset, position))
        fh.write(bytes(8 * preallocated_slots))


def write_time_index(path, base_offset, entries, *, preallocated_slots=0):
    with open(path, "wb") as fh:
        for timestamp, offset in entries:
            fh.write(struct.pack(">qi", timestamp, offset - base_offset))
        fh.write(bytes(12 * preallocated_slots))


def write_txn_index(path, entries, *, version=0):
    """entries: (producer_id, first_offset, last_offset, last_stable_offset)."""
    with open(path, "wb") as fh:
        for e in entries:
            fh.write(struct.pack(">hqqqq", version, *e))


def producer_snapshot_bytes(entries, *, version=1, crc=None) -> bytes:
    """entries: (producerId, epoch, lastSeq, lastOffset, offsetDelta, timestamp,
    coordinatorEpoch, currentTxnFirstOffset)."""
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    if crc is None:
        crc = crc32c(body)
    return struct.pack(">hI", version, crc) + body


def write_leader_epoch_checkpoint(path, entries, *, version=0, count=None):
    lines = [str(version), str(len(entries) if count is None else count)]
    lines += [f"{epoch} {start}" for epoch, start in entries]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def write_partition_metadata(path, topic_id_bytes: bytes, *, version=0):
    tid = base64.urlsafe_b64encode(topic_id_bytes).rstrip(b"=").decode()
    with open(path, "w") as fh:
        fh.write(f"version: {version}\ntopic_id: {tid}")


# --- the partition writer ------------------------------------------------------

@dataclass
class Appended:
    """What the writer put where (for assertions)."""
    segment_base: int
    position: int
    size: int
    base_offset: int
    last_offset: int
    magic: int
    leader_epoch: int
    max_timestamp: int
    raw: bytes


@dataclass
class _Producer:
    epoch: int = -1
    last_seq: int = -1
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    txn_first_offset: int = -1


@dataclass
class _Segment:
    base: int
    data: bytearray = field(default_factory=bytearray)
    index: list = field(default_factory=list)
    timeindex: list = field(default_factory=list)
    txns: list = field(default_factory=list)
    bytes_since_index: int = 0
    max_ts: int = -1
    max_ts_offset: int = -1


class PartitionWriter:
    def __init__(self, root, topic, partition, *, segment_bytes=64 * 1024,
                 index_interval_bytes=4096, leader_epoch=0, topic_id: bytes = None,
                 max_index_slots=128):
        self.dir = os.path.join(root, f"{topic}-{partition}")
        os.makedirs(self.dir, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.leader_epoch = leader_epoch
        self.epochs: List[tuple] = []
        self.max_index_slots = max_index_slots
        self.next_offset = 0
        self.segments: List[_Segment] = []
        self.appended: List[Appended] = []
        self.producers = {}
        self.snapshots = {}
        self._new_segment()
        if topic_id is not None:
            write_partition_metadata(os.path.join(self.dir, "partition.metadata"), topic_id)

    # -- appending --------------------------------------------------------
    @property
    def active(self) -> _Segment:
        return self.segments[-1]

    def _new_segment(self):
        self.segments.append(_Segment(self.next_offset))

    def set_leader_epoch(self, epoch: int):
        self.leader_epoch = epoch

    def append(self, raw: bytes, *, skip_offsets: int = 0) -> Appended:
        """Append one client batch (or legacy message set); returns where it went."""
        self.next_offset += skip_offsets
        raw = bytearray(raw)
        magic = raw[16]
        if magic >= 2:
            last_delta = struct.unpack_from(">i", raw, 23)[0]
            base = self.next_offset
            struct.pack_into(">q", raw, 0, base)
            struct.pack_into(">i", raw, 12, self.leader_epoch)
            last = base + last_delta
            max_ts = struct.unpack_from(">q", raw, 35)[0]
            entries = [raw]
        else:
            entries = []
            base = self.next_offset
            last = base - 1
            max_ts = -1
            for pos, size in _legacy_entries(bytes(raw)):
                entry = bytearray(raw[pos:pos + size])
                if entry[17] & 7:   # compressed wrapper
                    n, inner = _legacy_inner_count(bytes(entry))
                    if magic == 0:
                        raise ValueError("compressed magic 0 sets need absolute inner offsets; "
                                         "not supported by this writer")
                    last += n
                    struct.pack_into(">q", entry, 0, last)
                    inner_ts = [struct.unpack_from(">q", inner, p + 18)[0]
                                for p, _ in _legacy_entries(inner)]
                    ts = max(inner_ts)
                    struct.pack_into(">q", entry, 18, ts)   # CreateTime wrapper = max inner timestamp
                    entry = bytearray(R.with_legacy_crc(entry))
                    max_ts = max(max_ts, ts)
                else:
                    last += 1
                    struct.pack_into(">q", entry, 0, last)
                    if magic == 1:
                        max_ts = max(max_ts, struct.unpack_from(">q", entry, 18)[0])
                entries.append(entry)
        if magic >= 2 and (not self.epochs or self.epochs[-1][0] < self.leader_epoch):
            self.epochs.append((self.leader_epoch, base))
        first_info = None
        for entry in entries:
            info = self._append_entry(bytes(entry), magic)
            first_info = first_info or info
        self.next_offset = last + 1
        self._producer_state(bytes(entries[0]), magic, base, last)
        return first_info if len(entries) == 1 else self.appended[-len(entries)]

    def _append_entry(self, entry: bytes, magic: int) -> Appended:
        if self.active.data and len(self.active.data) + len(entry) > self.segment_bytes:
            self.roll()
        seg = self.active
        position = len(seg.data)
        last = struct.unpack_from(">q", entry, 0)[0] + (struct.unpack_from(">i", entry, 23)[0] if magic >= 2 else 0)
        first = struct.unpack_from(">q", entry, 0)[0] if magic >= 2 else last
        max_ts = struct.unpack_from(">q", entry, 35)[0] if magic >= 2 else (
            struct.unpack_from(">q", entry, 18)[0] if magic == 1 else -1)
        # LogSegment.append: the largest timestamp so far, then maybe an index entry.
        if max_ts > seg.max_ts:
            seg.max_ts, seg.max_ts_offset = max_ts, last
        if seg.bytes_since_index > self.index_interval_bytes:
            seg.index.append((last, position))
            self._time_entry(seg)
            seg.bytes_since_index = 0
        seg.bytes_since_index += len(entry)
        seg.data += entry
        info = Appended(seg.base, position, len(entry), first, last, magic,
                        self.leader_epoch if magic >= 2 else -1, max_ts, entry)
        self.appended.append(info)
        return info

    @staticmethod
    def _time_entry(seg: _Segment):
        # TimeIndex.maybeAppend: only a timestamp larger than the last entry's.
        last_ts = seg.timeindex[-1][0] if seg.timeindex else -1
        if seg.max_ts > last_ts:
            seg.timeindex.append((seg.max_ts, seg.max_ts_offset))

    def _producer_state(self, raw: bytes, magic: int, base: int, last: int):
        if magic < 2:
            return
        attrs = struct.unpack_from(">h", raw, 21)[0]
        pid, epoch, base_seq = struct.unpack_from(">qhi", raw, 43)
        if pid < 0:
            return
        p = self.producers.setdefault(pid, _Producer())
        p.epoch = epoch
        if attrs & 0x20:  # control: end of a transaction
            key_type = struct.unpack_from(">h", raw, len(raw) - 10)[0]
            coordinator_epoch = struct.unpack_from(">i", raw, len(raw) - 1 - 4)[0]
            first = p.txn_first_offset
            p.coordinator_epoch = coordinator_epoch
            p.txn_first_offset = -1
            if key_type == CONTROL_ABORT and first >= 0:
                lso = min((q.txn_first_offset for q in self.producers.values() if q.txn_first_offset >= 0),
                          default=last + 1)
                self.active.txns.append((pid, first, last, lso))
            return
        delta = last - base
        p.last_seq = base_seq + delta if base_seq >= 0 else -1
        p.last_offset = last
        p.offset_delta = delta
        p.timestamp = struct.unpack_from(">q", raw, 35)[0]
        if attrs & 0x10 and p.txn_first_offset < 0:
            p.txn_first_offset = base

    # -- transactions ---------------------------------------------------------
    def end_txn(self, kind: int, producer_id: int, *, coordinator_epoch=0, timestamp=0) -> Appended:
        epoch = self.producers[producer_id].epoch
        return self.append(control_batch(kind, producer_id=producer_id, producer_epoch=epoch,
                                         coordinator_epoch=coordinator_epoch, timestamp=timestamp))

    # -- segments -----------------------------------------------------------------
    def roll(self):
        """What Log.roll does: close the active segment, snapshot producers, start a new one."""
        self._flush_segment(self.active, trim=True)
        self._new_segment()
        self.take_snapshot(self.next_offset)

    def take_snapshot(self, offset):
        entries = [(pid, p.epoch, p.last_seq, p.last_offset, p.offset_delta, p.timestamp,
                    p.coordinator_epoch, p.txn_first_offset) for pid, p in sorted(self.producers.items())]
        path = os.path.join(self.dir, f"{offset:020d}.snapshot")
        with open(path, "wb") as fh:
            fh.write(producer_snapshot_bytes(entries))
        self.snapshots[offset] = entries

    def _flush_segment(self, seg: _Segment, *, trim: bool):
        name = os.path.join(self.dir, f"{seg.base:020d}")
        with open(name + ".log", "wb") as fh:
            fh.write(seg.data)
        tail = 0 if trim else max(0, self.max_index_slots - len(seg.index))
        time_entries = list(seg.timeindex)
        if trim:
            # onBecomeInactiveSegment / close: the largest timestamp once more, if new.
            last_ts = time_entries[-1][0] if time_entries else -1
            if seg.max_ts > last_ts:
                time_entries.append((seg.max_ts, seg.max_ts_offset))
            seg.timeindex = time_entries
        write_offset_index(name + ".index", seg.base, seg.index, preallocated_slots=tail)
        write_time_index(name + ".timeindex", seg.base, time_entries,
                         preallocated_slots=0 if trim else max(0, self.max_index_slots - len(time_entries)))
        if seg.txns:
            write_txn_index(name + ".txnindex", seg.txns)

    def close(self, *, crash: bool = False, truncate_tail: int = 0):
        """Write everything out.  ``crash``: leave the active indexes untrimmed.

        ``truncate_tail``: cut that many bytes off the active segment's end, as a
        write interrupted by a crash leaves it.
        """
        seg = self.active
        if truncate_tail:
            del seg.data[len(seg.data) - truncate_tail:]
        self._flush_segment(seg, trim=not crash)
        if not crash and self.producers:
            self.take_snapshot(self.next_offset)   # UnifiedLog.close snapshots producer state
        if self.epochs:
            write_leader_epoch_checkpoint(os.path.join(self.dir, "leader-epoch-checkpoint"), self.epochs)
        return self

    # -- corruption -------------------------------------------------------------------
    def log_path(self, base: int) -> str:
        return os.path.join(self.dir, f"{base:020d}.log")

    def corrupt(self, appended: Appended, at: int = -3, xor: int = 0xFF):
        """Flip a byte of an appended batch in its (already written) segment file."""
        path = self.log_path(appended.segment_base)
        with open(path, "r+b") as fh:
            where = appended.position + (at if at >= 0 else appended.size + at)
            fh.seek(where)
            b = fh.read(1)[0]
            fh.seek(where)
            fh.write(bytes([b ^ xor]))
        return where


def sample_records(n, *, start_ts=1_700_000_000_000, key_prefix=b"k", size=40, headers=True):
    """n records (timestamp, key, value, headers) with predictable content."""
    out = []
    for i in range(n):
        hs = [("trace", b"t%d" % i), ("src", b"test")] if headers and i % 2 else []
        value = (b"value-%d-" % i) + b"x" * size
        out.append((start_ts + i, key_prefix + b"%d" % (i % 7), value, hs))
    return out


# --- a standard log directory ------------------------------------------------------

T0 = 1_700_000_000_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def build_log_dir(root) -> dict:
    """Several topics and partitions, as a broker would have left them after a clean shutdown.

    * ``web-clicks`` (a dash in the name): 3 partitions, 16 KiB segments (several
      each), every codec, headers, a leader epoch change;
    * ``legacy-0``: magic 0 and 1 messages, plain and in gzip/snappy/lz4 wrappers;
    * ``payments-0``: two transactional producers (one commit, one abort,
      interleaved) and an idempotent one, with markers and a ``.txnindex``;
    * ``compacted-0``: offset gaps inside and between batches and an empty batch.

    Returns the writers by partition directory name.
    """
    out = {}
    for p in range(3):
        w = PartitionWriter(root, "web-clicks", p, segment_bytes=16384, topic_id=bytes([p + 1] * 16))
        for k in range(30):
            if k == 7:
                w.set_leader_epoch(2)
            w.append(v2_batch(sample_records(20 + k, start_ts=T0 + 1000 * k + p, key_prefix=b"p%d-" % p),
                              codec=CODECS[(k + p) % 5]))
        out[f"web-clicks-{p}"] = w.close()

    w = PartitionWriter(root, "legacy", 0, segment_bytes=1 << 20)
    w.append(legacy_batch(0, [(None, b"k0", b"magic zero %d" % i) for i in range(3)]))
    w.append(legacy_batch(1, [(T0 + i, b"k1", b"magic one %d" % i) for i in range(3)]))
    for codec in ("gzip", "snappy", "lz4"):
        w.append(legacy_batch(1, [(T0 + 100 + i, b"w", b"wrapped %s %d" % (codec.encode(), i))
                                  for i in range(4)], codec=codec))
    out["legacy-0"] = w.close()

    w = PartitionWriter(root, "payments", 0, segment_bytes=1 << 20)
    seq = {1000: 0, 2000: 0, 3000: 0}

    def produce(pid, n, txn=True):
        recs = sample_records(n, start_ts=T0 + len(w.appended) * 10, key_prefix=b"pay-")
        b = v2_batch(recs, producer_id=pid, producer_epoch=1, base_sequence=seq[pid], transactional=txn,
                     codec="lz4" if pid == 1000 else "none")
        seq[pid] += n
        return w.append(b)
    produce(1000, 5)
    produce(2000, 3)
    produce(3000, 4, txn=False)
    produce(1000, 5)
    w.end_txn(CONTROL_COMMIT, 1000, coordinator_epoch=7, timestamp=T0 + 500)
    produce(2000, 3)
    w.end_txn(CONTROL_ABORT, 2000, coordinator_epoch=7, timestamp=T0 + 600)
    produce(3000, 4, txn=False)
    out["payments-0"] = w.close()

    w = PartitionWriter(root, "compacted", 0, segment_bytes=1 << 20)
    w.append(v2_batch(sample_records(4, start_ts=T0), offset_deltas=[0, 3, 4, 9]))
    w.append(v2_batch(sample_records(3, start_ts=T0 + 50), codec="zstd", offset_deltas=[1, 2, 5]),
             skip_offsets=5)
    w.append(empty_batch(6, max_timestamp=T0 + 90, producer_id=55, producer_epoch=0, base_sequence=10))
    w.append(v2_batch(sample_records(2, start_ts=T0 + 100)))
    out["compacted-0"] = w.close()
    return out


def mixed_codec_partition(root: str, batches: int, segment_bytes: int) -> str:
    """``root`` holding topic ``t`` partition 0: ``batches`` v2 batches of 10 records, uncompressed,
    zstd and lz4 in turn (gzip's slow codec left out), in segments of ``segment_bytes`` (the
    threaded reads' tests: windows of every kind on each thread)."""
    w = PartitionWriter(str(root), "t", 0, segment_bytes=segment_bytes)
    for k in range(batches):
        w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=60), codec=("none", "zstd", "lz4")[k % 3]))
    w.close()
    return str(root)
