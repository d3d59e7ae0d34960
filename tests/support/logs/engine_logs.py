"""Logs and yardsticks for the engine adapters' tests (tests/engines/, tests/broker/test_broker_engines.py).

* :func:`long_partition` -- one partition of many indexed segments (tests/support/logs/logdir.py's
  :class:`PartitionWriter`, batches from kafkarec's bulk builder), record ``i`` at offset ``i`` with
  timestamp ``T0 + i``: a 1% slice by offset or by time is a small part of its bytes;
* :func:`keyed_topic` -- a topic of several partitions, each record in the partition Kafka's default
  partitioner names for its key (murmur2), for key pushdown and ``partitioner="murmur2"``;
* :func:`segment_bytes_read` -- the ``.log`` bytes of a folder (and the folders under it) that a call
  read, through the storage layer's counter (:func:`kafkarec.log.storage.process_bytes_read`);
* :func:`damaged_copy` -- a log dir with one segment truncated or corrupt;
* :func:`rows` -- a pyarrow Table or a Polars DataFrame as sorted tuples in
  :func:`produce.consume`'s shape, timestamps as ms whatever the engine's time unit.
"""
from __future__ import annotations

import os
from typing import Callable, List

T0 = 1_700_000_000_000
ROW_COLUMNS = ("topic", "partition", "offset", "key", "value", "headers", "timestampType", "timestamp")


def long_partition(root: str, topic: str = "clicks", *, records: int = 20_000, per_batch: int = 20,
                   segment_bytes: int = 64 << 10) -> str:
    """Write ``topic``-0 under ``root``; returns the partition folder."""
    import kafkarec
    from support.logs.logdir import PartitionWriter
    writer = PartitionWriter(root, topic, 0, segment_bytes=segment_bytes, index_interval_bytes=4096)
    for start in range(0, records, per_batch):
        ids = range(start, min(start + per_batch, records))
        writer.append(kafkarec.build_batch([b"value-%d-" % i + b"x" * 80 for i in ids],
                                           [b"k%d" % (i % 97) for i in ids], [T0 + i for i in ids]))
    writer.close()
    return writer.dir


def keyed_topic(root: str, topic: str = "keyed", *, partitions: int = 8, records: int = 8_000,
                keys: int = 200, per_batch: int = 10) -> List[str]:
    """Write ``topic``'s ``partitions`` partitions under ``root``, record ``i`` with key
    ``b"key-%d" % (i % keys)`` in ``murmur2(key) % partitions`` (Kafka's default partitioner, as the
    Java producer; the expected partition is the core's :func:`partition_for_key`, checked against
    Java's in tests/core/test_partitioner.py) and value ``b"value-%d-" % i`` padded; returns the
    partition folders."""
    import kafkarec
    from kafkarec._core import partition_for_key
    from support.logs.logdir import PartitionWriter
    placed: dict = {p: [] for p in range(partitions)}
    for i in range(records):
        key = b"key-%d" % (i % keys)
        placed[partition_for_key(key, partitions)].append((key, b"value-%d-" % i + b"y" * 60, T0 + i))
    folders = []
    for p, recs in placed.items():
        writer = PartitionWriter(root, topic, p, segment_bytes=16 << 10, index_interval_bytes=2048)
        for start in range(0, len(recs), per_batch):
            chunk = recs[start:start + per_batch]
            writer.append(kafkarec.build_batch([v for _, v, _ in chunk], [k for k, _, _ in chunk],
                                               [t for _, _, t in chunk]))
        writer.close()
        folders.append(writer.dir)
    return folders


def _log_files(folder: str) -> List[str]:
    return [os.path.join(d, n) for d, _, names in os.walk(folder) for n in names if n.endswith(".log")]


def segment_bytes_read(folder: str, call: Callable[[], object]):
    """``(result of call, .log bytes under folder read during it, .log bytes under folder)``."""
    from kafkarec.log.storage import process_bytes_read
    folder = os.path.realpath(folder)

    def logs(by_path):
        return sum(n for path, n in by_path.items()
                   if path.endswith(".log") and os.path.realpath(path).startswith(folder + os.sep))
    before = dict(process_bytes_read().by_path)
    result = call()
    after = dict(process_bytes_read().by_path)
    read = logs(after) - logs(before)
    total = sum(os.path.getsize(path) for path in _log_files(folder))
    return result, read, total


def rows(table) -> List[tuple]:
    """Sorted ``(topic, partition, offset, key, value, headers, timestampType, timestamp ms)``."""
    import pyarrow as pa
    if not isinstance(table, pa.Table):
        table = table.to_arrow()        # a Polars DataFrame
    ts = table.column("timestamp").cast(pa.timestamp("ms")).cast(pa.int64())
    cols = table.set_column(table.schema.get_field_index("timestamp"), "timestamp", ts).to_pydict()
    out = []
    for i in range(table.num_rows):
        headers = tuple((h["key"], h["value"]) for h in (cols["headers"][i] or []))
        out.append(tuple(headers if c == "headers" else cols[c][i] for c in ROW_COLUMNS))
    out.sort(key=lambda r: (r[0], r[1], r[2]))
    return out


def damaged_copy(log_root: str, root: str, how: str) -> str:
    """A copy of ``log_root`` at ``root`` whose first ``web-clicks-0`` segment is ``truncated`` inside
    its last batch or ``corrupt`` (a byte flipped in the middle); returns ``root``."""
    import shutil
    shutil.copytree(log_root, root)
    folder = os.path.join(root, "web-clicks-0")
    segment = os.path.join(folder, sorted(n for n in os.listdir(folder) if n.endswith(".log"))[0])
    size = os.path.getsize(segment)
    with open(segment, "r+b") as fh:
        if how == "truncated":
            fh.truncate(size - 7)
        else:
            fh.seek(size // 2)
            byte = fh.read(1)[0]
            fh.seek(size // 2)
            fh.write(bytes([byte ^ 0xFF]))
    return root
