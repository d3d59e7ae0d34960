"""Protobuf Schema Registry payloads to typed Arrow columns.

Two halves:

* :class:`ProtobufSchema` — a ``.proto`` schema as the registry stores it (its text, plus the files it imports
  by name, Google's well-known types included) compiled by ``protoc`` (the one ``grpcio-tools`` bundles) into a
  ``FileDescriptorSet``, then reduced to a plain, picklable description of its messages and enums.  Compiling
  needs ``grpcio-tools`` and ``protobuf`` (the ``registry`` extra): installed, or as wheels next to the kafkarec
  wheel it was imported from (``scripts/wheelhouse.sh`` puts them there; see :func:`_toolchain`).  In Spark it
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

import base64
import binascii
import os
import subprocess
import sys
import tempfile
import threading
from typing import Any, Mapping

from kafkarec.errors import KafkaRecError, ProtobufSchemaError, SchemaResolutionError  # noqa: F401 (re-exported)

__all__ = ["ProtobufSchema", "ProtobufDecoder", "ProtobufSchemaError", "spark_options", "SPARK_OPTIONS"]




# FieldDescriptorProto.Type / Label numbers (descriptor.proto)
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _STRING, _GROUP, _MESSAGE, _BYTES, \
    _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = range(1, 19)
_REPEATED = 3
_TYPE_NAMES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32",
               8: "bool", 9: "string", 10: "group", 11: "message", 12: "bytes", 13: "uint32", 14: "enum",
               15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}
_INT32_TYPES = {_INT32, _SINT32, _SFIXED32, _UINT32, _FIXED32}
_INT64_TYPES = {_INT64, _SINT64, _SFIXED64, _UINT64, _FIXED64}


# ------------------------------------------------------------------ schema

class ProtobufSchema:
    """A compiled .proto file (with its imports) as plain data: picklable, no protobuf objects inside.

    ``messages``: full name -> dict(name, full_name, fields, nested, map_entry, file); each field a dict
    (name, number, type, repeated, type_name, oneof, presence).  ``enums``: full name -> dict(name, values
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
                               fd.options.features.field_presence or f.options.features.field_presence) == 3)})
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


_TOOLCHAIN_LOCK = threading.Lock()
_TOOLCHAIN_FOLDERS: list | None = None       # where grpc_tools and google.protobuf were found


def _toolchain() -> list:
    """Make ``google.protobuf`` and ``grpc_tools`` importable, or raise a one-line ProtobufSchemaError naming
    what to install where.  When they are not installed, their wheels are taken from next to the kafkarec
    wheel this process imported kafkarec from (Spark ships them there with kafkarec's other dependencies),
    ``$KAFKAREC_WHEELHOUSE`` or ``sys.path`` (by :mod:`spark_udfs._wheels`, imported only then).  Returns the
    folders that hold them (for protoc's own Python)."""

    def folders() -> list:
        global _TOOLCHAIN_FOLDERS
        import google.protobuf.descriptor_pb2  # noqa: F401
        import grpc_tools
        _TOOLCHAIN_FOLDERS = [
            os.path.dirname(os.path.dirname(grpc_tools.__file__)),
            os.path.dirname(os.path.dirname(os.path.dirname(google.protobuf.descriptor_pb2.__file__)))]
        return list(_TOOLCHAIN_FOLDERS)

    with _TOOLCHAIN_LOCK:
        if _TOOLCHAIN_FOLDERS is not None:
            return list(_TOOLCHAIN_FOLDERS)
        # Imported only once their distributions are on sys.path: a failed import would leave namespace
        # packages behind (google, and google.protobuf when a zip on sys.path holds such a folder, as
        # Spark's spark-core jar does in its Python workers) that the wheels' packages cannot replace.
        if _compiler_installed():
            try:
                return folders()
            except ImportError:
                pass
        import zipimport
        from kafkarec._files import cache_root
        from spark_udfs import _wheels      # the wheel rules (kafkarec's wheel holds spark_udfs too)
        loader = getattr(sys.modules.get("kafkarec"), "__loader__", None)
        archive = loader.archive if isinstance(loader, zipimport.zipimporter) else None
        res = _wheels.activate_projects(_wheels.PROTOBUF_COMPILER, archive, cache_root())
        try:
            return folders()
        except ImportError as exc:
            where = f"{sys.executable} (pid {os.getpid()})"
            why = " | ".join(res.problems) or f"{type(exc).__name__}: {exc}"
            raise ProtobufSchemaError(
                f"compiling Protobuf schema text needs grpcio-tools and protobuf in {where}: {why}. Install them "
                f"there (pip install 'kafkarec[registry]'), or put their wheels next to the kafkarec wheel "
                f"({_wheels.FIX_COMMAND.split('   ')[0].replace('PYTHON', sys.executable)})") from None


