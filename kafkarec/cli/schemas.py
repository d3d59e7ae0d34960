"""``kafkarec schemas SOURCE``: the subjects, versions, ids and types a registry source holds
(a log directory with ``_schemas-0``, a folder of schema files, or a live registry URL), as the
REST API lists them; ``--json`` prints the ``GET /subjects/{s}/versions/{v}`` objects."""
from __future__ import annotations

import argparse
import json
from typing import TextIO, Optional

from kafkarec._extras import require
from kafkarec.errors import KafkaRecError

__all__ = ["add_parser", "run"]


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "schemas", help="list the subjects, versions, ids and types of a Schema Registry source",
        description="List what a Schema Registry holds: a log directory holding _schemas-0 (or that "
                    "folder; replayed as the registry replays it), a folder of schema files, or a "
                    "live registry URL (http(s)://[user:pass@]host:port, read once).")
    p.add_argument("source", metavar="SOURCE", help="log directory, _schemas-0 folder, schema folder "
                                                    "or registry URL")
    p.add_argument("--json", action="store_true",
                   help="one JSON array of the REST API's version objects (subject, version, id, "
                        "guid, schemaType, references, schema, deleted)")
    p.add_argument("--deleted", action="store_true", help="also list soft-deleted versions")
    p.add_argument("--show-schema", action="store_true", help="print each schema's text too")
    p.add_argument("--as-of-offset", type=int, metavar="N", default=None,
                   help="_schemas only: the registry once the record at offset N was applied")
    p.add_argument("--topic", default="_schemas", help="the registry's topic (default _schemas)")
    p.add_argument("--bearer-token", default=None, help="registry URL only: bearer token")
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="storage option for a URI source (repeatable)")
    p.set_defaults(func=run)
    return p


def run(args, out: TextIO, err: TextIO) -> int:
    from kafkarec import registry as kr
    opts = dict(o.split("=", 1) for o in args.storage_option if "=" in o)
    try:
        reg = kr.load(args.source, topic=args.topic, as_of_offset=args.as_of_offset,
                      storage_options=opts or None, bearer_token=args.bearer_token)
    except FileNotFoundError as e:
        err.write(f"kafkarec schemas: error: {e}\n")
        return 2
    except (KafkaRecError, OSError) as e:
        err.write(f"kafkarec schemas: error: {e}\n")
        return 2
    rows = [v for v in reg.entries() if args.deleted or not v.deleted]
    if args.json:
        out.write(json.dumps([v.rest() for v in rows], ensure_ascii=False) + "\n")
    else:
        out.write(f"{'subject':<40} {'version':>7} {'id':>8} {'type':<8} {'deleted':<7} guid\n")
        for v in rows:
            sid = "-" if v.id < 0 else str(v.id)
            out.write(f"{v.subject:<40} {v.version:>7} {sid:>8} {v.schema_type:<8} "
                      f"{'yes' if v.deleted else 'no':<7} {v.guid}\n")
            if args.show_schema:
                out.write("  " + v.schema.replace("\n", "\n  ") + "\n")
        out.write(f"{len(reg.subjects())} subjects, {len(rows)} versions, "
                  f"{len(reg.ids())} ids in the default context\n")
    for p in reg.problems:
        err.write(f"kafkarec schemas: {p}\n")
    return 1 if reg.problems else 0


# --- ``kafkarec dump --value-decoder registry --registry SOURCE`` ------------------------------

TYPED_DECODERS = ("registry", "avro", "protobuf", "json")


def add_typed_arguments(p: argparse.ArgumentParser,
                        title: str = "typed keys and values (Schema Registry payloads; imply --print-data-log)") -> None:
    g = p.add_argument_group(title)
    g.add_argument("--value-decoder", choices=TYPED_DECODERS, default=None,
                   help="print values decoded: registry (Confluent framing: id prefix or header id), "
                        "or avro/protobuf/json (bare payloads, with --value-schema)")
    g.add_argument("--key-decoder", choices=TYPED_DECODERS, default=None, help="the same for keys")
    g.add_argument("--registry", metavar="SOURCE", default=None,
                   help="log directory holding _schemas-0, schema folder or registry URL")
    g.add_argument("--value-subject", default=None, help="subject of the values (default <topic>-value)")
    g.add_argument("--key-subject", default=None, help="subject of the keys (default <topic>-key)")
    g.add_argument("--value-schema", metavar="FILE", default=None,
                   help="reader schema text for values (default: the subject's latest version)")
    g.add_argument("--key-schema", metavar="FILE", default=None, help="reader schema for keys")
    g.add_argument("--value-message", default=None, help="Protobuf message (full name) of values")
    g.add_argument("--key-message", default=None, help="Protobuf message (full name) of keys")
    g.add_argument("--bad-records-path", metavar="DIR", default=None,
                   help="also write each record that cannot be decoded, whole, under DIR as a Kafka log "
                        "directory (<topic>-<partition>/<offset>.log, reason and schema id in headers); "
                        "batches with nothing to recover are copied to DIR/_undecodable")
    g.add_argument("--decoder-option", metavar="NAME=VALUE", action="append", default=[],
                   help="a decoder option by Spark's name (from_avro's enableStableIdentifiersForUnionType, "
                        "stableIdentifierPrefixForUnionType, datetimeRebaseMode; from_protobuf's enums.as.ints, "
                        "convert.any.fields.to.json...; repeat for several)")


