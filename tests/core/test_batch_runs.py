"""Runs of batches read without the GIL (``iter_arrow``'s whole uncompressed v2 data batches, framed,
decoded and checked in one nogil section) give what the batch-by-batch path gives: the same rows,
the same errors at the same bytes, the same stop.

The batch-by-batch path is the oracle here: the wide layout (``batch_columns=True``) never takes a
run, so its columns in common with a plain read, and its errors, are what a run must give back.  A
log mixes what a run takes with what ends one (compressed, control, LogAppendTime, a batch without
records, a header the format forbids), and is damaged byte by byte: a run that stopped one batch
late, or kept a damaged batch's rows, shows here.
"""
from __future__ import annotations

import random
import struct

import pytest

import kafkarec
from kafkarec import Compression, ControlRecordType, RecordBatchBuilder, TimestampType

from support.logs.mixed_logs import READS, batch, damaged_copies, log

COMMON = ["offset", "timestamp", "timestampType", "key", "value", "headers"]


def read(data: bytes, *, wide: bool, **kw):
    """Rows (the columns in common), errors and where framing stopped."""
    sink = []
    it = kafkarec.iter_arrow(data, errors="skip", error_sink=sink, batch_columns=wide, **kw)
    rows = []
    for rb in it:
        names = [c for c in (kw.get("columns") or COMMON) if c in COMMON]
        cols = [rb.column(c).to_pylist() for c in names]
        rows += list(zip(*cols))
    errors = [(e["error"], e["position"], e["batch_position"], e["base_offset"]) for e in sink]
    return rows, errors, it.position, it.stop_reason


def raised(data: bytes, **kw):
    try:
        return ("rows", sum(rb.num_rows for rb in kafkarec.iter_arrow(data, **kw)))
    except kafkarec.DecodeError as exc:
        return ("error", type(exc).__name__, exc.position)


def same(data: bytes, **kw):
    assert read(data, wide=False, **kw) == read(data, wide=True, **kw)




@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kw", READS, ids=lambda kw: ",".join(kw) or "plain")
def test_a_sound_log_reads_the_same_through_runs(seed, kw):
    data = log(seed)
    assert len(data) > 64 << 10            # runs let the GIL go past 16 KiB
    same(data, **kw)


@pytest.mark.parametrize("seed", range(2))
def test_every_damaged_byte_reads_the_same_through_runs(seed):
    """One byte changed at a time, over the first batches' headers, records and CRCs; each read
    also raises as the batch-by-batch path does (the same error at the same byte)."""
    for at, damaged in damaged_copies(log(seed, batches=30), seed, 150, 140):
        for kw in ({}, {"strict": True}, {"columns": ["offset", "timestamp"]}):
            assert read(damaged, wide=False, **kw) == read(damaged, wide=True, **kw), (at, kw)
            assert raised(damaged, **kw) == raised(damaged, batch_columns=True, **kw), (at, kw)


def test_truncated_logs_read_the_same_through_runs():
    data = log(5, batches=20)
    for end in range(len(data) - 400, len(data)):
        same(data[:end])
        same(data[:end], strict=True)


def test_a_bad_crc_inside_a_run_is_reported_where_the_batch_by_batch_read_reports_it():
    rng = random.Random(11)
    batches = [batch(rng, i * 150, 150) for i in range(12)]
    bad = bytearray(batches[6])
    bad[-1] ^= 0x55                         # a record byte: only the CRC says so
    data = b"".join(batches[:6]) + bytes(bad) + b"".join(batches[7:])
    sink = []
    rows = sum(rb.num_rows for rb in kafkarec.iter_arrow(data, errors="skip", error_sink=sink))
    assert rows == 11 * 150
    assert [(e["error"], e["batch_position"]) for e in sink] == [
        ("ChecksumError", sum(map(len, batches[:6])))]
    with pytest.raises(kafkarec.ChecksumError) as exc:
        kafkarec.to_arrow(data)
    assert exc.value.position == sum(map(len, batches[:6]))
    same(data)


def test_a_header_the_format_forbids_ends_a_run_and_only_strict_refuses_it():
    rng = random.Random(12)
    batches = [bytearray(batch(rng, i * 100, 100)) for i in range(8)]
    attributes = struct.unpack_from(">h", batches[4], 21)[0]
    struct.pack_into(">h", batches[4], 21, attributes | 0x0100)   # an unused attribute bit
    crc = kafkarec.crc32c(bytes(batches[4][21:]))
    struct.pack_into(">I", batches[4], 17, crc)
    data = b"".join(map(bytes, batches))
    assert kafkarec.to_arrow(data).num_rows == 800
    same(data)
    same(data, strict=True)
    with pytest.raises(kafkarec.CorruptBatchError):
        kafkarec.to_arrow(data, strict=True)


@pytest.mark.parametrize("codec", list(Compression))
def test_stored_codec_reads_a_batchs_codec_from_its_first_bytes(codec):
    rng = random.Random(14)
    data = batch(rng, 0, 5, compression=codec)
    assert kafkarec._core.stored_codec(data[:kafkarec._core.STORED_CODEC_BYTES]) == int(codec)
    assert kafkarec._core.stored_codec(data[:kafkarec._core.STORED_CODEC_BYTES - 1]) == -1
    assert kafkarec._core.stored_codec(data[:16] + b"\x07" + data[17:30]) == -1     # magic 7


def test_stored_codec_of_a_legacy_entry():
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    for magic in (0, 1):
        for codec in (0, 1, 2):
            b = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
            b.append(0, 1_700_000_000_000 if magic else None, b"k", b"v" * 50)
            assert kafkarec._core.stored_codec(bytes(b.build())[:30]) == codec


def test_the_crc32c_packages_own_function_only_for_the_releases_read():
    """A run's CRC goes through the crc32c package's own function (without the GIL) only for the
    releases whose module state was read (CRC32C_STATE_RELEASES), and for those it is found;
    another release keeps the package's Python call (runs are then not taken)."""
    import re
    from importlib.metadata import version
    release = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", version("crc32c")).groups())
    low, high = kafkarec._core.CRC32C_STATE_RELEASES
    assert kafkarec._core.CRC32C_NOGIL == (low <= release <= high)
