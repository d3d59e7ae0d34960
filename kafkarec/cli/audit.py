"""``kafkarec audit LOG_URI``: hold a lakehouse table against the log it was written from
(:func:`kafkarec.lakehouse.audit.audit`), and say per partition whether every committed data
record of the range is in it exactly once."""
from __future__ import annotations

import argparse
from typing import TextIO

from kafkarec.cli.common import EXIT_OK, EXIT_PROBLEMS
from kafkarec.errors import KafkaRecError, MissingExtraError, SelectionError, StorageError, UsageError

__all__ = ["add_parser", "run"]


def add_parser(sub) -> argparse.ArgumentParser:
    from kafkarec.cli import selection_args
    from kafkarec.cli.backfill import add_target_arguments
    from kafkarec.lakehouse.layouts import LAYOUTS
    p = sub.add_parser(
        "audit", help="check a Delta or Iceberg table against the log: every committed record exactly once",
        description="Read the table's position columns (topic, partition, offset, as --layout places "
                    "them) and the log under LOG_URI, and check per partition that every committed data "
                    "record of the range is in the table exactly once. Offsets the table lacks are "
                    "explained (transaction markers, aborted transactions, compaction, below the log start "
                    "offset) or reported as gaps; duplicated offsets and rows the log says are no committed "
                    "data (aborted records, markers) are reported too. The range is each partition's log "
                    "start offset up to its last stable offset, or what --start-*/--end-* say within it. "
                    "Exit status 0 when every record is there exactly once, 1 on a gap, a duplicate, an "
                    "unexpected row or offsets the log cannot show, 2 on usage errors.")
    p.add_argument("log_uri", metavar="LOG_URI", help="the log directory (a path or a URI: s3://...)")
    add_target_arguments(p)
    p.add_argument("--layout", required=True, choices=sorted(LAYOUTS),
                   help="the live writer whose rows the table holds (where its topic, partition and offset are)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per partition, then a summary, instead of text")
    selection_args.add_selection_arguments(p, consumer=False, partition=False)  # whole topics against the table
    from kafkarec.cli.backfill import END_OFFSETS_HELP, add_bootstrap_argument
    p.add_argument("--end-offsets", metavar="JSON|@FILE",
                   help=END_OFFSETS_HELP + ", as kafkarec backfill takes them; partitions not named end at "
                        "their hand-off point")
    add_bootstrap_argument(p)
    p.set_defaults(func=run)
    return p


def run(args, out: TextIO, err: TextIO) -> int:
    from kafkarec.cli.backfill import end_offsets_from_text, note_checkpoint_lag, target_from_args
    from kafkarec.cli.selection_args import storage_options_from_args
    from kafkarec.lakehouse import tables
    from kafkarec.lakehouse.audit import audit
    target, layout = target_from_args(args), args.layout
    end_offsets = args.end_offset
    if args.end_offsets is not None:
        if args.end_offset is not None:
            raise UsageError("--end-offset N (every partition) or --end-offsets (per partition), not both")
        end_offsets = end_offsets_from_text(args.end_offsets)
    try:
        found = (tables.delta_table(target) if isinstance(target, tables.DeltaTarget)
                 else tables.load_iceberg_table(target))
        if found is None:
            raise UsageError(f"{tables.describe(target)}: no such table")
        positions = tables.read_positions(target, layout, topic=_single(args.topics))
        report = audit(args.log_uri, positions, topics=args.topics, start_offsets=args.start_offset,
                       end_offsets=end_offsets, start_time=args.start_time, end_time=args.end_time,
                       layout=layout, storage_options=storage_options_from_args(args),
                       tiered_storage=args.tiered_storage, bootstrap=args.bootstrap)
    except (UsageError, StorageError, SelectionError, MissingExtraError):
        raise                              # usage: the command line's exit status 2
    except FileNotFoundError:
        raise UsageError(f"{args.log_uri}: no such file or directory") from None
    except (OSError, KafkaRecError) as e:
        err.write(f"kafkarec audit: {e}\n")
        return EXIT_PROBLEMS
    note_checkpoint_lag(args, "audit", err)
    if args.json:
        for line in report.json_lines():
            out.write(line + "\n")
    else:
        out.write(report.text() + "\n")
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _single(topics):
    names = [t.strip() for t in (topics or "").split(",") if t.strip()]
    return names[0] if len(names) == 1 else None
