"""Arrow filters: the rows of a decoded batch inside an offset (or timestamp) range, what a
reader keeps of a range's pieces (:func:`filter_offsets`)."""
from __future__ import annotations

from typing import Optional

from kafkarec._extras import require

__all__ = ["filter_offsets", "filter_range"]


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
    return rb.filter(mask)
