"""A restore that keeps the source's offsets (``--same-offsets``, docs/restore.md#same-offsets): the
source's log written into a fresh target's log dirs while its brokers are stopped, every replica of
every partition the same bytes, so that every record, group position, checkpoint and offset column
that names a source offset stays right.

Three steps, the brokers' state between them the user's (:data:`kafkarec.restore.spec.SAME_OFFSETS_STEPS`):

* :func:`prepare` -- the target running: every target topic created with the source's partition
  count and configs (:func:`kafkarec.restore.target.ensure_topics`, the produced restore's), a topic
  already there refused if its partition count differs or it holds records, the log dirs checked
  to be this cluster's (``meta.properties``' ``cluster.id``) and to cover every broker
  (``node.id``), each replica's folder found in the log dir its broker put it in, and the journal
  written into every log dir;
* :func:`write` -- every broker stopped (each log dir's ``.lock`` free, and held while writing):
  each replica's folder where the target's metadata puts it (``__cluster_metadata``'s replicas and
  KIP-858 directory ids, replayed), each partition written into all of its replicas at once by
  :func:`kafkarec.log.writer.write_partition` (the batches byte for byte but the leader epoch and
  the producer ids, ABORT markers for the transactions left open), each log dir's checkpoints, the
  clean-shutdown markers removed so that the brokers rebuild every side file;
* :func:`groups` -- the target running again: every partition checked to serve what was written
  (ListOffsets: its log start and end), then every consumer group's committed positions set as they
  were (:func:`kafkarec.restore.groups.apply`, the offsets untranslated), and every share group's
  state taken through the identity offset map (:func:`identity_map`: its start offset and its
  acknowledged records where they were, for ``kafka-share-groups`` and
  :func:`kafkarec.restore.shares.acknowledge`).  Share groups' dead letters (KIP-1191) need
  nothing: their ``__dlq.errors.offset`` names a source offset, which the copy keeps.

The journal (:data:`JOURNAL`, a file in each log dir's root, which Kafka does not read) ties the
steps together: the cluster the log dirs were prepared for, the log dirs (broker and directory id),
the source, the partitions and their replicas, and the state (``prepared``, ``writing``,
``written``); a write killed midway leaves ``writing``, and the next write writes every partition
again (a partition holding records is refused only while the state is ``prepared``), so a re-run
ends in the same folders.  Everything a step refuses is refused before it writes anything.

:func:`evidence` says per partition which bytes the write rewrote (:data:`REWRITTEN_BYTES`) and
the SHA-256 of the written batches' headers; :func:`check` proves it offline against the stopped target's log dirs
and the source, naming the partition, replica, file and byte of any difference.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Annotated, Dict, List, NamedTuple, Optional, Tuple

import msgspec

from kafkarec.errors import LogDirWriteError, RestoreError
from kafkarec.log import names
from kafkarec.log.writer import PartitionWritten
from kafkarec.restore.spec import RestoreSpec

__all__ = ["JOURNAL", "LogDir", "Prepared", "WrittenPartition", "log_dirs", "placement", "prepare", "write", "written",
           "groups", "share_groups", "identity_map", "read_journal"]

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
                f"{self.log_end}) {self.segments} segment(s) {self.bytes} bytes {self.batches} batches in {self.copies} "
                f"replica(s); rewritten: "
                f"partition leader epoch -> {self.leader_epoch}, producer ids {pids}, CRC of each batch with a "
                f"producer id; abort markers at {aborts}")


class LogDir(NamedTuple):
    """One target log dir as ``kafka-storage format`` left it (its ``meta.properties``)."""
    path: str
    node_id: int
    directory_id: str
    cluster_id: str


def log_dirs(spec: RestoreSpec) -> List[LogDir]:
    """Every ``--target-log-dir``, each a formatted log dir of one and the same cluster (a
    :class:`LogDirWriteError` naming the first that is not)."""
    from kafkarec.log.writer import meta_properties
    out: List[LogDir] = []
    for path in spec.target_log_dirs:
        if not os.path.isdir(path):
            raise LogDirWriteError(path, "no such folder")
        meta = meta_properties(path)
        cluster = meta.get("cluster.id")
        if not cluster:
            raise LogDirWriteError(path, "meta.properties names no cluster.id")
        node = meta.get("node.id", "")
        if not node.lstrip("-").isdigit():
            raise LogDirWriteError(path, f"meta.properties names no node.id ({node!r})")
        d = LogDir(path, int(node), meta.get("directory.id") or "", cluster)
        if out and d.cluster_id != out[0].cluster_id:
            raise LogDirWriteError(path, f"it belongs to cluster {d.cluster_id}, {out[0].path} to cluster "
                                         f"{out[0].cluster_id}: not one target's log dirs")
        same = next((o for o in out if d.directory_id and o.directory_id == d.directory_id), None)
        if same is not None:
            raise LogDirWriteError(path, f"its directory.id {d.directory_id} is {same.path}'s: one log dir given "
                                         "twice")
        out.append(d)
    return out


def read_journal(log_dir: str) -> Optional[dict]:
    """The journal of ``log_dir``, or None when it has none."""
    try:
        with open(os.path.join(log_dir, JOURNAL), encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise LogDirWriteError(log_dir, f"{JOURNAL} is not the journal kafkarec writes: {e}") from None


def _write_journal(dirs: List[LogDir], doc: dict) -> None:
    """The journal written into every log dir (the same document)."""
    from kafkarec._boot.files import atomic_write
    data = json.dumps(doc, indent=1, sort_keys=True).encode()
    for d in dirs:
        atomic_write(os.path.join(d.path, JOURNAL), data, mode=0o644)


#: the journal's states in the order a restore passes them
_STATES = ("prepared", "writing", "written")


def _journal(dirs: List[LogDir]) -> dict:
    """The one journal of the log dirs: every log dir holds it, the same but for its state (a write
    killed while it wrote the journals leaves two); the state the furthest a whole write got
    (``written`` only where every log dir says so, else ``writing`` where one got past ``prepared``)."""
    docs = []
    for d in dirs:
        doc = read_journal(d.path)
        if doc is None:
            raise LogDirWriteError(d.path, f"no {JOURNAL}: run --same-offsets prepare first, with the target "
                                           "running, with every log dir of the target")
        docs.append(doc)
    first = docs[0]
    for d, doc in zip(dirs, docs):
        if doc.get("cluster_id") != d.cluster_id:
            raise LogDirWriteError(d.path, f"it belongs to cluster {d.cluster_id}, prepared was cluster "
                                           f"{doc.get('cluster_id')}: not the prepared target's log dir")
        a = {k: v for k, v in doc.items() if k not in ("state", "written")}
        b = {k: v for k, v in first.items() if k not in ("state", "written")}
        if a != b:
            raise LogDirWriteError(d.path, f"its {JOURNAL} is not {dirs[0].path}'s: the log dirs were not "
                                           "prepared together")
    given = sorted([d.node_id, d.directory_id] for d in dirs)
    if given != sorted(first.get("log_dirs", [])):
        raise LogDirWriteError(dirs[0].path, "the log dirs given are not those prepared (prepared: "
                                             f"{_dirs_said(first.get('log_dirs', []))}; given: {_dirs_said(given)})")
    states = [doc.get("state") for doc in docs]
    if any(s not in _STATES for s in states):
        raise LogDirWriteError(dirs[0].path, f"{JOURNAL} holds the state {states}: not kafkarec's")
    state = ("written" if all(s == "written" for s in states)
             else "writing" if any(s != "prepared" for s in states) else "prepared")
    out = dict(first, state=state)
    if state == "written":
        out["written"] = first["written"]
    return out


def _dirs_said(pairs) -> str:
    return ", ".join(f"broker {n} directory {i or '(none)'}" for n, i in pairs) or "none"


def _targets(plan) -> List[Tuple[str, int]]:
    """Every target partition of the plan's topics, by the source's partition counts."""
    out = []
    for topic, desc in sorted(plan.topics.items()):
        tt = next((p.target_topic for p in plan.partitions if p.topic == topic), topic)
        out += [(tt, i) for i in range(desc.partitions)]
    return sorted(out)


def _key(tt: str, i: int) -> str:
    return f"{tt}-{i}"


def placement(dirs: List[LogDir], wanted) -> Dict[Tuple[str, int], List[LogDir]]:
    """Each target partition's replica folders found in the log dirs: the log dir holding it on each
    broker (a :class:`LogDirWriteError` where one broker holds two)."""
    out: Dict[Tuple[str, int], List[LogDir]] = {}
    listed = {d.path: set(os.listdir(d.path)) for d in dirs}
    for tt, i in wanted:
        found = [d for d in dirs if _key(tt, i) in listed[d.path]]
        nodes = [d.node_id for d in found]
        twice = sorted({n for n in nodes if nodes.count(n) > 1})
        if twice:
            both = [d.path for d in found if d.node_id == twice[0]]
            raise LogDirWriteError(both[1], f"{tt}-{i} is in {both[0]} too, a log dir of the same broker "
                                            f"{twice[0]}: which one the broker loads is not known")
        out[(tt, i)] = sorted(found, key=lambda d: d.node_id)
    return out


def _said(where: List[LogDir]) -> List[List]:
    return [[d.node_id, d.directory_id] for d in where]


def prepare(spec: RestoreSpec, plan=None) -> Prepared:
    """The target running: its topics created as the source's (see the module docstring)."""
    from kafkarec.restore import source, target
    p = plan if plan is not None else source.plan(spec)
    dirs = log_dirs(spec)
    cluster = dirs[0].cluster_id
    asker = target.admin(spec)
    meta = target.retried(spec, "asking the cluster's metadata", lambda left: asker.list_topics(timeout=left))
    if meta.cluster_id and meta.cluster_id != cluster:
        raise LogDirWriteError(dirs[0].path, f"it belongs to cluster {cluster}, the target at {spec.target} "
                                             f"is cluster {meta.cluster_id}: not the target's log dir")
    brokers = sorted(meta.brokers)
    strange = [d for d in dirs if brokers and d.node_id not in brokers]
    if strange:
        raise LogDirWriteError(strange[0].path, f"its node.id {strange[0].node_id} is none of the target's brokers "
                                                f"{brokers}: not the target's log dir")
    missing = [b for b in brokers if b not in {d.node_id for d in dirs}]
    if missing:
        raise LogDirWriteError(dirs[0].path, f"no --target-log-dir of broker {missing[0]} (brokers {brokers}): "
                                             "every replica is written, so every broker's log dirs are given")
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
    replicas = _created_replicas(spec, asker, wanted)
    where = _wait_folders(spec, dirs, wanted, replicas)
    _write_journal(dirs, {"version": 2, "state": "prepared", "cluster_id": cluster, "source": spec.source,
                          "log_dirs": sorted(_said(dirs)), "partitions": [[tt, i] for tt, i in wanted],
                          "replicas": {_key(*k): _said(where[k]) for k in wanted}})
    return Prepared(cluster, created, wanted)


