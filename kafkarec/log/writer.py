"""A partition's log written into a stopped broker's log dir, at the source's offsets (``kafkarec
restore --same-offsets``, docs/restore.md#same-offsets): Kafka's rules for what a broker loads, and
the batch fields another cluster's log must not keep.

What Kafka trusts and what it rebuilds decides what is written:

* only ``.log`` files.  A segment without its ``.index`` is recovered whole when the broker loads
  it (``LogLoader``: "Could not find offset index file ..., recovering segment and rebuilding index
  files"), and recovering it rebuilds the offset and time indexes, the ``.txnindex`` and the
  producer state from the batches themselves; copied side files would be trusted as they are;
* no clean-shutdown marker (``.kafka_cleanshutdown``, :data:`CLEAN_SHUTDOWN_FILE`): with it and no
  producer snapshot Kafka skips rebuilding the producer state (an open transaction's records are
  then served as committed); without it every log is recovered from its recovery point;
* every replica of the partition (replication factor 3: a folder on each broker holding one) gets
  the same bytes: after the restart the controller elects a leader among the replicas, and a
  follower whose log differs from the leader's is truncated to it ("Truncating ... below high
  watermark"): a copy in one replica only is lost when an empty one is elected;
* the target's ``partition.metadata`` (its topic id: another one marks the folder stray) kept, and
  the ``leader-epoch-checkpoint`` of the replica with the latest epoch (the leader's: a follower
  of an empty partition has none) written to every replica, so that followers and leader agree on
  where each epoch ends and none truncates;
* every batch's partition leader epoch set to the target replicas' latest epoch (the field is
  outside the CRC): an epoch above the target's makes a consumer that committed its position with
  it unable to resume (its OffsetsForLeaderEpoch finds no such epoch), and one below the first epoch
  the replica knows reads as a truncation;
* every producer id moved above the ids a target cluster hands out (:func:`target_producer_id`,
  CRC recomputed): recovery rebuilds each producer's state from the batches, and KRaft's controller
  allocates producer ids from 0 on every cluster, so a new producer of the target would otherwise
  meet the source producer's sequence and epoch (OutOfOrderSequenceException,
  InvalidProducerEpochException);
* an ABORT marker appended for each transaction still open at the log's end, as the source's
  coordinator would write one when the transaction times out (its producer id and epoch, the
  highest coordinator epoch of the partition's markers): the target's coordinator never knew the
  producer, so an open transaction would hold the last stable offset forever;
* the log start in ``log-start-offset-checkpoint`` (deleteRecords' start, inside a batch too), the
  high watermark at the written log end in ``replication-offset-checkpoint``, and no recovery point
  (0: every segment recovered).

How the bytes move (docs/performance.md#restore-at-the-same-offsets-the-segment-writer-against-cp):
a local segment is copied into the first replica inside the kernel (``copy_file_range``, as ``cp``
copies) and re-stamped there in place through a shared mapping by the core's ``restamp_run`` (no
Python object per batch); an object-store or plugin segment is read into one reused window and
written from it; every other replica is a kernel copy of the first.  Writing the rewritten windows
from this process cost 2-4 times the time of ``cp``.

Segments are written as ``<base offset>.log.cleaned`` and renamed into place: a file of that suffix
left by a killed write is deleted by Kafka when it loads the folder, and by the next write.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import struct
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from kafkarec.errors import LogDirWriteError
from kafkarec.log import names

__all__ = ["CLEAN_SHUTDOWN_FILE", "LOCK_FILE", "META_PROPERTIES", "PRODUCER_ID_BASE", "TEMP_SUFFIX",
           "PartitionWritten", "broker_lock", "meta_properties", "latest_leader_epoch", "target_producer_id",
           "partition_holds_data", "kept_segments", "write_partition", "Compared", "compare_written", "update_checkpoints", "remove_clean_shutdown"]

#: the file a running broker holds an exclusive lock on (``LogManager.lockLogDirs``, Java's
#: ``FileChannel.tryLock``: a POSIX record lock, the kind ``fcntl.lockf`` takes)
LOCK_FILE = ".lock"
#: the marker a clean shutdown leaves (``CleanShutdownFileHandler``); while it is there Kafka trusts
#: the side files it finds
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
META_PROPERTIES = "meta.properties"
#: the suffix a segment is written under before it is renamed into place: Kafka deletes such files
#: when it loads a folder (``LogLoader.removeTempFilesAndCollectSwapFiles``, ``.cleaned``)
TEMP_SUFFIX = ".cleaned"
#: where the source's producer ids are moved to: KRaft's controller allocates producer ids in
#: blocks of 1000 from 0 (``ProducerIdsRecord``), so a target allocates ids far below 2**62 for
#: the whole of its life; the ids stay below Java's Long.MAX_VALUE
PRODUCER_ID_BASE = 1 << 62
_LONG_MAX = (1 << 63) - 1

# The v2 batch header (Kafka's DefaultRecordBatch): where each field this module reads or writes is
_PLE, _MAGIC, _CRC, _ATTRIBUTES, _PRODUCER_ID = 12, 16, 17, 21, 43
_HEADER = struct.Struct(">qiiBIhiqqqhii")       # base offset .. record count: 61 bytes
_HEADER_SIZE = _HEADER.size
_TRANSACTIONAL, _CONTROL = 0x10, 0x20
_EPOCH = struct.Struct(">i")
_PID = struct.Struct(">q")
_CRC32 = struct.Struct(">I")
#: a segment is read and written this many bytes at a time (a batch larger than it, whole)
_WINDOW = 8 << 20


def target_producer_id(source_id: int) -> int:
    """The producer id a source producer's batches carry on the target: moved up by
    :data:`PRODUCER_ID_BASE`; an id already there (a log restored this way before) is kept."""
    return source_id if source_id >= PRODUCER_ID_BASE else source_id + PRODUCER_ID_BASE


@contextlib.contextmanager
def broker_lock(log_dir: str) -> Iterator[None]:
    """Hold ``log_dir``'s ``.lock`` as a broker does while it runs: refused (a
    :class:`LogDirWriteError`) when a broker holds it, and a broker started meanwhile cannot take
    the log dir."""
    path = os.path.join(log_dir, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise LogDirWriteError(log_dir, f"cannot open {LOCK_FILE}: {e.strerror}") from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EAGAIN):
                raise LogDirWriteError(log_dir, f"a broker is running on it ({LOCK_FILE} is locked): stop it "
                                                "cleanly first") from None
            raise
        yield
    finally:
        os.close(fd)            # the lock goes with the descriptor


def meta_properties(log_dir: str) -> Dict[str, str]:
    """``meta.properties`` of a log dir (what ``kafka-storage format`` wrote: ``cluster.id``,
    ``node.id``, ``directory.id``); a :class:`LogDirWriteError` where there is none."""
    path = os.path.join(log_dir, META_PROPERTIES)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise LogDirWriteError(log_dir, f"no {META_PROPERTIES}: not a formatted Kafka log dir") from None
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def latest_leader_epoch(folder: str) -> int:
    """The latest epoch of the replica's ``leader-epoch-checkpoint`` (0 when it has none)."""
    from kafkarec.log.sidefiles import read_leader_epoch_checkpoint
    path = os.path.join(folder, names.LEADER_EPOCH_CHECKPOINT)
    if not os.path.exists(path):
        return 0
    entries = read_leader_epoch_checkpoint(path)
    return max((e.epoch for e in entries), default=0)


