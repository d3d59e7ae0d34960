"""The selection's typed spec (:class:`Selection`, :class:`OffsetSpec`) and its parsing: the options
of Spark's Kafka source (:func:`parse_selection`) and the command line's flags (:func:`cli_selection`).

Options (same names and meaning as ``spark.read.format("kafka")``; start
inclusive, end exclusive; case-insensitive):

==============================  ==============================================================
``topics``                      comma-separated topic names (Kafka source: ``subscribe``/``assign``)
``topicPattern``                a regular expression a whole topic name must match
                                (``subscribePattern``)
``startingOffsets``             ``earliest`` (default), ``latest``, or JSON
                                ``{"orders":{"0":23,"1":-2}}`` (-2 earliest, -1 latest)
``endingOffsets``               ``latest`` (default), or JSON (-1 latest); batch reads only
``startingTimestamp``           ms since the epoch, for every partition
``endingTimestamp``             ms since the epoch, for every partition
``startingOffsetsByTimestamp``  JSON ``{"orders":{"0":1700000000000}}``
``endingOffsetsByTimestamp``    JSON, as above
``startingOffsetsByTimestampStrategy``  ``error`` (default) or ``latest``: what a starting
                                timestamp that no record reaches means
``includeDeletedRecords``       ``true``: read from each partition's first segment, records
                                below its log start offset too (forensics; default ``false``)
==============================  ==============================================================

Precedence as in Spark: ``*Timestamp`` over ``*OffsetsByTimestamp`` over
``*Offsets``.  A timestamp selects, per partition, the earliest offset whose
record timestamp is at or after it (Kafka's ``offsetsForTimes``, resolved by
:mod:`kafkarec.log.selection.resolver`); every record from that offset on is selected,
whatever its own timestamp.  An ending timestamp that no record reaches means ``latest``.
Where Spark needs every partition of a topic named in an offsets JSON, so do we (for the
topics the JSON names); topics it does not name use the default.
"""
from __future__ import annotations

import datetime
import re
from typing import Any, Dict, NamedTuple, Optional

from kafkarec._option_text import option_json, shown, text_bool, text_whole
from kafkarec.errors import SelectionError

__all__ = ["EARLIEST", "LATEST", "OffsetSpec", "Selection", "SelectionError", "parse_selection",
           "SELECTION_OPTIONS", "parse_time", "cli_selection", "json_offsets"]

EARLIEST = -2
LATEST = -1
# the range of the Long that Spark's Kafka source reads an offsets JSON's numbers into
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1

SELECTION_OPTIONS = ("topics", "topicpattern", "assign", "startingoffsets", "endingoffsets",
                     "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp",
                     "endingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy",
                     "includedeletedrecords")


class OffsetSpec(NamedTuple):
    kind: str            # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps" | "offset"
    value: Any = None     # {topic: {partition: int}}, or one int (a timestamp, an offset)


class Selection(NamedTuple):
    topics: Optional[frozenset]
    pattern: Optional[str]
    start: OffsetSpec
    end: OffsetSpec
    no_match_strategy: str = "error"
    # ``assign``: {topic: frozenset of partitions}; None: every partition of the topics
    assigned: Optional[Dict[str, frozenset]] = None
    include_deleted_records: bool = False     # start at the first segment, not the log start
    # ``--partition``: these partition numbers, in every selected topic; None: every partition
    partitions: Optional[frozenset] = None

    def wants_topic(self, topic: Optional[str]) -> bool:
        if topic is None:
            return self.topics is None and self.pattern is None
        if self.topics is not None and topic not in self.topics:
            return False
        return self.pattern is None or re.fullmatch(self.pattern, topic) is not None

    def wants_partition(self, topic: Optional[str], partition: Optional[int]) -> bool:
        if not self.wants_topic(topic):
            return False
        if self.partitions is not None and partition not in self.partitions:
            return False
        return self.assigned is None or partition in self.assigned.get(topic, ())


