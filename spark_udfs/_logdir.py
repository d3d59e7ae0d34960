"""Kafka log directories: finding segment files, and planning reads split at batch boundaries.

No pyspark here.  A log directory holds ``<topic>-<partition>/`` folders of
``<base offset, 20 digits>.log`` segments (plus index files, which are not
read).  Folders are walked with kafkarec.log's directory walk
(``is_partition_dir`` / ``find_partition_dirs`` / ``scan_partition_dir``): a
partition folder gives its segments in offset order, then any other file
matching ``pathGlobFilter`` (``*.log``: a backed-up ``backup.log`` too); with
``recursiveFileLookup`` other sub-folders (several log dirs under one root)
are walked as well.  A file's topic and partition come from its folder's name
(a broker's ``topic-N``, or tiered storage's ``topic-N-<id>`` and ``topic-<id>/N``;
null when the name has none of these forms).  Folders Kafka itself ignores
(``<topic>-<partition>.<id>-delete`` / ``-future`` / ``-stray``) are skipped.

A read is planned as a list of tasks, each a list of :class:`Slice` (a byte
range of one file).  Files larger than the split size are cut where a batch
starts, found by walking batch headers - the data in between is not read.
Slices cover each file completely and do not overlap, so no byte is read twice
or left out: what is not a whole batch (a framing error, a cut-off batch at
the end) stays inside a slice and is reported by the reader.

The Kafka rules come from kafkarec: folder names from :mod:`kafkarec.log.directory`,
segment file names and batch walks from :mod:`kafkarec.log.segment`, the
``read_committed`` rule from :func:`kafkarec.log.committed.aborted_spans`.  They are imported
when first needed, not with this module: in a Spark worker kafkarec has to come
from the archives :func:`spark_udfs.register` shipped
(:func:`spark_udfs._runtime.import_kafkarec`).  What is left here is Spark's:
paths and globs, pathGlobFilter / recursiveFileLookup, duplicate partitions,
and cutting files for :mod:`spark_udfs._planning`, which packs slices into tasks
as Spark's maxPartitionBytes / openCostInBytes do (the same for remote reads).
"""
from __future__ import annotations

import fnmatch
import glob
import os
import re
from typing import Iterable, NamedTuple

from spark_udfs import _planning
from spark_udfs._runtime import import_kafkarec

__all__ = ["LogFile", "Slice", "parse_topic_partition", "discover", "plan", "aborted_batches",
           "DuplicatePartitionError"]

_GLOB_CHARS = re.compile(r"[*?\[]")


def _core():
    """The module ``kafkarec.log.segment`` (see the module docstring)."""
    import_kafkarec()
    from kafkarec.log import segment
    return segment


def _directory():
    """The module ``kafkarec.log.directory``: partition folders found and scanned."""
    import_kafkarec()
    from kafkarec.log import directory
    return directory


class DuplicatePartitionError(ValueError):
    """The same topic-partition was found in more than one folder (e.g. replicas)."""


class LogFile(NamedTuple):
    """A segment file found by :func:`discover` (its size as found)."""
    path: str
    size: int
    topic: str | None
    partition: int | None
    base_offset: int | None


class Slice(NamedTuple):
    path: str
    start: int
    end: int
    topic: str | None
    partition: int | None
    # (position, size) of batches left out of this slice (read_committed: aborted
    # transactions), sorted, inside [start, end).
    skip: tuple = ()


def parse_topic_partition(dirname: str):
    """``"orders-3"`` -> ``("orders", 3)``; anything else -> ``(None, None)``
    (:func:`kafkarec.log.directory.parse_topic_partition`)."""
    tp = _directory().parse_topic_partition(dirname)
    return (None, None) if tp is None else tuple(tp)


def _strip_scheme(path: str) -> str:
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", path):
        raise ValueError(f"kafkarec reads local (or locally mounted) files only, not {path}")
    return path


