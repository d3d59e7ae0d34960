"""Internal-topic records as typed Arrow columns (``to_arrow(..., decode=...)``).

``decode="consumer_offsets"`` adds, decoded in Cython straight from the key/value buffers of
``kafkarec.to_arrow`` (no Python object per record): ``recordType`` (Kafka's record type number),
``recordTypeName`` (``OffsetCommit``, ``GroupMetadata``, ...; ``Unknown``), ``group`` (every record type's
group id), ``committedTopic``, ``committedPartition``, ``committedOffset``, ``leaderEpoch``, ``metadata``,
``commitTimestamp``, ``expireTimestamp`` (offset commits, record types 0 and 1; null otherwise or for a
tombstone),
``valueVersion`` and ``tombstone``.

Other internal topics (``transaction_state``, ``share_group_state``, ``cluster_metadata``,
``remote_log_metadata``) add ``recordTypeName``, ``keyVersion``/``apiKey``, ``valueVersion``, ``tombstone``,
and ``decodedKey`` / ``decodedValue`` as Kafka's JSON text (their fields differ per record type).
"""
from __future__ import annotations

from typing import Any

from kafkarec import _core
from kafkarec.internal import topics as _topics

__all__ = ["to_arrow", "decode_columns", "decoded_schema"]


def _bitmap(np, valid):
    return np.packbits(valid.view(bool) if valid.dtype != bool else valid, bitorder="little")


def _string(pa, np, parts, n):
    offsets, data, valid = parts
    return pa.Array.from_buffers(pa.string(), n, [pa.py_buffer(_bitmap(np, valid)), pa.py_buffer(offsets),
                                                   pa.py_buffer(data)])


def _with_mask(pa, np, values, valid, typ):
    return pa.Array.from_buffers(typ, len(values), [pa.py_buffer(_bitmap(np, valid)), pa.py_buffer(values)])


def _consumer_offsets(table, strict: bool, schemas: str):
    import numpy as np
    import pyarrow as pa
    from kafkarec.internal import schema as _schema
    types = _topics.record_types("__consumer_offsets", schemas)
    top = max(types) + 1
    per_type = [types[t].name if t in types else "Unknown" for t in range(top)] + ["Unknown"]
    names = list(dict.fromkeys(per_type))
    to_name = np.array([names.index(x) for x in per_type], dtype=np.int8)
    known = sum(1 << t for t in types)
    max_v = [_schema.message(types[t].value_schema, schemas).versions[1] if t in types else -1 for t in (0, 1)]
    key = table.column("key")
    value = table.column("value")
    offs = table.column("offset")
    out = {name: [] for name in ("recordType", "recordTypeName", "group", "committedTopic", "committedPartition",
                                 "committedOffset", "leaderEpoch", "metadata", "commitTimestamp",
                                 "expireTimestamp", "valueVersion", "tombstone")}
    # the three columns come chunked alike from kafkarec.to_arrow; combine otherwise
    if [len(c) for c in key.chunks] != [len(c) for c in value.chunks] or \
            [len(c) for c in key.chunks] != [len(c) for c in offs.chunks]:
        key, value, offs = key.combine_chunks(), value.combine_chunks(), offs.combine_chunks()
        chunks = [(key, value, offs)]
    else:
        chunks = list(zip(key.chunks, value.chunks, offs.chunks))
    for k, v, o in chunks:
        n = len(k)
        kb, vb = k.buffers(), v.buffers()
        cols = _core.consumer_offsets_columns(
            n, kb[1], kb[2], kb[0], k.offset, vb[1], vb[2], vb[0], v.offset,
            np.asarray(o.to_numpy(zero_copy_only=False), dtype=np.int64), strict, known, max_v[0], max_v[1])
        flags = cols["flags"]
        known_key = (flags & 1).astype(bool)
        commit = (flags & 2).astype(bool)
        tomb = (flags & 4).astype(bool)
        rtype = cols["recordType"]
        out["recordType"].append(pa.array(rtype, type=pa.int16()))
        idx = to_name[np.where((rtype >= 0) & (rtype < top) & known_key, rtype, top)]
        out["recordTypeName"].append(pa.DictionaryArray.from_arrays(pa.array(idx, type=pa.int8()),
                                                                    pa.array(names)))
        out["group"].append(_string(pa, np, cols["group"], n))
        out["committedTopic"].append(_string(pa, np, cols["topic"], n))
        is_commit_key = known_key & (rtype <= 1)
        out["committedPartition"].append(_with_mask(pa, np, cols["partition"], is_commit_key, pa.int32()))
        out["committedOffset"].append(_with_mask(pa, np, cols["offset"], commit, pa.int64()))
        out["leaderEpoch"].append(_with_mask(pa, np, cols["leaderEpoch"], commit, pa.int32()))
        out["metadata"].append(_string(pa, np, cols["metadata"], n))
        out["commitTimestamp"].append(_with_mask(pa, np, cols["commitTimestamp"], commit, pa.int64()))
        out["expireTimestamp"].append(_with_mask(pa, np, cols["expireTimestamp"], commit, pa.int64()))
        out["valueVersion"].append(_with_mask(pa, np, cols["valueVersion"], ~tomb & (cols["valueVersion"] >= 0),
                                              pa.int16()))
        out["tombstone"].append(pa.array(tomb, type=pa.bool_()))
    return {k: pa.chunked_array(v) if v else None for k, v in out.items()}


