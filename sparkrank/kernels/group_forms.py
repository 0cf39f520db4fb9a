"""Compiled per-group forms of score-space kernels, for engines that run a pass group by group.

A kernel's ``__call__`` takes a tile of whole groups (~8 MB of rows), so an engine computes the
tile's ``X·v``, then the kernel, then ``Xᵀc``: ``X`` is read from memory twice per pass (on the
2-core development host the last-level cache is no faster than memory for that second read).
A kernel whose coefficients for one group come from that group's scores and its kept state
alone can also offer a *group form*: a numba function from one group's scores to its
coefficients, which an engine's compiled loop (:mod:`sparkrank.engines.group_passes`) calls
between the group's ``X·v`` and ``Xᵀc``, while the group's rows are still in the first- or
second-level cache.  Score space only: a group form never sees ``X``.

A group form must give the same coefficients as its kernel, bit for bit: it runs the same
sweeps (:func:`sparkrank.kernels.counting.sweep_group`) and the same arithmetic, in the same
order (``tests/test_group_passes.py`` checks it against the kernels on random data).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .counting import sweep_group


def hessian_work(max_rows: int, rank_dtype) -> tuple:
    """Scratch arrays for :func:`squared_hinge_hessian_group` on groups of up to ``max_rows`` rows."""
    return (np.empty(max_rows), np.empty(max_rows, dtype=rank_dtype), np.empty(max_rows),
            np.zeros(max_rows, dtype=np.int64), np.zeros(max_rows, dtype=np.int64),
            np.zeros(max_rows), np.zeros(max_rows))


@njit(cache=True, nogil=True)
def squared_hinge_hessian_group(p, order, label_rank, u, start, end, n_levels, margin, tree, work, coef):
    """:class:`~sparkrank.kernels.losses.SquaredHingeHessianKernel` on one group (rows
    ``start:end`` of a tile): ``coef[r - start] = 2((l⁺+l⁻)u_r - (γ⁺+γ⁻)_r)`` for each row ``r``,
    with the support set at the kept scores ``p`` (sorted within the group by ``order``, tile
    row indices) and ``γ±`` sums of ``u`` over each row's support partners (lee-lin2014 eq. (17)).

    ``tree``: a selection tree with sums (``trees.selection_new``) for the group's levels and
    rows; ``work``: :func:`hessian_work`.
    """
    sorted_p, sorted_rank, sorted_u, n_above, n_below, s_above, s_below = work
    n = end - start
    for t in range(n):
        n_above[t] = 0
        n_below[t] = 0
        s_above[t] = 0.0
        s_below[t] = 0.0
    if n_levels >= 2:  # a single label level: no pairs, every count and sum stays zero
        for t in range(n):  # the group's rows in score order, as count_support_pairs gathers them
            row = order[start + t]
            sorted_p[t] = p[row]
            sorted_rank[t] = label_rank[row]
            sorted_u[t] = u[row]
        sweep_group(sorted_p, sorted_rank, sorted_u, 0, n, n_levels, margin, False, False, True, tree,
                    n_above, s_above)
        sweep_group(sorted_p, sorted_rank, sorted_u, 0, n, n_levels, margin, False, True, True, tree,
                    n_below, s_below)
    for t in range(n):
        row = order[start + t]
        # SquaredHingeHessianKernel's expression, operation for operation
        coef[row - start] = 2.0 * (np.float64(n_above[t] + n_below[t]) * u[row] - (s_above[t] + s_below[t]))
