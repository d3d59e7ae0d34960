"""kafkarec._core.encode_varlong: the one zig-zag varlong encoder (Kafka's ByteUtils.writeVarlong,
Avro's long), used by Avro defaults and Confluent's Protobuf message indexes."""
import pytest
from hypothesis import given, strategies as st

import kafkarec
from kafkarec._core import encode_varlong


def _spec(v: int) -> bytes:
    """The encoding as the format defines it: zig-zag, then base-128 groups, low first."""
    u = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        out.append((u & 0x7F) | (0x80 if u >= 0x80 else 0))
        u >>= 7
        if not u:
            return bytes(out)


@pytest.mark.parametrize("v, want", [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"),
                                     (2**63 - 1, b"\xfe" + b"\xff" * 8 + b"\x01"),
                                     (-2**63, b"\xff" * 9 + b"\x01")])
def test_known_encodings(v, want):
    assert encode_varlong(v) == want


@given(st.integers(-2**63, 2**63 - 1))
def test_the_encoding_and_the_core_reads_it_back(v):
    data = encode_varlong(v)
    assert data == _spec(v)
    # a second record whose timestamp delta (a varlong) is v: the decoder reads it back
    if -2**62 < v < 2**62:
        batch = kafkarec.build_batch([b"x", b"y"], timestamps=[2**62, 2**62 + v])
        records = [r for b in kafkarec.iter_batches(batch) for r in b]
        assert records[1].timestamp == 2**62 + v


def test_out_of_range_is_refused():
    with pytest.raises(OverflowError):
        encode_varlong(2**63)
