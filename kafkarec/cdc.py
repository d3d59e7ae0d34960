"""Change data capture: Debezium's change events, as rows and as the table they mirror.

A Debezium topic holds one record per row change of one database table: the key is the
row's primary key, the value an *envelope* ``{"before", "after", "source", "op", "ts_ms",
...}``, written by Kafka Connect's JsonConverter either bare (``schemas.enable=false``) or
wrapped as ``{"schema": ..., "payload": <envelope>}``.  ``op`` is ``c`` (insert), ``u``
(update), ``d`` (delete: ``after`` null, and a tombstone with the same key follows unless
``tombstones.on.delete=false``), ``r`` (a snapshot read) or ``t`` (a truncate: no key, no
images).  A primary-key change is a delete of the old key and an insert of the new one.

:func:`changes` adds the envelope's fields to the log view's rows: ``op``, ``before``,
``after`` and ``source`` (JSON text, as Debezium wrote them), ``ts_ms``, and ``cdcError``
(why a value is not an envelope; the row is kept).  The mirrored table is the keyed state
(:mod:`kafkarec.table`) with Debezium's rules on top: a key whose last event is a delete is
gone, and a truncate removes every key whose last event came before it.
"""
from __future__ import annotations

import json
from typing import Any, Optional, Tuple

__all__ = ["FORMATS", "parse_cdc", "envelope", "changes", "CDC_FIELDS"]

FORMATS = ("debezium",)
OPS = frozenset("cudrt")
#: The columns :func:`changes` adds, in order, with their pyarrow types' names.
CDC_FIELDS = (("op", "string"), ("before", "string"), ("after", "string"), ("source", "string"),
              ("ts_ms", "int64"), ("cdcError", "string"))


def parse_cdc(value: Optional[str]) -> Optional[str]:
    """``None`` (no change data capture) or ``"debezium"``, any case."""
    if value is None or str(value).strip() == "":
        return None
    name = str(value).strip().lower()
    if name not in FORMATS:
        raise ValueError(f"cdc must be one of {', '.join(FORMATS)}, not {value!r}")
    return name


def envelope(value: bytes) -> Tuple[Optional[dict], Optional[str]]:
    """``(envelope, None)`` for a Debezium change event's value (bare or in the JSON
    converter's schema/payload wrapper), else ``(None, reason)``."""
    try:
        doc = json.loads(value)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"not JSON: {exc}"
    if isinstance(doc, dict) and set(doc) == {"schema", "payload"}:
        doc = doc["payload"]
    if not isinstance(doc, dict):
        return None, "not a Debezium envelope: the value is not a JSON object"
    op = doc.get("op")
    if op not in OPS:
        return None, f"not a Debezium envelope: op is {op!r}, not one of c, u, d, r, t"
    for image in ("before", "after"):
        if doc.get(image) is not None and not isinstance(doc[image], dict):
            return None, f"not a Debezium envelope: {image} is not an object"
    ts = doc.get("ts_ms")
    if ts is not None and (not isinstance(ts, int) or isinstance(ts, bool)):
        return None, f"not a Debezium envelope: ts_ms is {ts!r}"
    return doc, None


def _text(obj: Any) -> Optional[str]:
    return None if obj is None else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def changes(batch: Any) -> Any:
    """``batch`` (a pyarrow RecordBatch or Table of the log view) with :data:`CDC_FIELDS` added.
    A tombstone (null value) has them all null; a value that is not an envelope has only
    ``cdcError``."""
    import pyarrow as pa
    cols: dict = {name: [] for name, _ in CDC_FIELDS}
    for value in batch.column("value").to_pylist():
        doc, error = (None, None) if value is None else envelope(value)
        cols["op"].append(doc["op"] if doc else None)
        cols["before"].append(_text(doc.get("before")) if doc else None)
        cols["after"].append(_text(doc.get("after")) if doc else None)
        cols["source"].append(_text(doc.get("source")) if doc else None)
        cols["ts_ms"].append(doc.get("ts_ms") if doc else None)
        cols["cdcError"].append(error)
    out = batch
    for name, type_name in CDC_FIELDS:
        out = out.append_column(name, pa.array(cols[name], getattr(pa, type_name)()))
    return out


def truncated_before(batch: Any) -> int:
    """The offset of the last truncate event (op ``t``) in ``batch``, -1 if none: the keyed
    state holds nothing written before it."""
    import pyarrow.compute as pc
    keyless = batch.filter(pc.and_(pc.is_null(batch.column("key")), pc.is_valid(batch.column("value"))))
    last = -1
    for value, offset in zip(keyless.column("value").to_pylist(), keyless.column("offset").to_pylist()):
        doc, _ = envelope(value)
        if doc is not None and doc["op"] == "t":
            last = max(last, offset)
    return last
