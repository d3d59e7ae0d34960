"""A restore's evidence (``--evidence FILE``) and its check (``--check EVIDENCE SOURCE TARGET``):
one JSON document saying what the restore took from the source and where it put it, which can be
recomputed afterwards from both sides, offline (the target's log dir) or from the target's
bootstrap (docs/restore.md, "Evidence and check").

The content digest of a partition is SHA-256 over its committed records' encodings in offset order,
one after another (:class:`Digest`): each record's encoding continues the hash state of all the
records before it, and the encoding delimits itself (lengths and counts before what they measure),
so one input stands for one sequence of records: order, a record dropped, duplicated or changed,
and where each field ends all change it.  A record's encoding (:func:`record_bytes`,
"kafkarec-record-v1"):

* its timestamp, a big-endian signed 64-bit integer (ms);
* its key, then its value, each a field: a big-endian signed 32-bit length then the bytes, the
  length -1 (and no bytes) for null, so null and empty differ;
* its header count, big-endian signed 32-bit, then each header in order: its key's UTF-8 bytes as
  a field, its value as a field (-1 for null).

Offsets are not in it: the same records give the same digest on the source and on the target.
(One running hash, not a hash of each record chained into the next: the chain costs a hash object
and a copy per record, about twice the CPU, for the same guarantee.)
The offset map's digest is :meth:`kafkarec.restore.offsets.OffsetMap.digest`'s.

The source digest is taken while the restore reads the records it produces
(:mod:`kafkarec.restore.produce`, with ``spec.digest``): the source is not read twice for it.  What
was deliberately not restored (aborted records, control markers, records below the log start) is
counted by the one transaction rule over the partition's batch headers
(:meth:`kafkarec.scan.PartitionWalk.judge`).

A restore that translated schema ids (:mod:`kafkarec.restore.schemas`) keeps the translation
(``schemas``: the id map, which topics' keys and values were framed, the fields left as they were)
and each partition's digest of the records as written (``target.digest``); the check rewrites the
source's records by that map, by the same rule, before it compares them with the target's."""
from __future__ import annotations

import hashlib
import json
import os
from typing import Annotated, Dict, Iterator, List, Literal, NamedTuple, Optional, Sequence, Tuple, Union

import msgspec

from kafkarec.errors import UsageError
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.source import SourcePartition, SourcePlan
from kafkarec.restore.spec import RestoreSpec

__all__ = ["FORMAT", "VERSION", "ENCODING", "ALGORITHM", "record_bytes", "Digest", "NotRestored", "not_restored",
           "Evidence", "document", "write", "read", "decode", "seal", "CheckReport", "check"]

#: version 2: the selection (``topics``, ``end_time``, ``source_bootstrap``) and the ``seal``, so
#: that every member is compared (docs/restore.md, "Evidence and check")
FORMAT, VERSION = "kafkarec-restore-evidence", 2
#: the record encoding and the hash over the encodings (the module docstring)
ENCODING, ALGORITHM = "kafkarec-record-v1", "sha256"

def record_bytes(key: Optional[bytes], value: Optional[bytes], timestamp: int,
                 headers: List[Tuple[object, Optional[bytes]]]) -> bytes:
    """A record's canonical encoding (the module docstring; the core writes it:
    ``kafkarec._core.evidence_encoding``)."""
    from kafkarec import _core
    return _core.evidence_encoding((key,), (value,), (timestamp,), (headers,))


class Digest:
    """The content digest of records in order, and their count."""

    __slots__ = ("_hash", "records")

    def __init__(self) -> None:
        self._hash, self.records = hashlib.sha256(), 0

    def add(self, r) -> None:
        """One record (anything with ``key``, ``value``, ``timestamp``, ``headers``)."""
        self.add_encoded(record_bytes(r.key, r.value, r.timestamp, r.headers))

    def add_records(self, records: Sequence) -> None:
        """Records in order (:class:`kafkarec.restore.source.Record` s): their encodings, one
        after another, written by one call of the core and hashed by one update (the restore's
        per-record cost)."""
        if records:
            from kafkarec import _core
            self._hash.update(_core.evidence_encoding([r.key for r in records], [r.value for r in records],
                                                      [r.timestamp for r in records],
                                                      [r.headers for r in records]))
            self.records += len(records)

    def add_encoded(self, encoded: bytes) -> None:
        """One record given as its encoding (:func:`record_bytes`)."""
        self._hash.update(encoded)
        self.records += 1

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


class NotRestored(NamedTuple):
    """Records of a source partition a restore leaves out by rule: in [start, end), ``aborted``
    (an aborted transaction's data records), ``control`` (transaction markers); ``below_log_start``:
    records the partition's files still hold below its log start (deleteRecords, retention)."""
    aborted: int
    control: int
    below_log_start: int


