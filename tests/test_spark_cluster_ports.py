"""The session's standalone cluster (tests/support/spark/spark_cluster.py) knows its daemons by the ports
they bound, not the ports it picked for them: a port free when picked may be taken by another
process before the daemon binds it, and Spark then takes the next one (``spark.port.maxRetries``).
A fresh-clone run lost its whole cluster group that way: worker-1 was given 44285, bound 44286, and
the cluster waited 120 s for a worker on 44285.  The daemons here are stand-ins that write what
Spark's would write to their logs."""
from __future__ import annotations

import os
import sys

from support.spark.spark_cluster import StandaloneCluster


class _Running:
    returncode = None

    def poll(self):
        return None


def _daemon_arg(args, flag):
    return int(args[args.index(flag) + 1])


def test_the_cluster_follows_the_ports_its_daemons_bound(tmp_path):
    cluster = StandaloneCluster(str(tmp_path), sys.executable, workers=2)
    bound = {}

    def start(name, args):
        # the master and worker-1 each find their port taken and bind the next one
        moved = name in ("master", "worker-1")
        lines = []
        port = _daemon_arg(args, "--port")
        if moved:
            lines.append(f"WARN Utils: Service 'x' could not bind on port {port}. Attempting port {port + 1}.")
            port += 1
        service = "sparkMaster" if name == "master" else "sparkWorker"
        lines.append(f"INFO Utils: Successfully started service '{service}' on port {port}.")
        if name == "master":
            lines.append(f"INFO Utils: Successfully started service 'MasterUI' on port "
                         f"{_daemon_arg(args, '--webui-port')}.")
        else:
            assert args[-1] == f"spark://127.0.0.1:{bound['master']}", "a worker was sent to the port picked"
        bound[name] = port
        with open(os.path.join(str(tmp_path), f"{name}.log"), "a") as fh:
            fh.write("\n".join(lines) + "\n")
        cluster.procs[name] = _Running()
        return cluster.procs[name]

    cluster._start = start
    cluster.status = lambda: {"workers": [{"port": bound[n], "state": "ALIVE"}
                                          for n in bound if n.startswith("worker-")]}
    picked = cluster.port
    cluster.start(timeout=5)
    assert cluster.port == picked + 1 and cluster.master_url == f"spark://127.0.0.1:{picked + 1}"
    assert {cluster.bound_port(n, "sparkWorker") for n in ("worker-0", "worker-1")} == \
        {bound["worker-0"], bound["worker-1"]}
