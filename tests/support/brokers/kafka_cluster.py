"""Three real KRaft nodes (each broker and controller in one JVM, a static quorum of three voters)
on 127.0.0.1 for tests that need replication: :class:`KafkaCluster`.

Each node is a :class:`kafka_broker.KafkaBroker` of the same cluster id; the nodes are started
together (a voter answers only once a quorum of its peers runs) and **stopped together**: SIGTERM
to every node at once, then each waited for (bounded).  A node's broker shuts down without
Kafka's controlled shutdown (``controlled.shutdown.enable=false``): that step waits, up to five
minutes, for the active controller to approve it, and a node slower than the other two to take its
SIGTERM asked once their controllers were gone, so no quorum was left to approve it (a CI run: node
1 killed after 60 s, its log dir left unclean).  The logs are still shut down cleanly (each
partition flushed, ``.kafka_cleanshutdown`` written); a single node stopped has its leaderships
moved once the controller fences it (``broker.session.timeout.ms``, 6 s here), which clients wait
out by retrying.
A node may have several log dirs (JBOD, ``jbod={node_id: n}``): Kafka then records each replica's
directory id (KIP-858) in the metadata.

    with KafkaCluster(base, jbod={3: 2}) as cluster:
        cluster.bootstrap                  # every node's listener
        cluster.log_dirs                   # every node's log dirs, node by node
        cluster.stop()                     # all at once, each cleanly
        cluster.start()
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Dict, List, Optional

from support.brokers.kafka_broker import KafkaBroker, KafkaBrokerError, random_cluster_id
from support.net import free_ports

#: settings of every node: everything replicated three times, written by two
REPLICATED = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}


#: settings of every node: stopped without asking the controller quorum (see the module docstring)
STOPPED_ALONE = {
    "controlled.shutdown.enable": "false",
    "broker.session.timeout.ms": "6000",
}


class KafkaCluster:
    """``nodes`` KRaft nodes (ids 1..nodes) under ``base_dir``, one cluster."""

    def __init__(self, base_dir: str, nodes: int = 3, *, jbod: Optional[Dict[int, int]] = None,
                 start_timeout: float = 150.0, stop_timeout: float = 60.0):
        ports = free_ports(2 * nodes)
        voters = ",".join(f"{i + 1}@127.0.0.1:{ports[2 * i + 1]}" for i in range(nodes))
        self.cluster_id = random_cluster_id()
        self.stop_timeout = stop_timeout
        self.nodes: List[KafkaBroker] = []
        for i in range(nodes):
            node_id = i + 1
            base = os.path.join(base_dir, f"node{node_id}")
            os.makedirs(base, exist_ok=True)
            dirs = [os.path.join(base, "data")] + [os.path.join(base, f"data{j}")
                                                   for j in range(2, (jbod or {}).get(node_id, 1) + 1)]
            port, controller = ports[2 * i], ports[2 * i + 1]
            b = KafkaBroker(base, start_timeout=start_timeout, stop_timeout=stop_timeout, overrides={
                **REPLICATED, **STOPPED_ALONE, "node.id": str(node_id), "controller.quorum.voters": voters,
                "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": ",".join(dirs)})
            b.port, b.controller_port, b.cluster_id = port, controller, self.cluster_id
            self.nodes.append(b)

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def log_dirs(self) -> List[str]:
        return [d for n in self.nodes for d in n.log_dirs]

    def node(self, node_id: int) -> KafkaBroker:
        return self.nodes[node_id - 1]

    def start(self) -> "KafkaCluster":
        """Every node not running launched, then each waited for (bounded by its start timeout)."""
        starts = {id(n): n.launch() for n in self.nodes if not n.running}
        try:
            for n in self.nodes:
                if id(n) in starts:
                    n._wait_ready(starts[id(n)])
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self, *nodes: KafkaBroker) -> None:
        """The given nodes (every node by default) stopped at once: SIGTERM to each, then each waited
        for; a node not gone within the stop timeout is killed and named."""
        chosen = [n for n in (nodes or self.nodes) if n.proc is not None]
        for n in chosen:
            if n.proc.poll() is None:
                try:
                    os.killpg(n.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + self.stop_timeout
        hung = []
        for n in chosen:
            try:
                n.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                hung.append(n)
        for n in chosen:
            n._kill() if n in hung else n.stop()
        if hung:
            raise KafkaBrokerError(f"node(s) {[int(n.config['node.id']) for n in hung]} did not stop within "
                                   f"{self.stop_timeout:.0f} s (killed):\n" + hung[0].log_tail())

    def kill(self) -> None:
        for n in self.nodes:
            n._kill()

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self.kill()

    def __enter__(self) -> "KafkaCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
