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
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from kafkarec.errors import UsageError
from kafkarec.restore.offsets import OffsetMap
from kafkarec.restore.source import SourcePartition, SourcePlan
from kafkarec.restore.spec import RestoreSpec

__all__ = ["FORMAT", "VERSION", "ENCODING", "ALGORITHM", "record_bytes", "Digest", "NotRestored", "not_restored",
           "document", "write", "read", "CheckReport", "check"]

FORMAT, VERSION = "kafkarec-restore-evidence", 1
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


def _count(b, lo: int, hi: int) -> int:
    """The records of batch ``b`` whose offsets are in [lo, hi) (its records read only where the
    batch straddles a bound)."""
    first = b.base_offset if b.magic >= 2 else b.last_offset
    if b.last_offset < lo or first >= hi:
        return 0
    if first >= lo and b.last_offset < hi and b.magic >= 2:
        return b.record_count
    return sum(1 for r in b if lo <= r.offset < hi)


def not_restored(spec: RestoreSpec, parts: List[Tuple[str, int, int, int]],
                 source: Optional[str] = None, listing=None) -> Dict[Tuple[str, int], NotRestored]:
    """``{(topic, partition): NotRestored}`` of each ``(topic, partition, start, end)``: every batch
    header of the partition's log walked once and judged by the transaction rule (over
    ``listing``, the restore plan's, when given: the source not listed again)."""
    from kafkarec.scan import ABORTED, CONTROL
    walks = _walks(source or spec.source, spec, {(t, p) for t, p, _, _ in parts}, listing)
    out: Dict[Tuple[str, int], NotRestored] = {}
    for topic, partition, start, end in parts:
        walk = walks.get((topic, partition))
        if walk is None:
            out[(topic, partition)] = NotRestored(0, 0, 0)
            continue
        seen: List[tuple] = []
        below = [0]

        def visit(b, start=start, end=end):
            below[0] += _count(b, -1, start)
            if b.is_control or (b.magic >= 2 and b.is_transactional):
                n = _count(b, start, end)
                if n:
                    seen.append((b.path, b.position, b.is_control, n))
        verdict = walk.judge(visit)
        aborted = control = 0
        for path, position, is_control, n in seen:
            kind = verdict.kind(path, position, is_control)
            if kind == CONTROL:
                control += n
            elif kind == ABORTED:
                aborted += n
        out[(topic, partition)] = NotRestored(aborted, control, below[0])
    return out


# --- the document ------------------------------------------------------------------------------

def document(spec: RestoreSpec, plan: SourcePlan, summaries, omap: OffsetMap, positions, share_positions) -> dict:
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
        target = {"topic": part.target_topic, "partition": part.partition, "start": first, "end": target_end}
        if s.target_digest is not None:     # the records as written, their schema ids translated
            target["digest"] = s.target_digest
        parts.append({"topic": part.topic, "partition": part.partition, "log_end": part.log_end,
                      "source": {"start": start, "end": source_end, "records": s.source_records,
                                 "digest": s.source_digest},
                      "target": target,
                      "offset_map": {"runs": len(list(omap.runs(*part.key))), "digest": omap.digest(*part.key)},
                      "not_restored": left_out[part.key]._asdict()})
    from kafkarec.restore.schemas import translation_for
    tr = translation_for(spec)
    return {"format": FORMAT, "version": VERSION, "algorithm": ALGORITHM, "encoding": ENCODING,
            "source": spec.source, "target": spec.target, "restore_id": spec.restore_id,
            "groups_as_of": spec.groups_as_of, "partitions": parts,
            "schemas": None if tr is None else tr.evidence({p.topic for p in plan.partitions}),
            "groups": None if positions is None else [
                {"group": g.group, "topic": g.topic, "partition": g.partition, "source_offset": g.source_offset,
                 "target_topic": g.target_topic, "target_offset": g.target_offset} for g in positions],
            "share_groups": None if share_positions is None else [
                {"group": g.group, "topic": g.topic, "partition": g.partition, "source_start": g.source_start,
                 "target_topic": g.target_topic, "target_start": g.target_start} for g in share_positions]}


