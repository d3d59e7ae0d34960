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

    @property
    def ratio(self) -> float:
        return self.log_bytes_read / max(1, self.log_bytes)


def log_bytes(root: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files
               if f.endswith(".log"))


def counted(root: str, run: Callable[[], int]) -> Counted:
    """``run()`` (a command, its exit code) with the listings and ``.log`` bytes it cost."""
    from kafkarec.log import storage
    listings, reads = storage.process_listings(), storage.process_bytes_read()
    before_l = listings.requests
    before_b = {p: n for p, n in reads.by_path.items() if p.endswith(".log")}
    code = run()
    read = sum(n - before_b.get(p, 0) for p, n in reads.by_path.items() if p.endswith(".log"))
    return Counted(listings.requests - before_l, read, log_bytes(root), code)


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
