"""A restore that keeps the source's offsets (``--same-offsets``, docs/restore.md#same-offsets): the
source's log written into a fresh one-broker target's log dir while it is stopped, so that every
record, group position, checkpoint and offset column that names a source offset stays right.

Three steps, the broker's state between them the user's (:data:`kafkarec.restore.spec.SAME_OFFSETS_STEPS`):

* :func:`prepare` -- the target running: every target topic created with the source's partition
  count and configs (:func:`kafkarec.restore.target.ensure_topics`, the produced restore's), a topic
  already there refused if its partition count differs or it holds records, the log dir checked to
  be this cluster's (``meta.properties``' ``cluster.id``), and the journal written;
* :func:`write` -- the target stopped (its log dir's ``.lock`` free, and held while writing): each
  partition folder written by :func:`kafkarec.log.writer.write_partition` (the batches byte for
  byte but the leader epoch and the producer ids, ABORT markers for the transactions left open),
  the log dir's checkpoints, the clean-shutdown marker removed so that the broker rebuilds every
  side file;
* :func:`groups` -- the target running again: every partition checked to serve what was written
  (ListOffsets: its log start and end), then every consumer group's committed positions set as they
  were (:func:`kafkarec.restore.groups.apply`, the offsets untranslated).

The journal (:data:`JOURNAL`, a file in the log dir's root, which Kafka does not read) ties the
steps together: the cluster the log dir was prepared for, the source, the partitions, and the
state (``prepared``, ``writing``, ``written``); a write killed midway leaves ``writing``, and the
next write writes every partition again (a partition holding records is refused only while the
state is ``prepared``), so a re-run ends in the same folders.  Everything a step refuses is
refused before it writes anything.
"""
from __future__ import annotations

import json
import os
import time
from typing import Dict, List, NamedTuple, Optional, Tuple

from kafkarec.errors import LogDirWriteError, RestoreError
from kafkarec.log.writer import PartitionWritten
from kafkarec.restore.spec import RestoreSpec

__all__ = ["JOURNAL", "Prepared", "WrittenPartition", "prepare", "write", "groups", "read_journal"]

#: the journal's file name in the target log dir's root (Kafka loads folders only there)
JOURNAL = "kafkarec-same-offsets.json"


class Prepared(NamedTuple):
    """What :func:`prepare` did: the cluster id, the topics created and the partitions to write."""
    cluster_id: str
    created_topics: List[str]
    partitions: List[Tuple[str, int]]


class WrittenPartition(NamedTuple("_WrittenPartition", [("topic", str), ("partition", int), ("target_topic", str),
                                                        *PartitionWritten.__annotations__.items()])):
    """One partition as :func:`write` left it: its source partition and target topic, then
    :class:`kafkarec.log.writer.PartitionWritten`'s fields (named once, there)."""
    __slots__ = ()

    def line(self) -> str:
        """The command line's line for this partition: every field rewritten named."""
        pids = ", ".join(f"{s}->{t}" for s, t in sorted(self.producer_ids.items())) or "none"
        aborts = ", ".join(f"{o} (producer {p} epoch {e})" for o, p, e in self.abort_markers) or "none"
        return (f"{self.topic}-{self.partition} -> {self.target_topic}-{self.partition} [{self.log_start}, "
                f"{self.log_end}) {self.segments} segment(s) {self.bytes} bytes {self.batches} batches; rewritten: "
                f"partition leader epoch -> {self.leader_epoch}, producer ids {pids}, CRC of each batch with a "
                f"producer id; abort markers at {aborts}")


def _journal_path(spec: RestoreSpec) -> str:
    return os.path.join(spec.target_log_dir, JOURNAL)


