#!/usr/bin/env python
"""Decode benchmark: kafkarec vs aiokafka (Cython) vs kafka-python, next to the
physical limits (memcpy, raw CRC-32C, raw decompression) on the same bytes.

    .venv/bin/python benchmarks/bench_decode.py            # ~1-2 min
    .venv/bin/python benchmarks/bench_decode.py --quick    # ~20-30 s
    .venv/bin/python benchmarks/bench_decode.py --json out/bench.json

The batches are built by kafka-python (see workloads.py), checked with all
three decoders (record counts and a checksum of offsets, timestamps, keys,
values and headers must equal the generator's), then timed: one warm-up run,
then the best of N runs (time.perf_counter, gc disabled while timing); the
variants of one workload are timed interleaved, round by round.
MB/s is megabytes (1e6) of input batch bytes as stored, i.e. compressed bytes
for compressed workloads.  This is a script, not a test.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import zlib

# numpy's OpenBLAS would start worker threads that spin; on a 2-core machine
# they steal time from the measurements.  We only use numpy for memcpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if REPO not in sys.path:
    sys.path.insert(0, REPO)   # import kafkarec from the in-place build

import workloads as W  # noqa: E402

import crc32c as crc32c_mod  # noqa: E402
import numpy as np  # noqa: E402

import kafkarec  # noqa: E402
from kafkarec import iter_batches  # noqa: E402

import aiokafka  # noqa: E402
import aiokafka.record.memory_records as aio_memory_records  # noqa: E402
from aiokafka.record._crecords import MemoryRecords as AioMemoryRecords  # noqa: E402

import kafka  # noqa: E402
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords  # noqa: E402

NOISY = 1.25    # flag a measurement whose median exceeds its best by this factor

TARGETS = {
    "speedup_all_fields": 1.5,      # kafkarec all-fields >= 1.5x aiokafka all-fields (100B)
    "materialise_pct": 40.0,        # kafkarec materialise time <= 40% of aiokafka's (100B)
    "crc_pct": 80.0,                # kafkarec CRC throughput >= 80% of raw crc32c (100B)
    "codec_ratio": 1.15,            # kafkarec compressed <= 1.15 x (raw decompress + uncompressed decode)
    "to_arrow_speedup": 10.0,       # to_arrow records/s >= 10x aiokafka all-fields (100B)
    "to_arrow_memcpy": 4.0,         # to_arrow time <= 4x a memcpy of the same bytes (100B)
}


# --------------------------------------------------------------------------
# Decoders.  Each takes the buffer and returns nothing; loops are kept
# identical across libraries so only the library differs.
# --------------------------------------------------------------------------

def kr_all_fields(buf):
    for batch in iter_batches(buf, verify_crc=True):
        for r in batch:
            (r.offset, r.timestamp, r.key, r.value, r.headers)


def kr_to_arrow(buf):
    kafkarec.to_arrow(buf, topic="t", partition=0)


def kr_materialise(buf):
    for batch in iter_batches(buf, verify_crc=True):
        for r in batch:
            pass


def kr_materialise_nocrc(buf):
    for batch in iter_batches(buf, verify_crc=False):
        for r in batch:
            pass


def kr_crc_only(buf):
    for b in iter_batches(buf):
        b.crc_valid


def kr_batches_only(buf):
    for b in iter_batches(buf, verify_crc=False):
        pass


def kr_open_only(buf):
    # iter(batch) decompresses the payload and sets up the record iterator,
    # without reading a record: kafkarec's decompression cost on its own.
    for b in iter_batches(buf, verify_crc=False):
        iter(b)


def make_kr_open_only_budget(limit):
    def kr_open_only_budget(buf):
        for b in iter_batches(buf, verify_crc=False, max_decompressed_bytes=limit):
            iter(b)
    return kr_open_only_budget


def kr_offset_ts(buf):
    for batch in iter_batches(buf, verify_crc=True):
        for r in batch:
            (r.offset, r.timestamp)


def kr_offset_ts_key(buf):
    for batch in iter_batches(buf, verify_crc=True):
        for r in batch:
            (r.offset, r.timestamp, r.key)


def kr_offset_ts_key_value(buf):
    for batch in iter_batches(buf, verify_crc=True):
        for r in batch:
            (r.offset, r.timestamp, r.key, r.value)


def aio_all_fields(buf):
    mr = AioMemoryRecords(buf)
    while mr.has_next():
        batch = mr.next_batch()
        if not batch.validate_crc():
            raise ValueError("aiokafka: CRC mismatch")
        for r in batch:
            (r.offset, r.timestamp, r.key, r.value, r.headers)


def aio_materialise(buf):
    mr = AioMemoryRecords(buf)
    while mr.has_next():
        batch = mr.next_batch()
        if not batch.validate_crc():
            raise ValueError("aiokafka: CRC mismatch")
        for r in batch:
            pass


def aio_materialise_nocrc(buf):
    mr = AioMemoryRecords(buf)
    while mr.has_next():
        batch = mr.next_batch()
        for r in batch:
            pass


def aio_crc_only(buf):
    mr = AioMemoryRecords(buf)
    while mr.has_next():
        mr.next_batch().validate_crc()


def kp_all_fields(buf):
    mr = KpMemoryRecords(buf)
    while mr.has_next():
        batch = mr.next_batch()
        if not batch.validate_crc():
            raise ValueError("kafka-python: CRC mismatch")
        for r in batch:
            (r.offset, r.timestamp, r.key, r.value, r.headers)


def kp_materialise(buf):
    mr = KpMemoryRecords(buf)
    while mr.has_next():
        batch = mr.next_batch()
        if not batch.validate_crc():
            raise ValueError("kafka-python: CRC mismatch")
        for r in batch:
            pass


# Row generators for the correctness check.
def kr_rows(buf):
    for batch in iter_batches(buf, verify_crc=True):
        for r in batch:
            yield (r.offset, r.timestamp, r.key, r.value, r.headers)


def _foreign_rows(records_class, name, buf):
    mr = records_class(buf)
    while mr.has_next():
        batch = mr.next_batch()
        if not batch.validate_crc():
            raise ValueError(f"{name}: CRC mismatch")
        for r in batch:
            yield (r.offset, r.timestamp, r.key, r.value, r.headers)


def aio_rows(buf):
    return _foreign_rows(AioMemoryRecords, "aiokafka", buf)


def kp_rows(buf):
    return _foreign_rows(KpMemoryRecords, "kafka-python", buf)


# --------------------------------------------------------------------------
# Physical limits.  Built per workload: offsets / frames are located outside
# the timed region, so these measure the library call and little else.
# --------------------------------------------------------------------------

def make_memcpy(wl):
    src = np.frombuffer(wl.data, dtype=np.uint8)
    dst = np.empty_like(src)

    def memcpy(buf):
        np.copyto(dst, src)
    return memcpy


_FLOOR_LIB = None


def floor_library():
    """benchmarks/floor_gather.c compiled for this run (None without a C compiler)."""
    global _FLOOR_LIB
    if _FLOOR_LIB is None:
        import ctypes
        import shutil
        import tempfile
        cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
        if cc is None:
            _FLOOR_LIB = False
            return None
        out = os.path.join(tempfile.mkdtemp(prefix="kafkarec-bench-"), "floor_gather.so")
        subprocess.run([cc, "-O3", "-shared", "-fPIC", "-o", out,
                        os.path.join(HERE, "floor_gather.c")], check=True)
        _FLOOR_LIB = ctypes.CDLL(out)
    return _FLOOR_LIB or None


def make_gather_floor(wl):
    """Keys and values moved into Arrow-shaped columns by plain C, the record
    spans known in advance: no parsing, no validation, no CRC."""
    import ctypes
    lib = floor_library()
    if lib is None:
        return None
    n = wl.n_records
    src = np.frombuffer(wl.data, dtype=np.uint8)
    key_at, value_at = np.empty(n, np.int64), np.empty(n, np.int64)
    key_len, value_len = np.empty(n, np.int32), np.empty(n, np.int32)
    ptr = lambda a: ctypes.c_void_p(a.ctypes.data)   # noqa: E731
    found = lib.locate(ptr(src), ctypes.c_int64(len(src)), ctypes.c_int64(n), ptr(key_at),
                       ptr(key_len), ptr(value_at), ptr(value_len))
    assert found == n, (found, n)
    outs = [np.zeros(len(src), np.uint8), np.zeros(len(src), np.uint8),
            np.zeros(n + 1, np.int32), np.zeros(n + 1, np.int32),
            np.zeros(n, np.int64), np.zeros(n, np.int64)]
    args = [ptr(src), ctypes.c_int64(n), ptr(key_at), ptr(key_len), ptr(value_at),
            ptr(value_len)] + [ptr(a) for a in outs]

    keep = (src, key_at, value_at, key_len, value_len, outs)   # the pointers in args

    def gather(buf, _keep=keep):
        lib.gather(*args)
    return gather


def make_raw_crc(wl):
    crc = crc32c_mod.crc32c
    ranges = wl.crc_ranges()

    def raw_crc32c(buf):
        mv = memoryview(buf)
        for s, e in ranges:
            crc(mv[s:e])
    return raw_crc32c


def make_raw_crc_whole(wl):
    crc = crc32c_mod.crc32c

    def raw_crc32c_one_call(buf):
        crc(buf)
    return raw_crc32c_one_call


XERIAL_MAGIC = b"\x82SNAPPY\x00"


def xerial_blocks(payload):
    """[(block memoryview, decompressed length)] of a xerial snappy stream."""
    import cramjam
    p = memoryview(payload)
    if bytes(p[:8]) != XERIAL_MAGIC:
        raise ValueError("expected a xerial snappy stream")
    pos = 16
    out = []
    while len(p) - pos >= 4:
        n = int.from_bytes(p[pos:pos + 4], "big")
        pos += 4
        block = p[pos:pos + n]
        out.append((block, cramjam.snappy.decompress_raw_len(block)))
        pos += n
    return out


def inflate_module():
    """The inflate library kafkarec's gzip path uses (mirrors
    kafkarec/_codecs.pxi: ISA-L's isal_zlib when installed, unless
    KAFKAREC_INFLATE=zlib; else the standard library's zlib)."""
    backend = getattr(kafkarec._core, "_inflate_backend", None)
    if backend is not None:          # kafkarec says which one it uses
        if backend() == "isal":
            from isal import isal_zlib
            return isal_zlib, "isal_zlib"
        return zlib, "zlib"
    if os.environ.get("KAFKAREC_INFLATE") != "zlib":
        try:
            from isal import isal_zlib
            return isal_zlib, "isal_zlib"
        except ImportError:
            pass
    return zlib, "zlib"


