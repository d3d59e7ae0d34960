"""``kafkarec`` command line: dump, verify and summarise Kafka log directories.

    kafkarec dump   PATH...   kafka-dump-log.sh work-alike (same lines)
    kafkarec verify PATH...   CRCs, offsets, indexes; exit status 1 on problems
    kafkarec stats  PATH...   batches, records, codecs, producers, sizes

PATH may be a log directory root, a ``<topic>-<partition>`` directory or
files.  ``dump`` prints what Kafka's ``DumpLogSegments`` prints (its Java
rewrite, which ``kafka-dump-log.sh`` runs in Kafka 4.x): batch lines, record
lines with ``| `` and the stderr reports at the end.
"""
from __future__ import annotations

import argparse
import base64
import datetime as _dt
import json
import os
import struct
import sys
import textwrap
import time
import uuid
import zlib
from typing import List, Optional, TextIO

import kafkarec
from kafkarec import sidefiles as sf
from kafkarec.enums import ControlRecordType
from kafkarec.errors import DecodeError, KafkaRecError
from kafkarec.segment import (PartitionDir, SegmentFiles, Segment, check_partition,
                              find_partition_dirs, is_partition_dir, parse_topic_partition,
                              scan_partition_dir)

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
INT_MAX = 2**31 - 1

TS_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class UsageError(Exception):
    """Bad input that is not about Kafka data: missing paths, nothing Kafka found."""


def jbool(v) -> str:
    return "true" if v else "false"


def optional_long(v: Optional[int]) -> str:
    """Java's OptionalLong.toString()."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def codec_name(b) -> str:
    codec = b.attributes & 7
    return CODEC_NAMES.get(codec, f"unknown({codec})")


def ts_name(b) -> str:
    # The batch's timestamp type, named as Java's TimestampType.toString().
    if b.magic == 0:
        return TS_NAMES[-1]
    return TS_NAMES[1 if b.attributes & 0x08 else 0]


def java_string(data: bytes) -> str:
    """new String(bytes, UTF_8): invalid sequences become U+FFFD."""
    return data.decode("utf-8", "replace")


def _jdump(obj) -> str:
    # Jackson's ObjectNode.toString(): compact, non-ASCII kept as is.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _uuid_b64(s: str) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(s).bytes).rstrip(b"=").decode()


def control_json(kind: ControlRecordType, v: dict) -> dict:
    """A decoded KRaft control value as Kafka's generated JsonConverter writes it (camelCase)."""
    if kind == ControlRecordType.LEADER_CHANGE:
        return {"version": v["version"], "leaderId": v["leader_id"],
                "voters": [{"voterId": x["voter_id"]} for x in v["voters"] or []],
                "grantingVoters": [{"voterId": x["voter_id"]} for x in v["granting_voters"] or []]}
    if kind == ControlRecordType.SNAPSHOT_HEADER:
        return {"version": v["version"], "lastContainedLogTimestamp": v["last_contained_log_timestamp"]}
    if kind == ControlRecordType.SNAPSHOT_FOOTER:
        return {"version": v["version"]}
    if kind == ControlRecordType.KRAFT_VERSION:
        return {"version": v["version"], "kRaftVersion": v["kraft_version"]}
    if kind == ControlRecordType.KRAFT_VOTERS:
        return {"version": v["version"], "voters": [
            {"voterId": x["voter_id"], "voterDirectoryId": _uuid_b64(x["voter_directory_id"]),
             "endpoints": [{"name": e["name"], "host": e["host"], "port": e["port"]}
                           for e in x["endpoints"] or []],
             "kRaftVersionFeature": {
                 "minSupportedVersion": x["kraft_version_feature"]["min_supported_version"],
                 "maxSupportedVersion": x["kraft_version_feature"]["max_supported_version"]}}
            for x in v["voters"] or []]}
    raise ValueError(kind)


_CONTROL_LABELS = {
    ControlRecordType.LEADER_CHANGE: " LeaderChange: ",
    ControlRecordType.SNAPSHOT_HEADER: " SnapshotHeader ",
    ControlRecordType.SNAPSHOT_FOOTER: " SnapshotFooter ",
    ControlRecordType.KRAFT_VERSION: " KRaftVersion ",
    ControlRecordType.KRAFT_VOTERS: " KRaftVoters ",
}


def control_text(r) -> str:
    """What printControlRecord prints for one control record."""
    kind = r.control_type
    if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return f" endTxnMarker: {kind.name} coordinatorEpoch: {r.coordinator_epoch}"
    if kind in _CONTROL_LABELS:
        return _CONTROL_LABELS[kind] + _jdump(control_json(kind, r.control_value))
    return f" controlType: {kind.name}({r.control_type_id})"


def _legacy_inner_valid(fb) -> Optional[list]:
    """Per-record isValid for a legacy batch: each message's own CRC-32.

    The core checks inner CRCs only as a whole (verify_crc); re-reading the
    batch with it on answers "all valid" cheaply.  Otherwise each message is
    re-encoded from its fields and checked (exact unless a magic 1 wrapper is
    LogAppendTime, whose inner timestamps the reader replaces).
    """
    if not fb.attributes & 7:
        return None        # uncompressed: the record is the batch
    try:
        list(next(kafkarec.iter_batches(fb.raw(), verify_crc=True)))
        return [True] * fb.record_count
    except DecodeError:
        pass
    out = []
    for r in fb:
        body = struct.pack(">bb", r.magic, r.attributes)
        if r.magic == 1:
            body += struct.pack(">q", r.timestamp)
        for part in (r.key, r.value):
            body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
        out.append(zlib.crc32(body) == r.checksum)
    return out


# --- path handling ------------------------------------------------------------

def resolve(paths: List[str]) -> list:
    """Expand PATH arguments into ("partition", PartitionDir) and ("file", path) items."""
    items = []
    for p in paths:
        if not os.path.exists(p):
            raise UsageError(f"{p}: no such file or directory")
        if os.path.isdir(p):
            if not os.access(p, os.R_OK | os.X_OK):
                raise UsageError(f"{p}: permission denied")
            if is_partition_dir(p):
                items.append(("partition", scan_partition_dir(p)))
                continue
            found = find_partition_dirs(p)
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


