"""Every command over records whose times no Python datetime holds (issue 67, Build 1): a topic
with ``message.timestamp.before/after.max.ms`` at Long.MAX takes CreateTimes past the year 9999,
and ``find`` died with pyarrow's ``OverflowError: date value out of range``.  Times print through
:mod:`kafkarec.times`: milliseconds always, the ISO form only where it exists."""
import json

import pytest

import kafkarec
from kafkarec.cli import main
from kafkarec.times import iso, time_fields, time_text

from support.logs.logdir import PartitionWriter

# -1 (no timestamp), the epoch, the last millisecond of 9999, the first past it, Long.MAX
STAMPS = [-1, 0, 1, 253402300799999, 253402300800000, 2 ** 63 - 1]


@pytest.fixture(scope="module")
def far_times(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("far-times") / "logs")
    w = PartitionWriter(root, "t", 0)
    for i, ts in enumerate(STAMPS):        # a batch each: one batch's deltas cannot span -1 .. Long.MAX
        b = kafkarec.RecordBatchBuilder(base_offset=i)
        b.append(b"v%d" % i, key=b"k%d" % i, timestamp=ts)
        w.append(bytes(b.build()))
    w.close()
    return root


def _run(args, capfd):
    code = main(args)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Error:" not in err, err
    return code, out, err


def test_every_command_prints_every_time(far_times, capfd, tmp_path):
    for args in (["census", far_times, "--no-progress"], ["census", far_times, "--json", "--no-progress"],
                 ["census", far_times, "--what-if", "zstd:3", "--keep-batches", "--no-progress"],
                 ["table", far_times], ["dump", far_times, "--deep-iteration", "--print-data-log"],
                 ["dump", far_times, "--json"], ["stats", far_times], ["stats", far_times, "--json"],
                 ["verify", far_times], ["transactions", far_times]):
        code, out, err = _run(args, capfd)
        assert code == 0, (args, err)
        if args[0] == "dump" and "--json" not in args:
            assert f"CreateTime: {2 ** 63 - 1}" in out
    code, out, _ = _run(["census", far_times, "--json", "--no-progress"], capfd)
    doc = json.loads(out)
    assert (doc["topics"][0]["min_timestamp"], doc["topics"][0]["max_timestamp"]) == (-1, 2 ** 63 - 1)
    code, out, _ = _run(["stats", far_times], capfd)
    assert f".. {2 ** 63 - 1} (CreateTime 6)" in out
    code, out, _ = _run(["table", far_times], capfd)
    rows = {r["key"]: r for r in map(json.loads, out.splitlines())}
    assert [rows[k]["timestamp"] for k in sorted(rows)] == STAMPS
    assert rows["azM="]["timestamp_iso"] == "9999-12-31T23:59:59.999Z" and "timestamp_iso" not in rows["azQ="]
    # a lakehouse table's timestamp holds microseconds: refused with the record named, no traceback
    code, _, err = _run(["backfill", far_times, "--delta", str(tmp_path / "d"), "--layout", "kafka-delta-ingest",
                         "--app-id", "a"], capfd)
    assert code == 1 and f"offset 5: timestamp {2 ** 63 - 1} ms" in err


def test_find_returns_each_record_with_its_exact_time(far_times, capfd):
    for i, ts in enumerate(STAMPS):
        code, out, err = _run(["find", far_times, "--topics", "t", "--key", f"k{i}", "--json"], capfd)
        assert code == 0 and err == "1 record(s) found\n"
        [row] = [json.loads(line) for line in out.splitlines()]
        assert (row["offset"], row["timestamp"], row.get("timestamp_iso")) == (i, ts, iso(ts))
        code, out, _ = _run(["find", far_times, "--topics", "t", "--key", f"k{i}"], capfd)
        assert code == 0 and out.splitlines()[1].split()[3] == time_text(ts)
    # the time bound compares milliseconds as integers, past the year 9999 too
    code, out, _ = _run(["find", far_times, "--start-time", "253402300800000", "--json"], capfd)
    assert code == 0 and [json.loads(line)["timestamp"] for line in out.splitlines()] == STAMPS[4:]


def test_one_formatter():
    assert [iso(ts) for ts in STAMPS] == ["1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z",
                                          "1970-01-01T00:00:00.001Z", "9999-12-31T23:59:59.999Z", None, None]
    assert iso(-62135596800000) == "0001-01-01T00:00:00.000Z" and iso(-62135596800001) is None
    assert time_text(2 ** 63 - 1) == str(2 ** 63 - 1) and time_text(-2 ** 63) == str(-2 ** 63)
    assert time_fields("t", 253402300800000) == {"t": 253402300800000}
    assert time_fields("t", 0) == {"t": 0, "t_iso": "1970-01-01T00:00:00.000Z"}
