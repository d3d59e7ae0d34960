"""What the change-data-capture tests' database servers (tests/support/servers/postgres_server.py,
tests/support/servers/mariadb_server.py) share: a temporary folder holding the data and ``server.log``,
and SQL run through the database's own client."""
from __future__ import annotations

import os
import subprocess
import tempfile


class ServerFolder:
    def __init__(self, prefix: str) -> None:
        self.base = tempfile.mkdtemp(prefix=prefix)

    def client_sql(self, command: list, statements: str, what: str) -> str:
        """``statements`` fed to the client ``command`` (which stops at the first error); its output."""
        proc = subprocess.run(command, input=statements, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{what} failed ({proc.returncode}): {proc.stderr}\n{statements}")
        return proc.stdout

    def log_tail(self) -> str:
        try:
            with open(os.path.join(self.base, "server.log")) as fh:
                return fh.read()[-4000:]
        except OSError:
            return ""
