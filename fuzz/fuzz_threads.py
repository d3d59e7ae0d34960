"""Threads 1 against N: a log dir written from the fuzzer's bytes (``_logdir``: segments of batches
at every codec, legacy ones, damaged ones, arbitrary bytes) read by ``LogScan(threads=1)`` and by
``LogScan(threads=2..4)`` with windows of a few hundred bytes (``READ_WINDOW_BYTES`` lowered, so
a file is many windows decoded ahead on the pool), in PERMISSIVE, DROPMALFORMED or FAILFAST, for
whole rows or the ``offset, timestamp`` projection (the meta-only walk; in a strict read, the
scanner's loop), the values typed or not (bare Avro strings: typed on the pool's threads, settled
in the consumer's), with badRecordsPath or not (its files written by the consumer), the threads-N read in the
engines' types or not (``LogScan.batches_in``: microseconds cast on the pool, key and value in the
view layout, ``value_layout="view"``: binary views of each window's keys and values, copied): the
same rows in the same order (the batch columns too), the same error rows, the same files kept, and the same
exception (class and message) after the same rows (in FAILFAST, every row before the failing
batch is handed on, then the error raised, at every window size: the core hands out the rows before
a failing batch first).

Across window sizes the records, in order, and the exception are the same too (its first campaign
found a window's OffsetOrderError rows before the rows preceding them, and FAILFAST raising a later
byte's error before an earlier batch's OffsetOrderError in one window: both mended, regression tests
in tests/scan/test_scan_threads.py).  Error rows are compared in order across window sizes too:
a PERMISSIVE error row stood after the Arrow chunk holding its batch, so it moved with where a
window or chunk ended (found when a pool's last piece was cut for its threads); a chunk now ends at
each batch left out (``iter_arrow(errors="skip")``), regression test
``test_a_permissive_error_row_stands_at_its_batch_whatever_the_windows``."""
import dataclasses
import os
import shutil
import tempfile
import warnings
import logging

import atheris

from _harness import EXPECTED, run
import _logdir
from _logdir import pick

from kafkarec.log import local
from kafkarec._core import SpareBuffers
from kafkarec.scan import LogScan, ScanConfig

ROOT = os.path.join(tempfile.mkdtemp(prefix="kafkarec-fuzz-threads-"), "logs")
MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
# the last: every column with the batch columns (batch_columns=True), whose rows are filled per
# batch after the record loop, without the GIL
BATCH_COLUMNS = ["offset", "key", "producerId", "producerEpoch", "sequence", "isTransactional", "isControl",
                 "compression", "batchPosition", "batchBaseOffset", "partitionLeaderEpoch", "magic",
                 "batchSize", "deleteHorizonMs"]
# DuckDB's whole rows (key and value, and the offset every read decodes: no timestamp, timestamp
# type or header offsets written); the columns analysts select (the walk into the classic layout)
PROJECTIONS = (None, ["offset", "timestamp"], ["offset", "timestamp", "partition", "_corrupt_record"],
               ["offset", "key", "value"], ["offset", "timestamp", "key", "value"], BATCH_COLUMNS)
# a typed read: the values as bare Avro strings (most of the fuzzer's values do not decode, their
# reasons in _corrupt_record), typed on the pool's threads and settled in the consumer's
TYPED = {"value_format": "avro", "typed_options": {"value_reader_schema": '"string"'}}
warnings.simplefilter("ignore")
logging.getLogger("kafkarec").setLevel(logging.CRITICAL)


def _plain(rb):
    """A batch's rows as Python values, times as epoch milliseconds (no datetime: any long is
    a valid CreateTime)."""
    import pyarrow as pa
    cols = {}
    for name in rb.schema.names:
        col = rb.column(rb.schema.get_field_index(name))
        if pa.types.is_timestamp(col.type):     # (batches_in's microseconds: exact milliseconds)
            col = col.cast(pa.timestamp("ms")).cast(pa.int64())
        cols[name] = col.to_pylist()
    # the offset first: None only in an error row (PERMISSIVE)
    names = ["offset"] + [n for n in rb.schema.names if n != "offset"]
    return [tuple(cols[n][i] for n in names) for i in range(rb.num_rows)]


def _engine_types(schema):
    """``schema`` in the engines' types (:meth:`LogScan.batches_in`): DuckDB's microseconds,
    Polars' binary views for the key and the value."""
    import pyarrow as pa
    return pa.schema([f.with_type(pa.timestamp("us")) if pa.types.is_timestamp(f.type) else
                      f.with_type(pa.binary_view()) if f.name in ("key", "value") and f.type == pa.binary() else f
                      for f in schema])


