"""``kafkarec stats``: what a log directory holds, per segment, partition and topic.

Batches, records, bytes, codecs and their compression ratios (which need
each compressed batch decompressed; ``--headers-only`` skips that),
producers, transactional and control share, timestamp range, and batch size
and records-per-batch distributions kept in logarithmic :class:`Histogram`
buckets, so memory stays bounded however large the log.  ``--plot`` draws
the distributions with matplotlib.  :class:`Progress` is the progress bar
``stats`` and ``verify`` draw on a terminal.
"""
from __future__ import annotations

import os
from typing import List, Optional, TextIO

import kafkarec
from kafkarec.log import layout as _layout
from kafkarec.histogram import Histogram
from kafkarec.cli.common import (read_options, EXIT_OK, EXIT_PROBLEMS, Progress, codec_name, error_line, human, jdump,
                                 ts_name)
from kafkarec.enums import Compression
from kafkarec.errors import DecodeError, KafkaRecError
from kafkarec.times import time_text
from kafkarec.log.directory import PartitionDir, TopicPartition
from kafkarec.log.segment import SkippedBatch

__all__ = ["Stats", "Histogram", "Progress", "human", "plot", "plot_unavailable", "run"]


# --- counters and their formatting ---------------------------------------------

def _extreme(fn, mine: Optional[int], other: Optional[int]) -> Optional[int]:
    """``fn(mine, other)`` (min or max), where None means nothing seen yet."""
    if other is None:
        return mine
    return other if mine is None else fn(mine, other)


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

    def add_checked(self, fb, where: str, err_list: List[str], *, ratio: bool,
                    count_selected: bool = False) -> None:
        """Count a framed batch; one that cannot be read is bad (as verify and
        Kafka's consumer judge it: a CRC mismatch included), none of its records count."""
        try:
            if fb.batch.options.verify_crc:      # --no-verify-crc reads a corrupt batch as it is
                fb.batch.ensure_valid()
            self.add(fb, ratio=ratio, count=sum(1 for _ in fb) if count_selected else None)
        except (DecodeError, KafkaRecError) as e:
            self.bad += 1
            self.batches += 1
            self.bytes += fb.size_in_bytes
            err_list.append(error_line(where, e, fb.position))

    def add(self, fb, *, ratio: bool, count: Optional[int] = None) -> None:
        b = fb.batch
        size = fb.size_in_bytes
        codec = codec_name(b)
        magic = fb.magic
        legacy = magic < 2
        compressed = b.compression != Compression.NONE
        # Stored payload: the records section as the core frames it (after the v2 header,
        # or a legacy message's value; a length that overruns the message makes the batch bad).
        stored = len(b.payload())
        if count is not None:
            # The selected records of the batch are counted by the caller; the
            # ratio stays the whole batch's.
            raw = kafkarec.scan_records(b)[1] if ratio and compressed else stored
        elif ratio or (compressed and legacy):
            # The core reads every record (as verify --deep does) and says how
            # many there are and how large the records section is uncompressed;
            # a legacy wrapper must be opened even to count its records.
            count, raw = kafkarec.scan_records(b)
        else:
            count, raw = b.record_count, stored
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
        # Per batch, so inline rather than _extreme.
        if lo is not None and lo >= 0:
            self.min_ts = lo if self.min_ts is None else min(self.min_ts, lo)
        if hi >= 0:
            self.max_ts = hi if self.max_ts is None else max(self.max_ts, hi)
        first = b.base_offset     # Kafka's baseOffset(), for every magic (the core's rule)
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
            setattr(self, attr, _extreme(fn, getattr(self, attr), getattr(o, attr)))
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
        if not self.sizes.n:
            # every batch was unreadable (a bad CRC, a wrapper that cannot be opened...):
            # nothing to describe but their number, which the error lines explain
            return [f"{indent}no readable batches ({self.bad} unreadable)"]
        out = []
        parts = []
        for name, (nb, nr, stored, raw) in sorted(self.codecs.items(), key=lambda kv: -kv[1][2]):
            s = f"{name} {nb} batches {human(stored)}"
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
            out.append(f"{indent}timestamps: {time_text(self.min_ts if self.min_ts is not None else self.max_ts)}"
                       f" .. {time_text(self.max_ts)} ({kinds})")
        s = self.sizes
        out.append(f"{indent}batch size: min {human(s.min)}, p50 ~{human(s.percentile(.5))}, "
                   f"p90 ~{human(s.percentile(.9))}, p99 ~{human(s.percentile(.99))}, "
                   f"max {human(s.max)}, mean {human(s.total / s.n)}")
        p = self.per_batch
        out.append(f"{indent}records per batch: min {p.min}, p50 ~{p.percentile(.5)}, "
                   f"p90 ~{p.percentile(.9)}, max {p.max}, mean {p.total / p.n:.1f}")
        return out


