"""Which file is which in a listing: partitions and their segments, local and tiered.

Works on a flat listing (:func:`kafkarec.log.storage.list_files`), so the same
rules apply on a local disk and in an object store.  Recognised layouts:

* a broker's log directory: ``<topic>-<partition>/`` folders of
  ``<20-digit base offset>.log`` segments with ``.index``, ``.timeindex`` and
  ``.txnindex`` side files (``.<id>-delete``/``-future``/``-stray`` folders are
  skipped, as Kafka skips them);
* Kafka's ``LocalTieredStorage`` (KIP-405's reference remote storage):
  ``<topic>-<partition>-<topic id>/`` folders of ``<start offset>-<segment id>.log``
  (plus ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``,
  ``.leader_epoch_checkpoint``), ids in Kafka's 22-character base64 form;
* remote storage plugins that key objects as
  ``<prefix><topic>-<topic id>/<partition>/<20-digit start offset>-<segment id>.log``
  (Aiven's tiered storage plugin; its ``.rsm-manifest`` says how the ``.log`` object is
  chunked, compressed and encrypted and where the side files sit in ``.indexes``: each
  manifest is read once here, and :func:`open_segment` reads such a segment through
  :mod:`kafkarec.log.rsm`).  The plugin's ``key.prefix`` is glued to the topic folder's
  name; with the plugin's config on the storage (``tieredStorageConfig``) it is taken off
  the topic name again.

A topic-partition found in several places (a broker's local copy and the
remote copy of the same range, two replicas) is read once: segments are
ordered by base offset, one copy of each base offset is kept (a local copy
before a remote one), and every segment is bounded by the next segment's base
offset (:attr:`SegmentRef.end_offset`): an offset is read from the segment with
the highest base offset at or below it, so overlapping copies with different
segment boundaries still yield each record once.

A partition's log start offset (what a consumer's ``earliest`` is; records below it are
still in the files until their segment is deleted, see ``Admin.deleteRecords``) is what
the broker's ``LogLoader`` makes it on load: the entry of its log directory's
``log-start-offset-checkpoint``, at least the first segment's base offset (Kafka writes an
entry only for partitions whose log start is past that base, or that are tiered).
:func:`scan` reads the checkpoint of each log directory once into
:attr:`PartitionLog.checkpointed_log_start`; :meth:`kafkarec.log.selection.Resolver.log_start`
is the rule that uses it.
"""
from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Tuple

from kafkarec._extras import require
from kafkarec.errors import SideFileError
from kafkarec.errors import TransformedSegmentError  # noqa: F401  (re-exported)
from kafkarec.log import names
from kafkarec.log.names import parse_partition_folder  # noqa: F401  (re-exported)
from kafkarec.log.storage import FileEntry, Storage, list_files

if TYPE_CHECKING:
    from kafkarec.log.segment import SegmentOffsets

__all__ = ["SegmentRef", "PartitionLog", "Layout", "scan", "parse_segment_name", "check_manifest", "open_segment",
           "storage_of", "segment_uri", "stitch", "scan_history", "Gap", "LOG_START_CHECKPOINT",
           "log_start_checkpoint", "held_offsets",
           "parse_partition_folder", "TransformedSegmentError"]

# A KRaft snapshot's name (Kafka's Snapshots: the end offset and epoch, zero-padded, so that names
# sort as the snapshots do); one being written (.part) or removed (.deleted) is not one
_KRAFT_SNAPSHOT = re.compile(r"^\d{20}-\d{10}\.checkpoint$")

# The files of a segment this module reads (names.parse_segment_name knows more kinds).
_KINDS = ("log", "index", "timeindex", "txnindex", "manifest", "indexes")


