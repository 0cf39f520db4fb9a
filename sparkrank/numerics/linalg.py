"""The product ``X·v`` reading float32 or float64 CSR or dense rows without copies (``Xᵀ·c``
is in :mod:`sparkrank.numerics.exact_sum`, accumulated as double-doubles).  Each row is summed
in the lane order of :mod:`sparkrank.numerics.simd`, the same bits on both layouts.

scipy upcasts a float32 matrix times a float64 vector by copying the matrix (SPARK-NOTES:
432 ms vs 142 ms); these kernels read the stored dtype and accumulate in float64, so the
model and its gradient keep double precision whatever the storage.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from .simd import SCORE_LANES, lane_total, row_dot_lanes

if TYPE_CHECKING:
    import scipy.sparse as sp


#: Rows whose entries' ``v[j]`` :func:`_csr_dot` gathers into a buffer before summing them.
GATHER_ROWS = 256


@njit(cache=True, nogil=True)
def _csr_dot(indptr, indices, data, v):
    # numerics/simd.py's order: entry j into lane j mod 8, lanes combined in a fixed tree
    # (the same bits as row_dot_lanes on the dense row; CSR column indices ascend in a row).
    # Two phases per GATHER_ROWS rows: first every entry's v[j] into a buffer, a loop of
    # independent loads whose cache misses overlap; then the lane sums from the buffer.  Summed
    # while gathering, each miss waited behind the lane updates (2²⁴ hashed ids, 40 a row:
    # 26 ns an entry against 15, one thread; the same bits).
    m = indptr.shape[0] - 1
    out = np.empty(m, dtype=np.float64)
    lanes = np.zeros(SCORE_LANES)
    widest = 0
    for a in range(0, m, GATHER_ROWS):
        widest = max(widest, indptr[min(a + GATHER_ROWS, m)] - indptr[a])
    gathered = np.empty(widest)
    for a in range(0, m, GATHER_ROWS):
        b = min(a + GATHER_ROWS, m)
        base = indptr[a]
        for k in range(base, indptr[b]):
            gathered[k - base] = v[indices[k]]
        for i in range(a, b):
            lanes[:] = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                x = np.float64(data[k])
                if x != 0.0:  # an explicit zero is no term, as in a dense row
                    lanes[indices[k] % SCORE_LANES] += x * gathered[k - base]
            out[i] = lane_total(lanes)
    return out


@njit(cache=True, nogil=True)
def _dense_dot(values, v):
    m, n = values.shape
    if v.shape[0] < n:
        raise ValueError("the vector is shorter than a row")
    out = np.empty(m, dtype=np.float64)
    for i in range(m):
        out[i] = row_dot_lanes(values, i, v)
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
    return _dense_dot(np.ascontiguousarray(X[a:b]), np.ascontiguousarray(v, dtype=np.float64))


