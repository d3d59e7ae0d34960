"""A record's time as kafkarec prints it: the one formatter every command and the census use.

Kafka's timestamps are signed 64-bit milliseconds since the epoch, any of them legal (a topic with
``message.timestamp.before/after.max.ms`` at Long.MAX takes CreateTimes past the year 9999, and -1
is "no timestamp").  A Python ``datetime`` holds only the years 1 to 9999, so nothing here turns a
time into one unless it is known to fit: the range is checked on the integer first.  JSON always
gives the milliseconds; the ISO form is added beside them only where it exists.  Tables print the
ISO form, or the number where there is none.
"""
from __future__ import annotations

import datetime as _dt
from typing import Optional

__all__ = ["MIN_ISO_MS", "MAX_ISO_MS", "iso", "time_text", "time_fields"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
#: the first and last milliseconds a datetime holds: 0001-01-01T00:00:00.000Z and
#: 9999-12-31T23:59:59.999Z
MIN_ISO_MS = (_dt.datetime(1, 1, 1, tzinfo=_dt.timezone.utc) - _EPOCH) // _dt.timedelta(milliseconds=1)
MAX_ISO_MS = (_dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=_dt.timezone.utc) - _EPOCH) \
    // _dt.timedelta(milliseconds=1)


def iso(ms: int) -> Optional[str]:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds (``2023-11-14T22:13:20.000Z``), or
    None where no datetime holds that time (before year 1, after 9999)."""
    ms = int(ms)
    if not MIN_ISO_MS <= ms <= MAX_ISO_MS:
        return None
    # timedelta arithmetic, not fromtimestamp: exact to the millisecond and free of the
    # platform's time_t limits inside the range checked above
    t = _EPOCH + _dt.timedelta(milliseconds=ms)
    # by fields, not strftime: its %Y leaves years before 1000 unpadded on glibc
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}."
            f"{t.microsecond // 1000:03d}Z")


def time_text(ms: Optional[int]) -> str:
    """A time for a table: its ISO form, else the number of milliseconds (``?`` for none)."""
    if ms is None:
        return "?"
    text = iso(ms)
    return str(int(ms)) if text is None else text


def time_fields(name: str, ms: Optional[int]) -> dict:
    """A time for JSON: ``{name: ms}``, with ``{name + "_iso": text}`` beside it where the ISO
    form exists."""
    out = {name: None if ms is None else int(ms)}
    text = None if ms is None else iso(ms)
    if text is not None:
        out[name + "_iso"] = text
    return out
