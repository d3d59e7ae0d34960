"""Options given as text, as Spark gives them (the data source's, ``from_avro``'s and
``from_protobuf``'s): one rule for their names and one for their booleans, used by the decoders
here and by ``spark_udfs``: one rule each for their names, their booleans, their choices and
the JSON some of them hold; and the one rule of a whole number in a range, given as a value
(:func:`whole_number`) or as text (:func:`text_whole`), whose refusal names the option and the
value as :func:`shown` writes it."""
from __future__ import annotations

import json
import operator
import re
import reprlib
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkarec.errors import UsageError

__all__ = ["lower_keys", "text_bool", "text_choice", "option_json", "key_value_pairs", "OPTION_JSON_DEPTH",
           "whole_number", "text_whole", "shown", "LONG_MAX", "INT_MAX"]

#: Java's long and int: offsets, timestamps and counts of rows or bytes are longs (the core's
#: Py_ssize_t on a 64-bit build); partition numbers and partition counts are ints
LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
#: a whole number in option text: what Java's Long.parseLong reads (a sign, decimal digits),
#: no more digits than a long has, so the text of a huge number never reaches int() (whose
#: digit limit is a ValueError of its own)
_WHOLE_TEXT = re.compile(r"[+-]?0*([0-9]{1,19})")
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 60
_SHOWN.maxlong = 40

#: The deepest nesting an option's JSON may have: the deepest kafkarec reads is 2
#: (``{"orders":{"0":23}}``); much deeper would reach Python's recursion limit in the parser.
OPTION_JSON_DEPTH = 32
# a JSON string (to its end if it has no closing quote: one match, so the scan is linear) or a bracket
_JSON_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def lower_keys(options: Optional[Mapping[Any, Any]], *, drop_none: bool = False) -> dict:
    """Options with lower-case names (Spark's option names are case-insensitive); with
    ``drop_none``, options set to None are left out."""
    return {str(k).lower(): v for k, v in dict(options or {}).items() if not (drop_none and v is None)}


def text_bool(name: str, value: Any, error: type = UsageError) -> bool:
    """Spark's rule for a boolean option (Scala's ``toBoolean``): ``true`` or ``false`` in any case,
    anything else is ``error`` naming the option."""
    s = str(value).strip().lower()
    if s in ("true", "false"):
        return s == "true"
    raise error(f"option {name} must be true or false, got {value!r}")


def text_choice(name: str, value: Any, accepted: Sequence[str], *, default: Optional[str] = None,
                upper: bool = False, template: str = "{name} must be one of {accepted}, not {value!r}",
                error: type = UsageError):
    """One of ``accepted`` (any case; ``upper``: given in upper case), ``default`` when unset or
    blank; anything else is ``error`` (a :class:`kafkarec.errors.UsageError`, a ValueError)
    naming the option and what it accepts (``template`` keeps the wording each option's error
    had)."""
    if value is None or str(value).strip() == "":
        return default
    text = str(value).strip()
    text = text.upper() if upper else text.lower()
    if text not in accepted:
        raise error(template.format(name=name, accepted=", ".join(accepted), value=value))
    return text


def option_json(what: str, text: Any, example: str, error: type) -> Any:
    """The JSON of an option (``what``: "option startingOffsets"), whose numbers are whole
    numbers, as Spark's Kafka source reads them (JsonUtils: Jackson into Int and Long): nesting
    deeper than :data:`OPTION_JSON_DEPTH` (counted before parsing), a fraction or exponent,
    ``NaN`` or ``Infinity``, or text that is not JSON is ``error`` (a KafkaRecError) naming the
    option; ``example`` shows what JSON the option takes."""
    text = str(text)
    depth = 0
    for token in _JSON_STRING_OR_BRACKET.finditer(text):
        if token.group() in ("[", "{"):
            depth += 1
            if depth > OPTION_JSON_DEPTH:
                raise error(f"{what}: JSON nested deeper than {OPTION_JSON_DEPTH} levels (JSON like {example})")
        elif token.group() in ("]", "}"):
            depth -= 1

    def not_whole(number: str):
        raise error(f"{what}: {number} is not a whole number (JSON like {example})")

    try:
        return json.loads(text, parse_float=not_whole, parse_constant=not_whole)
    except error:
        raise
    except ValueError as exc:
        raise error(f"{what}: not JSON like {example}: {exc}") from None


def key_value_pairs(items: Optional[Iterable[str]], flag: str, form: str, *, strip: bool = True,
                    error: type = UsageError, unique: bool = False) -> dict:
    """A repeated command-line flag's ``KEY=VALUE`` texts as a dict (a later key wins, or with
    ``unique`` a key given twice is ``error``: where each item is a test that must hold, the
    earlier would be dropped silently); an item without ``=`` or with an empty key is ``error``
    ("``flag`` 'item': ``form``").  ``strip``: the key's surrounding spaces dropped (names of
    options; a header key is kept as given)."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise error(f"{flag} {item!r}: {form}")
        key = key.strip() if strip else key
        if unique and key in out:
            raise error(f"{flag}: {key!r} given twice (one test per name)")
        out[key] = value
    return out


def shown(value: Any) -> str:
    """``value`` as an error message shows it: its repr cut short (a huge number, a long list),
    on one line."""
    try:
        return _SHOWN.repr(value)
    except Exception:                    # a repr that raises (int's digit limit, a broken __repr__)
        return f"<{type(value).__name__}>"


def _span(lo: int, hi: int) -> str:
    def text(n):
        return {LONG_MAX: "2^63-1", INT_MAX: "2^31-1"}.get(n, str(n))
    return f"a whole number from {text(lo)} to {text(hi)}"


def whole_number(name: str, value: Any, lo: int, hi: int, *, error: type = UsageError) -> int:
    """``value`` as an int in ``[lo, hi]``: an int or what stands for one (``__index__``: NumPy's
    integers), never a bool, a float (``inf``, ``nan``, ``1.5``) or a string; anything else is
    ``error`` naming the option (``name``) and the value."""
    if not isinstance(value, bool):
        try:
            n = operator.index(value)
        except TypeError:
            n = None
        if n is not None and lo <= n <= hi:
            return n
    raise error(f"{name} {shown(value)}: {_span(lo, hi)}")


def text_whole(name: str, text: Any, lo: int, hi: int, *, error: type = UsageError) -> int:
    """A whole number in ``[lo, hi]`` written as text, as Spark's options are (Java's
    ``Long.parseLong``: an optional sign and decimal digits; no fraction, exponent, ``inf`` or
    ``nan``); anything else is ``error`` naming the option and the text."""
    m = _WHOLE_TEXT.fullmatch(str(text).strip())
    if m is not None:
        n = int(m.group(0))
        if lo <= n <= hi:
            return n
    raise error(f"option {name} must be {_span(lo, hi)}, got {shown(text)}")
