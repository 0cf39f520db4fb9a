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

import numpy as np
from numba import literally, njit

from ..choices import COUNTING_METHODS, DEFAULT_COUNTING, DEFAULT_PAIR_RULE, PAIR_RULES, check_choice
from ..data.groups import QueryGroups
from . import level_counting, rbtree, tree_kinds, trees
from .all_pairs import all_pairs as _all_pairs
from .tree_kinds import DIRECT, RBTREE, SELECTION

_THREADED_MIN_ROWS = 50_000
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkrank-sweep")


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


#: Rows of a run that :func:`sort_group` ranks directly before merging runs: ranking is
#: ``O(run²)`` compares, but branch-free and in vector registers, so for short runs it beats every
#: comparison sort (1M scores in groups of 120 in one thread: 0.017 s against 0.035 s for
#: numba's quicksort and 0.031 s for runs of 8 by insertion).
_RANK_RUN_ROWS = 32


def sort_scratch(max_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Scratch arrays for :func:`sort_group` on groups of up to ``max_rows`` rows."""
    return np.empty(2 * max(max_rows, 1)), np.empty(2 * max(max_rows, 1), dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _rank_run(keys, index, src, dst, lo, hi, first_row):
    """Stable ranks of ``keys[src + lo:src + hi]``: each key and its row (``first_row + lo + i``)
    go to position ``dst + lo + rank``, rank = the keys below it plus the equal ones before it."""
    n = hi - lo
    run = keys[src + lo:src + hi]
    for i in range(n):
        k = run[i]
        rank = np.int64(0)
        for j in range(n):  # no branch: the compiler keeps this loop in vector registers
            rank += np.int64(run[j] < k) + np.int64((run[j] == k) & (j < i))
        keys[dst + lo + rank] = k
        index[dst + lo + rank] = first_row + lo + i


@njit(cache=True, nogil=True, inline="always")
def _merge_runs(keys, index, src, dst, lo, mid, hi):
    """Merge the sorted runs ``lo:mid`` and ``mid:hi`` of the half at ``src`` into the half at
    ``dst``, a left key first on ties (stable)."""
    i, j, o = lo, mid, lo
    while i < mid and j < hi:
        left, right = keys[src + i], keys[src + j]
        take_right = right < left
        keys[dst + o] = right if take_right else left
        index[dst + o] = index[src + j] if take_right else index[src + i]
        j += np.int64(take_right)
        i += np.int64(not take_right)
        o += 1
    for t in range(i, mid):
        keys[dst + o] = keys[src + t]
        index[dst + o] = index[src + t]
        o += 1
    for t in range(j, hi):
        keys[dst + o] = keys[src + t]
        index[dst + o] = index[src + t]
        o += 1


@njit(cache=True, nogil=True)
def sort_group(scores, start, end, order, keys, index):
    """``order[start:end]`` = rows ``start:end`` by ascending score, **ties in row order** (a
    stable sort; NaN sorts as ``+inf``): the one order of every sort in sparkrank
    (:func:`sort_within_groups` and the group forms of :mod:`sparkrank.kernels.group_forms` sort
    here).  The sweeps' sums depend on the order of tied rows (they are added to the tree in that
    order), so it is defined by the rows, not by an algorithm.

    Runs of :data:`_RANK_RUN_ROWS` rows are ranked directly, then merged pairwise (a bottom-up
    merge sort).  ``keys``, ``index``: :func:`sort_scratch` of at least ``end - start`` rows."""
    n = end - start
    if n <= 0:
        return
    for t in range(n):  # the keys into the upper half; NaN as +inf, so every key has one rank
        k = scores[start + t]
        keys[n + t] = k if k == k else np.inf
    for lo in range(0, n, _RANK_RUN_ROWS):
        _rank_run(keys, index, n, 0, lo, min(lo + _RANK_RUN_ROWS, n), start)
    src, dst, width = 0, n, _RANK_RUN_ROWS
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            _merge_runs(keys, index, src, dst, lo, mid, hi)
        src, dst = dst, src
        width *= 2
    for t in range(n):
        order[start + t] = index[src + t]


@njit(cache=True, nogil=True)
def _sort_groups(scores, offsets, order, keys, index):
    for g in range(offsets.shape[0] - 1):
        sort_group(scores, offsets[g], offsets[g + 1], order, keys, index)


def sort_within_groups(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Row indices ordered by ascending score inside each group (groups stay in place), ties in
    row order (:func:`sort_group`).

    int32 (half the memory of a state TRON keeps per point) unless the rows could overflow it."""
    order = np.empty(scores.shape[0], dtype=np.int32 if scores.shape[0] < 2**31 else np.int64)
    largest = int(np.diff(offsets).max()) if offsets.shape[0] > 1 else 0
    _sort_groups(np.ascontiguousarray(scores, dtype=np.float64), offsets, order, *sort_scratch(largest))
    return order


