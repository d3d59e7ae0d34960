"""The registry's own topic, ``_schemas``, replayed as Confluent's Schema Registry replays it.

The rules are those of ``KafkaStoreReaderThread`` + ``KafkaStoreMessageHandler`` +
``InMemoryCache`` (confluentinc/schema-registry), record by record in offset order:

* a key that is not JSON, or names no known ``keytype``, is logged and skipped (here: a
  problem); keys are parsed as JSON, never compared as bytes (Karapace writes the fields in
  another order);
* ``NOOP``, ``CONFIG``, ``MODE``, ``CONTEXT`` and ``ASSOC`` records change no schema;
* ``SCHEMA`` with a value: stored under the key's subject and version; the id then resolves
  (in the subject's context), even when the value says ``deleted: true`` (a soft delete);
  the same id arriving again with other schema text is ignored (a problem: "duplicate id");
* ``SCHEMA`` with no value (a tombstone, a hard delete): the version goes, and the id once
  no version uses it;
* tombstones of other key types are ignored;
* ``DELETE_SUBJECT`` {subject, version}: versions 1..version are marked deleted;
* ``CLEAR_SUBJECT`` {subject}: soft-deleted versions of the subject are forgotten;
* Redpanda: a key carrying ``seq`` is the record of the writer that won only when ``seq``
  equals the record's own offset; other records are skipped ("first writer wins").
"""
from __future__ import annotations

import base64
import json
from typing import Iterable, Optional, Tuple

from kafkarec.registry._model import Reference, Registry, SchemaEntry

__all__ = ["replay", "KEY_TYPES", "read_schemas_log"]

KEY_TYPES = ("ASSOC", "CONFIG", "SCHEMA", "MODE", "NOOP", "DELETE_SUBJECT", "CLEAR_SUBJECT",
             "CONTEXT")
_IGNORED = ("CONFIG", "MODE", "NOOP", "CONTEXT", "ASSOC")


class _Bad(ValueError):
    pass


