"""The bulk build path (RecordBatchBuilder.extend / build_batch without headers,
explicit offsets or a size limit): its C loop inlines varints and short copies,
reads pyarrow arrays through ``buffers()`` and other Arrow producers through the
C data interface, and hands odd list items back to the general path.

Every case is compared byte for byte with kafka-python's
DefaultRecordBatchBuilder (uncompressed) and with kafkarec's record-by-record
``append``, and read back through kafkarec.
"""

from __future__ import annotations

import sys
import threading

import cramjam
import numpy as np
import pyarrow as pa
import pytest

import kafkarec
from kafkarec import Compression, EncodeError
from kafkarec._core import RecordBatchBuilder, build_batch

from support.oracles import foreign as F

T0 = 1_700_000_000_000

# Lengths where the inline copy changes strategy (<=3, 4-7, 8-16, 17-32, 33-64,
# 65-128, memcpy above) and where a length varint grows (zig-zag: 63/64 -> 2
# bytes, 8191/8192 -> 3 bytes).
COPY_EDGES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129,
              255, 256, 1000, 8191, 8192, 70_000]


def payload(n: int, seed: int = 0) -> bytes:
    return bytes((i * 131 + seed * 7 + 11) & 0xFF for i in range(n))


def kafka_python(values, keys, timestamps) -> bytes:
    recs = [F.Rec(i, t, k, v, []) for i, (v, k, t) in enumerate(zip(values, keys, timestamps))]
    return F.kp_v2(recs)


def appended(values, keys, timestamps, **options) -> bytes:
    b = RecordBatchBuilder(**options)
    for v, k, t in zip(values, keys, timestamps):
        b.append(v, k, timestamp=t)
    return b.build()


def column_forms(values, keys, timestamps):
    """The same columns as lists, pyarrow arrays of each binary layout, sliced
    arrays, chunked arrays and an Arrow producer that is not pyarrow."""
    yield "lists", values, keys, timestamps
    yield "binary", pa.array(values, pa.binary()), pa.array(keys, pa.binary()), \
        pa.array(timestamps, pa.int64())
    yield "large_binary", pa.array(values, pa.large_binary()), pa.array(keys, pa.large_binary()), \
        pa.array(timestamps, pa.int64())
    yield "mixed", pa.array(values, pa.large_binary()), keys, np.array(timestamps, np.int64)
    pad = 5     # not a multiple of 8: validity bits start mid-byte
    yield "sliced", pa.array([b"p"] * pad + values, pa.binary()).slice(pad), \
        pa.array([None] * pad + keys, pa.binary()).slice(pad), \
        pa.array([1] * pad + timestamps, pa.int64()).slice(pad)
    half = len(values) // 2
    yield "chunked", pa.chunked_array([pa.array(values[:half], pa.binary()),
                                       pa.array(values[half:], pa.binary())]), \
        pa.chunked_array([pa.array(keys[:half], pa.binary()), pa.array(keys[half:], pa.binary())]), \
        pa.chunked_array([pa.array(timestamps[:half], pa.int64()),
                          pa.array(timestamps[half:], pa.int64())])
    yield "c-data-interface", CArrayOnly(pa.array(values, pa.binary())), \
        CArrayOnly(pa.array(keys, pa.large_binary())), CArrayOnly(pa.array(timestamps, pa.int64()))


class CArrayOnly:
    """An Arrow producer that only speaks the C data interface (not a pyarrow class)."""

    def __init__(self, array):
        self._array = array

    def __len__(self):
        return len(self._array)

    def __arrow_c_array__(self, requested_schema=None):
        return self._array.__arrow_c_array__(requested_schema)


