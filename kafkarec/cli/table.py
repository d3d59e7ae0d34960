"""``kafkarec table PATH``: the state keyed topics stand for (kafkarec.table), one JSON line per
live key, as of the end of the log or of ``--end-offset`` / ``--end-time``."""
from __future__ import annotations

import argparse
import json
from typing import TextIO

from kafkarec.cli.common import EXIT_OK, EXIT_PROBLEMS, PAYLOAD_ENCODINGS, PAYLOAD_RENDERERS
from kafkarec.errors import KafkaRecError, MissingExtraError, SelectionError, StorageError, UsageError
from kafkarec.times import time_fields

__all__ = ["add_parser", "run"]


def add_parser(sub) -> argparse.ArgumentParser:
    from kafkarec import table
    p = sub.add_parser(
        "table", help="each key's latest record (the table a keyed topic stands for), as JSON lines",
        description="For each topic-partition, the last record of every key whose last record is not a "
                    "tombstone: what Kafka's log cleaner would keep of the log, and what a Kafka Streams "
                    "table holds. Records without a key and control records never count; with "
                    "--read-committed neither do aborted transactions nor anything from the last stable "
                    "offset on. --end-offset / --end-time give the state as it stood then. One JSON "
                    "object per row on stdout (topic, partition, offset, timestamp, timestamp_iso where the "
                    "time has one, timestampType, key, value, headers), a summary on stderr.")
    p.add_argument("path", metavar="PATH", help="log dir root, partition dir, or a URI (s3://...)")
    p.add_argument("--read-committed", action="store_true",
                   help="as a read_committed consumer: leave out aborted transactions and what follows "
                        "the last stable offset")
    p.add_argument("--payload-encoding", choices=PAYLOAD_ENCODINGS, default="base64",
                   help="how keys, values and header values are written: base64 (the default: the exact "
                        "bytes), hex, utf8 (invalid bytes as \\xNN) or java (as kafka-dump-log)")
    p.add_argument("--dedupe-buffer-size", type=_buffer_size, metavar="BYTES", default=table.DEFAULT_BUFFER_BYTES,
                   help="memory for the key map, as Kafka's log.cleaner.dedupe.buffer.size (default "
                        "%(default)s: about 5 million keys); more keys cost more passes, not more memory")
    p.add_argument("--cdc", choices=("debezium",),
                   help="the topics hold Debezium change events: print the table they mirror (deletes "
                        "and truncates applied), each row with op, before, after, source and ts_ms "
                        "(before/after/source as JSON objects), cdcError when a value is no envelope; "
                        "with --value-decoder the events are Avro (Protobuf, JSON Schema) through the registry")
    from kafkarec.cli.schemas import add_typed_arguments
    add_typed_arguments(p, "typed keys and values (Schema Registry payloads, printed as JSON; "
                           "value_schema_id/key_schema_id and _corrupt_record added)")
    from kafkarec.cli.selection_args import add_selection_arguments
    add_selection_arguments(p)       # --topics, --end-offset, --end-time (the state as of then) ...
    p.set_defaults(func=run)
    return p


def _buffer_size(text: str) -> int:
    from kafkarec._core import KEY_MAP_MIN_BYTES
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes, not {text!r}") from None
    if n < KEY_MAP_MIN_BYTES:
        raise argparse.ArgumentTypeError(f"at least {KEY_MAP_MIN_BYTES} bytes, not {n}")
    return n


def run(args, out: TextIO, err: TextIO) -> int:
    from kafkarec import table
    from kafkarec.cli.selection_args import selection_from_args, storage_options_from_args
    from kafkarec.cli.schemas import decode_from_args, _json_default
    render = PAYLOAD_RENDERERS[args.payload_encoding]
    decode = decode_from_args(args)
    try:
        state = table.latest(args.path, selection=selection_from_args(args),
                             read_committed=args.read_committed, buffer_bytes=args.dedupe_buffer_size,
                             storage_options=storage_options_from_args(args), cdc=args.cdc, decode=decode)
    except (StorageError, SelectionError, MissingExtraError):
        raise                              # usage: the command line's exit status 2
    except FileNotFoundError:
        raise UsageError(f"{args.path}: no such file or directory") from None
    except (OSError, KafkaRecError, MemoryError, ValueError) as e:
        where = getattr(e, "file", None)
        err.write(f"kafkarec table: {where + ': ' if where else ''}{e}\n")
        return EXIT_PROBLEMS
    t = state.table
    t = t.set_column(t.schema.get_field_index("timestamp"), "timestamp",
                     t.column("timestamp").cast("int64"))
    typed_sides = {side for side in ("key", "value") if decode is not None and decode[side]}
    for row in t.to_pylist():
        for side in ("key", "value"):
            if side not in typed_sides:            # typed sides are JSON values already
                row[side] = render(row[side])
        if row["headers"] is not None:
            row["headers"] = [{"key": h["key"], "value": None if h["value"] is None else render(h["value"])}
                              for h in row["headers"]]
        # the time's ISO form beside its milliseconds, where one exists
        row = dict(kv for k, v in row.items() for kv in (time_fields(k, v).items() if k == "timestamp" else [(k, v)]))
        for image in ("before", "after", "source"):
            if isinstance(row.get(image), str):          # --cdc: Debezium's JSON, as objects
                row[image] = json.loads(row[image])
        out.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False, default=_json_default) + "\n")
    s = state.stats
    partitions = len(set(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist())))
    err.write(f"{s.rows} live keys in {partitions} partition(s) from {s.records} records "
              f"({s.null_keys} without a key, never counted); {s.buckets} key bucket(s), {s.passes} passes\n")
    return EXIT_OK
