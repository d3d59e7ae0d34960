"""``restore --same-offsets write``'s segment writer against ``cp`` of the same bytes.

    PYTHONPATH=. python benchmarks/bench_same_offsets.py WORKDIR [MB] [BATCH_KB] [REPLICAS]

A partition of MB megabytes (default 256) in 64 MiB segments of one idempotent producer's batches of
BATCH_KB KiB (default 16, the Java producer's batch.size): every batch has its producer id moved and
its CRC recomputed, the most the writer does to a batch.  Timed once each, after a ``sync`` and a
settle of SAME_OFFSETS_SETTLE_S seconds (5), the bytes in the page cache for both (a first ``cp`` warms it): ``cp`` of the segment files, then ``cp`` and ``sync`` of
them, then :func:`kafkarec.log.writer.write_partition` (which fsyncs each segment it writes).
With REPLICAS (default 1) the writer writes every replica folder of the partition at once (replication
factor 3: 3), and ``cp`` copies the files into as many folders.  Prints one JSON line: MB/s of each (of
the source's bytes) and the writer's ratio to both.
"""
import json
import os
import shutil
import subprocess
import sys
import time

#: seconds waited after a sync before each timed step
SETTLE_S = float(os.environ.get("SAME_OFFSETS_SETTLE_S", "5"))

def make_partition(root: str, mb: int, batch_kb: int) -> str:
    from kafkarec._core import RecordBatchBuilder, restamp
    folder = os.path.join(root, "bench-0")
    os.makedirs(folder, exist_ok=True)
    b = RecordBatchBuilder(base_offset=0, producer_id=5, producer_epoch=0, base_sequence=0)
    value = b"x" * 150
    while b.size_in_bytes < batch_kb * 1024 - 200:
        b.append(value, key=b"key", timestamp=1_700_000_000_000)
    one = b.build()
    records = b.record_count
    per_segment = (64 << 20) // len(one)
    total = (mb << 20) // len(one)
    offset = 0
    while total > 0:
        n = min(per_segment, total)
        buf = bytearray(one * n)
        base = offset
        for i in range(n):
            restamp(buf, i * len(one), base_offset=offset)
            offset += records
        with open(os.path.join(folder, f"{base:020d}.log"), "wb") as fh:
            fh.write(buf)
        total -= n
    return folder


def main() -> None:
    work = sys.argv[1]
    mb = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    batch_kb = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    replicas = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    shutil.rmtree(work, ignore_errors=True)
    src_root = os.path.join(work, "source")
    folder = make_partition(src_root, mb, batch_kb)
    size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
    logs = sorted(os.path.join(folder, n) for n in os.listdir(folder))

    def settle() -> None:
        # the writeback of what the last step wrote would otherwise throttle the next one's writes
        # (shared/bench/scale.py's reason: it steals a core)
        subprocess.run(["sync"], check=True)
        time.sleep(SETTLE_S)

    def cp(dest: str, sync: bool) -> float:
        settle()
        dests = [os.path.join(dest, str(i)) for i in range(replicas)]
        for d in dests:
            os.makedirs(d)
        t = time.perf_counter()
        for d in dests:
            subprocess.run(["cp", *logs, d], check=True)
        if sync:
            subprocess.run(["sync", "-f", dests[0]], check=True)
        return time.perf_counter() - t
    cp(os.path.join(work, "warm"), False)
    t_cp = cp(os.path.join(work, "cp"), False)
    t_cp_sync = cp(os.path.join(work, "cp-sync"), True)

    from kafkarec.log.layout import scan_history
    from kafkarec.log.writer import write_partition
    layout, _ = scan_history(src_root)
    part = layout.partitions[0]
    targets = [os.path.join(work, "target", str(i), "bench-0") for i in range(replicas)]
    for target in targets:
        os.makedirs(target)
    settle()
    t = time.perf_counter()
    written = write_partition(layout.storage, part, targets, 0)
    t_write = time.perf_counter() - t
    assert written.bytes == size
    rate = lambda s: round(size / s / 1e6, 1)
    print(json.dumps({"bytes": size, "replicas": replicas, "batch_bytes": size // written.batches, "segments": written.segments,
                      "cp_MBps": rate(t_cp), "cp_sync_MBps": rate(t_cp_sync), "write_MBps": rate(t_write),
                      "write_vs_cp": round(t_cp / t_write, 2), "write_vs_cp_sync": round(t_cp_sync / t_write, 2)}))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
