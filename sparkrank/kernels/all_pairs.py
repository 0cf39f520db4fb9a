"""The ``pairs`` counting method: every pair of a group enumerated, ``O(m²)`` per group.

The test oracle of the sweeps in :mod:`.counting` and the PairRSVM-style baseline; the same
comparison ``p_upper < p_lower + δ`` (``<=`` when inclusive) as every other method.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _precedes(a, b, inclusive):
    return a < b or (inclusive and a == b)


@njit(cache=True)
def all_pairs(scores, values, labels, label_rank, offsets, margin, inclusive, adjacent):
    # The O(m²)-per-group enumeration: the test oracle and the PairRSVM-style baseline
    # (adjacent: only the pairs whose upper row is on the next level above the lower row's).
    m = scores.shape[0]
    n_above = np.zeros(m, dtype=np.int64)
    n_below = np.zeros(m, dtype=np.int64)
    s_above = np.zeros(m, dtype=np.float64)
    s_below = np.zeros(m, dtype=np.float64)
    for g in range(offsets.shape[0] - 1):
        start, end = offsets[g], offsets[g + 1]
        for u in range(start, end):
            for lo in range(start, end):
                if adjacent and label_rank[u] != label_rank[lo] + 1:
                    continue
                if labels[u] > labels[lo] and _precedes(scores[u], scores[lo] + margin, inclusive):
                    n_above[lo] += 1
                    s_above[lo] += values[u]
                    n_below[u] += 1
                    s_below[u] += values[lo]
    return n_above, n_below, s_above, s_below


@njit(cache=True)
def all_pairs_weighted(scores, values, labels, label_rank, offsets, margin, inclusive, adjacent, weights):
    # all_pairs with each partner counted by its weight a_j (and its value by a_j·v_j)
    m = scores.shape[0]
    n_above = np.zeros(m)
    n_below = np.zeros(m)
    s_above = np.zeros(m)
    s_below = np.zeros(m)
    for g in range(offsets.shape[0] - 1):
        start, end = offsets[g], offsets[g + 1]
        for u in range(start, end):
            for lo in range(start, end):
                if adjacent and label_rank[u] != label_rank[lo] + 1:
                    continue
                if labels[u] > labels[lo] and _precedes(scores[u], scores[lo] + margin, inclusive):
                    n_above[lo] += weights[u]
                    s_above[lo] += weights[u] * values[u]
                    n_below[u] += weights[lo]
                    s_below[u] += weights[lo] * values[lo]
    return n_above, n_below, s_above, s_below
