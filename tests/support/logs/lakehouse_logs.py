"""Partition logs for the lakehouse tests, written as a broker writes them (:mod:`logdir`), with a
plain model of what a read_committed consumer sees (independent of kafkarec's rule)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from support.logs.logdir import CONTROL_ABORT, CONTROL_COMMIT, PartitionWriter, control_batch, v2_batch

T0 = 1_700_000_000_000

# an operation: ("plain", n) | ("data", producer, n) | ("commit", producer) | ("abort", producer)
Op = Tuple


def ops_strategy():
    """Hypothesis: lists of :data:`Op` (three transactional producers among plain writes)."""
    from hypothesis import strategies as st
    return st.lists(st.one_of(
        st.tuples(st.just("plain"), st.integers(1, 4)),
        st.tuples(st.just("data"), st.sampled_from([7, 8, 9]), st.integers(1, 4)),
        st.tuples(st.sampled_from(["commit", "abort"]), st.sampled_from([7, 8, 9])),
    ), min_size=1, max_size=25)


class Model:
    """What the ops wrote: every data offset with its state once the log ends, and the LSO."""

    def __init__(self):
        self.committed: List[int] = []       # data offsets whose transaction committed (or none)
        self.txns: List[Tuple[int, Optional[int]]] = []   # (first offset, its marker's offset or None)
        self.values: Dict[int, bytes] = {}
        self.end = 0

    def lso(self, end: Optional[int] = None) -> int:
        """The LSO of the log cut at ``end`` (default its end): the first offset of the earliest
        transaction begun below ``end`` and not ended by a marker below it."""
        end = self.end if end is None else end
        return min([first for first, marker in self.txns
                    if first < end and (marker is None or marker >= end)] + [end])

    def read_committed(self, start: int, end: int) -> List[int]:
        """The offsets a read_committed consumer reading [start, end) is given, end <= LSO."""
        return [o for o in self.committed if start <= o < end]


def write_partition(root: str, topic: str, partition: int, ops: Sequence[Op], *,
                    segment_bytes: int = 2048) -> Model:
    """Append ``ops`` to ``topic``-``partition`` under ``root``; the model of what was written."""
    w = PartitionWriter(root, topic, partition, segment_bytes=segment_bytes)
    m = Model()
    open_txn: Dict[int, int] = {}   # producer -> index into m.txns
    pending: Dict[int, List[int]] = {}
    seq: Dict[int, int] = {}
    ts = T0
    for op in ops:
        kind = op[0]
        if kind in ("plain", "data"):
            n = op[-1]
            pid = op[1] if kind == "data" else -1
            base = w.next_offset
            recs = [(ts + i, b"k%d" % ((base + i) % 5), b"v-%s-%d-%d" % (topic.encode(), partition, base + i),
                     [("h", b"%d" % (base + i))] if (base + i) % 3 == 0 else [])
                    for i in range(n)]
            ts += n
            if kind == "plain":
                w.append(v2_batch(recs))
                m.committed += range(base, base + n)
            else:
                s = seq.get(pid, 0)
                w.append(v2_batch(recs, producer_id=pid, producer_epoch=0, base_sequence=s, transactional=True))
                seq[pid] = s + n
                if pid not in open_txn:
                    open_txn[pid] = len(m.txns)
                    m.txns.append((base, None))
                pending.setdefault(pid, []).extend(range(base, base + n))
            for i, r in enumerate(recs):
                m.values[base + i] = r[2]
        else:
            pid = op[1]
            if pid not in open_txn:
                continue            # a marker with no open transaction: a coordinator never writes one
            at = w.next_offset
            w.append(control_batch(CONTROL_COMMIT if kind == "commit" else CONTROL_ABORT, producer_id=pid,
                                   producer_epoch=0, coordinator_epoch=0, timestamp=ts))
            ts += 1
            i = open_txn.pop(pid)
            m.txns[i] = (m.txns[i][0], at)
            if kind == "commit":
                m.committed += pending.get(pid, [])
            pending.pop(pid, None)
    m.end = w.next_offset
    m.committed.sort()
    w.close()
    return m

