"""Which records a read_committed consumer would not see, decided offline from
the transaction markers in the data itself.

A transactional data batch belongs to its producer's open transaction; the
producer's next ABORT or COMMIT control batch ends it.  Batches of a
transaction that aborts, or that has not ended by the end of the data (it
would sit above the last stable offset), are left out.  The rule reads only
batch headers plus the one record of each control batch.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable

from kafkarec.errors import DecodeError

__all__ = ["aborted_batches"]

_ATTR_TRANSACTIONAL = 0x10
_ATTR_CONTROL = 0x20
_ABORT = 0


def _marker_type(batch) -> int | None:
    try:
        for record in batch:
            return record.control_type_id
    except DecodeError:
        return None        # an unreadable marker ends the transaction without aborting it
    return None


def aborted_batches(batches: Iterable[Any],
                    key: Callable[[Any], Hashable] = lambda b: b.position) -> set:
    """``key(batch)`` of every transactional data batch in ``batches`` (one
    partition's log, in offset order) whose transaction aborts or never ends."""
    open_by_producer: dict[int, list] = {}
    aborted: set = set()
    for batch in batches:
        if batch.magic < 2 or not batch.attributes & _ATTR_TRANSACTIONAL:
            continue
        if batch.attributes & _ATTR_CONTROL:
            pending = open_by_producer.pop(batch.producer_id, [])
            if _marker_type(batch) == _ABORT:
                aborted.update(pending)
        else:
            open_by_producer.setdefault(batch.producer_id, []).append(key(batch))
    for pending in open_by_producer.values():
        aborted.update(pending)
    return aborted
