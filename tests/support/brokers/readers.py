"""kafkarec's reading of a broker's log dir as rows comparable with :func:`produce.consume`."""
import kafkarec
from kafkarec.log import committed, layout
from kafkarec.log.segment import file_options
from kafkarec.log.selection import Resolver
from kafkarec.log.storage import Piece, open_storage, without_spans


def kafkarec_rows(log_dir, topics, read_committed, *, include_deleted_records=False):
    """Rows of ``topics`` in kafkarec's reading of ``log_dir``: the log layer's partitions
    and segments, each segment's bytes decoded by the core with Kafka's file framing, from
    the partition's log start offset (:meth:`kafkarec.log.selection.Resolver.log_start`) on,
    or every record of the files with ``include_deleted_records``; read_committed leaves out
    the spans :func:`kafkarec.log.committed.read_committed_spans` judges over the partition's
    whole log.  Same tuple shape as :func:`produce.consume`."""
    storage, root = open_storage(log_dir)
    lay = layout.scan(storage, root)
    resolver = Resolver(storage)
    options = file_options(None)
    rows = []
    for part in lay.partitions:
        if part.topic not in topics:
            continue
        start = None if include_deleted_records else resolver.log_start(part)
        skip = committed.read_committed_spans(storage, part) if read_committed else {}
        for seg in part.segments:
            with open(seg.path, "rb") as fh:
                data = fh.read()
            for piece in without_spans(Piece(0, memoryview(data)), skip.get(seg.path, [])):
                t = kafkarec.to_arrow(piece.data, options, topic=part.topic, partition=part.partition,
                                      origin=piece.position)
                rows += [r for r in arrow_rows(t) if start is None or r[2] >= start]
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return rows


def arrow_rows(t):
    """A table's rows in :func:`produce.consume`'s tuple shape."""
    cols = t.to_pydict()
    out = []
    for i in range(t.num_rows):
        ts = cols["timestamp"][i]
        ms = ts if isinstance(ts, int) else round(ts.timestamp() * 1000)
        headers = tuple((h["key"], h["value"]) for h in (cols["headers"][i] or []))
        out.append((cols["topic"][i], cols["partition"][i], cols["offset"][i], cols["key"][i],
                    cols["value"][i], headers, cols["timestampType"][i], ms))
    return out


def scan_rows(source, columns=("offset", "key", "value", "timestamp"), **keywords):
    """``{topic: [row dicts of columns]}``, in log order, of the one reader
    (:class:`kafkarec.scan.LogScan`) over ``source`` with its ``keywords`` (``selection``,
    ``storage_options``, ``tiered_storage`` ...)."""
    from kafkarec.scan import LogScan
    rows = {}
    for rb in LogScan(source, columns=["topic", *columns], threads=1, **keywords):
        for row in rb.to_pylist():
            rows.setdefault(row.pop("topic"), []).append(row)
    return rows


def range_rows(st, sr, columns=("offset", "key", "value", "timestamp")):
    """The rows (dicts of ``columns``) of one planned range
    (:class:`kafkarec.log.selection.SegmentRange` of the storage ``st``): its pieces decoded by
    the core, its offset bounds applied -- the log layer's planning and ranged reads, for tests of
    ranges and storages made by hand (tiered objects, damaged copies, split ranges); the one
    reader's rows are :func:`scan_rows`."""
    from kafkarec.log import selection
    rows = []
    for piece in selection.iter_range_pieces(st, sr):
        for rb in kafkarec.iter_arrow(piece.data, topic=sr.topic, partition=sr.partition, origin=piece.position):
            rows += selection.filter_offsets(rb, sr.min_offset, sr.end_offset).select(list(columns)).to_pylist()
    return rows


def planned_rows(st, sel=None, root=None, lay=None, columns=("offset", "key", "value", "timestamp")):
    """``{topic: [row dicts of columns]}`` of a layout (``lay``, or ``root`` of the storage ``st``
    listed) planned with ``sel`` (default: the whole log), each range read by :func:`range_rows`."""
    from kafkarec.log import selection
    lay = layout.scan(st, root) if lay is None else lay
    rows = {}
    for sr in selection.plan(lay, sel or selection.parse_selection({}), Resolver(st)):
        rows.setdefault(sr.topic, []).extend(range_rows(st, sr, columns))
    return rows
