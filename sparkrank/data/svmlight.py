"""Fast, exact SVMlight / LETOR text reader and writer.

Format, one example per line::

    label [qid:Q] index:value index:value ... [# comment]

Indices are 1-based (``zero_based=True`` accepts 0-based files), strictly increasing within
a line; tokens are separated by spaces or tabs; LF, CRLF or lone CR line endings (as Hadoop
splits lines); blank lines and comment-only lines are skipped.  ``Q`` is an integer or any
other token without blanks; the first qid decides (see :class:`QidLayout`).  A file without
any ``qid:`` is one global ranking.  gzip-compressed files are recognised by their magic
bytes (not their name) and decompressed in memory.

How the reader is fast
----------------------
The whole file is memory-mapped (or read into one ``bytes`` object) and scanned by a numba byte-level parser
in two passes: pass 1 counts newlines and ``:`` bytes (upper bounds on rows and non-zeros,
so every output array is allocated once), pass 2 fills labels, CSR ``indptr`` / ``indices``
/ ``values`` and qids.  Time and memory are linear in the file size.

How the reader is exact
-----------------------
Every number is converted to the double that Python's ``float(token)`` returns (the
correctly rounded one):

* digits are accumulated into an int64 significand ``w`` (trailing zeros stripped, at most
  18 significant digits) with a decimal exponent ``q``;
* Clinger's fast path: when ``w <= 2**53`` and ``|q| <= 22`` both ``w`` and ``10**|q|`` are
  exact doubles, so one IEEE multiplication or division gives the correctly rounded result
  (W. D. Clinger, "How to read floating point numbers accurately", PLDI 1990);
* otherwise the Eisel-Lemire algorithm (D. Lemire, "Number parsing at a gigabyte per
  second", Software: Practice and Experience 51(8), 2021; the algorithm of the
  ``fast_float`` library) computes the correctly rounded double from a 128-bit truncated
  power of five; in the rare cases where it cannot decide, and for tokens with more than
  18 significant digits, the token's byte span is recorded and Python's ``float()`` parses
  it after the numba pass (these "slow" tokens are usually none at all).

The numba code never raises: it returns an error code, the line number and the byte span
of the offending token, and Python builds the :class:`SVMLightFormatError` message.

The writer
----------
Values are written exactly as Python's ``repr`` writes them (the shortest string that
reads back to the same double).  For values in [1e-10, 1e16) -- nearly all feature
values in practice -- numba finds repr's digits with exact 128-bit integer arithmetic
(see :func:`_shortest_digits`) and writes the bytes; other values go through ``repr``.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import mmap
import os
import zlib
from dataclasses import dataclass
from typing import Iterator, Sequence, Union

import numpy as np
import scipy.sparse as sp
from numba import njit

from .block import DataError, RankingData, max_features_limit, max_features_message

__all__ = [
    "SVMLightFormatError",
    "SVMLightFile",
    "read_svmlight",
    "load_svmlight",
    "write_svmlight",
]

PathLike = Union[str, "os.PathLike[str]"]


class SVMLightFormatError(DataError):
    """Malformed SVMlight/LETOR text.

    The message names the file, the 1-based line number and what is wrong.

    Attributes
    ----------
    path : str
        The file being read.
    line : int
        1-based line number of the problem (0 when it is not tied to one line).
    """

    def __init__(self, message: str, *, path: str = "", line: int = 0):
        super().__init__(message)
        self.path = path
        self.line = line


@dataclass
class SVMLightFile:
    """Contents of an SVMlight/LETOR file, in file order.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix (m, n)
        Feature rows, of the requested dtype; ``n`` is ``n_features`` when given, else the
        largest index in the file (plus one for 0-based files).  Explicit zeros in the file
        are not stored.
    labels : float64 ndarray (m,)
        The label of every row.
    qid : ndarray (m,) or None
        int64 when the first qid is an integer (then every one is), a numpy ``str`` array
        (the tokens as written) otherwise; ``None`` when the file has no ``qid:`` at all.
    n_bytes : int
        Number of (uncompressed) text bytes parsed.
    qid_layout : QidLayout or None
        The qid rule the rows followed (``None`` for text without data lines).
    """

    X: sp.csr_matrix
    labels: np.ndarray
    qid: np.ndarray | None
    n_bytes: int
    qid_layout: "QidLayout | None" = None


# --------------------------------------------------------------------------------------
# numba number parsing
# --------------------------------------------------------------------------------------

# Number-parse outcomes.
_OK = 0
_SLOW = 1  # syntactically valid decimal, to be converted by Python's float()
_MALFORMED = 2
_NAN = 3
_INF = 4  # the value (+inf / -inf) carries the sign

# Error codes returned by the scanner.
_E_NONE = 0
_E_LABEL = 1  # malformed label
_E_VALUE = 2  # malformed feature value
_E_COLON = 3  # feature token without ':'
_E_INDEX = 4  # malformed feature index
_E_INDEX_LOW = 5  # index <= 0 (1-based) or < 0 (0-based): aux1 = index
_E_ORDER = 6  # indices not strictly increasing: aux1 = index, aux2 = previous index
_E_LABEL_NONFINITE = 7  # aux2 = _NAN / _INF, aux1 = sign
_E_FEAT_NONFINITE = 8  # aux1 = index, aux2 = kind * sign
_E_QID_EMPTY = 9
_E_QID_POS = 10
_E_NFEAT = 11  # aux1 = index
_E_INDEX_BIG = 12
_E_MAX_FEATURES = 13  # aux1 = index

_U64 = np.uint64
_MASK32 = np.uint64(0xFFFFFFFF)
_U64MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_PREC_MASK = np.uint64(0xFFFFFFFFFFFFFFFF >> 55)  # 52 explicit bits + 3, see _eisel_lemire
_TWO53 = 9007199254740992

# Exact powers of ten: integers up to 10**18 (< 2**63) and doubles up to 1e22 (exact).
_POW10_INT = np.array([10**k for k in range(19)], dtype=np.int64)
_POW10_F64 = np.array([float(10**k) for k in range(23)], dtype=np.float64)


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
def _is_term(c) -> bool:
    return (_BYTE_CLASS[c] & 2) != 0


@njit(cache=True)
def _is_blank(c) -> bool:
    return (_BYTE_CLASS[c] & 1) != 0


@njit(cache=True)
def _is_eol(c) -> bool:
    return c == 10 or c == 13


@njit(cache=True)
def _after_eol(buf, p):
    """Position after the line end at ``buf[p]`` (LF, CR, or CRLF as one line end)."""
    if buf[p] == 13 and p + 1 < buf.shape[0] and buf[p + 1] == 10:
        return p + 2
    return p + 1


@njit(cache=True)
def _token_end(buf, p):
    n = buf.shape[0]
    while p < n and not _is_term(buf[p]):
        p += 1
    return p


@njit(cache=True)
def _mul128(a, b):
    """Full 64x64 -> 128-bit unsigned product as (hi, lo); numba has no 128-bit ints."""
    a_lo = a & _MASK32
    a_hi = a >> _U64(32)
    b_lo = b & _MASK32
    b_hi = b >> _U64(32)
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> _U64(32)) + (p1 & _MASK32) + p2  # < 2**64, cannot overflow
    hi = p3 + (p1 >> _U64(32)) + (mid >> _U64(32))
    lo = (mid << _U64(32)) | (p0 & _MASK32)
    return hi, lo


@njit(cache=True)
def _clz64(x):
    if x == _U64(0):
        return 64
    n = 0
    if (x >> _U64(32)) == _U64(0):
        n += 32
        x = x << _U64(32)
    if (x >> _U64(48)) == _U64(0):
        n += 16
        x = x << _U64(16)
    if (x >> _U64(56)) == _U64(0):
        n += 8
        x = x << _U64(8)
    if (x >> _U64(60)) == _U64(0):
        n += 4
        x = x << _U64(4)
    if (x >> _U64(62)) == _U64(0):
        n += 2
        x = x << _U64(2)
    if (x >> _U64(63)) == _U64(0):
        n += 1
    return n


@njit(cache=True)
def _eisel_lemire(w_int, q):
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
    w = _U64(w_int)
    lz = _clz64(w)
    w = w << _U64(lz)
    idx = 2 * (q + 342)
    hi, lo = _mul128(w, _POW5_128[idx])
    if (hi & _PREC_MASK) == _PREC_MASK:
        # the low bits of the first product are all ones: add the second word's carry
        hi2, _lo2 = _mul128(w, _POW5_128[idx + 1])
        lo = lo + hi2
        if hi2 > lo:
            hi = hi + _U64(1)
    if lo == _U64MAX and (q < -27 or q > 55):
        # Ambiguous truncation outside the range where the product is exact; the
        # (older, conservative) fast_float code falls back here, and so do we.
        return False, 0.0
    upperbit = np.int64(hi >> _U64(63))
    shift = upperbit + 9  # 64 - 52 - 3
    mantissa = hi >> _U64(shift)
    power2 = (((152170 + 65536) * q) >> 16) + 63 + upperbit - lz + 1023
    if power2 <= 0:  # subnormal or zero
        if -power2 + 1 >= 64:
            return True, 0.0
        mantissa = mantissa >> _U64(-power2 + 1)
        mantissa = mantissa + (mantissa & _U64(1))
        mantissa = mantissa >> _U64(1)
        # mantissa == 2**52 here means it rounded up to the smallest normal: the same formula
        return True, math.ldexp(float(mantissa), -1074)
    if lo <= _U64(1) and q >= -4 and q <= 23 and (mantissa & _U64(3)) == _U64(1):
        # exactly halfway between two doubles: round to even instead of up
        if (mantissa << _U64(shift)) == hi:
            mantissa = mantissa & ~_U64(1)
    mantissa = mantissa + (mantissa & _U64(1))
    mantissa = mantissa >> _U64(1)
    if mantissa >= _U64(2 << 52):
        mantissa = _U64(1 << 52)
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
def _parse_number(buf, p):
    """Parse the decimal token starting at ``buf[p]``.

    Returns ``(kind, value, end)``: ``kind`` is ``_OK`` (value set), ``_SLOW`` (valid, to
    be converted by Python), ``_MALFORMED``, ``_NAN`` or ``_INF`` (value = +-inf); ``end``
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
        p += 1
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
        if ed == 0:
            bad = True
        scale += -ev if eneg else ev
    if bad or (p < n and not _is_term(buf[p])):
        e = _token_end(buf, start)
        s = start
        if s < e and (buf[s] == 45 or buf[s] == 43):
            s += 1
        if _match_word(buf, s, e, _W_NAN):
            return _NAN, np.nan, e
        if _match_word(buf, s, e, _W_INF) or _match_word(buf, s, e, _W_INFINITY):
            return _INF, (-np.inf if buf[start] == 45 else np.inf), e
        return _MALFORMED, 0.0, e
    if many:
        return _SLOW, 0.0, p
    v = 0.0
    if mant != 0:
        if mant > _TWO53 or scale < -22:
            # e.g. "4.5260000000000000e+005": strip the trailing zeros of the significand
            while mant % 10 == 0:
                mant //= 10
                scale += 1
        if scale >= -22 and scale <= 22 and mant <= _TWO53:
            # Clinger: both operands exact, one correctly rounded operation
            if scale >= 0:
                v = float(mant) * _POW10_F64[scale]
            else:
                v = float(mant) / _POW10_F64[-scale]
        else:
            ok, v = _eisel_lemire(mant, scale)
            if not ok:
                return _SLOW, 0.0, p
            if v == np.inf:
                return _INF, (-np.inf if neg else np.inf), p
    if neg:
        v = -v
    return _OK, v, p


