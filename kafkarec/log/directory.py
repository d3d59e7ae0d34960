"""Kafka log directories on a local disk: one walk, used by the CLI and by Spark.

A broker's log directory holds one ``<topic>-<partition>/`` folder per
partition (the topic may contain dashes; ``.<id>-delete``/``-future``/``-stray``
suffixes as Kafka's LocalLog writes them), each holding segments
(:mod:`kafkarec.log.names`) and side files (:mod:`kafkarec.log.sidefiles`).

Public API:

* :func:`find_partition_dirs` (``root``) -> the :class:`PartitionDir` s directly under a
  log directory root, by topic then partition;
* :func:`scan_partition_dir` (``path``) -> one :class:`PartitionDir`: its segments
  (:class:`SegmentFiles`, by base offset; broker names and tiered
  ``<offset>-<segment id>`` names), producer and KRaft snapshots, checkpoints;
* :func:`is_partition_dir`, :func:`parse_topic_partition` (-> :class:`TopicPartition`
  or None), :func:`renamed_dir_suffix`;
* :func:`find_segment_files` (``paths``) -> the :class:`SegmentFile` s under files, folders
  and globs, as Spark's reader of local files finds them (``pathGlobFilter``,
  ``recursiveFileLookup``, one folder per topic-partition); :mod:`kafkarec.log.local`
  cuts them into slices.

Object stores and mixed local/remote layouts are :mod:`kafkarec.log.layout`'s
(a flat listing); both take file names from :mod:`kafkarec.log.names`.
"""
from __future__ import annotations

import fnmatch
import glob
import os
import re
from typing import Iterator, List, NamedTuple, Optional, Tuple

from kafkarec.errors import KafkaRecError
from kafkarec.log import names
from kafkarec.log.names import (  # noqa: F401  (re-exported: folder names are names.py's rules)
    TopicPartition, parse_partition_folder, parse_topic_partition, renamed_dir_suffix)

__all__ = ["TopicPartition", "parse_topic_partition", "renamed_dir_suffix", "SegmentFiles",
           "PartitionDir", "is_partition_dir", "scan_partition_dir", "find_partition_dirs",
           "SegmentFile", "segment_file", "find_segment_files", "DuplicatePartitionError"]


class SegmentFiles(NamedTuple):
    """One segment's files (paths, None when absent)."""
    base_offset: int
    log: Optional[str]
    index: Optional[str]
    timeindex: Optional[str]
    txnindex: Optional[str]
    segment_id: Optional[str] = None     # a tiered segment's id (``<offset>-<id>.log``)


class PartitionDir(NamedTuple):
    path: str
    topic_partition: Optional[TopicPartition]
    segments: List[SegmentFiles]
    producer_snapshots: List[str]
    kraft_snapshots: List[str]
    leader_epoch_checkpoint: Optional[str]
    partition_metadata: Optional[str]
    other: List[str]

    @property
    def name(self) -> str:
        tp = self.topic_partition
        return f"{tp.topic}-{tp.partition}" if tp else os.path.basename(self.path)

    def log_bytes(self) -> int:
        """The size of the segments' ``.log`` files (0 for any that cannot be read)."""
        total = 0
        for s in self.segments:
            if s.log:
                try:
                    total += os.path.getsize(s.log)
                except OSError:
                    pass
        return total


_PARTITION_FILE_KINDS = ("log", "index", "timeindex", "txnindex", "snapshot", "checkpoint")


def is_partition_dir(path: str) -> bool:
    """A directory holding one partition's files (not a log dir root, which holds such directories)."""
    if not os.path.isdir(path):
        return False
    try:
        entries = os.listdir(path)
    except OSError:
        return False
    if "meta.properties" in entries:          # written at the root of every Kafka log dir
        return False
    if any(names.file_kind(n) in _PARTITION_FILE_KINDS and os.path.isfile(os.path.join(path, n))
           for n in entries):
        return True
    if parse_topic_partition(path) is None:
        return False
    # An empty partition, unless it is a root whose own name happens to look like one (data-1/).
    return not any(parse_topic_partition(n) and os.path.isdir(os.path.join(path, n)) for n in entries)


