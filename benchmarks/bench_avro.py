"""Avro to Arrow: kafkarec against fastavro and confluent-kafka, on one core.

1M Confluent-framed records of an orders schema (long, string, decimal,
timestamp-millis, enum, optional string, array of 2 small records), written by
confluent-kafka's own AvroSerializer (in-memory "mock://" registry client):

    PYTHONPATH=. python benchmarks/bench_avro.py [--records N] [--rounds R]

* kafkarec: AvroDecoder.decode over the whole value column -> one Arrow struct column;
* fastavro: schemaless_reader(BytesIO(value[5:]), parsed writer schema, None) per record -> dicts
  (no reader schema: its fastest path);
* confluent-kafka: AvroDeserializer(client)(value, ctx) per record -> dicts
  (measured on a sample, it is the slowest).
Times are CPU seconds of this process (time.process_time: every decoder here
runs on one thread, so this is the cost per core and is not inflated by other
load on the machine), best of R rounds.
"""
from __future__ import annotations

import argparse
import datetime
import decimal
import io
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fastavro  # noqa: E402
import pyarrow as pa  # noqa: E402

from kafkarec import avro  # noqa: E402

ORDERS = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "order_id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": {"type": "enum", "name": "Status",
                                    "symbols": ["NEW", "PAID", "SHIPPED", "CANCELLED"]}},
        {"name": "coupon", "type": ["null", "string"], "default": None},
        {"name": "lines", "type": {"type": "array", "items": {
            "type": "record", "name": "Line",
            "fields": [{"name": "sku", "type": "string"}, {"name": "quantity", "type": "int"}]}}},
    ],
}


def order(i: int) -> dict:
    return {
        "order_id": 1_000_000_000 + i,
        "customer": f"customer-{i % 50_000:05d}",
        "amount": decimal.Decimal(i % 100_000) / 100,
        "created": datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
        + datetime.timedelta(milliseconds=i * 37),
        "status": ("NEW", "PAID", "SHIPPED", "CANCELLED")[i % 4],
        "coupon": None if i % 3 else f"SAVE{i % 10}",
        "lines": [{"sku": f"sku-{i % 977}", "quantity": 1 + i % 5},
                  {"sku": f"sku-{(i * 7) % 977}", "quantity": 2}],
    }


def confluent_values(n: int):
    from confluent_kafka.schema_registry import Schema
    from confluent_kafka.schema_registry.avro import AvroSerializer, AvroDeserializer
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.serialization import SerializationContext, MessageField
    import json
    client = MockSchemaRegistryClient({"url": "mock://bench"})
    ser = AvroSerializer(client, json.dumps(ORDERS))
    ctx = SerializationContext("orders", MessageField.VALUE)
    distinct = [ser(order(i), ctx) for i in range(min(n, 20_000))]
    values = [distinct[i % len(distinct)] for i in range(n)]
    return values, AvroDeserializer(client), ctx


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--confluent-sample", type=int, default=100_000)
    args = ap.parse_args()
    n = args.records
    values, deserializer, ctx = confluent_values(n)
    schema_id = int.from_bytes(values[0][1:5], "big")
    col = pa.array(values, pa.binary())
    ids = pa.array([schema_id] * n, pa.int64())
    offs = pa.array([5] * n, pa.int32())

    dec = avro.AvroDecoder(avro.parse_schema(ORDERS))
    dec.add_writer(schema_id, avro.parse_schema(ORDERS))
    out, errs = dec.decode(col, ids, offs)
    assert errs.null_count == n and len(out) == n
    parsed = fastavro.parse_schema(ORDERS)
    first = fastavro.schemaless_reader(io.BytesIO(values[0][5:]), parsed, None)
    assert out[0].as_py()["order_id"] == first["order_id"]

    t_kr = best(lambda: dec.decode(col, ids, offs), args.rounds)

    def run_fastavro():
        reader = fastavro.schemaless_reader
        BytesIO = io.BytesIO
        for v in values:
            reader(BytesIO(v[5:]), parsed, None)

    t_fa = best(run_fastavro, args.rounds)

    sample = values[: args.confluent_sample]

    def run_confluent():
        for v in sample:
            deserializer(v, ctx)

    t_ck = best(run_confluent, 1) * n / len(sample)

    print(f"{n} records, orders schema, best of {args.rounds} (confluent-kafka: {len(sample)} records, scaled)")
    for name, t in (("kafkarec AvroDecoder -> Arrow", t_kr), ("fastavro schemaless_reader -> dicts", t_fa),
                    ("confluent-kafka AvroDeserializer -> dicts", t_ck)):
        print(f"  {name:44s} {t:8.3f} CPU s  {n / t / 1e6:7.2f} M records/s  ({t_kr and t / t_kr:5.1f}x kafkarec's time)")
    print(f"kafkarec vs fastavro: {t_fa / t_kr:.1f}x faster")


if __name__ == "__main__":
    main()