def write(doc: dict, path: str) -> None:
    """The document at ``path``, written whole."""
    from kafkarec._boot.files import atomic_write
    atomic_write(os.fspath(path), (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode(), mode=0o644)


#: a document's size past which it is refused before it is parsed (a few hundred bytes a partition
#: and a group position: no restore's evidence comes near)
MAX_DOCUMENT_BYTES = 256 << 20


def read(path: str) -> dict:
    """A document :func:`write` wrote; anything else a :class:`UsageError` naming what is wrong."""
    try:
        if os.path.getsize(path) > MAX_DOCUMENT_BYTES:
            raise UsageError(f"evidence {path}: larger than {MAX_DOCUMENT_BYTES} bytes: not a restore's evidence")
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"evidence {path}: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise UsageError(f"evidence {path}: not a {FORMAT} document of version {VERSION}")
    if doc.get("algorithm") != ALGORITHM or doc.get("encoding") != ENCODING:
        raise UsageError(f"evidence {path}: digests of {doc.get('algorithm')}/{doc.get('encoding')}, "
                         f"this kafkarec takes {ALGORITHM}/{ENCODING}")
    try:
        for p in doc["partitions"]:
            _ints(p, "partition", "log_end")
            _ints(p["source"], "start", "end", "records")
            _ints(p["target"], "partition", "start", "end")
            _ints(p["not_restored"], "aborted", "control", "below_log_start")
            for k in ("topic",):
                if not isinstance(p[k], str) or not isinstance(p["target"][k], str):
                    raise ValueError(f"{k} is not a string")
            for d in (p["source"]["digest"], p["offset_map"]["digest"], p["target"].get("digest", "0" * 64)):
                if not (isinstance(d, str) and len(d) == 64):
                    raise ValueError("a digest is not 64 hex digits")
        schemas = doc.get("schemas")
        if schemas is not None:
            if schemas["subject_strategy"] not in ("topic", "record", "topic_record"):
                raise ValueError(f"subject strategy {schemas['subject_strategy']!r}")
            for m in schemas["ids"]:
                _ints(m, "source_id", "target_id")
            for f in schemas["framed"] or ():
                if not (isinstance(f["topic"], str) and isinstance(f["key"], bool) and isinstance(f["value"], bool)):
                    raise ValueError("a framed topic is not {topic, key, value}")
        for g in doc["groups"] or ():
            _ints(g, "partition", "source_offset", "target_offset")
        for g in doc["share_groups"] or ():
            _ints(g, "partition", "source_start", "target_start")
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"evidence {path}: a field is missing or of the wrong type ({e!r})") from None
    return doc


def _ints(obj: dict, *names: str) -> None:
    for n in names:
        v = obj[n]
        if type(v) is not int or not -1 <= v < 2 ** 63:
            raise ValueError(f"{n} {v!r} is not an offset")


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

    def __init__(self, target: str, properties, timeout: float):
        self.log_dir = target if os.path.isdir(target) else None
        self._ends: Optional[Dict[Tuple[str, int], int]] = None
        self.spec = RestoreSpec.of(target if self.log_dir else "-", None if self.log_dir else target,
                                   target_properties=properties, timeout=timeout)

    def records(self, topic: str, partition: int, start: int) -> Iterator:
        from kafkarec.restore import source, target
        if self.log_dir:
            return source.committed_records(self.spec, topic, partition, start, 2 ** 63 - 1)
        return (r for r in target.read_back(self.spec, topic, partition) if r.offset >= start)

    def end(self, topic: str, partition: int) -> Optional[int]:
        """The partition's end: its log end (a log dir), its last stable offset (a bootstrap)."""
        if self.log_dir:
            if self._ends is None:      # the log dir listed once
                from kafkarec.scan import LogScan, ScanConfig
                listed = LogScan(ScanConfig.of(self.log_dir)).listing()
                self._ends = {log.key: listed.resolver.log_end(log) for log in listed.layout.partitions}
            return self._ends.get((topic, partition))
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


