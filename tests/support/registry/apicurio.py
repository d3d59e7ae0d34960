"""A real Schema Registry for the tests: Apicurio Registry 2.4.2 (in-memory storage), spoken to
through its Confluent-compatible API (``/apis/ccompat/v7``), from ``jvm/apicurio`` (Quarkus's build
step around Apicurio's jar from Maven Central: ``scripts/jvm.sh`` builds it once into ``.cache/jvm``).

* ``apicurio_registry`` -- a started :class:`ApicurioRegistry` on 127.0.0.1 (``.url``: the
  ccompat base a ``--target-registry`` takes), one per test session (a component of
  tests/support/lanes.py: its tests share one worker), stopped at the session's end.  The tests
  share it, so each uses subjects of its own and reads the ids the registry gave (``.version``)
  instead of assuming them.

What it does not do, and where the tests use tests/support/registry/registry_server.py's stand-in instead:
the mode API (``GET/PUT /mode``: 404, "Operation not supported"), so no IMPORT mode; against it a
restore takes the target's ids (``kept`` false).  It also takes an ``id`` in a registration body
without complaint and gives its own."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Optional

import pytest

from support.brokers.kafka_broker import die_with_parent

#: the JVM's flags: a short-lived test server (C1 only, the serial collector: its start is most of
#: its CPU)
JVM_FLAGS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
             "-Djava.awt.headless=true"]
CCOMPAT = "/apis/ccompat/v7"


class ApicurioError(RuntimeError):
    pass


class ApicurioRegistry:
    def __init__(self, base_dir: str, start_timeout: float = 120.0, stop_timeout: float = 20.0) -> None:
        self.base_dir = base_dir
        self.log = os.path.join(base_dir, "apicurio.log")
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self.proc: Optional[subprocess.Popen] = None
        self.port: Optional[int] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{CCOMPAT}"

    def start(self) -> "ApicurioRegistry":
        from support.jvm import classpath
        jar = classpath("jvm/apicurio")
        os.makedirs(self.base_dir, exist_ok=True)
        out = open(self.log, "ab")
        try:
            # port 0: Quarkus binds a free port and logs it (no race with another server's pick)
            self.proc = subprocess.Popen(
                ["java", *JVM_FLAGS, "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=0",
                 "-Dquarkus.log.console.color=false", "-jar", jar],
                cwd=self.base_dir, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=die_with_parent)
        finally:
            out.close()
        try:
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def _tail(self) -> str:
        try:
            with open(self.log, errors="replace") as fh:
                return fh.read()[-4000:]
        except OSError:
            return ""

    def _wait_ready(self) -> None:
        """Until Quarkus logs the port it listens on and the ccompat API answers; bounded."""
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise ApicurioError(f"Apicurio Registry exited with {self.proc.returncode} while starting:\n"
                                    + self._tail())
            if time.monotonic() > deadline:
                raise ApicurioError(f"Apicurio Registry did not answer within {self.start_timeout:.0f} s:\n"
                                    + self._tail())
            if self.port is None:
                m = re.search(r"Listening on: http://127\.0\.0\.1:(\d+)", self._tail())
                if m:
                    self.port = int(m.group(1))
            if self.port is not None:
                try:
                    self.call("GET", "/subjects")
                    return
                except OSError:
                    pass
            time.sleep(0.2)

    def call(self, method: str, path: str, body=None):
        """One call of the ccompat API; its JSON answer (an HTTP error raises)."""
        req = urllib.request.Request(self.url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode())
        req.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def version(self, subject: str, version: int = 1) -> dict:
        """``subject``'s ``version`` as the registry holds it (``id``, ``schema``, ``references``)."""
        return self.call("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/{version}")

    def versions(self, subject: str) -> list:
        return self.call("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions")

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=self.stop_timeout)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        from support.procs import kill_group
        if proc.poll() is None:
            kill_group(proc)


@pytest.fixture(scope="session")
def apicurio_registry(tmp_path_factory):
    registry = ApicurioRegistry(str(tmp_path_factory.mktemp("apicurio")))
    try:
        registry.start()
        yield registry
    finally:
        registry.close()
