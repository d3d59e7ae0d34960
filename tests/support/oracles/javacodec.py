"""Java codec oracle: genuine Kafka-client compression bytes for the tests.

Kafka producers and consumers compress record batches with snappy-java,
lz4-java, zstd-jni and java.util.zip. Python bindings of the same algorithms
do not always produce (or accept) the same framing, so this module drives
``tests/java/CodecOracle.java`` in one long-lived JVM and lets tests ask it to
compress or decompress bytes exactly as the Java libraries do.

The jars come from the pyspark install in the virtualenv (pyspark ships all
of them); ``KAFKAREC_JAVA_CODEC_JARS`` may point at another directory.

tests/conftest.py registers the ``java_codec`` session fixture; a test asks for it::

    def test_something(java_codec):
        blob = java_codec.compress("lz4-frame", b"payload")
        assert java_codec.decompress("lz4-frame", blob) == b"payload"

The oracle is a required part of the suite: when java, javac or the jars are
missing the fixture fails (it never skips).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import select
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from support.java import compiled
from support.paths import TESTS

JAVA_SOURCE = Path(TESTS) / "java" / "CodecOracle.java"
JARS_ENV = "KAFKAREC_JAVA_CODEC_JARS"

# name -> glob patterns, first match wins. lz4-java moved from org.lz4 to the
# at.yawk.lz4 fork (same jar basename); some distributions prefix the group.
REQUIRED_JARS = {
    "snappy-java": ["snappy-java-*.jar", "*xerial*snappy*.jar"],
    "lz4-java": ["lz4-java-*.jar", "*lz4*lz4-java*.jar"],
    "zstd-jni": ["zstd-jni-*.jar", "*luben*zstd*.jar"],
}

# codec name (as used by compress/decompress) -> protocol op.
COMPRESS_OPS = {
    "snappy-xerial": "snappy-xerial-compress",
    "snappy-raw": "snappy-raw-compress",
    "lz4-frame": "lz4-frame-compress",
    "lz4-frame-broken-hc": "lz4-frame-compress-broken-hc",
    "lz4-java-frame": "lz4-java-frame-compress",
    "zstd": "zstd-compress",
    "gzip": "gzip-compress",
}
DECOMPRESS_OPS = {
    "snappy-xerial": "snappy-xerial-decompress",
    "snappy-raw": "snappy-raw-decompress",
    "lz4-frame": "lz4-frame-decompress",
    "lz4-java-frame": "lz4-java-frame-decompress",
    "zstd": "zstd-decompress",
    "gzip": "gzip-decompress",
}

STATUS_OK = 0
_INT32 = struct.Struct(">i")
_RESPONSE_HEAD = struct.Struct(">ii")

# Start-up flags chosen for fast start (payloads are small, heavy lifting is
# native code) and a bounded heap on the 24 GiB CI machine.
JVM_FLAGS = ["-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx1g"]


class JavaCodecError(Exception):
    """The Java side rejected a request; the message carries Java's exception."""


class JavaCodecUnavailable(JavaCodecError):
    """java, javac or a jar is missing, or the oracle failed to build/start."""


class JavaCodecTimeout(JavaCodecError):
    """A request took too long; the JVM was killed (the next call restarts it)."""