def discover(paths: Iterable[str], *, glob_filter: str = "*.log", recursive: bool = True,
             allow_duplicate_partitions: bool = False):
    """Segment files under ``paths`` (files, folders or glob patterns), sorted by
    topic, partition and base offset.  Returns ``(segments, skipped_dirs)``."""
    files: dict = {}
    skipped = []
    for raw in paths:
        path = os.path.expanduser(_strip_scheme(raw))
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
                for f in _walk(m, glob_filter, recursive, skipped):
                    files.setdefault(os.path.realpath(f), f)
            elif os.path.isfile(m):
                files.setdefault(os.path.realpath(m), m)
    base_offset = _core().base_offset_from_name
    from kafkarec.log.directory import segment_file
    segments = []
    folders: dict = {}
    for real, shown in files.items():
        # broker folders (topic-N) and tiered ones (topic-N-<id>, topic-<id>/N)
        tp = segment_file(real).topic_partition
        topic, partition = (tp.topic, tp.partition) if tp is not None else (None, None)
        if topic is not None:
            folder = os.path.dirname(real)
            other = folders.setdefault((topic, partition), folder)
            if other != folder and not allow_duplicate_partitions:
                raise DuplicatePartitionError(
                    f"topic-partition {topic}-{partition} is in two folders, {other} and {folder} "
                    f"(replicas, or copies of a log directory?); its records would be read twice. "
                    f"Point the reader at one of them, or set option allowDuplicatePartitions=true.")
        segments.append(LogFile(os.path.abspath(shown), os.path.getsize(real), topic, partition,
                                base_offset(real)))
    segments.sort(key=lambda s: (s.topic is None, s.topic or "", -1 if s.partition is None else s.partition,
                                 -1 if s.base_offset is None else s.base_offset, s.path))
    return segments, skipped


def _partition_logs(part, glob_filter: str):
    """The ``.log`` files of one partition folder (a :class:`kafkarec.log.directory.PartitionDir`):
    its segments in offset order, then other files matching ``glob_filter``
    (a renamed or backed-up ``backup.log``)."""
    out = [s.log for s in part.segments if s.log and fnmatch.fnmatchcase(os.path.basename(s.log),
                                                                             glob_filter)]
    out += [f for f in part.other if fnmatch.fnmatchcase(os.path.basename(f), glob_filter)]
    return out


def _walk(root: str, glob_filter: str, recursive: bool, skipped: list):
    """The segment files under ``root``, found by kafkarec.log's directory walk:
    ``root`` is a partition folder (:func:`kafkarec.log.directory.is_partition_dir`)
    or holds partition folders (:func:`kafkarec.log.directory.find_partition_dirs`);
    folders Kafka renamed (``-delete``/``-future``/``-stray``) are skipped.  With
    ``recursive``, other sub-folders (several log dirs under one root) are walked too."""
    directory = _directory()
    root = os.path.normpath(root)
    names = None       # root's entries, listed once
    if directory.is_partition_dir(root):
        yield from _partition_logs(directory.scan_partition_dir(root), glob_filter)
        claimed = set()
    else:
        claimed = set()
        for part in directory.find_partition_dirs(root):
            # the folder under root it was found in (<topic>-<topic id>/N/ is one level down)
            claimed.add(os.path.relpath(part.path, root).split(os.sep)[0])
            if directory.renamed_dir_suffix(part.path):
                skipped.append(part.path)
                continue
            yield from _partition_logs(part, glob_filter)
        names = sorted(os.listdir(root))
        for name in names:                       # segment-like files at the root itself
            full = os.path.join(root, name)
            if os.path.isfile(full) and fnmatch.fnmatchcase(name, glob_filter):
                yield full
    if not recursive:
        return
    if names is None:
        names = sorted(os.listdir(root))
    for name in names:
        full = os.path.join(root, name)
        if name in claimed or name.startswith(".") or not os.path.isdir(full):
            continue
        if directory.renamed_dir_suffix(name):
            skipped.append(full)
            continue
        yield from _walk(full, glob_filter, recursive, skipped)


def _batches(f: LogFile):
    """The whole batches of a file as found (headers parsed, records not), in
    order, up to the first the reader (:func:`kafkarec.iter_batches`) would not
    frame: a decode error, or a magic outside 0..2, which
    :class:`kafkarec.log.segment.Segment` frames as Kafka's FileLogInputStream does.
    The reader reports what is left."""
    segment_module = _core()
    from kafkarec.errors import DecodeError
    with segment_module.Segment(f.path) as seg:
        try:
            for batch in seg.batches(0, f.size, verify_crc=False):
                if not 0 <= batch.magic <= 2:
                    return
                yield batch
        except DecodeError:
            return


def _spans(f: LogFile, spans: dict | None):
    """``(position, size)`` of the whole batches of ``f``, walked once per plan:
    taken from ``spans`` when the read_committed walk already recorded them."""
    if spans is not None and f.path in spans:
        return spans[f.path]
    return [(b.position, b.size_in_bytes) for b in _batches(f)]


