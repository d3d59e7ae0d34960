"""LogScan's ``threads``: local windows decoded ahead on a pool (kafkarec.scan._pool.DecodePool).
What a consumer gets is what decoding one window after the other gives: the same rows in the same
order, the same errors at the same place, nothing read past a limit but the windows in flight, at
most ``threads`` windows mapped ahead of the consumer's, and no thread or map left once it stops."""
import math
import os
import re
import threading
import time

import pyarrow as pa
import pytest

import kafkarec
from kafkarec.errors import MalformedBatchError, UsageError
from kafkarec.log import local, storage
from kafkarec.scan import Bounds, LogScan, ScanConfig
from kafkarec.scan import _pool, _read, _threads, default_threads
from kafkarec.scan.config import MAX_DEFAULT_THREADS

from support.logs.logdir import T0, PartitionWriter, build_log_dir, mixed_codec_partition, sample_records, v2_batch

WINDOW = 8192       # many windows per segment: the pool has work to reorder


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = tmp_path_factory.mktemp("threadlogs")
    build_log_dir(str(root))
    return str(root)


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    """One partition of 3 segments, 600 batches of 10 records, every codec but gzip's slow one."""
    return mixed_codec_partition(tmp_path_factory.mktemp("threadpart"), 600, 200_000)


@pytest.fixture
def small_windows(monkeypatch):
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", WINDOW)


_EARLIER = set()


@pytest.fixture(autouse=True)
def _earlier_decode_threads():
    """The decode threads alive before the test (another test's reader left open in this process
    keeps its pool's idle threads): not this test's."""
    _EARLIER.clear()
    _EARLIER.update(t for t in threading.enumerate() if t.name.startswith("kafkarec-decode"))


def _decode_threads():
    return [t for t in threading.enumerate() if t.name.startswith("kafkarec-decode") and t not in _EARLIER]


def _table(source, threads, **options):
    return LogScan(source, threads=threads, **options).to_table()


META = ["topic", "partition", "offset", "timestamp", "timestampType"]   # the meta-only walk's


@pytest.mark.parametrize("options", [{"columns": META}, {"columns": ["offset"], "isolation_level": "read_committed"},
                                     {"columns": META + ["_corrupt_record"], "mode": "PERMISSIVE"},
                                     {"columns": ["offset", "timestamp"], "max_rows_per_batch": 7}, {},
                                     {"batch_columns": True, "include_control": True}])
def test_the_rows_of_decoding_one_window_after_the_other(logroot, small_windows, options):
    one = _table(logroot, 1, **options)
    assert one.num_rows > 0
    for threads in (2, 3, 5):
        assert _table(logroot, threads, **options).equals(one)


def test_a_read_without_the_records_bytes_takes_larger_batches(partition, monkeypatch):
    """Unless a read sets max_rows_per_batch, one that builds none of the records' bytes (the
    meta-only walk) and has no row limit is cut into LEAN_ROWS_PER_BATCH rows a batch, any other
    without a limit into ROWS_PER_BATCH (an engine pays for each batch it takes) and one with a
    limit into LIMITED_ROWS_PER_BATCH, on the pool and off it; the rows are the same."""
    from kafkarec.scan import config as scan_config
    monkeypatch.setattr(scan_config, "ROWS_PER_BATCH", 100)
    monkeypatch.setattr(scan_config, "LEAN_ROWS_PER_BATCH", 1000)
    monkeypatch.setattr(scan_config, "LIMITED_ROWS_PER_BATCH", 50)
    assert ScanConfig.of(partition).max_rows is None

    def sizes(threads, **options):
        return [rb.num_rows for rb in LogScan(partition, threads=threads, **options)]
    for threads in (1, 2):
        lean = sizes(threads, columns=["offset", "timestamp"])
        assert max(lean) == 1000 and sum(lean) == 6000
        assert max(sizes(threads, columns=["offset", "value"])) == 100
        assert max(sizes(threads, columns=["offset", "timestamp"], max_rows_per_batch=100)) == 100
        for columns in (["offset", "timestamp"], ["offset", "value"]):     # (a limit stops sooner)
            limited = sizes(threads, columns=columns, limit=5000)
            assert max(limited) == 50 and sum(limited) == 5000
    assert _table(partition, 2, columns=["offset", "timestamp"]).equals(
        _table(partition, 2, columns=["offset", "timestamp"], max_rows_per_batch=7))


def test_every_read_decodes_on_the_pool(partition, small_windows):
    """The meta-only walk, the scanner's loop (a strict read of offsets and timestamps) and the full
    decode walk a batch's records without the GIL, the batch columns' rows and a key bound's test
    too: every read decodes on the pool, and a strict one gives what one thread gives."""
    import dataclasses
    for options in ({"columns": ["offset"]}, {}, {"columns": ["key", "offset"]},
                    {"columns": ["offset", "batchPosition"], "batch_columns": True}):
        reader = iter(LogScan(partition, threads=3, **options))
        next(reader, None)
        assert _decode_threads(), options
        reader.close()
    for columns in (["offset"], ["offset", "timestamp", "key"]):
        strict = {threads: LogScan(dataclasses.replace(ScanConfig.of(partition, columns=columns, threads=threads),
                                                       strict=True)) for threads in (1, 3)}
        reader = iter(strict[3])
        next(reader, None)
        assert _decode_threads(), columns
        reader.close()
        assert strict[3].to_table().equals(strict[1].to_table())
        assert strict[1].to_table().equals(LogScan(partition, columns=columns).to_table())


def test_order_kept_across_many_windows(partition, small_windows):
    scan = LogScan(partition, threads=4, columns=["offset", "timestamp"])
    assert len(scan.as_read(scan.pieces())) > 30
    got = scan.to_table()
    assert got.column("offset").to_pylist() == list(range(6000))
    assert got.column("timestamp").cast(pa.int64()).to_pylist() == [T0 + 10 * (i // 10) + i % 10 for i in range(6000)]


def _corrupted(tmp_path):
    w = PartitionWriter(str(tmp_path), "bad", 0, segment_bytes=1 << 20)
    appended = [w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=80))) for k in range(200)]
    w.close()
    w.corrupt(appended[120])        # its CRC fails
    return str(tmp_path)


def test_errors_where_decoding_one_after_the_other_meets_them(tmp_path, small_windows):
    root = _corrupted(tmp_path)
    for columns in (None, ["offset", "timestamp"]):
        seen = {}
        for threads in (1, 3):
            rows, message = 0, None
            try:
                for rb in LogScan(root, threads=threads, columns=columns):
                    rows += rb.num_rows
            except MalformedBatchError as exc:
                message = str(exc)
            seen[threads] = (rows, message)
        # every row of the 120 batches before the damaged one is handed on, then the error is
        # raised (the core hands out the rows before a failing batch first), either way
        assert seen[1] == seen[3] and seen[1][0] == 1200 and "ChecksumError" in seen[1][1]
        for mode in ("PERMISSIVE", "DROPMALFORMED"):
            one = _table(root, 1, mode=mode, columns=columns)
            assert _table(root, 3, mode=mode, columns=columns).equals(one)


