"""Confluent-framed value columns for the typed decoders' column tests (Avro's and Protobuf's
``*_threads`` tests), and their decode in quarters on threads sharing a decoder: each body behind the magic byte and its writer id, with tombstones and writer
ids no decoder knows mixed in at fixed rows, as the arrays ``decode(values, writer_ids,
body_offsets)`` takes."""
from __future__ import annotations

import struct
from concurrent.futures import ThreadPoolExecutor

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


def quarters_alone_and_on_threads(decoder, values, writer_ids, body_offsets, rounds: int = 3):
    """``(alone, side)`` for each quarter of the column, ``rounds`` times: its ``decode`` result on this
    thread, and on one of four threads decoding the four quarters at once with the same decoder."""
    n = len(values)
    cuts = [(i, n // 4) for i in range(0, n, n // 4)]

    def decode(cut):
        i, m = cut
        return decoder.decode(values.slice(i, m), writer_ids.slice(i, m), body_offsets.slice(i, m))
    alone = [decode(c) for c in cuts]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(rounds):
            yield from zip(alone, pool.map(decode, cuts))