def check(values, keys, timestamps, *, kafka_python_too=True):
    expected = appended(values, keys, timestamps)
    if kafka_python_too:
        # kafka-python writes partitionLeaderEpoch 0, we write -1 like Java's producer.
        assert appended(values, keys, timestamps, partition_leader_epoch=0) == \
            kafka_python(values, keys, timestamps)
        assert build_batch(values, keys, timestamps, partition_leader_epoch=0) == \
            kafka_python(values, keys, timestamps)
    for name, v, k, t in column_forms(values, keys, timestamps):
        assert build_batch(v, k, t) == expected, name
        b = RecordBatchBuilder()
        b.extend(v, k, t)
        assert b.build() == expected, name
    (batch,) = kafkarec.iter_batches(expected)
    got = [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    assert got == [(i, t, k, v) for i, (v, k, t) in enumerate(zip(values, keys, timestamps))]
    return expected


@pytest.mark.parametrize("n", COPY_EDGES)
def test_value_and_key_lengths_at_the_copy_and_varint_edges(n):
    values = [payload(n, i) for i in range(3)]
    keys = [payload(n, 10 + i) for i in range(3)]
    check(values, keys, [T0, T0 + 1, T0 + 2], kafka_python_too=n < 70_000)


def test_lengths_mixed_record_to_record_with_nulls_and_empties():
    values, keys = [], []
    for i, n in enumerate(COPY_EDGES * 2):
        values.append(None if i % 7 == 3 else payload(n, i))
        keys.append(None if i % 5 == 1 else payload(COPY_EDGES[-1 - i % len(COPY_EDGES)] % 300, i))
    check(values, keys, [T0 + (i * 37) % 500 - 250 for i in range(len(values))])


def test_all_null_keys_values_and_missing_key_column():
    n = 100
    values = [None] * n
    keys = [None] * n
    ts = [T0] * n
    expected = check(values, keys, ts)
    assert build_batch([None] * n, None, ts) == expected
    assert build_batch(pa.array([None] * n, pa.binary()), None, pa.array(ts, pa.int64())) == expected
    assert build_batch(pa.nulls(n, pa.binary()), pa.nulls(n, pa.large_binary()),
                       pa.array(ts, pa.int64())) == expected


@pytest.mark.parametrize("deltas", [
    [0, 63, 64, -64, -65, 8191, 8192, -8192, -8193, 2**20, -(2**20), 2**40, 2**62],
    [-T0 - 1, 0, 1],               # a -1 timestamp after a positive base: negative delta
], ids=["positive-base", "minus-one"])
def test_timestamp_deltas_at_the_varint_edges(deltas):
    ts = [T0 + d for d in deltas]
    check([b"v"] * len(ts), [b"k"] * len(ts), ts)


def test_offset_deltas_and_body_sizes_at_the_varint_edges():
    # 8200 records: offset deltas cross 63/64 and 8191/8192; record bodies grow
    # across 63/64 and 8191/8192 bytes too.
    n = 8200
    sizes = [(i * 13) % 140 if i % 97 else 8180 + i % 20 for i in range(n)]
    values = [payload(s, i) for i, s in enumerate(sizes)]
    keys = [b"key-%d" % (i % 300) for i in range(n)]
    check(values, keys, [T0 + i for i in range(n)])


def test_many_records():
    n = 20_000
    values = [b"value %d " % i * (1 + i % 9) for i in range(n)]
    keys = [b"%016d" % i for i in range(n)]
    check(values, keys, [T0 + i // 3 for i in range(n)], kafka_python_too=False)


def test_large_values():
    values = [payload(n, n) for n in (1 << 16, 1 << 20, 3, 5 << 20)]
    check(values, [b"k1", None, b"k3", b"k4"], [T0] * 4, kafka_python_too=False)


def test_list_growth_beyond_the_first_item_estimate():
    # Room is estimated from the first item; later ones are far larger.
    values = [b"x"] + [payload(50_000, i) for i in range(40)]
    check(values, [b"k"] * len(values), [T0] * len(values), kafka_python_too=False)


def test_odd_list_items_take_the_general_path_in_place():
    values = [b"a", bytearray(b"bb"), b"c", memoryview(b"dd"), None, b"f"]
    keys = [b"k", b"k", bytearray(b"k3"), b"k", b"k", memoryview(b"")]
    ts = [T0, T0 + 1, np.int64(T0 + 2), True, T0 + 4, T0 + 5]
    plain = [None if v is None else bytes(v) for v in values]
    plain_keys = [bytes(k) for k in keys]
    expected = appended(plain, plain_keys, [int(t) for t in ts])
    assert build_batch(values, keys, ts) == expected
    assert build_batch(values, keys, ts, partition_leader_epoch=0) == \
        kafka_python(plain, plain_keys, [int(t) for t in ts])


def test_extend_after_append_and_in_pieces():
    values = [payload(i % 130, i) for i in range(300)]
    keys = [b"k%d" % i for i in range(300)]
    ts = [T0 + 1000 - i for i in range(300)]
    expected = appended(values, keys, ts, base_offset=7)
    for form, v, k, t in column_forms(values, keys, ts):
        b = RecordBatchBuilder(base_offset=7)
        b.append(values[0], keys[0], timestamp=ts[0])
        if form in ("chunked", "c-data-interface"):
            b.extend(values[1:], keys[1:], ts[1:])
        else:
            b.extend(v[1:100], k[1:100], t[1:100])
            b.extend(v[100:], k[100:], t[100:])
        assert b.build() == expected, form


def test_delete_horizon_fixes_the_base_timestamp():
    ts = [T0 + 5, T0 - 5, T0]
    expected = appended([b"a", b"b", b"c"], [None] * 3, ts, delete_horizon_ms=T0 + 99)
    assert build_batch([b"a", b"b", b"c"], None, ts, delete_horizon_ms=T0 + 99) == expected
    assert build_batch(pa.array([b"a", b"b", b"c"]), None, pa.array(ts, pa.int64()),
                       delete_horizon_ms=T0 + 99) == expected


@pytest.mark.parametrize("form", ["lists", "arrays"])
def test_a_bad_timestamp_keeps_the_records_before_it(form):
    values, ts = [b"a", b"b", b"c", b"d"], [T0, T0 + 1, -5, T0 + 3]
    b = RecordBatchBuilder()
    with pytest.raises(EncodeError, match="Invalid negative timestamp -5"):
        if form == "lists":
            b.extend(values, None, ts)
        else:
            b.extend(pa.array(values), None, pa.array(ts, pa.int64()))
    assert b.record_count == 2
    b.append(b"e", timestamp=T0 + 9)
    assert b.build() == appended([b"a", b"b", b"e"], [None] * 3, [T0, T0 + 1, T0 + 9])


def test_timestamps_that_do_not_fit_int64_raise():
    with pytest.raises(OverflowError):
        build_batch([b"a", b"b"], None, [T0, 2**63])
    with pytest.raises(TypeError):
        build_batch([b"a", b"b"], None, [T0, "later"])


def test_unreadable_list_items_raise_as_before():
    with pytest.raises(TypeError):
        build_batch([b"a", "text"])
    with pytest.raises(TypeError):
        build_batch([b"a"], [3])


def test_pyarrow_arrays_with_a_validity_buffer_but_no_nulls():
    values = pa.array([b"a", b"bb", b"ccc"], mask=np.array([False, False, False]))
    ts = pa.array([T0, T0, T0], pa.int64(), mask=np.array([False, False, False]))
    expected = appended([b"a", b"bb", b"ccc"], [None] * 3, [T0] * 3)
    assert build_batch(values, None, ts) == expected
    with pytest.raises(EncodeError, match="timestamps must not contain nulls"):
        build_batch(values, None, pa.array([T0, None, T0], pa.int64()))


def test_string_arrays_are_written_as_their_utf8_bytes():
    words = ["", "a", "\u00e9t\u00e9", "\u65e5\u672c\u8a9e" * 20, None]
    raw = [None if w is None else w.encode() for w in words]
    expected = appended(raw, raw, [T0] * 5)
    for t in (pa.string(), pa.large_string()):
        assert build_batch(pa.array(words, t), pa.array(words, t), pa.array([T0] * 5, pa.int64())) \
            == expected


# ------------------------------------------------------------ compressed


def _records_section(values, keys, ts) -> bytes:
    return F.records_section(build_batch(values, keys, ts))


@pytest.mark.parametrize("n_values", [1, 300, 2000])
def test_snappy_is_written_straight_into_the_batch(n_values):
    # > 32 KiB of records: several xerial blocks, the last one short.
    values = [payload(100 + i % 50, i) for i in range(n_values)]
    keys = [b"k%d" % i for i in range(n_values)]
    ts = [T0 + i for i in range(n_values)]
    section = _records_section(values, keys, ts)
    xerial = build_batch(values, keys, ts, compression=Compression.SNAPPY)
    blocks = [bytes(cramjam.snappy.compress_raw(section[i:i + 32768]))
              for i in range(0, len(section), 32768)]
    assert xerial[61:] == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01" + b"".join(
        len(b).to_bytes(4, "big") + b for b in blocks)
    raw = build_batch(values, keys, ts, compression=Compression.SNAPPY, snappy_framing="raw")
    assert raw[61:] == bytes(cramjam.snappy.compress_raw(section))
    for data in (xerial, raw):
        (batch,) = kafkarec.iter_batches(data)
        assert batch.crc_valid
        assert [r.value for r in batch] == values
        F.assert_agrees(F.kr_view(data), F.kp_view(data), "kafka-python")
    assert appended(values, keys, ts, compression=Compression.SNAPPY) == xerial


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4, Compression.ZSTD])
def test_other_codecs_read_back_and_match_append(codec):
    values = [payload(i % 200, i) for i in range(1500)]
    keys = [None if i % 4 == 0 else b"k%d" % i for i in range(1500)]
    ts = [T0 + i for i in range(1500)]
    data = build_batch(pa.array(values), pa.array(keys), pa.array(ts, pa.int64()), compression=codec)
    assert data == appended(values, keys, ts, compression=codec)
    (batch,) = kafkarec.iter_batches(data)
    assert batch.crc_valid
    assert [(r.key, r.value) for r in batch] == list(zip(keys, values))
    F.assert_agrees(F.kr_view(data), F.kp_view(data), "kafka-python")