def test_a_limit_reads_in_the_consumers_thread_and_no_window_past_it(partition, small_windows):
    counter, walks = storage.process_bytes_read(), storage.process_walk_bytes()
    before, before_w = counter.bytes, walks.bytes
    got = LogScan(partition, threads=3, limit=25, columns=["offset"]).to_table()
    assert got.column("offset").to_pylist() == list(range(25))
    # the 25 rows' window alone (cut at batch starts: a batch over a window's size), no pool started
    # (the walk of the file's headers that cut it is counted apart)
    assert (counter.bytes - before) - (walks.bytes - before_w) <= WINDOW + 2048
    assert not _decode_threads()


@pytest.mark.parametrize("limit", [5, 3000])
def test_a_small_limit_builds_batches_of_about_its_rows(tmp_path, monkeypatch, limit):
    """A limited read's first window is decoded in batches of about the limit's rows (at least
    1,024), not the read's 65,536: a ``head(5)`` builds one batch of records.  The rows are the
    unlimited read's first ones, in every mode."""
    w = PartitionWriter(str(tmp_path), "t", 0, segment_bytes=10 << 20)
    for k in range(500):
        w.append(v2_batch(sample_records(100, start_ts=T0 + 100 * k, size=20)))
    w.close()
    plain, built = _read.decode_range, []

    def counted(*args, **kwargs):
        for kind, item in plain(*args, **kwargs):
            if kind == "batch":
                built.append(item.num_rows)
            yield kind, item
    monkeypatch.setattr(_read, "decode_range", counted)
    for mode in ("PERMISSIVE", "FAILFAST"):
        built.clear()
        got = LogScan(str(tmp_path), limit=limit, mode=mode, columns=["offset", "key", "value"]).to_table()
        assert got.equals(LogScan(str(tmp_path), mode=mode, columns=["offset", "key", "value"]).to_table().slice(0, limit))
        assert built[0] <= max(limit, 1024) + 100 < 65536, built


@pytest.mark.parametrize("threads", [2, 3])
def test_a_limit_past_its_first_window_decodes_on_the_pool_and_no_more_ahead_than_it_needs(
        partition, small_windows, monkeypatch, threads):
    plain, decoded_on = local.iter_pieces, []

    def seen(sl):       # a window is mapped by the thread that decodes it
        decoded_on.append(threading.current_thread().name)
        return plain(sl)
    monkeypatch.setattr(local, "iter_pieces", seen)
    counter, walks = storage.process_bytes_read(), storage.process_walk_bytes()
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(partition) for f in fs
               if f.endswith(".log"))
    before, before_w = counter.bytes, walks.bytes
    got = LogScan(partition, threads=threads, limit=3000, columns=["offset", "value"]).to_table()
    read = (counter.bytes - before) - (walks.bytes - before_w)      # (the walk for the cuts apart)
    assert got.column("offset").to_pylist() == list(range(3000))
    # the first window in the consumer's thread, the rest on the pool's threads
    assert decoded_on[0] == threading.current_thread().name
    assert any(name.startswith("kafkarec-decode") for name in decoded_on[1:])
    # half the log wanted: read up to it, and at most `threads` windows past it (cut at batch starts)
    assert size / 2 <= read <= size / 2 + threads * (WINDOW + 2048)
    assert not _decode_threads()
    assert got.equals(LogScan(partition, threads=1, limit=3000, columns=["offset", "value"]).to_table())


@pytest.fixture
def open_maps(monkeypatch):
    """The windows mapped now (kafkarec.log.local.iter_pieces counted)."""
    maps = []
    plain = local.iter_pieces

    def counted(sl):
        for piece in plain(sl):
            maps.append(sl)
            try:
                yield piece
            finally:
                maps.remove(sl)
    monkeypatch.setattr(local, "iter_pieces", counted)
    return maps


def test_a_consumer_that_stops_stops_the_threads_and_closes_the_maps(partition, small_windows, open_maps):
    reader = iter(LogScan(partition, threads=2, max_rows_per_batch=10, columns=["offset", "timestamp"]))
    next(reader)
    assert _decode_threads() and open_maps
    reader.close()
    assert not _decode_threads() and not open_maps


def test_a_windows_first_batches_are_handed_on_while_its_later_ones_decode(partition, small_windows, monkeypatch,
                                                                          open_maps):
    """The pool hands a window's batches on as its thread decodes them (a LIMIT's first rows, an
    engine's first batches: not after the whole window): the thread decoding the first window
    waits, after its first batch, until the consumer has that batch; it would wait for ever if
    the window were handed on whole.  The rows are the one-thread read's, and a consumer that
    stops while a thread is still in its window leaves no thread or map."""
    plain = _read.Read.decode_ahead
    first_taken, waited = threading.Event(), []

    def slow_after_the_first(self, part, where, topic, partition_):
        first_window = part.position == 0 and os.path.basename(where) == "00000000000000000000.log"
        for n, item in enumerate(plain(self, part, where, topic, partition_)):
            yield item
            if n == 0 and first_window and not waited:     # (the log's first window: one thread)
                waited.append(first_taken.wait(60))     # (60 s: only a regression waits it out)
    monkeypatch.setattr(_read.Read, "decode_ahead", slow_after_the_first)
    options = dict(columns=["offset", "timestamp", "key"], max_rows_per_batch=10)
    want = LogScan(partition, threads=1, **options).to_table()
    reader = iter(LogScan(partition, threads=2, **options))
    first = next(reader)
    first_taken.set()
    rest = list(reader)
    assert waited == [True]
    assert pa.Table.from_batches([first] + rest).equals(want)
    assert not _decode_threads() and not open_maps
    for stop in (1, 2, 5):          # consumers that stop inside a window still being decoded
        reader = iter(LogScan(partition, threads=2, **options))
        got = [rb for _, rb in zip(range(stop), reader)]
        reader.close()
        assert pa.Table.from_batches(got).equals(want.slice(0, 10 * stop))
        assert not _decode_threads() and not open_maps


def test_at_most_threads_windows_mapped_ahead(partition, small_windows, monkeypatch):
    open_maps, most, most_bytes = [], [0], [0]
    plain = local.iter_pieces

    def counted(sl):
        for piece in plain(sl):
            open_maps.append(sl)
            most[0] = max(most[0], len(open_maps))
            most_bytes[0] = max(most_bytes[0], sum(m.size for m in open_maps))
            try:
                yield piece
            finally:
                open_maps.remove(sl)
    monkeypatch.setattr(local, "iter_pieces", counted)
    rows = 0
    for rb in LogScan(partition, threads=2, columns=["offset"], max_rows_per_batch=50):
        rows += rb.num_rows
        time.sleep(0.0005)        # a slow consumer: the pool runs ahead as far as it may
    assert rows == 6000
    # the consumer's and 2 ahead, in bytes: three windows' (a segment's smaller last windows
    # let more in, at most AHEAD_MAX times as many)
    assert most[0] >= 3 and most[0] <= _pool.AHEAD_MAX * 3
    assert most_bytes[0] <= 3 * WINDOW
    assert not open_maps


