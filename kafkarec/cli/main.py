"""``kafkarec`` command line: dump, verify and summarise Kafka log directories.

    kafkarec dump   PATH...   kafka-dump-log.sh work-alike (same lines)
    kafkarec verify PATH...   CRCs, offsets, indexes; exit status 1 on problems
    kafkarec stats  PATH...   batches, records, codecs, producers, sizes
    kafkarec census PATH...   records, keys, live keys, tombstones, placement; --what-if codecs
    kafkarec find   PATH...   records by key, value or header
    kafkarec restore LOG --target-bootstrap HOST:PORT   into another cluster, exactly once; its groups

PATH may be a log directory root, a ``<topic>-<partition>`` directory or
files.  This module parses arguments, resolves PATHs into files and
partitions, and dispatches; the commands are :mod:`kafkarec.cli.dump`,
:mod:`kafkarec.cli.verify` and :mod:`kafkarec.cli.stats`.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import textwrap
from typing import List, Optional

import kafkarec
from kafkarec.cli import decode_args, dump, ranges, selection_args, stats, verify
from kafkarec.cli import metadata as metadata_cmd, transactions as transactions_cmd
from kafkarec.log import sidefiles as sf
from kafkarec.log.names import TopicPartition, parse_partition_folder, parse_segment_name
from kafkarec.errors import (KafkaRecError, RemoteObjectError, SelectionError, StorageError,  # noqa: F401 (re-exported)
                             UsageError)
from kafkarec.errors import MissingExtraError
from kafkarec.log.staging import Staging
from kafkarec.log.storage import is_uri
from kafkarec.cli.common import EXIT_PROBLEMS, EXIT_USAGE, INT_MAX, PAYLOAD_ENCODINGS
from kafkarec.log.directory import PartitionDir, SegmentFiles
from kafkarec.log.segment import base_offset_from_name

__all__ = ["main", "build_parser"]




# --- path handling ------------------------------------------------------------

def resolve(paths: List[str]) -> list:
    """Expand PATH arguments into ("partition", PartitionDir) and ("file", path) items (a folder's
    partitions as the reader's door lists them: :func:`kafkarec.scan.partition_folders`)."""
    from kafkarec.scan import partition_folders
    items = []
    for p in paths:
        if is_uri(p):
            raise UsageError(f"{p}: a URI is read through kafkarec.log.storage, not as a local path")
        if not os.path.exists(p):
            raise UsageError(f"{p}: no such file or directory")
        if os.path.isdir(p):
            if not os.access(p, os.R_OK | os.X_OK):
                raise UsageError(f"{p}: permission denied")
            found = partition_folders(p)
            if not found:
                raise UsageError(f"{p}: not a Kafka log directory (found no <topic>-<partition> "
                                 "directories and no .log segments)")
            items.extend(("partition", d) for d in found)
        else:
            if not os.access(p, os.R_OK):
                raise UsageError(f"{p}: permission denied")
            items.append(("file", p))
    return items


def _files_of(pdir: PartitionDir) -> List[str]:
    """A partition's files in the order dump prints them."""
    out = []
    for s in pdir.segments:
        out.extend(f for f in (s.log, s.index, s.timeindex, s.txnindex) if f)
    out.extend(pdir.producer_snapshots)
    out.extend(pdir.kraft_snapshots)
    out.extend(f for f in (pdir.leader_epoch_checkpoint, pdir.partition_metadata) if f)
    return out


def _segment_of_file(path: str, notes: Optional[List[str]] = None) -> Optional[PartitionDir]:
    """A one-segment PartitionDir for a file argument (the file plus its siblings)."""
    d = os.path.dirname(path) or "."
    kind = sf.file_kind(path)
    tp = parse_partition_folder(os.path.abspath(d), tiered_files=bool(getattr(
        parse_segment_name(path), "segment_id", None)))
    empty = PartitionDir(d, tp and TopicPartition(tp[0], tp[1]), [], [], [], None, None, [])
    if kind in ("log", "index", "timeindex", "txnindex"):
        base = base_offset_from_name(path)
        if base is None:
            if kind != "log":
                raise UsageError(f"{path}: an index is read relative to the base offset in its file "
                                 "name, and this name has none (expected 20 digits, e.g. "
                                 "00000000000000000000.index)")
            # A renamed or backed-up segment: no siblings by name; the
            # segment takes its base offset from its first batch.
            from kafkarec.scan import FileWalk
            with FileWalk(path) as walk:
                base = walk.base_offset
            if notes is not None:
                notes.append(f"note: {path}: the file name holds no offset; base offset {base} "
                             "taken from the first batch")
            return empty._replace(segments=[SegmentFiles(base, path, None, None, None)])
        seg_name = parse_segment_name(path)
        # Siblings share the file's stem: 20 digits, or a tiered <offset>-<segment id>.
        stem = (os.path.join(d, os.path.basename(path).rsplit(".", 1)[0]) if seg_name is not None
                else os.path.join(d, sf.file_name(base, "")))

        def sib(suffix):
            return stem + suffix if os.path.isfile(stem + suffix) else None
        log = path if kind == "log" else sib(sf.LOG_SUFFIX)
        return empty._replace(segments=[SegmentFiles(base, log, sib(sf.INDEX_SUFFIX),
                                                     sib(sf.TIME_INDEX_SUFFIX), sib(sf.TXN_INDEX_SUFFIX),
                                                     seg_name.segment_id if seg_name else None)])
    if kind == "snapshot":
        return empty._replace(producer_snapshots=[path])
    if kind == "checkpoint":
        return empty._replace(kraft_snapshots=[path])
    if kind == "leader-epoch-checkpoint":
        return empty._replace(leader_epoch_checkpoint=path)
    if kind == "partition-metadata":
        return empty._replace(partition_metadata=path)
    return None


def _partitions_for(items: list, err=None, *, notes: Optional[List[str]] = None) -> List[PartitionDir]:
    """Partition work units for verify/stats; file arguments become one-segment units.
    Notes (a base offset taken from the first batch) go to ``err``, or into ``notes``."""
    out, seen = [], set()
    for kind, item in items:
        if kind == "partition":
            out.append(item)
            continue
        found_notes: List[str] = []
        pdir = _segment_of_file(item, found_notes)
        for note in found_notes:
            if notes is not None:
                notes.append(note)
            elif err is not None:
                err.write(note + "\n")
        if pdir is None:
            raise UsageError(f"{item}: not a Kafka log file (expected .log, .index, .timeindex, "
                             ".txnindex, .snapshot, .checkpoint, leader-epoch-checkpoint or "
                             "partition.metadata)")
        key = (os.path.abspath(pdir.path), tuple(s.base_offset for s in pdir.segments),
               tuple(pdir.producer_snapshots), tuple(pdir.kraft_snapshots),
               pdir.leader_epoch_checkpoint, pdir.partition_metadata)
        if key not in seen:
            seen.add(key)
            out.append(pdir)
    return out


# --- the commands -------------------------------------------------------------------------

def _run_dump(args, out, err) -> int:
    if ranges.wants_ranges(args):
        return dump.run_ranges(ranges.plan(args, files=True), args, out, err)
    files = []
    for kind, item in resolve(args.paths):
        files.extend(_files_of(item) if kind == "partition" else [item])
    return dump.run(files, args, out, err)


def _run_verify(args, out, err) -> int:
    # URIs, and with the plugin's config every path, are staged (a plugin's segments as the broker had them)
    staged_paths = [p for p in args.paths if is_uri(p) or getattr(args, "tiered_storage_config", None)]
    local = [p for p in args.paths if p not in staged_paths]
    pdirs = _partitions_for(resolve(local), err) if local else []
    staged = {}
    with contextlib.ExitStack() as stack:
        for uri in staged_paths:
            # a log directory, partition folder or file under a URI, mirrored into a
            # temporary folder; each segment is downloaded only while it is checked
            staging = stack.enter_context(Staging(uri, selection_args.storage_options_from_args(args)))
            try:
                root, _ = staging.mirror()
                notes: List[str] = []
                found = _partitions_for(resolve([root]), notes=notes)
            except FileNotFoundError:
                raise UsageError(f"{uri}: no such file or directory") from None
            except UsageError as e:
                raise UsageError(staging.rename(str(e))) from None
            for note in notes:
                err.write(staging.rename(note) + "\n")
            for pdir in found:
                staged[id(pdir)] = staging
            pdirs.extend(found)
        return verify.run(pdirs, args, out, err, staging_of=lambda pdir: staged.get(id(pdir)))


def _run_stats(args, out, err) -> int:
    if args.plot:
        why = stats.plot_unavailable()     # fail before a long scan, not after it
        if why:
            raise UsageError(why)
    if ranges.wants_ranges(args):
        return stats.run_ranges(ranges.plan(args), args, out, err)
    return stats.run(_partitions_for(resolve(args.paths), err), args, out, err)


# --- argument parsing ------------------------------------------------------------------

EPILOG = """\
PATH may be a log directory root (a folder of <topic>-<partition> folders),
one <topic>-<partition> folder, or individual files, on disk or as URIs
(s3://bucket/kafka, gs://, abfs://, hdfs://, file://; verify stages one segment
at a time in a temporary folder); dump and stats also take the selection flags
(--topics, --start-offset, --end-offset, --start-time, --end-time).

exit status: 0 all good; 1 problems in the data (verify found errors, or
dump/stats met something they could not read); 2 usage errors (bad options,
a PATH that does not exist or holds no Kafka files, --plot without matplotlib,
an optional dependency missing: the line names the extra to install).
"""


def _nonneg_int(s: str) -> int:
    v = int(s)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {v}")
    return v


def _wrap(text: str) -> str:
    return textwrap.fill(text, 79)


def _command(sub, name: str, func, *, help: str, description: str) -> argparse.ArgumentParser:
    """A subcommand that takes PATHs; the caller adds its options, then :func:`_add_last`."""
    p = sub.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
                       help=help, description=_wrap(description))
    p.add_argument("paths", nargs="+", metavar="PATH", help="log dir root, partition dir or files")
    p.set_defaults(func=func)
    return p