def _segment_files(folder: str) -> List[str]:
    return [n for n in os.listdir(folder) if names.parse_segment_name(n) is not None
            or n.endswith(TEMP_SUFFIX) or n.endswith(".deleted") or n.endswith(".swap")]


def partition_holds_data(folder: str) -> bool:
    """Whether a partition folder holds any record (a segment of bytes), as a topic only created holds none."""
    return any(n.endswith(names.LOG_SUFFIX) and os.path.getsize(os.path.join(folder, n)) > 0
               for n in os.listdir(folder))


class PartitionWritten(NamedTuple):
    """What :func:`write_partition` wrote: the log's range [``log_start``, ``log_end``) (the ABORT
    markers included), its segments and bytes, the leader epoch every batch got, the producer ids
    moved (source id -> target id), the ABORT markers appended (offset, target producer id, epoch)."""
    log_start: int
    log_end: int
    segments: int
    bytes: int
    batches: int
    leader_epoch: int
    producer_ids: Dict[int, int]
    abort_markers: List[Tuple[int, int, int]]
    #: the replica folders written, each with the same bytes
    copies: int
    #: SHA-256 of the headers (the first 61 bytes, the CRC-32C of the rest among them) of the
    #: batches written into each replica, in offset order: hashing the headers alone costs a few
    #: bytes a batch, where hashing every byte slowed the writer by a third
    sha256: str


