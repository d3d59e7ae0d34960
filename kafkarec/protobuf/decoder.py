"""The decoder: a column's message read from payloads of any registered writer (:class:`ProtobufDecoder`)."""
from __future__ import annotations

import threading

from kafkarec._extras import require
from kafkarec.errors import ProtobufSchemaError, SchemaResolutionError
from kafkarec.protobuf.arrow_types import _logical, _root_shape
from kafkarec.protobuf.options import _Options
from kafkarec.protobuf.plans import _Planner
from kafkarec.protobuf.schema import ProtobufSchema


class ProtobufDecoder:
    """Protobuf payloads of Schema Registry records -> one Arrow struct column (see :mod:`kafkarec.protobuf`).

    ``reader_schema``: a :class:`ProtobufSchema` (or .proto text); ``message``: the column's message, fully
    qualified (``valueMessage`` / ``keyMessage``), default the file's first message.  Picklable: plans are
    rebuilt from the plain schemas where it is unpickled.  Threads may share one decoder: each :meth:`decode`
    builds its own columns, and its rows run without the GIL.

    Keywords: ``from_protobuf``'s options (:func:`spark_options` maps Spark's names to these):
    ``enums_as_ints`` (enum -> int32, its number), ``emit_default_values`` (an unset singular field without
    presence reads its zero value, not null), ``upcast_unsigned_ints`` (uint32 -> int64, uint64 ->
    decimal(20, 0), unsigned), ``unwrap_primitive_wrapper_types`` (``google.protobuf.Int32Value`` and the
    other wrappers -> their value), ``recursive_fields_max_depth`` (1..10: a recursive message is read to that
    depth, the field that would go deeper left out; -1 refuses recursion), ``retain_empty_message_types``
    (a message with no fields is a struct holding ``__dummy_field_in_empty_struct``, instead of being left
    out), ``convert_any_fields_to_json`` (a ``google.protobuf.Any`` field is a string: its message as the JSON
    text Java's ``JsonFormat`` prints, types resolved among the reader schema's messages; see
    :mod:`kafkarec.protobuf.json_print`)."""

    def __init__(self, reader_schema, message: str | None = None, **options) -> None:
        if isinstance(reader_schema, str):
            reader_schema = ProtobufSchema.from_text(reader_schema)
        if not isinstance(reader_schema, ProtobufSchema):
            raise TypeError(f"reader_schema must be a ProtobufSchema, not {type(reader_schema).__name__}")
        self.reader_schema = reader_schema
        self.message = message or reader_schema.first_message
        if self.message.startswith("."):
            self.message = self.message[1:]
        if self.message not in reader_schema.messages:
            raise ProtobufSchemaError(f"{reader_schema.file_name} has no message {self.message!r}")
        self._options = _Options(**options)
        self._root = _root_shape(reader_schema, self.message, self._options)
        self._any_json = None
        if self._options.convert_any_fields_to_json:
            from kafkarec.protobuf.json_print import AnyJson
            self._any_json = AnyJson(reader_schema, self._options.enums_as_ints)
        self.arrow_type = self._root.arrow_type
        # the column tree by number: plans name columns by it, and each decode builds its own columns of it
        # (the decode shares nothing it writes, so threads decode with one decoder at once)
        from kafkarec import _core
        self._layout = _core._PbLayout(self._root.column)
        self._writer_schemas: dict[int, ProtobufSchema] = {}
        self._writers: dict[int, object] = {}      # writer id -> _core._PbWriter
        self._lock = threading.Lock()               # add_writer's two dicts

    def __reduce__(self):
        return (_rebuild, (self.reader_schema, self.message, self._writer_schemas, self._options.as_dict()))

    def add_writer(self, writer_id: int, writer_schema) -> None:
        """Register the schema of writer id ``writer_id``; every message of its file can then be named by
        a record's message indexes."""
        from kafkarec import _core
        if isinstance(writer_schema, str):
            writer_schema = ProtobufSchema.from_text(writer_schema)
        if not isinstance(writer_schema, ProtobufSchema):
            raise SchemaResolutionError(f"writer schema {writer_id} is not a Protobuf schema "
                                        f"({type(writer_schema).__name__})")
        if not writer_schema.top_level:
            raise SchemaResolutionError(f"writer schema {writer_id} ({writer_schema.file_name}) defines no message")
        planner = _Planner(writer_schema, self._options, self._layout, self._any_json)

        def node(name: str):
            m = writer_schema.messages[name]
            return _core._PbNode(name, planner.plan(name, self._root), [node(n) for n in m["nested"]])

        with self._lock:
            self._writers[int(writer_id)] = _core._PbWriter([node(n) for n in writer_schema.top_level])
            self._writer_schemas[int(writer_id)] = writer_schema

    def decode(self, values, writer_ids, body_offsets):
        """(struct array, string array of per-row errors) for Schema Registry payloads: ``body_offsets`` say
        where each value's message indexes start.  A null value or writer id gives a null row, no error."""
        from kafkarec import _core
        values, writer_ids, body_offsets = (_array(values), _array(writer_ids), _array(body_offsets))
        typed, errors = _core.pb_decode_column(self._layout, self._writers, values, writer_ids, body_offsets)
        return _logical(typed, self._root), errors


def _array(a):
    """An Arrow array (a chunked array combined)."""
    pa = require("pyarrow")
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _rebuild(reader_schema, message, writers, options=None):
    d = ProtobufDecoder(reader_schema, message, **(options or {}))
    for wid, schema in writers.items():
        d.add_writer(wid, schema)
    return d
