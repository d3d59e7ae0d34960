"""A real Kafka Connect worker (distributed mode) with Apache Iceberg's Kafka Connect sink, and the
Iceberg catalog both it and pyiceberg reach (issue 41).

The worker runs ``org.apache.kafka.connect.cli.ConnectDistributed`` from ``jvm/iceberg-connect``
(connect-runtime in the broker's Kafka version, the sink, its ``KafkaMetadataTransform``, Iceberg's
JDBC catalog, the PostgreSQL driver, Hadoop's shaded client) on the session's broker, its REST API on
a free loopback port.  Every jar is on the worker's class path and plugins are found through their
``META-INF/services`` entries (``plugin.discovery=service_load``: no class-path scan, which on this
class path takes longer than the rest of the start).  Sink tasks consume ``read_committed`` (the
worker's ``consumer.`` prefix), as a sink fed by transactional producers must.

The catalog is Iceberg's JDBC catalog on the session's PostgreSQL (the one the CDC tests start,
``support.servers.debezium.postgres_server``) with a local-file warehouse: :class:`IcebergCatalog` gives the
sink's ``iceberg.catalog.*`` settings and pyiceberg's ``SqlCatalog`` properties for the same tables.

Session fixtures (root ``tests/conftest.py``'s ``pytest_plugins``): ``iceberg_catalog`` and
``connect_worker`` (on ``kafka_broker``), started on first use, bounded, stopped at the session's end.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from typing import Dict, Optional

import pytest

from support import jvm  # tests/support/jvm.py
from support.brokers.kafka_broker import BROKER_JVM_FLAGS, die_with_parent, file_tail, write_log4j2
from support.net import free_port
from support.procs import kill_group, stop_group

CONNECT_MODULE = "jvm/iceberg-connect"
WORKER_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
SINK_CLASS = "org.apache.iceberg.connect.IcebergSinkConnector"
METADATA_TRANSFORM = "org.apache.iceberg.connect.transforms.KafkaMetadataTransform"
#: The catalog's name on both sides: the sink's default ``iceberg.catalog`` and the ``catalog_name``
#: column pyiceberg's SqlCatalog keys its rows by.
CATALOG_NAME = "iceberg"


class ConnectWorkerError(RuntimeError):
    """The worker did not start or stop; the message ends with its log's tail."""


class IcebergCatalog:
    """Iceberg's JDBC catalog in database ``iceberg`` of a started PostgreSQL, warehouse under
    ``warehouse`` (a local folder)."""

    def __init__(self, pg_port: int, pg_user: str, warehouse: str, database: str = "iceberg"):
        self.uri = f"jdbc:postgresql://127.0.0.1:{pg_port}/{database}"
        self.sqlalchemy_uri = f"postgresql+psycopg2://{pg_user}@127.0.0.1:{pg_port}/{database}"
        self.user = pg_user
        self.warehouse = "file://" + warehouse

    def pyiceberg_properties(self) -> Dict[str, str]:
        """pyiceberg ``load_catalog(CATALOG_NAME, **these)``: its SqlCatalog on the same tables."""
        return {"type": "sql", "uri": self.sqlalchemy_uri, "warehouse": self.warehouse}

    def sink_properties(self) -> Dict[str, str]:
        """The sink's ``iceberg.catalog.*`` settings for the same catalog.  ``schema-version`` V1: the
        rows carry ``iceberg_type`` (tables and views), as pyiceberg's SqlCatalog writes them."""
        return {
            "iceberg.catalog": CATALOG_NAME,
            "iceberg.catalog.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "iceberg.catalog.uri": self.uri,
            "iceberg.catalog.jdbc.user": self.user,
            "iceberg.catalog.jdbc.password": "",
            "iceberg.catalog.jdbc.schema-version": "V1",
            "iceberg.catalog.warehouse": self.warehouse,
        }

    def load(self):
        """pyiceberg's catalog."""
        from pyiceberg.catalog import load_catalog
        return load_catalog(CATALOG_NAME, **self.pyiceberg_properties())


