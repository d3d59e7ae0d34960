"""What a running broker says of its partitions' offsets, where one is reachable (``bootstrap``).

A log directory's log start offsets come from ``log-start-offset-checkpoint``, which a running
broker rewrites every ``log.flush.start.offset.checkpoint.interval.ms`` (60 s by default): for
that long after ``deleteRecords`` (or a retention pass) the file still names the old start, and
the segments still hold the records below the new one, which no consumer is given.  The broker
itself knows: Kafka's ListOffsets request, asked through a maintained client (confluent-kafka's
``AdminClient.list_offsets``, librdkafka), answers per partition

* ``EARLIEST``: the log start offset a consumer's ``earliest`` is;
* ``LATEST`` with ``read_committed`` isolation: the last stable offset, bounded by the high
  watermark (what a ``read_committed`` consumer can read up to; above it a record may not be
  replicated yet).

The hand-off (:mod:`kafkarec.lakehouse.handoff`) takes the larger start and the smaller end of
the log's and the broker's.
"""
from __future__ import annotations

from typing import Dict, Iterable, NamedTuple, Tuple

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
    (``host:port,...``), two ListOffsets requests in all, each bounded by ``timeout`` seconds.  A
    broker that does not answer, or answers a partition with an error (an unknown topic: another
    cluster's log), is a :class:`~kafkarec.errors.BrokerError` naming it."""
    keys = sorted(set(partitions))
    if not keys:
        return {}
    ck = require("confluent_kafka", extra="lakehouse")
    admin_mod = require("confluent_kafka.admin", extra="lakehouse")
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap, "log_level": 0,
                                   "socket.timeout.ms": int(timeout * 1000)})
    answers = {}
    for name, label, spec in (("earliest", "EARLIEST", admin_mod.OffsetSpec.earliest()),
                              ("stable", "LATEST (read_committed)", admin_mod.OffsetSpec.latest())):
        try:
            futures = admin.list_offsets({ck.TopicPartition(t, p): spec for t, p in keys},
                                         isolation_level=ck.IsolationLevel.READ_COMMITTED, request_timeout=timeout)
        except (ck.KafkaException, ValueError, TypeError) as exc:
            raise BrokerError(bootstrap, f"ListOffsets {label}: {_reason(exc)}") from None
        for tp, future in futures.items():
            key = (tp.topic, tp.partition)
            try:
                offset = future.result(timeout=timeout + 5).offset
            except Exception as exc:     # KafkaException, or the future's own TimeoutError
                raise BrokerError(bootstrap, f"ListOffsets {label} of {key[0]}-{key[1]}: {_reason(exc)}",
                                  topic=key[0], partition=key[1]) from None
            answers.setdefault(key, {})[name] = offset
    return {k: LiveOffsets(v["earliest"], v["stable"]) for k, v in answers.items()}


def _reason(exc: BaseException) -> str:
    err = exc.args[0] if exc.args else None
    text = err.str() if hasattr(err, "str") else str(exc)
    return text or type(exc).__name__