class SegmentRef(NamedTuple):
    """One segment file and its side files, as found."""
    path: str                       # as the Storage names it
    size: int
    base_offset: int
    segment_id: Optional[str]       # the remote segment id (tiered names), None for local names
    offset_index: Optional[FileEntry]
    time_index: Optional[FileEntry]
    txn_index: Optional[FileEntry]
    manifest: Optional[FileEntry]
    end_offset: Optional[int] = None   # exclusive bound set by de-duplication (next base offset)
    mtime_ns: Optional[int] = None
    indexes: Optional[FileEntry] = None  # a plugin's side files in one object (``.indexes``)
    storage: Any = None                  # where it is when not in the layout's storage (stitch())
    rsm: Any = None                      # its parsed ``.rsm-manifest`` (kafkarec.log.rsm); size is then
                                         # the original segment's

    @property
    def remote(self) -> bool:
        return self.segment_id is not None


class PartitionLog(NamedTuple):
    topic: Optional[str]
    partition: Optional[int]
    topic_id: Optional[str]
    segments: List[SegmentRef]       # by base offset, one copy each, bounded
    copies: List[SegmentRef]         # other copies of a base offset, not read
    folders: List[str]
    # Its entry in its log directory's ``log-start-offset-checkpoint`` (None: no entry, or the
    # checkpoint could not be read: then ``log_start_problem`` says which file and why).
    checkpointed_log_start: Optional[int] = None
    log_start_problem: Optional[str] = None
    # KRaft snapshots beside its segments (``<end offset>-<epoch>.checkpoint``, FileEntry s by
    # end offset and epoch): what a replay of ``__cluster_metadata`` may start from
    snapshots: Tuple[FileEntry, ...] = ()

    @property
    def key(self) -> Tuple:
        return (self.topic, self.partition)


class Layout(NamedTuple):
    storage: Storage
    root: str
    partitions: List[PartitionLog]   # by topic, partition
    skipped: List[str]               # folders Kafka ignores (-delete, -future, -stray)
    not_live: Tuple[Tuple[str, str], ...] = ()   # remote copies left out: (URI, why); see remote_metadata


_BY_KEY: dict = {}     # id(a layout's partitions) -> (them, {key: partition})


def partition_index(layout) -> dict:
    """``{(topic, partition): PartitionLog}`` of ``layout`` (the last, where folders share a key),
    made once per layout (the last few kept): what a plan of one partition among thousands looks
    its partition up in, instead of walking them all (issue 79)."""
    parts = layout.partitions
    known = _BY_KEY.get(id(parts))
    if known is None or known[0] is not parts:
        while len(_BY_KEY) >= 8:
            del _BY_KEY[next(iter(_BY_KEY))]
        known = _BY_KEY[id(parts)] = (parts, {p.key: p for p in parts})
    return known[1]


def partition_counts(partitions) -> Dict[str, int]:
    """``{topic: N}`` of listed :class:`PartitionLog` s, for a topic whose partitions 0 to N-1 are
    all listed (no segment byte read): the ``N`` of Kafka's default partitioner when a caller does
    not give it.  A topic with a partition missing (one broker's log dir of a larger cluster, one
    partition's folder) has no N here: the highest number plus one would name wrong partitions."""
    found: Dict[str, set] = {}
    for part in partitions:
        if part.topic is not None and part.partition is not None:
            found.setdefault(part.topic, set()).add(part.partition)
    return {topic: max(numbers) + 1 for topic, numbers in found.items() if len(numbers) == max(numbers) + 1}


def parse_segment_name(name: str) -> Optional[Tuple[int, Optional[str], str]]:
    """``(base offset, segment id or None, kind)`` for a segment file this layout reads, else None.

    :func:`kafkarec.log.names.parse_segment_name` restricted to ``log``, ``index``,
    ``timeindex``, ``txnindex`` and ``manifest``:
    ``00000000000000000042.log`` -> ``(42, None, "log")``;
    ``00000000000000000042-oAtiIQ95REujbuzNd_lkLQ.timeindex`` -> ``(42, "oAti...", "timeindex")``.
    """
    seg = names.parse_segment_name(posixpath.basename(name))
    return tuple(seg) if seg is not None and seg.kind in _KINDS else None


def _renamed(folder: str) -> bool:
    return names.renamed_dir_suffix(posixpath.basename(folder.rstrip("/"))) is not None


