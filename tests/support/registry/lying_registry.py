"""A registry port on 127.0.0.1 that answers what a script says, byte for byte: a registry's REST
API that answers well (one subject, ``orders-value`` version 1 = id 1, registrations numbered from
10) except where the test makes one call answer badly — a member of another type or out of range,
a status line that is not HTTP, an answer trickled a byte at a time.  Not a registry: the
answers' bytes are the test's, which a real registry (Apicurio's, tests/support/registry/apicurio.py)
or the stand-in (registry_server.py) would never send.

One connection at a time, in one thread stopped and joined when the ``with`` block ends, its
listening socket closed::

    with LyingRegistry({"GET /subjects/orders-value/versions": answer(200, ["x"])}) as reg:
        reg.url
"""
from __future__ import annotations

import json
import re
import socket
import threading
from typing import Callable, Dict, List, Optional, Tuple, Union

#: an answer: its bytes, or a function that sends it on the connection (stopping when the Event is set)
Answer = Union[bytes, Callable[[socket.socket, threading.Event], None]]

SCHEMA = '"string"'


def answer(status: int, body=b"", content_type: str = "application/vnd.schemaregistry.v1+json",
           length: Optional[int] = None) -> bytes:
    """One raw HTTP/1.1 answer; ``body`` a JSON value, or bytes sent as they are (``b'[1e400]'``);
    ``length``: a Content-Length that lies."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = (f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: "
            f"{len(data) if length is None else length}\r\nConnection: close\r\n\r\n")
    return head.encode() + data


def trickle(data: bytes, every: float = 0.3) -> Answer:
    """``data`` sent one byte every ``every`` seconds (a slow proxy), until the client goes away."""
    def send(conn: socket.socket, stop: threading.Event) -> None:
        for i in range(len(data)):
            if stop.wait(every):
                return
            try:
                conn.sendall(data[i:i + 1])
            except OSError:
                return
    return send


def _well(method: str, path: str) -> bytes:
    """What a registry holding ``orders-value`` v1 (id 1), not in IMPORT mode, answers."""
    bare = path.split("?", 1)[0]
    if (method, bare) == ("GET", "/subjects"):
        return answer(200, ["orders-value"])
    if (method, bare) == ("GET", "/subjects/orders-value/versions"):
        return answer(200, [1])
    if (method, bare) == ("GET", "/subjects/orders-value/versions/1"):
        return answer(200, {"subject": "orders-value", "version": 1, "id": 1, "schema": SCHEMA})
    if (method, bare) == ("GET", "/contexts"):
        return answer(200, ["."])
    if method == "POST" and re.fullmatch(r"/subjects/[^/]+/versions", bare):
        return answer(200, {"id": 10})
    if method == "POST" and re.fullmatch(r"/subjects/[^/]+", bare):
        return answer(200, {"subject": bare.split("/")[2], "version": 1, "id": 10, "schema": SCHEMA})
    return answer(404, {"error_code": 40401, "message": f"no {method} {bare}"})


class LyingRegistry:
    """``overrides``: ``{"METHOD /path": answer}`` (the path without its query); any other call is
    answered well.  ``calls``: each ``(method, path, body)`` received."""

    def __init__(self, overrides: Dict[str, Answer]) -> None:
        self.overrides = dict(overrides)
        self.calls: List[Tuple[str, str, bytes]] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.1)
        self.url = "http://127.0.0.1:%d" % self.server.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "LyingRegistry":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)
        self.server.close()
        assert not self.thread.is_alive(), "the lying registry did not stop"

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
            body += conn.recv(65536)
        self.calls.append((method, path, body))
        call = f"{method} {path.split('?', 1)[0]}"
        reply = self.overrides[call] if call in self.overrides else _well(method, path)
        if callable(reply):
            reply(conn, self.stop)
        else:
            conn.sendall(reply)
