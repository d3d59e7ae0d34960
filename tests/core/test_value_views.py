"""The view layout of ``key`` and ``value`` (``iter_arrow(value_layout="view")``, issue 80 item 2):
``binary_view`` whose long keys and values point into the bytes read, not copied.

The classic layout (``value_layout="copy"``) is the oracle: every read here is made in both
layouts, and gives the same chunks (their row counts), the same rows in every column, the same
errors at the same bytes and the same stop, whatever the codec, the magic, the mode, a key bound,
control rows, a projection or a byte changed anywhere.  Each view array is also checked whole by
Arrow (``validate(full=True)``: every view inside its buffer), and a long value's view is checked to
point into ``data`` (uncompressed, never a copy) or into the array's own copy (compressed).
Over a memory map (which may shrink under a batch an engine holds: SIGBUS) every long key and value
is copied into the chunk's own bytes instead, and the same reads give the same rows and errors.
"""
from __future__ import annotations

import contextlib
import gc
import mmap
import random
import tempfile

import pyarrow as pa
import pytest

import kafkarec
from kafkarec import Compression, RecordBatchBuilder
from kafkarec._core import LegacyBatchBuilder

from support.logs.mixed_logs import READS, damaged_copies, log


def chunks(data, **kw):
    """(chunks, errors, where framing stopped) of a read, errors="skip"."""
    sink = []
    it = kafkarec.iter_arrow(data, errors="skip", error_sink=sink, **kw)
    out = list(it)
    return out, sink, (it.position, it.stop_reason)


def as_classic(rb):
    """A view layout's chunk with key and value cast to binary (every other column as it is)."""
    cols = [rb.column(i).cast(pa.binary()) if rb.schema.field(i).type == pa.binary_view() else rb.column(i)
            for i in range(rb.num_columns)]
    return pa.RecordBatch.from_arrays(cols, names=rb.schema.names)


@contextlib.contextmanager
def mapped(data):
    """``data`` as a memory map of a file holding it (empty data as it is: nothing maps it)."""
    if not data:
        yield data
        return
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield mm
        finally:
            try:
                mm.close()      # (raises BufferError if a chunk still pointed into it)
            except BufferError:
                gc.collect()    # (a read that raised: its traceback's frames held the map's view)
                mm.close()


def same_in_both_layouts(data, over="bytes", **kw):
    """The view read's chunks, errors and stop against the classic read's, the view read made over
    ``data`` itself or (``over="map"``) over a memory map of it (its chunks then copy every long key
    and value: they are still checked after the map closed)."""
    copied, copy_errors, copy_stop = chunks(data, **kw)
    if over == "map":
        with mapped(data) as source:
            viewed, view_errors, view_stop = chunks(source, value_layout="view", **kw)
    else:
        viewed, view_errors, view_stop = chunks(data, value_layout="view", **kw)
    assert [rb.num_rows for rb in viewed] == [rb.num_rows for rb in copied]
    for c, v in zip(copied, viewed):
        for name in ("key", "value"):
            if name in v.schema.names:
                assert v.schema.field(name).type == pa.binary_view()
        v.validate(full=True)
        assert as_classic(v).equals(c)
    assert view_errors == copy_errors
    assert view_stop == copy_stop
    return viewed


def raised(data, **kw):
    try:
        return ("rows", sum(rb.num_rows for rb in kafkarec.iter_arrow(data, **kw)))
    except kafkarec.DecodeError as exc:
        return ("error", type(exc).__name__, exc.position, str(exc))


def coded_log(codec: Compression, seed: int = 3) -> bytes:
    """Batches of one codec: values of every length around the inline limit (12 bytes), nulls,
    headers, and a control batch between them."""
    rng = random.Random(seed)
    out, base = bytearray(), 0
    for n in (1, 7, 60, 300):
        b = RecordBatchBuilder(base_offset=base, compression=codec)
        for i in range(n):
            value = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 1, 11, 12, 13, 16, 200]))
            key = None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 4, 12, 13, 40]))
            b.append(value, key, timestamp=1_700_000_000_000 + base + i,
                     headers=[("h", b"v")] if i % 3 == 0 else ())
        out += b.build()
        base += n
        c = RecordBatchBuilder(base_offset=base, is_control=True, is_transactional=True, producer_id=3,
                               producer_epoch=0)
        c.append_control(kafkarec.ControlRecordType.COMMIT, {"coordinatorEpoch": 0}, timestamp=1_700_000_000_000)
        out += c.build()
        base += 1
    return bytes(out)


