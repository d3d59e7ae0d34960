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

import base64
from typing import Any, Iterable, List, Optional, Tuple

from kafkarec._extras import require
from kafkarec.errors import MissingExtraError

__all__ = ["KeyTally", "HLL_LG_K", "merged_distinct_keys"]

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
        return int.from_bytes(self._digester().digest(key)[:8], "little", signed=True)

    def _digester(self) -> Any:
        if self._map is None:
            from kafkarec._core import KEY_MAP_MIN_BYTES, KeyOffsetMap
            self._map = KeyOffsetMap(KEY_MAP_MIN_BYTES)      # for its digest only (seed 0: the
        return self._map                                     # same on every executor)

    def _overflow(self) -> None:
        ds = require("datasketches")
        self.hll = ds.hll_sketch(HLL_LG_K)
        for k in self.latest or ():
            self.hll.update(self._digest(k))
        self.latest = None

    def keys_for_merge(self, share: int) -> dict:
        """What a topic's distinct count needs of this partition, as JSON-able text: the 16-byte
        digests of its keys while exact and at most ``share`` (``{"digests": base64}``; the census
        gives each partition an equal share of ``max_exact_keys``, so that all partitions' digests
        together stay within it, wherever they are gathered), else its HyperLogLog sketch
        (``{"hll": base64}``)."""
        if self.latest is not None and len(self.latest) <= share:
            digest = self._digester().digest
            return {"digests": base64.b64encode(b"".join(digest(k) for k in self.latest)).decode()}
        if self.hll is None:
            try:
                ds = require("datasketches")
            except MissingExtraError:
                # an exact partition where datasketches is not installed (a Spark executor with
                # kafkarec's base dependencies): its keys do not join the topic's union
                return {"unknown": "datasketches is not installed where this partition was read"}
            sketch = ds.hll_sketch(HLL_LG_K)
            for k in self.latest or ():
                sketch.update(self._digest(k))
            return {"hll": base64.b64encode(sketch.serialize_compact()).decode()}
        return {"hll": base64.b64encode(self.hll.serialize_compact()).decode()}

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


def merged_distinct_keys(parts: Iterable[dict]) -> Tuple[Optional[int], bool, Optional[float]]:
    """Distinct keys of a topic from its partitions' :meth:`KeyTally.keys_for_merge` texts:
    ``(count, exact, relative error)``.  A key written to several partitions (a custom
    partitioner, explicit partitions) counts once.  Exact when every partition gave its digests:
    their union (two keys colliding in 128 bits: below 2^-60 for a billion keys); otherwise
    DataSketches' union of the partitions' sketches, the digests given added to it, with the
    sketch's error at 2 standard deviations.  Unknown (``None``) when a partition could make
    neither (no datasketches where it was read)."""
    np = require("numpy")
    parts = list(parts)
    if any("unknown" in p for p in parts):
        return None, False, None
    if all("digests" in p for p in parts):
        arrays: List[Any] = [np.frombuffer(base64.b64decode(p["digests"]), dtype="<u8").reshape(-1, 2)
                             for p in parts]
        if not arrays:
            return 0, True, 0.0
        joined = np.concatenate(arrays)
        return int(len(np.unique(joined, axis=0))), True, 0.0
    ds = require("datasketches")
    union = ds.hll_union(HLL_LG_K)
    for p in parts:
        if "hll" in p:
            union.update(ds.hll_sketch.deserialize(base64.b64decode(p["hll"])))
        else:
            sketch = ds.hll_sketch(HLL_LG_K)
            words = np.frombuffer(base64.b64decode(p["digests"]), dtype="<i8").reshape(-1, 2)
            for first in words[:, 0].tolist():      # the same 64 bits KeyTally._digest feeds
                sketch.update(first)
            union.update(sketch)
    err = abs(ds.hll_sketch.get_rel_err(True, False, HLL_LG_K, 2))
    return round(union.get_result().get_estimate()), False, err
