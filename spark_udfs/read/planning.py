"""How a read is cut into Spark tasks: one rule for local and remote log directories.

No pyspark, no kafkarec here.  The data source's planner (:func:`spark_udfs.read.datasource.plan`)
gives what kafkarec.log found in its one listing (local slices of :mod:`kafkarec.log.local`,
segment ranges of :mod:`kafkarec.log.selection` on any storage), how big each item is, and
how to cut an item at batch boundaries; :func:`plan_tasks` returns the tasks.

The rule is Spark's for its file sources (apache/spark,
``sql/core/.../execution/datasources/FilePartition.scala``: ``maxSplitBytes`` and
``getFilePartitions``; ``PartitionedFileUtil.splitFiles``):

* every file costs its size plus ``openCostInBytes`` (an open and a first
  request cost about as much as reading that many bytes);
* ``maxSplitBytes = min(maxPartitionBytes, max(openCostInBytes, total / minPartitionNum))``,
  ``total`` counting the open cost of each file and ``minPartitionNum`` being
  ``spark.sql.files.minPartitionNum``, else the default parallelism: small
  inputs are spread over every core, large ones cut at ``maxPartitionBytes``;
* files larger than ``maxSplitBytes`` are cut into pieces of at most that size
  (here at batch starts, so a piece may be a batch longer);
* pieces are packed "next fit": a task is closed when the next piece would take
  it past ``maxSplitBytes``, each piece counting its size plus the open cost.

Two differences, both deliberate.  Spark packs pieces largest first; here they
are packed in log order within each topic-partition, and partitions are
interleaved by how far into its log a piece lies (``group``): the first task
gets the start of every partition, the last one the end.  A partition's rows
still come out in offset order within a task, and since compression (so
decoding cost per byte) is usually set per topic or producer, every task gets
the same mix of it: with tasks packed partition after partition, the one that
got the gzip topic ran long after the one that got the uncompressed one.  (So
bytes need no weighing by codec or by what they inflate to: each task gets the
same share of every partition, whatever a partition's byte costs.  Checked on
bench_spark's five codecs, the same records in each: the two tasks of its
local[2] plan hold 576k and 424k records - 9 and 11 files, the difference being
the open cost Spark's rule charges per file - and each task about the same share
of every codec, to within a segment.)  And
``minPartitions``, when the user sets it, means what it means in Spark's Kafka
source (at least that many tasks when the data can be cut so): if the file rule
gives fewer tasks - the open cost keeps it from cutting smaller than 4 MiB - the
read is planned again with pieces of ``total / minPartitions`` bytes and no
open cost.

A stream's micro-batch is planned by offsets, as the Kafka source plans it
(:func:`split_offset_ranges`): one task per topic-partition, and with
``minPartitions`` above the number of topic-partitions the large offset ranges
are cut into several tasks.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Callable, Hashable, Iterable, List, Optional, Sequence, Tuple, TypeVar

__all__ = ["max_split_bytes", "pack", "plan_tasks", "split_offset_ranges",
           "DEFAULT_MAX_PARTITION_BYTES", "DEFAULT_OPEN_COST_BYTES"]

T = TypeVar("T")

# Spark's defaults: spark.sql.files.maxPartitionBytes, spark.sql.files.openCostInBytes
DEFAULT_MAX_PARTITION_BYTES = 128 << 20
DEFAULT_OPEN_COST_BYTES = 4 << 20


def max_split_bytes(total_bytes: int, *, max_partition_bytes: int, open_cost_bytes: int,
                    min_partitions: int) -> int:
    """Spark's ``FilePartition.maxSplitBytes``: ``total_bytes`` counts each file's open cost."""
    per_core = total_bytes // max(1, min_partitions)
    return max(1, min(max_partition_bytes, max(open_cost_bytes, per_core)))


def pack(pieces: Iterable[T], *, size: Callable[[T], int], max_split_bytes: int,
         open_cost_bytes: int) -> List[List[T]]:
    """Spark's ``FilePartition.getFilePartitions`` packing, in the order given: a task is
    closed when the next piece would take it past ``max_split_bytes``."""
    tasks: List[List[T]] = []
    current: List[T] = []
    current_size = 0
    for piece in pieces:
        n = size(piece)
        if current and current_size + n > max_split_bytes:
            tasks.append(current)
            current, current_size = [], 0
        current.append(piece)
        current_size += n + open_cost_bytes
    if current:
        tasks.append(current)
    return tasks


def plan_tasks(slices: Sequence[T], *, min_partitions: Optional[int] = None,
               max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
               open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES,
               default_parallelism: int = 1,
               size: Callable[[T], int],
               split: Optional[Callable[[T, int], Sequence[T]]] = None,
               group: Optional[Callable[[T], Hashable]] = None) -> List[List[T]]:
    """The tasks of one read: ``slices`` (files or ranges, in log order) cut and packed.

    ``size(item)`` is an item's bytes; ``split(item, max_bytes)`` cuts an item larger than
    ``max_bytes`` into items of about that size (at batch starts; ``None``: never cut);
    ``group(item)`` names its topic-partition (partitions are interleaved, see the module
    docstring; ``None``: the order given).
    ``min_partitions``: the data source option (None when not set); otherwise
    ``default_parallelism`` (the cluster's cores) is the aim, as Spark's file sources
    take it.  Returns lists of items, each list one task; ``[]`` for no input.
    """
    if max_partition_bytes <= 0 or open_cost_bytes < 0:
        raise ValueError("maxPartitionBytes must be positive and openCostInBytes not negative")
    if min_partitions is not None and min_partitions <= 0:
        raise ValueError(f"minPartitions must be positive, not {min_partitions}")
    slices = list(slices)
    if not slices:
        return []
    sizes = [max(0, size(s)) for s in slices]
    aim = min_partitions if min_partitions is not None else max(1, default_parallelism)
    total = sum(sizes) + open_cost_bytes * len(slices)
    split_bytes = max_split_bytes(total, max_partition_bytes=max_partition_bytes,
                                  open_cost_bytes=open_cost_bytes, min_partitions=aim)
    tasks = pack(_interleave(_cut(slices, sizes, split_bytes, size, split), size, group), size=size,
                 max_split_bytes=split_bytes, open_cost_bytes=open_cost_bytes)
    if min_partitions is not None and len(tasks) < min_partitions:
        # Kafka source meaning: at least minPartitions tasks where the batches allow it.
        even = max(1, -(-sum(sizes) // min_partitions))
        again = pack(_interleave(_cut(slices, sizes, even, size, split), size, group), size=size,
                     max_split_bytes=even, open_cost_bytes=0)
        if len(again) > len(tasks):
            tasks = again
    return tasks


def _interleave(pieces: list, size, group) -> list:
    """``pieces`` ordered by how far into its group (topic-partition) each one starts, as a
    fraction of the group's bytes; ties (and each group's own pieces) keep their order."""
    if group is None or len(pieces) < 2:
        return pieces
    totals: dict = {}
    keys = [group(p) for p in pieces]
    for k, p in zip(keys, pieces):
        totals[k] = totals.get(k, 0) + size(p)
    seen: dict = {}
    order = []
    for i, (k, p) in enumerate(zip(keys, pieces)):
        before = seen.get(k, 0)
        seen[k] = before + size(p)
        order.append((Fraction(before, totals[k] or 1), i))
    order.sort()
    return [pieces[i] for _, i in order]


def _cut(slices, sizes, max_bytes: int, size, split) -> list:
    out = []
    for s, n in zip(slices, sizes):
        if split is not None and n > max_bytes:
            out.extend(split(s, max_bytes))
        else:
            out.append(s)
    return out


def split_offset_ranges(ranges: Sequence[Tuple[T, int, int]],
                        min_partitions: Optional[int]) -> List[Tuple[T, int, int]]:
    """A micro-batch's tasks as the Kafka source plans them (apache/spark,
    ``KafkaOffsetRangeCalculator.getRanges``): ``ranges`` are ``(topic-partition, from, until)``
    offset ranges; empty ones are dropped.  Without ``min_partitions``, or with at least that
    many ranges, one task per range.  Otherwise a range gets ``round(size / total *
    min_partitions)`` tasks (at least one); the ranges that get one keep it, and the others
    share what is left of ``min_partitions`` by the same rule, in near-equal offset counts
    (the last piece takes the remainder).  Sizes are offset counts, as Kafka's (compaction and
    transaction markers make them estimates)."""
    ranges = [(k, a, b) for k, a, b in ranges if b > a]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges

    def parts(size: int, total: int, n: int) -> int:
        # Scala's math.round: half up
        return max(int(Fraction(size * n, total) + Fraction(1, 2)), 1)

    total = sum(b - a for _, a, b in ranges)
    whole = {i for i, (_, a, b) in enumerate(ranges) if parts(b - a, total, min_partitions) == 1}
    split_total = total - sum(ranges[i][2] - ranges[i][1] for i in whole)
    split_min = max(min_partitions - len(whole), 1)
    out = []
    for i, (k, a, b) in enumerate(ranges):
        n = 1 if i in whole else parts(b - a, split_total, split_min)
        remaining, start = b - a, a
        for j in range(n):
            this = remaining // (n - j)
            remaining -= this
            end = min(start + this, b)
            if end > start:
                out.append((k, start, end))
            start = end
    return out
