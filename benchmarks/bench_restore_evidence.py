#!/usr/bin/env python
"""The CPU a restore's ``--evidence`` costs (issue 69, item 3: at most 10% more): ``kafkarec
restore`` of one partition of N records (100-byte values, a key, a header each; kafkarec's builder
writes the segment) into a Kafka KRaft broker of jvm/kafka/pom.xml (tests/support/brokers/kafka_broker.py,
in a temp folder), alternately without and with ``--evidence``, each run into its own topic; the
CPU of each ``kafkarec restore`` process (user + system, its librdkafka threads included) from
``getrusage(RUSAGE_CHILDREN)``.

    .venv/bin/python benchmarks/bench_restore_evidence.py --records 200000 --runs 5     # ~3 minutes

Prints each run and the best and median of each side (the broker's own CPU is not counted).

    .venv/bin/python benchmarks/bench_restore_evidence.py --digest-only --records 200000

The digest alone, no broker: the CPU (``time.process_time``, best of 5) of hashing N such records
as the restore does (:meth:`kafkarec.restore.evidence.Digest.add_records`, a transaction of 1,000 at
a time), per record; a loaded machine's whole-restore figures above vary more than the digest costs.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")


def write_source(root: str, records: int, per_batch: int = 500) -> None:
    import kafkarec
    os.makedirs(os.path.join(root, "bench-0"))
    with open(os.path.join(root, "bench-0", "%020d.log" % 0), "wb") as fh:
        for base in range(0, records, per_batch):
            b = kafkarec.RecordBatchBuilder(base_offset=base)
            for i in range(base, min(base + per_batch, records)):
                b.append(b"value-%d-" % i + b"x" * 80, key=b"key-%d" % (i % 1000), timestamp=1_700_000_000_000 + i,
                         headers=[("trace", b"t%d" % i)])
            fh.write(b.build())


def digest_only(records: int) -> None:
    from kafkarec.restore.evidence import Digest
    from kafkarec.restore.source import Record
    recs = [Record(i, b"key-%d" % (i % 1000), b"value-%d-" % i + b"x" * 80, 1_700_000_000_000 + i,
                   [("trace", b"t%d" % i)]) for i in range(records)]
    best = float("inf")
    for _ in range(5):
        t = time.process_time()
        d = Digest()
        for i in range(0, records, 1000):
            d.add_records(recs[i:i + 1000])
        best = min(best, time.process_time() - t)
    print(f"{records} records digested in {best:.3f} CPU-s (best of 5): {best / records * 1e9:.0f} ns a record")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--digest-only", action="store_true", help="the digest's CPU alone, no broker")
    args = ap.parse_args()
    if args.digest_only:
        digest_only(args.records)
        return
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    from support.brokers.kafka_broker import KafkaBroker
    src = tempfile.mkdtemp(prefix="bench-evidence-")
    write_source(src, args.records)
    broker = KafkaBroker().start()
    cpu = {"without": [], "with --evidence": []}
    try:
        for k in range(args.runs):
            for side in cpu:
                name = f"{'plain' if side == 'without' else 'evidence'}{k}"
                extra = ["--evidence", os.path.join(src, name + ".json")] if side != "without" else []
                before, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
                p = subprocess.run([sys.executable, "-m", "kafkarec", "restore", src, "--target-bootstrap",
                                    broker.bootstrap, "--rename", f"bench={name}", "--restore-id", name, "--no-groups",
                                    *extra], capture_output=True, text=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if p.returncode != 0:
                    raise SystemExit(p.stderr)
                used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                cpu[side].append(used)
                print(f"{name:10s} CPU {used:6.2f} s  wall {time.monotonic() - t:6.2f} s", flush=True)
    finally:
        broker.close()
        import shutil
        shutil.rmtree(src, ignore_errors=True)
    (a, b) = cpu.values()
    print(f"{args.records} records: without {min(a):.2f} s CPU (best of {len(a)}), median {statistics.median(a):.2f}; "
          f"with --evidence {min(b):.2f} s, median {statistics.median(b):.2f}: "
          f"{100 * (min(b) / min(a) - 1):+.1f}% (best), {100 * (statistics.median(b) / statistics.median(a) - 1):+.1f}% "
          "(median)")


if __name__ == "__main__":
    main()
