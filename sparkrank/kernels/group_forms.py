"""Compiled per-group forms of score-space kernels, for engines that run a pass group by group.

A kernel's ``__call__`` takes a tile of whole groups (~8 MB of rows), so an engine computes the
tile's ``X·v``, then the kernel, then ``Xᵀc``: ``X`` is read from memory twice per pass (on the
2-core development host the last-level cache is no faster than memory for that second read).
A kernel whose coefficients for one group come from that group's scores and its kept state
alone can also offer a *group form*: a numba function from one group's scores to its
coefficients (and, for a value pass, its sort order and running sums of its statistics), which an engine's compiled loop (:mod:`sparkrank.engines.group_passes`) calls
between the group's ``X·v`` and ``Xᵀc``, while the group's rows are still in the first- or
second-level cache.  Score space only: a group form never sees ``X``.

A group form must give the same results as its kernel, bit for bit: it runs the same sort
(:func:`sparkrank.kernels.counting.sort_group`) and sweeps
(:func:`sparkrank.kernels.counting.sweep_group`) and the same arithmetic, in the same order (``tests/test_group_passes.py`` checks it against the kernels on random data).

Weighted rows (:mod:`sparkrank.data.weights`) take the same forms with a *weighting*
(:func:`weighting_of`; ``None`` when unweighted, and the compiled forms are then the unweighted
ones): the sweeps insert each partner with its weight ``a_j`` and value ``a_j·v_j`` (as
:func:`~sparkrank.kernels.counting.count_support_pairs` gathers them), so ``l±`` are weight sums,
and each row's terms are multiplied by its factor ``b_q·a_k``
(:meth:`~sparkrank.data.groups.QueryGroups.row_factors`), in the weighted kernels' expressions.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from ..numerics.exact_sum import two_sum
from . import trees
from .tree_kinds import SELECTION
from .counting import partner_sum_scratch, partner_sums_from_bounds, sort_group, sort_scratch, sweep_group


def weighting_of(groups, kept_sums: np.ndarray | None = None) -> tuple | None:
    """What the group forms take for the weighted rows of ``groups`` (one tile's): the row
    weights ``a``, the row factors ``b_q·a_k``, a scratch for the weights in score order, and
    ``kept_sums`` (each sorted position's weight sum ``l⁺+l⁻`` at the value pass's point: a value
    pass fills it, a Hessian product reads it; a sweep plan holds it only as an integer);
    ``None`` for unweighted rows."""
    if not groups.weighted:
        return None
    return (groups.row_weights, groups.row_factors(), np.empty(groups.n_rows),
            np.zeros(groups.n_rows) if kept_sums is None else kept_sums)


def partner_value(weighting, values, row):
    """The value a sweep inserts for ``row``: ``values[row]``, or ``a_row·values[row]`` when
    weighted (as :func:`~sparkrank.kernels.counting.count_support_pairs` gathers it)."""
    raise TypeError("group_forms.partner_value runs in numba-compiled code only (its @overload)")


@overload(partner_value, inline="always")
def _partner_value(weighting, values, row):
    if isinstance(weighting, (types.NoneType, types.Omitted)):
        return lambda weighting, values, row: values[row]
    return lambda weighting, values, row: weighting[0][row] * values[row]


def sweep_weights(weighting):
    """The weights in score order a sweep inserts with (``None``: every row counts 1)."""
    raise TypeError("group_forms.sweep_weights runs in numba-compiled code only (its @overload)")


@overload(sweep_weights, inline="always")
def _sweep_weights(weighting):
    if isinstance(weighting, (types.NoneType, types.Omitted)):
        return lambda weighting: None
    return lambda weighting: weighting[2]


def hessian_work(max_rows: int, rank_dtype, partner_sums: bool = True, weighted: bool = False) -> tuple:
    """Scratch arrays for :func:`squared_hinge_hessian_group` on groups of up to ``max_rows`` rows:
    the group's scores, label ranks and values in score order, :func:`_count_group`'s counts
    and sums at those positions, the two sweeps' bounds, and
    :func:`~sparkrank.kernels.counting.partner_sums_from_bounds`'s scratch (for no row unless
    ``partner_sums``: the value pass sweeps); the counts are weight sums (float64) when ``weighted``."""
    count = np.float64 if weighted else np.int64
    return (np.empty(max_rows), np.empty(max_rows, dtype=rank_dtype), np.empty(max_rows),
            np.zeros(max_rows, dtype=count), np.zeros(max_rows, dtype=count),
            np.zeros(max_rows), np.zeros(max_rows), np.zeros(max_rows, dtype=np.int64),
            np.zeros(max_rows, dtype=np.int64), partner_sum_scratch(max_rows if partner_sums else 0))


@njit(cache=True, nogil=True)
def _count_group(p, order, label_rank, values, start, end, n_levels, margin, tree, work, weighting):
    """``count_support_pairs`` on one group (rows ``start:end`` of a tile, ``order`` its rows by
    score ``p``): ``n_above``, ``n_below``, the sums of ``values`` over the same partners and the
    sweeps' bounds, left in ``work`` at the rows' sorted positions; zeros for a group of one
    label level.  ``weighting`` (:func:`weighting_of`): weight sums and sums of ``a_j·values_j``."""
    sorted_p, sorted_rank, sorted_values, n_above, n_below, s_above, s_below, ends, los = work[:9]
    n = end - start
    for t in range(n):
        n_above[t] = 0
        n_below[t] = 0
        s_above[t] = 0.0
        s_below[t] = 0.0
        ends[t] = 0
        los[t] = n
    if n_levels < 2:
        return  # a single label level: no pairs
    for t in range(n):  # the group's rows in score order, as count_support_pairs gathers them
        row = order[start + t]
        sorted_p[t] = p[row]
        sorted_rank[t] = label_rank[row]
        sorted_values[t] = partner_value(weighting, values, row)
        if weighting is not None:
            weighting[2][t] = weighting[0][row]
    weights = sweep_weights(weighting)
    sweep_group(SELECTION, sorted_p, sorted_rank, sorted_p[:0], sorted_values, 0, n, n_levels, margin, False, False,
                True, tree, n_above, s_above, ends, weights)
    sweep_group(SELECTION, sorted_p, sorted_rank, sorted_p[:0], sorted_values, 0, n, n_levels, margin, False, True,
                True, tree, n_below, s_below, los, weights)


@njit(cache=True, nogil=True)
def _partner_sums_from_plan(order, plan, label_rank, u, start, end, n_levels, work, weighting) -> bool:
    """When ``plan`` (the value pass's sweep plan of these rows, :func:`squared_hinge_group`)
    is there and the group suits :func:`~sparkrank.kernels.counting.partner_sums_from_bounds`:
    the sums of ``u`` over each row's support partners into ``work`` (as :func:`_count_group`
    leaves them) without sweeping, and ``True``."""
    n = end - start
    running = work[9]
    if plan.shape[1] == 0 or n_levels > trees.SELECTION_FANOUT or n + 1 > running.shape[0]:
        return False
    sorted_rank, sorted_values, s_above, s_below = work[1], work[2], work[5], work[6]
    if n_levels < 2:
        for t in range(n):
            s_above[t] = 0.0
            s_below[t] = 0.0
        return True
    for t in range(n):
        row = order[start + t]
        sorted_rank[t] = label_rank[row]
        sorted_values[t] = partner_value(weighting, u, row)
    partner_sums_from_bounds(sorted_rank, sorted_values, 0, n, n_levels, plan[0, start:end], plan[1, start:end],
                             running, s_above, s_below)
    return True


@njit(cache=True, nogil=True)
def squared_hinge_hessian_group(p, order, plan, label_rank, u, start, end, n_levels, margin, tree, work, coef,
                                weighting=None):
    """:class:`~sparkrank.kernels.losses.SquaredHingeHessianKernel` on one group (rows
    ``start:end`` of a tile): ``coef[r - start] = 2((l⁺+l⁻)u_r - (γ⁺+γ⁻)_r)`` for each row ``r``,
    with the support set at the kept scores ``p`` (sorted within the group by ``order``, tile
    row indices) and ``γ±`` sums of ``u`` over each row's support partners (lee-lin2014 eq. (17));
    weighted (``weighting``), that times the row's factor ``b_q·a_r``, with weight sums ``l±``
    (kept by the value pass in ``weighting[3]``) and ``γ± = Σ a_j u_j``.

    ``plan``: the value pass's sweep plan (:func:`squared_hinge_group`; ``(3, 0)`` when the state
    has none): with it the counts are read and the sums taken from the sweeps' bounds
    (:func:`_partner_sums_from_plan`), without it both sweeps run; the same bits.
    ``tree``: a selection tree with sums (``trees.selection_new``) for the group's levels and
    rows (of weight sums when weighted); ``work``: :func:`hessian_work`.
    """
    n_above, n_below, s_above, s_below = work[3:7]
    from_plan = _partner_sums_from_plan(order, plan, label_rank, u, start, end, n_levels, work, weighting)
    if not from_plan:
        _count_group(p, order, label_rank, u, start, end, n_levels, margin, tree, work, weighting)
    for t in range(end - start):
        row = order[start + t]
        # SquaredHingeHessianKernel's expressions, operation for operation (l⁺+l⁻ as kept)
        if weighting is None:
            l_sum = np.float64(plan[2, start + t]) if from_plan else np.float64(n_above[t] + n_below[t])
            coef[row - start] = 2.0 * (l_sum * u[row] - (s_above[t] + s_below[t]))
        else:
            l_sum = weighting[3][start + t] if from_plan else n_above[t] + n_below[t]
            coef[row - start] = 2.0 * (l_sum * u[row] - (s_above[t] + s_below[t])) * weighting[1][row]


def value_work(max_rows: int, rank_dtype, weighted: bool = False) -> tuple:
    """Scratch arrays for :func:`squared_hinge_group`: :func:`hessian_work`'s, the counts and
    sums again in row order, and the sort's scratch (:func:`~sparkrank.kernels.counting.sort_scratch`)."""
    count = np.float64 if weighted else np.int64
    in_row_order = (np.zeros(max_rows, dtype=count), np.zeros(max_rows, dtype=count), np.zeros(max_rows),
                    np.zeros(max_rows))
    return hessian_work(max_rows, rank_dtype, partner_sums=False, weighted=weighted) + in_row_order + \
        sort_scratch(max_rows)


