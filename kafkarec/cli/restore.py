"""``kafkarec restore LOG --target-bootstrap HOST:PORT``: the committed data records of a history
into another cluster, exactly once across crashes (:mod:`kafkarec.restore`), then every consumer
group's positions as of a time, translated, applied on the target (or written as
``kafka-consumer-groups`` CSV), and with ``--verify`` the target read back against the source.

stdout: one line per partition ``topic-partition -> target-partition [start, end) N records STATUS``
(as each partition finishes),
one per group position ``group topic-partition S -> target-partition T``, one per share group
position ``share group G topic-partition S -> target-partition T`` (and one naming the acknowledged
records past its start offset that the target will deliver again; with
``--share-groups-acknowledge``, one per partition saying what was acknowledged there instead), and
with ``--verify`` a closing ``verified: ...`` line.  ``--dry-run`` prints a line per partition of
what would be written and a summary (``--json``: one document), writing nothing.  ``--evidence
FILE`` writes the restore's evidence; ``--check EVIDENCE SOURCE TARGET`` recomputes it from both
sides and prints a ``difference: ...`` line per difference and a closing ``checked: ...`` line
(:mod:`kafkarec.restore.evidence`).  The options are read once into a
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
    p.add_argument("path", metavar="LOG", nargs="?",
                   help="the source history: a log dir root or a URI (s3://...); not with --check")
    p.add_argument("--target-bootstrap", metavar="HOST:PORT",
                   help="the target cluster's bootstrap servers (host:port,...); required but with --dry-run; "
                        "with --check and a TARGET log dir, the running target's, asked its log starts")
    p.add_argument("--bootstrap", metavar="HOST:PORT",
                   help="the running source cluster's bootstrap servers: each partition's log start and last "
                        "stable offset are asked of its broker (ListOffsets), so that a restore of a live "
                        "broker's log dir starts at the broker's log start (log-start-offset-checkpoint lags "
                        "deleteRecords) and ends at most at its last stable offset")
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
    proof = p.add_argument_group("evidence")
    proof.add_argument("--evidence", metavar="FILE",
                       help="write the restore's evidence to FILE, one JSON document: per partition the source and "
                            "target ranges, the records restored and their SHA-256 content digest (taken as they are "
                            "read), the offset map's digest, the records left out by rule, and the groups' and share "
                            "groups' positions on both sides (with --same-offsets write: per partition the bytes "
                            "rewritten, the replicas written and the SHA-256 of what was written)")
    proof.add_argument("--check", nargs=3, metavar=("EVIDENCE", "SOURCE", "TARGET"),
                       help="instead of a restore: EVIDENCE recomputed from SOURCE and TARGET (the target broker's "
                            "log dir, read offline, or its bootstrap servers; for --same-offsets write's evidence, "
                            "the stopped target's log dirs, comma-separated), a line per difference; exit 1 on any, "
                            "or when no record or batch was compared")
    from kafkarec.restore.schemas import STRATEGIES
    ids = p.add_argument_group("schema ids across registries (docs/restore.md)")
    ids.add_argument("--source-registry", metavar="SOURCE",
                     help="the source's registry: a log dir holding _schemas (LOG itself), a folder, a URL")
    ids.add_argument("--target-registry", metavar="URL",
                     help="the target's registry: each schema used is registered there, each record's id rewritten")
    ids.add_argument("--subject-strategy", choices=STRATEGIES, metavar="STRATEGY",
                     help=f"the subject-naming strategy that says which fields are framed: {', '.join(STRATEGIES)} "
                          "(default topic)")
    same = p.add_argument_group("same offsets (docs/restore.md#same-offsets): the source's log written into a "
                                "fresh target's log dirs (every replica), every offset kept")
    from kafkarec.restore.spec import SAME_OFFSETS_STEPS
    same.add_argument("--same-offsets", metavar="STEP", choices=SAME_OFFSETS_STEPS,
                      help="prepare (the target running: topics created as the source's, refused when one holds "
                           "records or differs in partitions), write (the target stopped: each partition folder "
                           "written from the source's segments, batches byte for byte but the partition leader "
                           "epoch and producer ids, open transactions aborted), groups (the target started "
                           "again: each partition checked to serve what was written, the groups' positions set "
                           "as they were)")
    same.add_argument("--target-log-dir", metavar="DIR", action="append",
                      help="with --same-offsets: a target broker's log dir (its log.dirs); given once for each "
                           "log dir of each broker (or comma-separated): every replica is written")
    dry = p.add_argument_group("dry run")
    dry.add_argument("--dry-run", action="store_true",
                     help="read every selected segment as the restore would and print per partition what would "
                          "be written (full, partial, done, missing, damaged, refused) and a summary; nothing is "
                          "written to the target (with --target-bootstrap only the restore's progress is read "
                          "there). Exit status 0 when every partition would be restored whole, 1 when one is "
                          "damaged, missing or refused")
    dry.add_argument("--json", action="store_true", help="with --dry-run: one JSON document on stdout")
    from kafkarec.cli.selection_args import add_storage_argument
    add_storage_argument(p)
    p.set_defaults(func=run)
    return p


def spec_from_args(args):
    """The command line's one :class:`kafkarec.restore.RestoreSpec`."""
    from kafkarec.cli.selection_args import storage_options_from_args
    from kafkarec.restore.spec import RestoreSpec
    if args.path is None:
        raise UsageError("the following argument is required: LOG (but with --check)")
    if args.evidence and args.dry_run:
        raise UsageError("--evidence with --dry-run: a dry run restores nothing to give evidence of")
    if args.target_bootstrap is None and not args.dry_run and args.same_offsets != "write":
        raise UsageError("the following argument is required: --target-bootstrap (but with --dry-run)")
    if args.json and not args.dry_run:
        raise UsageError("--json is --dry-run's: add --dry-run")
    if args.no_groups and (args.groups_csv or args.groups_as_of or args.share_groups_csv
                           or args.share_groups_acknowledge):
        raise UsageError("--no-groups with --groups-csv, --share-groups-csv, --share-groups-acknowledge or "
                         "--groups-as-of: choose one")
    for flag, path in (("--offset-map", args.offset_map), ("--groups-csv", args.groups_csv), ("--evidence", args.evidence),
                       ("--share-groups-csv", args.share_groups_csv)):
        folder = os.path.dirname(os.path.abspath(path)) if path else None
        if folder is not None and not (os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)):
            # refused before anything is restored, not after the records are committed
            raise UsageError(f"{flag} {path}: {folder} is not a folder this user can write in")
    if args.same_offsets:
        given = [f"--{n.replace('_', '-')}" for n in _NOT_WITH_SAME_OFFSETS
                 if getattr(args, n, None) not in (None, False, [])]
        if given:
            raise UsageError(f"--same-offsets with {', '.join(given)}: a copy of the log at its offsets has no "
                             "offset map and no dry run")
        if args.evidence and args.same_offsets != "write":
            raise UsageError(f"--same-offsets {args.same_offsets} with --evidence: the write step gives the evidence "
                             "of what it wrote")
        if args.same_offsets != "groups" and (args.groups_csv or args.no_groups or args.groups_as_of
                                              or args.share_groups_csv or args.share_groups_acknowledge):
            raise UsageError(f"--same-offsets {args.same_offsets} sets no group: the groups step does, with the "
                             "target running")
    properties = key_value_pairs(args.target_property, "--target-property", "expected KEY=VALUE")
    return RestoreSpec.of(args.path, args.target_bootstrap, topics=args.topics, rename=args.rename,
                          end_time=args.end_time, restore_id=args.restore_id,
                          transaction_records=args.transaction_records, target_properties=properties,
                          storage_options=storage_options_from_args(args) or None,
                          tiered_storage=args.tiered_storage, timeout=args.timeout, groups_as_of=args.groups_as_of,
                          share_groups_acknowledge=args.share_groups_acknowledge, bootstrap=args.bootstrap,
                          digest=bool(args.evidence) and not args.same_offsets, source_registry=args.source_registry,
                          target_registry=args.target_registry, subject_strategy=args.subject_strategy or "topic",
                          same_offsets=args.same_offsets, target_log_dir=args.target_log_dir)