def make_raw_decompress(wl):
    """Decompress every batch's payload (bytes 61..end) with the library kafkarec uses."""
    codec = wl.codec
    mv = memoryview(wl.data)
    payloads = [mv[s:e] for s, e in wl.payload_ranges()]
    if codec == "gzip":
        mod, modname = inflate_module()
        decompressobj = mod.decompressobj

        def fn(buf):
            for p in payloads:
                decompressobj(31).decompress(p)
        fn.__name__ = f"{modname}.decompressobj(31)"
        fn.one = lambda p: decompressobj(31).decompress(p)
        if mod is not zlib:
            stdlib = zlib.decompressobj

            def stdlib_zlib(buf):
                for p in payloads:
                    stdlib(31).decompress(p)
            fn.alternative = ("stdlib zlib.decompressobj(31)", stdlib_zlib,
                              f"kafkarec uses {modname} when installed")
    elif codec == "snappy":
        import cramjam
        into = cramjam.snappy.decompress_raw_into
        plan = []
        for p in payloads:
            blocks = xerial_blocks(p)
            plan.append((blocks, sum(n for _, n in blocks)))

        def fn(buf):
            for blocks, total in plan:
                out = bytearray(total)
                ov = memoryview(out)
                at = 0
                for block, n in blocks:
                    into(block, ov[at:at + n])
                    at += n

        def one(p):
            blocks = xerial_blocks(p)
            out = bytearray(sum(n for _, n in blocks))
            ov = memoryview(out)
            at = 0
            for block, n in blocks:
                into(block, ov[at:at + n])
                at += n
            return bytes(out)
        fn.__name__ = "cramjam.snappy.decompress_raw_into"
        fn.one = one
    elif codec == "lz4":
        import lz4.frame
        dec = lz4.frame.decompress

        def fn(buf):
            for p in payloads:
                dec(p)
        fn.__name__ = "lz4.frame.decompress"
        fn.one = dec
    elif codec == "zstd":
        import zstandard
        dctx = zstandard.ZstdDecompressor()

        def fn(buf):
            for p in payloads:
                dctx.stream_reader(p, read_across_frames=True).read()
        fn.__name__ = "zstandard stream_reader"
        fn.one = lambda p: dctx.stream_reader(p, read_across_frames=True).read()

        def one_shot(buf):
            for p in payloads:
                dctx.decompress(p)
        fn.alternative = ("zstd one-shot ZstdDecompressor.decompress", one_shot,
                          "frames from kafka-python carry the content size")
    else:
        raise ValueError(codec)
    return fn


