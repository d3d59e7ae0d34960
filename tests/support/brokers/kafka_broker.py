"""A real Apache Kafka broker (KRaft, broker and controller in one JVM) for tests.

Kafka's own jars come from ``jvm/kafka/pom.xml`` through :func:`jvm.classpath`; nothing
is vendored.  :class:`KafkaBroker` formats the storage with Kafka's ``StorageTool``,
starts ``kafka.Kafka`` on 127.0.0.1 with free ports and its log dir in a temporary
folder, waits (bounded) until it answers, and stops it with SIGTERM (Kafka's clean
shutdown, bounded) and then SIGKILL.  Every broker still running when the interpreter
exits is killed (atexit), and the JVM gets SIGKILL if the Python process that started it
dies (PR_SET_PDEATHSIG), so nothing is left behind even when a test fails or the run is killed.
With ``tiered_storage=True`` the broker runs Kafka's ``LocalTieredStorage`` (kafka-storage's
test jar) under ``remote_dir``: a topic created with ``remote.storage.enable`` has its closed
segments copied there and recorded in ``__remote_log_metadata``.

    with KafkaBroker() as broker:          # started
        broker.bootstrap                   # "127.0.0.1:PORT"
        broker.log_dir                     # the broker's log.dirs (one folder)
        broker.stop()                      # clean shutdown: the log dir is final
        broker.start()                     # same ports, same data

The session fixture ``kafka_broker`` (tests/support/brokers/broker.py) is one such broker.
Kafka's tools run from the same classpath, one after another in one JVM per classpath
(:class:`KafkaTools`, ``tests/java/KafkaTools.java``): :func:`run_tool`, :func:`dump_log`
(``kafka-dump-log``), :func:`metadata_image` (Kafka's metadata image of a ``__cluster_metadata``
log: ``tests/java/MetadataImageOracle.java``), and StorageTool's ``format`` before a broker
starts.  The Java sources the broker tests run are compiled once (``support.java.compiled``).
"""
from __future__ import annotations

import atexit
import base64
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from typing import Dict, List, Optional, Sequence

from support import jvm
from support.paths import TESTS
from support.java import compiled
from support.net import free_ports

KAFKA_MODULE = "jvm/kafka"
DUMP_LOG_MAIN = "org.apache.kafka.tools.DumpLogSegments"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
SERVER_MAIN = "kafka.Kafka"

#: JVM flags for the broker: small heap, quick start (the tests move little data: the quick
#: compiler alone starts it in about half the time on 2 cores).
BROKER_JVM_FLAGS = ["-Xms128m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                    "-Djava.awt.headless=true"]
#: Log4j's configuration for the JVMs that run Kafka's tools and clients (no logging).
QUIET_LOG4J_FLAG = "-Dlog4j2.configurationFile=" + os.path.join(TESTS, "broker", "quiet-log4j2.properties")
#: JVM flags of the tools' JVM (:class:`KafkaTools`).
TOOL_JVM_FLAGS = ["-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m",
                  QUIET_LOG4J_FLAG, "-Dfile.encoding=UTF-8"]
#: The Java sources the broker tests run (each compiled once: ``support.java.compiled``).
TOOLS_SOURCE = os.path.join(TESTS, "java", "KafkaTools.java")
PRODUCER_SOURCE = os.path.join(TESTS, "java", "BrokerProducer.java")
COORDINATOR_SOURCE = os.path.join(TESTS, "java", "CoordinatorRecords.java")
METADATA_IMAGE_SOURCE = os.path.join(TESTS, "java", "MetadataImageOracle.java")

#: Broker settings for fast single-node tests (each may be overridden by ``overrides``).
DEFAULT_CONFIG: Dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "2",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "2",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "2",     # 50 by default: 50 folders for a few records
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "1000",
    "log.segment.bytes": str(1 << 20),          # Kafka 4's smallest; topics go lower with internal.segment.bytes
    "log.cleaner.backoff.ms": "200",
    "log.cleaner.dedupe.buffer.size": str(4 << 20),
    "log.cleaner.threads": "1",
    "log.retention.check.interval.ms": "500",
    "log.segment.delete.delay.ms": "0",
    "file.delete.delay.ms": "0",
    "log.flush.offset.checkpoint.interval.ms": "1000",
    # deleteRecords' log start offsets reach log-start-offset-checkpoint within a second, not a minute
    "log.flush.start.offset.checkpoint.interval.ms": "1000",
    "log.initial.task.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
}


