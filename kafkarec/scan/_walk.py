"""Whole partition logs walked batch by batch, each batch judged by the transaction rule: what a
reader of the log's own facts needs where :class:`kafkarec.scan.LogScan`'s rows hide them (a
``read_committed`` read leaves out aborted and control batches) -- the lakehouse audit, the
hand-off point and a stream's last stable offset (:meth:`PartitionWalk.committed_view`, the one
place the LSO is computed) -- and what the replays of the log's own records read
(:meth:`PartitionWalk.batches`, :meth:`PartitionWalk.records`: the internal topics, the
registry's ``_schemas``), so that every walk of the log goes through the scan's one listing.

A :class:`PartitionWalk` is one topic-partition as :meth:`kafkarec.scan.LogScan.partition_walks`
lists it (the config's paths, storage and tiered options, selection and bounds: the same listing
as a read's pieces of work).  :meth:`PartitionWalk.judge` walks its whole log once
(:func:`kafkarec.log.committed.partition_batches`: a transaction may begin in one segment and end
in a later one), hands each batch to the caller in offset order and returns the
:class:`Verdict`: which batches a ``read_committed`` consumer does not see
(:func:`kafkarec.transactions.aborted_batches`), so that every batch is classified as
:data:`CONTROL`, :data:`ABORTED` (left out: an aborted transaction's, or at or past the last
stable offset) or :data:`DATA`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterator, List, NamedTuple, Optional, Tuple

__all__ = ["PartitionWalk", "Verdict", "CommittedView", "LogFacts", "DATA", "CONTROL", "ABORTED"]

#: what a batch of the log is to a ``read_committed`` consumer (:meth:`Verdict.kind`)
DATA, CONTROL, ABORTED = "data", "control", "aborted"

Spans = Dict[str, List[Tuple[int, int]]]


class Verdict(NamedTuple):
    """The transaction rule's verdict over one partition's whole log: ``left_out``, the
    ``(path, position)`` of each batch a ``read_committed`` consumer does not see; ``spans``, the
    same as ``{segment path: [(position, size), ...]}`` (sorted), what a read skips."""
    left_out: FrozenSet[Tuple[str, int]]
    spans: Spans

    def kind(self, path: str, position: int, is_control: bool) -> str:
        """:data:`CONTROL` for a control batch (never a row, whatever its transaction),
        :data:`ABORTED` for a data batch left out, else :data:`DATA` (a committed record's)."""
        if is_control:
            return CONTROL
        return ABORTED if (path, position) in self.left_out else DATA


class CommittedView(NamedTuple):
    """What a read_committed consumer sees of one partition's log as it is now."""
    skips: Spans                 # {segment path: [(position, size), ...]} left out
    stable_end: Optional[int]    # the last stable offset: offsets from here on wait; None: none
    #                              waits (no transaction is open)


class PartitionWalk(NamedTuple):
    """One topic-partition's whole log, to walk batch by batch: ``storage`` holding it, ``part``
    (a :class:`kafkarec.log.layout.PartitionLog`), ``lost`` (``(start, end)`` offset ranges no
    copy of the log holds: :func:`kafkarec.log.layout.scan_history`'s gaps), ``resolver`` (a
    :class:`kafkarec.log.selection.Resolver` of its storage: log start, log end, times) and
    ``memo`` (its listing's: what a walk of the log found, kept for the listing's life, so that a
    command that plans over one listing walks each partition once -- its hand-off point, its
    holes, the read's skipped spans; None: nothing kept)."""
    storage: object
    part: object
    lost: Tuple[Tuple[int, int], ...] = ()
    resolver: object = None
    memo: Optional[dict] = None

    @property
    def key(self) -> Tuple[Optional[str], Optional[int]]:
        return self.part.key

    @property
    def _memo_key(self) -> tuple:
        # (topic, partition) alone is not unique in a listing: folders whose names have none
        return (self.part.key, tuple(self.part.folders))

    def facts(self) -> "LogFacts":
        """What one walk of the whole log found (:class:`LogFacts`), walked the first time it is
        asked of this listing (``memo``), kept after."""
        known = None if self.memo is None else self.memo.get(self._memo_key)
        if known is None:
            known = self._walk(None)
        return known

    def remember(self, facts: "LogFacts") -> None:
        """Keep ``facts`` (an earlier listing's walk of this partition, its segments unchanged
        since) as this listing's: what a stream does from one trigger to the next."""
        if self.memo is not None:
            self.memo[self._memo_key] = facts
        if self.resolver is not None:
            self.resolver.note_last_offsets(self.part, facts.ends)
            self.resolver.note_rebuilt_index(self.part, facts.rebuilt)

    def judge(self, visit: Optional[Callable] = None) -> Verdict:
        """Walk the whole log once, in offset order, each batch (a
        :class:`kafkarec.log.committed.LogBatch`: the batch, its segment ``path`` and
        ``position``) handed to ``visit`` as the transaction rule reads it; the rule's
        :class:`Verdict` once the walk is done.  A data batch failing its CRC opens and joins no
        transaction (the read reports it).  Without ``visit``, a verdict already found for this
        listing (``memo``) is the answer: no batch is read again."""
        if visit is None:
            return self.facts().verdict
        return self._walk(visit).verdict

    def _walk(self, visit: Optional[Callable]) -> "LogFacts":
        """The one walk: the verdict, the transactional batches (without their bytes: only they
        can move the LSO) and the offsets no batch covers, kept in ``memo``."""
        from kafkarec import _core
        from kafkarec.log import committed
        from kafkarec.log.sidefiles import RebuiltIndex
        txn: List[_TxnBatch] = []
        gaps: List[Tuple[Optional[int], int]] = []
        covered: List[Optional[int]] = [None]     # every offset below it is covered (None: none yet)
        ends: Dict[str, Optional[int]] = {}
        rebuilt: Dict[str, RebuiltIndex] = {}

        def walk():
            # headers only unless a visitor reads the batches (see kafkarec.log.committed)
            for b in committed.partition_batches(self.storage, self.part, headers=visit is None, ends=ends):
                if visit is not None:
                    visit(b)
                # the holes: a v2 batch starting past what the batches before it covered (a legacy
                # compressed wrapper names only its last offset: it covers everything below it)
                last = b.last_offset
                if b.magic >= 2 and (covered[0] is None or b.base_offset > covered[0]):
                    gaps.append((covered[0], b.base_offset))
                if b.path not in rebuilt:
                    rebuilt[b.path] = RebuiltIndex()
                rebuilt[b.path].add(b.position, b.size_in_bytes, b.base_offset if b.magic >= 2 else last, last)
                covered[0] = last + 1 if covered[0] is None else max(covered[0], last + 1)
                if b.is_transactional or b.is_control:
                    # (read whole by the walk: its records' count and last offset cost nothing more)
                    control = b.is_control
                    txn.append(_TxnBatch(b.path, b.position, b.size_in_bytes, b.base_offset, b.producer_id,
                                         control, True if control else b.crc_valid,
                                         _core._marker_type(b.batch) if control and b.is_transactional else None,
                                         b.last_offset, b.record_count, b.magic, bool(b.is_transactional)))
                yield b
        # the transaction rule's one home: committed.aborted_spans
        spans: Spans = committed.aborted_spans(walk())
        verdict = Verdict(frozenset((path, position) for path, found in spans.items() for position, _ in found),
                          spans)
        facts = LogFacts(verdict, tuple(txn), tuple(gaps), covered[0], ends,
                         {path: index.entries() for path, index in rebuilt.items()})
        if self.resolver is not None:
            # the segments walked to their ends: their last offsets are the log end, not read again;
            # their offset indexes rebuilt (a segment without a usable .index: not walked again)
            self.resolver.note_last_offsets(self.part, ends)
            self.resolver.note_rebuilt_index(self.part, facts.rebuilt)
        if self.memo is not None:
            self.memo[self._memo_key] = facts
        return facts

    def batches(self, options=None, *, snapshot=None) -> Iterator:
        """The whole log in offset order, batch by batch (each a
        :class:`kafkarec.log.committed.LogBatch`: the batch, its segment ``path`` and
        ``position``; control batches too), read with ``options`` (a :class:`kafkarec.ReadOptions`;
        default CRCs checked) and Kafka's file framing; a batch that cannot be read raises its
        :class:`kafkarec.DecodeError` at its file position: what the replays of the log's own
        records (the internal topics', the registry's ``_schemas``) read.  ``snapshot``: one of
        the partition's KRaft snapshots (``part.snapshots``), walked instead of the log."""
        from kafkarec.log import committed
        from kafkarec.log.segment import file_options
        if snapshot is not None:
            return committed.snapshot_batches(self.storage, snapshot, file_options(options))
        return committed.partition_batches(self.storage, self.part, file_options(options))

    def batches_below(self, start: int) -> Iterator:
        """The log's batches below offset ``start``, whole, in offset order, framed as the rule's
        walk frames them (CRCs unchecked): the segments whose base offset is below ``start``
        walked up to the first batch that starts at or past it (no segment below it: no byte
        read).  What a count of the records the files still hold below a log start reads."""
        from kafkarec.errors import DecodeError
        from kafkarec.log import committed
        segments = [seg for seg in self.part.segments if seg.base_offset < start]
        if not segments:
            return
        for b in committed.partition_batches(self.storage, self.part._replace(segments=segments), headers=False):
            try:
                if b.base_offset >= start:      # (a legacy wrapper's: its first record's, opened)
                    return
            except DecodeError:                 # the walk's framing ends there too
                return
            yield b

    def batch(self, kept) -> Optional[object]:
        """One batch the walk kept without its bytes (a :attr:`LogFacts.txn` entry: its segment
        ``path``, ``position`` and size), read alone and framed as the walk framed it (CRC
        unchecked; None: it no longer frames)."""
        from kafkarec.log.layout import open_segment
        from kafkarec.log.segment import file_options
        from kafkarec.log.storage import BatchWalk, Piece
        [seg] = [seg for seg in self.part.segments if seg.path == kept.path]
        with open_segment(self.storage, seg) as f:
            data = f.read_at(kept.position, kept.size_in_bytes)
        walk = BatchWalk([Piece(kept.position, memoryview(data), True)], file_options(verify_crc=False), errors="stop")
        return next(iter(walk), None)

    def log_start(self) -> int:
        """The partition's log start offset (:meth:`kafkarec.log.selection.Resolver.log_start`:
        where a consumer reading from the earliest offset begins)."""
        from kafkarec.log.selection import Resolver
        resolver = self.resolver if self.resolver is not None else Resolver(self.storage)
        return resolver.log_start(self.part)

    def records(self, options=None, *, start: Optional[int] = None, snapshot=None) -> Iterator:
        """The records of the data batches of :meth:`batches` (a control batch's marker is no
        record of its topic; an aborted transaction's records are there: a replay applies its
        topic's own rules) in offset order, from offset ``start`` (None: every record the log
        holds; :meth:`log_start`: what a consumer from the earliest offset reads), each a
        :class:`kafkarec.Record`: what a replay applies one by one (``snapshot``: a KRaft
        snapshot's, as :meth:`batches`)."""
        from kafkarec.log import committed
        from kafkarec.log.segment import file_options
        return committed.partition_records(self.storage, self.part, file_options(options), start=start,
                                           snapshot=snapshot)

    def committed_view(self, end: Optional[int] = None) -> CommittedView:
        """The partition's left-out spans (:class:`Verdict`'s, over its whole log) and its last
        stable offset, the one place it is computed: the LSO of the log cut at ``end`` (the
        batches starting below it; None: the whole log), the first offset of the earliest
        transaction still open there, None when none is.  It is read off the transaction rule
        itself: the batches the rule leaves out, less those it leaves out once every open
        transaction is closed by a commit, are the ones cut at the LSO; the first of them is
        where the LSO is.  Read off :meth:`facts` (one walk of the log per listing)."""
        from kafkarec import transactions
        facts = self.facts()
        txn = [b for b in facts.txn if b.is_transactional]
        upto = txn if end is None else [b for b in txn if b.base_offset < end]
        key = (lambda b: b.base_offset)
        left_out = transactions.aborted_batches(upto, key=key, trusted=lambda b: b.crc_valid)
        closed = upto + [_TxnBatch(None, None, 0, None, pid, True, True, COMMIT)
                         for pid in {b.producer_id for b in upto if not b.is_control}]
        aborted = transactions.aborted_batches(closed, key=key, trusted=lambda b: b.crc_valid)
        cut = {o for o in left_out - aborted if o is not None}
        return CommittedView(facts.verdict.spans, min(cut) if cut else None)

    def holes(self, start: int, end: int) -> List[Tuple[int, int]]:
        """The offset ranges within [start, end) that no batch of the log covers (v2 batches: a
        legacy compressed wrapper names only its last offset), read off :meth:`facts`."""
        facts = self.facts()
        out: List[Tuple[int, int]] = []
        for lo, hi in facts.gaps:
            a, b = start if lo is None else max(lo, start), min(hi, end)
            if a < b:
                out.append((a, b))
        tail = start if facts.covered is None else max(facts.covered, start)
        if tail < end:
            out.append((tail, end))
        return out


class LogFacts(NamedTuple):
    """What one walk of a partition's whole log found: the transaction rule's ``verdict``, its
    transactional and control batches (``txn``, without their bytes: what the LSO is read off at
    any end, and what a transaction or a marker leaves out of a range),
    the offset ranges ``[lo, hi)`` before a batch that no earlier batch covers (``gaps``; ``lo``
    None: before the first batch), the offset every batch's offsets end below (``covered``;
    None: no batch), ``ends``: ``{segment path: its last whole batch's last offset}`` of the
    segments walked to their end (what the log end is read off) and ``rebuilt``: ``{segment path:
    its offset index as Kafka rebuilds one}`` (:class:`kafkarec.log.sidefiles.RebuiltIndex`: what an
    offset bound finds its bytes by in a segment without a usable ``.index``)."""
    verdict: Verdict
    txn: tuple
    gaps: tuple
    covered: Optional[int]
    ends: dict = {}
    rebuilt: dict = {}


#: ControlRecordType.COMMIT: the marker that closes a transaction without aborting it
COMMIT = 1


@dataclass
class _TxnBatch:
    """What the transaction rule reads of one transactional batch (or a control batch that is not
    one: a KRaft record's, which the rule passes over), kept without its bytes; with its last
    offset, records and magic, what a count of the records a transaction leaves out reads
    (:func:`kafkarec.restore.evidence.not_restored`)."""
    path: Optional[str]
    position: Optional[int]
    size_in_bytes: int
    base_offset: Optional[int]
    producer_id: int
    is_control: bool
    crc_valid: bool
    marker: Optional[int]           # a control batch's marker type (the rule's _marker_type)
    last_offset: Optional[int] = None
    record_count: int = 0
    magic: int = 2
    is_transactional: bool = True

    def __iter__(self):          # a control batch's one record, as the rule reads it
        yield _Marker(self.marker)


class _Marker(NamedTuple):
    control_type_id: Optional[int]
