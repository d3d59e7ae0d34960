"""Counts of sizes in logarithmic buckets: ``kafkarec stats``'s and the census's distributions."""
from __future__ import annotations

from typing import Optional

__all__ = ["Histogram"]


def _extreme(fn, mine: Optional[int], other: Optional[int]) -> Optional[int]:
    """``fn(mine, other)`` (min or max), where None means nothing seen yet."""
    if other is None:
        return mine
    return other if mine is None else fn(mine, other)


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

    def add_many(self, values) -> None:
        """Every value of ``values`` (a numpy integer array, each below 2^53) as :meth:`add` would
        add them one by one: buckets computed over the array, not per value in Python."""
        from kafkarec._extras import require
        np = require("numpy")
        v = np.asarray(values, dtype=np.int64)
        if not len(v):
            return
        positive = np.maximum(v, 1)
        e = np.frexp(positive.astype(np.float64))[1].astype(np.int64) - 1      # bit_length - 1
        shifted = np.maximum(e, 2)
        frac = ((positive - (np.int64(1) << shifted)) * self.SUB) >> shifted
        buckets = np.where(v <= 0, 0, np.where(e < 2, v, 4 + (e - 2) * self.SUB + frac))
        found, counts = np.unique(buckets, return_counts=True)
        for b, c in zip(found.tolist(), counts.tolist()):
            self.buckets[b] = self.buckets.get(b, 0) + c
        self.n += len(v)
        self.total += int(v.sum())
        lo, hi = int(v.min()), int(v.max())
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)

    def merge(self, other: "Histogram") -> None:
        for b, c in other.buckets.items():
            self.buckets[b] = self.buckets.get(b, 0) + c
        self.n += other.n
        self.total += other.total
        self.min = _extreme(min, self.min, other.min)
        self.max = _extreme(max, self.max, other.max)

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

    @classmethod
    def from_dict(cls, d: dict) -> "Histogram":
        """The histogram :meth:`as_dict` gave (its buckets, count, sum and extremes)."""
        h = cls()
        for lo, _, c in d["buckets"]:
            b = cls.bucket_of(lo)
            h.buckets[b] = h.buckets.get(b, 0) + c
        h.n, h.total, h.min, h.max = d["count"], d["sum"], d["min"], d["max"]
        return h

    def as_dict(self) -> dict:
        return {"count": self.n, "sum": self.total, "min": self.min, "max": self.max,
                "mean": (self.total / self.n) if self.n else None,
                "p50": self.percentile(0.5), "p90": self.percentile(0.9), "p99": self.percentile(0.99),
                "buckets": [[*self.bucket_range(b), c] for b, c in sorted(self.buckets.items())]}
