"""The census of a topic's partitions (see :mod:`kafkarec.census`).

One pass through the one reader (:func:`kafkarec.census._scan.open_scan`): the
``read_uncommitted`` records, control records too, with their key, value, headers and batch
facts, each partition's records read once.  What that isolation level adds is counted off
every row; the ``read_committed`` figures off the rows a ``read_committed`` read gives, the
rows of no control batch and of no batch its plan skips (the transaction rule's verdict), and
those rows are what the compression what-if re-batches (:class:`WhatIf`).  A partition whose
pass meets damage (an error row) has its read_committed rows read apart
(:func:`partition_census`); the last stable offset is read off the partition's walk (the
listing's :class:`kafkarec.scan.LogFacts`).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from kafkarec._extras import require
from kafkarec.census._scan import base_config, census_listings, open_scan, topic_partition_counts
from kafkarec.census.keys import KeyTally, merged_distinct_keys
from kafkarec.dlq import HEADER_OFFSET, DeadLetterTally, merge as merge_dead_letters
from kafkarec.histogram import Histogram

__all__ = ["PartitionCensus", "Census", "CensusPlan", "census", "plan_census", "partition_census", "assemble",
           "DEFAULT_MAX_EXACT_KEYS"]

#: keys held exactly per partition (a dict entry each: ~100 bytes plus the key) before the
#: distinct count turns to HyperLogLog and live keys are no longer known
DEFAULT_MAX_EXACT_KEYS = 1_000_000

_COMMITTED_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers",
                      "producerId", "compression", "batchBaseOffset", "batchPosition", "batchSize",
                      "deleteHorizonMs")
_UNASKED = object()          # a partition's last stable offset not asked for yet

_UNCOMMITTED_COLUMNS = ("topic", "partition", "offset", "isControl", "batchBaseOffset", "batchPosition", "batchSize",
                        "producerId", "isTransactional")


class _Tally:
    """Batches, records and bytes (the batches' stored bytes) of one group."""
    __slots__ = ("batches", "records", "bytes")

    def __init__(self):
        self.batches = self.records = self.bytes = 0

    def as_dict(self) -> dict:
        return {"batches": self.batches, "records": self.records, "bytes": self.bytes}


class PartitionCensus:
    """One topic-partition's figures.  ``records``..``bytes``: what a ``read_committed``
    consumer returns from the log start (or the bounds' start) to the end (the last stable
    offset) or the bounds' end; ``uncommitted``: what ``read_uncommitted`` adds (aborted
    records, records of transactions open at the end) and the control markers."""

    def __init__(self, topic: Optional[str], partition: Optional[int], *, max_exact_keys: int,
                 num_partitions: Optional[int], as_of_ms: int, merge_share: Optional[int] = None):
        self.topic = topic
        self.partition = partition
        self.num_partitions = num_partitions
        # the keys this partition may give its topic's union as digests (keys.KeyTally.keys_for_merge)
        self.merge_share = max_exact_keys if merge_share is None else merge_share
        self.as_of_ms = as_of_ms
        self.records = self.tombstones = self.null_keys = 0
        self.batches = self.bytes = self.payload_bytes = 0
        self.first_offset: Optional[int] = None
        self.last_offset: Optional[int] = None
        self.min_timestamp: Optional[int] = None
        self.max_timestamp: Optional[int] = None
        self.codecs: Dict[str, _Tally] = {}
        self.producers: Dict[int, _Tally] = {}
        self.header_keys: Dict[str, List[int]] = {}      # key -> [records carrying it, value bytes]
        self.schema_ids: Dict[int, List[int]] = {}       # writer id -> [records, value bytes]
        self.dead_letters = DeadLetterTally()            # a share group's DLQ records (KIP-1191)
        self.batch_sizes = Histogram()
        self.record_sizes = Histogram()
        self.keys = KeyTally(max_exact_keys)
        self.misplaced_keys = 0                          # records whose key murmur2 puts elsewhere
        self.all_records = self.all_batches = self.all_bytes = 0   # read_uncommitted, data + control
        self.control_records = self.control_batches = 0
        # the last stable offset of the partition's whole log (the transaction rule's, asked of
        # stable_end_of at the first transactional batch: _UNASKED until then) and the data records
        # the read_uncommitted pass met at or past it
        self.stable_end_of: Optional[Callable[[], Optional[int]]] = None
        self._stable: object = _UNASKED
        self.past_stable = 0
        self.errors: List[dict] = []
        self._last_batch: Optional[int] = None
        self._last_all_batch: Optional[int] = None

    # --- the read_committed pass ----------------------------------------------------------
    def add_committed(self, rb) -> None:
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        np = require("numpy")
        n = rb.num_rows
        if not n:
            return
        cols = {name: rb.column(rb.schema.get_field_index(name)) for name in _COMMITTED_COLUMNS}
        self.records += n
        offsets = cols["offset"].to_numpy()
        self.first_offset = int(offsets[0]) if self.first_offset is None else self.first_offset
        self.last_offset = int(offsets[-1])
        ts = pc.min_max(cols["timestamp"].cast(pa.int64()))
        lo, hi = ts["min"].as_py(), ts["max"].as_py()
        self.min_timestamp = lo if self.min_timestamp is None else min(self.min_timestamp, lo)
        self.max_timestamp = hi if self.max_timestamp is None else max(self.max_timestamp, hi)
        # record sizes: key + value + header keys and values (the payload, not the varint framing)
        klen = pc.fill_null(pc.binary_length(cols["key"]), 0).to_numpy(zero_copy_only=False)
        vlen = pc.fill_null(pc.binary_length(cols["value"]), 0).to_numpy(zero_copy_only=False)
        hlen = np.zeros(n, dtype=np.int64)
        headers = cols["headers"]
        if headers.null_count < n:
            flat = pc.list_flatten(headers)
            parents = pc.list_parent_indices(headers).to_numpy()
            hk = flat.field("key")
            hv = flat.field("value")
            hk_len = pc.binary_length(hk).to_numpy(zero_copy_only=False)
            hv_len = pc.fill_null(pc.binary_length(hv), 0).to_numpy(zero_copy_only=False)
            np.add.at(hlen, parents, hk_len + hv_len)
            # a record may carry a header key more than once (Headers.add appends): it counts
            # once among the key's records, each value's bytes count.  Parents ascend, so a
            # record's repeats of a key meet the record it was last counted for
            last: Dict[str, int] = {}
            names = hk.to_pylist()
            for name, parent, length in zip(names, parents.tolist(), hv_len.tolist()):
                t = self.header_keys.setdefault(name, [0, 0])
                if last.get(name) != parent:
                    last[name] = parent
                    t[0] += 1
                t[1] += length
            if HEADER_OFFSET in last:       # dead letters among them: their values read
                self.dead_letters.add_headers(names, hv.to_pylist(), parents.tolist())
        sizes = klen.astype(np.int64) + vlen + hlen
        self.payload_bytes += int(sizes.sum())
        self.record_sizes.add_many(sizes)
        values = cols["value"]
        self.tombstones += values.null_count
        self._schema_ids(values, headers, vlen)
        # batches: a row whose batch base offset differs from the row before starts one
        bases = cols["batchBaseOffset"].to_numpy()
        starts = np.ones(n, dtype=bool)
        starts[1:] = bases[1:] != bases[:-1]
        if self._last_batch is not None and bases[0] == self._last_batch:
            starts[0] = False
        self._last_batch = int(bases[-1])
        first_rows = np.nonzero(starts)[0]
        bsize = cols["batchSize"].to_numpy()
        codec = cols["compression"].to_pylist()
        pid = cols["producerId"].to_numpy()
        for i in first_rows.tolist():
            size = int(bsize[i])
            self.batches += 1
            self.bytes += size
            self.batch_sizes.add(size)
            for group in (self.codecs.setdefault(codec[i], _Tally()), self.producers.setdefault(int(pid[i]), _Tally())):
                group.batches += 1
                group.bytes += size
        # records per codec and producer, by runs of equal values
        for name, table in (("compression", self.codecs), ("producerId", self.producers)):
            counts = pc.value_counts(cols[name])
            for item in counts.to_pylist():
                table.setdefault(item["values"], _Tally()).records += item["counts"]
        # keys: distinct, live (the latest record of each key, as compaction keeps it)
        keys = cols["key"].to_pylist()
        nulls = values.is_null().to_numpy(zero_copy_only=False)
        horizons = cols["deleteHorizonMs"].to_pylist()
        self.null_keys += cols["key"].null_count
        self.keys.add(keys, nulls, sizes, horizons)
        if self.num_partitions and self.partition is not None:
            from kafkarec._core import misplaced_keys
            self.misplaced_keys += misplaced_keys(cols["key"], self.num_partitions, self.partition)

    def _schema_ids(self, values, headers, vlen) -> None:
        """Writer ids of registry-framed values (Confluent's prefix or header id)."""
        from kafkarec.registry.wire import parse_ids
        writer = parse_ids(values, headers=headers).writer_ids
        if writer.null_count == len(writer):
            return
        for wid, length in zip(writer.to_pylist(), vlen.tolist()):
            if wid is not None:
                t = self.schema_ids.setdefault(wid, [0, 0])
                t[0] += 1
                t[1] += int(length)

    # --- the read_uncommitted pass ---------------------------------------------------------
    def add_uncommitted(self, rb) -> None:
        np = require("numpy")
        n = rb.num_rows
        if not n:
            return
        col = {name: rb.column(rb.schema.get_field_index(name)) for name in _UNCOMMITTED_COLUMNS}
        control = col["isControl"].to_numpy(zero_copy_only=False)
        self.all_records += n
        self.control_records += int(control.sum())
        bases = col["batchBaseOffset"].to_numpy()
        starts = np.ones(n, dtype=bool)
        starts[1:] = bases[1:] != bases[:-1]
        if self._last_all_batch is not None and bases[0] == self._last_all_batch:
            starts[0] = False
        self._last_all_batch = int(bases[-1])
        self.all_batches += int(starts.sum())
        self.all_bytes += int(col["batchSize"].to_numpy()[starts].sum())
        self.control_batches += int((starts & control).sum())
        transactional = col["isTransactional"].to_numpy(zero_copy_only=False)
        if self._stable is _UNASKED and transactional.any():
            # before a partition's first transactional batch no record can be past its last stable
            # offset (it is a transactional batch's first offset, or none)
            self._stable = self.stable_end_of() if self.stable_end_of is not None else None
        if self._stable is not _UNASKED and self._stable is not None:
            offsets = col["offset"].to_numpy()
            self.past_stable += int(((offsets >= self._stable) & ~control).sum())

    def last_stable_offset(self) -> Optional[int]:
        """The first offset from which a read_committed consumer waits (None: it reads to the end)."""
        return None if self._stable is _UNASKED else self._stable

    # --- results -------------------------------------------------------------------------
    def as_dict(self) -> dict:
        keys = self.keys.result(self.as_of_ms)
        data_records = self.all_records - self.control_records
        stable, past_stable = self.last_stable_offset(), self.past_stable
        out = {
            "topic": self.topic, "partition": self.partition,
            "records": self.records, "tombstones": self.tombstones, "null_keys": self.null_keys,
            "batches": self.batches, "bytes": self.bytes, "payload_bytes": self.payload_bytes,
            "first_offset": self.first_offset, "last_offset": self.last_offset,
            "min_timestamp": self.min_timestamp, "max_timestamp": self.max_timestamp,
            **keys,
            MERGE_KEYS: self.keys.keys_for_merge(self.merge_share),
            "codecs": {k: v.as_dict() for k, v in sorted(self.codecs.items())},
            "producers": {str(k): v.as_dict() for k, v in sorted(self.producers.items())},
            "header_keys": {k: {"records": r, "bytes": b} for k, (r, b) in sorted(self.header_keys.items())},
            "schema_ids": {str(k): {"records": r, "bytes": b} for k, (r, b) in sorted(self.schema_ids.items())},
            "dead_letters": self.dead_letters.as_dict() if self.dead_letters.records else None,
            "batch_size": self.batch_sizes.as_dict(), "record_size": self.record_sizes.as_dict(),
            "partitioner": None if self.num_partitions is None else {
                "name": "murmur2", "partitions": self.num_partitions, "misplaced_records": self.misplaced_keys,
                "agrees": self.misplaced_keys == 0},
            "read_uncommitted_adds": {
                "records": data_records - self.records,
                "aborted_records": data_records - self.records - past_stable,
                "records_past_last_stable_offset": past_stable,
                "last_stable_offset": stable,
                "batches": self.all_batches - self.control_batches - self.batches,
                "bytes": self.all_bytes - self.bytes,
                "control_records": self.control_records, "control_batches": self.control_batches},
            "errors": self.errors,
        }
        return out


class Census(dict):
    """The census as one JSON-able document: ``{"partitions": [...], "topics": [...],
    "as_of_ms": ..., "max_exact_keys": ...}`` (see :mod:`kafkarec.census`)."""

    @property
    def partitions(self) -> List[dict]:
        return self["partitions"]


#: A partition row's keys as the topic's distinct count merges them (KeyTally.keys_for_merge):
#: carried from a partition (a Spark task) to :func:`assemble`, which takes it out of the row.
MERGE_KEYS = "_keys_for_merge"


def _topic_rows(parts: List[dict]) -> List[dict]:
    """Each topic's row: its partitions' figures summed (counts, tallies by codec, producer,
    header key and schema id, the read_uncommitted additions), the time range's extremes and the
    size distributions merged; distinct keys merged as a union, not a sum."""
    out: Dict[str, dict] = {}
    merged: Dict[str, list] = {}
    histograms: Dict[str, Dict[str, Histogram]] = {}
    summed = ("records", "tombstones", "null_keys", "batches", "bytes", "payload_bytes")
    for p in parts:
        t = out.setdefault(p["topic"], {"topic": p["topic"], "partitions": 0, **{k: 0 for k in summed},
                                        "distinct_keys": 0, "live_keys": 0, "live_bytes": 0,
                                        "misplaced_records": 0, "errors": 0,
                                        "min_timestamp": None, "max_timestamp": None,
                                        "codecs": {}, "producers": {}, "header_keys": {}, "schema_ids": {},
                                        "dead_letters": None, "read_uncommitted_adds": {}})
        t["partitions"] += 1
        for k in summed:
            t[k] += p[k]
        merged.setdefault(p["topic"], []).append(p.pop(MERGE_KEYS))
        # what a compaction keeps is per partition: summed (None once any partition is unknown)
        for k in ("live_keys", "live_bytes"):
            t[k] = None if t[k] is None or p[k] is None else t[k] + p[k]
        if p["partitioner"] is not None:
            t["misplaced_records"] += p["partitioner"]["misplaced_records"]
        t["errors"] += len(p["errors"])
        if p.get("dead_letters"):
            t["dead_letters"] = merge_dead_letters(t["dead_letters"], p["dead_letters"])
        for k, pick in (("min_timestamp", min), ("max_timestamp", max)):
            if p[k] is not None:
                t[k] = p[k] if t[k] is None else pick(t[k], p[k])
        for k in ("codecs", "producers", "header_keys", "schema_ids"):
            for name, figures in p[k].items():
                _add_figures(t[k].setdefault(name, {}), figures)
        _add_figures(t["read_uncommitted_adds"],
                     {k: v for k, v in p["read_uncommitted_adds"].items() if k != "last_stable_offset"})
        for k in ("batch_size", "record_size"):
            h = Histogram.from_dict(p[k])
            if k in histograms.setdefault(p["topic"], {}):
                histograms[p["topic"]][k].merge(h)
            else:
                histograms[p["topic"]][k] = h
    for topic, hs in histograms.items():
        out[topic].update({k: h.as_dict() for k, h in hs.items()})
    for topic, keys in merged.items():
        t = out[topic]
        rows = [p for p in parts if p["topic"] == topic]
        if all(p["distinct_keys_exact"] and p["partitioner"] is not None and p["partitioner"]["agrees"]
               for p in rows):
            # every key where Kafka's default partitioner puts it: no key is in two partitions
            t["distinct_keys"] = sum(p["distinct_keys"] for p in rows)
            t["distinct_keys_exact"], t["distinct_keys_error"] = True, 0.0
        else:
            # a key in several partitions (a custom partitioner) counts once
            t["distinct_keys"], t["distinct_keys_exact"], t["distinct_keys_error"] = merged_distinct_keys(keys)
    return [out[k] for k in sorted(out, key=str)]


def _add_figures(into: dict, figures: dict) -> None:
    for k, v in figures.items():
        into[k] = into.get(k, 0) + v


class CensusPlan(NamedTuple):
    """A census planned (picklable: what a Spark census ships to its executors): the two views'
    configs (``read_committed`` with the records' columns: a damaged partition's read_committed
    rows are read apart; ``read_uncommitted`` with every column of the one pass, control records
    too), the pieces of each topic-partition in log order (``((topic, partition), committed pieces,
    pieces)``: the one pass reads the second, each byte once; the first say which batches a
    read_committed read skips), the partitioner's ``N`` per topic (empty: not checked),
    ``as_of_ms`` and ``max_exact_keys``."""
    committed: object
    everything: object
    groups: tuple
    counts: dict
    partitioner: bool
    as_of_ms: int
    max_exact_keys: int
    #: the one listing of each path the pass was planned over (each partition's walk kept in it:
    #: its last stable offset is read off it);
    #: left behind when the plan is pickled (an executor walks its own partition)
    listings: tuple = ()

    @property
    def total_bytes(self) -> int:
        """The bytes the one pass reads (what progress counts)."""
        return sum(p.bytes for _, _a, b in self.groups for p in b)

    def __reduce__(self):
        return (CensusPlan, tuple(self._replace(listings=())))


def plan_census(source, *, bounds=None, selection=None, storage_options: Optional[dict] = None,
                tiered_storage: Optional[str] = None, verify_crc: bool = True,
                max_exact_keys: int = DEFAULT_MAX_EXACT_KEYS, partitioner: bool = True,
                num_partitions: Optional[dict] = None, as_of_ms: Optional[int] = None) -> CensusPlan:
    """The :class:`CensusPlan` of :func:`census`'s keywords: listed once, no record read."""
    from kafkarec.errors import UsageError
    from kafkarec.scan.config import check_partition_counts
    if max_exact_keys < 0:
        raise UsageError(f"max_exact_keys {max_exact_keys}: not negative")
    check_partition_counts(num_partitions)       # find's rule: what the core's murmur2 takes
    config = base_config(source, bounds=bounds, selection=selection, storage_options=storage_options,
                         tiered_storage=tiered_storage, verify_crc=verify_crc)
    as_of = int(time.time() * 1000) if as_of_ms is None else int(as_of_ms)
    # listed once for the partition counts and each partition's walk (its verdict and last stable
    # offset); local paths' pieces are found as a local read finds them (memory-mapped, about 3x
    # faster than ranged reads of the same files), URIs' over this listing
    listed = census_listings(config)
    counts = dict(topic_partition_counts(config, listed)) if partitioner else {}
    if partitioner and num_partitions:
        counts.update(num_partitions)
    committed = open_scan(config, read_committed=True, columns=_COMMITTED_COLUMNS)
    # the one pass's columns: the read_committed figures' and what read_uncommitted adds
    everything = open_scan(config, read_committed=False, include_control=True,
                           columns=_COMMITTED_COLUMNS + tuple(c for c in _UNCOMMITTED_COLUMNS
                                                              if c not in _COMMITTED_COLUMNS))
    # each view's pieces planned here, once, over the one listing: the read_committed plan's say
    # which batches its read skips, the one pass reads the read_uncommitted plan's
    groups: Dict[tuple, tuple] = {}
    for i, scan in enumerate((committed, everything)):
        for piece in scan.pieces(listed=listed if config.listed else None):
            groups.setdefault((piece.topic, piece.partition), ([], []))[i].append(piece)
    order = sorted(groups, key=lambda k: (str(k[0]), k[1] if k[1] is not None else -1))
    return CensusPlan(committed.config, everything.config,
                      tuple((k, tuple(groups[k][0]), tuple(groups[k][1])) for k in order), counts,
                      partitioner, as_of, max_exact_keys, tuple(listed))


def partition_census(plan: CensusPlan, group, progress: Optional[Callable[[int], None]] = None,
                     what_if=None) -> dict:
    """One topic-partition's row of the census (``group``: one of ``plan.groups``): the unit of
    work a Spark census gives each task (a partition's keys are judged in log order, so a
    partition is never split).  ``progress(bytes)``: after each piece read; ``what_if``: a
    :class:`kafkarec.census.what_if.WhatIf` handed the rows a read_committed consumer sees (a
    damaged batch's error row too), in log order.

    One pass of the read_uncommitted view, control records too, each record decoded once: its
    rows are what read_uncommitted adds, and those that are no control record and of no batch the
    transaction rule leaves out (the spans the plan's read_committed pieces skip: the verdict a
    read_committed read of the plan skips by) are the read_committed figures.  That holds on a
    log read without an error: the two reads then frame the same batches and keep the same
    offsets (a read_committed read's offsets are a part of read_uncommitted's, so a batch whose
    offsets rise in one rise in the other).  A partition whose pass meets an error row -- damage:
    a batch going back past an aborted one's offsets, framing stopped short, a CRC -- has its
    read_committed rows read in a pass of their own, what that pass counted (and handed the
    what-if) taken back: fuzz_census finds a damaged log whose two reads part in ways no verdict
    names."""
    from kafkarec.scan import LogScan
    (topic, partition), committed, everything = group
    key = (topic, partition)
    n = plan.counts.get(topic) if plan.partitioner else None
    # every partition's share of the exact bound: the digests all partitions give stay within it
    share = plan.max_exact_keys // max(1, len(plan.groups))

    def fresh() -> PartitionCensus:
        part = PartitionCensus(topic, partition, max_exact_keys=plan.max_exact_keys, num_partitions=n,
                               merge_share=share, as_of_ms=plan.as_of_ms)
        part.stable_end_of = lambda: walks[0].committed_view().stable_end if walks else None
        return part
    walks = _walks(plan.everything, topic, partition, plan.listings)
    part = fresh()
    skips = _skipped(committed, everything)
    if skips is None:       # the two plans cut the partition otherwise: each read apart
        return _two_passes(plan, part, key, committed, everything, progress, what_if)
    mark = what_if.mark(key) if what_if is not None else None
    scan = LogScan(plan.everything)
    clean = True
    for piece, skipped in zip(everything, skips):
        for rb in scan.read_piece(piece):
            rows = _errors_out(rb, part, piece.file)
            clean = clean and not part.errors
            if rows is None:
                continue
            seen = _committed_view(rows, skipped) if clean else None
            if seen is not None:
                if what_if is not None:
                    what_if.add(key, seen)
                part.add_committed(seen)
            part.add_uncommitted(rows)
        if progress is not None:
            progress(piece.bytes)
    if clean:
        return part.as_dict()
    # damage: the read_committed rows read apart, and counted first (as two passes count them)
    if what_if is not None:
        what_if.rewind(key, mark)
    redo = fresh()
    _read_committed(plan, redo, key, committed, None, what_if)
    _take_uncommitted(redo, part)
    return redo.as_dict()


def _skipped(committed, everything) -> Optional[List[frozenset]]:
    """For each of ``everything`` (a partition's pieces of the read_uncommitted plan), the
    positions of the batches the read_committed plan's piece of the same bytes skips; None when
    the two plans cut the partition otherwise."""
    if [(p.file, p.bytes, p.key) for p in committed] != [(p.file, p.bytes, p.key) for p in everything]:
        return None
    return [frozenset(position for position, _ in p.skip) for p in committed]


def _committed_view(rb, skipped: frozenset):
    """The rows of ``rb`` (the one pass's) a read_committed read gives: no control record, none of
    a batch at ``skipped`` (the positions its piece leaves out)."""
    pc = require("pyarrow.compute")
    np = require("numpy")
    keep = pc.invert(pc.fill_null(rb.column(rb.schema.get_field_index("isControl")), False)).to_numpy(
        zero_copy_only=False)
    if skipped:
        positions = rb.column(rb.schema.get_field_index("batchPosition")).to_numpy(zero_copy_only=False)
        keep = keep & ~np.isin(positions, np.fromiter(skipped, dtype=np.int64, count=len(skipped)))
    if keep.all():
        return rb
    return rb.filter(require("pyarrow").array(keep)) if keep.any() else None


def _take_uncommitted(into: PartitionCensus, part: PartitionCensus) -> None:
    """``part``'s read_uncommitted figures (the one pass's) into ``into`` (its read_committed
    figures read apart), its errors after ``into``'s, each batch once."""
    for name in ("all_records", "all_batches", "all_bytes", "control_records", "control_batches",
                 "_stable", "past_stable", "_last_all_batch"):
        setattr(into, name, getattr(part, name))
    seen = {(e["file"], e["position"]) for e in into.errors}
    for e in part.errors:
        if (e["file"], e["position"]) not in seen:
            seen.add((e["file"], e["position"]))
            into.errors.append(e)


def _walks(config, topic, partition, listings=()) -> list:
    """The partition's walks (:class:`kafkarec.scan.PartitionWalk`; several where several log dirs
    hold it) over the plan's ``listings``, or, without them (an executor's plan), over a listing of
    this partition made here."""
    import dataclasses

    from kafkarec.scan import Bounds, LogScan
    if listings:        # looked up in each listing (a partition among thousands), not walked through
        return [w for one in listings for w in one.walks({(topic, partition)}).values()]
    this = Bounds.of(topics=None if topic is None else [topic], partitions=None if partition is None else [partition])
    one = dataclasses.replace(config, bounds=config.bounds.intersect(this))
    return [walk for walk in LogScan(one).partition_walks() if walk.key == (topic, partition)]


def _read_committed(plan: CensusPlan, part: "PartitionCensus", key, committed, progress, what_if) -> None:
    """The read_committed rows (``committed``: the plan's pieces of the partition) read in a pass
    of their own, counted in ``part`` and handed to ``what_if``."""
    from kafkarec.scan import LogScan
    scan = LogScan(plan.committed)
    for piece in committed:
        for rb in scan.read_piece(piece):
            if what_if is not None:
                what_if.add(key, rb)
            rb = _errors_out(rb, part, piece.file)
            if rb is not None:
                part.add_committed(rb)
        if progress is not None:
            progress(piece.bytes)


def _two_passes(plan: CensusPlan, part: "PartitionCensus", key, committed, everything, progress,
                what_if) -> dict:
    """The read_committed rows read in a pass of their own, then the read_uncommitted pass
    (``everything``): a partition the two plans cut otherwise."""
    from kafkarec.scan import LogScan
    _read_committed(plan, part, key, committed, None, what_if)
    scan = LogScan(plan.everything)
    for piece in everything:
        for rb in scan.read_piece(piece):
            rb = _errors_out(rb, part, piece.file)
            if rb is not None:
                part.add_uncommitted(rb)
        if progress is not None:
            progress(piece.bytes)
    return part.as_dict()


def assemble(plan: CensusPlan, rows: List[dict]) -> Census:
    """The census document of the partitions' rows (in any order): sorted, with the topics'
    rows summed from them."""
    rows = sorted(rows, key=lambda r: (str(r["topic"]), r["partition"] if r["partition"] is not None else -1))
    return Census(partitions=rows, topics=_topic_rows(rows), as_of_ms=plan.as_of_ms,
                  max_exact_keys=plan.max_exact_keys)


def census(source, *, bounds=None, selection=None, storage_options: Optional[dict] = None,
           tiered_storage: Optional[str] = None, verify_crc: bool = True,
           max_exact_keys: int = DEFAULT_MAX_EXACT_KEYS, partitioner: bool = True,
           num_partitions: Optional[dict] = None, as_of_ms: Optional[int] = None,
           progress: Optional[Callable[[int, int], None]] = None, what_if=None) -> Census:
    """The census of the logs at ``source`` (see :mod:`kafkarec.census`).

    ``bounds`` (:class:`kafkarec.scan.Bounds`) and ``selection`` (the Kafka source's
    options) bound the read as for :class:`kafkarec.scan.LogScan`; ``max_exact_keys``: the
    memory bound of the exact key count per partition; ``partitioner``: check that keys
    sit where Kafka's default partitioner puts them, among ``num_partitions[topic]``
    partitions (default: as many as the listing holds); ``as_of_ms``: the time at which
    tombstones' delete horizons are judged (default now); ``progress(done, total)``: bytes
    of pieces read so far; ``what_if``: a :class:`kafkarec.census.what_if.WhatIf` handed the
    committed records as they are read (the compression what-if in the same pass: its
    :meth:`~kafkarec.census.what_if.WhatIf.result` once this returns).  :func:`spark_udfs.census`
    is the same over Spark, a task per topic-partition."""
    plan = plan_census(source, bounds=bounds, selection=selection, storage_options=storage_options,
                       tiered_storage=tiered_storage, verify_crc=verify_crc, max_exact_keys=max_exact_keys,
                       partitioner=partitioner, num_partitions=num_partitions, as_of_ms=as_of_ms)
    total, done = plan.total_bytes, [0]

    def advanced(n: int) -> None:
        done[0] += n
        progress(done[0], total)
    return assemble(plan, [partition_census(plan, g, advanced if progress is not None else None, what_if)
                           for g in plan.groups])


def _errors_out(rb, part: PartitionCensus, file: str):
    """The rows of ``rb`` (read from the segment ``file``) that are records; its error rows (a
    damaged batch: PERMISSIVE's ``_corrupt_record``) counted in ``part.errors``, once per batch,
    a batch being its file and position (both passes meet damage outside aborted transactions;
    the read_uncommitted pass alone meets it inside; every segment's first batch is at 0)."""
    pc = require("pyarrow.compute")
    corrupt = rb.column(rb.schema.get_field_index("_corrupt_record"))
    if corrupt.null_count < len(corrupt):
        bad = pc.is_valid(corrupt)
        seen = {(e["file"], e["position"]) for e in part.errors}
        for row in rb.filter(bad).select(["batchPosition", "batchBaseOffset", "_corrupt_record"]).to_pylist():
            if (file, row["batchPosition"]) not in seen:
                seen.add((file, row["batchPosition"]))
                part.errors.append({"file": file, "position": row["batchPosition"],
                             "base_offset": row["batchBaseOffset"], "message": row["_corrupt_record"]})
        rb = rb.filter(pc.invert(bad))
    return rb if rb.num_rows else None
