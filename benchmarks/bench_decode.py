#!/usr/bin/env python
"""Decode benchmark: kafkarec vs aiokafka (Cython) vs kafka-python, next to the
physical limits (memcpy, raw CRC-32C, raw decompression) on the same bytes.

    .venv/bin/python benchmarks/bench_decode.py            # ~1-2 min
    .venv/bin/python benchmarks/bench_decode.py --quick    # ~20-30 s
    .venv/bin/python benchmarks/bench_decode.py --json out/bench.json

The batches are built by kafka-python (see workloads.py), checked with all
three decoders (record counts and a checksum of offsets, timestamps, keys,
values and headers must equal the generator's), then timed: one warm-up run,
then the best of N runs (time.perf_counter, gc disabled while timing).
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

TARGETS = {
    "speedup_all_fields": 1.5,      # kafkarec all-fields >= 1.5x aiokafka all-fields (100B)
    "materialise_pct": 40.0,        # kafkarec materialise time <= 40% of aiokafka's (100B)
    "crc_pct": 80.0,                # kafkarec CRC throughput >= 80% of raw crc32c (100B)
    "codec_ratio": 1.15,            # kafkarec compressed <= 1.15 x (raw decompress + uncompressed decode)
}


# --------------------------------------------------------------------------
# Decoders.  Each takes the buffer and returns nothing; loops are kept
# identical across libraries so only the library differs.
# --------------------------------------------------------------------------

def kr_all_fields(buf):
    for batch in iter_batches(buf, verify_crc=True):
        for r in batch:
            (r.offset, r.timestamp, r.key, r.value, r.headers)


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


def aio_rows(buf):
    mr = AioMemoryRecords(buf)
    while mr.has_next():
        batch = mr.next_batch()
        if not batch.validate_crc():
            raise ValueError("aiokafka: CRC mismatch")
        for r in batch:
            yield (r.offset, r.timestamp, r.key, r.value, r.headers)


def kp_rows(buf):
    mr = KpMemoryRecords(buf)
    while mr.has_next():
        batch = mr.next_batch()
        if not batch.validate_crc():
            raise ValueError("kafka-python: CRC mismatch")
        for r in batch:
            yield (r.offset, r.timestamp, r.key, r.value, r.headers)


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


def make_raw_decompress(wl):
    """Decompress every batch's payload (bytes 61..end) with the library kafkarec uses."""
    codec = wl.codec
    mv = memoryview(wl.data)
    payloads = [mv[s:e] for s, e in wl.payload_ranges()]
    if codec == "gzip":
        decompressobj = zlib.decompressobj

        def fn(buf):
            for p in payloads:
                decompressobj(31).decompress(p)
        fn.__name__ = "zlib.decompressobj(31)"
        fn.one = lambda p: zlib.decompressobj(31).decompress(p)
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
    else:
        raise ValueError(codec)
    return fn


def make_loop_floor(wl):
    """The consumer loop itself: the same tuple-of-five-fields expression over
    already-decoded records (aiokafka's, whose fields are stored attributes).
    A floor for any decoder that hands Python one object per record."""
    recs = [r for r in _aio_records(wl.data)]

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


class Results:
    def __init__(self):
        self.rows = []
        self.index = {}

    def add(self, wl, group, name, best, median, n, note=""):
        row = {
            "workload": wl.name, "group": group, "name": name,
            "best_s": best, "median_s": median, "runs": n,
            "records": wl.n_records, "input_bytes": len(wl.data),
            "records_per_s": wl.n_records / best,
            "mb_per_s": len(wl.data) / best / 1e6,
            "ns_per_record": best / wl.n_records * 1e9,
            "note": note,
        }
        self.rows.append(row)
        self.index[(wl.name, group, name)] = row
        return row

    def t(self, workload, group, name):
        row = self.index.get((workload, group, name))
        return None if row is None else row["best_s"]


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
    import lz4
    import zstandard
    return {
        "python": sys.version.split()[0], "platform": platform.platform(), "cpu": cpu,
        "cpus": os.cpu_count(), "git": rev,
        "kafkarec": kafkarec.__version__, "kafkarec_core": os.path.basename(kafkarec._core.__file__),
        "aiokafka": aiokafka.__version__, "kafka-python": kafka.__version__,
        "crc32c": getattr(crc32c_mod, "__version__", "?"),
        "crc32c_hardware": bool(getattr(crc32c_mod, "hardware_based", False)),
        "cramjam": cramjam.__version__, "lz4": lz4.__version__, "zstandard": zstandard.__version__,
        "numpy": np.__version__,
    }


