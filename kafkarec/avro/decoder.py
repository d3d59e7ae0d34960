"""The decoder front: ``AvroDecoder`` (one Arrow column from many writer schemas), ``from_avro``'s
options by Spark's names and ``decode_values`` for bodies without framing."""
from __future__ import annotations

import json
import math
import re
import struct
from typing import Any, Iterable, Mapping, NoReturn, Optional, Union

from kafkarec._core import encode_varlong
from kafkarec.errors import SchemaResolutionError, AvroSchemaError

from kafkarec.avro.schema import AvroSchema, parse_schema  # noqa: F401
from kafkarec.avro.arrow_types import _pa, arrow_type_of, unroll  # noqa: F401
from kafkarec.avro.program import _Col, _Compiler, _Layout  # noqa: F401


# ----------------------------------------------------------------------------- the decoder

def _core():
    from kafkarec import _core
    return _core


class AvroDecoder:
    """Decodes Avro bodies written with any number of writer schemas into one
    Arrow column typed by the reader schema (Spark's ``from_avro`` mapping).

    ``add_writer(id, schema)`` compiles writer -> reader resolution once;
    ``decode(values, writer_ids, body_offsets)`` then decodes a whole column
    with no Python object per record.  Each row that cannot be decoded (an
    unknown writer id, a truncated or garbage body, a value the reader cannot
    take) is a null value with its reason in the error column; tombstones
    (null values) and null writer ids are null values with no error."""

    def __init__(self, reader: AvroSchema, *, max_items: int = 1 << 24,
                 stable_union_prefix: Optional[str] = None, datetime_rebase_mode: str = "CORRECTED",
                 time_zone: str = "UTC", recursive_field_max_depth: int = -1) -> None:
        """``max_items`` bounds the items that take no bytes (``array<null>``,
        records of nulls) one value may hold; a value past it is a row error and
        the rows after it are unaffected.  Any other item needs at least one
        byte of input, so work stays bounded by the input size times this.

        ``stable_union_prefix``: name union members by type (see :func:`arrow_type_of`);
        ``datetime_rebase_mode``: Spark's ``datetimeRebaseMode`` (``CORRECTED``, ``LEGACY``,
        ``EXCEPTION``, see :mod:`kafkarec.avro.rebase`), in ``time_zone`` (Spark's session
        time zone); ``recursive_field_max_depth``: Spark's ``recursiveFieldMaxDepth``, how a
        recursive reader schema is read (see :func:`unroll`; -1 refuses it, as Spark does).
        :func:`spark_options` maps ``from_avro``'s option names to these."""
        from kafkarec.avro.rebase import rebase_mode
        if not isinstance(reader, AvroSchema):
            reader = parse_schema(reader)
        self.reader = reader
        self._options = {"stable_union_prefix": stable_union_prefix,
                         "datetime_rebase_mode": rebase_mode(datetime_rebase_mode), "time_zone": time_zone,
                         "recursive_field_max_depth": int(recursive_field_max_depth)}
        # the reader as columns: a recursive one cut at the depth Spark's from_avro cuts it
        self._columns = unroll(reader, recursive_field_max_depth)
        self.arrow_type = arrow_type_of(self._columns, stable_union_prefix=stable_union_prefix)
        self._layout = _Layout(self._columns)
        # the top-level column is nullable: tombstones and records that fail are null
        self._layout.specs[self._layout.root.col][2] = True
        self._specs = [(k, list(ch), nullable) for k, ch, nullable in self._layout.specs]
        self._max_items = max_items
        self._programs: dict = {}
        self._writers: dict = {}
        self._runner = _core()._AvroRunner(self._specs, self._arrow_types(), max_items, self._layout.root.col)

    def __reduce__(self):
        # pickles as schemas (Spark ships decoders to executors); programs are recompiled there
        return (_rebuild_decoder, (self.reader, dict(self._writers), self._max_items, self._options))

    def _arrow_types(self) -> list:
        """The Arrow type of every column, by column id."""
        pa = _pa()
        types: list = [None] * len(self._specs)

        def walk(c: _Col, t) -> None:
            types[c.col] = t
            node = c.node
            if node.type == "union":
                if c.mode == "struct":
                    for m, b in enumerate(x for x in c.branches if x is not None):
                        walk(b, t.field(m).type)
                elif c.mode == "single":
                    walk(next(b for b in c.branches if b is not None), t)
                return
            if node.type == "record":
                for i, fc in enumerate(c.children):
                    walk(fc, t.field(i).type)
            elif node.type == "array":
                walk(c.children[0], t.value_type)
            elif node.type == "map":
                entries, keys, vc = c.children
                types[entries] = pa.struct([t.key_field, t.item_field])
                types[keys] = pa.string()
                walk(vc, t.item_type)

        walk(self._layout.root, self.arrow_type)
        return types

    def add_writer(self, writer_id: int, writer: AvroSchema) -> None:
        """Compile resolution from ``writer`` (schema id ``writer_id``) to the
        reader schema.  Raises SchemaResolutionError when they cannot resolve."""
        if not isinstance(writer, AvroSchema):
            writer = parse_schema(writer)
        self._programs[int(writer_id)] = self._compile(writer, confluent=True)
        self._writers[int(writer_id)] = writer
        self._runner.set_program(int(writer_id), self._programs[int(writer_id)])

    def _compile(self, writer: AvroSchema, confluent: bool):
        if not isinstance(writer, AvroSchema):
            writer = parse_schema(writer)
        comp = _Compiler(self._layout, writer, self._columns, confluent)
        root = comp.compile()
        return _core()._AvroProgram(comp.ops, comp.kids, comp.aux, comp.blobs, comp.errors, root, comp.raw_bytes)

    def decode(self, values, writer_ids, body_offsets):
        """Decode row i, ``values[i][body_offsets[i]:]``, with writer
        ``writer_ids[i]``.  Returns (values as ``arrow_type``, error strings:
        null where the row decoded, else ``"at byte N of the value: reason"``)."""
        return self._rebased(*self._runner.decode(values, writer_ids, body_offsets))

    def _rebased(self, values, errors):
        mode = self._options["datetime_rebase_mode"]
        if mode == "CORRECTED":
            return values, errors
        from kafkarec.avro.rebase import rebase_column, ANCIENT_DATETIME
        values, ancient = rebase_column(values, mode, time_zone=self._options["time_zone"])
        if not ancient.any():
            return values, errors
        pa, pc = _pa(), __import__("pyarrow.compute").compute
        flags = pa.array(ancient)
        values = pc.if_else(flags, pa.scalar(None, values.type), values)
        errors = pc.if_else(pc.and_(flags, pc.is_null(errors)), pa.scalar(ANCIENT_DATETIME), errors)
        return values, errors


