"""kafkarec.log.storage and kafkarec.log.layout: URIs, one listing, ranged reads in bounded
pieces, tiered-storage layouts, local+remote copies read once; then the same log directory
through a real S3 server (SeaweedFS) equal to the local read row by row."""
from __future__ import annotations

import glob
import os
import shutil

import pytest

import kafkarec
from kafkarec.log import layout, storage
from kafkarec.log.segment import Segment
from support.logs.logdir import PartitionWriter, build_log_dir, sample_records, v2_batch


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("logs"))
    build_log_dir(root)
    return root


def _segment_batches(path, start=0, end=None):
    with Segment(path) as seg:
        return [(b.position, b.base_offset, b.size_in_bytes) for b in seg.batches(start, end)]


def _remote_batches(st, path, start=0, end=None, chunk=storage.DEFAULT_CHUNK):
    with st.open(path) as f:
        return [(pos, b.base_offset, b.size_in_bytes)
                for pos, b in storage.iter_remote_batches(f, start, end, chunk_size=chunk)]


class Counting:
    def __enter__(self):
        self.stats = storage.ReadStats()
        storage.RangeFile.stats = self.stats
        return self.stats

    def __exit__(self, *exc):
        storage.RangeFile.stats = None


# -- resolving ---------------------------------------------------------------------------

def test_resolve_local_forms(tmp_path):
    import pyarrow.fs as pafs
    for uri in (str(tmp_path), f"file://{tmp_path}", f"file:{tmp_path}"):
        st, path = storage.resolve(uri)
        assert isinstance(st.fs, pafs.LocalFileSystem) and path == str(tmp_path)
        assert st.is_local


def test_resolve_s3_from_environment(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "b")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    st, path = storage.resolve("s3://bucket/some/prefix/")
    assert path == "bucket/some/prefix" and st.uri(path) == "s3://bucket/some/prefix"
    conf = st.fs.__reduce__()[1][0]           # what the file system carries (and pickles)
    assert conf["endpoint_override"] == "127.0.0.1:1" and conf["scheme"] == "http"
    assert st.fs.region == "us-east-1"
    # explicit options win over the environment
    st, _ = storage.resolve("s3://bucket/x", {"endpoint": "https://store.example:9000",
                                              "Region": "eu-west-3"})
    conf = st.fs.__reduce__()[1][0]
    assert conf["endpoint_override"] == "store.example:9000" and conf["scheme"] == "https"
    assert st.fs.region == "eu-west-3"
    with pytest.raises(storage.StorageError, match="go together"):
        storage.resolve("s3://bucket/x", {"accessKey": "only-this"})


def test_storage_options_names():
    got = storage.storage_options({"accessKey": "A", "secret_key": "S", "s3.endpoint": "http://h:1",
                                   "mode": "FAILFAST", "region": ""})
    assert got == {"access_key": "A", "secret_key": "S", "endpoint": "http://h:1"}


# -- pieces: ranged reads of whole batches ----------------------------------------------------

@pytest.mark.parametrize("chunk", [1, 61, 700, 4096, 1 << 20])
def test_pieces_frame_like_segment(logroot, chunk):
    st, _ = storage.resolve(logroot)
    for path in sorted(glob.glob(os.path.join(logroot, "*", "*.log"))):
        assert _remote_batches(st, path, chunk=chunk) == _segment_batches(path), path
        with st.open(path) as f, Counting() as stats:
            pieces = list(storage.iter_pieces(f, chunk_size=chunk))
        assert b"".join(p.data for p in pieces) == open(path, "rb").read()
        assert stats.bytes == os.path.getsize(path)        # every byte read once
        assert all(len(p.data) <= max(chunk, max(s for *_, s in _segment_batches(path)))
                   for p in pieces)                        # bounded by a chunk or one batch