def _segment_stats(path: str, ratio: bool, progress: Progress, base: int, err_list: List[str],
                   options: kafkarec.ReadOptions) -> Stats:
    """One segment's counters, the file walked by the reader's file door
    (:class:`kafkarec.scan.FileWalk`); unreadable batches are counted and described in ``err_list``."""
    from kafkarec.scan import FileWalk
    st = Stats()
    st.segments = 1
    with FileWalk(path, options) as walk:
        st.file_bytes = walk.size
        for item in walk:
            if isinstance(item, SkippedBatch):
                st.bad += 1
                err_list.append(error_line(path, item.error))
                continue
            st.add_checked(item, path, err_list, ratio=ratio)
            progress.update(base + walk.position)
        st.trailing_bytes = walk.trailing_bytes
    return st


def _range_stats(rp, ratio: bool, err_list: List[str], options: kafkarec.ReadOptions) -> Stats:
    """A selected segment range's counters (URIs or --topics/--start-offset/...)."""
    from kafkarec.cli.ranges import iter_range_batches
    out = Stats()
    out.segments = 1
    sr = rp.range
    uri = _layout.segment_uri(rp.storage, sr.segment)
    for fb in iter_range_batches(rp, options):
        if isinstance(fb, SkippedBatch):
            out.bad += 1
            err_list.append(error_line(uri, fb.error))
            break
        # Selected records only (an offset bound): counted by reading them.
        bounded = sr.min_offset is not None or sr.end_offset is not None
        out.add_checked(fb, uri, err_list, ratio=ratio, count_selected=bounded)
    out.file_bytes = out.bytes
    return out


def run_ranges(plans: list, args, out: TextIO, err: TextIO) -> int:
    """``kafkarec stats`` over URIs or with a selection: one row per selected segment range."""
    ratio = not args.headers_only
    errors: List[str] = []
    parts: dict = {}
    for rp in plans:
        st, sr = rp.storage, rp.range
        key = (sr.topic, sr.partition)
        try:
            row = _range_stats(rp, ratio, errors, read_options(args))
        except OSError as e:
            errors.append(f"{_layout.segment_uri(st, sr.segment)}: {e.strerror or e}")
            continue
        part, rows = parts.setdefault(key, (Stats(), []))
        part.merge(row)
        rows.append((_layout.segment_uri(st, sr.segment), row))
    report = []
    topics: dict = {}
    total = Stats()
    for (topic, partition), (part, rows) in parts.items():
        tp = TopicPartition(topic, partition) if topic is not None else None
        pdir = PartitionDir(f"{topic}-{partition}", tp, [], [], [], None, None, [])
        report.append((pdir, part, rows))
        name = topic if topic is not None else pdir.name
        topics.setdefault(name, [Stats(), 0])
        topics[name][0].merge(part)
        topics[name][1] += 1
        total.merge(part)
    (_write_json if args.json else _write_text)(out, report, topics, total, ratio)
    for e in errors:
        err.write(e + "\n")
    return EXIT_PROBLEMS if errors else EXIT_OK


# --- --plot ----------------------------------------------------------------------