class _SlotsRecord:
    __slots__ = ("offset", "timestamp", "key", "value", "headers")

    def __init__(self, r):
        self.offset, self.timestamp, self.key, self.value, self.headers = (
            r.offset, r.timestamp, r.key, r.value, r.headers)


def make_loop_floor(wl, kind):
    """The consumer loop itself: the benchmark's 5-field tuple expression run
    n_records times on ONE already-decoded record (hot in cache), so it shows
    the interpreter and attribute-access cost with no decoding at all.

    kind "aiokafka": aiokafka's record (Cython getset properties over stored
    objects) -- the floor under aiokafka's all-fields number.
    kind "slots": a plain __slots__ object (CPython 3.11 specialises these loads).
    kind "kafkarec": a kafkarec Record, whose getters build the int/bytes/list
    objects on every access -- kafkarec's field cost without its decoding."""
    if kind == "kafkarec":
        one = next(iter(next(iter(iter_batches(wl.data)))))
    else:
        one = next(_aio_records(wl.data))
        if kind == "slots":
            one = _SlotsRecord(one)
    recs = [one] * wl.n_records

    def loop_floor(buf):
        for r in recs:
            (r.offset, r.timestamp, r.key, r.value, r.headers)
    return loop_floor


def _aio_records(buf):
    mr = AioMemoryRecords(buf)
    while mr.has_next():
        yield from mr.next_batch()


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------