def _segments(folder, batches_per_segment):
    """Files of 10-record batches (741 bytes each) in ``folder``, one file of each given count."""
    os.makedirs(folder)
    offset = 0
    for count in batches_per_segment:
        with open(os.path.join(folder, "%020d.log" % offset), "wb") as fh:
            for _ in range(count):
                fh.write(kafkarec.build_batch([b"v" * 60] * 10, base_offset=offset))
                offset += 10
    return offset


def test_small_windows_beside_large_ones_keep_the_threads_busy(tmp_path, small_windows, monkeypatch):
    """The windows ahead are counted in bytes when they are small (a segment's last, a small
    segment): while the consumer waits for a large window on one thread, the other decodes every
    small window after it, and the next large one, three windows' bytes in all; counted in windows,
    it stopped after two and waited.  The rows are the one-thread read's."""
    folder = str(tmp_path / "t-0")
    rows = _segments(folder, [10] + [1] * 10 + [10] + [1] * 3)      # windows of 7,410 and 741 bytes
    plain = _read.Read.decode_ahead
    first = threading.Event()
    decoded, lock = [], threading.Lock()

    def first_waits(self, part, where, topic, partition_):
        if os.path.basename(where) == "%020d.log" % 0:
            assert first.wait(60)           # (60 s: only a regression waits it out)
        yield from plain(self, part, where, topic, partition_)
        with lock:
            decoded.append(os.path.basename(where))
    monkeypatch.setattr(_read.Read, "decode_ahead", first_waits)
    reader = iter(LogScan(folder, threads=2, columns=["offset", "value"]))
    got = []

    def consume():
        got.extend(reader)
    consumer = threading.Thread(target=consume)
    consumer.start()
    deadline = time.monotonic() + 60
    while len(decoded) < 11 and time.monotonic() < deadline:
        time.sleep(0.01)
    ahead = list(decoded)
    first.set()
    consumer.join(60)
    assert ahead == ["%020d.log" % (100 + 10 * i) for i in range(11)]   # the ten small ones, the large
    table = pa.Table.from_batches(got)
    assert table.column("offset").to_pylist() == list(range(rows))
    assert table.equals(LogScan(folder, threads=1, columns=["offset", "value"]).to_table())
    assert not _decode_threads()


def test_one_thread_decodes_in_the_consumers_thread(partition, small_windows):
    reader = iter(LogScan(partition, threads=1, columns=["offset"]))
    next(reader)
    assert not _decode_threads()
    reader.close()


def test_the_threads_option():
    assert ScanConfig.of("x").threads == default_threads() <= MAX_DEFAULT_THREADS
    assert ScanConfig.of("x", threads=3).threads == 3
    # one default however a config is made (field by field it was 1; Spark's tasks ask for 1)
    assert ScanConfig("x").threads == default_threads() and ScanConfig("x") == ScanConfig.of("x")
    for bad in (0, -1, 1.5, True, "2", 1000):
        with pytest.raises(UsageError, match="threads"):
            ScanConfig.of("x", threads=bad)
        with pytest.raises(UsageError, match="threads"):
            ScanConfig(("x",), threads=bad)