def _generic(table, topic: str, strict: bool, schemas: str):
    import pyarrow as pa
    from kafkarec.internal.dumplog import java_json
    rt, kv, av, vv, tomb, dk, dv = [], [], [], [], [], [], []
    for k, v in zip(table.column("key").to_pylist(), table.column("value").to_pylist()):
        rec = _topics.decode(topic, k, v, strict=strict, json=True, schemas=schemas)
        rt.append(rec.record_type)
        kv.append(rec.key_version)
        av.append(rec.api_key)
        vv.append(rec.value_version)
        tomb.append(rec.tombstone)
        dk.append(None if rec.key is None else java_json(rec.key))
        dv.append(None if rec.value is None else java_json(rec.value))
    cols = {"recordTypeName": pa.array(rt, pa.string()).dictionary_encode(),
            ("apiKey" if _topics.TOPICS[topic][0] == "metadata" else "keyVersion"):
                pa.array(av if _topics.TOPICS[topic][0] == "metadata" else kv, pa.int16()),
            "valueVersion": pa.array(vv, pa.int16()), "tombstone": pa.array(tomb, pa.bool_()),
            "decodedKey": pa.array(dk, pa.string()), "decodedValue": pa.array(dv, pa.string())}
    return cols


def decode_columns(table, decode: str, *, strict: bool = False, schemas: str = _topics.DEFAULT_SCHEMAS) -> Any:
    """`table` (from ``kafkarec.to_arrow``) with the decoded columns of internal topic `decode` appended."""
    topic = _topics.decoder_for(decode)
    if topic == "__consumer_offsets":
        cols = _consumer_offsets(table, strict, schemas)
    else:
        cols = _generic(table, topic, strict, schemas)
    for name, col in cols.items():
        table = table.append_column(name, col)
    return table


def to_arrow(data, read_options=None, /, *, decode: str, topic: str | None = None,
             partition: int | None = None, strict: bool | None = None,
             schemas: str = _topics.DEFAULT_SCHEMAS, **options) -> Any:
    """``kafkarec.to_arrow(data, ...)`` (every option passes through; control records are left out as
    there) plus the typed columns of internal topic `decode` (``"consumer_offsets"``, ``"transaction_state"``,
    ``"share_group_state"``, ``"cluster_metadata"``, ``"remote_log_metadata"``). Unknown record types are
    named ``Unknown`` (``strict=True``: UnknownRecordTypeError); malformed keys/values raise
    InternalRecordError naming the record's offset."""
    internal_topic = _topics.decoder_for(decode)
    table = _core.to_arrow(data, read_options, topic=topic if topic is not None else internal_topic,
                           partition=partition, strict=strict, **options)
    if strict is None:
        strict = read_options.strict if read_options is not None else False
    return decode_columns(table, internal_topic, strict=strict, schemas=schemas)


def decoded_schema(decode: str, *, schemas: str = _topics.DEFAULT_SCHEMAS) -> Any:
    """The pyarrow schema of the columns ``decode_columns`` appends for internal topic `decode` (for
    callers that must declare their schema up front, such as a Spark data source)."""
    import pyarrow as pa
    base = _core.to_arrow(b"")
    table = decode_columns(base, decode, schemas=schemas)
    return pa.schema([table.schema.field(i) for i in range(base.num_columns, table.num_columns)])