def _json(raw, what: str):
    try:
        return json.loads(bytes(raw).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _Bad(f"{what} is not JSON: {exc}") from None


def _int(obj: dict, name: str, what: str) -> int:
    v = obj.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or not -2**31 <= v < 2**31:
        raise _Bad(f"{what}: {name} {v!r} is not a 32-bit integer")
    return v


def _str(obj: dict, name: str, what: str) -> str:
    v = obj.get(name)
    if not isinstance(v, str):
        raise _Bad(f"{what}: {name} {v!r} is not a string")
    return v


def _opt_str(obj: dict, name: str, what: str) -> Optional[str]:
    return None if obj.get(name) is None else _str(obj, name, what)


def parse_schema_value(obj, *, offset: Optional[int] = None) -> SchemaEntry:
    """A ``SchemaValue`` (the value of a SCHEMA record, also the REST API's version shape)."""
    if not isinstance(obj, dict):
        raise _Bad("schema value is not a JSON object")
    what = "schema value"
    stype = obj.get("schemaType") or "AVRO"
    if stype not in ("AVRO", "PROTOBUF", "JSON"):
        raise _Bad(f"{what}: schemaType {stype!r} is none of AVRO, PROTOBUF, JSON")
    refs = []
    references = obj.get("references")
    if references is not None and not isinstance(references, list):
        raise _Bad(f"{what}: references {references!r} is not a list")
    for r in references or ():
        if not isinstance(r, dict):
            raise _Bad(f"{what}: a reference is not an object")
        refs.append(Reference(_str(r, "name", "reference"), _str(r, "subject", "reference"),
                              _int(r, "version", "reference")))
    md5 = obj.get("md5")
    md5_bytes = None
    if md5 is not None:
        try:
            md5_bytes = base64.b64decode(md5, validate=True)
        except (ValueError, TypeError):
            raise _Bad(f"{what}: md5 {md5!r} is not base64") from None
        if len(md5_bytes) != 16:
            raise _Bad(f"{what}: md5 is {len(md5_bytes)} bytes, not 16")
    deleted = obj.get("deleted", False)
    if not isinstance(deleted, bool):
        raise _Bad(f"{what}: deleted {deleted!r} is not a boolean")
    meta, rules = obj.get("metadata"), obj.get("ruleSet")
    _check_metadata(meta, what)
    _check_rule_set(rules, what)
    return SchemaEntry(subject=_str(obj, "subject", what), version=_int(obj, "version", what),
                       id=_int(obj, "id", what), schema=_str(obj, "schema", what),
                       schema_type=stype, references=tuple(refs), deleted=deleted,
                       metadata=meta or None, rule_set=rules or None, md5=md5_bytes,
                       offset=offset)


# The registry reads metadata and ruleSet into typed classes (Jackson): a value of
# another JSON shape fails that record's deserialization, and the registry skips it.
def _shape(v, kind, where: str) -> None:
    ok = {"object": lambda x: isinstance(x, dict), "list": lambda x: isinstance(x, list),
          "string": lambda x: isinstance(x, str), "boolean": lambda x: isinstance(x, bool)}[kind]
    if v is not None and not ok(v):
        raise _Bad(f"{where} {v!r} is not a {kind}" if kind != "object" else f"{where} is not an object")


def _member(v, where: str) -> None:
    # members of the registry's sets and maps are strings: a null member is its
    # NullPointerException (TreeSet, and the hash of the schema) and the record is skipped
    if not isinstance(v, str):
        raise _Bad(f"{where} {v!r} is not a string")


def _check_metadata(meta, what: str) -> None:
    where = f"{what}: metadata"
    _shape(meta, "object", where)
    if not meta:
        return
    tags, props, sensitive = meta.get("tags"), meta.get("properties"), meta.get("sensitive")
    _shape(tags, "object", f"{where}.tags")
    for k, vs in (tags or {}).items():
        _shape(vs, "list", f"{where}.tags[{k!r}]")
        for t in vs or ():
            _member(t, f"{where}.tags[{k!r}] member")
    _shape(props, "object", f"{where}.properties")
    for k, v in (props or {}).items():
        _member(v, f"{where}.properties[{k!r}]")
    _shape(sensitive, "list", f"{where}.sensitive")
    for t in sensitive or ():
        _member(t, f"{where}.sensitive member")


def _check_rule_set(rules, what: str) -> None:
    where = f"{what}: ruleSet"
    _shape(rules, "object", where)
    if not rules:
        return
    for group in ("migrationRules", "domainRules", "encodingRules"):
        _shape(rules.get(group), "list", f"{where}.{group}")
        for rule in rules.get(group) or ():
            if not isinstance(rule, dict):
                raise _Bad(f"{where}.{group} member {rule!r} is not an object")
            for f in ("name", "doc", "kind", "mode", "type", "expr", "onSuccess", "onFailure"):
                _shape(rule.get(f), "string", f"{where}.{group} rule {f}")
            _shape(rule.get("tags"), "list", f"{where}.{group} rule tags")
            for t in rule.get("tags") or ():
                _member(t, f"{where}.{group} rule tag")
            _shape(rule.get("params"), "object", f"{where}.{group} rule params")
            for k, v in (rule.get("params") or {}).items():
                _member(v, f"{where}.{group} rule params[{k!r}]")
            _shape(rule.get("disabled"), "boolean", f"{where}.{group} rule disabled")
    enable_at = rules.get("enableAt")
    if enable_at is not None and (isinstance(enable_at, (bool, dict, list))):
        raise _Bad(f"{where}.enableAt {enable_at!r} is not a scalar")


def _apply(reg: Registry, offset: int, key, value) -> Optional[str]:
    """One record; returns what kind it was (for the counts), raises _Bad for a problem."""
    if key is None:
        raise _Bad("record without a key")
    k = _json(key, "key")
    if not isinstance(k, dict):
        raise _Bad("key is not a JSON object")
    kt = k.get("keytype")
    if kt not in KEY_TYPES:
        raise _Bad(f"unknown keytype {kt!r}")
    seq = k.get("seq")
    if seq is not None and seq != offset:
        return "superseded"        # Redpanda: another writer's record won this offset
    if kt in _IGNORED:
        return kt
    if kt == "SCHEMA":
        subject = _str(k, "subject", "SCHEMA key")
        version = _int(k, "version", "SCHEMA key")
        magic = k.get("magic", 0)
        if magic not in (0, 1) or isinstance(magic, bool):
            raise _Bad(f"SCHEMA key magic {magic!r}: only 0 and 1 are read")
        if value is None:
            reg._tombstone(subject, version)
            return "SCHEMA tombstone"
        entry = parse_schema_value(_json(value, "schema value"), offset=offset)
        # The store is keyed by the record's key; the value's subject places the duplicate check.
        entry = entry._replace(subject=subject, version=version)
        old = reg.by_id(entry.id, _context_for_check(_value_subject(value, subject)))
        if old is not None and old.schema != entry.schema:
            raise _Bad(f"duplicate id {entry.id}: {subject!r} version {version} has other text "
                       f"than {old.subject!r} version {old.version} (ignored, as the registry "
                       f"ignores it)")
        reg._register(entry)
        return "SCHEMA deleted" if entry.deleted else "SCHEMA"
    if value is None:
        return kt + " tombstone"
    v = _json(value, f"{kt} value")
    if not isinstance(v, dict):
        raise _Bad(f"{kt} value is not a JSON object")
    if kt == "DELETE_SUBJECT":
        reg._delete_subject(_str(v, "subject", kt), _int(v, "version", kt))
    else:
        reg._clear_subject(_opt_str(v, "subject", kt))
    return kt


def _value_subject(value, fallback: str) -> str:
    try:
        s = json.loads(bytes(value)).get("subject")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return fallback
    return s if isinstance(s, str) else fallback


def _context_for_check(subject: str) -> str:
    from kafkarec.registry._model import context_of
    return context_of(subject)


def replay(records: Iterable[Tuple[int, Optional[bytes], Optional[bytes]]], *,
           registry: Optional[Registry] = None, as_of_offset: Optional[int] = None,
           source: str = "_schemas") -> Registry:
    """A :class:`Registry` from ``(offset, key, value)`` of ``_schemas`` records in offset order.
    ``as_of_offset``: the registry as it stood once the record at that offset was applied
    (inclusive, as ``kafkarec metadata --at-offset``)."""
    reg = registry if registry is not None else Registry(source)
    counts: dict = {}
    for offset, key, value in records:
        if as_of_offset is not None and offset > as_of_offset:
            break
        try:
            kind = _apply(reg, offset, key, value)
        except _Bad as exc:
            reg.problems.append(f"_schemas offset {offset}: {exc}")
            kind = "problem"
        counts[kind] = counts.get(kind, 0) + 1
    reg.record_counts = counts
    return reg


def read_schemas_log(uri: str, *, topic: str = "_schemas", as_of_offset: Optional[int] = None,
                     storage_options: Optional[dict] = None) -> Registry:
    """The registry replayed from ``<uri>/<topic>-0`` (a log directory, local or remote) or from
    that partition folder itself.  Records are read with kafkarec's checked reader (CRCs
    verified); control records (transaction markers) are not registry records."""
    from kafkarec.log import committed, layout
    from kafkarec.log.segment import file_options
    from kafkarec.log.selection import Resolver
    from kafkarec.registry._model import RegistryError

    # The registry sits below the scan (a typed read loads its registry), so it reads the log
    # through the layer under both: the listing every read makes (layout.scan_history) and the
    # one record walk of a partition that kafkarec.scan.PartitionWalk.records opens
    lay, _gaps = layout.scan_history(uri, None, storage_options)
    parts = [p for p in lay.partitions if p.topic == topic]
    # a wrong path should not look like an empty registry: the topic's partition must be there
    # (it may hold nothing)
    if not parts:
        raise RegistryError(f"{uri}: no {topic}-0 partition found")
    resolver = Resolver(lay.storage)

    def records():
        for part in parts:
            if part.partition != 0:
                continue
            # from the log start offset, as a consumer of the topic reads it
            for r in committed.partition_records(lay.storage, part, file_options(None),
                                                 start=resolver.log_start(part)):
                yield r.offset, r.key, r.value

    reg = Registry(uri)
    return replay(records(), registry=reg, as_of_offset=as_of_offset, source=uri)


