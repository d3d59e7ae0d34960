"""Kafka log directories: finding segment files, and planning reads split at batch boundaries.

No pyspark here.  A log directory holds ``<topic>-<partition>/`` folders of
``<base offset, 20 digits>.log`` segments (plus index files, which are not
read).  Any ``.log`` file under the given paths is read; its topic and
partition come from its folder's name (null when the name does not have that
form).  Folders Kafka itself ignores (``<topic>-<partition>.<id>-delete`` /
``-future`` / ``-stray``) are skipped.

A read is planned as a list of tasks, each a list of :class:`Slice` (a byte
range of one file).  Files larger than the split size are cut where a batch
starts, found by walking batch headers (12-byte length prefix) - the data in
between is not read.  Slices cover each file completely and do not overlap,
so no byte is read twice or left out: what is not a whole batch (a framing
error, a cut-off batch at the end) stays inside a slice and is reported by
the reader.
"""
from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
import struct
from typing import Iterable, NamedTuple

__all__ = ["Segment", "Slice", "parse_topic_partition", "discover", "plan", "parse_bytes",
           "aborted_batches", "DuplicatePartitionError"]

_TOPIC_PARTITION = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_KAFKA_IGNORED_DIR = re.compile(r"^.+-\d+\.[0-9a-fA-F]{32}-(delete|future|stray)$")
_GLOB_CHARS = re.compile(r"[*?\[]")
_LENGTH = struct.Struct(">i")
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
_ATTR_TRANSACTIONAL = 0x10
_ATTR_CONTROL = 0x20


class DuplicatePartitionError(ValueError):
    """The same topic-partition was found in more than one folder (e.g. replicas)."""


class Segment(NamedTuple):
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
    """``"orders-3"`` -> ``("orders", 3)``; anything else -> ``(None, None)``."""
    m = _TOPIC_PARTITION.match(os.path.basename(os.path.normpath(dirname)))
    if not m:
        return None, None
    partition = int(m.group("partition"))
    if partition > 0x7FFFFFFF:
        return None, None
    return m.group("topic"), partition


def _base_offset(path: str):
    stem = os.path.basename(path).split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


def parse_bytes(value, default: int) -> int:
    """``"128m"``, ``"4k"``, ``"1g"``, ``"1048576"``, ``"64MiB"`` -> bytes."""
    if value is None or value == "":
        return default
    if isinstance(value, int):
        return value
    s = str(value).strip().lower().replace("ib", "").replace("b", "")
    mult = 1
    if s and s[-1] in "kmgt":
        mult = 1024 ** ("kmgt".index(s[-1]) + 1)
        s = s[:-1]
    n = int(float(s) * mult)
    if n <= 0:
        raise ValueError(f"expected a positive byte size, got {value!r}")
    return n


def split_paths(options: dict) -> list:
    """The paths of a load(): option ``path`` (one), or ``paths`` (a JSON list, as
    Spark passes ``load([a, b])``)."""
    out = []
    raw = options.get("paths")
    if raw:
        try:
            loaded = json.loads(raw)
        except ValueError:
            loaded = [raw]
        out += [p for p in (loaded if isinstance(loaded, list) else [loaded]) if p]
    if options.get("path"):
        out.append(options["path"])
    return out


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
    segments = []
    folders: dict = {}
    for real, shown in files.items():
        topic, partition = parse_topic_partition(os.path.dirname(real))
        if topic is not None:
            folder = os.path.dirname(real)
            other = folders.setdefault((topic, partition), folder)
            if other != folder and not allow_duplicate_partitions:
                raise DuplicatePartitionError(
                    f"topic-partition {topic}-{partition} is in two folders, {other} and {folder} "
                    f"(replicas, or copies of a log directory?); its records would be read twice. "
                    f"Point the reader at one of them, or set option allowDuplicatePartitions=true.")
        segments.append(Segment(os.path.abspath(shown), os.path.getsize(real), topic, partition,
                                _base_offset(real)))
    segments.sort(key=lambda s: (s.topic is None, s.topic or "", -1 if s.partition is None else s.partition,
                                 -1 if s.base_offset is None else s.base_offset, s.path))
    return segments, skipped


def _walk(root: str, glob_filter: str, recursive: bool, skipped: list):
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        keep = []
        for d in sorted(dirnames):
            if _KAFKA_IGNORED_DIR.match(d):
                skipped.append(os.path.join(dirpath, d))
            elif not d.startswith("."):
                keep.append(d)
        dirnames[:] = keep if recursive else []
        for f in sorted(filenames):
            if fnmatch.fnmatchcase(f, glob_filter):
                yield os.path.join(dirpath, f)


