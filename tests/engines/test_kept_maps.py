"""Windows kept mapped between the queries of a registered source (issue 80; kafkarec.log.window_maps).

DuckDB's registered table and Polars' LazyFrame keep the maps of the local windows their reads used
open for the next read (``map_cache_bytes``).  Counted, never timed: the storage layer's counters of
windows mapped (:func:`kafkarec.log.storage.process_window_maps`) and of windows read from a kept
map (:func:`kafkarec.log.storage.process_map_hits`), the cache's own ``held()`` and the process's
``/proc/self/maps``.  The rows are those of a plain :class:`kafkarec.scan.LogScan`, which keeps none.
"""
import gc
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

from support.logs.engine_logs import long_partition  # noqa: E402
from kafkarec.engines.duckdb import register  # noqa: E402
from kafkarec.engines.polars import scan_log  # noqa: E402
from kafkarec.log import local, window_maps  # noqa: E402
from kafkarec.log.storage import process_map_hits, process_walk_bytes, process_window_maps  # noqa: E402
from kafkarec.scan import LogScan  # noqa: E402
from support.logs.proc_maps import MAPS, mapped_files  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(MAPS), reason="reads /proc/self/maps (Linux)")

QUERY = 'SELECT "offset", key, value, timestamp FROM logs ORDER BY "offset"'


@pytest.fixture(scope="module")
def pooled_log(tmp_path_factory):
    """``(root, folder)``: one partition of ~33 MB in 8 MiB segments: enough work that a read on
    2 threads decodes its windows on the pool (kafkarec.scan._read.POOL_MIN_WORK)."""
    root = str(tmp_path_factory.mktemp("pooled"))
    return root, long_partition(root, records=300_000, per_batch=100, segment_bytes=8 << 20)


@pytest.fixture
def log_copy(long_log, tmp_path):
    """``(root, folder)``: a copy of the engine tests' long partition (~30 segments), to change."""
    root, folder = long_log
    copy = str(tmp_path / "copy")
    shutil.copytree(root, copy)
    return copy, os.path.join(copy, os.path.relpath(folder, root))


def _counts():
    return process_window_maps().requests, process_map_hits().requests


def _segments(folder: str) -> list:
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".log"))


def _plain(root, **options) -> list:
    return sorted(LogScan(root, columns=["offset", "key", "value"], **options).to_table().to_pylist(),
                  key=lambda r: r["offset"])


def _rows(con, query=QUERY) -> list:
    return con.sql(query).fetchall()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_second_query_maps_no_window_anew(pooled_log, threads):
    root, folder = pooled_log
    con = duckdb.connect()
    src = register(con, "logs", root, threads=threads)
    before = _counts()
    first = _rows(con)
    mapped_first = _counts()[0] - before[0]
    assert mapped_first == len(_segments(folder)) and _counts()[1] == before[1]
    assert len(src.scan.window_maps) == mapped_first
    before = _counts()
    second = _rows(con)
    assert _counts()[0] == before[0], "the second query mapped windows anew"
    assert _counts()[1] - before[1] == mapped_first
    assert second == first
    assert [(o, k, v) for o, k, v, _ in second] == [(r["offset"], r["key"], r["value"]) for r in _plain(root)]
    src.close()
    assert not len(src.scan.window_maps) and not mapped_files(folder)


def test_a_plain_scan_keeps_no_map(long_log):
    root, folder = long_log
    scan = LogScan(root, columns=["offset"])
    scan.to_table()
    before = _counts()
    scan.to_table()
    assert _counts()[0] - before[0] == len(_segments(folder)) and _counts()[1] == before[1]
    assert scan.window_maps is None and not mapped_files(folder)


def test_the_bytes_counted_read_are_the_same_with_a_hit(long_log):
    """A hit's window is decoded whole: counted read as a map's is (the pushdown tests' meaning)."""
    from support.logs.engine_logs import segment_bytes_read
    root, folder = long_log
    con = duckdb.connect()
    register(con, "logs", root)
    _, cold, total = segment_bytes_read(folder, lambda: _rows(con, 'SELECT sum("offset") FROM logs'))
    before = _counts()
    _, warm, _ = segment_bytes_read(folder, lambda: _rows(con, 'SELECT sum("offset") FROM logs'))
    assert _counts()[1] - before[1] == len(_segments(folder))
    assert cold == warm >= total


