"""Avro: schemas, writer -> reader resolution and a compiled decoder to Arrow.

* :func:`parse_schema` parses an Avro 1.12 schema (JSON text or the parsed
  JSON object) into an :class:`AvroSchema`.  Named types defined elsewhere
  (Schema Registry references) are passed in ``named_types``.  Recursive types
  parse (``AvroSchema.recursive``); a decoder reads them as Spark's ``from_avro``
  does, only with ``recursive_field_max_depth`` (``recursiveFieldMaxDepth``, see
  :func:`unroll`); nesting depth, schema size, names and defaults are checked.
* :class:`AvroDecoder` resolves each writer schema to one reader schema with
  Apache Avro's rules (Java's ``Resolver``: promotions int->long->float->double,
  string<->bytes, defaults, skipped fields, aliases, enum defaults, union
  branches) and compiles the result to a flat program that the core
  (``_core_src/_avro.pxi``) runs over the one checked cursor of the core,
  writing Arrow buffers directly: no Python object per record.
* The Arrow type is Spark's ``from_avro`` mapping (``SchemaConverters``),
  keeping Arrow's full precision: record -> struct (fields not nullable unless
  their union has null), enum -> string, ``[null, X]`` -> nullable X,
  ``[int, long]`` -> int64, ``[float, double]`` -> float64, any other union ->
  struct ``member0..memberN`` (nullable members, one set), bytes/fixed ->
  binary, decimal -> decimal128 (decimal256 above precision 38), date ->
  date32, timestamp-millis/micros/nanos -> timestamp ms/us/ns in UTC,
  local-timestamp-* -> timestamp without a time zone, array -> list, map ->
  map<string, X>; time-millis/time-micros stay int32/int64 and duration and
  uuid-on-fixed stay binary, as Spark keeps them.  A primitive schema gives a
  primitive column.  Logical types that Java ignores as invalid (a decimal
  whose scale exceeds its precision...) are ignored here too.
* String columns are valid UTF-8 (Arrow requires it): a string, or bytes read
  as a string, that is not UTF-8 is a per-record error, where Java would
  substitute U+FFFD.

Resolution errors that every record would hit raise
:class:`~kafkarec.errors.SchemaResolutionError` when the writer is added;
errors that only some data reaches (a writer union branch the reader cannot
take, an enum symbol the reader lacks and has no default for) are per-record
errors, as in Java, which reports them lazily.

Trailing bytes after the Avro body are ignored, as Confluent's
``AbstractKafkaAvroDeserializer`` and Java's ``GenericDatumReader`` ignore
them.  A writer schema that is the primitive ``bytes`` takes the rest of the
value with no length prefix in :meth:`AvroDecoder.decode` (Confluent's
framing rule), and a length-prefixed Avro ``bytes`` in :func:`decode_values`.
"""
from kafkarec.avro.schema import (AvroSchema, MAX_DEPTH, MAX_SCHEMA_NODES, MAX_SCHEMA_TEXT,  # noqa: F401
                                  parse_schema)
from kafkarec.avro.arrow_types import MAX_RECURSIVE_FIELD_DEPTH, arrow_type_of, unroll  # noqa: F401
from kafkarec.avro.decoder import SPARK_OPTIONS, AvroDecoder, decode_values, spark_options  # noqa: F401

__all__ = [
    "AvroSchema",
    "AvroDecoder",
    "parse_schema",
    "decode_values",
    "arrow_type_of",
    "spark_options",
    "SPARK_OPTIONS",
    "unroll",
    "MAX_DEPTH",
    "MAX_SCHEMA_NODES",
    "MAX_SCHEMA_TEXT",
    "MAX_RECURSIVE_FIELD_DEPTH",
]
