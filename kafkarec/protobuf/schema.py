"""A ``.proto`` schema as the registry stores it, compiled into plain, picklable data.

:class:`ProtobufSchema` holds a compiled file (with its imports) as dicts of messages and enums: what the
shapes (:mod:`.arrow_types`) and plans (:mod:`.plans`) read, and what travels to Spark executors, which never
compile.  Compiled schemas are cached by their inputs, in this process and in the per-user cache.
"""
from __future__ import annotations

import base64
import binascii
import os
import threading
from typing import Mapping

from kafkarec.errors import ProtobufSchemaError
from kafkarec.protobuf.compiler import _compile, _toolchain

# FieldDescriptorProto.Type / Label numbers (descriptor.proto)
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _STRING, _GROUP, _MESSAGE, _BYTES, \
    _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = range(1, 19)
_REPEATED = 3
_TYPE_NAMES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32",
               8: "bool", 9: "string", 10: "group", 11: "message", 12: "bytes", 13: "uint32", 14: "enum",
               15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}
_INT32_TYPES = {_INT32, _SINT32, _SFIXED32, _UINT32, _FIXED32}
_INT64_TYPES = {_INT64, _SINT64, _SFIXED64, _UINT64, _FIXED64}


class ProtobufSchema:
    """A compiled .proto file (with its imports) as plain data: picklable, no protobuf objects inside.

    ``messages``: full name -> dict(name, full_name, fields, nested, map_entry, file); each field a dict
    (name, number, type, repeated, type_name, oneof, presence, default, required, utf8: whether Java's parser
    rejects a string that is not UTF-8, ``FieldDescriptor.needsUtf8Check``).  ``enums``: full name -> dict(name, values
    {number: name}, closed).  ``top_level``: the main file's top-level messages in order (what Confluent's
    message indexes count)."""

    def __init__(self, file_name: str, package: str, messages: dict, enums: dict, top_level: tuple,
                 descriptor_set: bytes) -> None:
        self.file_name = file_name
        self.package = package
        self.messages = messages
        self.enums = enums
        self.top_level = top_level
        self.descriptor_set = descriptor_set

    def __repr__(self) -> str:
        return f"ProtobufSchema({self.file_name!r}, messages={list(self.top_level)!r})"

    @property
    def first_message(self) -> str:
        if not self.top_level:
            raise ProtobufSchemaError(f"{self.file_name} defines no message")
        return self.top_level[0]

    def message_by_indexes(self, indexes) -> str:
        """The full name of the message at Confluent message indexes (e.g. [0], [1, 0])."""
        level = self.top_level
        name = None
        for i in indexes:
            if not 0 <= i < len(level):
                raise ProtobufSchemaError(f"message indexes {list(indexes)} name no message of {self.file_name}")
            name = level[i]
            level = self.messages[name]["nested"]
        if name is None:
            raise ProtobufSchemaError("empty message indexes")
        return name

    # -- construction ------------------------------------------------------------------------------------

    @classmethod
    def from_text(cls, text: str, references: Mapping[str, str] | None = None, *,
                  name: str | None = None) -> "ProtobufSchema":
        """Compile .proto ``text`` with protoc.  ``references``: import name -> .proto text of the files it
        imports (as the registry's schema references give them); Google's well-known types resolve without
        them.  A schema or reference given as a base64 ``FileDescriptorProto`` (what confluent-kafka-python
        registers) is taken as is.  ``name``: the file name of ``text`` (default: ``schema.proto``).
        The result is kept in a per-user cache (:func:`_cached`): a process that finds it there needs
        neither protoc nor the protobuf package."""
        references = dict(references or {})
        return _cached((text, tuple(sorted(references.items())), name),
                       lambda: cls._compile_text(text, references, name))

    @classmethod
    def _compile_text(cls, text: str, references: dict, name: str | None) -> "ProtobufSchema":
        main_fdp = _as_descriptor(text)
        texts: dict[str, str] = {}
        given: dict[str, bytes] = {}
        for ref_name, ref_text in references.items():
            fdp = _as_descriptor(ref_text)
            if fdp is not None:
                given[ref_name] = fdp
            else:
                texts[ref_name] = ref_text
        if main_fdp is not None:
            main_name = _descriptor_name(main_fdp) or name or "schema.proto"
            given[main_name] = main_fdp
        else:
            main_name = name or "schema.proto"
            while main_name in references:
                main_name = "_" + main_name
            texts[main_name] = text
        fds = _compile(texts, given, main_name)
        return cls.from_descriptor_set(fds, file_name=main_name)

    @classmethod
    def from_descriptor_set(cls, data: bytes, file_name: str | None = None) -> "ProtobufSchema":
        """A serialized ``FileDescriptorSet`` (e.g. ``protoc --include_imports --descriptor_set_out``);
        ``file_name`` picks the main file (default: the last one, which protoc writes after its imports)."""
        _toolchain()
        from google.protobuf import descriptor_pb2
        fds = descriptor_pb2.FileDescriptorSet()
        try:
            fds.ParseFromString(bytes(data))
        except Exception as exc:  # protobuf's DecodeError
            raise ProtobufSchemaError(f"not a FileDescriptorSet: {exc}") from None
        if not fds.file:
            raise ProtobufSchemaError("the FileDescriptorSet holds no file")
        files = {f.name: f for f in fds.file}
        main = files.get(file_name) if file_name else fds.file[-1]
        if main is None:
            raise ProtobufSchemaError(f"the FileDescriptorSet has no file {file_name!r}")
        messages: dict[str, dict] = {}
        enums: dict[str, dict] = {}
        for f in fds.file:
            _collect(f, messages, enums)
        top = tuple(_full(main.package, m.name) for m in main.message_type)
        return cls(main.name, main.package, messages, enums, top, bytes(data))


