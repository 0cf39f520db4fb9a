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

**``Xᵀc`` is summed in steps of four rows** (the one place of this convention): a query's rows
are cut into steps of :data:`~sparkrank.numerics.simd.DD_ROWS` rows from its first row (the
last step of a query may be shorter; a step never holds rows of two queries); a step's terms
``x_rj·c_r`` (``(x_rj·x_rj)·c_r`` for ``(X∘X)ᵀc``; a zero entry or coefficient is no term) are
summed per column in float64 from ``+0.0`` in row order, and each step sum is one term of the
column's double-double.  Every engine and partitioning cuts the same steps, because they
follow the queries (``starts``: the step origins, one per query), so the sums keep the
property above for the steps' sums; a step sum adds at most three roundings of ``ε·|term|``.
Why steps: one TwoSum per entry is ten vector operations, and it was the largest part of a
TRON pass (1M x 136 float32 rows in cache: 0.034 s of 0.076 s); one per four entries costs
0.019 s.  Rows of one ranking stay in the order they were read, so a step sum needs the
same order of a query's rows on every engine (the readers and block builders keep it).

A double-double value is a tuple ``(hi, lo)`` of equal-shape float64 arrays.
"""

from __future__ import annotations

import numpy as np
from numba import literally, njit

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
def _csr_tdot_dd(indptr, indices, data, coefs, powers, n, starts):
    # Xᵀc (power 1) or (X∘X)ᵀc (power 2) for each row q of coefs with powers[q], in the steps of
    # the module docstring from each of starts: a step's terms go to partial[q, j] in row order
    # (a missing entry is no term; the dense rows' +0.0 changes no bit of a sum started from
    # +0.0, which never holds -0.0), then each touched column's step sum goes to (hi, lo)
    k = powers.shape[0]
    hi = np.zeros((k, n), dtype=np.float64)
    lo = np.zeros((k, n), dtype=np.float64)
    partial = np.zeros((k, n), dtype=np.float64)
    touched = np.zeros((k, n), dtype=np.bool_)
    columns = np.empty((k, n), dtype=np.int64)
    for s in range(starts.shape[0] - 1):
        end = starts[s + 1]
        for i in range(starts[s], end, DD_ROWS):
            for q in range(k):
                used = 0
                for r in range(i, min(i + DD_ROWS, end)):
                    ci = coefs[q, r]
                    if ci == 0.0:
                        continue
                    for e in range(indptr[r], indptr[r + 1]):
                        x = np.float64(data[e])
                        if x == 0.0:
                            continue
                        j = indices[e]
                        partial[q, j] += x * ci if powers[q] == 1 else (x * x) * ci
                        if not touched[q, j]:
                            touched[q, j] = True
                            columns[q, used] = j
                            used += 1
                for t in range(used):
                    j = columns[q, t]
                    _two_sum_into(hi[q], lo[q], j, partial[q, j])
                    partial[q, j] = 0.0
                    touched[q, j] = False
    return hi, lo


@njit(cache=True, nogil=True, inline="always")
def _dense_term(x, ci, power):
    # a zero entry or a zero coefficient adds an exact +0.0, which changes no bit of a step sum
    # started from +0.0 (it never holds -0.0: a + 0.0 = a)
    if x == 0.0 or ci == 0.0:
        return 0.0
    return x * ci if power == 1 else (x * x) * ci


@njit(cache=True, nogil=True, inline="always")
def add_dense_steps_dd(values, rows, steps, hi, lo, powers, code):
    """One step of ``Xᵀc`` (the module docstring's convention) for each product ``q``: for every
    column ``j``, the step sum ``Σ_r term(values[rows[r], j], steps[q, r])`` over the
    :data:`~sparkrank.numerics.simd.DD_ROWS` rows in row order from ``+0.0`` (:func:`_dense_term`'s
    terms), added to ``(hi[q, j], lo[q, j])`` by TwoSum.  ``simd.add_rows_dd`` does the columns in
    whole vectors, every product from one load of the rows, the rest of the columns are done
    here.  ``code``: the powers as decimal digits (``112``: 1, 1, 2), a compile-time constant:
    each set of products gets its own loop (branching between sets inside one loop cost a single
    product 80% more time)."""
    add_rows_dd(values, rows, steps, hi, lo, code)
    n = values.shape[1]
    for q in range(powers.shape[0]):
        for j in range(n - n % SCORE_LANES, n):
            p = 0.0
            for r in range(DD_ROWS):
                p += _dense_term(np.float64(values[rows[r], j]), steps[q, r], powers[q])
            hi[q, j], lo[q, j] = two_sum(hi[q, j], lo[q, j], p)


@njit(cache=True, nogil=True)
def _dense_tdot_steps(values, coefs, powers, starts, code, hi, lo):
    # The same steps and terms as _csr_tdot_dd, whose rows leave the zeros out: here those add
    # an exact +0.0 (see _dense_term), so the bits are the same.  (Once a column's sum
    # overflowed, both give a non-finite value: inf there, nan here.)  Every product on a step's
    # rows while they are in the first-level cache; a query's last, shorter step repeats its
    # last row with c = 0; a step whose coefficients are all zero is skipped (+0.0 changes no
    # bit).  code: the powers as digits, a compile-time constant (add_dense_steps_dd).
    literally(code)
    k = powers.shape[0]
    rows = np.zeros(DD_ROWS, dtype=np.int64)
    steps = np.zeros((k, DD_ROWS))
    for s in range(starts.shape[0] - 1):
        end = starts[s + 1]
        for i in range(starts[s], end, DD_ROWS):
            for r in range(DD_ROWS):
                rows[r] = min(i + r, end - 1)
            nonzero = False
            for q in range(k):
                for r in range(DD_ROWS):
                    steps[q, r] = coefs[q, i + r] if i + r < end else 0.0
                    nonzero = nonzero or steps[q, r] != 0.0
            if nonzero:
                add_dense_steps_dd(values, rows, steps, hi, lo, powers, code)


@njit(cache=True, nogil=True)
def _dense_tdot_dd(values, coefs, powers, starts):
    # one sweep for the sets of products the passes use (each set its own compiled loop, so
    # every product shares a load of the rows); any other set one product after another (the
    # same bits: each product's sums are its own)
    k, n = powers.shape[0], values.shape[1]
    hi = np.zeros((k, n), dtype=np.float64)
    lo = np.zeros((k, n), dtype=np.float64)
    if k == 1 and powers[0] == 1:
        _dense_tdot_steps(values, coefs, powers, starts, 1, hi, lo)
    elif k == 1 and powers[0] == 2:
        _dense_tdot_steps(values, coefs, powers, starts, 2, hi, lo)
    elif k == 2 and powers[0] == 1 and powers[1] == 2:
        _dense_tdot_steps(values, coefs, powers, starts, 12, hi, lo)
    elif k == 3 and powers[0] == 1 and powers[1] == 1 and powers[2] == 2:
        _dense_tdot_steps(values, coefs, powers, starts, 112, hi, lo)
    else:
        for q in range(k):
            if powers[q] == 1:
                _dense_tdot_steps(values, coefs[q:q + 1], powers[q:q + 1], starts, 1, hi[q:q + 1], lo[q:q + 1])
            else:
                _dense_tdot_steps(values, coefs[q:q + 1], powers[q:q + 1], starts, 2, hi[q:q + 1], lo[q:q + 1])
    return hi, lo


def step_starts(offsets: np.ndarray | None, a: int, b: int) -> np.ndarray:
    """The step origins of rows ``a:b`` as :func:`rmatvec_dd_products` takes them (relative to
    ``a``, from 0 to ``b - a``): ``a`` itself and every query start inside, for query
    ``offsets`` over all rows (``None``: one ranking from row 0).  ``a`` and ``b`` must be step
    boundaries (:func:`step_boundary`) or query ends."""
    if offsets is None:
        inner = np.zeros(0, dtype=np.int64)
    else:
        offsets = np.asarray(offsets, dtype=np.int64)
        inner = offsets[(offsets > a) & (offsets < b)] - a
    return np.concatenate(([0], inner, [b - a])).astype(np.int64)


def step_boundary(offsets: np.ndarray | None, row: int, up: bool = False) -> int:
    """The step boundary at or before ``row`` (``up``: at or after it, not past its query's
    end) for query ``offsets`` (``None``: one ranking from row 0)."""
    if offsets is None:
        start, stop = 0, None
    else:
        g = max(int(np.searchsorted(offsets, row, side="right")) - 1, 0)
        start = int(offsets[g])
        stop = int(offsets[g + 1]) if g + 1 < len(offsets) else None
    k = (row - start + (DD_ROWS - 1 if up else 0)) // DD_ROWS
    boundary = start + k * DD_ROWS
    return boundary if stop is None else min(boundary, stop)


def split_steps(offsets: np.ndarray | None, a: int, b: int) -> tuple[int, int]:
    """``(head, tail)`` for rows ``a:b`` of a partition that may cut steps (Spark's driver
    placement): rows ``a:head`` finish a step begun before ``a``, rows ``tail:b`` begin one that
    goes on after ``b``, and rows ``head:tail`` hold whole steps only.  A range inside one step
    gives ``head = tail = b``."""
    head = min(step_boundary(offsets, a, up=True), b)
    tail = step_boundary(offsets, b)
    if tail < head:  # inside one step
        return b, b
    return head, tail


@njit(cache=True, nogil=True)
def _sum_dd(x):
    hi = 0.0
    lo = 0.0
    for i in range(x.shape[0]):
        hi, lo = two_sum(hi, lo, x[i])
    return hi, lo


def csr_tdot_dd(X, c: np.ndarray, power: int = 1, rows: tuple[int, int] | None = None,
                starts: np.ndarray | None = None) -> DoubleDouble:
    """``Xᵀ c`` (``power=1``) or ``(X∘X)ᵀ c`` (``power=2``, entries squared) as a double-double ``(hi, lo)``.

    ``X`` is CSR: scipy, or any object with its ``indptr`` / ``indices`` / ``data``.  With
    ``rows = (a, b)`` only rows ``a:b`` of ``X`` and ``c`` count: ``c`` holds either every row
    of ``X`` or just those ``b - a``.  ``starts``: the step origins (:func:`rmatvec_dd_products`).
    """
    return rmatvec_dd_powers(X, c, (power,), rows, starts)[0]


def rmatvec_dd(X, c: np.ndarray, power: int = 1, rows: tuple[int, int] | None = None,
               starts: np.ndarray | None = None) -> DoubleDouble:
    """:func:`csr_tdot_dd` for CSR or dense (2-D ndarray) ``X``; both give the same sums."""
    return rmatvec_dd_powers(X, c, (power,), rows, starts)[0]


def rmatvec_dd_powers(X, c: np.ndarray, powers: tuple[int, ...],
                      rows: tuple[int, int] | None = None, starts: np.ndarray | None = None) -> list[DoubleDouble]:
    """:func:`rmatvec_dd` of each of ``powers`` (1 and/or 2), in that order, from one sweep over ``X``."""
    return rmatvec_dd_products(X, [(c, p) for p in powers], rows, starts)


def rmatvec_dd_products(X, products: list[tuple[np.ndarray, int]], rows: tuple[int, int] | None = None,
                        starts: np.ndarray | None = None) -> list[DoubleDouble]:
    """``Xᵀc`` (power 1) or ``(X∘X)ᵀc`` (power 2) of each ``(c, power)`` of ``products``, in that
    order, from one sweep over rows ``a:b`` of ``X`` (each ``c`` of every row or of just those):
    the same bits as one :func:`rmatvec_dd` per product, while each row is read once.

    ``starts``: the step origins in rows ``a:b`` (the module docstring), relative to ``a``: 0,
    each query's first row inside, and ``b - a`` (:func:`step_starts`); ``None``: one ranking,
    steps from row ``a``.
    """
    powers = tuple(p for _, p in products)
    if not products or any(p not in (1, 2) for p in powers):
        raise ValueError(f"powers must be 1 and/or 2, got {powers!r}")
    a, b = (0, X.shape[0]) if rows is None else rows
    coefs = np.empty((len(products), b - a))
    for q, (c, _) in enumerate(products):
        coefs[q] = c[a:b] if c.shape[0] != b - a else c  # c of every row, or of rows a:b
    power_array = np.array(powers, dtype=np.int64)
    starts = step_starts(None, 0, b - a) if starts is None else np.ascontiguousarray(starts, dtype=np.int64)
    if starts[0] != 0 or starts[-1] != b - a:
        raise ValueError(f"step origins must run from 0 to {b - a}")
    if isinstance(X, np.ndarray):
        hi, lo = _dense_tdot_dd(np.ascontiguousarray(X[a:b]), coefs, power_array, starts)
    else:
        # indptr holds absolute offsets into indices/data, so a slice of it is a valid row range
        hi, lo = _csr_tdot_dd(X.indptr[a: b + 1], X.indices, X.data, coefs, power_array, X.shape[1], starts)
    return [(hi[q], lo[q]) for q in range(len(products))]


@njit(cache=True, nogil=True, inline="always")
def _add_entry(j, x, mean, centred, hi, lo, count, low, high):
    # one non-zero entry of column j: x (or (x - mean_j)²) into the column's double-double sum
    t = (x - mean[j]) * (x - mean[j]) if centred else x
    hi[j], lo[j] = two_sum(hi[j], lo[j], t)
    count[j] += 1
    low[j] = min(low[j], x)
    high[j] = max(high[j], x)


@njit(cache=True, nogil=True)
def _dense_column_sums_dd(values, mean):
    m, n = values.shape
    hi, lo, count = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64)
    low, high = np.full(n, np.inf), np.full(n, -np.inf)
    centred = mean.shape[0] == n
    for i in range(m):
        for j in range(n):
            x = np.float64(values[i, j])
            if x != 0.0:
                _add_entry(j, x, mean, centred, hi, lo, count, low, high)
    return hi, lo, count, low, high


@njit(cache=True, nogil=True)
def _csr_column_sums_dd(indptr, indices, data, n, mean):
    hi, lo, count = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64)
    low, high = np.full(n, np.inf), np.full(n, -np.inf)
    centred = mean.shape[0] == n
    for e in range(indptr[0], indptr[indptr.shape[0] - 1]):
        x = np.float64(data[e])
        if x != 0.0:
            _add_entry(indices[e], x, mean, centred, hi, lo, count, low, high)
    return hi, lo, count, low, high


def column_sums_dd(X, n_features: int, mean: np.ndarray | None = None):
    """Per column of ``X`` (CSR, or dense rows) over its non-zero entries:
    ``(Σx, count, min, max)``, with ``mean`` ``(Σ(x − mean)², count, min, max)``; the sum a
    double-double.  Zeros, stored or not, are left out (the caller adds the zeros' share), so
    dense and CSR rows give the same bits, and so does any split of the rows into blocks whose
    sums are then added (the module docstring): the feature statistics of a standardization are
    the same on every engine (Chan's pairwise merge of per-block means and M2 was not: their
    last bits followed the partitioning, and TRON on MQ2008 carried that into a 1% difference
    of the weights)."""
    centre = np.zeros(0) if mean is None else np.ascontiguousarray(mean, dtype=np.float64)
    if isinstance(X, np.ndarray):
        hi, lo, count, low, high = _dense_column_sums_dd(np.ascontiguousarray(X), centre)
    else:
        n_rows = X.shape[0]
        hi, lo, count, low, high = _csr_column_sums_dd(np.asarray(X.indptr[: n_rows + 1]), X.indices, X.data,
                                                       int(n_features), centre)
    return (hi, lo), count, low, high


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
