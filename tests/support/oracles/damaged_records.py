"""v2 batches built field by field and then damaged, for the tests that hold a record walk (the
meta-only walker, meta_walk.h; the walk into views of copied bytes, view_walk.h) to the record
scanner: records of every shape the scanner accepts or refuses (negative lengths, headers, lengths
running past the record or the batch, leftovers, miscounted batches), uncompressed and
gzip-compressed, with create or log-append times."""
from __future__ import annotations

import gzip

from hypothesis import strategies as st

from support.oracles.reference import encode_record, v2_batch, varint

ATTR_GZIP = 1
ATTR_LOG_APPEND_TIME = 0x08
BASE_TS = 1_700_000_000_000


def batch_of(section: bytes, *, count: int, last_delta: int, codec: int = 0, log_append: bool = False,
             base_offset: int = 100) -> bytes:
    """A v2 batch around a records section (gzip-compressed when ``codec`` is 1)."""
    attributes = (ATTR_LOG_APPEND_TIME if log_append else 0) | codec
    payload = gzip.compress(section, mtime=0) if codec == ATTR_GZIP else section
    return v2_batch(payload, record_count=count, last_offset_delta=last_delta, base_offset=base_offset,
                    attributes=attributes, base_timestamp=BASE_TS, max_timestamp=BASE_TS + 77)


def raw_record(body: bytes) -> bytes:
    return varint(len(body)) + body


#: a key, value or header value: null, short (inline in a view up to 12 bytes), or long enough
#: for a two-byte length and a copy past 256 bytes
lengths = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=60, max_size=300))
headers = st.lists(st.tuples(st.one_of(st.text(max_size=6), st.binary(max_size=6)),
                             st.one_of(st.none(), st.binary(max_size=40))), max_size=3)


@st.composite
def damaged_batches(draw, max_records: int = 12):
    """A log of one to three v2 batches, the middle one's records section possibly damaged."""
    n = draw(st.integers(0, max_records))
    deltas = sorted(draw(st.lists(st.integers(0, 300), min_size=n, max_size=n, unique=True)))
    records = [encode_record(d, draw(st.integers(-3000, 3000)), draw(lengths), draw(lengths), draw(headers),
                             draw(st.sampled_from([0, 0, 0, 5])))
               for d in deltas]
    section = bytearray(b"".join(records))
    for _ in range(draw(st.integers(0, 3))):
        if not section:
            break
        i = draw(st.integers(0, len(section) - 1))
        how = draw(st.sampled_from(["set", "flip", "cut", "insert", "length"]))
        if how == "set":
            section[i] = draw(st.integers(0, 255))
        elif how == "flip":
            section[i] ^= 1 << draw(st.integers(0, 7))
        elif how == "cut":
            del section[i:i + draw(st.integers(1, 4))]
        elif how == "insert":
            section[i:i] = draw(st.binary(min_size=1, max_size=3))
        else:       # a length varint replaced by another (negative, huge, 5 bytes long)
            section[i:i + 1] = varint(draw(st.sampled_from([-1, -2, -7, 0, 1, 127, 128, 2**31 - 1, -2**31])))
    count = n + draw(st.sampled_from([0, 0, 0, -1, 1]))
    middle = batch_of(bytes(section), count=count, last_delta=max(deltas, default=0),
                      codec=draw(st.sampled_from([0, ATTR_GZIP])), log_append=draw(st.booleans()))
    before = batch_of(encode_record(0, 1, b"k", b"v"), count=1, last_delta=0, base_offset=10)
    after = batch_of(encode_record(0, 2, None, b"w", [("h", None)]), count=1, last_delta=0,
                     base_offset=1000)
    return (before if draw(st.booleans()) else b"") + middle + (after if draw(st.booleans()) else b"")
