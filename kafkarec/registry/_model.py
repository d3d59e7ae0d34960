"""The registry as plain data: subjects, versions, ids and GUIDs, per context.

The state kept is the one Confluent's Schema Registry keeps in memory
(``InMemoryCache``): a store keyed by (subject, version) and, per context, the
map id -> {subject: version} that ``GET /schemas/ids/{id}`` reads, plus the map
MD5 (GUID) -> id that header ids (magic 1) resolve through.  A :class:`Registry`
holds no connection and no file handle: it pickles, so Spark ships it to
executors, which never call a live registry.
"""
from __future__ import annotations

import hashlib
import json
import struct
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from kafkarec.errors import KafkaRecError, RegistryError  # noqa: F401 (re-exported)

__all__ = ["Reference", "SchemaEntry", "Registry", "RegistryError", "SCHEMA_TYPES",
           "split_context", "context_of", "qualify_reference", "schema_guid"]

SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")
DEFAULT_CONTEXT = "."
# How deep schema references may nest (a reference cycle or a hostile registry stops here).
MAX_REFERENCE_DEPTH = 64




class Reference(NamedTuple):
    """One schema reference: ``name`` is the import path (Protobuf), the full name (Avro) or the
    ``$ref`` URL (JSON Schema) under which ``subject``/``version`` is imported."""
    name: str
    subject: str
    version: int


class SchemaEntry(NamedTuple):
    """One version of one subject, as the registry stores it (``SchemaValue``)."""
    subject: str                 # qualified: ``name`` or ``:.ctx:name``
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"    # AVRO, PROTOBUF or JSON (no schemaType means AVRO)
    references: Tuple[Reference, ...] = ()
    deleted: bool = False
    metadata: Optional[dict] = None
    rule_set: Optional[dict] = None
    md5: Optional[bytes] = None  # the ``md5`` field when the registry stored one
    offset: Optional[int] = None  # where in ``_schemas`` it was read, if it was

    @property
    def guid(self) -> str:
        """The GUID a header id (magic 1) names this schema by (UUID text of its MD5)."""
        return _uuid_text(self.md5 or schema_guid(self.schema, self.references, self.metadata,
                                                  self.rule_set))

    def rest(self) -> dict:
        """This version in the shape ``GET /subjects/{s}/versions/{v}`` returns."""
        out = {"subject": self.subject, "version": self.version, "id": self.id,
               "guid": self.guid}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = [r._asdict() for r in self.references]
        if self.metadata:
            out["metadata"] = self.metadata
        if self.rule_set:
            out["ruleSet"] = self.rule_set
        out["schema"] = self.schema
        if self.deleted:
            out["deleted"] = True
        return out


def _uuid_text(b: bytes) -> str:
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _java_sorted(items):
    # Java's TreeMap/TreeSet order strings by UTF-16 code units, not by code points.
    return sorted(items, key=lambda s: s.encode("utf-16-be"))


def _u(md, s) -> None:
    if s is not None:
        md.update(str(s).encode("utf-8"))