@njit(cache=True, nogil=True)
def _gather(order, lo, hi, scores, label_rank, values, labels, with_sums, with_labels,
            sorted_scores, sorted_rank, sorted_values, sorted_labels, weights=None, sorted_weights=None):
    # inputs in score order for positions lo..hi-1, so the sweeps read memory sequentially
    # (weighted rows: their weights, and the values times them)
    for t in range(lo, hi):
        row = order[t]
        sorted_scores[t] = scores[row]
        sorted_rank[t] = label_rank[row]
        if weights is not None:
            sorted_weights[t] = weights[row]
        if with_sums:
            sorted_values[t] = values[row] if weights is None else weights[row] * values[row]
        if with_labels:
            sorted_labels[t] = labels[row]


@njit(cache=True, nogil=True)
def sweep_group(kind, sorted_scores, sorted_rank, sorted_labels, sorted_values, start, end, n_levels, margin,
                inclusive, descending, with_sums, tree, counts, sums, bounds, sorted_weights=None):
    """One group's sweep, the one copy for every tree: the group's rows are positions
    ``start:end`` of the score-sorted arrays, ``n_levels`` (at least 2) its label levels; the
    counts (and value sums) of each position go to ``counts`` / ``sums`` at the same position.
    ``descending`` false: row ``t`` is the lower row of its pairs (``n_above``, ``s_above``);
    true: the upper (``n_below``, ``s_below``).  :func:`count_support_pairs` and the compiled
    per-group passes (:mod:`sparkrank.kernels.group_forms`) both sweep here, so their sums have
    the same bits.

    ``kind``: the tree, a compile-time constant of :mod:`.tree_kinds` (``tree`` is one of that
    kind; ``sorted_labels``, the real labels in score order, only the red-black tree reads).
    ``bounds`` (unless empty) gets each position's partners as a range of positions, relative to
    ``start``: ascending, row ``t``'s partners are among positions ``[0, bounds[t])``; descending,
    among ``[bounds[t], end - start)`` (what :func:`partner_sums_from_bounds` reads).

    ``sorted_weights`` (weighted rows; ``None``: every row counts 1, and the compiled sweep is
    the unweighted one): each row is inserted with its weight ``a_j`` into a tree of weight sums
    (:func:`new_tree`), so ``counts`` (float64) get ``Σ a_j`` over the partners; the caller
    passes ``a_j·v_j`` as the values."""
    literally(kind)
    ahead = trees.PREFETCH_DISTANCE
    height = tree_kinds.tree_reset(kind, tree, n_levels, with_sums)
    prefetch = tree_kinds.tree_should_prefetch(kind, n_levels)
    if not descending:
        # t is the lower row; insert candidate upper rows j with p_j < p_t + δ
        j = start
        for t in range(start, end):
            threshold = sorted_scores[t] + margin
            while j < end and _precedes(sorted_scores[j], threshold, inclusive):
                if prefetch and j + ahead < end:
                    tree_kinds.tree_prefetch(kind, tree, sorted_rank[j + ahead], with_sums)
                value = sorted_values[j] if with_sums else 0.0
                key = tree_kinds.tree_key(kind, sorted_labels, j)
                weight = tree_kinds.insert_weight(sorted_weights, j)
                tree_kinds.tree_insert(kind, tree, height, False, sorted_rank[j], key, weight, value, with_sums)
                j += 1
            if prefetch and t + ahead < end:
                tree_kinds.tree_prefetch(kind, tree, sorted_rank[t + ahead], with_sums)
            key = tree_kinds.tree_key(kind, sorted_labels, t)
            n, s = tree_kinds.tree_query(kind, tree, height, False, sorted_rank[t], key, with_sums)
            counts[t] = n
            if with_sums:
                sums[t] = s
            if bounds.shape[0] > 0:
                bounds[t] = j - start
    else:
        # t is the upper row; insert candidate lower rows j with p_t < p_j + δ
        j = end - 1
        for t in range(end - 1, start - 1, -1):
            while j >= start and _precedes(sorted_scores[t], sorted_scores[j] + margin, inclusive):
                if prefetch and j - ahead >= start:
                    tree_kinds.tree_prefetch(kind, tree, sorted_rank[j - ahead], with_sums)
                value = sorted_values[j] if with_sums else 0.0
                key = tree_kinds.tree_key(kind, sorted_labels, j)
                weight = tree_kinds.insert_weight(sorted_weights, j)
                tree_kinds.tree_insert(kind, tree, height, True, sorted_rank[j], key, weight, value, with_sums)
                j -= 1
            if prefetch and t - ahead >= start:
                tree_kinds.tree_prefetch(kind, tree, sorted_rank[t - ahead], with_sums)
            key = tree_kinds.tree_key(kind, sorted_labels, t)
            n, s = tree_kinds.tree_query(kind, tree, height, True, sorted_rank[t], key, with_sums)
            counts[t] = n
            if with_sums:
                sums[t] = s
            if bounds.shape[0] > 0:
                bounds[t] = j + 1 - start


