"""Pointer-free label trees for the counting sweeps (lee-lin2014 §2.4-2.5).

Every tree offers the same four operations so one generic sweep (``counting.py``) serves
them all; a tree's state is a tuple of numpy arrays:

``new(capacity, max_levels)``, ``reset(state, n_levels)``,
``insert(state, key_rank, key, value)``, ``above(state, key_rank, key)`` and
``below(state, key_rank, key)`` -> ``(count, sum of values)`` over the inserted elements
whose key is strictly larger / smaller.

``key_rank`` is the dense rank of the label inside its group (0..n_levels-1); ``key`` the
label itself.  The selection tree and the direct count index by rank; the red-black tree
(``rbtree.py``) keys by the real label.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _next_pow2(n: int) -> int:
    size = 1
    while size < n:
        size *= 2
    return size


# --- selection tree: a complete binary tree over the label levels, array-indexed ----------
# lee-lin2014 §2.5: leaves are the k distinct labels in order, an internal node keeps the
# count (and value sum) of its subtree; node i has children 2i and 2i+1, the root is 1.


@njit(cache=True)
def selection_new(capacity, max_levels):
    leaves = _next_pow2(max(max_levels, 1))
    meta = np.zeros(1, dtype=np.int64)
    meta[0] = leaves
    # column 0: count (exact in float64 below 2**53), column 1: value sum — one cache line per node
    return (np.zeros((2 * leaves, 2), dtype=np.float64), meta)


@njit(cache=True)
def selection_reset(state, n_levels):
    node, meta = state
    leaves = _next_pow2(max(n_levels, 1))
    meta[0] = leaves
    node[: 2 * leaves, :] = 0.0


@njit(cache=True)
def selection_insert(state, key_rank, key, value):
    node, meta = state
    i = meta[0] + key_rank
    while i >= 1:
        node[i, 0] += 1.0
        node[i, 1] += value
        i //= 2


@njit(cache=True)
def selection_above(state, key_rank, key):
    node, meta = state
    i = meta[0] + key_rank
    n = 0.0
    s = 0.0
    while i > 1:
        if i % 2 == 0:  # a left child: the right sibling holds larger labels
            n += node[i + 1, 0]
            s += node[i + 1, 1]
        i //= 2
    return np.int64(n), s


@njit(cache=True)
def selection_below(state, key_rank, key):
    node, meta = state
    i = meta[0] + key_rank
    n = 0.0
    s = 0.0
    while i > 1:
        if i % 2 == 1:  # a right child: the left sibling holds smaller labels
            n += node[i - 1, 0]
            s += node[i - 1, 1]
        i //= 2
    return np.int64(n), s


# --- direct count: one counter per label level, O(k) per query (lee-lin2014 §2.3) ----------
# Best when k is 2-3: no tree walk at all.


@njit(cache=True)
def direct_new(capacity, max_levels):
    meta = np.zeros(1, dtype=np.int64)
    size = max(max_levels, 1)
    return (np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.float64), meta)


@njit(cache=True)
def direct_reset(state, n_levels):
    count, total, meta = state
    meta[0] = n_levels
    count[:n_levels] = 0
    total[:n_levels] = 0.0


@njit(cache=True)
def direct_insert(state, key_rank, key, value):
    count, total, meta = state
    count[key_rank] += 1
    total[key_rank] += value


@njit(cache=True)
def direct_above(state, key_rank, key):
    count, total, meta = state
    n = 0
    s = 0.0
    for level in range(key_rank + 1, meta[0]):
        n += count[level]
        s += total[level]
    return n, s


@njit(cache=True)
def direct_below(state, key_rank, key):
    count, total, meta = state
    n = 0
    s = 0.0
    for level in range(key_rank):
        n += count[level]
        s += total[level]
    return n, s
