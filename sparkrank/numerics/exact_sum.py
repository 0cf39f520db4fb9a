"""Order-independent sums: double-double (TwoSum) accumulation.

Why: an engine sums ``Xᵀc`` and the loss statistics over blocks, and the block layout
(partitions, hash placement, ``treeAggregate`` depth) decides the order of the additions.
In plain float64 two engines then differ in the last bits, and on badly conditioned data
(MQ2008's near-collinear LETOR features) TRON amplifies a one-ulp difference about 100×
per Newton step, so local and Spark models would drift apart.  Accumulating every sum as
an unevaluated pair ``hi + lo`` (Knuth's TwoSum, error-free) and rounding once at the end
gives, whatever the order, the float64 nearest to the exact sum of the (identically
rounded) terms — up to an error ``≈ ε²·Σ|terms|`` that only matters when the sum sits
within that distance of a rounding midpoint.  Ogita, Rump & Oishi (2005), "Accurate sum
and dot product", Algorithm 4.4 (Sum2).

A double-double value is a tuple ``(hi, lo)`` of equal-shape float64 arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .simd import DD_ROWS, SCORE_LANES, add_rows_dd

DoubleDouble = tuple[np.ndarray, np.ndarray]


@njit(cache=True, nogil=True, inline="always")
def two_sum(hi, lo, p):
    """``(hi, lo) + p`` exactly: TwoSum of ``hi`` and ``p``, its error term added to ``lo``."""
    s = hi + p
    bb = s - hi
    return s, lo + ((hi - (s - bb)) + (p - bb))


@njit(cache=True, nogil=True, inline="always")
def _two_sum_into(hi, lo, j, p):
    """``(hi[j], lo[j]) += p`` exactly."""
    hi[j], lo[j] = two_sum(hi[j], lo[j], p)


@njit(cache=True, nogil=True)
def _csr_tdot_dd(indptr, indices, data, coefs, powers, n):
    # Xᵀc (power 1) or (X∘X)ᵀc (power 2) for each row q of coefs with powers[q], in one sweep over
    # the rows; each product's terms are added in row order, as in a sweep of its own
    k = powers.shape[0]
    hi = np.zeros((k, n), dtype=np.float64)
    lo = np.zeros((k, n), dtype=np.float64)
    for i in range(indptr.shape[0] - 1):
        for q in range(k):
            ci = coefs[q, i]
            if ci != 0.0:
                h, l_ = hi[q], lo[q]
                for e in range(indptr[i], indptr[i + 1]):
                    x = np.float64(data[e])
                    _two_sum_into(h, l_, indices[e], x * ci if powers[q] == 1 else (x * x) * ci)
    return hi, lo


@njit(cache=True, nogil=True, inline="always")
def _dense_term(x, ci, power):
    # a zero entry or a zero coefficient adds an exact +0.0, which changes no bit of a finite
    # (hi, lo): TwoSum started from +0.0 never holds -0.0, and a + 0.0 = a, error +0.0
    if x == 0.0 or ci == 0.0:
        return 0.0
    return x * ci if power == 1 else (x * x) * ci


@njit(cache=True, nogil=True)
def add_dense_step_dd(values, rows, step, hi, lo, power):
    """``(hi, lo) += Σ_r term(values[rows[r]], step[r])`` for the :data:`~sparkrank.numerics.simd.DD_ROWS`
    rows of one step, each term's TwoSum in row order, every column (``simd.add_rows_dd`` for
    the columns in whole vectors, the rest one at a time; :func:`_dense_term`'s terms)."""
    n = values.shape[1]
    if power == 1:
        add_rows_dd(values, rows, step, hi, lo, 1)
    else:
        add_rows_dd(values, rows, step, hi, lo, 2)
    for j in range(n - n % SCORE_LANES, n):
        for r in range(DD_ROWS):
            hi[j], lo[j] = two_sum(hi[j], lo[j], _dense_term(np.float64(values[rows[r], j]), step[r], power))


