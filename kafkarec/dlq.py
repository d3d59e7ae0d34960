"""Share groups' dead letters (KIP-1191, Kafka 4.4, ``share.version=2``): which source record a
dead-letter queue's record stands for, and why it was given up.

A share group with ``errors.deadletterqueue.topic.name`` set (a topic whose name starts with the
brokers' ``errors.deadletterqueue.topic.name.prefix``, ``dlq.`` by default, and whose topic config
``errors.deadletterqueue.group.enable`` is true) has the broker write one record to that topic for
each record the group archives: rejected by a consumer, or whose delivery count reached the
group's limit.  The record names its source in headers, UTF-8 text each, as Kafka 4.4.0's
``org.apache.kafka.server.share.dlq.ShareGroupDLQStateManager.ProduceRequestHandler.headers``
writes them (the header names are its ``HEADER_DLQ_ERRORS_*`` constants):

==============================  ======================================================
``__dlq.errors.topic``          the source topic's name (its topic id where the broker
                                did not know the name)
``__dlq.errors.partition``      the source partition, ``Integer.toString``
``__dlq.errors.offset``         the source record's offset, ``Long.toString``
``__dlq.errors.group``          the share group
``__dlq.errors.delivery.count`` its delivery count then, ``Short.toString`` (when known)
``__dlq.errors.message``        why: ``Offset rejected by client.`` or ``Offset delivery
                                count exceeded the threshold.``
                                (``ShareGroupDLQManager``'s two causes; when known)
==============================  ======================================================

The record's key and value are the source record's own only with the group config
``errors.deadletterqueue.copy.record.enable=true``; otherwise both are null.

:func:`dead_letter` reads these headers into a :class:`DeadLetter`; :class:`DeadLetterTally`
counts a partition's dead letters per share group and source partition (``kafkarec census``).
A restore translates the source offset through its offset map
(:mod:`kafkarec.restore.deadletters`) and keeps the one written on the source in
:data:`ORIGINAL_OFFSET`.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

__all__ = ["DeadLetter", "DeadLetterTally", "dead_letter", "HEADER_TOPIC", "HEADER_PARTITION", "HEADER_OFFSET",
           "HEADER_GROUP", "HEADER_DELIVERY_COUNT", "HEADER_MESSAGE", "ORIGINAL_OFFSET", "ORIGINAL_TOPIC",
           "REJECTED", "DELIVERY_COUNT_EXCEEDED", "DLQ_ENABLE_CONFIG"]

HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_MESSAGE = "__dlq.errors.message"
#: the headers every dead letter carries (the other two only when the broker knew them)
REQUIRED = (HEADER_TOPIC, HEADER_PARTITION, HEADER_OFFSET, HEADER_GROUP)

#: the two causes Kafka 4.4.0 writes (``ShareGroupDLQManager.CLIENT_REJECT`` and
#: ``DELIVERY_COUNT_EXCEEDED``), by the short names kafkarec reports them under
REJECTED = "rejected"
DELIVERY_COUNT_EXCEEDED = "delivery count exceeded"
_CAUSES = {b"Offset rejected by client.": REJECTED,
           b"Offset delivery count exceeded the threshold.": DELIVERY_COUNT_EXCEEDED}

#: the topic config that makes a topic usable as a share group's DLQ (``TopicConfig``)
DLQ_ENABLE_CONFIG = "errors.deadletterqueue.group.enable"

#: kafkarec's own headers on a restored dead letter: the source offset (and, where the restore
#: renamed the topic, the topic) as the source cluster's broker wrote them (not in ``__dlq.``,
#: which is Kafka's)
ORIGINAL_OFFSET = "kafkarec.restore.original.offset"
ORIGINAL_TOPIC = "kafkarec.restore.original.topic"

# Java's Integer/Long/Short.toString: an optional minus and decimal digits, no leading zero
_DECIMAL = re.compile(rb"-?(?:0|[1-9][0-9]*)")
# (-1: a restored dead letter whose source record is not on the target: restore/deadletters.py)
_RANGES = {HEADER_PARTITION: (0, (1 << 31) - 1), HEADER_OFFSET: (-1, (1 << 63) - 1),
           HEADER_DELIVERY_COUNT: (0, (1 << 15) - 1)}


class DeadLetter(NamedTuple):
    """A dead letter's provenance (see the module docstring).  ``reason``: Kafka's text,
    ``cause``: :data:`REJECTED`, :data:`DELIVERY_COUNT_EXCEEDED`, ``"other"`` (another text) or
    None (no message header); ``original_offset`` (and ``original_topic`` where the restore renamed
    the topic): the source offset as written on the source cluster, on a record a restore
    translated (else None); ``error``: why a header is not what
    Kafka writes (its field is then None), else None."""
    group: str
    topic: str
    partition: Optional[int]
    offset: Optional[int]
    delivery_count: Optional[int]
    reason: Optional[str]
    cause: Optional[str]
    original_offset: Optional[int] = None
    original_topic: Optional[str] = None
    error: Optional[str] = None

    def as_dict(self) -> dict:
        return dict(self._asdict())


def _text(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else bytes(value).decode("utf-8", "replace")


def _number(name: str, value: Optional[bytes], errors: List[str]) -> Optional[int]:
    lo, hi = _RANGES.get(name, (-(1 << 63), (1 << 63) - 1))
    if value is not None and len(value) <= 20 and _DECIMAL.fullmatch(bytes(value)):
        n = int(value)
        if lo <= n <= hi:
            return n
    shown = "null" if value is None else repr(bytes(value)[:40])
    errors.append(f"header {name} is {shown}, not a decimal number from {lo} to {hi}")
    return None


def dead_letter(headers: Iterable[Tuple[str, Optional[bytes]]]) -> Optional[DeadLetter]:
    """The record's dead-letter fields, from its headers (``[(key, value)]``): None for a record
    without the four headers every dead letter carries.  A header Kafka would not have written
    (a number that is not one, a null) leaves its field None and says why in ``error``; a header
    given twice counts by its first value (Kafka writes each once)."""
    found: Dict[str, Optional[bytes]] = {}
    for k, v in headers:
        if k.startswith("__dlq.errors.") or k in (ORIGINAL_OFFSET, ORIGINAL_TOPIC):
            found.setdefault(k, v)
    if not all(k in found for k in REQUIRED):
        return None
    errors: List[str] = []
    partition = _number(HEADER_PARTITION, found[HEADER_PARTITION], errors)
    offset = _number(HEADER_OFFSET, found[HEADER_OFFSET], errors)
    count = _number(HEADER_DELIVERY_COUNT, found[HEADER_DELIVERY_COUNT], errors) \
        if HEADER_DELIVERY_COUNT in found else None
    original = _number(HEADER_OFFSET, found[ORIGINAL_OFFSET], errors) if ORIGINAL_OFFSET in found else None
    message = found.get(HEADER_MESSAGE)
    cause = None if message is None else _CAUSES.get(bytes(message), "other")
    return DeadLetter(_text(found[HEADER_GROUP]) or "", _text(found[HEADER_TOPIC]) or "", partition, offset, count,
                      _text(message), cause, original, _text(found.get(ORIGINAL_TOPIC)), "; ".join(errors) or None)


#: source offsets kept per share group and source partition for the census (then only counted)
MAX_OFFSETS = 10_000


class DeadLetterTally:
    """A DLQ partition's dead letters counted per share group and source partition: records,
    the distinct source offsets that failed (kept up to :data:`MAX_OFFSETS` each), how often
    (records per delivery count) and why (records per cause).  Bounded by the number of share
    groups and source partitions the records name."""

    def __init__(self) -> None:
        self.records = 0
        self.errors = 0
        self._by: Dict[Tuple[str, str, Optional[int]], dict] = {}

    def add(self, letter: DeadLetter) -> None:
        self.records += 1
        if letter.error is not None:
            self.errors += 1
        t = self._by.setdefault((letter.group, letter.topic, letter.partition),
                                {"records": 0, "offsets": set(), "more_offsets": False, "delivery_counts": {},
                                 "causes": {}})
        t["records"] += 1
        if letter.offset is not None:
            if letter.offset in t["offsets"] or len(t["offsets"]) < MAX_OFFSETS:
                t["offsets"].add(letter.offset)
            else:
                t["more_offsets"] = True
        count = "unknown" if letter.delivery_count is None else str(letter.delivery_count)
        t["delivery_counts"][count] = t["delivery_counts"].get(count, 0) + 1
        cause = letter.cause or "unknown"
        t["causes"][cause] = t["causes"].get(cause, 0) + 1

    def add_headers(self, keys: Sequence[str], values: Sequence[Optional[bytes]], parents: Sequence[int]) -> None:
        """The dead letters among flattened headers (``parents``: each header's row, ascending)."""
        row: List[Tuple[str, Optional[bytes]]] = []
        last = None
        for k, v, p in zip(keys, values, parents):
            if p != last:
                self._take(row)
                row, last = [], p
            row.append((k, v))
        self._take(row)

    def _take(self, row) -> None:
        if row:
            letter = dead_letter(row)
            if letter is not None:
                self.add(letter)

    def as_dict(self) -> dict:
        """``{"records", "errors", "sources": [{"group", "topic", "partition", "records",
        "offsets": distinct source offsets, "offset_runs": them as runs ("3,7-9"; null past
        MAX_OFFSETS), "delivery_counts": {count: records}, "causes": {cause: records}}]}``."""
        from kafkarec.runs import ranges
        sources = []
        for (group, topic, partition), t in sorted(self._by.items(), key=lambda x: (x[0][0], x[0][1], x[0][2] or -1)):
            sources.append({"group": group, "topic": topic, "partition": partition, "records": t["records"],
                            "offsets": len(t["offsets"]) if not t["more_offsets"] else None,
                            "offset_runs": None if t["more_offsets"] else ranges(sorted(t["offsets"])),
                            "delivery_counts": dict(sorted(t["delivery_counts"].items())),
                            "causes": dict(sorted(t["causes"].items()))})
        return {"records": self.records, "errors": self.errors, "sources": sources}


def merge(into: Optional[dict], other: dict) -> dict:
    """Two :meth:`DeadLetterTally.as_dict` summed (a topic's partitions): per source the records,
    delivery counts and causes summed; distinct offsets summed where known (each DLQ partition
    holds its own records, so a source offset in two of them counts twice)."""
    if into is None:
        into = {"records": 0, "errors": 0, "sources": []}
    into["records"] += other["records"]
    into["errors"] += other["errors"]
    by = {(s["group"], s["topic"], s["partition"]): s for s in into["sources"]}
    for s in other["sources"]:
        key = (s["group"], s["topic"], s["partition"])
        if key not in by:
            by[key] = {**s, "delivery_counts": dict(s["delivery_counts"]), "causes": dict(s["causes"])}
            into["sources"].append(by[key])
            continue
        t = by[key]
        t["records"] += s["records"]
        t["offsets"] = None if t["offsets"] is None or s["offsets"] is None else t["offsets"] + s["offsets"]
        t["offset_runs"] = None
        for k in ("delivery_counts", "causes"):
            for name, n in s[k].items():
                t[k][name] = t[k].get(name, 0) + n
    into["sources"].sort(key=lambda s: (s["group"], s["topic"], s["partition"] or -1))
    return into