def _created_replicas(spec: RestoreSpec, asker, wanted) -> Dict[Tuple[str, int], List[int]]:
    """Each partition's replicas, once the metadata the target answers holds every partition
    created: the broker asked learns of a new topic from the controller a moment after the
    controller created it (with several brokers that moment is seen), so it is asked again until
    ``spec.timeout``; a :class:`RestoreError` naming the first partition still missing then."""
    from kafkarec.restore import target
    deadline = time.monotonic() + spec.timeout
    while True:
        meta = target.retried(spec, "asking the cluster's metadata", lambda left: asker.list_topics(timeout=left))
        missing = [(tt, i) for tt, i in wanted
                   if tt not in meta.topics or i not in meta.topics[tt].partitions
                   or not meta.topics[tt].partitions[i].replicas]
        if not missing:
            return {(tt, i): sorted(meta.topics[tt].partitions[i].replicas) for tt, i in wanted}
        if time.monotonic() > deadline:
            tt, i = missing[0]
            raise RestoreError(spec.target, f"no replicas of partition {i} in the metadata {spec.timeout} s after "
                                            "the topic was created", topic=tt, partition=i)
        time.sleep(0.1)


def _wait_folders(spec: RestoreSpec, dirs: List[LogDir], wanted, replicas) -> Dict[Tuple[str, int], List[LogDir]]:
    """Each partition's replica folders, once every replica's broker created its folder in one of
    the log dirs given (a broker creates it as it takes the partition); a :class:`LogDirWriteError`
    naming the first still missing after ``spec.timeout``."""
    deadline = time.monotonic() + spec.timeout
    while True:
        where = placement(dirs, wanted)
        missing = [(k, n) for k in wanted for n in replicas[k] if n not in {d.node_id for d in where[k]}]
        if not missing:
            return where
        if time.monotonic() > deadline:
            (tt, i), node = missing[0]
            raise LogDirWriteError(next(d.path for d in dirs if d.node_id == node),
                                   f"no folder {tt}-{i} of broker {node} in its log dirs given after the topic was "
                                   "created: the broker keeps it in a log dir not given (give every log dir of "
                                   "every broker)")
        time.sleep(0.1)


