"""A running Kafka cluster through confluent-kafka (librdkafka in its wheels): the one home of what
every room that asks a broker shares -- the restore's target (:mod:`kafkarec.restore.target`) and
the lakehouse's live offsets (:mod:`kafkarec.lakehouse.broker`).

* :func:`reason`: librdkafka's error text of a client failure;
* :func:`retriable`: the one rule of which Kafka failures pass when tried again, :func:`must_abort`
  for a transaction that can only be aborted, :func:`backoff` Kafka's clients' backoff and
  :func:`retried` the one retry loop every request goes through;
* :func:`admin`: one admin client per configuration, shared by every request of the process;
* :func:`result`: a client future's answer, bounded;
* :func:`list_offsets`: Kafka's ListOffsets, the one client of it.

Each caller's failures are its own errors: a ``fail(text, retriable=..., topic=..., partition=...,
group=...)`` it passes makes them (a :class:`kafkarec.errors.RestoreError` naming the target, a
:class:`kafkarec.errors.BrokerError` naming the cluster), whose ``retriable`` says whether
:func:`retried` tries again.
"""
from __future__ import annotations

import concurrent.futures
import random
import threading
import time
from typing import Callable, Dict, Iterable, Tuple, TypeVar

from kafkarec._extras import require
from kafkarec.errors import KafkaRecError

__all__ = ["reason", "retriable", "must_abort", "backoff", "pause", "clock", "retried", "failure", "admin",
           "result", "list_offsets", "kafka_error", "RETRY_BACKOFF_S", "RETRY_BACKOFF_MAX_S"]

#: what makes a caller's error: ``fail(text, retriable=False, **where)`` (where: topic, partition, group)
Fail = Callable[..., KafkaRecError]


def reason(exc: BaseException) -> str:
    """librdkafka's error text of a client exception (or of its ``KafkaError``)."""
    err = exc if hasattr(exc, "str") else (exc.args[0] if getattr(exc, "args", None) else None)
    text = err.str() if hasattr(err, "str") else str(exc)
    return text or type(exc).__name__


# Kafka's errors whose exceptions are RetriableException in kafka-clients 4.4.0
# (org.apache.kafka.common.errors: its subclasses, the InvalidMetadataException branch included -- a
# coordinator loading or moving, a topic's metadata or leader not there yet, as just after its
# creation, a request timed out or its connection lost, not enough replicas, a fetch or share session
# lost, offsets pending or not yet available, a quota throttled, leaders not electable yet;
# CorruptRecordException is librdkafka's INVALID_MSG), CONCURRENT_TRANSACTIONS among them, and
# librdkafka's own for a broker or coordinator not reached in time.  The client's KafkaError.retriable()
# is set for its transactional API's errors only: an admin future's or a delivery report's error
# carries its code alone.
_RETRIABLE_CODES = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
                    "UNKNOWN_TOPIC_OR_PART", "LEADER_NOT_AVAILABLE", "NOT_LEADER_FOR_PARTITION",
                    "PREFERRED_LEADER_NOT_AVAILABLE", "REPLICA_NOT_AVAILABLE", "LISTENER_NOT_FOUND",
                    "UNKNOWN_TOPIC_ID", "INCONSISTENT_TOPIC_ID", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
                    "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "KAFKA_STORAGE_ERROR",
                    "NOT_CONTROLLER", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE",
                    "UNSTABLE_OFFSET_COMMIT", "CONCURRENT_TRANSACTIONS", "THROTTLING_QUOTA_EXCEEDED",
                    "FETCH_SESSION_ID_NOT_FOUND", "INVALID_FETCH_SESSION_EPOCH", "SHARE_SESSION_NOT_FOUND",
                    "INVALID_SHARE_SESSION_EPOCH", "SHARE_SESSION_LIMIT_REACHED", "ELECTION_NOT_NEEDED",
                    "ELIGIBLE_LEADERS_NOT_AVAILABLE", "INVALID_MSG",
                    "_TRANSPORT", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "_MSG_TIMED_OUT", "_ALL_BROKERS_DOWN",
                    "_WAIT_COORD")

