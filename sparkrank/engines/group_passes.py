"""A pass over tiles run group by group in compiled code, for kernels with a group form.

:func:`sparkrank.engines.tiles.fused_pass` computes a tile's ``X·v``, calls the kernel on the
tile and then sums its ``Xᵀc``.  For a kernel that offers a compiled form per group
(:mod:`sparkrank.kernels.group_forms`; it names it in :attr:`ScoreKernel.group_form`: TRON's
value pass and its Hessian product) the loops here do all three group after group instead: the
group's scores (``simd.row_dot_lanes``), its coefficients (the group form), then its rows' terms
of ``Xᵀc`` (``exact_sum.add_dense_steps_dd``) while those ~65 KB of rows are still in the first-
or second-level cache; meanwhile they prefetch the next group's rows, so its memory traffic
overlaps this group's arithmetic.  ``X`` is then read from memory once per pass instead of twice
(on the development host the last-level cache is no faster than memory for the second read).
1M x 136 float32 rows in one thread: a Hessian pass 0.146 → 0.088 s, a value pass 0.27 → 0.21 s
(reading the rows once: 0.035 s); with ``Xᵀc`` in steps and the prefetch into the second-level
cache 0.079 s and 0.150 s; with the stable sort 0.139 s for the value pass, and with the value
pass's sweep plan (each Hessian pass at that point reads it instead of sweeping) a Hessian pass
at spread scores (weights of scale 1) 0.100 → 0.085 s.

The bits are those of the tile path: each row's score is its own sum, a group form repeats its
kernel's arithmetic (the same sort, sweeps and expressions, its sums in row order), and the rows'
terms are added to the tile's double-double column sums in ``exact_sum``'s steps of four rows from
each group's first row, as :func:`sparkrank.numerics.exact_sum.rmatvec_dd_products` adds them (a
partial last step of a group repeats its last row with ``c = 0``, an exact ``+0.0``); the tiles'
sums are then added as the tile path adds them.  Dense rows only: CSR tiles take the tile path
(the same bits, more time).
"""

from __future__ import annotations

import numpy as np
from numba import literally, njit

from ..conventions import MARGIN
from ..kernels import trees
from ..kernels.trees import prefetch_l2
from ..kernels.base import KernelResult
from ..kernels.group_forms import (hessian_work, squared_hinge_group, squared_hinge_hessian_group, value_work,
                                   weighting_of)
from ..numerics.exact_sum import DoubleDouble, add_dense_steps_dd, dd_add
from ..numerics.simd import DD_ROWS, row_dot_lanes

#: Group forms the loop below can run, by the name a kernel gives in ``group_form``.
SQUARED_HINGE_HESSIAN = "squared_hinge_hessian"
SQUARED_HINGE = "squared_hinge"


#: Cache line size in bytes, for the software prefetch of the next group's rows.
CACHE_LINE = 64
#: The share of the next group's cache lines prefetched while the group's scores are computed;
#: the rest go while its ``Xᵀc`` terms are added (1M x 136 float32 rows in one thread: no
#: prefetch 0.101 s, all during ``Xᵀc`` 0.088 s, 0.3-0.5 of them during the scores 0.082 s; with
#: ``Xᵀc`` in steps and the prefetch into the second-level cache, 0.2-0.7 of them: 0.078-0.080 s).
PREFETCH_DURING_SCORES = 0.4


