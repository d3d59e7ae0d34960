"""Planning reads into Spark tasks (spark_udfs._planning), no Spark needed: Spark's
file-source packing, minPartitions, local and remote plans alike, one listing per read."""
from __future__ import annotations

import os

import pytest

from benchmarks import bench_planning as B
from spark_udfs import _logdir, _planning, _remote

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


def _groups_local(tasks):
    return [[(os.path.relpath(s.path), s.start, s.end) for s in t] for t in tasks]


def test_local_and_remote_plan_alike(tmp_path):
    """The same directory planned by the local reader and by the remote one (through a
    URI, pyarrow's local file system): the same tasks of the same files."""
    root = str(tmp_path / "logs")
    B.write_local(root, 300, 2)
    local = B.plan_local(root, 4)
    remote = B.plan_remote("file://" + root, {}, 4)
    assert len(local) == len(remote) >= 4
    got_local = [[(os.path.relpath(s.path, root), s.start, s.end) for s in t] for t in local]
    got_remote = [[(os.path.relpath(rr.range.segment.path, root), rr.range.start,
                    rr.range.end if rr.range.end is not None else rr.range.segment.size)
                   for rr in t.ranges] for t in remote]
    assert got_local == got_remote
    # minPartitions, as the data source option reaches both planners
    many = _logdir.plan(_logdir.discover([root])[0], max_partition_bytes=128 * MiB,
                        open_cost=4 * MiB, min_partitions=500)
    cfg = _remote.RemoteReadConfig({"path": "file://" + root, "minPartitions": "500"})
    assert len(many) == len(_remote.plan_tasks(cfg)) >= 500


def test_remote_plan_lists_once_and_reads_no_segment(tmp_path, monkeypatch):
    from kafkarec.log import storage
    root = str(tmp_path / "logs")
    B.write_local(root, 50, 3)
    counters: list = []
    monkeypatch.setattr(storage, "resolve", B.counting_resolve(counters))
    cfg = _remote.RemoteReadConfig({"path": "file://" + root, "maxPartitionBytes": "2k"},
                                   default_parallelism=2)
    tasks = _remote.plan_tasks(cfg)
    assert len(counters) == 1 and counters[0].calls["list"] == 1
    assert counters[0].calls["open"] == 0          # no segment or side file opened to plan
    assert sum(len(t.ranges) for t in tasks) == 150


def test_remote_options_are_checked():
    with pytest.raises(ValueError, match="minPartitions"):
        _remote.RemoteReadConfig({"path": "s3://b/x", "minPartitions": "0"})
    cfg = _remote.RemoteReadConfig({"path": "s3://b/x", "openCostInBytes": "1m"}, default_parallelism=3)
    assert (cfg.open_cost, cfg.min_partitions, cfg.default_parallelism) == (MiB, None, 3)