def _add_last(p: argparse.ArgumentParser, *, progress: bool, crc: bool = True) -> None:
    """The options every command ends with: --no-progress (if it scans with a bar), the read
    options of :class:`kafkarec.ReadOptions` under their own names (``--strict``,
    ``--no-verify-crc`` where the command judges CRCs) and the decompression budget."""
    if progress:
        p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--strict", action="store_true",
                   help="ReadOptions.strict: also refuse what the format forbids but Kafka's Java "
                        "reader lets through (unused attribute bits, a record count that does not "
                        "fit lastOffsetDelta, malformed control records...)")
    if crc:
        p.add_argument("--no-verify-crc", dest="verify_crc", action="store_false",
                       help="ReadOptions.verify_crc=False: do not check batch CRCs (faster; a "
                            "corrupt batch is then read as it is)")
    else:
        # dump prints every batch's records whatever its CRC (isvalid says), as kafka-dump-log
        p.set_defaults(verify_crc=False)
    p.add_argument("--max-decompressed-bytes", type=_nonneg_int, metavar="N",
                   default=kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES,
                   help="refuse to inflate one compressed batch past N bytes, a guard against "
                        f"decompression bombs (default {kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES})")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kafkarec", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_wrap("Read Apache Kafka log directories: dump segments and side files like "
                          "kafka-dump-log.sh, verify them, summarise them."),
        epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"kafkarec {kafkarec.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    d = _command(
        sub, "dump", _run_dump,
        help="print segments and side files the way kafka-dump-log.sh does",
        description="Print .log, .checkpoint, .index, .timeindex, .txnindex and producer .snapshot "
                    "files with the same lines as Kafka's DumpLogSegments (kafka-dump-log.sh); also "
                    "leader-epoch-checkpoint, partition.metadata and offset checkpoints (kafkarec "
                    "extensions). Index mismatches, time index errors and non-consecutive offsets are "
                    "reported on stderr at the end, as Kafka does.")
    d.add_argument("--deep-iteration", action="store_true",
                   help="print every record, not just batch headers (implied by --print-data-log)")
    d.add_argument("--print-data-log", action="store_true",
                   help="print record keys and values (as UTF-8 text); implies --deep-iteration")
    d.add_argument("--skip-record-metadata", action="store_true",
                   help="leave out per-record metadata (offset, timestamp, sizes, control record "
                        "details); with --print-data-log the line starts with the key or payload")
    d.add_argument("--max-bytes", type=_nonneg_int, default=INT_MAX, metavar="N",
                   help="read only the first N bytes of each .log/.checkpoint file "
                        "(default: all; no 'invalid bytes' report when given)")
    d.add_argument("--max-message-size", type=_nonneg_int, default=5 * 1024 * 1024, metavar="N",
                   help="largest batch looked for at an .index entry's position (default 5242880)")
    d.add_argument("--verify-index-only", action="store_true",
                   help="for .index/.timeindex: check entries against the log, print no entries")
    d.add_argument("--index-sanity-check", action="store_true",
                   help="for .index/.timeindex: only run the broker's startup sanity check")
    d.add_argument("--json", action="store_true",
                   help="one JSON object per line on stdout instead of Kafka's text lines")
    d.add_argument("--payload-encoding", choices=PAYLOAD_ENCODINGS, default="java",
                   help="how --print-data-log shows keys, values and header values: java (as "
                        "kafka-dump-log: UTF-8, invalid bytes become U+FFFD; the default), utf8 "
                        "(invalid bytes shown as \\xNN), base64 or hex (the exact bytes)")
    decode_args.add_decoder_arguments(d)
    from kafkarec.cli.schemas import add_typed_arguments   # --value-decoder/--key-decoder registry
    add_typed_arguments(d)
    _add_last(d, progress=False, crc=False)
    selection_args.add_selection_arguments(d, consumer=False)   # the files' every record, as kafka-dump-log

    v = _command(
        sub, "verify", _run_verify,
        help="check CRCs, offsets and indexes; exit status 1 if anything is wrong",
        description="Check every batch (framing, magic, CRC, offsets increasing within and across "
                    "segments) and each segment's .index, .timeindex and .txnindex against it; producer "
                    "snapshots (CRC, layout), leader-epoch-checkpoint (layout and the epochs batches "
                    "carry), partition.metadata and KRaft .checkpoint files. Every problem is printed "
                    "as 'FILE: position P, offset O: reason'; warnings and notes (-v) do not fail the run.")
    v.add_argument("--resync", action="store_true",
                   help="after a corrupt region go on at the next plausible batch header (sane size, "
                        "magic 0..2, valid CRC) instead of stopping at it")
    v.add_argument("--deep", action="store_true",
                   help="also decode (and decompress) every record, checking counts, offsets and "
                        "control records")
    v.add_argument("--json", action="store_true", help="one JSON object per problem, then a summary")
    v.add_argument("-v", "--verbose", action="store_true",
                   help="also print notes (e.g. indexes left untrimmed by an unclean shutdown)")
    selection_args.add_storage_argument(v)
    _add_last(v, progress=True)

    s = _command(
        sub, "stats", _run_stats,
        help="batches, records, bytes, codecs, producers and size distributions",
        description="Summarise per segment, partition and topic: batches, records, bytes, codecs and "
                    "their compression ratios, producers, transactional and control share, timestamp "
                    "range, batch size and records-per-batch distributions. A progress bar is drawn on "
                    "stderr when it is a terminal.")
    s.add_argument("--headers-only", action="store_true",
                   help="read batch headers only: faster, but no compression ratios")
    s.add_argument("--plot", metavar="FILE.png",
                   help="also draw the distributions into FILE.png (needs matplotlib)")
    s.add_argument("--json", action="store_true",
                   help="one JSON object per partition and topic, then a total")
    _add_last(s, progress=True)
    selection_args.add_selection_arguments(s)
    metadata_cmd.add_parser(sub)
    transactions_cmd.add_parser(sub)
    from kafkarec.cli import table as table_cmd      # keyed state (kafkarec.table)
    table_cmd.add_parser(sub)
    from kafkarec.cli import backfill as backfill_cmd    # lakehouse tables (kafkarec.lakehouse)
    backfill_cmd.add_parser(sub)
    from kafkarec.cli import schemas as schemas_cmd   # registry helper's command
    schemas_cmd.add_parser(sub)
    from kafkarec.cli import audit as audit_cmd       # a lakehouse table against the log
    audit_cmd.add_parser(sub)
    from kafkarec.cli import census as census_cmd     # census, --what-if, find (kafkarec.census)
    census_cmd.add_parsers(sub)
    from kafkarec.cli import restore as restore_cmd   # into another cluster (kafkarec.restore)
    restore_cmd.add_parser(sub)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Run the CLI; returns the exit status (never calls sys.exit)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:        # --help, --version, or a usage error already printed
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    out, err = sys.stdout, sys.stderr
    try:
        return args.func(args, out, err)
    except (UsageError, SelectionError, StorageError, MissingExtraError) as e:
        # Bad paths, selections or storage settings, or a missing extra: one line, no traceback.
        err.write(f"kafkarec {args.command}: error: {e}\n")
        return EXIT_USAGE
    except RemoteObjectError as e:
        # a tiered object that does not turn back into its segment: one line naming it and the chunk
        err.write(f"kafkarec {args.command}: error: {e}\n")
        return EXIT_PROBLEMS
    except BrokenPipeError:
        # Output piped into e.g. `head`: stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return 130


if __name__ == "__main__":      # pragma: no cover
    sys.exit(main())
