"""``origin=``: decoding a piece of a file (a ranged read of an object, a slice of a segment)
reports file positions.  Read with ``origin=k``, ``data[k:]`` must report exactly what the whole
file read from ``start=k`` reports - batch positions, every kind of error (framing, CRC, a record
in the batch, a record inside a compressed payload, a legacy wrapper's inner message, strict
header and tail rules), where framing stopped, ``batchPosition``, ``error_sink`` entries and
read_committed.  The bytes come from the tests' reference encoder (tests/support/oracles/reference.py)."""
import gzip
import struct

import pytest

pa = pytest.importorskip("pyarrow")

import kafkarec
from support.oracles import reference as R

T = 1_700_000_000_000


def _records(n, base=0):
    return b"".join(R.encode_record(i, i, b"k%d" % (base + i), b"v%d" % (base + i)) for i in range(n))


def _good(base_offset, n=2, **fields):
    return R.v2_batch(_records(n, base_offset), record_count=n, last_offset_delta=n - 1,
                      base_offset=base_offset, base_timestamp=T, max_timestamp=T + n - 1, **fields)


def _file():
    """Batches of every kind of fault, each at a known position; returns (bytes, {name: position})."""
    parts = []
    parts.append(("good", _good(0)))
    bad_crc = bytearray(_good(2))
    bad_crc[R.V2_CRC_OFFSET] ^= 0xFF
    parts.append(("bad_crc", bytes(bad_crc)))
    # a record whose length varint runs past the batch (CRC correct): an error inside the batch
    parts.append(("bad_record", R.v2_batch(R.varint(1000) + b"\x00" * 8, record_count=1,
                                           last_offset_delta=0, base_offset=4, base_timestamp=T,
                                           max_timestamp=T)))
    # a gzip batch whose second decompressed record is cut: decompressed_position
    payload = _records(1, 5) + R.varint(50) + b"\x00"
    parts.append(("bad_inner", R.v2_batch(gzip.compress(payload), record_count=2, last_offset_delta=1,
                                          base_offset=5, attributes=R.GZIP, base_timestamp=T,
                                          max_timestamp=T)))
    # a magic-1 gzip wrapper whose inner message CRC fails
    inner = R.legacy_message(1, 0, key=b"a", value=b"b", timestamp=T, crc=1234)
    parts.append(("bad_wrapper", R.legacy_message(1, 7, key=None, value=gzip.compress(inner),
                                                  attributes=R.GZIP, timestamp=T)))
    # unused attribute bits: strict refuses the header, the frame is known (resume)
    parts.append(("bad_header", _good(8, attributes=0x100)))
    # a transaction that aborts, then a good batch
    parts.append(("txn", _good(10, attributes=R.ATTR_TRANSACTIONAL, producer_id=7, producer_epoch=0,
                               base_sequence=0)))
    parts.append(("abort", R.control_record_batch(R.control_key(0), R.end_txn_value(3), timestamp=T,
                                                  attributes=R.ATTR_CONTROL | R.ATTR_TRANSACTIONAL,
                                                  base_offset=12, producer_id=7, producer_epoch=0)))
    parts.append(("last", _good(13)))
    where, pos = {}, 0
    for name, raw in parts:
        where[name] = pos
        pos += len(raw)
    return b"".join(raw for _, raw in parts), where


def _err(e):
    return (type(e).__name__, e.position, e.batch_position, e.decompressed_position, e.reason)


def _walk(data, **kw):
    """Everything iter_batches reports: per batch its position and records (or the error reading
    them), framing errors (resuming where the core can), and where and why it stopped."""
    out = []
    it = kafkarec.iter_batches(data, **kw)
    while True:
        try:
            for b in it:
                try:
                    out.append((b.position, b.size_in_bytes, b.base_offset, [r.offset for r in b]))
                except kafkarec.DecodeError as e:
                    out.append((b.position, b.size_in_bytes, _err(e)))
        except kafkarec.DecodeError as e:
            out.append(("stop", _err(e), it.position))
            if it.resumable:
                it.resume()
                continue
        break
    out.append((it.position, it.stop_reason, it.trailing_bytes))
    return out


