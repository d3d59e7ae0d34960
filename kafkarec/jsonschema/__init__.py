"""JSON Schema Schema Registry payloads to typed Arrow columns: the room beside ``avro/`` and
``protobuf/``.  ``decoder.py`` holds the schema (:class:`JsonSchema`), its Arrow type (:func:`arrow_type`,
as Spark's ``from_json`` types it) and :class:`JsonSchemaDecoder` (see its module's notes)."""
from kafkarec.errors import JsonSchemaError
from kafkarec.jsonschema.decoder import JsonSchema, JsonSchemaDecoder, arrow_type

__all__ = ["JsonSchema", "JsonSchemaDecoder", "JsonSchemaError", "arrow_type"]
