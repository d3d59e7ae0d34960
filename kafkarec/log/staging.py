"""Partition folders on any storage, staged on local disk for checks that read files whole.

``kafkarec verify`` checks a segment against its ``.index``, ``.timeindex`` and
``.txnindex``, snapshots and checkpoints, all of which it reads as local files
(:mod:`kafkarec.log.segment`, :mod:`kafkarec.log.sidefiles`).  For a log directory
under a URI (``s3://bucket/kafka``), :class:`Staging` lists it once and mirrors its
folders into a temporary directory:

* side files (indexes, producer snapshots, checkpoints, ``partition.metadata``) are
  downloaded as they are - small files, each refused past ``side_file_limit``;
* segment ``.log`` files and KRaft ``.checkpoint`` snapshots are sparse placeholders of
  their listed size (no disk used); :meth:`Staging.stage` downloads one, in chunks of
  bounded memory, for as long as it is checked, and empties it again afterwards.

So the local disk holds one segment at a time, memory holds one chunk, and the local
directory walk (:mod:`kafkarec.log.directory`) and every check run unchanged.

A segment a tiered-storage plugin stored (a ``.rsm-manifest`` beside its ``.log``,
:mod:`kafkarec.log.rsm`) is mirrored as the broker had it: a placeholder of the original
segment's size, staged through its chunks (decrypted, decompressed), and its offset, time and
transaction indexes taken out of ``.indexes`` as files of their own.
:meth:`Staging.to_uri` names a mirrored file by its URI again, for reports.
"""
from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
from typing import Iterator, List, Optional, Tuple

from kafkarec.log import directory, names
from kafkarec.log.storage import FileEntry, list_files, resolve

__all__ = ["Staging", "STAGED_KINDS"]

# Files read whole as segments: staged on demand, not downloaded with the listing.
STAGED_KINDS = ("log", "checkpoint")
# What a partition folder holds that the checks read (others are not mirrored).
_SIDE_KINDS = ("index", "timeindex", "txnindex", "snapshot", "leader-epoch-checkpoint",
               "partition-metadata")
_CHUNK = 8 << 20


