"""Protobuf Schema Registry payloads to typed Arrow columns.

Two halves:

* :class:`ProtobufSchema` — a ``.proto`` schema as the registry stores it (its text, plus the files it imports
  by name, Google's well-known types included) compiled by ``protoc`` (the one ``grpcio-tools`` bundles) into a
  ``FileDescriptorSet``, then reduced to a plain, picklable description of its messages and enums.  Compiling
  needs ``grpcio-tools`` and ``protobuf`` (the ``registry`` extra): installed, or as wheels next to the kafkarec
  wheel it was imported from (``scripts/wheelhouse.sh`` puts them there; see :func:`.compiler._toolchain`).  In Spark it
  happens where the column is planned (the driver for ``from_registry``, the Data Source planner's Python worker
  for ``valueFormat``); what travels to executors is the plain description, so executors never compile.
* :class:`ProtobufDecoder` — a column's message (``valueMessage`` / ``keyMessage``, fully qualified; by default
  the file's first message, as Confluent's serializer picks) as one Arrow struct column, typed as Spark's
  ``from_protobuf`` types it with its default options: message -> struct, repeated -> list, map -> map,
  enum -> string (its name; a number the enum does not define -> ``UNKNOWN_ENUM_VALUE_<Enum>_<n>`` as Java's
  protobuf names it for an open enum; a closed (proto2) enum keeps it as an unknown field), int32 / sint32 /
  sfixed32 / uint32 / fixed32 -> int32 and the 64-bit ones -> int64 (unsigned values keep their bits, as Spark
  without ``upcast.unsigned.ints``), ``google.protobuf.Timestamp`` -> timestamp[us, UTC],
  ``google.protobuf.Duration`` -> duration[us], bytes -> binary.  A proto3 field without presence that holds
  its zero value reads as null, as ``from_protobuf`` without ``emit.default.values`` gives; repeated fields and
  maps are never null (an empty list / map).  Map entries keep the wire order (duplicate keys included, as
  Spark's DynamicMessage keeps them).  A recursive message is refused, as Spark refuses it by default
  (``recursive.fields.max.depth`` = -1).  A message field whose message has no fields is left out, as Spark
  leaves it out (``retain.empty.message.types`` = false).  An unset proto2 field with an explicit
  ``[default = ...]`` reads as that default, as Spark reads a field with ``hasDefaultValue``.  The other
  ``from_protobuf`` options are :class:`ProtobufDecoder`'s keywords.

Each record is decoded by the writer message that its own message indexes name, then mapped to the column's
message by field name (fields the column lacks are skipped, fields the writer lacks are null).  A writer field
whose type does not fit the column's is a per-record error when a record carries it.  The wire-format decoder is
compiled in ``kafkarec._core`` (``_core_src/_protobuf.pxi``).
"""
from __future__ import annotations

# One room each: schema.py (the compiled schema, cached), compiler.py (protoc), options.py (from_protobuf's
# options), arrow_types.py (Spark's type mapping), plans.py (writer -> column plans), decoder.py, json_print.py
# (an Any as Java's JsonFormat prints it) and java_numbers.py (Java's float and double text).
from kafkarec.errors import ProtobufSchemaError
from kafkarec.protobuf.decoder import ProtobufDecoder
from kafkarec.protobuf.options import (EMPTY_MESSAGE_FIELD, MAX_RECURSIVE_FIELDS_DEPTH, MAX_STRUCT_COLUMNS,
                                       SPARK_OPTIONS, spark_options)
from kafkarec.protobuf.schema import ProtobufSchema

__all__ = ["ProtobufSchema", "ProtobufDecoder", "ProtobufSchemaError", "spark_options", "SPARK_OPTIONS",
           "MAX_RECURSIVE_FIELDS_DEPTH", "MAX_STRUCT_COLUMNS", "EMPTY_MESSAGE_FIELD"]
