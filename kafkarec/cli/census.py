"""``kafkarec census PATH`` (with ``--what-if``) and ``kafkarec find PATH``: the command line of
:mod:`kafkarec.census`."""
from __future__ import annotations

import argparse
import json
import re
from typing import TextIO

from kafkarec.cli.common import EXIT_OK, EXIT_PROBLEMS, Progress, human
from kafkarec.cli.selection_args import add_selection_arguments, selection_from_args, storage_options_from_args
from kafkarec._option_text import key_value_pairs
from kafkarec.errors import UsageError
from kafkarec.times import time_fields, time_text

__all__ = ["add_parsers", "run_census", "run_find"]


def add_parsers(sub) -> None:
    from kafkarec.census import DEFAULT_BATCH_SIZE, DEFAULT_MAX_EXACT_KEYS
    c = sub.add_parser(
        "census", help="records, keys, live keys, tombstones, codecs, producers... per partition and topic",
        description="Per topic-partition and topic, what a read_committed consumer returns from the log start "
                    "(or --start-*) to the end (or --end-*): records, batches, bytes, time range, tombstones, "
                    "distinct keys, live keys and live bytes after compaction, bytes by codec, producer id, "
                    "header key and schema id, size distributions, whether keys sit where Kafka's default "
                    "partitioner (murmur2) puts them; and what read_uncommitted adds (aborted and open "
                    "transactions' records, control markers). Damaged batches are counted as errors (exit 1). "
                    "--what-if re-batches the committed records as Kafka's Java producer and writes them with "
                    "each codec and level.")
    c.add_argument("paths", nargs="+", metavar="PATH", help="log dir root, partition dir, or a URI")
    c.add_argument("--json", action="store_true", help="one JSON document on stdout")
    c.add_argument("--max-exact-keys", type=int, default=DEFAULT_MAX_EXACT_KEYS, metavar="N",
                   help="distinct keys counted exactly up to N per partition (about 100 bytes a key), "
                        "then by HyperLogLog (~0.8%% error); live keys are then unknown (default %(default)s)")
    c.add_argument("--partitions", action="append", default=[], metavar="TOPIC=N",
                   help="the topic's partition count for the murmur2 check (default: as many as PATH holds)")
    c.add_argument("--as-of", type=int, metavar="MS",
                   help="judge tombstones' delete horizons at this time (ms since the epoch; default now)")
    c.add_argument("--what-if", metavar="CODECS",
                   help="e.g. zstd:3,zstd:9,lz4,snappy,gzip:6,none: bytes, ratio and compress time per codec "
                        "and level (gzip 1-9, lz4 1-17, zstd -131072..22)")
    c.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, metavar="BYTES",
                   help="the producer's batch.size for --what-if (default %(default)s)")
    c.add_argument("--keep-batches", action="store_true",
                   help="--what-if keeps the log's own batch boundaries instead of re-batching")
    c.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_selection_arguments(c)
    c.set_defaults(func=run_census)

    f = sub.add_parser(
        "find", help="records by key, value bytes or pattern, header; JSON lines or a table",
        description="The records matching every test given, within the selection (topics, offsets and "
                    "times resolved through the indexes). --partitioner murmur2 reads only the partition "
                    "Kafka's default partitioner names for the key (right only if every producer used it: "
                    "kafkarec census tells).")
    f.add_argument("paths", nargs="+", metavar="PATH", help="log dir root, partition dir, or a URI")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--key", help="the key, as UTF-8 text")
    g.add_argument("--key-hex", help="the key's bytes in hex")
    f.add_argument("--value-contains", help="the value holds this UTF-8 text")
    f.add_argument("--value-contains-hex", metavar="HEX", help="the value holds these bytes (hex)")
    f.add_argument("--value-regex", help="the value matches this RE2 regular expression (anywhere in it)")
    f.add_argument("--header", action="append", default=[], metavar="K=V",
                   help="a header K with the UTF-8 value V (repeatable: every header test must hold)")
    f.add_argument("--header-contains", action="append", default=[], metavar="K=TEXT",
                   help="a header K whose value holds this UTF-8 text")
    f.add_argument("--header-contains-hex", action="append", default=[], metavar="K=HEX",
                   help="a header K whose value holds these bytes (hex)")
    f.add_argument("--header-regex", action="append", default=[], metavar="K=RE",
                   help="a header K whose value matches this RE2 regular expression")
    f.add_argument("--header-name", action="append", default=[], metavar="K",
                   help="a header K, whatever its value")
    f.add_argument("--partitioner", choices=("murmur2",),
                   help="read only the partition this partitioner names for --key")
    f.add_argument("--partitions", action="append", default=[], metavar="TOPIC=N",
                   help="the topic's partition count for --partitioner (default: as many as PATH holds)")
    f.add_argument("--read-committed", action="store_true", help="as a read_committed consumer")
    f.add_argument("--json", action="store_true", help="one JSON object per record")
    add_selection_arguments(f)
    f.set_defaults(func=run_find)


