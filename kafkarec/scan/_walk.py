"""Whole partition logs walked batch by batch, each batch judged by the transaction rule: what a
reader of the log's own facts needs where :class:`kafkarec.scan.LogScan`'s rows hide them (a
``read_committed`` read leaves out aborted and control batches) -- the lakehouse audit, the
hand-off point and a stream's last stable offset.

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

from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Tuple

__all__ = ["PartitionWalk", "Verdict", "CommittedView", "DATA", "CONTROL", "ABORTED"]

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
    stable_end: Optional[int]    # offsets from here on wait (the LSO, or an earlier offset from
    #                              which every batch is left out anyway); None: the log end


class PartitionWalk(NamedTuple):
    """One topic-partition's whole log, to walk batch by batch: ``storage`` holding it, ``part``
    (a :class:`kafkarec.log.layout.PartitionLog`), ``lost`` (``(start, end)`` offset ranges no
    copy of the log holds: :func:`kafkarec.log.layout.scan_history`'s gaps) and ``resolver`` (a
    :class:`kafkarec.log.selection.Resolver` of its storage: log start, log end, times)."""
    storage: object
    part: object
    lost: Tuple[Tuple[int, int], ...] = ()
    resolver: object = None

    @property
    def key(self) -> Tuple[Optional[str], Optional[int]]:
        return self.part.key

    def judge(self, visit: Optional[Callable] = None) -> Verdict:
        """Walk the whole log once, in offset order, each batch (a
        :class:`kafkarec.log.committed.LogBatch`: the batch, its segment ``path`` and
        ``position``) handed to ``visit`` as the transaction rule reads it; the rule's
        :class:`Verdict` once the walk is done.  A data batch failing its CRC opens and joins no
        transaction (the read reports it)."""
        from kafkarec.log import committed

        def walk():
            for b in committed.partition_batches(self.storage, self.part):
                if visit is not None:
                    visit(b)
                yield b
        # the transaction rule's one home: committed.aborted_spans
        spans: Spans = committed.aborted_spans(walk())
        return Verdict(frozenset((path, position) for path, found in spans.items() for position, _ in found),
                       spans)

    def committed_view(self) -> CommittedView:
        """The partition's left-out spans and its stable end: the first offset of the trailing
        run of left-out batches (past the last stable offset every batch is in that run, and an
        aborted batch just before it is left out whichever side it is on)."""
        order: list = []
        # a legacy wrapper's own offset is its last (never transactional anyway)
        verdict = self.judge(lambda b: order.append(
            ((b.path, b.position), b.base_offset if b.magic >= 2 else b.last_offset)))
        stable_end = None
        for where, first in reversed(order):
            if where not in verdict.left_out:
                break
            stable_end = first
        return CommittedView(verdict.spans, stable_end)
