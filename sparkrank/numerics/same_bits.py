"""Whether two float64 vectors are the same bit for bit, without a copy or a temporary.

Why: the objectives' point cache and the local engine's remembered scores ask, every pass,
whether a vector is one they have seen.  Keyed by ``w.tobytes()`` that cost a copy of ``w``
and a hash of every byte per lookup, and two keys of the full width kept alive; ``np.array_equal``
allocates a boolean array of the width.  At 2²⁴ hashed feature ids each is 16-128 MB a pass.
Comparing the 64-bit patterns (so ``-0.0`` differs from ``0.0`` and a NaN equals the same NaN,
as bytes do) stops at the first difference, which for two iterates is usually the first entry.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _same_words(a, b):
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """``a.tobytes() == b.tobytes()`` for float64 arrays of one dimension, without the bytes."""
    if a.shape != b.shape:
        return False
    if a is b:
        return True
    a, b = np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64)
    return bool(_same_words(a.reshape(-1).view(np.int64), b.reshape(-1).view(np.int64)))


def frozen_copy(v: np.ndarray) -> np.ndarray:
    """A float64 copy of ``v`` that cannot be written (a cache's key may be shared, never changed)."""
    out = np.array(v, dtype=np.float64)
    out.flags.writeable = False
    return out


def is_frozen(v: np.ndarray) -> bool:
    """Whether ``v`` owns its data and cannot be written (a :func:`frozen_copy`): safe to keep as is."""
    return bool(v.flags.owndata and not v.flags.writeable)
