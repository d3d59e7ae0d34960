"""``kafkarec backfill LOG``: a topic's history into the Delta or Iceberg table a live writer
continues (:func:`kafkarec.lakehouse.backfill`), up to each partition's hand-off point H; one line
per partition ``topic-partition [start, H) rows status`` on stdout.

With ``--connect-url URL --connector NAME`` the command then hands off to a Kafka Connect sink
(:func:`kafkarec.lakehouse.connect.hand_off`: the connector created STOPPED from
``--connector-config`` or stopped, its consumer group's offsets set to H, KIP-875, resumed, its
tasks RUNNING).  A failed hand-off's last line says what to do: run the same command again, restart
the failed tasks, or nothing (a repeat after a finished hand-off is refused)."""
from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Dict, Optional, TextIO, Tuple

from kafkarec.cli.common import EXIT_OK, EXIT_PROBLEMS
from kafkarec._option_text import key_value_pairs
from kafkarec.errors import BackfillError, BrokerError, DecodeError, LayoutError, UsageError

__all__ = ["add_parser", "run", "add_target_arguments", "target_from_args", "end_offsets_from_text",
           "END_OFFSETS_HELP", "add_bootstrap_argument", "note_checkpoint_lag"]


def add_parser(sub) -> argparse.ArgumentParser:
    from kafkarec.lakehouse.layouts import LAYOUTS
    p = sub.add_parser(
        "backfill", help="write a topic's history into the lakehouse table a live writer continues",
        description="Write the committed data records of [log start, H) of every partition into a Delta "
                    "table (--delta) or an Iceberg table (--iceberg-catalog, --table) in the rows of the "
                    "live writer that continues it (--layout), in one commit. H, the hand-off point, is the "
                    "last stable offset at the end of the log (or at --end-offsets / --end-time): the live "
                    "writer resumes there. A Delta commit carries kafka-delta-ingest's txn action per "
                    "partition (--app-id). Re-running writes nothing for ranges the table already records. "
                    "--fill-below writes [log start, the table's first offset) into a table a live writer "
                    "already owns.")
    p.add_argument("path", metavar="LOG", help="log dir root or a URI (s3://...)")
    add_target_arguments(p)
    p.add_argument("--layout", required=True, choices=sorted(LAYOUTS),
                   help="the live writer whose rows to write")
    p.add_argument("--topics", metavar="A,B", help="only these topics (default every topic but Kafka's __*)")
    p.add_argument("--end-offsets", metavar="JSON|@FILE",
                   help=END_OFFSETS_HELP + " (H is the last stable offset there)")
    p.add_argument("--end-time", metavar="T",
                   help="end at the first record at or after T (ms since the epoch or ISO 8601)")
    p.add_argument("--fill-below", action="store_true",
                   help="end each partition at the table's smallest offset (a table a live writer owns)")
    p.add_argument("--app-id", metavar="ID", help="kafka-delta-ingest's app id (txn appId <ID>-<partition>)")
    p.add_argument("--json", action="store_true", help="one JSON object per partition")
    add_bootstrap_argument(p)
    connect = p.add_argument_group("hand-off to a Kafka Connect sink (after the write)")
    connect.add_argument("--connect-url", metavar="URL",
                         help="the Connect worker's REST API (http://host:8083): set --connector's offsets to H "
                              "and resume it")
    connect.add_argument("--connector", metavar="NAME", help="the sink connector to hand off to")
    connect.add_argument("--connector-config", metavar="JSON_FILE",
                         help="the connector's configuration (a JSON object): create it STOPPED when it does "
                              "not exist yet")
    from kafkarec.cli.schemas import add_typed_arguments
    add_typed_arguments(p, "typed values (Schema Registry payloads): their fields become the row's columns")
    from kafkarec.cli.selection_args import add_storage_argument
    add_storage_argument(p)
    p.set_defaults(func=run)
    return p


def add_target_arguments(p: argparse.ArgumentParser) -> None:
    """The table flags (``kafkarec backfill``'s and ``kafkarec audit``'s): :func:`target_from_args`."""
    target = p.add_argument_group("target (one of)")
    target.add_argument("--delta", metavar="PATH", help="a Delta table's path or URI")
    target.add_argument("--delta-storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a delta-rs storage option for --delta (AWS_ENDPOINT_URL=..., ...)")
    target.add_argument("--iceberg-catalog", metavar="NAME",
                        help="an Iceberg catalog, as pyiceberg's load_catalog(NAME) finds it (.pyiceberg.yaml, "
                             "PYICEBERG_CATALOG__* variables) plus --catalog-property")
    target.add_argument("--catalog-property", action="append", default=[], metavar="KEY=VALUE",
                        help="a catalog property (type=sql, uri=..., warehouse=...)")
    target.add_argument("--table", metavar="DB.TABLE", help="the Iceberg table's identifier")


