"""Confluent-framed value columns for the typed decoders' column tests (Avro's and Protobuf's
``*_threads`` tests): each body behind the magic byte and its writer id, with tombstones and writer
ids no decoder knows mixed in at fixed rows, as the arrays ``decode(values, writer_ids,
body_offsets)`` takes."""
from __future__ import annotations

import struct

import pyarrow as pa

UNKNOWN_WRITER = 9      # a writer id no decoder of these tests knows


def framed_column(bodies: list, writer_ids: list) -> tuple:
    """``(values, writer ids, body offsets)`` of the bodies, row ``i`` a tombstone (a null value and
    id) where ``i % 83 == 41`` and of an unknown writer where ``i % 211 == 100``."""
    out, ids = [], []
    for i, (body, wid) in enumerate(zip(bodies, writer_ids)):
        value = b"\x00" + struct.pack(">i", wid) + body
        if i % 83 == 41:
            value, wid = None, None
        elif i % 211 == 100:
            wid = UNKNOWN_WRITER
        out.append(value)
        ids.append(wid)
    return pa.array(out, pa.binary()), pa.array(ids, pa.int64()), pa.array([5] * len(out), pa.int32())
