"""Planning reads into Spark tasks (spark_udfs.read.planning), no Spark needed: Spark's
file-source packing, minPartitions, local and remote plans alike, one listing per read."""
from __future__ import annotations

import os

import pytest

from benchmarks import bench_planning as B
from kafkarec.scan import _read as scan_read
from spark_udfs.read import datasource as _datasource, planning as _planning
from spark_udfs.read.spec import read_spec

MiB = 1 << 20


def _plan(sizes, **kw):
    kw.setdefault("size", lambda s: s[1])
    return _planning.plan_tasks([(i, n) for i, n in enumerate(sizes)], **kw)


def test_max_split_bytes_is_sparks_rule():
    # min(maxPartitionBytes, max(openCostInBytes, total / minPartitionNum))
    f = _planning.max_split_bytes
    assert f(10 * 1024 * MiB, max_partition_bytes=128 * MiB, open_cost_bytes=4 * MiB,
             min_partitions=2) == 128 * MiB
    assert f(40 * MiB, max_partition_bytes=128 * MiB, open_cost_bytes=4 * MiB, min_partitions=4) == 10 * MiB
    assert f(4 * MiB, max_partition_bytes=128 * MiB, open_cost_bytes=4 * MiB, min_partitions=8) == 4 * MiB


def test_many_small_files_pack_as_spark_packs_them():
    """The issue's case: 3,000 segments of 4.9 kB (1,500 partitions), default parallelism 2:
    each file costs its bytes + 4 MiB, 32 files a task of 128 MiB -> 94 tasks, as Spark's
    binaryFile source plans the same files."""
    tasks = _plan([4_900] * 3000, default_parallelism=2)
    assert len(tasks) == 94
    assert [len(t) for t in tasks[:-1]] == [32] * 93
    assert [s for t in tasks for s in t] == [(i, 4_900) for i in range(3000)]   # log order kept


def test_small_input_spreads_over_the_cores():
    # 3 files of 1 MiB, 4 cores: total 15 MiB -> split max(4 MiB, 3.75 MiB) = 4 MiB: 3 tasks
    assert len(_plan([MiB] * 3, default_parallelism=4)) == 3
    # no open cost: 1.5 MiB a core -> 2 files never share a task
    assert len(_plan([MiB] * 3, default_parallelism=2, open_cost_bytes=0)) == 3