def _metadata_replicas(dirs: List[LogDir], wanted) -> Optional[Dict[Tuple[str, int], List[Tuple[int, str]]]]:
    """Each partition's replicas and their directory ids (KIP-858) as the target's metadata log
    records them (``__cluster_metadata`` of the first log dir holding it, replayed), or None where
    no log dir holds it (a broker whose controllers are elsewhere)."""
    from kafkarec.cluster.metadata import replay
    home = next((d for d in dirs if os.path.isdir(os.path.join(d.path, "__cluster_metadata-0"))), None)
    if home is None:
        return None
    state = replay(home.path)
    by_name = {t["name"]: t for t in state.topics_by_id.values()}
    out = {}
    for tt, i in wanted:
        part = by_name.get(tt, {}).get("partitions", {}).get(i)
        if part is None:
            raise LogDirWriteError(home.path, f"the target's metadata holds no partition {tt}-{i}: the topic was "
                                              "deleted or made again since prepare")
        out[(tt, i)] = list(zip(part["replicas"], part["directories"]))
    return out


#: directory ids that name no log dir (Kafka's ``DirectoryId``: UNASSIGNED, LOST, MIGRATING)
_NO_DIRECTORY = {"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"}


def _check_placement(dirs: List[LogDir], wanted, journal: dict) -> Dict[Tuple[str, int], List[LogDir]]:
    """The replica folders to write: those prepare found, where the target's metadata puts them."""
    where = placement(dirs, wanted)
    for k in wanted:
        if _said(where[k]) != journal["replicas"].get(_key(*k)):
            raise LogDirWriteError(dirs[0].path, f"{_key(*k)}'s replica folders are {_dirs_said(_said(where[k]))}, "
                                                 f"prepared were {_dirs_said(journal['replicas'].get(_key(*k), []))}")
    meta = _metadata_replicas(dirs, wanted)
    for k in wanted if meta is not None else ():
        have = {d.node_id: d for d in where[k]}
        for node, directory in meta[k]:
            d = have.get(node)
            if d is None:
                raise LogDirWriteError(dirs[0].path, f"the target's metadata puts a replica of {_key(*k)} on broker "
                                                     f"{node}, whose log dirs given hold no folder of it")
            if directory not in _NO_DIRECTORY and d.directory_id and directory != d.directory_id:
                raise LogDirWriteError(d.path, f"the target's metadata puts broker {node}'s replica of {_key(*k)} "
                                               f"in directory {directory}, this log dir is {d.directory_id}")
        extra = sorted(set(have) - {n for n, _ in meta[k]})
        if extra:
            raise LogDirWriteError(have[extra[0]].path, f"broker {extra[0]} holds a folder {_key(*k)} the target's "
                                                        "metadata gives it no replica of")
    return where


