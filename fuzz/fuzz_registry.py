"""Schema Registry inputs: wire ids (prefix, header ids, Apicurio) on arbitrary values and headers,
the ``_schemas`` replay on arbitrary keys and values, and the typed dispatch (Avro) on arbitrary
payloads.  Each must give per-row answers or the registry's problems list, never an exception."""
import json

import atheris

from _harness import run

import pyarrow as pa

from kafkarec.registry import TypedColumn, replay, wire

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


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    mode = fdp.ConsumeIntInRange(0, 2)
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
            recs.append((off, key, value))
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