def test_zstd_batches_decode_on_several_threads_at_once():
    """The core keeps a zstd decompressor per thread (one must not be used by two at once)."""
    data = b"".join(v2_batch(sample_records(200, start_ts=T0 + k, size=300), codec="zstd") for k in range(20))
    want = kafkarec.to_arrow(data)
    got, failures = [], []

    def decode():
        try:
            for _ in range(15):
                got.append(pa.Table.from_batches(list(kafkarec.iter_arrow(data))))
        except Exception as exc:        # reported below
            failures.append(exc)
    workers = [threading.Thread(target=decode) for _ in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not failures and len(got) == 60 and all(t.equals(want) for t in got)


def test_framed_spans_are_the_batches_a_segment_frames(logroot, tmp_path):
    """The planner's cuts (local._framed_spans: the core's BatchIterator.spans) are the spans of
    the batches Segment frames, up to where it stops: a damaged size, a magic above 2, a cut-off end."""
    import glob
    paths = sorted(glob.glob(os.path.join(logroot, "*", "*.log")))
    good = paths[0]
    data = open(good, "rb").read()
    spans = [(b.position, b.size_in_bytes) for b in local._batches(good)]
    second = spans[1][0]
    damaged = []
    for name, change in [("size", lambda d: d[:second + 8] + b"\0\0\0\1" + d[second + 12:]),
                         ("magic", lambda d: d[:second + 16] + b"\x07" + d[second + 17:]),
                         ("cut", lambda d: d[:-10]), ("empty", lambda d: b"")]:
        path = tmp_path / f"{name}.log"
        path.write_bytes(change(data))
        damaged.append(str(path))
    for path in paths + damaged:
        assert local._framed_spans(path) == [(b.position, b.size_in_bytes) for b in local._batches(path)], path
    assert len(local._framed_spans(damaged[0])) == len(local._framed_spans(damaged[1])) == 1


def test_cuts_walked_a_window_at_a_time_are_the_whole_walks(logroot, partition, tmp_path, monkeypatch):
    """The planner cuts a large file as it walks it (local._walked_cuts: BatchIterator.spans with
    ``until``, one map a step): the cuts are those of the walk of the whole file (local.split), for
    any window size and part of the file, strict or not, compressed and legacy batches, a damaged
    size or magic, a cut-off end, and batches larger than a step's map."""
    import glob
    paths = sorted(glob.glob(os.path.join(logroot, "*", "*.log"))) + sorted(glob.glob(os.path.join(partition, "*", "*.log")))
    data = open(paths[0], "rb").read()
    spans = local._framed_spans(paths[0])
    second = spans[1][0]
    for name, change in [("size", lambda d: d[:second + 8] + b"\0\0\0\1" + d[second + 12:]),
                         ("magic", lambda d: d[:second + 16] + b"\x07" + d[second + 17:]),
                         ("cut", lambda d: d[:-10])]:
        path = tmp_path / f"{name}.log"
        path.write_bytes(change(data))
        paths.append(str(path))
    for slack in (local.WALK_STEP_SLACK, 64):       # (64: every batch is cut by a step's map)
        monkeypatch.setattr(local, "WALK_STEP_SLACK", slack)
        for path in paths:
            size = os.path.getsize(path)
            batches = local._framed_spans(path)
            parts = [(0, size)] + ([(batches[2][0], batches[-2][0])] if len(batches) > 4 else [])
            for strict in (False, True):
                for max_bytes in (1, 700, 8192, 65536, size):
                    for start, end in parts:
                        sl = local.Slice(path, start, end, None, None, strict=strict)
                        want = [(w.start, w.end) for w in local.split(sl, max_bytes)]
                        assert list(local._walked_cuts(path, strict, start, end, max_bytes)) == want, \
                            (path, slack, strict, max_bytes, start, end)


def test_a_file_cut_shorter_while_its_windows_are_read_is_walked_as_it_is_now(partition, tmp_path):
    """Nothing of a file stays mapped between the steps of its walk: cut shorter after its first
    window was handed out, the walk goes on over what is left (no SIGBUS) and its last window ends
    where the slice did (its read reports the change)."""
    import glob
    import shutil
    path = str(tmp_path / "00000000000000000000.log")
    shutil.copyfile(sorted(glob.glob(os.path.join(partition, "*", "*.log")))[0], path)
    size = os.path.getsize(path)
    batches = local._framed_spans(path)
    cuts = local._walked_cuts(path, False, 0, size, 8192)
    first = next(cuts)
    half = batches[len(batches) // 2][0]
    os.truncate(path, half)
    rest = list(cuts)
    assert first[0] == 0 and rest[-1][1] == size
    assert all(a < half for a, _ in rest) and [first] + rest == \
        [(w.start, w.end) for w in local.split(local.Slice(path, 0, size, None, None), 8192)]


def test_a_limit_walks_no_more_of_a_large_file_than_its_first_windows(partition, small_windows):
    """A ``LIMIT`` met in a large file's first window walks its headers no further (the rest of a
    broker's 1 GiB segment is not walked for five rows)."""
    import glob
    path = max(glob.glob(os.path.join(partition, "*", "*.log")), key=os.path.getsize)
    whole = sum(min(n, storage.HEADER_WALK_BYTES) for _, n in local._framed_spans(path))
    for threads in (1, 2):
        before = storage.process_walk_bytes().by_path.get(path, 0)
        assert LogScan(path, threads=threads, limit=5).to_table().num_rows == 5
        walked = storage.process_walk_bytes().by_path.get(path, 0) - before
        assert 0 < walked < whole / 4, (threads, walked, whole)


def test_the_consumers_thread_walks_no_file_and_unmaps_no_window(partition, small_windows, monkeypatch):
    """Decoding on a pool, each file is cut into windows by the pool's planner thread (the first
    window decodes while later files are walked) and every map is closed by the pool; one thread
    walks and unmaps in the consumer's, as before."""
    walked, unmapped = [], []
    plain_cuts, plain_pieces = local._walked_cuts, local.iter_pieces

    def cuts(*args):
        walked.append(threading.current_thread().name)   # (a lent thread's name is the read's)
        yield from plain_cuts(*args)

    def pieces(sl):
        try:
            yield from plain_pieces(sl)
        finally:
            unmapped.append(threading.current_thread().name)
    monkeypatch.setattr(local, "_walked_cuts", cuts)
    monkeypatch.setattr(local, "iter_pieces", pieces)
    want = _table(partition, 1, columns=["offset", "timestamp"])
    me = threading.current_thread().name
    assert walked and set(walked) == {me} and set(unmapped) == {me}
    files_walked = len(walked)      # the files larger than a window
    walked.clear()
    unmapped.clear()
    assert _table(partition, 2, columns=["offset", "timestamp"]).equals(want)
    assert len(walked) == files_walked and me not in walked and {name.split("_")[0] for name in walked} == {"kafkarec-decode-plan"}
    assert len(unmapped) > 30 and me not in unmapped
    assert not _decode_threads()


def test_a_file_that_cannot_be_cut_fails_at_its_turn(partition, small_windows, monkeypatch):
    """The planner's error (a file gone between listing and reading) reaches the consumer after the
    windows before that file, and nothing after it."""
    plain = local.iter_windows
    files = sorted(sl.path for sl in (p.item for p in LogScan(partition).pieces()))

    def windows(sl, spans=None, max_bytes=None):
        if sl.path == files[1]:
            raise FileNotFoundError(sl.path)
        yield from plain(sl, spans, max_bytes)
    monkeypatch.setattr(local, "iter_windows", windows)
    first = LogScan(files[0], threads=1, columns=["offset"]).to_table().column("offset").to_pylist()
    for attempt in range(3):
        seen = []
        with pytest.raises(FileNotFoundError, match=re.escape(files[1])):
            for rb in LogScan(partition, threads=2, columns=["offset"]):
                seen += rb.column("offset").to_pylist()
        assert seen == first
    assert not _decode_threads()


@pytest.mark.parametrize("options", [
    {"bounds": Bounds(offsets=(5, None))},
    {"bounds": Bounds(offsets=(40, 3000)), "columns": ["offset", "key", "value"]},
    {"bounds": Bounds(timestamps=(T0 + 2000, T0 + 4000))},
    {"selection": {"startingOffsets": "earliest"}, "isolation_level": "read_committed"},
    {"bounds": Bounds(offsets=(1, None)), "columns": ["offset", "timestamp"]},
    # a key bound: each record's key tested in the record loops, without the GIL (few keys are
    # compared one by one, more by bisection)
    {"bounds": Bounds(keys=[b"k3"]), "columns": ["offset", "timestamp"]},
    {"bounds": Bounds(keys=[b"k1", b"k5"])},
    {"bounds": Bounds(keys=[b"k%d" % i for i in range(0, 60, 2)]), "batch_columns": True},
])
def test_a_listed_read_decodes_on_the_pool_as_one_after_the_other(partition, logroot, monkeypatch, options):
    """A read planned over a listing (bounds, a selection) decodes its ranges on the pool too, each
    cut on the planner thread at offset-index positions about a window apart: the same rows."""
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 20_000)
    for root in (partition, logroot):
        assert LogScan(root, **options).config.listed
        one = _table(root, 1, **options)
        assert one.num_rows > 0
        reader = iter(LogScan(root, threads=3, **options))
        next(reader)
        assert _decode_threads()
        reader.close()
        for threads in (2, 4):
            assert _table(root, threads, **options).equals(one), (root, threads)


def test_a_listed_read_with_a_limit_past_its_first_window_as_one_after_the_other(partition, monkeypatch):
    """A listed read (bounds) with a row limit: its first part in the consumer's thread, the
    parts after it on the pool, the same rows as one thread."""
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 20_000)
    options = {"bounds": Bounds(offsets=(40, None)), "limit": 4000, "columns": ["offset", "value"]}
    one = _table(partition, 1, **options)
    assert one.column("offset").to_pylist() == list(range(40, 4040))
    for threads in (2, 3):
        assert _table(partition, threads, **options).equals(one), threads
    assert not _decode_threads()


