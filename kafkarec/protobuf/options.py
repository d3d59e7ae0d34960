"""``from_protobuf``'s options: Spark's names (:data:`SPARK_OPTIONS`, :func:`spark_options`) and the
keywords :class:`~kafkarec.protobuf.ProtobufDecoder` takes (:class:`_Options`)."""
from __future__ import annotations

from typing import Any, Mapping

from kafkarec.errors import ProtobufSchemaError


class _Options:
    """from_protobuf's options (Spark's names in :data:`SPARK_OPTIONS`), as the shapes use them."""
    __slots__ = ("enums_as_ints", "emit_default_values", "upcast_unsigned_ints", "unwrap_primitive_wrapper_types",
                 "recursive_fields_max_depth", "retain_empty_message_types", "convert_any_fields_to_json", "structs")

    def __init__(self, enums_as_ints=False, emit_default_values=False, upcast_unsigned_ints=False,
                 unwrap_primitive_wrapper_types=False, recursive_fields_max_depth=-1,
                 retain_empty_message_types=False, convert_any_fields_to_json=False) -> None:
        self.enums_as_ints = bool(enums_as_ints)
        self.emit_default_values = bool(emit_default_values)
        self.upcast_unsigned_ints = bool(upcast_unsigned_ints)
        self.unwrap_primitive_wrapper_types = bool(unwrap_primitive_wrapper_types)
        self.recursive_fields_max_depth = int(recursive_fields_max_depth)
        self.retain_empty_message_types = bool(retain_empty_message_types)
        self.convert_any_fields_to_json = bool(convert_any_fields_to_json)
        self.structs = 0            # struct columns built so far (a recursive message grows them exponentially)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__ if k != "structs"}


#: from_protobuf's options :func:`spark_options` maps, by Spark's names (matched case-insensitively).
SPARK_OPTIONS = ("enums.as.ints", "emit.default.values", "upcast.unsigned.ints", "unwrap.primitive.wrapper.types",
                 "recursive.fields.max.depth", "retain.empty.message.types", "convert.any.fields.to.json")
#: Spark's bound of recursive.fields.max.depth.
MAX_RECURSIVE_FIELDS_DEPTH = 10
#: Most struct columns one column's type may hold (recursion unrolled): beyond, the schema is refused.
MAX_STRUCT_COLUMNS = 20000
#: the field Spark puts in an empty message's struct with retain.empty.message.types.
EMPTY_MESSAGE_FIELD = "__dummy_field_in_empty_struct"


def spark_options(options: Mapping[str, Any]) -> dict:
    """:class:`ProtobufDecoder` keyword arguments from ``from_protobuf``'s option names (case-insensitive):
    ``enums.as.ints``, ``emit.default.values``, ``upcast.unsigned.ints``, ``unwrap.primitive.wrapper.types``,
    ``recursive.fields.max.depth``, ``retain.empty.message.types``, ``convert.any.fields.to.json``; other names
    are ignored."""
    from kafkarec._option_text import lower_keys, text_bool
    o = lower_keys(options)
    out: dict = {}
    for name in SPARK_OPTIONS:
        if name not in o or name == "recursive.fields.max.depth":
            continue
        out[name.replace(".", "_")] = text_bool(name, o[name], ProtobufSchemaError)
    if "recursive.fields.max.depth" in o:
        depth = str(o["recursive.fields.max.depth"]).strip()
        if not depth.lstrip("-").isdigit():
            raise ProtobufSchemaError(f"option recursive.fields.max.depth {depth!r}: an integer")
        out["recursive_fields_max_depth"] = int(depth)
    return out