class _State:
    """What the walk of a partition's batches carries from segment to segment."""

    def __init__(self) -> None:
        self.next_offset: Optional[int] = None
        self.max_timestamp = -1
        self.open: Dict[int, int] = {}            # target producer id -> its open transaction's epoch
        self.coordinator_epoch = 0
        self.pids: Dict[int, int] = {}
        self.batches = 0
        #: SHA-256 of every written batch's header (:func:`header_digest`)
        self.digest = hashlib.sha256()


def _rewrite(buf: bytearray, end: int, epoch: int, state: _State, where: str, origin: int) -> None:
    """Every whole batch of ``buf[:end]`` rewritten in place (see the module docstring) by the
    core's :func:`kafkarec._core.restamp_run` (each CRC checked first, so that a damaged batch is
    never given a good CRC; no Python object per batch); what the producers' batches say is read
    from its events, one per run of a producer's batches and one per control batch."""
    from kafkarec._core import iter_batches, restamp_run
    batches, max_ts, next_offset, headers, events, error = restamp_run(buf, end, epoch, PRODUCER_ID_BASE)
    # (a view released on the way out, an error's too: buf may be a mapping closed after)
    with memoryview(buf) as mv:
        for pos, size, pid, p_epoch, attributes in events:
            moved = target_producer_id(pid)
            if state.pids.setdefault(pid, moved) != moved or (moved != pid and moved in state.pids):
                raise LogDirWriteError(None, f"{where}: producer ids {pid} and {moved} would be one producer on "
                                             "the target")
            if attributes & _CONTROL:
                # (a control batch is a few bytes: copied, its records hold no view of buf)
                marker = next(iter_batches(bytes(mv[pos:pos + size]))).records()
                if marker and marker[0].control_type_id in (0, 1):       # ABORT, COMMIT
                    state.open.pop(moved, None)
                    state.coordinator_epoch = max(state.coordinator_epoch, marker[0].coordinator_epoch or 0)
            elif attributes & _TRANSACTIONAL:
                state.open.setdefault(moved, p_epoch)
    if batches:
        state.max_timestamp = max(state.max_timestamp, max_ts)
        state.next_offset = next_offset
        state.batches += batches
        state.digest.update(headers)
    if error is not None:
        pos, reason = error
        if reason.startswith("magic"):
            raise LogDirWriteError(None, f"{where} byte {origin + pos}: a message format v{reason[6:]} batch (Kafka 4 "
                                         "loads v2 only; convert the log first)")
        base = _HEADER.unpack_from(buf, pos)[0] if end - pos >= _HEADER_SIZE else None
        if reason == "crc":
            raise LogDirWriteError(None, f"{where} byte {origin + pos}: the batch at offset {base} fails its CRC")
        raise LogDirWriteError(None, f"{where} byte {origin + pos}: no whole v2 batch header")


