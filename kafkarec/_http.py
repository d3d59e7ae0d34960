"""The one HTTP client of kafkarec's REST calls: the Schema Registry's (a live registry read as a
source, :mod:`kafkarec.registry._sources`; the restore's target registry,
:mod:`kafkarec.restore.schemas`) and Kafka Connect's (the lakehouse hand-off,
:mod:`kafkarec.lakehouse.connect`).

:func:`exchange` makes one call and gives its whole answer, whatever its status, or raises
:class:`NoAnswer`, the one exception of every transport failure, which each caller turns into its
own error (a :class:`~kafkarec.errors.RegistryError`, a :class:`~kafkarec.errors.ConnectError`):

* the call's WHOLE time is bounded by its deadline: connecting, the TLS handshake, sending and every
  read of the answer wait at most until the deadline (``time.monotonic()``), not a timeout each.
  urllib's own ``timeout`` is a timeout per socket operation, so an answer trickled a byte at a time
  would run one timeout per byte (a 29 s answer against a 1 s timeout, issue 78 finding 48);
* the answer is capped (``max_answer`` bytes): a Content-Length above it is refused before the body
  is read, a body that runs past it is cut off there;
* every failure below HTTP's answer is a :class:`NoAnswer` whose ``kind`` says which: no
  connection (``unreachable``), the deadline (``timeout``), a status line that is not HTTP
  (``not_http``), the connection closed before any answer (``closed``) or dropped in the middle
  (``dropped``), an answer shorter than it said (``cut_short``), too large (``too_large``), a URL
  that cannot be called (``bad_url``).  urllib's URLError, OSError and its TimeoutError, ssl's
  errors, and http.client's HTTPException (BadStatusLine, IncompleteRead, RemoteDisconnected,
  LineTooLong) all end there.

What the answer holds is its caller's to judge: the registry decodes it into checked types
(:func:`kafkarec.registry._sources.decode_answer`), Connect reads its status and shape."""
from __future__ import annotations

import http.client
import socket
import ssl
import time
import urllib.error
import urllib.request
from typing import List, Mapping, NamedTuple, Optional

__all__ = ["Answer", "NoAnswer", "exchange", "quote", "QUOTED"]

#: The start of an answer quoted in an error.
QUOTED = 300


class NoAnswer(Exception):
    """No whole HTTP answer to a call.  ``kind``: one of :data:`KINDS`; ``status``: the HTTP status
    when the status line came (None before it); ``cause``: what failed (an exception, or urllib's
    reason); ``body``: what came of the body before the answer was cut short."""

    KINDS = ("unreachable", "timeout", "not_http", "closed", "dropped", "cut_short", "too_large", "bad_url")

    def __init__(self, kind: str, reason: str, status: Optional[int] = None, cause: object = None,
                 body: bytes = b"") -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.status = status
        self.cause = cause
        self.body = body


class Answer(NamedTuple):
    status: int
    content_type: str
    body: bytes


def quote(body: bytes, limit: int = QUOTED) -> str:
    """The start of an answer's body as text, for an error."""
    text = body.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


# --- every send and receive waits until the call's deadline at most -----------------------------

class _Deadline:
    """A socket whose every send and receive waits at most until ``deadline`` (``time.monotonic()``):
    its timeout is set to the time left before each one, so an answer trickled a byte at a time
    ends at the deadline, not one timeout per byte later."""

    deadline = float("inf")

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self.settimeout(left)

    def recv_into(self, *args, **kwargs):
        self._arm()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args, **kwargs):
        self._arm()
        return super().recv(*args, **kwargs)

    def send(self, *args, **kwargs):
        self._arm()
        return super().send(*args, **kwargs)

    def sendall(self, *args, **kwargs):
        self._arm()
        return super().sendall(*args, **kwargs)


class _DeadlineSocket(_Deadline, socket.socket):
    pass


class _DeadlineSSLSocket(_Deadline, ssl.SSLSocket):
    pass