def _splitter(unit):
    """Cut ``(id, n)`` at multiples of ``unit`` bytes (batch starts), about max_bytes apart."""
    def split(item, max_bytes):
        ident, n = item
        step = max(unit, max_bytes // unit * unit)
        return [(ident, min(step, n - a)) for a in range(0, n, step)]
    return split


def test_large_files_are_cut_at_max_split_bytes():
    tasks = _plan([1000 * MiB], default_parallelism=2, split=_splitter(MiB))
    assert len(tasks) == 8 and all(sum(n for _, n in t) <= 128 * MiB for t in tasks)
    assert sum(n for t in tasks for _, n in t) == 1000 * MiB


def test_min_partitions_is_respected_below_the_open_cost():
    """minPartitions as in Spark's Kafka source: 10 MiB with batches every 100 kB and
    minPartitions=8 gives 8 tasks, although Spark's file rule alone would stop at 4 MiB
    pieces (3 tasks)."""
    split = _splitter(100_000)
    assert len(_plan([10 * MiB], default_parallelism=8, split=split)) == 3
    tasks = _plan([10 * MiB], min_partitions=8, split=split)
    assert len(tasks) >= 8
    assert sum(n for t in tasks for _, n in t) == 10 * MiB
    # more tasks than batches cannot be made: as many as there are batches
    assert len(_plan([300_000], min_partitions=8, split=split)) == 3
    with pytest.raises(ValueError, match="minPartitions"):
        _plan([1], min_partitions=0)


def test_empty_input_plans_no_task():
    assert _plan([], default_parallelism=4) == []


def test_local_and_remote_plan_alike(tmp_path):
    """The same directory planned by the local reader and by the remote one (through a
    URI, pyarrow's local file system): the same tasks of the same files."""
    root = str(tmp_path / "logs")
    B.write_local(root, 300, 2)
    local = B.plan(root, {}, 4)
    remote = B.plan("file://" + root, {}, 4)
    assert len(local) == len(remote) >= 4
    got_local = [[(os.path.relpath(p.item.path, root), p.item.start, p.item.end) for p in t.ranges] for t in local]
    got_remote = [[(os.path.relpath(p.item.range.segment.path, root), p.item.range.start,
                    p.item.range.end if p.item.range.end is not None else p.item.range.segment.size)
                   for p in t.ranges] for t in remote]
    assert got_local == got_remote
    # minPartitions, as the data source option reaches both planners
    many = B.plan(root, {"minPartitions": "500"}, 1)
    assert len(many) == len(B.plan("file://" + root, {"minPartitions": "500"}, 1)) >= 500


def test_remote_plan_lists_once_and_reads_no_segment(tmp_path, monkeypatch):
    from kafkarec.log import storage
    root = str(tmp_path / "logs")
    B.write_local(root, 50, 3)
    counters: list = []
    monkeypatch.setattr(storage, "resolve", B.counting_resolve(counters))
    spec = _listed({"path": "file://" + root, "maxPartitionBytes": "2k"})
    tasks = _datasource.plan(spec, spec.config, default_parallelism=2)
    assert len(counters) == 1 and counters[0].calls["list"] == 1
    assert counters[0].calls["open"] == 0          # no segment or side file opened to plan
    assert sum(len(t.ranges) for t in tasks) == 150


def _listed(options):
    """The spec of a batch read through the listed layout (as the data source makes it)."""
    return read_spec(options).for_batch("R")


def test_remote_options_are_checked():
    with pytest.raises(ValueError, match="minPartitions"):
        _listed({"path": "s3://b/x", "minPartitions": "0"})
    spec = _listed({"path": "s3://b/x", "openCostInBytes": "1m"})
    assert (spec.limits.open_cost_bytes, spec.limits.min_partitions) == (MiB, None)
    assert spec.config.listed


def test_large_slices_are_read_in_windows(tmp_path, monkeypatch):
    """A slice larger than the read window is cut into consecutive slices of the same task,
    at batch starts, covering it once (and readCommitted skips follow their window)."""
    import kafkarec
    from kafkarec.log import local
    path = str(tmp_path / "big-0" / f"{0:020d}.log")
    records = B.write_large_segment(path, 3 * MiB)
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 256 << 10)
    (planned,) = _datasource.plan(*_datasource.batch_read(read_spec(
        {"path": path, "maxPartitionBytes": "1g", "minPartitions": "1"})))
    task = [p.item for p in planned.ranges]
    data = open(path, "rb").read()
    starts = {b.position for b in kafkarec.iter_batches(data, verify_crc=False)}
    assert len(task) >= 3 * MiB // (256 << 10)
    assert task[0].start == 0 and task[-1].end == len(data)
    assert all(a.end == b.start for a, b in zip(task, task[1:]))
    assert all(sl.start in starts and sl.end - sl.start <= 256 << 10 for sl in task)
    rows = sum(kafkarec.to_arrow(data[sl.start:sl.end]).num_rows for sl in task)
    assert rows == records


def test_reading_a_large_segment_keeps_memory_bounded(tmp_path):
    """One 256 MiB segment read as ONE task (maxPartitionBytes 1g) in a fresh process, the
    way an executor's Python worker does: the peak RSS grows by well under the segment's
    size (a 2 GiB segment: see benchmarks/bench_planning.py --large-segment 2)."""
    import json
    import subprocess
    import sys
    path = str(tmp_path / "big-0" / f"{0:020d}.log")
    records = B.write_large_segment(path, 256 * MiB)
    root = os.path.dirname(os.path.dirname(os.path.abspath(B.__file__)))
    out = subprocess.run(
        [sys.executable, B.__file__, "--read-task", json.dumps({"path": path, "maxPartitionBytes": "1g"})],
        env=dict(os.environ, PYTHONPATH=root), check=True, capture_output=True, text=True,
        timeout=300).stdout
    r = json.loads(out.strip().splitlines()[-1])
    assert (r["tasks"], r["rows"]) == (1, records)
    # 64 MiB mapped at a time + decoding (about 135 MiB in all, whatever the size); before,
    # the whole slice was mapped at once: growth 1.25 x the segment (320 MiB)
    assert r["peak_rss_mib"] - r["rss_before_mib"] < 0.65 * 256, r