def scan(storage: Storage, root: str, entries: Optional[List[FileEntry]] = None,
         *, dedupe: bool = True) -> Layout:
    """Partitions and segments under ``root`` from one listing (``entries`` if given)."""
    if entries is None:
        entries = list_files(storage, root)
    by_folder: Dict[str, Dict[Tuple[int, Optional[str]], Dict[str, FileEntry]]] = {}
    snapshots: Dict[str, List[FileEntry]] = {}     # a segment folder's KRaft snapshots
    skipped = set()
    for e in entries:
        parsed = parse_segment_name(e.path)
        if parsed is None:
            if _KRAFT_SNAPSHOT.match(posixpath.basename(e.path)):
                snapshots.setdefault(posixpath.dirname(e.path), []).append(e)
            continue
        folder = posixpath.dirname(e.path)
        if any(_renamed(f) for f in _ancestors(folder, root)):
            skipped.add(next(f for f in _ancestors(folder, root) if _renamed(f)))
            continue
        base, seg_id, kind = parsed
        files = by_folder.setdefault(folder, {})
        files.setdefault((base, seg_id), {})[kind] = e
    parts: Dict[Tuple, Dict] = {}
    not_live: List[Tuple[str, str]] = []
    tiered = _tiered(storage)
    metadata = getattr(tiered, "metadata", None)
    tiered_config = getattr(tiered, "config", None)
    key_tail = posixpath.basename(tiered_config.key_prefix) if tiered_config is not None else ""
    for folder, segs in by_folder.items():
        tiered = any(sid is not None for _, sid in segs)
        tp = parse_partition_folder(folder, tiered_files=tiered)
        topic, partition, topic_id = tp if tp else (None, None, None)
        if tiered and topic and key_tail and topic.startswith(key_tail) and len(topic) > len(key_tail):
            topic = topic[len(key_tail):]           # the plugin's key.prefix, glued to the name
        key = (topic, partition) if tp else (None, folder)
        p = parts.setdefault(key, {"topic": topic, "partition": partition, "topic_id": topic_id,
                                   "folders": [], "segments": []})
        p["folders"].append(folder)
        p.setdefault("snapshots", []).extend(snapshots.get(folder, ()))
        if tp and not tiered:
            p.setdefault("log_dirs", []).append(posixpath.dirname(folder))
        if topic_id and not p["topic_id"]:
            p["topic_id"] = topic_id
        with_manifests = any("manifest" in kinds for kinds in segs.values())
        for (base, seg_id), kinds in segs.items():
            log = kinds.get("log")
            if log is None:
                continue            # side files of a segment that is not there
            why = None
            if seg_id is not None and metadata is not None:
                why = metadata.why_not_live(seg_id)
            elif seg_id is not None and with_manifests and "manifest" not in kinds:
                why = "no .rsm-manifest beside it: its plugin's copy did not finish"
            if why is not None:
                not_live.append((storage.uri(log.path), why))
                continue
            p["segments"].append(SegmentRef(log.path, log.size, base, seg_id, kinds.get("index"),
                                            kinds.get("timeindex"), kinds.get("txnindex"),
                                            kinds.get("manifest"), None, log.mtime_ns, kinds.get("indexes")))
    _read_manifests(storage, parts)
    checkpoints = _log_start_checkpoints(storage, root, entries,
                                         {d for p in parts.values() for d in p.get("log_dirs", ())})
    out = []
    for key, p in parts.items():
        segments, copies = _dedupe(p["segments"]) if dedupe else (sorted(
            p["segments"], key=lambda s: (s.base_offset, s.path)), [])
        found = [checkpoints[d] for d in p.get("log_dirs", ())]
        starts = [c[0][key] for c in found if key in c[0]]
        problems = [c[1] for c in found if c[1] is not None]
        out.append(PartitionLog(p["topic"], p["partition"], p["topic_id"], segments, copies,
                                sorted(p["folders"]), max(starts) if starts else None,
                                None if starts or not problems else problems[0],
                                tuple(sorted(p["snapshots"], key=lambda e: posixpath.basename(e.path)))))
    out.sort(key=lambda p: (p.topic is None, p.topic or "", -1 if p.partition is None else p.partition,
                            p.folders[0] if p.folders else ""))
    return Layout(storage, root, out, sorted(skipped), tuple(sorted(not_live)))


LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
# Files only a broker's log directory has at its root: beside them a missing log start
# checkpoint is worth a word (a folder of partitions copied out of a broker has none).
_BROKER_ROOT_FILES = ("meta.properties",) + tuple(n for n in names.OFFSET_CHECKPOINTS
                                                  if n != LOG_START_CHECKPOINT)


def _log_start_checkpoints(storage: Storage, root: str, entries: List[FileEntry], log_dirs
                           ) -> Dict[str, Tuple[Dict[Tuple[str, int], int], Optional[str]]]:
    """:func:`log_start_checkpoint` of each log directory, from the listing (a log directory
    above ``root``, when ``root`` is a partition folder or a segment, is looked up alone)."""
    listed = {e.path: e for e in entries}
    inside = root.rstrip("/") + "/"
    return {d: log_start_checkpoint(storage, d, listed if (d + "/").startswith(inside) else None)
            for d in sorted(log_dirs)}


def log_start_checkpoint(storage: Storage, log_dir: str, listed: Optional[Dict[str, FileEntry]] = None
                         ) -> Tuple[Dict[Tuple[str, int], int], Optional[str]]:
    """``({(topic, partition): log start offset}, problem)`` from a log directory's
    ``log-start-offset-checkpoint``; ``listed``: the log directory's files by path, when
    listed (else each is looked up).  ``problem`` (None when all is well) says which file and
    why it gave nothing: unreadable, or missing beside the files of a broker's log directory."""
    from kafkarec.log import sidefiles

    def entry(name):
        path = posixpath.join(log_dir, name)
        return listed.get(path) if listed is not None else _file_entry(storage, path)
    path = posixpath.join(log_dir, LOG_START_CHECKPOINT)
    uri = storage.uri(path)
    try:
        found = entry(LOG_START_CHECKPOINT)
        if found is None:
            broker = any(entry(n) is not None for n in _BROKER_ROOT_FILES)
            return {}, (f"{uri} is missing from the broker's log directory" if broker else None)
        rows = sidefiles.read_offset_checkpoint(uri, data=storage.read_file(path, found.size))
    except (SideFileError, OSError) as exc:
        return {}, f"{uri} could not be read ({exc})"
    return {(topic, partition): offset for topic, partition, offset in rows}, None


def _file_entry(storage: Storage, path: str) -> Optional[FileEntry]:
    pafs = require("pyarrow.fs")
    info = storage.fs.get_file_info(path)
    return FileEntry(info.path, info.size, info.mtime_ns) if info.type == pafs.FileType.File else None


def _ancestors(folder: str, root: str):
    root = root.rstrip("/")
    f = folder
    while f and f != root and len(f) > len(root):
        yield f
        f = posixpath.dirname(f)


def _dedupe(segments: List[SegmentRef]):
    """One copy per base offset (local first, then the larger), each bounded by the next base."""
    order = sorted(segments, key=lambda s: (s.base_offset, s.remote, -s.size, s.path))
    kept: List[SegmentRef] = []
    copies: List[SegmentRef] = []
    for s in order:
        if kept and kept[-1].base_offset == s.base_offset:
            copies.append(s)
        else:
            kept.append(s)
    bounded = [s._replace(end_offset=kept[i + 1].base_offset if i + 1 < len(kept) else None)
               for i, s in enumerate(kept)]
    return bounded, copies


