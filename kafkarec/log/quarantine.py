"""Bad records kept whole: a typed read's failed records written as a Kafka log directory.

A record whose key or value cannot be decoded (not a registry payload, an unknown writer id, a
body the writer schema does not read...) keeps its reason in ``_corrupt_record``; with a
quarantine (``bad_records_path=`` in Python, ``--bad-records-path`` on the command line, the
``badRecordsPath`` option in Spark) it is also written, byte for byte, where it can be inspected,
fixed and replayed:

* ``PATH/<topic>-<partition>/<base offset, 20 digits>.log`` -- valid v2 batches (CRC-32C, no
  compression) holding each failed record with its original offset, timestamp, key, value and
  headers, followed by kafkarec's own headers:

  ========================== ==========================================================
  ``kafkarec.error.reason``  why it failed (UTF-8), as ``_corrupt_record`` says
  ``kafkarec.error.schema.id`` the writer schema id the record names (ASCII decimal), if any
  ``kafkarec.error.timestamp.type`` ``LogAppendTime`` when the original batch stamped it so
                             (quarantine batches are CreateTime; the value is the original)
  ========================== ==========================================================

  Kafka's ``kafka-dump-log --files <file> --print-data-log`` and kafkarec (``kafkarec dump``,
  ``kafkarec.log`` readers, ``format("kafkarec")``) read it as any segment.
* ``PATH/_undecodable/<topic>-<partition>/<file position, 20 digits>.batch`` -- a batch the core
  could not decode at all (no record to recover), copied byte for byte, with ``.json`` beside it
  (source file, position, reason).

Nothing is lost and nothing is duplicated: a file's name comes from its input (the first failed
offset of the records written together, the batch's position), it is written under a temporary
name and renamed, so a retried task or a restarted stream that writes the same input writes the
same file again.  Local paths and any URI ``pyarrow.fs`` opens (``s3://``...) are accepted.
"""
from __future__ import annotations

import json
import os
import uuid
from typing import Any, Iterable, Optional

from kafkarec._extras import require
from kafkarec._boot.files import atomic_write

__all__ = ["Quarantine", "REASON_HEADER", "SCHEMA_ID_HEADER", "TIMESTAMP_TYPE_HEADER", "UNDECODABLE_DIR"]

REASON_HEADER = "kafkarec.error.reason"
SCHEMA_ID_HEADER = "kafkarec.error.schema.id"
TIMESTAMP_TYPE_HEADER = "kafkarec.error.timestamp.type"
UNDECODABLE_DIR = "_undecodable"
# one quarantine batch stays well under a broker's default message.max.bytes (1 MiB) when it can
_BATCH_BYTES = 1 << 20


