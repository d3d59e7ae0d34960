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
import time
import urllib.parse
from typing import Annotated, Any, Dict, List, Optional

import msgspec
from msgspec import Meta

from kafkarec._boot.files import atomic_write
from kafkarec._http import NoAnswer, exchange, quote
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

# --- the registry's answers, decoded into checked types -----------------------------------------
#
# Every answer of a registry is decoded here, by msgspec into the type its call expects (strict:
# a bool is no int, a string no number; out of range, missing or of another type is an error), in
# one pass over the bytes.  msgspec, not json.loads and checks by hand: the types say what each
# call reads, and its decoder bounds an answer's nesting (a RecursionError, turned into a
# RegistryError here) where json.loads's checks would have to follow every member.  Its speed is
# not why: a registry is read a few calls per subject, once per process.

#: A schema id.  Confluent's wire format carries it as a big-endian signed int32 (magic 0, then the
#: id: ``AbstractKafkaSchemaSerDe``), and a registry gives none below 0: in a register request -1
#: means "no id given", any id >= 0 is one (``KafkaSchemaRegistry.register``: ``schemaId >= 0``)
SchemaId = Annotated[int, Meta(ge=0, le=2**31 - 1)]
#: A subject's version: numbered from 1 (-1 names "latest" in a request, never in an answer)
Version = Annotated[int, Meta(ge=1, le=2**31 - 1)]


class Schema(msgspec.Struct):
    """``GET /subjects/{s}/versions/{v}``: Confluent's ``Schema`` entity.  ``references``,
    ``metadata`` and ``ruleSet`` are judged by :func:`parse_schema_value`, as in ``_schemas``."""
    id: SchemaId
    version: Version
    schema: str
    subject: Optional[str] = None
    schemaType: Optional[str] = None
    references: Any = None
    metadata: Any = None
    ruleSet: Any = None
    deleted: Optional[bool] = None


class RegisterSchemaResponse(msgspec.Struct):
    """``POST /subjects/{s}/versions``: the id the registry gave the schema."""
    id: SchemaId


class SubjectVersion(msgspec.Struct):
    """``POST /subjects/{s}`` (is this schema registered under s?): the version it holds there
    (the answer is a whole ``Schema``; its version is what is read)."""
    version: Version


class SchemaString(msgspec.Struct):
    """``GET /schemas/ids/{id}``: the schema an id names."""
    schema: str


class Mode(msgspec.Struct):
    """``GET /mode[/{s}]``: READWRITE, READONLY, IMPORT..."""
    mode: str


def decode_answer(call: str, body: bytes, type: Any) -> Any:
    """``body``, a registry's answer to ``call`` (``"GET https://host/subjects"``), as ``type``;
    anything else is one :class:`RegistryError` line naming the call, the member and its value."""
    try:
        return msgspec.json.decode(body, type=type)
    except msgspec.ValidationError as exc:
        raise RegistryError(f"{call}: unexpected answer: {_where(str(exc), body)}") from None
    except msgspec.DecodeError as exc:
        raise RegistryError(f"{call}: the answer is not JSON ({exc}): {quote(body, 100)!r}") from None
    except RecursionError:
        raise RegistryError(f"{call}: the answer nests deeper than kafkarec reads") from None


_PATH = re.compile(r"\.([^.\[]+)|\[([0-9]+)\]")
_MISSING = re.compile(r"Object missing required field `([^`]*)`")
_SHOWN = 60


class _Raw(str):
    """A JSON number as its text (an answer's 1e400 or 2**64 shown as it came)."""


def _where(message: str, body: bytes) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$[0]``` as ``$[0] = "x": Expected `int`, got `str```
    (the member, its value as the answer holds it, what was expected)."""
    text, _, at = message.rpartition(" - at ")
    if not text:
        text, at = message, "`$`"
    path = at.strip("`")
    try:
        value = json.loads(body, parse_int=_Raw, parse_float=_Raw, parse_constant=_Raw)
        for key, index in _PATH.findall(path[1:]):
            value = value[key] if key else value[int(index)]
    except (ValueError, RecursionError, LookupError, TypeError):
        return f"{path}: {text}"
    missing = _MISSING.fullmatch(text)
    if missing:
        return f"{path}.{missing.group(1)} is missing (in {_show(value, [_SHOWN])})"
    return f"{path} = {_show(value, [_SHOWN])}: {text}"


