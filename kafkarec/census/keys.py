"""Keys of one partition: distinct keys, and what compaction keeps of them.

Exact while a partition has at most ``max_exact_keys`` distinct keys: a dict from each key
(its bytes, compared as Kafka's cleaner compares them) to its latest record's facts.  Past
that bound the dict is dropped and distinct keys are counted by HyperLogLog (Apache
DataSketches' ``hll_sketch``, ``lg_k`` :data:`HLL_LG_K`: relative standard error about
1.04/sqrt(2^14) = 0.8%; the bound reported is DataSketches' at 2 standard deviations), and
live keys are no longer known (reported as null).

Compaction as Kafka's ``LogCleaner`` applies it, up to the last stable offset (the
``read_committed`` view the census reads: aborted records are what the cleaner removes
too): the latest record of each key is kept; a key whose latest record is a tombstone is
not live, and the tombstone itself is kept while its batch's delete horizon
(``deleteHorizonMs``, set when the cleaner first cleaned the batch: that time plus
``delete.retention.ms``) has not passed; a batch not cleaned yet has no horizon and its
tombstones are kept (the cleaner would set one now).
"""
from __future__ import annotations

from typing import Any, Optional

from kafkarec._extras import require

__all__ = ["KeyTally", "HLL_LG_K"]

HLL_LG_K = 14


class KeyTally:
    """Distinct and live keys of one partition's records, in offset order (see the module doc)."""

    def __init__(self, max_exact_keys: int):
        self.max_exact_keys = max_exact_keys
        self.latest: Optional[dict] = {}        # key -> (is_tombstone, size, delete_horizon_ms)
        self.hll: Any = None                   # a datasketches.hll_sketch past the bound
        self._map: Any = None

    def add(self, keys, tombstones, sizes, horizons) -> None:
        """One run of records: keys (bytes or None), tombstone flags, payload sizes, the
        delete horizon of each record's batch (None: none set)."""
        latest = self.latest
        if latest is not None:
            for k, t, s, h in zip(keys, tombstones.tolist(), sizes.tolist(), horizons):
                if k is not None:
                    latest[k] = (t, s, h)
            if len(latest) > self.max_exact_keys:
                self._overflow()
            return
        update, digest = self.hll.update, self._digest
        for k in keys:
            if k is not None:
                update(digest(k))

    def _digest(self, key: bytes) -> int:
        """The sketch takes numbers and text, not bytes: the key's 64-bit digest (the core's
        keyed-state digest, its first 8 bytes) as a signed int, hashed again by the sketch."""
        return int.from_bytes(self._map.digest(key)[:8], "little", signed=True)

    def _overflow(self) -> None:
        from kafkarec._core import KEY_MAP_MIN_BYTES, KeyOffsetMap
        ds = require("datasketches")
        self.hll = ds.hll_sketch(HLL_LG_K)
        self._map = KeyOffsetMap(KEY_MAP_MIN_BYTES)      # for its digest only
        for k in self.latest or ():
            self.hll.update(self._digest(k))
        self.latest = None

    def result(self, as_of_ms: int) -> dict:
        if self.latest is not None:
            live = [s for t, s, _ in self.latest.values() if not t]
            kept_tombstones = sum(1 for t, _, h in self.latest.values() if t and (h is None or h > as_of_ms))
            return {"distinct_keys": len(self.latest), "distinct_keys_exact": True, "distinct_keys_error": 0.0,
                    "live_keys": len(live), "live_bytes": sum(live), "retained_tombstones": kept_tombstones}
        ds = require("datasketches")
        err = abs(ds.hll_sketch.get_rel_err(True, False, HLL_LG_K, 2))
        return {"distinct_keys": round(self.hll.get_estimate()), "distinct_keys_exact": False,
                "distinct_keys_error": err, "live_keys": None, "live_bytes": None, "retained_tombstones": None}