def scan_partition_dir(path: str) -> PartitionDir:
    """The files of one partition directory, segments in offset order."""
    segs = {}
    snapshots, kraft, other = [], [], []
    epoch_ckpt = metadata = None
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if not os.path.isfile(full):
            continue
        seg = names.parse_segment_name(name)
        kind = seg.kind if seg is not None else names.file_kind(name)
        if seg is not None and kind in ("log", "index", "timeindex", "txnindex"):
            segs.setdefault((seg.base_offset, seg.segment_id or ""), {})[kind] = full
        elif kind == "snapshot":
            snapshots.append(full)
        elif kind == "checkpoint":
            kraft.append(full)
        elif kind == "leader-epoch-checkpoint" and name == names.LEADER_EPOCH_CHECKPOINT:
            epoch_ckpt = full
        elif kind == "partition-metadata":
            metadata = full
        else:
            other.append(full)   # .deleted, .cleaned, .swap, quorum-state, backup.log, ...

    def by_offset(p):
        try:
            return (names.offset_from_file_name(p), p)
        except names.SideFileError:
            return (-1, p)

    segments = [SegmentFiles(b, f.get("log"), f.get("index"), f.get("timeindex"), f.get("txnindex"),
                             sid or None)
                for (b, sid), f in sorted(segs.items())]
    return PartitionDir(path, _topic_partition(path, any(s.segment_id for s in segments)), segments, sorted(snapshots, key=by_offset),
                        sorted(kraft), epoch_ckpt, metadata, sorted(other))


def _topic_partition(folder: str, tiered: bool) -> Optional[TopicPartition]:
    tp = parse_partition_folder(os.path.abspath(folder), tiered_files=tiered)
    return None if tp is None else TopicPartition(tp[0], tp[1])


def find_partition_dirs(root: str) -> List[PartitionDir]:
    """Partition directories directly under a log directory root, by topic then partition;
    also the numbered partition folders of remote storage plugins' ``<topic>-<topic id>/``
    folders (``orders-oAtiIQ95REujbuzNd_lkLQ/0/``)."""
    found = []
    for name in os.listdir(root):
        full = os.path.join(root, name)
        if is_partition_dir(full):
            found.append(scan_partition_dir(full))
        elif names.is_topic_id_folder(name) and os.path.isdir(full):
            for sub in os.listdir(full):
                inner = os.path.join(full, sub)
                if sub.isdigit() and is_partition_dir(inner):
                    found.append(scan_partition_dir(inner))

    def key(p):
        tp = p.topic_partition
        return (tp.topic, tp.partition) if tp else (p.name, -1)
    return sorted(found, key=key)


# --- segment files wherever they are (Spark's file discovery, the CLI's file arguments) ---

class DuplicatePartitionError(KafkaRecError, ValueError):
    """The same topic-partition was found in more than one folder (e.g. replicas)."""


class SegmentFile(NamedTuple):
    """A segment file found on disk, with what its path says about it."""
    path: str
    size: int
    topic_partition: Optional[TopicPartition]   # from its folder, None if the folder names none
    base_offset: Optional[int]                  # from its name, None if the name holds none
    segment_id: Optional[str]                   # a tiered segment's id

    @property
    def topic(self) -> Optional[str]:
        return None if self.topic_partition is None else self.topic_partition.topic

    @property
    def partition(self) -> Optional[int]:
        return None if self.topic_partition is None else self.topic_partition.partition


def segment_file(path: str, size: Optional[int] = None) -> SegmentFile:
    """What a segment file's path says: topic-partition (broker and tiered folder forms),
    base offset and segment id (broker and tiered file names)."""
    seg = names.parse_segment_name(path)
    if seg is not None:
        base, sid = seg.base_offset, seg.segment_id
    else:
        try:
            base, sid = names.offset_from_file_name(path), None
        except names.SideFileError:
            base, sid = None, None     # a renamed or backed-up file: the reader takes the first batch's
    return SegmentFile(path, os.path.getsize(path) if size is None else size,
                       _topic_partition(os.path.dirname(path), sid is not None), base, sid)


_GLOB_CHARS = re.compile(r"[*?\[]")