def schema_guid(schema: str, references=(), metadata: Optional[dict] = None,
                rule_set: Optional[dict] = None) -> bytes:
    """The registry's MD5 of a schema (``Schema.updateHash``): schema text, then each reference's
    name, subject and version (4 bytes big-endian), then metadata (tags, properties, sensitive,
    sorted) and rule set (migration, domain, encoding rules, enableAt), each after a 1 byte."""
    md = hashlib.md5()
    _u(md, schema)
    for r in references or ():
        _u(md, r.name)
        _u(md, r.subject)
        if r.version is not None:
            md.update(struct.pack(">i", int(r.version)))
    if metadata is not None:
        md.update(b"\x01")
        tags = metadata.get("tags") or {}
        for k in _java_sorted(tags):
            _u(md, k)
            for v in _java_sorted(set(tags[k] or ())):
                _u(md, v)
        props = metadata.get("properties") or {}
        for k in _java_sorted(props):
            _u(md, k)
            _u(md, props[k])
        for s in _java_sorted(set(metadata.get("sensitive") or ())):
            _u(md, s)
    if rule_set is not None:
        md.update(b"\x01")
        for group in ("migrationRules", "domainRules", "encodingRules"):
            for rule in rule_set.get(group) or ():
                for f in ("name", "doc", "kind", "mode", "type"):
                    _u(md, rule.get(f))
                for t in _java_sorted(set(rule.get("tags") or ())):
                    _u(md, t)
                params = rule.get("params") or {}
                for k in _java_sorted(params):
                    _u(md, k)
                    _u(md, params[k])
                for f in ("expr", "onSuccess", "onFailure"):
                    _u(md, rule.get(f))
                if rule.get("disabled"):
                    md.update(b"\x01")
        _u(md, rule_set.get("enableAt"))
    return md.digest()


def split_context(subject: Optional[str]) -> Tuple[str, str]:
    """(context, unqualified subject) of a subject, as ``QualifiedSubject`` splits it:
    ``:.ctx:name`` -> (``.ctx``, ``name``); ``:.ctx`` -> (``.ctx``, ``""``); ``name`` -> (``.``, ``name``)."""
    s = subject or ""
    if s.startswith(":."):
        ix = s.find(":", 2)
        if ix >= 0:
            return s[1:ix], s[ix + 1:]
        return s[1:], ""
    if s.startswith(":*:"):
        return "*", s[3:]
    return DEFAULT_CONTEXT, s


def context_of(subject: Optional[str]) -> str:
    return split_context(subject)[0]


def qualify_reference(parent: str, ref_subject: str) -> str:
    """A reference's subject, read in its parent's context unless it names its own
    (``QualifiedSubject.qualifySubjectWithParent``)."""
    ctx = context_of(parent)
    if ref_subject.startswith(":") or ctx == DEFAULT_CONTEXT:
        return ref_subject
    return f":{ctx}:{ref_subject}"


