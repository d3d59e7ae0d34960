"""Selection text read exactly (issue 40, findings 4, 5 and 7): times converted with integer
arithmetic, and the JSON of ``assign``/``*Offsets``/``*OffsetsByTimestamp`` (and of every other
option kafkarec reads as JSON) through one reader, kafkarec._option_text.option_json, that
bounds the nesting before parsing and takes whole numbers only, as Spark's Kafka source does."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kafkarec._option_text import OPTION_JSON_DEPTH
from kafkarec.errors import SelectionError
from kafkarec.log import selection


# -- times -------------------------------------------------------------------------------------

def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date, in integers alone (H. Hinnant's
    ``days_from_civil``): the oracle, independent of datetime."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def test_the_issues_time_is_exact():
    # the float of datetime.timestamp() * 1000 gave ...804
    assert selection.parse_time("2039-08-09T13:47:53.805Z") == 2_196_510_473_805
    assert selection.parse_time("1969-12-31T23:59:59.999Z") == -1
    assert selection.parse_time("1969-12-31T23:59:59.9995Z") == -1    # floored, as Instant.toEpochMilli


def test_milliseconds_are_a_long_as_javas_parse_long_reads_one():
    """Finding 40 (issue 67): 5,000 digits raised Python's integer-digit-limit ValueError."""
    assert selection.parse_time(str(2 ** 63 - 1)) == 2 ** 63 - 1 and selection.parse_time(str(-2 ** 63)) == -2 ** 63
    assert selection.parse_time("+5") == 5 and selection.parse_time("0" * 30 + "7") == 7
    for text in ("1" * 5000, "-" + "9" * 5000, str(2 ** 63), str(-2 ** 63 - 1), "1" * 20):
        with pytest.raises(SelectionError, match="out of a 64-bit number's range") as e:
            selection.parse_time(text)
        assert len(str(e.value)) < 200                 # the text is not echoed whole
    with pytest.raises(SelectionError, match=r"\(5000 characters\) is neither"):
        selection.parse_time("x" * 5000)


@settings(max_examples=400, deadline=None)
@given(st.integers(1900, 2999), st.integers(1, 12), st.integers(1, 31), st.integers(0, 23),
       st.integers(0, 59), st.integers(0, 59), st.integers(0, 999_999), st.booleans(),
       st.integers(-18 * 60, 18 * 60), st.sampled_from(["T", " "]))
def test_iso_times_are_exact(year, month, day, hour, minute, second, micros, whole_ms, offset_min, sep):
    if whole_ms:
        micros -= micros % 1000
    day = min(day, 30 if month in (4, 6, 9, 11) else 31 if month != 2 else
              29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28)
    sign, off = ("-" if offset_min < 0 else "+"), abs(offset_min)
    zone = "Z" if offset_min == 0 else f"{sign}{off // 60:02d}:{off % 60:02d}"
    text = f"{year:04d}-{month:02d}-{day:02d}{sep}{hour:02d}:{minute:02d}:{second:02d}.{micros:06d}{zone}"
    seconds = (_days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
               - offset_min * 60)
    assert selection.parse_time(text) == (seconds * 1_000_000 + micros) // 1000


# -- option JSON -------------------------------------------------------------------------------

TOO_DEEP = "[" * 100_000 + "]" * 100_000
TOO_DEEP_OBJECT = '{"t":' * 50_000 + "{}" + "}" * 50_000


@pytest.mark.parametrize("name", ["assign", "startingOffsets", "endingOffsets",
                                  "startingOffsetsByTimestamp", "endingOffsetsByTimestamp"])
