"""Findings of the instrumented fuzzing campaign (`bash scripts/fuzz.sh --instrumented
TARGET SECONDS`), each with its reproducer under tests/fuzz/reproducers/ or built here."""
import os

import pytest

import kafkarec
from kafkarec import Compression, LegacyBatchBuilder

from support.paths import ROOT

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


# --- tiered-storage plugin objects (kafkarec.log.rsm), issue 40: sizes a manifest or a chunk
# claims are bounded before anything is allocated for them -------------------------------------

def _rsm_reproducer(name: str) -> bytes:
    with open(os.path.join(REPRODUCERS, name), "rb") as fh:
        return fh.read()


def _peak_bytes(fn):
    """``(result or the RemoteObjectError raised, peak bytes Python allocated meanwhile)``."""
    import tracemalloc
    tracemalloc.start()
    try:
        try:
            result = fn()
        except kafkarec.RemoteObjectError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _manifest(chunk_index: str, compression: bool = False) -> bytes:
    return (b'{"version":"1","chunkIndex":{' + chunk_index.encode() + b'},"compression":'
            + (b"true" if compression else b"false") + b"}")


def test_a_fixed_chunk_index_claiming_2e40_chunks_is_not_listed():
    # Found by fuzzing (issue 40): a ~150-byte manifest of 1-byte chunks in 2^40 bytes made
    # parse_manifest build a list entry per claimed chunk: MemoryError (>10 s and gigabytes at
    # ~10^8).  The plugin's sizes are Java ints; within them the positions are computed.
    from kafkarec.log import rsm
    with pytest.raises(kafkarec.RemoteObjectError, match="originalFileSize is 1099511627776"):
        rsm.parse_manifest(_rsm_reproducer("rsm-manifest-fixed-2e40-chunks.json"), "m")
    text = _manifest('"type":"fixed","originalChunkSize":1,"originalFileSize":2147483647,'
                     '"transformedChunkSize":1,"finalTransformedChunkSize":1')
    m, peak = _peak_bytes(lambda: rsm.parse_manifest(text, "m"))
    assert peak < 1 << 20, peak
    ci = m.chunk_index
    assert ci.count == 2**31 - 1 and ci.stored[-1] == 2**31 - 1 and ci.stored[12345] == 12345
    assert list(ci.chunks(10, 13)) == [10, 11, 12]


def test_a_fixed_chunk_index_past_a_small_object_names_the_first_missing_chunk(tmp_path):
    from kafkarec.log import rsm, storage
    (tmp_path / "seg.log").write_bytes(b"x" * 10)
    text = _manifest('"type":"fixed","originalChunkSize":4,"originalFileSize":2147483647,'
                     '"transformedChunkSize":4,"finalTransformedChunkSize":3')
    st, _ = storage.resolve("/")
    err, peak = _peak_bytes(lambda: rsm.SegmentObject(st, str(tmp_path / "seg.log"), rsm.parse_manifest(text, "m")))
    assert isinstance(err, kafkarec.RemoteObjectError) and err.chunk == 2 and peak < 1 << 20, (err, peak)
    assert "covers 2147483647 bytes, the object holds 10" in str(err)


def test_a_variable_chunk_index_claiming_2e61_chunks():
    # Found by fuzzing (issue 40): the claimed count made the chunk-size code's max_output_size
    # pass 2^63 (raw OverflowError); at 2^36 chunks a 2^38-byte buffer for a 5-byte code.  Now
    # the sizes are Java ints and the code is read up to the plugin's own 10 MiB, a piece at a
    # time when its frame does not declare its size.
    from kafkarec.log import rsm
    with pytest.raises(kafkarec.RemoteObjectError, match="originalFileSize is 2305843009213693952"):
        rsm.parse_manifest(_rsm_reproducer("rsm-manifest-variable-2e61-chunks.json"), "m")
    code = _rsm_reproducer("rsm-manifest-variable-2e61-chunks.json").split(b'"transformedChunks":"')[1].split(b'"')[0]
    text = _manifest('"type":"variable","originalChunkSize":1,"originalFileSize":2147483647,'
                     f'"transformedChunks":"{code.decode()}"', compression=True)
    err, peak = _peak_bytes(lambda: rsm.parse_manifest(text, "m"))
    assert isinstance(err, kafkarec.RemoteObjectError) and peak < 1 << 20, (err, peak)
    assert "1 chunk sizes for 2147483647 chunks" in str(err)


