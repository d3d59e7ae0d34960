"""The restore's writing: each target partition by its own transactional producer, in order, its
progress committed in the same transactions.

Why this way (as Kafka Connect's exactly-once source and MirrorMaker 2 keep their positions):
each transaction holds a slice of the partition's committed records and, through
``send_offsets_to_transaction``, the next source offset as the progress group's committed offset
of that target partition.  Both become visible together or not at all, so the target always holds
exactly the records below the progress it shows.  A restarted restore takes the same
transactional id (``init_transactions`` aborts a killed run's open transaction and fences it),
reads the progress, and goes on from there; at the partition's end there is nothing left to write.
One producer per partition keeps the partition's order; the target offsets come from the delivery
reports into the offset map.
"""
from __future__ import annotations

import time
from typing import Callable, List, NamedTuple, Optional, Tuple

from kafkarec import _client
from kafkarec._extras import require
from kafkarec.errors import RestoreError
from kafkarec.restore import source, steps, target
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.source import SourcePartition, SourcePlan
from kafkarec.restore.spec import RestoreSpec

__all__ = ["PartitionSummary", "restore_partition", "restore_partitions", "rebuild_pairs", "producer_config"]


class PartitionSummary(NamedTuple):
    """One partition's restore: source ``topic-partition`` [``start``, ``end``), the target topic,
    ``records`` written by this run, ``status``: ``"written"``, ``"resumed"`` (an earlier run
    wrote a part) or ``"done"`` (an earlier run wrote it all: nothing written).  With
    ``spec.digest``: ``source_records``, the committed records of the source's [start, the map's
    source end) on the target (this run's and earlier runs'), and ``source_digest``, their chained
    digest (:class:`kafkarec.restore.evidence.Digest`), taken as the restore read them; else None."""
    topic: str
    partition: int
    start: int
    end: int
    target_topic: str
    records: int
    status: str
    source_records: Optional[int] = None
    source_digest: Optional[str] = None
    #: with ``spec.digest`` and schema ids translated (:mod:`kafkarec.restore.schemas`): the digest of
    #: the records as written, their ids rewritten (else None: the target's records are the source's)
    target_digest: Optional[str] = None


def rebuild_pairs(spec: RestoreSpec, part: SourcePartition, upto: int, omap: OffsetMap, digest=None,
                  written_digest=None, translation=None, listing=None) -> None:
    """Add to ``omap`` the pairs of what earlier runs restored ([start, ``upto``) of the source, ``upto``
    the recorded progress, whatever this run's end: an earlier run to a later end wrote more, and
    the map must cover every record on the target): the k-th committed record on the target is the
    k-th committed record of the source range, as the target partition holds this restore's records
    only (a partition holding others is refused).  ``digest`` (an
    :class:`kafkarec.restore.evidence.Digest`): each source record read chained into it, a dead
    letter's source offset as the restore wrote it (``translation``: a
    :class:`kafkarec.restore.deadletters.Translation`); ``written_digest``: each as written (its
    schema ids translated too).  ``listing``: the plan's (:attr:`SourcePlan.listing`), read over."""
    from kafkarec.restore.schemas import translation_for
    tr = translation_for(spec)
    if upto > part.log_end:
        raise RestoreError(spec.target, f"the restore's progress {upto} is past the source's log end "
                                        f"{part.log_end} (source {part.topic}-{part.partition}): another history "
                                        "was restored under this restore id", topic=part.target_topic,
                           partition=part.partition, group=spec.progress_group)
    src = source.committed_records(spec, part.topic, part.partition, part.start, upto, listing)
    got = target.read_back(spec, part.target_topic, part.partition)
    for s in src:
        d = s if translation is None else translation.record(s)     # a dead letter as written
        if digest is not None:
            digest.add(d)
        w = d if tr is None else tr.rewrite(part.topic, part.partition, d)      # and its schema ids
        if written_digest is not None:
            written_digest.add(w)
        t = next(got, None)
        if t is None:
            raise RestoreError(spec.target, f"holds fewer records than the source's [{part.start}, {upto}), "
                                            f"which the restore's progress says it holds (source offset {s.offset} "
                                            "has none)", topic=part.target_topic, partition=part.partition)
        if (t.key, t.value) != (w.key, w.value):
            # a record the target lost (compacted away, deleted) shifts the pairing: refused, not guessed
            raise RestoreError(spec.target, f"the record at offset {t.offset} is not source offset {s.offset}'s "
                                            "(its key or value differs): the target's partition changed after "
                                            "the restore wrote it", topic=part.target_topic, partition=part.partition)
        omap.add(part.topic, part.partition, part.target_topic, s.offset, t.offset)
    extra = next(got, None)
    if extra is not None:
        raise RestoreError(spec.target, f"holds a record at offset {extra.offset} beyond what the restore's "
                                        f"progress ({upto}) accounts for", topic=part.target_topic,
                           partition=part.partition)


