"""What a read is bounded to: :class:`Bounds`, and the partition sets it holds (:class:`Partitions`).

Bounds are made in one place, their constructor, and that is where their two rules live:

* offsets and timestamps are Java longs: a bound past the long range is clipped to it there, so
  ``offset > 9223372036854775807`` keeps no record and ``offset < 2**63`` every record, exactly,
  and nothing downstream (the indexes, ``pyarrow.compute``) sees a number a long cannot hold;
* partition numbers are 0 to 2^31 - 1 (an int32 in Kafka's protocol): a set of them is held as
  intervals, so ``partition < 2147483647`` costs two numbers, and the read admits the partitions
  the log has that fall in them;
* keys are bytes: a set of them keeps the records whose key is one of them (a null key is in no
  set); the core compares each record's key before it builds anything of the record.

The constructor is a boundary too: a topic is a str (one name given alone is that one name,
never its letters), a partition number, an offset and a timestamp are whole numbers (an int, or
what ``__index__`` makes one: never a bool, a float such as ``inf`` or ``1.5``, or text), a
range is a pair; anything else is a :class:`kafkarec.errors.UsageError` naming the field and the
value.  :meth:`Bounds.of`, the constructor of what a user writes, also refuses a partition
number outside 0 to 2^31 - 1 (a partition that cannot exist is a mistake there, where a
pushed-down ``partition < 5000000000`` is a bound).
"""
from __future__ import annotations

import bisect
import operator
from collections.abc import Set
from typing import Iterable, Iterator, NamedTuple, Optional, Tuple

from kafkarec._option_text import INT_MAX, shown, whole_number
from kafkarec.errors import UsageError

__all__ = ["Bounds", "Partitions", "LONG_MIN", "LONG_MAX", "PARTITION_END"]

#: Java's long range: every offset and timestamp of a record is in it
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
#: one past the largest partition number (Kafka's partitions are an int32 from 0)
PARTITION_END = 1 << 31

_Range = Tuple[Optional[int], Optional[int]]
#: the empty range, within the long range (``lo >= hi`` admits nothing)
_NOTHING = (LONG_MAX, LONG_MAX)


class Partitions(Set):
    """A set of partition numbers as sorted, disjoint, non-adjacent intervals ``[lo, hi)`` within
    ``[0, 2^31)``: what a bound on ``partition`` costs is its intervals, never its members.
    Equal to any set of the same numbers (``Partitions.of([0, 1]) == {0, 1}``)."""

    __slots__ = ("_spans",)

    def __init__(self, spans: Iterable[Tuple[int, int]] = ()):
        clipped = sorted((max(_whole("partitions", lo), 0), min(_whole("partitions", hi), PARTITION_END))
                         for lo, hi in spans)
        merged: list = []
        for lo, hi in clipped:
            if lo >= hi:
                continue
            if merged and lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        self._spans = tuple(merged)

    @classmethod
    def of(cls, numbers: Iterable[int]) -> "Partitions":
        """The partitions numbered ``numbers`` (those outside ``[0, 2^31)`` are no partition)."""
        return cls((n, n + 1) for n in (_whole("partitions", x) for x in _many("partitions", numbers)))

    @classmethod
    def between(cls, lo: Optional[int], hi: Optional[int]) -> "Partitions":
        """The partitions ``lo <= p < hi`` (None: open on that side)."""
        return cls([(0 if lo is None else lo, PARTITION_END if hi is None else hi)])

    @property
    def spans(self) -> Tuple[Tuple[int, int], ...]:
        """The intervals ``[lo, hi)``, in order."""
        return self._spans

    def __contains__(self, number) -> bool:
        if not isinstance(number, int) or isinstance(number, bool):
            return False
        i = bisect.bisect_right(self._spans, (number, PARTITION_END + 1)) - 1
        return i >= 0 and self._spans[i][0] <= number < self._spans[i][1]

    def __iter__(self) -> Iterator[int]:
        for lo, hi in self._spans:
            yield from range(lo, hi)

    def __len__(self) -> int:
        return sum(hi - lo for lo, hi in self._spans)

    def __and__(self, other) -> "Partitions":
        other = other if isinstance(other, Partitions) else Partitions.of(other)
        out, i, j = [], 0, 0
        a, b = self._spans, other._spans
        while i < len(a) and j < len(b):
            lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if lo < hi:
                out.append((lo, hi))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return Partitions(out)

    def __or__(self, other) -> "Partitions":
        other = other if isinstance(other, Partitions) else Partitions.of(other)
        return Partitions(self._spans + other._spans)

    __rand__, __ror__ = __and__, __or__

    def __eq__(self, other) -> bool:
        if isinstance(other, Partitions):
            return self._spans == other._spans
        if isinstance(other, Set):
            return len(self) == len(other) and all(n in self for n in other)
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash()         # frozenset's hash, as equal sets must hash alike

    def __reduce__(self):
        return (Partitions, (self._spans,))

    def __repr__(self) -> str:
        parts = [str(lo) if hi == lo + 1 else f"{lo}..{hi - 1}" for lo, hi in self._spans]
        return "Partitions({" + ", ".join(parts) + "})"


class _Fields(NamedTuple):
    topics: Optional[frozenset]
    partitions: Optional[Partitions]
    offsets: _Range
    timestamps: _Range
    keys: Optional[frozenset] = None


