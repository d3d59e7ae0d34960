"""to_arrow takes errors= and error_sink= as iter_arrow does, and passes them through."""
from __future__ import annotations

import pytest

import kafkarec
from support.oracles import kafka_java as J

TS = 1_700_000_000_000


def _data() -> tuple[bytes, list]:
    """Three batches written by Kafka's writer; the middle one's CRC broken."""
    spec = {"batches": [{"base_offset": i * 10, "codec": codec,
                         "gen": {"count": 3, "key": "k-%d", "value": {"random": 20, "seed": i},
                                 "ts_start": TS}}
                        for i, codec in enumerate(["none", "gzip", "zstd"])]}
    data = bytearray(J.write(spec))
    batches = list(kafkarec.iter_batches(data))
    middle = batches[1]
    data[middle.position + middle.size_in_bytes - 1] ^= 0xFF
    return bytes(data), batches


def test_to_arrow_skips_a_bad_batch_like_iter_arrow():
    data, batches = _data()
    with pytest.raises(kafkarec.ChecksumError):
        kafkarec.to_arrow(data)
    sink, stream_sink = [], []
    table = kafkarec.to_arrow(data, topic="t", partition=3, errors="skip", error_sink=sink)
    streamed = list(kafkarec.iter_arrow(data, topic="t", partition=3, errors="skip",
                                        error_sink=stream_sink))
    assert table.column("offset").to_pylist() == [0, 1, 2, 20, 21, 22]
    assert table.to_pylist() == [row for rb in streamed for row in rb.to_pylist()]
    assert sink == stream_sink
    (problem,) = sink
    assert problem["error"] == "ChecksumError"
    assert problem["position"] == batches[1].position
    assert problem["base_offset"] == 10
    assert problem["message"].startswith(f"at byte {batches[1].position}: ")


def test_to_arrow_error_arguments_are_checked():
    data, _ = _data()
    with pytest.raises(ValueError, match="error_sink"):
        kafkarec.to_arrow(data, errors="skip")
    with pytest.raises(ValueError, match="errors must be"):
        kafkarec.to_arrow(data, errors="ignore", error_sink=[])
    # errors="raise" with a sink raises and leaves the sink alone.
    sink = []
    with pytest.raises(kafkarec.ChecksumError):
        kafkarec.to_arrow(data, errors="raise", error_sink=sink)
    assert sink == []
