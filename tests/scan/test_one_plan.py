"""One plan per command (issue 79): what a command asks of the storage layer does not grow with
its partitions.  Counted through the storage layer's own counters
(:func:`kafkarec.log.storage.process_listings`, :func:`kafkarec.log.storage.process_bytes_read`),
never timed, on a log with committed and aborted transactions, compaction's offset holes and
several segments per partition (tests/support/logs/plan_counts.py)."""
import pytest

from support.logs.plan_counts import cli, counted, write_hard_log

pytest.importorskip("pyarrow")

#: the commands, and the ``.log`` bytes each reads for records at most per byte of the log: each
#: partition's records read once (the restore's ranges end where the log does; the census's
#: read_committed figures are the rows of its one read_uncommitted pass that its read_committed plan
#: does not skip, and the what-if re-batches those: a log read without damage is read once).
#: Besides, each partition's transactions are judged by one walk of its batch headers, counted
#: apart (:func:`kafkarec.log.storage.process_walk_bytes`): a batch's 61 header bytes, a
#: transactional batch whole (its CRC and its marker) -- :data:`WALKS` of them at most.  (A
#: restore's consumer groups are its coordinators' replay, a listing of their own: --no-groups here.)
COMMANDS = {
    "restore --dry-run": (lambda root: cli("restore", root, "--dry-run", "--no-groups"), 1.02),
    "census": (lambda root: cli("census", root, "--json"), 1.02),
    "census --what-if": (lambda root: cli("census", root, "--json", "--what-if", "zstd,lz4"), 1.02),
    "find": (lambda root: cli("find", root, "--key", "6b30"), 1.02),
}

#: how many walks of every batch header a command makes: one (the transaction rule's, the log end
#: read off it), none for a read_uncommitted search; two for the census (its read_committed plan,
#: planned as a local read plans it, judges its files once more: the spans its pass leaves out)
WALKS = {"find": 0, "census": 2, "census --what-if": 2}


#: a local census finds its files as a local read does (memory-mapped slices), once for each of its
#: two plans (the pass's, and the read_committed one's skipped spans), and lists once for its
#: partition counts and each partition's walk: three, whatever its partitions
LISTINGS = {"census": 3, "census --what-if": 3}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    out = {}
    for n in (5, 40):
        root = str(tmp_path_factory.mktemp(f"p{n}"))
        write_hard_log(root, n)
        out[n] = root
    return out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_lists_its_source_once_whatever_its_partitions(logs, command):
    make, _ = COMMANDS[command]
    few, many = (counted(logs[n], make(logs[n])) for n in (5, 40))
    assert (few.code, many.code) == (0, 0)
    assert few.listings == many.listings == LISTINGS.get(command, 1), (few, many)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_partition_is_judged_once_and_read_once(logs, command):
    make, most = COMMANDS[command]
    few, many = (counted(logs[n], make(logs[n])) for n in (5, 40))
    # the same share of the log read however many partitions: nothing per partition is read twice
    assert few.ratio == pytest.approx(many.ratio, rel=0.02), (few, many)
    assert many.records_ratio <= most, many
    # one walk of the headers (a second walk, or a walk reading whole batches, is over the bound)
    assert many.walks <= WALKS.get(command, 1) + 0.01, many


def test_a_restore_reads_its_source_once(logs):
    """The restore's source side as a real restore reads it (no target needed): its plan, then each
    partition's committed records over the plan's listing."""
    from kafkarec import restore as r
    from kafkarec.restore.source import committed_records
    for n in (5, 40):
        root = logs[n]

        def plan_and_read():
            spec = r.RestoreSpec.of(root, "localhost:9")
            plan = r.plan(spec)
            got = sum(1 for p in plan.partitions
                      for _ in committed_records(spec, p.topic, p.partition, p.start, p.end, listing=plan.listing))
            assert got == 14 * n
            return 0
        got = counted(root, plan_and_read)
        assert got.listings == 1, got
        assert got.records_ratio <= 1.02, got
        assert got.walks <= 1.01, got


