"""Segment files as a broker writes them, for the benchmarks that write a log dir of their own."""
from __future__ import annotations

import os
from typing import Iterable, Tuple

#: Kafka's default segment.bytes (1 GiB) is larger than these logs: 64 MiB gives each partition
#: several segments, each one read window
SEGMENT_BYTES = 64 << 20


def write_partition(folder: str, batches: Iterable[Tuple[int, bytes]], segment_bytes: int = SEGMENT_BYTES) -> None:
    """``(base offset, batch)`` pairs into ``folder``'s ``<base offset>.log`` files, rolled as Kafka
    rolls a segment: before a batch would take it past ``segment_bytes`` (rolling after passing it
    leaves files of 64 MiB and one batch: two read windows each)."""
    os.makedirs(folder, exist_ok=True)
    fh, written = None, segment_bytes
    try:
        for offset, batch in batches:
            if written + len(batch) > segment_bytes:
                if fh:
                    fh.close()
                fh, written = open(os.path.join(folder, "%020d.log" % offset), "wb"), 0
            fh.write(batch)
            written += len(batch)
    finally:
        if fh:
            fh.close()
