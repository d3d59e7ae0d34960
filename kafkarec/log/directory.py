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

import os
import re
from typing import List, NamedTuple, Optional

from kafkarec.log import names

__all__ = ["TopicPartition", "parse_topic_partition", "renamed_dir_suffix", "SegmentFiles",
           "PartitionDir", "is_partition_dir", "scan_partition_dir", "find_partition_dirs"]


class TopicPartition(NamedTuple):
    topic: str
    partition: int


_DIR_SUFFIXES = ("-delete", "-future", "-stray")


def renamed_dir_suffix(dir_name: str) -> Optional[str]:
    """``"-delete"``, ``"-future"`` or ``"-stray"`` for a partition directory Kafka
    renamed (``<topic>-<partition>.<id><suffix>``, LocalLog's patterns), else None."""
    name = os.path.basename(os.path.normpath(dir_name))
    for suffix in _DIR_SUFFIXES:
        if name.endswith(suffix):
            return suffix if re.fullmatch(rf"(\S+)-(\S+)\.(\S+){re.escape(suffix)}", name) else None
    return None


def parse_topic_partition(dir_name: str) -> Optional[TopicPartition]:
    """LocalLog.parseTopicPartitionName: ``topic-N`` (topic may contain dashes), or None."""
    name = os.path.basename(os.path.normpath(dir_name))
    if not name or "-" not in name:
        return None
    if name.endswith(_DIR_SUFFIXES):
        if renamed_dir_suffix(name) is None:
            return None
        name = name[:name.rindex(".")]
    topic, _, partition = name.rpartition("-")
    if not topic or not re.fullmatch(r"[+-]?[0-9]+", partition) or not -2**31 <= int(partition) < 2**31:
        return None
    return TopicPartition(topic, int(partition))


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
    return PartitionDir(path, parse_topic_partition(path), segments, sorted(snapshots, key=by_offset),
                        sorted(kraft), epoch_ckpt, metadata, sorted(other))


def find_partition_dirs(root: str) -> List[PartitionDir]:
    """Partition directories directly under a log directory root, by topic then partition."""
    found = []
    for name in os.listdir(root):
        full = os.path.join(root, name)
        if is_partition_dir(full):
            found.append(scan_partition_dir(full))

    def key(p):
        tp = p.topic_partition
        return (tp.topic, tp.partition) if tp else (p.name, -1)
    return sorted(found, key=key)
