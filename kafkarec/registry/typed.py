"""Registry payloads to typed Arrow columns: pick the subject, build the decoder, feed it writers.

:class:`TypedColumn` is the one dispatch every surface uses (Python, Spark's data source and
``from_registry``, ``kafkarec dump``): given a :class:`~kafkarec.registry.Registry` and a
subject it builds the decoder for the subject's type (Avro, Protobuf or JSON Schema) with the
reader schema (the subject's latest live version unless a version or a schema is given), adds
each writer schema the first time a record names its id, and returns per row the typed value,
the writer's schema id and an error string.  Nothing is dropped: a value that is not a
registry payload, an unknown id or a writer that cannot be resolved is a null value with its
reason; a tombstone (null value) is a null value with no reason.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Mapping, Optional, Tuple

from kafkarec._core import encode_varlong, value_problem
from kafkarec._extras import require
from kafkarec.errors import KafkaRecError
from kafkarec.registry import wire
from kafkarec.registry._model import Registry, RegistryError, SchemaEntry, context_of

np = require("numpy")
pa = require("pyarrow")
pc = require("pyarrow.compute")

__all__ = ["TypedColumn", "subject_name", "decode_table", "add_reasons", "STRATEGIES", "FORMATS",
           "decoder_class"]

STRATEGIES = ("topic", "record", "topic_record")
# {schema type: decoder class} used instead of the built-in decoders (tests; experiments).
OVERRIDES: Dict[str, Any] = {}
FORMATS = ("registry", "avro", "protobuf", "json")
_TYPE_OF_FORMAT = {"avro": "AVRO", "protobuf": "PROTOBUF", "json": "JSON"}


def subject_name(topic: Optional[str], *, is_key: bool = False, strategy: str = "topic",
                 record_name: Optional[str] = None) -> str:
    """The subject a Confluent serializer registers under: TopicNameStrategy
    ``<topic>-value``/``-key`` (default), RecordNameStrategy ``<record full name>``,
    TopicRecordNameStrategy ``<topic>-<record full name>``."""
    s = str(strategy).lower().replace("namestrategy", "").replace("_", "")
    if s == "topic":
        if not topic:
            raise RegistryError("TopicNameStrategy needs the topic (or give the subject)")
        return f"{topic}-{'key' if is_key else 'value'}"
    if not record_name:
        raise RegistryError(f"{strategy}: the record's full name is needed (or give the subject)")
    if s == "record":
        return record_name
    if s == "topicrecord":
        if not topic:
            raise RegistryError("TopicRecordNameStrategy needs the topic (or give the subject)")
        return f"{topic}-{record_name}"
    raise RegistryError(f"subject name strategy {strategy!r}: one of topic, record, topic_record")


def decoder_class(schema_type: str):
    """The decoder class for a schema type (imported on first use)."""
    t = schema_type.upper()
    if t == "AVRO":
        from kafkarec.avro import AvroDecoder
        return AvroDecoder
    if t == "PROTOBUF":
        from kafkarec.protobuf import ProtobufDecoder
        return ProtobufDecoder
    if t == "JSON":
        from kafkarec.jsonschema import JsonSchemaDecoder
        return JsonSchemaDecoder
    raise RegistryError(f"schema type {schema_type!r}: one of AVRO, PROTOBUF, JSON")


def _schema_object(registry: Optional[Registry], entry: SchemaEntry):
    """What a decoder takes for a schema: the text compiled with its references (Avro named
    types defined under other subjects, Protobuf imports, JSON Schema documents by name)."""
    t = entry.schema_type
    refs = registry.references(entry) if registry is not None and entry.references else []
    if t == "AVRO":
        from kafkarec import avro
        named: list = []
        for _name, dep in refs:          # dependencies first: each sees the ones before it
            named.append(avro.parse_schema(dep.schema, named_types=list(named)))
        return avro.parse_schema(entry.schema, named_types=named) if named else avro.parse_schema(entry.schema)
    imports = {name: dep.schema for name, dep in refs}
    if t == "PROTOBUF":
        from kafkarec.protobuf import ProtobufSchema
        return ProtobufSchema.from_text(entry.schema, imports)
    from kafkarec.jsonschema import JsonSchema
    return JsonSchema.from_text(entry.schema, imports)



def message_indexes(schema, message: Optional[str]) -> bytes:
    """Confluent's message indexes (``MessageIndexes``) naming ``message`` in a compiled
    Protobuf schema: ``[0]`` is the single byte 0x00, otherwise a zig-zag count then the
    zig-zag indexes.  Bare Protobuf payloads (``value_format="protobuf"``) get these in front."""
    want = (message or schema.first_message).lstrip(".")

    def find(level, path):
        for i, name in enumerate(level):
            if name == want:
                return path + [i]
            found = find(schema.messages[name]["nested"], path + [i])
            if found:
                return found
        return None

    path = find(schema.top_level, [])
    if path is None:
        raise RegistryError(f"no message {want!r} in the Protobuf schema")
    if path == [0]:
        return b"\x00"
    return encode_varlong(len(path)) + b"".join(encode_varlong(i) for i in path)


def _schema_key(entry: SchemaEntry) -> tuple:
    return (entry.schema_type, entry.schema, entry.references)


class TypedColumn:
    """Decodes one column (values or keys) of registry payloads to one Arrow type.

    ``subject``: the subject whose versions type the column (default from ``topic`` and
    ``strategy``, see :func:`subject_name`); ``version``: the reader version (default the
    latest live one); ``reader_schema``: a schema text to read with instead (its type is the
    subject's, or ``schema_type``); ``message``: the Protobuf message (full name) that types
    the column; ``id_format``: ``confluent`` or ``apicurio`` (8-byte ids);
    ``value_format``: ``registry`` (ids in the payload or headers) or ``avro``/``protobuf``/
    ``json`` for bare payloads written with ``reader_schema`` (or the subject's version).
    ``options``: the format's options by Spark's names (Avro: ``from_avro``'s, see
    :data:`kafkarec.avro.SPARK_OPTIONS`; Protobuf: ``from_protobuf``'s,
    :data:`kafkarec.protobuf.SPARK_OPTIONS`), ``time_zone`` Spark's session time zone for them;
    ``decoders``: {schema type: class} to use other decoder classes (tests); ``compiled``:
    schemas compiled elsewhere (:meth:`precompile` on the driver), so that executors need no
    schema compiler (Protobuf's protoc)."""

    def __init__(self, registry: Optional[Registry], subject: Optional[str] = None, *,
                 topic: Optional[str] = None, is_key: bool = False, strategy: str = "topic",
                 record_name: Optional[str] = None, version: Any = "latest",
                 reader_schema: Optional[str] = None, schema_type: Optional[str] = None,
                 message: Optional[str] = None, id_format: str = "confluent",
                 header_ids: bool = True, value_format: str = "registry",
                 decoders: Optional[Mapping[str, Any]] = None,
                 compiled: Optional[dict] = None, options: Optional[Mapping[str, Any]] = None,
                 time_zone: str = "UTC") -> None:
        fmt = str(value_format).lower()
        if fmt not in FORMATS:
            raise RegistryError(f"format {value_format!r}: one of {', '.join(FORMATS)}")
        self.registry = registry
        self.is_key = is_key
        self.format = fmt
        self.id_format = id_format
        self.header_ids = header_ids
        self.header_name = wire.KEY_HEADER if is_key else wire.VALUE_HEADER
        self.message = message
        self._decoders = {**OVERRIDES, **(decoders or {})}
        self.compiled: dict = dict(compiled or {})
        if subject is None and (registry is not None and (reader_schema is None or fmt == "registry")):
            subject = subject_name(topic, is_key=is_key, strategy=strategy, record_name=record_name)
        self.subject = subject
        self.context = context_of(subject) if subject else "."
        if fmt != "registry":
            schema_type = _TYPE_OF_FORMAT[fmt]
        if reader_schema is not None:
            base = (registry.get(subject, version) if registry is not None and subject and
                    schema_type is None else None)
            stype = (schema_type or (base.schema_type if base else "AVRO")).upper()
            self.reader = SchemaEntry(subject or "", 0, -1, reader_schema, stype,
                                      base.references if base else ())
        else:
            if registry is None or subject is None:
                raise RegistryError("a registry and a subject, or a reader schema, are needed")
            self.reader = registry.get(subject, version)
            if schema_type and schema_type.upper() != self.reader.schema_type:
                raise RegistryError(f"subject {subject!r} holds {self.reader.schema_type}, "
                                    f"not {schema_type.upper()}")
        self.schema_type = self.reader.schema_type
        cls = self._decoders.get(self.schema_type) or decoder_class(self.schema_type)
        self._reader_obj = self._compile(self.reader)
        if self.schema_type == "PROTOBUF" and self.schema_type not in self._decoders:
            from kafkarec import protobuf
            self.decoder = cls(self._reader_obj, message=message, **protobuf.spark_options(options or {}))
        elif self.schema_type == "AVRO" and self.schema_type not in self._decoders:
            from kafkarec import avro
            self.decoder = cls(self._reader_obj, **avro.spark_options(options or {}, time_zone=time_zone))
        else:
            self.decoder = cls(self._reader_obj)
        self.arrow_type: pa.DataType = self.decoder.arrow_type
        self._writer_errors: Dict[int, Optional[str]] = {}
        # a column decodes on several threads at once (LogScan's pool): each writer is added by
        # one of them, once, and is in _writer_errors only once its decoder holds it
        self._adding = threading.Lock()
        self._bare_prefix = b""
        if fmt != "registry":
            # Bare payloads: every record was written with the reader schema (writer id 0).
            self.decoder.add_writer(0, self._reader_obj)
            self._writer_errors[0] = None
            if self.schema_type == "PROTOBUF" and self.schema_type not in self._decoders:
                self._bare_prefix = message_indexes(self._reader_obj, message)

    def _compile(self, entry: SchemaEntry):
        if self.schema_type in self._decoders:
            return entry.schema
        key = _schema_key(entry)
        obj = self.compiled.get(key)
        if obj is None:
            obj = _schema_object(self.registry, entry)
            self.compiled[key] = obj
        return obj

    def precompile(self) -> dict:
        """Compile every schema of this column's type in its context (reader and every possible
        writer) and return them, to ship with the column: Protobuf schemas need protoc, which
        executors do not have.  A schema that does not compile is left out (its records then
        report why where they are decoded)."""
        if self.registry is None:
            return dict(self.compiled)
        for sid in self.registry.ids(self.context):
            e = self.registry.by_id(sid, self.context)
            if e is not None and e.schema_type == self.schema_type:
                try:
                    self._compile(e)
                except (KafkaRecError, ValueError, TypeError, RecursionError, OSError):
                    pass
        return dict(self.compiled)

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_adding"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._adding = threading.Lock()

    def _writer(self, schema_id: int) -> Optional[str]:
        """Add the writer ``schema_id`` names once; its error (None when it resolved)."""
        if schema_id in self._writer_errors:
            return self._writer_errors[schema_id]
        with self._adding:
            if schema_id not in self._writer_errors:    # (another thread may have added it meanwhile)
                self._writer_errors[schema_id] = self._add_writer(schema_id)
            return self._writer_errors[schema_id]

    def _add_writer(self, schema_id: int) -> Optional[str]:
        err = None
        entry = self.registry.by_id(schema_id, self.context) if self.registry is not None else None
        if entry is None:
            where = f" in context {self.context}" if self.context != "." else ""
            err = (f"unknown writer schema id {schema_id}{where} "
                   f"(not in {self.registry.source if self.registry else 'the registry'})")
        elif entry.schema_type != self.schema_type:
            err = (f"schema id {schema_id} is a {entry.schema_type} schema ({entry.subject!r} "
                   f"version {entry.version}); the column is {self.schema_type}")
        else:
            try:
                self.decoder.add_writer(schema_id, self._compile(entry))
            except (KafkaRecError, ValueError, TypeError, RecursionError) as exc:
                err = (f"writer schema id {schema_id} ({entry.subject!r} version {entry.version}) "
                       f"cannot be read as {self.subject or 'the reader schema'}: {exc}")
        return err

    def decode(self, values, headers=None) -> Tuple[pa.Array, pa.Int64Array, pa.StringArray]:
        """(typed values, writer schema ids, error strings) for a binary column; ``headers``
        (the records' headers column) lets header ids win over the prefix."""
        values = wire._binary(values)
        n = len(values)
        if self.format != "registry":
            valid = values.is_valid()
            ids = pc.if_else(valid, pa.scalar(0, pa.int64()), pa.scalar(None, pa.int64()))
            body = pa.array(np.zeros(n, dtype=np.int32))
            if self._bare_prefix:
                # The message indexes the decoder reads first: the column's message, every row.
                starts, lengths, data, ok = wire._layout(values)
                pre = np.frombuffer(self._bare_prefix, dtype=np.uint8)
                values = wire._prepend(pre, np.zeros(n, dtype=np.int64),
                                       np.where(ok, len(pre), 0).astype(np.int64), data, starts,
                                       np.where(ok, lengths, 0), ok)
            typed, errs = self.decoder.decode(values, ids, body)
            return typed, pa.nulls(n, pa.int64()), errs
        w = wire.parse_ids(values, headers=headers if self.header_ids else None,
                           header_name=self.header_name, id_format=self.id_format,
                           guid_to_id=self._guid_to_id, protobuf=self.schema_type == "PROTOBUF",
                           what="key" if self.is_key else "value")
        errors = w.errors
        # Distinct ids by Arrow's hash kernel (a handful per batch), each writer added once.
        bad_ids = [int(sid) for sid in pc.unique(w.writer_ids).drop_null().to_pylist()
                   if self._writer(int(sid)) is not None]
        dec_ids = w.writer_ids
        if bad_ids:
            ids_np = w.writer_ids.to_numpy(zero_copy_only=False)
            ok = np.asarray(w.writer_ids.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            filled = np.where(ok, ids_np, 0).astype(np.int64)
            bad_sorted = np.array(sorted(bad_ids), dtype=np.int64)
            bad_rows = ok & np.isin(filled, bad_sorted)
            texts = [self._writer_errors[i] for i in bad_sorted.tolist()]
            code = np.zeros(n, dtype=np.int32)
            code[bad_rows] = np.searchsorted(bad_sorted, filled[bad_rows])
            codes = pa.array(code, mask=~bad_rows)

            def worded(words):
                return pa.DictionaryArray.from_arrays(codes, pa.array(words, pa.string())).dictionary_decode()
            # where the id was: after the magic byte (a prefixed id puts the body 5 or more bytes in),
            # or in a header (the body starts at byte 0)
            mine = pc.if_else(pc.less(w.body_offsets, 5),
                              worded([f"header {self.header_name}: {t}" for t in texts]),
                              worded([value_problem(1, t) for t in texts]))
            errors = pc.coalesce(errors, mine)
            dec_ids = pa.array(filled, mask=~(ok & ~bad_rows))
        typed, dec_errors = self.decoder.decode(w.values, dec_ids, w.body_offsets)
        if dec_errors is not None and dec_errors.null_count != len(dec_errors):
            errors = pc.coalesce(errors, dec_errors.cast(pa.string()))
        return typed, w.writer_ids, errors

    def _guid_to_id(self, guid: bytes) -> Optional[int]:
        return self.registry.id_for_guid(guid, self.context) if self.registry is not None else None


def add_reasons(side: str, errs, ids, reasons, failed_ids):
    """``(reasons, failed_ids)`` with one side's decode errors added: each failed row's reason
    tagged ``"<side>: "`` (a row keeps the first side's reason), and the writer id of the side
    whose reason it keeps (what the quarantine names).  ``reasons``/``failed_ids``: None before
    the first side that failed; unchanged when ``errs`` is all null."""
    if errs.null_count == len(errs):
        return reasons, failed_ids
    tagged = pc.binary_join_element_wise(pa.scalar(f"{side}: "), errs, "")
    side_ids = pc.if_else(errs.is_valid(), ids, pa.scalar(None, pa.int64()))
    if reasons is None:
        return tagged, side_ids
    return pc.coalesce(reasons, tagged), pc.if_else(reasons.is_valid(), failed_ids, side_ids)


def _column(table: pa.Table, name: str):
    return table.column(name) if name in table.column_names else None


# held while decode_table builds a column into its ``columns`` (rare: once a side per read)
_BUILDING = threading.Lock()


def decode_table(table: pa.Table, registry: Optional[Registry], *, value: bool = True,
                 key: bool = False, value_subject: Optional[str] = None,
                 key_subject: Optional[str] = None, topic: Optional[str] = None,
                 strategy: str = "topic", record_name: Optional[str] = None,
                 value_version: Any = "latest", key_version: Any = "latest",
                 value_reader_schema: Optional[str] = None, key_reader_schema: Optional[str] = None,
                 value_message: Optional[str] = None, key_message: Optional[str] = None,
                 value_format: str = "registry", key_format: str = "registry",
                 id_format: str = "confluent", corrupt_column: str = "_corrupt_record",
                 columns: Optional[Dict[str, TypedColumn]] = None,
                 options: Optional[Mapping[str, Any]] = None, time_zone: str = "UTC",
                 bad_records_path: Any = None) -> pa.Table:
    """``table`` (from :func:`kafkarec.to_arrow`, :func:`kafkarec.iter_arrow` or the log
    readers) with its ``value`` (and/or ``key``) column typed by the registry, plus
    ``value_schema_id`` (``key_schema_id``) and ``_corrupt_record`` (the reason a row could not
    be decoded, null when it could).  Rows are never dropped.  The topic (for
    TopicNameStrategy) comes from ``topic`` or the table's single topic; ``options`` and
    ``time_zone``: the decoders' options by Spark's names (see :class:`TypedColumn`);
    ``bad_records_path``: a path (or a :class:`kafkarec.log.quarantine.Quarantine`) where each
    record that fails is also written whole, as a Kafka log directory.  Pass the same
    ``columns`` dict to successive calls (``iter_arrow`` batches) to build each decoder once; calls
    on several threads at once may share it (each column is built once, and adds each writer once)."""
    if columns is None:
        columns = {}
    raw = table
    failed_ids = None
    headers = _column(table, "headers")
    if topic is None and "topic" in table.column_names and table.num_rows:
        topics = pc.unique(table.column("topic")).drop_null().to_pylist()
        if len(topics) > 1 and ((value and value_subject is None) or (key and key_subject is None)):
            raise RegistryError(f"the table holds several topics ({', '.join(map(str, topics[:5]))}): "
                                f"decode them one at a time or give the subject")
        topic = topics[0] if topics else None
    corrupt = None
    for name, on, subject, version, schema, message, fmt in (
            ("key", key, key_subject, key_version, key_reader_schema, key_message, key_format),
            ("value", value, value_subject, value_version, value_reader_schema, value_message,
             value_format)):
        if not on:
            continue
        col = columns.get(name)
        if col is None:
            with _BUILDING:     # (columns shared by threads: one column a side, built once)
                col = columns.get(name)
                if col is None:
                    col = TypedColumn(registry, subject, topic=topic, is_key=name == "key",
                                      strategy=strategy, record_name=record_name, version=version,
                                      reader_schema=schema, message=message, id_format=id_format,
                                      value_format=fmt, options=options, time_zone=time_zone)
                    columns[name] = col
        typed, ids, errs = col.decode(table.column(name), headers)
        i = table.column_names.index(name)
        table = table.set_column(i, pa.field(name, col.arrow_type), typed)
        table = table.append_column(pa.field(f"{name}_schema_id", pa.int64()), ids)
        corrupt, failed_ids = add_reasons(name, errs, ids, corrupt, failed_ids)
    if corrupt is not None and bad_records_path is not None:
        from kafkarec.log.quarantine import Quarantine
        q = bad_records_path if isinstance(bad_records_path, Quarantine) else Quarantine(bad_records_path)
        q.add_table(raw, corrupt, failed_ids, topic=topic)
    if corrupt is None:
        corrupt = pa.nulls(table.num_rows, pa.string())
    if corrupt_column in table.column_names:
        i = table.column_names.index(corrupt_column)
        table = table.set_column(i, corrupt_column, pc.coalesce(table.column(corrupt_column), corrupt))
    else:
        table = table.append_column(pa.field(corrupt_column, pa.string()), corrupt)
    return table