def test_pieces_range_reads_batches_starting_inside(logroot):
    path = sorted(glob.glob(os.path.join(logroot, "web-clicks-0", "*.log")))[0]
    spans = _segment_batches(path)
    st, _ = storage.resolve(logroot)
    start = spans[2][0]
    end = spans[5][0] + 1                       # one byte into the 6th batch: it is read whole
    want = [s for s in spans if start <= s[0] < end]
    with Counting() as stats:
        got = _remote_batches(st, path, start, end, chunk=64)
    assert got == want
    last = want[-1]
    assert stats.bytes == last[0] + last[2] - start  # nothing past the last batch asked for


def test_pieces_cut_off_tail_and_framing_error(tmp_path):
    body = b"".join(kafkarec.build_batch([b"v%d" % i] * 3, offsets=[3 * i, 3 * i + 1, 3 * i + 2])
                    for i in range(5))
    spans = [(b.position, b.size_in_bytes) for b in kafkarec.iter_batches(body)]
    cut = tmp_path / "cut.log"
    cut.write_bytes(body[:spans[-1][0] + 30])
    st, _ = storage.resolve(str(tmp_path))
    with st.open(str(cut)) as f:
        pieces = list(storage.iter_pieces(f, chunk_size=50))
    assert pieces[-1].stopped and pieces[-1].position == spans[-1][0] and len(pieces[-1].data) == 30
    assert _remote_batches(st, str(cut), chunk=50) == _segment_batches(str(cut))
    bad = bytearray(body)
    bad[spans[2][0] + 8:spans[2][0] + 12] = (3).to_bytes(4, "big")     # size 3 < 14
    framing = tmp_path / "framing.log"
    framing.write_bytes(bytes(bad))
    with st.open(str(framing)) as f:
        pieces = list(storage.iter_pieces(f, chunk_size=1 << 20))
    assert pieces[-1].stopped and pieces[-1].position + 0 <= spans[2][0]
    with pytest.raises(kafkarec.CorruptBatchError) as err:
        _remote_batches(st, str(framing))
    assert err.value.position == spans[2][0]


# -- layouts --------------------------------------------------------------------------------

TOPIC_ID = "MWJ6FHTfRYy67jzwZdeqSQ"
SEG_IDS = ["oAtiIQ95REujbuzNd_lkLQ", "tvHCaSDsQZWsjr5rbtCjxA", "BFyXlC8ySMm-Uzxw5lZSMg", "5fEBmixCR5-dMntYSLIr1g"]


def _tiered_copy(src_dir, dest_dir, *, padded=True, only=None):
    """Copy a partition folder's segments (and side files) under tiered-storage names."""
    os.makedirs(dest_dir, exist_ok=True)
    bases = sorted({int(os.path.basename(p).split(".")[0]) for p in glob.glob(os.path.join(src_dir, "*.log"))})
    for i, base in enumerate(bases):
        if only is not None and i not in only:
            continue
        for suffix in (".log", ".index", ".timeindex"):
            src = os.path.join(src_dir, f"{base:020d}{suffix}")
            name = f"{base:020d}" if padded else str(base)
            seg_id = SEG_IDS[i % len(SEG_IDS)][:-2] + f"{i:02d}"
            shutil.copy(src, os.path.join(dest_dir, f"{name}-{seg_id}{suffix}"))
    return bases


def test_layout_names():
    assert layout.parse_segment_name("00000000000000000042.log") == (42, None, "log")
    assert layout.parse_segment_name(f"00000000000000000042-{SEG_IDS[0]}.timeindex") == (42, SEG_IDS[0], "timeindex")
    assert layout.parse_segment_name(f"42-{SEG_IDS[2]}.index") == (42, SEG_IDS[2], "index")
    assert layout.parse_segment_name("00000000000000000042.snapshot") is None
    assert layout.parse_segment_name("leader-epoch-checkpoint") is None
    assert layout.parse_partition_folder("r/web-clicks-3") == ("web-clicks", 3, None)
    assert layout.parse_partition_folder(f"r/web-clicks-3-{TOPIC_ID}", tiered_files=True) == ("web-clicks", 3, TOPIC_ID)
    assert layout.parse_partition_folder(f"r/web-clicks-{TOPIC_ID}/7") == ("web-clicks", 7, TOPIC_ID)
    assert layout.parse_partition_folder("r/nothing") is None


