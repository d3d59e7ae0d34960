"""Pickling and copying the core's classes never crashes (issue 67).

Cython pickles a cdef class by its attributes, and turns a ``uint8_t *`` attribute into bytes
as if it were a C string: ``pickle.dumps(_Growable())`` read from a NULL pointer and the
process died by SIGSEGV.  Classes holding raw memory now refuse with a TypeError; the ones that
pickled before (ReadOptions, LegacyBatchBuilder, the typed-row driver's step) still do, a
typed decode's state (raw room over its columns) refuses, and RecordBatch
and the iterators still copy.  Every try runs in one child process, so a crash fails the test
instead of ending the run."""
import json
import subprocess
import sys

PROBE = r'''
import copy, json, pickle, sys
import kafkarec
import kafkarec._core as core

data = kafkarec.build_batch([b"v1", b"v2"], [b"k", None], [1, 2], compression=kafkarec.Compression.GZIP)

def first(it):
    return next(iter(it))

REAL = {   # instances as the API makes them
    "BatchIterator": lambda: kafkarec.iter_batches(data),
    "RecordBatch": lambda: first(kafkarec.iter_batches(data)),
    "_RecordIterator": lambda: iter(first(kafkarec.iter_batches(data))),
    "Record": lambda: first(first(kafkarec.iter_batches(data))),
    "ArrowBatchIterator": lambda: kafkarec.iter_arrow(data),
    "KeyOffsetMap": lambda: core.KeyOffsetMap(1024),
    "RecordBatchBuilder": lambda: kafkarec.RecordBatchBuilder(),
    "LegacyBatchBuilder": lambda: core.LegacyBatchBuilder(),
    "ReadOptions": lambda: core.ReadOptions(),
    "_KeySet": lambda: core._KeySet([b"a"]),
}
out = {}
for name in sorted(dir(core)):
    cls = getattr(core, name)
    if not isinstance(cls, type) or issubclass(cls, BaseException) or getattr(cls, "__module__", "") != "kafkarec._core":
        continue
    makers = [("new", lambda: cls.__new__(cls)), ("call", cls)]
    if name in REAL:
        makers.append(("real", REAL[name]))
    for how, make in makers:
        try:
            obj = make()
        except Exception:
            continue
        for op in ("pickle", "copy"):
            print(name, how, op, file=sys.stderr, flush=True)     # the last line names a crash
            try:
                if op == "pickle":
                    result = type(pickle.loads(pickle.dumps(obj))).__name__
                else:
                    result = type(copy.copy(obj)).__name__
            except Exception as exc:
                result = f"{type(exc).__name__}: {exc}"
            out[f"{name} {how} {op}"] = result
print(json.dumps(out))
'''


def test_no_core_class_crashes_when_pickled_or_copied():
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"status {run.returncode}, last tried: {run.stderr.strip().splitlines()[-1:]}"
    got = json.loads(run.stdout)
    for name in ("_Growable", "_ArrowGrowable"):
        for how in ("new", "call"):
            for op in ("pickle", "copy"):
                assert got[f"{name} {how} {op}"] == f"TypeError: {name} is raw memory: it cannot be pickled or copied"
    # what pickled or copied before still does
    for name in ("ReadOptions", "LegacyBatchBuilder"):
        assert got[f"{name} real pickle"] == name
    assert got["_TypedRows call pickle"] == "_TypedRows"
    # a decode's state (Avro's, Protobuf's: raw room over its columns, its scratch) is refused, not copied
    for name in ("_AvExec", "_PbExec"):
        for op in ("pickle", "copy"):
            assert got[f"{name} call {op}"].startswith("TypeError: "), got[f"{name} call {op}"]
    for name in ("RecordBatch", "BatchIterator", "ArrowBatchIterator", "RecordBatchBuilder"):
        assert got[f"{name} real copy"] == name
