"""to_arrow against iter_batches on the same bytes: the same rows, or the same
error type at the same byte; read_committed only ever leaves rows out; with ``origin``
every position (errors raised and skipped, batchPosition, where framing stopped) moves by it;
the projection of offsets and timestamps alone (``columns=``: the core's meta-only path, which
builds no key, value or header column) gives the full read's offsets, timestamps and errors; a key
bound (``keys=``), whole or projected, the full read's rows of those keys and its errors; the view
layout of key and value (``value_layout="view"``: binary_view into the bytes read, a compressed
batch's copied) the classic layout's chunks, every column, errors and stop, each view array
valid in full (every view inside its buffer), and so does the view layout over a memory map (every
long key and value copied into the chunk's own bytes); a full decode's projection (which leaves the
timestamps, the timestamp type and the headers' list offsets unwritten when it does not ask for
them) the full read's chunks of those columns, errors and stop, in both layouts."""
from _harness import EXPECTED, run

import mmap

import pyarrow as pa

import kafkarec


def by_records(data: bytes):
    rows = []
    for b in kafkarec.iter_batches(data):
        if b.magic >= 2 and b.is_control:
            # Kafka's consumer checks a control batch's CRC and skips it unread.
            b.ensure_valid()
            continue
        records = list(b)
        rows += [(r.offset, r.key, r.value) for r in records]
    return rows


def by_arrow(data: bytes, **kw):
    t = kafkarec.to_arrow(data, **kw)
    return list(zip(t.column("offset").to_pylist(), t.column("key").to_pylist(),
                    t.column("value").to_pylist()))


def outcome(fn, *args, **kw):
    try:
        return ("rows", fn(*args, **kw))
    except EXPECTED as e:
        return ("error", type(e).__name__, getattr(e, "position", None))


def test_one_input(data: bytes) -> None:
    want = outcome(by_records, data)
    got = outcome(by_arrow, data)
    if want != got:
        raise AssertionError(f"to_arrow {got!r:.300} != iter_batches {want!r:.300}")
    committed = outcome(by_arrow, data, read_committed=True)
    if want[0] == "rows" and committed[0] == "rows":
        if not set(committed[1]) <= set(want[1]):
            raise AssertionError("read_committed gave a row the full read does not have")
    sink = []
    for rb in kafkarec.iter_arrow(data, errors="skip", error_sink=sink):
        rb.num_rows
    for committed in (False, True):
        if positions(data, 0, committed) != positions(data, ORIGIN, committed):
            raise AssertionError(f"origin={ORIGIN} does not shift every position")
        full, meta = projected(data, committed, None), projected(data, committed, META)
        if full != meta:
            raise AssertionError(f"columns={META} {meta!r:.300} != the full read {full!r:.300}")
    in_map = as_map(data)
    for kw in ({}, {"batch_columns": True, "include_control": True}, {"strict": True}):
        viewed, copied = layout(data, "view", **kw), layout(data, "copy", **kw)
        if viewed != copied:
            raise AssertionError(f"value_layout='view' {kw} {viewed!r:.300} != the copy's {copied!r:.300}")
        copies = layout(in_map, "view", **kw)
        if copies != copied:
            raise AssertionError(f"value_layout='view' over a map {kw} {copies!r:.300} != the copy's {copied!r:.300}")
        if not kw:
            whole = copied      # (the whole read, either layout's: they were just found equal)
    # the walks into columns (field_walk.h, view_walk.h) against the record scanner alone, a whole
    # row and the columns analysts select, in both layouts
    for columns in (None, ["offset", "timestamp", "key", "value"]):
        walked = [layout(source, value_layout, columns=columns)
                  for source, value_layout in ((data, "copy"), (data, "view"), (in_map, "view"))]
        previous = kafkarec._core.record_walks(False)
        try:
            scanned = [layout(source, value_layout, columns=columns)
                       for source, value_layout in ((data, "copy"), (data, "view"), (in_map, "view"))]
        finally:
            kafkarec._core.record_walks(previous)
        if walked != scanned:
            raise AssertionError(f"columns={columns}: the walks' reads {walked!r:.300} != the scanner's "
                                 f"{scanned!r:.300}")
    # columns built in buffers other reads let go of (SPARE: kept from input to input, every size;
    # the second read of the same bytes finds buffers of just its columns' sizes)
    for source, value_layout in ((data, "copy"), (data, "view"), (in_map, "view")):
        plain = layout(source, value_layout)
        for _ in range(2):
            spared = layout(source, value_layout, spare=SPARE)
            if spared != plain:
                raise AssertionError(f"spare buffers, {value_layout}: {spared!r:.300} != without them")
    names = kafkarec.arrow_schema().names
    for source, value_layout in ((data, "copy"), (data, "view"), (in_map, "view")):
        for columns in PROJECTIONS:
            at = [names.index(name) for name in names if name in columns]
            want = ([[chunk[i] for i in at] for chunk in whole[0]],) + whole[1:4]
            got = layout(source, value_layout, columns=columns)[:4]
            if got != want:
                raise AssertionError(f"columns={columns} {value_layout}: {got!r:.300} != the full read's "
                                     f"{want!r:.300}")
    # a key bound (the keys tested in the record loops: a few one by one, more by bisection) keeps
    # the full read's rows of those keys, with the same errors and the same stop
    whole = projected(data, False, None, with_keys=True)
    present = sorted({k for _, _, k in whole[0] if k is not None})
    for keys in (present[:3] + [b"\xffabsent"], present[:40] + [b"", b"\x00"]):
        for columns in (None, META):
            got = projected(data, False, columns, keys=keys)
            want = ([(o, t) for o, t, k in whole[0] if k in keys],) + whole[1:]
            if got != want:
                raise AssertionError(f"keys={keys!r:.200} columns={columns}: {got!r:.300} != the full "
                                     f"read's rows of those keys {want!r:.300}")


