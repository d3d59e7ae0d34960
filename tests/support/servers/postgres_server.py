"""A PostgreSQL server for the change-data-capture tests: Debian's package (postgresql-15),
started in a temporary folder on 127.0.0.1 with ``wal_level=logical`` (what Debezium's
connector needs), trust authentication for one superuser, and always stopped.

PostgreSQL refuses to run as root: when the tests run as root, initdb and the server run as
the ``postgres`` user the package creates (the data folder is made theirs)."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from typing import Optional

from support.servers.db_server import ServerFolder
from support.net import free_port

USER = "kafkarec"


def bindir() -> Optional[str]:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding initdb, or initdb's folder on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(os.path.realpath(initdb)) if initdb else None


class PostgresServer(ServerFolder):
    def __init__(self) -> None:
        self.bin = bindir()
        if self.bin is None:
            raise RuntimeError("no PostgreSQL server (Debian's postgresql package) is installed")
        super().__init__("kafkarec-pg-")
        self.data = os.path.join(self.base, "data")
        self.port = free_port()
        self._as = {}
        if os.geteuid() == 0:
            import pwd
            pw = pwd.getpwnam("postgres")
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
            self._as = {"user": pw.pw_uid, "group": pw.pw_gid}
        self.started = False

    def _run(self, *args, timeout=120):
        proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout,
                              cwd=self.base, **self._as)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc.stdout

    def start(self) -> "PostgresServer":
        self._run(os.path.join(self.bin, "initdb"), "-D", self.data, "-U", USER, "--auth=trust",
                  "-E", "UTF8", "--locale=C")
        with open(os.path.join(self.data, "postgresql.conf"), "a") as fh:
            fh.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                     f"unix_socket_directories = '{self.base}'\nwal_level = logical\n"
                     "max_replication_slots = 4\nmax_wal_senders = 4\nfsync = off\n"
                     "synchronous_commit = off\nfull_page_writes = off\n")
        self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-l", os.path.join(self.base, "server.log"),
                  "-w", "-t", "60", "start")
        self.started = True
        return self

    def sql(self, statements: str, db: str = "postgres") -> str:
        """Run SQL through psql (stop at the first error); the output unaligned, tuples only."""
        return self.client_sql([os.path.join(self.bin, "psql"), "-h", "127.0.0.1", "-p", str(self.port),
                                "-U", USER, "-d", db, "-v", "ON_ERROR_STOP=1", "-X", "-A", "-t", "-q"],
                               statements, "psql")

    def stop(self) -> None:
        try:
            if self.started:
                self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "fast", "-w", "-t", "60", "stop")
                self.started = False
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