def run(args, out: TextIO, err: TextIO) -> int:
    from kafkarec import restore as r
    from kafkarec._extras import require
    if args.check:
        return _check(args, out)
    spec = spec_from_args(args)
    if spec.same_offsets:
        return _same_offsets(spec, args, out, err)
    if args.dry_run:
        return _dry_run(spec, args, out, err)
    require("confluent_kafka")
    require("pyarrow")

    def finished(s) -> None:
        # said as each partition ends, so that a killed run shows how far it got
        out.write(f"{s.topic}-{s.partition} -> {s.target_topic}-{s.partition} [{s.start}, {s.end}) "
                  f"{s.records} records {s.status}\n")
        out.flush()
    try:
        plan = r.plan(spec)
        positions = None
        if not args.no_groups:      # read (and refused) before anything is written
            try:
                r.check_groups(spec, plan)
            except RestoreError as e:
                err.write(f"kafkarec restore: {e}; nothing was restored\n")
                return EXIT_PROBLEMS
        result = r.restore(spec, source_plan=plan, on_partition=finished)
    except (RestoreError, BrokerError, MalformedBatchError, DecodeError) as e:
        err.write(f"kafkarec restore: {e}\n")
        return EXIT_PROBLEMS
    if result.created_topics:
        err.write(f"created topic(s) {', '.join(result.created_topics)}\n")
    _report_schemas(spec, out)
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
            _write_report(out, report, "problem", f"verified: {report.records} records, {report.groups} group "
                          f"positions, {report.shares} share group positions, {len(report.problems)} problem(s)")
            if not report.ok:
                _evidence(args, spec, result, done, err)
                return EXIT_PROBLEMS
        _evidence(args, spec, result, done, err)
    except (RestoreError, OSError) as e:
        err.write(f"kafkarec restore: {e}; the records are restored (a re-run with the same --restore-id "
                  "writes none of them again)\n")
        return EXIT_PROBLEMS
    return EXIT_OK