@njit(cache=True, nogil=True)
def squared_hinge_group(scores, order, label_rank, start, end, n_levels, margin, tree, work, coef, diagonal, sums,
                        plan, weighting=None):
    """:class:`~sparkrank.kernels.losses.SquaredHingeKernel` (and its diagonal variant) on one
    group, rows ``start:end`` of a tile: sorts the group (``order[start:end]``, the tile's kept
    order), and for each row ``r`` in row order sets ``coef[r - start] = 2((l⁺+l⁻)p - (α⁺+α⁻) +
    (l⁺-l⁻))`` and ``diagonal[r - start] = 2(l⁺+l⁻)`` (lee-lin2014 eqs. (18)-(19)), and adds its
    loss term ``((l⁺+l⁻)p - (α⁺+α⁻) + 2(l⁺-l⁻))p`` and its ``diagonal`` to the tile's running
    double-double sums ``sums[0:2]`` / ``sums[2:4]`` and ``l⁺`` / ``l⁻`` to ``sums[4]`` / ``sums[5]``
    (exact integers): the kernel's ``sum_dd`` over the tile's rows in row order, operation for
    operation.  Weighted (``weighting``, :func:`weighting_of`): the weighted kernel's expressions
    (:func:`_add_weighted_row`), ``sums`` then eight entries.

    ``plan[:, start:end]`` gets the group's *sweep plan* at the sorted positions: the two sweeps'
    bounds and ``l⁺+l⁻`` (weighted: the weight sums go to ``weighting[3]``), which fix the support
    set at these scores; TRON's Hessian products at this point read it instead of sweeping
    (:func:`squared_hinge_hessian_group`)."""
    sort_group(scores, start, end, order, work[14], work[15])
    _count_group(scores, order, label_rank, scores, start, end, n_levels, margin, tree, work, weighting)
    n_above_sorted, n_below_sorted, s_above_sorted, s_below_sorted, ends, los = work[3:9]
    n_above, n_below, s_above, s_below = work[10:14]
    for t in range(end - start):  # sorted positions back to rows, and the plan
        r = order[start + t] - start
        n_above[r] = n_above_sorted[t]
        n_below[r] = n_below_sorted[t]
        s_above[r] = s_above_sorted[t]
        s_below[r] = s_below_sorted[t]
        plan[0, start + t] = ends[t]
        plan[1, start + t] = los[t]
        if weighting is None:
            plan[2, start + t] = n_above_sorted[t] + n_below_sorted[t]
        else:
            weighting[3][start + t] = n_above_sorted[t] + n_below_sorted[t]
    for r in range(end - start):  # SquaredHingeKernel's expressions, operation for operation, in row order
        p = scores[start + r]
        if weighting is not None:
            _add_weighted_row(p, n_above[r], n_below[r], s_above[r] + s_below[r], weighting[1][start + r], r, coef,
                              diagonal, sums)
            continue
        l_sum = np.float64(n_above[r] + n_below[r])
        l_diff = np.float64(n_above[r] - n_below[r])
        alpha = s_above[r] + s_below[r]
        sums[0], sums[1] = two_sum(sums[0], sums[1], (l_sum * p - alpha + 2.0 * l_diff) * p)
        coef[r] = 2.0 * (l_sum * p - alpha + l_diff)
        diagonal[r] = 2.0 * l_sum
        sums[2], sums[3] = two_sum(sums[2], sums[3], diagonal[r])
        sums[4] += n_above[r]
        sums[5] += n_below[r]


@njit(cache=True, nogil=True, inline="always")
def _add_weighted_row(p, above, below, alpha, factor, r, coef, diagonal, sums):
    """One weighted row of :func:`squared_hinge_group`, as ``SquaredHingeKernel._weighted_from_counts``
    computes it (weight sums ``above``/``below``, ``factor`` = ``b_q·a_r``): its ``coef`` and
    ``diagonal``, and the double-double sums of the loss terms, the diagonal, ``factor·l⁺`` and
    ``factor·l⁻`` in ``sums[0:2]``, ``[2:4]``, ``[4:6]`` and ``[6:8]``."""
    l_sum = above + below
    l_diff = above - below
    sums[0], sums[1] = two_sum(sums[0], sums[1], factor * ((l_sum * p - alpha + 2.0 * l_diff) * p))
    coef[r] = 2.0 * factor * (l_sum * p - alpha + l_diff)
    diagonal[r] = 2.0 * factor * l_sum
    sums[2], sums[3] = two_sum(sums[2], sums[3], diagonal[r])
    sums[4], sums[5] = two_sum(sums[4], sums[5], factor * above)
    sums[6], sums[7] = two_sum(sums[6], sums[7], factor * below)