def _walks(source: str, spec: RestoreSpec, keys, listing=None):
    """The partitions' walks over ``listing`` (the restore plan's: not listed again), or over a
    listing of ``source`` made here."""
    if listing is not None:
        return listing.walks(keys)
    from kafkarec.scan import LogScan, ScanConfig
    scan = LogScan(ScanConfig.of(source, storage_options=spec.storage_options, tiered_storage=spec.tiered_storage))
    return {w.key: w for w in scan.partition_walks() if w.key in keys}


def _count(b, lo: int, hi: int, records=None) -> int:
    """The records of batch ``b`` whose offsets are in [lo, hi) (its records read, ``records()``
    when given, only where the batch straddles a bound)."""
    first = b.base_offset if b.magic >= 2 else b.last_offset
    if b.last_offset < lo or first >= hi:
        return 0
    if first >= lo and b.last_offset < hi and b.magic >= 2:
        return b.record_count
    return sum(1 for r in (b if records is None else records()) if lo <= r.offset < hi)


def not_restored(spec: RestoreSpec, parts: List[Tuple[str, int, int, int]],
                 source: Optional[str] = None, listing=None) -> Dict[Tuple[str, int], NotRestored]:
    """``{(topic, partition): NotRestored}`` of each ``(topic, partition, start, end)``, read off the
    partition's one walk of batch headers (:meth:`kafkarec.scan.PartitionWalk.facts`: over
    ``listing``, the restore plan's, its walk already made there, nothing is walked again): the
    transactional and control batches it keeps, judged by its verdict, their records counted from
    their headers (a batch straddling ``start`` or ``end`` read alone).  The records below
    ``start`` are counted from the segments that can hold them, those whose base offset is below
    it, walked up to it."""
    from kafkarec.scan import ABORTED, CONTROL
    walks = _walks(source or spec.source, spec, {(t, p) for t, p, _, _ in parts}, listing)
    out: Dict[Tuple[str, int], NotRestored] = {}
    for topic, partition, start, end in parts:
        walk = walks.get((topic, partition))
        if walk is None:
            out[(topic, partition)] = NotRestored(0, 0, 0)
            continue
        facts = walk.facts()
        aborted = control = 0
        for b in facts.txn:
            n = _count(b, start, end, lambda b=b: walk.batch(b) or ())
            if not n:
                continue
            kind = facts.verdict.kind(b.path, b.position, b.is_control)
            if kind == CONTROL:
                control += n
            elif kind == ABORTED:
                aborted += n
        out[(topic, partition)] = NotRestored(aborted, control, _below(walk, start))
    return out


def _below(walk, start: int) -> int:
    """The records of the partition's log below offset ``start``
    (:meth:`kafkarec.scan.PartitionWalk.batches_below`: only the segments below it read)."""
    return sum(_count(b, -1, start) for b in walk.batches_below(start))


# --- the document: one typed, bounded form, the one way in ----------------------------------------
#
# The document is decoded in one place (:func:`decode`), by msgspec into the structures below: a
# member of the wrong type (a bool where an int belongs: msgspec never takes one for the other), out
# of its range, missing, unknown, or a key listed twice is a one-line UsageError naming the document,
# the member and the value, before the check uses any of it.  msgspec over hand-written checks: the
# types are the document's one description (written and read from the same structures), its JSON
# decoder stops nesting at Python's recursion limit with a RecursionError instead of a stack
# overflow, and it costs ~1 us a partition, nothing beside the records' digests.

#: Kafka's offsets and times are signed 64-bit; a range's offsets are never negative
Offset = Annotated[int, msgspec.Meta(ge=0, le=2 ** 63 - 1)]
Count = Annotated[int, msgspec.Meta(ge=0, le=2 ** 63 - 1)]
Millis = Annotated[int, msgspec.Meta(ge=-(2 ** 63), le=2 ** 63 - 1)]
#: Kafka's partitions are numbered by a signed 32-bit int
PartitionId = Annotated[int, msgspec.Meta(ge=0, le=2 ** 31 - 1)]
#: Kafka's topic names (``org.apache.kafka.common.internals.Topic``: at most 249 of these characters)
TopicName = Annotated[str, msgspec.Meta(pattern=r"^[a-zA-Z0-9._-]{1,249}$")]
#: a registry's schema id as a record's prefix carries it (a signed 32-bit int; registries give
#: none below 0); a prefix read from a record may hold any 32-bit value
SchemaId = Annotated[int, msgspec.Meta(ge=0, le=2 ** 31 - 1)]
AnySchemaId = Annotated[int, msgspec.Meta(ge=-(2 ** 31), le=2 ** 31 - 1)]
SchemaVersion = Annotated[int, msgspec.Meta(ge=1, le=2 ** 31 - 1)]
HexDigest = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]


class _Member(msgspec.Struct, forbid_unknown_fields=True, frozen=True, omit_defaults=True):
    """A member of the document: every field typed, none unknown."""


class SourceRange(_Member):
    """[start, end) of the source partition (its log start and H), its committed records and their digest."""
    start: Offset
    end: Offset
    records: Count
    digest: HexDigest