def read_journal(log_dir: str) -> Optional[dict]:
    """The journal of ``log_dir``, or None when it has none."""
    try:
        with open(os.path.join(log_dir, JOURNAL), encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise LogDirWriteError(log_dir, f"{JOURNAL} is not the journal kafkarec writes: {e}") from None


def _write_journal(spec: RestoreSpec, doc: dict) -> None:
    from kafkarec._boot.files import atomic_write
    atomic_write(_journal_path(spec), json.dumps(doc, indent=1, sort_keys=True).encode(), mode=0o644)


def _cluster_id(spec: RestoreSpec) -> str:
    """The log dir's ``cluster.id`` (a :class:`LogDirWriteError` where it is no formatted log dir)."""
    from kafkarec.log.writer import meta_properties
    if not os.path.isdir(spec.target_log_dir):
        raise LogDirWriteError(spec.target_log_dir, "no such folder")
    found = meta_properties(spec.target_log_dir).get("cluster.id")
    if not found:
        raise LogDirWriteError(spec.target_log_dir, "meta.properties names no cluster.id")
    return found


def _targets(plan) -> List[Tuple[str, int]]:
    """Every target partition of the plan's topics, by the source's partition counts."""
    out = []
    for topic, desc in sorted(plan.topics.items()):
        tt = next((p.target_topic for p in plan.partitions if p.topic == topic), topic)
        out += [(tt, i) for i in range(desc.partitions)]
    return sorted(out)


def prepare(spec: RestoreSpec, plan=None) -> Prepared:
    """The target running: its topics created as the source's (see the module docstring)."""
    from kafkarec.restore import source, target
    p = plan if plan is not None else source.plan(spec)
    cluster = _cluster_id(spec)
    asker = target.admin(spec)
    meta = target.retried(spec, "asking the cluster's metadata", lambda left: asker.list_topics(timeout=left))
    if meta.cluster_id and meta.cluster_id != cluster:
        raise LogDirWriteError(spec.target_log_dir, f"it belongs to cluster {cluster}, the target at {spec.target} "
                                                    f"is cluster {meta.cluster_id}: not the target's log dir")
    wanted = _targets(p)
    counts: Dict[str, int] = {}
    for tt, i in wanted:
        counts[tt] = max(counts.get(tt, 0), i + 1)
    present = [(tt, i) for tt, i in wanted if tt in meta.topics]
    for tt in sorted({tt for tt, _ in present}):
        have = len(meta.topics[tt].partitions)
        if have != counts[tt]:
            raise RestoreError(spec.target, f"has {have} partition(s), the source {counts[tt]}: the offsets of a "
                                            "partition are kept only in the partition of the same number", topic=tt)
    if present:
        latest = target.list_offsets(spec, present, "latest", committed=False)
        full = sorted(k for k, o in latest.items() if o > 0)
        if full:
            raise RestoreError(spec.target, "already holds records (its log end is "
                                            f"{latest[full[0]]}): a restore at the source's offsets writes into "
                                            "empty partitions only", topic=full[0][0], partition=full[0][1])
    created = target.ensure_topics(spec, p)
    missing = _wait_folders(spec, wanted)
    if missing:
        raise LogDirWriteError(spec.target_log_dir, f"no folder {missing[0][0]}-{missing[0][1]} after the topic "
                                                    "was created: the target keeps it in another log dir (one log "
                                                    "dir per broker is supported)")
    _write_journal(spec, {"version": 1, "state": "prepared", "cluster_id": cluster, "source": spec.source,
                          "partitions": [[tt, i] for tt, i in wanted]})
    return Prepared(cluster, created, wanted)


def _wait_folders(spec: RestoreSpec, wanted) -> List[Tuple[str, int]]:
    """The partitions whose folder is still not in the log dir after ``spec.timeout`` (a leader
    creates its replica's folder as it takes the partition)."""
    deadline = time.monotonic() + spec.timeout
    while True:
        missing = [(tt, i) for tt, i in wanted
                   if not os.path.isdir(os.path.join(spec.target_log_dir, f"{tt}-{i}"))]
        if not missing or time.monotonic() > deadline:
            return missing
        time.sleep(0.1)


def write(spec: RestoreSpec, plan=None, on_partition=None) -> List[WrittenPartition]:
    """The target stopped: each partition folder written (see the module docstring);
    ``on_partition(WrittenPartition)`` called as each is written.  A journal already ``written`` for
    this source writes nothing and answers what it wrote."""
    from kafkarec.log import names, writer
    from kafkarec.restore import source, steps
    log_dir = spec.target_log_dir
    cluster = _cluster_id(spec)
    journal = read_journal(log_dir)
    if journal is None:
        raise LogDirWriteError(log_dir, f"no {JOURNAL}: run --same-offsets prepare first, with the target running")
    if journal.get("cluster_id") != cluster:
        raise LogDirWriteError(log_dir, f"it belongs to cluster {cluster}, prepared was cluster "
                                        f"{journal.get('cluster_id')}: not the prepared target's log dir")
    if journal.get("source") != spec.source:
        raise LogDirWriteError(log_dir, f"prepared for the source {journal.get('source')}, not {spec.source}")
    with writer.broker_lock(log_dir):
        if journal.get("state") == "written":
            return written(log_dir)
        p = plan if plan is not None else source.plan(spec)
        wanted = _targets(p)
        if [list(k) for k in wanted] != journal.get("partitions"):
            raise LogDirWriteError(log_dir, "the source's partitions are not those prepared: run --same-offsets "
                                            "prepare again")
        folders = {}
        for tt, i in wanted:
            folder = os.path.join(log_dir, f"{tt}-{i}")
            if not os.path.exists(os.path.join(folder, names.PARTITION_METADATA)):
                raise LogDirWriteError(log_dir, f"no {tt}-{i}/{names.PARTITION_METADATA}: the target's topic id "
                                                "is kept from it (the broker writes it as it creates the partition)")
            if journal.get("state") == "prepared" and writer.partition_holds_data(folder):
                raise LogDirWriteError(log_dir, f"{tt}-{i} holds records: a restore at the source's offsets "
                                                "writes into empty partitions only")
            folders[(tt, i)] = folder
        for tt in sorted({tt for tt, _ in wanted}):
            have = sum(1 for n in os.listdir(log_dir) if n.startswith(tt + "-") and n[len(tt) + 1:].isdigit())
            want = sum(1 for t, _ in wanted if t == tt)
            if have != want:
                raise LogDirWriteError(log_dir, f"{tt} has {have} partition folder(s), the source {want} partitions")
        if p.listing is None:
            raise LogDirWriteError(log_dir, "the source plan holds no listing of the source")
        tiered = [f"{log.topic}-{log.partition}" for log in p.listing.layout.partitions
                  if any(seg.remote for seg in log.segments)]
        if tiered:
            raise LogDirWriteError(log_dir, f"{tiered[0]} has tiered segments at the source: only local segments "
                                            "are written")
        journal["state"] = "writing"
        _write_journal(spec, journal)
        # before any segment: a broker started on a half-written log dir recovers it, never trusts it
        writer.remove_clean_shutdown(log_dir)
        logs = {part.key: part for part in p.listing.layout.partitions}
        storage = p.listing.layout.storage
        out: List[WrittenPartition] = []
        done = {}
        for part in p.partitions:
            log = logs.get(part.key)
            if log is None:
                continue                    # a partition with no folder at the source: left empty
            w = writer.write_partition(storage, log, folders[(part.target_topic, part.partition)], part.start)
            done[(part.target_topic, part.partition)] = w
            wp = WrittenPartition(part.topic, part.partition, part.target_topic, *w)
            out.append(wp)
            if on_partition is not None:
                on_partition(wp)
            steps.step("partition-written")         # a named step (steps.py)
        writer.update_checkpoints(log_dir, done)
        journal["state"] = "written"
        journal["written"] = [_as_json(w) for w in out]
        _write_journal(spec, journal)
    return out


def _as_json(w: WrittenPartition) -> dict:
    d = w._asdict()
    d["producer_ids"] = {str(k): v for k, v in w.producer_ids.items()}
    d["abort_markers"] = [list(m) for m in w.abort_markers]
    return d


def written(log_dir: str) -> List[WrittenPartition]:
    """The partitions the journal says were written (a :class:`LogDirWriteError` before the write ended)."""
    journal = read_journal(log_dir)
    if journal is None or journal.get("state") != "written":
        raise LogDirWriteError(log_dir, "the write step has not ended here: run --same-offsets write with the "
                                        "target stopped")
    out = []
    for d in journal["written"]:
        d = dict(d, producer_ids={int(k): v for k, v in d["producer_ids"].items()},
                 abort_markers=[tuple(m) for m in d["abort_markers"]])
        out.append(WrittenPartition(**d))
    return out


class GroupsDone(NamedTuple):
    """What :func:`groups` found and did: each partition's served range, the positions set (or
    written to a CSV)."""
    served: Dict[Tuple[str, int], Tuple[int, int]]
    positions: list


def groups(spec: RestoreSpec, plan=None, *, apply: bool = True, groups_csv: Optional[str] = None) -> GroupsDone:
    """The target running again: every written partition must be served as written (ListOffsets
    earliest and latest, read_uncommitted: the log start and the log end, ABORT markers included),
    then every group's positions set as they were (the same offsets) or written to ``groups_csv``."""
    from kafkarec.restore import groups as g, source, target
    w = {(x.target_topic, x.partition): x for x in written(spec.target_log_dir)}
    keys = sorted(w)
    earliest = target.list_offsets(spec, keys, "earliest", committed=False)
    latest = target.list_offsets(spec, keys, "latest", committed=False)
    for key in keys:
        got, want = (earliest[key], latest[key]), (w[key].log_start, w[key].log_end)
        if got != want:
            raise RestoreError(spec.target, f"serves [{got[0]}, {got[1]}), written was [{want[0]}, {want[1]}): the "
                                            "broker did not load the written folder (its log says why: marked "
                                            "stray, truncated?)", topic=key[0], partition=key[1])
    p = plan if plan is not None else source.plan(spec)
    positions = [pos._replace(target_offset=pos.source_offset) for pos in g.checked_positions(spec, p)]
    if groups_csv:
        g.write_csv(positions, groups_csv)
    elif apply:
        g.apply(spec, positions)
    return GroupsDone({k: (earliest[k], latest[k]) for k in keys}, positions)
