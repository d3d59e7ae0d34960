"""A partition's log start offset, as the broker keeps it: ``Admin.deleteRecords`` moves it
forward (``log-start-offset-checkpoint``) while the segments keep the records below it, which a
consumer is never given.  Every read that stands for a consumer (kafkarec.log.selection: plan,
offsets, timestamps, and the one reader over them; the stitched tiered history) starts there; option
``includeDeletedRecords`` reads the files' records; a checkpoint that cannot be read degrades
to the first segment's base offset with a warning naming the file."""
from __future__ import annotations

import os
import shutil
import warnings

import pytest

from kafkarec.errors import SelectionError
from kafkarec.log import layout, selection
from kafkarec.log.storage import resolve
from support.brokers.readers import scan_rows
from support.logs.log_start import BATCHES, RECORDS, T0, deleted_records_dir, write_log_start_checkpoint

END = BATCHES * RECORDS          # offsets 0..99 in every partition
# inside a batch and a segment, at a segment's base past whole deleted segments, the log end
POSITIONS = [37, 45, END]


def _offsets(root, options=None):
    sel = selection.parse_selection(options or {})
    return [row["offset"] for rows in scan_rows(str(root), ("offset",), selection=sel).values() for row in rows]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("log-start") / "logs")
    bases = deleted_records_dir(root, {("t", 0): 37, ("t", 1): 45, ("t", 2): END, ("t", 3): 0})
    return root, bases


def _of(root, partition, options=None):
    return _offsets(root, {"assign": f'{{"t":[{partition}]}}', **(options or {})})


def test_scan_reads_the_checkpoint_and_the_resolver_takes_the_larger(logs):
    root, bases = logs
    st, r = resolve(root)
    parts = {p.partition: p for p in layout.scan(st, r).partitions}
    assert [parts[i].checkpointed_log_start for i in range(4)] == [37, 45, END, None]
    assert all(p.log_start_problem is None for p in parts.values())
    resolver = selection.Resolver(st)
    assert [resolver.log_start(parts[i]) for i in range(4)] == [37, 45, END, 0]
    assert [resolver.log_start(parts[i], include_deleted_records=True) for i in range(4)] == [0] * 4
    # an entry below the first segment (its segments deleted later) is the segment's base
    low = parts[1]._replace(segments=parts[1].segments[2:], checkpointed_log_start=30)
    assert resolver.log_start(low) == low.segments[0].base_offset


@pytest.mark.parametrize("partition, start", [(0, 37), (1, 45), (2, END), (3, 0)])
def test_a_consumer_read_starts_at_the_log_start(logs, partition, start):
    root, _ = logs
    assert _of(root, partition) == list(range(start, END))
    assert _of(root, partition, {"includeDeletedRecords": "true"}) == list(range(END))
    # asked for less (an offset, -2, a timestamp), a consumer is reset to the log start
    assert _of(root, partition, {"startingOffsets": f'{{"t":{{"{partition}":3}}}}'}) == list(range(max(3, start), END))
    assert _of(root, partition, {"startingOffsets": f'{{"t":{{"{partition}":-2}}}}'}) == list(range(start, END))
    by_time = {"startingTimestamp": str(T0 + 10), "startingOffsetsByTimestampStrategy": "latest"}
    assert _of(root, partition, by_time) == list(range(max(10, start), END))
    # more is more, and an end below the log start selects nothing
    assert _of(root, partition, {"startingOffsets": f'{{"t":{{"{partition}":60}}}}'}) == list(range(max(60, start), END))
    assert _of(root, partition, {"endingOffsets": f'{{"t":{{"{partition}":{start}}}}}'}) == []


def test_a_start_time_before_the_log_start_finds_the_first_record_at_or_past_it(logs):
    root, _ = logs
    st, r = resolve(root)
    part = next(p for p in layout.scan(st, r).partitions if p.partition == 0)
    resolver = selection.Resolver(st)
    assert resolver.offset_for_time(part, T0 + 5, log_start=37)[0] == 37     # Kafka: searched from the log start
    assert resolver.offset_for_time(part, T0 + 50, log_start=37)[0] == 50
    assert resolver.offset_for_time(part, T0 + 5)[0] == 5
    hit = selection.spec_offset(selection.OffsetSpec("timestamp", T0 + 5), part, resolver, starting=True,
                                 strategy="error", log_start=37)
    assert hit[0] == 37


