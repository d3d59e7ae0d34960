"""Typed keys and values on a stream: ``readStream.format("kafkarec")`` with ``valueFormat`` /
``keyFormat`` (the options, columns and modes of the batch read, :mod:`spark_udfs.read.typed`).

The plain stream (:class:`spark_udfs.read.streaming.KafkaRecStreamReader`: offsets, planning,
read_committed, failOnDataLoss) reads binary keys and values with their headers; each batch
is then typed by :class:`spark_udfs.read.typed.TypedBatches`, as in a batch read.

Schemas over the life of a stream (docs/typed-values.md, "Streams"):

* The columns are fixed when the query starts, as any Spark source's schema is: the reader
  schema is the subject's latest live version then (or ``valueSchemaVersion`` /
  ``valueReaderSchema``).  Each side pins that version (:meth:`TypedSide.pin`), so schemas
  registered later never change a running query's columns.
* Records written with newer (or older) schemas are read with Avro's resolution to the
  pinned reader schema, record by record, as Confluent's deserializer does with a reader
  schema (``specific.avro.reader`` / ``use.latest.version``) and as the batch read does.
* A new writer id is only known once the registry is read again: each micro-batch, when it
  is planned, reads the registry again if its ``_schemas`` log grew (or, for a schema folder,
  if its contents changed) and ships it with the micro-batch's tasks.  A schema is registered
  before any record written with it reaches the log, so a record's id is known by the time
  its micro-batch is planned.  A registry URL is fetched once per query start (executors
  and the planner never poll a live registry); an id registered after that gives the row's
  ``unknown writer schema id`` error until the query restarts.
* Registry ids never change meaning, so a micro-batch re-planned after a restart (same
  offsets) decodes to the same rows: with the file sink every record is written once.
"""
from __future__ import annotations

import logging
import threading
import uuid
from typing import Dict

from spark_udfs.read import streaming as _streaming, typed as _typed

__all__ = ["TypedStreamReader", "typed_stream_reader"]

log = logging.getLogger("spark_udfs")

# executor side: decoders built once per (registry snapshot, pins) a Python worker meets
_SIDES: Dict[str, list] = {}
_LOCK = threading.Lock()
_KEEP = 4


class TypedStreamReader(_streaming.KafkaRecStreamReader):
    def __init__(self, source, schema) -> None:
        rows = _typed.TypedBatches(source.spec, schema, streaming=True)
        super().__init__(rows.plain_spec.for_stream(), rows.plain_schema, source.expected_fingerprint)
        self.rows = rows
        self.typed_schema = schema
        typed = source.spec.typed
        self._source = typed.registry
        self._bearer = typed.bearer_token
        # registryAsOfOffset fixes the registry itself; without a registry (avro|protobuf|json
        # with a reader schema) there is nothing to read again
        self._fixed = self._source is None or typed.as_of_offset is not None
        self._state = None if self._fixed else _typed.registry_state(self._source)
        self._listing = None
        if not self._fixed and self._state is None and rows.sides:
            self._listing = rows.sides[0].registry.listing()
        for side in rows.sides:
            if rows.topic is not None or side.kw["subject"] is not None:
                side.pin(rows.topic, self._type_of(side))
        self._token = uuid.uuid4().hex

    def _type_of(self, side):
        return self.typed_schema[side.side].dataType

    # -- planning (the streaming source runner's Python) -------------------------------
    def partitions(self, start: dict, end: dict):
        parts = super().partitions(start, end)
        changed = self._refresh()
        for topic in sorted({sr.topic for p in parts for sr in getattr(p, "ranges", ())}):
            for side in self.rows.sides:
                before = len(side.pins)
                side.pin(topic, self._type_of(side))   # a topic new to this stream
                changed |= len(side.pins) != before
        if changed:
            self._token = uuid.uuid4().hex
        for p in parts:
            p.typed = (self._token, self.rows.sides)
        return parts

    def _refresh(self) -> bool:
        """Read the registry again if its source changed since the last micro-batch."""
        if self._fixed:
            return False
        state = _typed.registry_state(self._source)
        if state is not None and state == self._state:
            return False
        reg = _typed.load_registry(self._source, bearer_token=self._bearer)
        if state is None:               # a schema folder: compare what it holds
            listing = reg.listing()
            if listing == self._listing:
                return False
            self._listing = listing
        self._state = state
        log.info("kafkarec stream: registry %s changed; read again for the next micro-batch",
                 self._source)
        self.rows.sides = [s.with_registry(reg) for s in self.rows.sides]
        return True

    # -- reading (executors) ---------------------------------------------------------
    def read(self, partition):
        from spark_udfs.read import schema as _schema
        token, sides = getattr(partition, "typed", (None, None))
        if token is not None:
            with _LOCK:
                cached = _SIDES.get(token)
                if cached is None:
                    while len(_SIDES) >= _KEEP:
                        _SIDES.pop(next(iter(_SIDES)))
                    _SIDES[token] = cached = sides
            sides = cached
        target = _schema.arrow_schema_for(self.typed_schema)
        for rb in super().read(partition):
            out = self.rows.convert(rb, target, sides)
            if out.num_rows:
                yield out


def typed_stream_reader(source, schema) -> TypedStreamReader:
    """What ``DataSource.streamReader(schema)`` returns when the read asks for typed values."""
    return TypedStreamReader(source, schema)
