"""LogScan's ``value_layout="view"`` (issue 80 item 2): ``key`` and ``value`` as ``binary_view``.
The rows are the classic layout's on any threads, local and listed, in every mode.  A local window
is mapped, as in the classic layout, and its long keys and values copied into the batch's own
bytes: no batch points into a map, so a file truncated under a read that holds view batches
neither kills the process nor changes a row read, and the file that shrank is reported as it is
today (a FileChangedError)."""
import json
import os
import subprocess
import sys
import textwrap
import types

import pyarrow as pa
import pytest

from kafkarec.errors import UsageError
from kafkarec.log import local
from kafkarec.scan import Bounds, LogScan

from support.logs.proc_maps import MAPS, mapped_files
from support.logs.logdir import T0, PartitionWriter, mixed_codec_partition, sample_records, v2_batch

WINDOW = 8192


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    """One partition of 3 segments, 300 batches of 10 records, uncompressed, zstd and lz4."""
    return mixed_codec_partition(tmp_path_factory.mktemp("viewpart"), 300, 100_000)


def classic(table):
    return table.cast(pa.schema([f.with_type(pa.binary()) if f.type == pa.binary_view() else f
                                 for f in table.schema]))


@pytest.mark.parametrize("options", [{}, {"columns": ["offset", "key", "value"]},
                                     {"bounds": Bounds(offsets=(40, 2500))},
                                     {"bounds": Bounds(keys=[b"k1", b"k3"])},
                                     {"columns": ["offset", "timestamp"]}, {"limit": 777},
                                     {"batch_columns": True, "mode": "PERMISSIVE"}])
def test_a_view_read_gives_the_copy_reads_rows(partition, monkeypatch, options):
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", WINDOW)
    copied = LogScan(partition, threads=1, **options).to_table()
    assert copied.num_rows > 0
    for threads in (1, 3):
        scan = LogScan(partition, threads=threads, value_layout="view", **options)
        viewed = scan.to_table()
        assert viewed.schema == scan.schema
        if "key" in viewed.schema.names:
            assert viewed.schema.field("key").type == pa.binary_view()
        viewed.validate(full=True)
        assert classic(viewed).equals(copied), threads


@pytest.mark.skipif(not os.path.exists(MAPS), reason="reads /proc/self/maps (Linux)")
@pytest.mark.parametrize("threads", [1, 2])
def test_a_view_reads_batches_hold_no_map(partition, monkeypatch, threads):
    """Its windows are mapped as the classic layout's are (every piece it decodes is a map), and
    the batches it hands on point into none of them: with every batch held, and the read over,
    no file of the partition is mapped in the process."""
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", WINDOW)
    owners = []
    plain = local.iter_pieces

    def seen(sl):
        for piece in plain(sl):
            if not isinstance(piece, dict):
                owners.append(type(piece.data.obj).__name__)
            yield piece
    monkeypatch.setattr(local, "iter_pieces", seen)
    batches = list(LogScan(partition, threads=threads, value_layout="view", columns=["offset", "key", "value"]))
    assert sum(rb.num_rows for rb in batches) == 3000 and set(owners) == {"mmap"}
    assert not mapped_files(partition)
    assert all(len(rb.column("value").buffers()) == 3 for rb in batches)    # views, copied, validity


def test_batches_in_binary_view_of_a_view_read_casts_nothing(partition, monkeypatch):
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", WINDOW)
    scan = LogScan(partition, threads=2, value_layout="view")
    target = pa.schema([f.with_type(pa.timestamp("us")) if f.name == "timestamp" else f for f in scan.schema])
    got = pa.Table.from_batches(list(scan.batches_in(target)), schema=target)
    assert classic(got).equals(classic(LogScan(partition, threads=1).to_table().cast(
        pa.schema([f.with_type(pa.timestamp("us")) if f.name == "timestamp" else f for f in LogScan(partition).schema]))))


def test_the_layout_is_checked():
    with pytest.raises(UsageError, match="value_layout"):
        LogScan("/nowhere", value_layout="views")


# A read that holds view batches while the file under it is truncated: run in a process of its
# own, so that a regression (views into a map: SIGBUS) fails this test instead of killing the run.
TRUNCATED_UNDER_THE_READ = textwrap.dedent("""
    import json, os, sys
    from kafkarec.log import local
    from kafkarec.scan import LogScan
    root, layout, mode = sys.argv[1:]
    local.READ_WINDOW_BYTES = 8192
    log = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".log"))[0]
    reader = iter(LogScan(root, threads=1, value_layout=layout, mode=mode))
    held = [next(reader)]                   # the first window's batches, held
    with open(log, "r+b") as fh:            # the file truncated under the read, then written over
        fh.truncate(20_000)
    with open(log, "r+b") as fh:
        fh.truncate(0)
    error = None
    try:
        held += list(reader)
    except Exception as exc:
        error = type(exc).__name__ + ": " + str(exc)
    rows = [(rb.column("offset").to_pylist(), [bytes(v) if v is not None else None
            for v in rb.column("value").to_pylist()],
            rb.column("_corrupt_record").to_pylist() if "_corrupt_record" in rb.schema.names else None)
            for rb in held]
    print(json.dumps({"rows": rows, "error": error}, default=repr))
""")


def run_truncated(root, layout, mode):
    out = subprocess.run([sys.executable, "-c", TRUNCATED_UNDER_THE_READ, root, layout, mode],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])     # -7: SIGBUS
    return json.loads(out.stdout)


@pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE"])
def test_a_file_truncated_under_a_view_read_is_reported_and_the_rows_read_stay(tmp_path, mode):
    """The first segment truncated (to 0 bytes at last) while the read holds its first window's view
    batches: the process lives, those rows are what they were, and the file that shrank is
    reported as the classic layout's read reports it (the same rows, the same error)."""
    got = {}
    for layout in ("copy", "view"):
        root = tmp_path / layout
        w = PartitionWriter(str(root), "t", 0, segment_bytes=60_000)
        for k in range(200):
            w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=60), codec=("none", "zstd")[k % 2]))
        w.close()
        got[layout] = json.loads(json.dumps(run_truncated(str(root), layout, mode)).replace(str(root), "ROOT"))
    assert got["view"] == got["copy"]
    first = got["view"]["rows"][0]
    assert first[0] == list(range(len(first[0]))) and len(first[0]) > 0
    assert first[1][0] == repr(b"value-0-" + b"x" * 60)
    # (a local read gives the file that shrank as an error row whatever the mode: its message in
    # the corrupt record's column where the read has one)
    assert got["view"]["error"] is None
    assert [offsets for offsets, _, _ in got["view"]["rows"] if offsets == [None]]
    if mode == "PERMISSIVE":
        assert "ROOT/t-0/00000000000000000000.log: the file shrank from" in json.dumps(got["view"]["rows"])


def test_a_window_of_a_file_that_shrank_reports_it_and_maps_what_is_left(tmp_path):
    """A file shorter than when its window was planned: the FileChangedError first, at the size
    the file has, then what is left of the window, mapped (never a map past the file's end)."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"x" * 5000)
    sl = local.Slice(str(path), 1000, 9000, "t", 0)
    pieces = local.iter_pieces(sl)
    error = next(pieces)
    assert error["error"] == "FileChangedError" and error["position"] == 5000
    assert "shrank from 9000 to 5000" in error["message"]
    piece = next(pieces)
    assert piece.position == 1000 and bytes(piece.data) == b"x" * 4000
    pieces.close()


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED", "FAILFAST"])
def test_damaged_batches_read_the_same_in_both_layouts_in_each_mode(tmp_path, monkeypatch, mode):
    """Batches whose CRC fails, one with a record cut short, in each mode: the same rows and error
    rows (PERMISSIVE, DROPMALFORMED) or the same error after the same rows (FAILFAST)."""
    monkeypatch.setattr(local, "READ_WINDOW_BYTES", WINDOW)
    root = tmp_path / "damaged"
    w = PartitionWriter(str(root), "d", 0, segment_bytes=30_000)
    for k in range(90):
        batch = bytearray(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=60), codec=("none", "lz4")[k % 2]))
        if k in (17, 41):
            batch[-3] ^= 0xFF       # a record's (or the compressed records') byte: the CRC fails
        w.append(bytes(batch))
    w.close()

    def outcome(layout, threads):
        rows = []
        try:
            for rb in LogScan(str(root), threads=threads, mode=mode, value_layout=layout):
                rows += classic(pa.Table.from_batches([rb])).to_pylist()
            return rows, None
        except Exception as exc:        # FAILFAST's error, compared below
            return rows, str(exc)
    copied = outcome("copy", 1)
    assert copied[0] and (copied[1] is not None) == (mode == "FAILFAST")
    for threads in (1, 3):
        assert outcome("view", threads) == copied, threads


@pytest.mark.parametrize("mode", ["PERMISSIVE", "FAILFAST"])
@pytest.mark.parametrize("layout", ["copy", "view"])
def test_a_segment_deleted_after_the_read_was_planned_is_reported_and_the_others_read(tmp_path, mode, layout):
    """A segment retention deletes between the listing and its read (a registered table's query on a
    live broker's log dir): no FileNotFoundError out of the read; the file's FileChangedError is
    reported as a file that shrank is (an error row, whatever the mode), and every other segment's
    rows are read.  (A broker's test of the same, by retention: tests/broker/test_broker_scan.py.)"""
    w = PartitionWriter(str(tmp_path), "t", 0, segment_bytes=20_000)
    for k in range(60):
        w.append(v2_batch(sample_records(10, start_ts=T0 + 10 * k, size=60)))
    w.close()
    folder = tmp_path / "t-0"
    segments = sorted(p for p in os.listdir(folder) if p.endswith(".log"))
    assert len(segments) > 2
    whole = LogScan(str(tmp_path), columns=["offset"], value_layout=layout).to_table().column("offset").to_pylist()
    scan = LogScan(str(tmp_path), mode=mode, value_layout=layout)
    scan.pieces()                           # listed and planned
    gone = folder / segments[1]
    first_of_next = int(segments[2].split(".")[0])
    first_gone = int(segments[1].split(".")[0])
    os.remove(gone)
    table = scan.to_table()
    errors = [r for r in table.to_pylist() if r["offset"] is None]
    assert len(errors) == 1
    if mode == "PERMISSIVE":        # (the message where the read has a corrupt record's column)
        assert f"{gone}: the file was deleted after the read was planned" in errors[0]["_corrupt_record"]
    offsets = [o for o in table.column("offset").to_pylist() if o is not None]
    assert offsets == [o for o in whole if not first_gone <= o < first_of_next]
