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
  or None), :func:`renamed_dir_suffix`.

Object stores and mixed local/remote layouts are :mod:`kafkarec.log.layout`'s
(a flat listing); both take file names from :mod:`kafkarec.log.names`.
"""
from __future__ import annotations

import fnmatch
import os
from typing import Iterator, List, NamedTuple, Optional, Tuple

from kafkarec.log import names
from kafkarec.log.names import (  # noqa: F401  (re-exported: folder names are names.py's rules)
    TopicPartition, parse_partition_folder, parse_topic_partition, renamed_dir_suffix)

__all__ = ["TopicPartition", "parse_topic_partition", "renamed_dir_suffix", "SegmentFiles",
           "PartitionDir", "is_partition_dir", "scan_partition_dir", "find_partition_dirs",
           "SegmentFile", "segment_file", "walk_files", "find_segment_files"]


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

class SegmentFile(NamedTuple):
    """A segment file found on disk, with what its path says about it."""
    path: str
    size: int
    topic_partition: Optional[TopicPartition]   # from its folder, None if the folder names none
    base_offset: Optional[int]                  # from its name, None if the name holds none
    segment_id: Optional[str]                   # a tiered segment's id


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


def walk_files(root: str, *, pattern: str = "*.log", recursive: bool = True,
               skipped: Optional[list] = None) -> Iterator[str]:
    """Files under ``root`` whose name matches ``pattern`` (fnmatch, case-sensitive), in
    name order.  Partition folders Kafka renamed (``-delete``/``-future``/``-stray``) are
    not entered and are appended to ``skipped``; hidden folders are not entered."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        keep = []
        for d in sorted(dirnames):
            if renamed_dir_suffix(d):
                if skipped is not None:
                    skipped.append(os.path.join(dirpath, d))
            elif not d.startswith("."):
                keep.append(d)
        dirnames[:] = keep if recursive else []
        for f in sorted(filenames):
            if fnmatch.fnmatchcase(f, pattern):
                yield os.path.join(dirpath, f)


def find_segment_files(paths, *, pattern: str = "*.log",
                       recursive: bool = True) -> Tuple[List[SegmentFile], List[str]]:
    """Segment files under ``paths`` (files or folders), each once (by real path), sorted
    by topic, partition, base offset and path; and the renamed folders skipped."""
    found: dict = {}
    skipped: List[str] = []
    for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths):
        p = os.fspath(p)
        if not os.path.exists(p):
            raise FileNotFoundError(f"path does not exist: {p}")
        files = walk_files(p, pattern=pattern, recursive=recursive, skipped=skipped) \
            if os.path.isdir(p) else [p]
        for f in files:
            found.setdefault(os.path.realpath(f), f)
    out = [segment_file(shown, os.path.getsize(real)) for real, shown in found.items()]
    out.sort(key=lambda s: (s.topic_partition is None, s.topic_partition or ("", -1),
                            -1 if s.base_offset is None else s.base_offset, s.path))
    return out, skipped
