"""``kafkarec dump``: a work-alike of Kafka's ``kafka-dump-log.sh``.

Prints what Kafka's ``DumpLogSegments`` prints (its Java rewrite, which
``kafka-dump-log.sh`` runs in Kafka 4.x): batch lines, record lines with
``| `` and the stderr reports at the end, for ``.log``, ``.checkpoint``,
``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot`` files;
also leader-epoch-checkpoint, partition.metadata and offset checkpoints
(kafkarec extensions).  ``--json`` writes one object per line instead.

The names Kafka's tools give to batch fields (codec, timestamp type, Java's
``OptionalLong`` and booleans) and :func:`jdump`, the JSON line writer, are
shared with ``kafkarec verify`` and ``kafkarec stats``.
"""
from __future__ import annotations

import os
from typing import List, Optional, TextIO

from kafkarec.log import layout as _layout
from kafkarec.cli import decode_args
from kafkarec.cli.common import (
    EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, INT_MAX, PAYLOAD_RENDERERS, codec_name, error_dict, error_line, jbool, jdump,
    optional_long, read_options, ts_name)
from kafkarec.log import sidefiles as sf
from kafkarec.enums import ControlRecordType
from kafkarec.errors import DecodeError, KafkaRecError
from kafkarec.internal.topics import CONTROL_SCHEMAS
from kafkarec.log.segment import Segment, SkippedBatch, base_offset_from_name