#: Kafka's clients' backoff between tries of a request that failed with a retriable error: 100 ms
#: (retry.backoff.ms), doubled each try up to 1 s (retry.backoff.max.ms), each pause drawn within 20%
#: of that (KIP-580), so that clients failing together do not try again together
RETRY_BACKOFF_S, RETRY_BACKOFF_MAX_S, _RETRY_JITTER = 0.1, 1.0, 0.2


def kafka_error(exc: BaseException):
    """The ``KafkaError`` of a client failure (None: not a Kafka error, a future's timeout)."""
    ck = require("confluent_kafka")
    err = exc.args[0] if isinstance(exc, ck.KafkaException) and exc.args else exc
    return err if isinstance(err, ck.KafkaError) else None


def retriable(exc: BaseException) -> bool:
    """Whether a client failure (a ``KafkaException``, a ``KafkaError``, a future's timeout) may pass
    when the same request is tried again: what :attr:`kafkarec.errors.KafkaRecError.retriable` of the
    errors made of it says.  A fatal error (a fenced producer) never does.  One of a transaction that
    must be aborted first (:func:`must_abort`) passes only once it is: :func:`retried` does not try its
    call again, the writer aborts and redoes the transaction (kafkarec/restore/produce.py)."""
    # a future not answered in time: concurrent.futures' own TimeoutError before Python 3.11
    if isinstance(exc, (TimeoutError, concurrent.futures.TimeoutError)):
        return True
    ck = require("confluent_kafka")
    err = kafka_error(exc)
    if err is None or err.fatal():
        return False
    return bool(err.retriable()) or err.code() in {getattr(ck.KafkaError, n) for n in _RETRIABLE_CODES
                                                     if hasattr(ck.KafkaError, n)}


def must_abort(exc: BaseException) -> bool:
    """Whether a transactional call's failure leaves a transaction that can only be aborted
    (librdkafka's ``txn_requires_abort``: a delivery failed, the coordinator aborted it)."""
    err = kafka_error(exc)
    return err is not None and bool(err.txn_requires_abort()) and not err.fatal()


def backoff(tries: int) -> float:
    """Seconds to wait after the ``tries``-th failed try (1, 2, ...): Kafka's exponential backoff."""
    base = RETRY_BACKOFF_S * 2 ** min(max(tries - 1, 0), 16)
    return min(base * random.uniform(1 - _RETRY_JITTER, 1 + _RETRY_JITTER), RETRY_BACKOFF_MAX_S)


#: how a retry waits and tells the time (a test's fake clock replaces both)
pause, clock = time.sleep, time.monotonic

#: the least time a try is given, even past the deadline (the first try of a call made late)
_MIN_TRY_S = 0.1

T = TypeVar("T")


def failure(fail: Fail, what: str, exc: BaseException, **where) -> KafkaRecError:
    """A client failure as the caller's error (``fail``'s): what was asked, librdkafka's reason,
    whether it is :func:`retriable`; ``where``: topic, partition, group."""
    return fail(f"{what}: {reason(exc)}", retriable=retriable(exc), **where)


def retried(what: str, call: Callable[[float], T], *, timeout: float, fail: Fail,
            own: type = KafkaRecError, **where) -> T:
    """``call(seconds left)``'s answer: one request (issued and awaited by ``call``, which bounds its
    waits by the seconds it is given), tried again after each retriable failure (:func:`retriable`;
    a kafkarec error by its ``retriable``) with :func:`backoff`'s pauses while ``timeout`` seconds
    from the first try allow; then, or at once for any other failure, the failure as ``fail``'s
    error saying ``what`` was asked and ``where`` (topic, partition, group), as Kafka's clients give
    up after ``default.api.timeout.ms``.  ``own``: the class of ``fail``'s errors, the kafkarec
    errors ``call`` raises that are tried again when retriable (any other passes through)."""
    ck = require("confluent_kafka")
    start = clock()
    deadline = start + timeout
    tries = 0
    while True:
        tries += 1
        try:
            return call(max(deadline - clock(), _MIN_TRY_S))
        except own as exc:
            if not exc.retriable:
                raise
            last = exc
        except (ck.KafkaException, TimeoutError, concurrent.futures.TimeoutError) as exc:
            last = failure(fail, what, exc, **where)
            if not last.retriable or must_abort(exc):
                raise last from None
        wait = backoff(tries)
        if clock() + wait > deadline:
            if tries > 1:
                at = {k: getattr(last, k, None) for k in ("topic", "partition", "group")}
                last = fail(f"{last.reason} (tried {tries} times in {clock() - start:.1f} s)", retriable=True,
                            **{k: v for k, v in at.items() if v is not None})
            raise last from None
        pause(wait)


