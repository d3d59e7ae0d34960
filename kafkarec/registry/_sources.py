"""Registry sources other than ``_schemas``: a folder of schema files and a live registry.

Folder layout (local or any URI kafkarec's storage layer opens; subject folder names may be
percent-encoded)::

    <subject>/<version>.avsc | .proto         schema text (Avro, Protobuf)
    <subject>/<version>.json                  JSON Schema text, or what
                                              GET /subjects/{s}/versions/{v} returns
    subjects/<subject>/versions/<version>.json  the same, saved under the REST path
    schemas/ids/<id>.json  (or ids/<id>.json)   what GET /schemas/ids/{id} returns

A version file in the REST shape carries its id; a plain schema text gets the id of the
``schemas/ids`` file with the same text and type, if any (otherwise it can be a reader
schema but no record names it).

A live registry (``http(s)://[user:pass@]host[:port][/path]``, or ``bearer_token=``) is read
once through the REST API (``GET /contexts``, ``/subjects?deleted=true``,
``/subjects/{s}/versions?deleted=true``, ``/subjects/{s}/versions/{v}?deleted=true``), kept in
memory for the process and, with ``cache_dir``, in a file; the result is a plain
:class:`Registry`.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import posixpath
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Dict, Optional

from kafkarec._boot.files import atomic_write
from kafkarec.registry._model import Reference, Registry, RegistryError, SchemaEntry
from kafkarec.registry._topic import _Bad, parse_schema_value

__all__ = ["read_folder", "read_http", "MAX_SCHEMA_FILE"]

MAX_SCHEMA_FILE = 16 << 20
_EXT_TYPE = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
_VERSION_RE = re.compile(r"([0-9]+)(\.avsc|\.proto|\.json)\Z")


def _rest_entry(obj, subject: Optional[str], version: Optional[int], where: str) -> SchemaEntry:
    if not isinstance(obj, dict) or not isinstance(obj.get("schema"), str):
        raise RegistryError(f"{where}: not a schema version (no 'schema' text)")
    o = dict(obj)
    o.setdefault("subject", subject)
    o.setdefault("version", version)
    try:
        return parse_schema_value(o)
    except _Bad as exc:
        raise RegistryError(f"{where}: {exc}") from None


def _is_rest(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("schema"), str) and (
        "id" in obj or "version" in obj or "subject" in obj)


def read_folder(uri: str, *, storage_options: Optional[dict] = None) -> Registry:
    from kafkarec.log import storage
    stg, root = storage.resolve(uri, storage_options)
    files = storage.list_files(stg, root)
    reg = Registry(uri)
    plain = []
    by_text: Dict[tuple, int] = {}
    root_ = root.rstrip("/")
    for f in files:
        rel = f.path[len(root_):].lstrip("/") if f.path.startswith(root_) else posixpath.basename(f.path)
        parts = rel.split("/")
        name = parts[-1]
        if f.size > MAX_SCHEMA_FILE:
            reg.problems.append(f"{rel}: {f.size} bytes, more than {MAX_SCHEMA_FILE}; skipped")
            continue
        # schemas/ids/<id>.json  or  ids/<id>.json
        if len(parts) >= 2 and parts[-2] == "ids" and re.fullmatch(r"[0-9]+\.json", name):
            try:
                obj = json.loads(stg.read_file(f.path, f.size))
                if not isinstance(obj, dict):
                    raise ValueError("not a JSON object")
                sid = int(name[:-5])
                e = _rest_entry({**obj, "id": sid, "subject": obj.get("subject", ""),
                                 "version": obj.get("version", 0)}, "", 0, rel)
            except (ValueError, RegistryError, UnicodeDecodeError, RecursionError) as exc:
                reg.problems.append(f"{rel}: {exc}")
                continue
            reg._add_id_only(e._replace(subject="", version=0))
            by_text[(e.schema_type, e.schema)] = sid
            continue
        m = _VERSION_RE.match(name)
        if not m or len(parts) < 2:
            continue
        version = int(m.group(1))
        if len(parts) >= 4 and parts[-2] == "versions" and parts[-4] == "subjects":
            subject = urllib.parse.unquote(parts[-3])
        else:
            subject = urllib.parse.unquote(parts[-2])
        try:
            text = stg.read_file(f.path, f.size).decode("utf-8")
        except UnicodeDecodeError as exc:
            reg.problems.append(f"{rel}: not UTF-8: {exc}")
            continue
        ext = m.group(2)
        if ext == ".json":
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError) as exc:
                reg.problems.append(f"{rel}: not JSON: {exc}")
                continue
            if _is_rest(obj):
                try:
                    e = _rest_entry(obj, subject, version, rel)
                except RegistryError as exc:
                    reg.problems.append(str(exc))
                    continue
                if "id" not in obj:
                    plain.append(e)
                else:
                    reg._register(e._replace(subject=subject, version=version))
                continue
        plain.append(SchemaEntry(subject, version, -1, text, _EXT_TYPE[ext]))
    for e in plain:
        known = by_text.get((e.schema_type, e.schema))
        if known is None:
            # Readable as a reader schema; no record can name it (no id known).
            reg._store[(e.subject, e.version)] = e
        else:
            reg._register(e._replace(id=known))
    if not len(reg) and not reg.ids():
        raise RegistryError(f"{uri}: no schema files found (<subject>/<version>.avsc|.proto|.json, "
                            f"schemas/ids/<id>.json)")
    return reg


# --- a live registry ----------------------------------------------------------------------

_CACHE: Dict[str, Registry] = {}
_CACHE_LOCK = threading.Lock()
MAX_RESPONSE = 64 << 20


class _Client:
    def __init__(self, url: str, bearer_token: Optional[str], timeout: float) -> None:
        parts = urllib.parse.urlsplit(url)
        self.auth = None
        if parts.username is not None:
            cred = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self.auth = "Basic " + base64.b64encode(cred.encode()).decode()
            netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
            url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
        if bearer_token:
            self.auth = f"Bearer {bearer_token}"
        self.base = url.rstrip("/")
        self.timeout = timeout

    def get(self, path: str, *, missing_ok: bool = False):
        return self.call("GET", path, missing_ok=missing_ok)

    def call(self, method: str, path: str, body=None, *, missing_ok: bool = False):
        """One request of the registry's REST API (``body``: sent as JSON); its JSON answer, None
        for a 404 with ``missing_ok``; any other failure a :class:`RegistryError` naming the call."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Accept": "application/vnd.schemaregistry.v1+json, application/json"})
        if data is not None:
            req.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        if self.auth:
            req.add_header("Authorization", self.auth)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                answer = resp.read(MAX_RESPONSE + 1)
        except urllib.error.HTTPError as exc:
            if missing_ok and exc.code == 404:
                return None
            detail = exc.read(4096).decode("utf-8", "replace")
            raise RegistryError(f"{method} {self.base}{path}: HTTP {exc.code} {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise RegistryError(f"{method} {self.base}{path}: {exc}") from None
        if len(answer) > MAX_RESPONSE:
            raise RegistryError(f"{method} {self.base}{path}: response larger than {MAX_RESPONSE} bytes")
        try:
            return json.loads(answer)
        except (ValueError, RecursionError) as exc:
            raise RegistryError(f"{method} {self.base}{path}: not JSON: {exc}") from None


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _cache_name(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    safe = urllib.parse.urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))
    return "registry-" + hashlib.sha256(safe.encode()).hexdigest()[:24] + ".json"