def write(spec: RestoreSpec, plan=None, on_partition=None) -> List[WrittenPartition]:
    """The target stopped: each partition written into every replica folder (see the module
    docstring); ``on_partition(WrittenPartition)`` called as each is written.  A journal already
    ``written`` for this source writes nothing and answers what it wrote."""
    from kafkarec.log import writer
    from kafkarec.restore import source, steps
    dirs = log_dirs(spec)
    journal = _journal(dirs)
    if journal.get("source") != spec.source:
        raise LogDirWriteError(dirs[0].path, f"prepared for the source {journal.get('source')}, not {spec.source}")
    with contextlib.ExitStack() as held:
        for d in dirs:                   # every broker of the target stopped, and none started meanwhile
            held.enter_context(writer.broker_lock(d.path))
        if journal["state"] == "written":
            return written(spec)
        p = plan if plan is not None else source.plan(spec)
        wanted = _targets(p)
        if [list(k) for k in wanted] != journal.get("partitions"):
            raise LogDirWriteError(dirs[0].path, "the source's partitions are not those prepared: run "
                                                 "--same-offsets prepare again")
        where = _check_placement(dirs, wanted, journal)
        folders: Dict[Tuple[str, int], List[str]] = {}
        for tt, i in wanted:
            folders[(tt, i)] = [os.path.join(d.path, _key(tt, i)) for d in where[(tt, i)]]
            for folder in folders[(tt, i)]:
                if not os.path.exists(os.path.join(folder, names.PARTITION_METADATA)):
                    raise LogDirWriteError(folder, f"no {names.PARTITION_METADATA}: the target's topic id is kept "
                                                   "from it (the broker writes it as it creates the partition)")
                if journal["state"] == "prepared" and writer.partition_holds_data(folder):
                    raise LogDirWriteError(folder, f"{tt}-{i} holds records: a restore at the source's offsets "
                                                   "writes into empty partitions only")
        for tt in sorted({tt for tt, _ in wanted}):
            want = sum(1 for t, _ in wanted if t == tt)
            for d in dirs:
                extra = sorted(int(n[len(tt) + 1:]) for n in os.listdir(d.path)
                               if n.startswith(tt + "-") and n[len(tt) + 1:].isdigit()
                               and int(n[len(tt) + 1:]) >= want)
                if extra:
                    raise LogDirWriteError(d.path, f"{tt} has a partition folder {tt}-{extra[0]}, the source "
                                                   f"{want} partitions")
        if p.listing is None:
            raise LogDirWriteError(dirs[0].path, "the source plan holds no listing of the source")
        journal["state"] = "writing"
        _write_journal(dirs, journal)
        # before any segment: a broker started on a half-written log dir recovers it, never trusts it
        for d in dirs:
            writer.remove_clean_shutdown(d.path)
        logs = {part.key: part for part in p.listing.layout.partitions}
        storage = p.listing.layout.storage
        out: List[WrittenPartition] = []
        done: Dict[str, Dict[Tuple[str, int], writer.PartitionWritten]] = {d.path: {} for d in dirs}
        for part in p.partitions:
            log = logs.get(part.key)
            if log is None:
                continue                    # a partition with no folder at the source: left empty
            key = (part.target_topic, part.partition)
            w = writer.write_partition(storage, log, folders[key], part.start)
            for d in where[key]:
                done[d.path][key] = w
            wp = WrittenPartition(part.topic, part.partition, part.target_topic, *w)
            out.append(wp)
            if on_partition is not None:
                on_partition(wp)
            steps.step("partition-written")         # a named step (steps.py)
        for d in dirs:
            writer.update_checkpoints(d.path, done[d.path])
        journal["state"] = "written"
        journal["written"] = [_as_json(w) for w in out]
        _write_journal(dirs, journal)
    return out