def _evidence(args, spec, result, done, err: TextIO) -> None:
    """``--evidence``: the document written (the groups' positions as translated: set on the target
    or written to the CSVs; translated here with ``--no-groups``, which the document says)."""
    if not args.evidence:
        return
    from kafkarec.restore import evidence
    doc = evidence.document(spec, result.plan, result.partitions, result.offset_map,
                            None if done.groups is None else done.groups, done.share_groups)
    evidence.write(doc, args.evidence)
    err.write(f"evidence written to {args.evidence}\n")


#: options of the produced restore that a restore at the source's offsets does not take
_NOT_WITH_SAME_OFFSETS = ("dry_run", "json", "verify", "offset_map")


def _same_offsets(spec, args, out: TextIO, err: TextIO) -> int:
    """``--same-offsets STEP``: a line per partition written (every field rewritten named), or per
    group position set; the next step said on stderr."""
    from kafkarec.errors import LogDirWriteError
    from kafkarec.restore import same_offsets as so
    from kafkarec._extras import require
    try:
        if spec.same_offsets == "prepare":
            require("confluent_kafka")
            done = so.prepare(spec)
            if done.created_topics:
                err.write(f"created topic(s) {', '.join(done.created_topics)}\n")
            out.write(f"prepared {len(done.partitions)} partition(s) of cluster {done.cluster_id} in "
                      f"{', '.join(spec.target_log_dirs)}\n")
            err.write("next: stop every target broker cleanly (all at once), then run --same-offsets write\n")
        elif spec.same_offsets == "write":
            def written(w) -> None:
                out.write(w.line() + "\n")
                out.flush()
            so.write(spec, on_partition=written)
            if args.evidence:
                import json
                from kafkarec._boot.files import atomic_write
                atomic_write(args.evidence, (json.dumps(so.evidence(spec), indent=1, sort_keys=True) + "\n").encode(),
                             mode=0o644)
                err.write(f"evidence written to {args.evidence}\n")
            err.write("next: start the target broker (it recovers the written logs, rebuilding their indexes and "
                      "producer state), then run --same-offsets groups\n")
        else:
            require("confluent_kafka")
            done = so.groups(spec, apply=not args.no_groups, groups_csv=args.groups_csv,
                             share_groups_csv=args.share_groups_csv)
            for (topic, partition), (start, end) in sorted(done.served.items()):
                out.write(f"{topic}-{partition} served [{start}, {end})\n")
            for g in done.positions if not args.no_groups else ():
                out.write(f"{g.group} {g.topic}-{g.partition} {g.source_offset} -> "
                          f"{g.target_topic}-{g.partition} {g.target_offset}\n")
            if not args.no_groups:
                err.write(f"{len({g.group for g in done.positions})} group(s) "
                          f"{'written to ' + args.groups_csv if args.groups_csv else 'set on the target'}\n")
                _report_shares(done.share_groups, args.share_groups_csv, done.share_acknowledged, out, err)
    except (RestoreError, LogDirWriteError, BrokerError, MalformedBatchError, DecodeError, OSError) as e:
        err.write(f"kafkarec restore: {e}\n")
        return EXIT_PROBLEMS
    return EXIT_OK


