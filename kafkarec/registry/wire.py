"""Where a registry payload names its writer schema: vectorised, no Python object per record.

* Confluent's id prefix (the default): byte 0 = magic ``0x00``, bytes 1-4 = the schema id
  (big-endian int32), then the payload.  Any other first byte is "Unknown magic byte"
  (``AbstractKafkaSchemaSerDe``/``SchemaId.fromBytes``).
* Confluent's header ids (``HeaderSchemaIdSerializer``): the record header
  ``__value_schema_id`` / ``__key_schema_id`` holds magic ``0x01`` + a 16-byte GUID (the
  registry's MD5 of the schema) or magic ``0x00`` + a 4-byte id; for Protobuf the message
  indexes follow in the header, and the value is the bare payload.  As
  ``DualSchemaIdDeserializer``: the last such header wins when its value is not null, the
  prefix is read otherwise.
* Apicurio's default ids (opt-in, ``id_format="apicurio"``): magic ``0x00`` + an 8-byte
  big-endian id.

:func:`parse_ids` returns, per row, the writer id, where the payload (for Protobuf: its
message indexes) starts and an error string (null when the row is fine).  A null value (a
tombstone) is a null id with no error.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from kafkarec._extras import require

np = require("numpy")
pa = require("pyarrow")
pc = require("pyarrow.compute")

__all__ = ["WireIds", "parse_ids", "header_values", "VALUE_HEADER", "KEY_HEADER", "ID_FORMATS"]

VALUE_HEADER = "__value_schema_id"
KEY_HEADER = "__key_schema_id"
ID_FORMATS = ("confluent", "apicurio")

# Error codes (per row, small ints) -> messages, built once per distinct code.
_OK, _EMPTY, _MAGIC, _SHORT, _HMAGIC, _HSHORT, _GUID = range(7)


class WireIds(NamedTuple):
    writer_ids: pa.Int64Array       # null: tombstone or error
    body_offsets: pa.Int32Array     # where the payload (Protobuf: message indexes) starts
    errors: pa.StringArray          # null: fine
    values: pa.Array                # the values the body offsets point into (rewritten only
                                    # for Protobuf header ids: header indexes + payload)


def _binary(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
        return values
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) \
            or pa.types.is_binary_view(values.type) or pa.types.is_fixed_size_binary(values.type):
        return values.cast(pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary())
    raise TypeError(f"registry payloads must be a binary column, not {values.type}")


def _layout(values: pa.Array):
    """(starts, lengths, data bytes, valid mask) of a (large) binary array, as numpy views."""
    n = len(values)
    off_t = np.int64 if pa.types.is_large_binary(values.type) else np.int32
    bufs = values.buffers()
    offs = np.frombuffer(bufs[1], dtype=off_t, count=values.offset + n + 1)[values.offset:]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    wide = offs.astype(np.int64)
    starts = wide[:-1]
    lengths = wide[1:] - wide[:-1]
    valid = np.ones(n, dtype=bool) if values.null_count == 0 else \
        np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return starts, lengths, data, valid


def _gather(data: np.ndarray, pos: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """data[pos] where ok, else 0 (no read past the buffer)."""
    if len(data) == 0 or len(pos) == 0:
        return np.zeros(len(pos), dtype=np.int64)
    if ok.all():
        return data[pos].astype(np.int64)
    return np.where(ok, data[np.where(ok, pos, 0)], 0).astype(np.int64)


def _be_int(data, starts, ok, width: int) -> np.ndarray:
    """The big-endian unsigned ``width``-byte integer at each start (0 where not ok): one 1-D
    gather per byte (fast in numpy, unlike a 2-D gather)."""
    n = len(starts)
    if n == 0 or len(data) == 0:
        return np.zeros(n, dtype=np.uint64)
    full = bool(ok.all())
    out = np.zeros(n, dtype=np.uint64)
    for i in range(width):
        out <<= np.uint64(8)
        # Rows that are not ok read byte 0 (they may be shorter than the id, or empty).
        out |= data[starts + i] if full else data[np.where(ok, starts + i, 0)]
    if not full:
        out[~ok] = 0
    return out


def _messages(codes: np.ndarray, detail: np.ndarray, what: str) -> pa.Array:
    """Per-row error strings from (code, detail) pairs: one Python string per distinct pair."""
    bad = codes != _OK
    n = len(codes)
    if not bad.any():
        return pa.nulls(n, pa.string())
    keyed = codes.astype(np.int64) * (1 << 32) + detail.astype(np.int64)
    uniq, inverse = np.unique(keyed[bad], return_inverse=True)
    texts = []
    for k in uniq:
        code, d = int(k) >> 32, int(k) & 0xFFFFFFFF
        texts.append(_text(code, d, what))
    idx = np.zeros(n, dtype=np.int32)
    idx[bad] = inverse.astype(np.int32)
    indices = pa.array(idx, mask=~bad)
    return pa.DictionaryArray.from_arrays(indices, pa.array(texts, pa.string())).dictionary_decode()


def _text(code: int, d: int, what: str) -> str:
    if code == _EMPTY:
        return f"{what} is empty: no magic byte, not a Schema Registry payload"
    if code == _MAGIC:
        return f"Unknown magic byte 0x{d:02x} at byte 0 of the {what} (not a Schema Registry payload)"
    if code == _SHORT:
        return f"{what} of {d} bytes ends inside its schema id (truncated)"
    if code == _HMAGIC:
        return f"Unknown magic byte 0x{d:02x} in the schema id header"
    if code == _HSHORT:
        return f"schema id header of {d} bytes is truncated"
    if code == _GUID:
        return "schema id header names a GUID this registry does not hold"
    return f"error {code}"


def _prepend(hdata, hstarts, hlens, data, starts, lengths, valid) -> pa.Array:
    """Per row hdata[hstart:+hlen] + data[start:+len], gathered in one numpy pass."""
    n = len(starts)
    src = np.concatenate([hdata, data]) if len(hdata) else data
    seg_starts = np.empty(2 * n, dtype=np.int64)
    seg_lens = np.empty(2 * n, dtype=np.int64)
    seg_starts[0::2] = hstarts
    seg_starts[1::2] = starts + len(hdata)
    seg_lens[0::2] = hlens
    seg_lens[1::2] = lengths
    total = int(seg_lens.sum())
    pos = np.zeros(2 * n + 1, dtype=np.int64)
    np.cumsum(seg_lens, out=pos[1:])
    idx = np.repeat(seg_starts - pos[:-1], seg_lens) + np.arange(total, dtype=np.int64)
    out = src[idx] if total else np.zeros(0, np.uint8)
    offsets = np.ascontiguousarray(pos[0::2])
    validity = None if valid.all() else pa.array(valid).buffers()[1]  # bit-packed
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [validity, pa.py_buffer(offsets),
                                            pa.py_buffer(out)], null_count=int((~valid).sum()))


def header_values(headers, name: str) -> Optional[pa.Array]:
    """Per row, the value of the last header called ``name`` (null when there is none, or
    when its value is null), or None when no row has one.  ``headers`` is the
    ``list<struct<key, value>>`` column of :func:`kafkarec.to_arrow`."""
    if headers is None:
        return None
    if isinstance(headers, pa.ChunkedArray):
        headers = headers.combine_chunks() if headers.num_chunks != 1 else headers.chunk(0)
    n = len(headers)
    flat = headers.flatten()
    if len(flat) == 0:
        return None
    parents = np.asarray(pc.list_parent_indices(headers).to_numpy(zero_copy_only=False))
    match = pc.fill_null(pc.equal(flat.field("key"), name), False).to_numpy(zero_copy_only=False)
    hits = np.nonzero(match)[0]
    if len(hits) == 0:
        return None
    hp = parents[hits]
    last = np.ones(len(hits), dtype=bool)
    last[:-1] = hp[:-1] != hp[1:]        # the last header of that name per record wins
    take = np.full(n, -1, dtype=np.int64)
    take[hp[last]] = hits[last]
    indices = pa.array(take, mask=take < 0)
    return pc.take(_binary(flat.field("value")), indices)


def parse_ids(values, *, headers=None, header_name: str = VALUE_HEADER,
              id_format: str = "confluent", guid_to_id: Optional[Callable] = None,
              protobuf: bool = False, what: str = "value") -> WireIds:
    """Writer ids and payload starts of a column of registry payloads (see the module doc).

    ``headers``: the records' headers column, to honour header ids (None: prefix only);
    ``guid_to_id``: ``bytes(16) -> id or None`` for GUID header ids (the registry's
    :meth:`~kafkarec.registry.Registry.id_for_guid`); ``protobuf``: the column is Protobuf, so
    message indexes in a header id are moved in front of the payload."""
    if id_format not in ID_FORMATS:
        raise ValueError(f"id_format {id_format!r}: one of {', '.join(ID_FORMATS)}")
    values = _binary(values)
    n = len(values)
    starts, lengths, data, valid = _layout(values)
    width = 8 if id_format == "apicurio" else 4

    codes = np.zeros(n, dtype=np.int8)
    detail = np.zeros(n, dtype=np.int64)
    has = valid & (lengths > 0)
    first = _gather(data, starts, has)
    codes[valid & (lengths == 0)] = _EMPTY
    bad_magic = has & (first != 0)
    codes[bad_magic] = _MAGIC
    detail[bad_magic] = first[bad_magic]
    short = has & (first == 0) & (lengths < 1 + width)
    codes[short] = _SHORT
    detail[short] = lengths[short]
    good = has & (first == 0) & (lengths >= 1 + width)
    raw = _be_int(data, starts + 1, good, width)
    ids = raw.astype(np.int64) if width == 8 else raw.astype(np.uint32).view(np.int32).astype(np.int64)
    body = np.full(n, 1 + width, dtype=np.int32)
    id_ok = good.copy()

    hv = header_values(headers, header_name) if headers is not None else None
    out_values = values
    if hv is not None:
        hstarts, hlens, hdata, hvalid = _layout(hv)
        use = hvalid & valid            # DualSchemaIdDeserializer: header first (tombstones stay null)
        hfirst = _gather(hdata, hstarts, use & (hlens > 0))
        codes[use] = _OK
        detail[use] = 0
        id_ok[use] = False
        m0 = use & (hlens > 0) & (hfirst == 0) & (hlens >= 5)
        m1 = use & (hlens > 0) & (hfirst == 1) & (hlens >= 17)
        hbad = use & ~(m0 | m1)
        hm = hbad & (hlens > 0) & (hfirst != 0) & (hfirst != 1)
        codes[hm] = _HMAGIC
        detail[hm] = hfirst[hm]
        hs = hbad & ~hm
        codes[hs] = _HSHORT
        detail[hs] = hlens[hs]
        ids[m0] = _be_int(hdata, hstarts + 1, m0, 4)[m0].astype(np.uint32).view(np.int32)
        id_ok[m0] = True
        if m1.any():
            rows = np.nonzero(m1)[0]
            guids = hdata[(hstarts[rows, None] + 1 + np.arange(16)[None, :])]
            keys = guids.view(f"V16").ravel()
            uniq, inv = np.unique(keys, return_inverse=True)
            found = np.array([(guid_to_id(bytes(u)) if guid_to_id else None) for u in uniq],
                             dtype=object)
            got = found[inv]
            known = np.array([g is not None for g in got], dtype=bool)
            ids[rows[known]] = np.array([int(g) for g in got[known]], dtype=np.int64)
            id_ok[rows[known]] = True
            codes[rows[~known]] = _GUID
        body[use] = 0
        if protobuf:
            # Protobuf's message indexes travel after the id in the header: put them in
            # front of the payload so the decoder finds them where it always does.
            sel = m0 | m1
            if sel.any():
                skip = np.where(m1, 17, 5).astype(np.int64)
                tail_len = np.where(sel, hlens - skip, 0)
                out_values = _prepend(hdata, hstarts + skip, tail_len, data, starts,
                                      np.where(valid, lengths, 0), valid)

    ok_mask = id_ok & valid
    writer_ids = pa.array(ids, mask=~ok_mask, type=pa.int64())
    return WireIds(writer_ids, pa.array(body, pa.int32()), _messages(codes, detail, what),
                   out_values)
