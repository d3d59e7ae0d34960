"""Java's ``Properties.load`` as an oracle: one JVM (tests/java/PropertiesOracle.java) kept running
and asked many texts per call, for tests/test_java_properties.py and fuzz/fuzz_properties.py.

:meth:`PropertiesOracle.ask` writes a batch from a thread while it reads the answers, so neither
pipe can stall however large the batch."""
from __future__ import annotations

import os
import struct
import subprocess
import threading
from typing import Dict, List, Sequence, Union

from support import java
from support.paths import TESTS

SOURCE = os.path.join(TESTS, "java", "PropertiesOracle.java")

#: What Java read from one text: its keys and values, or the message of the
#: IllegalArgumentException ``Properties.load`` threw.
Answer = Union[Dict[str, str], "Refused"]


class Refused(str):
    """The message of the exception Java threw for a text."""


class PropertiesOracle:
    def __init__(self):
        self._proc = subprocess.Popen(java.compiled(SOURCE).command(), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE)

    def ask(self, texts: Sequence[str]) -> List[Answer]:
        """Java's reading of each text (no lone surrogates: the texts go as UTF-8), in order."""
        payload = b"".join(struct.pack(">i", len(b)) + b for b in (t.encode("utf-8") for t in texts))
        writer = threading.Thread(target=self._write, args=(payload,), daemon=True)
        writer.start()
        try:
            return [self._answer() for _ in texts]
        finally:
            writer.join()

    def _write(self, payload: bytes) -> None:
        try:
            self._proc.stdin.write(payload)
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass    # the JVM is gone: the reading side says so

    def _read(self, n: int) -> bytes:
        data = self._proc.stdout.read(n)
        if len(data) != n:
            raise RuntimeError(f"PropertiesOracle stopped answering (exit status {self._proc.poll()})")
        return data

    def _int(self) -> int:
        return struct.unpack(">i", self._read(4))[0]

    def _chars(self) -> str:
        # Java's code units; a pair of surrogates is one character, as Python keeps it
        return self._read(self._int()).decode("utf-16-be", "surrogatepass")

    def _answer(self) -> Answer:
        count = self._int()
        if count < 0:
            return Refused(self._read(self._int()).decode("utf-8"))
        return dict((self._chars(), self._chars()) for _ in range(count))

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=30)
        self._proc.stdout.close()
