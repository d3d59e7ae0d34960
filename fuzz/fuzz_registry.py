"""Schema Registry inputs: wire ids (prefix, header ids, Apicurio) on arbitrary values and headers,
the ``_schemas`` replay on arbitrary keys and values, and the typed dispatch (Avro) on arbitrary
payloads.  Each must give per-row answers or the registry's problems list, never an exception.
A live registry's REST answers (issue 78, finding 49), arbitrary bytes or JSON of fuzzed shapes,
through the one decode of every answer (``_sources.decode_answer``, no network) as each call's
type: a value of that type, in range, or a RegistryError -- nothing else."""
import json

import atheris

from _harness import run

import pyarrow as pa

from kafkarec.registry import RegistryError, TypedColumn, replay, wire
from kafkarec.registry import _sources

HEADERS_T = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
_SCHEMA_KEY = b'{"keytype":"SCHEMA","subject":"t-value","version":%d,"magic":1}'
_READER = json.dumps({"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "long"}, {"name": "b", "type": ["null", "string"], "default": None},
    {"name": "c", "type": {"type": "array", "items": "int"}, "default": []}]})
_REGISTRY = replay([(0, _SCHEMA_KEY % 1, json.dumps({"subject": "t-value", "version": 1, "id": 1,
                                                    "schema": _READER}).encode())])
_COLUMN = []


def _pieces(fdp, n):
    out = []
    for _ in range(n):
        if fdp.ConsumeBool():
            out.append(None)
        else:
            out.append(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40)))
    return out


def _shape(fdp, depth=0):
    """An arbitrary JSON value: where the registry expects an object of lists of strings, any shape."""
    kind = fdp.ConsumeIntInRange(0, 6 if depth < 3 else 4)
    if kind == 0:
        return None
    if kind == 1:
        return fdp.ConsumeBool()
    if kind == 2:
        return fdp.ConsumeIntInRange(-2**31, 2**31 - 1)
    if kind == 3:
        return fdp.ConsumeUnicodeNoSurrogates(4)
    if kind == 4:
        return fdp.ConsumeFloat()
    if kind == 5:
        return [_shape(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    return {fdp.ConsumeUnicodeNoSurrogates(3): _shape(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))}


_MEMBERS = ("references", "metadata", "ruleSet")
_INNER = {"metadata": ("tags", "properties", "sensitive"),
          "ruleSet": ("migrationRules", "domainRules", "encodingRules", "enableAt")}


def _structured(fdp, off):
    """SCHEMA records whose members take every JSON shape, and DELETE_SUBJECT of any version."""
    if fdp.ConsumeBool():
        key = b'{"keytype":"DELETE_SUBJECT","subject":"t-value"}'
        return (off, key, json.dumps({"subject": "t-value",
                                      "version": fdp.ConsumeIntInRange(-2**31, 2**31 - 1)}).encode())
    version = fdp.ConsumeIntInRange(1, 3)
    value = {"subject": "t-value", "version": version, "id": fdp.ConsumeIntInRange(1, 4), "schema": '"int"'}
    for member in _MEMBERS:
        if fdp.ConsumeBool():
            if member in _INNER and fdp.ConsumeBool():
                value[member] = {k: _shape(fdp) for k in _INNER[member] if fdp.ConsumeBool()}
                for rules in ("migrationRules", "domainRules"):
                    if member == "ruleSet" and fdp.ConsumeBool():
                        value[member][rules] = [{f: _shape(fdp) for f in ("name", "tags", "params", "disabled")}]
            else:
                value[member] = _shape(fdp)
    return (off, _SCHEMA_KEY % version, json.dumps(value).encode())


#: each call's answer type, and what a value of it must hold
_ANSWERS = [
    (_sources.List[_sources.Version], lambda v: all(type(x) is int and 1 <= x < 2**31 for x in v)),
    (_sources.List[str], lambda v: all(type(x) is str for x in v)),
    (_sources.Schema, lambda v: type(v.id) is int and 0 <= v.id < 2**31 and type(v.version) is int
     and 1 <= v.version < 2**31 and type(v.schema) is str and v.deleted in (None, True, False)),
    (_sources.RegisterSchemaResponse, lambda v: type(v.id) is int and 0 <= v.id < 2**31),
    (_sources.SubjectVersion, lambda v: type(v.version) is int and 1 <= v.version < 2**31),
    (_sources.SchemaString, lambda v: type(v.schema) is str),
    (_sources.Mode, lambda v: type(v.mode) is str),
]
_MEMBER_NAMES = ("id", "version", "schema", "subject", "deleted", "mode", "schemaType", "metadata")


def _number(fdp):
    """A JSON number of any kind a registry might send, as text: edges of int32, bools, floats, huge."""
    return fdp.PickValueInList(["0", "-1", "-5", "1", "2147483647", "2147483648", "-2147483649", "1e400",
                                "1.0", "true", "false", "null", '"7"', "9" * 40, str(fdp.ConsumeInt(8))])


def _answer_bytes(fdp) -> bytes:
    kind = fdp.ConsumeIntInRange(0, 3)
    if kind == 0:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 200))
    if kind == 1:       # a versions or subjects list of fuzzed members
        return ("[" + ", ".join(_number(fdp) if fdp.ConsumeBool() else json.dumps(_shape(fdp))
                                for _ in range(fdp.ConsumeIntInRange(0, 4))) + "]").encode()
    if kind == 2:       # an object with the members the calls read, each of any shape
        members = [f"{json.dumps(name)}: {_number(fdp) if fdp.ConsumeBool() else json.dumps(_shape(fdp))}"
                   for name in _MEMBER_NAMES if fdp.ConsumeBool()]
        return ("{" + ", ".join(members) + "}").encode()
    depth = fdp.ConsumeIntInRange(0, 5000)      # nested past any decoder's depth
    return b'{"id": 1, "version": 1, "schema": "x", "metadata": ' + b"[" * depth + b"]" * depth + b"}"


