"""One plan per command on an object store (issue 79), counted, never timed: on SeaweedFS each
command lists its source once, the listing's pages its only LIST requests, opens each segment
once and reads each ``.log`` byte once (the transaction rule's walk reads a segment whole and holds
it for the read: :class:`kafkarec.log.storage.HeldSegments`).  The storage layer's counters
(:func:`kafkarec.log.storage.process_listings`, :func:`~kafkarec.log.storage.process_opens`,
:func:`~kafkarec.log.storage.process_bytes_read`) are checked against the server's own count of
the requests it answered (weed's metrics), so no request goes uncounted.  The log is
tests/support/logs/plan_counts.py's: committed and aborted transactions, compaction's offset
holes, several segments per partition."""
from __future__ import annotations

import math
from typing import NamedTuple

import pytest

from support.logs.plan_counts import cli, log_bytes, write_hard_log

pytest.importorskip("pyarrow")

#: partitions -> bucket; 80 partitions are 1,120 objects: a listing of two pages
LOGS = {5: "plan-s3-few", 80: "plan-s3-many"}

COMMANDS = {
    "restore --dry-run": lambda uri: cli("restore", uri, "--dry-run", "--no-groups"),
    "census": lambda uri: cli("census", uri, "--json"),
    "census --what-if": lambda uri: cli("census", uri, "--json", "--what-if", "zstd,lz4"),
    "find": lambda uri: cli("find", uri, "--key", "6b30"),
}


class S3Counted(NamedTuple):
    code: int
    listings: int           # the storage layer's listings
    lists: int              # LIST requests the server answered
    gets: int               # GET (and HEAD: weed counts them as one kind) requests it answered
    opens: dict             # {.log path: opens}
    reads: int              # ranged reads the storage layer made
    log_bytes_read: int     # .log bytes requested, walks included
    held_bytes: int         # .log bytes the read took from what the walk held
    log_bytes: int
    keys: int

    @property
    def ratio(self) -> float:
        return self.log_bytes_read / self.log_bytes


@pytest.fixture(scope="module")
def server():
    from support.servers.s3server import S3Server
    srv = S3Server(startup_timeout=60, metrics=True)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def logs(server, tmp_path_factory):
    out = {}
    for n, bucket in LOGS.items():
        root = str(tmp_path_factory.mktemp(f"s3p{n}"))
        write_hard_log(root, n)
        keys = server.upload_dir(root, bucket, "kafka-logs")
        out[n] = (f"s3://{bucket}/kafka-logs", root, keys)
    return out


@pytest.fixture
def env(server, monkeypatch):
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("KAFKAREC_HOLD_BYTES", raising=False)


def counted(server, root: str, keys: int, run) -> S3Counted:
    from kafkarec.log import storage
    listings, reads, opens, held = (storage.process_listings(), storage.process_bytes_read(),
                                    storage.process_opens(), storage.process_held_bytes())
    before = (listings.requests, reads.requests, dict(opens.by_path), dict(reads.by_path), dict(held.by_path),
              server.requests())
    code = run()
    after = server.requests()
    delta = lambda new, old: {p: n - old.get(p, 0) for p, n in new.items() if p.endswith(".log") and n != old.get(p, 0)}
    return S3Counted(code, listings.requests - before[0], after.get("LIST", 0) - before[5].get("LIST", 0),
                     after.get("GET", 0) - before[5].get("GET", 0), delta(opens.by_path, before[2]),
                     reads.requests - before[1], sum(delta(reads.by_path, before[3]).values()),
                     sum(delta(held.by_path, before[4]).values()), log_bytes(root), keys)


def _pages(keys: int) -> int:
    return math.ceil(keys / 1000)       # ListObjectsV2's page: 1,000 keys


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_on_s3_lists_once_and_reads_each_byte_once(server, logs, env, command):
    got = {}
    for n, (uri, root, keys) in logs.items():
        got[n] = c = counted(server, root, keys, COMMANDS[command](uri))
        assert c.code == 0, c
        # one listing, its pages the only LIST requests (two pages for the 80 partitions)
        assert c.listings == 1, c
        assert c.lists == _pages(keys), c
        # each segment opened once (a HEAD), each .log byte requested once: the walk's whole
        # segments held for the read, or the read's alone where nothing is walked
        assert all(v == 1 for v in c.opens.values()), c
        assert len(c.opens) == sum(1 for _ in _segments(root)), c
        assert c.ratio <= 1.02, c
        # every request the server answered is one the storage layer counted
        assert c.gets == sum(c.opens.values()) + c.reads, c
    assert got[5].ratio == pytest.approx(got[80].ratio, rel=0.02), got
    assert got[80].lists == 2