class TargetRange(_Member):
    """Where the records went: [start, end) of the target partition; ``digest``: of the records as
    written, where schema ids were translated (else the source's)."""
    topic: TopicName
    partition: PartitionId
    start: Offset
    end: Offset
    digest: Optional[HexDigest] = None


class OffsetMapSummary(_Member):
    runs: Count
    digest: HexDigest


class LeftOut(_Member):
    """:class:`NotRestored` as the document holds it."""
    aborted: Count
    control: Count
    below_log_start: Count


class PartitionEvidence(_Member):
    topic: TopicName
    partition: PartitionId
    log_end: Offset
    source: SourceRange
    target: TargetRange
    offset_map: OffsetMapSummary
    not_restored: LeftOut

    @property
    def key(self) -> Tuple[str, int]:
        return (self.topic, self.partition)


class IdMappingEvidence(_Member):
    source_id: SchemaId
    target_id: SchemaId
    subject: str
    version: SchemaVersion
    kept: bool


class FramedTopic(_Member):
    topic: TopicName
    key: bool
    value: bool


class UnknownField(_Member):
    topic: TopicName
    partition: PartitionId
    offset: Offset
    field: str
    schema_id: Optional[AnySchemaId]


class UnknownFields(_Member):
    count: Count
    named: List[UnknownField]


class SchemasEvidence(_Member):
    """The schema-id translation (:meth:`kafkarec.restore.schemas.SchemaTranslation.evidence`)."""
    source_registry: str
    target_registry: str
    subject_strategy: Literal["topic", "record", "topic_record"]
    framed: Optional[List[FramedTopic]]
    ids: List[IdMappingEvidence]
    unknown: UnknownFields


class GroupPositionEvidence(_Member):
    group: str
    topic: TopicName
    partition: PartitionId
    source_offset: Offset
    target_topic: TopicName
    target_offset: Offset


class SharePositionEvidence(_Member):
    group: str
    topic: TopicName
    partition: PartitionId
    source_start: Offset
    target_topic: TopicName
    target_start: Offset


class Evidence(_Member):
    """A restore's evidence, decoded and checked (:func:`read`, :func:`decode`).  ``topics`` and
    ``end_time``: the restore's selection (None: every topic; the end of the log), from which the
    check plans the source again; ``source_bootstrap``: the ranges were bounded by the running
    source's broker (``--bootstrap``), whose log start and last stable offset may lead the files';
    ``seal``: SHA-256 over the canonical JSON of every other member (:func:`seal`)."""
    format: Literal["kafkarec-restore-evidence"]
    version: int
    algorithm: Literal["sha256"]
    encoding: Literal["kafkarec-record-v1"]
    source: str
    target: str
    restore_id: str
    topics: Optional[List[TopicName]]
    end_time: Optional[Millis]
    source_bootstrap: bool
    groups_as_of: Optional[Millis]
    partitions: List[PartitionEvidence]
    schemas: Optional[SchemasEvidence]
    groups: Optional[List[GroupPositionEvidence]]
    share_groups: Optional[List[SharePositionEvidence]]
    seal: HexDigest


class _Head(msgspec.Struct):
    """What identifies a document, read before the rest (unknown members allowed)."""
    format: object = None
    version: object = None
    algorithm: object = None
    encoding: object = None