def held_offsets(segs: List[SegmentRef], i: int) -> SegmentOffsets:
    """The offsets segment ``i`` of a partition's segments (:attr:`PartitionLog.segments`) may
    hold: up to the next segment's base, which is an error to reach when both are the broker's
    files of one folder, and the next copy's to read when that one is a copy from elsewhere (a
    stitched history's copies may overlap: :func:`stitch`).  The one rule of what a segment
    holds, for a read (:class:`kafkarec.log.selection.SegmentRange`), the timestamp lookup and the
    transaction rule's walk (:func:`kafkarec.log.committed.partition_batches`)."""
    from kafkarec.log.segment import segment_offsets
    seg = segs[i]
    after = segs[i + 1] if i + 1 < len(segs) else None
    indexed = seg.offset_index is not None
    if after is None:
        return segment_offsets(seg.base_offset, None, indexed=indexed)
    same_log = (not seg.remote and not after.remote and seg.storage is after.storage
                and posixpath.dirname(seg.path) == posixpath.dirname(after.path))
    return segment_offsets(seg.base_offset, after.base_offset, next_is_log=same_log, indexed=indexed)


def _read_manifests(storage: Storage, parts: Dict[Tuple, Dict]) -> None:
    """Each segment with a plugin manifest: the manifest parsed into ``rsm`` and ``size`` the
    original segment's (what offsets and positions refer to).  A manifest that cannot be read
    leaves the segment as listed; :func:`check_manifest` reports it when the segment is read."""
    wanted = [(s.manifest.path, s.manifest.size) for p in parts.values() for s in p["segments"]
              if s.manifest is not None]
    if not wanted:
        return
    from kafkarec.log import rsm
    found = rsm.read_manifests(storage, wanted)
    for p in parts.values():
        segs = p["segments"]
        for i, s in enumerate(segs):
            m = found.get(s.manifest.path) if s.manifest is not None else None
            if m is not None and not isinstance(m, Exception):
                segs[i] = s._replace(rsm=m, size=m.chunk_index.original_file_size)


def _tiered(storage: Storage):
    if getattr(storage, "tiered_source", None) is None and getattr(storage, "tiered", None) is None:
        return None
    from kafkarec.log.rsm import tiered_of
    return tiered_of(storage)


def storage_of(storage: Storage, seg: SegmentRef) -> Storage:
    """The storage holding ``seg`` (its own, for a segment :func:`stitch` brought in)."""
    return seg.storage if seg.storage is not None else storage


def segment_uri(storage: Storage, seg: SegmentRef) -> str:
    return storage_of(storage, seg).uri(seg.path)


def check_manifest(storage: Storage, seg: SegmentRef) -> None:
    """Raise :class:`kafkarec.RemoteObjectError` if the segment has a plugin manifest that
    could not be read (it says how the segment's object holds its bytes)."""
    if seg.manifest is None or seg.rsm is not None:
        return
    from kafkarec.log import rsm
    found = rsm.read_manifests(storage, [(seg.manifest.path, seg.manifest.size)])[seg.manifest.path]
    if isinstance(found, Exception):
        raise found


def open_segment(storage: Storage, seg: SegmentRef):
    """The segment's bytes for ranged reads (a :class:`kafkarec.log.storage.RangeFile`, or for a
    segment its plugin chunked, compressed or encrypted a :class:`kafkarec.log.rsm.SegmentObject`
    of the same methods), its manifest checked first, and the object against it."""
    storage = storage_of(storage, seg)
    check_manifest(storage, seg)
    if seg.rsm is None:
        return storage.open(seg.path, seg.size)
    from kafkarec.log.rsm import open_object
    tiered = _tiered(storage)
    return open_object(storage, seg.path, seg.rsm, tiered.keyring if tiered is not None else None)


def side_file(storage: Storage, seg: SegmentRef, name: str) -> Optional[bytes]:
    """A plugin-stored segment's side file (``offset``, ``timestamp``, ``transaction``,
    ``producerSnapshot``, ``leaderEpoch``) from its ``.indexes`` object, or None when it has no
    such object or side file."""
    if seg.rsm is None or seg.indexes is None:
        return None
    from kafkarec.log.rsm import side_file as _side_file
    storage = storage_of(storage, seg)
    tiered = _tiered(storage)
    with storage.open(seg.indexes.path, seg.indexes.size) as f:
        return _side_file(storage, seg.indexes.path, seg.rsm, name,
                          tiered.keyring if tiered is not None else None, file=f)


# --- one history from remote and local copies ----------------------------------------------------