#: The most rows of a group whose partner sums :func:`partner_sums_from_bounds` computes (its
#: scratch holds a row of lanes per position: 4097 x 16 float64, 0.5 MB); longer groups sweep.
PARTNER_SUM_MAX_ROWS = 4096


def partner_sum_scratch(max_rows: int) -> np.ndarray:
    """Scratch for :func:`partner_sums_from_bounds` on groups of up to ``max_rows`` rows."""
    return np.zeros((min(max_rows, PARTNER_SUM_MAX_ROWS) + 1, trees.SELECTION_FANOUT))


@njit(cache=True, nogil=True)
def _running_lane_sums(sorted_rank, sorted_values, start, n, lanes, descending, running):
    # running[i] = the selection tree's node after inserting positions < i (ascending: entry u
    # sums the values of ranks above u) or >= i (descending: of ranks below u), each entry
    # adding +0.0 for the other ranks as the tree's masked add does: the same sums, the same bits.
    # lanes: 8 or 16, a compile-time constant (a vector loop of known length)
    literally(lanes)
    for u in range(lanes):
        running[n if descending else 0, u] = 0.0
    for k in range(n):
        i = n - 1 - k if descending else k
        r = sorted_rank[start + i]
        x = sorted_values[start + i]
        previous = i + 1 if descending else i
        row = i if descending else i + 1
        for u in range(lanes):  # no branch: one vector select and add per lane block
            running[row, u] = running[previous, u] + (x if (u > r if descending else u < r) else 0.0)


@njit(cache=True, nogil=True)
def partner_sums_from_bounds(sorted_rank, sorted_values, start, end, n_levels, ends, los, running, s_above, s_below):
    """The value sums of both sweeps of one group (:func:`sweep_group` with sums, ascending and
    descending) from their kept ``bounds`` (``ends``, ``los``, relative to ``start``), without the
    tree or its data-dependent loop: a running copy of the tree's one node (groups of at most
    ``SELECTION_FANOUT`` levels keep a single node) after each position, then each row's entry at
    its bound.  The same additions in the same order, so the same bits; TRON's Hessian products
    at one point all share the bounds its value pass found (lee-lin2014 eq. (17): the support
    set is fixed there).  1M rows in groups of 120, 5 levels: 0.012 s, against 0.018 s (tied
    scores) to 0.040 s (spread ones) for the two sweeps.  ``running``: :func:`partner_sum_scratch`;
    the group must fit it (at most :data:`PARTNER_SUM_MAX_ROWS` rows) and have 2 to 16 levels."""
    n = end - start
    for descending in (False, True):
        if n_levels <= 8:
            _running_lane_sums(sorted_rank, sorted_values, start, n, 8, descending, running)
        else:
            _running_lane_sums(sorted_rank, sorted_values, start, n, 16, descending, running)
        bounds, sums = (los, s_below) if descending else (ends, s_above)
        for t in range(n):
            sums[start + t] = running[bounds[t], sorted_rank[start + t]]