def tiered_storage_config(remote_dir: str) -> Dict[str, str]:
    """Broker settings for Kafka's ``LocalTieredStorage`` under ``remote_dir`` (kept when the
    broker stops, so a restarted broker and a copy of its log dir find their remote segments),
    ``__remote_log_metadata`` with one partition, and a remote log manager that copies closed
    segments within a fraction of a second."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "rsm.config.dir": remote_dir,
        "rsm.config.delete.on.close": "false",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
        "remote.log.manager.task.interval.ms": "300",
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
    }


_LIVE: "weakref.WeakSet[KafkaBroker]" = weakref.WeakSet()
#: The tools' JVM of each classpath (:func:`tools`).
_TOOLS: Dict[str, "KafkaTools"] = {}


def _kill_all_live() -> None:
    for broker in list(_LIVE):
        broker._kill()
    for server in list(_TOOLS.values()):
        server.close()


atexit.register(_kill_all_live)


def die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the process that started it dies (Linux's
    PR_SET_PDEATHSIG), so a test run killed outright leaves no broker behind either."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)      # PR_SET_PDEATHSIG
    except Exception:
        pass


def random_cluster_id() -> str:
    """A Kafka ``Uuid`` string: 16 random bytes, URL-safe base64 without padding.

    Like Kafka's ``Uuid.randomUuid`` it never starts with ``-``: command lines (StorageTool's
    ``-t``) would read such an id as an option (1 run in 64 failed that way in CI).
    """
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def write_log4j2(path: str, log_file: str, levels: Dict[str, str]) -> None:
    """A Log4j 2 configuration at ``path`` for a Kafka JVM (a broker, a Connect worker): everything
    at INFO into ``log_file``, and ``levels`` per logger name."""
    with open(path, "w") as fh:
        fh.write("status = warn\n"
                 "appender.file.type = File\n"
                 "appender.file.name = FILE\n"
                 f"appender.file.fileName = {log_file}\n"
                 "appender.file.layout.type = PatternLayout\n"
                 "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
                 "rootLogger.level = INFO\n"
                 "rootLogger.appenderRef.file.ref = FILE\n")
        for i, (name, level) in enumerate(levels.items()):
            fh.write(f"logger.l{i}.name = {name}\nlogger.l{i}.level = {level}\n")


def file_tail(path: str, lines: int = 60) -> str:
    """The last ``lines`` lines of a JVM's log file, for an error message."""
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return f"(no {os.path.basename(path)})"


# Files a running broker writes and then renames or removes (checkpoints are written
# to ``<name>.tmp`` and renamed; deleted and cleaned segments pass through suffixes).
# A copy of a live folder leaves them out: listed one moment, gone the next.
_TRANSIENT_SUFFIXES = (".tmp", ".deleted", ".cleaned", ".swap")


def copy_sparse(src: str, dest: str) -> None:
    """``shutil.copy2``, keeping the holes: a live broker's index files are preallocated sparse
    (``segment.index.bytes``, 10 MiB each by default), and a plain copy writes their zeros,
    ~20 MiB a partition."""
    with open(src, "rb") as a, open(dest, "wb") as b:
        size = os.fstat(a.fileno()).st_size
        at = 0
        while at < size:
            try:
                start = os.lseek(a.fileno(), at, os.SEEK_DATA)
            except OSError:       # ENXIO: only a hole from here to the end
                break
            end = os.lseek(a.fileno(), start, os.SEEK_HOLE)
            a.seek(start)
            b.seek(start)
            left = end - start
            while left > 0:
                chunk = a.read(min(left, 1 << 20))
                if not chunk:     # the file shrank while copied: what was read is the copy
                    break
                b.write(chunk)
                left -= len(chunk)
            at = end
        b.truncate(size)
    shutil.copystat(src, dest)