def fmt_rate(x):
    return f"{x / 1e6:8.2f}"


def print_table(results, workloads):
    header = (f"{'workload':<12} {'decoder / variant':<44} {'best ms':>9} {'median':>8} "
              f"{'runs':>4} {'Mrec/s':>8} {'MB/s':>9} {'ns/rec':>8}")
    print(header)
    print("-" * len(header))
    last_wl = None
    last_group = None
    for row in results.rows:
        if row["workload"] != last_wl:
            if last_wl is not None:
                print()
            wl = workloads[row["workload"]]
            print(f"[{wl.name}] codec={wl.codec}  {wl.n_batches} batches x "
                  f"{wl.spec.records_per_batch} records, {len(wl.data) / 1e6:.2f} MB"
                  + (f" ({wl.uncompressed_bytes / 1e6:.2f} MB uncompressed, "
                     f"ratio {wl.uncompressed_bytes / len(wl.data):.2f})" if wl.codec != "none" else ""))
            last_wl = row["workload"]
            last_group = None
        if row["group"] != last_group:
            last_group = row["group"]
        label = f"{row['group']}: {row['name']}"
        print(f"{'':<12} {label:<44} {row['best_s'] * 1e3:9.2f} {row['median_s'] * 1e3:8.2f} "
              f"{row['runs']:>4} {fmt_rate(row['records_per_s'])} {row['mb_per_s']:9.1f} "
              f"{row['ns_per_record']:8.1f}" + (f"  {row['note']}" if row['note'] else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller buffers, fewer runs (~30 s)")
    ap.add_argument("--json", metavar="FILE", help="write all results and ratios as JSON")
    ap.add_argument("--repeats", type=int, help="timed runs per measurement (best is kept)")
    ap.add_argument("--scale", type=float, help="workload size multiplier (default 1, --quick 0.25)")
    ap.add_argument("--workloads", help="comma-separated subset, e.g. 100B,100B-zstd")
    ap.add_argument("--no-kafka-python", action="store_true", help="skip timing kafka-python (slow)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    args = ap.parse_args(argv)

    scale = args.scale if args.scale is not None else (0.25 if args.quick else 1.0)
    repeats = args.repeats or (3 if args.quick else 7)
    timer = Timer(repeats=repeats, min_time=0.05 if args.quick else 0.2,
                  max_repeats=30 if args.quick else 100)
    kp_repeats = 1 if args.quick else 2

    t_start = time.perf_counter()
    check_environment()
    info = env_info()
    print("kafkarec decode benchmark")
    print("  " + "  ".join(f"{k}={v}" for k, v in info.items() if k not in ("platform",)))
    print(f"  scale={scale} repeats={repeats} (best of; kafka-python {kp_repeats}), "
          f"warm-up 1 run, gc disabled while timing")

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

        def run(group, name, fn, note="", reps=None):
            best, med, n = timer.best(fn, buf, reps)
            results.add(wl, group, name, best, med, n, note)

        run("kafkarec", "all fields", kr_all_fields)
        run("kafkarec", "materialise only", kr_materialise)
        run("kafkarec", "CRC only (b.crc_valid)", kr_crc_only)
        if wl.codec != "none":
            run("kafkarec", "open only (decompress, no records)", kr_open_only)
        run("aiokafka", "all fields", aio_all_fields)
        run("aiokafka", "materialise only", aio_materialise)
        if not args.no_kafka_python:
            run("kafka-python", "all fields", kp_all_fields, reps=kp_repeats)
        run("limit", "memcpy (numpy copyto)", make_memcpy(wl))
        run("limit", "crc32c per batch (bytes 21..end)", make_raw_crc(wl))
        if wl.codec != "none":
            raw = make_raw_decompress(wl)
            run("limit", f"decompress: {raw.__name__}", raw)
            twin = wl.spec.seed_name
            t_twin = results.t(twin, "kafkarec", "all fields")
            if t_twin is not None:
                target = results.t(wl.name, "limit", f"decompress: {raw.__name__}") + t_twin
                results.add(wl, "limit", f"decompress + kafkarec({twin}) all fields", target, target, 0,
                            note="target for compressed decoding")
        # Breakdown on the plain workloads: where kafkarec's time goes.
        if wl.name in ("100B", "headers"):
            run("breakdown", "kafkarec batches only (no CRC)", kr_batches_only)
            run("breakdown", "kafkarec materialise, verify_crc=False", kr_materialise_nocrc)
            run("breakdown", "kafkarec + offset, timestamp", kr_offset_ts)
            run("breakdown", "kafkarec + key", kr_offset_ts_key)
            run("breakdown", "kafkarec + value", kr_offset_ts_key_value)
            run("breakdown", "kafkarec + headers (= all fields)", kr_all_fields)
            run("breakdown", "aiokafka CRC only (validate_crc)", aio_crc_only)
            run("breakdown", "aiokafka materialise, no validate_crc", aio_materialise_nocrc)
            run("breakdown", "crc32c one call over the whole buffer", make_raw_crc_whole(wl))
            run("breakdown", "python loop floor (5-field tuple, decoded)", make_loop_floor(wl))
        gc.collect()

    print_table(results, workloads)

    # ---------------------------------------------------------------- targets
    ratios = {}
    checks = []

    def ratio(key, value, target, ok, text):
        ratios[key] = value
        checks.append((key, text, value, target, ok))

    T = results.t
    CRC_ROW = ("limit", "crc32c per batch (bytes 21..end)")
    KR_CRC = ("kafkarec", "CRC only (b.crc_valid)")
    if "100B" in workloads:
        sp = T("100B", "aiokafka", "all fields") / T("100B", "kafkarec", "all fields")
        ratio("speedup_all_fields_100B", sp, TARGETS["speedup_all_fields"],
              sp >= TARGETS["speedup_all_fields"],
              "kafkarec all-fields speed / aiokafka's (100B)           >= {t:.2f}x : {v:.2f}x")
        pct = T("100B", "kafkarec", "materialise only") / T("100B", "aiokafka", "materialise only") * 100
        ratio("materialise_pct_100B", pct, TARGETS["materialise_pct"], pct <= TARGETS["materialise_pct"],
              "kafkarec materialise-only time / aiokafka's (100B)      <= {t:.0f}%  : {v:.1f}%")
        pct = T("100B", *CRC_ROW) / T("100B", *KR_CRC) * 100
        ratio("crc_pct_100B", pct, TARGETS["crc_pct"], pct >= TARGETS["crc_pct"],
              "kafkarec CRC throughput / raw crc32c per batch (100B)   >= {t:.0f}%  : {v:.1f}%")
    for wl in workloads.values():
        if wl.codec == "none":
            continue
        tgt = [r for r in results.rows if r["workload"] == wl.name and r["name"].startswith("decompress + ")]
        if not tgt:
            continue
        v = T(wl.name, "kafkarec", "all fields") / tgt[0]["best_s"]
        ratio(f"codec_ratio_{wl.codec}", v, TARGETS["codec_ratio"], v <= TARGETS["codec_ratio"],
              f"{wl.codec + ':':<7} kafkarec / (raw decompress + plain decode)  <= {{t:.2f}}  : {{v:.3f}}")

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
    for n in ("100B", "headers"):
        a = T(n, "breakdown", "aiokafka materialise, no validate_crc")
        k = T(n, "breakdown", "kafkarec materialise, verify_crc=False")
        if a and k:
            info_ratios[f"materialise_nocrc_pct_{n}"] = k / a * 100

    print()
    print("targets")
    print("-------")
    for key, text, value, target, ok in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  " + text.format(t=target, v=value))
    print()
    print("other ratios (informational)")
    for k, v in info_ratios.items():
        unit = "x" if k.startswith("speedup") else "%"
        print(f"  {k:<38} {v:8.2f}{unit}")
    elapsed = time.perf_counter() - t_start
    print(f"\ntotal time {elapsed:.1f} s")

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
            "targets": [{"name": k, "value": v, "target": t, "pass": ok} for k, _, v, t, ok in checks],
            "ratios": {**ratios, **info_ratios},
            "elapsed_s": elapsed,
        }
        d = os.path.dirname(os.path.abspath(args.json))
        os.makedirs(d, exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
        print(f"wrote {args.json}")

    if args.strict and not all(ok for *_, ok in checks):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