@njit(cache=True, nogil=True)
def _sweep_groups(kind, args, sorted_weights):
    # every group's sweep (groups of one label level have no pairs), then back to row order;
    # counts are int64, or float64 weight sums (sorted_weights not None)
    literally(kind)
    (sorted_scores, sorted_rank, sorted_labels, sorted_values, order, offsets, n_levels, margin, inclusive,
     descending, with_sums, tree, out_count, out_sum) = args
    m = sorted_scores.shape[0]
    counts = np.zeros(m, dtype=out_count.dtype)
    sums = np.zeros(m if with_sums else 0, dtype=np.float64)
    bounds = np.zeros(0, dtype=np.int64)
    for g in range(offsets.shape[0] - 1):
        if n_levels[g] >= 2:
            sweep_group(kind, sorted_scores, sorted_rank, sorted_labels, sorted_values, offsets[g], offsets[g + 1],
                        n_levels[g], margin, inclusive, descending, with_sums, tree, counts, sums, bounds,
                        sorted_weights)
    _scatter(order, counts, sums, with_sums, out_count, out_sum)


# Entry points from Python, one per tree kind: a literal argument given from Python would make
# numba type the call again on every call (~20 ms), so the kind is a constant of compiled code.
# ``sorted_weights`` None: the unweighted sweep; an array: the weighted one (its own compilation).
@njit(cache=True, nogil=True)
def _sweep_groups_selection(args, sorted_weights=None):
    _sweep_groups(SELECTION, args, sorted_weights)


@njit(cache=True, nogil=True)
def _sweep_groups_direct(args, sorted_weights=None):
    _sweep_groups(DIRECT, args, sorted_weights)


@njit(cache=True, nogil=True)
def _sweep_groups_red_black(args, sorted_weights=None):
    _sweep_groups(RBTREE, args, sorted_weights)


_SWEEPS = {"selection": _sweep_groups_selection, "direct": _sweep_groups_direct, "rbtree": _sweep_groups_red_black}


@njit(cache=True, nogil=True)
def _scatter(order, counts, sums, with_sums, out_count, out_sum):
    # results of sorted position t belong to row order[t]
    for t in range(order.shape[0]):
        row = order[t]
        out_count[row] = counts[t]
        if with_sums:
            out_sum[row] = sums[t]


def new_tree(method: str, groups: QueryGroups, with_sums: bool, weight_sums: bool = False):
    """An empty tree of ``method`` for the largest group of ``groups``; of weight sums (float64
    counts) when ``weight_sums``."""
    max_levels = int(groups.n_levels.max()) if groups.n_groups else 1
    max_rows = int(np.diff(groups.offsets).max()) if groups.n_groups else 1
    if method == "selection":
        return trees.selection_new(max_levels, max_rows, with_sums, weight_sums)
    if method == "direct":
        return (trees.direct_new_weights if weight_sums else trees.direct_new)(1, max_levels)
    return (rbtree.rbtree_new_weights if weight_sums else rbtree.rbtree_new)(max_rows, max_levels)


def check_counting_method(method: str) -> str:
    """Validate a counting-method name (raises ``ValueError`` listing the choices)."""
    return check_choice(method, COUNTING_METHODS, "counting method")


def check_pair_rule(rule: str) -> str:
    """Validate a pair rule (raises ``ValueError`` listing the choices)."""
    return check_choice(rule, PAIR_RULES, "pair rule")


