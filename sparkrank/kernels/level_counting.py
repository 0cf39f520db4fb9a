"""Support-pair counting by relevance level: PRSVM+ and the adjacent-level pair rule.

PRSVM+ (Chapelle & Keerthi 2010; lee-lin2014 §3.1) splits the pairs of a group by their lower
level ``r``:

    Σ_{(i,j) ∈ P} loss(i, j) = Σ_r Σ_{y_i > r, y_j = r} loss(i, j),

and counts each inner sum with the *two-level* sweep (rows of level ``r`` against the rows
above it: a running count and a running sum, no tree).  Level ``r``'s sweep reads only the
rows at or above ``r``, so a group pass costs ``O(Σ_r |{y ≥ r}|)`` = ``O(levels · rows)``
(lee-lin2014 eqs. (31)-(32)): as fast as the trees for a few levels, much slower when the
labels are real-valued (one level per row).

The same two-level sweep counts the *adjacent pairs* of lee-lin2014 §5 (``pair_rule
"adjacent"``): only the pairs whose upper row is on the next level above the lower row's
(the next distinct label of the group), each level against the next one, ``O(rows)`` per
group pass.

Both fill :class:`~sparkrank.kernels.counting.PairCounts` at score-sorted positions exactly
as :func:`~sparkrank.kernels.counting.sweep_group` does, with the one margin comparison
``p_upper < p_lower + δ`` (``<=`` when inclusive): the counts equal every tree's; the sums are
running sums in score order (the trees add them in their nodes' order), equal to rounding.

Weighted rows (:mod:`sparkrank.data.weights`): the running count adds each partner's weight
``a_j`` instead of 1 (and the caller passes ``a_j·v_j`` as the values), so the counts are the
float64 weight sums the trees hold; the same running sums in score order.  A row of weight 0
is absent from the repeated data, so the adjacent rule's levels are those of the rows of
positive weight (:func:`positive_weight_levels`): levels 0 and 2 are adjacent when every row of
level 1 weighs 0, as they are once those rows are dropped.
"""

from __future__ import annotations

import numpy as np
from dataclasses import replace

from numba import njit

from ..data.groups import QueryGroups
from .tree_kinds import insert_weight

#: Pair rules (:data:`sparkrank.choices.PAIR_RULES`) as the compiled sweeps take them.
ALL_PAIRS, ADJACENT_PAIRS = 0, 1


@njit(cache=True, nogil=True, inline="always")
def _precedes(a, b, inclusive):
    return a < b or (inclusive and a == b)


@njit(cache=True, nogil=True)
def _bucket_by_level(sorted_rank, start, end, n_levels, level_start, by_level):
    """Positions ``start:end`` (score order) grouped by label rank, score order kept within a
    level (a counting sort): level ``r`` is ``by_level[level_start[r]:level_start[r + 1]]``."""
    for r in range(n_levels + 1):
        level_start[r] = 0
    for t in range(start, end):
        level_start[sorted_rank[t] + 1] += 1
    for r in range(n_levels):
        level_start[r + 1] += level_start[r]
    for t in range(start, end):  # level_start[r] runs as a write cursor, then is shifted back
        r = sorted_rank[t]
        by_level[level_start[r]] = t
        level_start[r] += 1
    for r in range(n_levels, 0, -1):
        level_start[r] = level_start[r - 1]
    level_start[0] = 0


@njit(cache=True, nogil=True)
def _two_level_sweep(sorted_scores, sorted_values, lows, ups, margin, inclusive, descending, with_sums, counts,
                     sums, sorted_weights=None):
    """The two-level sweep: ``lows`` (positions of one level) against ``ups`` (positions above
    it), each in score order.  Ascending: every lower row ``t`` gets the count (and value sum)
    of the upper rows ``j`` with ``p_j < p_t + δ`` -- the pointer only moves forward because the
    threshold grows with ``p_t``.  Descending: every upper row gets, *added* to what it has,
    the count and sum of the lower rows ``j`` with ``p_t < p_j + δ``.  ``sorted_weights``
    (weighted rows): a partner counts its weight (``c`` is then a float64 weight sum)."""
    c = np.int64(0)
    s = 0.0
    if not descending:
        j = 0
        for i in range(lows.shape[0]):
            t = lows[i]
            threshold = sorted_scores[t] + margin
            while j < ups.shape[0] and _precedes(sorted_scores[ups[j]], threshold, inclusive):
                c += insert_weight(sorted_weights, ups[j])
                if with_sums:
                    s += sorted_values[ups[j]]
                j += 1
            counts[t] = c
            if with_sums:
                sums[t] = s
    else:
        j = lows.shape[0] - 1
        for i in range(ups.shape[0] - 1, -1, -1):
            t = ups[i]
            while j >= 0 and _precedes(sorted_scores[t], sorted_scores[lows[j]] + margin, inclusive):
                c += insert_weight(sorted_weights, lows[j])
                if with_sums:
                    s += sorted_values[lows[j]]
                j -= 1
            counts[t] += c
            if with_sums:
                sums[t] += s


