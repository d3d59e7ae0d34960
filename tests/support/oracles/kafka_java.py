"""Kafka's own record classes as a test oracle (../shared/tools/kafka-java).

``decode_many(blobs)`` reads each buffer exactly as Kafka's consumer does and returns
its JSON answers: the tool answers file name after file name on stdin, so one JVM (per
reading mode) serves every call of a pytest process, ended at exit.  ``write(spec)``
returns bytes written by Kafka's MemoryRecordsBuilder (one JVM a spec).  The tool needs
Java 17 and ../shared: a test that asks for it skips on a clone without ../shared and
fails on CI (:func:`paths.require_shared`).
"""
from __future__ import annotations

import atexit
import base64
import json
import os
import subprocess
import tempfile

from support.paths import SHARED, require_shared

TOOL = os.path.join(SHARED, "tools", "kafka-java", "kafka-java")


def _run(args, **kw) -> subprocess.CompletedProcess:
    require_shared("Kafka's reader (tools/kafka-java)", TOOL)
    return subprocess.run([TOOL, *args], capture_output=True, text=True, check=True, timeout=600, **kw)


_READERS = {}  # (command, wrapper_crc) -> the tool's JVM reading file names from stdin


def _reader(command: str, wrapper_crc: bool):
    require_shared("Kafka's reader (tools/kafka-java)", TOOL)
    from support.java import LineOracle  # here: a clone without ../shared skips above first
    key = (command, wrapper_crc)
    if key not in _READERS or not _READERS[key].running:  # (a reader killed over its time is replaced)
        reader = LineOracle([TOOL, command, *(["--wrapper-crc"] if wrapper_crc else [])], "kafka-java")
        atexit.register(reader.close)
        _READERS[key] = reader
    return _READERS[key]


def decode_many(blobs, *, wrapper_crc: bool = False, command: str = "decode") -> list:
    """Kafka's answer (a dict) for each buffer in ``blobs``, in order."""
    reader = _reader(command, wrapper_crc)
    with tempfile.TemporaryDirectory(prefix="kafka-java-") as tmp:
        names = []
        for i, blob in enumerate(blobs):
            name = os.path.join(tmp, f"{i:06d}.bin")
            with open(name, "wb") as fh:
                fh.write(bytes(blob))
            names.append(name)
        answers = [json.loads(line) for line in reader.ask(names, timeout=600)]
    assert [a["file"] for a in answers] == names, answers
    return answers


def write(spec: dict) -> bytes:
    """Batches written by Kafka's MemoryRecordsBuilder from a SPEC (see the tool's README)."""
    with tempfile.TemporaryDirectory(prefix="kafka-java-") as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.bin")
        with open(spec_path, "w") as fh:
            json.dump(spec, fh)
        answer = json.loads(_run(["write", spec_path, out_path]).stdout.splitlines()[-1])
        if "error" in answer:
            raise ValueError(f"Kafka's writer refused the spec: {answer['error']}")
        with open(out_path, "rb") as fh:
            return fh.read()


def b64(data) -> str | None:
    return None if data is None else base64.b64encode(bytes(data)).decode()
