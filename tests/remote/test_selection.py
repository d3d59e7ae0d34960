"""kafkarec.log.selection: Spark Kafka-source options over log directories, checked against
filtering a full read; side files missing, corrupt or stale change nothing; the bytes read
stay within the index lookups and the batches selected."""
from __future__ import annotations

import glob
import json
import os
import random
import shutil
import struct

import pytest

from kafkarec.log import layout, selection, storage
from kafkarec.log.segment import Segment
from support.logs.logdir import PartitionWriter, sample_records, v2_batch
from support.brokers.readers import planned_rows, range_rows, scan_rows

T0 = 1_700_000_000_000
INTERVAL = 400          # index.interval.bytes of the writer


@pytest.fixture(scope="module")
def logroot(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("sel"))
    rnd = random.Random(5)
    for topic, parts in (("orders", 3), ("audit-log", 1)):
        for p in range(parts):
            w = PartitionWriter(root, topic, p, segment_bytes=3000, index_interval_bytes=INTERVAL)
            for k in range(45):
                # timestamps mostly rising, sometimes back in time (producers' clocks)
                ts = T0 + 1000 * k + (-2500 if k % 11 == 7 else 0) + rnd.randrange(50)
                w.append(v2_batch(sample_records(3 + k % 4, start_ts=ts, size=30), codec=["none", "lz4"][k % 2]))
            w.close()
    return root


def full_read(root):
    out = []
    for path in sorted(glob.glob(os.path.join(root, "*", "*.log"))):
        topic, _, part = os.path.basename(os.path.dirname(path)).rpartition("-")
        with Segment(path) as seg:
            for b in seg.batches():
                for r in b:
                    out.append((topic, int(part), r.offset, r.timestamp, r.value))
    return sorted(out)


def _ms(ts):
    return int(ts.timestamp() * 1000) if hasattr(ts, "timestamp") else ts


def _tuples(rows_by_topic, partition=None):
    return [(t, row.get("partition", partition), row["offset"], _ms(row["timestamp"]), row["value"])
            for t, rows in rows_by_topic.items() for row in rows]


def run(uri, options, storage_opts=None, *, arrow=False):
    """The selected records: the one reader's (LogScan), or with ``arrow`` each planned range
    decoded by the core (the log layer's planning and ranged reads)."""
    sel = selection.parse_selection(options)
    columns = ("partition", "offset", "timestamp", "value")
    if not arrow:
        return sorted(_tuples(scan_rows(uri, columns, selection=sel, storage_options=storage_opts)))
    st, path = storage.resolve(uri, storage_opts)
    lay = layout.scan(st, path)
    return sorted(_tuples(planned_rows(st, sel, lay=lay, columns=columns)))


def run_selected(uri, sel):
    return sorted(_tuples(scan_rows(uri, ("partition", "offset", "timestamp", "value"), selection=sel)))


def oracle(rows, *, topics=None, pattern=None, start=None, end=None):
    """``start``/``end``: {(topic, p): offset} or ("ts", T) or None; Spark's semantics."""
    import re
    parts = sorted({(t, p) for t, p, *_ in rows})
    out = []
    for tp in parts:
        if topics is not None and tp[0] not in topics:
            continue
        if pattern is not None and not re.fullmatch(pattern, tp[0]):
            continue
        recs = [r for r in rows if r[:2] == tp]

        def bound(spec, default):
            if spec is None:
                return default
            if isinstance(spec, tuple):      # no record at or after the time: the log's end
                hits = [r[2] for r in recs if r[3] >= spec[1]]
                return min(hits) if hits else 2**63
            return spec.get(tp, default)
        lo, hi = bound(start, -1), bound(end, 2**63)
        out += [r for r in recs if lo <= r[2] < hi]
    return sorted(out)


@pytest.fixture(scope="module")
def rows(logroot):
    return full_read(logroot)


def test_no_options_is_everything(logroot, rows):
    assert run(logroot, {}) == rows
    assert run(logroot, {}, arrow=True) == rows


def test_topics_and_pattern(logroot, rows):
    assert run(logroot, {"topics": "audit-log"}) == oracle(rows, topics={"audit-log"})
    assert run(logroot, {"topicPattern": "ord.*"}) == oracle(rows, pattern="ord.*")
    assert run(logroot, {"topicPattern": "ord"}) == []           # a whole-name match, as Spark's


