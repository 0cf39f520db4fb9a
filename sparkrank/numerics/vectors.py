"""Vectors of a given length: weights trained on one feature width applied to another, and
elementwise formulas over vectors of the full width in one sweep."""

from __future__ import annotations

import numpy as np
from numba import njit


def fit_length(v: np.ndarray, n_features: int, fill: float = 0.0) -> np.ndarray:
    """``v`` padded with ``fill`` (or cut, for unseen trailing features) to ``n_features``."""
    out = np.full(n_features, fill, dtype=np.float64)
    k = min(n_features, v.shape[0])
    out[:k] = v[:k]
    return out


@njit(cache=True, nogil=True)
def _spread_diagonal(first, second, total, weight, out):
    # out = 1 + weight·spread, spread = second - first²/total, 0 where it is cancellation noise
    # (not above 1e-12·second) or not finite: numpy's expression, element by element (the
    # same operations; no contraction into fused multiply-adds), one sweep instead of ten
    # arrays of the full width.  Returns the first column whose moments are not finite, or -1.
    for k in range(first.shape[0]):
        if not (np.isfinite(second[k]) and np.isfinite(first[k])):
            return k
        spread = second[k] - first[k] * first[k] / total
        if not spread > 1e-12 * second[k]:
            spread = 0.0
        out[k] = 1.0 + weight * spread
    return -1


def spread_diagonal(first: np.ndarray, second: np.ndarray, total: float, weight: float) -> tuple[np.ndarray, int]:
    """``(diagonal, first bad column or -1)`` from column moments ``Σ a x`` and ``Σ a x²`` over
    weights summing to ``total > 0``: ``1 + weight·spread`` per column
    (:func:`sparkrank.objectives.base.diagonal_from_moments` says what it is); the diagonal
    is meaningful only when no column's moments are non-finite (bad)."""
    out = np.empty(first.shape[0])
    bad = _spread_diagonal(np.ascontiguousarray(first, dtype=np.float64),
                           np.ascontiguousarray(second, dtype=np.float64), float(total), float(weight), out)
    return out, int(bad)