# --------------------------------------------------------------------------------------
# numba scanner
# --------------------------------------------------------------------------------------


@njit(cache=True)
def _count_bytes(buf):
    """Pass 1: number of LF and CR bytes and of ':' bytes (bounds on rows and non-zeros)."""
    nl = 0
    colons = 0
    for i in range(buf.shape[0]):  # branch-free, so LLVM vectorises it
        c = buf[i]
        nl += np.int64(c == 10) + np.int64(c == 13)
        colons += np.int64(c == 58)
    return nl, colons


# Explicit signatures: called with literal and variable arguments, these would otherwise
# be compiled once per argument-type combination.
@njit("int64[:](int64[:], int64, int64, int64, int64, int64)", cache=True)
def _push_slow(slow, n_slow, target, s, e, line):
    """Record a token for Python's float(); ``slow`` is flat, 4 entries per token:
    (target, start, end, line).  Grows by doubling; returns the (possibly new) array."""
    if 4 * n_slow + 4 > slow.shape[0]:
        grown = np.empty(2 * slow.shape[0], np.int64)
        for k in range(4 * n_slow):
            grown[k] = slow[k]
        slow = grown
    k = 4 * n_slow
    slow[k] = target
    slow[k + 1] = s
    slow[k + 2] = e
    slow[k + 3] = line
    return slow


