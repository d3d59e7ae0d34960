"""An HTTP port on 127.0.0.1 that answers what a script says, byte for byte: what a test needs to
make a client meet answers no real server sends (a member of another type, a status line that is
not HTTP, an answer cut short or trickled a byte at a time).  One connection at a time, in one
thread stopped and joined when the ``with`` block ends, its listening socket closed::

    with ScriptedPort(lambda method, path, calls: http(200, {"ok": True})) as port:
        port.url

Used by the Connect hand-off's tests (tests/lakehouse/test_connect_answers.py) and the lying
registry (tests/support/registry/lying_registry.py)."""
from __future__ import annotations

import json
import re
import socket
import threading
from typing import Callable, List, Optional, Tuple, Union

#: an answer: its bytes, or a function that sends it on the connection (stopping when the Event is set)
Answer = Union[bytes, Callable[[socket.socket, threading.Event], None]]
#: what a call answers: ``script(method, path, calls so far)``
Script = Callable[[str, str, List[Tuple[str, str, bytes]]], Answer]


def http(status: int, body=b"", content_type: str = "application/json", length: Optional[int] = None) -> bytes:
    """One raw HTTP/1.1 answer; ``body`` a JSON value, or bytes sent as they are (``b'[1e400]'``);
    ``length``: a Content-Length that lies."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = (f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: "
            f"{len(data) if length is None else length}\r\nConnection: close\r\n\r\n")
    return head.encode() + data


def trickle(data: bytes, every: float = 0.25, body_only: bool = False) -> Answer:
    """``data`` (or only its body, after the head sent at once) sent one byte every ``every``
    seconds (a slow proxy), until the client goes away or the port stops."""
    def send(conn: socket.socket, stop: threading.Event) -> None:
        first = data.index(b"\r\n\r\n") + 4 if body_only else 0
        conn.sendall(data[:first])
        for i in range(first, len(data)):
            if stop.wait(every):
                return
            try:
                conn.sendall(data[i:i + 1])
            except OSError:
                return
    return send


class ScriptedPort:
    """The port; ``calls``: each ``(method, path, body)`` received, in order."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls: List[Tuple[str, str, bytes]] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.1)
        self.url = "http://127.0.0.1:%d" % self.server.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)
        self.server.close()
        assert not self.thread.is_alive(), f"{type(self).__name__} did not stop"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except socket.timeout:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    self._answer(conn)
                except OSError:
                    pass

    def _answer(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        method, path = (p.decode() for p in head.split(b" ", 2)[:2])
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        while length and len(body) < int(length.group(1)):
            more = conn.recv(65536)
            if not more:
                break
            body += more
        self.calls.append((method, path, body))
        reply = self.script(method, path, self.calls)
        if callable(reply):
            reply(conn, self.stop)
        else:
            conn.sendall(reply)
