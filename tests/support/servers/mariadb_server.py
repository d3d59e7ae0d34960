"""A MariaDB server for the change-data-capture tests: Debian's package (mariadb-server),
a private server on a temporary data folder and a free port of 127.0.0.1 (no system service),
with the binlog in ROW format and full row images (what Debezium's connector needs), one user
with every privilege, and always stopped.

mariadbd refuses to run as root: when the tests run as root, it runs as the ``mysql`` user the
package creates (the folder is made theirs)."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Optional

from support.servers.db_server import ServerFolder
from support.net import free_port

USER = "kafkarec"
PASSWORD = "kafkarec"


def _which(name: str) -> Optional[str]:
    """``name`` on PATH or in /usr/sbin, /usr/bin (Debian puts mariadbd off a user's PATH)."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin"]))


def installed() -> bool:
    return _which("mariadbd") is not None and _which("mariadb-install-db") is not None


class MariaDbServer(ServerFolder):
    def __init__(self) -> None:
        if not installed():
            raise RuntimeError("no MariaDB server (Debian's mariadb-server package) is installed")
        super().__init__("kafkarec-maria-")
        self.data = os.path.join(self.base, "data")
        self.socket = os.path.join(self.base, "sock")
        self.port = free_port()
        self.os_user = []
        if os.geteuid() == 0:
            import pwd
            pw = pwd.getpwnam("mysql")
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
            self.os_user = ["--user=mysql"]
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "MariaDbServer":
        proc = subprocess.run([_which("mariadb-install-db"), "--no-defaults", *self.os_user, f"--datadir={self.data}",
                               "--auth-root-authentication-method=normal", "--skip-test-db"],
                              capture_output=True, text=True, timeout=180, cwd=self.base)
        if proc.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        self.log = open(os.path.join(self.base, "server.log"), "w")
        self.proc = subprocess.Popen(
            [_which("mariadbd"), "--no-defaults", *self.os_user, f"--datadir={self.data}",
             f"--socket={self.socket}", f"--port={self.port}", "--bind-address=127.0.0.1",
             f"--pid-file={os.path.join(self.base, 'mariadbd.pid')}",
             f"--log-bin={os.path.join(self.base, 'binlog')}", "--binlog-format=ROW", "--binlog-row-image=FULL",
             "--server-id=1", "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
             "--innodb-flush-log-at-trx-commit=0", "--sync-binlog=0", "--character-set-server=utf8mb4",
             "--collation-server=utf8mb4_unicode_ci", "--default-time-zone=+00:00"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.base)
        deadline = time.monotonic() + 60
        while True:
            probe = subprocess.run(self._client(), input="SELECT 1;", capture_output=True, text=True,
                                   timeout=30)
            if probe.returncode == 0:
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mariadbd did not start:\n{self.log_tail()}")
            time.sleep(0.2)
        self.sql(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';"
                 f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%' WITH GRANT OPTION;")
        return self

    def _client(self, db: str = "") -> list:
        """The mariadb client as the server's root, over its socket."""
        return [_which("mariadb"), "--no-defaults", f"--socket={self.socket}", "--user=root", "--batch", "--raw",
                "--skip-column-names", *([db] if db else [])]

    def sql(self, statements: str, db: str = "") -> str:
        """Run SQL through the mariadb client (stop at the first error); tab-separated rows."""
        return self.client_sql(self._client(db), statements, "mariadb")

    def stop(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()           # mariadbd shuts down cleanly on SIGTERM
                try:
                    self.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            if self.proc is not None:
                self.log.close()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)
