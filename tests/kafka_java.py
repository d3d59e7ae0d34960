"""Kafka's own record classes as a test oracle (../shared/tools/kafka-java).

``decode_many(blobs)`` reads each buffer exactly as Kafka's consumer does (one JVM
for all of them) and returns its JSON answers; ``write(spec)`` returns bytes
written by Kafka's MemoryRecordsBuilder.  The tool needs Java 17 and ../shared: a
test that asks for it skips on a clone without ../shared and fails on CI
(:func:`paths.require_shared`).
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile

from paths import SHARED, require_shared

TOOL = os.path.join(SHARED, "tools", "kafka-java", "kafka-java")


def _run(args, **kw) -> subprocess.CompletedProcess:
    require_shared("Kafka's reader (tools/kafka-java)", TOOL)
    return subprocess.run([TOOL, *args], capture_output=True, text=True, check=True, timeout=600, **kw)


def decode_many(blobs, *, wrapper_crc: bool = False, command: str = "decode") -> list:
    """Kafka's answer (a dict) for each buffer in ``blobs``, in order."""
    with tempfile.TemporaryDirectory(prefix="kafka-java-") as tmp:
        names = []
        for i, blob in enumerate(blobs):
            name = os.path.join(tmp, f"{i:06d}.bin")
            with open(name, "wb") as fh:
                fh.write(bytes(blob))
            names.append(name)
        args = [command] + (["--wrapper-crc"] if wrapper_crc else [])
        out = _run(args, input="\n".join(names) + "\n").stdout
    answers = {}
    for line in out.splitlines():
        obj = json.loads(line)
        answers[obj["file"]] = obj
    return [answers[n] for n in names]


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