def _as_json(w: WrittenPartition) -> dict:
    d = w._asdict()
    d["producer_ids"] = {str(k): v for k, v in w.producer_ids.items()}
    d["abort_markers"] = [list(m) for m in w.abort_markers]
    return d


def _from_json(d: dict) -> WrittenPartition:
    return WrittenPartition(**dict(d, producer_ids={int(k): v for k, v in d["producer_ids"].items()},
                                   abort_markers=[tuple(m) for m in d["abort_markers"]]))


def written(spec: RestoreSpec) -> List[WrittenPartition]:
    """The partitions the journal says were written (a :class:`LogDirWriteError` before the write ended)."""
    journal = _journal(log_dirs(spec))
    if journal["state"] != "written":
        raise LogDirWriteError(spec.target_log_dirs[0], "the write step has not ended here: run --same-offsets "
                                                        "write with the target stopped")
    return [_from_json(d) for d in journal["written"]]


class GroupsDone(NamedTuple):
    """What :func:`groups` found and did: each partition's served range, the positions set (or
    written to a CSV), the share groups' states (their offsets the source's) and, with
    ``spec.share_groups_acknowledge``, what :func:`kafkarec.restore.shares.acknowledge` did (else None)."""
    served: Dict[Tuple[str, int], Tuple[int, int]]
    positions: list
    share_groups: list = []
    share_acknowledged: Optional[list] = None


