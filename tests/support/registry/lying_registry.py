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

import functools
import re
from typing import Dict

from support.servers.scripted_http import Answer, ScriptedPort, http, trickle

__all__ = ["Answer", "LyingRegistry", "answer", "trickle", "SCHEMA"]

SCHEMA = '"string"'


#: an answer in a registry's content type (:func:`support.servers.scripted_http.http`)
answer = functools.partial(http, content_type="application/vnd.schemaregistry.v1+json")
#: a registry's slow proxy: the whole answer trickled, its head included
trickle = functools.partial(trickle, every=0.3)


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


class LyingRegistry(ScriptedPort):
    """``overrides``: ``{"METHOD /path": answer}`` (the path without its query); any other call is
    answered well.  ``calls``: each ``(method, path, body)`` received."""

    def __init__(self, overrides: Dict[str, Answer]) -> None:
        self.overrides = dict(overrides)
        super().__init__(self._reply)

    def _reply(self, method: str, path: str, calls) -> Answer:
        call = f"{method} {path.split('?', 1)[0]}"
        return self.overrides[call] if call in self.overrides else _well(method, path)