@pytest.mark.parametrize("text, says", [
    (TOO_DEEP_OBJECT, f"nested deeper than {OPTION_JSON_DEPTH} levels"),
    (TOO_DEEP, "nested deeper"),
    ('{"t":{"0":Infinity}}', "Infinity is not a whole number"),
    ('{"t":{"0":-Infinity}}', "-Infinity is not a whole number"),
    ('{"t":{"0":NaN}}', "NaN is not a whole number"),
    ('{"t":{"0":1e400}}', "1e400 is not a whole number"),
    ('{"t":{"0":1.5}}', "1.5 is not a whole number"),
    ('{"t":[1.5]}', "1.5 is not a whole number"),
], ids=["deep-objects", "deep-lists", "Infinity", "-Infinity", "NaN", "1e400", "1.5", "1.5-in-a-list"])
def test_option_json_fails_as_a_selection_error(name, text, says):
    with pytest.raises(SelectionError, match=f"option {name}: .*{says}"):
        selection.parse_selection({name: text})


@pytest.mark.parametrize("options, says", [
    ({"startingOffsets": '{"t":{"0":true}}'}, "is not a number"),
    ({"assign": '{"t":[0,true]}'}, "expected"),
    ({"endingOffsets": '{"t":{"0":9223372036854775808}}'}, "out of a 64-bit number's range"),
    ({"startingOffsetsByTimestamp": '{"t":{"0":-9223372036854775809}}'}, "out of a 64-bit"),
    ({"startingTimestamp": float("inf")}, "ms since the epoch"),
    # finding 50's fuzz target (fuzz/fuzz_config.py): a TypeError, a long's overflow, a float truncated
    ({"startingTimestamp": (1, 2)}, "ms since the epoch"), ({"startingTimestamp": str(1 << 63)}, "ms since the epoch"),
    ({"startingTimestamp": 1.5}, "ms since the epoch"), ({"startingTimestamp": True}, "ms since the epoch"),
])
def test_numbers_spark_would_not_read_into_a_long_are_refused(options, says):
    with pytest.raises(SelectionError, match=says):
        selection.parse_selection(options)


def test_what_spark_reads_is_read_as_before():
    sel = selection.parse_selection({"assign": '{"t":[0,1]}', "startingOffsets": '{"t":{"0":-2,"1":"23"}}',
                                     "endingOffsets": '{"t":{"0":9223372036854775807,"1":-1}}'})
    assert sel.start.value == {"t": {0: -2, 1: 23}}
    assert sel.end.value == {"t": {0: (1 << 63) - 1, 1: -1}}
    # brackets inside a topic name are not nesting
    assert selection.parse_selection({"assign": '{"' + "[{" * 40 + '":[0]}'}).assigned == {"[{" * 40: {0}}
    with pytest.raises(SelectionError, match='not JSON like {"topic":{"0":23}}'):
        selection.parse_selection({"startingOffsets": '{"t":{"0":23'})


def test_every_spark_site_reads_option_json_by_the_one_rule():
    from spark_udfs.read import typed as _typed
    from spark_udfs.read.spec import _paths, read_spec
    from spark_udfs.read.streaming import _from_json
    for surface in (lambda: read_spec({"path": "/p", "assign": TOO_DEEP_OBJECT}).for_batch("R"),
                    lambda: read_spec({"path": "/p", "startingOffsets": TOO_DEEP}).for_stream(),
                    lambda: _typed._topic_of(read_spec({"path": "/p", "assign": TOO_DEEP_OBJECT}))):
        with pytest.raises(SelectionError, match="nested deeper"):
            surface()
    assert _typed._topic_of(read_spec({"path": "/p", "assign": '{"orders":[0,1]}'})) == "orders"
    # a stream's offsets as Spark gives them back, text or dict
    assert _from_json('{"t":{"0":5}}') == _from_json({"t": {"0": 5}}) == {("t", 0): 5}
    for bad in (TOO_DEEP, '{"t":{"0":Infinity}}', {"t": {"0": float("inf")}}):
        with pytest.raises(SelectionError, match="the stream's offset"):
            _from_json(bad)
    # paths: a JSON list, else one path (also a text too deep to be a list kafkarec reads)
    assert _paths({"paths": '["/a","/b"]'}) == ["/a", "/b"]
    assert _paths({"paths": TOO_DEEP}) == [TOO_DEEP]