def decoder_options(args) -> dict:
    """``--decoder-option NAME=VALUE`` flags as {name: value}; a flag without ``=`` is a usage error."""
    from kafkarec._option_text import key_value_pairs
    return key_value_pairs(getattr(args, "decoder_option", None), "--decoder-option", "NAME=VALUE")


def _json_default(v):
    import base64
    import datetime
    import decimal
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (decimal.Decimal, datetime.timedelta)):
        return str(v)
    return repr(v)


class TypedDump:
    """Decodes the keys/values of each batch ``dump`` prints, one TypedColumn per topic and side."""

    def __init__(self, args) -> None:
        from kafkarec import registry as kr
        self.sides = [(s, getattr(args, f"{s}_decoder")) for s in ("key", "value")
                      if getattr(args, f"{s}_decoder", None)]
        self.args = args
        self.registry = None
        if args.registry:
            self.registry = kr.load(args.registry)
        elif any(fmt == "registry" for _, fmt in self.sides):
            raise kr.RegistryError("--value-decoder/--key-decoder registry needs --registry SOURCE")
        self.columns: dict = {}
        self.quarantine = None
        if getattr(args, "bad_records_path", None):
            from kafkarec.log.quarantine import Quarantine
            self.quarantine = Quarantine(args.bad_records_path)

    def _column(self, side: str, fmt: str, topic):
        from kafkarec.registry import TypedColumn
        key = (side, topic)
        if key not in self.columns:
            a = self.args
            schema_file = getattr(a, f"{side}_schema")
            schema = open(schema_file, encoding="utf-8").read() if schema_file else None
            try:
                self.columns[key] = TypedColumn(
                    self.registry, getattr(a, f"{side}_subject"), topic=topic, is_key=side == "key",
                    reader_schema=schema, message=getattr(a, f"{side}_message"), value_format=fmt,
                    options=decoder_options(a))
            except (KafkaRecError, ValueError, ImportError) as e:
                self.columns[key] = e
        return self.columns[key]

    def batch(self, fb, path: str) -> list:
        """Per record of the batch: {"key": json text|None, "value": ..., "key_error": ...}."""
        import os
        pa = require("pyarrow")
        from kafkarec.log.names import parse_partition_folder
        tp = parse_partition_folder(os.path.dirname(path))
        topic = tp[0] if tp else None
        recs = fb.records()
        out: list = [dict() for _ in recs]
        headers = pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in recs],
                           pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
        for side, fmt in self.sides:
            col = self._column(side, fmt, topic)
            raw = [getattr(r, side) for r in recs]
            if isinstance(col, Exception):
                for o, v in zip(out, raw):
                    if v is not None:
                        o[f"{side}_error"] = str(col)
                continue
            typed, ids, errs = col.decode(pa.array(raw, pa.binary()), headers)
            for o, v, i, e in zip(out, typed.to_pylist(), ids.to_pylist(), errs.to_pylist()):
                o[side] = json.dumps(v, ensure_ascii=False, default=_json_default)
                o[f"{side}_schema_id"] = i
                if e is not None:
                    o[f"{side}_error"] = e
        if self.quarantine is not None:
            self._quarantine(fb, tp, recs, out)
        return out

    def _quarantine(self, fb, tp, recs, rows) -> None:
        """The batch's failed records, whole, into --bad-records-path (the first side's reason)."""
        failed = []
        for r, o in zip(recs, rows):
            side = next((s for s, _ in self.sides if f"{s}_error" in o), None)
            if side is None:
                continue
            failed.append({"offset": r.offset, "timestamp": r.timestamp, "timestamp_type": fb.batch.timestamp_type,
                           "key": r.key, "value": r.value, "headers": list(r.headers),
                           "reason": f"{side}: {o[f'{side}_error']}", "schema_id": o.get(f"{side}_schema_id")})
        if failed:
            if tp is None:
                raise KafkaRecError("--bad-records-path: the file is not in a <topic>-<partition> folder, "
                                    "so its records have no topic-partition to be kept under")
            self.quarantine.add_records(tp[0], tp[1], failed)

    def undecodable(self, path: str, position: int, size: int, reason: str) -> None:
        """A batch with nothing to recover, copied byte for byte into --bad-records-path."""
        import os
        from kafkarec.log.names import parse_partition_folder
        if self.quarantine is None or size <= 0:
            return
        tp = parse_partition_folder(os.path.dirname(os.path.abspath(path)))
        if tp is None:
            raise KafkaRecError("--bad-records-path: the file is not in a <topic>-<partition> folder")
        with open(path, "rb") as f:
            f.seek(position)
            data = f.read(size)
        self.quarantine.add_undecodable(tp[0], tp[1], position, data, reason=reason, source=os.path.abspath(path))