@njit(cache=True, nogil=True, inline="always")
def _prefetch_lines(flat, q, stop, count, per_line):
    """Prefetch up to ``count`` cache lines of ``flat`` from element ``q`` (not past ``stop``);
    returns the next element to prefetch.  (The count is fixed before the loop: a test of ``stop``
    in it cost 0.004 s of a 1M-row pass's 0.015 s of ``X·v`` with the rows in cache.)"""
    for _ in range(min(count, (stop - q + per_line - 1) // per_line)):
        prefetch_l2(flat, q)
        q += per_line
    return q


@njit(cache=True, nogil=True, inline="always")
def _next_group_lines(offsets, g, n, per_line):
    """The element range of group ``g + 1``'s rows (empty after the last group) and how many of
    its cache lines to prefetch while group ``g``'s scores are computed."""
    if g + 2 >= offsets.shape[0]:
        return 0, 0, 0
    q, stop = offsets[g + 1] * n, offsets[g + 2] * n
    lines = (stop - q + per_line - 1) // per_line
    return q, stop, np.int64(lines * PREFETCH_DURING_SCORES)


@njit(cache=True, nogil=True)
def _group_scores(values, v, start, end, scores, flat, q, stop, during_scores, per_line):
    """``scores[r] = values[r]·v`` for rows ``start:end`` (``simd.row_dot_lanes``), prefetching
    ``during_scores`` cache lines from element ``q`` on the way; returns the next element."""
    per_row = (during_scores + (end - start) - 1) // max(end - start, 1)
    q_stop = min(q + during_scores * per_line, stop)
    for r in range(start, end):
        q = _prefetch_lines(flat, q, q_stop, per_row, per_line)
        scores[r] = row_dot_lanes(values, r, v)
    return q


@njit(cache=True, nogil=True)
def _group_products(values, start, end, coefs, powers, code, hi, lo, rows, steps, flat, q, stop, per_line):
    """``(hi[k], lo[k]) += Σ_r term(values[r], coefs[k, r - start])`` (power ``powers[k]``) over
    rows ``start:end`` for each product ``k``, in ``exact_sum``'s steps from the group's first
    row (``exact_sum.add_dense_steps_dd``: every product from one load of a step's rows; a
    shorter last step repeats the last row with ``c = 0``, a step of zero coefficients is
    skipped: +0.0 terms change no bit), prefetching the rest of the lines up to ``stop`` on the way.
    ``code``: the powers as decimal digits, a compile-time constant (``add_dense_steps_dd``)."""
    literally(code)
    size = end - start
    n_steps = (size + DD_ROWS - 1) // DD_ROWS
    per_step = ((stop - q + per_line - 1) // per_line + n_steps - 1) // max(n_steps, 1)
    for i in range(start, end, DD_ROWS):
        q = _prefetch_lines(flat, q, stop, per_step, per_line)
        for r in range(DD_ROWS):
            rows[r] = min(i + r, end - 1)
        nonzero = False
        for k in range(powers.shape[0]):
            for r in range(DD_ROWS):
                steps[k, r] = coefs[k, i + r - start] if i + r < end else 0.0
                nonzero = nonzero or steps[k, r] != 0.0
        if nonzero:
            add_dense_steps_dd(values, rows, steps, hi, lo, powers, code)
    while q < stop:  # what the steps did not cover (a group without rows)
        q = _prefetch_lines(flat, q, stop, 1, per_line)


@njit(cache=True, nogil=True)
def _tile_scratch(values, v, products):
    """For a tile's loop: ``values`` flat (for the prefetches), its elements per cache line, and
    the row indices and the ``products``' coefficients of one step; checks that ``v`` covers a row."""
    if v.shape[0] < values.shape[1]:
        raise ValueError("the vector is shorter than a row")
    return values.reshape(-1), max(CACHE_LINE // values.itemsize, 1), np.zeros(DD_ROWS, dtype=np.int64), \
        np.zeros((products, DD_ROWS))


@njit(cache=True, nogil=True)
def _squared_hinge_hessian_tile(values, v, offsets, label_rank, n_levels, p, order, plan, margin, tree, work,
                                scores, hi, lo, weighting):
    # Per group: scores (X·v), the group form's coefficients, then the rows' Xᵀc terms.
    # Meanwhile the next group's rows are prefetched, spread over this group's score and Xᵀc
    # loops, so its X·v finds them in cache: the memory traffic overlaps this group's arithmetic.
    n = values.shape[1]
    flat, per_line, rows, steps = _tile_scratch(values, v, 1)
    coefs = np.zeros((1, work[0].shape[0]))
    powers = np.ones(1, dtype=np.int64)
    for g in range(offsets.shape[0] - 1):
        start, end = offsets[g], offsets[g + 1]
        q, stop, during_scores = _next_group_lines(offsets, g, n, per_line)
        q = _group_scores(values, v, start, end, scores, flat, q, stop, during_scores, per_line)
        squared_hinge_hessian_group(p, order, plan, label_rank, scores, start, end, n_levels[g], margin, tree,
                                    work, coefs[0], weighting)
        _group_products(values, start, end, coefs, powers, 1, hi, lo, rows, steps, flat, q, stop, per_line)


@njit(cache=True, nogil=True)
def _squared_hinge_value_tile(values, v, offsets, label_rank, n_levels, margin, tree, work, fresh, powers,
                              scores, order, plan, hi, lo, sums, weighting):
    # The value pass of the squared hinge per group: scores (X·w, unless given), the sort, the
    # counts and the group form's coefficients and sums, then the products named by powers
    # (none; 1: Xᵀc; 1, 1, 2: Xᵀc and the diagonal's moments Xᵀa, (X∘X)ᵀa), prefetching as above.
    n = values.shape[1]
    flat, per_line, rows, steps = _tile_scratch(values, v, powers.shape[0])
    coefs = np.zeros((3, work[0].shape[0]))
    for g in range(offsets.shape[0] - 1):
        start, end = offsets[g], offsets[g + 1]
        q, stop, during_scores = _next_group_lines(offsets, g, n, per_line)
        if fresh:
            q = _group_scores(values, v, start, end, scores, flat, q, stop, during_scores, per_line)
        squared_hinge_group(scores, order, label_rank, start, end, n_levels[g], margin, tree, work, coefs[0],
                            coefs[1], sums, plan, weighting)
        coefs[2, : end - start] = coefs[1, : end - start]
        # each set of products its own compiled loop (add_dense_steps_dd); with no products the
        # loop only prefetches
        if powers.shape[0] == 3:
            _group_products(values, start, end, coefs, powers, 112, hi, lo, rows, steps, flat, q, stop, per_line)
        else:
            _group_products(values, start, end, coefs, powers, 1, hi, lo, rows, steps, flat, q, stop, per_line)


def _plan_dtype(largest_group: int):
    """The smallest integer type of a sweep plan for groups of up to ``largest_group`` rows (its
    entries are positions in a group and ``l⁺+l⁻``, at most twice the rows): 3 bytes per row for
    groups of under 128 rows (LETOR's queries), 6 under 32,768, which keeps the whole process
    within half of LIBLINEAR's memory in float32 (TRON holds two or three states at a time)."""
    for dtype in (np.uint8, np.uint16, np.int32):
        if 2 * largest_group <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _kept_plan(state, weighted: bool) -> np.ndarray:
    """The sweep plan a value pass kept with its scores and order (the group form keeps
    ``(p, order, plan)``, and weighted rows also their weight sums, :func:`_kept_sums`; the
    kernel keeps ``(p, order)``: then an empty ``(3, 0)`` plan, and the Hessian product sweeps)."""
    return state[2] if len(state) > (3 if weighted else 2) else np.zeros((3, 0), dtype=np.uint8)


def _kept_sums(state) -> np.ndarray | None:
    """The weight sums ``l⁺+l⁻`` a weighted value pass kept beside its plan (``None``: none)."""
    return state[3] if len(state) > 3 else None


def runs_group_form(kernel, X, states, powers: tuple[int, ...], fresh: bool) -> bool:
    """Whether :func:`group_pass` can run ``kernel``'s pass over ``X``: dense rows
    and a group form this module knows, with what it needs: for the Hessian product
    (:data:`SQUARED_HINGE_HESSIAN`) the scores computed in the pass, a kept state and ``Xᵀc``
    alone; for the squared hinge's value pass (:data:`SQUARED_HINGE`) no input state, ``Xᵀc``
    or no product."""
    form = getattr(kernel, "group_form", None)
    if not (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype in (np.float32, np.float64)):
        return False
    if form == SQUARED_HINGE_HESSIAN:
        return not kernel.statistics and fresh and states is not None and powers == (1,)
    if form == SQUARED_HINGE:
        return states is None and powers in ((1,), ())
    return False


def _largest_group(tiles) -> tuple[int, int]:
    """The most rows and the most label levels of a group in ``tiles`` (at least 1 each)."""
    nonempty = [t.groups for t in tiles if t.groups.n_groups]
    return (max((int(g.group_sizes.max()) for g in nonempty), default=1),
            max((int(g.n_levels.max()) for g in nonempty), default=1))


def _scratch(tiles, work_of, weighted: bool):
    """A selection tree and a group form's work arrays for the largest group of ``tiles`` (of
    weight sums when ``weighted``)."""
    max_rows, max_levels = _largest_group(tiles)
    return (trees.selection_new(max_levels, max_rows, True, weighted),
            work_of(max_rows, tiles[0].groups.label_rank.dtype, weighted=weighted))


def group_pass(X: np.ndarray, tiles, v: np.ndarray, kernel, states, powers: tuple[int, ...], scores: np.ndarray,
               fresh: bool = True) -> tuple[list[KernelResult], list[DoubleDouble | None], list[DoubleDouble] | None]:
    """``kernel``'s pass over ``tiles`` group by group (see the module docstring), as
    :func:`sparkrank.engines.tiles.fused_pass` returns it: the kernels' results, one per tile
    (statistics and state, no coefficients: they were summed), per power the double-double sum of
    the tiles' ``Xᵀc``, and the moments of the diagonal kernel's ``moment_coef`` (``None`` when
    it gives none or ``powers`` is empty); the tiles' sums are added tile after tile, as the tile
    path adds them.  ``X·v`` goes into ``scores`` (rows as in ``X``) when ``fresh``."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    results: list[KernelResult] = []
    partials: list[DoubleDouble | None] = [None] * len(powers)
    moments: list[DoubleDouble] | None = None
    if not tiles:
        return results, partials, moments
    hessian = kernel.group_form == SQUARED_HINGE_HESSIAN
    weighted = tiles[0].groups.weighted
    tree, work = _scratch(tiles, hessian_work if hessian else value_work, weighted)
    diagonal = not hessian and kernel.with_diagonal
    product_powers = np.array([] if not powers else [1, 1, 2] if diagonal else [1], dtype=np.int64)
    for k, tile in enumerate(tiles):
        a, b = tile.start, tile.stop
        values = np.ascontiguousarray(X[a:b])
        g = tile.groups
        hi, lo = np.zeros((len(product_powers), values.shape[1])), np.zeros((len(product_powers), values.shape[1]))
        if hessian:
            p, order, plan = states[k][0], states[k][1], _kept_plan(states[k], weighted)
            _squared_hinge_hessian_tile(values, v, g.offsets, g.label_rank, g.n_levels, p, order, plan,
                                        float(MARGIN), tree, work, scores[a:b], hi, lo,
                                        weighting_of(g, _kept_sums(states[k])))
            results.append(KernelResult(np.zeros(0)))
        else:
            results.append(_value_tile(values, v, g, kernel, tree, work, fresh, product_powers, scores[a:b], hi, lo))
        if len(product_powers):
            partials[0] = (hi[0], lo[0]) if partials[0] is None else dd_add(partials[0], (hi[0], lo[0]))
        if len(product_powers) == 3:
            parts = [(hi[1], lo[1]), (hi[2], lo[2])]
            moments = parts if moments is None else [dd_add(m, q) for m, q in zip(moments, parts)]
    return results, partials, moments


def _value_tile(values, v, g, kernel, tree, work, fresh, powers, scores, hi, lo) -> KernelResult:
    """One tile of the squared hinge's value pass (rows ``values``, groups ``g``): its result,
    statistics and kept state ``(scores, order, plan)``, and weighted rows' weight sums ``l⁺+l⁻``
    after the plan; the products go to ``(hi, lo)``."""
    order = np.empty(values.shape[0], dtype=np.int32 if values.shape[0] < 2**31 else np.int64)
    plan = np.empty((3, values.shape[0]), dtype=_plan_dtype(int(g.group_sizes.max()) if g.n_groups else 0))
    weighting = weighting_of(g)
    sums = np.zeros(6 if weighting is None else 8)
    _squared_hinge_value_tile(values, v, g.offsets, g.label_rank, g.n_levels, float(MARGIN), tree, work, fresh,
                              powers, scores, order, plan, hi, lo, sums, weighting)
    if weighting is None:
        stats = kernel.statistics_from_sums((sums[0], sums[1]), sums[4], sums[5], (sums[2], sums[3]))
        return stats.result(None, (scores, order, plan))
    stats = kernel.weighted_statistics_from_sums((sums[0], sums[1]), (sums[4], sums[5]), (sums[6], sums[7]),
                                                 (sums[2], sums[3]))
    return stats.result(None, (scores, order, plan, weighting[3]))
