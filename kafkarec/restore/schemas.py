"""Schema ids carried across registries (``--source-registry``, ``--target-registry``): a restore
into a cluster served by another Schema Registry registers there each schema its records use, and
rewrites each record's id to the one the target gave (docs/restore.md, "Schema ids across
registries").

Why this way: a Confluent-framed key or value names its writer schema by an id (magic ``0x00``, then
the id as a big-endian int32: :mod:`kafkarec.registry.wire`) that means something only in the
registry that gave it.  Two registries give one schema different ids (confluentinc/schema-registry
#878), so the records are rewritten, not guessed at:

* whether a topic's values (keys) are framed is decided from the SOURCE registry's subjects and the
  subject-naming strategy, never from a first byte of 0 alone.  TopicNameStrategy: the topic's
  values are framed when the registry holds ``<topic>-value`` (keys: ``<topic>-key``), and then a
  value without an id prefix, or whose id the source registry does not know, is named (``unknown``)
  and left as it was.  RecordNameStrategy and TopicRecordNameStrategy subjects do not name the
  topic's keys or values, so there a field is framed when its id is registered under a subject of
  the strategy (a record-named subject; ``<topic>-<record>``), and one whose prefix names an id the
  source registry does not hold under such a subject is named and left;
* each schema used is registered on the target under its subject (the target topic's, after
  ``--rename``, for the topic strategies), its references first, each under its own subject with
  the version the target gave it.  The id is kept where the target allows it: the subject is in
  IMPORT mode and the id is free there (or already names the same schema); otherwise the id the
  target answers is taken;
* the id is rewritten in the 5-byte prefix and in the ``__value_schema_id`` / ``__key_schema_id``
  headers that carry a 4-byte id (magic 0); a header carrying a GUID (magic 1) names the schema by
  its content and is kept.

:class:`IdRewriter` is the rule over a fixed id map (what ``--check`` rebuilds from the evidence);
:class:`SchemaTranslation` is the restore's, which resolves each id on first use through both
registries.  Both rewrite a record the same way, so the evidence's map replays the restore."""
from __future__ import annotations

import threading
import urllib.parse
from typing import Dict, List, NamedTuple, Optional, Tuple

from kafkarec.errors import RegistryError, RestoreError, UsageError

__all__ = ["STRATEGIES", "IdMapping", "Unknown", "IdRewriter", "SchemaTranslation", "translation_for",
           "rewriter_from_evidence", "VALUE_HEADER", "KEY_HEADER"]

#: the subject-naming strategies (Confluent's TopicNameStrategy, RecordNameStrategy,
#: TopicRecordNameStrategy)
STRATEGIES = ("topic", "record", "topic_record")
#: the headers that carry a record's schema id (Confluent's HeaderSchemaIdSerializer; the same
#: names :mod:`kafkarec.registry.wire` reads, kept here so that a restore needs no numpy)
VALUE_HEADER, KEY_HEADER = "__value_schema_id", "__key_schema_id"
#: the unknown ids a translation names one by one (past that, counted)
MAX_NAMED = 100


class IdMapping(NamedTuple):
    """A source id and the target's id for it, registered under ``subject`` as ``version`` on the
    target; ``kept``: the target took the source's id (IMPORT mode, the id free)."""
    source_id: int
    target_id: int
    subject: str
    version: int
    kept: bool


class Unknown(NamedTuple):
    """A framed field left as it was: ``field`` ``"key"``, ``"value"`` or a header's name;
    ``schema_id`` None when the field holds no id prefix."""
    topic: str
    partition: int
    offset: int
    field: str
    schema_id: Optional[int]

    def line(self) -> str:
        what = (f"schema id {self.schema_id}, which the source registry does not hold under a subject of the strategy"
                if self.schema_id is not None else "no schema id (no magic byte 0 and 4-byte id)")
        return f"{self.topic}-{self.partition} offset {self.offset} {self.field}: {what}; left as it was"


def _id_of(b: Optional[bytes]) -> Optional[int]:
    """The id of a Confluent prefix (magic 0 + big-endian int32), None when there is none."""
    if b is None or len(b) < 5 or b[0] != 0:
        return None
    return int.from_bytes(b[1:5], "big", signed=True)


def _with_id(b: bytes, schema_id: int) -> bytes:
    return b[:1] + schema_id.to_bytes(4, "big", signed=True) + b[5:]