def read_http(url: str, *, bearer_token: Optional[str] = None, cache_dir: Optional[str] = None,
              refresh: bool = False, timeout: float = 30.0) -> Registry:
    """Every subject and version of a live registry, fetched once (then from the cache)."""
    key = f"{url}\0{bearer_token or ''}"
    shown = _redact(url)
    with _CACHE_LOCK:
        if not refresh and key in _CACHE:
            return _CACHE[key]
    cache_file = os.path.join(cache_dir, _cache_name(url)) if cache_dir else None
    if cache_file and not refresh and os.path.exists(cache_file):
        with open(cache_file, "rb") as fh:
            rows = json.load(fh)
    else:
        rows = _fetch(_Client(url, bearer_token, timeout))
        if cache_file and cache_dir:
            os.makedirs(cache_dir, exist_ok=True)
            atomic_write(cache_file, json.dumps(rows).encode(), fsync=False)
    reg = Registry(shown)
    for row in rows:
        try:
            e = parse_schema_value(row)
        except _Bad as exc:
            reg.problems.append(f"{shown}: {row.get('subject')!r} version {row.get('version')}: {exc}")
            continue
        reg._register(e)
    with _CACHE_LOCK:
        _CACHE[key] = reg
    return reg


def _redact(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _fetch(client: _Client) -> list:
    subjects = client.get("/subjects?deleted=true")
    if not isinstance(subjects, list):
        raise RegistryError(f"GET {client.base}/subjects: not a list")
    contexts = client.get("/contexts", missing_ok=True) or []
    seen = set(subjects)
    for ctx in contexts:
        if isinstance(ctx, str) and ctx not in (".", ""):
            more = client.get(f"/subjects?deleted=true&subjectPrefix={_q(':' + ctx + ':')}",
                              missing_ok=True) or []
            subjects += [s for s in more if s not in seen]
            seen.update(more)
    rows = []
    for s in subjects:
        if not isinstance(s, str):
            continue
        every = client.get(f"/subjects/{_q(s)}/versions?deleted=true") or []
        live = set(client.get(f"/subjects/{_q(s)}/versions", missing_ok=True) or [])
        for v in every:
            obj = client.get(f"/subjects/{_q(s)}/versions/{int(v)}?deleted=true")
            if not isinstance(obj, dict):
                raise RegistryError(f"GET {client.base}/subjects/{s}/versions/{v}: not an object")
            row = {k: obj.get(k) for k in ("subject", "version", "id", "schema", "schemaType",
                                            "references", "metadata", "ruleSet") if obj.get(k) is not None}
            row.setdefault("subject", s)
            row.setdefault("version", int(v))
            row["deleted"] = bool(obj.get("deleted", int(v) not in live))
            rows.append(row)
    return rows