def test_offsets_json(logroot, rows):
    starting = {"orders": {"0": 23, "1": -2, "2": 101}}
    ending = {"orders": {"0": 77, "1": 5, "2": -1}}
    got = run(logroot, {"topics": "orders", "startingOffsets": json.dumps(starting),
                        "endingOffsets": json.dumps(ending)})
    want = oracle(rows, topics={"orders"}, start={("orders", 0): 23, ("orders", 2): 101},
                  end={("orders", 0): 77, ("orders", 1): 5})
    assert got == want and got
    assert run(logroot, {"topics": "orders", "startingOffsets": json.dumps(starting),
                         "endingOffsets": json.dumps(ending)}, arrow=True) == want


@pytest.mark.parametrize("k", [0, 3, 7, 8, 20, 44])
def test_timestamps(logroot, rows, k):
    t_start = T0 + 1000 * k + 20
    t_end = t_start + 9000
    got = run(logroot, {"startingTimestamp": str(t_start), "endingTimestamp": str(t_end),
                        "startingOffsetsByTimestampStrategy": "latest"})
    assert got == oracle(rows, start=("ts", t_start), end=("ts", t_end))
    by = {"orders": {"0": t_start, "1": t_start - 5000, "2": t_end}, "audit-log": {"0": t_start}}
    got = run(logroot, {"startingOffsetsByTimestamp": json.dumps(by),
                        "startingOffsetsByTimestampStrategy": "latest"}, arrow=True)
    want = []
    for (t, p), ts in {("orders", 0): t_start, ("orders", 1): t_start - 5000, ("orders", 2): t_end,
                       ("audit-log", 0): t_start}.items():
        want += [r for r in oracle(rows, start=("ts", ts)) if r[:2] == (t, p)]
    assert got == sorted(want)


def test_spark_rules(logroot):
    with pytest.raises(selection.SelectionError, match="streaming"):
        selection.parse_selection({"startingOffsets": "latest"})
    with pytest.raises(selection.SelectionError, match="every partition"):
        run(logroot, {"startingOffsets": json.dumps({"orders": {"0": 5}})})
    with pytest.raises(selection.SelectionError, match="at or after"):
        run(logroot, {"startingTimestamp": str(T0 + 10**9)})
    assert run(logroot, {"startingTimestamp": str(T0 + 10**9),
                         "startingOffsetsByTimestampStrategy": "latest"}) == []
    with pytest.raises(selection.SelectionError, match="not JSON"):
        selection.parse_selection({"endingOffsets": "{nope"})