class Bounds(_Fields):
    """What a read is bounded to; every field optional (None: unbounded).  ``topics``: a set of
    names; ``partitions``: a set of numbers (a partition number bounds every topic; any iterable
    of them is held as :class:`Partitions`); ``offsets`` and ``timestamps``: ``(lo, hi)``, ``lo``
    inclusive, ``hi`` exclusive, either None, clipped to the long range (see the module
    docstring); timestamps in ms since the epoch; ``keys``: a set of ``bytes``, the records' keys
    kept (the others' values are never built; with a read's ``partitioner``, the partitions
    it names for other keys are not opened).  The spec every engine adapter fills from its
    predicate (:mod:`kafkarec.scan.predicate`; what it cannot express stays the engine's to filter)."""

    __slots__ = ()

    def __new__(cls, topics: Optional[Iterable[str]] = None, partitions: Optional[Iterable[int]] = None,
                offsets: _Range = (None, None), timestamps: _Range = (None, None),
                keys: Optional[Iterable[bytes]] = None) -> "Bounds":
        if topics is not None:
            topics = _topics(topics)
        if partitions is not None and not isinstance(partitions, Partitions):
            partitions = Partitions.of(partitions)
        if keys is not None:
            keys = _keys(keys)
        return super().__new__(cls, topics, partitions, _long_range(offsets, "offsets"), _long_range(timestamps, "timestamps"), keys)

    @classmethod
    def of(cls, *, topics: Optional[Iterable[str]] = None, partitions: Optional[Iterable[int]] = None,
           offsets: _Range = (None, None), timestamps: _Range = (None, None),
           keys: Optional[Iterable[bytes]] = None) -> "Bounds":
        """Bounds from any iterables and pairs (names as str, one name alone as itself; numbers as
        int; keys as bytes); a pair that ends before it starts, a partition number outside 0 to
        2^31 - 1, or a value of another type (see the module docstring) is a
        :class:`kafkarec.errors.UsageError`."""
        if partitions is not None and not isinstance(partitions, Partitions):
            partitions = [whole_number("partitions", p, 0, INT_MAX) for p in _many("partitions", partitions)]
        return cls(topics, partitions, _pair(offsets, "offsets"), _pair(timestamps, "timestamps"), keys)

    def intersect(self, other: Optional["Bounds"]) -> "Bounds":
        """The bounds both admit."""
        if other is None:
            return self
        return Bounds(_meet(self.topics, other.topics), _meet(self.partitions, other.partitions),
                      _narrow(self.offsets, other.offsets), _narrow(self.timestamps, other.timestamps),
                      _meet(self.keys, other.keys))

    def admits(self, topic, partition) -> bool:
        """Whether records of this topic-partition may be in bounds."""
        return ((self.topics is None or topic in self.topics)
                and (self.partitions is None or partition in self.partitions))

    @property
    def unbounded(self) -> bool:
        return self == Bounds()


def _keys(keys) -> frozenset:
    """A set of keys as bytes (a bytearray or memoryview copied); anything else refused: the
    core's one rule (``checked_keys``), which ``iter_arrow(keys=...)`` applies too."""
    from kafkarec._core import checked_keys
    return checked_keys(keys, "bounds")


def _whole(name: str, value) -> int:
    """A partition number, offset or timestamp as an int (any size: the callers clip it), or a
    UsageError naming ``name``: never a bool, a float (``inf``, ``nan``, ``1.5``) or text."""
    if type(value) is int:
        return value
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise UsageError(f"bounds: {name} {shown(value)}: whole numbers only")


def _many(name: str, values) -> Iterable:
    """An iterable of values, or a UsageError (one number is not a set of them: [5] is)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise UsageError(f"bounds: {name} {shown(values)}: a set of partition numbers, such as [0, 1]")
    return values


def _topics(topics) -> frozenset:
    """A set of topic names: one name alone is that name (as Spark's ``subscribe=orders``)."""
    if isinstance(topics, str):
        return frozenset([topics])
    if not hasattr(topics, "__iter__") or isinstance(topics, bytes):
        raise UsageError(f"bounds: topics {shown(topics)}: a topic name or a set of them")
    names = topics if isinstance(topics, frozenset) else list(topics)
    for t in names:                     # before a set is made of them (a dict is unhashable)
        if not isinstance(t, str):
            raise UsageError(f"bounds: topics: {shown(t)} is no topic name (a str)")
    return frozenset(names)


def _ends(pair, name: str) -> _Range:
    """``(lo, hi)`` of whole numbers or None, as given (None: unbounded)."""
    if pair is None:
        return (None, None)
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise UsageError(f"bounds: {name} {shown(pair)}: a pair (start, end), either None")
    lo, hi = pair
    return (None if lo is None else _whole(name, lo), None if hi is None else _whole(name, hi))


def _long_range(pair, name: str) -> _Range:
    """``(lo, hi)`` clipped to the long range: an end past it bounds nothing, a start past it (or
    an end before it) admits nothing."""
    lo, hi = _ends(pair, name)
    if (lo is not None and lo > LONG_MAX) or (hi is not None and hi <= LONG_MIN):
        return _NOTHING
    return (None if lo is None or lo <= LONG_MIN else lo, None if hi is None or hi > LONG_MAX else hi)


def _pair(value, name: str) -> _Range:
    lo, hi = _ends(value, name)
    if lo is not None and hi is not None and hi < lo:
        raise UsageError(f"bounds: {name} ({lo}, {hi}) end before they start")
    return (lo, hi)


def _meet(a, b):
    if a is None:
        return b
    return a if b is None else a & b


def _narrow(a: _Range, b: _Range) -> _Range:
    lo = [x for x in (a[0], b[0]) if x is not None]
    hi = [x for x in (a[1], b[1]) if x is not None]
    return (max(lo) if lo else None, min(hi) if hi else None)