def test_without_the_hold_the_read_requests_the_walked_segments_again(server, logs, env, monkeypatch):
    """What the hold saves: with none (budget 0) a dry-run restore opens and reads every segment
    twice (the walk's, then the read's); with it, once."""
    uri, root, keys = logs[80]
    held = counted(server, root, keys, COMMANDS["restore --dry-run"](uri))
    monkeypatch.setenv("KAFKAREC_HOLD_BYTES", "0")
    again = counted(server, root, keys, COMMANDS["restore --dry-run"](uri))
    assert (held.code, again.code) == (0, 0)
    assert held.ratio <= 1.02 and held.held_bytes >= held.log_bytes * 0.98, held
    assert again.ratio == pytest.approx(2.0, rel=0.02) and again.held_bytes == 0, again
    assert set(again.opens.values()) == {2} and set(held.opens.values()) == {1}
    assert again.gets == 2 * held.gets, (held, again)


def test_a_budget_smaller_than_the_log_holds_what_fits(server, logs, env, monkeypatch):
    """The hold is bounded: with room for about half the log, a dry-run restore's read requests
    the other half again, and so does a census (its one pass reads what the walk did not hold)."""
    uri, root, keys = logs[80]
    monkeypatch.setenv("KAFKAREC_HOLD_BYTES", str(log_bytes(root) // 2))
    restore = counted(server, root, keys, COMMANDS["restore --dry-run"](uri))
    census = counted(server, root, keys, COMMANDS["census"](uri))
    assert (restore.code, census.code) == (0, 0)
    held = restore.held_bytes / restore.log_bytes
    assert 0.4 <= held <= 0.5, restore
    assert restore.ratio == pytest.approx(2 - held, rel=0.02), restore
    assert census.ratio == pytest.approx(2 - held, rel=0.02), census


def test_a_restore_plan_and_read_on_s3_list_once_and_read_once(server, logs, env):
    """The restore's source side as a real restore reads it: its plan, then each partition's
    committed records over the plan's listing."""
    from kafkarec import restore as r
    from kafkarec.restore.source import committed_records
    for n, (uri, root, keys) in logs.items():
        spec = r.RestoreSpec.of(uri, "localhost:9")

        def plan_and_read():
            plan = r.plan(spec)
            got = sum(1 for p in plan.partitions
                      for _ in committed_records(spec, p.topic, p.partition, p.start, p.end, listing=plan.listing))
            assert got == 14 * n
            return 0
        c = counted(server, root, keys, plan_and_read)
        assert (c.listings, c.lists) == (1, _pages(keys)), c
        assert c.ratio <= 1.02 and all(v == 1 for v in c.opens.values()), c


def test_backfill_planning_on_s3_lists_once_and_reads_once(server, logs, env):
    from kafkarec.lakehouse.backfill import _plan, _read
    for n, (uri, root, keys) in logs.items():
        def plan_and_read():
            plan = _plan(uri, None, None, None, None, None, None)
            scan, parts = _read(uri, plan, None, None)
            assert len(parts) == n
            for _, pieces in parts:
                for _ in scan.read_items(pieces):
                    pass
            return 0
        c = counted(server, root, keys, plan_and_read)
        assert (c.listings, c.lists) == (1, _pages(keys)), c
        assert c.ratio <= 1.02 and all(v == 1 for v in c.opens.values()), c


def _segments(root: str):
    import os
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".log"):
                yield os.path.join(d, f)


def test_a_storage_sent_to_workers_lets_its_held_segments_go(server, logs, env):
    """A driver that walks (read_committed planning) and pickles its storage for workers keeps no
    segment bytes: the workers read for themselves."""
    import pickle

    from kafkarec.scan import LogScan
    uri, root, keys = logs[5]
    walks = list(LogScan(uri).partition_walks())
    assert [w.facts().covered for w in walks] == [26] * 5
    storage = walks[0].storage
    assert storage.held.used == log_bytes(root)
    copy = pickle.loads(pickle.dumps(storage))
    assert storage.held.used == 0 and not storage.held.room(1)
    assert copy.held.used == 0 and copy.held.room(1)