class ConnectWorker:
    """One distributed-mode Connect worker on ``bootstrap``; ``url`` is its REST API."""

    def __init__(self, bootstrap: str, *, base_dir: Optional[str] = None, group_id: str = "kafkarec-connect",
                 classpath: Optional[str] = None, start_timeout: float = 120, stop_timeout: float = 30):
        self.classpath = classpath if classpath is not None else jvm.classpath(CONNECT_MODULE)
        self._own_dir = base_dir is None
        self.base_dir = base_dir or tempfile.mkdtemp(prefix="kafkarec-connect-")
        self.bootstrap = bootstrap
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_file = os.path.join(self.base_dir, "connect.log")
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.config = {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "config.storage.topic": f"{group_id}-configs",
            "offset.storage.topic": f"{group_id}-offsets",
            "status.storage.topic": f"{group_id}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "offset.storage.partitions": "1",
            "status.storage.replication.factor": "1",
            "status.storage.partitions": "1",
            # bytes as they are, unless a connector says otherwise
            "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "listeners": self.url,
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
            "plugin.discovery": "service_load",
            "consumer.isolation.level": "read_committed",
            # a task that goes away (a stopped connector) gives its partitions up at once
            "scheduled.rebalance.max.delay.ms": "0",
            "offset.flush.interval.ms": "1000",
        }
        self.proc: Optional[subprocess.Popen] = None

    def _write_files(self) -> str:
        props = os.path.join(self.base_dir, "worker.properties")
        with open(props, "w") as fh:
            for key, value in self.config.items():
                fh.write(f"{key}={value}\n")
        write_log4j2(os.path.join(self.base_dir, "log4j2.properties"), self.log_file, {
            # the clients' configuration dumps and the Hadoop chatter hide what matters
            "org.apache.kafka.clients": "WARN", "org.apache.kafka.common": "WARN", "org.apache.hadoop": "ERROR",
            # where each sink task starts a partition it is assigned ("Assigned topic partition ... with
            # offset ..."): the hand-off's H, or a reset
            "org.apache.kafka.connect.runtime.WorkerSinkTask": "DEBUG"})
        return props

    def log_tail(self, lines: int = 60) -> str:
        return file_tail(self.log_file, lines)

    def start(self) -> "ConnectWorker":
        props = self._write_files()
        stdout = open(os.path.join(self.base_dir, "stdout.log"), "ab")
        try:
            self.proc = subprocess.Popen(
                # quick start and a small heap, as the broker's JVM
                ["java", *BROKER_JVM_FLAGS,
                 f"-Dlog4j2.configurationFile={os.path.join(self.base_dir, 'log4j2.properties')}",
                 "-cp", self.classpath, WORKER_MAIN, props],
                stdout=stdout, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=die_with_parent)
        finally:
            stdout.close()
        try:
            self._wait_ready()
        except BaseException:
            kill_group(self.proc)
            raise
        return self

    def _wait_ready(self) -> None:
        """Until the REST API answers and the worker has joined its group (it lists the sink among
        its plugins only once its herder runs); bounded."""
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise ConnectWorkerError(f"the Connect worker exited with {self.proc.returncode} while "
                                         "starting:\n" + self.log_tail())
            if time.monotonic() > deadline:
                raise ConnectWorkerError(f"the Connect worker did not answer within {self.start_timeout:.0f} s:\n"
                                         + self.log_tail())
            try:
                with urllib.request.urlopen(self.url + "/connector-plugins", timeout=5) as resp:
                    plugins = [p["class"] for p in json.load(resp)]
                if SINK_CLASS not in plugins:
                    raise ConnectWorkerError(f"the worker does not list {SINK_CLASS}: {plugins}")
                with urllib.request.urlopen(self.url + "/connectors", timeout=5) as resp:
                    resp.read()
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
            except urllib.error.HTTPError as exc:
                if exc.code != 503:         # the herder is still joining its group
                    raise
                time.sleep(0.5)

    def rest(self, method: str, path: str, body=None, timeout: float = 30):
        """One REST call; its JSON answer (None for an empty one)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            text = resp.read()
        return json.loads(text) if text else None

    def delete_connector(self, name: str) -> None:
        try:
            self.rest("DELETE", f"/connectors/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc, self.stop_timeout)
            self.proc = None

    def close(self) -> None:
        try:
            self.stop()
        finally:
            if self._own_dir:
                shutil.rmtree(self.base_dir, ignore_errors=True)


def iceberg_sink_config(catalog: IcebergCatalog, topics, table: str, *, tasks: int,
                        commit_interval_ms: int = 1000, control_topic: str = "control-iceberg",
                        auto_create: bool = False) -> Dict[str, str]:
    """The sink's configuration: ``topics`` (raw values, no schema) into ``table``, committing every
    ``commit_interval_ms``, in kafkarec's ``iceberg-kafka-connect`` layout
    (:mod:`kafkarec.lakehouse.layouts`): the sink converts only structs and maps, so a raw value is
    hoisted into a struct's ``value`` field (HoistField), after the tombstones are dropped (the sink
    writes no row for a null value, and a hoisted null would not be null any more), and
    ``KafkaMetadataTransform`` adds the ``_kafka_metadata_*`` fields.  ``auto_create``: the sink
    creates the table from the first records' schema (a table the live writer owns)."""
    return {
        "connector.class": SINK_CLASS,
        "tasks.max": str(tasks),
        "topics": ",".join(topics),
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "iceberg.tables": table,
        "iceberg.tables.auto-create-enabled": str(auto_create).lower(),
        "iceberg.control.topic": control_topic,
        "iceberg.control.commit.interval-ms": str(commit_interval_ms),
        "iceberg.control.commit.timeout-ms": "30000",
        # the coordinator's control-topic group (connect-<name>-coord) has no offset before its first
        # table commit, and the sink's default is to start it at the log end: a coordinator elected
        # late or again (tasks joining one by one) skips the workers' first DataWritten events, whose
        # source offsets are already committed, and those rows never reach the table (Iceberg's
        # open PR #18006); from the earliest, the table's snapshot offsets drop what it committed
        "iceberg.kafka.auto.offset.reset": "earliest",
        "predicates": "tombstone",
        "predicates.tombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
        "transforms": "dropTombstones,hoist,kafka",
        "transforms.dropTombstones.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.dropTombstones.predicate": "tombstone",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "value",
        "transforms.kafka.type": METADATA_TRANSFORM,
        **catalog.sink_properties(),
    }


@pytest.fixture(scope="session")
def iceberg_catalog(postgres_server, tmp_path_factory):
    """:class:`IcebergCatalog` on the session's PostgreSQL, its warehouse in the session's tmp dir."""
    postgres_server.sql("CREATE DATABASE iceberg;")
    from support.servers.postgres_server import USER
    return IcebergCatalog(postgres_server.port, USER, str(tmp_path_factory.mktemp("iceberg-warehouse")))


@pytest.fixture(scope="session")
def connect_worker(kafka_broker, tmp_path_factory):
    """A started :class:`ConnectWorker` on the session's broker; stopped at the session's end."""
    worker = ConnectWorker(kafka_broker.bootstrap, base_dir=str(tmp_path_factory.mktemp("connect")))
    try:
        worker.start()
        yield worker
    finally:
        worker.close()
