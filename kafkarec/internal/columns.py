"""Internal-topic records as typed Arrow columns (``to_arrow(..., decode=...)``).

``decode="consumer_offsets"`` adds, decoded in Cython straight from the key/value buffers of
``kafkarec.to_arrow`` (no Python object per record) by the same schema plans as
:func:`kafkarec.internal.decode` (``kafkarec._core.coordinator_columns``: every key and value is walked and
checked as record decoding checks it, so both refuse the same bytes): ``recordType`` (Kafka's record type number),
``recordTypeName`` (``OffsetCommit``, ``GroupMetadata``, ...; ``Unknown``), ``group`` (every record type's
group id), ``committedTopic``, ``committedPartition``, ``committedOffset``, ``leaderEpoch``, ``metadata``,
``commitTimestamp``, ``expireTimestamp`` (offset commits, record types 0 and 1; null otherwise or for a
tombstone; a field the value's version lacks holds its schema default, -1, or null if the schema has no
such field), ``valueVersion`` and ``tombstone``.

Other internal topics (``transaction_state``, ``share_group_state``, ``cluster_metadata``,
``remote_log_metadata``) add ``recordTypeName``, ``keyVersion``/``apiKey``, ``valueVersion``, ``tombstone``,
and ``decodedKey`` / ``decodedValue`` as Kafka's JSON text (their fields differ per record type).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from kafkarec import _core
from kafkarec._extras import require
from kafkarec.internal import schema as _schema
from kafkarec.internal import topics as _topics

__all__ = ["to_arrow", "decode_columns", "decoded_schema"]

_K = _core.KMSG_KINDS
# The __consumer_offsets columns: (name, kind). Which schema field fills which column is below; a column a
# record's plan does not fill is null in its row.
_OFFSETS_COLUMNS = (
    ("recordType", _K["int16"]), ("valueVersion", _K["int16"]), ("known", _K["bool"]), ("tombstone", _K["bool"]),
    ("group", _K["string"]), ("committedTopic", _K["string"]), ("committedPartition", _K["int32"]),
    ("committedOffset", _K["int64"]), ("leaderEpoch", _K["int32"]), ("metadata", _K["string"]),
    ("commitTimestamp", _K["int64"]), ("expireTimestamp", _K["int64"]))
_COL = {name: i for i, (name, _kind) in enumerate(_OFFSETS_COLUMNS)}
# every record type's key: its group id
_GROUP_FIELDS = {"group": "group", "groupId": "group"}
# offset commits (record types 0 and 1, whatever a schema set names them): key and value fields
_COMMIT_TYPES = ("OffsetCommit", "LegacyOffsetCommit")
_COMMIT_KEY = dict(_GROUP_FIELDS, topic="committedTopic", partition="committedPartition")
_COMMIT_VALUE = {"offset": "committedOffset", "leaderEpoch": "leaderEpoch", "metadata": "metadata",
                 "commitTimestamp": "commitTimestamp", "expireTimestamp": "expireTimestamp"}


def _cols(plan, mapping: Dict[str, str]) -> Tuple[int, ...]:
    return tuple(_COL[mapping[f.name]] if f.name in mapping else -1 for f in plan.fields)


@lru_cache(maxsize=None)
def _offsets_plans(schemas: str):
    """Per record type: the key plan with its columns, and per value version the value plan with its
    columns and the (column, default) of the commit fields that version lacks (leaderEpoch before v3,
    expireTimestamp outside v1: Kafka's defaults, -1)."""
    types = _topics.record_types("__consumer_offsets", schemas)
    top = max(types) + 1
    key_plans: List[Optional[tuple]] = [None] * top
    value_plans: List[list] = [[] for _ in range(top)]
    for t, rt in types.items():
        commit = rt.name in _COMMIT_TYPES
        kplan = _schema.plan(rt.key_schema, rt.key_version, False, schemas)
        key_plans[t] = (kplan, _cols(kplan, _COMMIT_KEY if commit else _GROUP_FIELDS))
        msg = _schema.message(rt.value_schema, schemas)
        versions: List[Optional[tuple]] = [None] * (msg.versions[1] + 1)
        for v in msg.valid_versions:
            vplan = _schema.plan(rt.value_schema, v, False, schemas)
            if not commit:
                versions[v] = (vplan, (-1,) * len(vplan.fields), ())
                continue
            present = {f.name for f in vplan.fields}
            defaults = tuple((_COL[col], int(f.default)) for f in msg.fields
                             if f.name in _COMMIT_VALUE and f.name not in present and f.default is not None
                             for col in (_COMMIT_VALUE[f.name],))
            versions[v] = (vplan, _cols(vplan, _COMMIT_VALUE), defaults)
        value_plans[t] = versions
    names = [types[t].name if t in types else "Unknown" for t in range(top)]
    return key_plans, value_plans, names


def _consumer_offsets(table, strict: bool, strict_types: bool, schemas: str):
    """The typed __consumer_offsets columns, by the plans record decoding uses (kafkarec._core's
    coordinator_columns walks them into Arrow buffers, no Python object per record)."""
    np = require("numpy")
    pa = require("pyarrow")
    key_plans, value_plans, type_names = _offsets_plans(schemas)
    names = list(dict.fromkeys(type_names + ["Unknown"]))
    to_name = np.array([names.index(x) for x in type_names] + [names.index("Unknown")], dtype=np.int8)
    top = len(type_names)
    key, value, offs = table.column("key"), table.column("value"), table.column("offset")
    # the three columns come chunked alike from kafkarec.to_arrow; combine otherwise
    if [len(c) for c in key.chunks] != [len(c) for c in value.chunks] or \
            [len(c) for c in key.chunks] != [len(c) for c in offs.chunks]:
        chunks = [(key.combine_chunks(), value.combine_chunks(), offs.combine_chunks())]
    else:
        chunks = list(zip(key.chunks, value.chunks, offs.chunks))
    if not chunks:
        chunks = [(pa.array([], pa.binary()), pa.array([], pa.binary()), pa.array([], pa.int64()))]
    out: Dict[str, list] = {name: [] for name in ("recordType", "recordTypeName", "group", "committedTopic",
                                                  "committedPartition", "committedOffset", "leaderEpoch",
                                                  "metadata", "commitTimestamp", "expireTimestamp",
                                                  "valueVersion", "tombstone")}
    for k, v, o in chunks:
        sink = _core._KSink(tuple(kind for _name, kind in _OFFSETS_COLUMNS))
        _core.coordinator_columns(k, v, o.to_numpy(zero_copy_only=False), sink, key_plans, value_plans,
                                  _COL["recordType"], _COL["valueVersion"], _COL["known"], _COL["tombstone"],
                                  strict, strict_types, "__consumer_offsets")
        cols = dict(zip((name for name, _kind in _OFFSETS_COLUMNS), sink.finish()))
        rtype = cols["recordType"].to_numpy(zero_copy_only=False)
        known = cols["known"].to_numpy(zero_copy_only=False)
        idx = to_name[np.where(known & (rtype >= 0) & (rtype < top), rtype, top)]
        cols["recordTypeName"] = pa.DictionaryArray.from_arrays(pa.array(idx, type=pa.int8()), pa.array(names))
        for name in out:
            out[name].append(cols[name])
    return {name: pa.chunked_array(parts, type=parts[0].type) if parts else None for name, parts in out.items()}


def _generic(table, topic: str, strict: bool, strict_types: bool, schemas: str):
    pa = require("pyarrow")
    from kafkarec.internal.dumplog import java_json
    rt, kv, av, vv, tomb, dk, dv = [], [], [], [], [], [], []
    for k, v in zip(table.column("key").to_pylist(), table.column("value").to_pylist()):
        rec = _topics.decode(topic, k, v, strict=strict, strict_types=strict_types, json=True, schemas=schemas)
        rt.append(rec.record_type)
        kv.append(rec.key_version)
        av.append(rec.api_key)
        vv.append(rec.value_version)
        tomb.append(rec.tombstone)
        dk.append(None if rec.key is None else java_json(rec.key))
        dv.append(None if rec.value is None else java_json(rec.value))
    # api keys and versions are int16 in Kafka (larger ones are refused by the decoder, as Kafka's
    # MetadataRecordSerde refuses them), so int16 holds every value decode returns
    metadata = _topics.TOPICS[topic][0] == "metadata"
    cols = {"recordTypeName": pa.array(rt, pa.string()).dictionary_encode(),
            ("apiKey" if metadata else "keyVersion"): pa.array(av if metadata else kv, pa.int16()),
            "valueVersion": pa.array(vv, pa.int16()), "tombstone": pa.array(tomb, pa.bool_()),
            "decodedKey": pa.array(dk, pa.string()), "decodedValue": pa.array(dv, pa.string())}
    return cols


def decode_columns(table, decode: str, *, strict: bool = False, strict_types: Optional[bool] = None,
                   schemas: str = _topics.DEFAULT_SCHEMAS) -> Any:
    """`table` (from ``kafkarec.to_arrow``) with the decoded columns of internal topic `decode` appended.

    ``strict`` is the strict format (as :func:`kafkarec.internal.decode`: invalid UTF-8, bytes after a
    struct, repeated or mis-sized tagged fields and unsigned varints past 32 bits raise
    InternalRecordError); ``strict_types`` (default: ``strict``) raises UnknownRecordTypeError for a record
    type or version without a schema instead of naming it ``Unknown``. Every row is what
    ``kafkarec.internal.decode(..., strict=strict, strict_types=strict_types)`` gives its key and value."""
    topic = _topics.decoder_for(decode)
    if strict_types is None:
        strict_types = strict
    if topic == "__consumer_offsets":
        cols = _consumer_offsets(table, strict, strict_types, schemas)
    else:
        cols = _generic(table, topic, strict, strict_types, schemas)
    for name, col in cols.items():
        table = table.append_column(name, col)
    return table


def to_arrow(data, /, options=None, *, decode: str, topic: Optional[str] = None,
             partition: Optional[int] = None, strict: Optional[bool] = None, strict_types: Optional[bool] = None,
             schemas: str = _topics.DEFAULT_SCHEMAS, **kwargs) -> Any:
    """``kafkarec.to_arrow(data, options, ...)`` (every option passes through; control records are left out
    as there) plus the typed columns of internal topic `decode` (``"consumer_offsets"``,
    ``"transaction_state"``, ``"share_group_state"``, ``"cluster_metadata"``, ``"remote_log_metadata"``).

    Two separate options: ``strict`` (or ``options.strict``) is the strict format, for the batches and
    the internal keys and values alike; ``strict_types`` (default: the strict format) raises
    UnknownRecordTypeError for unknown record types/versions, else they are named ``Unknown``. Malformed
    keys/values raise InternalRecordError naming the record's offset."""
    internal_topic = _topics.decoder_for(decode)
    opts = _core.read_options(options, strict=strict, verify_crc=kwargs.pop("verify_crc", None),
                              max_decompressed_bytes=kwargs.pop("max_decompressed_bytes", None))
    table = _core.to_arrow(data, opts, topic=topic if topic is not None else internal_topic,
                           partition=partition, **kwargs)
    return decode_columns(table, internal_topic, strict=opts.strict, strict_types=strict_types, schemas=schemas)


def iter_arrow(data, /, options=None, *, decode: str, topic: Optional[str] = None,
               partition: Optional[int] = None, strict: Optional[bool] = None,
               strict_types: Optional[bool] = None, schemas: str = _topics.DEFAULT_SCHEMAS, **kwargs):
    """``kafkarec.iter_arrow`` with the decoded columns of `decode` on every pyarrow.RecordBatch (see
    :func:`to_arrow`); the returned iterator tells where framing stopped as ArrowBatchIterator does."""
    internal_topic = _topics.decoder_for(decode)
    opts = _core.read_options(options, strict=strict, verify_crc=kwargs.pop("verify_crc", None),
                              max_decompressed_bytes=kwargs.pop("max_decompressed_bytes", None))
    it = _core.iter_arrow(data, opts, topic=topic if topic is not None else internal_topic,
                          partition=partition, **kwargs)
    return _DecodedBatches(it, internal_topic, opts.strict, strict_types, schemas)


class _DecodedBatches:
    """An ArrowBatchIterator whose batches carry the decoded columns (its other attributes pass through)."""

    def __init__(self, it, topic, strict, strict_types, schemas):
        self._it, self._topic, self._strict, self._strict_types, self._schemas = \
            it, topic, strict, strict_types, schemas

    def __iter__(self):
        return self

    def __next__(self):
        pa = require("pyarrow")
        rb = next(self._it)
        t = decode_columns(pa.Table.from_batches([rb]), self._topic, strict=self._strict,
                           strict_types=self._strict_types, schemas=self._schemas)
        return t.combine_chunks().to_batches()[0] if t.num_rows else pa.RecordBatch.from_pylist([], schema=t.schema)

    def __getattr__(self, name):
        return getattr(self._it, name)


def decoded_schema(decode: str, *, schemas: str = _topics.DEFAULT_SCHEMAS) -> Any:
    """The pyarrow schema of the columns ``decode_columns`` appends for internal topic `decode` (for
    callers that must declare their schema up front, such as a Spark data source)."""
    pa = require("pyarrow")
    base = _core.to_arrow(b"")
    table = decode_columns(base, decode, schemas=schemas)
    return pa.schema([table.schema.field(i) for i in range(base.num_columns, table.num_columns)])