@pytest.mark.parametrize("declared", [False, True])
def test_a_chunk_size_code_that_decompresses_past_the_plugins_limit(declared):
    import base64
    import zstandard
    from kafkarec.log import rsm
    limit = 10 << 20                     # the plugin's (TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE)
    bomb = zstandard.ZstdCompressor(write_content_size=declared).compress(bytes(limit + 1))
    text = _manifest('"type":"variable","originalChunkSize":1,"originalFileSize":2147483647,'
                     f'"transformedChunks":"{base64.b64encode(bomb).decode()}"', compression=True)
    err, peak = _peak_bytes(lambda: rsm.parse_manifest(text, "m"))
    assert isinstance(err, kafkarec.RemoteObjectError) and "more than the 10485760" in str(err), err
    assert peak < (limit if declared else 2 * limit), peak


def test_a_compressed_chunk_whose_frame_declares_2e40_bytes(tmp_path):
    # Found by fuzzing (issue 40): python-zstandard allocates a frame's declared content size
    # whatever max_output_size says: a 17-byte chunk declaring 2^40 bytes was a raw MemoryError
    # (smaller claims: ~1.5 GiB per chunk, times the read-ahead).  The header is read first.
    import zstandard
    from kafkarec.log import rsm, storage
    frame = _rsm_reproducer("rsm-chunk-zstd-declares-2e40.bin")
    assert zstandard.get_frame_parameters(frame).content_size == 1 << 40
    (tmp_path / "seg.log").write_bytes(frame * 8)
    stored = tuple(range(0, 8 * len(frame) + 1, len(frame)))
    manifest = rsm.SegmentManifest(rsm.ChunkIndex(4096, 8 * 4096, stored), {}, True, None, {})
    st, _ = storage.resolve("/")

    def read():
        with rsm.SegmentObject(st, str(tmp_path / "seg.log"), manifest) as f:
            return f.read_at(0, 10)
    err, peak = _peak_bytes(read)
    assert isinstance(err, kafkarec.RemoteObjectError) and err.chunk == 0, err
    assert "the zstd frame declares 1099511627776 bytes, more than the 4096 it may hold" in str(err)
    assert peak < 1 << 20, peak
    # the same frame as a manifest's chunk-size code
    import base64
    text = _manifest('"type":"variable","originalChunkSize":4096,"originalFileSize":4096,'
                     f'"transformedChunks":"{base64.b64encode(frame).decode()}"', compression=True)
    with pytest.raises(kafkarec.RemoteObjectError, match="declares 1099511627776 bytes"):
        rsm.parse_manifest(text, "m")


def test_compressed_chunks_larger_than_the_decompression_limit_are_refused(tmp_path):
    from kafkarec.log import rsm, storage
    (tmp_path / "seg.log").write_bytes(b"x" * 10)
    chunk = kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES + 1
    manifest = rsm.SegmentManifest(rsm.ChunkIndex(chunk, chunk, (0, 10)), {}, True, None, {})
    st, _ = storage.resolve("/")
    with pytest.raises(kafkarec.RemoteObjectError, match="compressed chunks of 67108865 original bytes, more than "
                                                         "the 67108864 kafkarec decompresses at once"):
        rsm.SegmentObject(st, str(tmp_path / "seg.log"), manifest)