#: --check with options that belong to a restore
_NOT_WITH_CHECK = ("bootstrap", "topics", "end_time", "offset_map", "groups_as_of", "groups_csv",
                   "share_groups_csv", "share_groups_acknowledge", "no_groups", "verify", "dry_run", "json",
                   "evidence", "source_registry", "target_registry", "subject_strategy")


def _check(args, out: TextIO) -> int:
    """``--check EVIDENCE SOURCE TARGET``: a ``difference:`` line per difference, a ``note:`` line
    per thing not compared, and ``checked: ...``; exit 1 on any difference or when no record was
    compared."""
    from kafkarec.cli.selection_args import storage_options_from_args
    from kafkarec.restore import evidence
    if args.path is not None:
        raise UsageError(f"--check takes EVIDENCE SOURCE TARGET, not LOG ({args.path})")
    given = [f"--{n.replace('_', '-')}" for n in _NOT_WITH_CHECK if getattr(args, n, None) not in (None, False, [])]
    if args.rename:
        given.append("--rename")
    if given:
        raise UsageError(f"--check with {', '.join(given)}: the evidence says what the restore did")
    path, source, target = args.check
    from kafkarec.restore import same_offsets as so
    if so.is_evidence(path):
        return _check_same_offsets(args, so.read_evidence(path), source, target, out)
    doc = evidence.read(path)
    properties = key_value_pairs(args.target_property, "--target-property", "expected KEY=VALUE")
    try:
        report = evidence.check(doc, source, target, target_properties=properties, timeout=args.timeout,
                                storage_options=storage_options_from_args(args) or None,
                                tiered_storage=args.tiered_storage, target_bootstrap=args.target_bootstrap)
    except (RestoreError, BrokerError, MalformedBatchError, DecodeError) as e:
        out.write(f"difference: {e}\n")
        return EXIT_PROBLEMS
    _write_report(out, report, "difference", f"checked: {report.records} records, {report.groups} group positions, "
                  f"{report.shares} share group positions, {len(report.problems)} difference(s)")
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _check_same_offsets(args, doc, source: str, target: str, out: TextIO) -> int:
    """``--check`` of a restore at the same offsets: TARGET the stopped target's log dirs (comma-separated)."""
    from kafkarec.cli.selection_args import storage_options_from_args
    from kafkarec.errors import LogDirWriteError
    from kafkarec.restore import same_offsets as so
    try:
        report = so.check(doc, source, target, storage_options=storage_options_from_args(args) or None,
                          tiered_storage=args.tiered_storage)
    except (RestoreError, LogDirWriteError, MalformedBatchError, DecodeError, OSError) as e:
        out.write(f"difference: {e}\n")
        return EXIT_PROBLEMS
    _write_report(out, report, "difference", f"checked: {report.partitions} partition(s), {report.replicas} "
                  f"replica(s), {report.batches} batches, {len(report.problems)} difference(s)")
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _report_schemas(spec, out: TextIO) -> None:
    """A line per schema id translated, and one per framed field left as it was."""
    from kafkarec.restore.schemas import translation_for
    tr = translation_for(spec)
    if tr is None:
        return
    for m in sorted(tr.mappings):
        out.write(f"schema id {m.source_id} -> {m.target_id} ({m.subject} version {m.version}, "
                  + ("id kept)\n" if m.kept else "the target registry's id)\n"))
    for u in tr.unknown:
        out.write(f"schema id not translated: {u.line()}\n")
    if tr.unknown_count > len(tr.unknown):
        out.write(f"schema id not translated: {tr.unknown_count - len(tr.unknown)} more field(s)\n")