@njit(cache=True, nogil=True)
def sweep_group_by_levels(sorted_scores, sorted_rank, sorted_values, start, end, n_levels, margin, inclusive,
                          rule, descending, with_sums, level_start, by_level, live, counts, sums,
                          sorted_weights=None):
    """One group's counts by level (positions ``start:end`` of the score-sorted arrays, ``n_levels``
    at least 2): ``n_above``/``s_above`` (``descending`` false) or ``n_below``/``s_below`` (true)
    into ``counts``/``sums`` at the same positions, which must hold zeros.  ``rule``:
    :data:`ALL_PAIRS` (PRSVM+, every level against all the levels above it) or
    :data:`ADJACENT_PAIRS` (every level against the next one).  Scratch: ``level_start``
    (``n_levels + 1``), ``by_level`` and ``live`` (the group's rows).  ``sorted_weights``: the
    rows' weights in score order (``None``: unweighted, int64 counts)."""
    _bucket_by_level(sorted_rank, start, end, n_levels, level_start, by_level)
    n_live = end - start
    for i in range(n_live):  # the rows at or above the current level, in score order
        live[i] = start + i
    for r in range(n_levels - 1):
        lows = by_level[level_start[r]:level_start[r + 1]]
        if rule == ADJACENT_PAIRS:
            ups = by_level[level_start[r + 1]:level_start[r + 2]]
        else:  # PRSVM+: drop level r from the live rows, the rest are above it
            kept = 0
            for i in range(n_live):
                if sorted_rank[live[i]] != r:
                    live[kept] = live[i]
                    kept += 1
            n_live = kept
            ups = live[:n_live]
        _two_level_sweep(sorted_scores, sorted_values, lows, ups, margin, inclusive, descending, with_sums, counts,
                         sums, sorted_weights)


@njit(cache=True, nogil=True)
def sweep_groups_by_levels(sorted_scores, sorted_rank, sorted_values, order, offsets, n_levels, margin, inclusive,
                           rule, descending, with_sums, out_count, out_sum, sorted_weights=None):
    """:func:`sweep_group_by_levels` over every group (a group of one level has no pairs), then
    the results back to row order (``order[t]`` is the row at sorted position ``t``); counts of
    ``out_count``'s type (float64 weight sums with ``sorted_weights``)."""
    m = sorted_scores.shape[0]
    counts = np.zeros(m, dtype=out_count.dtype)
    sums = np.zeros(m if with_sums else 0)
    largest_rows, largest_levels = 0, 0
    for g in range(offsets.shape[0] - 1):
        largest_rows = max(largest_rows, offsets[g + 1] - offsets[g])
        largest_levels = max(largest_levels, n_levels[g])
    level_start = np.zeros(largest_levels + 1, dtype=np.int64)
    by_level = np.zeros(largest_rows, dtype=np.int64)
    live = np.zeros(largest_rows, dtype=np.int64)
    for g in range(offsets.shape[0] - 1):
        if n_levels[g] >= 2:
            sweep_group_by_levels(sorted_scores, sorted_rank, sorted_values, offsets[g], offsets[g + 1], n_levels[g],
                                  margin, inclusive, rule, descending, with_sums, level_start, by_level, live, counts,
                                  sums, sorted_weights)
    for t in range(m):
        row = order[t]
        out_count[row] = counts[t]
        if with_sums:
            out_sum[row] = sums[t]


def positive_weight_levels(groups: QueryGroups, weights: np.ndarray) -> QueryGroups:
    """``groups`` with each group's label levels counted over its rows of positive weight only
    (the levels of the data with integer weights repeated, where a row of weight 0 is absent):
    what the adjacent pair rule pairs.  A row of weight 0 takes the rank of the nearest such
    level at or below its label (0 when none is); it adds nothing either way, as a partner
    (weight 0) or as the row (its terms times 0).  A group with fewer than two such levels has
    one level, so no pairs."""
    rank = np.empty_like(groups.label_rank)
    levels = np.empty_like(groups.n_levels)
    _positive_levels(np.ascontiguousarray(weights, dtype=np.float64), groups.label_rank, groups.offsets,
                     groups.n_levels, rank, levels)
    return replace(groups, label_rank=rank, n_levels=levels)


@njit(cache=True)
def _positive_levels(weights, label_rank, offsets, n_levels, out_rank, out_levels):
    largest = 1
    for g in range(n_levels.shape[0]):
        largest = max(largest, n_levels[g])
    present = np.zeros(largest, dtype=np.bool_)
    new_rank = np.zeros(largest, dtype=np.int64)
    for g in range(offsets.shape[0] - 1):
        k = n_levels[g]
        present[:k] = False
        for i in range(offsets[g], offsets[g + 1]):
            if weights[i] > 0:
                present[label_rank[i]] = True
        top = -1
        for r in range(k):
            if present[r]:
                top += 1
            new_rank[r] = max(top, 0)
        out_levels[g] = max(top + 1, 1)
        for i in range(offsets[g], offsets[g + 1]):
            out_rank[i] = new_rank[label_rank[i]]