def _rows(st, lay):
    """(topic, partition, offset, value) of every record the layout says to read, in order."""
    out = []
    for p in lay.partitions:
        for seg in p.segments:
            with st.open(seg.path, seg.size) as f:
                for _, b in storage.iter_remote_batches(f):
                    for r in b:
                        if r.offset >= seg.base_offset and (seg.end_offset is None or r.offset < seg.end_offset):
                            out.append((p.topic, p.partition, r.offset, r.value))
    return out


def test_local_and_remote_copies_yield_each_record_once(tmp_path):
    w = PartitionWriter(str(tmp_path / "src"), "web-clicks", 1, segment_bytes=1500)
    for k in range(12):
        w.append(v2_batch(sample_records(8 + k, start_ts=1_700_000_000_000 + 100 * k),
                          codec=["none", "zstd", "lz4"][k % 3]))
    w.close()
    src = str(tmp_path / "src" / "web-clicks-1")
    root = tmp_path / "mixed"
    # Local: the broker still has its last two segments; remote (LocalTieredStorage names,
    # unpadded offsets): all but the last; an Aiven-style copy: segments 0 and 1 again.
    shutil.copytree(src, root / "local" / "web-clicks-1")
    bases = _tiered_copy(src, str(root / "remote" / f"web-clicks-1-{TOPIC_ID}"), padded=False)
    assert len(bases) >= 4
    for b in bases[:-2]:
        for suffix in (".log", ".index", ".timeindex"):
            os.remove(root / "local" / "web-clicks-1" / f"{b:020d}{suffix}")
    os.remove(glob.glob(str(root / "remote" / f"web-clicks-1-{TOPIC_ID}" / f"{bases[-1]}-*.log"))[0])
    _tiered_copy(src, str(root / "plugin" / f"web-clicks-{TOPIC_ID}" / "1"), only={0, 1})
    st, path = storage.resolve(str(root))
    lay = layout.scan(st, path)
    assert [(p.topic, p.partition, p.topic_id) for p in lay.partitions] == [("web-clicks", 1, TOPIC_ID)]
    part = lay.partitions[0]
    assert [s.base_offset for s in part.segments] == bases
    assert len(part.copies) == 2 + 1                 # plugin copies of 0 and 1, remote copy of bases[-2]
    assert not part.segments[-2].remote and part.segments[0].remote   # local copies preferred
    got = _rows(st, lay)
    st0, p0 = storage.resolve(str(tmp_path / "src"))
    want = _rows(st0, layout.scan(st0, p0))
    assert got == want and len({r[2] for r in got}) == len(got) == sum(8 + k for k in range(12))


def test_overlapping_copies_with_other_boundaries(tmp_path):
    """A remote segment [0, 30) and a local one starting at 20: offsets 20..29 come from the local one."""
    recs = sample_records(10)
    a = PartitionWriter(str(tmp_path / "remote-src"), "t", 0, segment_bytes=1 << 20)
    b = PartitionWriter(str(tmp_path / "local"), "t", 0, segment_bytes=1 << 20)
    for i in range(3):
        a.append(v2_batch(recs))
    b.next_offset = b.segments[0].base = 20       # a replica whose log starts at 20
    b.append(v2_batch(recs))
    b.append(v2_batch(recs))
    a.close(), b.close()
    remote = tmp_path / "all" / f"t-0-{TOPIC_ID}"
    remote.mkdir(parents=True)
    shutil.copy(tmp_path / "remote-src" / "t-0" / "00000000000000000000.log", remote / f"0-{SEG_IDS[0]}.log")
    shutil.copytree(tmp_path / "local" / "t-0", tmp_path / "all" / "t-0")
    st, path = storage.resolve(str(tmp_path / "all"))
    lay = layout.scan(st, path)
    seg0, seg20 = lay.partitions[0].segments
    assert (seg0.base_offset, seg0.end_offset, seg20.base_offset, seg20.end_offset) == (0, 20, 20, None)
    offsets = [r[2] for r in _rows(st, lay)]
    assert offsets == list(range(40))