class Timer:
    def __init__(self, repeats, min_time, max_repeats):
        self.repeats = repeats
        self.min_time = min_time
        self.max_repeats = max_repeats

    def best(self, fn, buf, repeats=None):
        repeats = self.repeats if repeats is None else repeats
        fn(buf)                               # warm-up
        gc.collect()
        times = []
        gc_was = gc.isenabled()
        gc.disable()
        try:
            total = 0.0
            while len(times) < repeats or (total < self.min_time and len(times) < self.max_repeats):
                t0 = time.perf_counter()
                fn(buf)
                dt = time.perf_counter() - t0
                times.append(dt)
                total += dt
        finally:
            if gc_was:
                gc.enable()
        return min(times), statistics.median(times), len(times)

    def interleaved(self, fns, buf):
        """Time several functions in rounds (A B C A B C ...), so drift and
        other load on the machine hit them alike.  Each gets a warm-up run,
        then in each of `repeats` rounds it runs until it has used its share
        of `min_time` (at least once).  Returns [(best, median, runs)]."""
        for fn in fns:
            fn(buf)                           # warm-up
        gc.collect()
        times = [[] for _ in fns]
        share = self.min_time / self.repeats
        cap = max(1, self.max_repeats // self.repeats)
        gc_was = gc.isenabled()
        gc.disable()
        try:
            for _ in range(self.repeats):
                for i, fn in enumerate(fns):
                    spent = 0.0
                    for _ in range(cap):
                        t0 = time.perf_counter()
                        fn(buf)
                        dt = time.perf_counter() - t0
                        times[i].append(dt)
                        spent += dt
                        if spent >= share:
                            break
        finally:
            if gc_was:
                gc.enable()
        return [(min(t), statistics.median(t), len(t)) for t in times]


class Results:
    def __init__(self):
        self.rows = []
        self.index = {}

    def add(self, wl, group, name, best, median, n, note="", input_bytes=None):
        input_bytes = len(wl.data) if input_bytes is None else input_bytes
        if n and median > NOISY * best:
            note = (note + "  " if note else "") + f"[noisy: median {median / best:.2f}x best]"
        row = {
            "workload": wl.name, "group": group, "name": name,
            "best_s": best, "median_s": median, "runs": n,
            "records": wl.n_records, "input_bytes": input_bytes,
            "records_per_s": wl.n_records / best,
            "mb_per_s": input_bytes / best / 1e6,
            "ns_per_record": best / wl.n_records * 1e9,
            "note": note,
        }
        self.rows.append(row)
        self.index[(wl.name, group, name)] = row
        return row

    def t(self, workload, group, name, stat="best_s"):
        row = self.index.get((workload, group, name))
        return None if row is None else row[stat]

    def tm(self, workload, group, name):
        return self.t(workload, group, name, "median_s")


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------

def check_environment():
    if aiokafka.util.NO_EXTENSIONS:
        raise SystemExit("AIOKAFKA_NO_EXTENSIONS is set: aiokafka would use its pure-Python records")
    if aio_memory_records.MemoryRecords is not AioMemoryRecords:
        raise SystemExit(f"aiokafka.record.memory_records.MemoryRecords is "
                         f"{aio_memory_records.MemoryRecords!r}, not the Cython class")
    if not AioMemoryRecords.__module__.startswith("aiokafka.record._crecords"):
        raise SystemExit(f"unexpected aiokafka MemoryRecords {AioMemoryRecords!r}")
    if not getattr(kafkarec._core, "COMPILED", False):
        raise SystemExit("kafkarec._core is not the compiled core")


def verify(wl, decoders_rows, twin=None):
    """Counts and checksums from every decoder must equal the generator's."""
    expected = (wl.n_records, wl.checksum)
    for name, rows in decoders_rows:
        got = W.checksum_records(rows(wl.data))
        if got != expected:
            raise SystemExit(f"{wl.name}: {name} decoded {got}, expected {expected}")
    # Types: the timed loops must run the Cython classes.
    mr = AioMemoryRecords(wl.data)
    b = mr.next_batch()
    if not type(b).__module__.startswith("aiokafka.record._crecords"):
        raise SystemExit(f"aiokafka batch class is {type(b)!r}, not Cython")
    # Materialise-only and CRC-only variants see every record / batch.
    n = sum(1 for batch in iter_batches(wl.data) for _ in batch)
    if n != wl.n_records:
        raise SystemExit(f"{wl.name}: kafkarec materialised {n} records, expected {wl.n_records}")
    crcs = [b.crc_valid for b in iter_batches(wl.data)]
    if len(crcs) != wl.n_batches or not all(crcs):
        raise SystemExit(f"{wl.name}: kafkarec crc_valid {crcs.count(True)}/{wl.n_batches}")
    stored = [b.crc for b in iter_batches(wl.data)]
    mv = memoryview(wl.data)
    raw = [crc32c_mod.crc32c(mv[s:e]) for s, e in wl.crc_ranges()]
    if raw != stored:
        raise SystemExit(f"{wl.name}: raw crc32c disagrees with the stored CRCs")
    # Compressed: raw decompression yields exactly the uncompressed twin's records section.
    if twin is not None:
        one = make_raw_decompress(wl).one
        tmv = memoryview(twin.data)
        for (s, e), (ts, te) in zip(wl.payload_ranges(), twin.payload_ranges()):
            if bytes(one(mv[s:e])) != bytes(tmv[ts:te]):
                raise SystemExit(f"{wl.name}: decompressed payload differs from {twin.name}'s records")


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def env_info():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "kafkarec"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        rev += "+dirty" if dirty else ""
    except Exception:
        rev = "?"
    import cramjam
    import hashlib
    import lz4
    import zstandard
    so = kafkarec._core.__file__
    with open(so, "rb") as fh:
        so_sha = hashlib.sha256(fh.read()).hexdigest()[:12]
    so_mtime = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(os.path.getmtime(so)))
    return {
        "python": sys.version.split()[0], "platform": platform.platform(), "cpu": cpu,
        "cpus": os.cpu_count(), "git": rev,
        "kafkarec": kafkarec.__version__, "kafkarec_core": f"{os.path.basename(so)} sha256:{so_sha} built {so_mtime}",
        "aiokafka": aiokafka.__version__, "kafka-python": kafka.__version__,
        "crc32c": getattr(crc32c_mod, "__version__", "?"),
        "crc32c_hardware": bool(getattr(crc32c_mod, "hardware_based", False)),
        "cramjam": cramjam.__version__, "lz4": lz4.__version__, "zstandard": zstandard.__version__,
        "inflate": inflate_module()[1] + (
            f" {__import__('isal').__version__}" if inflate_module()[1] == "isal_zlib" else ""),
        "numpy": np.__version__,
    }


