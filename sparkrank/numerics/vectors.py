"""Vectors of a given length: weights trained on one feature width applied to another."""

from __future__ import annotations

import numpy as np


def fit_length(v: np.ndarray, n_features: int, fill: float = 0.0) -> np.ndarray:
    """``v`` padded with ``fill`` (or cut, for unseen trailing features) to ``n_features``."""
    out = np.full(n_features, fill, dtype=np.float64)
    k = min(n_features, v.shape[0])
    out[:k] = v[:k]
    return out