def test_a_manifest_that_is_not_one_is_reported(tmp_path):
    """A plugin segment whose manifest cannot say how its object holds the bytes (here: no chunk
    index) is an error naming the manifest when the segment is read (tests/tiered reads the
    plugin's real objects)."""
    d = tmp_path / f"t-{TOPIC_ID}" / "0"
    d.mkdir(parents=True)
    (d / f"00000000000000000000-{SEG_IDS[0]}.log").write_bytes(b"\x00" * 100)
    (d / f"00000000000000000000-{SEG_IDS[0]}.rsm-manifest").write_text(
        '{"version":"1","chunkIndex":{},"segmentIndexes":{},"compression":true,"encryption":null}')
    st, path = storage.resolve(str(tmp_path))
    seg = layout.scan(st, path).partitions[0].segments[0]
    with pytest.raises(layout.TransformedSegmentError, match=r"rsm-manifest: not a segment manifest"):
        layout.check_manifest(st, seg)


# -- a real object store ----------------------------------------------------------------------

def test_s3_reads_equal_local_reads(s3, logroot, monkeypatch):
    s3.upload_dir(logroot, "kafka-logs", "cluster-a")
    st_local, p_local = storage.resolve(logroot)
    want = _rows(st_local, layout.scan(st_local, p_local))
    # explicit options
    st, path = storage.resolve("s3://kafka-logs/cluster-a", s3.options())
    lay = layout.scan(st, path)
    assert _rows(st, lay) == want
    assert [p.key for p in lay.partitions] == [p.key for p in layout.scan(st_local, p_local).partitions]
    # the standard AWS variables alone
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    st_env, path = storage.resolve("s3://kafka-logs/cluster-a/")
    assert _rows(st_env, layout.scan(st_env, path)) == want
    # wrong secret: refused by the server
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    st_bad, path = storage.resolve("s3://kafka-logs/cluster-a")
    with pytest.raises(OSError, match="(?i)denied|signature|forbidden|403"):
        storage.list_files(st_bad, path)


def test_s3_ranged_reads_fetch_only_the_range(s3, logroot):
    s3.upload_dir(logroot, "ranged", "")
    st, path = storage.resolve("s3://ranged", s3.options())
    seg = [s for p in layout.scan(st, path).partitions if p.topic == "web-clicks" for s in p.segments][0]
    spans = _segment_batches(os.path.join(logroot, "web-clicks-0", os.path.basename(seg.path)))
    start, end = spans[1][0], spans[3][0]
    with st.open(seg.path, seg.size) as f, Counting() as stats:
        got = [(pos, b.base_offset, b.size_in_bytes)
               for pos, b in storage.iter_remote_batches(f, start, end, chunk_size=1 << 20)]
    assert got == spans[1:3]
    assert stats.bytes == end - start and stats.requests == 1


def test_globs_list_once(logroot):
    st, _ = storage.resolve(logroot)
    every = storage.list_files(st, logroot)
    logs = [e.path for e in every if e.path.endswith(".log")]
    assert [e.path for e in storage.list_files(st, f"{logroot}/*/*.log")] == logs
    assert [e.path for e in storage.list_files(st, f"{logroot}/**.log")] == logs
    web = [e.path for e in every if "/web-clicks-" in e.path]
    assert [e.path for e in storage.list_files(st, f"{logroot}/web-clicks-*")] == web
    lay = layout.scan(st, f"{logroot}/web-clicks-[01]")
    assert [p.key for p in lay.partitions] == [("web-clicks", 0), ("web-clicks", 1)]
    with pytest.raises(FileNotFoundError, match="no file matches"):
        storage.list_files(st, f"{logroot}/nothing-*")
