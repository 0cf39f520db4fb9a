"""The ``pairs`` counting method: every pair of a group enumerated, ``O(m²)`` per group.

The test oracle of the sweeps in :mod:`.counting` and the PairRSVM-style baseline; the same
comparison ``p_upper < p_lower + δ`` (``<=`` when inclusive) as every other method.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from .tree_kinds import insert_weight


@njit(cache=True)
def _precedes(a, b, inclusive):
    return a < b or (inclusive and a == b)


def _counts(weights, m):
    """Zeroed partner counts for ``m`` rows: int64 counts, or float64 weight sums when weighted."""
    raise TypeError("all_pairs._counts runs in numba-compiled code only (its @overload)")


@overload(_counts, inline="always")
def _counts_overload(weights, m):
    if isinstance(weights, (types.NoneType, types.Omitted)):
        return lambda weights, m: np.zeros(m, dtype=np.int64)
    return lambda weights, m: np.zeros(m, dtype=np.float64)


@njit(cache=True)
def all_pairs(scores, values, labels, label_rank, offsets, margin, inclusive, adjacent, weights=None):
    # The O(m²)-per-group enumeration: the test oracle and the PairRSVM-style baseline
    # (adjacent: only the pairs whose upper row is on the next level above the lower row's).
    # Weighted (weights not None): each partner counted by its weight a_j, its value by a_j·v_j;
    # unweighted, a_j is the integer 1 and the counts stay integers.
    m = scores.shape[0]
    n_above = _counts(weights, m)
    n_below = _counts(weights, m)
    s_above = np.zeros(m, dtype=np.float64)
    s_below = np.zeros(m, dtype=np.float64)
    for g in range(offsets.shape[0] - 1):
        start, end = offsets[g], offsets[g + 1]
        for u in range(start, end):
            for lo in range(start, end):
                if adjacent and label_rank[u] != label_rank[lo] + 1:
                    continue
                if labels[u] > labels[lo] and _precedes(scores[u], scores[lo] + margin, inclusive):
                    a_u, a_lo = insert_weight(weights, u), insert_weight(weights, lo)
                    n_above[lo] += a_u
                    s_above[lo] += a_u * values[u]
                    n_below[u] += a_lo
                    s_below[u] += a_lo * values[lo]
    return n_above, n_below, s_above, s_below