class Gap(NamedTuple):
    """Offsets of a partition that neither the remote copies nor the local log hold."""
    topic: Optional[str]
    partition: Optional[int]
    start: int          # the first missing offset
    end: int            # the offset where the log goes on


def scan_history(source: str, remote: Optional[str] = None, options: Optional[dict] = None
                 ) -> Tuple[Layout, List[Gap]]:
    """:func:`scan` of ``source`` (a log directory, local or a URI), stitched with the remote
    copies under ``remote`` (a tiered-storage root) when given: ``(layout, gaps)``.  Which remote
    copies are live comes from option ``remoteLogMetadata``, by default from ``source`` itself
    when it holds ``__remote_log_metadata`` (a broker's log directory does)."""
    from kafkarec.log.remote_metadata import TOPIC as REMOTE_LOG_METADATA
    from kafkarec.log.storage import option_value, resolve
    st, root = resolve(source, options)
    local = scan(st, root)
    if remote is None:
        return local, []
    remote_options = dict(options or {})
    if (option_value(remote_options, "remotelogmetadata") is None
            and any(p.topic == REMOTE_LOG_METADATA for p in local.partitions)):
        remote_options["remoteLogMetadata"] = source
    rst, rroot = resolve(remote, remote_options)
    return stitch(local, scan(rst, rroot))


def stitch(local: Layout, remote: Layout) -> Tuple[Layout, List[Gap]]:
    """One history per topic-partition from a broker's log directory (``local``) and the remote
    copies of its segments (``remote``, e.g. a tiered-storage root; its live copies only, see
    :mod:`kafkarec.log.remote_metadata`): every segment of both, each base offset read from one
    copy (the local one where both have it) and each segment bounded by the next, so overlapping
    copies yield every offset once.  Partitions are matched by topic and partition (and topic id
    where both know it).  ``gaps``: offsets between the last remote segment's end (when the
    remote log metadata says where it ends) and the next segment's start that no copy holds."""
    by_key: Dict[Tuple, Dict] = {}
    for lay, is_remote in ((local, False), (remote, True)):
        for p in lay.partitions:
            if p.topic is None:
                continue
            entry = by_key.setdefault(p.key, {"topic": p.topic, "partition": p.partition,
                                               "topic_id": p.topic_id, "segments": [], "folders": [],
                                               "checkpointed_log_start": None, "log_start_problem": None})
            if is_remote and entry["topic_id"] and p.topic_id and entry["topic_id"] != p.topic_id:
                continue                      # another incarnation of the topic name
            entry["topic_id"] = entry["topic_id"] or p.topic_id
            entry["folders"] += p.folders
            if not is_remote:
                # the broker's checkpoint holds a tiered partition's log start, remote part included
                entry["checkpointed_log_start"] = p.checkpointed_log_start
                entry["log_start_problem"] = p.log_start_problem
            segs = p.segments + p.copies
            if is_remote:
                segs = [s._replace(storage=lay.storage, end_offset=None) for s in segs]
            else:
                segs = [s._replace(end_offset=None) for s in segs]
            entry["segments"] += segs
    metadata = getattr(_tiered(remote.storage), "metadata", None)
    parts: List[PartitionLog] = []
    gaps: List[Gap] = []
    for key, e in by_key.items():
        segments, copies = _dedupe(e["segments"])
        parts.append(PartitionLog(e["topic"], e["partition"], e["topic_id"], segments, copies,
                                  sorted(e["folders"]), e["checkpointed_log_start"], e["log_start_problem"]))
        if metadata is not None:
            for a, b in zip(segments, segments[1:]):
                known = metadata.state(a.segment_id) if a.segment_id else None
                if known is not None and known.end_offset + 1 < b.base_offset:
                    gaps.append(Gap(e["topic"], e["partition"], known.end_offset + 1, b.base_offset))
    parts.sort(key=lambda p: (p.topic or "", p.partition if p.partition is not None else -1))
    return Layout(local.storage, local.root, parts, local.skipped + remote.skipped,
                  local.not_live + remote.not_live), gaps
