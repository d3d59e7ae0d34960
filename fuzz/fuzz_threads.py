"""Threads 1 against N: a log dir written from the fuzzer's bytes (``_logdir``: segments of batches
at every codec, legacy ones, damaged ones, arbitrary bytes) read by ``LogScan(threads=1)`` and by
``LogScan(threads=2..4)`` with windows of a few hundred bytes (``READ_WINDOW_BYTES`` lowered, so
a file is many windows decoded ahead on the pool), in PERMISSIVE, DROPMALFORMED or FAILFAST, for
whole rows or the ``offset, timestamp`` projection (the meta-only walk): the same rows in the same
order, the same error rows, and the same exception (class and message) after the same rows (in
FAILFAST, rows before the error are handed on as decoded: at one window size exactly the same
rows, at another the same rows or fewer or more of them, never others).

One difference across window sizes is a known finding, open in the reader (kafkarec/scan/_read.py,
being changed): in PERMISSIVE a window's OffsetOrderError rows come before the rows of the
batches that precede them in the log (and before the piece's other error rows).  It is detected
once at start; while it shows, records are compared in order and error rows as a set across
window sizes; within one window size everything is compared in order.  A second: in FAILFAST,
one window raises a later byte's framing error before an earlier batch's OffsetOrderError, which
smaller windows raise; while it shows, FAILFAST across window sizes must raise, not the same."""
import os
import tempfile
import warnings
import logging

import atheris

from _harness import EXPECTED, run
import _logdir
from _logdir import pick

from kafkarec.log import local
from kafkarec.scan import LogScan

ROOT = os.path.join(tempfile.mkdtemp(prefix="kafkarec-fuzz-threads-"), "logs")
MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
PROJECTIONS = (None, ["offset", "timestamp"], ["offset", "timestamp", "partition", "_corrupt_record"])
warnings.simplefilter("ignore")
logging.getLogger("kafkarec").setLevel(logging.CRITICAL)


def _plain(rb):
    """A batch's rows as Python values, times as epoch milliseconds (no datetime: any long is
    a valid CreateTime)."""
    import pyarrow as pa
    cols = {}
    for name in rb.schema.names:
        col = rb.column(rb.schema.get_field_index(name))
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.int64())
        cols[name] = col.to_pylist()
    # the offset first: None only in an error row (PERMISSIVE)
    names = ["offset"] + [n for n in rb.schema.names if n != "offset"]
    return [tuple(cols[n][i] for n in names) for i in range(rb.num_rows)]


def _error_rows_lead() -> bool:
    """Whether a window's OffsetOrderError rows still come before the rows of the batches
    before them (kafkarec.scan._read.OffsetOrder._slow yields a piece's errors, then its rows):
    records at 10-11 then a batch going back to 4, read as one window and as a window a batch."""
    import kafkarec
    os.makedirs(os.path.join(ROOT, "t-0"))
    a = kafkarec.build_batch([b"a1", b"a2"], timestamps=[1, 2], base_offset=10)
    with open(os.path.join(ROOT, "t-0", "00000000000000000000.log"), "wb") as fh:
        fh.write(a + kafkarec.build_batch([b"b"], timestamps=[3], base_offset=4))
    whole = read("PERMISSIVE", None, 1)
    saved, local.READ_WINDOW_BYTES = local.READ_WINDOW_BYTES, len(a)
    try:
        return read("PERMISSIVE", None, 1) != whole
    finally:
        local.READ_WINDOW_BYTES = saved


def _failfast_passes_order() -> bool:
    """Whether FAILFAST, in one window, still raises a later byte's framing error before an
    earlier batch's OffsetOrderError (the window's decode raises before its offsets are checked):
    records at 10-11, a batch going back to 4, one at 20, then bytes that frame no batch."""
    import kafkarec
    a = kafkarec.build_batch([b"a1", b"a2"], timestamps=[1, 2], base_offset=10)
    with open(os.path.join(ROOT, "t-0", "00000000000000000000.log"), "wb") as fh:
        fh.write(a + kafkarec.build_batch([b"b"], timestamps=[3], base_offset=4)
                 + kafkarec.build_batch([b"c"], timestamps=[4], base_offset=20) + b"\0" * 8 + b"\xff" * 5)
    whole = read("FAILFAST", None, 1)
    saved, local.READ_WINDOW_BYTES = local.READ_WINDOW_BYTES, len(a)
    try:
        return read("FAILFAST", None, 1)[1] != whole[1]
    finally:
        local.READ_WINDOW_BYTES = saved


def _apart(rows):
    """The records in order, and the error rows (their order among themselves moves too)."""
    return [r for r in rows if r[0] is not None], sorted((r for r in rows if r[0] is None), key=repr)


def read(mode: str, columns, threads: int):
    """``(rows, error)``: every row read before the error (class name and message) or the end."""
    rows = []
    try:
        for rb in LogScan(ROOT, mode=mode, columns=columns, threads=threads):
            rows += _plain(rb)
    except EXPECTED as exc:
        return rows, (type(exc).__name__, str(exc))
    return rows, None


ERROR_ROWS_LEAD = _error_rows_lead()
FAILFAST_PASSES_ORDER = _failfast_passes_order()


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    mode = pick(fdp, MODES)
    columns = pick(fdp, PROJECTIONS)
    threads = fdp.ConsumeIntInRange(2, 4)
    window = fdp.ConsumeIntInRange(1, 600)
    _logdir.write(fdp, ROOT)
    want = read(mode, columns, 1)
    saved = local.READ_WINDOW_BYTES
    local.READ_WINDOW_BYTES = window
    try:
        got = read(mode, columns, threads)
        alone = read(mode, columns, 1)
    finally:
        local.READ_WINDOW_BYTES = saved
    if got != alone:
        raise AssertionError(f"{mode} {columns}: window={window}: threads={threads} read\n{got}\n"
                             f"threads=1 read\n{alone}")
    # FAILFAST hands on the rows decoded before the damage, so how many come before the error
    # depends on where windows and Arrow batches end: one read's rows are the other's first rows
    rows, error = alone
    wanted = want[0]
    if ERROR_ROWS_LEAD and mode == "PERMISSIVE":    # the placement of error rows is open (see above)
        rows, wanted = _apart(rows), _apart(wanted)
    same_error = error == want[1] or (FAILFAST_PASSES_ORDER and error is not None and want[1] is not None)
    if not same_error or (rows != wanted if error is None or mode != "FAILFAST" else
                            rows[:len(wanted)] != wanted[:len(rows)]):
        raise AssertionError(f"{mode} {columns}: threads=1 window={window} read\n{alone}\n"
                             f"threads=1 with the default window read\n{want}")


if __name__ == "__main__":
    run(test_one_input)