def seal(members: dict) -> str:
    """SHA-256 of ``members`` (the document less ``seal``) as canonical JSON: keys sorted, no
    space, UTF-8.  Any member edited after the restore wrote the document changes it."""
    canonical = json.dumps({k: v for k, v in members.items() if k != "seal"}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def document(spec: RestoreSpec, plan: SourcePlan, summaries, omap: OffsetMap, positions, share_positions) -> Evidence:
    """The evidence of a restore: ``summaries`` (each partition's, with its source digest: a restore
    run with ``spec.digest``), ``omap``, the group positions (None: ``--no-groups``) and share group
    positions translated."""
    by_key = {(s.topic, s.partition): s for s in summaries}
    # in the order they were restored: a DLQ's after the partitions its dead letters name (the
    # check translates them through the map recomputed so far: kafkarec/restore/deadletters.py)
    order = {k: i for i, k in enumerate(by_key)}
    partitions = sorted(plan.partitions, key=lambda p: order.get(p.key, len(order)))
    parts = []
    ranges = []
    for part in partitions:
        source_end, target_end = omap.ends.get(part.key, (part.end, 0))
        ranges.append((part.topic, part.partition, part.start, source_end))
    left_out = not_restored(spec, ranges, listing=plan.listing)
    for part, (_, _, start, source_end) in zip(partitions, ranges):
        s = by_key[part.key]
        if s.source_digest is None:
            raise UsageError(f"{part.topic}-{part.partition}: the restore took no digest (spec.digest is off)")
        target_end = omap.ends[part.key][1]
        first = next(omap.pairs(*part.key), (None, target_end))[1]
        parts.append({"topic": part.topic, "partition": part.partition, "log_end": part.log_end,
                      "source": {"start": start, "end": source_end, "records": s.source_records,
                                 "digest": s.source_digest},
                      # the records as written, their schema ids translated: their own digest
                      "target": {"topic": part.target_topic, "partition": part.partition, "start": first,
                                 "end": target_end, **({} if s.target_digest is None else {"digest": s.target_digest})},
                      "offset_map": {"runs": len(list(omap.runs(*part.key))), "digest": omap.digest(*part.key)},
                      "not_restored": left_out[part.key]._asdict()})
    from kafkarec.restore.schemas import translation_for
    tr = translation_for(spec)
    members = {
        "format": FORMAT, "version": VERSION, "algorithm": ALGORITHM, "encoding": ENCODING,
        "source": spec.source, "target": spec.target, "restore_id": spec.restore_id,
        "topics": None if spec.topics is None else list(spec.topics), "end_time": spec.end_time,
        "source_bootstrap": spec.bootstrap is not None,
        "groups_as_of": spec.groups_as_of, "partitions": parts,
        "schemas": None if tr is None else tr.evidence({p.topic for p in plan.partitions}),
        "groups": None if positions is None else [
            {"group": g.group, "topic": g.topic, "partition": g.partition, "source_offset": g.source_offset,
             "target_topic": g.target_topic, "target_offset": g.target_offset} for g in positions],
        "share_groups": None if share_positions is None else [
            {"group": g.group, "topic": g.topic, "partition": g.partition, "source_start": g.source_start,
             "target_topic": g.target_topic, "target_start": g.target_start} for g in share_positions]}
    # through the one decoder: a document this restore could not read back is never written
    members = msgspec.to_builtins(msgspec.convert(dict(members, seal="0" * 64), Evidence))
    members["seal"] = seal(members)
    return decode(members, "the restore's evidence")


def write(doc: Evidence, path: str) -> None:
    """The document at ``path``, written whole."""
    from kafkarec._boot.files import atomic_write
    atomic_write(os.fspath(path), (json.dumps(msgspec.to_builtins(doc), indent=1, sort_keys=True) + "\n").encode(),
                 mode=0o644)


#: a document's size past which it is refused before it is parsed (a few hundred bytes a partition
#: and a group position: no restore's evidence comes near)
MAX_DOCUMENT_BYTES = 256 << 20


def document_bytes(path: str) -> bytes:
    """The bytes of an evidence document at ``path`` (either kind of restore's), its size checked
    before it is read; a :class:`UsageError` naming the file otherwise."""
    try:
        if os.path.getsize(path) > MAX_DOCUMENT_BYTES:
            raise UsageError(f"evidence {path}: larger than {MAX_DOCUMENT_BYTES} bytes: not a restore's evidence")
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as e:
        raise UsageError(f"evidence {path}: {e}") from None


def read(path: str) -> Evidence:
    """A document :func:`write` wrote, decoded (:func:`decode`); anything else a :class:`UsageError`
    naming what is wrong."""
    return decode(document_bytes(path), f"evidence {path}")


def decode(doc: Union[bytes, str, dict, Evidence], where: str = "evidence") -> Evidence:
    """The one way in: a document's JSON text (or its JSON value) decoded into :class:`Evidence`,
    every member typed and in range and every key listed once; anything else a one-line
    :class:`UsageError` that starts with ``where`` and names the member and the value."""
    if isinstance(doc, Evidence):
        return doc
    try:
        if isinstance(doc, (bytes, str)):
            head = msgspec.json.decode(doc, type=_Head)
        else:
            head = msgspec.convert(doc, _Head) if isinstance(doc, dict) else None
    except (msgspec.DecodeError, RecursionError) as e:
        raise UsageError(f"{where}: not JSON ({_short(e)})") from None
    if head is None or head.format != FORMAT or type(head.version) is not int or head.version != VERSION:
        older = head is not None and head.format == FORMAT and type(head.version) is int and head.version < VERSION
        raise UsageError(f"{where}: not a {FORMAT} document of version {VERSION}"
                         + (f" (version {head.version}: written by an earlier kafkarec, whose evidence records "
                            "too little to be checked whole; restore again with --evidence)" if older else ""))
    if head.algorithm != ALGORITHM or head.encoding != ENCODING:
        raise UsageError(f"{where}: digests of {head.algorithm}/{head.encoding}, this kafkarec takes "
                         f"{ALGORITHM}/{ENCODING}")
    try:
        ev = (msgspec.json.decode(doc, type=Evidence) if isinstance(doc, (bytes, str))
              else msgspec.convert(doc, Evidence))
    except msgspec.ValidationError as e:
        raise UsageError(f"{where}: {_short(e)}") from None
    except (msgspec.DecodeError, RecursionError) as e:
        raise UsageError(f"{where}: not JSON ({_short(e)})") from None
    problem = _inconsistent(ev)
    if problem:
        raise UsageError(f"{where}: {problem}")
    return ev


def _short(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text if len(text) <= 300 else text[:300] + "..."


def _inconsistent(ev: Evidence) -> Optional[str]:
    """What no restore writes: a range ending before it starts, a key listed twice."""
    for i, p in enumerate(ev.partitions):
        at = f"$.partitions[{i}]"
        if p.source.end < p.source.start or p.log_end < p.source.end:
            return (f"{at}: the source range [{p.source.start}, {p.source.end}) and log end {p.log_end} are "
                    "not in order (start <= end <= log end)")
        if p.target.end < p.target.start:
            return f"{at}.target: the range [{p.target.start}, {p.target.end}) ends before it starts"
    for what, keys in (
            ("partitions", [(p.topic, p.partition) for p in ev.partitions]),
            ("partitions' targets", [(p.target.topic, p.target.partition) for p in ev.partitions]),
            ("groups", [(g.group, g.topic, g.partition) for g in ev.groups or ()]),
            ("share_groups", [(g.group, g.topic, g.partition) for g in ev.share_groups or ()]),
            ("schemas.ids", [m.source_id for m in ev.schemas.ids] if ev.schemas else []),
            ("schemas.framed", [f.topic for f in ev.schemas.framed or ()] if ev.schemas else [])):
        seen = set()
        for k in keys:
            if k in seen:
                return f"$.{what}: {k!r} is listed twice"
            seen.add(k)
    return None


# --- the check ---------------------------------------------------------------------------------

class CheckReport(NamedTuple):
    """What :func:`check` compared (``records``: source records, ``groups``, ``shares``: positions)
    and every difference (``problems``; none: the target holds exactly what the evidence says);
    ``notes``: what was not compared and why."""
    records: int
    groups: int
    shares: int
    problems: List[str]
    notes: List[str]

    @property
    def ok(self) -> bool:
        return not self.problems and self.records > 0


class _Side:
    """The target as the check reads it: a log dir (kafkarec's reader, read_committed) or a
    bootstrap (a read_committed consumer, as ``--verify``)."""

    def __init__(self, target: str, properties, timeout: float, bootstrap: Optional[str] = None):
        self.log_dir = target if os.path.isdir(target) else None
        self._ends: Optional[Dict[Tuple[str, int], Tuple[int, int]]] = None
        self.spec = RestoreSpec.of(target if self.log_dir else "-", None if self.log_dir else target,
                                   target_properties=properties, timeout=timeout)
        # the running target's broker beside its log dir: its log starts lead the checkpoint's (written
        # every log.flush.start.offset.checkpoint.interval.ms, 60 s by default)
        self.broker = None if bootstrap is None else RestoreSpec.of("-", bootstrap, target_properties=properties,
                                                                      timeout=timeout)

    def records(self, topic: str, partition: int, start: int) -> Iterator:
        from kafkarec.restore import source, target
        if self.log_dir:
            return source.committed_records(self.spec, topic, partition, start, 2 ** 63 - 1)
        return (r for r in target.read_back(self.spec, topic, partition) if r.offset >= start)

    def _listed(self) -> Dict[Tuple[str, int], Tuple[int, int]]:
        """``{(topic, partition): (log start, log end)}`` of the target's log dir, listed once."""
        if self._ends is None:
            from kafkarec.scan import LogScan, ScanConfig
            listed = LogScan(ScanConfig.of(self.log_dir)).listing()
            self._ends = {log.key: (listed.resolver.log_start(log), listed.resolver.log_end(log))
                          for log in listed.layout.partitions}
        return self._ends

    def log_start(self, topic: str, partition: int) -> Optional[int]:
        """The partition's log start offset as its broker serves it: its log dir's checkpoint (a
        ``deleteRecords`` past the first segment's base) or, where the running target's bootstrap is
        given too, the later of it and its broker's (ListOffsets EARLIEST); a bootstrap's alone."""
        start = None
        if self.log_dir:
            got = self._listed().get((topic, partition))
            start = None if got is None else got[0]
        broker = self.broker if self.log_dir else self.spec
        if broker is not None:
            from kafkarec.restore import target
            asked = target.list_offsets(broker, [(topic, partition)], "earliest")[(topic, partition)]
            start = asked if start is None else max(start, asked)
        return start

    def end(self, topic: str, partition: int) -> Optional[int]:
        """The partition's end: its log end (a log dir), its last stable offset (a bootstrap)."""
        if self.log_dir:
            got = self._listed().get((topic, partition))
            return None if got is None else got[1]
        from kafkarec.restore import target
        return target.ends(self.spec, [(topic, partition)])[(topic, partition)]

    def group_offsets(self, wanted) -> Dict[Tuple[str, str, int], int]:
        """``{(group, topic, partition): committed offset}`` of the ``wanted`` keys."""
        if self.log_dir:
            from kafkarec.cluster.coordinators import committed_offsets
            if not any(n.startswith("__consumer_offsets-") for n in os.listdir(self.log_dir)):
                return {}
            return {k: v["offset"] for k, v in committed_offsets(self.log_dir).items() if k in wanted}
        from kafkarec._extras import require
        from kafkarec.restore import target
        from kafkarec.restore.check import _committed
        ck = require("confluent_kafka")
        asker = target.admin(self.spec)
        out: Dict[Tuple[str, str, int], int] = {}
        for group in sorted({g for g, _, _ in wanted}):
            tps = [ck.TopicPartition(t, p) for g, t, p in sorted(wanted) if g == group]
            request = [ck.ConsumerGroupTopicPartitions(group, tps)]
            got = target.retried(self.spec, "reading the group's offsets",
                                 lambda left, request=request, group=group: _committed(self.spec, asker, request,
                                                                                       group, left), group=group)
            out.update({(group, t, p): o for (t, p), o in got.items() if o >= 0})
        return out

    def share_starts(self, topics) -> Dict[Tuple[str, str, int], int]:
        if self.log_dir:
            from kafkarec.restore.shares import _states
            states = _states(self.spec)
        else:
            from kafkarec.restore import target
            states = target.share_states(self.spec, topics)
        return {k: s["start_offset"] for k, s in states.items()}


def check(evidence: Union[Evidence, dict], source: str, target: str, *, target_properties=None,
          timeout: float = 30.0, storage_options=None, tiered_storage: Optional[str] = None,
          max_problems: int = 50, target_bootstrap: Optional[str] = None) -> CheckReport:
    """Recompute ``evidence`` (an :class:`Evidence`, or its JSON value: decoded by :func:`decode`)
    from ``source`` (a history as the restore read it) and ``target`` (the target's log dir, or its
    bootstrap servers; with ``target_bootstrap`` beside a log dir, the running target's log starts
    are its broker's) and name every difference: every member of the document is compared with
    what the two sides hold now (docs/restore.md lists each member and what it is compared with)."""
    from kafkarec.restore import groups as G
    from kafkarec.restore import shares as S
    from kafkarec.restore import source as src
    ev = decode(evidence)
    problems: List[str] = []
    notes: List[str] = []

    def problem(text: str) -> None:
        if len(problems) < max_problems:
            problems.append(text)
        elif len(problems) == max_problems:
            problems.append("... (more differences not named)")

    members = msgspec.to_builtins(ev)
    if seal(members) != ev.seal:
        problem(f"the evidence's seal {ev.seal} is not its members' ({seal(members)}): the document was edited "
                "after the restore wrote it")
    if _where(source) != _where(ev.source):
        notes.append(f"the evidence names the source {ev.source}; checked against {source}")
    spec = RestoreSpec.of(source, None, topics=ev.topics, end_time=ev.end_time, groups_as_of=ev.groups_as_of,
                          storage_options=storage_options, tiered_storage=tiered_storage)
    # the source planned again as the restore planned it: each range's start (the log start), end (H at
    # the evidence's end time) and log end are compared, and so is the set of partitions
    source_plan = src.plan(spec)
    listing = source_plan.listing       # the source listed once: every read below plans over it
    planned = {p.key: p for p in source_plan.partitions}
    said = {p.key for p in ev.partitions}
    for topic, partition in sorted(set(planned) - said):
        problem(f"{topic}-{partition}: the source holds this partition of the restore's topics; the evidence "
                "does not")
    rewriter = None
    if ev.schemas is not None:
        # the source's records as the restore wrote them: ids translated by the evidence's own map
        from kafkarec.restore.schemas import rewriter_from_evidence
        rewriter = rewriter_from_evidence(ev.schemas)
        notes.append(f"schema ids translated as the evidence says ({len(ev.schemas.ids)} id(s), "
                     f"{ev.schemas.unknown.count} field(s) left as they were)")
    if target_bootstrap is not None and not os.path.isdir(target):
        raise UsageError(f"--target-bootstrap with a TARGET that is not a log dir ({target}): the target is read "
                         "through one of them")
    side = _Side(target, target_properties, timeout, target_bootstrap)
    omap = OffsetMap()
    records = 0
    parts: List[SourcePartition] = []
    # dead letters as the restore wrote them, through the map recomputed so far (the plan's order
    # puts DLQ topics after the partitions they name: kafkarec/restore/deadletters.py)
    from kafkarec.restore.deadletters import Translation
    translation = Translation(SourcePlan(parts, {}), omap)
    left_out = not_restored(spec, [(p.topic, p.partition, p.source.start, p.source.end) for p in ev.partitions],
                            listing=listing)
    for p in ev.partitions:
        topic, partition, s, t = p.topic, p.partition, p.source, p.target
        tt = t.topic
        where = f"{topic}-{partition} -> {tt}-{t.partition}"
        now = planned.get(p.key)
        if now is None:
            problem(f"{where}: the source holds no such partition of the restore's topics")
        else:
            _check_range(where, p, now, ev.source_bootstrap, problem, notes)
        if t.partition != partition:
            problem(f"{where}: a restore writes each partition into the same partition number; the evidence "
                    f"says {t.partition}")
        parts.append(SourcePartition(topic, partition, s.start, s.end, p.log_end, tt))
        sd, td = Digest(), Digest()
        # the target read as its consumer reads it: from its log start (a deleteRecords past the
        # evidence's start leaves records in the files that no consumer is served)
        target_start = side.log_start(tt, t.partition)
        if target_start is not None and target_start > t.start:
            problem(f"{where}: the target partition's log start is {target_start}, past the evidence's target "
                    f"start {t.start}: Kafka's consumer no longer returns [{t.start}, {target_start})")
        got = side.records(tt, t.partition, max(t.start, target_start or 0))
        first = None
        first_target = None
        extra = 0
        try:
            for r in src.committed_records(spec, topic, partition, s.start, s.end, listing):
                r = translation.record(r)
                enc = _encoded(r)
                sd.add_encoded(enc)
                if rewriter is not None:
                    r = rewriter.rewrite(topic, partition, r)
                    enc = _encoded(r)
                x = next(got, None)
                if x is None or x.offset >= t.end:
                    if first is None:
                        first = f"source offset {r.offset} has no record on the target"
                    if x is not None:
                        extra += 1
                    continue
                if first_target is None:
                    first_target = x.offset
                got_enc = _encoded(x)
                td.add_encoded(got_enc)
                if got_enc != enc and first is None:
                    first = (f"source offset {r.offset} and target offset {x.offset} differ "
                             f"({_what_differs(r, x)})")
                omap.add(topic, partition, tt, r.offset, x.offset)
            for x in got:
                if x.offset < t.end:
                    td.add(x)
                    if first is None:
                        first = f"target offset {x.offset} holds a record the source's range does not"
                else:
                    extra += 1
        finally:
            close = getattr(got, "close", None)
            if close is not None:
                close()
        records += sd.records
        end = side.end(tt, t.partition)
        omap.set_end(topic, partition, tt, s.end, end if end is not None else 0)
        if (sd.records, sd.hexdigest()) != (s.records, s.digest):
            problem(f"{where}: the source's [{s.start}, {s.end}) holds {sd.records} committed records, "
                    f"digest {sd.hexdigest()}; the evidence says {s.records}, {s.digest}")
        written = t.digest if t.digest is not None else s.digest
        if (td.records, td.hexdigest()) != (s.records, written):
            problem(f"{where}: the target's [{t.start}, {t.end}) holds {td.records} committed records, "
                    f"digest {td.hexdigest()}; the evidence says {s.records}, {written}"
                    + (f"; first difference: {first}" if first else ""))
        elif first:
            # the digests agree, the records do not: the source's records, rewritten as the evidence
            # says, are not the target's (a schema id map that does not map onto the target's ids)
            problem(f"{where}: the source's records as the evidence says they were written are not the target's; "
                    f"first difference: {first}")
        if first_target is not None and first_target != t.start:
            problem(f"{where}: the first restored record is at target offset {first_target}; the evidence says "
                    f"{t.start}")
        if end != t.end:
            problem(f"{where}: the target partition ends at {end}; the evidence says {t.end}")
        if extra:
            problem(f"{where}: the target holds {extra} committed record(s) past the target range's end {t.end}")
        digest, runs = omap.digest(topic, partition), len(list(omap.runs(topic, partition)))
        if (digest, runs) != (p.offset_map.digest, p.offset_map.runs):
            problem(f"{where}: the offset map recomputed from both sides has digest {digest} "
                    f"({runs} runs); the evidence says {p.offset_map.digest} ({p.offset_map.runs} runs)")
        counted = left_out[(topic, partition)]._asdict()
        for k, v in msgspec.to_builtins(p.not_restored).items():
            if counted.get(k) != v:
                problem(f"{where}: the source holds {counted.get(k)} {k.replace('_', ' ')} record(s); "
                        f"the evidence says {v}")
    if rewriter is not None:
        _check_unknown(ev.schemas.unknown, rewriter, problem)
    plan = SourcePlan(parts, {})
    groups = shares = 0
    if ev.groups is None:
        notes.append("the restore left the groups alone (--no-groups): no group compared")
    else:
        groups = _check_groups(ev.groups, G.translate(spec, plan, omap), side, problem)
    if ev.share_groups is not None:
        shares = _check_shares(ev.share_groups, S.translate_shares(spec, plan, omap), side, problem, notes)
    if records == 0:
        problem("no record was compared: the evidence's ranges hold no committed record, a check of nothing")
    return CheckReport(records, groups, shares, problems, notes)


def _check_range(where: str, p: PartitionEvidence, now: SourcePartition, from_broker: bool, problem,
                 notes: List[str]) -> None:
    """The evidence's source range and log end against the source planned again.  Bounded by a running
    broker (``source_bootstrap``), the range may lie inside the files' (a checkpoint lags its
    broker's log start): then it must lie within them."""
    if p.log_end != now.log_end:
        problem(f"{where}: the source's log ends at {now.log_end}; the evidence says {p.log_end}")
    s = p.source
    if (s.start, s.end) == (now.start, now.end):
        return
    if from_broker and now.start <= s.start <= s.end <= now.end:
        notes.append(f"{where}: the range [{s.start}, {s.end}) came from the running source's broker; the files "
                     f"give [{now.start}, {now.end}), which holds it")
        return
    problem(f"{where}: the source's range is [{now.start}, {now.end}) (its log start, and H at the evidence's end "
            f"time); the evidence says [{s.start}, {s.end})")


def _check_unknown(said: UnknownFields, rewriter, problem) -> None:
    """The fields the translation left as they were, counted again by rewriting the source's records
    (named one by one up to the translation's bound, in the order a restore met them)."""
    if rewriter.unknown_count != said.count:
        problem(f"schemas: the source holds {rewriter.unknown_count} framed field(s) whose id is not translated; "
                f"the evidence says {said.count}")
        return
    named = {tuple(msgspec.to_builtins(u).values()) for u in said.named}
    again = {(u.topic, u.partition, u.offset, u.field, u.schema_id) for u in rewriter.unknown}
    if len(said.named) != len(rewriter.unknown) or (said.count <= len(said.named) and named != again):
        problem(f"schemas: the fields left as they were are {sorted(again, key=str)[:3]}...; the evidence names "
                f"{sorted(named, key=str)[:3]}...")


def _where(path: str) -> str:
    """A source as a place: a local path made absolute, a URI as given."""
    return path if "://" in path else os.path.abspath(path)


def _encoded(r) -> bytes:
    return record_bytes(r.key, r.value, r.timestamp, r.headers)


def _what_differs(a, b) -> str:
    names = [n for n in ("key", "value", "headers", "timestamp")
             if (list(getattr(a, n)) if n == "headers" else getattr(a, n))
             != (list(getattr(b, n)) if n == "headers" else getattr(b, n))]
    return ", ".join(names) or "headers"


def _check_groups(said: List[GroupPositionEvidence], now, side: _Side, problem) -> int:
    """Each group position of the evidence against the source's, recomputed and translated, and the
    target's committed offset."""
    on_target = side.group_offsets({(g.group, g.target_topic, g.partition) for g in said})
    return _check_positions("group", "position", ("source_offset", "target_offset"), "stands at", said, now,
                            on_target, problem, None)


def _check_shares(said: List[SharePositionEvidence], now, side: _Side, problem, notes: List[str]) -> int:
    """Each share group position of the evidence against the source's, recomputed and translated,
    and the target's persisted start offset (a share group with no state on the target is a note:
    its start offset is set by Kafka's tool, as ``--verify`` says)."""
    starts = side.share_starts({g.target_topic for g in said}) if said else {}
    return _check_positions("share group", "start offset", ("source_start", "target_start"), "starts at", said, now,
                            starts, problem, notes)


def _check_positions(kind: str, what: str, fields: Tuple[str, str], verb: str, said: Sequence, now,
                     on_target: Dict[Tuple[str, str, int], int], problem, notes: Optional[List[str]]) -> int:
    """The evidence's positions (``said``: dicts with ``fields``) against ``now`` (recomputed from the
    source and translated: objects with the same fields) and ``on_target`` (``{(group, target topic,
    partition): offset}``); one missing on the target is a note where ``notes`` is given, else a
    problem."""
    src_field, tgt_field = fields
    now_by = {(g.group, g.topic, g.partition): g for g in now}
    said_by = {(g.group, g.topic, g.partition): g for g in said}
    for k in sorted(set(now_by) - set(said_by)):
        problem(f"{kind} {k[0]}: {k[1]}-{k[2]} has source {what} {getattr(now_by[k], src_field)}, which the "
                "evidence does not hold")
    for k, g in sorted(said_by.items()):
        n = now_by.get(k)
        if n is None:
            problem(f"{kind} {k[0]}: {k[1]}-{k[2]}: the evidence says source {what} {getattr(g, src_field)}; the source "
                    "holds none")
        elif (getattr(n, src_field), getattr(n, tgt_field), n.target_topic) != (
                getattr(g, src_field), getattr(g, tgt_field), g.target_topic):
            problem(f"{kind} {k[0]}: {k[1]}-{k[2]}: source {what} {getattr(n, src_field)} translates to "
                    f"{n.target_topic}-{k[2]} {getattr(n, tgt_field)}; the evidence says {getattr(g, src_field)} -> "
                    f"{g.target_topic}-{k[2]} {getattr(g, tgt_field)}")
        where = f"{kind} {k[0]}: {g.target_topic}-{g.partition}"
        have = on_target.get((g.group, g.target_topic, g.partition))
        if have is None and notes is not None:
            notes.append(f"{where} has no state on the target (its start offset is not set there yet): not compared")
        elif have != getattr(g, tgt_field):
            problem(f"{where} {verb} {have} on the target; the evidence says {getattr(g, tgt_field)}")
    return len(said_by)
