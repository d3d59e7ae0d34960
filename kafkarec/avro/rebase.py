"""Spark's ``datetimeRebaseMode`` for Avro dates and timestamps, on decoded Arrow columns.

Spark 2.x and Hive wrote dates and timestamps in the hybrid Julian/Gregorian calendar;
Spark 3+ reads Avro in the proleptic Gregorian calendar, and its ``datetimeRebaseMode``
option (``from_avro``'s and the Avro source's) says what to do with values before the
calendar switch:

* ``CORRECTED`` (Spark 4's default): the value as written, no rebase (kafkarec's plain read);
* ``LEGACY``: the value was written in the hybrid calendar; keep its local date (and time of
  day) and count it again in the proleptic Gregorian calendar -- Spark's
  ``RebaseDateTime.rebaseJulianToGregorianDays`` and, for timestamps read in the UTC session
  time zone, ``rebaseJulianToGregorianMicros``;
* ``EXCEPTION``: a date before 1582-10-15 or a timestamp before Spark's last calendar switch
  (``LAST_SWITCH_JULIAN_MICROS``) is an error (Spark raises ``SparkUpgradeException``); here
  the row is an error row, its neighbours decode.

Which columns: Avro ``date`` (Arrow date32) and ``timestamp-millis``/``timestamp-micros``
(Arrow timestamps with a time zone); ``local-timestamp-*`` is not rebased, as in Spark.
Timestamps in LEGACY mode are rebased as Spark does in the UTC session time zone; another
zone is refused (its rebase follows each zone's historical offsets, not implemented).
"""
from __future__ import annotations

from typing import Optional, Tuple

from kafkarec._extras import require
from kafkarec.errors import SchemaResolutionError

np = require("numpy")
pa = require("pyarrow")

__all__ = ["REBASE_MODES", "LAST_SWITCH_JULIAN_DAY", "LAST_SWITCH_JULIAN_MICROS", "ANCIENT_DATETIME",
           "rebase_mode", "julian_to_gregorian_days", "rebase_column"]

REBASE_MODES = ("EXCEPTION", "CORRECTED", "LEGACY")
#: 1582-10-15, the first day of the Gregorian calendar (days since 1970-01-01).
LAST_SWITCH_JULIAN_DAY = -141427
#: Spark's ``RebaseDateTime.lastSwitchJulianTs`` (the latest calendar switch of any time zone
#: in its rebase tables); tests check it against Spark's own constant.
LAST_SWITCH_JULIAN_MICROS = -2208988800000000
_MICROS_PER_DAY = 86_400_000_000
#: The row error of a value that EXCEPTION refuses (the conversion's, so no byte position).
ANCIENT_DATETIME = ("datetimeRebaseMode EXCEPTION: a date before 1582-10-15 or a timestamp before "
                    "1900-01-01T00:00:00Z may have been written in the hybrid Julian calendar (Spark 2.x, "
                    "Hive); set datetimeRebaseMode to LEGACY to rebase it or CORRECTED to read it as written")
_UNIT_MICROS = {"s": None, "ms": 1000, "us": 1, "ns": None}


def rebase_mode(value) -> str:
    """The mode named by an option value (case-insensitive), CORRECTED when not given."""
    if value is None:
        return "CORRECTED"
    mode = str(value).strip().upper()
    if mode not in REBASE_MODES:
        raise SchemaResolutionError(f"datetimeRebaseMode {value!r}: one of {', '.join(REBASE_MODES)}")
    return mode


