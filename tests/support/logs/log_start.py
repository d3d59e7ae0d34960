"""Log directories whose log start offset ``Admin.deleteRecords`` moved: the segments still hold
the records below it, ``log-start-offset-checkpoint`` at the log directory's root says where a
consumer starts (as the broker writes it: version 0, a count, ``topic partition offset`` lines).

Segments are written by tests/support/logs/logdir.py's PartitionWriter (kafka-python's batch builder, the
broker's offset assignment and segment rolls)."""
from __future__ import annotations

import os

from support.logs.logdir import PartitionWriter, v2_batch

T0 = 1_700_000_000_000
BATCHES = 20          # per partition, 5 records each: offsets 0..99
RECORDS = 5


def write_log_start_checkpoint(root: str, entries: dict) -> str:
    """``log-start-offset-checkpoint`` at ``root`` for ``{(topic, partition): offset}``."""
    path = os.path.join(root, "log-start-offset-checkpoint")
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def write_partition(root: str, topic: str, partition: int, *, segment_bytes: int = 600) -> list:
    """:data:`BATCHES` batches of :data:`RECORDS` keyed records (key ``k<offset % 7>``, value
    ``v<offset>``, timestamp ``T0 + offset``) in segments of ``segment_bytes``; the segments'
    base offsets."""
    w = PartitionWriter(root, topic, partition, segment_bytes=segment_bytes)
    for b in range(BATCHES):
        first = b * RECORDS
        w.append(v2_batch([(T0 + o, b"k%d" % (o % 7), b"v%d" % o, []) for o in range(first, first + RECORDS)]))
    w.close()
    return [s.base for s in w.segments]


def deleted_records_dir(root: str, log_starts: dict, *, broker: bool = True) -> dict:
    """Partitions ``{(topic, partition): log start}`` written whole (offsets 0..99), each log start
    in the checkpoint (an entry only where it is past the first segment, as the broker writes
    it); ``broker``: a ``meta.properties`` at the root as a broker's log directory has.  The
    segments' base offsets by partition."""
    os.makedirs(root, exist_ok=True)
    bases = {tp: write_partition(root, *tp) for tp in log_starts}
    write_log_start_checkpoint(root, {tp: o for tp, o in log_starts.items() if o > 0})
    if broker:
        with open(os.path.join(root, "meta.properties"), "w") as fh:
            fh.write("version=1\nnode.id=1\ncluster.id=log-start-tests\n")
    return bases