OVER = ["bytes", "map"]


@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
def test_every_codec_reads_the_same_rows_in_both_layouts(codec, over):
    data = coded_log(codec)
    for kw in ({}, {"include_control": True}, {"batch_columns": True}, {"strict": True},
               {"keys": [b"", b"absent"]}, {"max_rows": 50}, {"columns": ["value", "offset"]}):
        same_in_both_layouts(data, over, **kw)


@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("kw", READS, ids=lambda kw: ",".join(kw) or "plain")
def test_a_mixed_log_reads_the_same_rows_in_both_layouts(seed, kw, over):
    """test_batch_runs' logs (runs of uncompressed batches, lz4 and gzip ones, control and
    transactional batches, LogAppendTime) and its reads: key bounds, control rows, read_committed,
    chunk limits, projections."""
    same_in_both_layouts(log(seed), over, **kw)


# (magic 0 has no lz4: Kafka's rule, the builder refuses it)
@pytest.mark.parametrize("magic,codec", [(0, Compression.NONE), (0, Compression.GZIP), (0, Compression.SNAPPY),
                                         (1, Compression.NONE), (1, Compression.GZIP), (1, Compression.SNAPPY),
                                         (1, Compression.LZ4)])
@pytest.mark.parametrize("over", OVER)
def test_legacy_message_sets_read_the_same_rows_in_both_layouts(magic, codec, over):
    """Legacy records are copied into the view column's own buffer (its variadic buffer 0)."""
    rng = random.Random(magic * 10 + int(codec))
    builder = LegacyBatchBuilder(magic=magic, compression=codec)
    for i in range(40):
        builder.append(None if i % 9 == 0 else rng.randbytes(rng.choice([0, 5, 12, 13, 90])),
                       None if i % 4 == 0 else b"key-%d-of-a-long-key" % i,
                       timestamp=None if magic == 0 else 1_600_000_000_000 + i, offset=i)
    data = builder.build() + coded_log(Compression.NONE)        # legacy, then v2 (both kinds in a chunk)
    viewed = same_in_both_layouts(data, over)
    assert viewed[0].column("value").buffers()[2].size > 0      # the legacy values copied (buffer 0)


@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("seed", range(2))
def test_every_damaged_byte_reads_the_same_in_both_layouts(seed, over):
    """One byte changed at a time over the first batches (headers, records, CRCs) of a log of
    uncompressed and compressed batches: the same rows and errors in each mode, the same raise."""
    for at, damaged in damaged_copies(log(seed, batches=20), seed, 120, 120):
        for kw in ({}, {"strict": True}, {"verify_crc": False}, {"keys": [b"k1"]}):
            same_in_both_layouts(damaged, over, **kw)
            with mapped(damaged) if over == "map" else contextlib.nullcontext(damaged) as source:
                assert raised(source, value_layout="view", **kw) == raised(damaged, **kw), (at, kw)


@pytest.mark.parametrize("over", OVER)
def test_truncated_logs_read_the_same_in_both_layouts(over):
    data = log(4, batches=12)
    for end in range(len(data) - 300, len(data), 7):
        same_in_both_layouts(data[:end], over)
        same_in_both_layouts(data[:end], over, strict=True)


LONG_VALUES = [b"value number %04d, long enough to be a view" % i for i in range(50)] + \
    [b"compressed value %04d, long too" % i for i in range(50)]
LONG_VALUES_KEYS = [b"k%d" % i for i in range(50)] + [b"short"] * 50


def long_and_compressed_values() -> bytes:
    """An uncompressed batch of 50 long values (short keys), then a zstd batch of 50 more (keys of
    5 bytes): :data:`LONG_VALUES` and :data:`LONG_VALUES_KEYS`."""
    plain = RecordBatchBuilder(base_offset=0)
    for value, key in zip(LONG_VALUES[:50], LONG_VALUES_KEYS[:50]):
        plain.append(value, key, timestamp=1)
    zstd = RecordBatchBuilder(base_offset=50, compression=Compression.ZSTD)
    for value, key in zip(LONG_VALUES[50:], LONG_VALUES_KEYS[50:]):
        zstd.append(value, key, timestamp=1)
    return plain.build() + zstd.build()