def copy_live_dir(src: str, dest: str) -> str:
    """Copy a folder a running broker may be writing, without its transient files.

    ``shutil.copytree`` lists the folder first and copies after, so a checkpoint's
    ``.tmp`` the broker renames in between failed the copy with FileNotFoundError; a file
    gone between the listing and its copy is left out."""
    def copy_unless_gone(a: str, b: str) -> None:
        try:
            copy_sparse(a, b)
        except FileNotFoundError:
            # renamed or deleted by the broker since the listing (a segment turned .deleted):
            # what the copy holds is the folder after that, as a reader finds it then
            if os.path.exists(a):
                raise
    return shutil.copytree(
        src, dest, ignore=lambda _dir, names: [n for n in names if n.endswith(_TRANSIENT_SUFFIXES)],
        copy_function=copy_unless_gone)


class KafkaBrokerError(RuntimeError):
    """The broker did not format, start or stop; the message ends with its log's tail."""


class KafkaBroker:
    """One KRaft node (broker + controller) on 127.0.0.1 for tests.

    ``base_dir``: the folder to work in (a fresh temporary folder by default, removed by
    :meth:`close` unless ``keep=True``).  ``overrides``: server.properties entries that
    replace or add to :data:`DEFAULT_CONFIG`.  ``tiered_storage``: Kafka's LocalTieredStorage
    in ``remote_dir`` (``base_dir/remote``), see :func:`tiered_storage_config`.
    """

    def __init__(self, base_dir: Optional[str] = None, *, overrides: Optional[Dict[str, str]] = None,
                 start_timeout: float = 90.0, stop_timeout: float = 45.0, keep: bool = False,
                 classpath: Optional[str] = None, tiered_storage: bool = False):
        self.classpath = classpath if classpath is not None else jvm.classpath(KAFKA_MODULE)
        self._own_dir = base_dir is None
        self.base_dir = base_dir or tempfile.mkdtemp(prefix="kafkarec-broker-")
        self.keep = keep
        self.log_dir = os.path.join(self.base_dir, "data")
        self.remote_dir = os.path.join(self.base_dir, "remote") if tiered_storage else None
        self.server_log = os.path.join(self.base_dir, "server.log")
        self.properties_file = os.path.join(self.base_dir, "server.properties")
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.port, self.controller_port = free_ports(2)
        self.cluster_id = random_cluster_id()
        self.config = dict(DEFAULT_CONFIG)
        self.config.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "log.dirs": self.log_dir,
        })
        if self.remote_dir is not None:
            self.config.update(tiered_storage_config(self.remote_dir))
        self.config.update(overrides or {})
        #: every log dir (``log.dirs``: one, or several under JBOD); ``log_dir`` is the first
        self.log_dirs = self.config["log.dirs"].split(",")
        self.proc: Optional[subprocess.Popen] = None
        self._formatted = False

    # --- addresses -------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"``: the PLAINTEXT listener for clients."""
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def partition_dir(self, topic: str, partition: int = 0) -> str:
        return os.path.join(self.log_dir, f"{topic}-{partition}")

    # --- lifecycle -------------------------------------------------------------------

    def _write_files(self) -> None:
        for d in self.log_dirs:
            os.makedirs(d, exist_ok=True)
        with open(self.properties_file, "w") as fh:
            for key, value in self.config.items():
                fh.write(f"{key}={value}\n")
        write_log4j2(os.path.join(self.base_dir, "log4j2.properties"), self.server_log,
                     {"kafka": "INFO", "state.change.logger": "WARN"})

    def _log_jvm_flags(self) -> List[str]:
        return [f"-Dlog4j2.configurationFile={os.path.join(self.base_dir, 'log4j2.properties')}",
                f"-Dkafka.logs.dir={self.base_dir}"]

    def log_tail(self, lines: int = 60) -> str:
        return file_tail(self.server_log, lines)

    def format(self) -> None:
        """Format the storage (meta.properties, the bootstrap metadata) with StorageTool."""
        self._write_files()
        proc = self.run_tool(STORAGE_TOOL_MAIN, "format", "-t", self.cluster_id,
                             "-c", self.properties_file, "--ignore-formatted", check=False)
        if proc.returncode != 0:
            raise KafkaBrokerError(f"StorageTool format failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        self._formatted = True

    def start(self) -> "KafkaBroker":
        """Start (formatting the storage the first time) and wait until the broker answers."""
        if self.running:
            return self
        log_start = self.launch()
        try:
            self._wait_ready(log_start)
        except BaseException:
            self._kill()
            raise
        return self

    def launch(self) -> int:
        """Start the JVM (formatting the storage the first time) without waiting for it; returns
        where this start's lines begin in server.log (for :meth:`_wait_ready`).  A node of a
        several-voter quorum (:class:`kafka_cluster.KafkaCluster`) answers only once its peers run."""
        if not self._formatted:
            self.format()
        try:
            log_start = os.path.getsize(self.server_log)   # the log of earlier starts goes on above
        except OSError:
            log_start = 0
        stdout = open(os.path.join(self.base_dir, "stdout.log"), "ab")
        try:
            self.proc = subprocess.Popen(
                ["java", *BROKER_JVM_FLAGS, *self._log_jvm_flags(), "-cp", self.classpath,
                 SERVER_MAIN, self.properties_file],
                stdout=stdout, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=die_with_parent)
        finally:
            stdout.close()
        _LIVE.add(self)
        return log_start

    def _wait_ready(self, log_start: int) -> None:
        """Until the broker logs (in server.log past ``log_start``) that it started (it has
        caught up with the controller, so topics can be created at once) and, with tiered
        storage, that its remote log metadata manager is ready (a broker stopped before that
        can spin in its shutdown until killed), and answers a metadata request; bounded."""
        deadline = time.monotonic() + self.start_timeout
        signs = ["Kafka Server started"]
        if self.remote_dir is not None:
            signs.append("Initialized topic-based RLMM resources successfully")
        started = False
        while True:
            if self.proc.poll() is not None:
                raise KafkaBrokerError(f"the broker exited with {self.proc.returncode} while starting:\n"
                                       + self.log_tail())
            if time.monotonic() > deadline:
                raise KafkaBrokerError(f"the broker did not answer within {self.start_timeout:.0f} s:\n"
                                       + self.log_tail())
            if not started:
                try:
                    with open(self.server_log, errors="replace") as fh:
                        fh.seek(log_start)
                        text = fh.read()
                    started = all(sign in text for sign in signs)
                except OSError:
                    pass
            if started and self._answers():
                return
            time.sleep(0.2)

    def _answers(self) -> bool:
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "socket.timeout.ms": 2000,
                             "log_level": 0})
        try:
            return bool(admin.list_topics(timeout=3).brokers)
        except Exception:
            return False

    def stop(self) -> None:
        """Clean shutdown (SIGTERM, at most ``stop_timeout`` s, then SIGKILL).  After a
        clean stop the log dir is final: the active segments' indexes are trimmed and
        ``.kafka_cleanshutdown`` is written."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self._kill()
                raise KafkaBrokerError(f"the broker did not stop within {self.stop_timeout:.0f} s "
                                       "(killed):\n" + self.log_tail())
        self.proc = None
        _LIVE.discard(self)

    def restart(self) -> "KafkaBroker":
        self.stop()
        return self.start()

    def _kill(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.proc = None
        _LIVE.discard(self)

    def snapshot_stopped(self, dest: str, remote_dest: Optional[str] = None) -> str:
        """Stop cleanly, copy the final log dir to ``dest`` (and the tiered storage to
        ``remote_dest``), start again; returns ``dest``.

        The copy is what a cleanly shut down broker leaves; the broker goes on serving
        the same data afterwards (same ports)."""
        self.stop()
        shutil.copytree(self.log_dir, dest)
        if remote_dest is not None:
            shutil.copytree(self.remote_dir, remote_dest)
        self.start()
        return dest

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self._kill()
            if self._own_dir and not self.keep:
                shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> "KafkaBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self._kill()

    # --- Kafka's tools from the same classpath ----------------------------------------

    def run_tool(self, main: str, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        return run_tool(main, *args, timeout=timeout, check=check, classpath=self.classpath)

    def dump_log(self, files: Sequence[str], *options: str, timeout: float = 120) -> str:
        return dump_log(files, *options, timeout=timeout, classpath=self.classpath)

    def metadata_image(self, folder: str, timeout: float = 120) -> dict:
        return metadata_image(folder, timeout=timeout, classpath=self.classpath)


class KafkaTools:
    """One JVM that runs Kafka's command-line tools (``tests/java/KafkaTools.java``): each
    :meth:`run` calls a tool's ``main`` there, with its stdout and stderr captured as its own
    JVM would print them and the status it exits with; one call at a time."""

    def __init__(self, classpath: str):
        self.classpath = classpath
        self._work = tempfile.mkdtemp(prefix="kafkarec-tools-")
        self._log = os.path.join(self._work, "jvm.log")
        self._lock = threading.Lock()
        with open(self._log, "wb") as log:
            self.proc = subprocess.Popen(
                compiled(TOOLS_SOURCE, classpath).command(jvm_flags=TOOL_JVM_FLAGS),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                preexec_fn=die_with_parent)

    def _log_tail(self) -> str:
        try:
            with open(self._log, errors="replace") as fh:
                return fh.read()[-4000:]
        except OSError:
            return ""

    def run(self, main: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """``main`` with ``args``, like ``java -cp CLASSPATH MAIN ARGS...`` run to its end:
        stdout and stderr as text (UTF-8, newlines kept as printed) and the exit status.
        Relative paths resolve from the folder the JVM started in: give absolute ones."""
        fields = [main, *args]
        if any("\t" in f or "\n" in f for f in fields):
            raise ValueError(f"a tab or newline in {fields!r}: the request is one tab-separated line")
        with self._lock:
            out, err = os.path.join(self._work, "stdout"), os.path.join(self._work, "stderr")
            try:
                self.proc.stdin.write(("\t".join([out, err, *fields]) + "\n").encode())
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass                        # reported below: the JVM is gone
            answer = self._answer(timeout)
            if not answer.startswith("EXIT "):
                self.close()
                raise KafkaBrokerError(f"the tools' JVM gave no answer to {main} {' '.join(args)} "
                                       f"({answer or 'none'}):\n{self._log_tail()}")
            with open(out, "rb") as fh_out, open(err, "rb") as fh_err:
                stdout, stderr = fh_out.read(), fh_err.read()
        return subprocess.CompletedProcess([main, *args], int(answer.split()[1]),
                                           stdout.decode("utf-8", "surrogateescape"),
                                           stderr.decode("utf-8", "surrogateescape"))

    def _answer(self, timeout: float) -> str:
        """The answer line, or "" when the JVM exited or did not answer within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                return "timeout"
            chunk = os.read(self.proc.stdout.fileno(), 256)
            if not chunk:
                return line.decode(errors="replace")
            line += chunk
        return line.decode().strip()

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()         # its end of input: the JVM returns from main
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=30)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        shutil.rmtree(self._work, ignore_errors=True)
        if _TOOLS.get(self.classpath) is self:
            del _TOOLS[self.classpath]


