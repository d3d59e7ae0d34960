"""Findings of the instrumented fuzzing campaign (`bash scripts/fuzz.sh --instrumented
TARGET SECONDS`), each with its reproducer under tests/fuzz/reproducers/ or built here."""
import os

import pytest

import kafkarec
from kafkarec import Compression, LegacyBatchBuilder

from paths import ROOT

REPRODUCERS = os.path.join(ROOT, "tests", "fuzz", "reproducers")


def _legacy_fields_consistent(data: bytes) -> int:
    """Read every legacy batch's offsets; `last_offset_delta` must be absent (None: Kafka's
    legacy batches have no such field) or exactly last_offset - base_offset, never a value
    truncated to 32 bits or wrapped.  A typed error is allowed; returns batches checked."""
    checked = 0
    try:
        for b in kafkarec.iter_batches(data):
            base, last, delta = b.base_offset, b.last_offset, b.last_offset_delta
            assert delta is None or delta == last - base, (base, last, delta)
            checked += 1
    except kafkarec.KafkaRecError:
        pass
    return checked


def test_legacy_wrapper_offset_span_beyond_int32_is_not_truncated():
    # Found by `fuzz.sh --instrumented batches` (UBSan, -fno-wrapv): legacy_resolve computes
    # last_offset_delta = <int32_t>(wrapper_offset - base_offset).  A magic-0 wrapper takes
    # its inner offsets as they are (Kafka's consumer does too), so the wrapper offset can
    # be anywhere: here 2^40 with inner offset 0, valid CRCs.  Kafka's reader (tools/kafka-java
    # `decode`) accepts it: base_offset 0, last_offset 2^40, record offset 0, no
    # lastOffsetDelta for a legacy batch.  kafkarec said last_offset_delta == 0.
    builder = LegacyBatchBuilder(magic=0, compression=Compression.GZIP, base_offset=0)
    builder.append(b"v")
    data = bytearray(builder.build())
    data[0:8] = (1 << 40).to_bytes(8, "big")   # the offset is outside the v0 CRC
    data = bytes(data)
    (batch,) = list(kafkarec.iter_batches(data))
    assert batch.base_offset == 0 and batch.last_offset == 1 << 40
    assert [r.offset for r in batch] == [0]
    assert _legacy_fields_consistent(data) == 1


def test_legacy_wrapper_offset_span_overflowing_int64():
    # The fuzzer's own input: a magic-0 snappy wrapper at offset 504403158265510660 whose
    # inner message has offset -8897841259083430909; wrapper - base overflows int64 (UBSan:
    # "signed integer overflow ... in legacy_resolve"; with CPython's -fwrapv it wrapped and
    # was truncated: last_offset_delta == 2071705345).
    with open(os.path.join(REPRODUCERS, "batches-legacy-offset-span.bin"), "rb") as fh:
        data = fh.read()
    assert data.hex().startswith("0700000000003b040000005ad05e942c0002")
    assert _legacy_fields_consistent(data) == 1



def test_control_batch_left_out_of_arrow_is_checked_not_read():
    # Found by `fuzz.sh arrow` (to_arrow vs a record-by-record model): a v2 control batch
    # with a valid CRC, 0 records and codec id 7.  Reading its records fails as in Kafka's
    # record classes (tools/kafka-java `decode`: "Unknown compression type id: 7" at byte
    # 0).  Kafka's consumer (CompletedFetch) checks a control batch's CRC and skips it
    # without reading it, and so does to_arrow unless include_control: the model was wrong.
    with open(os.path.join(REPRODUCERS, "arrow-control-batch-unknown-codec.bin"), "rb") as f:
        data = f.read()
    (batch,) = list(kafkarec.iter_batches(data))
    assert batch.is_control and batch.crc_valid
    for read in (lambda: list(batch), lambda: kafkarec.to_arrow(data, include_control=True)):
        try:
            read()
        except kafkarec.UnsupportedCodecError as exc:
            assert exc.position == 0
            assert "Unknown compression type id: 7" in str(exc)
        else:
            raise AssertionError("the records of a control batch with codec id 7 were read")
    assert kafkarec.to_arrow(data).num_rows == 0
    # A control batch left out still has its CRC checked.
    broken = bytearray(data)
    broken[-1] ^= 1
    try:
        kafkarec.to_arrow(bytes(broken))
    except kafkarec.ChecksumError as exc:
        assert exc.position == 0
    else:
        raise AssertionError("a control batch with a broken CRC was skipped unchecked")