def test_zstd_compressors_are_per_thread():
    # One ZstdCompressor is reused per thread and level; threads building at the
    # same time must each get the bytes a lone thread gets.
    jobs = [([payload(50 + (i * j) % 300, i) for i in range(400)], level)
            for j in range(8) for level in (None, 1, 7)]
    expected = [build_batch(v, None, [T0] * len(v), compression=Compression.ZSTD,
                            compression_level=level) for v, level in jobs]
    results = [None] * len(jobs)

    def work(start):
        for _ in range(5):
            for i in range(start, len(jobs), 2):
                v, level = jobs[i]
                results[i] = build_batch(v, None, [T0] * len(v), compression=Compression.ZSTD,
                                         compression_level=level)
                assert results[i] == expected[i]

    threads = [threading.Thread(target=work, args=(s,)) for s in (0, 1, 0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == expected


# ---------------------------------------------------------------- review findings


def test_one_large_first_value_does_not_size_the_whole_batch():
    # The space reserved up front for lists is an estimate from the first item;
    # it is capped, so a large first value followed by many small ones builds.
    values = [b"x" * 1_000_000] + [b""] * 2_000_000
    b = RecordBatchBuilder()
    b.append(b"first")
    b.extend(values, timestamps=[T0] * len(values))
    data = b.build()
    batch = next(kafkarec.iter_batches(data))
    assert batch.record_count == len(values) + 1
    records = iter(batch)
    assert next(records).value == b"first"
    assert next(records).value == values[0]


def test_list_items_stay_alive_while_other_columns_run_python_code():
    values = [bytes(bytearray(b"V" * 200_000))]     # held by the list only

    held = []

    class HeadersThatDropTheValue:
        def __iter__(self):
            # Runs between reading the value and writing it: drop the list's
            # reference; the builder must still hold one of its own (freed
            # memory would not reliably show otherwise).
            value = values[0]
            values[0] = None
            held.append(sys.getrefcount(value) - 2)   # minus `value` and the call's argument
            return iter([("h", b"x")])

        def __len__(self):
            return 1

    b = RecordBatchBuilder()
    b.extend(values, [b"k"], timestamps=[T0], headers=[HeadersThatDropTheValue()])
    [record] = list(next(kafkarec.iter_batches(b.build())))
    assert (record.key, record.value, record.headers) == (b"k", b"V" * 200_000, [("h", b"x")])
    assert held == [1]


def test_build_batch_refuses_data_records_in_a_control_batch():
    with pytest.raises(kafkarec.EncodeError, match="control batch"):
        kafkarec.build_batch([b"v"], is_control=True)


@pytest.mark.parametrize("bad", [3, "text", 2.5, object()])
def test_keys_and_values_must_be_bytes_like(bad):
    # bytes(3) would be three zero bytes: an int is refused, in every path.
    b = RecordBatchBuilder()
    with pytest.raises(TypeError):
        b.append(b"v", key=bad)
    with pytest.raises(TypeError):
        b.append(bad)
    with pytest.raises(TypeError):
        build_batch([b"v"], [bad])
    with pytest.raises(TypeError):
        build_batch([b"v", bad])
    ts = [T0, T0 + 1]
    assert (build_batch([bytearray(b"v"), memoryview(b"w")], [b"k", bytearray(b"l")], ts)
            == build_batch([b"v", b"w"], [b"k", b"l"], ts))


@pytest.mark.parametrize("unit,scale", [("s", 1), ("ms", 1_000), ("us", 1_000_000),
                                        ("ns", 1_000_000_000)])
def test_arrow_timestamp_columns_are_converted_to_milliseconds(unit, scale):
    seconds = 1_700_000_000
    raw = [seconds * scale, seconds * scale + scale // 1000 * 7 if scale >= 1000 else seconds * scale]
    for tz in (None, "UTC"):
        ts = pa.array(raw, pa.timestamp(unit, tz=tz))
        data = build_batch([b"a", b"b"], None, ts)
        got = [r.timestamp for r in next(kafkarec.iter_batches(data))]
        want = [seconds * 1000, seconds * 1000 + (7 if scale >= 1000 else 0)]
        assert got == want