def _arrow(data, **kw):
    sink = []
    chunks = kafkarec.iter_arrow(data, batch_columns=True, errors="skip", error_sink=sink, **kw)
    table = pa.Table.from_batches(list(chunks), schema=kafkarec.arrow_schema(batch_columns=True))
    return (table.column("batchPosition").to_pylist(), table.column("offset").to_pylist(), sink,
            chunks.position, chunks.stop_reason)


@pytest.mark.parametrize("options", [kafkarec.ReadOptions(), kafkarec.ReadOptions(strict=True),
                                     kafkarec.ReadOptions(verify_crc=False),
                                     kafkarec.ReadOptions(file_rules=True)])
def test_a_piece_reports_what_the_whole_file_reports(options):
    data, where = _file()
    tail = struct.pack(">qi", 0, 5) + b"\x00" * 6     # a size below 14: framing fails here
    for data in (data, data + tail, data + _good(15)[:30]):
        for k in sorted(where.values()) + [len(data) - 30]:
            whole = _walk(data, start=k, options=options)
            piece = _walk(data[k:], origin=k, options=options)
            assert piece == whole, (k, options)
            assert _arrow(data[k:], origin=k, options=options) == _arrow(data, start=k, options=options)
            assert _arrow(data[k:], origin=k, read_committed=True, options=options) == \
                _arrow(data, start=k, read_committed=True, options=options)


def test_errors_inside_a_piece_name_file_positions():
    data, where = _file()
    k = where["bad_crc"]
    piece = memoryview(data)[k:]
    walked = _walk(piece, origin=k)
    errors = {w[0]: w[2] for w in walked if len(w) == 3 and isinstance(w[2], tuple)}
    assert errors[where["bad_crc"]][:3] == ("ChecksumError", where["bad_crc"], None)
    # a record error inside an uncompressed batch: the record's own byte in the file
    assert errors[where["bad_record"]][:2] == ("InvalidRecordError", where["bad_record"] + R.V2_HEADER_SIZE)
    # inside a compressed payload: the batch's file position, the offset in the payload
    name, pos, batch_pos, dpos, _ = errors[where["bad_inner"]]
    assert (pos, batch_pos) == (where["bad_inner"], where["bad_inner"]) and dpos > 0
    name, pos, batch_pos, dpos, _ = errors[where["bad_wrapper"]]
    assert (name, pos, batch_pos, dpos) == ("ChecksumError", where["bad_wrapper"],
                                           where["bad_wrapper"], 0)
    with pytest.raises(kafkarec.CorruptBatchError) as ei:
        list(kafkarec.iter_batches(piece, origin=k, strict=True, start=where["bad_header"]))
    assert ei.value.position == where["bad_header"]
    assert f"at byte {where['bad_header']}" in str(ei.value)
    # the error records of iter_arrow and the batch columns too
    sink = []
    t = kafkarec.to_arrow(piece, origin=k, batch_columns=True, errors="skip", error_sink=sink)
    assert min(t.column("batchPosition").to_pylist()) == where["bad_header"]
    assert sink[0]["position"] == sink[0]["batch_position"] == where["bad_crc"]
    with pytest.raises(kafkarec.ChecksumError) as ei:
        kafkarec.to_arrow(piece, origin=k)
    assert ei.value.position == where["bad_crc"]


def test_start_and_end_are_file_positions_too():
    data, where = _file()
    k = where["bad_header"]
    piece = data[k:]
    it = kafkarec.iter_batches(piece, origin=k, start=where["txn"], end=where["last"])
    assert [b.position for b in it] == [where["txn"], where["abort"]]
    assert (it.origin, it.position, it.stop_reason) == (k, where["last"], "end")
    assert kafkarec.to_arrow(piece, origin=k, start=where["last"]).column("offset").to_pylist() == [13, 14]
    for bad in (dict(start=k - 1), dict(end=k + len(piece) + 1), dict(start=where["last"], end=where["txn"]),
                dict(origin=-1)):
        with pytest.raises(ValueError):
            kafkarec.iter_batches(piece, **dict(dict(origin=k), **bad))
    with pytest.raises(ValueError):
        kafkarec.iter_arrow(piece, origin=2**63 - 10)
    # the batch's bytes are still the piece's
    b = next(kafkarec.iter_batches(piece, origin=k, strict=False, verify_crc=False, start=where["last"]))
    assert bytes(b.raw()) == data[where["last"]:]