def decode_from_args(args) -> Optional[dict]:
    """The typed flags as :func:`kafkarec.registry.decode_table`'s keyword arguments (the
    registry loaded), or None when neither side is decoded; a bad flag is a usage error."""
    if not (getattr(args, "value_decoder", None) or getattr(args, "key_decoder", None)):
        return None
    from kafkarec import registry as kr
    from kafkarec.errors import UsageError
    if args.registry is None and "registry" in (args.value_decoder, args.key_decoder):
        raise UsageError("--value-decoder/--key-decoder registry needs --registry SOURCE")
    try:
        reg = kr.load(args.registry) if args.registry else None
    except (KafkaRecError, OSError) as e:
        raise UsageError(f"--registry: {e}") from None
    out: dict = {"registry": reg, "value": bool(args.value_decoder), "key": bool(args.key_decoder),
                 "options": decoder_options(args)}
    if getattr(args, "bad_records_path", None):
        out["bad_records_path"] = args.bad_records_path
    for side in ("value", "key"):
        if getattr(args, f"{side}_decoder"):
            schema_file = getattr(args, f"{side}_schema")
            try:
                schema = open(schema_file, encoding="utf-8").read() if schema_file else None
            except OSError as e:
                raise UsageError(f"--{side}-schema: {e}") from None
            out.update({f"{side}_format": getattr(args, f"{side}_decoder"),
                        f"{side}_subject": getattr(args, f"{side}_subject"),
                        f"{side}_reader_schema": schema, f"{side}_message": getattr(args, f"{side}_message")})
    return out


def typed_from_args(args):
    """A :class:`TypedDump` when ``--value-decoder``/``--key-decoder`` is given, else None."""
    if not (getattr(args, "value_decoder", None) or getattr(args, "key_decoder", None)):
        return None
    from kafkarec.errors import MissingExtraError, UsageError
    try:
        return TypedDump(args)
    except MissingExtraError:
        raise                              # not a --registry problem: said as it is
    except (KafkaRecError, OSError) as e:
        raise UsageError(f"--registry: {e}") from None


def typed_text(row: dict, r, render, prefix: str) -> str:
    """The text-mode tail for one record: `` key: ... payload: ...``, decoded sides as JSON
    (an error as ``[error: reason]``), other sides as dump prints them."""
    line = ""
    for side, label in (("key", "key"), ("value", "payload")):
        if f"{side}_error" in row:
            line += f"{prefix}{label}: [error: {row[f'{side}_error']}]"
        elif side in row:
            if row[side] == "null":
                continue
            line += f"{prefix}{label}: {row[side]}"
        else:
            raw = getattr(r, side)
            if raw is None:
                continue
            line += f"{prefix}{label}: {render(raw)}"
        prefix = " "
    return line


def typed_json(row: dict) -> dict:
    """The --json fields for one record: ``decoded_key``/``decoded_value`` (JSON values),
    ``key_schema_id``/``value_schema_id``, ``key_error``/``value_error``."""
    out = {}
    for side in ("key", "value"):
        if side in row:
            out[f"decoded_{side}"] = json.loads(row[side])
            out[f"{side}_schema_id"] = row.get(f"{side}_schema_id")
        if f"{side}_error" in row:
            out[f"{side}_error"] = row[f"{side}_error"]
    return out