def count_support_pairs(
    groups: QueryGroups,
    scores: np.ndarray,
    values: np.ndarray | None = None,
    *,
    order: np.ndarray | None = None,
    margin: float = 1.0,
    inclusive: bool = False,
    method: str = DEFAULT_COUNTING,
    pair_rule: str = DEFAULT_PAIR_RULE,
    weights: np.ndarray | None = None,
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
    order : int32 or int64 array (m,), optional
        :func:`sort_within_groups` of ``scores``, if already computed (TRON reuses it for
        every Hessian-vector product at the same ``w``).
    margin : float
        ``δ`` in ``p_upper < p_lower + δ``.
    inclusive : bool
        Use ``<=`` instead of ``<``.
    method : {"selection", "rbtree", "direct", "pairs", "prsvm+"}
        Counting structure; all give identical counts.
    pair_rule : {"all", "adjacent"}
        Which pairs of a group count: every pair of different labels, or only the pairs whose
        upper row is on the next label level above the lower row's (lee-lin2014 §5).  Adjacent
        pairs are counted level against next level (:mod:`.level_counting`) by every method
        but ``pairs``, which enumerates them: a pair of levels needs no tree.
    weights : float64 array (m,), optional
        Row weights ``a``: every partner ``j`` counts ``a_j`` (and adds ``a_j·values_j``), so the
        counts are float64 weight sums (the trees and the per-level sweeps hold weight sums where
        they hold counts); adjacent levels are those of the rows of positive weight
        (:func:`.level_counting.positive_weight_levels`).  ``None``: every partner counts 1
        (int64 counts).

    Returns
    -------
    PairCounts
    """
    check_counting_method(method)
    check_pair_rule(pair_rule)
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    m = scores.shape[0]
    if m != groups.n_rows:
        raise ValueError(f"{m} scores for {groups.n_rows} rows")
    if values is not None:
        values = np.ascontiguousarray(values, dtype=np.float64)
        if values.shape[0] != m:
            raise ValueError(f"{values.shape[0]} values for {m} rows")
    # all-zero values (the L1 loss, the metrics) have all-zero sums: skip the sum work
    with_sums = values is not None and bool(np.any(values))
    if weights is not None:
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        if weights.shape[0] != m:
            raise ValueError(f"{weights.shape[0]} weights for {m} rows")
        if pair_rule == "adjacent":  # adjacent among the levels of rows of positive weight
            groups = level_counting.positive_weight_levels(groups, weights)
    if method == "pairs":  # weighted when weights are given (weight sums), else integer counts
        return PairCounts(*_all_pairs(scores, values if values is not None else np.zeros(m), groups.labels,
                                      groups.label_rank, groups.offsets, float(margin), bool(inclusive),
                                      pair_rule == "adjacent", weights))
    if order is None:
        order = sort_within_groups(scores, groups.offsets)
    else:
        order = np.ascontiguousarray(order, dtype=order.dtype if order.dtype in (np.int32, np.int64) else np.int64)
    threaded = m >= _THREADED_MIN_ROWS
    by_levels = method == "prsvm+" or pair_rule == "adjacent"
    with_labels = method == "rbtree" and not by_levels
    sorted_scores = np.empty(m)
    sorted_rank = np.empty(m, dtype=groups.label_rank.dtype)
    sorted_values = np.empty(m if with_sums else 0)
    sorted_labels = np.empty(m if with_labels else 0)
    empty = np.empty(0)
    gather_args = (scores, groups.label_rank, values if with_sums else empty, groups.labels, with_sums,
                   with_labels, sorted_scores, sorted_rank, sorted_values, sorted_labels)
    sorted_weights = None
    if weights is not None:
        sorted_weights = np.empty(m)
        gather_args += (weights, sorted_weights)
    if threaded:
        half = m // 2
        first = _POOL.submit(_gather, order, 0, half, *gather_args)
        _gather(order, half, m, *gather_args)
        first.result()
    else:
        _gather(order, 0, m, *gather_args)

    count_dtype = np.int64 if weights is None else np.float64
    n_above, n_below = np.zeros(m, dtype=count_dtype), np.zeros(m, dtype=count_dtype)
    s_above, s_below = np.zeros(m), np.zeros(m)
    common = (order, groups.offsets, groups.n_levels, float(margin), bool(inclusive))

    def run(descending, out_count, out_sum):
        if by_levels:
            rule = level_counting.ADJACENT_PAIRS if pair_rule == "adjacent" else level_counting.ALL_PAIRS
            level_counting.sweep_groups_by_levels(sorted_scores, sorted_rank, sorted_values, *common, rule, descending,
                                                  with_sums, out_count, out_sum, sorted_weights)
            return
        args = (sorted_scores, sorted_rank, sorted_labels, sorted_values, *common, descending, with_sums,
                new_tree(method, groups, with_sums, weights is not None), out_count, out_sum)
        if sorted_weights is None:
            _SWEEPS[method](args)
        else:
            _SWEEPS[method](args, sorted_weights)
    if threaded:
        # the two sweeps are independent: run them on two cores (the kernels release the GIL)
        up = _POOL.submit(run, False, n_above, s_above)
        run(True, n_below, s_below)
        up.result()
    else:
        run(False, n_above, s_above)
        run(True, n_below, s_below)
    return PairCounts(n_above, n_below, s_above, s_below)