class Registry:
    """Every schema of one registry, from one source (a ``_schemas`` log, a folder of schema
    files, or a live registry fetched once).  Build it with :func:`kafkarec.registry.load`.

    ``problems`` lists what the source held that the registry would log and skip
    (duplicate ids with other text, records that do not parse...), one string each."""

    def __init__(self, source: str = "") -> None:
        self.source = source
        self.problems: List[str] = []
        # _schemas only: how many records of each kind the replay met
        self.record_counts: Dict[str, int] = {}
        self._store: Dict[Tuple[str, int], SchemaEntry] = {}
        # context -> id -> {subject: version}  (InMemoryCache.guidToSubjectVersions)
        self._ids: Dict[str, Dict[int, Dict[str, int]]] = {}
        # context -> md5 -> id  (InMemoryCache.hashToGuid)
        self._guids: Dict[str, Dict[bytes, int]] = {}
        # context -> id -> entry known by id only (``GET /schemas/ids/{id}`` saved to a file)
        self._id_only: Dict[str, Dict[int, SchemaEntry]] = {}

    # --- what the replay and the loaders call (InMemoryCache's operations) ---------------
    def _register(self, entry: SchemaEntry) -> None:
        """A SCHEMA record with a value (registered or soft-deleted): store it and map its id."""
        ctx = context_of(entry.subject)
        old = self._store.get((entry.subject, entry.version))
        if old is not None and old.id != entry.id:
            # the version now holds another id: the old id no longer names it
            users = self._ids.get(ctx, {}).get(old.id)
            if users and users.get(entry.subject) == entry.version:
                del users[entry.subject]
                if not users:
                    del self._ids[ctx][old.id]
        self._store[(entry.subject, entry.version)] = entry
        self._ids.setdefault(ctx, {}).setdefault(entry.id, {})[entry.subject] = entry.version
        md5 = entry.md5 or schema_guid(entry.schema, entry.references, entry.metadata,
                                       entry.rule_set)
        self._guids.setdefault(ctx, {})[md5] = entry.id

    def _add_id_only(self, entry: SchemaEntry, context: str = DEFAULT_CONTEXT) -> None:
        """A schema known only by its id (no subject or version)."""
        self._id_only.setdefault(context, {})[entry.id] = entry
        md5 = entry.md5 or schema_guid(entry.schema, entry.references, entry.metadata,
                                       entry.rule_set)
        self._guids.setdefault(context, {}).setdefault(md5, entry.id)

    def _tombstone(self, subject: str, version: int) -> None:
        """A SCHEMA tombstone (hard delete): the version goes, and the id with its last use."""
        old = self._store.pop((subject, version), None)
        if old is None:
            return
        ids = self._ids.get(context_of(subject), {})
        users = ids.get(old.id)
        if not users:
            return
        if users.get(subject) == version:
            del users[subject]
        if not users:
            del ids[old.id]

    def _delete_subject(self, subject: str, upto: int) -> None:
        # the subject's stored versions, not 1..upto: a record may name version 2**31-1
        for v in sorted(v for s, v in self._store if s == subject and v <= upto):
            e = self._store[(subject, v)]
            if not e.deleted:
                self._register(e._replace(deleted=True))

    def _subject_matcher(self, subject: Optional[str]):
        if subject is None:
            return lambda s: True
        ctx, name = split_context(subject)
        if name == "" and subject.startswith(":"):
            return lambda s: s == subject or context_of(s) == ctx
        return lambda s: s == subject

    def _clear_subject(self, subject: Optional[str]) -> None:
        """CLEAR_SUBJECT: soft-deleted versions of the subject (or of a whole context) go."""
        match = self._subject_matcher(subject)
        ids = self._ids.get(context_of(subject), {})
        for i in list(ids):
            users = ids[i]
            for s, v in list(users.items()):
                if match(s):
                    e = self._store.get((s, v))
                    if e is None or e.deleted:
                        del users[s]
            if not users:
                del ids[i]
        for key in [k for k, e in self._store.items() if match(k[0]) and e.deleted]:
            del self._store[key]

    # --- reading ----------------------------------------------------------------------------
    def subjects(self, *, deleted: bool = False) -> List[str]:
        """Subjects with a live version (``GET /subjects``), or with any version (``deleted=True``)."""
        out = {s for (s, _), e in self._store.items() if deleted or not e.deleted}
        return sorted(out)

    def versions(self, subject: str, *, deleted: bool = False) -> List[int]:
        return sorted(v for (s, v), e in self._store.items()
                      if s == subject and (deleted or not e.deleted))

    def entries(self) -> Iterator[SchemaEntry]:
        """Every stored version, soft-deleted ones too, by subject and version."""
        for key in sorted(self._store):
            yield self._store[key]

    def get(self, subject: str, version="latest") -> SchemaEntry:
        """One version of a subject: ``"latest"`` (or -1) is the highest live version; a number
        may name a soft-deleted version (as ``?deleted=true`` does)."""
        if version in ("latest", -1, "-1", None):
            live = self.versions(subject)
            if not live:
                known = ", ".join(self.subjects()[:20]) or "none"
                raise RegistryError(f"subject {subject!r} has no live version in {self.source} "
                                    f"(subjects: {known})")
            return self._store[(subject, live[-1])]
        try:
            v = int(version)
        except (TypeError, ValueError):
            raise RegistryError(f"version {version!r}: a number or 'latest'") from None
        e = self._store.get((subject, v))
        if e is None:
            raise RegistryError(f"subject {subject!r} has no version {v} in {self.source}")
        return e

    def by_id(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> Optional[SchemaEntry]:
        """The schema a writer's id names in a context (``GET /schemas/ids/{id}``), soft-deleted
        versions included; None when the id is unknown (never registered, or hard-deleted)."""
        users = self._ids.get(context, {}).get(schema_id)
        if not users:
            return self._id_only.get(context, {}).get(schema_id)
        # Every user of an id holds the same text; take the smallest (subject, version) so the
        # answer does not depend on replay order.
        s, v = min(users.items())
        return self._store.get((s, v))

    def subjects_of(self, schema_id: int, context: str = DEFAULT_CONTEXT) -> Dict[str, int]:
        """``{subject: version}`` of every stored version an id names in a context (empty for an
        id known by id only, or not at all)."""
        return dict(self._ids.get(context, {}).get(schema_id, {}))

    def id_for_guid(self, guid: bytes, context: str = DEFAULT_CONTEXT) -> Optional[int]:
        return self._guids.get(context, {}).get(bytes(guid))

    def ids(self, context: str = DEFAULT_CONTEXT) -> List[int]:
        return sorted(set(self._ids.get(context, {})) | set(self._id_only.get(context, {})))

    def contexts(self) -> List[str]:
        return sorted(c for c, m in self._ids.items() if m)

    def references(self, entry: SchemaEntry) -> List[Tuple[str, SchemaEntry]]:
        """Every schema ``entry`` imports, directly or not, as (reference name, entry), each
        once, dependencies before the schemas that use them.  Raises RegistryError for a
        reference the registry does not hold or references nested deeper than 64."""
        out: List[Tuple[str, SchemaEntry]] = []
        seen = set()

        def walk(e: SchemaEntry, depth: int, path: tuple) -> None:
            if depth > MAX_REFERENCE_DEPTH:
                raise RegistryError(f"schema references of {entry.subject!r} nest deeper than "
                                    f"{MAX_REFERENCE_DEPTH}")
            for r in e.references:
                subj = qualify_reference(e.subject, r.subject)
                key = (r.name, subj, r.version)
                if key in seen:
                    continue
                if (subj, r.version) in path:
                    raise RegistryError(f"schema references form a cycle through {subj!r} "
                                        f"version {r.version}")
                dep = self.get(subj, r.version)
                walk(dep, depth + 1, path + ((subj, r.version),))
                seen.add(key)
                out.append((r.name, dep))

        walk(entry, 0, ((entry.subject, entry.version),))
        return out

    def listing(self, *, deleted: bool = True) -> List[dict]:
        """Subjects, versions, ids and types (what ``kafkarec schemas --json`` prints)."""
        return [e.rest() for e in self.entries() if deleted or not e.deleted]

    def __len__(self) -> int:
        return len(self._store)

    def __repr__(self) -> str:
        return (f"Registry({self.source!r}: {len(self.subjects(deleted=True))} subjects, "
                f"{len(self._store)} versions, {len(self.problems)} problems)")

    # Plain data: pickles by value (dicts of tuples), nothing to reconnect.
    def __getstate__(self):
        return {"source": self.source, "problems": list(self.problems),
                "record_counts": dict(self.record_counts),
                "entries": [tuple(e) for e in self._store.values()],
                "ids": self._ids, "guids": self._guids,
                "id_only": {c: [tuple(e) for e in m.values()] for c, m in self._id_only.items()}}

    def __setstate__(self, state):
        self.source = state["source"]
        self.problems = state["problems"]
        self.record_counts = state.get("record_counts", {})
        self._store = {}
        for t in state["entries"]:
            e = SchemaEntry(*t)
            e = e._replace(references=tuple(Reference(*r) for r in e.references))
            self._store[(e.subject, e.version)] = e
        self._ids = state["ids"]
        self._guids = state["guids"]
        self._id_only = {}
        for c, rows in state.get("id_only", {}).items():
            for t in rows:
                e = SchemaEntry(*t)
                self._id_only.setdefault(c, {})[e.id] = e._replace(
                    references=tuple(Reference(*r) for r in e.references))

    def to_json(self) -> str:
        return json.dumps(self.listing(), indent=2, sort_keys=False)
