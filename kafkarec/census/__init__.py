"""Know a topic without a broker: its census, a compression what-if, and a search.

* :func:`census` - per topic-partition, in ``read_committed`` terms (what a consumer with
  that isolation level returns from the log start, or the bounds' start, to the last stable
  offset or the bounds' end) and with what ``read_uncommitted`` adds: records, batches, bytes,
  the time range, tombstones, null keys, distinct keys (exact within ``max_exact_keys``, then
  HyperLogLog), live keys and live bytes after a compaction (:mod:`kafkarec.census.keys`:
  Kafka's cleaner's rule, tombstones' delete horizons), bytes and records by codec, producer
  id, header key and schema id (registry framing), batch- and record-size distributions,
  and whether keys sit where Kafka's default partitioner puts them.  Damaged batches are
  counted in each partition's ``errors``.
* :func:`what_if` - the committed records re-batched as the Java producer batches them and
  written with each codec and level (:mod:`kafkarec.census.what_if`).
* :func:`find` - the records matching a key, value bytes, a pattern, a header
  (:mod:`kafkarec.census.find`).

All three read through :class:`kafkarec.scan.LogScan`, with its bounds, isolation levels,
storage and tiered options (:mod:`kafkarec.census._scan` makes every scan).

    >>> from kafkarec.census import census
    >>> doc = census("/var/lib/kafka/data", bounds=Bounds.of(topics=["orders"]))   # doctest: +SKIP
    >>> doc["partitions"][0]["live_keys"]                                           # doctest: +SKIP
"""
from __future__ import annotations

from kafkarec.census.counts import DEFAULT_MAX_EXACT_KEYS, Census, census
from kafkarec.census.find import find, render_bytes
from kafkarec.census.what_if import DEFAULT_BATCH_SIZE, Codec, parse_codecs, what_if

__all__ = ["census", "Census", "DEFAULT_MAX_EXACT_KEYS", "find", "render_bytes", "what_if", "parse_codecs",
           "Codec", "DEFAULT_BATCH_SIZE"]
