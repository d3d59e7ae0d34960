"""What the distributed-engine tests (tests/engines: Ray, Daft) share: the logs they read, their rows in
the broker tests' tuple shape, and the slices whose bytes are counted.

* :func:`big_partition` -- one partition of 20 segments (2000 batches of 10 records, timestamps
  ``T0 + record number``), indexed every 4 KiB as a broker does: a 1% slice by offset or by time is
  200 records, and 2% of its segment bytes is what such a slice may read;
* :func:`corrupt_partition` -- a segment whose second batch has a byte flipped (its CRC fails);
* :func:`rows` -- a table's rows as :func:`produce.consume` gives them, sorted;
* :func:`segment_bytes_read` -- the ``.log`` bytes every process counted into a folder
  (:data:`kafkarec.log.storage.BYTES_READ_ENV`).
"""
from __future__ import annotations

import os

from logdir import T0, PartitionWriter, sample_records, v2_batch

#: records in :func:`big_partition`, and the first record of the slices the tests read
BIG_RECORDS = 20_000
SLICE_START = BIG_RECORDS // 2
SLICE_RECORDS = BIG_RECORDS // 100


def big_partition(root: str) -> str:
    """``root`` holding ``big-0`` (see the module docstring); its partition folder."""
    w = PartitionWriter(root, "big", 0, segment_bytes=200_000, index_interval_bytes=4096)
    for k in range(BIG_RECORDS // 10):
        w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=150), codec="none"))
    w.close()
    return os.path.join(root, "big-0")


def slice_limits(by: str):
    """``(column, lo, hi)`` of the 1% slice ``by`` ``"offset"`` or ``"time"`` (hi exclusive; a time in
    ms since the epoch)."""
    if by == "offset":
        return "offset", SLICE_START, SLICE_START + SLICE_RECORDS
    return "timestamp", T0 + SLICE_START, T0 + SLICE_START + SLICE_RECORDS


def segment_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".log"))


def segment_bytes_read(counts: str, before: dict) -> int:
    """``.log`` bytes counted into ``counts`` since ``before`` (an earlier ``bytes_read`` of it)."""
    from kafkarec.log.storage import bytes_read
    now = bytes_read(counts)
    return sum(n - before.get(path, 0) for path, n in now.items() if path.endswith(".log"))


def corrupt_partition(root: str) -> str:
    """``root`` holding ``bad-0``: three batches, the second one's last byte flipped."""
    w = PartitionWriter(root, "bad", 0, segment_bytes=1 << 20)
    for k in range(3):
        w.append(v2_batch(sample_records(5, start_ts=T0 + 5 * k), codec="none"))
    w.close()
    segment = os.path.join(root, "bad-0", "00000000000000000000.log")
    with open(segment, "r+b") as fh:
        data = bytearray(fh.read())
        end = w.appended[1].position + w.appended[1].size
        data[end - 1] ^= 0xFF
        fh.seek(0)
        fh.write(data)
    return root


def rows(table):
    """``table``'s rows as ``(topic, partition, offset, key, value, headers, timestampType,
    timestamp ms)``, sorted by topic, partition, offset (:func:`produce.consume`'s shape)."""
    from readers import _arrow_rows
    cols = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    out = _arrow_rows(table.select(cols))
    out.sort(key=lambda r: (r[0], r[1], r[2]))
    return out
