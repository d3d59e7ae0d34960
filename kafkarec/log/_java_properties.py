"""Java properties text read as ``java.util.Properties.load`` reads it: the one reader for the
properties kafkarec is given (the tiered-storage plugin's ``tieredStorageConfig``, which the plugin
itself gets through ``Properties.load``).

The rules are the JDK's ``Properties.LineReader`` and ``loadConvert``: lines end at ``\\n``, ``\\r``
or ``\\r\\n`` only; blank space is space, tab and form feed; a line whose first non-blank character
is ``#`` or ``!`` is a comment, and a comment never continues on the next line; any other line
ending in an odd number of backslashes continues on the next one, whose leading blank space is
dropped; the key ends at the first unescaped ``=``, ``:`` or blank space, and blank space then at
most one ``=`` or ``:`` then blank space separate it from the value; ``\\t``, ``\\n``, ``\\r``,
``\\f`` and ``\\uXXXX`` are escapes, a backslash before any other character stands for that
character.  A later key replaces an earlier one.  ``\\uXXXX`` escapes make UTF-16 code units, as
in a Java string: a pair of them stands for one character, as Java reads it.

tests/java/PropertiesOracle.java is the oracle (tests/test_java_properties.py,
fuzz/fuzz_properties.py)."""
from __future__ import annotations

import re
from typing import Dict, Iterator, Tuple

from kafkarec.errors import PropertiesError

__all__ = ["load_properties"]

_BLANK = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")


def load_properties(text: str, source: str = "properties") -> Dict[str, str]:
    """The keys and values of ``text`` as ``Properties.load`` reads them; a malformed ``\\uXXXX``
    escape (where Java throws IllegalArgumentException) is a :class:`PropertiesError` naming
    ``source`` and the line it is on."""
    out: Dict[str, str] = {}
    for start, line in _logical_lines(text):
        key_end = value_start = len(line)
        has_separator = escaped = False
        for i, c in enumerate(line):
            if not escaped and c in "=:":
                key_end, value_start, has_separator = i, i + 1, True
                break
            if not escaped and c in _BLANK:
                key_end, value_start = i, i + 1
                break
            escaped = c == "\\" and not escaped
        while value_start < len(line):
            c = line[value_start]
            if c not in _BLANK:
                if has_separator or c not in "=:":
                    break
                has_separator = True
            value_start += 1
        where = (source, text, start)
        out[_unescape(line[:key_end], where)] = _unescape(line[value_start:], where)
    return out


def _logical_lines(text: str) -> Iterator[Tuple[int, str]]:
    """(where it starts in ``text``, its text) of each line that holds a key, as the JDK's
    ``Properties.LineReader.readLine`` finds them, step by step: blank lines and comments left
    out, continuations joined (the backslash and the next line's leading blank space dropped)."""
    end = len(text)
    at = 0
    while True:
        line: list = []
        start = at
        skip_blank, continued, backslash, skip_lf = True, False, False, False
        while True:
            if at >= end:
                if line:    # a backslash that ends the text is dropped
                    yield start, "".join(line[:-1] if backslash else line)
                return
            c = text[at]
            at += 1
            if skip_lf:
                skip_lf = False
                if c == "\n":
                    continue
            if skip_blank:
                if c in _BLANK or (not continued and c in "\r\n"):
                    continue
                skip_blank = continued = False
            if not line:
                if c in "#!":   # a comment, whatever it ends with, ends at its line's end
                    breaks = [i for i in (text.find("\n", at), text.find("\r", at)) if i >= 0]
                    if not breaks:
                        return
                    at = min(breaks) + 1
                    skip_blank = True
                    continue
                start = at - 1
            if c not in "\r\n":
                line.append(c)
                backslash = c == "\\" and not backslash
            elif not line:
                skip_blank = True   # an empty line (also one a continuation emptied)
            elif at >= end or not backslash:
                yield start, "".join(line[:-1] if backslash else line)
                break
            else:               # continued on the next line, without its leading blank space
                line.pop()
                skip_blank = continued = True
                backslash = False
                skip_lf = c == "\r"


def _unescape(text: str, where: Tuple[str, str, int]) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        i += 1
        if c != "\\" or i == len(text):
            out.append(c)
            continue
        c = text[i]
        i += 1
        if c == "u":
            digits = text[i:i + 4]
            if not _HEX4.fullmatch(digits):
                source, whole, start = where
                line_number = len(re.findall(r"\r\n|\r|\n", whole[:start])) + 1
                raise PropertiesError(source, line_number, f"malformed \\uxxxx encoding: \\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    # \uXXXX pairs that are one character's UTF-16 surrogates are that character, as in Java;
    # a lone surrogate stays what it is.
    return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