SPARE = SpareBuffers(64 << 20, min_bytes=0)


def read(mode: str, columns, threads: int, limit=None, typed=False, strict=False, keep=False, engine=False):
    """``(rows, error, kept)``: every row read before the error (class name and message) or the
    end (or the ``limit``), and with ``keep`` the files badRecordsPath wrote (``{path: bytes}``);
    ``typed``: the values typed (:data:`TYPED`); ``strict``: the format's every rule (a strict
    read's offsets and timestamps go by the scanner's loop); ``engine``: the batches in the
    engines' types (:func:`_engine_types`, cast on the pool's threads), key and value decoded in
    the view layout (``value_layout="view"``)."""
    rows = []
    kept_dir = tempfile.mkdtemp(prefix="kafkarec-fuzz-kept-") if keep else None
    config = ScanConfig.of(ROOT, mode=mode, columns=columns, threads=threads, limit=limit,
                           batch_columns=columns is BATCH_COLUMNS, bad_records_path=kept_dir,
                           value_layout="view" if engine else "copy", **(TYPED if typed else {}))
    if strict:
        config = dataclasses.replace(config, strict=True)
    error = None
    try:
        # (the engines' reads build their columns in buffers kept from input to input, every size,
        # as a registered source's queries do: taken on the pool's threads, given back by whichever
        # thread lets a batch go)
        scan = LogScan(config, spare_buffers=SPARE if engine else None)
        for rb in (scan.batches_in(_engine_types(scan.schema)) if engine else scan):
            rows += _plain(rb)
    except EXPECTED as exc:
        error = (type(exc).__name__, str(exc))
    kept = {}
    if kept_dir is not None:
        for folder, _, names in os.walk(kept_dir):
            for name in names:
                with open(os.path.join(folder, name), "rb") as fh:
                    kept[os.path.relpath(os.path.join(folder, name), kept_dir)] = fh.read()
        shutil.rmtree(kept_dir, ignore_errors=True)
    return rows, error, kept


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    mode = pick(fdp, MODES)
    columns = pick(fdp, PROJECTIONS)
    threads = fdp.ConsumeIntInRange(2, 4)
    window = fdp.ConsumeIntInRange(1, 600)
    # a row limit too: its first window in the consumer's thread, the rest on the pool
    limit = fdp.ConsumeIntInRange(1, 300) if fdp.ConsumeBool() else None
    typed = fdp.ConsumeBool()
    strict = fdp.ConsumeBool()
    keep = fdp.ConsumeBool()        # badRecordsPath: what is kept written by the consumer, in log order
    _logdir.write(fdp, ROOT)
    # the threads-N read in the engines' types (LogScan.batches_in); taken last, so the seeds'
    # bytes mean the logs they meant
    engine = fdp.ConsumeBool()
    how = f"typed={typed} strict={strict} keep={keep} engine={engine}"
    want = read(mode, columns, 1, typed=typed, strict=strict, keep=keep)
    saved = local.READ_WINDOW_BYTES
    local.READ_WINDOW_BYTES = window
    try:
        got = read(mode, columns, threads, typed=typed, strict=strict, keep=keep, engine=engine)
        alone = read(mode, columns, 1, typed=typed, strict=strict, keep=keep)
        if limit is not None and (read(mode, columns, threads, limit, typed, strict, keep)
                                  != read(mode, columns, 1, limit, typed, strict, keep)):
            raise AssertionError(f"{mode} {columns} {how}: window={window}: limit={limit}: "
                                 f"threads={threads} read\n{read(mode, columns, threads, limit, typed, strict, keep)}\n"
                                 f"threads=1 read\n{read(mode, columns, 1, limit, typed, strict, keep)}")
    finally:
        local.READ_WINDOW_BYTES = saved
    if got != alone:
        raise AssertionError(f"{mode} {columns} {how}: window={window}: threads={threads} read\n"
                             f"{got}\nthreads=1 read\n{alone}")
    # FAILFAST hands on every row before the damage, then raises, wherever windows and Arrow
    # batches end: the same rows at every window size
    rows, error, kept = alone
    if error != want[1] or rows != want[0] or kept != want[2]:
        raise AssertionError(f"{mode} {columns} {how}: threads=1 window={window} read\n{alone}\n"
                             f"threads=1 with the default window read\n{want}")


if __name__ == "__main__":
    run(test_one_input)