def _full(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def _collect(f, messages: dict, enums: dict) -> None:
    syntax = f.syntax or "proto2"

    def presence(fd, in_oneof: bool) -> bool:
        if fd.label == _REPEATED:
            return False
        if fd.type in (_MESSAGE, _GROUP) or in_oneof or fd.proto3_optional:
            return True
        if syntax == "proto3":
            return False
        if syntax == "editions":
            # FeatureSet.field_presence IMPLICIT = 2 (file- or field-level); editions' default is explicit
            fp = fd.options.features.field_presence or f.options.features.field_presence
            return fp != 2
        return True

    def enum(e, scope):
        values: dict[int, str] = {}
        for v in e.value:
            values.setdefault(v.number, v.name)     # aliases: the first name of a number, as Java finds it
        closed = syntax == "proto2" or (syntax == "editions" and (e.options.features.enum_type
                                                                  or f.options.features.enum_type) == 2)
        full = _full(scope, e.name)
        enums[full] = {"name": e.name, "full_name": full, "values": values, "closed": closed,
                       "first": e.value[0].name if e.value else ""}

    def utf8_checked(fd, m) -> bool:
        # Java's needsUtf8Check: map entries always; else the utf8_validation feature (VERIFY in proto3 and
        # editions unless a feature says NONE = 3) or proto2's java_string_check_utf8
        if fd.type != _STRING:
            return False
        if m.options.map_entry or f.options.java_string_check_utf8:
            return True
        if syntax == "editions":
            return (fd.options.features.utf8_validation or m.options.features.utf8_validation
                    or f.options.features.utf8_validation) != 3
        return syntax == "proto3"

    def message(m, scope):
        full = _full(scope, m.name)
        fields = []
        for fd in m.field:
            in_oneof = fd.HasField("oneof_index") and not fd.proto3_optional
            type_name = fd.type_name[1:] if fd.type_name.startswith(".") else fd.type_name
            fields.append({"name": fd.name, "number": fd.number, "type": fd.type,
                           "repeated": fd.label == _REPEATED, "type_name": type_name,
                           "oneof": fd.oneof_index if in_oneof else -1,
                           "presence": presence(fd, in_oneof),
                           "default": fd.default_value if fd.HasField("default_value") else None,
                           "required": fd.label == 2 or (syntax == "editions" and (
                               fd.options.features.field_presence or f.options.features.field_presence) == 3),
                           "utf8": utf8_checked(fd, m)})
        messages[full] = {"name": m.name, "full_name": full, "fields": fields,
                          "nested": tuple(_full(full, n.name) for n in m.nested_type),
                          "map_entry": m.options.map_entry, "file": f.name}
        for n in m.nested_type:
            message(n, full)
        for e in m.enum_type:
            enum(e, full)

    for m in f.message_type:
        message(m, f.package)
    for e in f.enum_type:
        enum(e, f.package)


def _as_descriptor(text: str) -> bytes | None:
    """A base64 FileDescriptorProto (as confluent-kafka-python registers schemas), else None."""
    s = text.strip()
    if not s or any(c in s for c in " \n\t{;\"'"):
        return None
    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None
    _toolchain()
    from google.protobuf import descriptor_pb2
    fdp = descriptor_pb2.FileDescriptorProto()
    try:
        fdp.ParseFromString(raw)
    except Exception:
        return None
    return raw if fdp.name or fdp.message_type else None


def _descriptor_name(raw: bytes) -> str:
    from google.protobuf import descriptor_pb2
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(raw)
    return fdp.name


# Compiled schemas, by their inputs: in this process (a Spark planner builds the same columns for each
# query), and shared by this user's processes on this machine (the driver, Spark's planner workers, later
# applications) as a pickled ProtobufSchema per input in the per-user cache kafkarec unpacks wheels into
# (owner-checked, 0700).  A protoc run costs 0.04-0.13 s here.  The format number changes whenever
# ProtobufSchema's fields do.
_CACHE_FORMAT = 2
_MEMO: dict = {}
_MEMO_LOCK = threading.Lock()
_MEMO_MAX = 256


def _cached(inputs: tuple, compile_it) -> "ProtobufSchema":
    import hashlib
    import pickle
    from kafkarec import __version__
    digest = hashlib.sha256(pickle.dumps((_CACHE_FORMAT, __version__, inputs), protocol=4)).hexdigest()
    with _MEMO_LOCK:
        found = _MEMO.get(digest)
    if found is not None:
        return found
    schema = _from_disk_or(digest, compile_it)
    with _MEMO_LOCK:
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[digest] = schema
    return schema


def _from_disk_or(digest: str, compile_it) -> "ProtobufSchema":
    import pickle
    from kafkarec._boot.files import atomic_write, cache_root
    path = None
    try:
        folder = os.path.join(cache_root(), "protobuf")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        path = os.path.join(folder, digest[:40] + ".pickle")
        with open(path, "rb") as fh:
            found = pickle.load(fh)
        if isinstance(found, ProtobufSchema):
            return found
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError):
        pass                                    # not there (or unreadable): compile
    schema = compile_it()
    if path is not None:
        try:
            atomic_write(path, pickle.dumps(schema, protocol=4), fsync=False)
        except OSError:
            pass                                # a read-only cache only costs the next compile
    return schema
