"""A log directory that grows as a broker's does, for the streaming tests and stream_job.py.

kafkarec's builder appends batches in place to ``<topic>-<partition>/<base offset>.log``:
plain batches, a batch written half (a write in progress), new segments, new partitions,
and transactions (data batches of a transactional producer, ended later by a COMMIT or
ABORT control batch, possibly in another segment).  ``written`` holds every data record a
read_uncommitted consumer sees; :meth:`committed` what a read_committed one sees.
"""
from __future__ import annotations

import os

import kafkarec
from kafkarec._core import RecordBatchBuilder
from kafkarec.enums import ControlRecordType

T0 = 1_700_000_000_000


class GrowingLog:
    def __init__(self, root):
        self.root = root
        self.next = {}          # (topic, p) -> next offset
        self.active = {}        # (topic, p) -> path of the active segment
        self.written = []       # (topic, p, offset, value) of every data record in a whole batch
        self.pending = {}       # (topic, p) -> bytes of a batch not yet written in full
        self.txns = {}          # (topic, p, producer id) -> records of its open transaction
        self.aborted = set()    # (topic, p, offset) of aborted records
        self.sequences = {}     # producer id -> next sequence

    def _segment(self, topic, p):
        key = (topic, p)
        if key not in self.active:
            self.roll(topic, p)
        return self.active[key]

    def roll(self, topic, p):
        key = (topic, p)
        d = os.path.join(self.root, f"{topic}-{p}")
        os.makedirs(d, exist_ok=True)
        base = self.next.setdefault(key, 0)
        path = os.path.join(d, f"{base:020d}.log")
        open(path, "ab").close()
        self.active[key] = path

    def batch(self, topic, p, n, *, codec=kafkarec.Compression.NONE, **producer):
        key = (topic, p)
        base = self.next.get(key, 0)
        values = [b"%s-%d-%d" % (topic.encode(), p, base + i) for i in range(n)]
        data = kafkarec.build_batch(values, keys=[b"k"] * n, timestamps=[T0 + base + i for i in range(n)],
                                    base_offset=base, compression=codec, **producer)
        self.next[key] = base + n
        return data, [(topic, p, base + i, v) for i, v in enumerate(values)]

    def _write(self, topic, p, data):
        with open(self._segment(topic, p), "ab") as fh:
            fh.write(data)

    def append(self, topic, p, n, **kw):
        self._segment(topic, p)          # a new partition's first segment starts at offset 0
        data, recs = self.batch(topic, p, n, **kw)
        self._write(topic, p, data)
        self.written += recs

    def append_half(self, topic, p, n):
        """The first half of a batch: a write still in progress."""
        self._segment(topic, p)
        data, recs = self.batch(topic, p, n)
        self._write(topic, p, data[:len(data) // 2])
        self.pending[(topic, p)] = (data[len(data) // 2:], recs)

    def finish_half(self, topic, p):
        rest, recs = self.pending.pop((topic, p))
        self._write(topic, p, rest)
        self.written += recs

    def txn_append(self, topic, p, n, producer_id):
        """A data batch of ``producer_id``'s open transaction."""
        seq = self.sequences.get(producer_id, 0)
        self._segment(topic, p)
        data, recs = self.batch(topic, p, n, producer_id=producer_id, producer_epoch=0,
                                base_sequence=seq, is_transactional=True)
        self.sequences[producer_id] = seq + n
        self._write(topic, p, data)
        self.written += recs
        self.txns.setdefault((topic, p, producer_id), []).extend(recs)

    def txn_end(self, topic, p, producer_id, *, commit: bool):
        key = (topic, p)
        self._segment(topic, p)
        offset = self.next.get(key, 0)
        marker = RecordBatchBuilder(base_offset=offset, producer_id=producer_id, producer_epoch=0,
                                    is_transactional=True, is_control=True)
        marker.append_control(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                              {"coordinatorEpoch": 1}, timestamp=T0 + offset)
        self._write(topic, p, marker.build())
        self.next[key] = offset + 1
        recs = self.txns.pop((topic, p, producer_id), [])
        if not commit:
            self.aborted |= {r[:3] for r in recs}

    def committed(self):
        """The records a read_committed consumer sees now: not aborted, before the LSO."""
        lso = {}
        for (topic, p, _), recs in self.txns.items():
            first = recs[0][2]
            lso[(topic, p)] = min(lso.get((topic, p), first), first)
        return [r for r in self.written if r[:3] not in self.aborted
                and r[2] < lso.get(r[:2], float("inf"))]