def _whole_batches(piece, origin: int, at_end: bool, where: str) -> Tuple[int, int]:
    """The bytes of the whole batches that start ``piece`` (at file position ``origin``), and the
    size of the batch after them (0: unknown); a :class:`LogDirWriteError` where the rest can never
    be a whole batch (``at_end``: no byte of the file follows ``piece``; or a framing error)."""
    from kafkarec._core import iter_batches
    it = iter_batches(piece, origin=origin)
    spans = it.spans()
    need, stop = it.next_batch_size, it.stop_reason
    del it                      # its export of piece
    end = spans[-1][0] - origin + spans[-1][1] if spans else 0
    if end < len(piece) and (at_end or stop == "error"):
        raise LogDirWriteError(None, f"{where} byte {origin + end}: {len(piece) - end} byte(s) that are no whole "
                                     "batch")
    return end, need or 0


def _copy_segment(source, size: int, out, epoch: int, state: _State, where: str) -> int:
    """The segment's batches from ``source`` (``read_into(position, buffer)``) rewritten into
    ``out``, a window at a time; returns the bytes written.  One buffer serves every window (a
    batch larger than it grows it): the bytes are read straight into it and written from it, never
    copied in this process, and its pages are touched once, not once a window."""
    buf = bytearray(min(_WINDOW, size))
    pos = 0                     # the file position of the next byte read
    have = 0                    # the bytes of buf holding the file's, from buf[0]
    origin = 0                  # the file position of buf[0]
    written = 0
    while True:
        if pos < size and have < len(buf):
            with memoryview(buf) as mv:
                got = source.read_into(pos, mv[have:have + min(len(buf) - have, size - pos)])
            if got <= 0:
                raise LogDirWriteError(None, f"{where} byte {pos}: the segment ends at {pos} bytes, its listing "
                                             f"says {size}")
            pos += got
            have += got
        if not have:
            return written
        with memoryview(buf) as mv:
            with mv[:have] as piece:
                end, need = _whole_batches(piece, origin, pos >= size, where)
            if end:
                _rewrite(buf, end, epoch, state, where, origin)
                out.write(mv[:end])
                written += end
                origin += end
                # the part batch the next window completes, moved to the front
                mv[:have - end] = mv[end:have]
                have -= end
        if end == 0 and have == len(buf):
            if need <= len(buf):
                # (a framing that names no larger batch: cannot happen short of the file's end)
                raise LogDirWriteError(None, f"{where} byte {origin}: no whole batch")
            buf.extend(bytes(need - len(buf)))      # a batch larger than the window, whole


def _restamp_copy(source, out: "_Copies", epoch: int, state: _State, where: str) -> int:
    """A local segment (``source``, a :class:`kafkarec.log.storage.RangeFile` of a local disk)
    copied into ``out``'s first file inside the kernel, then re-stamped there in place through a
    shared mapping, a window at a time (each batch's CRC checked on the copy, which holds the
    source's bytes): the segment's bytes never pass through this process, as in ``cp``; only the
    re-stamped headers are dirtied again.  Returns the bytes written."""
    import mmap
    from kafkarec.log.storage import count_read
    size = source.size
    out.copy_from(source.path, size)
    count_read(size, source.path)          # read once, by the kernel's copy
    if size == 0:
        return 0
    # its pages mapped at once (they are in the page cache, the copy just wrote them): not one
    # fault a page as the walk touches them
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    with mmap.mmap(out.fd, size, flags, mmap.PROT_READ | mmap.PROT_WRITE) as m, memoryview(m) as mv:
        origin = 0
        window = _WINDOW
        while origin < size:
            piece = mv[origin:min(size, origin + window)]
            try:
                end, need = _whole_batches(piece, origin, origin + len(piece) >= size, where)
                if end == 0 and need <= len(piece):
                    # (a framing that names no larger batch: cannot happen short of the file's end)
                    raise LogDirWriteError(None, f"{where} byte {origin}: no whole batch")
                if end:
                    _rewrite(piece, end, epoch, state, where, origin)
            finally:
                piece.release()     # every view of the mapping released before it closes
            origin += end
            window = _WINDOW if end else need           # a batch larger than the window, whole
    return size