def _segment_of_file(path: str) -> Optional[PartitionDir]:
    """A one-segment PartitionDir for a file argument (the file plus its siblings)."""
    d = os.path.dirname(path) or "."
    kind = sf.file_kind(path)
    empty = PartitionDir(d, parse_topic_partition(d), [], [], [], None, None, [])
    if kind in ("log", "index", "timeindex", "txnindex"):
        base = sf.offset_from_file_name(path)
        stem = os.path.join(d, sf.file_name(base, ""))

        def sib(suffix):
            return stem + suffix if os.path.isfile(stem + suffix) else None
        log = path if kind == "log" else sib(sf.LOG_SUFFIX)
        return empty._replace(segments=[SegmentFiles(base, log, sib(sf.INDEX_SUFFIX),
                                                     sib(sf.TIME_INDEX_SUFFIX), sib(sf.TXN_INDEX_SUFFIX))])
    if kind == "snapshot":
        return empty._replace(producer_snapshots=[path])
    if kind == "checkpoint":
        return empty._replace(kraft_snapshots=[path])
    if kind == "leader-epoch-checkpoint":
        return empty._replace(leader_epoch_checkpoint=path)
    if kind == "partition-metadata":
        return empty._replace(partition_metadata=path)
    return None


def _partitions_for(items: list) -> List[PartitionDir]:
    """Partition work units for verify/stats; file arguments become one-segment units."""
    out, seen = [], set()
    for kind, item in items:
        if kind == "partition":
            out.append(item)
            continue
        pdir = _segment_of_file(item)
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


# --- progress -------------------------------------------------------------------

