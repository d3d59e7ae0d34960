"""A log directory for the pushdown checks (tests/spark/test_pushdown.py, the Connect job): topic
``events``, partitions 0 and 1, 25000 records each in 64 KiB segments (about 3 MB) with their
``.index``/``.timeindex`` (tests/support/logs/logdir.py's PartitionWriter, as a broker writes them), CreateTime
timestamps 10 ms apart of which every 97th is 5 s early (not ordered in the log), and the slices
the checks read: 1% of events-0 by offset, the last 1% of each partition by time."""
from __future__ import annotations

import datetime
import os
import zoneinfo

T0 = 1_790_000_000_000
BATCHES, PER_BATCH = 1000, 25
KEYS = 50                              # record i's key: k<i % KEYS>
N = BATCHES * PER_BATCH                # records per partition
OFFSET_FROM = N // 2                   # the offset slice: [OFFSET_FROM, OFFSET_TO) of events-0
OFFSET_TO = OFFSET_FROM + N // 100
TIME_MS = T0 + 10 * (N - N // 100)     # the time slice: timestamp >= TIME_MS
ZONE = "America/St_Johns"              # the session time zone the time literal is written in
KEY = b"k7"                            # the key the key pushdown looks up


def timestamp(partition: int, i: int) -> int:
    return T0 + 10 * i + partition - (5000 if i % 97 == 0 else 0)


def value(i: int) -> bytes:
    return b"v%d-" % i + b"x" * (100 + i % 5)


def build(root: str) -> None:
    from support.logs.logdir import PartitionWriter, v2_batch
    for p in (0, 1):
        w = PartitionWriter(root, "events", p, segment_bytes=64 * 1024)
        for b in range(BATCHES):
            w.append(v2_batch([(timestamp(p, i), b"k%d" % (i % KEYS), value(i), [])
                               for i in range(b * PER_BATCH, (b + 1) * PER_BATCH)],
                              codec="zstd" if b % 10 == 0 else "none"))
        w.close()


def murmur2_partition(key: bytes) -> int:
    """The partition of ``events`` (2 partitions) Kafka's default partitioner names for ``key``."""
    from kafkarec._core import partition_for_key
    return partition_for_key(key, 2)


def time_literal() -> str:
    """TIME_MS as a timestamp literal in :data:`ZONE`."""
    at = datetime.datetime.fromtimestamp(TIME_MS / 1000, zoneinfo.ZoneInfo(ZONE))
    return at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def records(where) -> list:
    """``[topic, partition, offset, timestampMs]`` of the records ``where(partition, offset)`` admits."""
    return sorted(["events", p, i, timestamp(p, i)] for p in (0, 1) for i in range(N) if where(p, i))


def segment_bytes(root: str, partition=None) -> int:
    return sum(os.path.getsize(os.path.join(d, f))
               for d in (os.path.join(root, f"events-{p}") for p in (0, 1) if partition in (None, p))
               for f in os.listdir(d) if f.endswith(".log"))


def log_bytes(read: dict, partition=None) -> int:
    """Bytes of ``.log`` files in a {path: bytes} tally (the side files' are not weighed)."""
    return sum(n for path, n in read.items() if path.endswith(".log")
               and (partition is None or f"/events-{partition}/" in path))


def check(result: dict, root: str, *, counted: bool = True) -> None:
    """What jobs/pushdown_job.py's ``queries`` gave: each query's rows are the data's, Spark's
    own filtering's and the options'; the slices read at most 2% of the segment bytes."""
    got = result["offset"]
    want = records(lambda p, i: p == 0 and OFFSET_FROM <= i < OFFSET_TO)
    assert got["rows"] == want == result["offset_spark"]["rows"] == result["offset_options"]["rows"]
    want = records(lambda p, i: timestamp(p, i) >= TIME_MS)
    assert result["time"]["rows"] == want == result["time_spark"]["rows"]
    assert result["other"]["rows"] == records(lambda p, i: p == 0 and i >= OFFSET_FROM and len(value(i)) % 2 == 1)
    assert result["dropmalformed"]["rows"] == result["offset"]["rows"]
    # view=latest: the partition's state, then Spark's offset filter (each key's latest is among
    # the last KEYS offsets)
    assert result["latest"]["rows"] == records(lambda p, i: p == 0 and i >= N - KEYS)
    assert result["with_options"]["rows"] == records(
        lambda p, i: (i >= OFFSET_FROM - 50 if p == 0 else True) and i < OFFSET_TO)
    with_key = records(lambda p, i: b"k%d" % (i % KEYS) == KEY)
    assert result["key"]["rows"] == with_key and with_key
    named = murmur2_partition(KEY)
    assert result["key_murmur2"]["rows"] == [r for r in with_key if r[1] == named]
    if not counted:
        return
    read = result["key_murmur2"]["bytes"]
    assert log_bytes(read, 1 - named) == 0
    assert 0 < log_bytes(read) <= segment_bytes(root) * (1 / 2 + 0.01), (log_bytes(read), segment_bytes(root))
    read = got["bytes"]
    assert log_bytes(read, 1) == 0
    assert 0 < log_bytes(read, 0) <= segment_bytes(root, 0) * 0.02, (log_bytes(read, 0), segment_bytes(root, 0))
    read = result["time"]["bytes"]
    assert 0 < log_bytes(read) <= segment_bytes(root) * 0.02, (log_bytes(read), segment_bytes(root))
    # without pushdown Spark filters every record: the whole log is read
    assert log_bytes(result["offset_spark"]["bytes"]) >= segment_bytes(root)