class Quarantine:
    """Writes failed records under ``path`` (see the module docstring).  ``storage_options``: for
    a URI, the filesystem's options (as :func:`kafkarec.log.storage` takes them)."""

    def __init__(self, path: str, *, storage_options: Optional[dict] = None) -> None:
        self.path = str(path)
        self.storage_options = dict(storage_options or {})
        self._fs = None
        self._root = self.path
        self.records_written = 0
        self.batches_copied = 0

    def __reduce__(self):
        return (Quarantine, (self.path,), {"storage_options": self.storage_options})

    def __setstate__(self, state) -> None:
        self.__init__(self.path, **state)

    # -- where files go
    def _filesystem(self):
        if self._fs is None:
            if "://" in self.path:
                pafs = require("pyarrow.fs")
                self._fs, self._root = pafs.FileSystem.from_uri(self.path)
            else:
                self._fs = False
        return self._fs

    def _write(self, rel: str, data: bytes) -> str:
        """``data`` at ``rel`` under the root, whole or not at all (temporary name, then renamed)."""
        fs = self._filesystem()
        final = f"{self._root.rstrip('/')}/{rel}"
        if fs is False:
            os.makedirs(os.path.dirname(final), exist_ok=True)
            atomic_write(final, data, mode=0o644)
        else:
            tmp = f"{final}.{uuid.uuid4().hex}.tmp"
            fs.create_dir(final.rsplit("/", 1)[0], recursive=True)
            with fs.open_output_stream(tmp) as f:
                f.write(data)
            fs.move(tmp, final)
        return final

    # -- failed records
    def add_records(self, topic: str, partition: int, records: Iterable[dict]) -> Optional[str]:
        """Write failed records of one topic-partition, in offset order.  Each record is a dict with
        ``offset``, ``timestamp`` (ms), ``timestamp_type`` (0 CreateTime, 1 LogAppendTime), ``key``,
        ``value`` (bytes or None), ``headers`` ([(name, value)]), ``reason`` and ``schema_id``
        (int or None).  Returns the file written (None when there was nothing)."""
        from kafkarec import RecordBatchBuilder
        from kafkarec.log.names import file_name
        recs = sorted(records, key=lambda r: r["offset"])
        if not recs:
            return None
        out = bytearray()
        builder = None
        for r in recs:
            headers = [(k if isinstance(k, (bytes, str)) else str(k), v) for k, v in (r.get("headers") or [])]
            headers.append((REASON_HEADER, str(r["reason"]).encode("utf-8")))
            if r.get("schema_id") is not None:
                headers.append((SCHEMA_ID_HEADER, str(int(r["schema_id"])).encode("ascii")))
            if r.get("timestamp_type") == 1:
                headers.append((TIMESTAMP_TYPE_HEADER, b"LogAppendTime"))
            key, value, ts = r.get("key"), r.get("value"), r.get("timestamp")
            if builder is not None and (builder.record_count and
                                        not builder.has_room_for(value, key, timestamp=ts, headers=headers)):
                out += builder.build()
                builder = None
            if builder is None:
                builder = RecordBatchBuilder(base_offset=r["offset"], max_batch_size=_BATCH_BYTES)
            builder.append(value, key, timestamp=ts, headers=headers, offset=r["offset"])
        out += builder.build()
        written = self._write(f"{topic}-{int(partition)}/{file_name(recs[0]['offset'], '.log')}", bytes(out))
        self.records_written += len(recs)
        return written

    def add_table(self, table, reasons, schema_ids=None, *, topic: Optional[str] = None,
                  partition: Optional[int] = None) -> list:
        """The rows of ``table`` (the plain read's columns: ``offset``, ``timestamp``, ``key``,
        ``value``, ``headers``; ``topic``, ``partition``, ``timestampType`` when it has them) whose
        ``reasons`` entry is not null, grouped by topic-partition.  ``schema_ids``: per row, the
        writer id of the side that failed (or None).  Returns the files written."""
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        if isinstance(reasons, pa.ChunkedArray):
            reasons = reasons.combine_chunks()
        failed = pc.indices_nonzero(reasons.is_valid())
        if len(failed) == 0:
            return []
        rows = table.take(failed)
        names = set(rows.column_names)

        def col(name, default=None):
            return rows.column(name).to_pylist() if name in names else [default] * rows.num_rows

        def millis(name):
            # a timestamp column as integers, never through pyarrow's datetimes: those hold no
            # time past the year 9999, and Kafka's timestamps are any long
            if name not in names or not pa.types.is_timestamp(rows.column(name).type):
                return [_millis(t) for t in col(name)]
            column = rows.column(name)
            per_ms = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}[column.type.unit]
            values = column.cast(pa.int64()).to_pylist()
            return [None if v is None else v * 1000 if per_ms is None else v // per_ms for v in values]

        ids = [None] * rows.num_rows if schema_ids is None else pc.take(schema_ids, failed).to_pylist()
        topics = col("topic", topic)
        parts = col("partition", partition)
        stamps = millis("timestamp")
        groups: dict = {}
        for i, (o, ts, tt, k, v, h, why) in enumerate(zip(
                col("offset"), stamps, col("timestampType", 0), col("key"), col("value"), col("headers"),
                pc.take(reasons, failed).to_pylist())):
            if topics[i] is None or parts[i] is None:
                raise ValueError("the quarantine names files by topic and partition: the table has no "
                                 "topic or partition for a failed record (kafkarec.to_arrow(..., topic=, partition=))")
            groups.setdefault((topics[i], int(parts[i])), []).append({
                "offset": o, "timestamp": ts, "timestamp_type": tt, "key": k, "value": v,
                "headers": [(x["key"], x["value"]) for x in (h or [])], "reason": why, "schema_id": ids[i]})
        return [self.add_records(t, p, recs) for (t, p), recs in sorted(groups.items())]

    # -- batches with nothing to recover
    def add_undecodable(self, topic: str, partition: int, position: int, data: bytes, *, reason: str,
                        source: Optional[str] = None) -> str:
        """A batch (its bytes as the file holds them) that could not be decoded at all."""
        rel = f"{UNDECODABLE_DIR}/{topic}-{int(partition)}/{int(position):020d}.batch"
        self._write(rel + ".json", json.dumps({"source": source, "position": int(position),
                                               "length": len(data), "reason": reason}).encode())
        self.batches_copied += 1
        return self._write(rel, bytes(data))


def _millis(t: Any) -> Optional[int]:
    """A timestamp column's value as epoch milliseconds (Arrow timestamps come back as datetimes)."""
    if t is None or isinstance(t, int):
        return t
    import datetime as dt
    if isinstance(t, dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=dt.timezone.utc)
        return (t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)
    return int(t)