def _show(v, budget: list) -> str:
    """``v`` as JSON, cut to the budget's characters (which also bounds how deep it goes)."""
    if budget[0] <= 0:
        return "..."
    if isinstance(v, _Raw):
        out = str(v)
    elif isinstance(v, (str, bool)) or v is None:
        out = json.dumps(v)
    elif isinstance(v, list):
        budget[0] -= 1
        out = "[" + ", ".join(_show(x, budget) for x in v[:8]) + (", ...]" if len(v) > 8 else "]")
    else:
        budget[0] -= 1
        items = list(v.items())
        out = "{" + ", ".join(f"{json.dumps(k)}: {_show(x, budget)}" for k, x in items[:8]) + (
            ", ...}" if len(items) > 8 else "}")
    budget[0] -= len(out)
    return out if len(out) <= _SHOWN else out[:_SHOWN] + "..."


class _Client:
    """A registry's REST API: each call bounded in time (``timeout`` seconds, connecting, sending
    and reading the whole answer) and in size (:data:`MAX_RESPONSE`), its answer decoded by
    :func:`decode_answer`; every failure a :class:`RegistryError` naming the call."""

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

    def get(self, path: str, type: Any, *, missing_ok: bool = False):
        return self.call("GET", path, type=type, missing_ok=missing_ok)

    def call(self, method: str, path: str, body=None, *, type: Any, missing_ok: bool = False):
        """One request of the registry's REST API (``body``: sent as JSON); its answer as ``type``,
        None for a 404 with ``missing_ok``; any other failure a :class:`RegistryError` naming the call."""
        call = f"{method} {self.base}{path}"
        headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/vnd.schemaregistry.v1+json"
        if self.auth:
            headers["Authorization"] = self.auth
        try:
            answer = exchange(method, self.base + path, deadline=time.monotonic() + self.timeout,
                              max_answer=MAX_RESPONSE, body=data, headers=headers)
        except NoAnswer as exc:
            if exc.kind == "timeout":
                part = "no answer" if exc.status is None else f"HTTP {exc.status}, but no whole answer"
                raise RegistryError(f"{call}: {part} within the timeout of {self.timeout:g} s") from None
            raise RegistryError(f"{call}: {exc}") from None
        if missing_ok and answer.status == 404:
            return None
        if not 200 <= answer.status < 300:
            raise RegistryError(f"{call}: HTTP {answer.status} {quote(answer.body)}") from None
        return decode_answer(call, answer.body, type)


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
    subjects = client.get("/subjects?deleted=true", List[str])
    contexts = client.get("/contexts", List[str], missing_ok=True) or []
    seen = set(subjects)
    for ctx in contexts:
        if ctx not in (".", ""):
            more = client.get(f"/subjects?deleted=true&subjectPrefix={_q(':' + ctx + ':')}", List[str],
                              missing_ok=True) or []
            subjects += [s for s in more if s not in seen]
            seen.update(more)
    rows = []
    for s in subjects:
        every = client.get(f"/subjects/{_q(s)}/versions?deleted=true", List[Version])
        live = set(client.get(f"/subjects/{_q(s)}/versions", List[Version], missing_ok=True) or [])
        for v in every:
            obj = client.get(f"/subjects/{_q(s)}/versions/{v}?deleted=true", Schema)
            row = {k: getattr(obj, k) for k in ("subject", "version", "id", "schema", "schemaType",
                                                 "references", "metadata", "ruleSet") if getattr(obj, k) is not None}
            row.setdefault("subject", s)
            row["deleted"] = obj.deleted if obj.deleted is not None else v not in live
            rows.append(row)
    return rows
