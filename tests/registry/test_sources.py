"""Registry sources: a folder of schema files (with REST API JSON saved to files), and a live
registry's REST API served by a small local HTTP server with the documented response shapes
(no real Schema Registry can run here: it needs a Kafka broker)."""
from __future__ import annotations

import base64
import json
import pickle
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import kafkarec.registry as kr
from support.net import free_port
from support.registry.registry_server import send_json

A1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
A2 = ('{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},'
      '{"name":"note","type":["null","string"],"default":null}]}')
P1 = 'syntax = "proto3";\npackage acme;\nmessage Ping { int64 id = 1; }\n'


def test_folder_of_schema_files(tmp_path):
    (tmp_path / "orders-value").mkdir()
    (tmp_path / "orders-value" / "1.avsc").write_text(A1)
    # GET /subjects/orders-value/versions/2 saved to a file: carries its id.
    (tmp_path / "orders-value" / "2.json").write_text(json.dumps(
        {"subject": "orders-value", "version": 2, "id": 12, "schema": A2}))
    (tmp_path / "pings-value").mkdir()
    (tmp_path / "pings-value" / "1.proto").write_text(P1)
    # GET /schemas/ids/{id} saved to files: gives plain schema files their ids.
    ids = tmp_path / "schemas" / "ids"
    ids.mkdir(parents=True)
    (ids / "11.json").write_text(json.dumps({"schema": A1}))
    (ids / "20.json").write_text(json.dumps({"schemaType": "PROTOBUF", "schema": P1}))
    (ids / "30.json").write_text(json.dumps({"schema": '"string"'}))   # known by id only
    # The REST path layout, percent-encoded subject with a context.
    rest = tmp_path / "subjects" / urllib.parse.quote(":.eu:js-value", safe="") / "versions"
    rest.mkdir(parents=True)
    (rest / "1.json").write_text(json.dumps({"subject": ":.eu:js-value", "version": 1, "id": 3,
                                             "schemaType": "JSON", "schema": "{}"}))
    (tmp_path / "README.txt").write_text("not a schema")
    reg = kr.load(str(tmp_path))
    assert reg.subjects() == [":.eu:js-value", "orders-value", "pings-value"]
    assert reg.get("orders-value").id == 12 and reg.get("orders-value", 1).id == 11
    assert reg.get("pings-value").schema_type == "PROTOBUF" and reg.by_id(20).schema == P1
    assert reg.by_id(30).schema == '"string"'
    assert reg.by_id(3, ".eu").schema_type == "JSON"
    assert not reg.problems
    assert pickle.loads(pickle.dumps(reg)).by_id(30).schema == '"string"'


def test_folder_problems_and_empty(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "1.json").write_text("{nope")
    (tmp_path / "s" / "2.avsc").write_text(A1)
    reg = kr.load(str(tmp_path))
    assert reg.versions("s") == [2] and "not JSON" in reg.problems[0]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "x.txt").write_text("")
    with pytest.raises(kr.RegistryError):
        kr.load(str(empty))