def _compiler_installed() -> bool:
    """Are grpcio-tools and protobuf installed (or activated) here?  Asked of their distributions'
    metadata, which imports neither."""
    import importlib.metadata as md
    try:
        md.distribution("protobuf")
        md.distribution("grpcio-tools")
    except md.PackageNotFoundError:
        return False
    return True


def _wkt_include() -> str:
    import grpc_tools
    return os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")


# Compiled schemas, by their inputs: in this process (a Spark planner builds the same columns for each
# query), and shared by this user's processes on this machine (the driver, Spark's planner workers, later
# applications) as a pickled ProtobufSchema per input in the per-user cache kafkarec unpacks wheels into
# (owner-checked, 0700).  A protoc run costs 0.04-0.13 s here.  The format number changes whenever
# ProtobufSchema's fields do.
_CACHE_FORMAT = 1
_MEMO: dict = {}
_MEMO_MAX = 256


def _cached(inputs: tuple, compile_it) -> "ProtobufSchema":
    import hashlib
    import pickle
    from kafkarec import __version__
    digest = hashlib.sha256(pickle.dumps((_CACHE_FORMAT, __version__, inputs), protocol=4)).hexdigest()
    with _TOOLCHAIN_LOCK:
        found = _MEMO.get(digest)
    if found is not None:
        return found
    schema = _from_disk_or(digest, compile_it)
    with _TOOLCHAIN_LOCK:
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[digest] = schema
    return schema


def _from_disk_or(digest: str, compile_it) -> "ProtobufSchema":
    import pickle
    from kafkarec._files import atomic_write, cache_root
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


