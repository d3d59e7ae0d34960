"""A STAND-IN of a Schema Registry's REST API (Confluent's, the part a restore's schema translation
calls), in a thread of the test process: not a real registry.

The restore's translation is tested against a real registry (Apicurio Registry:
tests/support/registry/apicurio.py); this stand-in stays for what Apicurio does not do: IMPORT mode (its ccompat
API has no mode API), and tests that need only some target.  It keeps the rules the translation depends
on, as Confluent's registry documents them:

* ``POST /subjects/{s}/versions`` {schema, schemaType, references, id?}: a schema already under the
  subject answers its id; one with an ``id`` is taken with that id only in IMPORT mode (the
  subject's, else the global one) and only when the id is free or names the same schema (else 422);
  otherwise one schema text has one id across subjects, new ones numbered from ``first_id``;
* ``POST /subjects/{s}`` (lookup): {subject, id, version, schema} or 404;
* ``GET /schemas/ids/{id}``, ``GET /mode``, ``GET /mode/{s}?defaultToGlobal=true``,
  ``PUT /mode[/{s}]``, ``GET /subjects``, ``GET /subjects/{s}/versions[/{v}]``.

    with RegistryStandIn(first_id=1) as reg:
        reg.url          # http://127.0.0.1:PORT
"""
from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def send_json(handler: BaseHTTPRequestHandler, code: int, obj) -> None:
    """A registry's answer: ``obj`` as JSON with the registry's content type."""
    data = json.dumps(obj).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class RegistryStandIn:
    def __init__(self, first_id: int = 1, mode: str = "READWRITE") -> None:
        self.next_id = first_id
        self.mode = {None: mode}
        self.ids = {}               # id -> (schema, type, references)
        self.subjects = {}          # subject -> [id, ...] (version = index + 1)
        self.calls = []
        self._lock = threading.Lock()
        self._server = None

    def __enter__(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _handle(self, method):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                url = urllib.parse.urlsplit(self.path)
                with outer._lock:
                    outer.calls.append((method, url.path))
                    code, answer = outer._route(method, url.path, urllib.parse.parse_qs(url.query), body)
                send_json(self, code, answer)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PUT(self):
                self._handle("PUT")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # a short poll: shutdown() waits for the loop to look (0.5 s by default)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # --- the API ---------------------------------------------------------------------------
    def _route(self, method, path, query, body):
        q = urllib.parse.unquote
        if m := re.fullmatch(r"/mode(?:/([^/]+))?", path):
            subject = q(m.group(1)) if m.group(1) else None
            if method == "PUT":
                self.mode[subject] = body["mode"]
                return 200, {"mode": body["mode"]}
            if subject in self.mode or subject is None:
                return 200, {"mode": self.mode[subject]}
            if query.get("defaultToGlobal") == ["true"]:
                return 200, {"mode": self.mode[None]}
            return 404, {"error_code": 40409, "message": "Subject not found"}
        if m := re.fullmatch(r"/schemas/ids/(\d+)", path):
            held = self.ids.get(int(m.group(1)))
            if held is None:
                return 404, {"error_code": 40403, "message": "Schema not found"}
            return 200, {"schema": held[0], **({"schemaType": held[1]} if held[1] != "AVRO" else {})}
        if path == "/subjects":
            return 200, sorted(self.subjects)
        if m := re.fullmatch(r"/subjects/([^/]+)/versions", path):
            subject = q(m.group(1))
            if method == "GET":
                return 200, list(range(1, len(self.subjects.get(subject, [])) + 1))
            return self._register(subject, body)
        if m := re.fullmatch(r"/subjects/([^/]+)/versions/(\d+)", path):
            subject, version = q(m.group(1)), int(m.group(2))
            ids = self.subjects.get(subject, [])
            if not 1 <= version <= len(ids):
                return 404, {"error_code": 40402, "message": "Version not found"}
            return 200, self._version(subject, version)
        if m := re.fullmatch(r"/subjects/([^/]+)", path):
            subject = q(m.group(1))
            key = self._key(body)
            for v, i in enumerate(self.subjects.get(subject, []), 1):
                if self.ids[i] == key:
                    return 200, self._version(subject, v)
            return 404, {"error_code": 40403, "message": "Schema not found"}
        return 404, {"error_code": 404, "message": f"no route {method} {path}"}

    @staticmethod
    def _key(body):
        refs = tuple((r["name"], r["subject"], r["version"]) for r in body.get("references") or ())
        return body["schema"], body.get("schemaType", "AVRO"), refs

    def _version(self, subject, version):
        i = self.subjects[subject][version - 1]
        schema, stype, refs = self.ids[i]
        out = {"subject": subject, "version": version, "id": i, "schema": schema}
        if stype != "AVRO":
            out["schemaType"] = stype
        if refs:
            out["references"] = [{"name": n, "subject": s, "version": v} for n, s, v in refs]
        return out

    def _register(self, subject, body):
        key = self._key(body)
        versions = self.subjects.setdefault(subject, [])
        for i in versions:
            if self.ids[i] == key:
                return 200, {"id": i}
        wanted = body.get("id")
        if wanted is not None:
            if self.mode.get(subject, self.mode[None]) != "IMPORT":
                return 422, {"error_code": 42205, "message": "Subject is not in import mode"}
            if wanted in self.ids and self.ids[wanted] != key:
                return 422, {"error_code": 42207, "message": f"Overwrite new schema with id {wanted} is not permitted"}
            self.ids[wanted] = key
            versions.append(wanted)
            return 200, {"id": wanted}
        same = [i for i, k in self.ids.items() if k == key]
        if same:
            i = same[0]
        else:
            while self.next_id in self.ids:
                self.next_id += 1
            i = self.next_id
            self.ids[i] = key
        versions.append(i)
        return 200, {"id": i}
