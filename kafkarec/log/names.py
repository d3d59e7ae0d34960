"""The names of Kafka's log files: one place for every naming rule.

* A broker's segment files: ``<20-digit base offset><suffix>`` (``.log``,
  ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``), possibly followed by
  ``.deleted``, ``.cleaned`` or ``.swap`` while the broker works on them
  (LogFileUtils: the offset is the digits before the first dot).
* Tiered (remote) segments, as Kafka's ``LocalTieredStorage`` and remote storage
  plugins name them: ``<start offset>-<segment id><suffix>``, the id in Kafka's
  22-character base64 form or as a 36-character UUID; suffixes ``.log``,
  ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``,
  ``.leader_epoch_checkpoint`` (LocalTieredStorage) and ``.indexes``,
  ``.rsm-manifest`` (Aiven's plugin).
* KRaft snapshots ``<20-digit end offset>-<10-digit epoch>.checkpoint``
  (``.part``/``.deleted`` while written or removed), ``bootstrap.checkpoint``.
* Per-partition text files (``leader-epoch-checkpoint``, ``partition.metadata``)
  and the log directory's offset checkpoints.

:func:`parse_segment_name` answers "which segment, which kind" for any of these
segment names; :func:`file_kind` answers "what is this file" for every name.
Folder names: :func:`parse_topic_partition` (a broker's ``<topic>-<partition>``,
``.<id>-delete``/``-future``/``-stray`` as LocalLog renames them,
:func:`renamed_dir_suffix`) and :func:`parse_partition_folder` (also the tiered
forms ``<topic>-<partition>-<topic id>`` and ``<topic>-<topic id>/<partition>``).
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import NamedTuple, Optional

from kafkarec.errors import SideFileError

__all__ = [
    "LOG_SUFFIX", "INDEX_SUFFIX", "TIME_INDEX_SUFFIX", "TXN_INDEX_SUFFIX",
    "PRODUCER_SNAPSHOT_SUFFIX", "CHECKPOINT_SUFFIX", "LEADER_EPOCH_CHECKPOINT",
    "PARTITION_METADATA", "BOOTSTRAP_CHECKPOINT", "OFFSET_CHECKPOINTS", "SEGMENT_KINDS",
    "SideFileError", "SegmentName", "parse_segment_name", "file_name", "offset_from_file_name",
    "file_kind", "SnapshotPath", "parse_snapshot_path", "snapshot_file_name",
    "TopicPartition", "parse_topic_partition", "renamed_dir_suffix", "parse_partition_folder",
    "is_topic_id_folder",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"
CHECKPOINT_SUFFIX = ".checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
# Per-log-dir text checkpoints; same version/count/entries shape, 3 tokens a line.
OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
    "log-start-offset-checkpoint", "cleaner-offset-checkpoint",
)

#: The kinds of a segment's own files (what :func:`parse_segment_name` returns).
SEGMENT_KINDS = ("log", "index", "timeindex", "txnindex", "snapshot")

_LOCAL_SUFFIXES = {LOG_SUFFIX: "log", INDEX_SUFFIX: "index", TIME_INDEX_SUFFIX: "timeindex",
                   TXN_INDEX_SUFFIX: "txnindex", PRODUCER_SNAPSHOT_SUFFIX: "snapshot"}
_TIERED_SUFFIXES = dict(_LOCAL_SUFFIXES, **{".leader_epoch_checkpoint": "leader-epoch-checkpoint",
                                           ".indexes": "indexes", ".rsm-manifest": "manifest"})

# Kafka's Uuid.toString(): 16 bytes in URL-safe base64 without padding (22 chars);
# the canonical 36-character form is accepted too (other plugins).
SEGMENT_ID = r"(?:[A-Za-z0-9_-]{22}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
_TIERED_DIR = re.compile(rf"^(.+)-([0-9]+)-({SEGMENT_ID})$")
_TOPIC_ID_DIR = re.compile(rf"^(.+)-({SEGMENT_ID})$")
_TIERED_FILE = re.compile(rf"([0-9]+)-({SEGMENT_ID})(\.[a-z_-]+)")
_LOCAL_FILE = re.compile(r"([0-9]+)(\.[a-z]+)")


class SegmentName(NamedTuple):
    """A segment file's name, parsed: ``00000000000000000042.log`` -> ``(42, None, "log")``."""
    base_offset: int
    segment_id: Optional[str]      # the remote segment id of a tiered name, None for a broker's name
    kind: str                      # "log", "index", ..., or a tiered-only kind ("manifest", ...)


def _basename(name) -> str:
    # Both separators: names also come from object-store listings.
    return os.path.basename(os.fspath(name)).rsplit("/", 1)[-1]


def parse_segment_name(name: str) -> Optional[SegmentName]:
    """The segment a file belongs to, from its name alone, or None if it is no segment file.

    ``00000000000000000042.log`` -> ``(42, None, "log")``;
    ``00000000000000000042-oAtiIQ95REujbuzNd_lkLQ.timeindex`` -> ``(42, "oAti...", "timeindex")``.
    Files a broker is working on (``.log.deleted``, ``.cleaned``, ``.swap``) are not segments here.
    """
    base = _basename(name)
    m = _TIERED_FILE.fullmatch(base)
    if m:
        kind = _TIERED_SUFFIXES.get(m.group(3))
        return SegmentName(int(m.group(1)), m.group(2), kind) if kind else None
    m = _LOCAL_FILE.fullmatch(base)
    if m:
        kind = _LOCAL_SUFFIXES.get(m.group(2))
        return SegmentName(int(m.group(1)), None, kind) if kind else None
    return None


