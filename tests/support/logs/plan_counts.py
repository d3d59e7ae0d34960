"""What a command asks of the storage layer, counted (issue 79): its listings
(:func:`kafkarec.log.storage.process_listings`) and the ``.log`` bytes it read
(:func:`kafkarec.log.storage.process_bytes_read`), against the log's own ``.log`` bytes; and a log
dir with what makes planning hard (transactions committed and aborted, compaction's offset holes,
several segments per partition), for the tests and the planning benchmark."""
import contextlib
import io
import os
from typing import Callable, NamedTuple

from support.logs.logdir import CONTROL_ABORT, CONTROL_COMMIT, PartitionWriter, sample_records, v2_batch


class Counted(NamedTuple):
    listings: int
    log_bytes_read: int
    log_bytes: int
    code: int
    #: of ``log_bytes_read``, what walks of batch headers read (:func:`kafkarec.log.storage.process_walk_bytes`)
    walk_bytes_read: int = 0
    #: what a walk of every batch's header reads of this log (:func:`header_walk_bytes`)
    header_bytes: int = 0

    @property
    def ratio(self) -> float:
        """Every ``.log`` byte read, over the log's."""
        return self.log_bytes_read / max(1, self.log_bytes)

    @property
    def records_ratio(self) -> float:
        """The ``.log`` bytes read for records (walks of headers left out), over the log's."""
        return (self.log_bytes_read - self.walk_bytes_read) / max(1, self.log_bytes)

    @property
    def walks(self) -> float:
        """The ``.log`` bytes walks of headers read, over what one walk of the whole log reads."""
        return self.walk_bytes_read / max(1, self.header_bytes)


def log_bytes(root: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files
               if f.endswith(".log"))


def header_walk_bytes(root: str) -> int:
    """What one walk of every batch header of the ``.log`` files under ``root`` reads, as the
    storage layer counts a walk: a batch's 61 header bytes, a transactional batch whole (the
    transaction rule reads its CRC and its marker)."""
    import kafkarec
    from kafkarec.log.storage import HEADER_WALK_BYTES
    total = 0
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".log"):
                with open(os.path.join(d, f), "rb") as fh:
                    data = fh.read()
                for b in kafkarec.iter_batches(data, verify_crc=False):
                    total += b.size_in_bytes if b.is_transactional else min(b.size_in_bytes, HEADER_WALK_BYTES)
    return total


def counted(root: str, run: Callable[[], int]) -> Counted:
    """``run()`` (a command, its exit code) with the listings and ``.log`` bytes it cost."""
    from kafkarec.log import storage
    listings, reads, walks = storage.process_listings(), storage.process_bytes_read(), storage.process_walk_bytes()
    before_l = listings.requests
    before_b = {p: n for p, n in reads.by_path.items() if p.endswith(".log")}
    before_w = {p: n for p, n in walks.by_path.items() if p.endswith(".log")}
    code = run()
    read = sum(n - before_b.get(p, 0) for p, n in reads.by_path.items() if p.endswith(".log"))
    walked = sum(n - before_w.get(p, 0) for p, n in walks.by_path.items() if p.endswith(".log"))
    return Counted(listings.requests - before_l, read, log_bytes(root), code, walked, header_walk_bytes(root))


def cli(*argv: str) -> Callable[[], int]:
    """The command line, in this process, its output dropped."""
    from kafkarec.cli.main import main

    def run() -> int:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(list(argv))
    return run


def write_hard_log(root: str, partitions: int, *, topic: str = "t") -> None:
    """``partitions`` partitions, each: plain batches, a committed transaction, an aborted one
    that spans a segment roll, a compaction hole (offsets skipped), over several segments."""
    for p in range(partitions):
        w = PartitionWriter(root, topic, p, segment_bytes=900)
        w.append(v2_batch(sample_records(3)))
        w.append(v2_batch(sample_records(3), producer_id=7, producer_epoch=0, base_sequence=0, transactional=True))
        w.end_txn(CONTROL_COMMIT, 7)
        w.append(v2_batch(sample_records(2)), skip_offsets=4)          # the cleaner's hole
        w.append(v2_batch(sample_records(3), producer_id=8, producer_epoch=0, base_sequence=0, transactional=True))
        w.append(v2_batch(sample_records(3)))
        w.append(v2_batch(sample_records(3), producer_id=8, producer_epoch=0, base_sequence=3, transactional=True))
        w.end_txn(CONTROL_ABORT, 8)
        w.append(v2_batch(sample_records(3)))
        w.close()