class Progress:
    """A one-line progress bar on stderr, drawn only on a terminal and only for long scans."""

    def __init__(self, total: int, stream: TextIO, *, enabled: bool = True, label: str = "scanning",
                 delay: float = 0.5):
        self.total = max(total, 1)
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.enabled = enabled and bool(isatty and isatty())
        self.label = label
        self.start = time.monotonic()
        self.delay = delay
        self.last_draw = 0.0
        self.drawn = False
        self.done = 0

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or now - self.last_draw < 0.1:
            return
        self.last_draw = now
        frac = min(1.0, done / self.total)
        rate = done / max(now - self.start, 1e-9) / 2**20
        bar = "#" * int(frac * 30)
        self.stream.write(f"\r{self.label} [{bar:<30}] {frac * 100:5.1f}% "
                          f"{done / 2**20:,.1f}/{self.total / 2**20:,.1f} MiB {rate:,.0f} MiB/s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()
            self.drawn = False


def _total_bytes(pdirs: List[PartitionDir]) -> int:
    total = 0
    for p in pdirs:
        for s in p.segments:
            if s.log:
                try:
                    total += os.path.getsize(s.log)
                except OSError:
                    pass
    return total


# --- dump ---------------------------------------------------------------------------

class Dumper:
    """DumpLogSegments, file by file, with its end-of-run reports."""

    def __init__(self, args, out: TextIO, err: TextIO):
        self.out = out
        self.err = err
        self.print_data = args.print_data_log
        self.deep = args.deep_iteration or args.print_data_log
        self.skip_meta = args.skip_record_metadata
        self.max_bytes = args.max_bytes
        self.max_message_size = args.max_message_size
        self.verify_only = args.verify_index_only
        self.sanity_only = args.index_sanity_check
        self.json = args.json
        self.max_decompressed = args.max_decompressed_bytes
        self.status = EXIT_OK
        self.index_mismatches = {}
        self.time_mismatch, self.time_order, self.time_missing = {}, {}, {}
        self.non_consecutive = {}

    # -- output helpers --
    def emit(self, line: str, **obj) -> None:
        if self.json:
            self.out.write(_jdump(obj) + "\n")
        else:
            self.out.write(line + "\n")

    def error(self, message: str, path: str = None, position: int = None, status=EXIT_PROBLEMS) -> None:
        self.status = max(self.status, status)
        if self.json:
            self.out.write(_jdump({"type": "error", "file": path, "position": position,
                                   "message": message}) + "\n")
        else:
            self.err.write(message + "\n")

    # -- dispatch --
    def dump(self, path: str) -> None:
        self.emit(f"Dumping {path}", type="file", file=path)
        name = os.path.basename(path)
        kind = sf.file_kind(name)
        try:
            if kind in ("log", "checkpoint"):
                self.dump_log(path)
            elif kind == "index":
                self.dump_index(path)
            elif kind == "timeindex":
                self.dump_time_index(path)
            elif kind == "txnindex":
                self.dump_txn_index(path)
            elif kind == "snapshot":
                self.dump_producer_snapshot(path)
            elif kind == "leader-epoch-checkpoint":
                for e in sf.read_leader_epoch_checkpoint(path):
                    self.emit(f"epoch: {e.epoch} startOffset: {e.start_offset}",
                              type="leader_epoch", epoch=e.epoch, start_offset=e.start_offset)
            elif kind == "partition-metadata":
                m = sf.read_partition_metadata(path)
                self.emit(f"version: {m.version} topicId: {m.topic_id}",
                          type="partition_metadata", version=m.version, topic_id=m.topic_id)
            elif kind == "offset-checkpoint":
                for topic, partition, offset in sf.read_offset_checkpoint(path):
                    self.emit(f"topic: {topic} partition: {partition} offset: {offset}",
                              type="offset_checkpoint", topic=topic, partition=partition, offset=offset)
            else:
                self.error(f"Ignoring unknown file {path}", path, status=EXIT_USAGE)
        except OSError as e:
            self.error(f"{path}: {e.strerror or e}", path, status=EXIT_USAGE)
        except (sf.SideFileError, KafkaRecError) as e:
            self.error(f"{path}: {e}", path, getattr(e, "position", None))

    # -- .log / .checkpoint --
    def dump_log(self, path: str) -> None:
        name = os.path.basename(path)
        if name.endswith(sf.LOG_SUFFIX):
            start = sf.offset_from_file_name(name)
            self.emit(f"Log starting offset: {start}", type="log_start", offset=start)
        elif name == sf.BOOTSTRAP_CHECKPOINT:
            self.emit("KRaft bootstrap snapshot", type="kraft_bootstrap_snapshot")
        else:
            sp = sf.parse_snapshot_path(name)
            self.emit(f"Snapshot end offset: {sp.end_offset}, epoch: {sp.epoch}",
                      type="kraft_snapshot", end_offset=sp.end_offset, epoch=sp.epoch)
        abspath = os.path.abspath(path)
        with Segment(path) as seg:
            end = min(seg.size, self.max_bytes)
            it = seg.batches(0, end, verify_crc=False, max_decompressed_bytes=self.max_decompressed)
            valid_bytes = 0
            last_offset = [-1]
            while True:
                try:
                    fb = next(it)
                except StopIteration:
                    break
                except DecodeError as e:
                    self.error(f"{path}: position {e.position}: {e.reason}", path, e.position)
                    if it.exhausted:
                        return
                    valid_bytes = it.position
                    continue
                self.batch_line(fb)
                if self.deep:
                    try:
                        self.records(fb, abspath, last_offset)
                    except (DecodeError, KafkaRecError) as e:
                        self.error(f"{path}: position {getattr(e, 'position', fb.position)}: "
                                   f"{getattr(e, 'reason', e)}", path, getattr(e, "position", fb.position))
                valid_bytes = fb.position + fb.size_in_bytes
            trailing = end - valid_bytes
            if trailing > 0 and self.max_bytes == INT_MAX:
                self.emit(f"Found {trailing} invalid bytes at the end of {name}",
                          type="trailing_bytes", bytes=trailing)

    def batch_line(self, fb) -> None:
        b = fb.batch
        tsn = ts_name(b)
        valid = b.crc_valid
        codec = codec_name(b)
        if self.json:
            obj = {"type": "batch", "position": fb.position, "magic": fb.magic,
                   "timestamp_type": tsn, "max_timestamp": b.max_timestamp, "size": fb.size_in_bytes,
                   "compresscodec": codec, "crc": b.crc, "isvalid": valid}
            if fb.magic >= 2:
                obj.update(base_offset=b.base_offset, last_offset=b.last_offset, count=b.record_count,
                           base_sequence=b.base_sequence, last_sequence=b.last_sequence,
                           producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                           partition_leader_epoch=b.partition_leader_epoch,
                           is_transactional=b.is_transactional, is_control=b.is_control,
                           delete_horizon_ms=b.delete_horizon_ms)
            else:
                obj["offset"] = b.last_offset
            self.out.write(_jdump(obj) + "\n")
            return
        if fb.magic >= 2:
            head = (f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
                    f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} "
                    f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
                    f"partitionLeaderEpoch: {b.partition_leader_epoch} "
                    f"isTransactional: {jbool(b.is_transactional)} isControl: {jbool(b.is_control)} "
                    f"deleteHorizonMs: {optional_long(b.delete_horizon_ms)}")
        else:
            head = f"offset: {b.last_offset}"
        self.out.write(f"{head} position: {fb.position} {tsn}: {b.max_timestamp} size: {fb.size_in_bytes} "
                       f"magic: {fb.magic} compresscodec: {codec} crc: {b.crc} isvalid: {jbool(valid)}\n")

    def records(self, fb, abspath: str, last_offset: list) -> None:
        tsn = ts_name(fb.batch)
        v2 = fb.magic >= 2
        control = v2 and fb.is_control
        inner_valid = None if v2 else _legacy_inner_valid(fb)
        gaps = self.non_consecutive
        lines = []
        for i, r in enumerate(fb):
            off = r.offset
            # The Java rewrite starts "previous" at -1, so a first offset > 0 is reported too.
            if off != last_offset[0] + 1:
                gaps.setdefault(abspath, {})[last_offset[0]] = off
            last_offset[0] = off
            if self.json:
                lines.append(self._record_json(fb, r, tsn, control, inner_valid, i))
                continue
            line = ""
            if not self.skip_meta:
                line = (f"| offset: {off} {tsn}: {r.timestamp} "
                        f"keySize: {r.key_size} valueSize: {r.value_size}")
                if v2:
                    line += (f" sequence: {r.sequence} headerKeys: "
                             f"[{','.join(k for k, _ in r.headers)}]")
                else:
                    valid = fb.crc_valid if inner_valid is None else inner_valid[i]
                    line += f" isValid: {jbool(valid)} crc: {r.checksum}"
                if control:
                    line += control_text(r)
            if self.print_data and not control:
                prefix = "| " if self.skip_meta else " "
                key = r.key
                if key is not None:
                    line += f"{prefix}key: {java_string(key)}"
                    prefix = " "
                value = r.value
                if value is not None:
                    line += f"{prefix}payload: {java_string(value)}"
            lines.append(line + "\n")
        self.out.write("".join(lines))

    def _record_json(self, fb, r, tsn, control, inner_valid, i) -> str:
        obj = {"type": "record", "offset": r.offset, "timestamp_type": tsn, "timestamp": r.timestamp,
               "key_size": r.key_size, "value_size": r.value_size}
        if fb.magic >= 2:
            obj["sequence"] = r.sequence
            obj["header_keys"] = [k for k, _ in r.headers]
        else:
            obj["is_valid"] = fb.crc_valid if inner_valid is None else inner_valid[i]
            obj["crc"] = r.checksum
        if control:
            kind = r.control_type
            obj["control_type"] = kind.name
            obj["control_type_id"] = r.control_type_id
            value = r.control_value
            if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                obj["coordinator_epoch"] = value["coordinator_epoch"]
            elif kind in _CONTROL_LABELS:
                obj["control"] = control_json(kind, value)
        if self.print_data and not control:
            key, value = r.key, r.value
            obj["key"] = None if key is None else java_string(key)
            obj["payload"] = None if value is None else java_string(value)
            if fb.magic >= 2:
                obj["headers"] = [[k, None if v is None else java_string(v)] for k, v in r.headers]
        return _jdump(obj) + "\n"

    # -- .index --
    def _sibling_log(self, path: str) -> Optional[Segment]:
        stem = os.path.join(os.path.dirname(os.path.abspath(path)),
                            os.path.basename(path).split(".")[0])
        try:
            return Segment(stem + sf.LOG_SUFFIX)
        except OSError as e:
            self.error(f"{path}: cannot open its log {stem + sf.LOG_SUFFIX}: {e.strerror or e}", path)
            return None

    def dump_index(self, path: str) -> None:
        index = sf.OffsetIndex(path)
        if index.slots == 0:
            self.emit(f"{path} is empty.", type="index_empty")
            return
        if self.sanity_only:
            try:
                index.sanity_check()
            except sf.CorruptIndexError as e:
                self.error(str(e), path)
                return
            self.emit(f"{path} passed sanity check.", type="sanity_check_passed")
            return
        seg = self._sibling_log(path)
        mismatches = self.index_mismatches
        try:
            for i in range(index.slots):
                entry = index.entry(i)
                # "since it is a sparse file, in the event of a crash there may be many zero entries"
                if entry.offset == index.base_offset and i > 0:
                    return
                if seg is not None:
                    self._check_index_entry(path, seg, entry, mismatches)
                if not self.verify_only:
                    self.emit(f"offset: {entry.offset} position: {entry.position}",
                              type="index_entry", offset=entry.offset, position=entry.position)
        finally:
            if seg is not None:
                seg.close()

    def _check_index_entry(self, path, seg, entry, mismatches) -> None:
        if entry.position < 0 or entry.position > seg.size:
            self.error(f"{path}: index entry offset {entry.offset} position {entry.position} is "
                       f"outside the log ({seg.size} bytes)", path, entry.position)
            return
        try:
            fb = seg.batch_at(entry.position, limit=self.max_message_size)
        except DecodeError as e:
            self.error(f"{path}: index entry offset {entry.offset} position {entry.position}: "
                       f"no batch there: {e.reason}", path, entry.position)
            return
        if fb is None:
            self.error(f"{path}: index entry offset {entry.offset} position {entry.position}: no "
                       f"whole batch within --max-message-size {self.max_message_size} bytes",
                       path, entry.position)
            return
        if fb.last_offset != entry.offset:
            mismatches.setdefault(os.path.abspath(path), {})[entry.offset] = fb.last_offset

    # -- .timeindex --
    def dump_time_index(self, path: str) -> None:
        tindex = sf.TimeIndex(path)
        if self.sanity_only:
            try:
                tindex.sanity_check()
            except sf.CorruptIndexError as e:
                self.error(str(e), path)
                return
            self.emit(f"{path} passed sanity check.", type="sanity_check_passed")
            return
        stem = os.path.join(os.path.dirname(os.path.abspath(path)), os.path.basename(path).split(".")[0])
        try:
            oindex = sf.OffsetIndex(stem + sf.INDEX_SUFFIX, tindex.base_offset)
        except OSError:
            oindex = None      # no offset index: search from the start of the log
        seg = self._sibling_log(path)
        abspath = os.path.abspath(path)
        prev_ts = -1
        try:
            for i in range(tindex.slots):
                entry = tindex.entry(i)
                if entry.offset == tindex.base_offset and i > 0:
                    return
                if seg is not None:
                    self._check_time_entry(path, abspath, seg, oindex, entry, prev_ts)
                if not self.verify_only:
                    self.emit(f"timestamp: {entry.timestamp} offset: {entry.offset}",
                              type="time_index_entry", timestamp=entry.timestamp, offset=entry.offset)
                prev_ts = entry.timestamp
        finally:
            if seg is not None:
                seg.close()

    def _check_time_entry(self, path, abspath, seg, oindex, entry, prev_ts) -> None:
        start = oindex.lookup(entry.offset).position if oindex is not None else 0
        if not 0 <= start <= seg.size:
            self.error(f"{path}: the offset index puts offset {entry.offset} at position {start}, "
                       f"outside the log ({seg.size} bytes)", path, start)
            return
        found = None
        try:
            for fb in seg.batches(start, verify_crc=False, release=False):
                if fb.last_offset >= entry.offset:
                    found = fb
                    break
        except DecodeError as e:
            self.error(f"{path}: looking for offset {entry.offset}: {e.reason}", path, e.position)
        if found is None:
            self.time_missing.setdefault(abspath, []).append((entry.offset, -1))
            return
        if found.last_offset != entry.offset:
            self.time_missing.setdefault(abspath, []).append((entry.offset, found.last_offset))
            return
        max_ts = -1
        try:
            for r in found:
                max_ts = max(max_ts, r.timestamp)
        except (DecodeError, KafkaRecError) as e:
            self.error(f"{path}: batch at position {found.position}: {getattr(e, 'reason', e)}",
                       path, found.position)
            return
        if max_ts != entry.timestamp:
            self.time_mismatch.setdefault(abspath, []).append((entry.timestamp, max_ts))
        if prev_ts >= entry.timestamp:
            self.time_order.setdefault(abspath, []).append((entry.timestamp, prev_ts))

    # -- .txnindex, .snapshot --
    def dump_txn_index(self, path: str) -> None:
        for t in sf.TransactionIndex(path).entries():
            self.emit(f"version: {t.version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
                      f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}",
                      type="aborted_txn", version=t.version, producer_id=t.producer_id,
                      first_offset=t.first_offset, last_offset=t.last_offset,
                      last_stable_offset=t.last_stable_offset)

    def dump_producer_snapshot(self, path: str) -> None:
        try:
            snap = sf.read_producer_snapshot(path)
        except sf.CorruptSnapshotError as e:
            self.error(str(e), path)
            return
        for e in snap.entries:
            txn = e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None
            line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                    f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {optional_long(txn)} "
                    f"lastTimestamp: {e.timestamp}")
            obj = dict(type="producer_state", producer_id=e.producer_id, producer_epoch=e.producer_epoch,
                       coordinator_epoch=e.coordinator_epoch, current_txn_first_offset=txn,
                       last_timestamp=e.timestamp)
            if e.has_batch_metadata:
                line += (f" firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} "
                         f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
                obj.update(first_sequence=e.first_sequence, last_sequence=e.last_sequence,
                           last_offset=e.last_offset, offset_delta=e.offset_delta, timestamp=e.timestamp)
            self.emit(line, **obj)

    # -- end of run --
    def report(self) -> None:
        """The stderr summaries DumpLogSegments prints after all files."""
        lines = []
        objs = []
        for fname, mm in self.index_mismatches.items():
            lines.append(f"Mismatches in :{fname}")
            for a, b in sorted(mm.items(), reverse=True):   # a TreeMap in reverse order
                lines.append(f"  Index offset: {a}, log offset: {b}")
                objs.append({"type": "index_mismatch", "file": fname, "index_offset": a, "log_offset": b})
        for fname, pairs in self.time_mismatch.items():
            lines.append(f"Found timestamp mismatch in :{fname}")
            for a, b in pairs:
                lines.append(f"  Index timestamp: {a}, log timestamp: {b}")
                objs.append({"type": "time_index_mismatch", "file": fname, "index_timestamp": a,
                             "log_timestamp": b})
        for fname, pairs in self.time_order.items():
            lines.append(f"Found out of order timestamp in :{fname}")
            for a, b in pairs:
                lines.append(f"  Index timestamp: {a}, Previously indexed timestamp: {b}")
                objs.append({"type": "time_index_out_of_order", "file": fname, "index_timestamp": a,
                             "previous_timestamp": b})
        for fname, pairs in self.time_missing.items():
            lines.append("The following indexed offsets are not found in the log.")
            for a, b in pairs:
                lines.append(f"Indexed offset: {a}, found log offset: {b}")
                objs.append({"type": "time_index_offset_not_found", "file": fname, "index_offset": a,
                             "log_offset": b})
        for fname, gaps in self.non_consecutive.items():
            lines.append(f"Non-consecutive offsets in {fname}")
            for a, b in sorted(gaps.items()):
                lines.append(f"  {a} is followed by {b}")
                objs.append({"type": "non_consecutive", "file": fname, "offset": a, "next_offset": b})
        if self.json:
            self.out.write("".join(_jdump(o) + "\n" for o in objs))
        elif lines:
            self.err.write("\n".join(lines) + "\n")


def cmd_dump(args, out, err) -> int:
    items = resolve(args.paths)
    files = []
    for kind, item in items:
        files.extend(_files_of(item) if kind == "partition" else [item])
    d = Dumper(args, out, err)
    for f in files:
        d.dump(f)
    d.report()
    return d.status


# --- verify ---------------------------------------------------------------------------

def _fmt_problem(p) -> str:
    where = []
    if p.position is not None:
        where.append(f"position {p.position}")
    if p.offset is not None:
        where.append(f"offset {p.offset}")
    loc = f"{p.path}: {', '.join(where)}: " if where else f"{p.path}: "
    prefix = "" if p.severity == "error" else f"{p.severity}: "
    return prefix + loc + p.reason


def cmd_verify(args, out, err) -> int:
    pdirs = _partitions_for(resolve(args.paths))
    progress = Progress(_total_bytes(pdirs), err, enabled=not args.no_progress, label="verifying")
    counts = {"error": 0, "warning": 0, "note": 0}
    totals = {"partitions": 0, "segments": 0, "batches": 0, "records": 0, "bytes": 0, "skipped_bytes": 0}
    done = [0]

    def show(problems):
        for p in problems:
            counts[p.severity] += 1
            if p.severity == "note" and not args.verbose:
                continue
            progress.close()
            if args.json:
                out.write(_jdump({"type": "problem", "severity": p.severity, "file": p.path,
                                  "position": p.position, "offset": p.offset, "reason": p.reason}) + "\n")
            else:
                out.write(_fmt_problem(p) + "\n")

    try:
        for pdir in pdirs:
            totals["partitions"] += 1
            base = done[0]
            for check, problems in check_partition(
                    pdir, deep=args.deep, resync=args.resync,
                    max_decompressed_bytes=args.max_decompressed_bytes,
                    progress=lambda n, b=base: progress.update(b + n)):
                if check is not None:
                    totals["segments"] += 1
                    totals["batches"] += check.batches
                    totals["records"] += check.records
                    totals["bytes"] += check.segment.size
                    totals["skipped_bytes"] += check.skipped_bytes
                show(problems)
            done[0] = base + sum(os.path.getsize(s.log) for s in pdir.segments if s.log and os.path.exists(s.log))
    finally:
        progress.close()
    summary = (f"checked {totals['partitions']} partition(s), {totals['segments']} segment(s), "
               f"{totals['batches']} batches, " + (f"{totals['records']} records, " if args.deep else "")
               + f"{_human(totals['bytes'])}: {counts['error']} error(s), {counts['warning']} warning(s)")
    if args.json:
        out.write(_jdump(dict(type="summary", errors=counts["error"], warnings=counts["warning"],
                              notes=counts["note"], **totals)) + "\n")
    else:
        out.write(summary + "\n")
    return EXIT_PROBLEMS if counts["error"] else EXIT_OK


# --- stats -------------------------------------------------------------------------------

def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _iso(ms: int) -> str:
    try:
        t = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class Histogram:
    """Counts in logarithmic buckets (4 per power of two): bounded memory, ~19% wide."""

    SUB = 4

    def __init__(self):
        self.buckets = {}
        self.n = 0
        self.total = 0
        self.min = None
        self.max = None

    @classmethod
    def bucket_of(cls, v: int) -> int:
        if v <= 0:
            return 0
        e = v.bit_length() - 1
        if e < 2:
            return v          # 1, 2, 3 have buckets of their own
        frac = (v - (1 << e)) * cls.SUB >> e
        return 4 + (e - 2) * cls.SUB + frac

    @classmethod
    def bucket_range(cls, b: int) -> tuple:
        if b < 4:
            return (b, b)
        e, frac = divmod(b - 4, cls.SUB)
        e += 2
        lo = (1 << e) + (frac << e) // cls.SUB
        hi = (1 << e) + ((frac + 1) << e) // cls.SUB - 1
        return (lo, hi)

    def add(self, v: int) -> None:
        b = self.bucket_of(v)
        self.buckets[b] = self.buckets.get(b, 0) + 1
        self.n += 1
        self.total += v
        self.min = v if self.min is None else min(self.min, v)
        self.max = v if self.max is None else max(self.max, v)

    def merge(self, other: "Histogram") -> None:
        for b, c in other.buckets.items():
            self.buckets[b] = self.buckets.get(b, 0) + c
        self.n += other.n
        self.total += other.total
        for attr, fn in (("min", min), ("max", max)):
            o = getattr(other, attr)
            if o is not None:
                mine = getattr(self, attr)
                setattr(self, attr, o if mine is None else fn(mine, o))

    def percentile(self, q: float) -> Optional[int]:
        """The upper end of the bucket holding the q-quantile (clamped to the observed range)."""
        if not self.n:
            return None
        rank = max(1, int(q * self.n + 0.999999))
        seen = 0
        for b in sorted(self.buckets):
            seen += self.buckets[b]
            if seen >= rank:
                return max(self.min, min(self.max, self.bucket_range(b)[1]))
        return self.max

    def as_dict(self) -> dict:
        return {"count": self.n, "min": self.min, "max": self.max,
                "mean": (self.total / self.n) if self.n else None,
                "p50": self.percentile(0.5), "p90": self.percentile(0.9), "p99": self.percentile(0.99),
                "buckets": [[*self.bucket_range(b), c] for b, c in sorted(self.buckets.items())]}


def _varint_size(v: int) -> int:
    v = (v << 1) ^ (v >> 63)       # zig-zag
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def _record_size(batch, r) -> int:
    """The stored size of a record inside its (decompressed) batch payload."""
    if batch.magic < 2:
        ks, vs = r.key_size, r.value_size
        return 12 + 4 + 2 + (8 if r.magic == 1 else 0) + 8 + max(ks, 0) + max(vs, 0)
    ts_delta = 0 if batch.attributes & 0x08 else r.timestamp - batch.base_timestamp
    ks, vs = r.key_size, r.value_size
    body = (1 + _varint_size(ts_delta) + _varint_size(r.offset - batch.base_offset)
            + _varint_size(ks) + max(ks, 0) + _varint_size(vs) + max(vs, 0))
    headers = r.headers
    body += _varint_size(len(headers))
    for k, v in headers:
        kb = len(k.encode("utf-8", "surrogatepass"))
        body += _varint_size(kb) + kb + (_varint_size(-1) if v is None else _varint_size(len(v)) + len(v))
    return _varint_size(body) + body


def _legacy_value_len(raw) -> int:
    """The value length of a legacy message, bounds-checked.

    Parsed here rather than with RecordBatch.payload(), which swallows the
    error of a key/value length that overruns the message (see the report).
    """
    key_at = 18 if raw[16] == 0 else 26
    if len(raw) < key_at + 4:
        return 0
    klen = struct.unpack_from(">i", raw, key_at)[0]
    vat = key_at + 4 + max(klen, 0)
    if vat + 4 > len(raw):
        return 0
    return max(0, min(struct.unpack_from(">i", raw, vat)[0], len(raw) - vat - 4))


class Stats:
    """Counters for a segment, partition, topic or everything."""

    def __init__(self):
        self.segments = 0
        self.batches = 0
        self.records = 0
        self.bytes = 0
        self.file_bytes = 0
        self.bad = 0
        self.trailing_bytes = 0
        self.codecs = {}          # name -> [batches, records, stored payload bytes, raw payload bytes]
        self.magics = {}
        self.producers = set()
        self.idempotent = 0
        self.txn_batches = 0
        self.txn_bytes = 0
        self.control_batches = 0
        self.control_bytes = 0
        self.min_ts = None
        self.max_ts = None
        self.ts_types = {}
        self.first_offset = None
        self.last_offset = None
        self.sizes = Histogram()
        self.per_batch = Histogram()

    def add(self, fb, *, ratio: bool) -> None:
        b = fb.batch
        size = fb.size_in_bytes
        codec = codec_name(b)
        magic = fb.magic
        legacy = magic < 2
        compressed = b.attributes & 7
        # Stored payload: after the 61-byte v2 header, or a legacy message's value.
        stored = _legacy_value_len(fb.raw()) if legacy else max(0, size - 61)
        raw = stored
        # Decompressing is needed for ratios, and for legacy wrappers even to count records.
        if compressed and (legacy or ratio):
            n = 0
            raw = 0
            for r in fb:
                n += 1
                raw += _record_size(b, r)
            count = n
        else:
            count = b.record_count
        self.batches += 1
        self.records += count
        self.bytes += size
        c = self.codecs.setdefault(codec, [0, 0, 0, 0])
        c[0] += 1
        c[1] += count
        c[2] += stored
        c[3] += raw
        self.magics[magic] = self.magics.get(magic, 0) + 1
        if magic >= 2:
            if b.producer_id >= 0:
                self.producers.add(b.producer_id)
                self.idempotent += 1
            if b.is_transactional:
                self.txn_batches += 1
                self.txn_bytes += size
            if b.is_control:
                self.control_batches += 1
                self.control_bytes += size
        tsn = ts_name(b)
        self.ts_types[tsn] = self.ts_types.get(tsn, 0) + 1
        lo = b.base_timestamp if magic >= 2 and b.delete_horizon_ms is None else b.max_timestamp
        hi = b.max_timestamp
        if lo is not None and lo >= 0:
            self.min_ts = lo if self.min_ts is None else min(self.min_ts, lo)
        if hi >= 0:
            self.max_ts = hi if self.max_ts is None else max(self.max_ts, hi)
        first = b.base_offset if magic >= 2 else (b.base_offset if b.attributes & 7 else b.last_offset)
        if self.first_offset is None or first < self.first_offset:
            self.first_offset = first
        if self.last_offset is None or b.last_offset > self.last_offset:
            self.last_offset = b.last_offset
        self.sizes.add(size)
        self.per_batch.add(count)

    def merge(self, o: "Stats") -> None:
        for attr in ("segments", "batches", "records", "bytes", "file_bytes", "bad", "trailing_bytes",
                     "idempotent", "txn_batches", "txn_bytes", "control_batches", "control_bytes"):
            setattr(self, attr, getattr(self, attr) + getattr(o, attr))
        for name, v in o.codecs.items():
            c = self.codecs.setdefault(name, [0, 0, 0, 0])
            for i in range(4):
                c[i] += v[i]
        for d_self, d_o in ((self.magics, o.magics), (self.ts_types, o.ts_types)):
            for k, v in d_o.items():
                d_self[k] = d_self.get(k, 0) + v
        self.producers |= o.producers
        for attr, fn in (("min_ts", min), ("first_offset", min), ("max_ts", max), ("last_offset", max)):
            ov = getattr(o, attr)
            if ov is not None:
                mine = getattr(self, attr)
                setattr(self, attr, ov if mine is None else fn(mine, ov))
        self.sizes.merge(o.sizes)
        self.per_batch.merge(o.per_batch)

    def as_dict(self, ratio: bool) -> dict:
        codecs = {}
        for name, (nb, nr, stored, raw) in sorted(self.codecs.items()):
            codecs[name] = {"batches": nb, "records": nr, "stored_bytes": stored}
            if ratio or name == "none":
                codecs[name]["uncompressed_bytes"] = raw
                codecs[name]["ratio"] = (raw / stored) if stored else None
        return {
            "segments": self.segments, "batches": self.batches, "records": self.records,
            "bytes": self.bytes, "file_bytes": self.file_bytes, "bad_batches": self.bad,
            "trailing_bytes": self.trailing_bytes,
            "first_offset": self.first_offset, "last_offset": self.last_offset,
            "codecs": codecs, "magic": {str(k): v for k, v in sorted(self.magics.items())},
            "producers": len(self.producers), "idempotent_batches": self.idempotent,
            "transactional_batches": self.txn_batches, "transactional_bytes": self.txn_bytes,
            "control_batches": self.control_batches, "control_bytes": self.control_bytes,
            "transactional_share": self.txn_batches / self.batches if self.batches else None,
            "control_share": self.control_batches / self.batches if self.batches else None,
            "min_timestamp": self.min_ts, "max_timestamp": self.max_ts,
            "timestamp_types": self.ts_types,
            "batch_size": self.sizes.as_dict(), "records_per_batch": self.per_batch.as_dict(),
        }

    def text(self, ratio: bool, indent: str) -> List[str]:
        if not self.batches:
            return [f"{indent}no batches"]
        out = []
        parts = []
        for name, (nb, nr, stored, raw) in sorted(self.codecs.items(), key=lambda kv: -kv[1][2]):
            s = f"{name} {nb} batches {_human(stored)}"
            if name != "none" and ratio and stored:
                s += f" (ratio {raw / stored:.2f}x)"
            parts.append(s)
        out.append(f"{indent}codecs: " + "; ".join(parts))
        out.append(f"{indent}producers: {len(self.producers)} producer id(s), "
                   f"{self.idempotent / self.batches:.1%} of batches idempotent; "
                   f"transactional {self.txn_batches / self.batches:.1%} of batches "
                   f"({self.txn_bytes / max(self.bytes, 1):.1%} of bytes); "
                   f"control {self.control_batches / self.batches:.1%} of batches")
        if self.max_ts is not None:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.ts_types.items()))
            out.append(f"{indent}timestamps: {_iso(self.min_ts if self.min_ts is not None else self.max_ts)}"
                       f" .. {_iso(self.max_ts)} ({kinds})")
        s = self.sizes
        out.append(f"{indent}batch size: min {_human(s.min)}, p50 ~{_human(s.percentile(.5))}, "
                   f"p90 ~{_human(s.percentile(.9))}, p99 ~{_human(s.percentile(.99))}, "
                   f"max {_human(s.max)}, mean {_human(s.total / s.n)}")
        p = self.per_batch
        out.append(f"{indent}records per batch: min {p.min}, p50 ~{p.percentile(.5)}, "
                   f"p90 ~{p.percentile(.9)}, max {p.max}, mean {p.total / p.n:.1f}")
        return out