@njit("void(int64[:], int64, int64, int64, int64, int64, int64)", cache=True)
def _set_err(err, code, line, s, e, aux1, aux2):
    err[0] = code
    err[1] = line
    err[2] = s
    err[3] = e
    err[4] = aux1
    err[5] = aux2


@njit(cache=True)
def _bad_token_code(buf, tok):
    """Error code and end of a token that is neither ``index:value`` nor ``qid:``."""
    te = _token_end(buf, tok)
    for k in range(tok, te):
        if buf[k] == 58:
            return _E_INDEX, te
    return _E_COLON, te


@njit(cache=True)
def _parse_qid(buf, s, te):
    """``(is_int, value)`` of the qid token ``buf[s:te]`` (integers of at most 18 digits)."""
    k = s
    neg = False
    if buf[k] == 45 or buf[k] == 43:
        neg = buf[k] == 45
        k += 1
    if k >= te or te - k > 18:
        return False, 0
    v = 0
    while k < te:
        ch = buf[k]
        if ch < 48 or ch > 57:
            return False, 0
        v = v * 10 + (np.int64(ch) - 48)
        k += 1
    return True, -v if neg else v


@njit(cache=True)
def _scan(buf, lo, hi, zero_based, n_features_limit, max_features, state, labels, indptr, indices, values,
          qid_int, qid_start, qid_end, qid_kind, row_line, slow, err):
    """Pass 2 over ``buf[lo:hi]``: fill the output arrays; never raises (errors come back in ``err``).

    ``hi`` is right after a LF (or the end of the text), so a chunk holds whole lines and
    the file can be scanned chunk by chunk.  ``state`` = [line, row, nnz, max_col, n_slow]
    carries the counters from one chunk to the next (lines are numbered from ``line + 1``;
    the text may be a piece of a file).  ``n_features_limit`` and ``max_features`` (-1:
    none) bound the column indices: the first is the caller's fixed width, the second the
    guard against a huge dimension.  Returns ``slow`` (grown if needed).

    ``err`` = [code, line, token start, token end, aux1, aux2]; ``slow`` holds 4 entries
    per token, (target, start, end, line), with target >= 0 an index into ``values`` and
    target < 0 the label of row ``-target - 1``.
    """
    n = hi
    line, row, nnz, max_col, n_slow = state[0], state[1], state[2], state[3], state[4]
    base = 0 if zero_based else 1
    p = lo
    indptr[row] = nnz
    # One loop over tokens with a single _parse_number call site (label or feature
    # value): numba/LLVM inline the parser at every call site, and compile time matters.
    in_row = False  # inside a data line, after its label
    prev = -1  # previous column of this row
    while p < n:
        if not in_row:
            line += 1
            while p < n and _is_blank(buf[p]):
                p += 1
            if p >= n:
                break
            c = buf[p]
            if _is_eol(c):
                p = _after_eol(buf, p)
                continue
            if c == 35:
                while p < n and not _is_eol(buf[p]):
                    p += 1
                if p < n:
                    p = _after_eol(buf, p)
                continue
            tok = p
            col = -1
            idx = 0
        else:
            while p < n and _is_blank(buf[p]):
                p += 1
            if p >= n:
                break
            c = buf[p]
            tok = p
            if c < 48 or c > 57:  # not a feature (the common case is tested first)
                if _is_eol(c):
                    p = _after_eol(buf, p)
                    in_row = False
                    row += 1
                    indptr[row] = nnz
                    continue
                if c == 35:
                    while p < n and not _is_eol(buf[p]):
                        p += 1
                    continue
                if c == 113 and p + 3 < n and buf[p + 1] == 105 and buf[p + 2] == 100 and buf[p + 3] == 58:
                    # "qid:" -- allowed once, directly after the label
                    te = _token_end(buf, p)
                    if qid_kind[row] != 0 or prev >= 0:
                        _set_err(err, _E_QID_POS, line, tok, te, 0, 0)
                        break
                    if p + 4 == te:
                        _set_err(err, _E_QID_EMPTY, line, tok, te, 0, 0)
                        break
                    is_int, qv = _parse_qid(buf, p + 4, te)
                    qid_kind[row] = 1 if is_int else 2
                    qid_int[row] = qv
                    qid_start[row] = p + 4
                    qid_end[row] = te
                    p = te
                    continue
                code, te = _bad_token_code(buf, tok)
                _set_err(err, code, line, tok, te, 0, 0)
                break
            idx = 0
            while p < n and buf[p] >= 48 and buf[p] <= 57:
                if idx < 10000000000:
                    idx = idx * 10 + (np.int64(buf[p]) - 48)
                p += 1
            if p >= n or buf[p] != 58:
                code, te = _bad_token_code(buf, tok)
                _set_err(err, code, line, tok, te, 0, 0)
                break
            p += 1
            col = idx - base
            code = _E_NONE
            if col < 0:
                code = _E_INDEX_LOW
            elif col > 2147483646:
                code = _E_INDEX_BIG
            elif col <= prev:
                code = _E_ORDER
            elif n_features_limit >= 0 and col >= n_features_limit:
                code = _E_NFEAT
            elif max_features >= 0 and col >= max_features:
                code = _E_MAX_FEATURES
            if code != _E_NONE:
                _set_err(err, code, line, tok, _token_end(buf, tok), idx, prev + base)
                break
        # ---- the number: a label (not in_row) or the value of column col
        kind, v, e = _parse_number(buf, p)
        if kind >= _MALFORMED:
            if not in_row:
                code = _E_LABEL if kind == _MALFORMED else _E_LABEL_NONFINITE
                _set_err(err, code, line, p, e, -1 if v < 0 else 1, kind)
            else:
                code = _E_VALUE if kind == _MALFORMED else _E_FEAT_NONFINITE
                _set_err(err, code, line, tok, e, idx, -kind if v < 0 else kind)
            break
        if not in_row:
            if kind == _SLOW:
                slow = _push_slow(slow, n_slow, -row - 1, p, e, line)
                n_slow += 1
            labels[row] = v
            row_line[row] = line
            qid_kind[row] = 0
            in_row = True
            prev = -1
        else:
            if kind == _SLOW:
                slow = _push_slow(slow, n_slow, nnz, p, e, line)
                n_slow += 1
                indices[nnz] = col
                values[nnz] = 0.0
                nnz += 1
            elif v != 0.0:  # explicit zeros are not stored
                indices[nnz] = col
                values[nnz] = v
                nnz += 1
            if col > max_col:
                max_col = col
            prev = col
        p = e
    if in_row and err[0] == _E_NONE:  # last line without a newline
        row += 1
        indptr[row] = nnz
    state[0], state[1], state[2], state[3], state[4] = line, row, nnz, max_col, n_slow
    return slow