def check(evidence: dict, source: str, target: str, *, target_properties=None, timeout: float = 30.0,
          storage_options=None, tiered_storage: Optional[str] = None, max_problems: int = 50) -> CheckReport:
    """Recompute ``evidence`` from ``source`` (a history as the restore read it) and ``target`` (the
    target's log dir, or its bootstrap servers) and name every difference."""
    from kafkarec.restore import groups as G
    from kafkarec.restore import shares as S
    from kafkarec.restore import source as src
    problems: List[str] = []
    notes: List[str] = []

    def problem(text: str) -> None:
        if len(problems) < max_problems:
            problems.append(text)
        elif len(problems) == max_problems:
            problems.append("... (more differences not named)")

    spec = RestoreSpec.of(source, None, groups_as_of=evidence["groups_as_of"], storage_options=storage_options,
                          tiered_storage=tiered_storage)
    rewriter = None
    if evidence.get("schemas") is not None:
        # the source's records as the restore wrote them: ids translated by the evidence's own map
        from kafkarec.restore.schemas import rewriter_from_evidence
        rewriter = rewriter_from_evidence(evidence["schemas"])
        notes.append(f"schema ids translated as the evidence says ({len(evidence['schemas']['ids'])} id(s), "
                     f"{evidence['schemas']['unknown']['count']} field(s) left as they were)")
    side = _Side(target, target_properties, timeout)
    omap = OffsetMap()
    records = 0
    parts: List[SourcePartition] = []
    # dead letters as the restore wrote them, through the map recomputed so far (the plan's order
    # puts DLQ topics after the partitions they name: kafkarec/restore/deadletters.py)
    from kafkarec.restore.deadletters import Translation
    translation = Translation(SourcePlan(parts, {}), omap)
    left_out = not_restored(spec, [(p["topic"], p["partition"], p["source"]["start"], p["source"]["end"])
                                   for p in evidence["partitions"]])
    for p in evidence["partitions"]:
        topic, partition, s, t = p["topic"], p["partition"], p["source"], p["target"]
        tt = t["topic"]
        where = f"{topic}-{partition} -> {tt}-{partition}"
        parts.append(SourcePartition(topic, partition, s["start"], s["end"], p["log_end"], tt))
        sd, td = Digest(), Digest()
        got = side.records(tt, partition, t["start"])
        first = None
        extra = 0
        try:
            for r in src.committed_records(spec, topic, partition, s["start"], s["end"]):
                r = translation.record(r)
                enc = _encoded(r)
                sd.add_encoded(enc)
                if rewriter is not None:
                    r = rewriter.rewrite(topic, partition, r)
                    enc = _encoded(r)
                x = next(got, None)
                if x is None or x.offset >= t["end"]:
                    if first is None:
                        first = f"source offset {r.offset} has no record on the target"
                    if x is not None:
                        extra += 1
                    continue
                got_enc = _encoded(x)
                td.add_encoded(got_enc)
                if got_enc != enc and first is None:
                    first = (f"source offset {r.offset} and target offset {x.offset} differ "
                             f"({_what_differs(r, x)})")
                omap.add(topic, partition, tt, r.offset, x.offset)
            for x in got:
                if x.offset < t["end"]:
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
        end = side.end(tt, partition)
        omap.set_end(topic, partition, tt, s["end"], end if end is not None else 0)
        if (sd.records, sd.hexdigest()) != (s["records"], s["digest"]):
            problem(f"{where}: the source's [{s['start']}, {s['end']}) holds {sd.records} committed records, "
                    f"digest {sd.hexdigest()}; the evidence says {s['records']}, {s['digest']}")
        written = t.get("digest", s["digest"])
        if (td.records, td.hexdigest()) != (s["records"], written):
            problem(f"{where}: the target's [{t['start']}, {t['end']}) holds {td.records} committed records, "
                    f"digest {td.hexdigest()}; the evidence says {s['records']}, {written}"
                    + (f"; first difference: {first}" if first else ""))
        if end != t["end"]:
            problem(f"{where}: the target partition ends at {end}; the evidence says {t['end']}")
        if extra:
            problem(f"{where}: the target holds {extra} committed record(s) past the target range's end {t['end']}")
        digest = omap.digest(topic, partition)
        if digest != p["offset_map"]["digest"]:
            problem(f"{where}: the offset map recomputed from both sides has digest {digest} "
                    f"({len(list(omap.runs(topic, partition)))} runs); the evidence says {p['offset_map']['digest']} "
                    f"({p['offset_map']['runs']} runs)")
        now = left_out[(topic, partition)]._asdict()
        for k, v in p["not_restored"].items():
            if now.get(k) != v:
                problem(f"{where}: the source holds {now.get(k)} {k.replace('_', ' ')} record(s); "
                        f"the evidence says {v}")
    plan = SourcePlan(parts, {})
    groups = shares = 0
    if evidence["groups"] is None:
        notes.append("the restore left the groups alone (--no-groups): no group compared")
    else:
        groups = _check_groups(evidence["groups"], G.translate(spec, plan, omap), side, problem)
    if evidence["share_groups"] is not None:
        shares = _check_shares(evidence["share_groups"], S.translate_shares(spec, plan, omap), side, problem, notes)
    if records == 0:
        problem("no record was compared: the evidence's ranges hold no committed record, a check of nothing")
    return CheckReport(records, groups, shares, problems, notes)


