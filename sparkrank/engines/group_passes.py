"""A pass over a tile run group by group in compiled code, for kernels with a group form.

:func:`sparkrank.engines.tiles.fused_pass` computes a tile's ``X·v``, calls the kernel on the
tile and then sums its ``Xᵀc``.  For a kernel that offers a compiled form per group
(:mod:`sparkrank.kernels.group_forms`; it names it in :attr:`ScoreKernel.group_form`) the loop
here does all three group after group instead: the group's scores (``simd.row_dot_lanes``),
its coefficients (the group form), then its rows' terms of ``Xᵀc`` (``simd.add_rows_dd``)
while those ~65 KB of rows are still in the first- or second-level cache.  ``X`` is then read
from memory once per pass instead of twice: a TRON Hessian pass over 1M x 136 float32 rows
takes 0.10 s instead of 0.146 s on one core (reading the rows once: 0.035 s).

The bits are those of the tile path: each row's score is its own sum, the group form repeats
its kernel's arithmetic, and the rows' terms are added to the tile's double-double column sums
in row order, four rows per step, as :func:`sparkrank.numerics.exact_sum.rmatvec_dd_products`
adds them (a partial last step of a group repeats its last row with ``c = 0``, an exact
``+0.0``).  Dense rows only: CSR tiles take the tile path (the same bits, more time).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..conventions import MARGIN
from ..kernels import trees
from ..kernels.trees import prefetch
from ..kernels.base import KernelResult
from ..kernels.group_forms import hessian_work, squared_hinge_hessian_group
from ..numerics.exact_sum import DoubleDouble, add_dense_step_dd, dd_add
from ..numerics.simd import DD_ROWS, row_dot_lanes

#: Group forms the loop below can run, by the name a kernel gives in ``group_form``.
SQUARED_HINGE_HESSIAN = "squared_hinge_hessian"


#: Cache line size in bytes, for the software prefetch of the next group's rows.
CACHE_LINE = 64
#: The share of the next group's cache lines prefetched while the group's scores are computed;
#: the rest go while its ``Xᵀc`` terms are added (1M x 136 float32 rows in one thread: no
#: prefetch 0.101 s, all during ``Xᵀc`` 0.088 s, 0.3-0.5 of them during the scores 0.082 s).
PREFETCH_DURING_SCORES = 0.4


@njit(cache=True, nogil=True, inline="always")
def _prefetch_lines(flat, q, stop, count, per_line):
    """Prefetch up to ``count`` cache lines of ``flat`` from element ``q`` (not past ``stop``);
    returns the next element to prefetch."""
    for _ in range(count):
        if q >= stop:
            break
        prefetch(flat, q)
        q += per_line
    return q


@njit(cache=True, nogil=True)
def _squared_hinge_hessian_tile(values, v, offsets, label_rank, n_levels, p, order, margin, tree, work,
                                scores, hi, lo):
    # Per group: scores (X·v), the group form's coefficients, then the rows' Xᵀc terms in the
    # steps of exact_sum._dense_tdot_dd (four rows each, a partial last step repeating the last
    # row with c = 0, a step of four zero coefficients skipped: +0.0 terms change no bit).
    # Meanwhile the next group's rows are prefetched, spread over this group's score and Xᵀc
    # loops, so its X·v finds them in cache: the memory traffic overlaps this group's arithmetic.
    if v.shape[0] < values.shape[1]:
        raise ValueError("the vector is shorter than a row")
    n = values.shape[1]
    flat = values.reshape(-1)
    per_line = max(CACHE_LINE // values.itemsize, 1)
    max_rows = work[0].shape[0]
    coef = np.zeros(max_rows)
    rows = np.zeros(DD_ROWS, dtype=np.int64)
    step = np.zeros(DD_ROWS)
    n_groups = offsets.shape[0] - 1
    for g in range(n_groups):
        start, end = offsets[g], offsets[g + 1]
        size = end - start
        q, stop = (offsets[g + 1] * n, offsets[g + 2] * n) if g + 1 < n_groups else (0, 0)
        lines = (stop - q + per_line - 1) // per_line
        during_scores = np.int64(lines * PREFETCH_DURING_SCORES)
        per_row = (during_scores + size - 1) // max(size, 1)
        scores_stop = min(q + during_scores * per_line, stop)
        for r in range(start, end):
            q = _prefetch_lines(flat, q, scores_stop, per_row, per_line)
            scores[r] = row_dot_lanes(values, r, v)
        squared_hinge_hessian_group(p, order, label_rank, scores, start, end, n_levels[g], margin, tree, work, coef)
        steps = (size + DD_ROWS - 1) // DD_ROWS
        per_step = ((stop - q + per_line - 1) // per_line + steps - 1) // max(steps, 1)
        for i in range(start, end, DD_ROWS):
            q = _prefetch_lines(flat, q, stop, per_step, per_line)
            nonzero = False
            for r in range(DD_ROWS):
                rows[r] = min(i + r, end - 1)
                step[r] = coef[i + r - start] if i + r < end else 0.0
                nonzero = nonzero or step[r] != 0.0
            if nonzero:
                add_dense_step_dd(values, rows, step, hi, lo, 1)


def runs_group_form(kernel, X, states, powers: tuple[int, ...], fresh: bool) -> bool:
    """Whether :func:`group_pass` can run ``kernel``'s pass over a tile of ``X``: a group form
    this module knows (of a kernel without statistics), dense rows, the scores computed in the
    pass, a kept state, and ``Xᵀc`` alone (power 1)."""
    return (getattr(kernel, "group_form", None) == SQUARED_HINGE_HESSIAN and not kernel.statistics
            and isinstance(X, np.ndarray)
            and X.ndim == 2 and X.dtype in (np.float32, np.float64) and fresh and states is not None
            and powers == (1,))


def group_pass(X: np.ndarray, tiles, v: np.ndarray, kernel, states, scores: np.ndarray
               ) -> tuple[list[KernelResult], DoubleDouble | None]:
    """``kernel``'s pass over ``tiles`` group by group (see the module docstring): ``X·v`` into
    ``scores`` (rows as in ``X``), the kernels' results, one per tile (empty: such a kernel keeps
    no state and has no statistics, and its coefficients were summed), and ``Xᵀc`` as the
    double-double sum of the tiles' sums, added tile after tile as the tile path adds them
    (``None`` without tiles)."""
    results: list[KernelResult] = []
    total: DoubleDouble | None = None
    if not tiles:
        return results, total
    sizes = [np.diff(t.groups.offsets) for t in tiles if t.groups.n_groups]
    max_rows = max((int(s.max()) for s in sizes), default=1)
    max_levels = max((int(t.groups.n_levels.max()) for t in tiles if t.groups.n_groups), default=1)
    tree = trees.selection_new(max_levels, max_rows, True)  # scratch for every tile of the pass
    work = hessian_work(max_rows, tiles[0].groups.label_rank.dtype)
    v = np.ascontiguousarray(v, dtype=np.float64)
    for tile, (p, order) in zip(tiles, states):
        a, b = tile.start, tile.stop
        values = np.ascontiguousarray(X[a:b])
        hi, lo = np.zeros(values.shape[1]), np.zeros(values.shape[1])
        g = tile.groups
        _squared_hinge_hessian_tile(values, v, g.offsets, g.label_rank, g.n_levels, p, order, float(MARGIN), tree,
                                    work, scores[a:b], hi, lo)
        results.append(KernelResult(np.zeros(0)))
        total = (hi, lo) if total is None else dd_add(total, (hi, lo))
    return results, total