def _abort_markers(state: _State, epoch: int) -> Tuple[bytes, List[Tuple[int, int, int]]]:
    """An ABORT marker for each transaction still open, at the offsets past the log's end."""
    from kafkarec import ControlRecordType
    from kafkarec._core import RecordBatchBuilder
    out = bytearray()
    markers = []
    for pid, p_epoch in sorted(state.open.items()):
        b = RecordBatchBuilder(base_offset=state.next_offset, producer_id=pid, producer_epoch=p_epoch,
                               is_transactional=True, is_control=True, partition_leader_epoch=epoch)
        # the source's last time, not the restore's: time lookups on the target answer as the source's
        b.append_control(ControlRecordType.ABORT, {"coordinatorEpoch": state.coordinator_epoch},
                         timestamp=max(state.max_timestamp, 0))
        built = b.build()
        state.digest.update(built[:_HEADER_SIZE])
        out += built
        markers.append((state.next_offset, pid, p_epoch))
        state.next_offset += 1
    state.open.clear()
    return bytes(out), markers


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def kept_segments(part, log_start: int) -> list:
    """The source segments a write keeps: those holding an offset at or past ``log_start`` (the
    last one always), as Kafka would delete the others."""
    segs = part.segments        # local and remote (tiered) alike: a remote segment becomes a local one
    return [s for i, s in enumerate(segs) if i + 1 == len(segs) or segs[i + 1].base_offset > log_start]


#: the errors after which a kernel-side copy (``copy_file_range``) is retried with ``sendfile``:
#: replicas on two filesystems (EXDEV), a filesystem or kernel without it
_NO_COPY_FILE_RANGE = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM)


def _kernel_copy(src: int, dst: int, size: int) -> None:
    """``size`` bytes of ``src`` copied into ``dst`` from position 0, inside the kernel: no byte
    comes back to this process (``copy_file_range``, or ``sendfile`` where it is refused)."""
    done = 0
    use_range = hasattr(os, "copy_file_range")
    while done < size:
        if use_range:
            try:
                n = os.copy_file_range(src, dst, size - done, done, done)
            except OSError as e:
                if e.errno not in _NO_COPY_FILE_RANGE:
                    raise
                use_range = False
                continue
        else:
            os.lseek(dst, done, os.SEEK_SET)
            n = os.sendfile(dst, src, done, size - done)
        if n == 0:
            raise OSError(errno.EIO, f"the copy of a segment stopped at byte {done} of {size}")
        done += n


