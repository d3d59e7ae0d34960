"""What a running broker says of its partitions' offsets, where one is reachable (``bootstrap``).

A log directory's log start offsets come from ``log-start-offset-checkpoint``, which a running
broker rewrites every ``log.flush.start.offset.checkpoint.interval.ms`` (60 s by default): for
that long after ``deleteRecords`` (or a retention pass) the file still names the old start, and
the segments still hold the records below the new one, which no consumer is given.  The broker
itself knows: Kafka's ListOffsets request, asked through a maintained client (confluent-kafka's
``AdminClient.list_offsets``, librdkafka; :mod:`kafkarec._client`, the restore's client too:
retriable errors asked again, one admin client shared), answers per partition

* ``EARLIEST``: the log start offset a consumer's ``earliest`` is;
* ``LATEST`` with ``read_committed`` isolation: the last stable offset, bounded by the high
  watermark (what a ``read_committed`` consumer can read up to; above it a record may not be
  replicated yet).

The hand-off (:mod:`kafkarec.lakehouse.handoff`) takes the larger start and the smaller end of
the log's and the broker's.
"""
from __future__ import annotations

from typing import Dict, Iterable, NamedTuple, Tuple

from kafkarec import _client
from kafkarec._extras import require
from kafkarec.errors import BrokerError

__all__ = ["LiveOffsets", "list_offsets", "CHECKPOINT_LAG"]

#: what the commands say on stderr when no broker is asked (docs/lakehouse.md says the same)
CHECKPOINT_LAG = ("the log start offsets are read from log-start-offset-checkpoint, which a running broker "
                  "rewrites every log.flush.start.offset.checkpoint.interval.ms (60 s by default): on a live "
                  "broker they can lag a deleteRecords or a retention pass by that long (--bootstrap asks the "
                  "broker)")


class LiveOffsets(NamedTuple):
    """A partition's offsets as its leader answers ListOffsets: ``earliest`` (the log start
    offset) and ``stable`` (``LATEST`` under ``read_committed``: the last stable offset)."""
    earliest: int
    stable: int


def list_offsets(bootstrap: str, partitions: Iterable[Tuple[str, int]], *,
                 timeout: float = 30.0) -> Dict[Tuple[str, int], LiveOffsets]:
    """``{(topic, partition): LiveOffsets}`` of ``partitions`` from the cluster at ``bootstrap``
    (``host:port,...``): two ListOffsets requests through :func:`kafkarec._client.list_offsets` (the
    one client of it: Kafka's retriable errors asked again with Kafka's backoff), each bounded by
    ``timeout`` seconds.  A broker that does not answer, or answers a partition with an error (an
    unknown topic: another cluster's log), is a :class:`~kafkarec.errors.BrokerError` naming it."""
    keys = sorted(set(partitions))
    if not keys:
        return {}
    require("confluent_kafka", extra="lakehouse")

    def fail(text: str, *, retriable: bool = False, topic=None, partition=None, group=None) -> BrokerError:
        return BrokerError(bootstrap, text, topic=topic, partition=partition, retriable=retriable)
    asker = _client.admin({"bootstrap.servers": bootstrap, "log_level": 0,
                           "socket.timeout.ms": int(timeout * 1000)}, fail)
    earliest, stable = (_client.list_offsets(asker, keys, which, timeout=timeout, fail=fail, own=BrokerError,
                                             what=f"ListOffsets {label}", name_partitions=True)
                        for which, label in (("earliest", "EARLIEST"), ("latest", "LATEST (read_committed)")))
    return {k: LiveOffsets(earliest[k], stable[k]) for k in keys}
