"""Java programs of the tests (``tests/java/*.java``) compiled once, then run with ``java -cp``.

``java X.java`` (the source launcher) compiles the source on every launch: a second or more each
time, and more for a source on a long classpath.  :func:`compiled` runs ``javac`` once into
``.cache/java-classes/<name>-<hash>/``, the hash covering the source, the classpath and the JDK,
so a changed source or JDK compiles again and every later run (and session) reuses the classes.
Concurrent pytest processes are safe: each compiles into a fresh folder and renames it into
place; the first rename wins and the others use its classes.

:class:`LineOracle` keeps one JVM program running for many requests, one answer line per
request line, so a test asks many cases of one JVM.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import List, Sequence

from support.paths import ROOT

CLASSES = os.path.join(ROOT, ".cache", "java-classes")

# As the source launcher compiles: no annotation processing (a jar on the classpath may carry a
# processor), the sources are UTF-8.
JAVAC_FLAGS = ("-encoding", "UTF-8", "-proc:none", "-nowarn")
# javac's own JVM: a compile is too short for the C2 compiler and the default (G1) collector to pay
# back their threads (measured on KafkaTools.java: 3.0 -> 1.6 CPU-s); the classes are the same.
JAVAC_JVM = ("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC")


@dataclass(frozen=True)
class Jdk:
    java: str
    javac: str
    release: str  # the JDK's ``release`` file (vendor, version), or ``java -version``'s text

    @property
    def major(self) -> int:
        """17 for "17.0.15", 8 for "1.8.0_402"."""
        m = re.search(r'JAVA_VERSION="(\d+)(?:\.(\d+))?|version "(\d+)(?:\.(\d+))?', self.release)
        if not m:
            return 0
        major, minor = m.group(1) or m.group(3), m.group(2) or m.group(4)
        return int(minor or 0) if major == "1" else int(major)


@functools.lru_cache(maxsize=None)
def jdk(java: str = "java") -> Jdk:
    """The JDK of ``java`` (a name on PATH or a path): its ``javac`` beside it and its identity."""
    path = shutil.which(java)
    if path is None:
        raise FileNotFoundError(f"{java} is not installed")
    bindir = os.path.dirname(os.path.realpath(path))
    javac = os.path.join(bindir, "javac")
    if not os.access(javac, os.X_OK):
        raise FileNotFoundError(f"no javac beside {path} (a JDK is needed, not only a runtime)")
    release = os.path.join(os.path.dirname(bindir), "release")
    if os.path.isfile(release):
        with open(release, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    else:  # a JDK without the file: ask it (one short JVM)
        text = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=60).stderr
    return Jdk(path, javac, text)


@dataclass(frozen=True)
class Program:
    """A compiled Java program: ``command(args)`` runs its main class."""
    java: str
    classpath: str  # the compiled classes first, then the jars
    main: str

    def command(self, *args: str, jvm_flags: Sequence[str] = ()) -> List[str]:
        return [self.java, *jvm_flags, "-cp", self.classpath, self.main, *args]


def compiled(source: str, classpath: str = "", java: str = "java") -> Program:
    """``source`` (one file, its main class named as the file) compiled by the JDK of ``java``
    against ``classpath`` (jars joined by ``:``), once for every process and session."""
    tools = jdk(java)
    with open(source, "rb") as fh:
        text = fh.read()
    key = hashlib.sha256(b"\0".join([text, classpath.encode(), tools.release.encode(),
                                     " ".join(JAVAC_FLAGS).encode()])).hexdigest()[:16]
    main = os.path.splitext(os.path.basename(source))[0]
    target = os.path.join(CLASSES, f"{main}-{key}")
    if not os.path.isdir(target):
        os.makedirs(CLASSES, exist_ok=True)
        building = tempfile.mkdtemp(prefix=f".{main}-", dir=CLASSES)
        try:
            proc = subprocess.run([tools.javac, *JAVAC_JVM, *JAVAC_FLAGS, *(["-cp", classpath] if classpath else []),
                                   "-d", building, source], capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"javac {source} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
            try:
                os.rename(building, target)
            except OSError:
                if not os.path.isdir(target):  # not another process's classes: a real failure
                    raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return Program(tools.java, os.pathsep.join(p for p in (target, classpath) if p), main)


class LineOracle:
    """One JVM (started by ``command``, called ``name`` in errors) that answers each request line
    with one line, flushed, kept for many requests; :meth:`close` ends it (EOF on stdin)."""

    def __init__(self, command: Sequence[str], name: str):
        self.name = name
        self._killed_after = None  # the time limit of the ask that ran over it
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr)

    @property
    def running(self) -> bool:
        return self._proc.poll() is None

    def ask(self, requests: Sequence[str], timeout: float) -> List[str]:
        """One answer per request, in order; the JVM is killed when they take over ``timeout`` s.
        A thread writes the requests while this one reads the answers: neither pipe can stall."""
        watchdog = threading.Timer(timeout, self._kill, args=(timeout,))
        writer = threading.Thread(target=self._write, args=(requests,), daemon=True)
        watchdog.start()
        writer.start()
        answers = []
        try:
            for _ in requests:
                answer = self._proc.stdout.readline()
                if not answer.endswith(b"\n"):
                    raise self._died()
                answers.append(answer.decode("utf-8"))
        finally:
            watchdog.cancel()
            writer.join()
        return answers

    def _kill(self, timeout: float) -> None:
        self._killed_after = timeout
        self._proc.kill()

    def _write(self, requests: Sequence[str]) -> None:
        try:
            self._proc.stdin.write(b"".join(r.encode("utf-8") + b"\n" for r in requests))
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # the JVM is gone: the reading side reports it, with its stderr

    def _died(self) -> RuntimeError:
        status = self._proc.wait()
        self._stderr.seek(0)
        tail = self._stderr.read()[-3000:].decode("utf-8", "replace")
        how = f"killed after {self._killed_after} s" if self._killed_after else f"exit status {status}"
        return RuntimeError(f"{self.name} stopped answering ({how}); stderr:\n{tail}")

    def close(self) -> None:
        try:
            self._proc.stdin.close()
            self._proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        self._stderr.close()
