"""``kafkarec transactions LOG_DIR``: open and hanging transactions (from __transaction_state and the data
partitions' markers) and consumer-group lag at rest (committed offsets against each partition's log end)."""
from __future__ import annotations

import argparse
import json
from typing import TextIO

from kafkarec.errors import KafkaRecError, MissingExtraError

__all__ = ["add_parser", "run"]


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "transactions", help="open and hanging transactions, and consumer-group lag, from a log directory",
        description="Read __transaction_state for the coordinator's view of every transactional id, the "
                    "data partitions for transactions whose COMMIT/ABORT marker never came (what "
                    "kafka-transactions.sh find-hanging answers), and __consumer_offsets for each group's "
                    "committed offsets against the partitions' log end (lag at rest).")
    p.add_argument("path", metavar="LOG_DIR", help="a broker's log directory")
    p.add_argument("--now", type=int, metavar="MS", default=None,
                   help="judge timeouts at this time (ms since the epoch; default: the newest timestamp "
                        "in the logs)")
    p.add_argument("--all", action="store_true", help="also list completed (Empty, Complete*, Dead) transactions")
    p.add_argument("--json", action="store_true", help="one JSON object: transactions, open, lag")
    from kafkarec.cli.decode_args import add_schemas_argument
    add_schemas_argument(p)
    p.set_defaults(func=run)
    return p


def run(args, out: TextIO, err: TextIO) -> int:
    from kafkarec.cluster import coordinators
    try:
        states = coordinators.transaction_states(args.path, schemas=args.schemas)
        opened = coordinators.open_transactions(args.path, now_ms=args.now, schemas=args.schemas)
        lag = coordinators.consumer_lag(args.path, schemas=args.schemas)
    except MissingExtraError:
        raise               # the command line's one line naming the extra (exit 2)
    except (OSError, KafkaRecError) as e:
        err.write(f"kafkarec transactions: {e}\n")
        return 1
    shown = [s for s in states.values() if args.all or s["state"] in coordinators.OPEN_STATES]
    if args.json:
        out.write(json.dumps({"transactions": shown, "open_in_partitions": opened, "lag": lag},
                             ensure_ascii=False) + "\n")
        return 0
    out.write(f"Transactional ids: {len(states)} ({sum(s['state'] in coordinators.OPEN_STATES for s in states.values())} open)\n")
    for s in sorted(shown, key=lambda s: s["transactional_id"]):
        parts = ",".join(f"{t}-{p}" for t, p in s["partitions"])
        out.write(f"  {s['transactional_id']}: producerId {s['producer_id']} epoch {s['producer_epoch']} "
                  f"{s['state']} timeout {s['timeout_ms']} ms, last update {s['last_update_ms']}"
                  f"{' partitions ' + parts if parts else ''}\n")
    out.write(f"Open transactions in data partitions: {len(opened)} "
              f"({sum(o['hanging'] for o in opened)} hanging)\n")
    for o in opened:
        out.write(f"  {o['topic']}-{o['partition']}: producerId {o['producer_id']} epoch {o['producer_epoch']} "
                  f"from offset {o['first_offset']} (transactionalId {o['transactional_id']}, coordinator "
                  f"state {o['coordinator_state']}){' HANGING' if o['hanging'] else ''}\n")
    out.write(f"Committed offsets: {len(lag)}\n")
    for x in lag:
        end = "?" if x["log_end_offset"] is None else x["log_end_offset"]
        lg = "?" if x["lag"] is None else x["lag"]
        out.write(f"  {x['group']} {x['topic']}-{x['partition']}: committed {x['committed_offset']} "
                  f"log end {end} lag {lg}\n")
    return 0