def fmt_rate(x):
    return f"{x / 1e6:8.2f}"


def print_table(results, workloads):
    header = (f"{'workload':<12} {'decoder / variant':<58} {'best ms':>9} {'median':>8} "
              f"{'runs':>4} {'Mrec/s':>8} {'MB/s':>9} {'ns/rec':>8}")
    print(header)
    print("-" * len(header))
    last_wl = None
    wl_order = {name: i for i, name in enumerate(workloads)}
    group_order = {g: i for i, g in enumerate(("kafkarec", "aiokafka", "kafka-python", "limit", "breakdown"))}
    rows = sorted(results.rows, key=lambda r: (wl_order[r["workload"]], group_order.get(r["group"], 99)))
    for row in rows:
        if row["workload"] != last_wl:
            if last_wl is not None:
                print()
            wl = workloads[row["workload"]]
            print(f"[{wl.name}] codec={wl.codec}  {wl.n_batches} batches x "
                  f"{wl.spec.records_per_batch} records, {len(wl.data) / 1e6:.2f} MB"
                  + (f" ({wl.uncompressed_bytes / 1e6:.2f} MB uncompressed, "
                     f"ratio {wl.uncompressed_bytes / len(wl.data):.2f})" if wl.codec != "none" else ""))
            last_wl = row["workload"]
        label = f"{row['group']}: {row['name']}"
        runs = str(row["runs"]) if row["runs"] else "sum"
        print(f"{'':<12} {label:<58} {row['best_s'] * 1e3:9.2f} {row['median_s'] * 1e3:8.2f} "
              f"{runs:>4} {fmt_rate(row['records_per_s'])} {row['mb_per_s']:9.1f} "
              f"{row['ns_per_record']:8.1f}" + (f"  {row['note']}" if row['note'] else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="half-size buffers, fewer runs (~20 s)")
    ap.add_argument("--json", metavar="FILE", help="write all results and ratios as JSON")
    ap.add_argument("--repeats", type=int, help="timed runs per measurement (best is kept)")
    ap.add_argument("--scale", type=float, help="workload size multiplier (default 1, --quick 0.5)")
    ap.add_argument("--workloads", help="comma-separated subset, e.g. 100B,100B-zstd")
    ap.add_argument("--no-kafka-python", action="store_true", help="skip timing kafka-python (slow)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    args = ap.parse_args(argv)

    scale = args.scale if args.scale is not None else (0.5 if args.quick else 1.0)
    repeats = args.repeats or (3 if args.quick else 7)
    timer = Timer(repeats=repeats, min_time=0.05 if args.quick else 0.4,
                  max_repeats=30 if args.quick else 100)
    kp_repeats = 1 if args.quick else 2

    t_start = time.perf_counter()
    check_environment()
    info = env_info()
    print("kafkarec decode benchmark")
    print("  " + "  ".join(f"{k}={v}" for k, v in info.items() if k not in ("platform",)))
    print(f"  scale={scale} repeats={repeats} (best of; kafka-python {kp_repeats}), "
          f"warm-up 1 run, gc disabled while timing")
    load0 = os.getloadavg()[0]
    print(f"  load average at start: {load0:.2f}"
          + ("  ** the machine is busy: expect noisy numbers **" if load0 > max(0.5, (os.cpu_count() or 1) / 2) else ""))

    specs = W.default_specs(scale)
    if args.workloads:
        wanted = set(args.workloads.split(","))
        # Codec variants need their uncompressed twin for the target.
        if any(w.startswith("100B-") for w in wanted):
            wanted.add("100B")
        specs = [s for s in specs if s.name in wanted]
        missing = wanted - {s.name for s in specs}
        if missing:
            raise SystemExit(f"unknown workloads: {sorted(missing)}")

    t0 = time.perf_counter()
    workloads = {}
    for spec in specs:
        workloads[spec.name] = W.build_workload(spec)
    W._RECORD_CACHE.clear()
    gc.collect()
    print(f"  built {len(workloads)} workloads with kafka-python in {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    for wl in workloads.values():
        twin = workloads.get(wl.spec.seed_name) if wl.codec != "none" else None
        if twin is not None and twin.codec != "none":
            twin = None
        verify(wl, [("kafkarec", kr_rows), ("aiokafka", aio_rows), ("kafka-python", kp_rows)], twin)
    print(f"  verified counts and checksums (kafkarec == aiokafka == kafka-python == generator) "
          f"in {time.perf_counter() - t0:.1f} s")
    print()

    results = Results()
    for wl in workloads.values():
        buf = wl.data

        plan = []   # (group, name, fn, note), timed interleaved

        def add(group, name, fn, note="", input_bytes=None):
            plan.append((group, name, fn, note, input_bytes))

        add("kafkarec", "all fields", kr_all_fields)
        add("kafkarec", "materialise only", kr_materialise)
        add("kafkarec", "CRC only (b.crc_valid)", kr_crc_only)
        add("kafkarec", "to_arrow (Arrow table, all columns)", kr_to_arrow)
        if wl.codec != "none":
            add("kafkarec", "open only (decompress, no records)", kr_open_only)
        add("aiokafka", "all fields", aio_all_fields)
        add("aiokafka", "materialise only", aio_materialise)
        add("limit", "memcpy (numpy copyto)", make_memcpy(wl))
        add("limit", "crc32c per batch (bytes 21..end)", make_raw_crc(wl))
        if wl.codec == "none" and wl.spec.n_headers == 0:
            gather_floor = make_gather_floor(wl)
            if gather_floor is not None:
                add("limit", "gather keys+values into columns (C, spans known)", gather_floor,
                    note="benchmarks/floor_gather.c: no parsing, no CRC")
        raw = None
        twin = workloads.get(wl.spec.seed_name) if wl.codec != "none" else None
        if twin is not None and twin.codec != "none":
            twin = None
        if wl.codec != "none":
            raw = make_raw_decompress(wl)
            add("limit", f"decompress: {raw.__name__}", raw)
            if twin is not None:
                # Timed here, interleaved with the compressed decode, so the
                # target is not skewed by load that came and went in between.
                add("limit", f"kafkarec all fields on {twin.name} (uncompressed twin)",
                    lambda _buf, _twin=twin.data: kr_all_fields(_twin),
                    note=f"MB/s of its {len(twin.data) / 1e6:.1f} MB", input_bytes=len(twin.data))
            if getattr(raw, "alternative", None) is not None:
                alt_name, alt_fn, alt_note = raw.alternative
                add("breakdown", alt_name, alt_fn, note=alt_note)
            add("breakdown", "kafkarec open only, max_decompressed_bytes=1MiB",
                make_kr_open_only_budget(1 << 20), note="vs the default 64 MiB budget")
        # Breakdown on the plain workloads: where kafkarec's time goes.
        if wl.name in ("100B", "headers"):
            add("breakdown", "kafkarec batches only (no CRC)", kr_batches_only)
            add("breakdown", "kafkarec materialise, verify_crc=False", kr_materialise_nocrc)
            add("breakdown", "kafkarec + offset, timestamp", kr_offset_ts)
            add("breakdown", "kafkarec + key", kr_offset_ts_key)
            add("breakdown", "kafkarec + value (all fields adds headers)", kr_offset_ts_key_value)
            add("breakdown", "aiokafka CRC only (validate_crc)", aio_crc_only)
            add("breakdown", "aiokafka materialise, no validate_crc", aio_materialise_nocrc)
            add("breakdown", "crc32c one call over the whole buffer", make_raw_crc_whole(wl))
            add("breakdown", "floor: 5-field tuple, 1 hot aiokafka record", make_loop_floor(wl, "aiokafka"),
                note="no decoding: attribute access + tuple only")
            add("breakdown", "floor: 5-field tuple, 1 hot __slots__ object", make_loop_floor(wl, "slots"))
            add("breakdown", "floor: 5-field tuple, 1 hot kafkarec Record", make_loop_floor(wl, "kafkarec"),
                note="kafkarec's lazy field getters, no decoding")

        timings = timer.interleaved([p[2] for p in plan], buf)
        for (group, name, _, note, nbytes), (best, med, n) in zip(plan, timings):
            results.add(wl, group, name, best, med, n, note, input_bytes=nbytes)
        if not args.no_kafka_python:
            best, med, n = timer.best(kp_all_fields, buf, kp_repeats)
            results.add(wl, "kafka-python", "all fields", best, med, n)
        if raw is not None and twin is not None:
            target = (results.t(wl.name, "limit", f"decompress: {raw.__name__}")
                      + results.t(wl.name, "limit",
                                  f"kafkarec all fields on {twin.name} (uncompressed twin)"))
            results.add(wl, "limit", "sum: raw decompress + kafkarec uncompressed", target, target, 0,
                        note="the compressed-decoding target's denominator")
        del plan, timings
        gc.collect()

    print_table(results, workloads)

    # ---------------------------------------------------------------- targets
    ratios = {}
    checks = []

    def ratio(key, value, median_value, target, higher_is_better, text):
        """A target check on best-of times, with the same ratio from median
        times alongside: on a busy machine the two can disagree."""
        ok = value >= target if higher_is_better else value <= target
        ok_med = median_value >= target if higher_is_better else median_value <= target
        ratios[key] = value
        ratios[key + "_from_medians"] = median_value
        checks.append((key, text, value, median_value, target, ok, ok_med))

    T = results.t
    TM = results.tm
    CRC_ROW = ("limit", "crc32c per batch (bytes 21..end)")
    KR_CRC = ("kafkarec", "CRC only (b.crc_valid)")
    if "100B" in workloads:
        def sp(t):
            return t("100B", "aiokafka", "all fields") / t("100B", "kafkarec", "all fields")
        ratio("speedup_all_fields_100B", sp(T), sp(TM), TARGETS["speedup_all_fields"], True,
              "kafkarec all-fields speed / aiokafka's (100B)          >= {t:.2f}x : {v:.2f}x")

        def mat(t):
            return t("100B", "kafkarec", "materialise only") / t("100B", "aiokafka", "materialise only") * 100
        ratio("materialise_pct_100B", mat(T), mat(TM), TARGETS["materialise_pct"], False,
              "kafkarec materialise-only time / aiokafka's (100B)     <= {t:.0f}%  : {v:.1f}%")

        def crc(t):
            return t("100B", *CRC_ROW) / t("100B", *KR_CRC) * 100
        ratio("crc_pct_100B", crc(T), crc(TM), TARGETS["crc_pct"], True,
              "kafkarec CRC throughput / raw crc32c per batch (100B)  >= {t:.0f}%  : {v:.1f}%")
        def arrow_speed(t):
            return t("100B", "aiokafka", "all fields") / t("100B", "kafkarec", "to_arrow (Arrow table, all columns)")
        ratio("to_arrow_speedup_100B", arrow_speed(T), arrow_speed(TM), TARGETS["to_arrow_speedup"], True,
              "to_arrow records/s / aiokafka all-fields (100B)        >= {t:.0f}x  : {v:.2f}x")

        def arrow_memcpy(t):
            return t("100B", "kafkarec", "to_arrow (Arrow table, all columns)") / t("100B", "limit", "memcpy (numpy copyto)")
        ratio("to_arrow_memcpy_100B", arrow_memcpy(T), arrow_memcpy(TM), TARGETS["to_arrow_memcpy"], False,
              "to_arrow time / memcpy of the same bytes (100B)        <= {t:.0f}x  : {v:.2f}x")
    for wl in workloads.values():
        if wl.codec == "none":
            continue
        parts = [r["name"] for r in results.rows if r["workload"] == wl.name and r["group"] == "limit"
                 and (r["name"].startswith("decompress: ") or r["name"].startswith("kafkarec all fields on "))]
        if len(parts) != 2:
            continue

        def codec_ratio(t, n=wl.name, parts=parts):
            return t(n, "kafkarec", "all fields") / sum(t(n, "limit", p) for p in parts)
        ratio(f"codec_ratio_{wl.codec}", codec_ratio(T), codec_ratio(TM), TARGETS["codec_ratio"], False,
              f"{wl.codec + ':':<7} kafkarec / (raw decompress + plain decode) <= {{t:.2f}}  : {{v:.3f}}")

    # Informational ratios (no target).
    info_ratios = {}
    for wl in workloads.values():
        n = wl.name
        info_ratios[f"speedup_all_fields_{n}"] = T(n, "aiokafka", "all fields") / T(n, "kafkarec", "all fields")
        info_ratios[f"materialise_pct_{n}"] = (T(n, "kafkarec", "materialise only")
                                               / T(n, "aiokafka", "materialise only") * 100)
        info_ratios[f"crc_pct_{n}"] = T(n, *CRC_ROW) / T(n, *KR_CRC) * 100
        if T(n, "kafka-python", "all fields"):
            info_ratios[f"speedup_vs_kafka_python_{n}"] = (T(n, "kafka-python", "all fields")
                                                           / T(n, "kafkarec", "all fields"))
    gather_row = ("limit", "gather keys+values into columns (C, spans known)")
    if "100B" in workloads and T("100B", *gather_row):
        # What any to_arrow must at least do, in memcpy units: move the bytes
        # into columns and check the CRC.  What is left of the 4x budget is
        # all there is for parsing the records.
        memcpy_t = T("100B", "limit", "memcpy (numpy copyto)")
        floor_t = T("100B", *gather_row) + T("100B", *CRC_ROW)
        info_ratios["to_arrow_floor_memcpy_100B"] = floor_t / memcpy_t
        info_ratios["to_arrow_over_floor_100B"] = (
            T("100B", "kafkarec", "to_arrow (Arrow table, all columns)") / floor_t)
    for n in ("100B", "headers"):
        a = T(n, "breakdown", "aiokafka materialise, no validate_crc")
        k = T(n, "breakdown", "kafkarec materialise, verify_crc=False")
        if a and k:
            info_ratios[f"materialise_nocrc_pct_{n}"] = k / a * 100

    print()
    print("targets")
    print("-------")
    print("  (verdicts use best-of times; the ratio from median times follows in brackets)")
    for key, text, value, median_value, target, ok, ok_med in checks:
        line = f"  {'PASS' if ok else 'FAIL'}  " + text.format(t=target, v=value)
        line += f"   [medians: {median_value:.3g}" + ("" if ok == ok_med else
                                                      f", would {'PASS' if ok_med else 'FAIL'}") + "]"
        print(line)
    print()
    print("other ratios (informational)")
    for k, v in info_ratios.items():
        unit = "%" if "pct" in k else "x"
        print(f"  {k:<38} {v:8.2f}{unit}")
    elapsed = time.perf_counter() - t_start
    load1 = os.getloadavg()[0]
    noisy = [f"{r['workload']}/{r['group']}: {r['name']}" for r in results.rows if "[noisy" in r["note"]]
    print(f"\n{len(noisy)} noisy measurement(s) (median > {NOISY}x best)"
          + (": " + "; ".join(noisy[:6]) + (" ..." if len(noisy) > 6 else "") if noisy else ""))
    print(f"load average at end: {load1:.2f}")
    print(f"total time {elapsed:.1f} s")

    if args.json:
        out = {
            "env": info,
            "args": {"scale": scale, "repeats": repeats, "kafka_python_repeats": kp_repeats,
                     "quick": args.quick},
            "workloads": {
                name: {"codec": wl.codec, "batches": wl.n_batches, "records": wl.n_records,
                       "input_bytes": len(wl.data), "uncompressed_bytes": wl.uncompressed_bytes,
                       "value_size": wl.spec.value_size, "key_size": wl.spec.key_size,
                       "headers_per_record": wl.spec.n_headers}
                for name, wl in workloads.items()},
            "results": results.rows,
            "targets": [{"name": k, "value": v, "value_from_medians": vm, "target": t, "pass": ok,
                         "pass_from_medians": okm} for k, _, v, vm, t, ok, okm in checks],
            "ratios": {**ratios, **info_ratios},
            "elapsed_s": elapsed,
            "load_average": {"start": load0, "end": load1},
        }
        d = os.path.dirname(os.path.abspath(args.json))
        os.makedirs(d, exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
        print(f"wrote {args.json}")

    if args.strict and not all(c[5] for c in checks):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
