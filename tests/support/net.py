"""Loopback ports for the servers the tests start."""
from __future__ import annotations

import socket
from typing import List


def free_ports(n: int) -> List[int]:
    """``n`` distinct TCP ports on 127.0.0.1 that were free a moment ago (held open together
    while they are picked, so no two are the same)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One TCP port on 127.0.0.1 that was free a moment ago."""
    return free_ports(1)[0]