def identity_map(plan) -> "OffsetMap":
    """The offset map of a copy at the same offsets: every offset of each planned partition's
    history [start, end) to itself, on the target topic.  The produced restore's translations
    (:func:`kafkarec.restore.shares.translate_shares`) taken through it give the source's offsets
    back, so that one rule judges a share group's state in both restores."""
    from kafkarec.restore.offsets import OffsetMap
    omap = OffsetMap()
    for part in plan.partitions:
        if part.log_end > part.start:
            omap.add(part.topic, part.partition, part.target_topic, part.start, part.start, part.log_end - part.start)
        omap.set_end(part.topic, part.partition, part.target_topic, part.log_end, part.log_end)
    return omap


def share_groups(spec: RestoreSpec, plan, share_groups_csv: Optional[str] = None) -> list:
    """Every share group's state of the written partitions as the source's ``__share_group_state``
    holds it (``--groups-as-of`` applies), through :func:`identity_map`: each
    :class:`kafkarec.restore.shares.SharePosition`'s start offset the source's, and its
    acknowledged records past it at their own offsets; written to ``share_groups_csv`` (``group,
    topic,partition,offset`` lines for ``kafka-share-groups --reset-offsets --from-file``)."""
    from kafkarec.restore import shares
    positions = shares.translate_shares(spec, plan, identity_map(plan))
    if share_groups_csv:
        shares.write_share_csv(positions, share_groups_csv)
    return positions


def groups(spec: RestoreSpec, plan=None, *, apply: bool = True, groups_csv: Optional[str] = None,
           share_groups_csv: Optional[str] = None) -> GroupsDone:
    """The target running again: every written partition must be served as written (ListOffsets
    earliest and latest, read_uncommitted: the log start and the log end, ABORT markers included),
    then every group's positions set as they were (the same offsets) or written to ``groups_csv``,
    and (``apply``) every share group's state taken as it was (:func:`identity_map`): written to
    ``share_groups_csv`` for ``kafka-share-groups --reset-offsets``, and with
    ``spec.share_groups_acknowledge`` its acknowledged records acknowledged on the target."""
    from kafkarec.restore import groups as g, shares, source, target
    w = {(x.target_topic, x.partition): x for x in written(spec)}
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
    share_positions, acknowledged = [], None
    if apply or groups_csv:
        share_positions = share_groups(spec, p, share_groups_csv)
        if spec.share_groups_acknowledge:
            acknowledged = shares.acknowledge(spec, share_positions)
    return GroupsDone({k: (earliest[k], latest[k]) for k in keys}, positions, share_positions, acknowledged)


# --- evidence and its check ------------------------------------------------------------------------

#: the evidence document's format (``write --evidence``; read by ``--check``)
EVIDENCE_FORMAT, EVIDENCE_VERSION = "kafkarec-same-offsets-evidence", 1
#: the bytes of a v2 batch a write may rewrite, and why (Kafka's DefaultRecordBatch; every other
#: byte of a source batch is written as it was)
REWRITTEN_BYTES = {
    "partition_leader_epoch": "bytes 12-15 of every batch: the partition's leader_epoch (outside the CRC)",
    "producer_id": "bytes 43-50 of every batch with a producer id: producer_ids[source id]",
    "crc": "bytes 17-20 of every batch whose producer id moved: the CRC-32C of bytes 21 on, recomputed",
    "abort_markers": "control batches appended past the source's log end: one ABORT each, at abort_markers' "
                     "(offset, producer id, producer epoch)",
}
_INT32, _INT64 = (1 << 31) - 1, (1 << 63) - 1


