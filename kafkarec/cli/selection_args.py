"""The command line's selection and storage flags, for ``dump``, ``verify`` and ``stats``.

    --topics a,b          only these topics
    --partition 0,2       only these partitions (of every selected topic)
    --start-offset N      from offset N (inclusive) in every partition
    --end-offset N        up to offset N (exclusive) in every partition
    --start-time T        from the first record at or after T (ms since the epoch or ISO 8601)
    --end-time T          up to the first record at or after T (exclusive)
    --include-deleted-records
                          from each partition's first segment, records below its log start
                          offset too (``deleteRecords`` leaves them in the files)
    --storage-option K=V  a storage option (endpoint=..., region=..., accessKey=..., anonymous=true)

Same meaning as the Spark Kafka-source options (:mod:`kafkarec.log.selection`); a time
wins over an offset.  PATH arguments may be URIs (``s3://bucket/kafka``): see
:mod:`kafkarec.log.storage` for credentials.
"""
from __future__ import annotations

import argparse
from typing import Optional

from kafkarec.log import selection

__all__ = ["add_selection_arguments", "add_storage_argument", "selection_from_args",
           "storage_options_from_args"]


def add_selection_arguments(parser: argparse.ArgumentParser, *, consumer: bool = True,
                            partition: bool = True) -> None:
    """The selection flags; ``consumer``: the command reads partitions as a consumer does, from
    their log start offsets (``--include-deleted-records`` reads below them); otherwise it
    shows the files as they are (``dump``), every record the segments hold.  ``partition``:
    offer ``--partition`` (not where a command holds whole topics against something else)."""
    g = parser.add_argument_group("selection (as Spark's Kafka source: start inclusive, end exclusive)")
    g.add_argument("--topics", metavar="A,B", help="only these topics (comma-separated)")
    if partition:
        g.add_argument("--partition", metavar="P,Q",
                       help="only these partition numbers, in every selected topic (comma-separated)")
    g.add_argument("--start-offset", type=int, metavar="N", help="first offset, in every partition")
    g.add_argument("--end-offset", type=int, metavar="N", help="offset to stop before, in every partition")
    g.add_argument("--start-time", metavar="T",
                   help="first record at or after T (ms since the epoch or ISO 8601, UTC by default)")
    g.add_argument("--end-time", metavar="T", help="stop before the first record at or after T")
    if consumer:
        g.add_argument("--include-deleted-records", action="store_true",
                       help="also the records below each partition's log start offset (deleteRecords "
                            "moved it; the files still hold them): read from the first segment")
    add_storage_argument(parser)


def add_storage_argument(parser: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE`` (repeatable), for PATHs that are URIs."""
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="for URIs: endpoint=URL, region=R, accessKey=K, secretKey=S, "
                             "sessionToken=T, anonymous=true (AWS_* variables work too)")
    parser.add_argument("--tiered-storage-config", metavar="FILE", default=None,
                        help="the tiered-storage plugin's properties (its rsm.config.* settings, as the "
                             "broker was given them): read the segments it stored (chunked, compressed, "
                             "encrypted) under PATH, with the key pairs it names")
    parser.add_argument("--tiered-storage", metavar="ROOT", default=None,
                        help="a tiered-storage root (a folder or URI) holding remote copies of PATH's "
                             "segments: read one history from both (the live copies, as PATH's "
                             "__remote_log_metadata says; gaps are reported)")


def selection_from_args(args: argparse.Namespace) -> Optional[selection.Selection]:
    """The selection the flags ask for, or None when no flag was given (read everything)."""
    partitions = getattr(args, "partition", None)
    flags = (args.topics, partitions, args.start_offset, args.end_offset, args.start_time, args.end_time)
    include_deleted_records = getattr(args, "include_deleted_records", False)
    if all(f is None for f in flags) and not include_deleted_records:
        return None
    return selection.cli_selection(topics=args.topics, start_offset=args.start_offset,
                                   end_offset=args.end_offset, start_time=args.start_time,
                                   end_time=args.end_time,
                                   include_deleted_records=include_deleted_records,
                                   partitions=partitions)


def storage_options_from_args(args: argparse.Namespace) -> dict:
    from kafkarec._option_text import key_value_pairs
    out = key_value_pairs(args.storage_option, "--storage-option", "expected KEY=VALUE",
                          error=selection.SelectionError)
    if getattr(args, "tiered_storage_config", None):
        out["tieredStorageConfig"] = args.tiered_storage_config
    return out