def _damage(root, how):
    for path in glob.glob(os.path.join(root, "orders-*", "*.index")) + \
            glob.glob(os.path.join(root, "orders-*", "*.timeindex")):
        data = bytearray(open(path, "rb").read())
        if how == "missing":
            os.remove(path)
            continue
        if how == "corrupt":
            data = data[:-3] if len(data) > 3 else b"\x01\x02\x03"
        elif how == "early" and path.endswith(".index"):
            # positions that point before the batches they name (an index of a log that
            # was rewritten with bigger batches): ends cut too early unless checked
            for i in range(len(data) // 8):
                rel, pos = struct.unpack_from(">ii", data, i * 8)
                struct.pack_into(">ii", data, i * 8, rel, max(1, pos - 150 - 40 * i))
        elif how == "stale" and len(data) >= 16:
            # every entry moved: offsets/positions that pass the sanity checks but do not
            # describe this log (as left by an earlier, replaced segment)
            size = 8 if path.endswith(".index") else 12
            n = len(data) // size
            for i in range(n):
                if path.endswith(".index"):
                    rel, pos = struct.unpack_from(">ii", data, i * size)
                    struct.pack_into(">ii", data, i * size, rel + 1, pos + 7 * (i + 1))
                else:
                    ts, rel = struct.unpack_from(">qi", data, i * size)
                    struct.pack_into(">qi", data, i * size, ts + 700, rel + 2)
        with open(path, "wb") as fh:
            fh.write(bytes(data))


@pytest.mark.parametrize("how", ["missing", "corrupt", "stale", "early"])
def test_bad_side_files_change_nothing(logroot, rows, tmp_path, how):
    root = str(tmp_path / "copy")
    shutil.copytree(logroot, root)
    _damage(root, how)
    cases = [{"startingOffsets": json.dumps({"orders": {"0": 40, "1": 7, "2": 150}}),
              "endingOffsets": json.dumps({"orders": {"0": 120, "1": 61, "2": -1}}), "topics": "orders"},
             {"startingTimestamp": str(T0 + 17_020), "endingTimestamp": str(T0 + 30_020),
              "topics": "orders"}]
    for options in cases:
        want = run(logroot, options)
        assert want
        assert run(root, options) == want, options
        assert run(root, options, arrow=True) == want, options


def test_reads_only_what_the_index_says(logroot, rows):
    part_dir = os.path.join(logroot, "orders-1")
    segments = sorted(glob.glob(os.path.join(part_dir, "*.log")))
    assert len(segments) >= 4
    recs = [r for r in rows if r[:2] == ("orders", 1)]
    lo, hi = recs[len(recs) // 2][2], recs[len(recs) // 2 + 12][2]
    spans = []          # (path, position, size, base, last) of every batch
    for path in segments:
        with Segment(path) as seg:
            spans += [(path, b.position, b.size_in_bytes, b.base_offset, b.last_offset) for b in seg.batches()]
    needed = [s for s in spans if s[4] >= lo and s[3] < hi]
    st, path = storage.resolve(logroot)
    options = {"topics": "orders", "startingOffsets": json.dumps({"orders": {"0": -2, "1": lo, "2": -2}}),
               "endingOffsets": json.dumps({"orders": {"0": 0, "1": hi, "2": 0}})}
    stats = storage.ReadStats()
    storage.RangeFile.stats = stats
    try:
        got = run(logroot, options, arrow=True)
    finally:
        storage.RangeFile.stats = None
    assert [r[2] for r in got] == list(range(lo, hi))
    touched = {s[0] for s in needed}
    for path_, n in stats.by_path.items():
        if path_.endswith(".log"):
            assert path_ in touched, f"{path_} read although none of its batches is selected"
            mine = [s for s in needed if s[0] == path_]
            first, last = mine[0], mine[-1]
            # Kafka's granularity: from the index entry at or below the start (at most one
            # index interval plus a batch before it) to the end of the last batch selected.
            assert n <= (last[1] + last[2]) - first[1] + INTERVAL + max(s[2] for s in spans), path_
        else:
            assert path_.endswith(".index") and path_[:-6] + ".log" in touched, path_
    assert sum(n for p, n in stats.by_path.items() if p.endswith(".log")) < \
        sum(os.path.getsize(p) for p in segments) / 2


def test_selection_through_s3(s3, logroot, rows):
    s3.upload_dir(logroot, "selection", "dc1/kafka")
    options = {"topicPattern": "orders|audit-log", "startingTimestamp": str(T0 + 9_020),
               "endingOffsets": json.dumps({"orders": {"0": 90, "1": -1, "2": 120}})}
    local = run(logroot, options)
    assert local
    assert run("s3://selection/dc1/kafka", options, s3.options()) == local
    assert run("s3://selection/dc1/kafka", options, s3.options(), arrow=True) == local


@pytest.mark.parametrize("how", [None, "stale", "early"])
@pytest.mark.parametrize("max_bytes", [300, 1000])
def test_split_ranges_read_each_batch_once(logroot, rows, tmp_path, how, max_bytes):
    root = str(tmp_path / "copy")
    shutil.copytree(logroot, root)
    if how:
        _damage(root, how)
    st, path = storage.resolve(root)
    lay = layout.scan(st, path)
    resolver = selection.Resolver(st)
    for options in ({}, {"topics": "orders", "startingOffsets": json.dumps({"orders": {"0": 33, "1": 2, "2": 90}}),
                         "endingOffsets": json.dumps({"orders": {"0": 140, "1": -1, "2": 160}})}):
        whole = selection.plan(lay, selection.parse_selection(options), resolver)
        parts = selection.split_ranges(whole, resolver, max_bytes)
        assert len(parts) > len(whole)
        got = sorted(t for sr in parts
                     for t in _tuples({sr.topic: range_rows(st, sr, ("partition", "offset", "timestamp", "value"))}))
        assert got == run(logroot, options)


def test_cli_flags(logroot, rows):
    assert selection.parse_time("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert selection.parse_time("2023-11-14 23:13:20+01:00") == 1_700_000_000_000
    assert selection.parse_time("1700000000000") == 1_700_000_000_000
    with pytest.raises(selection.SelectionError, match="ISO 8601"):
        selection.parse_time("yesterday")
    sel = selection.cli_selection(topics="orders", start_offset=10, end_offset=50)
    got = run_selected(logroot, sel)
    assert got == oracle(rows, topics={"orders"},
                         start={("orders", p): 10 for p in range(3)}, end={("orders", p): 50 for p in range(3)})
    t = T0 + 20_020
    sel = selection.cli_selection(start_time=str(t), end_offset=120)
    got = run_selected(logroot, sel)
    parts = sorted({r[:2] for r in rows})
    assert got == oracle(rows, start=("ts", t), end={tp: 120 for tp in parts})


def test_cli_arguments(logroot, rows):
    import argparse
    from kafkarec.cli import selection_args
    parser = argparse.ArgumentParser()
    selection_args.add_selection_arguments(parser)
    args = parser.parse_args(["--topics", "audit-log", "--start-time", "2023-11-14T22:13:25Z",
                              "--end-offset", "60", "--storage-option", "endpoint=http://h:1"])
    assert selection_args.storage_options_from_args(args) == {"endpoint": "http://h:1"}
    sel = selection_args.selection_from_args(args)
    got = run_selected(logroot, sel)
    assert got == oracle(rows, topics={"audit-log"}, start=("ts", 1_700_000_005_000),
                         end={("audit-log", 0): 60}) and got
    assert selection_args.selection_from_args(parser.parse_args([])) is None


# --- a segment without a usable .index: the resolver walks its batch headers, as Kafka rebuilds one

@pytest.fixture(scope="module")
def indexed_and_not(tmp_path_factory):
    """One partition of 1,500 small batches (uncompressed and lz4) in segments of about 160 KB, as
    the writer lays them out with their indexes (``indexed``: Kafka's 4 KiB interval), and a copy
    of the segment files alone (``unindexed``)."""
    indexed = str(tmp_path_factory.mktemp("indexed"))
    w = PartitionWriter(indexed, "t", 0, segment_bytes=160_000)
    for k in range(1500):
        w.append(v2_batch(sample_records(4 + k % 3, start_ts=T0 + 10 * k, size=40), codec=["none", "lz4"][k % 2]))
    w.close()
    unindexed = str(tmp_path_factory.mktemp("unindexed"))
    shutil.copytree(indexed, unindexed, dirs_exist_ok=True)
    for path in glob.glob(os.path.join(unindexed, "*", "*.index")):
        os.remove(path)
    assert len(glob.glob(os.path.join(unindexed, "*", "*.log"))) >= 3
    return indexed, unindexed


def _spans_of(root):
    out = []          # (path, position, size, base, last) of every batch
    for path in sorted(glob.glob(os.path.join(root, "*", "*.log"))):
        with Segment(path) as seg:
            out += [(path, b.position, b.size_in_bytes, b.base_offset, b.last_offset) for b in seg.batches()]
    return out


def test_a_walk_of_the_batch_headers_finds_the_entries_kafkas_index_holds(indexed_and_not):
    """The walk makes the entries LogSegment.append makes (the writer follows it): a batch's last
    offset and position, once more than 4 KiB were appended since the last entry."""
    from kafkarec.log import sidefiles
    indexed, _ = indexed_and_not
    for path in sorted(glob.glob(os.path.join(indexed, "*", "*.log"))):
        base = int(os.path.basename(path)[:-4])
        with open(path[:-4] + ".index", "rb") as fh:
            written = [tuple(e) for e in sidefiles.OffsetIndex(path[:-4] + ".index", base, data=fh.read()).entries()]
        assert len(written) > 20
        assert sidefiles.walked_offset_index(path) == written, path


@pytest.mark.parametrize("bounds", [(0, 10), (0.5, 30), (0.97, None), (0.3, 0.7)])
def test_an_offset_bound_without_an_index_reads_its_batches_not_the_segment(indexed_and_not, bounds):
    """Without a .index an offset bound reads from the walked entry at or below its start to the
    batch holding its end, as with the index (each batch's header walked once, 61 bytes), the same
    rows the indexed copy gives, through the one reader and the log layer's ranged reads."""
    indexed, unindexed = indexed_and_not
    spans = _spans_of(unindexed)
    n = spans[-1][4] + 1
    lo, hi = (int(b * n) if isinstance(b, float) else b for b in bounds)
    options = {"startingOffsets": json.dumps({"t": {"0": lo}}),
               "endingOffsets": json.dumps({"t": {"0": -1 if hi is None else hi}})}
    stats = storage.ReadStats()
    walked = storage.process_walk_bytes().bytes
    storage.RangeFile.stats = stats
    try:
        got = run(unindexed, options, arrow=True)
    finally:
        storage.RangeFile.stats = None
    # the walk: each batch header of the segments planned, once
    assert storage.process_walk_bytes().bytes - walked <= 61 * len(spans)
    assert [r[2] for r in got] == list(range(lo, n if hi is None else hi))
    walked = storage.process_walk_bytes().bytes
    assert run(unindexed, options) == got
    assert storage.process_walk_bytes().bytes - walked <= 61 * len(spans)
    assert got == run(indexed, options, arrow=True) == run(indexed, options)
    needed = [s for s in spans if s[4] >= lo and (hi is None or s[3] < hi)]
    for path, read in stats.by_path.items():
        mine = [s for s in needed if s[0] == path]
        assert mine, f"{path} read although none of its batches is selected"
        first, last = mine[0], mine[-1]
        assert read <= (last[1] + last[2]) - first[1] + 4096 + max(s[2] for s in spans), path
    assert sum(stats.by_path.values()) < sum(os.path.getsize(s) for s in {s[0] for s in spans}) / 2


@pytest.mark.parametrize("damage", ["back", "crc"])
def test_a_damaged_log_without_an_index_reads_as_the_read_judges_it(indexed_and_not, tmp_path, monkeypatch, damage):
    """A batch whose offsets go back makes the walk no index at all (every batch is the read's to
    judge, none skipped: the rows and errors of reading the segment whole); a batch whose CRC
    fails inside the bounds is reported as the indexed copy's read reports it."""
    from kafkarec.log import sidefiles
    indexed, _ = indexed_and_not
    root, bare = str(tmp_path / "damaged"), str(tmp_path / "damaged-bare")
    shutil.copytree(indexed, root)
    spans = _spans_of(root)
    path, pos, size, base, last = spans[len(spans) // 2]
    with open(path, "r+b") as fh:
        if damage == "back":
            fh.seek(pos)
            fh.write(struct.pack(">q", base - 20))      # (outside the CRC)
        else:
            fh.seek(pos + size - 5)
            byte = fh.read(1)
            fh.seek(pos + size - 5)
            fh.write(bytes([byte[0] ^ 0xFF]))
    shutil.copytree(root, bare)
    for p in glob.glob(os.path.join(bare, "*", "*.index")):
        os.remove(p)
    sel = selection.parse_selection({"startingOffsets": json.dumps({"t": {"0": base - 40}}),
                                     "endingOffsets": json.dumps({"t": {"0": last + 30}})})
    columns = ("offset", "timestamp", "value", "_corrupt_record")

    def rows(source):     # (an error names its file: the copies' folders told apart)
        return [(r["offset"], r["value"], r["_corrupt_record"] and r["_corrupt_record"].replace(source, "ROOT"))
                for r in scan_rows(source, columns, selection=sel, mode="PERMISSIVE")["t"]]
    got = rows(bare)
    assert any(r[2] is not None for r in got)       # the damaged batch reported
    if damage == "back":
        assert sidefiles.walked_offset_index(os.path.join(bare, "t-0", os.path.basename(path))) is None
        monkeypatch.setattr(sidefiles, "walked_offset_index", lambda p: None)
        assert got == rows(bare)        # read as without the walk: every batch of the segment judged
    else:
        assert got == rows(root)