# --------------------------------------------------------------------------------------
# Python side of the reader
# --------------------------------------------------------------------------------------


GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


def gunzip(raw: bytes, name: str) -> bytes:
    """Decompress gzip data, or raise :class:`SVMLightFormatError` naming the file when it is
    truncated or corrupt (the one place both engines decompress SVMlight text)."""
    try:
        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error):
        raise SVMLightFormatError(truncated_gzip_message(name), path=name) from None


def truncated_gzip_message(name: str) -> str:
    """The one text for a gzip file that ends early or is corrupt (Python's and Hadoop's
    decoders word it differently, the engines must not)."""
    return f"{name}: truncated or corrupt gzip data"


@contextlib.contextmanager
def _file_bytes(path: PathLike) -> Iterator[bytes | mmap.mmap]:
    """The text of ``path`` as one buffer: a read-only memory map when the file is plain
    text (no copy, the page cache is scanned in place), else the decompressed bytes."""
    with open(path, "rb") as f:
        head = f.read(3)
        size = os.fstat(f.fileno()).st_size
        mm = None
        if head[:2] != GZIP_MAGIC and head != _BOM and size > 0:
            try:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # e.g. a pipe or a file system without mmap
                mm = None
        if mm is None:
            f.seek(0)
            raw = f.read()
    if mm is None:
        if raw[:2] == GZIP_MAGIC:
            # gzip is recognised by its magic bytes, whatever the file name (the Spark
            # reader does the same); decompressed into memory (the parser needs one buffer)
            raw = gunzip(raw, os.fspath(path))
        if raw[:3] == _BOM:
            raw = raw[3:]  # a UTF-8 byte-order mark (some Windows editors write one)
        yield raw
        return
    try:
        yield mm
    finally:
        try:
            mm.close()
        except BufferError:  # a traceback still holds an array view; the GC closes it
            pass


#: Bytes scanned per call of the numba passes; after each chunk the pages of a memory-mapped
#: file are handed back, so the reader's resident memory is its output arrays plus one chunk,
#: not the whole file on top of them.
CHUNK_BYTES = 64 << 20