def json_offsets(text: str, what: str) -> Dict[str, Dict[int, int]]:
    """``{"topic":{"partition":number}}`` of ``what`` ("option startingOffsets"), numbers as Spark
    reads them into a Long."""
    raw = option_json(what, text, '{"topic":{"0":23}}', SelectionError)
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise SelectionError(f"{what}: expected {{\"topic\":{{\"partition\":number}}}}, got {text!r}")
    out: Dict[str, Dict[int, int]] = {}
    for topic, parts in raw.items():
        out[topic] = {}
        for p, v in parts.items():
            try:
                partition, number = int(p), int(v)
            except (TypeError, ValueError):
                number = None
            if number is None or isinstance(v, bool):
                raise SelectionError(f"{what}: {topic!r} partition {p!r} -> {v!r} is not a number")
            if not _LONG_MIN <= number <= _LONG_MAX:
                raise SelectionError(f"{what}: {topic!r} partition {p!r} -> {v!r} is out of a 64-bit "
                                     f"number's range")
            out[topic][partition] = number
    return out


def parse_selection(options: Optional[dict], *, streaming: bool = False) -> Selection:
    """A :class:`Selection` from Spark Kafka-source option names (others are ignored)."""
    o = {str(k).lower(): v for k, v in dict(options or {}).items() if v is not None and v != ""}
    topics = None
    if "topics" in o:
        topics = frozenset(t.strip() for t in str(o["topics"]).split(",") if t.strip())
        if not topics:
            raise SelectionError("option topics: no topic named")
    assigned = None
    if "assign" in o:
        # the Kafka source's assign: {"orders":[0,1]}
        raw = option_json("option assign", o["assign"], '{"orders":[0,1]}', SelectionError)
        if (not isinstance(raw, dict) or not raw
                or not all(isinstance(v, list)
                           and all(isinstance(p, int) and not isinstance(p, bool) for p in v)
                           for v in raw.values())):
            raise SelectionError(f"option assign: expected {{\"topic\":[partition, ...]}}, got {o['assign']!r}")
        if topics is not None:
            raise SelectionError("options topics and assign: give one of them")
        assigned = {t: frozenset(ps) for t, ps in raw.items()}
        topics = frozenset(assigned)
    pattern = o.get("topicpattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SelectionError(f"option topicPattern: {exc}") from None

    def spec(prefix: str, default: str) -> OffsetSpec:
        if f"{prefix}timestamp" in o:
            # a Java long of ms, as the Kafka source's toLong reads it: never a float, a bool or a list
            given = o[f"{prefix}timestamp"]
            return OffsetSpec("timestamp", text_whole(
                f"{prefix}Timestamp", given, -(1 << 63), (1 << 63) - 1,
                error=lambda _: SelectionError(f"option {prefix}Timestamp must be ms since the epoch "
                                               f"(a whole number in a Java long), got {shown(given)}")))
        if f"{prefix}offsetsbytimestamp" in o:
            return OffsetSpec("timestamps", json_offsets(o[f"{prefix}offsetsbytimestamp"],
                                                          f"option {prefix}OffsetsByTimestamp"))
        raw = o.get(f"{prefix}offsets", default)
        s = str(raw).strip()
        if s.lower() in ("earliest", "latest"):
            return OffsetSpec(s.lower())
        return OffsetSpec("offsets", json_offsets(s, f"option {prefix}Offsets"))

    start = spec("starting", "earliest")
    end = spec("ending", "latest")
    if streaming and any(k.startswith("ending") for k in o):
        raise SelectionError("ending offsets/timestamps are for batch reads; a stream has no end")
    if not streaming:
        # Spark's rules for batch queries.
        if start.kind == "latest":
            raise SelectionError("startingOffsets=latest is for streaming queries, not batch reads")
        if end.kind == "earliest":
            raise SelectionError("endingOffsets=earliest is for streaming queries, not batch reads")
        if start.kind == "offsets" and any(v == LATEST for ps in start.value.values() for v in ps.values()):
            raise SelectionError("startingOffsets: -1 (latest) is for streaming queries, not batch reads")
        if end.kind == "offsets" and any(v == EARLIEST for ps in end.value.values() for v in ps.values()):
            raise SelectionError("endingOffsets: -2 (earliest) is for streaming queries, not batch reads")
    strategy = str(o.get("startingoffsetsbytimestampstrategy", "error")).lower()
    if strategy not in ("error", "latest"):
        raise SelectionError("option startingOffsetsByTimestampStrategy must be error or latest")
    include_deleted = text_bool("includeDeletedRecords", o.get("includedeletedrecords", False), SelectionError)
    if assigned is not None:
        # as in Spark: with assign, specific offsets name exactly the assigned partitions
        want = {(t, p) for t, ps in assigned.items() for p in ps}
        for s in (start, end):
            if s.kind in ("offsets", "timestamps"):
                named = {(t, p) for t, ps in s.value.items() for p in ps}
                if named != want:
                    raise SelectionError(
                        f"offsets name partitions {sorted(named)} but assign names "
                        f"{sorted(want)}; as in Spark, name exactly the assigned partitions")
    return Selection(topics, pattern, start, end, strategy, assigned, include_deleted)


# --- the command line's flags ----------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def parse_time(text) -> int:
    """Milliseconds since the epoch from ``1700000000000`` (a long, as Java's ``Long.parseLong``
    reads it) or ISO 8601 (``2023-11-14T22:13:20Z``, ``2023-11-14 22:13:20+01:00``; UTC when no
    zone is given); anything else is a :class:`SelectionError`."""
    s = str(text).strip()
    shown = repr(s) if len(s) <= 40 else f"{s[:30]!r}... ({len(s)} characters)"
    if re.fullmatch(r"[+-]?[0-9]+", s):
        # as Java's Long.parseLong: a sign, then digits of a long (leading zeros allowed); the
        # digits are counted before int() is asked, which refuses past 4,300 with a ValueError
        if len(s.lstrip("+-").lstrip("0")) > 19 or not _LONG_MIN <= int(s) <= _LONG_MAX:
            raise SelectionError(f"{shown}: milliseconds since the epoch out of a 64-bit number's "
                                 f"range ({_LONG_MIN} to {_LONG_MAX})")
        return int(s)
    try:
        dt = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise SelectionError(f"{shown} is neither milliseconds since the epoch nor an ISO 8601 "
                             f"time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    # timedelta arithmetic is whole days, seconds and microseconds: exact where the float of
    # dt.timestamp() * 1000 lands a millisecond early (past 2038, before 1970); floored, as Java's
    # Instant.toEpochMilli
    return (dt - _EPOCH) // datetime.timedelta(milliseconds=1)


def cli_selection(*, topics=None, start_offset=None, end_offset=None, start_time=None,
                  end_time=None, include_deleted_records: bool = False, partitions=None) -> Selection:
    """The selection of ``--topics a,b --partition 0,2 --start-offset N --end-offset M
    --start-time T --end-time T --include-deleted-records`` (offsets for every partition; a time
    wins over an offset, as in Spark).  A start time no record reaches selects nothing (strategy
    ``latest``)."""
    names = None
    if topics:
        names = frozenset(t.strip() for t in (topics.split(",") if isinstance(topics, str) else topics)
                          if t.strip())

    def spec(offset, time, default):
        if time is not None:
            return OffsetSpec("timestamp", parse_time(time))
        if offset is not None:
            if int(offset) < 0:
                raise SelectionError("offsets given on the command line must be 0 or more")
            return OffsetSpec("offset", int(offset))
        return OffsetSpec(default)

    return Selection(names, None, spec(start_offset, start_time, "earliest"),
                     spec(end_offset, end_time, "latest"), "latest",
                     include_deleted_records=include_deleted_records,
                     partitions=None if partitions is None else _partition_numbers(partitions))


def _partition_numbers(text) -> frozenset:
    """``"0,2"`` (or numbers) as partition numbers, each in ``[0, 2^31)``, as Kafka numbers them."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out = set()
    for item in items:
        item = item.strip() if isinstance(item, str) else item
        if item == "":
            continue
        try:
            number = int(item)
        except (TypeError, ValueError):
            raise SelectionError(f"partition {item!r}: expected a partition number (0, 1, ...)") from None
        if not 0 <= number < 2 ** 31:
            raise SelectionError(f"partition {number}: partition numbers are 0 to 2^31-1")
        out.add(number)
    if not out:
        raise SelectionError(f"--partition {text!r}: no partition number given")
    return frozenset(out)
