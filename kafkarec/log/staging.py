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
        for e in entries:
            rel = posixpath.relpath(e.path, base)
            if rel.startswith("..") or any(part.startswith(".") for part in rel.split("/")[:-1]):
                continue
            local = os.path.join(self.local_root, *rel.split("/"))
            kind = names.file_kind(posixpath.basename(e.path))
            if self._root_is_file and e.path.rstrip("/") == self.root.rstrip("/"):
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

    def _copy(self, local: str, entry: FileEntry) -> None:
        """The object's bytes into the local file, a chunk of bounded size at a time."""
        with self.storage.open(entry.path, entry.size) as src, open(local, "r+b") as dst:
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
