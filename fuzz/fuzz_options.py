"""The Kafka-source options a user writes as text (kafkarec.log.selection.parse_selection: ``assign``,
``startingOffsets``/``endingOffsets``, ``*OffsetsByTimestamp``, ``*Timestamp``, and parse_time's ISO-8601
times) on arbitrary text and on JSON built from fuzzed shapes.  Oracles: what Spark's Kafka source reads
(JsonUtils: Jackson into ``Map[String, Map[Int, Long]]``), checked here with Python's json on inputs
shallow enough for it -- offsets JSON whose numbers are whole and fit a Long must be read to exactly
those numbers -- and, for times, integer arithmetic on the calendar fields (days from the civil date,
no floats).  Anything but a Selection, a number or a SelectionError is a finding."""
import datetime
import json
import re

import atheris

from _harness import run

from kafkarec.errors import SelectionError  # noqa: E402
from kafkarec.log.selection import parse_selection, parse_time  # noqa: E402

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
NAMES = ("assign", "startingOffsets", "endingOffsets", "startingOffsetsByTimestamp",
         "endingOffsetsByTimestamp", "startingTimestamp")
SPECIAL = '{}[]":,0123456789-+.eEINaftrue ul\\'


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days from 1970-01-01 (Howard Hinnant's algorithm), integers only."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def whole_long(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and LONG_MIN <= v <= LONG_MAX


def check_offsets(name: str, text: str) -> None:
    try:
        # a stream has no end: ending options are read as a batch read's
        sel = parse_selection({name: text}, streaming=name.startswith("starting"))
    except SelectionError:
        sel = None
    if sel is not None and name.endswith(("Offsets", "OffsetsByTimestamp")):
        spec = sel.start if name.startswith("starting") else sel.end
        if spec.kind in ("offsets", "timestamps"):
            for parts in spec.value.values():
                assert all(isinstance(p, int) and whole_long(v) for p, v in parts.items()), (text, spec)
    if not name.endswith(("Offsets", "OffsetsByTimestamp")) or text.count("{") + text.count("[") > 30:
        return
    def refused(number: str):                # Jackson into Long: no fraction, exponent, NaN or Infinity
        raise ValueError(number)
    try:                                       # the oracle: plain JSON, whole numbers only
        raw = json.loads(text, parse_float=refused, parse_constant=refused)
    except (ValueError, RecursionError):
        return
    if (isinstance(raw, dict) and raw and all(isinstance(ps, dict) for ps in raw.values())
            and all(re.fullmatch(r"-?[0-9]+", k) and -(1 << 31) <= int(k) < 1 << 31
                    and whole_long(v) and v >= -2 and not (name == "endingOffsets" and v == -2)
                    for ps in raw.values() for k, v in ps.items())):
        assert sel is not None, f"{name}={text!r}: Spark reads it, kafkarec refused it"
        spec = sel.start if name.startswith("starting") else sel.end
        want = {t: {int(k): v for k, v in ps.items()} for t, ps in raw.items()}
        assert spec.value == want, (text, spec.value, want)


def check_time(fdp) -> None:
    y, mo = fdp.ConsumeIntInRange(1, 9999), fdp.ConsumeIntInRange(1, 12)
    d = fdp.ConsumeIntInRange(1, 28)
    h, mi, s = fdp.ConsumeIntInRange(0, 23), fdp.ConsumeIntInRange(0, 59), fdp.ConsumeIntInRange(0, 59)
    ms = fdp.ConsumeIntInRange(0, 999)
    off = fdp.ConsumeIntInRange(-18 * 60 + 1, 18 * 60 - 1)
    sign, a = ("+" if off >= 0 else "-"), abs(off)
    text = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{ms:03d}{sign}{a // 60:02d}:{a % 60:02d}"
    want = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - off * 60) * 1000 + ms)
    try:
        got = parse_time(text)
    except SelectionError:
        # only where Python's datetime cannot hold the time in UTC (years 1 and 9999 at the edges)
        utc = datetime.datetime(y, mo, d, h, mi, s, tzinfo=datetime.timezone(datetime.timedelta(minutes=off)))
        try:
            utc.astimezone(datetime.timezone.utc)
        except OverflowError:
            return
        raise
    assert got == want, f"{text}: {got} != {want}"


def shaped_json(fdp) -> str:
    """Offsets JSON from fuzzed shapes: mostly what Spark reads, with the numbers and nesting it refuses."""
    def number() -> str:
        k = fdp.ConsumeIntInRange(0, 9)
        if k == 0:
            return ["Infinity", "-Infinity", "NaN", "1e400", "1.5", "true", "null", '"7"', "-0"][
                fdp.ConsumeIntInRange(0, 8)]
        if k == 1:
            return str(fdp.ConsumeInt(10))                  # up to 80 bits: past a Long
        if k == 2:
            return "[" * fdp.ConsumeIntInRange(1, 5000) + "0" + "]" * fdp.ConsumeIntInRange(0, 5000)
        return str(fdp.ConsumeIntInRange(-2, 1 << 40))
    topics = []
    for _ in range(fdp.ConsumeIntInRange(1, 3)):
        parts = ",".join(f'"{fdp.ConsumeIntInRange(-3, 1 << 32) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(0, 9)}":'
                         f"{number()}" for _ in range(fdp.ConsumeIntInRange(0, 4)))
        topics.append(f'{json.dumps(fdp.ConsumeUnicodeNoSurrogates(6))}:{{{parts}}}')
    return "{" + ",".join(topics) + "}"


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    kind = fdp.ConsumeIntInRange(0, 4)
    if kind == 4:
        name = NAMES[fdp.ConsumeIntInRange(1, 4)]
        check_offsets(name, shaped_json(fdp))
        return
    if kind == 0:
        check_time(fdp)
        return
    if kind == 1:
        text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
        try:
            assert isinstance(parse_time(text), int)
        except SelectionError:
            pass
        return
    name = NAMES[fdp.ConsumeIntInRange(0, len(NAMES) - 1)]
    if kind == 2:
        text = "".join(SPECIAL[b % len(SPECIAL)] for b in fdp.ConsumeBytes(fdp.remaining_bytes()))
    else:
        text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    check_offsets(name, text)


if __name__ == "__main__":
    run(test_one_input)