def test_a_replaced_file_is_never_a_hit(log_copy):
    root, folder = log_copy
    con = duckdb.connect()
    src = register(con, "logs", root)
    first = _rows(con)
    victim = _segments(folder)[3]
    old_inode = os.stat(victim).st_ino
    shutil.copyfile(victim, victim + ".new")
    os.replace(victim + ".new", victim)        # the same bytes, a new inode
    assert os.stat(victim).st_ino != old_inode
    before = _counts()
    assert _rows(con) == first
    assert _counts()[0] - before[0] == 1
    assert _counts()[1] - before[1] == len(_segments(folder)) - 1
    held = src.scan.window_maps.held()
    assert [ino for path, ino, _, _ in held if path == victim] == [os.stat(victim).st_ino]
    assert not [line for line in mapped_files(folder) if "(deleted)" in line]


def test_a_read_over_fewer_segments_lets_the_others_go(log_copy):
    """An offset bound reads the first segment only (a listed range: no map): the maps of the
    segments it left out are closed after it; the next whole read maps them again."""
    root, folder = log_copy
    con = duckdb.connect()
    src = register(con, "logs", root)
    _rows(con)
    segments = _segments(folder)
    assert len(src.scan.window_maps) == len(segments)
    assert len(_rows(con, 'SELECT "offset" FROM logs WHERE "offset" < 100')) == 100
    assert [path for path, *_ in src.scan.window_maps.held()] == segments[:1]
    assert len(mapped_files(folder)) == 1
    before = _counts()
    _rows(con)
    assert _counts()[0] - before[0] == len(segments) - 1 and _counts()[1] - before[1] == 1


def test_a_limit_or_a_view_read_keeps_the_maps_of_the_files_it_planned(log_copy):
    """A read that maps fewer windows of the same files (a limit met in the first) leaves the other
    maps for the next read, and Polars' view read of values maps the same windows as its read of
    offsets."""
    root, folder = log_copy
    con = duckdb.connect()
    src = register(con, "logs", root, threads=1)
    _rows(con)
    assert len(_rows(con, "SELECT * FROM logs LIMIT 5")) == 5
    assert len(src.scan.window_maps) == len(_segments(folder))
    before = _counts()
    _rows(con)
    assert _counts()[0] == before[0]
    lf = scan_log(root)
    lf.select("offset").collect()
    lf.select("offset", "value").collect()        # (the view layout: the same maps)
    before = _counts()
    lf.select("offset").collect()
    assert _counts()[0] == before[0] and _counts()[1] - before[1] == len(_segments(folder))


def test_a_grown_segment_maps_its_new_window_and_lets_the_old_go(log_copy):
    """The last segment grows (bytes appended: here a copy of its first batches, which the
    offset-order rule reports as error rows): its window's end moved, so the next query maps it anew
    and the old map of that file is closed; the other segments' are hits."""
    root, folder = log_copy
    con = duckdb.connect()
    src = register(con, "logs", root, mode="PERMISSIVE")
    _rows(con, 'SELECT "offset" FROM logs')
    last = _segments(folder)[-1]
    size = os.path.getsize(last)
    with open(last, "rb") as fh:
        head = fh.read(size // 4)
    with open(last, "ab") as fh:
        fh.write(head)
    before = _counts()
    _rows(con, 'SELECT "offset" FROM logs')
    assert _counts()[0] - before[0] == 1 and _counts()[1] - before[1] == len(_segments(folder)) - 1
    assert [end for path, _, _, end in src.scan.window_maps.held() if path == last] == [size + len(head)]
    assert len(mapped_files(folder)) == len(_segments(folder))


def _walked(folder: str) -> dict:
    return {p: n for p, n in process_walk_bytes().by_path.items() if os.path.dirname(p) == folder}


def test_a_segment_larger_than_a_window_is_walked_once_while_it_stays_the_same(log_copy, monkeypatch):
    """A segment larger than a window is cut where its batches start, found by a walk of its
    headers: a source keeps the cuts, so its next query walks no header of a file that did not
    change; a grown file is walked again (alone), and so is a file replaced by another of the same
    size (a new inode); the rows are a plain scan's each time."""
    root, folder = log_copy
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 16 << 10)     # (64 KiB segments: four windows each)
    segments = _segments(folder)
    con = duckdb.connect()
    src = register(con, "logs", root, mode="PERMISSIVE", threads=1)
    query = 'SELECT "offset", key, value FROM logs WHERE _corrupt_record IS NULL ORDER BY "offset"'

    def rows_and_walks():
        before = dict(_walked(folder))
        got = _rows(con, query)
        after = _walked(folder)
        return got, {p for p in after if after[p] != before.get(p)}
    first, walked = rows_and_walks()
    assert walked == set(segments)
    assert first == [tuple(r.values()) for r in _plain(root)]
    again, walked = rows_and_walks()
    assert again == first and not walked, walked
    assert len(src.scan.window_maps._state.cuts) == len(segments)
    last = segments[-1]
    with open(last, "ab") as fh:       # (a batch of it again: the offset-order rule's error rows)
        with open(segments[0], "rb") as first_segment:
            fh.write(first_segment.read(4096))
    grown, walked = rows_and_walks()
    assert walked == {last} and grown == first
    third = segments[2]
    copy = third + ".copy"
    shutil.copyfile(third, copy)
    os.replace(copy, third)             # the same bytes, a new inode
    replaced, walked = rows_and_walks()
    assert walked == {third} and replaced == first
    src.close()
    assert not src.scan.window_maps._state.cuts