def test_local_read_lists_once(tmp_path, monkeypatch):
    """The local reader walks the folders once, while planning (kafkarec.log.directory's
    walk lists a folder to tell whether it is a partition folder, then again for its files;
    the root a third time for its own files), and its tasks list nothing."""
    root = str(tmp_path / "logs")
    B.write_local(root, 40, 3)
    listed: dict = {}
    real = os.listdir

    def counting(path="."):
        listed[os.path.abspath(path)] = listed.get(os.path.abspath(path), 0) + 1
        return real(path)
    monkeypatch.setattr(os, "listdir", counting)
    ds = _datasource.KafkaRecDataSource({"path": root, "minPartitions": "8"})
    reader = ds.reader(ds.schema())
    tasks = reader.partitions()
    assert len(tasks) >= 8
    assert len(listed) == 41 and max(listed.values()) <= 3 and sum(listed.values()) == 2 * 41 + 1

    def no_listing(path="."):
        raise AssertionError(f"a task listed {path}")
    monkeypatch.setattr(os, "listdir", no_listing)
    monkeypatch.setattr(os, "scandir", no_listing)
    assert sum(rb.num_rows for t in tasks for rb in reader.read(t)) == 40 * 3 * B.RECORDS_PER_SEGMENT


def test_partitions_are_interleaved_in_tasks():
    """Each task gets the same share of every partition (decoding cost per byte is usually
    a partition's or topic's: its codec), each partition's pieces in offset order."""
    items = [(p, s, 10 * MiB) for p in range(3) for s in range(4)]     # 3 partitions x 4 segments
    tasks = _planning.plan_tasks(items, default_parallelism=4, size=lambda it: it[2],
                                 group=lambda it: it[0])
    assert [sorted({p for p, _, _ in t}) for t in tasks] == [[0, 1, 2]] * 4
    for p in range(3):
        assert [s for t in tasks for q, s, _ in t if q == p] == [0, 1, 2, 3]


def test_remote_task_reads_small_ranges_ahead(tmp_path, monkeypatch):
    """A task of many small segments reads the next ones ahead (threads) and yields the
    same rows, in the same order, as one range after the other."""
    root = str(tmp_path / "logs")
    B.write_local(root, 30, 3)

    def rows(read_ahead):
        monkeypatch.setattr(scan_read, "READ_AHEAD_RANGES", read_ahead)
        ds = _datasource.KafkaRecDataSource({"path": "file://" + root, "maxPartitionBytes": "1g"})
        reader = ds.reader(ds.schema())
        (task,) = reader.partitions()
        assert len(task.ranges) == 90
        out = []
        for rb in reader.read(task):
            out += zip(rb.column("topic").to_pylist(), rb.column("partition").to_pylist(),
                       rb.column("offset").to_pylist())
        return out
    got = rows(4)
    assert got == rows(1) and len(got) == 90 * B.RECORDS_PER_SEGMENT


def test_stream_offset_ranges_split_as_the_kafka_source():
    """KafkaOffsetRangeCalculator.getRanges, worked by hand: without minPartitions (or with
    no more than the ranges) one task per range; otherwise a range taking round(size / total
    * minPartitions) <= 1 stays whole and the rest share what is left, in near-equal parts."""
    split = _planning.split_offset_ranges
    ranges = [("a", 0, 40), ("b", 100, 102), ("c", 7, 7)]
    assert split(ranges, None) == [("a", 0, 40), ("b", 100, 102)]      # empty range dropped
    assert split(ranges, 2) == [("a", 0, 40), ("b", 100, 102)]
    # total 42, minPartitions 5: b -> round(0.24) -> 1 (whole); a shares 5 - 1 = 4 tasks
    assert split(ranges, 5) == [("a", 0, 10), ("a", 10, 20), ("a", 20, 30), ("a", 30, 40),
                                ("b", 100, 102)]
    # remainders go to the later pieces (integer division over what remains)
    assert split([("a", 0, 10)], 3) == [("a", 0, 3), ("a", 3, 6), ("a", 6, 10)]
    # Scala's round is half up: 5 of 10 offsets with minPartitions 3 -> 1.5 -> 2 parts each
    assert split([("a", 0, 5), ("b", 0, 5)], 3) == [("a", 0, 2), ("a", 2, 5),
                                                     ("b", 0, 2), ("b", 2, 5)]
    # never a piece without offsets, even with more tasks asked than offsets
    assert split([("a", 0, 2)], 8) == [("a", 0, 1), ("a", 1, 2)]
