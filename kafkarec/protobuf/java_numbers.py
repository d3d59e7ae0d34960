"""Java's ``Double.toString`` and ``Float.toString`` (the JDK 19+ rule), for JSON text Java prints.

The rule (the JDK's javadoc of ``Double.toString(double)``): among the decimals that round to the value
(IEEE round-half-even), take those of the shortest length ``m`` (when ``m`` is 1, those of length 1 or 2), and
of these the one closest to the value (a tie: the one whose last digit is even).  It is written in plain
notation with at least one fractional digit when ``1e-3 <= |d| < 1e7`` (``100.0``, ``0.001``), else as
``d.ddd`` with ``E`` and the exponent (``1.0E7``, ``4.9E-324``).  ``Float.toString`` is the same rule over
the float's own neighbours.

JDK 17's ``Float.toString`` (the algorithm before JDK 19) prints more digits than this for some floats of
large or small magnitude (``1.13132703E18`` where the rule gives ``1.131327E18``); its ``Double.toString``
agreed with the rule on every double tried.
"""
from __future__ import annotations

import math
import struct

__all__ = ["java_double", "java_float"]


def java_double(x: float) -> str:
    """``Double.toString(x)``."""
    (bits,) = struct.unpack("<Q", struct.pack("<d", x))
    return _to_string(bits, 52, 11, x)


def java_float(x: float) -> str:
    """``Float.toString`` of ``x`` rounded to a float32 (pass a float32 value to print it exactly)."""
    (bits,) = struct.unpack("<I", struct.pack("<f", x))
    return java_float_bits(bits)


def java_float_bits(bits: int) -> str:
    """``Float.toString(Float.intBitsToFloat(bits))``."""
    bits &= 0xFFFFFFFF
    (value,) = struct.unpack("<f", struct.pack("<I", bits))
    return _to_string(bits, 23, 8, value)


def _to_string(bits: int, frac_bits: int, exp_bits: int, value: float) -> str:
    sign = "-" if bits >> (frac_bits + exp_bits) else ""
    biased = (bits >> frac_bits) & ((1 << exp_bits) - 1)
    frac = bits & ((1 << frac_bits) - 1)
    if biased == (1 << exp_bits) - 1:
        return "NaN" if frac else sign + "Infinity"
    if biased == 0 and frac == 0:
        return sign + "0.0"
    shift = (1 << (exp_bits - 1)) - 1 + frac_bits          # 1075 for doubles, 150 for floats
    if biased == 0:
        m, e = frac, 1 - shift
    else:
        m, e = frac | (1 << frac_bits), biased - shift
    # the value is m * 2^e; in units of 2^(e-2) it is 4m and its rounding interval is [low, high]
    power_of_two = frac == 0 and biased > 1
    low = 4 * m - (1 if power_of_two else 2)               # a power of two: the gap below is half
    high = 4 * m + 2
    inclusive = m % 2 == 0
    found = None if power_of_two else _fast(abs(value), frac_bits == 52, m, e, low, high, inclusive)
    c, k = found or _shortest(m, e, low, high, inclusive)
    return sign + _format(c, k)


def _digits(text: str) -> tuple[int, int]:
    """(c, k) of a decimal in Python's e-notation or repr, c without trailing zeros."""
    mantissa, _, exp = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    c = int(whole + fraction)
    k = (int(exp) if exp else 0) - len(fraction)
    while c % 10 == 0:
        c //= 10
        k += 1
    return c, k


def _fast(value: float, double: bool, m: int, e: int, low: int, high: int, inclusive: bool):
    """The answer from Python's correctly rounded formatting, or None where only the exact search
    gives it (a shortest length of 1).  A double: repr is the shortest decimal that rounds to it, the
    closest of those.  A float: the closest decimal of each length, shortest first, checked exactly."""
    if double:
        c, k = _digits(repr(value))
        return (c, k) if c >= 10 else None
    for p in range(1, 10):
        c, k = _digits(f"{value:.{p - 1}e}")
        if _inside(c, k, e, low, high, inclusive):
            return (c, k) if c >= 10 else None
    return None


def _inside(c: int, k: int, e: int, low: int, high: int, inclusive: bool) -> bool:
    lo, hi = _cmp(c, k, low, e), _cmp(c, k, high, e)
    return (lo > 0 or (inclusive and lo == 0)) and (hi < 0 or (inclusive and hi == 0))


def _cmp(c: int, k: int, units: int, e: int) -> int:
    """Sign of c*10^k - units*2^(e-2), exactly."""
    left, right = c, units
    if k >= 0:
        left *= 10 ** k
    else:
        right *= 10 ** -k
    if e - 2 >= 0:
        right <<= e - 2
    else:
        left <<= 2 - e
    return (left > right) - (left < right)


def _shortest(m: int, e: int, low: int, high: int, inclusive: bool) -> tuple[int, int]:
    """(c, k): the decimal c*10^k that Java prints for m*2^e (c without trailing zeros)."""
    value = 4 * m
    top = math.floor(math.log10(m) + e * math.log10(2))    # the decimal exponent of the value, then exact
    while _cmp(1, top, value, e) > 0:
        top -= 1
    while _cmp(1, top + 1, value, e) <= 0:
        top += 1

    def candidates(p: int) -> list:
        k = top - p + 1
        # floor(value / 10^k) exactly
        num, den = value, 1
        if e - 2 >= 0:
            num <<= e - 2
        else:
            den <<= 2 - e
        if k >= 0:
            den *= 10 ** k
        else:
            num *= 10 ** -k
        below = num // den
        return [(c, k) for c in {below, below + 1} if c > 0 and _inside(c, k, e, low, high, inclusive)]

    for p in range(1, 20):
        found = candidates(p)
        if found:
            if p == 1:                  # length 1: the closest of the decimals of length 1 or 2
                found = candidates(2) or found
            break
    else:                               # (cannot happen: 17 digits always round-trip)
        raise AssertionError("no decimal rounds to the value")

    def distance(ck) -> tuple:
        # |c*10^k - value| over a denominator both candidates (of one k) share; a tie: the even digit
        c, k = ck
        num, scale = (c * 10 ** k, 1) if k >= 0 else (c, 10 ** -k)
        v_num, v_den = (value << (e - 2), 1) if e >= 2 else (value, 1 << (2 - e))
        return (abs(num * v_den - v_num * scale), c % 2)

    c, k = min(found, key=distance)
    while c % 10 == 0:
        c //= 10
        k += 1
    return c, k


def _format(c: int, k: int) -> str:
    digits = str(c)
    n = len(digits)
    exp = k + n - 1                     # the exponent of the first digit
    if -3 <= exp < 7:
        if exp >= 0:
            whole = digits[:exp + 1].ljust(exp + 1, "0")
            return whole + "." + (digits[exp + 1:] or "0")
        return "0." + "0" * (-exp - 1) + digits
    return digits[0] + "." + (digits[1:] or "0") + "E" + str(exp)
