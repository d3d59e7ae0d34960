"""A ``distributed.LocalCluster`` of two worker processes, once per session: the engine tests of
Dask (tests/engines/test_dask.py) and the broker's (tests/broker/test_broker_engines.py) read
through it."""
from typing import NamedTuple

import pytest


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
