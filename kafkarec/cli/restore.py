"""``kafkarec restore LOG --target-bootstrap HOST:PORT``: the committed data records of a history
into another cluster, exactly once across crashes (:mod:`kafkarec.restore`), then every consumer
group's positions as of a time, translated, applied on the target (or written as
``kafka-consumer-groups`` CSV), and with ``--verify`` the target read back against the source.

stdout: one line per partition ``topic-partition -> target-partition [start, end) N records STATUS``,
one per group position ``group topic-partition S -> target-partition T``, one per share group
position ``share group G topic-partition S -> target-partition T`` (and one naming the acknowledged
records past its start offset that the target will deliver again; with
``--share-groups-acknowledge``, one per partition saying what was acknowledged there instead), and
with ``--verify`` a closing ``verified: ...`` line.  The options are read once into a
:class:`kafkarec.restore.RestoreSpec`."""
from __future__ import annotations

import argparse
import os
from typing import TextIO

from kafkarec.cli.common import EXIT_OK, EXIT_PROBLEMS
from kafkarec._option_text import key_value_pairs
from kafkarec.errors import BrokerError, DecodeError, MalformedBatchError, RestoreError, UsageError

__all__ = ["add_parser", "run", "spec_from_args"]


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "restore", help="restore a history into another cluster exactly once, and its consumer groups",
        description="Produce the committed data records of every partition of LOG (read_committed: no "
                    "control record, no aborted transaction; each partition from its log start to the last "
                    "stable offset at the end of the log or at --end-time) into the cluster at "
                    "--target-bootstrap, in order, keys, values, headers and timestamps kept, one "
                    "transactional producer per partition committing the restore's progress with the records "
                    "(consumer group kafkarec-restore.<--restore-id>): a run killed at any moment and run "
                    "again writes every record once, a finished one writes nothing. Absent topics are "
                    "created with the source's partition counts and configs. Then every consumer group's "
                    "positions in LOG's __consumer_offsets (as of --groups-as-of) are translated and set on "
                    "the target's groups (which must be empty), or written for kafka-consumer-groups "
                    "(--groups-csv). Exit status 0 on success, 1 when the restore, the groups or --verify "
                    "fail, 2 on usage errors.")
    p.add_argument("path", metavar="LOG", help="the source history: a log dir root or a URI (s3://...)")
    p.add_argument("--target-bootstrap", required=True, metavar="HOST:PORT",
                   help="the target cluster's bootstrap servers (host:port,...)")
    p.add_argument("--target-property", action="append", default=[], metavar="KEY=VALUE",
                   help="a librdkafka property for every client of the target (security.protocol=SSL, ...)")
    p.add_argument("--topics", metavar="A,B", help="only these topics (default every topic but Kafka's __*)")
    p.add_argument("--rename", action="append", default=[], metavar="SOURCE=TARGET",
                   help="restore topic SOURCE into topic TARGET (repeatable)")
    p.add_argument("--end-time", metavar="T",
                   help="end each partition at the first record at or after T (ms since the epoch or ISO 8601)")
    p.add_argument("--restore-id", default="default", metavar="ID",
                   help="names the restore's progress group (kafkarec-restore.ID) and transactional ids on the "
                        "target; a run with the same ID resumes (default: default)")
    p.add_argument("--transaction-records", type=int, default=1000, metavar="N",
                   help="records per transaction (default 1000)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="how long any one request to the target may take, its retries of Kafka's retriable "
                        "errors (a leader or coordinator not there yet, a timeout) included: 0.01 to 300 "
                        "(default 30)")
    p.add_argument("--offset-map", metavar="FILE",
                   help="write the offset map (source offset -> target offset) as CSV to FILE")
    groups = p.add_argument_group("consumer groups")
    groups.add_argument("--groups-as-of", metavar="T",
                        help="the groups' positions at T (ms since the epoch or ISO 8601; default the end of "
                             "the history restored: --end-time when given)")
    groups.add_argument("--groups-csv", metavar="FILE",
                        help="write the translated positions for kafka-consumer-groups --reset-offsets "
                             "--from-file FILE (group,topic,partition,offset) instead of setting them")
    groups.add_argument("--share-groups-csv", metavar="FILE",
                        help="write the share groups' translated start offsets for kafka-share-groups "
                             "--reset-offsets --group G --from-file FILE --execute (group,topic,partition,offset)")
    groups.add_argument("--share-groups-acknowledge", action="store_true",
                        help="once the share groups' start offsets are set on the target (kafka-share-groups "
                             "from --share-groups-csv's file), join each share group there (it must have no members) "
                             "and acknowledge the records its source group had acknowledged past the start "
                             "offset as it had (accept, reject), releasing the others: those are not delivered "
                             "again, these are (their delivery counts one higher)")
    groups.add_argument("--no-groups", action="store_true", help="leave the groups (and share groups) alone")
    p.add_argument("--verify", action="store_true",
                   help="read the target back (read_committed) and check it record for record against the "
                        "source, each group position set, and each share group's state (its start offset "
                        "and, with --share-groups-acknowledge, its acknowledged records) read back from the "
                        "target's __share_group_state; groups and share groups written to --groups-csv or "
                        "--share-groups-csv are not checked in that run")
    from kafkarec.cli.selection_args import add_storage_argument
    add_storage_argument(p)
    p.set_defaults(func=run)
    return p


