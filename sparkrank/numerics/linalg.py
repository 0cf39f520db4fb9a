"""The sparse product ``X·v`` reading float32 or float64 CSR without copies (``Xᵀ·c`` is in
:mod:`sparkrank.numerics.exact_sum`, accumulated as double-doubles).

scipy upcasts a float32 matrix times a float64 vector by copying the matrix (SPARK-NOTES:
432 ms vs 142 ms); these kernels read the stored dtype and accumulate in float64, so the
model and its gradient keep double precision whatever the storage.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit


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


def csr_dot(X: sp.csr_matrix, v: np.ndarray, rows: tuple[int, int] | None = None) -> np.ndarray:
    """``X v`` in float64; with ``rows = (a, b)`` only rows ``a:b`` (no copy of ``X``)."""
    a, b = (0, X.shape[0]) if rows is None else rows
    # indptr holds absolute offsets into indices/data, so a slice of it is a valid row range
    return _csr_dot(X.indptr[a: b + 1], X.indices, X.data, np.ascontiguousarray(v, dtype=np.float64))