def test_a_restores_evidence_reads_what_was_left_out_off_the_plans_walk(logs):
    """``restore --evidence``'s ``not_restored`` (aborted records, markers, records below the log
    start) over the plan's listing: read off the walk the plan made, no second walk, no record read
    (it walked every batch whole again, visiting each)."""
    from kafkarec import restore as r
    from kafkarec.restore.evidence import not_restored
    for n in (5, 40):
        root = logs[n]

        def plan_and_judge():
            spec = r.RestoreSpec.of(root, "localhost:9")
            plan = r.plan(spec)
            left = not_restored(spec, [(p.topic, p.partition, p.start, p.end) for p in plan.partitions],
                                listing=plan.listing)
            # each partition: its aborted transaction's 6 records, the two markers
            assert {k: (v.aborted, v.control) for k, v in left.items()} == {("t", p): (6, 2) for p in range(n)}
            return 0
        got = counted(root, plan_and_judge)
        assert got.listings == 1, got
        assert got.records_ratio <= 0.01, got
        assert got.walks <= 1.01, got


def test_what_was_left_out_of_a_range_cutting_through_batches(logs):
    """A range whose ends cut through an aborted transaction's batches: those are read alone
    (their records' offsets), the rest counted from the walk.  The hard log's partition: 0..2,
    transaction 3..5 committed (marker 6), 11..12, in the next segment one producer's transaction
    13..15, then 16..18, then its 19..21, aborted (marker 22)."""
    from kafkarec import restore as r
    from kafkarec.restore.evidence import NotRestored, not_restored
    spec = r.RestoreSpec.of(logs[5], "localhost:9")
    plan = r.plan(spec)
    left = not_restored(spec, [("t", 0, 14, 20), ("t", 1, 4, 22)], listing=plan.listing)
    # [14, 20): 14, 15 and 19 aborted; below 14: 0..2, 3..5, the marker 6, 11, 12 and 13
    assert left[("t", 0)] == NotRestored(3, 0, 10)
    # [4, 22): 13..15 and 19..21 aborted, the marker 6 (22 is past the end); below 4: 0..3
    assert left[("t", 1)] == NotRestored(6, 1, 4)


def test_backfill_planning_lists_once_and_its_read_judges_nothing_again(logs):
    from kafkarec.lakehouse.backfill import _plan, _read
    from kafkarec.log import storage
    for n in (5, 40):
        root = logs[n]

        def plan_and_read():
            plan = _plan(root, None, None, None, None, None, None)
            scan, parts = _read(root, plan, None, None)
            assert len(parts) == n
            for _, pieces in parts:
                for _ in scan.read_items(pieces):
                    pass
            return 0
        got = counted(root, plan_and_read)
        # one listing; the hand-off's walk of headers the one walk (the read's spans are its
        # verdicts, the log end read off it), the records read once
        assert got.listings == 1, got
        assert got.records_ratio <= 1.02, got
        assert got.walks <= 1.01, got
    assert storage.process_listings().requests >= 2


def test_a_header_walk_reads_headers_not_batches(tmp_path):
    """A log without transactions: the walk reads 61 bytes a batch, not the batches."""
    from support.logs.logdir import PartitionWriter, sample_records, v2_batch

    from kafkarec.scan import LogScan
    root = str(tmp_path)
    w = PartitionWriter(root, "plain", 0, segment_bytes=4000)
    for _ in range(20):
        w.append(v2_batch(sample_records(5)))
    w.close()

    def walk():
        walks = list(LogScan(root).partition_walks())
        assert [w.facts().covered for w in walks] == [100]
        return 0
    got = counted(root, walk)
    assert got.walk_bytes_read == got.log_bytes_read == 20 * 61, got
    assert got.log_bytes_read < got.log_bytes / 3, got