def test_a_listed_read_meets_errors_where_one_after_the_other_does(tmp_path):
    """A damaged batch in a listed read: the same error rows (PERMISSIVE, DROPMALFORMED) or the
    same error (FAILFAST) on the pool as in one thread."""
    root = tmp_path / "damaged"
    w = PartitionWriter(str(root), "d", 0, segment_bytes=30_000)
    for k in range(60):
        batch = bytearray(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=60)))
        if k in (17, 41):
            batch[-3] ^= 0xFF       # a record's byte: the CRC fails
        w.append(bytes(batch))
    w.close()
    bounds = Bounds(offsets=(3, None))
    for mode in ("PERMISSIVE", "DROPMALFORMED"):
        one = _table(str(root), 1, mode=mode, bounds=bounds)
        assert _table(str(root), 3, mode=mode, bounds=bounds).equals(one)
    with pytest.raises(MalformedBatchError) as first:
        _table(str(root), 1, mode="FAILFAST", bounds=bounds)
    with pytest.raises(MalformedBatchError) as pooled:
        _table(str(root), 3, mode="FAILFAST", bounds=bounds)
    assert str(pooled.value) == str(first.value)


def test_stress_many_threads_small_windows_consumers_that_stop_early(partition, logroot, small_windows, open_maps):
    """Many threads over small windows, whole rows and offsets, local and listed reads, each consumer
    stopping after a different number of batches: every prefix is the one-thread read's rows (the
    batches may end elsewhere near the read's end, whose windows the pool cuts smaller for its
    threads: TailWindows), and no thread or map is left behind."""
    import random
    rnd = random.Random(68)
    for options in ({}, {"columns": ["offset", "timestamp"]}, {"columns": ["offset", "key", "value"]},
                    {"bounds": Bounds(offsets=(3, None))}):
        for root in (partition, logroot):
            whole = LogScan(root, threads=1, max_rows_per_batch=40, **options).to_table()
            for _ in range(6):
                scan = LogScan(root, threads=rnd.choice((3, 5, 8)), max_rows_per_batch=40, **options)
                stop = rnd.randrange(len(list(scan)) + 1)
                reader = iter(scan)
                got = [rb for _, rb in zip(range(stop), reader)]
                reader.close()
                assert len(got) == stop, (options, root, stop)
                rows = pa.Table.from_batches(got, schema=whole.schema)
                assert rows.equals(whole.slice(0, rows.num_rows)), (options, root, stop)
                assert not _decode_threads() and not open_maps, (options, root, stop)


@pytest.fixture(scope="module")
def big_batches(tmp_path_factory):
    """One partition of batches whose records pass 16 KiB (walked without the GIL, whole rows too),
    every codec, two of them damaged (a record byte: the CRC fails; a record length: the records
    do not parse)."""
    from support.logs.logdir import CODECS
    root = tmp_path_factory.mktemp("bigbatches")
    w = PartitionWriter(str(root), "big", 0, segment_bytes=400_000)
    for k in range(40):
        batch = bytearray(v2_batch(sample_records(200, start_ts=T0 + 200 * k, size=120), codec=CODECS[k % 5]))
        if k == 13:
            batch[-5] ^= 0xFF
        w.append(bytes(batch))
    w.close()
    return str(root)


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
@pytest.mark.parametrize("columns", [None, ["offset", "timestamp", "key", "value"], ["offset", "timestamp"]])
def test_big_batches_on_many_threads_as_one_after_the_other(big_batches, monkeypatch, mode, columns):
    """Batches walked without the GIL on several threads at once (whole rows and offsets alone,
    every codec, a damaged batch): the rows and error rows of decoding one window after the other."""
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 64 << 10)
    options = {"mode": mode} if columns is None else {"mode": mode, "columns": columns}
    one = _table(big_batches, 1, **options)
    assert one.num_rows >= 39 * 200
    for threads in (2, 5):
        assert _table(big_batches, threads, **options).equals(one), threads
    stopped = {}
    for threads in (1, 4):
        handed = []
        with pytest.raises(MalformedBatchError) as failed:
            for rb in LogScan(big_batches, threads=threads, mode="FAILFAST", columns=columns):
                handed.append(rb)
        stopped[threads] = (str(failed.value), [rb.num_rows for rb in handed])
    assert stopped[4] == stopped[1] and sum(stopped[1][1]) > 0      # the same rows, then the same error


def test_a_listed_read_cuts_each_range_when_its_turn_comes(tmp_path, monkeypatch):
    """The ranges of a listed read are cut (an offset index read each) as they come, not all before
    the first row: a limit of one row over 13 segments reads at most the read-ahead's indexes,
    a pool the indexes of the segments it keeps ahead."""
    from kafkarec.log import selection
    w = PartitionWriter(str(tmp_path), "t", 0, segment_bytes=30_000, index_interval_bytes=4096)
    for k in range(400):
        w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=60)))
    w.close()
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 20_000)
    loads = []
    plain = selection.Resolver.offset_entries

    def counted(self, seg):
        if seg.path not in self._offset_idx:
            loads.append(seg.path)
        return plain(self, seg)
    monkeypatch.setattr(selection.Resolver, "offset_entries", counted)
    for threads, limit in ((1, 1), (1, None), (3, None)):
        loads.clear()
        scan = LogScan(str(tmp_path), bounds=Bounds(offsets=(5, None)), limit=limit, threads=threads, columns=["offset"])
        reader = iter(scan)
        assert next(reader).column("offset")[0].as_py() == 5
        reader.close()
        # one thread: the read-ahead's; a pool: the segments its windows ahead span (threads + 1
        # windows' bytes: small windows, a segment's last, count in bytes), and threads + 1
        # segments past them cut by its planner
        ahead = 1 + _read.READ_AHEAD_RANGES if threads == 1 else \
            1 + math.ceil((threads + 1) * 20_000 / 30_000) + 1 + threads + 1
        assert 1 <= len(loads) <= ahead < 13, (threads, limit, len(loads))


def test_an_offset_order_error_row_comes_where_its_batch_is_whatever_the_window(tmp_path, monkeypatch):
    """PERMISSIVE: a batch whose offsets go back is an error row at its place in the log, after the
    rows of the batches before it, read as one window or as a window a batch (a fuzz finding: a
    window's OffsetOrderError rows came before the rows preceding them)."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    first = kafkarec.build_batch([b"a1", b"a2"], timestamps=[1, 2], base_offset=10)
    (folder / "00000000000000000000.log").write_bytes(
        first + kafkarec.build_batch([b"b"], timestamps=[3], base_offset=4)
        + kafkarec.build_batch([b"c"], timestamps=[4], base_offset=20))

    def offsets_and_errors():
        t = LogScan(str(tmp_path), mode="PERMISSIVE", threads=1).to_table()
        return list(zip(t.column("offset").to_pylist(), [e is not None for e in t.column("_corrupt_record").to_pylist()]))
    whole = offsets_and_errors()
    assert whole == [(10, False), (11, False), (None, True), (20, False)]
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", len(first))
    assert offsets_and_errors() == whole


def test_failfast_stops_at_the_first_problem_in_the_log_whatever_the_window(tmp_path, monkeypatch):
    """FAILFAST: a batch whose offsets go back fails the read before a later byte that frames no
    batch, read as one window (its rows held in a chunk when the framing error comes) or as a
    window a batch (a fuzz finding of the threads target)."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    first = kafkarec.build_batch([b"a1", b"a2"], timestamps=[1, 2], base_offset=10)
    (folder / "00000000000000000000.log").write_bytes(
        first + kafkarec.build_batch([b"b"], timestamps=[3], base_offset=4)
        + kafkarec.build_batch([b"c"], timestamps=[4], base_offset=20) + b"\0" * 8 + b"\xff" * 5)

    def failure():
        handed = []
        with pytest.raises(MalformedBatchError) as info:
            for rb in LogScan(str(tmp_path), mode="FAILFAST", threads=1):
                handed += rb.column("offset").to_pylist()
        return type(info.value).__name__, str(info.value), handed
    whole = failure()
    # the first batch's rows are handed on before the error, in one window as in a window a batch
    # (a fuzz finding: in one window they were not, and a pool's read cut there handed them on)
    assert whole[0] == "OffsetOrderError" and f"byte {len(first)}" in whole[1] and whole[2] == [10, 11]
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", len(first))
    assert failure() == whole