__all__ = ["Dumper", "run", "jdump", "jbool", "optional_long", "codec_name", "ts_name",
           "control_text", "error_line", "EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "INT_MAX"]

# control records whose decoded value --json prints (the text line is kafka.internal.dumplog's)
_DECODED_CONTROLS = frozenset(CONTROL_SCHEMAS)


def control_text(r) -> str:
    """What printControlRecord prints for one control record: the one renderer,
    :func:`kafkarec.internal.dumplog.format_control`, with the default schema set."""
    return decode_args.control_text(r)


class Dumper:
    """DumpLogSegments, file by file, with its end-of-run reports."""

    def __init__(self, args, out: TextIO, err: TextIO):
        self.out = out
        self.err = err
        self.print_data = args.print_data_log
        self.render = PAYLOAD_RENDERERS[getattr(args, "payload_encoding", "java")]
        self.decode = decode_args.decoder_from_args(args)      # internal-topic decoder (or "auto")
        self.decode_schemas = decode_args.schemas_from_args(args)
        self.kafka_version = decode_args.kafka_version_from_args(args)
        from kafkarec.cli.schemas import typed_from_args   # registry-typed keys/values
        self.typed = typed_from_args(args)
        self.print_data = self.print_data or self.decode is not None or self.typed is not None
        self.deep = args.deep_iteration or self.print_data
        self.skip_meta = args.skip_record_metadata
        self.max_bytes = args.max_bytes
        self.max_message_size = args.max_message_size
        self.verify_only = args.verify_index_only
        self.sanity_only = args.index_sanity_check
        self.json = args.json
        self.read_options = read_options(args)
        self.status = EXIT_OK
        self.index_mismatches = {}
        self.time_mismatch, self.time_order, self.time_missing = {}, {}, {}
        self.non_consecutive = {}

    # -- output helpers --
    def emit(self, line: str, **obj) -> None:
        if self.json:
            self.out.write(jdump(obj) + "\n")
        else:
            self.out.write(line + "\n")

    def error(self, message: str, path: Optional[str] = None, position: Optional[int] = None,
              status: int = EXIT_PROBLEMS) -> None:
        self.status = max(self.status, status)
        if self.json:
            self.out.write(jdump(error_dict(message, path, position)) + "\n")
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
                # kafka-dump-log's words and exit status 0 for a file it does not read (.deleted segments,
                # quorum-state, ...)
                self.error(f"Ignoring unknown file {path}", path, status=EXIT_OK)
        except OSError as e:
            self.error(f"{path}: {e.strerror or e}", path, status=EXIT_USAGE)
        except (sf.SideFileError, KafkaRecError) as e:
            self.error(f"{path}: {e}", path, getattr(e, "position", None))

    # -- .log / .checkpoint --
    def dump_log(self, path: str) -> None:
        """A ``.log`` or KRaft ``.checkpoint`` walked by the reader's file door
        (:class:`kafkarec.scan.FileWalk`), as DumpLogSegments prints it."""
        from kafkarec.scan import FileWalk
        name = os.path.basename(path)
        if name.endswith(sf.LOG_SUFFIX):
            start = base_offset_from_name(name)
            if start is not None:
                self.emit(f"Log starting offset: {start}", type="log_start", offset=start)
            else:
                # A renamed or backed-up segment: say where the offset comes from.
                with FileWalk(path) as walk:
                    start, source = walk.base_offset, walk.base_offset_source
                shown = "unknown" if start is None else start
                self.emit(f"Log starting offset: {shown} (from the first batch: the file name "
                          f"{name!r} holds no offset)", type="log_start", offset=start,
                          source=source)
        elif name == sf.BOOTSTRAP_CHECKPOINT:
            self.emit("KRaft bootstrap snapshot", type="kraft_bootstrap_snapshot")
        else:
            sp = sf.parse_snapshot_path(name)
            self.emit(f"Snapshot end offset: {sp.end_offset}, epoch: {sp.epoch}",
                      type="kraft_snapshot", end_offset=sp.end_offset, epoch=sp.epoch)
        abspath = os.path.abspath(path)
        with FileWalk(path, self.read_options, max_bytes=self.max_bytes) as walk:
            end = walk.end
            valid_bytes = 0
            last_offset = [-1]
            for item in walk:
                if isinstance(item, SkippedBatch):
                    self.error(error_line(path, item.error), path, item.position)
                    if self.typed is not None:
                        # framing stopped: every byte from there on is kept, as a skipped batch is
                        self.typed.undecodable(path, item.position,
                                               (end if item.stopped else walk.position) - item.position,
                                               error_line(path, item.error))
                    if item.stopped:
                        return
                    valid_bytes = walk.position
                    continue
                self.batch_and_records(item, path, abspath, last_offset)
                valid_bytes = item.position + item.size_in_bytes
            trailing = end - valid_bytes
            if trailing > 0 and self.max_bytes == INT_MAX:
                self.emit(f"Found {trailing} invalid bytes at the end of {name}",
                          type="trailing_bytes", bytes=trailing)

    def batch_and_records(self, fb, path: str, key: str, last_offset: list) -> None:
        """A batch's line and, with --deep-iteration, its records' (errors reported, not raised)."""
        self.batch_line(fb)
        if self.deep:
            try:
                self.records(fb, key, last_offset)
            except (DecodeError, KafkaRecError) as e:
                self.error(error_line(path, e, fb.position), path, getattr(e, "position", fb.position))
                if self.typed is not None and isinstance(e, DecodeError):
                    # its records could not be read: the batch is kept whole, nothing to recover
                    self.typed.undecodable(path, fb.position, fb.size_in_bytes, error_line(path, e, fb.position))

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
            self.out.write(jdump(obj) + "\n")
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
        gaps = self.non_consecutive
        lines = []
        typed = iter(self.typed.batch(fb, abspath)) if self.typed and self.print_data and not control else None
        for r in fb:
            row = next(typed) if typed is not None else None
            off = r.offset
            # The Java rewrite starts "previous" at -1, so a first offset > 0 is reported too.
            if off != last_offset[0] + 1:
                gaps.setdefault(abspath, {})[last_offset[0]] = off
            last_offset[0] = off
            if self.json:
                lines.append(self._record_json(fb, r, tsn, control, abspath, row))
                continue
            line = ""
            if not self.skip_meta:
                line = (f"| offset: {off} {tsn}: {r.timestamp} "
                        f"keySize: {r.key_size} valueSize: {r.value_size}")
                if v2:
                    line += (f" sequence: {r.sequence} headerKeys: "
                             f"[{','.join(k for k, _ in r.headers)}]")
                else:
                    line += f" isValid: {jbool(r.crc_valid)} crc: {r.checksum}"
                if control:
                    line += decode_args.control_text(r, self.decode_schemas)
            internal = self.print_data and not control and decode_args.decoder_for_path(self.decode, abspath)
            if row is not None:
                from kafkarec.cli.schemas import typed_text
                line += typed_text(row, r, self.render, "| " if self.skip_meta else " ")
            elif internal:
                prefix = "| " if self.skip_meta else " "
                texts = decode_args.record_text(internal, r, off, self.decode_schemas, self.kafka_version)
                for label, text in zip(("key", "payload"), texts):
                    if text is not None:
                        line += f"{prefix}{label}: {text}"
                        prefix = " "
            elif self.print_data and not control:
                prefix = "| " if self.skip_meta else " "
                key = r.key
                if key is not None:
                    line += f"{prefix}key: {self.render(key)}"
                    prefix = " "
                value = r.value
                if value is not None:
                    line += f"{prefix}payload: {self.render(value)}"
            if self.print_data and v2 and not control and decode_args.dead_letters_for_path(self.decode, abspath):
                letter = decode_args.dead_letter_json(r)
                if letter is not None:
                    line += f"{'| ' if self.skip_meta and not line else ' '}deadLetter: {jdump(letter)}"
            lines.append(line + "\n")
        self.out.write("".join(lines))

    def _record_json(self, fb, r, tsn, control, abspath: str = "", row=None) -> str:
        obj = {"type": "record", "offset": r.offset, "timestamp_type": tsn, "timestamp": r.timestamp,
               "key_size": r.key_size, "value_size": r.value_size}
        if fb.magic >= 2:
            obj["sequence"] = r.sequence
            obj["header_keys"] = [k for k, _ in r.headers]
        else:
            obj["is_valid"] = r.crc_valid     # the message's own CRC-32 (LegacyRecord.isValid)
            obj["crc"] = r.checksum
        if control:
            kind = r.control_type
            obj["control_type"] = kind.name
            obj["control_type_id"] = r.control_type_id
            value = r.control_value
            if kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                obj["coordinator_epoch"] = value["coordinatorEpoch"]
            elif kind in _DECODED_CONTROLS:
                obj["control"] = value
        if self.print_data and not control:
            key, value = r.key, r.value
            render = self.render
            obj["key"] = None if key is None else render(key)
            obj["payload"] = None if value is None else render(value)
            if fb.magic >= 2:
                obj["headers"] = [[k, None if v is None else render(v)] for k, v in r.headers]
            internal = decode_args.decoder_for_path(self.decode, abspath)
            if internal:
                obj["decoded"] = decode_args.record_json(internal, r, self.decode_schemas)
            elif fb.magic >= 2 and decode_args.dead_letters_for_path(self.decode, abspath):
                obj["dead_letter"] = decode_args.dead_letter_json(r)
            if row is not None:
                from kafkarec.cli.schemas import typed_json
                obj.update(typed_json(row))
        return jdump(obj) + "\n"

    # -- .index and .timeindex --
    def _sibling_log(self, path: str) -> Optional[Segment]:
        log = _sibling(path, sf.LOG_SUFFIX)
        try:
            return Segment(log)
        except OSError as e:
            self.error(f"{path}: cannot open its log {log}: {e.strerror or e}", path)
            return None

    def _sanity_check(self, path: str, index) -> None:
        try:
            index.sanity_check()
        except sf.CorruptIndexError as e:
            self.error(str(e), path)
            return
        self.emit(f"{path} passed sanity check.", type="sanity_check_passed")

    def dump_index(self, path: str) -> None:
        index = sf.OffsetIndex(path)
        if index.slots == 0:
            self.emit(f"{path} is empty.", type="index_empty")
            return
        if self.sanity_only:
            self._sanity_check(path, index)
            return
        seg = self._sibling_log(path)
        mismatches = self.index_mismatches
        try:
            for entry in index.entries():   # up to the zero tail a crash may leave
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

    def dump_time_index(self, path: str) -> None:
        tindex = sf.TimeIndex(path)
        if self.sanity_only:
            self._sanity_check(path, tindex)
            return
        try:
            oindex = sf.OffsetIndex(_sibling(path, sf.INDEX_SUFFIX), tindex.base_offset)
        except OSError:
            oindex = None      # no offset index: search from the start of the log
        seg = self._sibling_log(path)
        abspath = os.path.abspath(path)
        prev_ts = -1
        try:
            for entry in tindex.entries():
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
            for fb in seg.batches(start, options=self.read_options, release=False):
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
        def reverse(by_offset):
            return sorted(by_offset.items(), reverse=True)   # a TreeMap in reverse order
        # (pairs by file, their order, header, line, JSON type, JSON keys of the pair), in Kafka's order
        sections = (
            (self.index_mismatches, reverse, "Mismatches in :{file}",
             "  Index offset: {a}, log offset: {b}", "index_mismatch", ("index_offset", "log_offset")),
            (self.time_mismatch, list, "Found timestamp mismatch in :{file}",
             "  Index timestamp: {a}, log timestamp: {b}",
             "time_index_mismatch", ("index_timestamp", "log_timestamp")),
            (self.time_order, list, "Found out of order timestamp in :{file}",
             "  Index timestamp: {a}, Previously indexed timestamp: {b}",
             "time_index_out_of_order", ("index_timestamp", "previous_timestamp")),
            (self.time_missing, list, "The following indexed offsets are not found in :{file}",
             "Indexed offset: {a}, found log offset: {b}",
             "time_index_offset_not_found", ("index_offset", "log_offset")),
            (self.non_consecutive, lambda gaps: sorted(gaps.items()), "Non-consecutive offsets in {file}",
             "  {a} is followed by {b}", "non_consecutive", ("offset", "next_offset")),
        )
        lines = []
        objs = []
        for by_file, order, header, line, kind, (key_a, key_b) in sections:
            for fname in java_hashmap_order(by_file):
                pairs = by_file[fname]
                lines.append(header.format(file=fname))
                for a, b in order(pairs):
                    lines.append(line.format(a=a, b=b))
                    objs.append({"type": kind, "file": fname, key_a: a, key_b: b})
        if self.json:
            self.out.write("".join(jdump(o) + "\n" for o in objs))
        elif lines:
            self.err.write("\n".join(lines) + "\n")


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hashmap_order(keys) -> list:
    """String keys, added in the given order with ``computeIfAbsent``, in the order a
    ``java.util.HashMap`` (default capacity 16, load factor 0.75) then iterates them.

    DumpLogSegments keeps its end-of-run reports by file in such maps, so that is the order
    it prints them in.  Buckets are ``(h ^ (h >>> 16)) & (capacity - 1)`` of Java's
    ``String.hashCode``; ``computeIfAbsent`` puts a new key at the head of its bucket and
    doubles the table first when the map already holds more than 3/4 of its capacity; a
    resize splits each bucket keeping its order.  (A bucket of 8 keys, which Java turns
    into a tree, is not modelled: the files of one run do not collide so.)"""
    capacity = 16
    table: list = [[] for _ in range(capacity)]
    size = 0
    for key in keys:
        h = _java_string_hash(key)
        spread = h ^ (h >> 16)
        if size > capacity * 3 // 4:
            old, capacity = capacity, capacity * 2
            new_table: list = [[] for _ in range(capacity)]
            for j, chain in enumerate(table):
                for entry in chain:
                    new_table[j + (old if entry[0] & old else 0)].append(entry)
            table = new_table
        table[spread & (capacity - 1)].insert(0, (spread, key))
        size += 1
    return [key for chain in table for _, key in chain]


def _sibling(path: str, suffix: str) -> str:
    """The file of the same segment with another suffix (``00..42.index`` -> ``00..42.log``)."""
    stem = os.path.basename(path).split(".")[0]
    return os.path.join(os.path.dirname(os.path.abspath(path)), stem + suffix)


def run_ranges(plans: list, args, out: TextIO, err: TextIO) -> int:
    """``kafkarec dump`` over URIs or with a selection: the selected batches (and, with
    --deep-iteration, records) of every segment range, as for local files."""
    from kafkarec.cli.ranges import iter_range_batches
    d = Dumper(args, out, err)
    shown = None
    last_offset = [-1]
    for rp in plans:
        sr = rp.range
        uri = _layout.segment_uri(rp.storage, sr.segment)
        if uri != shown:
            shown = uri
            last_offset = [-1]
            d.emit(f"Dumping {uri}", type="file", file=uri)
            d.emit(f"Log starting offset: {sr.segment.base_offset}", type="log_start",
                   offset=sr.segment.base_offset)
        try:
            for fb in iter_range_batches(rp, d.read_options):
                if isinstance(fb, SkippedBatch):
                    d.error(error_line(uri, fb.error), uri, fb.position)
                    break
                d.batch_and_records(fb, uri, uri, last_offset)
        except OSError as e:
            d.error(f"{uri}: {e.strerror or e}", uri, status=EXIT_USAGE)
    return d.status


def run(files: List[str], args, out: TextIO, err: TextIO) -> int:
    """``kafkarec dump``: the files in order, then the end-of-run reports."""
    d = Dumper(args, out, err)
    for f in files:
        d.dump(f)
    d.report()
    return d.status
