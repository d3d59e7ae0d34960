"""One plan per command (issue 79): what a command asks of the storage layer does not grow with
its partitions.  Counted through the storage layer's own counters
(:func:`kafkarec.log.storage.process_listings`, :func:`kafkarec.log.storage.process_bytes_read`),
never timed, on a log with committed and aborted transactions, compaction's offset holes and
several segments per partition (tests/support/logs/plan_counts.py)."""
import pytest

from support.logs.plan_counts import cli, counted, write_hard_log

pytest.importorskip("pyarrow")

#: the commands, and the ``.log`` bytes each reads at most per byte of the log: the one walk that
#: judges each partition's transactions, each read the command makes of the records, and what
#: finding an offset range's edges in the log reads where its index is not believed (the restore's
#: ranges: about 0.14x of this small log's).  (A restore's consumer groups are its coordinators'
#: replay, a listing of their own: --no-groups here.)
COMMANDS = {
    "restore --dry-run": (lambda root: cli("restore", root, "--dry-run", "--no-groups"), 2.3),
    "census": (lambda root: cli("census", root, "--json"), 3.02),
    "find": (lambda root: cli("find", root, "--key", "6b30"), 1.02),
}


#: a local census finds its files as a local read does, once per pass (memory-mapped slices), and
#: lists once for its partition counts and last stable offsets: three, whatever its partitions
LISTINGS = {"census": 3}


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
    assert many.ratio <= most, many


def test_backfill_planning_lists_once_and_its_read_judges_nothing_again(logs):
    from kafkarec.lakehouse.backfill import _plan, _read
    from kafkarec.log import storage
    for n in (5, 40):
        root = logs[n]

        def plan_and_read():
            plan = _plan(root, None, None, None, None, None, None)
            scan, parts = _read(root, plan, None, None)
            assert len(parts) == n
            return 0
        got = counted(root, plan_and_read)
        # one listing; the hand-off's walk the only whole read (the read's spans are its verdicts),
        # with what finding the ranges' edges reads (see COMMANDS)
        assert got.listings == 1, got
        assert got.ratio <= 1.15, got
    assert storage.process_listings().requests >= 2
