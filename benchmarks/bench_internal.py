"""__consumer_offsets into Arrow: typed columns (group, topic, partition, committed offset, ...) per second.

    .venv/bin/python benchmarks/bench_internal.py [--records 1000000] [--json]

Builds one __consumer_offsets partition in memory the way a group coordinator fills it: batches of 1-50
records (one commit request per batch), 95% OffsetCommit (value v3, as brokers write it; some v1 with an
expire timestamp, some v4 flexible), 3% GroupMetadata with members, 2% tombstones; keys and values made by
kafkarec.internal.encode_record from the project's schemas. Then times, best of 3:
  * kafkarec.to_arrow: the batches into Arrow with key/value as bytes (the floor: no decoding);
  * kafkarec.internal.to_arrow(decode="consumer_offsets"): the same plus the typed columns (Cython);
  * record by record through the Python API (kafkarec.internal.decode per record, then
    pyarrow.Table.from_pylist): what the columns replace, on the first 100,000 records.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import kafkarec  # noqa: E402
from kafkarec import internal  # noqa: E402
from kafkarec.internal import columns  # noqa: E402


def build_partition(n: int, seed: int = 14) -> bytes:
    rng = random.Random(seed)
    groups = [f"group-{i:03d}-{'payments' if i % 3 else 'orders'}-consumer" for i in range(200)]
    topics = ["orders", "payments", "payments.retry", "clicks", "événements"]
    pool = []
    for g in groups[:60]:
        for t in topics:
            for p in range(12):
                v = rng.random()
                version = 3 if v < 0.85 else (1 if v < 0.95 else 4)
                value = {"offset": rng.randrange(1 << 40), "leaderEpoch": rng.randrange(100),
                         "metadata": "" if rng.random() < 0.9 else "checkpoint-" + str(rng.randrange(1000)),
                         "commitTimestamp": 1729881800000 + rng.randrange(10 ** 7),
                         "expireTimestamp": 1730486297936}
                pool.append(internal.encode_record("__consumer_offsets", "OffsetCommit",
                                                   {"group": g, "topic": t, "partition": p}, value, version))
    member = {"memberId": "consumer-1-8dbdc40e-5dcd-bc4c-c3ea-a87002124dc5", "clientId": "consumer-1",
              "clientHost": "/10.0.0.1", "sessionTimeout": 45000, "rebalanceTimeout": 300000,
              "groupInstanceId": None, "subscription": b"\x00\x01" + b"\x00" * 20, "assignment": b"\x00\x01" + b"\x00" * 30}
    groups_md = [internal.encode_record("__consumer_offsets", "GroupMetadata", {"group": g},
                                        {"protocolType": "consumer", "generation": 7, "protocol": "range",
                                         "leader": member["memberId"], "currentStateTimestamp": 1729881800000,
                                         "members": [member] * 3}, 3) for g in groups]
    tombs = [internal.encode_record("__consumer_offsets", "OffsetCommit",
                                    {"group": g, "topic": "orders", "partition": 0}, None) for g in groups]
    out = []
    offset = 0
    ts = 1729881800000
    while offset < n:
        size = min(n - offset, rng.randrange(1, 51))
        keys, values = [], []
        for _ in range(size):
            r = rng.random()
            k, v = rng.choice(pool if r < 0.95 else groups_md if r < 0.98 else tombs)
            keys.append(k)
            values.append(v)
        out.append(kafkarec.build_batch(values, keys, [ts] * size, base_offset=offset))
        offset += size
        ts += rng.randrange(100)
    return b"".join(out)


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    data = build_partition(args.records)
    n = args.records
    results = {}
    t, table = best(lambda: kafkarec.to_arrow(data, topic="__consumer_offsets", partition=0))
    assert table.num_rows == n
    results["kafkarec.to_arrow (key/value bytes)"] = t
    t, table = best(lambda: columns.to_arrow(data, decode="consumer_offsets", partition=0))
    assert table.num_rows == n and table.column("committedOffset").null_count < n // 10
    results["kafkarec.internal.to_arrow(decode='consumer_offsets')"] = t
    sub_n = min(n, 100_000)
    sub = kafkarec.to_arrow(data, topic="__consumer_offsets", partition=0).slice(0, sub_n)
    keys, values = sub.column("key").to_pylist(), sub.column("value").to_pylist()

    def per_record():
        import pyarrow as pa
        rows = []
        for k, v in zip(keys, values):
            rec = internal.decode("__consumer_offsets", k, v)
            row = {"recordTypeName": rec.record_type, "group": (rec.key or {}).get("group")}
            if rec.record_type == "OffsetCommit":
                row["committedTopic"] = rec.key["topic"]
                row["committedPartition"] = rec.key["partition"]
                if rec.value:
                    row["committedOffset"] = rec.value["offset"]
                    row["commitTimestamp"] = rec.value["commitTimestamp"]
            rows.append(row)
        return pa.Table.from_pylist(rows)
    t, _ = best(per_record)
    results["record by record (Python API + Table.from_pylist)"] = t * n / sub_n
    if args.json:
        print(json.dumps({"records": n, "bytes": len(data),
                          "records_per_second": {k: n / v for k, v in results.items()}}))
        return 0
    print(f"__consumer_offsets partition: {n:,} records, {len(data) / 1e6:.1f} MB (best of 3)")
    for name, t in results.items():
        print(f"  {name:58s} {t * 1e3:9.1f} ms  {n / t / 1e6:6.2f} M records/s  {t / n * 1e9:7.0f} ns/record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