def _encoded(r) -> bytes:
    return record_bytes(r.key, r.value, r.timestamp, r.headers)


def _what_differs(a, b) -> str:
    names = [n for n in ("key", "value", "headers", "timestamp")
             if (list(getattr(a, n)) if n == "headers" else getattr(a, n))
             != (list(getattr(b, n)) if n == "headers" else getattr(b, n))]
    return ", ".join(names) or "headers"


def _check_groups(said: List[dict], now, side: _Side, problem) -> int:
    """Each group position of the evidence against the source's, recomputed and translated, and the
    target's committed offset."""
    on_target = side.group_offsets({(g["group"], g["target_topic"], g["partition"]) for g in said})
    return _check_positions("group", "position", ("source_offset", "target_offset"), "stands at", said, now,
                            on_target, problem, None)


def _check_shares(said: List[dict], now, side: _Side, problem, notes: List[str]) -> int:
    """Each share group position of the evidence against the source's, recomputed and translated,
    and the target's persisted start offset (a share group with no state on the target is a note:
    its start offset is set by Kafka's tool, as ``--verify`` says)."""
    starts = side.share_starts({g["target_topic"] for g in said}) if said else {}
    return _check_positions("share group", "start offset", ("source_start", "target_start"), "starts at", said, now,
                            starts, problem, notes)


def _check_positions(kind: str, what: str, fields: Tuple[str, str], verb: str, said: List[dict], now,
                     on_target: Dict[Tuple[str, str, int], int], problem, notes: Optional[List[str]]) -> int:
    """The evidence's positions (``said``: dicts with ``fields``) against ``now`` (recomputed from the
    source and translated: objects with the same fields) and ``on_target`` (``{(group, target topic,
    partition): offset}``); one missing on the target is a note where ``notes`` is given, else a
    problem."""
    src_field, tgt_field = fields
    now_by = {(g.group, g.topic, g.partition): g for g in now}
    said_by = {(g["group"], g["topic"], g["partition"]): g for g in said}
    for k in sorted(set(now_by) - set(said_by)):
        problem(f"{kind} {k[0]}: {k[1]}-{k[2]} has source {what} {getattr(now_by[k], src_field)}, which the "
                "evidence does not hold")
    for k, g in sorted(said_by.items()):
        n = now_by.get(k)
        if n is None:
            problem(f"{kind} {k[0]}: {k[1]}-{k[2]}: the evidence says source {what} {g[src_field]}; the source "
                    "holds none")
        elif (getattr(n, src_field), getattr(n, tgt_field)) != (g[src_field], g[tgt_field]):
            problem(f"{kind} {k[0]}: {k[1]}-{k[2]}: source {what} {getattr(n, src_field)} translates to "
                    f"{getattr(n, tgt_field)}; the evidence says {g[src_field]} -> {g[tgt_field]}")
        where = f"{kind} {k[0]}: {g['target_topic']}-{g['partition']}"
        have = on_target.get((g["group"], g["target_topic"], g["partition"]))
        if have is None and notes is not None:
            notes.append(f"{where} has no state on the target (its start offset is not set there yet): not compared")
        elif have != g[tgt_field]:
            problem(f"{where} {verb} {have} on the target; the evidence says {g[tgt_field]}")
    return len(said_by)