def _compile(texts: dict[str, str], given: dict[str, bytes], main_name: str) -> bytes:
    """protoc over the .proto texts (imports from the texts, the given descriptors and the well-known types)
    -> one FileDescriptorSet with every file the main one needs, imports first."""
    paths = _toolchain()
    from google.protobuf import descriptor_pb2
    out = descriptor_pb2.FileDescriptorSet()
    have: dict[str, Any] = {}
    for fname, raw in given.items():
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(raw)
        fdp.name = fname
        have[fname] = fdp
    with tempfile.TemporaryDirectory(prefix="kafkarec-proto-") as tmp:
        for fname, text in texts.items():
            path = os.path.join(tmp, "src", fname)
            if os.path.isabs(fname) or ".." in fname.split("/"):
                raise ProtobufSchemaError(f"import name {fname!r} is not a relative path")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        # What protoc must compile: the texts, and the imports of given descriptors it cannot find elsewhere.
        targets = list(texts)
        for fdp in have.values():
            targets += [d for d in fdp.dependency if d not in have and d not in texts]
        if targets:
            args = [sys.executable, "-m", "grpc_tools.protoc", f"-I{os.path.join(tmp, 'src')}",
                    f"-I{_wkt_include()}", "--include_imports",
                    f"--descriptor_set_out={os.path.join(tmp, 'out.pb')}"]
            if have:
                given_set = descriptor_pb2.FileDescriptorSet(file=list(have.values()))
                with open(os.path.join(tmp, "given.pb"), "wb") as fh:
                    fh.write(given_set.SerializeToString())
                args.append(f"--descriptor_set_in={os.path.join(tmp, 'given.pb')}")
            # protoc's Python sees the packages where this process found them (maybe unpacked wheels)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                paths + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
            proc = subprocess.run(args + sorted(set(targets)), capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise ProtobufSchemaError(f"protoc: {(proc.stderr or proc.stdout).strip()}")
            compiled = descriptor_pb2.FileDescriptorSet()
            with open(os.path.join(tmp, "out.pb"), "rb") as fh:
                compiled.ParseFromString(fh.read())
            for fdp in compiled.file:
                have.setdefault(fdp.name, fdp)
    # Dependency order, main file last.
    seen: set[str] = set()

    def visit(fname: str) -> None:
        if fname in seen:
            return
        seen.add(fname)
        fdp = have.get(fname)
        if fdp is None:
            raise ProtobufSchemaError(f"import {fname!r} is neither a reference nor a well-known type")
        for d in fdp.dependency:
            visit(d)
        out.file.append(fdp)

    visit(main_name)
    return out.SerializeToString()


# ------------------------------------------------------------------ column types (Spark's mapping)

def _is_time(messages: dict, name: str, short: str) -> bool:
    # Spark's SchemaConverters: a message named Timestamp / Duration with fields seconds, nanos.
    m = messages.get(name)
    return (m is not None and m["name"] == short and len(m["fields"]) == 2
            and m["fields"][0]["name"] == "seconds" and m["fields"][1]["name"] == "nanos")


class _Shape:
    """The column a reader field builds, with what it came from (for matching writer fields).  ``column`` is
    the physical column the core fills; ``logical`` names a conversion of that column to the type users see
    (``unwrap``: a wrapper message's ``value``; ``udecimal``: uint64 bits as decimal(20, 0)), ``arrow_type``
    is that type."""
    __slots__ = ("kind", "column", "ptype", "message", "enum", "children", "names", "element", "key", "value",
                 "logical", "arrow_type", "converts")

    def __init__(self, kind: str, ptype: int = 0, message: str | None = None, enum: str | None = None):
        self.kind = kind
        self.ptype = ptype
        self.message = message
        self.enum = enum
        self.children: list[_Shape] = []
        self.names: dict[str, int] = {}
        self.element: _Shape | None = None
        self.key: _Shape | None = None
        self.value: _Shape | None = None
        self.column: Any = None
        self.logical: str | None = None
        self.arrow_type: Any = None
        self.converts = False


_SCALARS = ("int32", "int64", "float", "double", "bool", "string", "binary", "timestamp", "duration")


def _physical_type(kind: str, pa):
    return {"int32": pa.int32(), "int64": pa.int64(), "float": pa.float32(), "double": pa.float64(),
            "bool": pa.bool_(), "string": pa.string(), "binary": pa.binary(),
            "timestamp": pa.timestamp("us", tz="UTC"), "duration": pa.duration("us")}[kind]


def _finish(shape: _Shape, pa, children: tuple = ()) -> _Shape:
    """Give ``shape`` its core column (over its children's) and the Arrow type users see."""
    from kafkarec import _core
    k = shape.kind
    if k == "struct":
        physical = pa.struct([pa.field(n, c.column.arrow_type) for n, c in zip(shape.names, shape.children)])
        shape.arrow_type = pa.struct([pa.field(n, c.arrow_type) for n, c in zip(shape.names, shape.children)])
    elif k == "list":
        physical = pa.list_(shape.element.column.arrow_type)
        shape.arrow_type = pa.list_(shape.element.arrow_type)
    elif k == "map":
        physical = pa.map_(shape.key.column.arrow_type, shape.value.column.arrow_type)
        shape.arrow_type = pa.map_(shape.key.arrow_type, shape.value.arrow_type)
    else:
        physical = shape.arrow_type = _physical_type(k, pa)
    shape.column = _core.pb_column(_core.PB_COLUMN_KINDS[k], physical, list(children)) if children else \
        _core.pb_column(_core.PB_COLUMN_KINDS[k], physical)
    if shape.logical == "unwrap":
        shape.arrow_type = shape.children[0].arrow_type
    elif shape.logical == "udecimal":
        shape.arrow_type = pa.decimal128(20, 0)
    shape.converts = shape.logical is not None or any(
        c is not None and c.converts for c in (*shape.children, shape.element, shape.key, shape.value))
    return shape


class _Options:
    """from_protobuf's options (Spark's names in :data:`SPARK_OPTIONS`), as the shapes use them."""
    __slots__ = ("enums_as_ints", "emit_default_values", "upcast_unsigned_ints", "unwrap_primitive_wrapper_types",
                 "recursive_fields_max_depth", "retain_empty_message_types", "structs")

    def __init__(self, enums_as_ints=False, emit_default_values=False, upcast_unsigned_ints=False,
                 unwrap_primitive_wrapper_types=False, recursive_fields_max_depth=-1,
                 retain_empty_message_types=False) -> None:
        self.enums_as_ints = bool(enums_as_ints)
        self.emit_default_values = bool(emit_default_values)
        self.upcast_unsigned_ints = bool(upcast_unsigned_ints)
        self.unwrap_primitive_wrapper_types = bool(unwrap_primitive_wrapper_types)
        self.recursive_fields_max_depth = int(recursive_fields_max_depth)
        self.retain_empty_message_types = bool(retain_empty_message_types)
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
# google.protobuf wrapper messages -> the kind of their `value` (unwrap.primitive.wrapper.types)
_WRAPPERS = {"google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
             "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.StringValue",
             "google.protobuf.BytesValue", "google.protobuf.FloatValue", "google.protobuf.DoubleValue"}


def spark_options(options: Mapping[str, Any]) -> dict:
    """:class:`ProtobufDecoder` keyword arguments from ``from_protobuf``'s option names (case-insensitive):
    ``enums.as.ints``, ``emit.default.values``, ``upcast.unsigned.ints``, ``unwrap.primitive.wrapper.types``,
    ``recursive.fields.max.depth``, ``retain.empty.message.types``; other names are ignored.
    ``convert.any.fields.to.json=true`` is refused: kafkarec does not print Any as JSON yet."""
    from kafkarec._option_text import lower_keys, text_bool
    o = lower_keys(options)
    out: dict = {}
    for name in SPARK_OPTIONS:
        if name not in o or name == "recursive.fields.max.depth":
            continue
        flag = text_bool(name, o[name], ProtobufSchemaError)
        if name == "convert.any.fields.to.json":
            if flag:
                raise ProtobufSchemaError("option convert.any.fields.to.json=true: kafkarec does not print "
                                          "google.protobuf.Any as JSON (Any stays struct<type_url, value>)")
            continue
        out[name.replace(".", "_")] = flag
    if "recursive.fields.max.depth" in o:
        depth = str(o["recursive.fields.max.depth"]).strip()
        if not depth.lstrip("-").isdigit():
            raise ProtobufSchemaError(f"option recursive.fields.max.depth {depth!r}: an integer")
        out["recursive_fields_max_depth"] = int(depth)
    return out


def _message_shape(schema: ProtobufSchema, message: str, o: _Options, depth_of: dict) -> _Shape | None:
    """The struct column of ``message`` (its columns built fresh), or None when Spark leaves it out: no field
    left (empty, or every field cut by the recursion depth) and not ``retain.empty.message.types``."""
    import pyarrow as pa
    m = schema.messages[message]
    o.structs += 1
    if o.structs > MAX_STRUCT_COLUMNS:
        raise ProtobufSchemaError(f"{message}: the column's type would hold more than {MAX_STRUCT_COLUMNS} "
                                  "structs (a recursive message read to a large recursive.fields.max.depth)")
    shape = _Shape("struct", _MESSAGE, message)
    for fd in m["fields"]:
        child = _field_shape(schema, fd, o, depth_of)
        if child is not None:
            shape.names[fd["name"]] = len(shape.children)
            shape.children.append(child)
    if not shape.children:
        if not o.retain_empty_message_types:
            return None
        dummy = _finish(_Shape("string"), pa)
        shape.names[EMPTY_MESSAGE_FIELD] = 0
        shape.children.append(dummy)
    return _finish(shape, pa, tuple(c.column for c in shape.children))


def _root_shape(schema: ProtobufSchema, message: str, o: _Options) -> _Shape:
    """The column's struct: an empty message is an empty struct (or the dummy field), never left out."""
    import pyarrow as pa
    shape = _message_shape(schema, message, o, {message: 1})
    return shape if shape is not None else _finish(_Shape("struct", _MESSAGE, message), pa)


def _scalar_shape(schema: ProtobufSchema, fd: dict, o: _Options, depth_of: dict) -> _Shape | None:
    import pyarrow as pa
    t = fd["type"]
    if t in (_MESSAGE, _GROUP):
        name = fd["type_name"]
        if _is_time(schema.messages, name, "Timestamp"):
            return _finish(_Shape("timestamp", t, name), pa)
        if _is_time(schema.messages, name, "Duration"):
            return _finish(_Shape("duration", t, name), pa)
        if o.unwrap_primitive_wrapper_types and name in _WRAPPERS and name in schema.messages:
            shape = _message_shape(schema, name, o, dict(depth_of))
            shape.logical = "unwrap"
            return _finish(shape, pa, tuple(c.column for c in shape.children))
        if name in depth_of:
            # Spark's rule: the column's own message counts 1; a message met again at depth d is read while
            # d < recursive.fields.max.depth, then its field is left out
            if not 1 <= o.recursive_fields_max_depth <= MAX_RECURSIVE_FIELDS_DEPTH:
                raise ProtobufSchemaError(
                    f"recursive message {name} (field {fd['name']!r}): Spark's from_protobuf reads it only with "
                    f"recursive.fields.max.depth between 1 and {MAX_RECURSIVE_FIELDS_DEPTH} "
                    f"(given {o.recursive_fields_max_depth})")
            if depth_of[name] >= o.recursive_fields_max_depth:
                return None
        if len(depth_of) > 100:
            raise ProtobufSchemaError(f"messages nested deeper than 100 at {name}")
        return _message_shape(schema, name, o, {**depth_of, name: depth_of.get(name, 0) + 1})
    if t == _ENUM:
        return _finish(_Shape("int32" if o.enums_as_ints else "string", t, enum=fd["type_name"]), pa)
    if t == _UINT32 and o.upcast_unsigned_ints:
        return _finish(_Shape("int64", t), pa)
    if t == _UINT64 and o.upcast_unsigned_ints:
        shape = _Shape("int64", t)
        shape.logical = "udecimal"
        return _finish(shape, pa)
    kind = ("int32" if t in _INT32_TYPES else "int64" if t in _INT64_TYPES else
            {_FLOAT: "float", _DOUBLE: "double", _BOOL: "bool", _STRING: "string", _BYTES: "binary"}[t])
    return _finish(_Shape(kind, t), pa)


def _field_shape(schema: ProtobufSchema, fd: dict, o: _Options, depth_of: dict) -> _Shape | None:
    import pyarrow as pa
    if fd["repeated"]:
        entry = schema.messages.get(fd["type_name"]) if fd["type"] == _MESSAGE else None
        if entry is not None and entry["map_entry"]:
            shape = _Shape("map", _MESSAGE, fd["type_name"])
            kf, vf = entry["fields"][0], entry["fields"][1]
            shape.key = _scalar_shape(schema, kf, o, depth_of)
            shape.value = _scalar_shape(schema, vf, o, depth_of)
            if shape.key is None or shape.value is None:
                return None                 # Spark drops the map when its value is cut
            entries = _Shape("struct", _MESSAGE, fd["type_name"])
            entries.names = {"key": 0, "value": 1}
            entries.children = [shape.key, shape.value]
            from kafkarec import _core
            struct_type = pa.struct([pa.field("key", shape.key.column.arrow_type, nullable=False),
                                     pa.field("value", shape.value.column.arrow_type)])
            entries.column = _core.pb_column(_core.PB_COLUMN_KINDS["struct"], struct_type,
                                             [shape.key.column, shape.value.column])
            entries.arrow_type = struct_type
            entries.converts = shape.key.converts or shape.value.converts
            shape.element = entries
            return _finish(shape, pa, (entries.column,))
        shape = _Shape("list", fd["type"])
        shape.element = _scalar_shape(schema, fd, o, depth_of)
        if shape.element is None:
            return None
        return _finish(shape, pa, (shape.element.column,))
    return _scalar_shape(schema, fd, o, depth_of)


def _logical(arr, shape: _Shape):
    """A decoded (physical) column as users see it: wrappers unwrapped, uint64 bits as decimal(20, 0)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if not shape.converts:
        return arr
    if arr.offset:
        arr = pa.concat_arrays([arr])       # children and offsets from 0
    if shape.logical == "udecimal":
        return arr.view(pa.uint64()).cast(pa.decimal128(20, 0))
    k = shape.kind
    if k == "struct":
        kids = [_logical(arr.field(i), c) for i, c in enumerate(shape.children)]
        if shape.logical == "unwrap":
            return pc.if_else(arr.is_valid(), kids[0], pa.scalar(None, kids[0].type))
        return pa.StructArray.from_arrays(kids, fields=list(shape.arrow_type), mask=arr.is_null())
    if k == "list":
        return pa.ListArray.from_arrays(arr.offsets, _logical(arr.values, shape.element), type=shape.arrow_type,
                                        mask=arr.is_null())
    if k == "map":
        return pa.MapArray.from_arrays(arr.offsets, _logical(arr.keys, shape.key), _logical(arr.items, shape.value),
                                       type=shape.arrow_type, mask=arr.is_null())
    return arr


# ------------------------------------------------------------------ writer -> column plans

def _describe(schema: ProtobufSchema, fd: dict) -> str:
    t = _TYPE_NAMES.get(fd["type"], str(fd["type"]))
    if fd["type"] in (_MESSAGE, _ENUM, _GROUP):
        t = fd["type_name"]
        entry = schema.messages.get(fd["type_name"])
        if entry is not None and entry["map_entry"]:
            t = "map"
    return ("repeated " if fd["repeated"] and t != "map" else "") + t


def _fits(schema: ProtobufSchema, fd: dict, shape: _Shape, element: bool = False) -> bool:
    """Whether writer field fd can be read into column `shape` (repeatedness checked by the caller)."""
    t = fd["type"]
    k = shape.kind
    if k == "int32":
        return t == _ENUM if shape.ptype == _ENUM else t in _INT32_TYPES      # enums.as.ints: enums only
    if k == "int64":
        return t in _INT32_TYPES or t in _INT64_TYPES
    if k == "float":
        return t == _FLOAT
    if k == "double":
        return t in (_FLOAT, _DOUBLE)
    if k == "bool":
        return t == _BOOL
    if k == "string":
        return t == (_ENUM if shape.ptype == _ENUM else _STRING)
    if k == "binary":
        return t in (_BYTES, _STRING)
    if k in ("timestamp", "duration"):
        return t in (_MESSAGE, _GROUP) and _is_time(schema.messages, fd["type_name"],
                                                    "Timestamp" if k == "timestamp" else "Duration")
    if k == "struct":
        m = schema.messages.get(fd["type_name"]) if t in (_MESSAGE, _GROUP) else None
        return m is not None and not m["map_entry"]
    return False


class _Planner:
    """Plans of one writer schema against one column, memoized per (writer message, column)."""

    def __init__(self, writer: ProtobufSchema, reader: ProtobufSchema, root: _Shape, options: _Options):
        self.options = options
        self.writer = writer
        self.reader = reader
        self.root = root
        self.plans: dict[tuple[str, int], Any] = {}

    def plan(self, message: str, shape: _Shape, emit_defaults: bool = False):
        from kafkarec import _core
        key = (message, id(shape))
        if key in self.plans:
            return self.plans[key]
        m = self.writer.messages[message]
        fields = []
        slot_defaults: list = [None] * len(shape.children)
        self.plans[key] = None      # (a writer recursion that reaches the same column again cannot happen:
        for fd in m["fields"]:      # each column sits at one depth)
            slot = shape.names.get(fd["name"], -1)
            sub = names = unknown = why = None
            closed = False
            # emit.default.values: a singular field without presence reads its zero value when unset (Spark's
            # getFieldValue), fields with presence (messages, oneofs, optional, proto2) stay null
            zero_when_unset = (self.options.emit_default_values and not fd["presence"] and not fd["repeated"]
                               and fd["type"] not in (_MESSAGE, _GROUP))
            if slot >= 0:
                target = shape.children[slot]
                why, sub = self._match(message, fd, target)
                if fd["type"] == _ENUM:
                    e = self.writer.enums.get(fd["type_name"])
                    if e is not None:
                        names = {n: v.encode() for n, v in e["values"].items()}
                        unknown = f"UNKNOWN_ENUM_VALUE_{e['name']}_".encode()
                        closed = e["closed"]
                        if emit_defaults or zero_when_unset:
                            slot_defaults[slot] = _enum_zero(e, target)
                elif zero_when_unset and why is None:
                    slot_defaults[slot] = _zero(target)
                if emit_defaults and sub is not None:
                    slot_defaults[slot] = sub
                if why is None and fd.get("default") is not None and not fd["repeated"]:
                    slot_defaults[slot] = _default_value(fd, target, self.writer)
            fields.append((fd["number"], fd["type"], slot, fd["repeated"], not fd["presence"] and not zero_when_unset,
                           closed, fd["oneof"], sub, names, unknown, why))
        plan = _core._PbMsgPlan(shape.column, fields, emit_defaults, slot_defaults,
                                [fd["number"] for fd in m["fields"] if fd.get("required")])
        self.plans[key] = plan
        return plan

    def _match(self, message: str, fd: dict, target: _Shape):
        """(why it does not fit or None, subplan or None) for writer field fd into column `target`."""
        where = f"field {fd['name']!r} (number {fd['number']}) of writer message {message}"
        wtype = _describe(self.writer, fd)
        bad = (f"{where}: its writer type {wtype} does not fit the column's type "
               f"{target.arrow_type}", None)
        entry = self.writer.messages.get(fd["type_name"]) if fd["type"] == _MESSAGE else None
        is_map = fd["repeated"] and entry is not None and entry["map_entry"]
        if target.kind == "map":
            if not is_map:
                return bad
            kf, vf = entry["fields"][0], entry["fields"][1]
            if not (_fits(self.writer, kf, target.key) and _fits(self.writer, vf, target.value)):
                return bad
            return None, self.plan(fd["type_name"], target.element, emit_defaults=True)
        if target.kind == "list":
            if not fd["repeated"] or is_map or not _fits(self.writer, fd, target.element):
                return bad
            if target.element.kind == "struct":
                return None, self.plan(fd["type_name"], target.element)
            return None, None
        if fd["repeated"] or not _fits(self.writer, fd, target):
            return bad
        if target.kind == "struct":
            return None, self.plan(fd["type_name"], target)
        return None, None


def _zero(target: _Shape):
    """The zero value of a scalar column, as the core takes a slot default."""
    return {"int32": 0, "int64": 0, "float": 0.0, "double": 0.0, "bool": False, "string": b"",
            "binary": b""}.get(target.kind)


def _enum_zero(e: dict, target: _Shape):
    """An unset enum: the value numbered 0 of an open enum, the first value of a closed one (Java's default);
    its name, or its number with enums.as.ints."""
    if target.kind == "int32":
        if not e["closed"] or not e["first"]:
            return 0
        return next((n for n, v in e["values"].items() if v == e["first"]), 0)
    return ((e["values"].get(0) if not e["closed"] else e["first"]) or "").encode()


def _default_value(fd: dict, target: _Shape, writer: ProtobufSchema):
    """A proto2 [default = ...] (descriptor text) as the column holds it."""
    import codecs
    text = fd["default"]
    t = fd["type"]
    if t == _ENUM:
        if target.kind == "int32":          # enums.as.ints: the number of the named value
            e = writer.enums.get(fd["type_name"]) or {"values": {}}
            return next((n for n, v in e["values"].items() if v == text), 0)
        return text.encode()
    if t == _STRING:
        return text.encode()
    if t == _BYTES:
        return codecs.escape_decode(text.encode("latin-1", "backslashreplace"))[0]
    if t == _BOOL:
        return text == "true"
    if t in (_FLOAT, _DOUBLE):
        return float(text)
    value = int(text)
    bits = 32 if target.kind == "int32" else 64
    value &= (1 << bits) - 1                    # unsigned defaults keep their bits, as the values do
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


# ------------------------------------------------------------------ decoder

class ProtobufDecoder:
    """Protobuf payloads of Schema Registry records -> one Arrow struct column (see the module docstring).

    ``reader_schema``: a :class:`ProtobufSchema` (or .proto text); ``message``: the column's message, fully
    qualified (``valueMessage`` / ``keyMessage``), default the file's first message.  Picklable: plans are
    rebuilt from the plain schemas where it is unpickled.

    Keywords: ``from_protobuf``'s options (:func:`spark_options` maps Spark's names to these):
    ``enums_as_ints`` (enum -> int32, its number), ``emit_default_values`` (an unset singular field without
    presence reads its zero value, not null), ``upcast_unsigned_ints`` (uint32 -> int64, uint64 ->
    decimal(20, 0), unsigned), ``unwrap_primitive_wrapper_types`` (``google.protobuf.Int32Value`` and the
    other wrappers -> their value), ``recursive_fields_max_depth`` (1..10: a recursive message is read to that
    depth, the field that would go deeper left out; -1 refuses recursion), ``retain_empty_message_types``
    (a message with no fields is a struct holding ``__dummy_field_in_empty_struct``, instead of being left
    out)."""

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
        self.arrow_type = self._root.arrow_type
        self._writer_schemas: dict[int, ProtobufSchema] = {}
        self._writers: dict[int, list] = {}
        self._lock = threading.Lock()

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
        planner = _Planner(writer_schema, self.reader_schema, self._root, self._options)

        def node(name: str):
            m = writer_schema.messages[name]
            return _core._PbNode(name, planner.plan(name, self._root), [node(n) for n in m["nested"]])

        with self._lock:
            self._writers[int(writer_id)] = [node(n) for n in writer_schema.top_level]
            self._writer_schemas[int(writer_id)] = writer_schema

    def decode(self, values, writer_ids, body_offsets):
        """(struct array, string array of per-row errors) for Schema Registry payloads: ``body_offsets`` say
        where each value's message indexes start.  A null value or writer id gives a null row, no error."""
        from kafkarec import _core
        values, writer_ids, body_offsets = (_array(values), _array(writer_ids), _array(body_offsets))
        with self._lock:
            typed, errors = _core.pb_decode_column(self._root.column, self._writers, values, writer_ids,
                                                   body_offsets)
        return _logical(typed, self._root), errors


def _array(a):
    """An Arrow array (a chunked array combined)."""
    import pyarrow as pa
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _rebuild(reader_schema, message, writers, options=None):
    d = ProtobufDecoder(reader_schema, message, **(options or {}))
    for wid, schema in writers.items():
        d.add_writer(wid, schema)
    return d