_Offset = Annotated[int, msgspec.Meta(ge=0, le=_INT64)]
_Int32 = Annotated[int, msgspec.Meta(ge=0, le=_INT32)]
_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=249)]


class PartitionEvidence(msgspec.Struct, forbid_unknown_fields=True):
    """One partition of the evidence (:func:`evidence`), every member typed and in range."""
    topic: _Name
    partition: _Int32
    target_topic: _Name
    log_start: _Offset
    log_end: _Offset
    segments: _Offset
    bytes: _Offset
    batches: _Offset
    leader_epoch: _Int32
    producer_ids: Dict[str, _Offset]
    abort_markers: List[Tuple[_Offset, _Offset, Annotated[int, msgspec.Meta(ge=0, le=32767)]]]
    replicas: List[Tuple[_Int32, Annotated[str, msgspec.Meta(max_length=22)]]]
    sha256: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]


class SameOffsetsEvidence(msgspec.Struct, forbid_unknown_fields=True):
    """The evidence of a write (:func:`evidence`), as ``--check`` reads it."""
    format: str
    version: int
    source: str
    cluster_id: str
    rewritten_bytes: Dict[str, str]
    partitions: List[PartitionEvidence]


def evidence(spec: RestoreSpec) -> dict:
    """The evidence of a finished write: per partition its range, the fields rewritten (the leader
    epoch, each producer id moved, the ABORT markers appended), the replicas written and the
    SHA-256 of the headers of the batches written into each."""
    journal = _journal(log_dirs(spec))
    if journal["state"] != "written":
        raise LogDirWriteError(spec.target_log_dirs[0], "the write step has not ended here: no evidence yet")
    parts = [dict(w, replicas=journal["replicas"][_key(w["target_topic"], w["partition"])])
             for w in journal["written"]]
    for p in parts:
        del p["copies"]
    return {"format": EVIDENCE_FORMAT, "version": EVIDENCE_VERSION, "source": journal["source"],
            "cluster_id": journal["cluster_id"], "rewritten_bytes": REWRITTEN_BYTES, "partitions": parts}


