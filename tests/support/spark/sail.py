"""Sail (``pysail``), a Spark Connect server in Rust, as the session's one Spark server for
tests/spark/test_sail.py: no JVM, its Python data sources and UDFs run in the server's own Python.

That Python and the client are one venv (:func:`sail_python`): Sail 0.7.2 refuses a server Python
whose pyspark is 4.3 (the suite's), so the venv holds ``pysail`` and ``pyspark-client`` at
scripts/versions.sh's pins, with kafkarec's runtime dependencies; kafkarec and spark_udfs come from
the checkout (``PYTHONPATH``), as the suite's own Python takes them (the venv is of that Python, so
the compiled core loads).  Sail takes no artifacts, so nothing is shipped: the server's Python
already has kafkarec, as a Sail deployment's must.

:func:`sail_server` starts ``sail spark server`` once per pytest process on a free port, waits a
bounded time for it to accept connections, and ends its process group at the end, checking that
nothing of it is left running.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import NamedTuple

import pytest

from support.net import free_port
from support.paths import ROOT
from support.procs import stop_group

#: how long the server may take to accept connections (it starts in about a second)
STARTUP_S = 60


def _runtime_requirements() -> list:
    """kafkarec's runtime dependencies, from pyproject.toml (the one list of them)."""
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"])


def sail_python(python: str = sys.executable) -> str:
    """The Python of ``.cache/sail-<tag>``: a venv of ``python`` (made once, by
    scripts/make_venv.sh, and remade when its requirements change) holding ``pysail`` and
    ``pyspark-client`` at their pins, ``pandas<3`` and kafkarec's runtime dependencies."""
    import fcntl
    from support.spark.spark_helpers import _cache_tag
    from support.versions import SAIL, SAIL_PYSPARK_CLIENT
    folder = os.path.join(ROOT, ".cache", f"sail-{_cache_tag(python)}")
    py = os.path.join(folder, "bin", "python")
    reqs = [f"pysail=={SAIL}", f"pyspark-client=={SAIL_PYSPARK_CLIENT}", "pandas<3", *_runtime_requirements()]
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True,
                             text=True, check=True).stdout.strip()
    stamp = f"{version} | {' '.join(reqs)}"
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    with open(folder + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(os.path.join(folder, ".stamp")) as fh:
                if fh.read() == stamp and os.path.exists(py):
                    return py
        except OSError:
            pass
        import shutil
        shutil.rmtree(folder, ignore_errors=True)
        proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "make_venv.sh"), python, folder, *reqs],
                              capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            pytest.fail(f"the Sail venv could not be made:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        with open(os.path.join(folder, ".stamp"), "w") as fh:
            fh.write(stamp)
    return py


def checkout_env(**extra) -> dict:
    """The environment of the Sail venv's processes: kafkarec and spark_udfs from the checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra)
    return env


class SailServer(NamedTuple):
    url: str          # sc://127.0.0.1:PORT
    python: str       # the Sail venv's Python: the server's, and the client's
    log: str          # the server's output


@pytest.fixture(scope="session")
def sail_server(tmp_path_factory):
    """The session's Sail server (:class:`SailServer`), stopped at the end with its process group."""
    python = sail_python()
    work = str(tmp_path_factory.mktemp("sail"))
    port = free_port()
    log = os.path.join(work, "server.log")
    sail = os.path.join(os.path.dirname(python), "sail")
    with open(log, "wb") as out:
        proc = subprocess.Popen([sail, "spark", "server", "--ip", "127.0.0.1", "--port", str(port)],
                                cwd=work, env=checkout_env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if proc.poll() is not None:
                with open(log, errors="replace") as fh:
                    pytest.fail(f"sail spark server exited with {proc.returncode}:\n{fh.read()[-4000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"sail spark server did not listen on 127.0.0.1:{port} in {STARTUP_S} s")
                time.sleep(0.1)
        yield SailServer(f"sc://127.0.0.1:{port}", python, log)
    finally:
        stop_group(proc, grace=10)
        from support.spark.spark_cluster import alive_in_groups
        left = alive_in_groups({proc.pid})
        assert not left, f"processes left running after the Sail server stopped: {left}"