def _local_path(path: str) -> str:
    """``path`` without a ``file:`` scheme; any other scheme is refused (object stores are
    :mod:`kafkarec.log.layout`'s)."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", path):
        raise ValueError(f"kafkarec reads local (or locally mounted) files only, not {path}")
    return path


def find_segment_files(paths, *, pattern: str = "*.log", recursive: bool = True,
                       allow_duplicate_partitions: bool = False) -> Tuple[List[SegmentFile], List[str]]:
    """Segment files under ``paths`` (files, folders or glob patterns; ``file:`` paths too),
    each once (by real path), sorted by topic, partition, base offset and path; and the
    folders Kafka renamed that were skipped.  A folder is walked by :func:`_walk`; a file's
    topic-partition comes from its folder's name (:func:`segment_file`).  The same
    topic-partition in two folders raises :class:`DuplicatePartitionError` unless
    ``allow_duplicate_partitions``.  A file listed (globbed or walked) that is gone before its
    size is read is left out, as a live broker's retention deletes segments at any moment; a file
    named as it is must be there."""
    files: dict = {}
    named: set = set()      # the real paths of files named as they are (not globbed nor walked)
    skipped: List[str] = []
    from kafkarec.log.storage import count_listing
    for raw in ([paths] if isinstance(paths, (str, os.PathLike)) else paths):
        raw = os.fspath(raw)
        count_listing(raw)
        path = os.path.expanduser(_local_path(raw))
        if _GLOB_CHARS.search(path):
            matches = sorted(glob.glob(path, recursive=True))
            if not matches:
                raise FileNotFoundError(f"no file matches {raw}")
        else:
            if not os.path.exists(path):
                raise FileNotFoundError(f"path does not exist: {raw}")
            matches = [path]
        for m in matches:
            if os.path.isdir(m):
                for f in _walk(m, pattern, recursive, skipped):
                    files.setdefault(os.path.realpath(f), f)
            elif os.path.isfile(m):
                files.setdefault(os.path.realpath(m), m)
                if m == path:
                    named.add(os.path.realpath(m))
    out = []
    folders: dict = {}
    for real, shown in files.items():
        try:
            found = segment_file(real)
        except FileNotFoundError:
            if real in named:
                raise
            # listed, then gone before its size was read: a live broker's retention renames a
            # segment (.deleted) and unlinks it at any moment, so a listing a moment later would
            # not have found it either; its records are the log's no longer
            continue
        if found.topic is not None:
            folder = os.path.dirname(real)
            other = folders.setdefault(found.topic_partition, folder)
            if other != folder and not allow_duplicate_partitions:
                raise DuplicatePartitionError(
                    f"topic-partition {found.topic}-{found.partition} is in two folders, {other} and "
                    f"{folder} (replicas, or copies of a log directory?); its records would be read "
                    f"twice. Point the reader at one of them, or set option allowDuplicatePartitions=true.")
        out.append(found._replace(path=os.path.abspath(shown)))
    out.sort(key=lambda s: (s.topic is None, s.topic or "", -1 if s.partition is None else s.partition,
                            -1 if s.base_offset is None else s.base_offset, s.path))
    return out, skipped


def _partition_logs(part: PartitionDir, pattern: str) -> List[str]:
    """The files of one partition folder matching ``pattern``: its segments in offset order,
    then other files (a renamed or backed-up ``backup.log``)."""
    out = [s.log for s in part.segments if s.log and fnmatch.fnmatchcase(os.path.basename(s.log), pattern)]
    out += [f for f in part.other if fnmatch.fnmatchcase(os.path.basename(f), pattern)]
    return out


def _walk(root: str, pattern: str, recursive: bool, skipped: list) -> Iterator[str]:
    """The files under ``root`` matching ``pattern``: ``root`` is a partition folder
    (:func:`is_partition_dir`) or holds partition folders (:func:`find_partition_dirs`), whose
    files are taken whether ``recursive`` or not, and files of its own; folders Kafka renamed
    (``-delete``/``-future``/``-stray``) are skipped (appended to ``skipped``).  With
    ``recursive``, other sub-folders (several log dirs under one root) are walked too; hidden
    ones are not."""
    root = os.path.normpath(root)
    names_here = None       # root's entries, listed once
    claimed = set()
    if is_partition_dir(root):
        yield from _partition_logs(scan_partition_dir(root), pattern)
    else:
        for part in find_partition_dirs(root):
            # the folder under root it was found in (<topic>-<topic id>/N/ is one level down)
            claimed.add(os.path.relpath(part.path, root).split(os.sep)[0])
            if renamed_dir_suffix(part.path):
                skipped.append(part.path)
                continue
            yield from _partition_logs(part, pattern)
        names_here = sorted(os.listdir(root))
        for name in names_here:                  # segment-like files at the root itself
            full = os.path.join(root, name)
            if os.path.isfile(full) and fnmatch.fnmatchcase(name, pattern):
                yield full
    if not recursive:
        return
    if names_here is None:
        names_here = sorted(os.listdir(root))
    for name in names_here:
        full = os.path.join(root, name)
        if name in claimed or name.startswith(".") or not os.path.isdir(full):
            continue
        if renamed_dir_suffix(name):
            skipped.append(full)
            continue
        yield from _walk(full, pattern, recursive, skipped)