def plot_unavailable() -> Optional[str]:
    """Why ``--plot`` cannot draw here, or None if it can."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "--plot needs matplotlib, which is not installed (pip install matplotlib)"
    return None


def plot(path: str, total: Stats, ratio: bool) -> None:
    """Draw the batch size and records-per-batch histograms and the bytes per codec into ``path``."""
    import matplotlib
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


# --- the command ------------------------------------------------------------------------

def run(pdirs: List[PartitionDir], args, out: TextIO, err: TextIO) -> int:
    """``kafkarec stats``: scan every segment, then write the report (and ``--plot``)."""
    ratio = not args.headers_only
    progress = Progress(sum(p.log_bytes() for p in pdirs), err, enabled=not args.no_progress,
                        label="scanning")
    report = []
    errors: List[str] = []
    done = 0
    try:
        for pdir in pdirs:
            part = Stats()
            rows = []
            for path in [s.log for s in pdir.segments if s.log] + list(pdir.kraft_snapshots):
                try:
                    st = _segment_stats(path, ratio, progress, done, errors, read_options(args))
                except OSError as e:
                    errors.append(f"{path}: {e.strerror or e}")
                    continue
                done += st.file_bytes
                part.merge(st)
                rows.append((path, st))
            report.append((pdir, part, rows))
    finally:
        progress.close()
    total = Stats()
    topics = {}
    for pdir, part, _ in report:
        topic = pdir.topic_partition.topic if pdir.topic_partition else pdir.name
        topics.setdefault(topic, [Stats(), 0])
        topics[topic][0].merge(part)
        topics[topic][1] += 1
        total.merge(part)
    (_write_json if args.json else _write_text)(out, report, topics, total, ratio)
    for e in errors:
        err.write(e + "\n")
    if args.plot:
        plot(args.plot, total, ratio)
        err.write(f"wrote {args.plot}\n")
    return EXIT_PROBLEMS if errors else EXIT_OK


def _write_json(out: TextIO, report: list, topics: dict, total: Stats, ratio: bool) -> None:
    for pdir, part, rows in report:
        tp = pdir.topic_partition
        out.write(jdump({"type": "partition", "path": pdir.path,
                         "topic": tp.topic if tp else None, "partition": tp.partition if tp else None,
                         "stats": part.as_dict(ratio),
                         "segments": [{"file": p, **s.as_dict(ratio)} for p, s in rows]}) + "\n")
    for topic, (st, n) in sorted(topics.items()):
        out.write(jdump({"type": "topic", "topic": topic, "partitions": n, "stats": st.as_dict(ratio)}) + "\n")
    out.write(jdump({"type": "total", "partitions": len(report), "stats": total.as_dict(ratio)}) + "\n")


def _write_text(out: TextIO, report: list, topics: dict, total: Stats, ratio: bool) -> None:
    lines = []
    for pdir, part, rows in report:
        lines.append(f"{pdir.name}  ({pdir.path})")
        lines.append(f"  {'segment':<34} {'batches':>9} {'records':>11} {'bytes':>11}  offsets")
        for p, s in rows:
            rng = f"{s.first_offset}..{s.last_offset}" if s.first_offset is not None else "-"
            extra = f"  ({s.bad} unreadable)" if s.bad else ""
            extra += f"  ({s.trailing_bytes} trailing bytes)" if s.trailing_bytes else ""
            lines.append(f"  {os.path.basename(p):<34} {s.batches:>9} {s.records:>11} "
                         f"{human(s.file_bytes):>11}  {rng}{extra}")
        lines.append(f"  {'total':<34} {part.batches:>9} {part.records:>11} {human(part.file_bytes):>11}")
        lines.extend(part.text(ratio, "    "))
    for topic, (st, n) in sorted(topics.items()):
        lines.append(f"topic {topic}: {n} partition(s), {st.segments} segment(s), {st.batches} batches, "
                     f"{st.records} records, {human(st.file_bytes)}")
    if len(topics) > 1:
        lines.append(f"all: {len(report)} partition(s), {total.segments} segment(s), {total.batches} "
                     f"batches, {total.records} records, {human(total.file_bytes)}")
        lines.extend(total.text(ratio, "    "))
    out.write("\n".join(lines) + "\n")