def test_a_control_batch_takes_no_part_in_the_offset_order_rule_whatever_the_view(tmp_path):
    """A control batch is judged by no offset-order rule (the consumer skips it; the timestamp lookup
    passes over it), whether the read keeps control rows or not: a marker going back is no error,
    and a marker far ahead does not make the data after it go back (a census fuzz finding: its
    read with control rows counted an error the plain read did not)."""
    from kafkarec import ControlRecordType, RecordBatchBuilder
    folder = tmp_path / "t-0"
    folder.mkdir()

    def marker(offset):
        b = RecordBatchBuilder(base_offset=offset, producer_id=7, producer_epoch=0, is_transactional=True,
                               is_control=True)
        b.append_control(ControlRecordType.COMMIT, {"coordinatorEpoch": 0})
        return b.build()
    (folder / "00000000000000000000.log").write_bytes(
        kafkarec.build_batch([b"a"], base_offset=10) + marker(3) + marker(50)
        + kafkarec.build_batch([b"b"], base_offset=11) + kafkarec.build_batch([b"c"], base_offset=5))

    def read(include_control):
        t = LogScan(str(tmp_path), mode="PERMISSIVE", include_control=include_control, batch_columns=True,
                    columns=["offset", "isControl", "_corrupt_record"]).to_table()
        return list(zip(t.column("offset").to_pylist(), t.column("isControl").to_pylist(),
                        [e.split("): ")[-1] if e else None for e in t.column("_corrupt_record").to_pylist()]))
    plain = read(False)
    assert plain == [(10, False, None), (11, False, None),
                     (None, None, "offsets go back: it starts at 5 after offset 11")]
    assert [r for r in read(True) if not r[1]] == plain
    assert [r[0] for r in read(True) if r[1]] == [3, 50]


def test_a_strict_read_frames_a_file_as_one_window_does(tmp_path, monkeypatch):
    """A strict read stops framing a file at the first batch header the format forbids (here a
    record count its last offset delta cannot hold) and reports the rest as not decoded: cut into
    windows (where a read that frames as Kafka does would go on), at one thread or several, it
    does the same (fuzz_threads' strict reads found a later window decoded)."""
    import dataclasses
    import struct
    w = PartitionWriter(str(tmp_path), "strict", 0, segment_bytes=1 << 20)
    appended = [w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=60))) for k in range(120)]
    w.close()
    with open(w.log_path(appended[40].segment_base), "r+b") as fh:
        fh.seek(appended[40].position + 57)         # recordCount
        fh.write(struct.pack(">i", 500))

    def read(columns, threads):
        config = dataclasses.replace(ScanConfig.of(str(tmp_path), columns=columns, threads=threads, mode="PERMISSIVE"),
                                     strict=True)
        return LogScan(config).to_table()

    for columns in (None, ["offset", "timestamp", "_corrupt_record"]):
        whole = read(columns, 1)
        assert whole.column("offset").drop_null().to_pylist() == list(range(400))
        assert "could not be framed" in whole.column("_corrupt_record").drop_null()[0].as_py()
        monkeypatch.setattr(local, "READ_WINDOW_BYTES", 2000)
        assert read(columns, 1).equals(whole) and read(columns, 3).equals(whole)
        monkeypatch.undo()


def test_a_strict_listed_read_stops_a_segment_where_its_framing_stops(tmp_path, monkeypatch):
    """A strict read over a listing (an offset bound) cut at offset-index positions: past the first
    batch header the format forbids, the rest of the segment is not decoded (the parts after it,
    which start at index positions, included), as the same read of the segment in one piece and a
    read of the whole file report it, at one thread or several; with badRecordsPath the same bytes
    are kept."""
    import dataclasses
    import struct
    w = PartitionWriter(str(tmp_path / "log"), "strict", 0, segment_bytes=1 << 20, index_interval_bytes=2048)
    appended = [w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=60))) for k in range(120)]
    w.close()
    damaged = appended[40]
    segment = w.log_path(damaged.segment_base)
    with open(segment, "r+b") as fh:
        fh.seek(damaged.position + 57)              # recordCount
        fh.write(struct.pack(">i", 500))
    size = os.path.getsize(segment)

    def read(threads, **extra):
        config = dataclasses.replace(ScanConfig.of(str(tmp_path / "log"), threads=threads, mode="PERMISSIVE",
                                                   bounds=Bounds(offsets=(1, None)), **extra), strict=True)
        assert config.listed
        return LogScan(config).to_table()

    whole = read(1)
    assert whole.column("offset").drop_null().to_pylist() == list(range(1, 400))
    errors = whole.column("_corrupt_record").drop_null().to_pylist()
    assert len(errors) == 1 and f"the {size - damaged.position} bytes from byte {damaged.position} to byte " \
        f"{size} could not be framed" in errors[0], errors
    kept = {}
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 6000)
    for threads in (1, 3):
        assert read(threads).equals(whole), threads
        read(threads, bad_records_path=str(tmp_path / f"kept{threads}"))
        kept[threads] = {str(p.relative_to(tmp_path / f"kept{threads}")): p.read_bytes()
                         for p in sorted((tmp_path / f"kept{threads}").rglob("*")) if p.is_file()}
    monkeypatch.undo()
    read(1, bad_records_path=str(tmp_path / "kept-whole"))
    whole_kept = {str(p.relative_to(tmp_path / "kept-whole")): p.read_bytes()
                  for p in sorted((tmp_path / "kept-whole").rglob("*")) if p.is_file()}
    assert kept[1] == kept[3] == whole_kept and len(whole_kept) == 2