class IdRewriter:
    """The rewriting rule over ids resolved by :meth:`resolve` (here: the fixed map ``ids``) and
    fields judged framed by :meth:`framed` (here: ``framed``, ``{(topic, is_key)}``; None: every
    field may be, as with the record strategies)."""

    def __init__(self, strategy: str, ids: Dict[int, int], framed=None) -> None:
        self.strategy = strategy
        self.ids = dict(ids)
        self._framed = None if framed is None else set(framed)
        self.unknown: List[Unknown] = []
        self.unknown_count = 0
        self._named = set()

    def framed(self, topic: str, is_key: bool) -> bool:
        return True if self._framed is None else (topic, is_key) in self._framed

    def resolve(self, topic: str, is_key: bool, schema_id: int) -> Optional[int]:
        return self.ids.get(schema_id)

    def _name(self, topic: str, partition: int, offset: int, field: str, schema_id: Optional[int]) -> None:
        key = (topic, partition, offset, field)
        if key in self._named:      # a resumed run reads a record again to pair it
            return
        self._named.add(key)
        self.unknown_count += 1
        if len(self.unknown) < MAX_NAMED:
            self.unknown.append(Unknown(topic, partition, offset, field, schema_id))

    def _field(self, topic: str, partition: int, offset: int, is_key: bool, b: Optional[bytes],
               field: str) -> Optional[bytes]:
        sid = _id_of(b)
        if sid is None:
            # no prefix: named where the subjects say the field is framed (the record strategies
            # cannot say so of a topic's fields: there a field without a prefix is not framed)
            if b is not None and self._framed is not None:
                self._name(topic, partition, offset, field, None)
            return b
        tid = self.resolve(topic, is_key, sid)
        if tid is None:
            self._name(topic, partition, offset, field, sid)
            return b
        return b if tid == sid else _with_id(b, tid)

    def rewrite(self, topic: str, partition: int, r):
        """``r`` (a :class:`kafkarec.restore.source.Record`) with its ids translated (itself when
        nothing changes)."""
        key, value, headers = r.key, r.value, r.headers
        changed = False
        for is_key, name in ((False, VALUE_HEADER), (True, KEY_HEADER)):
            if not self.framed(topic, is_key):
                continue
            carried = [i for i, (k, v) in enumerate(headers) if k == name and v is not None]
            if carried:
                # DualSchemaIdDeserializer: a header id wins over the prefix (the value is bare)
                new = list(headers) if not changed else headers
                for i in carried:
                    k, v = new[i]
                    if v[:1] == b"\x00":        # magic 1 (a GUID) names the schema by content: kept
                        w = self._field(topic, partition, r.offset, is_key, v, name)
                        if w is not v:
                            new[i] = (k, w)
                            changed = True
                headers = new
                continue
            if is_key:
                key = self._field(topic, partition, r.offset, True, key, "key")
            else:
                value = self._field(topic, partition, r.offset, False, value, "value")
        if key is r.key and value is r.value and not changed:
            return r
        return r._replace(key=key, value=value, headers=headers)