def add_bootstrap_argument(p: argparse.ArgumentParser) -> None:
    """``--bootstrap`` (``kafkarec backfill``'s and ``kafkarec audit``'s)."""
    p.add_argument("--bootstrap", metavar="HOST:PORT",
                   help="the running broker whose log directory LOG is: each partition's log start and last "
                        "stable offset are asked of it (Kafka's ListOffsets), as the log directory's "
                        "log-start-offset-checkpoint lags it by up to log.flush.start.offset.checkpoint.interval.ms")


def note_checkpoint_lag(args, command: str, err: TextIO) -> None:
    """Without ``--bootstrap``, one line on stderr: the log start may lag a live broker's."""
    if args.bootstrap is None:
        from kafkarec.lakehouse.broker import CHECKPOINT_LAG
        err.write(f"kafkarec {command}: note: {CHECKPOINT_LAG}\n")


END_OFFSETS_HELP = ('where to end, per partition: {"orders":{"0":42,"1":17}}, or @FILE (@- for stdin) holding '
                    "what kafkarec backfill printed (its lines or its --json objects: each partition's H)")

# one line of kafkarec backfill's text output: "orders-0 [0, 7) 6 rows written"
_SUMMARY_LINE = re.compile(r"(?P<topic>.+)-(?P<partition>[0-9]{1,10}) \[(?P<start>[0-9]{1,19}), "
                           r"(?P<end>[0-9]{1,19})\)(?: .*)?")


def end_offsets_from_text(text: Optional[str], flag: str = "--end-offsets") -> Optional[Dict[Tuple[str, int], int]]:
    """``{(topic, partition): offset}`` from a command line's per-partition ends: the JSON object
    ``{"topic": {"partition": offset}}``, or ``@FILE`` (``@-``: stdin) holding ``kafkarec backfill``'s
    own output (its text lines or its ``--json`` objects), whose H is each partition's end: what one
    backfill printed is what the next command (a re-run, ``kafkarec audit``) is given back."""
    if text is None:
        return None
    if text.startswith("@"):
        name = text[1:]
        try:
            if name == "-":
                body = sys.stdin.read()
            else:
                with open(name, encoding="utf-8") as fh:
                    body = fh.read()
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"{flag} {text}: {e}") from None
        return _summary_ends(body, f"{flag} {text}")
    try:
        raw = json.loads(text)
        out = {(str(t), int(p)): int(o) for t, parts in raw.items() for p, o in parts.items()}
    except (ValueError, TypeError, AttributeError):
        raise UsageError(f'{flag}: expected {{"topic":{{"partition":offset}}}} or @FILE, got {text!r}') from None
    return _checked_ends(out, flag)