def _segment_stats(path: str, ratio: bool, progress, base: int, err_list: list,
                   max_decompressed: int = kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES) -> Stats:
    st = Stats()
    st.segments = 1
    with Segment(path) as seg:
        st.file_bytes = seg.size
        it = seg.batches(verify_crc=False, max_decompressed_bytes=max_decompressed)
        while True:
            try:
                fb = next(it)
            except StopIteration:
                st.trailing_bytes = it.trailing_bytes
                break
            except DecodeError as e:
                st.bad += 1
                err_list.append(f"{path}: position {e.position}: {e.reason}")
                if it.exhausted:
                    st.trailing_bytes = seg.size - e.position
                    break
                continue
            try:
                st.add(fb, ratio=ratio)
            except (DecodeError, KafkaRecError) as e:
                st.bad += 1
                err_list.append(f"{path}: position {getattr(e, 'position', fb.position)}: "
                                f"{getattr(e, 'reason', e)}")
            progress.update(base + it.position)
    return st


def _check_plot_support():
    try:
        import matplotlib
    except ImportError:
        raise UsageError("--plot needs matplotlib, which is not installed (pip install matplotlib)") from None
    return matplotlib


def _plot(path: str, total: Stats, ratio: bool) -> None:
    matplotlib = _check_plot_support()
    matplotlib.use("Agg")   # files only; no display needed
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for ax, hist, title, unit in ((axes[0], total.sizes, "batch size", "bytes"),
                                  (axes[1], total.per_batch, "records per batch", "records")):
        items = sorted(hist.buckets.items())
        xs = [Histogram.bucket_range(b)[0] for b, _ in items]
        ws = [max(1, Histogram.bucket_range(b)[1] - Histogram.bucket_range(b)[0] + 1) for b, _ in items]
        ax.bar(xs, [c for _, c in items], width=ws, align="edge", edgecolor="black", linewidth=0.3)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlabel(unit)
        ax.set_ylabel("batches")
        ax.set_title(f"{title} ({hist.n} batches)")
    names = sorted(total.codecs)
    stored = [total.codecs[n][2] for n in names]
    axes[2].bar(names, stored, color="tab:orange")
    axes[2].set_ylabel("stored payload bytes")
    axes[2].set_title("bytes by codec" + (" (label: compression ratio)" if ratio else ""))
    if ratio:
        for i, n in enumerate(names):
            nb, nr, st, raw = total.codecs[n]
            if st:
                axes[2].annotate(f"{raw / st:.2f}x", (i, st), ha="center", va="bottom")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def cmd_stats(args, out, err) -> int:
    if args.plot:
        _check_plot_support()          # fail before a long scan, not after it
    pdirs = _partitions_for(resolve(args.paths))
    ratio = not args.headers_only
    progress = Progress(_total_bytes(pdirs), err, enabled=not args.no_progress, label="scanning")
    total = Stats()
    topics = {}
    report = []
    errors: List[str] = []
    done = 0
    try:
        for pdir in pdirs:
            part = Stats()
            seg_rows = []
            logs = [s.log for s in pdir.segments if s.log] + list(pdir.kraft_snapshots)
            for path in logs:
                try:
                    st = _segment_stats(path, ratio, progress, done, errors, args.max_decompressed_bytes)
                except OSError as e:
                    errors.append(f"{path}: {e.strerror or e}")
                    continue
                done += st.file_bytes
                part.merge(st)
                seg_rows.append((path, st))
            topic = pdir.topic_partition.topic if pdir.topic_partition else pdir.name
            topics.setdefault(topic, [Stats(), 0])
            topics[topic][0].merge(part)
            topics[topic][1] += 1
            total.merge(part)
            report.append((pdir, part, seg_rows))
    finally:
        progress.close()
    if args.json:
        for pdir, part, rows in report:
            tp = pdir.topic_partition
            out.write(_jdump({"type": "partition", "path": pdir.path,
                              "topic": tp.topic if tp else None, "partition": tp.partition if tp else None,
                              "stats": part.as_dict(ratio),
                              "segments": [{"file": p, **s.as_dict(ratio)} for p, s in rows]}) + "\n")
        for topic, (st, n) in sorted(topics.items()):
            out.write(_jdump({"type": "topic", "topic": topic, "partitions": n, "stats": st.as_dict(ratio)}) + "\n")
        out.write(_jdump({"type": "total", "partitions": len(report), "stats": total.as_dict(ratio)}) + "\n")
    else:
        lines = []
        for pdir, part, rows in report:
            lines.append(f"{pdir.name}  ({pdir.path})")
            lines.append(f"  {'segment':<34} {'batches':>9} {'records':>11} {'bytes':>11}  offsets")
            for p, s in rows:
                rng = f"{s.first_offset}..{s.last_offset}" if s.batches else "-"
                extra = f"  ({s.bad} unreadable)" if s.bad else ""
                extra += f"  ({s.trailing_bytes} trailing bytes)" if s.trailing_bytes else ""
                lines.append(f"  {os.path.basename(p):<34} {s.batches:>9} {s.records:>11} "
                             f"{_human(s.file_bytes):>11}  {rng}{extra}")
            lines.append(f"  {'total':<34} {part.batches:>9} {part.records:>11} {_human(part.file_bytes):>11}")
            lines.extend(part.text(ratio, "    "))
        for topic, (st, n) in sorted(topics.items()):
            lines.append(f"topic {topic}: {n} partition(s), {st.segments} segment(s), {st.batches} batches, "
                         f"{st.records} records, {_human(st.file_bytes)}")
        if len(topics) > 1:
            lines.append(f"all: {len(report)} partition(s), {total.segments} segment(s), {total.batches} "
                         f"batches, {total.records} records, {_human(total.file_bytes)}")
            lines.extend(total.text(ratio, "    "))
        out.write("\n".join(lines) + "\n")
    for e in errors:
        err.write(e + "\n")
    if args.plot:
        _plot(args.plot, total, ratio)
        err.write(f"wrote {args.plot}\n")
    return EXIT_PROBLEMS if errors else EXIT_OK