#: The ``from_avro`` options :func:`spark_options` maps (Spark's spelling; matched case-insensitively).
SPARK_OPTIONS = ("enableStableIdentifiersForUnionType", "stableIdentifierPrefixForUnionType",
                 "datetimeRebaseMode", "recursiveFieldMaxDepth")


def spark_options(options: Mapping[str, Any], *, time_zone: str = "UTC") -> dict:
    """:class:`AvroDecoder` keyword arguments from Spark ``from_avro`` option names
    (case-insensitive): ``enableStableIdentifiersForUnionType``,
    ``stableIdentifierPrefixForUnionType``, ``datetimeRebaseMode``, ``recursiveFieldMaxDepth``;
    other names are ignored."""
    from kafkarec.avro.rebase import rebase_mode
    from kafkarec._option_text import lower_keys, text_bool
    o = lower_keys(options)
    depth = str(o.get("recursivefieldmaxdepth", "-1")).strip()
    if not depth.lstrip("-").isdigit():
        raise AvroSchemaError(f"recursiveFieldMaxDepth {o['recursivefieldmaxdepth']!r}: an integer")
    stable = text_bool("enableStableIdentifiersForUnionType",
                       o.get("enablestableidentifiersforuniontype", "false"), AvroSchemaError)
    prefix = o.get("stableidentifierprefixforuniontype", "member_")
    return {"stable_union_prefix": str(prefix) if stable else None,
            "datetime_rebase_mode": rebase_mode(o.get("datetimerebasemode")), "time_zone": time_zone,
            "recursive_field_max_depth": int(depth)}


def _rebuild_decoder(reader: AvroSchema, writers: dict, max_items: int, options: dict) -> AvroDecoder:
    dec = AvroDecoder(reader, max_items=max_items, **options)
    for wid, w in writers.items():
        dec.add_writer(wid, w)
    return dec


def decode_values(values, writer: AvroSchema, reader: Optional[AvroSchema] = None, **options):
    """Decode a column of plain Avro bodies (no framing) written with
    ``writer``, read as ``reader`` (default: the writer schema), ``options`` as
    :class:`AvroDecoder` takes them.  Returns (values, error strings) as :meth:`AvroDecoder.decode`."""
    pa = _pa()
    writer = parse_schema(writer)
    dec = AvroDecoder(parse_schema(reader) if reader is not None else writer, **options)
    prog = dec._compile(writer, confluent=False)
    dec._runner.set_program(0, prog)
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(values, pa.binary())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return dec._rebased(*dec._runner.decode(values, None, None))