def _summary_ends(body: str, where: str) -> Dict[Tuple[str, int], int]:
    out: Dict[Tuple[str, int], int] = {}
    for number, line in enumerate(body.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                obj = json.loads(line)
                key, end = (str(obj["topic"]), int(obj["partition"])), int(obj["end"])
            except (ValueError, TypeError, KeyError):
                raise UsageError(f"{where}, line {number}: not a line kafkarec backfill --json prints: "
                                 f"{line[:80]!r}") from None
        else:
            m = _SUMMARY_LINE.fullmatch(line)
            if m is None:
                raise UsageError(f"{where}, line {number}: not a line kafkarec backfill prints "
                                 f"('topic-partition [start, H) ...'): {line[:80]!r}")
            key, end = (m["topic"], int(m["partition"])), int(m["end"])
        if out.get(key, end) != end:
            raise UsageError(f"{where}, line {number}: {key[0]}-{key[1]} ends at {out[key]} and at {end}")
        out[key] = end
    if not out:
        raise UsageError(f"{where}: no partition's end in it")
    return _checked_ends(out, where)


def _checked_ends(ends: Dict[Tuple[str, int], int], where: str) -> Dict[Tuple[str, int], int]:
    for (topic, partition), end in ends.items():
        if not 0 <= partition < 1 << 31 or not 0 <= end < 1 << 63:
            raise UsageError(f"{where}: {topic}-{partition} ending at {end}: partitions and offsets are 0 or more "
                             f"(a Java int, a long)")
    return ends


def target_from_args(args):
    from kafkarec.lakehouse.tables import DeltaTarget, IcebergTarget
    if (args.delta is None) == (args.iceberg_catalog is None):
        raise UsageError("give one target: --delta PATH, or --iceberg-catalog NAME --table DB.TABLE")
    if args.delta is not None:
        options = key_value_pairs(args.delta_storage_option, "--delta-storage-option", "expected KEY=VALUE")
        return DeltaTarget(args.delta, options or None)
    if not args.table:
        raise UsageError("--iceberg-catalog needs --table DB.TABLE")
    properties = key_value_pairs(args.catalog_property, "--catalog-property", "expected KEY=VALUE")
    return IcebergTarget(properties, args.table, args.iceberg_catalog)


def run(args, out: TextIO, err: TextIO) -> int:
    from kafkarec.cli.schemas import decode_from_args
    from kafkarec.cli.selection_args import storage_options_from_args
    from kafkarec.lakehouse import backfill
    handing_off = _hand_off_args(args)
    try:
        summary = backfill(args.path, target_from_args(args), layout=args.layout, fill_below=args.fill_below,
                           app_id=args.app_id, topics=args.topics, end_offsets=end_offsets_from_text(args.end_offsets),
                           end_time=args.end_time, storage_options=storage_options_from_args(args) or None,
                           tiered_storage=args.tiered_storage, typed=decode_from_args(args),
                           bootstrap=args.bootstrap)
    except BrokerError as e:             # asked to, the broker did not answer: nothing is written
        err.write(f"kafkarec backfill: {e}; nothing was written\n")
        return EXIT_PROBLEMS
    except BackfillError as e:           # the table holds what the backfill would write again
        err.write(f"kafkarec backfill: {e}\n")
        return EXIT_PROBLEMS
    except DecodeError as e:             # nothing committed: a record that cannot be read stops the write
        where = getattr(e, "file", None)
        err.write(f"kafkarec backfill: {where + ': ' if where else ''}{e}; nothing was written\n")
        return EXIT_PROBLEMS
    except LayoutError as e:             # nothing committed: a record the live writer's rows cannot hold
        err.write(f"kafkarec backfill: {e}; nothing was written\n")
        return EXIT_PROBLEMS
    note_checkpoint_lag(args, "backfill", err)
    for s in summary.values():
        if args.json:
            out.write(json.dumps(s._asdict(), separators=(",", ":")) + "\n")
        else:
            out.write(f"{s.topic}-{s.partition} [{s.start}, {s.end}) {s.rows} rows {s.status}\n")
    written = sum(s.rows for s in summary.values())
    err.write(f"{written} rows written in {sum(s.status == 'written' for s in summary.values())} of "
              f"{len(summary)} partition(s)\n")
    if handing_off:
        from kafkarec.errors import ConnectError, ConnectorFailedError, HandOffOverlapError, HandOffRefusedError
        from kafkarec.lakehouse import HandOff
        from kafkarec.lakehouse.connect import hand_off
        try:
            points = {k: HandOff(s.start, s.end) for k, s in summary.items()}
            body = hand_off(args.connect_url, args.connector, points, config=handing_off.get("config"))
        except HandOffRefusedError as e:     # a repeat after a finished hand-off: running it again repeats this
            err.write(f"kafkarec backfill: {e}; the table is written and the sink already runs past H: the "
                      "hand-off is done, there is nothing to run again\n")
            return EXIT_PROBLEMS
        except HandOffOverlapError as e:     # the sink read below H before: no offsets take its rows back
            err.write(f"kafkarec backfill: {e}; the table is written, and the connector's sink has read records "
                      "below H, which the backfill wrote too: roll the table back to its snapshot before the "
                      "backfill and fill below the sink's rows (--fill-below), or hand off to a connector that "
                      "has not run\n")
            return EXIT_PROBLEMS
        except ConnectorFailedError as e:    # the offsets are at H: the connector is what needs fixing
            err.write(f"kafkarec backfill: {e}; the table is written and the connector's offsets are at H: fix "
                      f"what failed, then restart its failed tasks (POST /connectors/{args.connector}/restart"
                      "?includeTasks=true&onlyFailed=true)\n")
            return EXIT_PROBLEMS
        except ConnectError as e:            # the table is written: a re-run of the same command finishes
            err.write(f"kafkarec backfill: {e}; the table is written, run the same command again to hand off\n")
            return EXIT_PROBLEMS
        err.write(f"connector {args.connector}: offsets set to H on {len(body['offsets'])} partition(s), resumed, "
                  "its tasks RUNNING\n")
    return EXIT_OK


def _hand_off_args(args) -> dict:
    """``{}`` without --connect-url; else ``{"config": dict or None}`` (checked before anything is written)."""
    if args.connect_url is None:
        if args.connector or args.connector_config:
            raise UsageError("--connector and --connector-config go with --connect-url")
        return {}
    if not args.connector:
        raise UsageError("--connect-url needs --connector NAME")
    if args.fill_below:
        raise UsageError("--fill-below writes under a table a live writer already owns: there is nothing to "
                         "hand off (drop --connect-url)")
    if args.connector_config is None:
        return {"config": None}
    try:
        with open(args.connector_config, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError) as e:
        raise UsageError(f"--connector-config {args.connector_config}: {e}") from None
    if not isinstance(config, dict):
        raise UsageError(f"--connector-config {args.connector_config}: expected a JSON object")
    return {"config": {str(k): str(v) for k, v in config.items()}}