def test_the_option_is_a_boolean():
    assert selection.parse_selection({"includeDeletedRecords": "TRUE"}).include_deleted_records
    assert not selection.parse_selection({}).include_deleted_records
    with pytest.raises(SelectionError, match="includeDeletedRecords must be true or false"):
        selection.parse_selection({"includeDeletedRecords": "yes"})
    assert selection.cli_selection(include_deleted_records=True).include_deleted_records


def test_a_partition_folder_finds_its_log_dirs_checkpoint(logs):
    root, _ = logs
    assert _offsets(os.path.join(root, "t-0")) == list(range(37, END))
    seg = os.path.join(root, "t-1", "00000000000000000045.log")
    assert _offsets(seg) == list(range(45, 65))


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_no_entry_no_checkpoint_outside_a_broker_dir_no_warning(tmp_path):
    root = str(tmp_path / "logs")
    deleted_records_dir(root, {("t", 0): 0})                    # an empty checkpoint, as Kafka's
    assert _quiet(lambda: _offsets(root)) == list(range(END))
    copied = str(tmp_path / "copied")
    deleted_records_dir(copied, {("t", 0): 0}, broker=False)
    os.remove(os.path.join(copied, "log-start-offset-checkpoint"))    # partitions copied out
    assert _quiet(lambda: _offsets(copied)) == list(range(END))


@pytest.mark.parametrize("text, why", [
    (None, "is missing from the broker's log directory"),
    ("0\n2\nt 0 37\n", "could not be read (Expected [2] entries"),
    ("1\n1\nt 0 37\n", "could not be read (Unrecognised version:1"),
    ("0\n1\nt 0 x37\n", "could not be read (Malformed line"),
])
def test_an_unreadable_checkpoint_warns_and_reads_from_the_first_segment(tmp_path, text, why):
    root = str(tmp_path / "logs")
    deleted_records_dir(root, {("t", 0): 37})
    path = os.path.join(root, "log-start-offset-checkpoint")
    if text is None:
        os.remove(path)
    else:
        with open(path, "w") as fh:
            fh.write(text)
    with pytest.warns(UserWarning) as caught:
        assert _offsets(root) == list(range(END))
    message = str(caught[0].message)
    assert path in message and why in message and "t-0" in message
    # the option needs no log start: nothing to warn about
    assert _quiet(lambda: _offsets(root, {"includeDeletedRecords": "true"})) == list(range(END))


def test_the_stitched_history_starts_at_the_local_checkpoint(tmp_path):
    # the remote copies hold offsets 0..44, the broker's log dir the rest; its checkpoint holds
    # the partition's log start (30, inside a remote copy), which applies to the whole history
    remote_root, local_root = str(tmp_path / "remote"), str(tmp_path / "local")
    deleted_records_dir(remote_root, {("t", 0): 0})
    deleted_records_dir(local_root, {("t", 0): 0})
    for base in (0, 25):
        for ext in (".log", ".index", ".timeindex"):
            os.remove(os.path.join(local_root, "t-0", f"{base:020d}{ext}"))
    for base in (45, 65, 85):
        for ext in (".log", ".index", ".timeindex"):
            os.remove(os.path.join(remote_root, "t-0", f"{base:020d}{ext}"))
    write_log_start_checkpoint(local_root, {("t", 0): 30})
    st, r = resolve(local_root)
    rst, rr = resolve(remote_root)
    lay, gaps = layout.stitch(layout.scan(st, r), layout.scan(rst, rr))
    assert gaps == [] and lay.partitions[0].checkpointed_log_start == 30
    got = scan_rows(local_root, ("offset",), tiered_storage=remote_root)["t"]
    assert [row["offset"] for row in got] == list(range(30, END))
    shutil.rmtree(remote_root)