def _write_report(out: TextIO, report, problem: str, closing: str) -> None:
    """``--verify``'s and ``--check``'s lines: a ``note:`` line per thing not compared, a line per
    problem (``problem:``, ``difference:``), then the closing line."""
    for line in report.notes:
        out.write(f"note: {line}\n")
    for line in report.problems:
        out.write(f"{problem}: {line}\n")
    out.write(closing + "\n")


def _dry_run(spec, args, out: TextIO, err: TextIO) -> int:
    """``--dry-run``: a line per partition as it is judged (or, ``--json``, one document at the end),
    the groups' positions checked as the restore checks them first (but with ``--no-groups``), and a
    summary; exit 1 when a partition would not be restored whole or the groups would be refused."""
    import json
    from kafkarec import restore as r
    from kafkarec._extras import require
    require("pyarrow")

    def judged(p) -> None:
        if not args.json:
            out.write(p.line() + "\n")
            out.flush()
    try:
        plan = r.plan(spec)
        report = r.dry_run(spec, source_plan=plan, on_partition=judged)
        groups = None
        if not args.no_groups:
            # the restore reads and checks every group's source position before writing anything
            try:
                r.check_groups(spec, plan)
            except RestoreError as e:
                where = [w for w in (f"group {e.group}" if e.group else None,
                                     f"{e.topic}-{e.partition}" if e.topic else None) if w]
                groups = f"{', '.join(where)}: {e.reason}" if where else e.reason
    except (RestoreError, BrokerError) as e:
        err.write(f"kafkarec restore: {e}\n")
        return EXIT_PROBLEMS
    ok = report.ok and groups is None
    if args.json:
        out.write(json.dumps({"partitions": [p.as_dict() for p in report.partitions], "counts": report.counts(),
                              "records": sum(p.records for p in report.partitions), "groups": groups, "ok": ok},
                             separators=(",", ":")) + "\n")
    else:
        if groups is not None:
            out.write(f"groups refused (the restore would write nothing): {groups}\n")
        out.write(report.summary() + "\n")
    return EXIT_OK if ok else EXIT_PROBLEMS


def _report_shares(shares, csv_path, acknowledged, out: TextIO, err: TextIO) -> None:
    """One line per share group position, and one per position whose acknowledged records past its
    start offset will be delivered again on the target (a start offset is all Kafka's Admin API
    sets), or, when they were acknowledged there (``acknowledged`` not None), one per partition
    walked saying how."""
    from kafkarec.runs import ranges as _ranges
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