def test_bad_records_path_decodes_on_the_pool_and_keeps_what_one_thread_keeps(tmp_path, small_windows):
    """With badRecordsPath, windows decode on the pool too: each batch a window cannot decode is
    written when the consumer takes its error, in log order, so the quarantine holds what one
    thread's read writes, byte for byte, and the rows are the same."""
    root = _corrupted(tmp_path / "log")
    got = {}
    for threads in (1, 3):
        kept = tmp_path / f"kept{threads}"
        reader = LogScan(root, threads=threads, mode="PERMISSIVE", bad_records_path=str(kept))
        batches = iter(reader)
        first = next(batches)
        assert bool(_decode_threads()) == (threads > 1)
        table = pa.Table.from_batches([first] + list(batches))
        files = {str(p.relative_to(kept)): p.read_bytes() for p in sorted(kept.rglob("*")) if p.is_file()}
        got[threads] = (table, files)
    assert got[1][0].equals(got[3][0])
    assert got[1][1] == got[3][1] and len(got[1][1]) == 2      # the damaged batch and its reason


def _partitions(root, codec, partitions=4, batches=20):
    """``partitions`` one-segment partitions of 1,000-record batches of 90-byte values that
    compress little (about 1.8 MB of batches each, compressed or not; kafkarec's builder, which
    compresses whatever the ratio)."""
    import random
    rng = random.Random(21)
    for p in range(partitions):
        w = PartitionWriter(str(root), "t", p, segment_bytes=64 << 20)
        for k in range(batches):
            w.append(kafkarec.build_batch([rng.randbytes(70) + b"-order-paid-eur-" for _ in range(1000)],
                                          [b"k%d" % i for i in range(1000)],
                                          [T0 + 1000 * k + i for i in range(1000)],
                                          compression=kafkarec.Compression[codec.upper()]))
        w.close()
    return str(root)


@pytest.mark.parametrize("codec, pooled", [("none", False), ("zstd", True), ("lz4", True)])
def test_a_read_of_several_compressed_partitions_under_a_window_decodes_on_the_pool(
        tmp_path, monkeypatch, codec, pooled):
    """A read of several pieces goes to the pool when their decoding is worth the threads: a
    compressed piece's bytes weigh several times an uncompressed one's.  ~7 MB of segments in four
    partitions: read on one thread uncompressed, on the pool compressed (four zstd partitions
    of 54 MB, under a window, were read on one core at any ``threads``)."""
    root = _partitions(tmp_path, codec)
    plain, decoded_on = local.iter_pieces, []

    def seen(sl):       # a window is mapped by the thread that decodes it
        decoded_on.append(threading.current_thread().name)
        return plain(sl)
    monkeypatch.setattr(local, "iter_pieces", seen)
    got = LogScan(root, threads=2, columns=["offset", "key", "value"]).to_table()
    assert got.num_rows == 4 * 20 * 1000
    assert len(decoded_on) == 4
    on_pool = [name.startswith("kafkarec-decode") for name in decoded_on]
    assert all(on_pool) if pooled else not any(on_pool), decoded_on
    assert got.equals(LogScan(root, threads=1, columns=["offset", "key", "value"]).to_table())
    assert not _decode_threads()


def _engine_types(schema):
    """``schema`` as DuckDB and Polars take it: DuckDB's microseconds, Polars' binary views."""
    return pa.schema([f.with_type(pa.timestamp("us")) if f.name == "timestamp" else
                      f.with_type(pa.binary_view()) if f.name in ("key", "value") else f for f in schema])


@pytest.mark.parametrize("options", [{}, {"columns": ["offset", "timestamp", "key", "value"]},
                                     {"bounds": Bounds(timestamps=(T0 + 1000, T0 + 4000))},
                                     {"columns": ["key"], "limit": 1234}])
def test_batches_in_an_engines_types_are_the_reads_rows_on_any_threads(partition, small_windows, options):
    one = _table(partition, 1, **options)
    assert one.num_rows > 0
    target = _engine_types(one.schema)
    for threads in (1, 3):
        scan = LogScan(partition, threads=threads, **options)
        got = pa.Table.from_batches(list(scan.batches_in(target)), schema=target)
        assert got.equals(one.cast(target))


def test_batches_in_an_engines_types_keep_the_error_rows(tmp_path, small_windows):
    root = _corrupted(tmp_path)
    for mode in ("PERMISSIVE", "DROPMALFORMED"):
        one = _table(root, 1, mode=mode)
        target = _engine_types(one.schema)
        for threads in (1, 3):
            got = pa.Table.from_batches(list(LogScan(root, threads=threads, mode=mode).batches_in(target)),
                                        schema=target)
            assert got.equals(one.cast(target)), (mode, threads)
    with pytest.raises(ValueError, match="not the read's"):
        next(LogScan(root).batches_in(pa.schema([pa.field("offset", pa.int64())])))


def test_a_reads_threads_are_kept_for_the_next_read_and_end_when_asked(partition, small_windows):
    """The pool's threads are lent to a read and handed back when it is done: the next read is
    decoded by the same threads (their allocator heaps hold the pages the last read freed), none
    of them named as a read's while idle; ended on request, the next read starts new ones."""
    want = _table(partition, 1, columns=["offset", "value"])
    _threads.end_idle_threads()
    seen = []
    plain = _read.Read.decode_ahead

    def noted(self, *args):
        seen.append(threading.current_thread())
        yield from plain(self, *args)
    try:
        _read.Read.decode_ahead = noted
        assert _table(partition, 2, columns=["offset", "value"]).equals(want)
        first = set(seen)
        assert len(first) == 2 and not _decode_threads()
        assert _threads.idle_threads() == 3        # two decoding, one planning
        seen.clear()
        assert _table(partition, 2, columns=["offset", "value"]).equals(want)
        assert set(seen) == first
        _threads.end_idle_threads()
        assert _threads.idle_threads() == 0 and not any(t.is_alive() for t in first)
        seen.clear()
        assert _table(partition, 2, columns=["offset", "value"]).equals(want)
        assert len(set(seen)) == 2 and not set(seen) & first
    finally:
        _read.Read.decode_ahead = plain


def test_lent_threads_run_every_task_given_and_are_handed_back_after_them():
    """LentThreads as the pool uses it: tasks run on its threads alone, a task's exception is its
    future's, a task cancelled before it starts never runs, and shutdown returns once every task
    given is done, the threads then idle (and named so)."""
    _threads.end_idle_threads()
    lent = _threads.LentThreads(2, thread_name_prefix="kafkarec-decode-test")
    started, release = threading.Barrier(3), threading.Event()
    ran = []

    def held(n):
        started.wait(10)
        release.wait(10)
        ran.append(n)
        return threading.current_thread().name

    first = [lent.submit(held, n) for n in range(2)]
    started.wait(10)                    # both threads busy: a third task waits its turn
    cancelled = lent.submit(ran.append, "never")
    failing = lent.submit(lambda: 1 / 0)
    assert cancelled.cancel()
    release.set()
    lent.shutdown(wait=True)
    assert sorted(f.result() for f in first) == ["kafkarec-decode-test_0", "kafkarec-decode-test_1"]
    assert isinstance(failing.exception(), ZeroDivisionError)
    assert sorted(ran) == [0, 1]
    assert _threads.idle_threads() == 2
    assert not [t for t in threading.enumerate() if t.name.startswith("kafkarec-decode-test")]
    with pytest.raises(RuntimeError):
        lent.submit(ran.append, "late")
    _threads.end_idle_threads()