# --- argument parsing ------------------------------------------------------------------

EPILOG = """\
PATH may be a log directory root (a folder of <topic>-<partition> folders),
one <topic>-<partition> folder, or individual files.

exit status: 0 all good; 1 problems in the data (verify found errors, or
dump/stats met something they could not read); 2 usage errors (bad options,
a PATH that does not exist or holds no Kafka files, --plot without matplotlib).
"""


def _nonneg_int(s: str) -> int:
    v = int(s)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {v}")
    return v


def _add_budget(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-decompressed-bytes", type=_nonneg_int, metavar="N",
                   default=kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES,
                   help="refuse to inflate one compressed batch past N bytes, a guard against "
                        f"decompression bombs (default {kafkarec.DEFAULT_MAX_DECOMPRESSED_BYTES})")


def _wrap(text: str) -> str:
    return textwrap.fill(text, 79)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kafkarec", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_wrap("Read Apache Kafka log directories: dump segments and side files like "
                          "kafka-dump-log.sh, verify them, summarise them."),
        epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"kafkarec {kafkarec.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    d = sub.add_parser(
        "dump", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        help="print segments and side files the way kafka-dump-log.sh does",
        description=_wrap("Print .log, .checkpoint, .index, .timeindex, .txnindex and producer "
                          ".snapshot files with the same lines as Kafka's DumpLogSegments "
                          "(kafka-dump-log.sh); also leader-epoch-checkpoint, partition.metadata and "
                          "offset checkpoints (kafkarec extensions). Index mismatches, time index "
                          "errors and non-consecutive offsets are reported on stderr at the end, as "
                          "Kafka does."))
    d.add_argument("paths", nargs="+", metavar="PATH", help="log dir root, partition dir or files")
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
    _add_budget(d)
    d.set_defaults(func=cmd_dump)

    v = sub.add_parser(
        "verify", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        help="check CRCs, offsets and indexes; exit status 1 if anything is wrong",
        description=_wrap("Check every batch (framing, magic, CRC, offsets increasing within and "
                          "across segments) and each segment's .index, .timeindex and .txnindex "
                          "against it; producer snapshots (CRC, layout), leader-epoch-checkpoint "
                          "(layout and the epochs batches carry), partition.metadata and KRaft "
                          ".checkpoint files. Every problem is printed as 'FILE: position P, offset "
                          "O: reason'; warnings and notes (-v) do not fail the run."))
    v.add_argument("paths", nargs="+", metavar="PATH", help="log dir root, partition dir or files")
    v.add_argument("--resync", action="store_true",
                   help="after a corrupt region go on at the next plausible batch header (sane size, "
                        "magic 0..2, valid CRC) instead of stopping at it")
    v.add_argument("--deep", action="store_true",
                   help="also decode (and decompress) every record, checking counts, offsets and "
                        "control records")
    v.add_argument("--json", action="store_true", help="one JSON object per problem, then a summary")
    v.add_argument("-v", "--verbose", action="store_true",
                   help="also print notes (e.g. indexes left untrimmed by an unclean shutdown)")
    v.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _add_budget(v)
    v.set_defaults(func=cmd_verify)

    s = sub.add_parser(
        "stats", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        help="batches, records, bytes, codecs, producers and size distributions",
        description=_wrap("Summarise per segment, partition and topic: batches, records, bytes, "
                          "codecs and their compression ratios, producers, transactional and control "
                          "share, timestamp range, batch size and records-per-batch distributions. A "
                          "progress bar is drawn on stderr when it is a terminal."))
    s.add_argument("paths", nargs="+", metavar="PATH", help="log dir root, partition dir or files")
    s.add_argument("--headers-only", action="store_true",
                   help="read batch headers only: faster, but no compression ratios")
    s.add_argument("--plot", metavar="FILE.png",
                   help="also draw the distributions into FILE.png (needs matplotlib)")
    s.add_argument("--json", action="store_true",
                   help="one JSON object per partition and topic, then a total")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _add_budget(s)
    s.set_defaults(func=cmd_stats)
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
    except UsageError as e:
        err.write(f"kafkarec {args.command}: error: {e}\n")
        return EXIT_USAGE
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
