"""The product ``X·v`` reading float32 or float64 CSR or dense rows without copies (``Xᵀ·c``
is in :mod:`sparkrank.numerics.exact_sum`, accumulated as double-doubles).

scipy upcasts a float32 matrix times a float64 vector by copying the matrix (SPARK-NOTES:
432 ms vs 142 ms); these kernels read the stored dtype and accumulate in float64, so the
model and its gradient keep double precision whatever the storage.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

if TYPE_CHECKING:
    import scipy.sparse as sp


@njit(cache=True, nogil=True)
def _csr_dot(indptr, indices, data, v):
    m = indptr.shape[0] - 1
    out = np.empty(m, dtype=np.float64)
    for i in range(m):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * v[indices[k]]
        out[i] = acc
    return out


#: Rows of a dense block summed side by side by :func:`_dense_dot`.
_ROWS_AT_ONCE = 8


@njit(cache=True, nogil=True)
def _dense_dot(values, v):
    # The zeros a CSR row leaves out are skipped here too (a select, not a branch), so a
    # dense row's score is the CSR row's bit for bit: same products, same order.  Eight rows
    # side by side: each row's sum is one dependent chain of additions, and eight
    # independent chains keep the floating-point adders busy.  The eight rows are first
    # copied (exactly, as float64) into a column-major tile, so that the eight values of a
    # column are adjacent and the inner loop runs as vector instructions instead of eight
    # strided loads (1M x 136 float32: 1.3x faster without zeros, 2.6x with 10% zeros); the
    # order of each row's additions, hence every bit of the result, is unchanged.
    m, n = values.shape
    out = np.empty(m, dtype=np.float64)
    tile = np.empty((n, _ROWS_AT_ONCE), dtype=np.float64)  # tile[j, k] = values[i + k, j]
    acc = np.zeros(_ROWS_AT_ONCE)
    full = m - m % _ROWS_AT_ONCE
    for i in range(0, full, _ROWS_AT_ONCE):  # a constant trip count: acc lives in registers
        for k in range(_ROWS_AT_ONCE):
            for j in range(n):
                tile[j, k] = values[i + k, j]
        for k in range(_ROWS_AT_ONCE):
            acc[k] = 0.0
        for j in range(n):
            vj = v[j]
            for k in range(_ROWS_AT_ONCE):
                x = tile[j, k]
                acc[k] = acc[k] + x * vj if x != 0 else acc[k]
        for k in range(_ROWS_AT_ONCE):
            out[i + k] = acc[k]
    for r in range(full, m):
        a = 0.0
        for j in range(n):
            x = values[r, j]
            a = a + x * v[j] if x != 0 else a
        out[r] = a
    return out


def csr_dot(X: sp.csr_matrix, v: np.ndarray, rows: tuple[int, int] | None = None) -> np.ndarray:
    """``X v`` in float64; with ``rows = (a, b)`` only rows ``a:b`` (no copy of ``X``)."""
    a, b = (0, X.shape[0]) if rows is None else rows
    # indptr holds absolute offsets into indices/data, so a slice of it is a valid row range
    return _csr_dot(X.indptr[a: b + 1], X.indices, X.data, np.ascontiguousarray(v, dtype=np.float64))


def is_sparse(X) -> bool:
    """``X`` is a scipy sparse matrix.  Checked without importing scipy.sparse: if nothing
    imported it, nothing can be one (the local engine on dense rows never loads it, which
    saves a tenth of a second and 20 MB in every run)."""
    module = sys.modules.get("scipy.sparse")
    return module is not None and module.issparse(X)


def matvec(X, v: np.ndarray, rows: tuple[int, int] | None = None) -> np.ndarray:
    """``X v`` in float64 for CSR or dense (2-D ndarray) ``X``; ``rows = (a, b)``: rows ``a:b`` only."""
    if not isinstance(X, np.ndarray):
        return csr_dot(X, v, rows)
    a, b = (0, X.shape[0]) if rows is None else rows
    return _dense_dot(X[a:b], np.ascontiguousarray(v, dtype=np.float64))


@njit(cache=True, nogil=True)
def dense_column_sums(values, mean):
    """Per column of dense rows, over the non-zero entries only (as CSR stores them):
    ``(Σx, count, min, max)``, or with ``mean`` given ``Σ(x - mean)²`` in the first slot.

    Row by row, as ``np.bincount`` adds a CSR's entries, so the dense and CSR statistics of
    the same rows are equal bit for bit.
    """
    m, n = values.shape
    total = np.zeros(n)
    count = np.zeros(n, dtype=np.int64)
    lo = np.full(n, np.inf)
    hi = np.full(n, -np.inf)
    centred = mean.shape[0] == n
    for i in range(m):
        for j in range(n):
            x = np.float64(values[i, j])
            if x != 0.0:
                if centred:
                    d = x - mean[j]
                    total[j] += d * d
                else:
                    total[j] += x
                count[j] += 1
                lo[j] = min(lo[j], x)
                hi[j] = max(hi[j], x)
    return total, count, lo, hi
