"""Column buffers kept for the next chunks (``kafkarec._core.SpareBuffers``, ``iter_arrow(spare=)``;
issue 80): a buffer goes back only once no Arrow array holds it, comes out again for a column of
about its size, and the rows are the same with or without them.

Counted through the buffers' addresses and the cache's ``held``/``len``, never timed.
"""
from __future__ import annotations

import gc
import random

import pyarrow as pa
import pytest

import kafkarec
from kafkarec import Compression, build_batch
from kafkarec._core import SpareBuffers

MiB = 1 << 20
ROWS = 20000        # a chunk: values of ~2 MiB, views of 320 KiB: over the 256 KiB SpareBuffers keeps


def log(batches: int = 96, per_batch: int = 512, compression=Compression.NONE, seed: int = 7) -> bytes:
    """Batches of ~100-byte values (some null) with 16-byte keys (some null) and a header each."""
    rng = random.Random(seed)
    out = []
    for b in range(batches):
        values = [None if rng.random() < 0.02 else rng.randbytes(rng.randrange(60, 140))
                  for _ in range(per_batch)]
        keys = [None if rng.random() < 0.05 else rng.randbytes(16) for _ in range(per_batch)]
        headers = [[("h", rng.randbytes(8))] for _ in range(per_batch)]
        out.append(build_batch(values, keys, [1_700_000_000_000 + i for i in range(per_batch)], headers=headers,
                               base_offset=b * per_batch, compression=compression))
    return b"".join(out)


def addresses(chunks) -> set:
    return {buf.address for rb in chunks for col in rb.columns for buf in col.buffers() if buf is not None}


def test_the_limit_is_checked():
    with pytest.raises(ValueError, match="negative"):
        SpareBuffers(-1)
    with pytest.raises(TypeError):
        SpareBuffers("1G")


@pytest.mark.parametrize("layout", ["copy", "view"])
@pytest.mark.parametrize("compression", [Compression.NONE, Compression.ZSTD])
def test_the_rows_are_the_same_and_the_buffers_come_back(layout, compression):
    data = log(compression=compression)
    plain = list(kafkarec.iter_arrow(data, max_rows=ROWS, value_layout=layout))
    spare = SpareBuffers(64 * MiB)
    first = list(kafkarec.iter_arrow(data, max_rows=ROWS, value_layout=layout, spare=spare))
    assert [rb.num_rows for rb in first] == [rb.num_rows for rb in plain] and len(first) > 2
    assert all(a.equals(b) for a, b in zip(first, plain))
    assert len(spare) == 0              # every chunk is still held: nothing came back
    used = addresses(first)
    del first
    gc.collect()
    assert 0 < spare.held <= 64 * MiB and len(spare) > 0
    kept = spare.held
    second = list(kafkarec.iter_arrow(data, max_rows=ROWS, value_layout=layout, spare=spare))
    assert all(a.equals(b) for a, b in zip(second, plain))
    assert addresses(second) & used, "the second read built its columns in none of the first's buffers"
    assert spare.held < kept


def test_a_buffer_an_array_still_holds_is_never_handed_out():
    """A chunk (or a slice, or a table made of it) kept by the caller keeps its buffers: the reads
    after it, with the same spare buffers, write into others."""
    data = log(batches=128)
    spare = SpareBuffers(256 * MiB)
    chunks = list(kafkarec.iter_arrow(data, max_rows=ROWS, spare=spare))
    held = chunks[1]
    piece = chunks[2].slice(10, 5)
    table = pa.Table.from_batches([chunks[3]])
    expected = [held.to_pylist(), piece.to_pylist(), table.to_pylist()]
    owned = addresses([held, chunks[2], chunks[3]])
    del chunks
    gc.collect()
    for _ in range(3):
        again = list(kafkarec.iter_arrow(data, max_rows=ROWS, spare=spare))
        assert not addresses(again) & owned
        del again
        gc.collect()
    assert [held.to_pylist(), piece.to_pylist(), table.to_pylist()] == expected


def test_the_limit_holds_and_close_keeps_nothing_more():
    data = log(batches=128)
    spare = SpareBuffers(1 * MiB)
    for _ in range(2):
        list(kafkarec.iter_arrow(data, max_rows=ROWS, spare=spare))
        gc.collect()
        assert 0 < spare.held <= 1 * MiB
    spare.close()
    assert spare.held == 0 and len(spare) == 0 and spare.limit == 0
    list(kafkarec.iter_arrow(data, max_rows=ROWS, spare=spare))
    gc.collect()
    assert spare.held == 0


def test_small_buffers_are_left_to_the_pool_unless_asked():
    data = log(batches=4, per_batch=256)        # every column under 256 KiB
    spare = SpareBuffers(64 * MiB)
    list(kafkarec.iter_arrow(data, spare=spare))
    gc.collect()
    assert len(spare) == 0
    every = SpareBuffers(64 * MiB, min_bytes=0)
    first = list(kafkarec.iter_arrow(data, spare=every))
    used = addresses(first)
    del first
    gc.collect()
    assert len(every) > 0
    again = list(kafkarec.iter_arrow(data, spare=every))
    assert addresses(again) & used and all(a.equals(b) for a, b in zip(again, kafkarec.iter_arrow(data)))
    with pytest.raises(ValueError, match="negative"):
        SpareBuffers(1, min_bytes=-1)


def test_a_damaged_batch_reads_alike_with_them():
    data = bytearray(log(batches=48))
    data[len(data) // 2] ^= 0xFF                # a CRC mismatch in a middle batch
    for spare in (None, SpareBuffers(64 * MiB)):
        sink: list = []
        rows = [rb for rb in kafkarec.iter_arrow(bytes(data), max_rows=ROWS, errors="skip", error_sink=sink,
                                                 spare=spare)]
        if spare is None:
            expected = (rows, sink)
        else:
            assert sink == expected[1] and all(a.equals(b) for a, b in zip(rows, expected[0]))
