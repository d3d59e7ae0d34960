"""What ``dump``, ``verify`` and ``stats`` share: exit codes, JSON lines, error
lines and dicts (built here once), Java-style rendering of batch fields, record
payload encodings, the progress bar and human-readable sizes.

Batch fields are asked from the core (``batch.compression``,
``batch.timestamp_type``); only their spelling in Kafka's tools lives here.
"""
from __future__ import annotations

import base64
import json
import time
from typing import Optional, TextIO

from kafkarec._core import ReadOptions, java_utf8_decode
from kafkarec.enums import TimestampType
from kafkarec.errors import DecodeError
from kafkarec.log.checks import Problem

__all__ = ["EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "INT_MAX", "jdump", "jbool", "optional_long",
           "codec_name", "ts_name", "java_string", "PAYLOAD_RENDERERS", "PAYLOAD_ENCODINGS",
           "error_line", "error_dict", "problem_line", "problem_dict", "Progress", "human"]

# Exit statuses of every kafkarec command (see kafkarec.cli).
EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
# Integer.MAX_VALUE: the default of --max-bytes, which means "the whole file".
INT_MAX = 2**31 - 1


# --- Java-style rendering ----------------------------------------------------------

_TS_NAMES = {TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType", TimestampType.CREATE_TIME: "CreateTime",
             TimestampType.LOG_APPEND_TIME: "LogAppendTime"}


def read_options(args) -> ReadOptions:
    """How every command reads segments: Kafka's file framing and the command line's
    :class:`ReadOptions` (``--strict``, ``--no-verify-crc``, ``--max-decompressed-bytes``;
    same names, same meanings).  A bad CRC is reported by the command (``crc_valid``), not
    fatal; framing never checks CRCs."""
    return ReadOptions(file_rules=True, verify_crc=args.verify_crc, strict=args.strict,
                       max_decompressed_bytes=args.max_decompressed_bytes)


def jbool(v) -> str:
    return "true" if v else "false"


def optional_long(v: Optional[int]) -> str:
    """Java's OptionalLong.toString()."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def codec_name(b) -> str:
    """The batch's codec as Kafka's tools print it (CompressionType.name: ``none``, ``gzip``...)."""
    try:
        return b.compression.name.lower()
    except DecodeError as e:
        # Codec ids 5-7: the core refuses to name them; show what it says.
        return f"unknown ({e.reason})"


def ts_name(b) -> str:
    """The batch's timestamp type, named as Java's TimestampType.toString()."""
    return _TS_NAMES[b.timestamp_type]


def java_string(data: bytes) -> str:
    """``new String(bytes, UTF_8)``, as kafka-dump-log renders a payload: the core's Java
    decoding rule (each malformed sequence is ONE U+FFFD sized as Java sizes it; Python's
    ``decode("utf-8", "replace")`` gives three for ``ed a0 80``)."""
    return java_utf8_decode(data)


#: ``--payload-encoding``: how record bytes are shown (java is kafka-dump-log's
#: lossy rendering; base64 and hex give the exact bytes).
PAYLOAD_RENDERERS = {
    "java": java_string,
    "utf8": lambda data: data.decode("utf-8", "backslashreplace"),
    "base64": lambda data: base64.b64encode(data).decode("ascii"),
    "hex": lambda data: data.hex(),
}
PAYLOAD_ENCODINGS = tuple(PAYLOAD_RENDERERS)


def jdump(obj) -> str:
    # Jackson's ObjectNode.toString(): compact, non-ASCII kept as is.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# --- errors and problems: one shape for text and one for JSON ---------------------

def error_line(path: str, e: Exception, position: Optional[int] = None) -> str:
    """``FILE: position P: reason`` for a decode error met reading ``path``; P defaults to ``position``."""
    return f"{path}: position {getattr(e, 'position', position)}: {getattr(e, 'reason', e)}"


def error_dict(message: str, path: Optional[str] = None, position: Optional[int] = None) -> dict:
    """The JSON object of an error line (``dump --json``)."""
    return {"type": "error", "file": path, "position": position, "message": message}


def problem_line(p: Problem) -> str:
    """``[severity: ]FILE: position P, offset O: reason`` (errors carry no severity prefix)."""
    where = []
    if p.position is not None:
        where.append(f"position {p.position}")
    if p.offset is not None:
        where.append(f"offset {p.offset}")
    loc = f"{p.path}: {', '.join(where)}: " if where else f"{p.path}: "
    prefix = "" if p.severity == "error" else f"{p.severity}: "
    return prefix + loc + p.reason


def problem_dict(p: Problem) -> dict:
    """The JSON object of a problem (``verify --json``)."""
    return {"type": "problem", "severity": p.severity, "file": p.path, "position": p.position,
            "offset": p.offset, "reason": p.reason}


# --- progress and sizes --------------------------------------------------------------

class Progress:
    """A one-line progress bar on stderr, drawn only on a terminal and only for long scans."""

    def __init__(self, total: int, stream: TextIO, *, enabled: bool = True, label: str = "scanning",
                 delay: float = 0.5):
        self.total = max(total, 1)
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.enabled = enabled and bool(isatty and isatty())
        self.label = label
        self.start = time.monotonic()
        self.delay = delay
        self.last_draw = 0.0
        self.drawn = False
        self.done = 0

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or now - self.last_draw < 0.1:
            return
        self.last_draw = now
        frac = min(1.0, done / self.total)
        rate = done / max(now - self.start, 1e-9) / 2**20
        bar = "#" * int(frac * 30)
        self.stream.write(f"\r{self.label} [{bar:<30}] {frac * 100:5.1f}% "
                          f"{done / 2**20:,.1f}/{self.total / 2**20:,.1f} MiB {rate:,.0f} MiB/s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()
            self.drawn = False


def human(n: float) -> str:
    """A byte count for people: ``512 B``, ``1.5 KiB``..."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