def find_jdk_tools() -> tuple[str, str]:
    """Return (java, javac) from the same JDK: JAVA_HOME first, then PATH."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin")
    javac_on_path = shutil.which("javac")
    if javac_on_path:
        candidates.append(Path(javac_on_path).resolve().parent)
    for bindir in candidates:
        java, javac = bindir / "java", bindir / "javac"
        if os.access(java, os.X_OK) and os.access(javac, os.X_OK):
            return str(java), str(javac)
    raise JavaCodecUnavailable(
        "no JDK found: need both java and javac (set JAVA_HOME or put javac on PATH; "
        "on Debian: apt-get install openjdk-17-jdk-headless)"
    )


def find_jars_dir() -> Path:
    override = os.environ.get(JARS_ENV)
    if override:
        return Path(override)
    # find_spec locates pyspark without importing it (importing is slow).
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise JavaCodecUnavailable(
            f"pyspark is not installed, so its bundled jars are unavailable (or set {JARS_ENV})"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def find_jars(jars_dir: Path | None = None) -> dict[str, Path]:
    jars_dir = jars_dir or find_jars_dir()
    found, missing = {}, []
    for name, patterns in REQUIRED_JARS.items():
        matches: list[str] = []
        for pattern in patterns:
            matches = sorted(glob.glob(str(jars_dir / pattern)))
            if matches:
                break
        if matches:
            found[name] = Path(matches[-1])
        else:
            missing.append(f"{name} ({' or '.join(patterns)})")
    if missing:
        raise JavaCodecUnavailable(f"missing jar(s) in {jars_dir}: {', '.join(missing)}")
    return found


def _format_opt(key: str, value: object) -> str:
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    if not key.isidentifier():
        raise ValueError(f"invalid option name {key!r}")
    if not text or any(ch.isspace() for ch in text):
        raise ValueError(f"option {key}={text!r} must be non-empty without whitespace")
    return f"{key}={text}"


class JavaCodec:
    """Client for one CodecOracle JVM. Thread-safe; one request at a time."""

    def __init__(self, workdir: str | os.PathLike | None = None, *, timeout: float = 60.0,
                 startup_timeout: float = 120.0, jars_dir: Path | None = None):
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.java, _ = find_jdk_tools()  # javac: support.java finds the one beside java
        self.jars = find_jars(jars_dir)
        self._owned_tmp = None
        if workdir is None:
            self._owned_tmp = tempfile.TemporaryDirectory(prefix="kafkarec-javacodec-")
            workdir = self._owned_tmp.name
        self.workdir = Path(workdir)
        self.stderr_path = self.workdir / "jvm-stderr.log"
        self.program = None
        self._proc: subprocess.Popen | None = None
        self._stderr_file = None
        self._lock = threading.Lock()
        self._closed = False
        self.compile_seconds = 0.0
        self.startup_seconds = 0.0
        self.info: dict[str, str] = {}

    # -- lifecycle --------------------------------------------------------

    def compile(self) -> None:
        """javac, once for every session (tests/support/java.py keeps the classes in .cache/)."""
        if not JAVA_SOURCE.is_file():
            raise JavaCodecUnavailable(f"oracle source missing: {JAVA_SOURCE}")
        start = time.monotonic()
        try:
            self.program = compiled(str(JAVA_SOURCE), os.pathsep.join(map(str, self.jars.values())),
                                    java=self.java)
        except subprocess.TimeoutExpired as e:
            raise JavaCodecUnavailable(f"javac timed out after {e.timeout}s") from None
        except (OSError, RuntimeError) as e:
            raise JavaCodecUnavailable(str(e)) from None
        self.compile_seconds = time.monotonic() - start

    def start(self) -> "JavaCodec":
        """Compile (once) and launch the JVM; checks it answers `info`."""
        if self.program is None:
            self.compile()
        self._spawn()
        return self

    def _spawn(self) -> None:
        start = time.monotonic()
        self._stderr_file = open(self.stderr_path, "ab")
        # Native libraries unpack themselves into java.io.tmpdir: keep them in
        # our workdir so they are cleaned up with it.
        native_tmp = self.workdir / "native-tmp"
        native_tmp.mkdir(exist_ok=True)
        try:
            self._proc = subprocess.Popen(
                self.program.command(jvm_flags=[*JVM_FLAGS, f"-Djava.io.tmpdir={native_tmp}"]),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr_file,
                bufsize=0,
            )
        except OSError as e:
            self._stderr_file.close()
            self._stderr_file = None
            raise JavaCodecUnavailable(f"cannot launch {self.java}: {e}") from None
        os.set_blocking(self._proc.stdin.fileno(), False)
        try:
            raw = self._request("info", b"", {}, self.startup_timeout)
        except JavaCodecError as e:
            self._kill()
            raise JavaCodecUnavailable(f"oracle JVM failed to start: {e}") from None
        self.info = dict(
            line.split("=", 1) for line in raw.decode().splitlines() if "=" in line
        )
        self.startup_seconds = time.monotonic() - start

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._proc is not None:
                try:
                    self._proc.stdin.close()  # EOF asks the oracle to exit
                    self._proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    pass
                self._kill()
            if self._owned_tmp is not None:
                self._owned_tmp.cleanup()
                self._owned_tmp = None

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None

    def __enter__(self) -> "JavaCodec":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # -- requests ---------------------------------------------------------

    def compress(self, codec: str, data: bytes, *, timeout: float | None = None, **opts) -> bytes:
        """Compress like the Java library. codec: one of COMPRESS_OPS.

        Options per codec: snappy-xerial block_size=; lz4-frame[-broken-hc]
        level= (9 = Kafka default fast compressor, else HC) block_checksum=;
        lz4-java-frame block_size="64KB"|"256KB"|"1MB"|"4MB",
        block_checksum=, content_checksum=, content_size=; zstd level=
        checksum=; gzip level=.
        """
        if codec not in COMPRESS_OPS:
            raise ValueError(f"unknown codec {codec!r}; known: {sorted(COMPRESS_OPS)}")
        return self.call(COMPRESS_OPS[codec], data, timeout=timeout, **opts)

    def decompress(self, codec: str, data: bytes, *, timeout: float | None = None, **opts) -> bytes:
        """Decompress like the Java library. codec: one of DECOMPRESS_OPS.

        lz4-frame takes hc="standard"|"broken"|"ignore" (default standard).
        snappy-xerial also accepts raw snappy, as SnappyInputStream does.
        """
        if codec not in DECOMPRESS_OPS:
            raise ValueError(f"unknown codec {codec!r}; known: {sorted(DECOMPRESS_OPS)}")
        return self.call(DECOMPRESS_OPS[codec], data, timeout=timeout, **opts)

    def call(self, op: str, data: bytes = b"", *, timeout: float | None = None, **opts) -> bytes:
        """Send one raw protocol request (see CodecOracle.java for the ops)."""
        if not op or any(ch.isspace() for ch in op):
            raise ValueError(f"invalid op {op!r}")
        with self._lock:
            if self._closed:
                raise JavaCodecError("the Java codec oracle is closed")
            if self._proc is None or self._proc.poll() is not None:
                self._kill()  # reap a dead JVM, if any, before starting afresh
                self._spawn()
            return self._request(op, bytes(data), opts, self.timeout if timeout is None else timeout)

    def _request(self, op: str, data: bytes, opts: dict, timeout: float) -> bytes:
        header = " ".join([op, *(_format_opt(k, v) for k, v in opts.items())])
        message = header.encode() + b"\n" + _INT32.pack(len(data)) + data
        deadline = time.monotonic() + timeout
        try:
            self._write_all(message, deadline, op)
            status, length = _RESPONSE_HEAD.unpack(self._read_exact(_RESPONSE_HEAD.size, deadline, op))
            body = self._read_exact(length, deadline, op)
        except JavaCodecError:
            self._kill()  # the stream may be out of sync now; never reuse it
            raise
        if status != STATUS_OK:
            raise JavaCodecError(f"{header}: {body.decode('utf-8', 'replace')}")
        return body

    def _write_all(self, message: bytes, deadline: float, op: str) -> None:
        fd = self._proc.stdin.fileno()
        view = memoryview(message)
        while view:
            self._wait(fd, deadline, op, write=True)
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._died(op) from None
            view = view[written:]

    def _read_exact(self, n: int, deadline: float, op: str) -> bytes:
        fd = self._proc.stdout.fileno()
        buf = bytearray()
        while len(buf) < n:
            self._wait(fd, deadline, op, write=False)
            chunk = os.read(fd, min(n - len(buf), 1 << 20))
            if not chunk:
                raise self._died(op)
            buf += chunk
        return bytes(buf)

    def _wait(self, fd: int, deadline: float, op: str, *, write: bool) -> None:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            ready = select.select([], [fd], [], remaining)[1] if write else \
                select.select([fd], [], [], remaining)[0]
            if ready:
                return
        raise JavaCodecTimeout(f"{op}: no answer from the oracle JVM in time; JVM killed")

    def _died(self, op: str) -> JavaCodecError:
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = "still running"
        return JavaCodecError(f"{op}: oracle JVM exited (status {code}); stderr:\n{self.stderr_tail()}")

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            text = self.stderr_path.read_bytes()[-limit:]
        except OSError:
            return "<no stderr log>"
        return text.decode("utf-8", "replace")


@pytest.fixture(scope="session")
def java_codec(tmp_path_factory):
    """One compiled oracle JVM for the whole session; fails (never skips) if unavailable."""
    try:
        codec = JavaCodec(tmp_path_factory.mktemp("javacodec")).start()
    except JavaCodecUnavailable as e:
        problem = str(e)
    else:
        problem = None
    if problem is not None:  # failed outside the except block to keep the report short
        pytest.fail(f"Java codec oracle unavailable: {problem}", pytrace=False)
    try:
        yield codec
    finally:
        codec.close()


def require_kafkas_snappy() -> None:
    """Kafka's snappy bytes need the system's Google snappy 1.1 (libsnappy.so.1, which the CI
    machine has): without it a test of those bytes skips on a clone and fails where the suite is
    required whole (CI=true), like a missing ../shared."""
    from kafkarec import _core
    from support.paths import shared_required
    library = _core.snappy_compressor()
    if library == "libsnappy.so.1":
        return
    reason = (f"the writer's snappy is {library}: no system libsnappy.so.1 writes snappy-java's "
              "bytes here (Debian: libsnappy1v5)")
    if shared_required():
        pytest.fail(reason + " (required: CI=true or KAFKAREC_REQUIRE_SHARED=1)", pytrace=False)
    pytest.skip(reason + " (skipped; CI runs it)")