def _hex(text: str, flag: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: not hex") from None


def _counts(items) -> dict:
    """``--partitions TOPIC=N`` flags as ``{topic: N}``; what N may be is the library's one rule
    (:func:`kafkarec.scan.config.check_partition_counts`), checked where the counts are used."""
    out = {}
    for item in items:
        topic, sep, n = item.rpartition("=")
        if not sep or not topic or not re.fullmatch(r"[+-]?[0-9]{1,19}", n.strip()):
            raise UsageError(f"--partitions {item!r}: TOPIC=N")
        out[topic] = int(n)
    return out


def _source(args):
    return args.paths if len(args.paths) > 1 else args.paths[0]


def run_census(args, out: TextIO, err: TextIO) -> int:
    from kafkarec.census import census, parse_codecs
    from kafkarec.census.what_if import WhatIf
    codecs = parse_codecs(args.what_if) if args.what_if else None      # refused before reading
    # the what-if re-batches the records the census's one pass reads (each byte read once)
    also = WhatIf(codecs, batch_size=args.batch_size, keep_batches=args.keep_batches) if codecs else None
    selection = selection_from_args(args)
    storage = storage_options_from_args(args)
    progress = Progress(1, err, enabled=not args.no_progress, label="census")

    def tick(done, total):
        progress.total = max(total, 1)
        progress.update(done)

    try:
        doc = census(_source(args), selection=selection, storage_options=storage,
                     tiered_storage=args.tiered_storage, max_exact_keys=args.max_exact_keys,
                     num_partitions=_counts(args.partitions), as_of_ms=args.as_of, progress=tick, what_if=also)
        if also is not None:
            doc["what_if"] = also.result()
    finally:
        progress.close()
    errors = sum(len(p["errors"]) for p in doc["partitions"]) + len(doc.get("what_if", {}).get("errors", []))
    if args.json:
        out.write(json.dumps(doc, separators=(",", ":")) + "\n")
    else:
        out.write(_table(doc))
    for p in doc["partitions"]:
        for e in p["errors"]:
            err.write(f"{p['topic']}-{p['partition']}: position {e['position']}: {e['message']}\n")
    for e in doc.get("what_if", {}).get("errors", []):      # the records the what-if could not take
        err.write(f"what-if: {e['topic']}-{e['partition']}: {e['message']}\n")
    return EXIT_PROBLEMS if errors else EXIT_OK


def _n(v) -> str:
    return "?" if v is None else str(v)


def _table(doc: dict) -> str:
    head = (f"{'partition':<28} {'records':>9} {'tombst':>7} {'distinct':>9} {'live':>8} {'live B':>10} "
            f"{'batches':>8} {'bytes':>10} {'+uncommitted':>12} {'ctrl':>5} {'murmur2':>8} {'err':>4}")
    lines = [head]
    for p in doc["partitions"]:
        placed = p["partitioner"]
        where = "-" if placed is None else ("ok" if placed["agrees"] else f"{placed['misplaced_records']} off")
        distinct = _n(p["distinct_keys"]) + ("" if p["distinct_keys_exact"] else "~")
        lines.append(f"{p['topic'] + '-' + str(p['partition']):<28} {p['records']:>9} {p['tombstones']:>7} "
                     f"{distinct:>9} {_n(p['live_keys']):>8} "
                     f"{human(p['live_bytes']) if p['live_bytes'] is not None else '?':>10} {p['batches']:>8} "
                     f"{human(p['bytes']):>10} {p['read_uncommitted_adds']['records']:>12} "
                     f"{p['read_uncommitted_adds']['control_records']:>5} {where:>8} {len(p['errors']):>4}")
    lines.append("")
    for t in doc["topics"]:
        lines.append(f"topic {t['topic']}: {t['partitions']} partition(s), {t['records']} records, "
                     f"{t['tombstones']} tombstones, {_n(t['distinct_keys'])}{'' if t['distinct_keys_exact'] else '~'} "
                     f"distinct keys, "
                     f"{_n(t['live_keys'])} live keys"
                     # compaction keeps a key's latest record in each partition it is in: a key
                     # written to 3 partitions is 1 distinct key and 3 live ones
                     + (" summed over its partitions" if t["partitions"] > 1 else "")
                     + f", {human(t['bytes'])} in {t['batches']} batches"
                     + (f", {t['misplaced_records']} records off their murmur2 partition"
                        if t["misplaced_records"] else "")
                     + (f", {t['errors']} damaged batch(es)" if t["errors"] else ""))
        adds = t["read_uncommitted_adds"]
        if adds.get("records"):
            lines.append(f"    read_uncommitted adds {adds['records']} records: {adds['aborted_records']} aborted, "
                         f"{adds['records_past_last_stable_offset']} from a last stable offset on")
        for d in (t.get("dead_letters") or {}).get("sources", ()):
            # a share group's DLQ: which source records failed, how often, and why
            lines.append(f"    dead letters of share group {d['group']}: {d['topic']}-{d['partition']} "
                         f"{d['records']} records, offsets {d['offset_runs'] or str(d['offsets'] or '?') + ' distinct'}; "
                         "delivery counts " + ", ".join(f"{k}: {v}" for k, v in d["delivery_counts"].items())
                         + "; " + ", ".join(f"{k} {v}" for k, v in d["causes"].items()))
        if t["codecs"]:
            lines.append("    codecs: " + ", ".join(f"{k} {human(v['bytes'])}" for k, v in sorted(t["codecs"].items())))
    w = doc.get("what_if")
    if w:
        lines.append("")
        lines.append(f"what-if ({'the log batches' if w['keep_batches'] else 'batch.size ' + str(w['batch_size'])}):")
        lines.append(f"  {'codec':<12} {'batches':>8} {'bytes':>12} {'ratio':>7} {'compress s':>11}")
        for c in w["codecs"]:
            ratio = "-" if c["ratio"] is None else f"{c['ratio']:.2f}"
            lines.append(f"  {c['codec']:<12} {c['batches']:>8} {c['bytes']:>12} {ratio:>7} "
                         f"{c['compress_seconds']:>11.3f}")
    return "\n".join(lines) + "\n"


def run_find(args, out: TextIO, err: TextIO) -> int:
    from kafkarec.census import find, render_bytes
    key = None
    if args.key is not None:
        key = args.key.encode("utf-8")
    elif args.key_hex is not None:
        key = _hex(args.key_hex, "--key-hex")
    headers = {name: value.encode("utf-8")
               for name, value in key_value_pairs(args.header, "--header", "K=V", strip=False, unique=True).items()}
    contains = {name: text.encode("utf-8") for name, text in
                key_value_pairs(args.header_contains, "--header-contains", "K=TEXT", strip=False,
                                unique=True).items()}
    for name, text in key_value_pairs(args.header_contains_hex, "--header-contains-hex", "K=HEX",
                                      strip=False, unique=True).items():
        if name in contains:
            raise UsageError(f"header {name!r}: --header-contains or --header-contains-hex, not both")
        contains[name] = _hex(text, "--header-contains-hex")
    value_contains = None if args.value_contains is None else args.value_contains.encode("utf-8")
    if args.value_contains_hex is not None:
        if value_contains is not None:
            raise UsageError("--value-contains or --value-contains-hex, not both")
        value_contains = _hex(args.value_contains_hex, "--value-contains-hex")
    selection = selection_from_args(args)
    topics = args.topics.split(",") if args.topics else None
    rows = find(_source(args), topics=topics, key=key, value_contains=value_contains,
                value_regex=args.value_regex, headers=headers or None, header_contains=contains or None,
                header_regex=key_value_pairs(args.header_regex, "--header-regex", "K=RE", strip=False,
                                             unique=True) or None,
                header_names=args.header_name or None, selection=selection,
                partitioner=args.partitioner, num_partitions=_counts(args.partitions),
                read_committed=args.read_committed, storage_options=storage_options_from_args(args),
                tiered_storage=args.tiered_storage)
    found = errors = 0
    if not args.json:
        out.write(f"{'topic':<20} {'partition':>9} {'offset':>10} {'timestamp':>24}  key  value\n")
    for r in rows:
        if "error" in r:
            errors += 1
            err.write(f"{r['topic']}-{r['partition']}: {r['error']}\n")
            continue
        found += 1
        key_text, key_enc = render_bytes(r["key"])
        value_text, value_enc = render_bytes(r["value"])
        if args.json:
            obj = {"topic": r["topic"], "partition": r["partition"], "offset": r["offset"],
                   **time_fields("timestamp", r["timestamp"]), "key": key_text, "key_encoding": key_enc,
                   "value": value_text, "value_encoding": value_enc,
                   "headers": [{"key": k, "value": render_bytes(v)[0], "encoding": render_bytes(v)[1]}
                               for k, v in r["headers"]]}
            if "dead_letter" in r:
                obj["dead_letter"] = r["dead_letter"]
            out.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n")
        else:
            out.write(f"{r['topic']:<20} {r['partition']:>9} {r['offset']:>10} {time_text(r['timestamp']):>24}  "
                      f"{key_text!s:.40}  {value_text!s:.80}\n")
    err.write(f"{found} record(s) found" + (f", {errors} damaged batch(es)" if errors else "") + "\n")
    return EXIT_PROBLEMS if errors else EXIT_OK