def _registry_answer(fdp) -> None:
    body = _answer_bytes(fdp)
    for answer_type, holds in _ANSWERS:
        try:
            value = _sources.decode_answer("GET http://registry/x", body, answer_type)
        except RegistryError as exc:
            assert "\n" not in str(exc) and str(exc).startswith("GET http://registry/x: "), exc
            continue
        assert holds(value), (answer_type, value)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    mode = fdp.ConsumeIntInRange(0, 3)
    if mode == 3:
        _registry_answer(fdp)
        return
    n = fdp.ConsumeIntInRange(0, 12)
    if mode == 0:
        values = pa.array(_pieces(fdp, n), pa.binary())
        hvals = _pieces(fdp, n)
        names = [("__value_schema_id" if fdp.ConsumeBool() else "x") for _ in range(n)]
        headers = pa.array([[{"key": k, "value": v}] if fdp.ConsumeBool() else []
                            for k, v in zip(names, hvals)], HEADERS_T)
        w = wire.parse_ids(values, headers=headers, guid_to_id=lambda g: 5 if g[0] & 1 else None,
                           id_format="apicurio" if fdp.ConsumeBool() else "confluent",
                           protobuf=fdp.ConsumeBool())
        assert len(w.writer_ids) == len(w.errors) == len(w.body_offsets) == len(w.values) == n
        for v, i, e in zip(values.to_pylist(), w.writer_ids.to_pylist(), w.errors.to_pylist()):
            assert not (i is not None and e is not None)
            if v is None:
                assert i is None and e is None
    elif mode == 1:
        recs = []
        for off in range(n):
            key = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 60)) if fdp.ConsumeBool() else \
                _SCHEMA_KEY % fdp.ConsumeIntInRange(0, 3)
            value = None if fdp.ConsumeBool() else fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 200))
            recs.append(_structured(fdp, off) if fdp.ConsumeBool() else (off, key, value))
        reg = replay(recs)
        for ctx in reg.contexts():
            for i in reg.ids(ctx):
                assert reg.by_id(i, ctx) is not None
        reg.listing()
    else:
        if not _COLUMN:
            _COLUMN.append(TypedColumn(_REGISTRY, "t-value"))
        values = pa.array([None if v is None else b"\x00\x00\x00\x00\x01" + v
                           for v in _pieces(fdp, n)], pa.binary())
        typed, ids, errs = _COLUMN[0].decode(values)
        assert len(typed) == len(ids) == len(errs) == n


if __name__ == "__main__":
    run(test_one_input)
