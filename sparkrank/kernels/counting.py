"""Support-pair counting per query group without enumerating pairs.

For scores ``p``, a per-row value vector ``v`` and a margin ``δ``, every row ``k`` gets

* ``n_above[k] = |{j : y_j > y_k,  p_j < p_k + δ}|``  (k is the lower row of the pair)
* ``n_below[k] = |{j : y_j < y_k,  p_k < p_j + δ}|``  (k is the upper row)
* ``s_above[k]``, ``s_below[k]``: sums of ``v_j`` over the same two sets,

with ``<=`` instead of ``<`` when ``inclusive``; ``j`` ranges over ``k``'s own group.  With
``δ = 1`` these are airola2011's ``c_i`` / ``d_i`` (eqs. (5)/(6)) and lee-lin2014's
``l⁺_i, l⁻_i`` with ``α`` (``v = p``) or ``γ`` (``v = Xv``) sums (§2.2).  With ``δ = 0``
they count misordered pairs for the evaluation metrics.

The comparison is always ``p_upper < p_lower + δ`` evaluated in that form
(:func:`sparkrank.conventions.is_support_pair`), so every method and the oracle agree
exactly.  The sweeps are airola2011 Algorithm 3 / lee-lin2014 Algorithm 2: rows sorted
by score, a pointer inserts labels into a tree while the margin condition holds, and the
tree answers "how many (and what sum) with a larger / smaller label".
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit

from ..data.groups import QueryGroups
from . import trees

_THREADED_MIN_ROWS = 50_000
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkrank-sweep")

COUNTING_METHODS: tuple[str, ...] = ("selection", "rbtree", "direct", "pairs")
DEFAULT_COUNTING = "selection"


@dataclass(frozen=True)
class PairCounts:
    """Per-row support-pair counts and value sums (see module docstring)."""

    n_above: np.ndarray
    n_below: np.ndarray
    s_above: np.ndarray
    s_below: np.ndarray


@njit(cache=True)
def _precedes(a, b, inclusive):
    return a < b or (inclusive and a == b)


_NUMPY_SORT_MIN_ROWS = 4096


@njit(cache=True)
def _sort_small_groups(scores, offsets, order, max_rows):
    for g in range(offsets.shape[0] - 1):
        start, end = offsets[g], offsets[g + 1]
        if end - start > max_rows:
            continue
        local = np.argsort(scores[start:end])
        for t in range(end - start):
            order[start + t] = start + local[t]


def sort_within_groups(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Row indices ordered by ascending score inside each group (groups stay in place)."""
    order = np.empty(scores.shape[0], dtype=np.int64)
    _sort_small_groups(scores, offsets, order, _NUMPY_SORT_MIN_ROWS)
    # numpy's vectorised sort is several times faster than numba's on large groups
    for g in np.flatnonzero(np.diff(offsets) > _NUMPY_SORT_MIN_ROWS):
        start, end = offsets[g], offsets[g + 1]
        order[start:end] = np.argsort(scores[start:end]) + start
    return order


# not cache=True: numba cannot cache functions that take other jitted functions as
# arguments (numba#2956: "underlying object has vanished" when saving the index)
@njit(nogil=True)
def _sweep(
    sorted_scores, sorted_rank, sorted_labels, sorted_values, offsets, n_levels, margin, inclusive,
    descending, new, reset, insert, above, below,
):
    # airola2011 Algorithm 3 lines 5-13 (ascending) and 14-22 (descending), with value sums
    # as in lee-lin2014 Algorithm 2.  Inputs are gathered in score order so the sweep reads
    # memory sequentially; outputs are in the same sorted positions.
    m = sorted_scores.shape[0]
    counts = np.zeros(m, dtype=np.int64)
    sums = np.zeros(m, dtype=np.float64)
    n_groups = offsets.shape[0] - 1
    capacity = 1
    max_levels = 1
    for g in range(n_groups):
        capacity = max(capacity, offsets[g + 1] - offsets[g])
        max_levels = max(max_levels, n_levels[g])
    tree = new(capacity, max_levels)
    for g in range(n_groups):
        start, end = offsets[g], offsets[g + 1]
        if n_levels[g] < 2:
            continue  # a single label level: no pairs in this group
        reset(tree, n_levels[g])
        if not descending:
            # t is the lower row; insert candidate upper rows j with p_j < p_t + δ
            j = start
            for t in range(start, end):
                threshold = sorted_scores[t] + margin
                while j < end and _precedes(sorted_scores[j], threshold, inclusive):
                    insert(tree, sorted_rank[j], sorted_labels[j], sorted_values[j])
                    j += 1
                counts[t], sums[t] = above(tree, sorted_rank[t], sorted_labels[t])
        else:
            # t is the upper row; insert candidate lower rows j with p_t < p_j + δ
            j = end - 1
            for t in range(end - 1, start - 1, -1):
                while j >= start and _precedes(sorted_scores[t], sorted_scores[j] + margin, inclusive):
                    insert(tree, sorted_rank[j], sorted_labels[j], sorted_values[j])
                    j -= 1
                counts[t], sums[t] = below(tree, sorted_rank[t], sorted_labels[t])
    return counts, sums