class Staging:
    """A URI's log directory (or partition folder, or one file) mirrored under a temporary
    directory; use as a context manager (the mirror is deleted on exit)."""

    def __init__(self, uri: str, options: Optional[dict] = None, *,
                 side_file_limit: int = 256 << 20):
        self.uri = uri
        self.storage, self.root = resolve(uri, options)
        self.side_file_limit = side_file_limit
        self.local_root = tempfile.mkdtemp(prefix="kafkarec-stage-")
        self._remote = {}            # local path -> FileEntry
        self._root_is_file = False

    # -- mirroring ---------------------------------------------------------------------------

    def mirror(self) -> Tuple[str, bool]:
        """List once and mirror; returns ``(local path standing for the URI, is a file)``."""
        entries = list_files(self.storage, self.root)
        self._root_is_file = len(entries) == 1 and entries[0].path.rstrip("/") == self.root.rstrip("/")
        base = posixpath.dirname(self.root.rstrip("/")) if self._root_is_file else self.root.rstrip("/")
        if self._root_is_file:
            # a file argument: its folder, for the siblings that share its stem
            entries = list_files(self.storage, base)
        self._base = base
        plugin = self._plugin_segments(base, entries)
        for e in entries:
            rel = posixpath.relpath(e.path, base)
            if rel.startswith("..") or any(part.startswith(".") for part in rel.split("/")[:-1]):
                continue
            local = os.path.join(self.local_root, *rel.split("/"))
            kind = names.file_kind(posixpath.basename(e.path))
            if e.path in plugin:
                seg, rel = plugin[e.path]            # under the folder names the plugin's key prefix hides
                local = os.path.join(self.local_root, *rel.split("/"))
                self._placeholder(local, seg)
                self._plugin_side_files(local, seg)
            elif self._root_is_file and e.path.rstrip("/") == self.root.rstrip("/"):
                self._download(local, e)     # the one file asked for (its name may hold no offset)
            elif kind in STAGED_KINDS:
                self._placeholder(local, e)
            elif kind in _SIDE_KINDS:
                os.makedirs(os.path.dirname(local), exist_ok=True)
                data = self.storage.read_file(e.path, e.size, limit=self.side_file_limit)
                with open(local, "wb") as fh:
                    fh.write(data)
        if self._root_is_file:
            local = os.path.join(self.local_root, posixpath.basename(self.root.rstrip("/")))
            return local, True
        return self.local_root, False

    def _plugin_segments(self, base: str, entries: List[FileEntry]) -> dict:
        """``{path: (SegmentRef, mirror path)}`` of the segments a plugin stored in its own format;
        mirrored as ``<topic>-<topic id>/<partition>/<name>`` (the key prefix taken off)."""
        if not any(e.path.endswith(".rsm-manifest") for e in entries):
            return {}
        from kafkarec.log import layout
        lay = layout.scan(self.storage, base, entries)
        out = {}
        for p in lay.partitions:
            for s in p.segments + p.copies:
                if s.rsm is None:
                    continue
                rel = posixpath.relpath(s.path, base)
                if p.topic is not None and p.topic_id is not None:
                    rel = f"{p.topic}-{p.topic_id}/{p.partition}/{posixpath.basename(s.path)}"
                out[s.path] = (s, rel)
        return out

    def _plugin_side_files(self, local: str, seg) -> None:
        from kafkarec.log import layout
        stem = local[:-len(names.LOG_SUFFIX)]
        for name, suffix in (("offset", names.INDEX_SUFFIX), ("timestamp", names.TIME_INDEX_SUFFIX),
                             ("transaction", names.TXN_INDEX_SUFFIX)):
            data = layout.side_file(self.storage, seg, name)
            if data is not None:
                with open(stem + suffix, "wb") as fh:
                    fh.write(data)

    def _download(self, local: str, entry: FileEntry) -> None:
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "wb") as fh:
            fh.truncate(entry.size)
        self._copy(local, entry)

    def _placeholder(self, local: str, entry: FileEntry) -> None:
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "wb") as fh:
            fh.truncate(entry.size)          # sparse: the size is right, no disk is used
        self._remote[local] = entry

    def partition_dirs(self) -> List[directory.PartitionDir]:
        """The mirrored partition folders, as the local walk finds them (the URI is a
        partition folder, or a log directory root holding them)."""
        root, is_file = self.mirror()
        if is_file:
            raise ValueError("partition_dirs(): the URI names a file; use mirror()")
        if directory.is_partition_dir(root):
            return [directory.scan_partition_dir(root)]
        return directory.find_partition_dirs(root)

    # -- staging -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def stage(self, local: Optional[str]) -> Iterator[None]:
        """Download a placeholder's bytes for the duration of the ``with`` block (other
        paths, and None, pass through)."""
        entry = self._remote.get(local) if local else None
        if entry is None:
            yield
            return
        try:
            self._copy(local, entry)
            yield
        finally:
            with open(local, "r+b") as fh:        # back to a sparse placeholder
                fh.truncate(0)
                fh.truncate(entry.size)

    def _copy(self, local: str, entry) -> None:
        """The object's bytes into the local file, a chunk of bounded size at a time (a plugin's
        segment: its original bytes)."""
        from kafkarec.log import layout
        opened = (layout.open_segment(self.storage, entry) if isinstance(entry, layout.SegmentRef)
                  else self.storage.open(entry.path, entry.size))
        with opened as src, open(local, "r+b") as dst:
            pos = 0
            while pos < entry.size:
                data = src.read_at(pos, min(_CHUNK, entry.size - pos))
                if not data:
                    raise OSError(f"{self.storage.uri(entry.path)}: ended at byte {pos} of "
                                  f"the {entry.size} listed")
                dst.write(data)
                pos += len(data)

    def to_uri(self, path: Optional[str]) -> Optional[str]:
        """The URI of a mirrored file (other paths unchanged)."""
        if not path:
            return path
        rel = os.path.relpath(path, self.local_root)
        if rel.startswith(".."):
            return path
        return self.storage.uri(posixpath.join(self._base, *rel.split(os.sep)) if rel != "." else self._base)

    def rename(self, text: str) -> str:
        """``text`` with the mirror's paths named by their URIs (notes, messages)."""
        base = self.storage.uri(self._base)
        return text.replace(self.local_root + os.sep, base + "/").replace(self.local_root, base)

    def close(self) -> None:
        shutil.rmtree(self.local_root, ignore_errors=True)

    def __enter__(self) -> "Staging":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