class _Registry(BaseHTTPRequestHandler):
    """The REST API's documented GET responses for a fixed set of versions."""
    versions = {
        "orders-value": {1: {"id": 1, "schema": A1}, 2: {"id": 2, "schema": A2}, 3: {"id": 9, "schema": '"int"'}},
        "pings-value": {1: {"id": 3, "schema": P1, "schemaType": "PROTOBUF",
                            "references": [{"name": "google/protobuf/timestamp.proto",
                                            "subject": "ts", "version": 1}]}},
        "ts": {1: {"id": 4, "schema": 'syntax = "proto3";', "schemaType": "PROTOBUF"}},
        ":.eu:orders-value": {1: {"id": 1, "schema": '"bytes"'}},
    }
    soft_deleted = {("orders-value", 3)}
    auth = None
    calls = []

    def log_message(self, *a):
        pass

    def _send(self, code, obj):
        send_json(self, code, obj)

    def do_GET(self):
        type(self).calls.append(self.path)
        if self.auth and self.headers.get("Authorization") != self.auth:
            return self._send(401, {"error_code": 401, "message": "Unauthorized"})
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        deleted = q.get("deleted") == ["true"]
        parts = [urllib.parse.unquote(p) for p in u.path.strip("/").split("/")]
        if parts == ["contexts"]:
            return self._send(200, [".", ".eu"])
        if parts == ["subjects"]:
            prefix = q.get("subjectPrefix", [""])[0]
            names = [s for s in self.versions if (s.startswith(prefix) if prefix else not s.startswith(":"))]
            return self._send(200, names)
        if len(parts) >= 3 and parts[0] == "subjects" and parts[2] == "versions":
            s = parts[1]
            if s not in self.versions:
                return self._send(404, {"error_code": 40401, "message": f"Subject '{s}' not found."})
            vs = self.versions[s]
            if len(parts) == 3:
                return self._send(200, sorted(v for v in vs if deleted or (s, v) not in self.soft_deleted))
            v = int(parts[3])
            if v not in vs or ((s, v) in self.soft_deleted and not deleted):
                return self._send(404, {"error_code": 40402, "message": "Version not found."})
            return self._send(200, {"subject": s, "version": v, **vs[v]})
        return self._send(404, {"error_code": 404, "message": "HTTP 404 Not Found"})


@pytest.fixture
def registry_server():
    _Registry.calls = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    srv.timeout = 5
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)
        _Registry.auth = None


def test_live_registry_fetched_once_then_cached(registry_server, tmp_path):
    from kafkarec.registry import _sources
    _sources._CACHE.clear()
    port = registry_server.server_address[1]
    url = f"http://127.0.0.1:{port}"
    reg = kr.load(url, cache_dir=str(tmp_path / "cache"))
    assert reg.subjects() == [":.eu:orders-value", "orders-value", "pings-value", "ts"]
    assert reg.get("orders-value").version == 2 and reg.by_id(9).deleted   # soft-deleted, resolves
    assert reg.by_id(1, ".eu").schema == '"bytes"'
    pings = reg.get("pings-value")
    assert [(n, e.subject) for n, e in reg.references(pings)] == [("google/protobuf/timestamp.proto", "ts")]
    n = len(_Registry.calls)
    assert kr.load(url) is reg and len(_Registry.calls) == n       # per-process cache
    _sources._CACHE.clear()
    again = kr.load(url, cache_dir=str(tmp_path / "cache"))        # the cache file, no request
    assert len(_Registry.calls) == n and again.listing() == reg.listing()
    shipped = pickle.loads(pickle.dumps(again))                    # plain data for executors
    assert shipped.by_id(2).schema == A2


def test_live_registry_basic_auth_and_bearer(registry_server):
    from kafkarec.registry import _sources
    _sources._CACHE.clear()
    port = registry_server.server_address[1]
    _Registry.auth = "Basic " + base64.b64encode(b"alice:s3cr:et").decode()
    reg = kr.load(f"http://alice:s3cr%3Aet@127.0.0.1:{port}")
    assert reg.get("orders-value").id == 2
    assert "s3cr" not in reg.source                                 # no password kept
    _Registry.auth = "Bearer tok123"
    reg = kr.load(f"http://127.0.0.1:{port}/", bearer_token="tok123", refresh=True)
    assert reg.get("ts").id == 4
    with pytest.raises(kr.RegistryError, match="HTTP 401"):
        kr.load(f"http://127.0.0.1:{port}/", bearer_token="wrong", refresh=True)


def test_unreachable_registry_is_a_clear_error():
    port = free_port()         # nothing listens on it
    with pytest.raises(kr.RegistryError, match="GET http://127.0.0.1"):
        kr.read_http(f"http://127.0.0.1:{port}", timeout=2, refresh=True)
