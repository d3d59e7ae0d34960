#!/usr/bin/env python
"""Schema Registry payloads to Arrow: kafkarec's Protobuf and JSON Schema decoders against what Python users do
today, on the same bytes, in one run.

    python benchmarks/bench_protobuf.py              # 100k records each, about a minute on 2 shared cores
    python benchmarks/bench_protobuf.py --records 20000 --repeats 2
    python benchmarks/bench_protobuf.py --records 400000 --repeats 5 --threads 2 --only-kafkarec

* Protobuf: an orders message (int64, string, double, enum, google.protobuf.Timestamp, optional string,
  repeated message of 2 small items) behind Confluent's prefix and message index byte.  kafkarec
  (ProtobufDecoder.decode -> Arrow struct column) against the protobuf package (upb) parsing each payload then
  MessageToDict (preserving proto field names), and against parse alone (the floor of that path).  With
  --threads N: also the column cut in N parts decoded on N threads at once by one shared decoder, against the
  whole column on one thread (the decoder's rows run without the GIL).
* JSON: the same orders as JSON text behind Confluent's prefix.  kafkarec (JsonSchemaDecoder.decode ->
  Arrow) against orjson.loads per payload then pyarrow.Table.from_pylist with the same Arrow schema.

Each variant: one warm-up run, then the best of N runs (time.perf_counter, gc disabled while timing).  The
outputs are checked to agree before timing.  This is a script, not a test.
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

ORDERS = """
syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Order {
  enum Status { UNKNOWN = 0; NEW = 1; PAID = 2; SHIPPED = 3; }
  message Item { string sku = 1; int32 qty = 2; }
  int64 id = 1;
  string customer = 2;
  double amount = 3;
  Status status = 4;
  google.protobuf.Timestamp created = 5;
  optional string note = 6;
  repeated Item items = 7;
}
"""

JSON_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"}, "customer": {"type": "string"}, "amount": {"type": "number"},
        "status": {"enum": ["NEW", "PAID", "SHIPPED"]},
        "created": {"type": "string", "format": "date-time"}, "note": {"type": ["null", "string"]},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "qty": {"type": "integer"}}}},
    },
}


def best(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        finally:
            gc.enable()
    return min(times)


def order_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from kafkarec.protobuf import ProtobufSchema
    schema = ProtobufSchema.from_text(ORDERS, name="bench/orders.proto")
    pool = descriptor_pool.DescriptorPool()
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(schema.descriptor_set)
    for f in fds.file:
        pool.Add(f)
    return schema, message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Order"))


def records(n: int):
    rnd = random.Random(7)
    for i in range(n):
        yield {
            "id": 10_000_000 + i, "customer": f"customer-{rnd.randrange(100000)}",
            "amount": round(rnd.uniform(1, 1000), 2), "status": rnd.choice(["NEW", "PAID", "SHIPPED"]),
            "created_us": 1_700_000_000_000_000 + i * 1000 + rnd.randrange(1000),
            "note": rnd.choice([None, "gift", "fragile"]),
            "items": [{"sku": f"sku-{rnd.randrange(1000)}", "qty": rnd.randrange(1, 5)} for _ in range(2)],
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="also decode the column in this many parts at once")
    ap.add_argument("--only-kafkarec", action="store_true", help="leave out the protobuf package and JSON")
    args = ap.parse_args()
    n = args.records

    import datetime as dt

    import orjson
    import pyarrow as pa
    from google.protobuf.json_format import MessageToDict

    from kafkarec.jsonschema import JsonSchemaDecoder
    from kafkarec.protobuf import ProtobufDecoder

    print(f"python {sys.version.split()[0]}, pyarrow {pa.__version__}, {n} records, best of {args.repeats}")
    schema, Order = order_class()
    recs = list(records(n))
    prefix = b"\x00\x00\x00\x00\x01"
    pb_payloads = []
    json_payloads = []
    for r in recs:
        m = Order(id=r["id"], customer=r["customer"], amount=r["amount"], status=r["status"],
                  items=[Order.Item(**it) for it in r["items"]])
        m.created.FromMicroseconds(r["created_us"])
        if r["note"] is not None:
            m.note = r["note"]
        pb_payloads.append(prefix + b"\x00" + m.SerializeToString())
        created = dt.datetime.fromtimestamp(r["created_us"] / 1e6, dt.timezone.utc).isoformat().replace("+00:00", "Z")
        json_payloads.append(prefix + orjson.dumps({**{k: v for k, v in r.items() if k != "created_us"},
                                                    "created": created}))
    ids = pa.array([1] * n, pa.int64())
    offsets = pa.array([5] * n, pa.int32())

    # -- Protobuf
    values = pa.array(pb_payloads, pa.binary())
    dec = ProtobufDecoder(schema)
    dec.add_writer(1, schema)
    arr, err = dec.decode(values, ids, offsets)
    assert err.null_count == n
    first = Order()
    first.ParseFromString(pb_payloads[0][6:])
    as_dict = MessageToDict(first, preserving_proto_field_name=True)
    assert arr[0]["id"].as_py() == int(as_dict["id"]) and arr[0]["items"].as_py() == \
        [{"sku": it["sku"], "qty": it["qty"]} for it in as_dict["items"]]

    def kafkarec_pb():
        dec.decode(values, ids, offsets)

    def protobuf_to_dicts():
        out = []
        for p in pb_payloads:
            m = Order()
            m.ParseFromString(p[6:])
            out.append(MessageToDict(m, preserving_proto_field_name=True))
        return out

    def protobuf_parse_only():
        for p in pb_payloads:
            Order().ParseFromString(p[6:])

    t_k = best(kafkarec_pb, args.repeats)
    if args.threads > 1:
        from concurrent.futures import ThreadPoolExecutor
        cuts = [(i * n // args.threads, (i + 1) * n // args.threads) for i in range(args.threads)]
        parts = [(values.slice(a, b - a), ids.slice(a, b - a), offsets.slice(a, b - a)) for a, b in cuts]
        with ThreadPoolExecutor(args.threads) as pool:
            t_n = best(lambda: list(pool.map(lambda p: dec.decode(*p), parts)), args.repeats)
        print(f"\nProtobuf, one decoder: the column on 1 thread {n / t_k / 1e6:6.2f} M rec/s, in {args.threads} "
              f"parts on {args.threads} threads {n / t_n / 1e6:6.2f} M rec/s ({t_k / t_n:.2f}x)")
    print("\nProtobuf (orders, %d bytes/payload avg)" % (sum(map(len, pb_payloads)) // n))
    print(f"  kafkarec ProtobufDecoder -> Arrow     {t_k * 1e3:9.1f} ms  {n / t_k / 1e6:6.2f} M rec/s")
    if args.only_kafkarec:
        return
    t_d = best(protobuf_to_dicts, args.repeats)
    t_p = best(protobuf_parse_only, args.repeats)
    print(f"  protobuf parse + MessageToDict        {t_d * 1e3:9.1f} ms  {n / t_d / 1e6:6.2f} M rec/s"
          f"   kafkarec is {t_d / t_k:.1f}x faster")
    print(f"  protobuf parse only (upb, no dicts)   {t_p * 1e3:9.1f} ms  {n / t_p / 1e6:6.2f} M rec/s"
          f"   kafkarec is {t_p / t_k:.1f}x faster")

    # -- JSON
    jvalues = pa.array(json_payloads, pa.binary())
    jdec = JsonSchemaDecoder(JSON_SCHEMA)
    jdec.add_writer(1, JSON_SCHEMA)
    jarr, jerr = jdec.decode(jvalues, ids, offsets)
    assert jerr.null_count == n, jerr.drop_null()[:3]
    jschema = pa.schema([f if f.name != "created" else pa.field("created", pa.string()) for f in jdec.arrow_type])

    def kafkarec_json():
        jdec.decode(jvalues, ids, offsets)

    def orjson_from_pylist():
        return pa.Table.from_pylist([orjson.loads(p[5:]) for p in json_payloads], schema=jschema)

    reference = orjson_from_pylist()
    assert reference.column("id").to_pylist() == jarr.field("id").to_pylist()
    t_j = best(kafkarec_json, args.repeats)
    t_o = best(orjson_from_pylist, args.repeats)
    print("\nJSON Schema (the same orders, %d bytes/payload avg; timestamps stay strings in the"
          " orjson path)" % (sum(map(len, json_payloads)) // n))
    print(f"  kafkarec JsonSchemaDecoder -> Arrow   {t_j * 1e3:9.1f} ms  {n / t_j / 1e6:6.2f} M rec/s")
    print(f"  orjson.loads + Table.from_pylist      {t_o * 1e3:9.1f} ms  {n / t_o / 1e6:6.2f} M rec/s"
          f"   kafkarec is {t_o / t_j:.1f}x faster")


if __name__ == "__main__":
    main()
