"""Keyed topics for the tests of kafkarec.table (Python, CLI, Spark): partitions written by
logdir.PartitionWriter from a plan of batches and transaction ends, and a model of the state
Kafka's rules give (offsets in order, tombstones delete, null keys and control records never
count, read_committed leaves out aborted transactions and everything from the LSO on)."""
import random

import pyarrow.compute as pc

from support.logs.logdir import CONTROL_ABORT, CONTROL_COMMIT, PartitionWriter, v2_batch

T0 = 1_700_000_000_000


def model_state(events, *, read_committed=False, end_offset=None):
    """``{key: (offset, value)}`` of one partition from the writer's events:
    ``("data", offset, key, value, pid or None)`` and ``("end", offset, pid, commit)``."""
    state = {}
    for off, key, value in model_records(events, read_committed=read_committed, end_offset=end_offset):
        if key is None:
            continue
        if value is None:
            state.pop(key, None)
        else:
            state[key] = (off, value)
    return state


def model_records(events, *, read_committed=False, end_offset=None):
    """``[(offset, key, value)]``: the data records a consumer at that isolation level
    returns of one partition, from the writer's events (as :func:`model_state`)."""
    open_first = {}
    ends = {}
    for e in events:
        if e[0] == "data" and e[4] is not None:
            open_first.setdefault(e[4], e[1])
        elif e[0] == "end":
            first = open_first.pop(e[2], None)
            if first is not None:
                ends[(e[2], first)] = e[3]
    # every transaction: which records belong to it and how it ended (None: still open)
    txn_of = {}
    current = {}
    for e in events:
        if e[0] == "data" and e[4] is not None:
            first = current.setdefault(e[4], e[1])
            txn_of[e[1]] = (e[4], first)
        elif e[0] == "end":
            current.pop(e[2], None)
    lso = min(current.values(), default=None)
    aborted = {off for off, txn in txn_of.items() if ends.get(txn) is False}
    out = []
    for e in events:
        if e[0] != "data":
            continue
        off, key, value = e[1], e[2], e[3]
        if end_offset is not None and off >= end_offset:
            break
        if read_committed and (off in aborted or (lso is not None and off >= lso)):
            continue
        out.append((off, key, value))
    return out


def write_partition(root, topic, partition, plan, *, segment_bytes=600):
    """``plan``: items ``("batch", [(key, value)...], pid or None)`` / ``("commit"|"abort", pid)``."""
    w = PartitionWriter(str(root), topic, partition, segment_bytes=segment_bytes, index_interval_bytes=200)
    events, seq = [], {}
    for item in plan:
        if item[0] == "batch":
            _, recs, pid = item
            txn = pid is not None
            b = v2_batch([(T0 + w.next_offset + i, k, v, []) for i, (k, v) in enumerate(recs)],
                         producer_id=pid if txn else -1, producer_epoch=0 if txn else -1,
                         base_sequence=seq.get(pid, 0) if txn else -1, transactional=txn)
            if txn:
                seq[pid] = seq.get(pid, 0) + len(recs)
            a = w.append(b)
            events += [("data", a.base_offset + i, k, v, pid) for i, (k, v) in enumerate(recs)]
        else:
            kind, pid = item
            if pid not in w.producers:
                continue
            a = w.end_txn(CONTROL_COMMIT if kind == "commit" else CONTROL_ABORT, pid, timestamp=T0)
            events.append(("end", a.base_offset, pid, kind == "commit"))
    w.close()
    return events


def state_of(result, topic, partition):
    """``{key: (offset, value)}`` of one partition of a :class:`kafkarec.table.LatestState` (or a table)."""
    tbl = getattr(result, "table", result)
    t = tbl.filter(pc.and_(pc.equal(tbl["topic"], topic), pc.equal(tbl["partition"], partition)))
    rows = t.select(["key", "value", "offset"]).to_pylist()
    assert len({r["key"] for r in rows}) == len(rows), "a key appears twice"
    return {r["key"]: (r["offset"], r["value"]) for r in rows}


def keyed_world(root) -> dict:
    """A log directory of keyed topics; ``{(topic, partition): events}``.

    * ``profiles`` (2 partitions, small segments): updates, tombstones, null keys, two
      transactional producers committing and aborting in turn; partition 1 ends with a
      transaction still open (its LSO).
    * ``balances-0``: 3,000 keys updated over 30,000 records, a third of them deleted: more
      keys than a small key map holds.
    """
    rng = random.Random(30)
    world = {}
    for partition in (0, 1):
        plan = []
        for i in range(60):
            recs = [(rng.choice([b"user-%d" % rng.randrange(40), None]) if rng.random() < 0.1
                     else b"user-%d" % rng.randrange(40),
                     None if rng.random() < 0.15 else b"profile %d.%d" % (i, j)) for j in range(rng.randrange(1, 6))]
            pid = rng.choice([None, None, 7, 8])
            plan.append(("batch", recs, pid))
            if pid is not None and rng.random() < 0.5:
                plan.append((rng.choice(["commit", "abort"]), pid))
        plan += [("commit", 7), ("abort", 8)]
        if partition == 1:
            plan.append(("batch", [(b"user-1", b"still open")], 7))
        world[("profiles", partition)] = write_partition(root, "profiles", partition, plan, segment_bytes=2048)
    plan = [("batch", [(b"account-%d" % ((i * 50 + j) % 3000), b"%d" % (i * 50 + j)) for j in range(50)], None)
            for i in range(600)]
    plan.append(("batch", [(b"account-%d" % i, None) for i in range(0, 3000, 3)], None))
    world[("balances", 0)] = write_partition(root, "balances", 0, plan, segment_bytes=256 << 10)
    return world