#: the admin client of the last configuration asked for, shared by every request of the process
_ADMIN: Dict[str, object] = {}
_ADMIN_LOCK = threading.Lock()


def admin(config: dict, fail: Fail):
    """The admin client of ``config``: one for every request (a new client connects and learns the
    cluster's metadata before its first answer: 20 restores of one record into new topics took 22 s
    with a client per request, 7 s with one shared); the process keeps the last configuration's
    only.  A configuration the client refuses is ``fail``'s error."""
    ck = require("confluent_kafka")
    key = repr(sorted(config.items()))
    with _ADMIN_LOCK:
        if key not in _ADMIN:
            try:
                made = require("confluent_kafka.admin").AdminClient(config)
            except (ck.KafkaException, ValueError, TypeError) as exc:
                raise fail(f"the admin client's configuration: {reason(exc)}") from None
            _ADMIN.clear()
            _ADMIN[key] = made
        return _ADMIN[key]


def result(future, what: str, *, timeout: float, fail: Fail, **where):
    """A client future's answer within ``timeout`` seconds and 5 s more (for the client's own bound
    to answer first); its failure ``fail``'s error saying what was asked (retriable or not:
    :func:`retried` decides whether to ask again)."""
    try:
        return future.result(timeout=timeout + 5)
    except Exception as exc:     # KafkaException, or the future's own TimeoutError
        raise failure(fail, what, exc, **where) from None


def list_offsets(asker, keys: Iterable[Tuple[str, int]], which: str = "latest", *, committed: bool = True,
                 timeout: float, fail: Fail, own: type = KafkaRecError, what: str = "",
                 name_partitions: bool = False) -> Dict[Tuple[str, int], int]:
    """``{(topic, partition): offset}`` of ``keys`` from the admin client ``asker``: Kafka's
    ListOffsets ``which`` (``"latest"``, ``"earliest"``), ``committed``: under read_committed (the
    last stable offset for ``latest``, bounded by the high watermark); asked again while a
    partition's answer fails retriably (a leader not there yet, as just after the topic's creation),
    within ``timeout`` seconds (``own``: :func:`retried`'s).  ``what``: how ``fail``'s errors name
    the request (default ``ListOffsets <WHICH>``); ``name_partitions``: a partition's failure says
    ``<what> of <topic>-<partition>`` (for errors whose text names no partition of their own)."""
    ck = require("confluent_kafka")
    admin_mod = require("confluent_kafka.admin")
    keys = sorted(set(keys))
    if not keys:
        return {}
    offset_spec = getattr(admin_mod.OffsetSpec, which)()
    isolation = ck.IsolationLevel.READ_COMMITTED if committed else ck.IsolationLevel.READ_UNCOMMITTED
    what = what or f"ListOffsets {which.upper()}"
    out: Dict[Tuple[str, int], int] = {}

    def once(left: float) -> Dict[Tuple[str, int], int]:
        todo = [k for k in keys if k not in out]
        try:
            futures = asker.list_offsets({ck.TopicPartition(t, p): offset_spec for t, p in todo},
                                         isolation_level=isolation, request_timeout=left)
        except (ValueError, TypeError) as exc:      # refused before it is sent: asking again cannot pass
            raise fail(f"{what}: {reason(exc)}") from None
        failed = None
        for tp, future in sorted(futures.items(), key=lambda x: (x[0].topic, x[0].partition)):
            asked = f"{what} of {tp.topic}-{tp.partition}" if name_partitions else what
            try:
                out[(tp.topic, tp.partition)] = result(future, asked, timeout=left, fail=fail, topic=tp.topic,
                                                       partition=tp.partition).offset
            except own as exc:     # the others kept: only the failed are asked again
                failed = failed or exc
        if failed is not None:
            raise failed
        return out
    return retried(what, once, timeout=timeout, fail=fail, own=own)