def producer_config(spec: RestoreSpec, part: SourcePartition) -> dict:
    """The settings of a target partition's transactional producer, beside the spec's own."""
    return {"transactional.id": spec.transactional_id(part.target_topic, part.partition),
            "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "transaction.timeout.ms": max(60000, int(spec.timeout * 2000))}


class _MustAbort(Exception):
    """A transactional call failed in a way only an abort clears (librdkafka's ``txn_requires_abort``)."""

    def __init__(self, error: RestoreError):
        super().__init__(str(error))
        self.error = error


class _Redo(Exception):
    """The transaction was aborted after a failure that may pass when it is written again."""

    def __init__(self, error: RestoreError):
        super().__init__(str(error))
        self.error = error


class _Writer:
    """One target partition's transactional producer."""

    def __init__(self, spec: RestoreSpec, part: SourcePartition, group_metadata):
        self.ck = require("confluent_kafka")
        self.spec, self.part, self.group_metadata = spec, part, group_metadata
        self.producer = target.client(spec, "Producer", **producer_config(spec, part))
        self.delivered: List[Tuple[int, int]] = []
        self.failures: List[str] = []
        self.retriable = True
        #: the transaction being written, counted: a report of an aborted one's record is not this one's
        self.generation = 0
        try:
            self._call("initialising transactions", self.producer.init_transactions)
        except _MustAbort as exc:
            raise exc.error from None

    def _call(self, what: str, fn: Callable[[float], object]):
        """``fn(seconds left)``: one call of the transactional API, asked again while it fails
        retriably (:func:`kafkarec.restore.target.retried`, as librdkafka allows for each of them);
        one that leaves the transaction to be aborted is :class:`_MustAbort`."""
        seen: List[BaseException] = []

        def once(left: float):
            try:
                return fn(left)
            except self.ck.KafkaException as exc:
                seen.append(exc)
                raise
        try:
            return target.retried(self.spec, what, once, topic=self.part.target_topic, partition=self.part.partition)
        except RestoreError as exc:
            if seen and target.must_abort(seen[-1]):
                raise _MustAbort(exc) from None
            raise

    def _report(self, source_offset: int):
        generation = self.generation

        def on_delivery(err, msg):
            if generation != self.generation:
                return
            if err is not None:
                self.failures.append(f"source offset {source_offset}: {err.str()}")
                self.retriable = self.retriable and target.retriable(err)
            else:
                self.delivered.append((source_offset, msg.offset()))
        return on_delivery

    def transaction(self, records: List[source.Record], next_offset: int) -> List[Tuple[int, int]]:
        """One transaction: ``records`` and the progress ``next_offset``; returns the delivered
        (source, target) offsets.  A transaction that failed in a way that passes once it is aborted
        (a delivery timed out or refused retriably, the coordinator aborted it) is aborted and
        written again whole, after Kafka's backoff, while the timeout from its first failure allows:
        nothing of an aborted transaction is visible, so nothing is written twice."""
        tries, deadline = 0, None
        while True:
            try:
                return self._transaction(records, next_offset)
            except _MustAbort as exc:       # beginning it: nothing of it to abort
                raise exc.error from None
            except _Redo as redo:
                tries += 1
                now = _client.clock()
                deadline = deadline if deadline is not None else now + self.spec.timeout
                wait = target.backoff(tries)
                if now + wait > deadline:
                    raise redo.error from None
                _client.pause(wait)

    def _transaction(self, records: List[source.Record], next_offset: int) -> List[Tuple[int, int]]:
        self.delivered, self.failures, self.retriable = [], [], True
        self.generation += 1
        p, tp = self.producer, self.part
        self._call("beginning a transaction", lambda left: p.begin_transaction())
        try:
            half = len(records) // 2
            for i, r in enumerate(records):
                if i == half and half:      # a named step (steps.py): half the records produced
                    steps.step("mid-transaction", lambda: p.flush(self.spec.timeout))
                target.retried(self.spec, f"producing source offset {r.offset}", lambda left, r=r: self._produce(r),
                               topic=tp.target_topic, partition=tp.partition)
            offsets = [self.ck.TopicPartition(tp.target_topic, tp.partition, next_offset, tp.topic)]
            self._call("committing the progress",
                       lambda left: p.send_offsets_to_transaction(offsets, self.group_metadata, left))
            steps.step("before-commit", lambda: p.flush(self.spec.timeout))     # a named step (steps.py)
            self._call("committing a transaction", p.commit_transaction)
        except BaseException as exc:
            passing = self.retriable
            self.generation += 1        # the abort's purge reports say nothing of the failure
            aborted = self._abort()
            if isinstance(exc, _MustAbort):
                # redone when the abort went through and no delivery failed for good (a record too
                # large fails the same way every time)
                if aborted and passing:
                    raise _Redo(exc.error) from None
                raise exc.error from None
            raise
        if self.failures or len(self.delivered) != len(records):
            # failed deliveries in a committed transaction: retried whole, from the progress, only
            # where each failure is one that passes (a timeout, a leader moving)
            raise RestoreError(self.spec.target, f"a committed transaction's delivery reports are not whole: "
                                                 f"{'; '.join(self.failures[:3]) or 'reports missing'}",
                               topic=tp.target_topic, partition=tp.partition,
                               retriable=bool(self.failures) and self.retriable)
        steps.step("between-transactions")       # a named step (steps.py)
        return sorted(self.delivered)

    def _produce(self, r: source.Record) -> None:
        """One record into the transaction (its delivery reported to :meth:`_report`)."""
        p, tp = self.producer, self.part
        while True:
            try:
                p.produce(tp.target_topic, value=r.value, key=r.key, partition=tp.partition,
                          timestamp=r.timestamp, headers=r.headers or None, on_delivery=self._report(r.offset))
                return
            except BufferError:          # the local queue is full: let it drain
                p.poll(0.05)

    def _abort(self) -> bool:
        """Abort the open transaction (asked again while that fails retriably); False when it could
        not be (the next run's init_transactions aborts it)."""
        try:
            self._call("aborting a transaction", self.producer.abort_transaction)
            return True
        except (RestoreError, _MustAbort):
            return False

    def close(self) -> None:
        self.producer.flush(self.spec.timeout)


def restore_partition(spec: RestoreSpec, part: SourcePartition,
                      translation=None) -> Tuple[PartitionSummary, OffsetMap]:
    """Restore one source partition, whole and on its own (the unit the command line runs one after
    another; partitions may be restored apart, each wherever it runs): its own transactional producer and the progress committed
    in its transactions, so the exactly-once rule holds per partition wherever it runs.  Returns the
    partition's summary and its offset map (every record on the target, its ends set).
    ``translation``: the dead letters' (:class:`kafkarec.restore.deadletters.Translation`; by
    default one that rebuilds the maps of the partitions they name from the target); its plan's
    listing (:attr:`kafkarec.restore.source.SourcePlan.listing`) is what the records are read over
    (none, a partition restored elsewhere: its source listed for it)."""
    require("confluent_kafka")
    if translation is None:
        from kafkarec.restore.deadletters import Translation
        translation = Translation(None, OffsetMap(), spec, rebuild_pairs)
    key = (part.target_topic, part.partition)
    omap = OffsetMap()
    # the group metadata of the progress group: a consumer that never joins it (as a Java
    # ConsumerGroupMetadata(groupId)), so the offsets commit as a simple (standalone) commit
    meta_consumer = target.client(spec, "Consumer", **{"group.id": spec.progress_group, "enable.auto.commit": False})
    try:
        writer = _Writer(spec, part, meta_consumer.consumer_group_metadata())   # aborts a killed run's transaction
        try:
            done = target.progress(spec, [key]).get(key)
            summary = _restore_one(spec, part, writer, done, omap, translation, translation.listing)
        finally:
            writer.close()
    finally:
        meta_consumer.close()
    # the source offset the target's records reach: H, or an earlier run's later end
    omap.set_end(part.topic, part.partition, part.target_topic, max(part.end, done or 0),
                 _settled_end(spec, part, omap))
    return summary, omap


def _settled_end(spec: RestoreSpec, part: SourcePartition, omap: OffsetMap) -> int:
    """The target partition's end once the last restored record's transaction is settled: past its
    commit marker, which lies after the record, so at least two past it.  commit_transaction
    returns once the coordinator has decided; the commit marker reaches the partition after that,
    and until then its last stable offset stays at the transaction's first record (seen: an end of
    0 read just after the commit of a partition's only transaction); the marker appended, the last
    stable offset is still held to the high watermark, which may not yet have passed the marker
    (seen: an end of 1 after a one-record transaction, whose marker is at 1).  Bounded by the
    timeout."""
    key = (part.target_topic, part.partition)
    last = omap.last_target_offset(part.topic, part.partition)
    deadline = time.monotonic() + spec.timeout
    while True:
        end = target.ends(spec, [key])[key]
        if last is None or end > last + 1:
            return end
        if time.monotonic() >= deadline:
            raise RestoreError(spec.target, f"the target's last stable offset stayed at {end}, not past the "
                                            f"restored record at {last} and its commit marker, for {spec.timeout} s "
                                            "after its commit",
                               topic=part.target_topic, partition=part.partition, retriable=True)
        time.sleep(0.05)


def restore_partitions(spec: RestoreSpec, plan: SourcePlan, omap: OffsetMap, *,
                       on_partition: Optional[Callable[[PartitionSummary], None]] = None) -> List[PartitionSummary]:
    """Restore every partition of ``plan``, one after another (:func:`restore_partition`), adding
    each one's offset map to ``omap``; ``on_partition(summary)`` as each one finishes."""
    from kafkarec.restore.deadletters import SourceNotRestored, Translation
    out: List[PartitionSummary] = []
    # the plan puts DLQ topics last: the partitions their dead letters name are in omap by then.  A
    # DLQ the plan could not tell (no __cluster_metadata) that names a partition still to come stops
    # before writing the record: that partition is restored first, then the DLQ's resumed
    translation = Translation(plan, omap, spec, rebuild_pairs)
    todo = list(plan.partitions)
    while todo:
        part = todo.pop(0)
        try:
            summary, part_map = restore_partition(spec, part, translation)
        except SourceNotRestored as e:
            if e.source not in todo:
                raise
            todo.remove(e.source)
            todo[:0] = [e.source, part]
            continue
        omap.update(part_map)
        out.append(summary)
        if on_partition is not None:
            on_partition(summary)
    return out


def _restore_one(spec: RestoreSpec, part: SourcePartition, writer: _Writer, done: Optional[int],
                 omap: OffsetMap, translation, listing=None) -> PartitionSummary:
    # the evidence's digest, taken from the records as they are read for the target (no second read)
    from kafkarec.restore.schemas import translation_for
    tr = translation_for(spec)
    digest = as_written = None
    if spec.digest:
        from kafkarec.restore.evidence import Digest
        digest = Digest()
        as_written = Digest() if tr is not None else None
    if done is None:
        if target.holds_committed_records(spec, part.target_topic, part.partition):
            raise RestoreError(spec.target, f"holds records and no progress of restore {spec.restore_id!r} "
                                            f"(group {spec.progress_group}): restoring into it would mix "
                                            "histories; restore into an empty partition (or another topic: "
                                            "--rename)", topic=part.target_topic, partition=part.partition)
        next_offset = part.start
    else:
        if done < part.start:
            raise RestoreError(spec.target, f"the restore's progress {done} is below the source's log start "
                                            f"{part.start} (source {part.topic}-{part.partition}): records "
                                            f"[{done}, {part.start}) are no longer in the source, or another "
                                            "history was restored under this restore id; no record was written",
                               topic=part.target_topic, partition=part.partition, group=spec.progress_group)
        next_offset = min(done, part.end)
        rebuild_pairs(spec, part, done, omap, digest, as_written, translation, listing)
    if done is not None and done >= part.end:
        return PartitionSummary(part.topic, part.partition, part.start, part.end, part.target_topic, 0, "done",
                                *_digested(digest, as_written))
    written = 0
    batch: List[source.Record] = []
    for r in source.committed_records(spec, part.topic, part.partition, next_offset, part.end, listing):
        r = translation.record(r)       # a dead letter's source offset, as on the target
        if tr is not None:      # the schema ids the target's registry gave
            if digest is not None:
                digest.add(r)       # the source's record, before its ids are rewritten
            r = tr.rewrite(part.topic, part.partition, r)
            if as_written is not None:
                as_written.add(r)
        batch.append(r)
        if len(batch) == spec.transaction_records:
            if digest is not None and tr is None:      # a transaction's records hashed at once, in order
                digest.add_records(batch)
            for s, t in writer.transaction(batch, r.offset + 1):
                omap.add(part.topic, part.partition, part.target_topic, s, t)
            written += len(batch)
            batch = []
    # the last transaction: the rest, and the progress at the partition's end (even with no record
    # left: then a re-run knows the partition is done)
    if digest is not None and tr is None:
        digest.add_records(batch)
    for s, t in writer.transaction(batch, part.end):
        omap.add(part.topic, part.partition, part.target_topic, s, t)
    written += len(batch)
    return PartitionSummary(part.topic, part.partition, part.start, part.end, part.target_topic, written,
                            "written" if done is None else "resumed", *_digested(digest, as_written))


def _digested(digest, written) -> Tuple[Optional[int], Optional[str], Optional[str]]:
    return (None if digest is None else digest.records, None if digest is None else digest.hexdigest(),
            None if written is None else written.hexdigest())