def spec_from_args(args):
    """The command line's one :class:`kafkarec.restore.RestoreSpec`."""
    from kafkarec.cli.selection_args import storage_options_from_args
    from kafkarec.restore.spec import RestoreSpec
    if args.no_groups and (args.groups_csv or args.groups_as_of or args.share_groups_csv
                           or args.share_groups_acknowledge):
        raise UsageError("--no-groups with --groups-csv, --share-groups-csv, --share-groups-acknowledge or "
                         "--groups-as-of: choose one")
    for flag, path in (("--offset-map", args.offset_map), ("--groups-csv", args.groups_csv),
                       ("--share-groups-csv", args.share_groups_csv)):
        folder = os.path.dirname(os.path.abspath(path)) if path else None
        if folder is not None and not (os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)):
            # refused before anything is restored, not after the records are committed
            raise UsageError(f"{flag} {path}: {folder} is not a folder this user can write in")
    properties = key_value_pairs(args.target_property, "--target-property", "expected KEY=VALUE")
    return RestoreSpec.of(args.path, args.target_bootstrap, topics=args.topics, rename=args.rename,
                          end_time=args.end_time, restore_id=args.restore_id,
                          transaction_records=args.transaction_records, target_properties=properties,
                          storage_options=storage_options_from_args(args) or None,
                          tiered_storage=args.tiered_storage, timeout=args.timeout, groups_as_of=args.groups_as_of,
                          share_groups_acknowledge=args.share_groups_acknowledge)


def run(args, out: TextIO, err: TextIO) -> int:
    from kafkarec import restore as r
    from kafkarec._extras import require
    spec = spec_from_args(args)
    require("confluent_kafka")
    require("pyarrow")
    try:
        plan = r.plan(spec)
        positions = None
        if not args.no_groups:      # read (and refused) before anything is written
            try:
                r.check_groups(spec, plan)
            except RestoreError as e:
                err.write(f"kafkarec restore: {e}; nothing was restored\n")
                return EXIT_PROBLEMS
        result = r.restore(spec, source_plan=plan)
    except (RestoreError, BrokerError, MalformedBatchError, DecodeError) as e:
        err.write(f"kafkarec restore: {e}\n")
        return EXIT_PROBLEMS
    for s in result.partitions:
        out.write(f"{s.topic}-{s.partition} -> {s.target_topic}-{s.partition} [{s.start}, {s.end}) "
                  f"{s.records} records {s.status}\n")
    if result.created_topics:
        err.write(f"created topic(s) {', '.join(result.created_topics)}\n")
    try:
        done = r.finish(spec, result, offset_map=args.offset_map, groups=not args.no_groups,
                        groups_csv=args.groups_csv, share_groups_csv=args.share_groups_csv)
        if done.groups is not None:
            positions = done.groups
            for g in positions:
                out.write(f"{g.group} {g.topic}-{g.partition} {g.source_offset} -> "
                          f"{g.target_topic}-{g.partition} {g.target_offset}\n")
            err.write(f"{len({g.group for g in positions})} group(s) "
                      f"{'written to ' + args.groups_csv if args.groups_csv else 'set on the target'}\n")
            _report_shares(done.share_groups, args.share_groups_csv, done.share_acknowledged, out, err)
        if args.verify:
            # groups written to a CSV are not on the target yet: not read back (a later run checks them)
            report = r.verify(spec, plan, result.offset_map, None if args.groups_csv else positions,
                              None if args.share_groups_csv else done.share_groups)
            for line in report.notes:
                out.write(f"note: {line}\n")
            for line in report.problems:
                out.write(f"problem: {line}\n")
            out.write(f"verified: {report.records} records, {report.groups} group positions, "
                      f"{report.shares} share group positions, {len(report.problems)} problem(s)\n")
            if not report.ok:
                return EXIT_PROBLEMS
    except (RestoreError, OSError) as e:
        err.write(f"kafkarec restore: {e}; the records are restored (a re-run with the same --restore-id "
                  "writes none of them again)\n")
        return EXIT_PROBLEMS
    return EXIT_OK


def _report_shares(shares, csv_path, acknowledged, out: TextIO, err: TextIO) -> None:
    """One line per share group position, and one per position whose acknowledged records past its
    start offset will be delivered again on the target (a start offset is all Kafka's Admin API
    sets), or, when they were acknowledged there (``acknowledged`` not None), one per partition
    walked saying how."""
    from kafkarec.restore.offsets import ranges as _ranges
    for s in shares:
        out.write(f"share group {s.group} {s.topic}-{s.partition} {s.source_start} -> "
                  f"{s.target_topic}-{s.partition} {s.target_start}\n")
        if s.redelivered and acknowledged is None:
            out.write(f"share group {s.group} {s.target_topic}-{s.partition}: {len(s.redelivered)} acknowledged "
                      f"record(s) past the start offset will be delivered again: target offsets "
                      f"{_ranges(t for _, t in s.redelivered)} (source offsets {_ranges(o for o, _ in s.redelivered)})\n")
    for a in acknowledged or ():
        out.write(f"share group {a.group} {a.target_topic}-{a.partition} acknowledged: accepted "
                  f"{_ranges(a.accepted) or 'none'}, rejected {_ranges(a.rejected) or 'none'}, {a.released} "
                  f"released, {a.status}"
                  + (f" (not acquired: {_ranges(a.missing)})" if a.missing else "") + "\n")
    if shares:
        groups = len({s.group for s in shares})
        err.write(f"{groups} share group(s) written to {csv_path}\n" if csv_path else
                  f"{groups} share group(s) not set on the target (confluent-kafka has no call that sets a share "
                  "group's start offset): --share-groups-csv FILE writes them for kafka-share-groups\n")
    if acknowledged is not None:
        err.write(f"{len({a.group for a in acknowledged})} share group(s) acknowledged on the target\n")