def tools(classpath: Optional[str] = None) -> KafkaTools:
    """The tools' JVM of ``classpath`` (jvm/kafka's by default), started on first use and
    stopped when the interpreter exits."""
    cp = classpath if classpath is not None else jvm.classpath(KAFKA_MODULE)
    server = _TOOLS.get(cp)
    if server is None or not server.running:
        server = _TOOLS[cp] = KafkaTools(cp)
    return server


def run_tool(main: str, *args: str, timeout: float = 120, check: bool = True,
             classpath: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run one of Kafka's command-line tools (a main class) from the resolved jars."""
    proc = tools(classpath).run(main, *args, timeout=timeout)
    if check and proc.returncode != 0:
        raise KafkaBrokerError(f"{main} {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def dump_log(files: Sequence[str], *options: str, timeout: float = 120,
             classpath: Optional[str] = None) -> str:
    """``kafka-dump-log --files F1,F2 OPTIONS...`` (Kafka's DumpLogSegments); its stdout."""
    return run_tool(DUMP_LOG_MAIN, "--files", ",".join(files), *options, timeout=timeout,
                    classpath=classpath).stdout


def metadata_image(folder: str, timeout: float = 120, classpath: Optional[str] = None) -> dict:
    """Kafka's own metadata image of the ``__cluster_metadata-0`` log segments in ``folder``
    (kafka-metadata's ``MetadataDelta`` replaying them; ``tests/java/MetadataImageOracle.java``) in
    the shape of kafkarec's ``ClusterState.state()``, as far as the image holds it."""
    import json
    cp = classpath if classpath is not None else jvm.classpath(KAFKA_MODULE)
    proc = subprocess.run(compiled(METADATA_IMAGE_SOURCE, cp).command(folder, jvm_flags=TOOL_JVM_FLAGS),
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise KafkaBrokerError(f"MetadataImageOracle {folder} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)