class _Copies:
    """One segment written into every replica folder: its bytes written once, into the first
    replica's file, and that file copied inside the kernel into the others' when it is whole (the
    rewrite's output leaves this process once, however many replicas there are)."""

    def __init__(self, paths: List[str]) -> None:
        self.paths = paths
        # read and write: copy_file_range reads the copies' bytes from it
        self.fd = os.open(paths[0], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.size = 0

    def write(self, data) -> None:
        mv = memoryview(data)
        while mv:
            n = os.write(self.fd, mv)
            mv = mv[n:]
            self.size += n

    def copy_from(self, path: str, size: int) -> None:
        """The first ``size`` bytes of the local file ``path`` copied into the first file inside the
        kernel (as ``cp`` copies), the next write after them."""
        src = os.open(path, os.O_RDONLY)
        try:
            _kernel_copy(src, self.fd, size)
        finally:
            os.close(src)
        os.lseek(self.fd, size, os.SEEK_SET)        # (copy_file_range leaves the file position)
        self.size = size

    def close(self, complete: bool = True) -> None:
        """Close the first file; with ``complete`` (its bytes are all written), copy it into the others."""
        if self.fd < 0:
            return
        try:
            if complete:
                for path in self.paths[1:]:
                    dst = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    try:
                        _kernel_copy(self.fd, dst, self.size)
                    finally:
                        os.close(dst)
        finally:
            os.close(self.fd)
            self.fd = -1


def write_partition(storage, part, folders: Sequence[str], log_start: int) -> PartitionWritten:
    """``part``'s log (a :class:`kafkarec.log.layout.PartitionLog` listed in ``storage``) written into
    every replica folder of the target partition (``folders``: one per broker holding a replica)
    from ``log_start`` on, at the source's offsets (see the module docstring), the same bytes in
    each: the folders' segments and side files replaced, each ``partition.metadata`` kept, and the
    ``leader-epoch-checkpoint`` of the replica with the latest epoch in all.  Every segment is
    written under :data:`TEMP_SUFFIX` before any is renamed into place, so a write killed midway
    leaves the folders' files as they were or files Kafka deletes; written again, it gives the same
    folders.  The source is read once, whatever the number of replicas."""
    from kafkarec.log.layout import open_segment
    from kafkarec.log.storage import RangeFile
    if isinstance(folders, str):
        folders = [folders]
    epochs = [latest_leader_epoch(f) for f in folders]
    epoch = max(epochs)
    keep = kept_segments(part, log_start)
    for folder in folders:
        for stale in _segment_files(folder):
            if stale.endswith(TEMP_SUFFIX):
                os.unlink(os.path.join(folder, stale))
    state = _State()
    written = 0
    temps: List[str] = []
    markers: List[Tuple[int, int, int]] = []
    for i, seg in enumerate(keep):
        name = names.file_name(seg.base_offset, names.LOG_SUFFIX) + TEMP_SUFFIX
        paths = [os.path.join(folder, name) for folder in folders]
        where = f"{part.topic}-{part.partition} {os.path.basename(seg.path)}"
        out = _Copies(paths)
        complete = False
        try:
            with open_segment(storage, seg) as source:
                if isinstance(source, RangeFile) and source.storage.is_local:
                    written += _restamp_copy(source, out, epoch, state, where)
                else:
                    # the segment's own size: a plugin's chunked or compressed object says it
                    written += _copy_segment(source, source.size, out, epoch, state, where)
            if state.next_offset is None:
                state.next_offset = seg.base_offset
            if i + 1 == len(keep):
                extra, markers = _abort_markers(state, epoch)
                out.write(extra)
                written += len(extra)
            complete = True
        finally:
            out.close(complete)
        temps += paths
    if not keep:
        # no segment at or past the log start: the log is empty from there, one empty segment as
        # Kafka rolls one
        for folder in folders:
            temp = os.path.join(folder, names.file_name(log_start, names.LOG_SUFFIX) + TEMP_SUFFIX)
            open(temp, "wb").close()
            temps.append(temp)
    if state.next_offset is None:
        state.next_offset = log_start
    # the leader's epochs in every replica (written whole and renamed, as Kafka writes the file)
    checkpoint = os.path.join(folders[epochs.index(epoch)], names.LEADER_EPOCH_CHECKPOINT)
    if os.path.exists(checkpoint):
        from kafkarec._boot.files import atomic_write
        with open(checkpoint, "rb") as fh:
            text = fh.read()
        for folder in folders:
            path = os.path.join(folder, names.LEADER_EPOCH_CHECKPOINT)
            if path != checkpoint:
                atomic_write(path, text, mode=0o644)
    # the target's own segments and side files go; its topic id and leader epochs stay
    for folder in folders:
        for name in _segment_files(folder):
            path = os.path.join(folder, name)
            if path not in temps:
                os.unlink(path)
    # every file made durable before any is renamed into place, the fsyncs after all the writes: the
    # kernel writes back the replicas' pages together instead of one file's at a time
    for temp in temps:
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for temp in temps:
        os.replace(temp, temp[:-len(TEMP_SUFFIX)])
    for folder in folders:
        _fsync_dir(folder)
    return PartitionWritten(log_start, max(state.next_offset, log_start), len(keep) or 1, written, state.batches,
                            epoch, dict(state.pids), markers, len(folders), state.digest.hexdigest())


def update_checkpoints(log_dir: str, written: Dict[Tuple[str, int], PartitionWritten]) -> None:
    """The log dir's checkpoints for the written partitions: the log start in
    ``log-start-offset-checkpoint``, the high watermark at the log end in
    ``replication-offset-checkpoint``, no recovery point (every segment recovered); the other
    partitions' entries as they were.  Each file written whole and renamed into place, as Kafka
    writes them."""
    from kafkarec.log.sidefiles import read_offset_checkpoint
    from kafkarec._boot.files import atomic_write
    values = {"log-start-offset-checkpoint": lambda w: w.log_start,
              "replication-offset-checkpoint": lambda w: w.log_end,
              "recovery-point-offset-checkpoint": None}
    for name, value in values.items():
        path = os.path.join(log_dir, name)
        entries = {}
        if os.path.exists(path):
            entries = {(t, p): o for t, p, o in read_offset_checkpoint(path)}
        for key, w in written.items():
            if value is None:
                entries.pop(key, None)
            else:
                entries[key] = value(w)
        text = "0\n%d\n" % len(entries) + "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(entries.items()))
        atomic_write(path, text.encode("ascii"), mode=0o644)


def remove_clean_shutdown(log_dir: str) -> bool:
    """Remove the clean-shutdown marker, so that the broker recovers the logs it loads (rebuilding
    every side file of the written segments); whether there was one."""
    try:
        os.unlink(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
    except FileNotFoundError:
        return False
    _fsync_dir(log_dir)
    return True


# --- the check of a write: the source's batches against a replica's -----------------------------------

#: the bytes of a v2 batch a write never changes (all but the leader epoch, the CRC, the producer id)
_KEPT = (slice(0, _PLE), slice(_MAGIC, _CRC), slice(_ATTRIBUTES, _PRODUCER_ID), slice(_PRODUCER_ID + 8, None))


class Compared(NamedTuple):
    """What :func:`compare_written` found: the batches compared, the batches past the written end,
    the SHA-256 of the replica's bytes to the written end, and the first difference (None: none)."""
    batches: int
    past: int
    sha256: str
    difference: Optional[str]


def _batches(files):
    """``(path, position, raw bytes)`` of each batch of the files in turn (``(path, opener)``: the
    one batch walk, :class:`kafkarec.log.storage.BatchWalk`, over what ``opener()`` opens); a framing
    error or a cut-off batch ends it with ``(path, position, None)``."""
    from kafkarec.log.storage import BatchWalk, iter_pieces
    for path, opener in files:
        with opener() as f:
            walk = BatchWalk(iter_pieces(f, prefetch=False), errors="stop")
            for b in walk:
                yield path, b.position, bytes(b.raw())
            if walk.stop_reason not in ("end", None):
                pos = walk.error.position if walk.error is not None and walk.error.position is not None else -1
                yield path, pos, None
                return


def _first_difference(a: bytes, b: bytes) -> int:
    """The first byte of the batch where ``a`` and ``b`` differ outside the rewritten fields, or -1."""
    for part in _KEPT:
        x, y = a[part], b[part]
        if x != y:
            return (part.start or 0) + next((i for i in range(min(len(x), len(y))) if x[i] != y[i]),
                                            min(len(x), len(y)))
    return -1


def compare_written(source_storage, source_segments, target_storage, target_files, log_end: int, epoch: int,
                    producer_ids: Dict[int, int], abort_markers: List[Tuple[int, int, int]]) -> Compared:
    """A replica's segments (``target_files``, ``(path, size)`` in offset order) against the source
    segments a write kept (``source_segments``, :func:`kept_segments`: local or remote), batch by
    batch: every byte the source's but the
    partition leader epoch (``epoch``), the producer id (``producer_ids[source id]``) and a CRC that
    is the batch's CRC-32C where the id moved; then the ABORT markers (offset, producer id, epoch),
    then only batches at or past ``log_end`` (appended since: counted, not compared).  Each file is
    read once."""
    import hashlib
    from kafkarec._core import crc32c, iter_batches
    digest = hashlib.sha256()
    from kafkarec.log.layout import open_segment
    src = _batches([(seg.path, lambda seg=seg: open_segment(source_storage, seg)) for seg in source_segments])
    dst = _batches([(path, lambda path=path, size=size: target_storage.open(path, size))
                    for path, size in target_files])
    n = 0

    def at(path, pos):
        return f"{os.path.basename(path) if path else '(no segment)'} byte {pos}"

    def stop(why):
        return Compared(n, 0, digest.hexdigest(), why)
    for spath, spos, s in src:
        tpath, tpos, t = next(dst, (None, None, None))
        if s is None:
            return stop(f"the source's {spath} byte {spos}: bytes that are no whole batch")
        base = _HEADER.unpack_from(s)[0]
        if t is None:
            return stop(f"{at(tpath, tpos)}: no batch where the source's batch at offset {base} is")
        if len(t) != len(s) or t[:8] != s[:8]:
            return stop(f"{at(tpath, tpos)}: the batch at offset {_PID.unpack_from(t)[0]} ({len(t)} bytes) where "
                        f"the source has the batch at offset {base} ({len(s)} bytes)")
        diff = _first_difference(s, t)
        if diff >= 0:
            return stop(f"{at(tpath, tpos)}: batch at offset {base}, its byte {diff} differs from the source's (a "
                        "byte no rewrite touches)")
        got = _EPOCH.unpack_from(t, _PLE)[0]
        if got != epoch:
            return stop(f"{at(tpath, tpos)}: batch at offset {base}, partition leader epoch {got}, the "
                        f"evidence's {epoch}")
        spid, tpid = _PID.unpack_from(s, _PRODUCER_ID)[0], _PID.unpack_from(t, _PRODUCER_ID)[0]
        want = producer_ids.get(spid) if spid >= 0 else spid
        if want is None or tpid != want:
            return stop(f"{at(tpath, tpos)}: batch at offset {base}, producer id {tpid} for the source's {spid}, "
                        f"the evidence's {'none' if want is None else want}")
        crc = s[_CRC:_ATTRIBUTES] if tpid == spid else _CRC32.pack(crc32c(memoryview(t)[_ATTRIBUTES:]))
        if t[_CRC:_ATTRIBUTES] != crc:
            return stop(f"{at(tpath, tpos)}: batch at offset {base}, its CRC is not the CRC-32C of its bytes")
        digest.update(t[:_HEADER_SIZE])
        n += 1
    for offset, pid, p_epoch in abort_markers:
        tpath, tpos, t = next(dst, (None, None, None))
        if t is None:
            return stop(f"{at(tpath, tpos)}: no ABORT marker at offset {offset}, which the evidence says was "
                        "appended")
        b = next(iter_batches(t))
        rec = b.records() if b.is_control else []
        if ((b.base_offset, b.producer_id, b.producer_epoch, b.partition_leader_epoch) != (offset, pid, p_epoch, epoch)
                or not (b.is_transactional and b.crc_valid) or len(rec) != 1 or rec[0].control_type_id != 0):
            return stop(f"{at(tpath, tpos)}: the batch at offset {b.base_offset} is not the ABORT marker of "
                        f"producer {pid} epoch {p_epoch} at offset {offset} the evidence names")
        digest.update(t[:_HEADER_SIZE])
        n += 1
    past = 0
    for tpath, tpos, t in dst:
        if t is None:
            break
        off = _PID.unpack_from(t)[0]
        if off < log_end:
            return stop(f"{at(tpath, tpos)}: a batch at offset {off} below the written end {log_end} that the "
                        "source does not hold")
        past += 1
    return Compared(n, past, digest.hexdigest(), None)