def _chunks(raw) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges of about :data:`CHUNK_BYTES`, each ending right after a LF."""
    n = len(raw)
    out, lo = [], 0
    while lo < n:
        hi = raw.find(b"\n", min(lo + CHUNK_BYTES, n) - 1) + 1 if lo + CHUNK_BYTES < n else n
        hi = n if hi <= 0 else hi
        out.append((lo, hi))
        lo = hi
    return out


def _page_release(raw):
    """``release(lo, hi)``: drop the scanned pages of a memory map from this process (they
    stay in the page cache and are read again on access); a no-op for ``bytes``."""
    if not (isinstance(raw, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED")):
        return lambda lo, hi: None
    page = mmap.PAGESIZE

    def release(lo: int, hi: int) -> None:
        start = lo - lo % page
        raw.madvise(mmap.MADV_DONTNEED, start, hi - start)

    return release


def _token_text(raw: bytes, s: int, e: int, limit: int = 60) -> str:
    t = raw[s:e].decode("utf-8", errors="replace")
    return t if len(t) <= limit else t[:limit] + "..."


def _nonfinite_word(kind: int) -> str:
    if kind == _NAN:
        return "nan"
    return "-inf" if kind < 0 else "inf"


def _raise_scan_error(err: np.ndarray, raw: bytes, name: str, zero_based: bool, n_features: int | None,
                      max_features: int | None) -> None:
    code, line, s, e, aux1, aux2 = (int(v) for v in err)
    tok = _token_text(raw, s, e)
    if code == _E_LABEL:
        msg = f"malformed label {tok!r} on line {line}"
    elif code == _E_LABEL_NONFINITE:
        msg = f"label on line {line} is {_nonfinite_word(aux2 if aux2 == _NAN else aux1 * _INF)}"
    elif code == _E_VALUE:
        tail = tok.split(":", 1)[1] if ":" in tok else tok
        msg = f"malformed value {tail!r} of feature {aux1} on line {line}"
    elif code == _E_FEAT_NONFINITE:
        msg = f"feature {aux1} on line {line} is {_nonfinite_word(aux2)}"
    elif code == _E_COLON:
        msg = f"token {tok!r} on line {line} is not index:value (missing ':')"
    elif code == _E_INDEX:
        msg = f"malformed feature index in {tok!r} on line {line}"
    elif code == _E_INDEX_LOW:
        if zero_based:
            msg = f"negative feature index {aux1} on line {line}"
        else:
            msg = (
                f"feature index {aux1} on line {line}: indices are 1-based "
                "(pass zero_based=True to read a 0-based file)"
            )
    elif code == _E_INDEX_BIG:
        msg = f"feature index in {tok!r} on line {line} is too large (limit 2**31 - 1)"
    elif code == _E_ORDER:
        msg = f"feature indices on line {line} are not strictly increasing: {aux1} after {aux2}"
    elif code == _E_NFEAT:
        msg = f"feature index {aux1} on line {line} exceeds n_features={n_features}"
    elif code == _E_MAX_FEATURES:
        width = aux1 + (1 if zero_based else 0)
        msg = max_features_message(f"feature index {aux1} on line {line}", width, int(max_features))
    elif code == _E_QID_EMPTY:
        msg = f"'qid:' without value on line {line}"
    elif code == _E_QID_POS:
        msg = f"{tok!r} on line {line}: a qid must come once, directly after the label"
    else:  # pragma: no cover - every code is handled above
        msg = f"parse error {code} on line {line} near {tok!r}"
    raise SVMLightFormatError(f"{name}: {msg}", path=name, line=line)


@dataclass(frozen=True)
class QidLayout:
    """The qid rule of one input, fixed by its first data line; every other line must agree.

    Either every line has a ``qid:`` or none has.  When the first qid is an integer every
    qid must be one (a ``qid:abc`` later is an error, not a silent switch of all groups to
    strings); when it is not, every qid is read as a string token (``qid:7`` too).  Both
    engines apply this same rule, the Spark reader with the layout of the first line of the
    first file handed to every task.

    Attributes
    ----------
    present : bool
        The first data line has a qid.
    integer : bool
        ... and it is an integer.
    line : int
        The 1-based line of that first data line.
    path : str
        Its file.
    """

    present: bool
    integer: bool
    line: int
    path: str

    def where(self, name: str) -> str:
        return f"line {self.line}" if name == self.path else f"line {self.line} of {self.path}"


def _qids_by_layout(raw, name: str, layout: QidLayout, qid_kind, qid_int, qid_start, qid_end,
                    row_line) -> np.ndarray | None:
    """The qid array of the parsed rows, checked against ``layout``."""
    def fail(row: int, text: str):
        line = int(row_line[row])
        raise SVMLightFormatError(f"{name}: {text.format(line=line)}", path=name, line=line)

    if not layout.present:
        bad = np.flatnonzero(qid_kind != 0)
        if bad.size:
            fail(int(bad[0]), f"line {{line}} has a qid but {layout.where(name)} has none "
                              "(either every line or none must have a qid)")
        return None
    bad = np.flatnonzero(qid_kind == 0)
    if bad.size:
        fail(int(bad[0]), f"line {{line}} has no qid but {layout.where(name)} has one "
                          "(either every line or none must have a qid)")
    if layout.integer:
        bad = np.flatnonzero(qid_kind == 2)
        if bad.size:
            r = int(bad[0])
            tok = _token_text(raw, int(qid_start[r]), int(qid_end[r]))
            fail(r, f"qid {tok!r} on line {{line}} is not an integer, but the first qid ({layout.where(name)}) "
                    "is: either every qid is an integer, or the first one is not (then all are read as strings)")
        return qid_int.copy()
    st = qid_start.tolist()
    en = qid_end.tolist()
    try:
        return np.array([raw[s:e].decode("utf-8") for s, e in zip(st, en)])
    except UnicodeDecodeError:
        r = next(i for i, (s, e) in enumerate(zip(st, en)) if not _utf8_ok(raw[s:e]))
        fail(r, "qid on line {line} is not valid UTF-8")


def read_svmlight(
    path: PathLike,
    *,
    n_features: int | None = None,
    dtype: type = np.float64,
    zero_based: bool = False,
    max_features: int | None = None,
) -> SVMLightFile:
    """Read an SVMlight / LETOR file (plain or gzip-compressed).

    Parameters
    ----------
    path : str or path-like
        The file.  gzip content is detected from its magic bytes (and decompressed in
        memory); plain text is memory-mapped, so it must not be truncated while it is
        being read.
    n_features : int, optional
        Number of feature columns; an index beyond it is an error.  Default: the largest
        index in the file.
    dtype : numpy float type
        ``np.float64`` (default) or ``np.float32``; values are parsed as float64 exactly
        as ``float(token)`` does, then cast.
    zero_based : bool
        Accept 0-based feature indices (index ``i`` -> column ``i``).  Default: indices are
        1-based (index ``i`` -> column ``i - 1``) and an index ``0`` is an error.
    max_features : int, optional
        An index needing more columns than this is an error naming its line (default:
        the limit in force, :func:`~sparkrank.data.block.max_features_limit`).

    Returns
    -------
    SVMLightFile

    Raises
    ------
    SVMLightFormatError
        Malformed input; the message names the file and the 1-based line number.
    """
    dtype = np.dtype(dtype).type
    if dtype not in (np.float64, np.float32):
        raise DataError(f"dtype must be float64 or float32, got {dtype!r}")
    if n_features is not None and n_features < 0:
        raise DataError(f"n_features must be >= 0, got {n_features}")
    name = os.fspath(path)
    with _file_bytes(path) as raw:
        return _parse_text(raw, name, n_features, dtype, zero_based, max_features=max_features)


def parse_svmlight_bytes(raw: bytes, *, name: str = "<bytes>", n_features: int | None = None,
                         dtype: type = np.float64, zero_based: bool = False,
                         max_features: int | None = None, first_line: int = 0,
                         qid_layout: QidLayout | None = None) -> SVMLightFile:
    """:func:`read_svmlight` on SVMlight text already in memory (e.g. a piece of a file on
    a Spark executor); ``name`` is used in error messages, lines are numbered from
    ``first_line + 1``, and ``qid_layout`` (default: that of the first data line of
    ``raw``) is the qid rule the rows must follow."""
    return _parse_text(raw, name, n_features, np.dtype(dtype).type, zero_based, max_features=max_features,
                       first_line=first_line, qid_layout=qid_layout)


def _parse_text(raw, name: str, n_features: int | None, dtype: type, zero_based: bool, *,
                max_features: int | None = None, first_line: int = 0,
                qid_layout: QidLayout | None = None) -> SVMLightFile:
    """:func:`read_svmlight` on the file's bytes (``bytes`` or a memory map)."""
    max_features = max_features_limit(max_features)
    buf = np.frombuffer(raw, dtype=np.uint8)
    chunks = _chunks(raw)
    release = _page_release(raw)
    n_nl = n_colon = 0
    for lo, hi in chunks:
        a, b = _count_bytes(buf[lo:hi])
        n_nl, n_colon = n_nl + int(a), n_colon + int(b)
        release(lo, hi)
    # every output array is allocated once, from the bounds of pass 1
    max_rows = n_nl + 1
    labels, values = np.empty(max_rows, np.float64), np.empty(n_colon, np.float64)
    indptr, indices = np.empty(max_rows + 1, np.int64), np.empty(n_colon, np.int32)
    qid_int, qid_start, qid_end = (np.empty(max_rows, np.int64) for _ in range(3))
    qid_kind = np.empty(max_rows, np.int8)  # 0 none, 1 integer, 2 string
    row_line = np.empty(max_rows, np.int64)
    slow, err = np.empty(256, np.int64), np.zeros(6, np.int64)
    indptr[0] = 0
    state = np.array([first_line, 0, 0, -1, 0], dtype=np.int64)  # line, row, nnz, max_col, n_slow
    n_limit = -1 if n_features is None else int(n_features)
    for lo, hi in chunks:
        slow = _scan(buf, lo, hi, bool(zero_based), n_limit, int(max_features), state, labels, indptr, indices,
                     values, qid_int, qid_start, qid_end, qid_kind, row_line, slow, err)
        if err[0] != _E_NONE:
            _raise_scan_error(err, raw, name, zero_based, n_features, max_features)
        release(lo, hi)
    m, nnz, max_col, n_slow = (int(v) for v in state[1:])

    # Tokens the numba pass left to Python (more than 18 significant digits, or an
    # Eisel-Lemire ambiguity): syntax was already validated, so float() cannot fail.
    if n_slow:
        slow = slow[: 4 * n_slow].reshape(n_slow, 4)
        slow_vals = np.array([float(raw[s:e]) for s, e in slow[:, 1:3].tolist()], dtype=np.float64)
        tgt = slow[:, 0]
        bad = np.flatnonzero(~np.isfinite(slow_vals))
        if bad.size:
            k = int(bad[0])
            line = int(slow[k, 3])
            word = "nan" if np.isnan(slow_vals[k]) else ("-inf" if slow_vals[k] < 0 else "inf")
            if tgt[k] < 0:
                msg = f"label on line {line} is {word}"
            else:
                msg = f"feature {int(indices[tgt[k]]) + (0 if zero_based else 1)} on line {line} is {word}"
            raise SVMLightFormatError(f"{name}: {msg}", path=name, line=line)
        is_label = tgt < 0
        labels[-tgt[is_label] - 1] = slow_vals[is_label]
        values[tgt[~is_label]] = slow_vals[~is_label]

    if qid_layout is None and m:
        qid_layout = QidLayout(bool(qid_kind[0] != 0), bool(qid_kind[0] == 1), int(row_line[0]), name)
    qid = None
    if m:
        qid = _qids_by_layout(raw, name, qid_layout, qid_kind[:m], qid_int[:m], qid_start[:m], qid_end[:m],
                              row_line[:m])

    # Trim to size; copy only when the bound was loose, so the big buffers are not kept.
    labels = labels[:m].copy() if m < 0.9 * labels.shape[0] else labels[:m]
    indptr = indptr[: m + 1]
    if nnz < 0.9 * indices.shape[0]:
        indices = indices[:nnz].copy()
        values = values[:nnz].copy()
    else:
        indices = indices[:nnz]
        values = values[:nnz]
    if nnz < 2**31 - 1:
        indptr = indptr.astype(np.int32)
    else:
        indices = indices.astype(np.int64)
    if dtype is np.float32:
        values = values.astype(np.float32)
    n_cols = int(n_features) if n_features is not None else int(max_col) + 1
    X = sp.csr_matrix((values, indices, indptr), shape=(m, n_cols), copy=False)
    if n_slow and np.any(values == 0):
        X.eliminate_zeros()  # a slow token that was zero (e.g. 0e-400); rare
    X.has_sorted_indices = True  # strictly increasing per row, checked by the scanner
    del buf  # release the view of the memory map before it is closed
    return SVMLightFile(X=X, labels=labels, qid=qid, n_bytes=len(raw), qid_layout=qid_layout)


