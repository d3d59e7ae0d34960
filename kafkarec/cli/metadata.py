"""``kafkarec metadata LOG_DIR``: replay __cluster_metadata (latest snapshot, then the log) into the
cluster's state: a readable summary, or --json in the shape of Kafka's metadata image dump."""
from __future__ import annotations

import argparse
import json
from typing import TextIO

from kafkarec.errors import KafkaRecError, MissingExtraError

__all__ = ["add_parser", "run"]


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "metadata", help="replay __cluster_metadata into the cluster's state (brokers, topics, configs, ...)",
        description="Replay KRaft's __cluster_metadata log (from its latest .checkpoint snapshot when the "
                    "log was cleaned, then the log) into what the controller believes: brokers and "
                    "controllers, topics and partitions, configs, features, producer-id blocks, ACLs, "
                    "client quotas, SCRAM users (names only, never secrets), delegation tokens.")
    p.add_argument("path", metavar="LOG_DIR", help="a log directory holding __cluster_metadata-0, or that folder")
    p.add_argument("--at-offset", type=int, metavar="N", default=None,
                   help="the state after every record up to and including offset N")
    p.add_argument("--json", action="store_true",
                   help="the state as one JSON object (features, brokers, controllers, topics, configs, "
                        "producer_ids, acls, client_quotas, scram_credentials, delegation_tokens)")
    p.add_argument("--strict", action="store_true",
                   help="fail on records of unknown types or versions instead of skipping them")
    from kafkarec.cli.decode_args import add_schemas_argument
    add_schemas_argument(p)
    p.set_defaults(func=run)
    return p


def run(args, out: TextIO, err: TextIO) -> int:
    from kafkarec.cluster import metadata
    try:
        state = metadata.replay(args.path, at_offset=args.at_offset, strict=args.strict,
                                schemas=args.schemas)
    except FileNotFoundError as e:
        err.write(f"kafkarec metadata: error: {e}\n")
        return 2
    except MissingExtraError:
        raise               # the command line's one line naming the extra (exit 2)
    except KafkaRecError as e:
        err.write(f"kafkarec metadata: {e}\n")
        return 1
    if args.json:
        out.write(json.dumps(state.state(), ensure_ascii=False) + "\n")
    else:
        out.write(state.summary() + "\n")
    return 0