def test_convert_of_a_batch_at_offset_int64_min():
    # Found by `fuzz.sh --instrumented convert` (fuzz_convert.py input): a v2 batch with base
    # offset -2^63 (Kafka's reader takes any long), converted to magic 0/1.  The legacy
    # builder kept base_offset - 1 as "no message yet", which leaves int64: a raw
    # OverflowError escaped convert().  The builders now know "no record yet" by their
    # count, take any 64-bit base offset, and refuse what leaves int64 with EncodeError.
    # Replayed through the harness's own code, as libFuzzer replays a crash file.
    pytest.importorskip("atheris")
    import subprocess
    import sys
    fuzz_dir = os.path.join(ROOT, "fuzz")
    repro = os.path.join(REPRODUCERS, "convert-base-offset-int64-min.bin")
    run = subprocess.run([sys.executable, os.path.join(fuzz_dir, "fuzz_convert.py"), repro], cwd=fuzz_dir,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert f"Running: {repro}" in run.stderr, run.stderr[-3000:]


def _roundtrip(builder, n=2, **append):
    for _ in range(n):
        builder.append(b"v", **append)
    return [r.offset for b in kafkarec.iter_batches(builder.build()) for r in b]


def test_builders_at_the_ends_of_int64():
    low, high = -2**63, 2**63 - 1
    from kafkarec import EncodeError, RecordBatchBuilder
    import pytest
    assert _roundtrip(RecordBatchBuilder(base_offset=low), timestamp=1) == [low, low + 1]
    assert _roundtrip(LegacyBatchBuilder(magic=1, base_offset=low), timestamp=1) == [low, low + 1]
    assert _roundtrip(LegacyBatchBuilder(magic=0, base_offset=low)) == [low, low + 1]
    assert _roundtrip(RecordBatchBuilder(base_offset=high), n=1, timestamp=1) == [high]
    for b, ts in ((RecordBatchBuilder(base_offset=high), {"timestamp": 1}),
                  (LegacyBatchBuilder(magic=1, base_offset=high), {"timestamp": 1}),
                  (LegacyBatchBuilder(magic=0, base_offset=high), {})):
        b.append(b"v", **ts)
        with pytest.raises(EncodeError, match="no offset follows"):
            b.append(b"w", **ts)
    with pytest.raises(EncodeError, match="run past"):
        kafkarec.build_batch([b"a", b"b"], base_offset=high)
    assert [r.offset for b in kafkarec.iter_batches(kafkarec.build_batch([b"a"], base_offset=high))
            for r in b] == [high]
    for bad in (2**63, -2**63 - 1):
        with pytest.raises(EncodeError, match="does not fit a signed 64-bit"):
            RecordBatchBuilder(base_offset=bad)
        with pytest.raises(EncodeError, match="does not fit a signed 64-bit"):
            LegacyBatchBuilder(magic=1, base_offset=bad)
        with pytest.raises(EncodeError, match="does not fit a signed 64-bit"):
            RecordBatchBuilder().append(b"v", timestamp=bad)
        with pytest.raises(EncodeError, match="does not fit a signed 64-bit"):
            RecordBatchBuilder().append(b"v", timestamp=1, offset=bad)
    # a relative inner offset (magic 1, compressed) must fit too
    b = LegacyBatchBuilder(magic=1, compression=Compression.GZIP, base_offset=-5, wrapper_offset="zero")
    with pytest.raises(EncodeError, match="relative inner offset"):
        b.append(b"x", timestamp=1, offset=high)
