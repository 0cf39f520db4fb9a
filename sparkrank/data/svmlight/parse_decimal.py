"""Decimal text to the correctly rounded double, in numba (the numbers of SVMlight lines).

Every number is converted to the double that Python's ``float(token)`` returns:

* digits are accumulated into an int64 significand ``w`` (trailing zeros stripped, at most
  18 significant digits) with a decimal exponent ``q``;
* Clinger's fast path: when ``w <= 2**53`` and ``|q| <= 22`` both ``w`` and ``10**|q|`` are
  exact doubles, so one IEEE multiplication or division gives the correctly rounded result
  (W. D. Clinger, "How to read floating point numbers accurately", PLDI 1990);
* otherwise the Eisel-Lemire algorithm (D. Lemire, "Number parsing at a gigabyte per
  second", Software: Practice and Experience 51(8), 2021; the algorithm of the
  ``fast_float`` library) computes the correctly rounded double from a 128-bit truncated
  power of five; in the rare cases where it cannot decide, and for tokens with more than
  18 significant digits, :func:`parse_number` answers ``SLOW`` and the reader has Python's
  ``float()`` convert the token after the numba pass.

The byte classes that end a token live here too: a number ends where a token ends.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# Number-parse outcomes.
OK = 0
SLOW = 1  # syntactically valid decimal, to be converted by Python's float()
MALFORMED = 2
NAN = 3
INF = 4  # the value (+inf / -inf) carries the sign

U64 = np.uint64
_MASK32 = np.uint64(0xFFFFFFFF)
_U64MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_PREC_MASK = np.uint64(0xFFFFFFFFFFFFFFFF >> 55)  # 52 explicit bits + 3, see eisel_lemire
TWO53 = 9007199254740992

# Exact powers of ten: doubles up to 1e22 (exact).
POW10_F64 = np.array([float(10**k) for k in range(23)], dtype=np.float64)


def _pow5_table() -> np.ndarray:
    """128-bit truncated powers of five 5**q, q in [-342, 308], as (hi, lo) uint64 pairs.

    The same construction as the table of the fast_float library: the most significant
    bit is moved to bit 127 and the rest truncated; for q < 0 the reciprocal
    ``2**b // 5**-q + 1`` is used.  Exact integer arithmetic, computed at import time.
    """
    out = []

    def norm(number: int) -> None:
        # move the most significant bit to bit 127, truncating what falls off
        shift = 128 - number.bit_length()
        number = number << shift if shift >= 0 else number >> -shift
        out.append(number >> 64)
        out.append(number & 0xFFFFFFFFFFFFFFFF)

    for q in range(-342, 0):
        power5 = 5**-q
        z = power5.bit_length()  # smallest z with 2**z >= 5**-q (never a power of two)
        if q >= -17:
            norm(2 ** (z + 127) // power5 + 1)
        else:
            norm(2 ** (2 * z + 64) // power5 + 1)
    for q in range(0, 309):
        norm(5**q)
    return np.array(out, dtype=np.uint64)


_POW5_128 = _pow5_table()


# Byte classes, looked up instead of chains of comparisons: 1 = blank (space, tab, VT,
# FF), 2 = ends a token (blanks, LF, CR, '#': a comment may touch the last token).  LF,
# CRLF and a lone CR all end a line, exactly as Hadoop's LineRecordReader splits lines,
# so the Spark reader (which gets its lines from Hadoop) and this one agree on every
# file, line numbers included.
_BYTE_CLASS = np.zeros(256, dtype=np.uint8)
for _c in b" \t\x0b\x0c":
    _BYTE_CLASS[_c] = 3
_BYTE_CLASS[ord("\n")] = 2
_BYTE_CLASS[ord("\r")] = 2
_BYTE_CLASS[ord("#")] = 2
del _c


@njit(cache=True)
def is_term(c) -> bool:
    return (_BYTE_CLASS[c] & 2) != 0


@njit(cache=True)
def is_blank(c) -> bool:
    return (_BYTE_CLASS[c] & 1) != 0


@njit(cache=True)
def is_eol(c) -> bool:
    return c == 10 or c == 13


@njit(cache=True)
def after_eol(buf, p):
    """Position after the line end at ``buf[p]`` (LF, CR, or CRLF as one line end)."""
    if buf[p] == 13 and p + 1 < buf.shape[0] and buf[p + 1] == 10:
        return p + 2
    return p + 1


@njit(cache=True)
def token_end(buf, p):
    n = buf.shape[0]
    while p < n and not is_term(buf[p]):
        p += 1
    return p


@njit(cache=True)
def mul128(a, b):
    """Full 64x64 -> 128-bit unsigned product as (hi, lo); numba has no 128-bit ints."""
    a_lo = a & _MASK32
    a_hi = a >> U64(32)
    b_lo = b & _MASK32
    b_hi = b >> U64(32)
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> U64(32)) + (p1 & _MASK32) + p2  # < 2**64, cannot overflow
    hi = p3 + (p1 >> U64(32)) + (mid >> U64(32))
    lo = (mid << U64(32)) | (p0 & _MASK32)
    return hi, lo


@njit(cache=True)
def _clz64(x):
    if x == U64(0):
        return 64
    n = 0
    if (x >> U64(32)) == U64(0):
        n += 32
        x = x << U64(32)
    if (x >> U64(48)) == U64(0):
        n += 16
        x = x << U64(16)
    if (x >> U64(56)) == U64(0):
        n += 8
        x = x << U64(8)
    if (x >> U64(60)) == U64(0):
        n += 4
        x = x << U64(4)
    if (x >> U64(62)) == U64(0):
        n += 2
        x = x << U64(2)
    if (x >> U64(63)) == U64(0):
        n += 1
    return n


@njit(cache=True)
def eisel_lemire(w_int, q):
    """Correctly rounded double nearest to ``w * 10**q`` (w > 0, at most 19 digits).

    Returns ``(ok, value)``; ``ok`` is False when the truncated 128-bit product cannot
    decide the rounding (then the caller falls back to Python's ``float``).  Follows
    ``compute_float`` of fast_float for binary64: 52 explicit mantissa bits, minimum
    exponent -1023, powers of ten in [-342, 308], round-to-even window q in [-4, 23].
    """
    if q < -342:
        return True, 0.0  # w < 10**19, so w * 10**q < 2**-1075: rounds to zero
    if q > 308:
        return True, np.inf
    w = U64(w_int)
    lz = _clz64(w)
    w = w << U64(lz)
    idx = 2 * (q + 342)
    hi, lo = mul128(w, _POW5_128[idx])
    if (hi & _PREC_MASK) == _PREC_MASK:
        # the low bits of the first product are all ones: add the second word's carry
        hi2, _lo2 = mul128(w, _POW5_128[idx + 1])
        lo = lo + hi2
        if hi2 > lo:
            hi = hi + U64(1)
    if lo == _U64MAX and (q < -27 or q > 55):
        # Ambiguous truncation outside the range where the product is exact; the
        # (older, conservative) fast_float code falls back here, and so do we.
        return False, 0.0
    upperbit = np.int64(hi >> U64(63))
    shift = upperbit + 9  # 64 - 52 - 3
    mantissa = hi >> U64(shift)
    power2 = (((152170 + 65536) * q) >> 16) + 63 + upperbit - lz + 1023
    if power2 <= 0:  # subnormal or zero
        if -power2 + 1 >= 64:
            return True, 0.0
        mantissa = mantissa >> U64(-power2 + 1)
        mantissa = mantissa + (mantissa & U64(1))
        mantissa = mantissa >> U64(1)
        # mantissa == 2**52 here means it rounded up to the smallest normal: the same formula
        return True, math.ldexp(float(mantissa), -1074)
    if lo <= U64(1) and q >= -4 and q <= 23 and (mantissa & U64(3)) == U64(1):
        # exactly halfway between two doubles: round to even instead of up
        if (mantissa << U64(shift)) == hi:
            mantissa = mantissa & ~U64(1)
    mantissa = mantissa + (mantissa & U64(1))
    mantissa = mantissa >> U64(1)
    if mantissa >= U64(2 << 52):
        mantissa = U64(1 << 52)
        power2 += 1
    if power2 >= 0x7FF:
        return True, np.inf
    # mantissa includes the implicit bit: value = mantissa * 2**(power2 - 1023 - 52), exact
    return True, math.ldexp(float(mantissa), power2 - 1075)


@njit(cache=True)
def _match_word(buf, p, e, word):
    """Case-insensitive comparison of buf[p:e] with an ASCII lower-case word (uint8 array)."""
    if e - p != word.shape[0]:
        return False
    for k in range(word.shape[0]):
        c = buf[p + k]
        if c >= 65 and c <= 90:
            c = c + 32
        if c != word[k]:
            return False
    return True


_W_NAN = np.frombuffer(b"nan", dtype=np.uint8).copy()
_W_INF = np.frombuffer(b"inf", dtype=np.uint8).copy()
_W_INFINITY = np.frombuffer(b"infinity", dtype=np.uint8).copy()


@njit(cache=True)
def parse_number(buf, p):
    """Parse the decimal token starting at ``buf[p]``.

    Returns ``(kind, value, end)``: ``kind`` is ``OK`` (value set), ``SLOW`` (valid, to
    be converted by Python), ``MALFORMED``, ``NAN`` or ``INF`` (value = +-inf); ``end``
    is the byte after the token.
    """
    n = buf.shape[0]
    start = p
    neg = False
    if p < n and (buf[p] == 45 or buf[p] == 43):
        neg = buf[p] == 45
        p += 1
    # Significant digits go into mant (at most 18, so it fits int64); leading zeros are
    # skipped; beyond 18 digits a zero only shifts the exponent and anything else makes
    # the token "slow" (Python converts it).  Trailing zeros inside mant are stripped
    # later, only when that is needed to reach the fast path.
    mant = 0
    nd = 0  # digits in mant
    scale = 0  # decimal exponent: value = mant * 10**scale
    ndig = 0  # all digits seen
    many = False
    while p < n:
        d = np.int64(buf[p]) - 48
        if d < 0 or d > 9:
            break
        ndig += 1
        if nd < 18:
            if mant != 0 or d != 0:
                mant = mant * 10 + d
                nd += 1
        elif d == 0:
            scale += 1
        else:
            many = True
        p += 1
    if p < n and buf[p] == 46:  # '.'
        p += 1
        while p < n:
            d = np.int64(buf[p]) - 48
            if d < 0 or d > 9:
                break
            ndig += 1
            if nd < 18:
                scale -= 1
                if mant != 0 or d != 0:
                    mant = mant * 10 + d
                    nd += 1
            elif d != 0:
                many = True
            p += 1
    bad = ndig == 0
    if not bad and p < n and (buf[p] == 101 or buf[p] == 69):  # 'e' / 'E'
        ok, ev, p = _exponent(buf, p + 1)
        bad = not ok
        scale += ev
    if bad or (p < n and not is_term(buf[p])):
        return _word(buf, start)
    if many:
        return SLOW, 0.0, p
    kind, v = _to_double(mant, scale)
    if kind == INF:
        return INF, (-np.inf if neg else np.inf), p
    if kind == SLOW:
        return SLOW, 0.0, p
    if neg:
        v = -v
    return OK, v, p


@njit(cache=True)
def _exponent(buf, p):
    """The signed decimal exponent whose sign or first digit is at ``buf[p]`` (after the
    ``e``): ``(ok, exponent, end)``, ``ok`` false when it has no digit; its magnitude stops
    growing at 10**9 (any such exponent over- or underflows)."""
    n = buf.shape[0]
    eneg = False
    if p < n and (buf[p] == 45 or buf[p] == 43):
        eneg = buf[p] == 45
        p += 1
    ev = 0
    ed = 0
    while p < n:
        c = buf[p]
        if c < 48 or c > 57:
            break
        if ev < 100000000:
            ev = ev * 10 + (np.int64(c) - 48)
        ed += 1
        p += 1
    return ed != 0, (-ev if eneg else ev), p


@njit(cache=True)
def _word(buf, start):
    """The token at ``buf[start]`` that is not a decimal number: ``nan`` or ``inf`` /
    ``infinity`` (any case, signed), else malformed; ``(kind, value, end)`` as
    :func:`parse_number`."""
    e = token_end(buf, start)
    s = start
    if s < e and (buf[s] == 45 or buf[s] == 43):
        s += 1
    if _match_word(buf, s, e, _W_NAN):
        return NAN, np.nan, e
    if _match_word(buf, s, e, _W_INF) or _match_word(buf, s, e, _W_INFINITY):
        return INF, (-np.inf if buf[start] == 45 else np.inf), e
    return MALFORMED, 0.0, e


@njit(cache=True)
def _to_double(mant, scale):
    """``mant * 10**scale`` (``mant >= 0``) correctly rounded: ``(OK, value)``, ``(INF, inf)``
    when it overflows, ``(SLOW, 0)`` when Eisel-Lemire cannot decide (Python converts it)."""
    v = 0.0
    if mant != 0:
        if mant > TWO53 or scale < -22:
            # e.g. "4.5260000000000000e+005": strip the trailing zeros of the significand
            while mant % 10 == 0:
                mant //= 10
                scale += 1
        if scale >= -22 and scale <= 22 and mant <= TWO53:
            # Clinger: both operands exact, one correctly rounded operation
            if scale >= 0:
                v = float(mant) * POW10_F64[scale]
            else:
                v = float(mant) / POW10_F64[-scale]
        else:
            ok, v = eisel_lemire(mant, scale)
            if not ok:
                return SLOW, 0.0
            if v == np.inf:
                return INF, np.inf
    return OK, v