def julian_to_gregorian_days(days: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 counted in the hybrid calendar (Julian before 1582-10-15) -> the
    same local date counted in the proleptic Gregorian calendar.  A Julian date that the
    Gregorian calendar lacks (1500-02-29) becomes the next day, as Spark's rebase does."""
    days = np.asarray(days, dtype=np.int64)
    out = days.copy()
    old = days < LAST_SWITCH_JULIAN_DAY
    if not old.any():
        return out
    d = days[old]
    # Julian calendar fields from the Julian day number (astronomical years: 0 is 1 BC)
    c = d + 2440588 + 32082
    y4 = (4 * c + 3) // 1461
    e = c - (1461 * y4) // 4
    m5 = (5 * e + 2) // 153
    day = e - (153 * m5 + 2) // 5 + 1
    month = m5 + 3 - 12 * (m5 // 10)
    year = y4 - 4800 + m5 // 10
    # the same fields counted in the proleptic Gregorian calendar (days before the 1st, added
    # after, so a day past the month's end rolls over as Spark's plusDays does)
    y = year - (month <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    out[old] = era * 146097 + doe - 719468 + (day - 1)
    return out


def _rebase_values(arr: pa.Array, mode: str, time_zone: Optional[str], errors: np.ndarray,
                   row_of: np.ndarray) -> pa.Array:
    """One date/timestamp array (no nesting): rebased values, and error flags on its rows."""
    t = arr.type
    if pa.types.is_date32(t):
        raw = arr.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        threshold, scale = LAST_SWITCH_JULIAN_DAY, None
    else:
        unit = _UNIT_MICROS[t.unit]
        if unit is None:
            return arr                      # Spark has no seconds/nanos Avro timestamps to rebase
        raw = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        threshold, scale = LAST_SWITCH_JULIAN_MICROS, unit
    valid = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    micros = raw if scale is None else raw * scale
    old = valid & (micros < threshold)
    if not old.any():
        return arr
    if mode == "EXCEPTION":
        errors[row_of[old]] = True
        return arr
    if scale is None:
        new = julian_to_gregorian_days(raw).astype(np.int32)
        return pa.array(new, type=pa.int32(), mask=~valid).cast(t)
    if (time_zone or "UTC").upper() not in ("UTC", "Z", "GMT", "ETC/UTC", "+00:00"):
        raise SchemaResolutionError(
            f"datetimeRebaseMode LEGACY rebases timestamps in the UTC session time zone only "
            f"(the session time zone is {time_zone})")
    day = np.floor_divide(micros, _MICROS_PER_DAY)
    shift = (julian_to_gregorian_days(day) - day) * _MICROS_PER_DAY
    new = raw + shift // scale
    return pa.array(new, type=pa.int64(), mask=~valid).cast(t)


def _needs(t: pa.DataType) -> bool:
    if pa.types.is_date32(t) or (pa.types.is_timestamp(t) and t.tz is not None):
        return True
    if pa.types.is_struct(t):
        return any(_needs(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _needs(t.value_type)
    if pa.types.is_map(t):
        return _needs(t.item_type)
    return False


def rebase_column(arr: pa.Array, mode: str, *, time_zone: Optional[str] = "UTC") -> Tuple[pa.Array, np.ndarray]:
    """``arr`` (a decoded Avro column, any nesting) with its dates and UTC timestamps handled by
    ``mode``, and a bool array: which rows hold a value EXCEPTION refuses."""
    errors = np.zeros(len(arr), dtype=bool)
    if mode == "CORRECTED" or not _needs(arr.type):
        return arr, errors
    return _walk(arr, mode, time_zone, errors, np.arange(len(arr))), errors


def _walk(arr: pa.Array, mode: str, tz, errors: np.ndarray, row_of: np.ndarray) -> pa.Array:
    t = arr.type
    if not _needs(t):
        return arr
    if arr.offset:
        arr = pa.concat_arrays([arr])       # children and offsets from 0
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):
        return _rebase_values(arr, mode, tz, errors, row_of)
    if pa.types.is_struct(t):
        kids = [_walk(arr.field(i), mode, tz, errors, row_of) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=arr.is_null())
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = arr.offsets.to_numpy(zero_copy_only=False)
        if pa.types.is_map(t):
            entries = pa.StructArray.from_arrays([arr.keys, arr.items], fields=[t.key_field, t.item_field])
            items_row = np.repeat(row_of, np.diff(offsets))
            kids = _walk(entries, mode, tz, errors, items_row)
            return pa.MapArray.from_arrays(arr.offsets, kids.field(0), kids.field(1), type=t,
                                           mask=arr.is_null())
        items_row = np.repeat(row_of, np.diff(offsets))
        values = _walk(arr.values, mode, tz, errors, items_row)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(arr.offsets, values, type=t, mask=arr.is_null())
    return arr