def test_a_fork_after_a_read_leaves_no_idle_thread_and_no_warning(partition, small_windows, tmp_path):
    """Idle threads end before the process forks: Python warns of a fork with threads running, and
    a child has none of its parent's threads.  A process that exits with a read never closed, its
    threads in the middle of it, exits (the threads handed back, then ended)."""
    import subprocess
    import sys
    script = f"""
import os, sys, threading, warnings
warnings.simplefilter("error")
from kafkarec.log import local
local.READ_WINDOW_BYTES = {WINDOW}
from kafkarec.scan import LogScan
from kafkarec.scan import _threads
assert LogScan({partition!r}, threads=2, columns=["offset"]).to_table().num_rows == 6000
assert _threads.idle_threads() == 3
pid = os.fork()
if pid == 0:
    os._exit(0 if threading.active_count() == 1 and _threads.idle_threads() == 0 else 3)
assert os.waitpid(pid, 0)[1] == 0
assert _threads.idle_threads() == 0 and threading.active_count() == 1
reader = iter(LogScan({partition!r}, threads=2, columns=["offset"], max_rows_per_batch=10))
next(reader)
dropped = _threads.LentThreads(1)       # never shut down, still referred to at exit
print("left open")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "left open"


def test_a_lending_dropped_or_shut_down_from_its_own_thread_comes_back():
    """A lending never shut down is handed back by the collector (its threads would otherwise wait
    on its queue for ever, and a process could not exit); one shut down from a task on its own
    thread (a read's generator finalized there) does not wait for that thread; a second shutdown
    with ``wait`` waits as the first did."""
    import gc
    _threads.end_idle_threads()
    lent = _threads.LentThreads(2, thread_name_prefix="kafkarec-decode-test")
    assert lent.submit(lambda: 7).result(10) == 7
    del lent
    gc.collect()
    deadline = time.monotonic() + 60
    while _threads.idle_threads() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _threads.idle_threads() == 2
    lent = _threads.LentThreads(2, thread_name_prefix="kafkarec-decode-test")
    inner = lent.submit(lambda: lent.shutdown(wait=True))
    assert inner.result(60) is None
    lent.shutdown(wait=True)
    assert _threads.idle_threads() == 2
    _threads.end_idle_threads()


def test_a_reads_tail_is_cut_smaller_for_its_threads(tmp_path, small_windows, monkeypatch):
    """Where a pool's read has a window for every thread but one or less left, each window is cut at
    the batch start where it would pass its share of the bytes left to the read's end (the bytes
    after it shared among the threads, at least an eighth of a window: TailWindows); before that,
    whole windows; a file under its share and the least window is read whole (not walked to be
    cut).  So the windows shrink towards the end and the threads end together.  On one thread,
    whole windows.  The rows are the same."""
    folder = str(tmp_path / "t-0")
    rows = _segments(folder, [30, 10, 10, 3])     # 22,230, 7,410, 7,410 and 2,223 bytes (741 a batch)
    mapped = []
    plain = local.iter_pieces

    def counted(sl):
        mapped.append((int(os.path.basename(sl.path)[:20]), sl.start, sl.end))
        yield from plain(sl)
    monkeypatch.setattr(local, "iter_pieces", counted)
    want = LogScan(folder, threads=1, columns=["offset", "value"]).to_table()
    sizes = {0: 22230, 300: 7410, 400: 7410, 500: 2223}
    assert sorted(mapped) == [(0, 0, 8151), (0, 8151, 16302), (0, 16302, 22230), (300, 0, 7410),
                              (400, 0, 7410), (500, 0, 2223)]      # whole windows (8,192: 11 batches)
    least = WINDOW // _read.TAIL_WINDOW_MIN_SHARE
    for threads in (2, 3, 4, 16):
        mapped.clear()
        got = LogScan(folder, threads=threads, columns=["offset", "value"]).to_table()
        assert got.equals(want) and got.num_rows == rows
        windows = sorted(mapped)

        def share(left, after):         # a window's bytes, with `left` of its file and `after` to read
            rest = left + after
            return WINDOW if rest > (threads - 1) * WINDOW else max(least, -(-rest // threads))
        for name, size in sizes.items():        # each segment cut whole, at batch starts
            cuts = [(a, b) for n, a, b in windows if n == name]
            assert cuts[0][0] == 0 and cuts[-1][1] == size and all((b - a) % 741 == 0 for a, b in cuts)
            assert all(cuts[i][1] == cuts[i + 1][0] for i in range(len(cuts) - 1))
            after = sum(v for n, v in sizes.items() if n > name)
            if size <= WINDOW and size < share(size, after) + least:
                assert cuts == [(0, size)], (threads, name, cuts)   # under its share and the least: whole
                continue
            for a, b in cuts:
                # (a window ends at the last batch start within its share, or holds one batch)
                assert b - a <= max(share(size - a, after), 741), (threads, name, a, b)
                assert b == size or b - a + 741 > share(size - a, after), (threads, name, a, b)
        # the tail: the windows that end the read are smaller than a window, more of them
        assert windows[-1][2] - windows[-1][1] < WINDOW and len(windows) > 6, windows


def test_a_permissive_error_row_stands_at_its_batch_whatever_the_windows(tmp_path, monkeypatch):
    """An error row stands where its batch is among the records, at every window size and chunk
    size, on one thread or several: the rows of the batches before it come before it, the rows after,
    after (it stood after the Arrow chunk holding its batch, so it moved with where a window or a
    chunk ended: fuzz_threads' finding, which held back the last piece's cut above)."""
    folder = str(tmp_path / "t-0")
    _segments(folder, [30, 12])
    damaged = {(0, 3), (0, 4), (0, 17), (0, 29), (300, 0)}      # (segment, batch): a record byte
    for base, i in damaged:
        with open(os.path.join(folder, "%020d.log" % base), "r+b") as fh:
            fh.seek(i * 741 + 700)
            byte = fh.read(1)
            fh.seek(i * 741 + 700)
            fh.write(bytes([byte[0] ^ 0xFF]))
    bad = {base + i * 10 for base, i in damaged}        # the base offsets of the damaged batches
    want = []
    for base in range(0, 420, 10):
        if base in bad:
            want.append(None)
        else:
            want += range(base, base + 10)
    for window in (741, 741 * 2 + 1, 741 * 5, 8192, 64 << 20):
        monkeypatch.setattr(local, "READ_WINDOW_BYTES", window)
        for threads in (1, 2, 3):
            for rows_per_batch in (7, 25, 10_000):
                got = LogScan(folder, threads=threads, mode="PERMISSIVE", max_rows_per_batch=rows_per_batch,
                              columns=["offset", "_corrupt_record"]).to_table()
                assert got.column("offset").to_pylist() == want, (window, threads, rows_per_batch)
                errors = [e for e in got.column("_corrupt_record").to_pylist() if e is not None]
                assert len(errors) == len(damaged) and all("ChecksumError" in e for e in errors)