@njit(cache=True, nogil=True)
def _dense_tdot_dd(values, coefs, powers):
    # The same terms in the same order as _csr_tdot_dd, whose rows leave the zeros out (and
    # skip rows with c = 0): here those add an exact +0.0 instead (see _dense_term), so the
    # bits are the same.  (Once a column's sum overflowed, both give a non-finite value: inf
    # there, nan here.)  Four rows per step (add_dense_step_dd: vector code, the columns' sums
    # in registers for the four rows, each row's TwoSum in row order), every product on the
    # step's rows while they are in the first-level cache; a last partial step repeats the
    # last row with c = 0.
    m, n = values.shape
    k = powers.shape[0]
    hi = np.zeros((k, n), dtype=np.float64)
    lo = np.zeros((k, n), dtype=np.float64)
    rows = np.zeros(DD_ROWS, dtype=np.int64)
    step = np.zeros((k, DD_ROWS))
    for i in range(0, m, DD_ROWS):
        for r in range(DD_ROWS):
            rows[r] = min(i + r, m - 1)
        for q in range(k):
            nonzero = False
            for r in range(DD_ROWS):
                step[q, r] = coefs[q, i + r] if i + r < m else 0.0
                nonzero = nonzero or step[q, r] != 0.0
            if nonzero:  # else four +0.0 terms: no bit would change
                add_dense_step_dd(values, rows, step[q], hi[q], lo[q], powers[q])
    return hi, lo


@njit(cache=True, nogil=True)
def _sum_dd(x):
    hi = 0.0
    lo = 0.0
    for i in range(x.shape[0]):
        hi, lo = two_sum(hi, lo, x[i])
    return hi, lo


def csr_tdot_dd(X, c: np.ndarray, power: int = 1, rows: tuple[int, int] | None = None) -> DoubleDouble:
    """``Xᵀ c`` (``power=1``) or ``(X∘X)ᵀ c`` (``power=2``, entries squared) as a double-double ``(hi, lo)``.

    ``X`` is CSR: scipy, or any object with its ``indptr`` / ``indices`` / ``data``.  With
    ``rows = (a, b)`` only rows ``a:b`` of ``X`` and ``c`` count: ``c`` holds either every row
    of ``X`` or just those ``b - a``.
    """
    return rmatvec_dd_powers(X, c, (power,), rows)[0]


def rmatvec_dd(X, c: np.ndarray, power: int = 1, rows: tuple[int, int] | None = None) -> DoubleDouble:
    """:func:`csr_tdot_dd` for CSR or dense (2-D ndarray) ``X``; both give the same sums."""
    return rmatvec_dd_powers(X, c, (power,), rows)[0]


def rmatvec_dd_powers(X, c: np.ndarray, powers: tuple[int, ...],
                      rows: tuple[int, int] | None = None) -> list[DoubleDouble]:
    """:func:`rmatvec_dd` of each of ``powers`` (1 and/or 2), in that order, from one sweep over ``X``."""
    return rmatvec_dd_products(X, [(c, p) for p in powers], rows)


def rmatvec_dd_products(X, products: list[tuple[np.ndarray, int]],
                        rows: tuple[int, int] | None = None) -> list[DoubleDouble]:
    """``Xᵀc`` (power 1) or ``(X∘X)ᵀc`` (power 2) of each ``(c, power)`` of ``products``, in that
    order, from one sweep over rows ``a:b`` of ``X`` (each ``c`` of every row or of just those):
    the same bits as one :func:`rmatvec_dd` per product, while each row is read once."""
    powers = tuple(p for _, p in products)
    if not products or any(p not in (1, 2) for p in powers):
        raise ValueError(f"powers must be 1 and/or 2, got {powers!r}")
    a, b = (0, X.shape[0]) if rows is None else rows
    coefs = np.empty((len(products), b - a))
    for q, (c, _) in enumerate(products):
        coefs[q] = c[a:b] if c.shape[0] != b - a else c  # c of every row, or of rows a:b
    power_array = np.array(powers, dtype=np.int64)
    if isinstance(X, np.ndarray):
        hi, lo = _dense_tdot_dd(np.ascontiguousarray(X[a:b]), coefs, power_array)
    else:
        # indptr holds absolute offsets into indices/data, so a slice of it is a valid row range
        hi, lo = _csr_tdot_dd(X.indptr[a: b + 1], X.indices, X.data, coefs, power_array, X.shape[1])
    return [(hi[q], lo[q]) for q in range(len(products))]


def sum_dd(x: np.ndarray) -> tuple[float, float]:
    """``Σ x`` as a double-double ``(hi, lo)``."""
    return _sum_dd(np.ascontiguousarray(x, dtype=np.float64))


def dd_add(a: DoubleDouble, b: DoubleDouble) -> DoubleDouble:
    """``a + b`` for double-doubles (elementwise arrays or scalars)."""
    s = a[0] + b[0]
    bb = s - a[0]
    err = (a[0] - (s - bb)) + (b[0] - bb)
    return s, a[1] + b[1] + err


def dd_round(a: DoubleDouble) -> np.ndarray:
    """The float64 nearest to ``hi + lo``."""
    return np.asarray(a[0] + a[1], dtype=np.float64)