def test_the_cuts_kept_are_bounded(log_copy, monkeypatch):
    root, folder = log_copy
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", 16 << 10)
    monkeypatch.setattr(window_maps, "CUTS_KEPT", 3)
    con = duckdb.connect()
    src = register(con, "logs", root, threads=1)
    _rows(con)
    assert len(src.scan.window_maps._state.cuts) == 3
    before = dict(_walked(folder))
    _rows(con)
    after = _walked(folder)
    assert len({p for p in after if after[p] != before.get(p)}) >= len(_segments(folder)) - 3


def test_the_budget_holds(log_copy):
    root, folder = log_copy
    sizes = [os.path.getsize(p) for p in _segments(folder)]
    budget = sum(sizes[:5]) + 8192        # five windows (each mapped from its page: a page more)
    con = duckdb.connect()
    src = register(con, "logs", root, map_cache_bytes=budget, threads=1)
    first = _rows(con)
    maps = src.scan.window_maps
    assert 0 < maps.peak_bytes <= budget and len(maps) == 5
    before = _counts()
    assert _rows(con) == first
    assert _counts()[1] - before[1] == 5 and _counts()[0] - before[0] == len(sizes) - 5
    assert maps.peak_bytes <= budget
    assert len(mapped_files(folder)) <= 5


def test_no_budget_keeps_nothing(log_copy):
    root, folder = log_copy
    con = duckdb.connect()
    src = register(con, "logs", root, map_cache_bytes=0)
    _rows(con)
    before = _counts()
    _rows(con)
    assert _counts()[0] - before[0] == len(_segments(folder)) and _counts()[1] == before[1]
    assert src.scan.window_maps is None and not mapped_files(folder)


def test_unregistering_and_collecting_the_source_unmaps_everything(log_copy):
    root, folder = log_copy
    con = duckdb.connect()
    register(con, "logs", root)
    _rows(con)
    assert len(mapped_files(folder)) == len(_segments(folder))
    con.unregister("logs")
    gc.collect()
    assert not mapped_files(folder)
    con2 = duckdb.connect()
    register(con2, "logs", root)
    _rows(con2)
    assert mapped_files(folder)
    con2.close()
    del con2
    gc.collect()
    assert not mapped_files(folder)


