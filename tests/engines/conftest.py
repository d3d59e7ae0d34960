"""The logs the engine adapters' tests read (tests/support/logs/engine_logs.py)."""
from typing import NamedTuple

import pytest

from kafkarec.errors import KafkaRecError
from kafkarec.scan import LogScan


@pytest.fixture(scope="module")
def long_log(tmp_path_factory):
    """``(root, partition folder)`` of :func:`support.logs.engine_logs.long_partition`."""
    from support.logs.engine_logs import long_partition
    root = str(tmp_path_factory.mktemp("long"))
    return root, long_partition(root)


@pytest.fixture(scope="module")
def keyed_log(tmp_path_factory):
    """``(root, partitions)`` of :func:`support.logs.engine_logs.keyed_topic`: topic ``keyed``, its
    records placed by murmur2."""
    from support.logs.engine_logs import keyed_topic
    root = str(tmp_path_factory.mktemp("keyed"))
    return root, len(keyed_topic(root))


@pytest.fixture(scope="module")
def log_root(tmp_path_factory):
    """Every codec, legacy messages, transactions (a commit and an abort), compaction, headers
    (tests/support/logs/logdir.py's :func:`build_log_dir`)."""
    from support.logs.logdir import build_log_dir
    root = tmp_path_factory.mktemp("logs")
    build_log_dir(str(root))
    return str(root)


@pytest.fixture(params=["truncated", "corrupt"])
def damaged(request, log_root, tmp_path):
    """``(root, error)``: a copy of ``log_root`` with one segment damaged, and the error
    :class:`kafkarec.scan.LogScan` reading it raises (every engine must raise the same)."""
    from support.logs.engine_logs import damaged_copy
    root = damaged_copy(log_root, str(tmp_path / "damaged"), request.param)
    with pytest.raises(KafkaRecError) as error:
        LogScan(root).to_table()
    return root, error.value


class DaskCluster(NamedTuple):
    client: object      # a distributed.Client, not the default scheduler (compute(scheduler=client))
    counts: str         # the folder the workers count the bytes they read into
    started_s: float


#: the longest a LocalCluster of two worker processes may take to start on the 2-core machine
DASK_START_S = 60


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory):
    """A ``distributed.LocalCluster`` of two worker processes (one thread each), started once per
    pytest process and closed at its end or when its group is done (tests/support/lanes.py), with
    no worker process left.  The workers count the bytes they read into ``counts``: the variable
    is set in their environment by their nannies, before they start reading, not in this process."""
    import os
    import time

    import psutil
    from distributed import Client, LocalCluster
    from kafkarec.log import storage
    counts = str(tmp_path_factory.mktemp("dask-bytes-read"))
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                           env={storage.BYTES_READ_ENV: counts,
                                # the workers import kafkarec where this process does (a checkout on
                                # PYTHONPATH, not an install)
                                "PYTHONPATH": os.pathsep.join(p for p in [os.environ.get("PYTHONPATH"), *_roots()] if p)},
                           timeout=DASK_START_S, silence_logs=40)
    client = Client(cluster, set_as_default=False, timeout=DASK_START_S)
    started = time.perf_counter() - t0
    print(f"dask LocalCluster: {started:.1f} s")
    pids = list(client.run(os.getpid).values())
    try:
        yield DaskCluster(client, counts, started)
    finally:
        client.close()
        cluster.close(timeout=DASK_START_S)
        gone, alive = psutil.wait_procs([p for p in map(_process, pids) if p is not None], timeout=10)
        assert not alive, f"dask worker processes left running: {alive}"


def _process(pid):
    import psutil
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _roots():
    """The folders kafkarec and the tests' helpers are imported from in this process."""
    import os

    import kafkarec
    return [os.path.dirname(os.path.dirname(os.path.abspath(kafkarec.__file__)))]