class SchemaTranslation(IdRewriter):
    """The restore's translation: ids resolved on first use, each schema registered on the target
    (:meth:`resolve`); ``mappings`` lists what was registered."""

    def __init__(self, source_registry: str, target_registry: str, strategy: str = "topic", rename=(),
                 storage_options=None, timeout: float = 30.0) -> None:
        from kafkarec.registry import load
        from kafkarec.registry._sources import _Client
        if strategy not in STRATEGIES:
            raise UsageError(f"subject strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
        try:
            self.source = load(source_registry, storage_options=storage_options)
        except (RegistryError, OSError) as e:
            raise UsageError(f"--source-registry {source_registry}: {e}") from None
        if not str(target_registry).lower().startswith(("http://", "https://")):
            raise UsageError(f"--target-registry {target_registry}: not a registry URL (http:// or https://)")
        super().__init__(strategy, {})
        self.source_registry, self.target_registry = str(source_registry), str(target_registry)
        self._target = _Client(str(target_registry), None, timeout)
        self._rename = dict(rename)
        self._subjects = set(self.source.subjects(deleted=True))
        self._framed = None if strategy != "topic" else {
            (s[:-len(suffix)], suffix == "-key") for s in self._subjects for suffix in ("-key", "-value")
            if s.endswith(suffix) and len(s) > len(suffix)}
        self.mappings: List[IdMapping] = []
        self._refused = set()
        self._registered: Dict[Tuple[str, int, str], Tuple[int, int, bool]] = {}
        self._lock = threading.Lock()

    # --- which subject a source id goes under on the target ---------------------------------
    def _subject(self, topic: str, is_key: bool, schema_id: int) -> Optional[str]:
        target_topic = self._rename.get(topic, topic)
        if self.strategy == "topic":
            return f"{target_topic}-{'key' if is_key else 'value'}"
        used = sorted(s for s in self.source.subjects_of(schema_id)
                      if not s.endswith(("-key", "-value")) and not s.startswith(":"))
        if self.strategy == "record":
            return used[0] if used else None
        mine = [s for s in used if s.startswith(topic + "-")]
        return f"{target_topic}-{mine[0][len(topic) + 1:]}" if mine else None

    def resolve(self, topic: str, is_key: bool, schema_id: int) -> Optional[int]:
        with self._lock:
            if schema_id in self.ids:
                return self.ids[schema_id]
            if schema_id in self._refused:
                return None
            entry = self.source.by_id(schema_id)
            subject = None if entry is None else self._subject(topic, is_key, schema_id)
            if subject is None:
                self._refused.add(schema_id)
                return None
            try:
                tid, version, kept = self._register(entry, subject, 0)
            except RegistryError as e:
                raise RestoreError(self.target_registry, f"registering schema id {schema_id} under {subject}: {e}",
                                   topic=topic) from None
            self.ids[schema_id] = tid
            self.mappings.append(IdMapping(schema_id, tid, subject, version, kept))
            return tid

    # --- the target registry ------------------------------------------------------------------
    def _register(self, entry, subject: str, depth: int) -> Tuple[int, int, bool]:
        """``entry`` registered under ``subject`` on the target, its references first: (the target's
        id, its version there, whether the source's id was kept)."""
        from kafkarec.registry._model import MAX_REFERENCE_DEPTH, qualify_reference
        from kafkarec.registry._sources import RegisterSchemaResponse, SubjectVersion
        key = (entry.subject, entry.version, subject)
        if key in self._registered:
            return self._registered[key]
        if depth > MAX_REFERENCE_DEPTH:
            raise RegistryError(f"schema references of {entry.subject!r} nest deeper than {MAX_REFERENCE_DEPTH}")
        refs = []
        for r in entry.references:
            dep = self.source.get(qualify_reference(entry.subject, r.subject), r.version)
            _, dep_version, _ = self._register(dep, r.subject, depth + 1)
            refs.append({"name": r.name, "subject": r.subject, "version": dep_version})
        body = {"schema": entry.schema}
        if entry.schema_type != "AVRO":
            body["schemaType"] = entry.schema_type
        if refs:
            body["references"] = refs
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}"
        keep = self._importing(subject) and self._id_free(entry)
        # the answers decoded into checked types (kafkarec.registry._sources): an id the records'
        # int32 prefix cannot carry, or no id, is a RegistryError naming the call and the value
        tid = self._target.call("POST", path + "/versions", dict(body, id=entry.id) if keep else body,
                                type=RegisterSchemaResponse).id
        # the version the target gave it (a reference names a version, not an id)
        version = self._target.call("POST", path, body, type=SubjectVersion).version
        self._registered[key] = (tid, version, keep and tid == entry.id)
        return self._registered[key]

    def _importing(self, subject: str) -> bool:
        """Whether the target takes ids for ``subject`` (its mode, or the global one, is IMPORT);
        a registry without the mode API takes none."""
        from kafkarec.registry._sources import Mode
        try:
            mode = self._target.call("GET", f"/mode/{urllib.parse.quote(subject, safe='')}?defaultToGlobal=true",
                                     type=Mode, missing_ok=True)
            if mode is None:
                mode = self._target.call("GET", "/mode", type=Mode, missing_ok=True)
        except RegistryError:
            return False
        return mode is not None and mode.mode == "IMPORT"

    def _id_free(self, entry) -> bool:
        """The source's id unused on the target, or naming the same schema there."""
        from kafkarec.registry._sources import SchemaString
        if not 0 <= entry.id < 2**31:      # no registry gives such an id (a source's _schemas may hold one)
            return False
        held = self._target.call("GET", f"/schemas/ids/{entry.id}", type=SchemaString, missing_ok=True)
        return held is None or held.schema == entry.schema

    # --- the evidence ---------------------------------------------------------------------------
    def evidence(self, topics) -> dict:
        """What the evidence keeps of the translation: enough for :func:`rewriter_from_evidence` to
        rewrite the source's records as the restore did."""
        return {"source_registry": self.source_registry, "target_registry": self.target_registry,
                "subject_strategy": self.strategy,
                "framed": None if self._framed is None else [
                    {"topic": t, "key": self.framed(t, True), "value": self.framed(t, False)} for t in sorted(topics)],
                "ids": [m._asdict() for m in sorted(self.mappings)],
                "unknown": {"count": self.unknown_count, "named": [u._asdict() for u in self.unknown]}}


def rewriter_from_evidence(schemas) -> IdRewriter:
    """The rule the restore applied, from its evidence's ``schemas`` section
    (:class:`kafkarec.restore.evidence.SchemasEvidence`, decoded and checked)."""
    framed = None
    if schemas.framed is not None:
        framed = {(f.topic, is_key) for f in schemas.framed for is_key in (True, False)
                  if (f.key if is_key else f.value)}
    return IdRewriter(schemas.subject_strategy, {m.source_id: m.target_id for m in schemas.ids}, framed)


_TRANSLATIONS: Dict[tuple, SchemaTranslation] = {}
_TRANSLATIONS_LOCK = threading.Lock()


def translation_for(spec) -> Optional[SchemaTranslation]:
    """The one translation of a restore's spec (None without registries): made once per process, so
    that every partition of a run shares its registrations and its evidence."""
    if spec.source_registry is None:
        return None
    key = (spec.source_registry, spec.target_registry, spec.subject_strategy, spec.rename, spec.restore_id)
    with _TRANSLATIONS_LOCK:
        tr = _TRANSLATIONS.get(key)
        if tr is None:
            tr = _TRANSLATIONS[key] = SchemaTranslation(spec.source_registry, spec.target_registry,
                                                        spec.subject_strategy, spec.rename,
                                                        spec.storage_options, spec.timeout)
        return tr