def file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for ``(42, ".log")``."""
    return f"{base_offset:020d}{suffix}"


def offset_from_file_name(name: str) -> int:
    """The offset a segment file is named after.

    Kafka's rule (the digits before the first dot, ``.deleted``/``.swap`` names
    included), and the start offset of a tiered ``<offset>-<segment id>`` name.
    Raises :class:`SideFileError` for any other name.
    """
    base = _basename(name)
    tiered = parse_segment_name(base)
    if tiered is not None and tiered.segment_id is not None:
        return tiered.base_offset
    head = base.split(".", 1)[0]
    # Java's Long.parseLong: optional sign, ASCII digits only.
    if not re.fullmatch(r"[+-]?[0-9]+", head):
        raise SideFileError(f"cannot read a base offset from the file name {base!r} "
                            f"(expected 20 digits, e.g. 00000000000000000000{LOG_SUFFIX}, or "
                            f"<offset>-<segment id>{LOG_SUFFIX})")
    return int(head)


def file_kind(name: str) -> Optional[str]:
    """What a file in a partition directory is, from its name; None if Kafka has no such file.

    Kinds: ``log``, ``index``, ``timeindex``, ``txnindex``, ``snapshot``,
    ``checkpoint`` (KRaft snapshots), ``leader-epoch-checkpoint``,
    ``partition-metadata``, ``offset-checkpoint``, and for tiered names also
    ``indexes`` and ``manifest``.  Any ``*.log`` is a log, whatever its stem
    (a renamed or backed-up segment).
    """
    base = _basename(name)
    if base == LEADER_EPOCH_CHECKPOINT:
        return "leader-epoch-checkpoint"
    if base == PARTITION_METADATA:
        return "partition-metadata"
    if base in OFFSET_CHECKPOINTS:
        return "offset-checkpoint"
    if base == BOOTSTRAP_CHECKPOINT:
        return "checkpoint"
    seg = parse_segment_name(base)
    if seg is not None:
        return seg.kind
    for suffix, kind in ((LOG_SUFFIX, "log"), (INDEX_SUFFIX, "index"),
                         (TIME_INDEX_SUFFIX, "timeindex"), (TXN_INDEX_SUFFIX, "txnindex"),
                         (PRODUCER_SNAPSHOT_SUFFIX, "snapshot"), (CHECKPOINT_SUFFIX, "checkpoint")):
        if base.endswith(suffix):
            return kind
    return None


class SnapshotPath(NamedTuple):
    """A KRaft snapshot file name: ``%020d-%010d.checkpoint[.part|.deleted]``."""
    end_offset: int
    epoch: int
    partial: bool
    deleted: bool


def parse_snapshot_path(name: str) -> Optional[SnapshotPath]:
    """Kafka's Snapshots.parse: None if the name has no snapshot suffix."""
    base = _basename(name)
    partial = base.endswith(CHECKPOINT_SUFFIX + ".part")
    deleted = base.endswith(CHECKPOINT_SUFFIX + ".deleted")
    if not (partial or deleted or base.endswith(CHECKPOINT_SUFFIX)):
        return None
    m = re.match(r"([0-9]{20})-([0-9]{10})", base)
    if not m:
        raise SideFileError(f"{base!r} is not a KRaft snapshot name "
                            f"(expected <20-digit end offset>-<10-digit epoch>{CHECKPOINT_SUFFIX})")
    return SnapshotPath(int(m.group(1)), int(m.group(2)), partial, deleted)


def snapshot_file_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}{CHECKPOINT_SUFFIX}"


# --- folder names ------------------------------------------------------------------

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


def is_topic_id_folder(name: str) -> bool:
    """Whether a folder name is a remote storage plugin's ``<topic>-<topic id>`` (its
    partitions are the numbered folders inside: ``orders-oAtiIQ95REujbuzNd_lkLQ/0/``)."""
    return bool(_TOPIC_ID_DIR.match(name)) and not _TIERED_DIR.match(name)


def parse_partition_folder(folder: str, *, tiered_files: bool = False):
    """``(topic, partition, topic id or None)`` for a folder path, or None (a broker's ``topic-N``,
    LocalTieredStorage's ``topic-N-<topic id>``, a plugin's ``topic-<topic id>/N``).  ``tiered_files``: the folder holds tiered segment names,
    which decides ``a-1-<22 chars>`` for the LocalTieredStorage form."""
    name = posixpath.basename(folder.rstrip("/"))
    parent = posixpath.basename(posixpath.dirname(folder.rstrip("/")))
    if re.fullmatch(r"[0-9]+", name):
        m = _TOPIC_ID_DIR.match(parent)
        if m and int(name) < 2**31:
            return m.group(1), int(name), m.group(2)
    tiered = _TIERED_DIR.match(name)
    if tiered and tiered_files:
        return tiered.group(1), int(tiered.group(2)), tiered.group(3)
    tp = parse_topic_partition(name)
    if tp is not None:
        return tp.topic, tp.partition, None
    if tiered:
        return tiered.group(1), int(tiered.group(2)), tiered.group(3)
    return None
