"""A local log directory as its files are on disk, walked file by file: the door of
:mod:`kafkarec.scan` for what the command line shows per file (``stats`` of a log dir, the
partitions ``dump``, ``verify`` and ``stats`` go through), beside :class:`kafkarec.scan.LogScan`'s
rows and :class:`kafkarec.scan.PartitionWalk`'s whole-log walks.

Why a door of its own: a listed read (:func:`kafkarec.scan._plan.listings`) sees a log dir as a
reader does (copies of a segment de-duplicated, folders Kafka ignores left out, only segments
and KRaft snapshots), while these commands show every folder and every file as they are, side
files and empty partitions included, and report a damaged file's batches one by one.  The
folders are :mod:`kafkarec.log.directory`'s walk, a file is framed by
:class:`kafkarec.log.segment.Segment` (Kafka's FileRecords rules), as every local read frames it.
"""
from __future__ import annotations

from typing import Iterator, List, Optional

__all__ = ["partition_folders", "FileWalk"]


def partition_folders(path: str) -> List:
    """The partitions under a local ``path``
    (:class:`kafkarec.log.directory.PartitionDir` s, each with its files): the one partition
    folder ``path`` is, or those directly under a log directory root (and in a remote storage
    plugin's ``<topic>-<topic id>/`` folders), by topic then partition; empty when there is none."""
    from kafkarec.log import directory
    if directory.is_partition_dir(path):
        return [directory.scan_partition_dir(path)]
    return directory.find_partition_dirs(path)


class FileWalk:
    """One local segment file (a ``.log`` or a KRaft ``.checkpoint``) walked batch by batch with
    Kafka's file framing, going on past a batch whose header cannot be read (a framing error
    ends the walk): what ``stats`` counts and ``dump`` prints per file.  Iterating yields each
    :class:`kafkarec.log.segment.FileBatch` and a :class:`kafkarec.log.segment.SkippedBatch` for
    each batch not read; :attr:`position` is where the next batch starts (the end of the last
    one read); once done, :attr:`trailing_bytes` is what is left after the last whole batch (a
    torn tail, or everything from where framing stopped).  ``options``: a
    :class:`kafkarec.ReadOptions` (default CRCs checked); ``max_bytes``: only the file's first
    bytes are walked (kafka-dump-log's ``--max-bytes``).  Use as a context manager (the file is
    memory-mapped while open)."""

    def __init__(self, path: str, options=None, *, max_bytes: Optional[int] = None):
        from kafkarec.log.segment import Segment
        self.path = path
        self._segment = seg = Segment(path)
        self._options = options
        self.size = seg.size
        #: the segment's base offset: its file name's, or for a renamed file its first batch's (None
        #: when none can be read); ``base_offset_source`` says which ("name", "first batch", "none")
        self.base_offset, self.base_offset_source = seg.base_offset, seg.base_offset_source
        #: where the walk ends: the file's size, or ``max_bytes`` when smaller
        self.end = seg.size if max_bytes is None else min(seg.size, max_bytes)
        self._it = None
        self._stopped_at: Optional[int] = None

    @property
    def position(self) -> int:
        return 0 if self._it is None else self._it.position

    @property
    def trailing_bytes(self) -> int:
        if self._it is None:
            return 0
        return self._it.trailing_bytes if self._stopped_at is None else self.end - self._stopped_at

    def __iter__(self) -> Iterator:
        from kafkarec.log.segment import SkippedBatch
        self._it = self._segment.batches(0, self.end, options=self._options)
        for item in self._it.skipping():
            if isinstance(item, SkippedBatch) and item.stopped:
                self._stopped_at = item.position
            yield item

    def close(self) -> None:
        self._segment.close()

    def __enter__(self) -> "FileWalk":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
