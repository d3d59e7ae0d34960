"""Arrow filters: the rows of a decoded batch inside an offset (or timestamp) range, what a
reader keeps of a range's pieces (:func:`filter_offsets`)."""
from __future__ import annotations

from typing import Optional

from kafkarec._extras import require

__all__ = ["filter_offsets", "filter_range", "filter_rows"]


def filter_offsets(rb, lo: Optional[int], hi: Optional[int]):
    """The rows of an Arrow batch with ``lo <= offset < hi`` (the batch itself if all are)."""
    return filter_range(rb, "offset", lo, hi)


def filter_range(rb, column: str, lo: Optional[int], hi: Optional[int]):
    """The rows of an Arrow batch with ``lo <= column < hi`` (the batch itself if all are); a
    timestamp column compares as its milliseconds."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    if rb.num_rows == 0 or (lo is None and hi is None):
        return rb
    off = rb.column(rb.schema.get_field_index(column))
    if pa.types.is_timestamp(off.type):
        off = off.cast(pa.int64())
    mn, mx = pc.min_max(off).values()
    if (lo is None or mn.as_py() >= lo) and (hi is None or mx.as_py() < hi):
        return rb
    mask = None
    if lo is not None:
        mask = pc.greater_equal(off, lo)
    if hi is not None:
        m2 = pc.less(off, hi)
        mask = m2 if mask is None else pc.and_(mask, m2)
    return filter_rows(rb, mask)


def filter_rows(rb, mask):
    """``rb.filter(mask)`` (a boolean array, null as false), also of a batch whose ``key`` and
    ``value`` are ``binary_view`` (the view layout), which pyarrow's filter has no kernel for: such
    a column's 16-byte views are filtered as a ``fixed_size_binary(16)`` array over its views
    buffer, and the array rebuilt over the same data buffers (the bytes are not copied)."""
    pa = require("pyarrow")
    if not any(f.type == pa.binary_view() for f in rb.schema):
        return rb.filter(mask)
    cols = [_filter_views(c, mask) if c.type == pa.binary_view() else c.filter(mask) for c in rb.columns]
    return pa.RecordBatch.from_arrays(cols, schema=rb.schema)


def _filter_views(col, mask):
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    buffers = col.buffers()
    views = pa.Array.from_buffers(pa.binary(16), len(col), [None, buffers[1]], offset=col.offset).filter(mask)
    validity = None
    if col.null_count:
        valid = pc.is_valid(col).filter(mask)
        validity = valid.buffers()[1] if valid.offset == 0 else pa.concat_arrays([valid]).buffers()[1]
    kept = views.buffers()[1]
    if views.offset:
        kept = kept.slice(views.offset * 16)
    out = pa.Array.from_buffers(pa.binary_view(), len(views), [validity, kept] + buffers[2:])
    return out