def test_a_manifest_nested_deeper_than_the_recursion_limit(tmp_path):
    # Found by fuzzing (issue 40): RecursionError, which read_manifests did not catch, so one
    # such object ended the whole scan of a tiered root.
    from kafkarec.log import rsm, storage
    deep = b'{"version":"1","chunkIndex":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(kafkarec.RemoteObjectError, match="nested deeper than Python's recursion limit"):
        rsm.parse_manifest(deep, "m")
    (tmp_path / "deep.rsm-manifest").write_bytes(deep)
    (tmp_path / "ok.rsm-manifest").write_bytes(_manifest(
        '"type":"fixed","originalChunkSize":4,"originalFileSize":5,"transformedChunkSize":4,'
        '"finalTransformedChunkSize":1'))
    st, _ = storage.resolve("/")
    found = rsm.read_manifests(st, [(str(tmp_path / name), None) for name in ("deep.rsm-manifest", "ok.rsm-manifest")])
    assert isinstance(found[str(tmp_path / "deep.rsm-manifest")], kafkarec.RemoteObjectError)
    assert found[str(tmp_path / "ok.rsm-manifest")].chunk_index.count == 2


def _damaged_base_offset_log(root) -> None:
    """A partition of three segments: records 0..6; at offset 7 a transaction's batch of producer
    7 that no marker ends, its base offset (outside the CRC) damaged to 2^56 + 7; a record at 20."""
    folder = os.path.join(root, "t-0")
    os.makedirs(folder)
    b = kafkarec.RecordBatchBuilder(base_offset=7, producer_id=7, producer_epoch=0, base_sequence=0,
                                    is_transactional=True)
    b.append(b"open")
    txn = bytearray(b.build())
    txn[0:8] = ((1 << 56) + 7).to_bytes(8, "big")
    for base, data in ((0, kafkarec.build_batch([b"v%d" % i for i in range(7)])), (7, bytes(txn)),
                       (20, kafkarec.build_batch([b"late"], base_offset=20))):
        with open(os.path.join(folder, "%020d.log" % base), "wb") as fh:
            fh.write(data)


def test_read_committed_judges_a_batch_past_the_next_segments_base_as_the_read_does(tmp_path):
    # fuzz_census (fuzz/findings/census-bounded-read-committed): a read_committed read of such a
    # log left offset 20 out unbounded (a local read: every batch the segment frames is judged)
    # but returned it with Bounds.of(partitions=[0]) (a listed read: the transaction rule's walk
    # stopped the segment at the next one's base, as it stops a later copy's, so the open
    # transaction was never seen -- while the read reads on past it and reports the batch).  The
    # batch's producer and transaction are under its CRC: the transaction is open, a
    # read_committed consumer sees nothing from it on (Kafka's consumer stops at the last stable
    # offset, and past it would step over 20 to the damaged offsets).  One rule now:
    # SegmentOffsets.walk_until, this log's own next segment ends no walk.
    from kafkarec.census import census
    from kafkarec.scan import Bounds, LogScan
    pytest.importorskip("pyarrow")
    root = str(tmp_path / "logs")
    _damaged_base_offset_log(root)

    def read(isolation_level, bounds=None):
        t = LogScan(root, mode="PERMISSIVE", isolation_level=isolation_level,
                    **({} if bounds is None else {"bounds": bounds})).to_table()
        return [(o, e) for o, e in zip(t.column("offset").to_pylist(), t.column("_corrupt_record").to_pylist())]

    committed = [(o, None) for o in range(7)]
    assert read("read_committed") == committed
    assert read("read_committed", Bounds.of(partitions=[0])) == committed
    everything = read("read_uncommitted")
    assert [o for o, e in everything] == list(range(7)) + [None, 20]
    assert "OffsetOrderError" in everything[7][1] and "at or past the next segment's base offset 20" in everything[7][1]
    assert read("read_uncommitted", Bounds.of(partitions=[0])) == everything
    part = census(root, partitioner=False)["partitions"][0]
    assert (part["records"], part["last_offset"], part["read_uncommitted_adds"]["records"]) == (7, 6, 1)