def test_a_file_truncated_between_queries_or_under_a_planned_read(log_copy):
    """In a process of its own (a map touched past its file's end would kill it with SIGBUS):
    between two queries, the second reads the shorter file's rows; between a read's plan and its
    read, the read gives the FileChangedError row as without kept maps and the file's maps past its
    new end are dropped."""
    root, folder = log_copy
    victim = _segments(folder)[2]
    script = textwrap.dedent(f"""
        import os, duckdb
        from kafkarec.engines.duckdb import register
        from kafkarec.scan import LogScan
        root, victim = {root!r}, {victim!r}
        size = os.path.getsize(victim)
        con = duckdb.connect()
        src = register(con, "logs", root, mode="PERMISSIVE")
        q = 'SELECT "offset", _corrupt_record FROM logs ORDER BY "offset" NULLS LAST'
        full = con.sql(q).fetchall()
        os.truncate(victim, size // 2)
        shorter = con.sql(q).fetchall()
        plain = LogScan(root, mode="PERMISSIVE", columns=["offset", "_corrupt_record"]).to_table()
        assert sorted(shorter, key=lambda r: (r[0] is None, r[0])) == sorted(
            zip(*(plain.column(c).to_pylist() for c in plain.column_names)), key=lambda r: (r[0] is None, r[0]))
        assert len(shorter) < len(full)
        maps = src.scan.window_maps
        assert all(end <= os.path.getsize(path) for path, _, _, end in maps.held()), maps.held()
        # planned, then truncated under the plan: the FileChangedError row
        scan = src.scan.narrow(columns=["offset", "_corrupt_record"])
        pieces = scan.pieces()
        os.truncate(victim, size // 4)
        got = scan.read_pieces(pieces)
        errors = [e for rb in got for e in rb.column("_corrupt_record").to_pylist() if e is not None]
        assert "shrank from" in errors[0], errors      # (then the cut-off batch at the new end)
        assert all(end <= os.path.getsize(path) for path, _, _, end in maps.held()), maps.held()
        print("ok", len(full), len(shorter))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok")


def test_polars_lazyframe_keeps_its_maps_until_dropped(log_copy):
    root, folder = log_copy
    lf = scan_log(root, value_layout="copy")
    first = lf.select("offset", "key", "value").collect()
    before = _counts()
    second = lf.select("offset", "key", "value").collect()
    assert _counts()[0] == before[0] and _counts()[1] - before[1] == len(_segments(folder))
    assert second.equals(first)
    assert sorted(second.to_dicts(), key=lambda r: r["offset"]) == _plain(root)
    del lf, first, second
    gc.collect()
    assert not mapped_files(folder)


def test_polars_view_reads_keep_their_maps_and_their_frames_hold_none(log_copy):
    """Polars' view layout maps its windows and keeps them, as the classic layout does; the frame
    a collect gives holds no map (its values' views point into the batches' own bytes): closing
    the kept maps leaves no file of the partition mapped while the frame lives."""
    root, folder = log_copy
    lf = scan_log(root)     # the view layout
    lf.select("offset", "value").collect()
    before = _counts()
    frame = lf.select("offset", "value").collect()
    assert _counts()[0] == before[0] and _counts()[1] - before[1] == len(_segments(folder))
    lf.select("offset", "timestamp").collect()      # no key or value: the same maps, kept
    before = _counts()
    assert lf.select(pl.col("offset").sum()).collect().item() == sum(range(20_000))
    assert _counts()[0] == before[0] and _counts()[1] - before[1] == len(_segments(folder))
    del lf
    gc.collect()
    assert not mapped_files(folder)
    assert sorted(frame.to_dicts(), key=lambda r: r["offset"]) == \
        [{"offset": r["offset"], "value": r["value"]} for r in _plain(root)]


def test_a_map_in_use_is_closed_only_when_its_reader_lets_it_go(log_copy):
    """Closing the maps (the source closed, or a read that lets them go) while a read holds a
    window: that window stays mapped until the read is done with it, the read's rows are whole,
    and the windows after it are mapped for that read only."""
    root, folder = log_copy
    scan = LogScan(root, columns=["offset", "value"], map_cache_bytes=1 << 30, threads=1)
    scan.to_table()
    maps = scan.window_maps
    assert len(maps) == len(_segments(folder))
    reading = iter(scan.narrow(columns=["offset", "value"]))
    first = next(reading)           # the first window's map held by the read (a hit)
    scan.close()
    assert not len(maps) and not maps.mapped_bytes
    assert [line.split()[-1] for line in mapped_files(folder)] == _segments(folder)[:1]
    rest = list(reading)
    assert not mapped_files(folder)
    got = [o for rb in [first] + rest for o in rb.column("offset").to_pylist()]
    assert got == [r["offset"] for r in _plain(root)]
    before = _counts()
    scan.to_table()                 # closed: mapped and closed as without kept maps
    assert _counts()[0] - before[0] == len(_segments(folder)) and _counts()[1] == before[1]
    assert not mapped_files(folder)


def test_reads_side_by_side_share_the_maps(pooled_log):
    """Reads of one source on two threads at once, each decoding on its pool (2 threads): the same
    rows as one read, every map let go by each (none pinned after), the budget never passed."""
    from concurrent.futures import ThreadPoolExecutor
    root, folder = pooled_log
    scan = LogScan(root, columns=["offset", "value"], map_cache_bytes=3 * (8 << 20) + 65536, threads=2)
    want = scan.to_table()

    def read(i):
        narrowed = scan.narrow(columns=["offset", "value"]) if i % 2 else scan.narrow(columns=["offset"])
        return narrowed.to_table()
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(read, range(6)))
    for i, table in enumerate(got):
        assert table.column("offset").equals(want.column("offset"))
        if i % 2:
            assert table.column("value").equals(want.column("value"))
    maps = scan.window_maps
    assert maps.peak_bytes <= maps.max_bytes
    scan.close()
    assert not mapped_files(folder)


def test_the_budget_is_checked_at_the_boundary_and_the_maps_never_travel(long_log):
    import pickle
    from kafkarec.errors import UsageError
    root, folder = long_log
    for bad in (-1, True, 1.5, "1G"):
        with pytest.raises(UsageError, match="map_cache_bytes"):
            LogScan(root, map_cache_bytes=bad)
    scan = LogScan(root, columns=["offset"], map_cache_bytes=1 << 20)
    scan.to_table()
    assert len(scan.window_maps)
    copy = pickle.loads(pickle.dumps(scan))     # (to a worker: the budget goes, the maps stay here)
    assert copy.window_maps is None and copy.config == scan.config
    scan.close()
    assert not mapped_files(folder)