def _utf8_ok(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def load_svmlight(
    path: PathLike,
    *,
    n_features: int | None = None,
    dtype: type = np.float64,
    zero_based: bool = False,
    max_features: int | None = None,
) -> RankingData:
    """Read an SVMlight / LETOR file into a :class:`~sparkrank.data.block.RankingData`.

    Parameters are those of :func:`read_svmlight`.  Rows are grouped by qid (stably);
    a file without qids is one global ranking.
    """
    dtype = np.dtype(dtype).type
    f = read_svmlight(path, n_features=n_features, dtype=dtype, zero_based=zero_based, max_features=max_features)
    return RankingData.from_arrays(f.X, f.labels, f.qid, dtype=dtype, n_features=n_features)


# --------------------------------------------------------------------------------------
# writer
# --------------------------------------------------------------------------------------


_POW5_U64 = np.array([5**k for k in range(28)], dtype=np.uint64)  # 5**27 < 2**64
# Approximate 10**k for the writer's filter (exact only up to 10**22).
_POW10_F64_APPROX = np.array([float(10**k) for k in range(28)], dtype=np.float64)


@njit(cache=True)
def _reads_back(mm, d, a):
    """1 if the decimal ``mm * 10**-d`` reads back as ``a``, 0 if not, -1 if undecided."""
    if mm < 1:
        return 0
    if mm <= _TWO53 and d <= 22:
        return 1 if float(mm) / _POW10_F64[d] == a else 0  # Clinger: exact test
    ok, v = _eisel_lemire(mm, -d)
    if not ok:
        return -1
    return 1 if v == a else 0


@njit(cache=True)
def _shortest_digits(data, out_m, out_d):
    """repr's digits ``M * 10**-d`` of each |value| in [1e-10, 1e16), or ``out_d = -1``.

    Python's ``repr`` prints the shortest digit string that reads back to the value (the
    nearest one if several have that length); in fixed notation for [1e-4, 1e16), else in
    exponent notation.  For a fixed value fewer decimals means fewer significant digits,
    so repr's string is
    ``M * 10**-d`` with the smallest ``d`` at which an integer ``M`` reads back, and ``M``
    the nearest such integer to ``|v| * 10**d``.

    ``|v| * 10**d`` is computed exactly: ``|v| = m * 2**e`` (53-bit ``m``) and
    ``10**d = 5**d * 2**d``, so it is the 128-bit integer ``m * 5**d`` (d <= 27, so 5**d
    fits 64 bits) shifted by ``e + d`` bits; its exact nearest integer ``M*`` is the only
    candidate at that ``d``, because the set of decimals that read back is an interval
    around ``|v|`` -- except at powers of two, where the interval is lopsided (the gap
    below is half the gap above) and ``M* +- 1`` are tried too.  When ``|v| * 10**d`` is
    exactly halfway between two integers that both read back, the even one is taken, as
    repr does.  Undecided reads (rare Eisel-Lemire ambiguities) go to Python's ``repr``
    (``out_d = -1``).  A cheap float filter skips the ``d`` where no integer can be close
    enough.
    """
    for i in range(data.shape[0]):
        a = abs(data[i])
        out_d[i] = -1
        out_m[i] = 0
        if not (a >= 1e-10 and a < 1e16):
            continue
        f, ex = math.frexp(a)  # a = f * 2**ex, 0.5 <= f < 1
        m = _U64(np.int64(f * 9007199254740992.0))  # exact 53-bit integer
        e = ex - 53
        pow2 = m == _U64(1 << 52)
        for d in range(0, 28):
            x = a * _POW10_F64_APPROX[d]
            if x >= 1e17:
                break  # more than 17 significant digits are never needed
            if abs(x - np.rint(x)) > 1e-15 * x + 1e-300:
                # An integer M reads back only if |M - |v|*10**d| <= ulp(|v|)/2 * 10**d
                # <= 1.2e-16 x, and x itself is within 2.3e-16 x of |v|*10**d.
                continue
            hi, lo = _mul128(m, _POW5_U64[d])  # |v| * 10**d = (hi, lo) * 2**(e + d)
            s = e + d
            tie = False
            if s >= 0:
                if hi != _U64(0) or s >= 63 or (lo >> _U64(63 - s)) != _U64(0):
                    break
                mm = np.int64(lo << _U64(s))  # an integer: exact
            else:
                k = -s
                if k < 64:
                    q_hi = hi >> _U64(k)
                    q_lo = (lo >> _U64(k)) | (hi << _U64(64 - k))
                    r_hi = _U64(0)
                    r_lo = lo & ((_U64(1) << _U64(k)) - _U64(1))
                    h_hi = _U64(0)
                    h_lo = _U64(1) << _U64(k - 1)
                elif k < 128:
                    j = k - 64
                    q_hi = _U64(0)
                    q_lo = hi >> _U64(j)
                    r_hi = hi & ((_U64(1) << _U64(j)) - _U64(1))
                    r_lo = lo
                    if j == 0:
                        h_hi = _U64(0)
                        h_lo = _U64(1) << _U64(63)
                    else:
                        h_hi = _U64(1) << _U64(j - 1)
                        h_lo = _U64(0)
                else:
                    break
                if q_hi != _U64(0) or q_lo >= _U64(1 << 60):
                    break
                mm = np.int64(q_lo)
                if r_hi > h_hi or (r_hi == h_hi and r_lo > h_lo):
                    mm += 1  # remainder above one half: round up
                elif r_hi == h_hi and r_lo == h_lo:
                    tie = True  # exactly halfway between mm and mm + 1
            if tie:
                r0 = _reads_back(mm, d, a)
                r1 = _reads_back(mm + 1, d, a)
                if r0 == -1 or r1 == -1:
                    break
                if r0 == 1 or r1 == 1:
                    # equidistant: like repr (David Gay's dtoa) take the even last digit
                    # when both read back
                    out_m[i] = mm if (r0 == 1 and (r1 == 0 or mm % 2 == 0)) else mm + 1
                    out_d[i] = d
                    break
                continue
            r = _reads_back(mm, d, a)
            if r == 1:
                out_m[i] = mm
                out_d[i] = d
                break
            if r == -1:
                break
            if pow2:
                rm = _reads_back(mm - 1, d, a)
                rp = _reads_back(mm + 1, d, a)
                if rm == -1 or rp == -1 or (rm == 1 and rp == 1):
                    break
                if rm == 1 or rp == 1:
                    out_m[i] = mm - 1 if rm == 1 else mm + 1
                    out_d[i] = d
                    break


@njit(cache=True)
def _n_digits(x):
    """Decimal digits of 0 <= x < 10**18 (comparisons: cheaper than divisions)."""
    n = 1
    while n < 18 and x >= _POW10_INT[n]:
        n += 1
    return n


@njit(cache=True)
def _write_uint(out, pos, x):
    """Write 0 <= x < 10**18 in decimal at ``out[pos:]``; returns the end position."""
    nd = _n_digits(x)
    ux = _U64(x)  # unsigned: // and % by a constant need no sign fix-ups
    ten = _U64(10)
    for k in range(nd - 1, -1, -1):
        out[pos + k] = _U64(48) + ux % ten
        ux = ux // ten
    return pos + nd


@njit(cache=True)
def _repr_len(mm, d):
    """Length of repr's text for ``mm * 10**-d`` (see :func:`_write_repr`)."""
    nd = _n_digits(mm)
    if nd - d <= -4:  # exponent notation: "3.25e-05"
        ex = d - nd + 1
        return nd + (1 if nd > 1 else 0) + 2 + (2 if ex < 100 else 3)
    if d == 0:
        return nd + 2  # "123.0"
    if nd > d:
        return nd + 1  # "12.34"
    return d + 2  # "0.0012"


@njit(cache=True)
def _write_repr(out, pos, mm, d):
    """Write ``mm * 10**-d`` (no trailing zeros in mm unless d == 0) as repr does.

    Python switches to exponent notation when the decimal point would sit 4 or more
    places before the first digit (``1e-05`` but ``0.0001``); values >= 1e16 never get here.
    """
    nd = _n_digits(mm)
    if nd - d <= -4:
        ex = d - nd + 1
        p0 = pos
        pos = _write_uint(out, pos + (1 if nd > 1 else 0), mm)
        if nd > 1:  # move the first digit before the decimal point
            out[p0] = out[p0 + 1]
            out[p0 + 1] = 46
        out[pos] = 101
        out[pos + 1] = 45
        pos += 2
        if ex < 10:
            out[pos] = 48
            pos += 1
        return _write_uint(out, pos, ex)
    if d == 0:
        pos = _write_uint(out, pos, mm)
        out[pos] = 46
        out[pos + 1] = 48
        return pos + 2
    if nd > d:
        ip = mm // _POW10_INT[d]  # nd <= 17 here, so d < 17
        pos = _write_uint(out, pos, ip)
        out[pos] = 46
        pos += 1
        fr = _U64(mm - ip * _POW10_INT[d])
        ten = _U64(10)
        for k in range(d - 1, -1, -1):
            out[pos + k] = _U64(48) + fr % ten
            fr = fr // ten
        return pos + d
    out[pos] = 48
    out[pos + 1] = 46
    pos += 2
    for k in range(d - nd):
        out[pos + k] = 48
    pos += d - nd
    return _write_uint(out, pos, mm)


@njit(cache=True)
def _assemble(indptr, indices, base, data, vm, vd, fb_index, fb_buf, fb_off,
              pre_buf, pre_off, post_buf, post_off):
    """Write rows ``prefix[ idx:val]*suffix\\n`` into one byte array (two passes)."""
    m = indptr.shape[0] - 1
    total = 0
    for r in range(m):
        total += pre_off[r + 1] - pre_off[r] + post_off[r + 1] - post_off[r] + 1
        for k in range(indptr[r], indptr[r + 1]):
            total += 2 + _n_digits(np.int64(indices[k]) + base)
            if vd[k] >= 0:
                total += _repr_len(vm[k], vd[k]) + (1 if data[k] < 0 else 0)
            else:
                j = fb_index[k]
                total += fb_off[j + 1] - fb_off[j]
    out = np.empty(total, np.uint8)
    pos = 0
    for r in range(m):
        for k in range(pre_off[r], pre_off[r + 1]):
            out[pos] = pre_buf[k]
            pos += 1
        for k in range(indptr[r], indptr[r + 1]):
            out[pos] = 32
            pos = _write_uint(out, pos + 1, np.int64(indices[k]) + base)
            out[pos] = 58
            pos += 1
            if vd[k] >= 0:
                if data[k] < 0:
                    out[pos] = 45
                    pos += 1
                pos = _write_repr(out, pos, vm[k], vd[k])
            else:
                j = fb_index[k]
                for t in range(fb_off[j], fb_off[j + 1]):
                    out[pos] = fb_buf[t]
                    pos += 1
        for k in range(post_off[r], post_off[r + 1]):
            out[pos] = post_buf[k]
            pos += 1
        out[pos] = 10
        pos += 1
    return out


def _pack(pieces: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(pieces) + 1, dtype=np.int64)
    if pieces:
        np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)), out=off[1:])
    buf = np.frombuffer(b"".join(pieces), dtype=np.uint8) if off[-1] else np.zeros(0, np.uint8)
    return buf, off