def _recorded(f: LogFile, spans: dict | None):
    """:func:`_batches`, noting each batch's span in ``spans`` for :func:`plan`."""
    out = spans.setdefault(f.path, []) if spans is not None else None
    for batch in _batches(f):
        if out is not None:
            out.append((batch.position, batch.size_in_bytes))
        yield batch


def _cut_points(f: LogFile, max_split: int, spans: dict | None = None) -> list:
    """Where to split one file: batch starts, about ``max_split`` bytes apart."""
    cuts = [0]
    chunk_start = 0
    for pos, size in _spans(f, spans):
        if pos > chunk_start and pos + size - chunk_start > max_split:
            cuts.append(pos)
            chunk_start = pos
    cuts.append(f.size)
    return cuts


def aborted_batches(segments: list, spans: dict | None = None) -> dict:
    """``{path: [(position, size), ...]}`` of the batches a ``read_committed``
    consumer leaves out (:func:`kafkarec.log.committed.aborted_spans`), judged
    over each topic-partition's whole log: ``segments`` (from :func:`discover`)
    are in offset order and a transaction may end in a later file.  ``spans``
    (a dict) receives each file's batch spans, so :func:`plan` does not walk
    them again."""
    import_kafkarec()
    from kafkarec.log import committed
    by_partition: dict = {}
    for seg in segments:
        by_partition.setdefault((seg.topic, seg.partition, os.path.dirname(seg.path)
                                 if seg.topic is None else ""), []).append(seg)
    out: dict = {}
    for files in by_partition.values():
        out.update(committed.aborted_spans(batch for f in files for batch in _recorded(f, spans)))
    return out


def plan(segments: list, *, max_partition_bytes: int, open_cost: int,
         min_partitions: int | None = None, default_parallelism: int = 1,
         aborted: dict | None = None, spans: dict | None = None) -> list:
    """Tasks (lists of :class:`Slice`) covering every byte of every segment once,
    cut and packed by :func:`spark_udfs._planning.plan_tasks` (Spark's file-source
    rule, the same as for remote reads); files are cut where a batch starts."""
    def whole(seg: LogFile) -> Slice:
        return _slice(seg, 0, seg.size, aborted)

    def split(sl: Slice, max_bytes: int) -> list:
        seg = by_path[sl.path]
        cuts = _cut_points(seg, max_bytes, spans)
        return [_slice(seg, a, b, aborted) for a, b in zip(cuts, cuts[1:])]

    by_path = {seg.path: seg for seg in segments}
    tasks = _planning.plan_tasks([whole(seg) for seg in segments], min_partitions=min_partitions,
                                 default_parallelism=default_parallelism,
                                 max_partition_bytes=max_partition_bytes, open_cost_bytes=open_cost,
                                 size=lambda sl: sl.end - sl.start, split=split,
                                 group=_partition_key)
    return [[w for sl in task for w in _windows(by_path[sl.path], sl, aborted)] for task in tasks]


def _partition_key(sl: Slice):
    """The topic-partition of a slice (its folder when the folder name has none)."""
    return (sl.topic, sl.partition) if sl.topic is not None else (None, os.path.dirname(sl.path))


# A task maps at most this much of a file at once: a larger slice is read as consecutive
# slices of the same task (cut at batch starts), each mapped and unmapped in turn, so an
# executor's memory stays bounded whatever maxPartitionBytes is.
READ_WINDOW_BYTES = 64 << 20


def _windows(seg: LogFile, sl: Slice, aborted: dict | None) -> list:
    """``sl`` as slices of about :data:`READ_WINDOW_BYTES`, cut where a batch starts (itself
    when it is smaller; one slice from where batches can no longer be framed)."""
    window = READ_WINDOW_BYTES
    if sl.end - sl.start <= window:
        return [sl]
    segment_module = _core()
    from kafkarec.errors import DecodeError
    cuts = [sl.start]
    with segment_module.Segment(seg.path) as f:
        try:
            for batch in f.batches(sl.start, sl.end, verify_crc=False):
                if not 0 <= batch.magic <= 2:
                    break
                if batch.position > cuts[-1] and batch.position + batch.size_in_bytes - cuts[-1] > window:
                    cuts.append(batch.position)
        except DecodeError:
            pass
    cuts.append(sl.end)
    return [_slice(seg, a, b, aborted) for a, b in zip(cuts, cuts[1:])]


def _slice(seg: LogFile, a: int, b: int, aborted: dict | None) -> Slice:
    skip = ()
    if aborted and seg.path in aborted:
        skip = tuple((p, n) for p, n in aborted[seg.path] if a <= p < b)
    return Slice(seg.path, a, b, seg.topic, seg.partition, skip)