class _Header(NamedTuple):
    position: int
    size: int
    magic: int
    attributes: int
    producer_id: int


def _walk_batches(path: str, size: int):
    """The header of every whole batch of a file, in order, until the end, a
    cut-off batch or a framing error (the reader reports those).  Follows
    kafkarec's framing (length prefix, magic 0-2, v2 header size) and reads
    only headers (``pread`` of 61 bytes per batch)."""
    if size == 0:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while size - pos >= 17:
            head = os.pread(fd, 61, pos)
            if len(head) < 17:
                return
            length, magic = _LENGTH.unpack_from(head, 8)[0], head[16]
            if length < 14 or magic > 2:
                return
            batch_size = length + 12
            if size - pos < batch_size:
                return
            attributes = producer_id = 0
            if magic == 2:
                if batch_size < 61 or len(head) < 61:
                    return
                attributes, = _ATTRIBUTES.unpack_from(head, 21)
                producer_id, = _PRODUCER_ID.unpack_from(head, 43)
            yield _Header(pos, batch_size, magic, attributes, producer_id)
            pos += batch_size
    finally:
        os.close(fd)


def _read_batch(path: str, position: int, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, size, position)
    finally:
        os.close(fd)


def _cut_points(seg: Segment, max_split: int) -> list:
    """Where to split one file: batch starts, about ``max_split`` bytes apart."""
    cuts = [0]
    chunk_start = 0
    for pos, size, *_ in _walk_batches(seg.path, seg.size):
        if pos > chunk_start and pos + size - chunk_start > max_split:
            cuts.append(pos)
            chunk_start = pos
    cuts.append(seg.size)
    return cuts


def _control_type(kafkarec, data: bytes):
    """The control record type id of a control batch (0 ABORT, 1 COMMIT), or None."""
    try:
        for batch in kafkarec.iter_batches(data, verify_crc=False):
            for rec in batch:
                return rec.control_type_id
    except kafkarec.DecodeError:
        return None
    return None


def aborted_batches(kafkarec, segments: list) -> dict:
    """``{path: [(position, size), ...]}`` of transactional batches whose
    transaction aborts (or never ends) in a topic-partition's whole log, as a
    ``read_committed`` consumer would leave them out.  Segments must be given
    in offset order; the transaction state carries over from one to the next."""
    out: dict = {}
    by_partition: dict = {}
    for seg in segments:
        by_partition.setdefault((seg.topic, seg.partition, os.path.dirname(seg.path)
                                 if seg.topic is None else ""), []).append(seg)
    for segs in by_partition.values():
        open_batches: dict = {}
        aborted = []
        for seg in segs:
            for h in _walk_batches(seg.path, seg.size):
                if h.magic < 2 or not h.attributes & _ATTR_TRANSACTIONAL:
                    continue
                if h.attributes & _ATTR_CONTROL:
                    pending = open_batches.pop(h.producer_id, [])
                    kind = _control_type(kafkarec, _read_batch(seg.path, h.position, h.size))
                    if kind == 0:   # ABORT
                        aborted += pending
                else:
                    open_batches.setdefault(h.producer_id, []).append((seg.path, h.position, h.size))
        for pending in open_batches.values():
            aborted += pending
        for path, pos, size in aborted:
            out.setdefault(path, []).append((pos, size))
    for v in out.values():
        v.sort()
    return out


def plan(segments: list, *, max_partition_bytes: int, open_cost: int,
         min_partitions: int = 1, aborted: dict | None = None) -> list:
    """Tasks (lists of :class:`Slice`) covering every byte of every segment once."""
    if not segments:
        return []
    total = sum(s.size + open_cost for s in segments)
    max_split = min(max_partition_bytes, max(open_cost, total // max(1, min_partitions)))
    max_split = max(max_split, 1)
    slices = []
    for seg in segments:
        if seg.size > max_split:
            cuts = _cut_points(seg, max_split)
        else:
            cuts = [0, seg.size]
        for a, b in zip(cuts, cuts[1:]):
            skip = ()
            if aborted and seg.path in aborted:
                skip = tuple((p, n) for p, n in aborted[seg.path] if a <= p < b)
            slices.append(Slice(seg.path, a, b, seg.topic, seg.partition, skip))
    tasks = []
    current: list = []
    current_size = 0
    for sl in slices:
        size = sl.end - sl.start
        if current and current_size + size > max_split:
            tasks.append(current)
            current, current_size = [], 0
        current.append(sl)
        current_size += size + open_cost
    if current:
        tasks.append(current)
    return tasks