def test_long_values_point_into_the_bytes_read_and_outlive_them():
    """An uncompressed batch's long values are views into ``data`` (variadic buffer 1, at ``data``'s
    address), a compressed batch's are copied into the array's own buffer (variadic buffer 0: its
    records are decompressed into the read's one scratch buffer); short ones are inline (no
    buffer); the chunks hold what they point into after ``data``'s last other reference is gone."""
    data = bytearray(long_and_compressed_values())
    address = pa.py_buffer(data).address
    rb, = kafkarec.iter_arrow(data, value_layout="view")
    values = rb.column("value")
    bufs = values.buffers()
    assert bufs[2].size == sum(len(b"compressed value %04d, long too" % i) for i in range(50))
    assert len(bufs) == 4 and bufs[3].address == address    # the window itself: no copy
    del data, bufs
    gc.collect()
    assert values.to_pylist() == LONG_VALUES
    assert rb.column("key").to_pylist() == LONG_VALUES_KEYS


@pytest.mark.parametrize("whole", [True, False], ids=["map", "memoryview"])
def test_a_memory_maps_long_values_are_copied_into_the_chunks_own_bytes(tmp_path, whole):
    """A chunk pointing into a map would fault (SIGBUS) in whichever thread reads it once the file
    is truncated under it: over a map, or a memoryview of one, every long key and value, of an
    uncompressed batch and of a compressed one, is copied into the chunk's own buffer (variadic
    buffer 0, the only one); the map closes while the chunk lives, and the chunk keeps its rows."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(long_and_compressed_values())
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    source = mm if whole else memoryview(mm)
    rb, = kafkarec.iter_arrow(source, value_layout="view")
    values = rb.column("value")
    bufs = values.buffers()
    assert len(bufs) == 3 and bufs[2].size == sum(len(v) for v in values.to_pylist())
    del bufs
    if not whole:
        source.release()
    mm.close()                  # (BufferError if a chunk still held the map)
    path.write_bytes(b"")       # and the file truncated under the chunk
    gc.collect()
    assert values.to_pylist() == LONG_VALUES
    assert rb.column("key").to_pylist() == LONG_VALUES_KEYS


def test_the_layout_is_checked_and_named_in_the_schema():
    with pytest.raises(ValueError, match="value_layout"):
        kafkarec.iter_arrow(b"", value_layout="views")
    schema = kafkarec.arrow_schema(value_layout="view")
    assert schema.field("key").type == schema.field("value").type == pa.binary_view()
    assert kafkarec.arrow_schema(value_layout="view").names == kafkarec.arrow_schema().names
    table = kafkarec.to_arrow(coded_log(Compression.LZ4), value_layout="view")
    assert table.schema == schema
    assert table.num_rows == kafkarec.to_arrow(coded_log(Compression.LZ4)).num_rows


def test_a_compressed_batchs_records_are_never_held():
    """A compressed batch's long keys and values are copied into the chunk's own buffer, so a chunk
    holds no batch's decompressed records: one kept row of one batch (a key bound) holds its bytes
    alone, and keys and values short enough to be inline hold nothing but their views (the review
    of issue 80's view layout: a chunk held every compressed batch it passed)."""
    batches = []
    for j in range(20):
        b = RecordBatchBuilder(base_offset=10 * j, compression=Compression.GZIP)
        for i in range(10):
            b.append(b"a value of batch %02d, row %d, long enough to be a view" % (j, i), b"k%d-%d" % (j, i),
                     timestamp=1)
        batches.append(b.build())
    data = b"".join(batches)
    rb, = kafkarec.iter_arrow(data, value_layout="view", keys=[b"k5-3"])
    assert rb.column("value").to_pylist() == [b"a value of batch 05, row 3, long enough to be a view"]
    bufs = rb.column("value").buffers()
    assert len(bufs) == 3 and bufs[2].size == len(b"a value of batch 05, row 3, long enough to be a view")
    inline = []
    for j in range(20):
        b = RecordBatchBuilder(base_offset=10 * j, compression=Compression.GZIP)
        b.append(b"v%02d" % j, b"k", timestamp=1)
        inline.append(b.build())
    rb, = kafkarec.iter_arrow(b"".join(inline), value_layout="view")
    assert rb.column("value").to_pylist() == [b"v%02d" % j for j in range(20)]
    bufs = rb.column("value").buffers()
    assert len(bufs) == 3 and bufs[2].size == 0         # every value inline: nothing copied, nothing held
    same_in_both_layouts(data, keys=[b"k5-3", b"k17-9"])
