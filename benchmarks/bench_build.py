"""Build benchmark: writing v2 batches with kafkarec vs aiokafka's Cython builder
and kafka-python, record by record and through kafkarec's bulk column path.

    .venv/bin/python benchmarks/bench_build.py [--quick] [--json FILE]

Workload: 1000 records per batch, 16-byte keys, 100-byte values, no headers
(the "100B" records of workloads.py), uncompressed and per codec.  Every
builder's output is decoded by kafkarec and checked against the input before
anything is timed.  Targets (issue "Writing"): record by record >= 2x
aiokafka's builder, bulk >= 10x.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # numpy's BLAS threads skew timings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import pyarrow as pa  # noqa: E402
from aiokafka.record._crecords import DefaultRecordBatchBuilder as AioBuilder  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder  # noqa: E402

import kafkarec  # noqa: E402
from bench_decode import Timer  # noqa: E402
from workloads import CODEC_IDS, WorkloadSpec, generate_records  # noqa: E402


def kafkarec_append(recs, codec):
    b = kafkarec.RecordBatchBuilder(compression=codec)
    append = b.append
    for ts, key, value, _ in recs:
        append(value, key, timestamp=ts)
    return b.build()


def aiokafka_append(recs, codec):
    b = AioBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
                   producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    append = b.append
    for i, (ts, key, value, _) in enumerate(recs):
        append(i, ts, key, value, [])
    return bytes(b.build())


def kafka_python_append(recs, codec):
    b = KpBuilder(magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i, (ts, key, value, _) in enumerate(recs):
        b.append(i, timestamp=ts, key=key, value=value, headers=[])
    return bytes(b.build())


def columns(recs):
    return ([v for _, _, v, _ in recs], [k for _, k, _, _ in recs], [t for t, _, _, _ in recs])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer batches and runs (~15 s)")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    args = ap.parse_args(argv)
    n_batches = 10 if args.quick else 30
    timer = Timer(repeats=3 if args.quick else 5, min_time=0.3 if args.quick else 0.8, max_repeats=200)
    spec = WorkloadSpec("100B", value_size=100, n_batches=n_batches)
    batches = generate_records(spec)
    n_records = sum(len(b) for b in batches)
    results = {}
    print(f"kafkarec build benchmark: {n_batches} batches x 1000 records (16 B keys, 100 B values)")
    print(f"  load average: {os.getloadavg()[0]:.2f}")
    print(f"{'codec':8s} {'builder':34s} {'best ms':>9s} {'Mrec/s':>8s}")
    for codec_name in ("none", "gzip", "snappy", "lz4", "zstd"):
        codec = CODEC_IDS[codec_name]
        cols = [columns(recs) for recs in batches]
        arrow_cols = [(pa.array(v, pa.binary()), pa.array(k, pa.binary()), pa.array(t, pa.int64()))
                      for v, k, t in cols]
        variants = {
            "kafkarec: append, record by record": lambda _: [kafkarec_append(r, codec) for r in batches],
            "kafkarec: bulk, Python lists": lambda _: [kafkarec.build_batch(v, k, t, compression=codec)
                                                       for v, k, t in cols],
            "kafkarec: bulk, Arrow arrays": lambda _: [kafkarec.build_batch(v, k, t, compression=codec)
                                                       for v, k, t in arrow_cols],
            "aiokafka: append (Cython)": lambda _: [aiokafka_append(r, codec) for r in batches],
        }
        if not args.quick:
            variants["kafka-python: append"] = lambda _: [kafka_python_append(r, codec) for r in batches]
        # Correctness first: every builder's batches decode to the input records.
        for name, fn in variants.items():
            got = [(r.timestamp, r.key, r.value) for blob in fn(None)
                   for batch in kafkarec.iter_batches(blob) for r in batch]
            want = [(t, k, v) for recs in batches for t, k, v, _ in recs]
            assert got == want, f"{codec_name}/{name} wrote different records"
        timed = timer.interleaved(list(variants.values()), None)
        for (name, _), (best, median, runs) in zip(variants.items(), timed):
            results[(codec_name, name)] = best
            print(f"{codec_name:8s} {name:34s} {best * 1e3:9.2f} {n_records / best / 1e6:8.2f}")
    print("\ntargets (uncompressed; ratios per codec below)")
    ok = True
    for codec_name in ("none", "gzip", "snappy", "lz4", "zstd"):
        aio = results[(codec_name, "aiokafka: append (Cython)")]
        rec = aio / results[(codec_name, "kafkarec: append, record by record")]
        bulk = aio / min(results[(codec_name, "kafkarec: bulk, Python lists")],
                         results[(codec_name, "kafkarec: bulk, Arrow arrays")])
        line_ok = rec >= 2 and bulk >= 10
        ok &= line_ok if codec_name == "none" else True
        print(f"  {codec_name:7s} record by record {rec:5.2f}x (>= 2x)   bulk {bulk:5.2f}x (>= 10x)"
              f"   {'PASS' if line_ok else 'FAIL'}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({f"{c}/{n}": t for (c, n), t in results.items()}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
