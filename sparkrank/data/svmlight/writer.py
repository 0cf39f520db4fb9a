"""The SVMlight / LETOR writer: shortest round-trip values, assembled in numba.

Values are written exactly as Python's ``repr`` writes them (the shortest string that
reads back to the same double).  For values in [1e-10, 1e16) -- nearly all feature
values in practice -- numba finds repr's digits with exact 128-bit integer arithmetic
(see :func:`_shortest_digits`) and writes the bytes; other values go through ``repr``.
"""

from __future__ import annotations

import gzip
import math
import os
from typing import Sequence, Union

import numpy as np
from numba import njit

from ..block import DataError
from .parse_decimal import POW10_F64, TWO53, U64, eisel_lemire, mul128

PathLike = Union[str, "os.PathLike[str]"]

# Exact powers of ten as integers up to 10**18 (< 2**63).
_POW10_INT = np.array([10**k for k in range(19)], dtype=np.int64)

_POW5_U64 = np.array([5**k for k in range(28)], dtype=np.uint64)  # 5**27 < 2**64
# Approximate 10**k for the writer's filter (exact only up to 10**22).
_POW10_F64_APPROX = np.array([float(10**k) for k in range(28)], dtype=np.float64)


@njit(cache=True)
def _reads_back(mm, d, a):
    """1 if the decimal ``mm * 10**-d`` reads back as ``a``, 0 if not, -1 if undecided."""
    if mm < 1:
        return 0
    if mm <= TWO53 and d <= 22:
        return 1 if float(mm) / POW10_F64[d] == a else 0  # Clinger: exact test
    ok, v = eisel_lemire(mm, -d)
    if not ok:
        return -1
    return 1 if v == a else 0


@njit(cache=True)
def _nearest_integer(hi, lo, k):
    """The 128-bit ``(hi, lo)`` times ``2**-k`` (``k > 0``) rounded to the nearest integer:
    ``(ok, M, tie)``, ``tie`` when exactly halfway between ``M`` and ``M + 1``; ``ok`` is false
    when ``k >= 128`` or the integer part is ``2**60`` or more."""
    if k < 64:
        q_hi = hi >> U64(k)
        q_lo = (lo >> U64(k)) | (hi << U64(64 - k))
        r_hi = U64(0)
        r_lo = lo & ((U64(1) << U64(k)) - U64(1))
        h_hi = U64(0)
        h_lo = U64(1) << U64(k - 1)
    elif k < 128:
        j = k - 64
        q_hi = U64(0)
        q_lo = hi >> U64(j)
        r_hi = hi & ((U64(1) << U64(j)) - U64(1))
        r_lo = lo
        if j == 0:
            h_hi = U64(0)
            h_lo = U64(1) << U64(63)
        else:
            h_hi = U64(1) << U64(j - 1)
            h_lo = U64(0)
    else:
        return False, np.int64(0), False
    if q_hi != U64(0) or q_lo >= U64(1 << 60):
        return False, np.int64(0), False
    mm = np.int64(q_lo)
    tie = False
    if r_hi > h_hi or (r_hi == h_hi and r_lo > h_lo):
        mm += 1  # remainder above one half: round up
    elif r_hi == h_hi and r_lo == h_lo:
        tie = True  # exactly halfway between mm and mm + 1
    return True, mm, tie


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
        m = U64(np.int64(f * 9007199254740992.0))  # exact 53-bit integer
        e = ex - 53
        pow2 = m == U64(1 << 52)
        for d in range(0, 28):
            x = a * _POW10_F64_APPROX[d]
            if x >= 1e17:
                break  # more than 17 significant digits are never needed
            if abs(x - np.rint(x)) > 1e-15 * x + 1e-300:
                # An integer M reads back only if |M - |v|*10**d| <= ulp(|v|)/2 * 10**d
                # <= 1.2e-16 x, and x itself is within 2.3e-16 x of |v|*10**d.
                continue
            hi, lo = mul128(m, _POW5_U64[d])  # |v| * 10**d = (hi, lo) * 2**(e + d)
            s = e + d
            tie = False
            if s >= 0:
                if hi != U64(0) or s >= 63 or (lo >> U64(63 - s)) != U64(0):
                    break
                mm = np.int64(lo << U64(s))  # an integer: exact
            else:
                ok, mm, tie = _nearest_integer(hi, lo, -s)
                if not ok:
                    break
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
    ux = U64(x)  # unsigned: // and % by a constant need no sign fix-ups
    ten = U64(10)
    for k in range(nd - 1, -1, -1):
        out[pos + k] = U64(48) + ux % ten
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
        fr = U64(mm - ip * _POW10_INT[d])
        ten = U64(10)
        for k in range(d - 1, -1, -1):
            out[pos + k] = U64(48) + fr % ten
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
    import scipy.sparse as sp

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