def is_evidence(path: str) -> bool:
    """Whether the document at ``path`` says it is this restore's evidence (its ``format``)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return f'"format": "{EVIDENCE_FORMAT}"'.encode() in head


def read_evidence(path: str):
    """The document at ``path`` decoded (a :class:`kafkarec.errors.UsageError` naming what is wrong)."""
    from kafkarec.errors import UsageError
    from kafkarec.restore.evidence import document_bytes
    data = document_bytes(path)
    try:
        doc = msgspec.json.decode(data, type=SameOffsetsEvidence)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise UsageError(f"evidence {path}: {e}") from None
    if doc.format != EVIDENCE_FORMAT or doc.version != EVIDENCE_VERSION:
        raise UsageError(f"evidence {path}: not a {EVIDENCE_FORMAT} document of version {EVIDENCE_VERSION}")
    return doc


class SameOffsetsCheck(NamedTuple):
    """What ``--check`` compared: partitions, replica folders and batches, a line per difference
    (``problems``, each naming its partition) and per thing not compared (``notes``)."""
    partitions: int
    replicas: int
    batches: int
    problems: List[str]
    notes: List[str]

    @property
    def ok(self) -> bool:
        return not self.problems and self.batches > 0


def _target_files(folder: str) -> List[Tuple[str, int]]:
    from kafkarec.log.names import parse_segment_name
    segs = []
    for n in os.listdir(folder):
        s = parse_segment_name(n)
        if s is not None and n.endswith(names.LOG_SUFFIX):
            segs.append((s[0], os.path.join(folder, n)))
    return [(p, os.path.getsize(p)) for _, p in sorted(segs)]


def _log_start_said(log_dir: str, key: Tuple[str, int]) -> Optional[int]:
    from kafkarec.log.sidefiles import read_offset_checkpoint
    path = os.path.join(log_dir, "log-start-offset-checkpoint")
    if not os.path.exists(path):
        return None
    return next((o for t, p, o in read_offset_checkpoint(path) if (t, p) == key), None)


def check(doc, source_uri: str, target_dirs, *, storage_options=None, tiered_storage=None) -> SameOffsetsCheck:
    """The evidence ``doc`` (:func:`read_evidence`) proved against the source and the stopped
    target's log dirs, offline: each replica folder the evidence names holds, from the source's
    log start, the source's batches byte for byte but the bytes :data:`REWRITTEN_BYTES` names
    (each equal to the evidence's value: the leader epoch, the producer id it maps, a CRC that
    matches), then the evidence's ABORT markers, to the evidence's log end, the headers' SHA-256 the
    evidence's; the log start the evidence's.  Every difference names its partition, replica,
    segment file and byte."""
    from kafkarec.log import writer
    from kafkarec.log.storage import resolve
    from kafkarec.restore import source
    spec = RestoreSpec.of(source_uri, None, topics=sorted({p.topic for p in doc.partitions}) or None,
                          rename=sorted({f"{p.topic}={p.target_topic}" for p in doc.partitions
                                         if p.topic != p.target_topic}) or None,
                          storage_options=storage_options, tiered_storage=tiered_storage, same_offsets="write",
                          target_log_dir=target_dirs)
    dirs = log_dirs(spec)
    notes, problems = [], []
    if doc.source != source_uri:
        notes.append(f"the evidence names the source {doc.source}; checked against {source_uri}")
    for d in dirs:
        if d.cluster_id != doc.cluster_id:
            problems.append(f"{d.path}: it belongs to cluster {d.cluster_id}, the evidence's target is "
                            f"{doc.cluster_id}")
    p = source.plan(spec)
    logs = {part.key: part for part in p.listing.layout.partitions}
    starts = {(sp.topic, sp.partition): sp.start for sp in p.partitions}
    local, _ = resolve(dirs[0].path)
    batches = replicas = 0
    for ev in doc.partitions:
        name = f"{ev.target_topic}-{ev.partition}"
        log = logs.get((ev.topic, ev.partition))
        if log is None:
            problems.append(f"{name}: the source holds no {ev.topic}-{ev.partition}")
            continue
        if starts.get((ev.topic, ev.partition)) != ev.log_start:
            problems.append(f"{name}: the source's log start is {starts.get((ev.topic, ev.partition))}, the "
                            f"evidence's {ev.log_start}")
            continue
        pids = {int(k): v for k, v in ev.producer_ids.items()}
        targets = []
        for node, directory in ev.replicas:
            d = next((x for x in dirs if (directory and x.directory_id == directory)
                      or (not directory and x.node_id == node)), None)
            folder = None if d is None else os.path.join(d.path, name)
            if folder is None or not os.path.isdir(folder):
                problems.append(f"{name}: its replica on broker {node} (directory {directory or 'none'}) is in "
                                "none of the log dirs given")
                continue
            targets.append((d, folder, f"{name} on broker {node} ({d.path})"))
        kept = writer.kept_segments(log, ev.log_start)
        for d, folder, who in targets:
            replicas += 1
            said = _log_start_said(d.path, (ev.target_topic, ev.partition))
            files = _target_files(folder)
            first = names.parse_segment_name(os.path.basename(files[0][0]))[0] if files else None
            start = max(x for x in (said, first, 0) if x is not None)
            if start != ev.log_start:
                problems.append(f"{who}: its log start is {start}, the evidence's {ev.log_start}")
            found = writer.compare_written(p.listing.layout.storage, kept, local, files, ev.log_end,
                                           ev.leader_epoch, pids, [tuple(m) for m in ev.abort_markers])
            if found.difference is not None:
                problems.append(f"{who}: {found.difference}")
                continue
            batches += found.batches
            if found.past:
                notes.append(f"{who}: {found.past} batch(es) past the written end {ev.log_end} (appended on the "
                             "target since), not compared")
            if found.sha256 != ev.sha256:
                problems.append(f"{who}: the batches to the written end are not those written (their headers' SHA-256 "
                                f"{found.sha256}, the evidence's {ev.sha256})")
    return SameOffsetsCheck(len(doc.partitions), replicas, batches, problems, notes)