def _connect_until(deadline: float):
    def create_connection(address, timeout=None, source_address=None, **kwargs):
        plain = socket.create_connection(address, max(deadline - time.monotonic(), 0.001), source_address, **kwargs)
        sock = _DeadlineSocket(plain.family, plain.type, plain.proto, fileno=plain.detach())
        sock.deadline = deadline
        sock._arm()         # a socket made from a descriptor blocks; a TLS handshake waits this long
        return sock
    return create_connection


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args, deadline: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _connect_until(deadline)


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, deadline: float, **kwargs) -> None:
        context = kwargs.pop("context", None) or ssl.create_default_context()
        context.sslsocket_class = _DeadlineSSLSocket
        super().__init__(*args, context=context, **kwargs)
        self._create_connection = _connect_until(deadline)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()
        self.sock.deadline = self._deadline


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: float) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req):
        return self.do_open(_HTTPConnection, req, deadline=self.deadline)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: float) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req):
        return self.do_open(_HTTPSConnection, req, deadline=self.deadline)


# --- one call ------------------------------------------------------------------------------------

def exchange(method: str, url: str, *, deadline: float, max_answer: int, body: Optional[bytes] = None,
             headers: Optional[Mapping[str, str]] = None) -> Answer:
    """``method url`` with ``body``, ended by ``deadline`` (``time.monotonic()``): the whole answer,
    of any status (a refusal's body says why), or :class:`NoAnswer`."""
    status: Optional[int] = None
    try:
        req = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
        opener = urllib.request.build_opener(_HTTPHandler(deadline), _HTTPSHandler(deadline))
        try:
            resp = opener.open(req, timeout=max(deadline - time.monotonic(), 0.001))
        except urllib.error.HTTPError as exc:       # a status other than 2xx: its body says why
            if exc.fp is None:
                return Answer(exc.code, "", b"")
            refusal = exc       # held: the error closes its response when it is collected
            resp = refusal.fp
        status = resp.status
        with resp:
            return Answer(status, resp.headers.get("Content-Type", ""), _body(resp, max_answer))
    except urllib.error.URLError as exc:            # raised before any answer came
        reason = exc.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise NoAnswer("timeout", "no answer in time", None, reason) from None
        if isinstance(reason, http.client.HTTPException):
            raise NoAnswer("not_http", f"the answer is not HTTP ({reason!r})", None, reason) from None
        raise NoAnswer("unreachable", f"no answer: {reason}", None, reason) from None
    except (TimeoutError, socket.timeout) as exc:
        raise NoAnswer("timeout", "no answer in time" if status is None else "no whole answer in time",
                       status, exc) from None
    except http.client.RemoteDisconnected as exc:   # a server restarting, or a proxy giving up
        raise NoAnswer("closed", "the connection closed without an answer", None, exc) from None
    except http.client.HTTPException as exc:        # not HTTP, or an answer cut short
        if status is None:
            raise NoAnswer("not_http", f"the answer is not HTTP ({exc!r})", None, exc) from None
        raise NoAnswer("cut_short", f"the answer was cut short ({exc!r})", status, exc) from None
    except OSError as exc:                          # the connection reset or dropped mid-answer (ssl's too)
        raise NoAnswer("dropped", f"the connection dropped: {exc}", status, exc) from None
    except ValueError as exc:                       # no URL to call: an unknown scheme, a bad port or host
        if status is not None:
            raise
        raise NoAnswer("bad_url", f"not a URL to call: {exc}", None, exc) from None


def _body(resp, max_answer: int) -> bytes:
    """The whole body of ``resp`` (its Content-Length checked before it is read)."""
    if resp.length is not None and resp.length > max_answer:
        raise NoAnswer("too_large", f"an answer of {resp.length} bytes (Content-Length), more than the "
                       f"{max_answer} such an answer can be", resp.status)
    chunks: List[bytes] = []
    size = 0
    while True:
        chunk = resp.read(65536)
        if not chunk:
            break
        size += len(chunk)
        if size > max_answer:
            raise NoAnswer("too_large", f"an answer of more than the {max_answer} bytes such an answer can be",
                           resp.status)
        chunks.append(chunk)
    if resp.length:             # read(n) returns what came before the connection closed
        raise NoAnswer("cut_short", f"the answer was cut short: {size} of {size + resp.length} bytes "
                       "(Content-Length)", resp.status, body=b"".join(chunks))
    return b"".join(chunks)