META = ["offset", "timestamp"]
SPARE = kafkarec._core.SpareBuffers(64 << 20, min_bytes=0)
# full decodes' projections: DuckDB's whole rows (key and value alone), Polars' four columns, and
# the headers or the timestamp type without the timestamps (over a map without the headers: the walk
# into views of copied bytes, view_walk.h)
PROJECTIONS = (["key", "value"], ["key", "value", "offset"], ["offset", "timestamp", "key", "value"],
               ["value", "headers"], ["key", "timestampType"])


def as_map(data: bytes):
    """``data`` in an anonymous memory map (an ``mmap.mmap``: the view layout copies its long keys
    and values), or itself when empty (nothing maps 0 bytes)."""
    if not data:
        return data
    mm = mmap.mmap(-1, len(data))
    mm.write(data)
    return mm


def layout(data: bytes, value_layout: str, **kw):
    """Every chunk's columns (key and value as binary), errors and where framing stopped, of a read
    in ``value_layout``; or the error raised (errors="raise")."""
    sink, chunks = [], []
    it = kafkarec.iter_arrow(data, errors="skip", error_sink=sink, value_layout=value_layout, **kw)
    for rb in it:
        rb.validate(full=True)
        chunks.append([(rb.column(i).cast(pa.binary()) if rb.schema.field(i).type == pa.binary_view()
                        else rb.column(i)).to_pylist() for i in range(rb.num_columns)])
    return chunks, sink, it.position, it.stop_reason, outcome(
        lambda: sum(rb.num_rows for rb in kafkarec.iter_arrow(data, value_layout=value_layout, **kw)))


def projected(data: bytes, read_committed: bool, columns, keys=None, with_keys=False):
    """Offsets, timestamps (and keys), errors and where framing stopped, with ``columns`` projected
    and the ``keys`` bound."""
    sink, rows = [], []
    it = kafkarec.iter_arrow(data, errors="skip", error_sink=sink, read_committed=read_committed,
                             columns=columns, keys=keys)
    for rb in it:
        rows += list(zip(rb.column("offset").to_pylist(), rb.column("timestamp").to_pylist(),
                         *([rb.column("key").to_pylist()] if with_keys else [])))
    errors = [(e["error"], e["position"], e["base_offset"]) for e in sink]
    return rows, errors, it.position, it.stop_reason


ORIGIN = 1 << 40


def positions(data: bytes, origin: int, read_committed: bool):
    """Every position iter_arrow reports, less ``origin``."""
    def less(p):
        return None if p is None else p - origin
    sink, rows = [], []
    it = kafkarec.iter_arrow(data, errors="skip", error_sink=sink, batch_columns=True, origin=origin,
                             read_committed=read_committed)
    for rb in it:
        rows += [(less(p), o) for p, o in zip(rb.column("batchPosition").to_pylist(),
                                              rb.column("offset").to_pylist())]
    errors = [(e["error"], less(e["position"]), less(e["batch_position"]), e["base_offset"]) for e in sink]
    try:
        raised = outcome(by_arrow, data, origin=origin)
    except AssertionError:
        raise
    if raised[0] == "error":
        raised = raised[:2] + (less(raised[2]),)
    return rows, errors, less(it.position), it.stop_reason, raised


if __name__ == "__main__":
    run(test_one_input)