@njit(cache=True)
def _all_pairs(scores, values, labels, offsets, margin, inclusive):
    # The O(m²)-per-group enumeration: the test oracle and the PairRSVM-style baseline.
    m = scores.shape[0]
    n_above = np.zeros(m, dtype=np.int64)
    n_below = np.zeros(m, dtype=np.int64)
    s_above = np.zeros(m, dtype=np.float64)
    s_below = np.zeros(m, dtype=np.float64)
    for g in range(offsets.shape[0] - 1):
        start, end = offsets[g], offsets[g + 1]
        for u in range(start, end):
            for lo in range(start, end):
                if labels[u] > labels[lo] and _precedes(scores[u], scores[lo] + margin, inclusive):
                    n_above[lo] += 1
                    s_above[lo] += values[u]
                    n_below[u] += 1
                    s_below[u] += values[lo]
    return n_above, n_below, s_above, s_below


def _tree_functions(method: str) -> tuple[Callable, ...]:
    if method == "selection":
        return (trees.selection_new, trees.selection_reset, trees.selection_insert,
                trees.selection_above, trees.selection_below)
    if method == "direct":
        return (trees.direct_new, trees.direct_reset, trees.direct_insert,
                trees.direct_above, trees.direct_below)
    if method == "rbtree":
        from . import rbtree

        return (rbtree.rbtree_new, rbtree.rbtree_reset, rbtree.rbtree_insert,
                rbtree.rbtree_above, rbtree.rbtree_below)
    raise ValueError(f"unknown counting method {method!r}; choose one of {', '.join(COUNTING_METHODS)}")


def check_counting_method(method: str) -> str:
    """Validate a counting-method name (raises ``ValueError`` listing the choices)."""
    if method not in COUNTING_METHODS:
        raise ValueError(f"unknown counting method {method!r}; choose one of {', '.join(COUNTING_METHODS)}")
    return method


def count_support_pairs(
    groups: QueryGroups,
    scores: np.ndarray,
    values: np.ndarray | None = None,
    *,
    order: np.ndarray | None = None,
    margin: float = 1.0,
    inclusive: bool = False,
    method: str = DEFAULT_COUNTING,
) -> PairCounts:
    """Count support pairs (and sum ``values`` over them) for every row.

    Parameters
    ----------
    groups : QueryGroups
        Labels and group structure.
    scores : float64 array (m,)
        Model scores ``p = Xw``.
    values : float64 array (m,), optional
        Values summed over each row's support partners (``p`` for lee-lin2014's ``α``,
        ``Xv`` for ``γ``); zeros when omitted.
    order : int64 array (m,), optional
        :func:`sort_within_groups` of ``scores``, if already computed (TRON reuses it for
        every Hessian-vector product at the same ``w``).
    margin : float
        ``δ`` in ``p_upper < p_lower + δ``.
    inclusive : bool
        Use ``<=`` instead of ``<``.
    method : {"selection", "rbtree", "direct", "pairs"}
        Counting structure; all give identical counts.

    Returns
    -------
    PairCounts
    """
    check_counting_method(method)
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if scores.shape[0] != groups.n_rows:
        raise ValueError(f"{scores.shape[0]} scores for {groups.n_rows} rows")
    values = np.zeros_like(scores) if values is None else np.ascontiguousarray(values, dtype=np.float64)
    if method == "pairs":
        result = _all_pairs(scores, values, groups.labels, groups.offsets, float(margin), bool(inclusive))
        return PairCounts(*result)
    if order is None:
        order = sort_within_groups(scores, groups.offsets)
    gathered = (scores[order], groups.label_rank[order], groups.labels[order], values[order])
    common = (groups.offsets, groups.n_levels, float(margin), bool(inclusive))
    tree = _tree_functions(method)
    if scores.shape[0] >= _THREADED_MIN_ROWS:
        # the two sweeps are independent: run them on two cores (the kernels release the GIL)
        up = _POOL.submit(_sweep, *gathered, *common, False, *tree)
        n_below_s, s_below_s = _sweep(*gathered, *common, True, *tree)
        n_above_s, s_above_s = up.result()
    else:
        n_above_s, s_above_s = _sweep(*gathered, *common, False, *tree)
        n_below_s, s_below_s = _sweep(*gathered, *common, True, *tree)
    result = [np.empty_like(a) for a in (n_above_s, n_below_s, s_above_s, s_below_s)]
    for out, sorted_values in zip(result, (n_above_s, n_below_s, s_above_s, s_below_s)):
        out[order] = sorted_values
    return PairCounts(*result)
