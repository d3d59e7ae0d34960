"""kafkarec.log.committed: what a read_committed consumer sees of a partition on any storage,
judged over the whole log (transactions that cross segments, the LSO), and
storage.without_spans, which leaves those batches out of what is decoded."""
import os

import kafkarec
from support.oracles import reference as R
from kafkarec.log import committed, layout, storage
from kafkarec.log.storage import Piece, without_spans

T = 1_700_000_000_000
ATTR_TXN = 0x10


def _data(base_offset, n, *, producer_id=-1, transactional=False, corrupt=False):
    records = b"".join(R.encode_record(i, i, b"k%d" % i, b"v%d" % (base_offset + i)) for i in range(n))
    batch = R.v2_batch(records, record_count=n, last_offset_delta=n - 1, base_offset=base_offset,
                       base_timestamp=T, max_timestamp=T + n - 1, producer_id=producer_id,
                       producer_epoch=0 if producer_id >= 0 else -1,
                       base_sequence=0 if producer_id >= 0 else -1,
                       attributes=ATTR_TXN if transactional else 0)
    if corrupt:
        batch = batch[:-1] + bytes([batch[-1] ^ 1])      # the CRC no longer matches
    return batch


def _marker(offset, producer_id, abort):
    return R.control_record_batch(R.control_key(0 if abort else 1), R.end_txn_value(5),
                                  timestamp=T, base_offset=offset, producer_id=producer_id,
                                  producer_epoch=0, attributes=R.ATTR_CONTROL | ATTR_TXN)


def _partition(tmp_path):
    """Two segments: producer 1's transaction aborts in the second one, producer 2's commits
    there, producer 3's is still open at the end (the LSO is its first offset), and a
    CRC-corrupt transactional batch of producer 4 opens nothing."""
    seg0 = [_data(0, 10, producer_id=1, transactional=True),          # aborted (marker in seg1)
            _data(10, 5),                                               # plain
            _data(15, 5, producer_id=2, transactional=True),           # committed
            _data(20, 3, producer_id=4, transactional=True, corrupt=True)]   # opens nothing
    seg1 = [_marker(23, 1, abort=True),
            _data(24, 5, producer_id=2, transactional=True),
            _marker(29, 2, abort=False),
            _data(30, 3, producer_id=3, transactional=True),           # open at the end: LSO 30
            _data(33, 5)]                                               # past the LSO
    part = tmp_path / "logs" / "payments-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"".join(seg0))
    (part / "00000000000000000023.log").write_bytes(b"".join(seg1))
    return str(tmp_path / "logs"), b"".join(seg0), b"".join(seg1)


def _committed_offsets(root):
    st, path = storage.resolve(root)
    lay = layout.scan(st, path)
    (part,) = lay.partitions
    spans = committed.read_committed_spans(st, part)
    offsets = []
    for seg in part.segments:
        with st.open(seg.path, seg.size) as f:
            data = f.read_at(0, seg.size)
        for piece in without_spans(Piece(0, memoryview(data)), spans.get(seg.path, [])):
            # the corrupt batch is not left out by read_committed: the reader reports it
            errors = []
            for rb in kafkarec.iter_arrow(piece.data, errors="skip", error_sink=errors):
                offsets += rb.column(rb.schema.get_field_index("offset")).to_pylist()
            assert all(e["error"] == "ChecksumError" for e in errors), errors
    return spans, part, offsets


def test_read_committed_spans_cross_segments_and_lso(tmp_path):
    root, seg0, seg1 = _partition(tmp_path)
    spans, part, offsets = _committed_offsets(root)
    # aborted: producer 1's batch (seg0, first); past the LSO: the last two batches of seg1
    seg0_path, seg1_path = (s.path for s in part.segments)
    sizes0 = [len(b) for b in R.split_batches(seg0)]
    sizes1 = [len(b) for b in R.split_batches(seg1)]
    assert spans[seg0_path] == [(0, sizes0[0])]
    lso_at = sum(sizes1[:3])
    assert spans[seg1_path] == [(lso_at, sizes1[3]), (lso_at + sizes1[3], sizes1[4])]
    # what is left: the plain batch and the committed transaction (the corrupt batch fails its CRC)
    assert offsets == list(range(10, 20)) + list(range(24, 29))
    # the same as the core's own read_committed over the concatenated log
    want = kafkarec.to_arrow(seg0[:sum(sizes0[:3])] + seg1, read_committed=True)
    assert want.column("offset").to_pylist() == offsets


def test_read_committed_spans_equal_local_walk(tmp_path):
    """The local slices' walk (the Spark planner's) and the storage walk give the same spans."""
    from kafkarec.log import directory, local
    root, _, _ = _partition(tmp_path)
    spans, _, _ = _committed_offsets(root)
    segments, _ = directory.find_segment_files([root])
    walked = local.aborted_batches(segments)
    assert {os.path.abspath(p): v for p, v in walked.items()} == \
        {os.path.abspath(p): v for p, v in spans.items()}


def test_without_spans():
    data = memoryview(bytes(range(50)))
    piece = Piece(100, data, True)
    parts = list(without_spans(piece, [(10, 5), (90, 15), (120, 5), (140, 20)]))
    assert [(p.position, bytes(p.data), p.stopped) for p in parts] == [
        (105, bytes(range(5, 20)), False), (125, bytes(range(25, 40)), False)]
    parts = list(without_spans(piece, [(100, 10), (130, 5)]))
    assert [(p.position, len(p.data), p.stopped) for p in parts] == [(110, 20, False), (135, 15, True)]
    assert [(p.position, len(p.data)) for p in without_spans(piece, [])] == [(100, 50)]
    assert list(without_spans(piece, [(0, 1000)])) == []
    assert parts[0].data.obj is data.obj                          # views, not copies