def _format_label(v: float) -> str:
    # integral labels as integers ("2", not "2.0"); others with the shortest repr
    if v == int(v) and abs(v) < 1e16:
        return str(int(v))
    return repr(v)


def write_svmlight(
    path: PathLike,
    X,
    labels: Sequence[float] | np.ndarray,
    qid: Sequence | np.ndarray | None = None,
    *,
    comments: Sequence[str] | None = None,
    zero_based: bool = False,
) -> None:
    """Write rows in SVMlight / LETOR format.

    Values are written with the shortest representation that reads back to the same
    double (Python ``repr`` style, e.g. ``0.1``, ``3.0``, ``1e-05``); float32 matrices are
    written as the doubles they convert to, so they read back bit-identically.  Explicit
    zeros are skipped.  Integral labels are written as integers (``2``, not ``2.0``).

    Parameters
    ----------
    path : str or path-like
        Output file; gzip-compressed when the name ends with ``.gz``.
    X : array-like or scipy sparse matrix (m, n)
        Features.
    labels : array-like (m,)
        Finite labels.
    qid : array-like (m,), optional
        Integer or string group ids (strings must be non-empty and free of blanks and
        ``#``); written as ``qid:Q`` after the label.  Note that the reader returns int64
        qids when every token is an integer, so string qids such as ``"7"`` read back
        as integers.
    comments : sequence of str (m,), optional
        Written after ``#`` at the end of each line (no newlines allowed).
    zero_based : bool
        Write column ``j`` as index ``j`` instead of ``j + 1``.

    Raises
    ------
    DataError
        Non-finite labels or values, mismatched lengths, unwritable qids or comments.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    else:
        X = sp.csr_matrix(np.atleast_2d(np.asarray(X, dtype=np.float64)))
    X.sum_duplicates()  # also sorts indices
    X.eliminate_zeros()
    m = X.shape[0]
    y = np.asarray(labels, dtype=np.float64).ravel()
    if y.shape[0] != m:
        raise DataError(f"{m} feature rows but {y.shape[0]} labels")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise DataError(f"label of row {int(bad[0])} is {float(y[bad[0]])!r}: labels must be finite")
    if X.nnz:
        badnz = np.flatnonzero(~np.isfinite(X.data))
        if badnz.size:
            k = int(badnz[0])
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            raise DataError(f"feature column {int(X.indices[k])} of row {row} is {float(X.data[k])!r}: values must be finite")
    q_str: list[str] | None = None
    if qid is not None:
        q = np.asarray(qid)
        if q.shape[0] != m:
            raise DataError(f"{m} feature rows but {q.shape[0]} qids")
        if q.dtype.kind in "iu":
            q_str = [str(v) for v in q.tolist()]
        elif q.dtype.kind == "f":
            if not np.all(np.isfinite(q)) or not np.all(q == np.round(q)):
                raise DataError("float qids must be integral")
            q_str = [str(int(v)) for v in q.tolist()]
        else:
            q_str = [str(v) for v in q.tolist()]
            for s in set(q_str):
                if not s or "#" in s or len(s.split()) != 1 or s.split()[0] != s:
                    i = q_str.index(s)
                    raise DataError(f"qid {s!r} of row {i} cannot be written (empty, blank or '#')")
    if comments is not None:
        if len(comments) != m:
            raise DataError(f"{m} feature rows but {len(comments)} comments")
        for i, c in enumerate(comments):
            if "\n" in c or "\r" in c:
                raise DataError(f"comment of row {i} contains a line break")

    base = 0 if zero_based else 1
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    chunk = 65536
    with opener(path, "wb") as f:
        for r0 in range(0, m, chunk):
            r1 = min(m, r0 + chunk)
            a, b = int(X.indptr[r0]), int(X.indptr[r1])
            indptr = (X.indptr[r0 : r1 + 1] - a).astype(np.int64)
            indices = X.indices[a:b]
            data = X.data[a:b]
            vm = np.empty(b - a, np.int64)
            vd = np.empty(b - a, np.int64)
            _shortest_digits(data, vm, vd)
            slow = np.flatnonzero(vd < 0)
            fb_index = np.full(b - a, -1, dtype=np.int64)
            fb_index[slow] = np.arange(slow.size)
            fb_buf, fb_off = _pack([repr(v).encode() for v in data[slow].tolist()])
            if q_str is None:
                pre = [_format_label(v).encode() for v in y[r0:r1].tolist()]
            else:
                pre = [f"{_format_label(v)} qid:{s}".encode() for v, s in zip(y[r0:r1].tolist(), q_str[r0:r1])]
            pre_buf, pre_off = _pack(pre)
            if comments is None:
                post_buf, post_off = np.zeros(0, np.uint8), np.zeros(r1 - r0 + 1, np.int64)
            else:
                post_buf, post_off = _pack([f" # {c}".encode() for c in comments[r0:r1]])
            out = _assemble(indptr, indices, base, data, vm, vd, fb_index, fb_buf, fb_off,
                            pre_buf, pre_off, post_buf, post_off)
            f.write(memoryview(out))
